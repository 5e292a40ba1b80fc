// Backward rules of the reductions, softmax / log_softmax, cross_entropy, the scans, sort / topk
// and matmul, and matmul_wq (x's gradient through the dequantized weight).
//
// Conventions follow PyTorch 1.13 autograd: max / min with dims (torch.amax / amin) share the
// gradient evenly among tied extremes; max_dim, min_dim, cummax, cummin, sort and topk route it
// by their indices output; prod and cumprod stay exact when the input holds zeros; norm follows
// torch.linalg.vector_norm (no NaN where the norm is zero). Every rule is made of IR ops that have rules of their
// own, so the rules can be differentiated again (create_graph); cross_entropy's fused backward op
// is used only when they will not be. Index outputs (argmax, argmin,
// the second output of max_dim, cummax, sort, ...) take no gradient; argmax / argmin have no rule.
#include <cmath>
#include <vector>

#include "rules.hpp"

namespace ember::autodiff {

namespace {

// Gradients exist for floating inputs only (integer sums and products give i64 outputs).
bool floating(const BackwardCtx& c) { return is_float(c.in(0).dtype); }

DimAttrs dim_attrs(int dim) {
  DimAttrs a;
  a.dim = dim;
  return a;
}

Val cumprod(const Val& x, int dim) { return run(OpKind::cumprod, {x}, dim_attrs(dim)); }

// sum_{j >= i} v_j along dim
Val reverse_cumsum(const Val& v, int dim) { return flip(cumsum(flip(v, {dim}), dim), {dim}); }

Val logical_or(const Val& a, const Val& b) { return run(OpKind::bool_or, {a, b}); }

// The number of elements each output of a reduction over `dims` (empty = all) folds.
int64_t reduced_count(const Shape& in, const std::vector<int>& dims) {
  if (dims.empty()) return in.numel();
  int64_t n = 1;
  for (int d : dims) n *= in[d];
  return n;
}

// prod_{j != i} x_j along dim (size >= 2), without division: the product of everything before i
// times the product of everything after i, each an inclusive cumprod of a shifted copy.
Val exclusive_prod(const Val& x, int dim) {
  const int64_t n = x.shape()[dim];
  Shape one = x.shape();
  one[dim] = 1;
  Val ones = full(x.backend(), one, 1.0, x.dtype());
  Val before = cumprod(cat({ones, narrow(x, dim, 0, n - 1)}, dim), dim);
  Val after = flip(cumprod(cat({ones, flip(narrow(x, dim, 1, n - 1), {dim})}, dim), dim), {dim});
  return before * after;
}

// prod over `dims`: dx_i = g * prod_{j != i} x_j. The reduced dims are moved last and merged
// into one, so the exclusive products are taken along a single dim: [kept, reduced].
Val prod_grad(const Val& x, const Val& g, const std::vector<int>& dims, bool keepdim) {
  const Shape& s = x.shape();
  const int rank = s.rank();
  const int64_t n = reduced_count(s, dims);
  if (n <= 1) return unreduce(g, s, dims, keepdim);
  // perm: the kept dims, then the reduced dims (each group in order)
  std::vector<bool> reduced(static_cast<size_t>(rank), dims.empty());
  for (int d : dims) reduced[size_t(d)] = true;
  std::vector<int> perm;
  for (bool want_reduced : {false, true})
    for (int d = 0; d < rank; ++d)
      if (reduced[size_t(d)] == want_reduced) perm.push_back(d);
  bool identity = true;
  std::vector<int> inverse(static_cast<size_t>(rank));
  std::vector<int64_t> permuted;
  for (int i = 0; i < rank; ++i) {
    identity = identity && perm[size_t(i)] == i;
    inverse[size_t(perm[size_t(i)])] = i;
    permuted.push_back(s[perm[size_t(i)]]);
  }
  const int64_t kept = s.numel() / n;
  Val x2 = reshape(identity ? x : permute(x, perm), Shape{kept, n});
  Val d2 = reshape(g, Shape{kept, 1}) * exclusive_prod(x2, 1);
  Val d = reshape(d2, Shape(permuted));
  return identity ? d : permute(d, inverse);
}

// var over `dims`: dx = 2 / (N - correction) * g * (x - mean(x)). N <= correction is not
// special-cased: it gives +-inf / NaN as in torch 1.13 (whose all-dims variant fails there).
Val var_grad(const Val& x, const Val& g, const ReduceAttrs& a) {
  const Shape& s = x.shape();
  const double dof = double(reduced_count(s, a.dims) - a.correction);
  return unreduce(g, s, a.dims, a.keepdim) * (x - mean(x, a.dims, true)) * (2.0 / dof);
}

// torch.linalg.vector_norm's gradient (x: input, ug / n: gradient and norm brought back to x's
// shape, count_dims: the reduced dims for the ties of the inf-norms):
//   p = 0: 0;  p = 1: sign(x) g;  p = 2: g x / n (0 where n = 0);
//   p = +-inf: sign(x) g / #ties on the elements with |x| == n (or NaN);
//   p < 1: sign(x) |x|^(p-1) g n^(1-p) (0 where x = 0);
//   1 < p < 2: sign(x) |x|^(p-1) g / n^(p-1);  p > 2: x |x|^(p-2) g / n^(p-1) (both 0 where n = 0).
Val norm_grad(const Val& x, const Val& ug, const Val& n, double p, const std::vector<int>& count_dims) {
  if (p == 0) return zeros_like(x);
  Val sign = un(OpKind::sign, x);
  if (p == 1) return sign * ug;
  if (p == 2) return ug * where(cmp(OpKind::equal, n, 0.0), 0.0, x / n);
  Val ax = un(OpKind::abs, x);
  if (std::isinf(p)) {
    Val mask = logical_or(cmp(OpKind::equal, ax, n), un(OpKind::is_nan, ax));
    Val m = cast(mask, x.dtype());
    return sign * (ug / sum(m, count_dims, true) * m);
  }
  if (p < 1) return sign * where(cmp(OpKind::equal, x, 0.0), 0.0, pow(ax, p - 1)) * ug * pow(n, 1 - p);
  Val scale = where(cmp(OpKind::equal, n, 0.0), 0.0, ug / pow(n, p - 1));
  if (p < 2) return sign * pow(ax, p - 1) * scale;
  return x * pow(ax, p - 2) * scale;
}

// max / min over dims: g shared evenly among the elements equal to the result, dx = mask * g /
// count(mask). A NaN result shares it among the NaNs (as torch.max(x) does; torch.amax gives NaN).
Val extreme_grad(const Val& x, const Val& g, const Val& out, const ReduceAttrs& a) {
  Val uo = unreduce(out, x.shape(), a.dims, a.keepdim);
  Val mask = logical_or(cmp(OpKind::equal, x, uo), logical_and(un(OpKind::is_nan, x), un(OpKind::is_nan, uo)));
  Val m = cast(mask, x.dtype());
  return unreduce(g, x.shape(), a.dims, a.keepdim) / sum(m, a.dims, true) * m;
}

// Routes the gradient of selected values back to where they came from: dx = zeros(x) with
// g[..., j, ...] added at index[..., j, ...] along dim (max_dim, cummax, sort, topk).
Val route_by_index(BackwardCtx& c, const Val& g, const Val& index, int dim) {
  Val zeros = full(c.backend(), c.in(0).shape, 0.0, c.in(0).dtype);
  if (g.numel() == 0) return zeros;
  return scatter_add(zeros, dim, index, g);
}

// cumprod along dim, exact with zeros. With z, z2 the first two zeros of a line, and y' (y'')
// the cumprod of x with x_z (and x_z2) set to 1:
//   i < z:      dx_i = sum_{k >= i} g_k y_k / x_i          (x_i != 0)
//   i = z:      dx_z = sum_{k >= z} g_k y'_k
//   z < i < z2: dx_i = x_z sum_{k >= i} g_k y'_k / x_i
//   i = z2:     dx_i = x_z sum_{k >= z2} g_k y''_k
//   otherwise:  dx_i = 0                                    (every term holds two zeros)
// The last two lines are 0 in value; they keep the factor x_z so that the second derivatives
// are exact too (a term holding two zeros has no first derivative).
Val cumprod_grad(const Val& x, const Val& y, const Val& g, int dim) {
  Val zero = cmp(OpKind::equal, x, 0.0);
  Val zeros_so_far = cumsum(zero, dim);  // i64
  Val before = cmp(OpKind::equal, zeros_so_far, 0.0);
  Val one_so_far = cmp(OpKind::equal, zeros_so_far, 1.0);
  Val first = logical_and(zero, one_so_far);
  Val between = logical_and(logical_not(zero), one_so_far);
  Val second = logical_and(zero, cmp(OpKind::equal, zeros_so_far, 2.0));
  Val safe_x = where(zero, 1.0, x);
  Val x_first = sum(where(first, x, 0.0), {dim}, true);
  Val x_no_first = where(first, 1.0, x);
  Val tail = reverse_cumsum(g * y, dim);
  Val tail1 = reverse_cumsum(g * cumprod(x_no_first, dim), dim);
  Val tail2 = reverse_cumsum(g * cumprod(where(second, 1.0, x_no_first), dim), dim);
  return where(before, tail / safe_x,
               where(first, tail1, where(between, x_first * tail1 / safe_x, where(second, x_first * tail2, 0.0))));
}

}  // namespace

void register_reduce_rules(RuleTable& t) {
  // ---- reductions ----

  // sum: dx = g brought back to x's shape
  t[size_t(OpKind::sum)].fn = [](BackwardCtx& c) -> Grads {
    if (!floating(c)) return {Val{}};
    const auto& a = c.attr<ReduceAttrs>();
    return {unreduce(c.grad(0), c.in(0).shape, a.dims, a.keepdim)};
  };

  // mean: dx = g / N
  t[size_t(OpKind::mean)].fn = [](BackwardCtx& c) -> Grads {
    const auto& a = c.attr<ReduceAttrs>();
    const double n = double(reduced_count(c.in(0).shape, a.dims));
    return {unreduce(c.grad(0), c.in(0).shape, a.dims, a.keepdim) / n};
  };

  // prod: dx_i = g * prod_{j != i} x_j (exact with zeros, see prod_grad)
  t[size_t(OpKind::prod)].save_inputs = 1;
  t[size_t(OpKind::prod)].fn = [](BackwardCtx& c) -> Grads {
    if (!floating(c)) return {Val{}};
    const auto& a = c.attr<ReduceAttrs>();
    return {prod_grad(c.input(0), c.grad(0), a.dims, a.keepdim)};
  };

  // max / min: dx = g / #ties on the elements equal to the result
  for (OpKind k : {OpKind::max, OpKind::min}) {
    t[size_t(k)].save_inputs = 1;
    t[size_t(k)].save_outputs = 1;
    t[size_t(k)].fn = [](BackwardCtx& c) -> Grads {
      if (!floating(c)) return {Val{}};
      return {extreme_grad(c.input(0), c.grad(0), c.output(0), c.attr<ReduceAttrs>())};
    };
  }

  // var: dx = 2 / (N - correction) * g * (x - mean(x))
  t[size_t(OpKind::var)].save_inputs = 1;
  t[size_t(OpKind::var)].fn = [](BackwardCtx& c) -> Grads {
    return {var_grad(c.input(0), c.grad(0), c.attr<ReduceAttrs>())};
  };

  // std = sqrt(var): dx = var's rule applied to g / (2 std) (0 where std = 0)
  t[size_t(OpKind::std)].save_inputs = 1;
  t[size_t(OpKind::std)].save_outputs = 1;
  t[size_t(OpKind::std)].fn = [](BackwardCtx& c) -> Grads {
    Val y = c.output(0);
    Val g_var = where(cmp(OpKind::equal, y, 0.0), 0.0, c.grad(0) / (y * 2.0));
    return {var_grad(c.input(0), g_var, c.attr<ReduceAttrs>())};
  };

  // norm: see norm_grad
  t[size_t(OpKind::norm)].save_inputs = 1;
  t[size_t(OpKind::norm)].save_outputs = 1;
  t[size_t(OpKind::norm)].fn = [](BackwardCtx& c) -> Grads {
    const auto& a = c.attr<ReduceAttrs>();
    const Shape& s = c.in(0).shape;
    Val ug = unreduce(c.grad(0), s, a.dims, a.keepdim);
    Val n = unreduce(c.output(0), s, a.dims, a.keepdim);
    return {norm_grad(c.input(0), ug, n, a.p, a.dims)};
  };

  // logsumexp: dx = g * exp(x - y)
  t[size_t(OpKind::logsumexp)].save_inputs = 1;
  t[size_t(OpKind::logsumexp)].save_outputs = 1;
  t[size_t(OpKind::logsumexp)].fn = [](BackwardCtx& c) -> Grads {
    const auto& a = c.attr<ReduceAttrs>();
    const Shape& s = c.in(0).shape;
    Val y = unreduce(c.output(0), s, a.dims, a.keepdim);
    return {unreduce(c.grad(0), s, a.dims, a.keepdim) * un(OpKind::exp, c.input(0) - y)};
  };

  // max_dim / min_dim: the values' gradient goes to the positions in the indices output
  for (OpKind k : {OpKind::max_dim, OpKind::min_dim}) {
    t[size_t(k)].save_outputs = 0b10;
    t[size_t(k)].fn = [](BackwardCtx& c) -> Grads {
      if (!floating(c)) return {Val{}};
      const auto& a = c.attr<ReduceAttrs>();
      if (c.in(0).shape.rank() == 0 || a.dims.empty()) return {reshape(c.grad(0), c.in(0).shape)};
      const int dim = a.dims[0];
      Val g = c.grad(0), index = c.output(1);
      if (!a.keepdim) {
        g = unsqueeze(g, dim);
        index = unsqueeze(index, dim);
      }
      return {route_by_index(c, g, index, dim)};
    };
  }

  // softmax: dx = y * (g - sum(g * y))
  t[size_t(OpKind::softmax)].save_outputs = 1;
  t[size_t(OpKind::softmax)].fn = [](BackwardCtx& c) -> Grads {
    const int dim = c.attr<DimAttrs>().dim;
    Val y = c.output(0), g = c.grad(0);
    return {y * (g - sum(g * y, {dim}, true))};
  };

  // log_softmax: dx = g - exp(y) * sum(g)
  t[size_t(OpKind::log_softmax)].save_outputs = 1;
  t[size_t(OpKind::log_softmax)].fn = [](BackwardCtx& c) -> Grads {
    const int dim = c.attr<DimAttrs>().dim;
    Val g = c.grad(0);
    return {g - un(OpKind::exp, c.output(0)) * sum(g, {dim}, true)};
  };

  // cross_entropy, loss_n = lse_n - x[n, t_n] in the rows that count (valid_n = 1):
  //   dx = (softmax(x) - onehot(t)) * g_n * valid_n.
  // The fused cross_entropy_backward op computes it from the forward's lse; under create_graph
  // it is composed of differentiable ops instead (the fused op has no rule). No gradient flows
  // through lse and valid.
  {
    Rule& r = t[size_t(OpKind::cross_entropy)];
    r.save_inputs = 0b11;
    r.save_outputs = 0b110;
    r.fn = [](BackwardCtx& c) -> Grads {
      Grads out(2);
      if (!c.needs_grad(0)) return out;
      const auto& a = c.attr<DimAttrs>();
      if (!c.create_graph()) {
        out[0] = run(OpKind::cross_entropy_backward, {c.input(0), c.input(1), c.output(1), c.grad(0)}, a);
        return out;
      }
      // (the per-row values are in the compute type: the gradient comes back in the logits')
      const DType dt = c.input(0).dtype();
      Val gw = cast(unsqueeze(c.grad(0) * c.output(2), 1), dt);  // [N, 1]
      Val p = un(OpKind::exp, run(OpKind::log_softmax, {c.input(0)}, DimAttrs{1}));
      Val target = c.input(1);
      Val safe = unsqueeze(where(cmp(OpKind::equal, target, double(a.k)), 0.0, target), 1);
      out[0] = scatter_add(p * gw, 1, safe, -gw);
      return out;
    };
  }

  // ---- scans ----

  // cumsum: dx_i = sum_{k >= i} g_k
  t[size_t(OpKind::cumsum)].fn = [](BackwardCtx& c) -> Grads {
    if (!floating(c)) return {Val{}};
    if (c.in(0).shape.rank() == 0) return {c.grad(0)};
    return {reverse_cumsum(c.grad(0), c.attr<DimAttrs>().dim)};
  };

  // cumprod: dx_i = sum_{k >= i} g_k prod_{j <= k, j != i} x_j (exact with zeros, see cumprod_grad)
  t[size_t(OpKind::cumprod)].save_inputs = 1;
  t[size_t(OpKind::cumprod)].save_outputs = 1;
  t[size_t(OpKind::cumprod)].fn = [](BackwardCtx& c) -> Grads {
    if (!floating(c)) return {Val{}};
    if (c.in(0).shape.rank() == 0) return {c.grad(0)};
    return {cumprod_grad(c.input(0), c.output(0), c.grad(0), c.attr<DimAttrs>().dim)};
  };

  // cummax / cummin, sort, topk: dx = scatter_add(zeros(x), dim, indices, g)
  for (OpKind k : {OpKind::cummax, OpKind::cummin, OpKind::sort, OpKind::topk}) {
    t[size_t(k)].save_outputs = 0b10;
    t[size_t(k)].fn = [](BackwardCtx& c) -> Grads {
      if (!floating(c)) return {Val{}};
      if (c.in(0).shape.rank() == 0) return {c.grad(0)};
      return {route_by_index(c, c.grad(0), c.output(1), c.attr<DimAttrs>().dim)};
    };
  }

  // ---- linear algebra ----

  // matmul: da = g @ b^T, db = a^T @ g, each summed over the batch dims broadcast from it.
  // A matrix b shared by a whole batch of a (a linear layer's weight: [B..., M, K] x [K, N]) gets
  // its gradient from one GEMM over the batch folded into rows, a_rows^T @ g_rows ([K, B*M] x
  // [B*M, N]), not from B products that a sum then reduces: on GPT-2 small's layers that is the
  // difference between one [768, 8192] x [8192, 3072] GEMM and eight GEMMs plus an 8-way sum over
  // a [8, 768, 3072] intermediate.
  t[size_t(OpKind::matmul)].save_inputs = 0b11;
  // A bias (third input, [N] added to every row) gets g summed over the rows. A matrix b that is
  // the transpose of a tracked matrix W (nn::Linear: x @ W^T) gets db as (g^T @ a)^T, a view of a
  // product in W's layout, so that W's gradient (the permute's rule transposes db back) is
  // contiguous: clipping, the optimizer and accumulation then read it without a copy (GPT-2
  // small has three such weights a layer; an H100 profile showed the clip copying each of them).
  t[size_t(OpKind::matmul)].fn = [](BackwardCtx& c) -> Grads {
    Grads out(c.num_inputs());
    if (!floating(c)) return out;
    Val g = c.grad(0);
    if (c.num_inputs() > 2 && c.has_input(2) && c.needs_grad(2)) out[2] = sum_to(g, c.in(2).shape);
    if (c.needs_grad(0)) out[0] = sum_to(matmul(g, transpose(c.input(1), -1, -2)), c.in(0).shape);
    if (c.needs_grad(1)) {
      const Shape& as = c.in(0).shape;
      const Shape& bs = c.in(1).shape;
      const int ar = as.rank();
      if (bs.rank() == 2 && ar > 2 && g.rank() == ar) {
        int64_t rows = 1;
        for (int d = 0; d + 1 < ar; ++d) rows *= as[d];
        Val a_rows = reshape(c.input(0), Shape{rows, as[-1]});
        Val g_rows = reshape(g, Shape{rows, g.shape()[-1]});
        out[1] = c.input_is_transpose(1) ? transpose(matmul(transpose(g_rows, 0, 1), a_rows), 0, 1)
                                         : matmul(transpose(a_rows, 0, 1), g_rows);
      } else if (bs.rank() == 2 && ar == 2 && c.input_is_transpose(1)) {
        out[1] = transpose(matmul(transpose(g, 0, 1), c.input(0)), 0, 1);
      } else {
        out[1] = sum_to(matmul(transpose(c.input(0), -1, -2), g), bs);
      }
    }
    return out;
  };

  // matmul_wq: y = x W^T with W [N, K] stored quantized (data, scales[, zero point]). The
  // weights are frozen constants: x gets dx = g @ dequant(W) (with quantize_x, the straight-through
  // estimator of x's rounding); the integer data takes no gradient, and a tracked scale or zero
  // point is an error rather than a silent zero.
  t[size_t(OpKind::matmul_wq)].save_inputs = 0b1110;
  t[size_t(OpKind::matmul_wq)].fn = [](BackwardCtx& c) -> Grads {
    Grads out(c.num_inputs());
    for (size_t i = 2; i < c.num_inputs(); ++i)
      EMBER_CHECK(!c.has_input(i) || !c.needs_grad(i), "matmul_wq: no gradient flows to its ",
                  i == 2 ? "scales" : "zero point", " (the quantized weight is a constant; use fake_quantize to train "
                  "through a quantization grid)");
    if (!c.needs_grad(0)) return out;
    const auto& a = c.attr<WeightQuantAttrs>();
    Val data = c.input(1), scales = c.input(2);
    const int64_t n = scales.shape()[0], nblocks = scales.shape()[1], k = nblocks * a.block;
    const bool has_zp = c.num_inputs() > 3 && c.has_input(3);
    Val q;  // the stored integers as f32 [N, K]
    if (a.bits == 8) {
      q = cast(data, DType::f32);
    } else {
      Val lo = cast(run(OpKind::bitwise_and, {data, scalar(data.backend(), 15, DType::u8)}), DType::f32);
      Val hi = cast(run(OpKind::shift_right, {data, scalar(data.backend(), 4, DType::u8)}), DType::f32);
      if (!has_zp) {  // two's complement nibbles
        lo = where(cmp(OpKind::greater, lo, 7.5), lo - 16.0, lo);
        hi = where(cmp(OpKind::greater, hi, 7.5), hi - 16.0, hi);
      }
      q = reshape(cat({unsqueeze(lo, -1), unsqueeze(hi, -1)}, -1), Shape{n, k});
    }
    q = reshape(q, Shape{n, nblocks, a.block});
    if (has_zp) q = q - unsqueeze(cast(c.input(3), DType::f32), -1);
    Val w = reshape(q * unsqueeze(scales, -1), Shape{n, k});  // dequant(W) [N, K]
    Val g = c.grad(0);
    out[0] = g.rank() == 1 ? reshape(matmul(unsqueeze(g, 0), w), Shape{k})
                           : matmul(g, w);  // [.., N] @ [N, K] -> [.., K]
    if (out[0].dtype() != c.in(0).dtype) out[0] = cast(out[0], c.in(0).dtype);
    return out;
  };
}

}  // namespace ember::autodiff
