// Reductions, scans and sorting of the tensor API.
#include "dispatch.hpp"
#include "ember/tensor/op_hook.hpp"

namespace ember {

using namespace detail;

namespace {
DynTensor reduce(OpKind k, DynTensor x, Dims dims, bool keepdim, double p = 2, int64_t correction = 1) {
  auto fam = k;
  if (fam == OpKind::mean || fam == OpKind::var || fam == OpKind::std || fam == OpKind::norm ||
      fam == OpKind::logsumexp)
    EMBER_CHECK(is_float(x.dtype()), op_name(k), ": needs a floating tensor, got ", x.dtype(),
                " (cast it first)");
  return run1(k, {std::move(x)}, ReduceAttrs{std::move(dims), keepdim, p, correction});
}
}  // namespace

DynTensor sum(DynTensor x, Dims d, bool k) { return reduce(OpKind::sum, std::move(x), std::move(d), k); }
DynTensor mean(DynTensor x, Dims d, bool k) { return reduce(OpKind::mean, std::move(x), std::move(d), k); }
DynTensor prod(DynTensor x, Dims d, bool k) { return reduce(OpKind::prod, std::move(x), std::move(d), k); }
DynTensor max(DynTensor x, Dims d, bool k) { return reduce(OpKind::max, std::move(x), std::move(d), k); }
DynTensor min(DynTensor x, Dims d, bool k) { return reduce(OpKind::min, std::move(x), std::move(d), k); }
DynTensor any(DynTensor x, Dims d, bool k) { return reduce(OpKind::any, std::move(x), std::move(d), k); }
DynTensor all(DynTensor x, Dims d, bool k) { return reduce(OpKind::all, std::move(x), std::move(d), k); }
DynTensor var(DynTensor x, Dims d, int64_t c, bool k) { return reduce(OpKind::var, std::move(x), std::move(d), k, 2, c); }
DynTensor stddev(DynTensor x, Dims d, int64_t c, bool k) { return reduce(OpKind::std, std::move(x), std::move(d), k, 2, c); }
DynTensor norm(DynTensor x, double p, Dims d, bool k) { return reduce(OpKind::norm, std::move(x), std::move(d), k, p); }
DynTensor logsumexp(DynTensor x, Dims d, bool k) { return reduce(OpKind::logsumexp, std::move(x), std::move(d), k); }

DynTensor argmax(DynTensor x, std::optional<int> dim, bool keepdim) {
  Dims d;
  if (dim) d.push_back(*dim);
  return reduce(OpKind::argmax, std::move(x), std::move(d), keepdim && dim.has_value());
}
DynTensor argmin(DynTensor x, std::optional<int> dim, bool keepdim) {
  Dims d;
  if (dim) d.push_back(*dim);
  return reduce(OpKind::argmin, std::move(x), std::move(d), keepdim && dim.has_value());
}
TensorPair max_dim(DynTensor x, int dim, bool keepdim) {
  auto r = run_op(OpKind::max_dim, {std::move(x)}, ReduceAttrs{{dim}, keepdim, 2, 1});
  return {std::move(r[0]), std::move(r[1])};
}
TensorPair min_dim(DynTensor x, int dim, bool keepdim) {
  auto r = run_op(OpKind::min_dim, {std::move(x)}, ReduceAttrs{{dim}, keepdim, 2, 1});
  return {std::move(r[0]), std::move(r[1])};
}

DynTensor cumsum(DynTensor x, int dim) { return run1(OpKind::cumsum, {std::move(x)}, DimAttrs{dim}); }
DynTensor cumprod(DynTensor x, int dim) { return run1(OpKind::cumprod, {std::move(x)}, DimAttrs{dim}); }
TensorPair cummax(DynTensor x, int dim) {
  auto r = run_op(OpKind::cummax, {std::move(x)}, DimAttrs{dim});
  return {std::move(r[0]), std::move(r[1])};
}
TensorPair cummin(DynTensor x, int dim) {
  auto r = run_op(OpKind::cummin, {std::move(x)}, DimAttrs{dim});
  return {std::move(r[0]), std::move(r[1])};
}
TensorPair sort(DynTensor x, int dim, bool descending) {
  auto r = run_op(OpKind::sort, {std::move(x)}, DimAttrs{dim, descending});
  return {std::move(r[0]), std::move(r[1])};
}
DynTensor argsort(DynTensor x, int dim, bool descending) { return sort(std::move(x), dim, descending).second; }
TensorPair topk(DynTensor x, int64_t k, int dim, bool largest) {
  auto r = run_op(OpKind::topk, {std::move(x)}, DimAttrs{dim, largest, k});
  return {std::move(r[0]), std::move(r[1])};
}

// ---- linear algebra ----
DynTensor matmul(DynTensor a, DynTensor b) {
  EMBER_CHECK(a.rank() >= 1 && b.rank() >= 1, "matmul: both arguments need at least one dim, got ", a.shape(),
              " and ", b.shape());
  // (under a hook that casts matmul's inputs, such as amp's autocast, promoting first would add casts)
  OpInputHook* hook = op_input_hook();
  if (!hook || !hook->casts_inputs(OpKind::matmul)) {
    DType dt = promote_types(a.dtype(), b.dtype());
    a = cast_to(std::move(a), dt);
    b = cast_to(std::move(b), dt);
  }
  bool a1 = a.rank() == 1, b1 = b.rank() == 1;
  if (a1) a = unsqueeze(std::move(a), 0);
  if (b1) b = unsqueeze(std::move(b), 1);
  DynTensor out = run1(OpKind::matmul, {std::move(a), std::move(b)});
  if (b1) out = squeeze(std::move(out), -1);
  if (a1) out = squeeze(std::move(out), a1 && b1 ? 0 : -2);
  return out;
}

DynTensor matmul(DynTensor a, DynTensor b, DynTensor bias) {
  DType dt = promote_types(promote_types(a.dtype(), b.dtype()), bias.dtype());
  if (OpInputHook* hook = op_input_hook(); hook && hook->casts_inputs(OpKind::matmul) && is_float(dt) &&
                                            a.rank() >= 2 && b.rank() >= 2 && bias.rank() == 1 &&
                                            bias.size(0) == b.size(-1))
    return run1(OpKind::matmul, {std::move(a), std::move(b), std::move(bias)});
  // one op (a GEMM with a bias epilogue on the GPU) for matrices and a bias along their columns
  if (a.rank() >= 2 && b.rank() >= 2 && bias.rank() == 1 && bias.size(0) == b.size(-1) && is_float(dt))
    return run1(OpKind::matmul, {cast_to(std::move(a), dt), cast_to(std::move(b), dt), cast_to(std::move(bias), dt)});
  return matmul(std::move(a), std::move(b)) + bias;
}

DynTensor dot(DynTensor a, DynTensor b) {
  EMBER_CHECK(a.rank() == 1 && b.rank() == 1, "dot: expects two 1-d tensors, got ", a.shape(), " and ", b.shape());
  EMBER_CHECK(a.numel() == b.numel(), "dot: sizes differ: ", a.shape(), " and ", b.shape());
  return matmul(std::move(a), std::move(b));
}

DynTensor outer(DynTensor a, DynTensor b) {
  EMBER_CHECK(a.rank() == 1 && b.rank() == 1, "outer: expects two 1-d tensors, got ", a.shape(), " and ",
              b.shape());
  return mul(unsqueeze(std::move(a), 1), unsqueeze(std::move(b), 0));
}

}  // namespace ember
