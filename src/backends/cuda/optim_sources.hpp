// The generated CUDA sources of optim.cpp (fused optimizer updates), exposed so that the
// compile tests build every variant without a GPU.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ember/core/dtype.hpp"

namespace ember::cuda {

// Key "adam_step/<dt>", entry "adam_step"; dt floating.
std::string adam_source(DType dt);
// Every (key, source) pair optim.cpp can hand to Jit::get.
std::vector<std::pair<std::string, std::string>> optim_variants();

}  // namespace ember::cuda
