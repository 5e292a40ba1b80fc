// attention (torch's scaled_dot_product_attention): out = softmax(q k^T scale + mask) v, with a
// bool (keep) or additive mask and the causal flag, and each row's log-sum-exp (f32).
//
// Composed from the backend's own kernels, in f32 for f16/bf16 as the CPU backend computes it:
// the scores [.., L, S] come from one matmul, masked (a bool mask and the causal triangle by
// where, an additive one by add), then logsumexp gives lse and softmax the probabilities, and a
// second matmul gives out. Fully masked rows give NaN (and lse -inf), like PyTorch. Memory is
// O(L S) per batch-head: a fused flash kernel, and attention_backward, are for later.
#include <cmath>
#include <limits>

#include "vulkan_backend.hpp"

namespace ember::vulkan {

namespace {

bool attention_dtypes(const VulkanBackend& be, const Op& op) {
  for (const auto& in : op.inputs)
    if (in && !be.has_dtype(in->dtype())) return false;
  return be.has_dtype(DType::f32) && be.has_dtype(DType::boolean);
}

std::vector<PrimitivePtr> attention_kernel(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<AttentionAttrs>();
  auto run = [&](OpKind k, std::vector<PrimitivePtr> in, OpAttrs attrs = NoAttrs{}) {
    return be.execute(make_op(k, std::move(in), std::move(attrs)))[0];
  };
  const DType dt = op.in(0).dtype;
  const DType ct = dt == DType::f64 ? DType::f64 : DType::f32;
  auto to_c = [&](const PrimitivePtr& p) { return p->dtype() == ct ? p : run(OpKind::cast, {p}, CastAttrs{ct}); };
  PrimitivePtr q = to_c(op.inputs[0]), k = to_c(op.inputs[1]), v = to_c(op.inputs[2]);
  const int r = q->shape().rank();
  const int64_t E = q->shape()[r - 1], L = q->shape()[r - 2], S = k->shape()[r - 2];
  std::vector<int> perm(static_cast<size_t>(r));
  for (int d = 0; d < r; ++d) perm[size_t(d)] = d;
  std::swap(perm[size_t(r - 1)], perm[size_t(r - 2)]);
  PrimitivePtr scores = run(OpKind::matmul, {q, run(OpKind::permute, {k}, DimsAttrs{perm})});
  const double scale = std::isnan(a.scale) ? 1.0 / std::sqrt(double(E)) : a.scale;
  scores = run(OpKind::mul, {scores, run(OpKind::full, {}, CreateAttrs{Shape{}, ct, scale})});
  const PrimitivePtr neg_inf = run(OpKind::full, {}, CreateAttrs{Shape{}, ct, -std::numeric_limits<double>::infinity()});
  if (op.inputs.size() > 3 && op.inputs[3]) {
    const PrimitivePtr& m = op.inputs[3];
    if (m->dtype() == DType::boolean) scores = run(OpKind::where, {m, scores, neg_inf});
    else scores = run(OpKind::add, {scores, to_c(m)});
  }
  if (a.causal) {  // keep key j <= query i (the triangle from the top left, as torch's is_causal)
    PrimitivePtr keep = run(OpKind::tril, {run(OpKind::full, {}, CreateAttrs{Shape{L, S}, DType::boolean, 1.0})},
                            DimAttrs{0, false, 0});
    scores = run(OpKind::where, {keep, scores, neg_inf});
  }
  ReduceAttrs last;
  last.dims = {r - 1};
  PrimitivePtr lse = run(OpKind::logsumexp, {scores}, last);
  if (lse->dtype() != op.outputs[1].dtype) lse = run(OpKind::cast, {lse}, CastAttrs{op.outputs[1].dtype});
  PrimitivePtr out = run(OpKind::matmul, {run(OpKind::softmax, {scores}, DimAttrs{r - 1, false, 0}), v});
  if (out->dtype() != dt) out = run(OpKind::cast, {out}, CastAttrs{dt});
  return {out, lse};
}

}  // namespace

void register_attention_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::attention)] = attention_kernel;
  d[size_t(OpKind::attention)] = attention_dtypes;
}

}  // namespace ember::vulkan
