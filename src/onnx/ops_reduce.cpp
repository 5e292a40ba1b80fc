// Reductions, arg-reductions, Softmax / LogSoftmax / Hardmax, CumSum, TopK.
#include <algorithm>
#include <numeric>

#include "ops.hpp"

namespace ember::onnx::detail {
namespace {

// The axes of a Reduce* node (attribute before the opset where they became an input) or
// nullopt for "no reduction" (noop_with_empty_axes with empty axes).
std::optional<Dims> reduce_axes(const OpContext& c, int rank) {
  std::optional<std::vector<int64_t>> axes = c.has(1) ? c.ints_input(1) : c.attr_ints("axes");
  Dims out;
  if (!axes || axes->empty()) {
    if (c.attr_i("noop_with_empty_axes", 0)) return std::nullopt;
    for (int d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int64_t a : *axes) out.push_back(normalize_axis(a, rank, c));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

using ReduceFn = DynTensor (*)(DynTensor x, const Dims& dims, bool keep);

OpHandler reduce(ReduceFn f, bool float_only = false) {
  return [f, float_only](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    if (float_only && !is_float(x.dtype())) c.unsupported("dtype " + std::string(dtype_name(x.dtype())));
    std::optional<Dims> dims = reduce_axes(c, x.rank());
    if (!dims) return {x};
    bool keep = c.attr_i("keepdims", 1) != 0;
    if (x.rank() == 0) return {x};
    for (int d : *dims)
      if (x.shape()[d] == 0) c.unsupported("reduction over an empty dim");
    DynTensor y = f(x, *dims, keep);
    if (y.dtype() != x.dtype()) y = cast(y, x.dtype());
    return {y};
  };
}

OpHandler arg_reduce(bool is_max) {
  return [is_max](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    int axis = normalize_axis(c.attr_i("axis", 0), x.rank(), c);
    bool keep = c.attr_i("keepdims", 1) != 0;
    bool last = c.attr_i("select_last_index", 0) != 0;
    DynTensor src = last ? flip(x, {axis}) : x;
    DynTensor idx = is_max ? argmax(src, axis, keep) : argmin(src, axis, keep);
    if (last) idx = sub(int64_t(x.shape()[axis] - 1), idx);
    return {cast(idx, DType::i64)};
  };
}

enum class SoftKind { softmax, log_softmax, hardmax };

DynTensor hardmax_dim(DynTensor x, int dim) {
  DynTensor idx = argmax(x, dim, true);
  Sizes shape(size_t(x.rank()), 1);
  shape[size_t(dim)] = x.shape()[dim];
  DynTensor r = reshape(DynTensor::arange(int64_t(0), x.shape()[dim], int64_t(1), DType::i64, x.device()), shape);
  return cast(equal(r, idx), x.dtype());
}

OpHandler soft(SoftKind k) {
  return [k](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    if (!is_float(x.dtype())) c.unsupported("dtype " + std::string(dtype_name(x.dtype())));
    auto apply = [k](DynTensor v, int d) {
      switch (k) {
        case SoftKind::softmax: return softmax(v, d);
        case SoftKind::log_softmax: return log_softmax(v, d);
        case SoftKind::hardmax: return hardmax_dim(v, d);
      }
      return v;
    };
    if (x.rank() == 0) c.fail("input must have at least one dim");
    if (c.opset >= 13) return {apply(x, normalize_axis(c.attr_i("axis", -1), x.rank(), c))};
    int axis = normalize_axis(c.attr_i("axis", 1), x.rank(), c);
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
    int64_t inner = x.numel() / std::max<int64_t>(outer, 1);
    if (x.numel() == 0) return {x};
    DynTensor y = apply(reshape(x, {outer, inner}), 1);
    return {reshape(y, x.shape().dims())};
  };
}

}  // namespace

void register_reduce_ops(OpTable& t) {
  t["ReduceSum"] = reduce([](DynTensor x, const Dims& d, bool k) { return sum(x, d, k); });
  t["ReduceMean"] = reduce([](DynTensor x, const Dims& d, bool k) { return mean(x, d, k); }, true);
  t["ReduceMax"] = reduce([](DynTensor x, const Dims& d, bool k) { return max(x, d, k); });
  t["ReduceMin"] = reduce([](DynTensor x, const Dims& d, bool k) { return min(x, d, k); });
  t["ReduceProd"] = reduce([](DynTensor x, const Dims& d, bool k) { return prod(x, d, k); });
  t["ReduceL1"] = reduce([](DynTensor x, const Dims& d, bool k) { return sum(abs(x), d, k); });
  t["ReduceL2"] = reduce(
      [](DynTensor x, const Dims& d, bool k) {
        DynTensor xf = is_float(x.dtype()) ? x : cast(x, DType::f64);
        return sqrt(sum(mul(xf, xf), d, k));
      });
  t["ReduceSumSquare"] = reduce([](DynTensor x, const Dims& d, bool k) { return sum(mul(x, x), d, k); });
  t["ReduceLogSum"] = reduce([](DynTensor x, const Dims& d, bool k) { return log(sum(x, d, k)); }, true);
  t["ReduceLogSumExp"] = reduce([](DynTensor x, const Dims& d, bool k) { return logsumexp(x, d, k); }, true);
  t["ArgMax"] = arg_reduce(true);
  t["ArgMin"] = arg_reduce(false);
  t["Softmax"] = soft(SoftKind::softmax);
  t["LogSoftmax"] = soft(SoftKind::log_softmax);
  t["Hardmax"] = soft(SoftKind::hardmax);

  t["CumSum"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    std::optional<std::vector<int64_t>> ax = c.ints_input(1);
    if (!ax || ax->size() != 1) c.fail("axis must be a one-element tensor");
    int axis = normalize_axis((*ax)[0], x.rank(), c);
    bool excl = c.attr_i("exclusive", 0) != 0, rev = c.attr_i("reverse", 0) != 0;
    DynTensor v = rev ? flip(x, {axis}) : x;
    DynTensor s = cumsum(v, axis);
    if (s.dtype() != x.dtype()) s = cast(s, x.dtype());
    if (excl) {
      int64_t n = v.shape()[axis];
      Sizes pads(size_t(2 * (x.rank() - axis)), 0);
      pads[pads.size() - 2] = 1;  // one zero before, along axis
      s = pad(n > 0 ? narrow(s, axis, 0, n - 1) : s, pads);
      if (n == 0) s = v;
    }
    if (rev) s = flip(s, {axis});
    return {s};
  };
  t["TopK"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    int64_t k;
    if (c.opset < 10) {
      k = c.attr_i("k", -1);
    } else {
      auto kv = c.ints_input(1);
      if (!kv || kv->size() != 1) c.fail("K must be a one-element tensor");
      k = (*kv)[0];
    }
    int axis = normalize_axis(c.attr_i("axis", -1), x.rank(), c);
    bool largest = c.attr_i("largest", 1) != 0;
    if (c.attr_i("sorted", 1) == 0) c.unsupported("sorted=0");
    // Ties: ONNX wants the lower index first; a stable sort provides it.
    auto [vals, idx] = sort(x, axis, largest);
    return {narrow(vals, axis, 0, k), cast(narrow(idx, axis, 0, k), DType::i64)};
  };
}

}  // namespace ember::onnx::detail
