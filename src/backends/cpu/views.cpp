// View ops: new strides/offset over the same storage, no copy (reshape copies only when the
// strides cannot express the new shape).
#include <optional>

#include "cpu_backend.hpp"

namespace ember::cpu {

namespace {

// Strides for viewing `t` with `shape` without a copy, if possible. The old dims are grouped
// into maximal runs that are contiguous among themselves; the new dims must split those runs
// exactly, in order.
std::optional<std::vector<int64_t>> view_strides(const CpuTensor& t, const Shape& shape) {
  const Shape& old = t.shape();
  if (old.numel() == 0) return contiguous_strides(shape);
  struct Group {
    int64_t size, inner_stride;
  };
  std::vector<Group> groups;
  int64_t last_stride = 0;
  for (int d = 0; d < old.rank(); ++d) {
    if (old[d] == 1) continue;
    if (!groups.empty() && last_stride == t.strides[d] * old[d]) {
      groups.back().size *= old[d];
      groups.back().inner_stride = t.strides[d];
    } else {
      groups.push_back({old[d], t.strides[d]});
    }
    last_stride = t.strides[d];
  }
  std::vector<int64_t> out(shape.rank(), 1);
  int g = int(groups.size()) - 1;
  int64_t acc = 1;
  for (int ni = shape.rank() - 1; ni >= 0; --ni) {
    int64_t n = shape[ni];
    if (n == 1) {
      out[ni] = g >= 0 ? groups[g].inner_stride * acc : 1;
      continue;
    }
    if (g < 0) return std::nullopt;
    out[ni] = groups[g].inner_stride * acc;
    acc *= n;
    if (acc == groups[g].size) {
      --g;
      acc = 1;
    } else if (groups[g].size % acc != 0) {
      return std::nullopt;
    }
  }
  return out;
}

std::vector<PrimitivePtr> reshape_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  const Shape& s = op.outputs[0].shape;
  if (auto st = view_strides(x, s))
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
