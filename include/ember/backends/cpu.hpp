// The portable CPU backend: strided views, SIMD kernels chosen at run time, a thread pool and
// its own blocked GEMM. Users reach it through Device::cpu(); this header is for tools that
// build backend stacks by hand.
//
//   std::shared_ptr<ember::Backend> cpu = ember::cpu::make_backend();
#pragma once

#include <memory>

#include "ember/core/backend.hpp"

namespace ember::cpu {

// A new CPU backend with no decorators (programs normally use Device::cpu()).
std::shared_ptr<Backend> make_backend();
// Threads used by CPU kernels (default: all cores, or EMBER_NUM_THREADS).
void set_num_threads(int n);
// The number of threads CPU kernels use now.
int num_threads();

}  // namespace ember::cpu
