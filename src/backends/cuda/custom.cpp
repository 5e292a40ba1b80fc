// User-defined ops (OpKind::custom) on CUDA: the definition's CUDA C++ source, compiled once
// by NVRTC (and kept in the kernel cache like ember's own), launched with one thread per
// element of output 0 over contiguous buffers (ember/tensor/custom_op.hpp).
#include <string>
#include <vector>

#include "cuda_backend.hpp"
#include "cuda_tensor.hpp"
#include "ember/core/custom_op.hpp"
#include "ember/core/error.hpp"
#include "jit.hpp"

namespace ember::cuda {

namespace {

std::vector<PrimitivePtr> custom_kernel(CudaBackend& be, Op& op) {
  const CustomOpImpl& impl = *op.attr<CustomAttrs>().impl;
  if (impl.cuda_source.empty() || impl.cuda_entry.empty())
    EMBER_NOT_IMPLEMENTED(impl.name, ": not supported on ", be.name(), " (its definition has no CUDA kernel)");
  std::vector<CudaTensorPtr> ins, outs;
  std::vector<void*> ptrs;  // outputs, then inputs: the kernel's parameters
  for (const TensorMeta& m : op.outputs) {
    outs.push_back(alloc(be, m));
    ptrs.push_back(outs.back()->raw());
  }
  for (const PrimitivePtr& p : op.inputs) {
    ins.push_back(contiguous(be, p));
    ptrs.push_back(const_cast<void*>(static_cast<const void*>(ins.back()->raw())));
  }
  int64_t n = op.outputs[0].shape.numel();
  if (n == 0) return {outs.begin(), outs.end()};
  CUfunction f = be.jit().get(impl.cuda_key, impl.cuda_entry.c_str(), [&] { return impl.cuda_source; });
  std::vector<void*> params;
  for (void*& p : ptrs) params.push_back(&p);
  params.push_back(&n);
  params.push_back(nullptr);
  constexpr int kThreads = 256;
  be.launch_raw(f, grid_for(be, n, kThreads), kThreads, 0, params.data());
  return {outs.begin(), outs.end()};
}

}  // namespace

// Without a definition (a query about the kind alone) the answer is the kind's: supported.
bool custom_supported(const Op& op) {
  const auto* a = std::get_if<CustomAttrs>(&op.attrs);
  return !a || !a->impl || (!a->impl->cuda_source.empty() && !a->impl->cuda_entry.empty());
}

void register_custom_kernels(KernelTable& t) { t[size_t(OpKind::custom)] = custom_kernel; }

}  // namespace ember::cuda
