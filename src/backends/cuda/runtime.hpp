// The CUDA runtime layer of the backend: error checking, device discovery and the few driver
// functions the JIT needs (module loading and launches). The driver is reached through the
// runtime's entry-point query instead of linking libcuda, so programs start (and report "no
// GPU") on machines without a driver.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <string>

#include "ember/core/error.hpp"

namespace ember::cuda {

[[noreturn]] void fail(cudaError_t e, const char* what);
[[noreturn]] void fail_driver(CUresult r, const char* what);

#define EMBER_CUDA_CHECK(expr)                                        \
  do {                                                                \
    cudaError_t ember_cuda_err_ = (expr);                             \
    if (ember_cuda_err_ != cudaSuccess) ::ember::cuda::fail(ember_cuda_err_, #expr); \
  } while (0)
#define EMBER_CU_CHECK(expr)                                          \
  do {                                                                \
    CUresult ember_cu_err_ = (expr);                                  \
    if (ember_cu_err_ != CUDA_SUCCESS) ::ember::cuda::fail_driver(ember_cu_err_, #expr); \
  } while (0)

// Driver functions, resolved once through cudaGetDriverEntryPointByVersion.
struct Driver {
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t);
};
const Driver& driver();

int visible_devices();
// "0: NVIDIA H200 (sm_90, 139 GiB)" lines, or why there is no device.
std::string describe_visible_devices();

// cudaSetDevice, skipped when the calling thread's device is `index` already (ember's code sets
// the device only through these).
void set_device(int index);
void set_device_nothrow(int index) noexcept;  // 0 when there is no driver or no GPU (never throws)

}  // namespace ember::cuda
