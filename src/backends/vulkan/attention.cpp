// attention (torch's scaled_dot_product_attention): out = softmax(q k^T scale + mask) v, with a
// bool (keep) or additive mask and the causal flag, and each row's log-sum-exp (f32).
//
// Composed from the backend's own kernels, in f32 for f16/bf16 as the CPU backend computes it:
// the scores [.., L, S] come from one matmul, masked (a bool mask and the causal triangle by
// where, an additive one by add), then logsumexp gives lse and softmax the probabilities, and a
// second matmul gives out. Fully masked rows give NaN (and lse -inf), like PyTorch. Memory is
// O(L S) per batch-head: a fused flash kernel is for later. attention_backward is composed too.
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

// The probabilities softmax(q k^T scale + mask) of inputs q, k and the mask (null: none), in ct.
struct Scores {
  PrimitivePtr q, k, scores;
  double scale;
  int rank;
};
Scores scores_of(VulkanBackend& be, const Op& op, DType ct) {
  const auto& a = op.attr<AttentionAttrs>();
  auto run = [&](OpKind k, std::vector<PrimitivePtr> in, OpAttrs attrs = NoAttrs{}) {
    return be.execute(make_op(k, std::move(in), std::move(attrs)))[0];
  };
  auto to_c = [&](const PrimitivePtr& p) { return p->dtype() == ct ? p : run(OpKind::cast, {p}, CastAttrs{ct}); };
  Scores s;
  s.q = to_c(op.inputs[0]);
  s.k = to_c(op.inputs[1]);
  const int r = s.q->shape().rank();
  s.rank = r;
  const int64_t E = s.q->shape()[r - 1], L = s.q->shape()[r - 2], S = s.k->shape()[r - 2];
  std::vector<int> perm(static_cast<size_t>(r));
  for (int d = 0; d < r; ++d) perm[size_t(d)] = d;
  std::swap(perm[size_t(r - 1)], perm[size_t(r - 2)]);
  PrimitivePtr scores = run(OpKind::matmul, {s.q, run(OpKind::permute, {s.k}, DimsAttrs{perm})});
  s.scale = std::isnan(a.scale) ? 1.0 / std::sqrt(double(E)) : a.scale;
  scores = run(OpKind::mul, {scores, run(OpKind::full, {}, CreateAttrs{Shape{}, ct, s.scale})});
  const PrimitivePtr neg_inf =
      run(OpKind::full, {}, CreateAttrs{Shape{}, ct, -std::numeric_limits<double>::infinity()});
  const size_t mask_at = op.kind == OpKind::attention ? 3 : 5;
  if (op.inputs.size() > mask_at && op.inputs[mask_at]) {
    const PrimitivePtr& m = op.inputs[mask_at];
    if (m->dtype() == DType::boolean)
      scores = run(OpKind::where, {m, scores, neg_inf});
    else
      scores = run(OpKind::add, {scores, to_c(m)});
  }
  if (a.causal) {  // keep key j <= query i (the triangle from the top left, as torch's is_causal)
    PrimitivePtr keep = run(OpKind::tril, {run(OpKind::full, {}, CreateAttrs{Shape{L, S}, DType::boolean, 1.0})},
                            DimAttrs{0, false, 0});
    scores = run(OpKind::where, {keep, scores, neg_inf});
  }
  s.scores = scores;
  return s;
}

std::vector<PrimitivePtr> attention_kernel(VulkanBackend& be, Op& op) {
  auto run = [&](OpKind k, std::vector<PrimitivePtr> in, OpAttrs attrs = NoAttrs{}) {
    return be.execute(make_op(k, std::move(in), std::move(attrs)))[0];
  };
  const DType dt = op.in(0).dtype;
  const DType ct = dt == DType::f64 ? DType::f64 : DType::f32;
  Scores s = scores_of(be, op, ct);
  const int r = s.rank;
  PrimitivePtr v = op.inputs[2]->dtype() == ct ? op.inputs[2] : run(OpKind::cast, {op.inputs[2]}, CastAttrs{ct});
  ReduceAttrs last;
  last.dims = {r - 1};
  PrimitivePtr lse = run(OpKind::logsumexp, {s.scores}, last);
  if (lse->dtype() != op.outputs[1].dtype) lse = run(OpKind::cast, {lse}, CastAttrs{op.outputs[1].dtype});
  PrimitivePtr out = run(OpKind::matmul, {run(OpKind::softmax, {s.scores}, DimAttrs{r - 1, false, 0}), v});
  if (out->dtype() != dt) out = run(OpKind::cast, {out}, CastAttrs{dt});
  return {out, lse};
}

// attention_backward: q, k, v, out, dout, mask, lse -> dq, dk, dv, by the composed rule (the CPU
// backend's): P recomputed, dv = P^T dout, dP = dout v^T, dS = P (dP - rowsum(P dP)),
// dq = scale dS k, dk = scale dS^T q. A row whose every key is masked has NaN probabilities, so
// every key's gradient is NaN, as on the CPU backend.
std::vector<PrimitivePtr> attention_backward_kernel(VulkanBackend& be, Op& op) {
  auto run = [&](OpKind k, std::vector<PrimitivePtr> in, OpAttrs attrs = NoAttrs{}) {
    return be.execute(make_op(k, std::move(in), std::move(attrs)))[0];
  };
  const DType dt = op.in(0).dtype;
  const DType ct = dt == DType::f64 ? DType::f64 : DType::f32;
  auto to_c = [&](const PrimitivePtr& p) { return p->dtype() == ct ? p : run(OpKind::cast, {p}, CastAttrs{ct}); };
  Scores s = scores_of(be, op, ct);
  const int r = s.rank;
  std::vector<int> perm(static_cast<size_t>(r));
  for (int d = 0; d < r; ++d) perm[size_t(d)] = d;
  std::swap(perm[size_t(r - 1)], perm[size_t(r - 2)]);
  auto t = [&](const PrimitivePtr& p) { return run(OpKind::permute, {p}, DimsAttrs{perm}); };
  PrimitivePtr v = to_c(op.inputs[2]), dout = to_c(op.inputs[4]);
  PrimitivePtr P = run(OpKind::softmax, {s.scores}, DimAttrs{r - 1, false, 0});
  PrimitivePtr dv = run(OpKind::matmul, {t(P), dout});
  PrimitivePtr dP = run(OpKind::matmul, {dout, t(v)});
  ReduceAttrs last;
  last.dims = {r - 1};
  last.keepdim = true;
  PrimitivePtr D = run(OpKind::sum, {run(OpKind::mul, {P, dP})}, last);
  PrimitivePtr dS = run(OpKind::mul, {P, run(OpKind::sub, {dP, D})});
  PrimitivePtr scale = run(OpKind::full, {}, CreateAttrs{Shape{}, ct, s.scale});
  PrimitivePtr dq = run(OpKind::mul, {run(OpKind::matmul, {dS, s.k}), scale});
  PrimitivePtr dk = run(OpKind::mul, {run(OpKind::matmul, {t(dS), s.q}), scale});
  std::vector<PrimitivePtr> outs = {dq, dk, dv};
  for (size_t i = 0; i < 3; ++i)
    if (outs[i]->dtype() != op.outputs[i].dtype) outs[i] = run(OpKind::cast, {outs[i]}, CastAttrs{op.outputs[i].dtype});
  return outs;
}

}  // namespace

void register_attention_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::attention)] = attention_kernel;
  t[size_t(OpKind::attention_backward)] = attention_backward_kernel;
  d[size_t(OpKind::attention)] = attention_dtypes;
  d[size_t(OpKind::attention_backward)] = attention_dtypes;
}

}  // namespace ember::vulkan
