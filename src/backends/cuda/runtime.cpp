#include "runtime.hpp"

#include <sstream>

#include "ember/backends/cuda.hpp"

namespace ember::cuda {

void fail(cudaError_t e, const char* what) {
  throw Error(std::string("cuda: ") + what + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void fail_driver(CUresult r, const char* what) {
  const char* msg = nullptr;
  if (driver().cuGetErrorString) driver().cuGetErrorString(r, &msg);
  throw Error(std::string("cuda: ") + what + " failed: error " + std::to_string(int(r)) + " (" +
              (msg ? msg : "unknown") + ")");
}

namespace {
template <class F>
void resolve(const char* name, F& fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p)
    throw Error(std::string("cuda: the driver has no entry point ") + name);
  fn = reinterpret_cast<F>(p);
}
}  // namespace

const Driver& driver() {
  static const Driver d = [] {
    Driver r{};
    resolve("cuGetErrorString", r.cuGetErrorString);
    resolve("cuModuleLoadData", r.cuModuleLoadData);
    resolve("cuModuleUnload", r.cuModuleUnload);
    resolve("cuModuleGetFunction", r.cuModuleGetFunction);
    resolve("cuLaunchKernel", r.cuLaunchKernel);
    resolve("cuFuncSetAttribute", r.cuFuncSetAttribute);
    resolve("cuOccupancyMaxActiveBlocksPerMultiprocessor", r.cuOccupancyMaxActiveBlocksPerMultiprocessor);
    return r;
  }();
  return d;
}

namespace {
thread_local int t_current_device = -1;
}

void set_device(int index) {
  if (t_current_device == index) return;
  EMBER_CUDA_CHECK(cudaSetDevice(index));
  t_current_device = index;
}

void set_device_nothrow(int index) noexcept {
  if (t_current_device == index) return;
  if (cudaSetDevice(index) == cudaSuccess) t_current_device = index;
  else (void)cudaGetLastError();
}

int visible_devices() {
  static const int n = [] {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return count;
  }();
  return n;
}

// (ember::cuda::describe_devices() reaches this through the backend registry: register.cpp)
std::string describe_visible_devices() {
  int n = visible_devices();
  if (n == 0) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    (void)cudaGetLastError();
    if (e == cudaSuccess || e == cudaErrorNoDevice) return "none (no GPU)";
    if (e == cudaErrorInsufficientDriver)  // (also what CUDA says where no driver is installed at all)
      return "none (no NVIDIA driver, or one older than the CUDA runtime ember was built with)";
    return std::string("none (") + cudaGetErrorString(e) + ")";
  }
  std::ostringstream os;
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    os << (i ? "; " : "") << i << ": " << p.name << " (sm_" << p.major << p.minor << ", "
       << (p.totalGlobalMem >> 30) << " GiB)";
  }
  return os.str();
}

}  // namespace ember::cuda
