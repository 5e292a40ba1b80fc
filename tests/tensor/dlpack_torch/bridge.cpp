// A small shared library through which tests/tensor/dlpack_torch/dlpack_torch_test.py hands
// tensors between ember and PyTorch (ctypes, DLPack capsules). Handles are ember tensors on the heap.
#include <map>
#include <mutex>
#include <string>

#include "ember/tensor/dlpack.hpp"
#include "ember/tensor/dyn_tensor.hpp"
#include "ember/tensor/ops.hpp"

using ember::DynTensor;
using ember::dlpack::DLManagedTensor;

namespace {
std::mutex mu;
std::map<DLManagedTensor*, void (*)(DLManagedTensor*)> wrapped;  // tensor -> its own deleter
int deleted = 0;

void counting_deleter(DLManagedTensor* m) {
  void (*inner)(DLManagedTensor*) = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    inner = wrapped.at(m);
    wrapped.erase(m);
    ++deleted;
  }
  if (inner) inner(m);
}
}  // namespace

extern "C" {

// Counts the calls of m's deleter from now on (bridge_deleted()).
void bridge_count_deleter(DLManagedTensor* m) {
  std::lock_guard<std::mutex> lock(mu);
  wrapped[m] = m->deleter;
  m->deleter = counting_deleter;
}
int bridge_deleted() {
  std::lock_guard<std::mutex> lock(mu);
  return deleted;
}

// arange(rows * cols) as [rows, cols] of `dtype` ("f32", "bool", ...; bool: odd values true);
// transposed when `transpose` is set. Returns a handle.
DynTensor* bridge_arange(const char* dtype, int rows, int cols, int transpose) {
  auto x = DynTensor::arange(0, rows * cols, 1, ember::DType::f64, ember::Device::cpu()).reshape({rows, cols});
  ember::DType dt = ember::dtype_from_name(dtype);
  x = dt == ember::DType::boolean ? (x - (x / 2.0).floor() * 2.0).cast(dt) : x.cast(dt);
  return new DynTensor(transpose ? x.t() : x);
}

// Whether this build has a usable CUDA device (the CUDA cases run only then).
int bridge_cuda() {
  try {
    (void)ember::Device::cuda(0);
    return 1;
  } catch (const ember::Error&) {
    return 0;
  }
}
// The tensor on the GPU (a new handle).
DynTensor* bridge_to_cuda(const DynTensor* h) { return new DynTensor(h->to(ember::Device::cuda(0))); }
const char* bridge_device(const DynTensor* h) {
  static std::string name;
  name = h->device().name();
  return name.c_str();
}
// h * 2 into a new handle, h's own handle given up first (an op holding imported memory alone
// must still not write into it).
DynTensor* bridge_times2_consume(DynTensor* h) {
  DynTensor x = std::move(*h);
  delete h;
  return new DynTensor(std::move(x) * 2.0);
}

DLManagedTensor* bridge_to_dlpack(const DynTensor* h) { return ember::to_dlpack(*h); }

// Takes m (on success); nullptr with the message in bridge_error() on an ember::Error.
std::string last_error;
DynTensor* bridge_from_dlpack(DLManagedTensor* m) {
  try {
    return new DynTensor(ember::from_dlpack(m));
  } catch (const ember::Error& e) {
    last_error = e.what();
    return nullptr;
  }
}
const char* bridge_error() { return last_error.c_str(); }

void bridge_free(DynTensor* h) { delete h; }
int bridge_rank(const DynTensor* h) { return h->rank(); }
int64_t bridge_dim(const DynTensor* h, int i) { return h->size(i); }
const char* bridge_dtype(const DynTensor* h) { return ember::dtype_name(h->dtype()).data(); }
// Element `i` (row-major) as a double, read through ember now.
double bridge_get(const DynTensor* h, int64_t i) {
  return h->reshape({-1}).cast(ember::DType::f64).to_vector<double>().at(static_cast<size_t>(i));
}
double bridge_sum(const DynTensor* h) { return h->cast(ember::DType::f64).sum().item(); }
}
