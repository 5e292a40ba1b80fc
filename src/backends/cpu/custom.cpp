// User-defined ops (OpKind::custom) on the CPU: the definition's own kernel over contiguous
// inputs and fresh outputs (ember/tensor/custom_op.hpp).
#include "cpu_backend.hpp"
#include "ember/core/custom_op.hpp"
#include "ember/core/error.hpp"

namespace ember::cpu {

namespace {

std::vector<PrimitivePtr> custom_kernel(CpuBackend&, Op& op) {
  const CustomOpImpl& impl = *op.attr<CustomAttrs>().impl;
  if (!impl.cpu) EMBER_NOT_IMPLEMENTED(impl.name, ": not supported on cpu (its definition has no CPU kernel)");
  std::vector<CpuTensorPtr> ins, outs;
  std::vector<const void*> in_ptr;
  std::vector<void*> out_ptr;
  std::vector<TensorMeta> in_meta;
  for (const PrimitivePtr& p : op.inputs) {
    ins.push_back(contiguous(p));
    in_ptr.push_back(ins.back()->raw());
    in_meta.push_back(ins.back()->meta());
  }
  for (const TensorMeta& m : op.outputs) {
    outs.push_back(alloc(m));
    out_ptr.push_back(outs.back()->raw());
  }
  impl.cpu(CustomCpuArgs{in_ptr, out_ptr, in_meta, op.outputs});
  return {outs.begin(), outs.end()};
}

}  // namespace

// Without a definition (a query about the kind alone) the answer is the kind's: supported.
bool custom_supported(const Op& op) {
  const auto* a = std::get_if<CustomAttrs>(&op.attrs);
  return !a || !a->impl || a->impl->cpu != nullptr;
}

void register_custom_kernels(KernelTable& t) { t[size_t(OpKind::custom)] = custom_kernel; }

}  // namespace ember::cpu
