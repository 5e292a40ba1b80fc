// Backward rules of the neural-network primitives: conv, conv_transpose, the pools,
// interpolate, layer_norm, batch_norm (inference) and attention.
//
// Convolutions go back through convolutions (conv <-> conv_transpose, and a role-swapped conv
// for the weight). avg_pool, adaptive_avg_pool and interpolate are separable linear maps: per
// spatial dim a host-built matrix M [out, in] built with exactly the forward kernel's windows,
// divisors and weights (src/backends/cpu/pool.cpp), and the gradient applies M^T along each dim
// with a matmul. max_pool routes the gradient by its saved indices. Norms and attention
// recompute their statistics / probabilities from the saved inputs with IR ops. Every rule is
// made of differentiable IR ops, so it can itself be differentiated (create_graph).
//
// f16/bf16 gradients are computed in f32 and rounded once at the end, like the forward kernels.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ember/core/custom_op.hpp"
#include "rules.hpp"

namespace ember::autodiff {

namespace {

// The precision the forward kernels compute in: f64 for f64, f32 otherwise.
DType compute_dtype(DType dt) { return dt == DType::f64 ? DType::f64 : DType::f32; }
Val up(const Val& v) { return v.defined() ? cast(v, compute_dtype(v.dtype())) : v; }

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<int> trailing_dims(int rank, int nd) {
  std::vector<int> d;
  for (int i = rank - nd; i < rank; ++i) d.push_back(i);
  return d;
}

// ---------------------------------------------------------------------------------------
// Separable linear maps (avg_pool, adaptive_avg_pool, interpolate)

// Builds the row-major factor M [out, in] of spatial dim i; f64: in double precision (else float).
using DimMatrixFn = std::function<std::vector<double>(int i, int64_t in, int64_t out, bool f64)>;

bool is_identity(const std::vector<double>& m, int64_t in, int64_t out) {
  if (in != out) return false;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i)
      if (m[size_t(o * in + i)] != (o == i ? 1.0 : 0.0)) return false;
  return true;
}

// g contracted with M along `dim` (g's size there is out): r[.., i, ..] = sum_o g[.., o, ..] M[o, i].
Val apply_transposed(const Val& g, int dim, const Val& m) {
  int last = g.rank() - 1;
  Val t = transpose(g, dim, last);
  std::vector<int64_t> ts = t.shape().dims();
  int64_t out = ts.back();
  int64_t rows = out ? t.numel() / out : 0;
  Val r = matmul(reshape(t, Shape{rows, out}), m);  // [rows, in]
  ts.back() = m.shape()[1];
  return transpose(reshape(r, Shape(ts)), dim, last);
}

// dx of y = (M_0 x M_1 x ... over the trailing nd dims) x: g multiplied by each M_i^T.
Val separable_adjoint(BackwardCtx& c, const Val& g, int nd, const DimMatrixFn& matrix) {
  DType dt = g.dtype(), cdt = compute_dtype(dt);
  const Shape& xs = c.in(0).shape;
  int rank = xs.rank();
  Val r = cast(g, cdt);
  for (int i = 0; i < nd; ++i) {
    int dim = rank - nd + i;
    int64_t in = xs[dim], out = g.shape()[dim];
    std::vector<double> m = matrix(i, in, out, cdt == DType::f64);
    if (is_identity(m, in, out)) continue;
    r = apply_transposed(r, dim, from_host(c.backend(), TensorData::from_doubles(m, Shape{out, in}, cdt)));
  }
  return cast(r, dt);
}

// avg_pool along one dim: output o averages taps start + t*d (t < k), start = o*s - p, over the
// taps inside the input; the divisor is the number of taps inside [-p, in + p)
// (count_include_pad) or inside [0, in), and the kernel's divisor is the product of the per-dim
// divisors (PyTorch's pool_size), so the map factorises.
template <class A>
std::vector<double> avg_pool_matrix(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, int64_t d,
                                    bool include_pad) {
  std::vector<double> m(size_t(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = o * s - p, n = 0, cnt = 0;
    for (int64_t t = 0; t < k; ++t) {
      int64_t pos = start + t * d;
      if (pos >= 0 && pos < in) ++n;
      if (pos < in + p) ++cnt;
    }
    int64_t div = include_pad ? cnt : n;
    if (div == 0) continue;
    double w = double(A(1) / A(div));
    for (int64_t t = 0; t < k; ++t) {
      int64_t pos = start + t * d;
      if (pos >= 0 && pos < in) m[size_t(o * in + pos)] += w;
    }
  }
  return m;
}

// adaptive_avg_pool along one dim: output o averages [floor(o*in/out), ceil((o+1)*in/out)).
template <class A>
std::vector<double> adaptive_avg_matrix(int64_t in, int64_t out) {
  std::vector<double> m(size_t(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    int64_t lo = (o * in) / out, hi = ((o + 1) * in + out - 1) / out;
    double w = double(A(1) / A(hi - lo));
    for (int64_t i = lo; i < hi; ++i) m[size_t(o * in + i)] = w;
  }
  return m;
}

// interpolate along one dim: the forward kernel's source indices and weights.
// nearest: PyTorch's legacy src = min(floor(dst * (float)(in / out)), in - 1), in float.
int64_t nearest_source(int64_t dst, int64_t in, int64_t out) {
  if (in == out) return dst;
  if (out == 2 * in) return dst >> 1;
  float scale = float(in) / float(out);
  return std::min(int64_t(std::floor(float(dst) * scale)), in - 1);
}

// linear / cubic: area_pixel_compute_scale / area_pixel_compute_source_index; linear clamps a
// negative source to 0, cubic uses A = -0.75 and clamps its 4 taps to the border.
template <class A>
std::vector<double> interp_matrix(int64_t in, int64_t out, InterpMode mode, bool align_corners) {
  std::vector<double> m(size_t(out * in), 0.0);
  auto add = [&](int64_t o, int64_t i, A w) { m[size_t(o * in + i)] += double(w); };
  if (mode == InterpMode::nearest) {
    for (int64_t o = 0; o < out; ++o) add(o, nearest_source(o, in, out), A(1));
    return m;
  }
  if (in == 1 && out == 1) {
    add(0, 0, A(1));
    return m;
  }
  A scale = align_corners ? (out > 1 ? A(in - 1) / A(out - 1) : A(0)) : A(in) / A(out);
  auto source = [&](int64_t dst, bool cubic) {
    if (align_corners) return scale * A(dst);
    A src = scale * (A(dst) + A(0.5)) - A(0.5);
    return (!cubic && src < A(0)) ? A(0) : src;
  };
  if (mode == InterpMode::linear) {
    for (int64_t o = 0; o < out; ++o) {
      A real = source(o, false);
      int64_t i0 = std::min(int64_t(std::floor(real)), in - 1);
      A l1 = std::min(std::max(real - A(i0), A(0)), A(1));
      add(o, i0, A(1) - l1);
      add(o, i0 + (i0 < in - 1 ? 1 : 0), l1);
    }
    return m;
  }
  const A a = A(-0.75);
  auto cc1 = [a](A x) { return ((a + A(2)) * x - (a + A(3))) * x * x + A(1); };
  auto cc2 = [a](A x) { return ((a * x - A(5) * a) * x + A(8) * a) * x - A(4) * a; };
  for (int64_t o = 0; o < out; ++o) {
    A real = source(o, true);
    A fl = std::floor(real);
    int64_t i0 = int64_t(fl);
    A t = real - fl;
    A w[4] = {cc2(t + A(1)), cc1(t), cc1(A(1) - t), cc2(A(2) - t)};
    for (int j = 0; j < 4; ++j) add(o, std::clamp<int64_t>(i0 - 1 + j, 0, in - 1), w[j]);
  }
  return m;
}

// ---------------------------------------------------------------------------------------
// Convolutions

ConvAttrs conv_attrs(std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> dilation,
                     int64_t groups) {
  ConvAttrs a;
  a.output_padding.assign(stride.size(), 0);
  a.stride = std::move(stride);
  a.padding = std::move(padding);
  a.dilation = std::move(dilation);
  a.groups = groups;
  return a;
}

// Narrows the trailing spatial dims of v to `sizes` (from the front).
Val narrow_spatial(Val v, const std::vector<int64_t>& sizes) {
  int nd = int(sizes.size()), off = v.rank() - nd;
  for (int i = 0; i < nd; ++i)
    if (v.shape()[off + i] != sizes[size_t(i)]) v = narrow(v, off + i, 0, sizes[size_t(i)]);
  return v;
}

// [N, G*K, *sp] -> [K, G*N, *sp]: channel k of group gi of image n becomes image k, channel gi*N + n.
Val groups_to_batch(const Val& x, int64_t groups) {
  if (groups == 1) return transpose(x, 0, 1);
  std::vector<int64_t> s = x.shape().dims();
  int64_t n = s[0], k = s[1] / groups;
  std::vector<int64_t> split = {n, groups, k};
  split.insert(split.end(), s.begin() + 2, s.end());
  std::vector<int> perm = {2, 1, 0};
  for (int d = 3; d < int(split.size()); ++d) perm.push_back(d);
  std::vector<int64_t> merged = {k, groups * n};
  merged.insert(merged.end(), s.begin() + 2, s.end());
  return reshape(permute(reshape(x, Shape(split)), perm), Shape(merged));
}

// Weight gradient of a (transposed) convolution as one convolution with the roles swapped:
//   dW[a, b, t] = sum_n sum_i in[n, b', i] ker[n, a', i*s - p + t*d]
// is conv(groups_to_batch(big), transpose(small, 0, 1)) with stride d, dilation s, padding p,
// where `big` is the operand indexed at i*s - p + t*d. Its spatial size is >= the kernel's;
// the surplus is cut off. Result [K, M, *k] (K = big's channels per group, M = small's channels).
Val swapped_conv(const Val& big, const Val& small, const ConvAttrs& a, const std::vector<int64_t>& ksize) {
  Val r = run(OpKind::conv, {groups_to_batch(big, a.groups), transpose(small, 0, 1)},
              conv_attrs(a.dilation, a.padding, a.stride, a.groups));
  return narrow_spatial(r, ksize);
}

Val bias_grad(const Val& g) {
  std::vector<int> dims = {0};
  for (int d = 2; d < g.rank(); ++d) dims.push_back(d);
  return sum(g, dims, false);
}

std::vector<int64_t> kernel_size(const TensorMeta& w) { return {w.shape.begin() + 2, w.shape.end()}; }

// ---------------------------------------------------------------------------------------
// attention: P = softmax(scale q k^T + mask) with the kernel's masking (bool keep-mask -> -inf
// where false, float mask added, causal: key j > query i -> -inf).
Val attention_probs(BackwardCtx& c, const Val& q, const Val& k, double scale) {
  Val s = matmul(q, transpose(k, -1, -2)) * scale;
  if (c.num_inputs() > 3 && c.has_input(3)) {
    Val m = c.input(3);
    s = m.dtype() == DType::boolean ? where(m, s, -kInf) : s + up(m);
  }
  if (c.attr<AttentionAttrs>().causal) {
    int64_t L = q.shape()[-2], S = k.shape()[-2];
    std::vector<bool> keep(size_t(L * S));
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) keep[size_t(i * S + j)] = j <= i;
    s = where(from_host(c.backend(), TensorData::from_vector<bool>(keep, Shape{L, S})), s, -kInf);
  }
  DimAttrs d;
  d.dim = -1;
  return run(OpKind::softmax, {s}, d);
}

}  // namespace

void register_nn_rules(RuleTable& t) {
  // conv: y = clamp(conv(x, w) + b + r, min, max), the residual r and the clamp optional (the
  // epilogue of conv_fused)
  //   g' = g where min < y < max (the bounds pass none, as relu'(0) = 0; a NaN y passes g)
  //   dx = conv_transpose(g', w) with output_padding = (n + 2p - d(k-1) - 1) mod s (exact shape)
  //   dw = swapped conv of x with g' (stride <-> dilation), narrowed to the kernel size
  //   db = sum of g' over N and the spatial dims; dr = g'
  {
    Rule& r = t[size_t(OpKind::conv)];
    r.save_inputs = 0b11;
    r.save_outputs_of = [](const Op& op) -> uint32_t { return op.attr<ConvAttrs>().has_activation() ? 1u : 0u; };
    r.fn = [](BackwardCtx& c) -> Grads {
      const auto& a = c.attr<ConvAttrs>();
      Val g = c.grad(0);
      if (a.has_activation()) {
        Val y = c.output(0);
        if (a.act_min > -std::numeric_limits<double>::infinity())
          g = where(cmp(OpKind::lower_equal, y, a.act_min), 0.0, g);
        if (a.act_max < std::numeric_limits<double>::infinity())
          g = where(cmp(OpKind::greater_equal, y, a.act_max), 0.0, g);
      }
      Grads out(c.num_inputs());
      if (c.num_inputs() > 3 && c.has_input(3) && c.needs_grad(3)) out[3] = g;
      int nd = int(a.stride.size());
      if (c.needs_grad(0)) {
        ConvAttrs ta = conv_attrs(a.stride, a.padding, a.dilation, a.groups);
        const Shape& xs = c.in(0).shape;
        const Shape& ws = c.in(1).shape;
        for (int i = 0; i < nd; ++i) {
          int64_t span = xs[2 + i] + 2 * a.padding[size_t(i)] - a.dilation[size_t(i)] * (ws[2 + i] - 1) - 1;
          ta.output_padding[size_t(i)] = span % a.stride[size_t(i)];
        }
        out[0] = run(OpKind::conv_transpose, {g, c.input(1)}, ta);
      }
      if (c.needs_grad(1))  // [Cg, O, *k] -> [O, Cg, *k]
        out[1] = transpose(swapped_conv(c.input(0), g, a, kernel_size(c.in(1))), 0, 1);
      if (c.num_inputs() > 2 && c.has_input(2) && c.needs_grad(2)) out[2] = bias_grad(g);
      return out;
    };
  }

  // conv_transpose: y = conv_transpose(x, w) + b (the adjoint of conv(., w))
  //   dx = conv(g, w) with the same stride/padding/dilation/groups, narrowed to x's size
  //        (output_padding >= stride can leave extra rows)
  //   dw = swapped conv of g with x (stride <-> dilation), narrowed to the kernel size
  //   db = sum of g over N and the spatial dims
  {
    Rule& r = t[size_t(OpKind::conv_transpose)];
    r.save_inputs = 0b11;
    r.fn = [](BackwardCtx& c) -> Grads {
      const auto& a = c.attr<ConvAttrs>();
      Val g = c.grad(0);
      Grads out(c.num_inputs());
      if (c.needs_grad(0)) {
        Val dx = run(OpKind::conv, {g, c.input(1)}, conv_attrs(a.stride, a.padding, a.dilation, a.groups));
        const Shape& xs = c.in(0).shape;
        out[0] = narrow_spatial(dx, std::vector<int64_t>(xs.begin() + 2, xs.end()));
      }
      if (c.needs_grad(1))  // [Og, C, *k] -> [C, Og, *k]
        out[1] = transpose(swapped_conv(g, c.input(0), a, kernel_size(c.in(1))), 0, 1);
      if (c.num_inputs() > 2 && c.has_input(2) && c.needs_grad(2)) out[2] = bias_grad(g);
      return out;
    };
  }

  // avg_pool: y = (A_0 x A_1 x ...) x per spatial dim, A[o, i] = 1/div(o) for the window taps;
  // dx = g multiplied by A^T along each spatial dim.
  t[size_t(OpKind::avg_pool)].fn = [](BackwardCtx& c) -> Grads {
    const auto& a = c.attr<PoolAttrs>();
    int nd = int(a.kernel.size());
    auto matrix = [&a](int i, int64_t in, int64_t out, bool f64) {
      size_t j = size_t(i);
      return f64 ? avg_pool_matrix<double>(in, out, a.kernel[j], a.stride[j], a.padding[j], a.dilation[j],
                                           a.count_include_pad)
                 : avg_pool_matrix<float>(in, out, a.kernel[j], a.stride[j], a.padding[j], a.dilation[j],
                                          a.count_include_pad);
    };
    return {separable_adjoint(c, c.grad(0), nd, matrix)};
  };

  // max_pool: dx = scatter_add of g into zeros [planes, prod(in spatial)] at the saved flat
  // indices [planes, prod(out spatial)], reshaped to x. A values-only max_pool (indices false)
  // that is recorded runs with indices on instead (record_as): the forward computes the argmax
  // once, where recomputing it in backward would run the pool twice; the caller still gets the
  // values alone.
  {
    Rule& r = t[size_t(OpKind::max_pool)];
    r.save_outputs = 0b10;
    r.record_as = [](Op& op) {
      auto& a = std::get<PoolAttrs>(op.attrs);
      if (a.indices) return;
      a.indices = true;
      op.outputs.push_back({op.outputs[0].shape, DType::i64});
    };
    r.fn = [](BackwardCtx& c) -> Grads {
      EMBER_CHECK(c.num_outputs() == 2, "max_pool backward: recorded without its indices (a rule table bug)");
      int nd = int(c.attr<PoolAttrs>().kernel.size());
      const Shape& xs = c.in(0).shape;
      Val g = c.grad(0), idx = c.output(1);
      int lead = xs.rank() - nd;
      int64_t planes = 1, in_n = 1;
      for (int d = 0; d < lead; ++d) planes *= xs[d];
      for (int d = lead; d < xs.rank(); ++d) in_n *= xs[d];
      int64_t out_n = planes ? g.numel() / planes : 0;
      // The zeros are moved into the op, so that the kernel can scatter into their buffer
      // instead of copying it.
      std::vector<Val> in;
      in.push_back(full(c.backend(), Shape{planes, in_n}, 0.0, g.dtype()));
      in.push_back(reshape(idx, Shape{planes, out_n}));
      in.push_back(reshape(g, Shape{planes, out_n}));
      DimAttrs along;
      along.dim = 1;
      Val dx = run(OpKind::scatter_add, std::move(in), along);
      return {reshape(dx, xs)};
    };
  }

  // adaptive_avg_pool: y = (A_0 x A_1 x ...) x, A[o, i] = 1/(end-start) on [start, end) with
  // start = floor(o*in/out), end = ceil((o+1)*in/out); dx = g multiplied by A^T per spatial dim.
  t[size_t(OpKind::adaptive_avg_pool)].fn = [](BackwardCtx& c) -> Grads {
    int nd = c.attr<ShapeAttrs>().shape.rank();
    auto matrix = [](int, int64_t in, int64_t out, bool f64) {
      return f64 ? adaptive_avg_matrix<double>(in, out) : adaptive_avg_matrix<float>(in, out);
    };
    return {separable_adjoint(c, c.grad(0), nd, matrix)};
  };

  // interpolate: y = (M_0 x M_1 x ...) x with the kernel's per-dim taps (nearest / linear /
  // cubic); dx = g multiplied by M^T per spatial dim.
  t[size_t(OpKind::interpolate)].fn = [](BackwardCtx& c) -> Grads {
    const auto& a = c.attr<InterpolateAttrs>();
    int nd = int(a.size.size());
    auto matrix = [&a](int, int64_t in, int64_t out, bool f64) {
      return f64 ? interp_matrix<double>(in, out, a.mode, a.align_corners)
                 : interp_matrix<float>(in, out, a.mode, a.align_corners);
    };
    return {separable_adjoint(c, c.grad(0), nd, matrix)};
  };

  // layer_norm over the trailing dims D: xh = (x - mean) * rstd, rstd = 1/sqrt(var + eps)
  // (biased var), y = xh * w + b.
  //   db = sum of g over the leading dims, dw = sum of g * xh over the leading dims,
  //   dx = rstd * (gh - mean_D(gh) - xh * mean_D(gh * xh)),  gh = g * w
  // The fused layer_norm_backward op computes all three in two passes over x and g; under
  // create_graph the composed form runs (the fused op has no rule of its own).
  {
    Rule& r = t[size_t(OpKind::layer_norm)];
    r.save_inputs = 0b011;
    r.fn = [](BackwardCtx& c) -> Grads {
      const auto& a = c.attr<NormAttrs>();
      Grads out(c.num_inputs());
      bool has_w = c.num_inputs() > 1 && c.has_input(1), has_b = c.num_inputs() > 2 && c.has_input(2);
      bool need_x = c.needs_grad(0), need_w = has_w && c.needs_grad(1), need_b = has_b && c.needs_grad(2);
      if (!c.create_graph() && (need_x || need_w)) {
        std::vector<Val> d =
            run_all(OpKind::layer_norm_backward, {c.input(0), has_w ? c.input(1) : Val(), c.grad(0)}, a);
        if (need_x) out[0] = d[0];
        if (need_w) out[1] = d[1];
        if (need_b) out[2] = d[2];
        return out;
      }
      DType dt = c.in(0).dtype;
      Val g = up(c.grad(0));
      const Shape& xs = c.in(0).shape;
      Shape ns(xs.end() - a.axes, xs.end());
      if (need_b) out[2] = cast(sum_to(g, ns), dt);
      if (!need_x && !need_w) return out;
      std::vector<int> dims = trailing_dims(xs.rank(), a.axes);
      Val x = up(c.input(0));
      Val xm = x - mean(x, dims, true);
      Val rstd = un(OpKind::rsqrt, mean(xm * xm, dims, true) + a.eps);
      Val xh = xm * rstd;
      if (need_w) out[1] = cast(sum_to(g * xh, ns), dt);
      if (need_x) {
        Val gh = has_w ? g * up(c.input(1)) : g;
        out[0] = cast(rstd * (gh - mean(gh, dims, true) - xh * mean(gh * xh, dims, true)), dt);
      }
      return out;
    };
  }

  // batch_norm (inference), per channel c (dim 1): y = (x - rm) * rstd * w + b,
  // rstd = 1/sqrt(rv + eps). With sums over every dim but 1:
  //   dx = g * w * rstd, dw = sum(g * (x - rm) * rstd), db = sum(g),
  //   drm = -sum(g) * w * rstd, drv = -1/2 * sum(g * (x - rm)) * w * rstd^3
  {
    Rule& r = t[size_t(OpKind::batch_norm)];
    r.save_inputs = 0b01111;
    r.fn = [](BackwardCtx& c) -> Grads {
      const auto& a = c.attr<NormAttrs>();
      Grads out(c.num_inputs());
      bool has_w = c.num_inputs() > 3 && c.has_input(3), has_b = c.num_inputs() > 4 && c.has_input(4);
      DType dt = c.in(0).dtype;
      const Shape& xs = c.in(0).shape;
      int64_t C = xs[1];
      std::vector<int64_t> bs(size_t(xs.rank()), 1);
      bs[1] = C;
      Shape bshape(bs), cshape{C};
      std::vector<int> dims = {0};
      for (int d = 2; d < xs.rank(); ++d) dims.push_back(d);
      auto chan = [&](const Val& v) { return reshape(v, bshape); };
      auto reduce = [&](const Val& v) { return reshape(sum(v, dims, false), cshape); };

      Val g = up(c.grad(0));
      Val rstd = un(OpKind::rsqrt, up(c.input(2)) + a.eps);  // [C]
      Val w = has_w ? up(c.input(3)) : Val{};
      Val wr = has_w ? w * rstd : rstd;                       // [C]
      if (has_b && c.needs_grad(4)) out[4] = cast(reduce(g), dt);
      if (c.needs_grad(0)) out[0] = cast(g * chan(wr), dt);
      if (c.needs_grad(1)) out[1] = cast(-(reduce(g) * wr), dt);
      bool need_w = has_w && c.needs_grad(3);
      if (need_w || c.needs_grad(2)) {
        Val gxm = reduce(g * (up(c.input(0)) - chan(up(c.input(1)))));  // sum(g * (x - rm)) [C]
        if (need_w) out[3] = cast(gxm * rstd, dt);
        if (c.needs_grad(2)) out[2] = cast(gxm * wr * rstd * rstd * -0.5, dt);
      }
      return out;
    };
  }

  // attention: P = softmax(scale q k^T + mask) (recomputed), y = P v;
  //   dv = P^T g, dP = g v^T, dS = P * (dP - sum(dP * P, -1)),
  //   dq = scale dS k, dk = scale dS^T q, dmask (additive float) = dS summed to the mask's shape.
  // The fused attention_backward op computes dq, dk, dv without materialising P (on the GPU, a
  // flash-attention backward that takes the forward's lse instead of recomputing it); the
  // composed form above serves the additive mask's gradient and double backward (the fused op
  // has no rule of its own).
  {
    Rule& r = t[size_t(OpKind::attention)];
    r.save_inputs = 0b1111;
    r.save_outputs = 0b11;  // out, and lse for the fused backward (no gradient flows through lse)
    r.fn = [](BackwardCtx& c) -> Grads {
      const auto& a = c.attr<AttentionAttrs>();
      Grads out(c.num_inputs());
      DType dt = c.in(0).dtype;
      bool float_mask = c.num_inputs() > 3 && c.has_input(3) && c.in(3).dtype != DType::boolean;
      if (!c.create_graph() && !(float_mask && c.needs_grad(3))) {
        std::vector<Val> in{c.input(0), c.input(1), c.input(2), c.output(0), c.grad(0),
                            c.num_inputs() > 3 && c.has_input(3) ? c.input(3) : Val(), c.output(1)};
        std::vector<Val> d = run_all(OpKind::attention_backward, std::move(in), a);
        for (size_t i = 0; i < 3; ++i)
          if (c.needs_grad(i)) out[i] = d[i];
        return out;
      }
      Val q = up(c.input(0)), k = up(c.input(1)), v = up(c.input(2)), g = up(c.grad(0));
      double scale = std::isnan(a.scale) ? 1.0 / std::sqrt(double(q.shape()[-1])) : a.scale;
      Val p = attention_probs(c, q, k, scale);
      if (c.needs_grad(2)) out[2] = cast(sum_to(matmul(transpose(p, -1, -2), g), c.in(2).shape), dt);
      bool need_mask = float_mask && c.needs_grad(3);
      if (!c.needs_grad(0) && !c.needs_grad(1) && !need_mask) return out;
      Val dp = matmul(g, transpose(v, -1, -2));
      Val ds = p * (dp - sum(dp * p, {-1}, true));
      if (c.needs_grad(0)) out[0] = cast(sum_to(matmul(ds, k) * scale, c.in(0).shape), dt);
      if (c.needs_grad(1)) out[1] = cast(sum_to(matmul(transpose(ds, -1, -2), q) * scale, c.in(1).shape), dt);
      if (need_mask) out[3] = cast(sum_to(ds, c.in(3).shape), c.in(3).dtype);
      return out;
    };
  }
  // a user-defined op: its definition's backward, on this backward's backend (recorded again
  // under create_graph, so a backward written with differentiable ops gives second order too)
  {
    Rule r;
    r.save_inputs = kAllInputs;
    r.save_outputs = kAllInputs;
    r.fn = [](BackwardCtx& c) -> Grads {
      const CustomOpImpl& impl = *c.attr<CustomAttrs>().impl;
      EMBER_CHECK(impl.backward != nullptr, impl.name, ": not differentiable (its definition has no backward)");
      std::vector<PrimitivePtr> in, out, g;
      for (size_t i = 0; i < c.num_inputs(); ++i) in.push_back(c.has_input(i) ? c.input(i).prim() : nullptr);
      for (size_t o = 0; o < c.num_outputs(); ++o) {
        out.push_back(c.output(o).prim());
        g.push_back(c.grad(o).prim());
      }
      std::vector<PrimitivePtr> r = impl.backward(*c.backend(), in, out, g);
      EMBER_CHECK(r.size() == c.num_inputs(), impl.name, ": backward gave ", r.size(), " gradients for ",
                  c.num_inputs(), " inputs");
      Grads grads;
      for (size_t i = 0; i < r.size(); ++i) {
        if (r[i])
          EMBER_CHECK(r[i]->shape() == c.in(i).shape && r[i]->dtype() == c.in(i).dtype, impl.name,
                      ": backward gave a ", r[i]->dtype(), " ", r[i]->shape(), " gradient for input ", i, ", a ",
                      c.in(i).dtype, " ", c.in(i).shape);
        grads.push_back(r[i] ? Val(c.backend(), r[i]) : Val());
      }
      return grads;
    };
    t[size_t(OpKind::custom)] = r;
  }
}

}  // namespace ember::autodiff
