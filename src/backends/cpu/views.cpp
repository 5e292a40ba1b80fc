// View ops: new strides/offset over the same storage, no copy (reshape copies only when the
// strides cannot express the new shape).

#include "cpu_backend.hpp"

namespace ember::cpu {

namespace {

std::vector<PrimitivePtr> reshape_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  const Shape& s = op.outputs[0].shape;
  if (auto st = view_strides(x.shape(), x.strides, s))
    return {std::make_shared<CpuTensor>(op.outputs[0], x.storage, std::move(*st), x.offset)};
  auto c = contiguous(op.inputs[0]);
  return {std::make_shared<CpuTensor>(op.outputs[0], c->storage, contiguous_strides(s), c->offset)};
}

std::vector<PrimitivePtr> permute_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  const auto& p = op.attr<DimsAttrs>().dims;
  std::vector<int64_t> st(p.size());
  for (size_t i = 0; i < p.size(); ++i) st[i] = x.strides[p[i]];
  return {std::make_shared<CpuTensor>(op.outputs[0], x.storage, std::move(st), x.offset)};
}

std::vector<PrimitivePtr> expand_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  return {std::make_shared<CpuTensor>(op.outputs[0], x.storage, broadcast_strides(x, op.outputs[0].shape),
                                      x.offset)};
}

std::vector<PrimitivePtr> slice_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  const auto& r = op.attr<SliceAttrs>().ranges;
  std::vector<int64_t> st(r.size());
  int64_t off = x.offset;
  for (size_t d = 0; d < r.size(); ++d) {
    st[d] = x.strides[d] * r[d].step;
    if (r[d].length() > 0) off += r[d].start * x.strides[d];
  }
  return {std::make_shared<CpuTensor>(op.outputs[0], x.storage, std::move(st), off)};
}

}  // namespace

void register_view_kernels(KernelTable& t) {
  t[size_t(OpKind::reshape)] = reshape_kernel;
  t[size_t(OpKind::permute)] = permute_kernel;
  t[size_t(OpKind::expand)] = expand_kernel;
  t[size_t(OpKind::slice)] = slice_kernel;
}

}  // namespace ember::cpu
