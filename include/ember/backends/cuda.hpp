// The CUDA backend: kernels generated as CUDA C++ and compiled at run time with NVRTC (cached in
// memory and on disk), cuBLASLt for matrix products, cuDNN for convolutions, a stream-ordered
// caching allocator, and asynchronous execution: the host waits only in read() and sync().
// Users reach it through Device::cuda(i); this header is for tools that build backend stacks
// by hand, and for programs that must ask first whether a GPU is there. These functions work in
// every program: the backend is found through the registry (ember/core/backend_registry.hpp)
// when the program links ember::cuda, and otherwise there are no devices and the setters do
// nothing.
//
//   if (ember::cuda::available()) { Device gpu = Device::cuda(0); /* ... */ }
#pragma once

#include <memory>
#include <string>

#include "ember/core/backend.hpp"

namespace ember::cuda {

// True when the program links the CUDA backend (ember::cuda) and a driver with at least one GPU
// is there.
bool available();
// GPUs visible to the driver (0 without a driver, or when the backend is not linked in).
int device_count();
// "0: NVIDIA H200 (sm_90, 139 GiB)" lines, or the reason there is none.
std::string describe_devices();
// A new backend for GPU `index` (Device::cuda(i) keeps one per index). Throws an Error that
// lists the devices when the index is not one of them, or says how to link the backend when it
// is not linked in.
std::shared_ptr<Backend> make_backend(int index);

// Autotuning (cuBLASLt algorithms, cuDNN convolution and attention plans): on by default, or
// off from the start with EMBER_AUTOTUNE=off (also 0 or false; EMBER_CUDA_AUTOTUNE=0 is the
// older name). Off: each library's first choice runs, nothing is timed and no saved winner is
// read. The matmul and convolution winners, like the compiled kernels, persist in the cache
// directory ($EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember, else ~/.cache/ember), keyed by GPU
// model, driver, CUDA and library versions and ember's version; a damaged or stale cache file is
// ignored and rewritten (docs/caches.md).
void set_autotune(bool on);

// TF32 tensor-core math for f32 matmul and convolution (off by default: f32 results are exact
// f32, as PyTorch's default for matmul). Process-wide.
void set_allow_tf32(bool on);

}  // namespace ember::cuda
