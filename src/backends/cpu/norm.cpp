// Normalisation kernels: layer_norm, batch_norm (inference) and prelu.
#include <algorithm>
#include "ember/core/bit.hpp"
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

namespace {

constexpr int64_t kGrain = 32768;

// ---------------------------------------------------------------------------------------
// layer_norm

// Sum of n values with several independent accumulators (vectorisable, and more accurate
// than one running sum).
template <class A>
A lane_sum(const A* x, int64_t n) {
  constexpr int L = 16;
  A acc[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) acc[l] += x[i + l];
  A tail = 0;
  for (; i < n; ++i) tail += x[i];
  for (int w = L / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0] + tail;
}

template <class A>
A lane_sq_dev(const A* x, int64_t n, A mean) {
  constexpr int L = 16;
  A acc[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) {
      A d = x[i + l] - mean;
      acc[l] += d * d;
    }
  A tail = 0;
  for (; i < n; ++i) {
    A d = x[i] - mean;
    tail += d * d;
  }
  for (int w = L / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0] + tail;
}

// y = (x * rstd - rstd * mean) * w + b over one row (w / b may be null), like PyTorch.
template <class A>
void ln_apply(const A* x, A* y, int64_t n, A scale, A shift, const A* w, const A* b) {
  if (w && b) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale + shift) * w[i] + b[i];
  } else if (w) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale + shift) * w[i];
  } else if (b) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale + shift) + b[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale + shift;
  }
}

template <class T>
void layer_norm_impl(const T* x, T* y, int64_t rows, int64_t D, const T* w, const T* b, double eps) {
  using A = compute_t<T>;
  // Half types: weight/bias converted once; each row is converted into a float buffer.
  std::vector<A> wb;
  const A* wa = nullptr;
  const A* ba = nullptr;
  if constexpr (is_half_v<T>) {
    wb.resize(size_t(D) * ((w ? 1 : 0) + (b ? 1 : 0)));
    A* p = wb.data();
    if (w) {
      for (int64_t i = 0; i < D; ++i) p[i] = A(w[i]);
      wa = p;
      p += D;
    }
    if (b) {
      for (int64_t i = 0; i < D; ++i) p[i] = A(b[i]);
      ba = p;
    }
  } else {
    wa = w;
    ba = b;
  }
  auto body = [&](int64_t r0, int64_t r1) {
    std::vector<A> buf;
    if constexpr (is_half_v<T>) buf.resize(size_t(D) * 2);
    for (int64_t r = r0; r < r1; ++r) {
      const A* xr;
      A* yr;
      if constexpr (is_half_v<T>) {
        const T* xs = x + r * D;
        for (int64_t i = 0; i < D; ++i) buf[size_t(i)] = A(xs[i]);
        xr = buf.data();
        yr = buf.data() + D;
      } else {
        xr = x + r * D;
        yr = y + r * D;
      }
      A mean = lane_sum(xr, D) / A(D);
      A var = lane_sq_dev(xr, D, mean) / A(D);
      A rstd = A(1) / std::sqrt(std::max(var, A(0)) + A(eps));
      ln_apply(xr, yr, D, rstd, -rstd * mean, wa, ba);
      if constexpr (is_half_v<T>) {
        T* ys = y + r * D;
        for (int64_t i = 0; i < D; ++i) ys[i] = T(yr[i]);
      }
    }
  };
  if (rows * D <= kGrain || rows == 1) {
    body(0, rows);
  } else {
    parallel_for(0, rows, std::max<int64_t>(1, kGrain / D), body);
  }
}

std::vector<PrimitivePtr> layer_norm_kernel(CpuBackend&, Op& op) {
  const auto& a = op.attr<NormAttrs>();
  auto y = output_reusing(op, 0, op.outputs[0]);
  auto x = contiguous(op.inputs[0]);
  const Shape& s = x->shape();
  int64_t D = 1;
  for (int d = s.rank() - a.axes; d < s.rank(); ++d) D *= s[d];
  int64_t n = s.numel();
  if (n == 0) return {y};
  int64_t rows = n / D;
  CpuTensorPtr w = op.inputs.size() > 1 && op.inputs[1] ? contiguous(op.inputs[1]) : nullptr;
  CpuTensorPtr b = op.inputs.size() > 2 && op.inputs[2] ? contiguous(op.inputs[2]) : nullptr;
  visit_float_dtype(x->dtype(), op.name(), [&]<class T>() {
    layer_norm_impl<T>(x->data<T>(), y->data<T>(), rows, D, w ? w->data<T>() : nullptr,
                       b ? b->data<T>() : nullptr, a.eps);
  });
  return {y};
}

// layer_norm_backward: with xh = (x - mean) * rstd and gh = g * w over each row of D,
//   dx = rstd * (gh - mean(gh) - xh * mean(gh * xh)),
//   dw = sum over the rows of g * xh, db = sum over the rows of g.
// Rows in parallel for dx (each row's mean and rstd kept), then column blocks in parallel for
// dw and db, walking the rows in order (the same sums for every thread count).
template <class T>
void layer_norm_backward_impl(const T* x, const T* w, const T* g, T* dx, T* dw, T* db, int64_t rows, int64_t D,
                              double eps) {
  using A = compute_t<T>;
  std::vector<A> wa;
  if (w) {
    wa.resize(static_cast<size_t>(D));
    for (int64_t i = 0; i < D; ++i) wa[size_t(i)] = A(w[i]);
  }
  std::vector<A> mean(static_cast<size_t>(rows)), rstd(static_cast<size_t>(rows));
  auto row_body = [&](int64_t r0, int64_t r1) {
    std::vector<A> xb(static_cast<size_t>(D)), gb(static_cast<size_t>(D));
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * D;
      const T* gr = g + r * D;
      for (int64_t i = 0; i < D; ++i) {
        xb[size_t(i)] = A(xr[i]);
        gb[size_t(i)] = w ? A(gr[i]) * wa[size_t(i)] : A(gr[i]);
      }
      const A m = lane_sum(xb.data(), D) / A(D);
      const A var = lane_sq_dev(xb.data(), D, m) / A(D);
      const A rs = A(1) / std::sqrt(std::max(var, A(0)) + A(eps));
      mean[size_t(r)] = m;
      rstd[size_t(r)] = rs;
      A sg = 0, sgx = 0;
      for (int64_t i = 0; i < D; ++i) {
        const A xh = (xb[size_t(i)] - m) * rs;
        xb[size_t(i)] = xh;
        sg += gb[size_t(i)];
        sgx += gb[size_t(i)] * xh;
      }
      const A mg = sg / A(D), mgx = sgx / A(D);
      T* o = dx + r * D;
      for (int64_t i = 0; i < D; ++i) o[i] = T(rs * (gb[size_t(i)] - mg - xb[size_t(i)] * mgx));
    }
  };
  if (rows * D <= kGrain || rows == 1) row_body(0, rows);
  else parallel_for(0, rows, std::max<int64_t>(1, kGrain / D), row_body);

  auto col_body = [&](int64_t c0, int64_t c1) {
    const size_t n = size_t(c1 - c0);
    std::vector<A> sw(n, A(0)), sb(n, A(0));
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = x + r * D + c0;
      const T* gr = g + r * D + c0;
      const A m = mean[size_t(r)], rs = rstd[size_t(r)];
      for (size_t i = 0; i < n; ++i) {
        const A gv = A(gr[i]);
        sw[i] += gv * ((A(xr[i]) - m) * rs);
        sb[i] += gv;
      }
    }
    for (size_t i = 0; i < n; ++i) {
      dw[c0 + int64_t(i)] = T(sw[i]);
      db[c0 + int64_t(i)] = T(sb[i]);
    }
  };
  if (rows * D <= kGrain || D < 64) col_body(0, D);
  else parallel_for(0, D, std::max<int64_t>(16, kGrain / std::max<int64_t>(1, rows)), col_body);
}

std::vector<PrimitivePtr> layer_norm_backward_kernel(CpuBackend&, Op& op) {
  const auto& a = op.attr<NormAttrs>();
  // (new buffers: x and g are read again after dx is written)
  auto dx = alloc(op.outputs[0]), dw = alloc(op.outputs[1]), db = alloc(op.outputs[2]);
  auto x = contiguous(op.inputs[0]);
  CpuTensorPtr w = op.inputs[1] ? contiguous(op.inputs[1]) : nullptr;
  auto g = contiguous(op.inputs[2]);
  const int64_t D = op.outputs[1].shape.numel(), n = x->numel();
  visit_float_dtype(x->dtype(), op.name(), [&]<class T>() {
    if (n == 0) {  // no rows: dweight and dbias are sums of nothing
      std::fill_n(dw->data<T>(), D, T(0.0f));
      std::fill_n(db->data<T>(), D, T(0.0f));
      return;
    }
    layer_norm_backward_impl<T>(x->data<T>(), w ? w->data<T>() : nullptr, g->data<T>(), dx->data<T>(),
                                dw->data<T>(), db->data<T>(), n / D, D, a.eps);
  });
  return {dx, dw, db};
}

// ---------------------------------------------------------------------------------------
// batch_norm (inference) and prelu: per-channel affine maps over [N, C, *inner].

// A strided operand of length C broadcast along channel dim 1 of `shape`.
std::vector<int64_t> channel_strides(const Shape& shape, int64_t stride) {
  std::vector<int64_t> s(size_t(shape.rank()), 0);
  if (shape.rank() >= 2) s[1] = stride;
  return s;
}

// y = x * alpha[c] + beta[c]
template <class T>
void channel_affine(const CpuTensor& x, CpuTensor& y, const compute_t<T>* alpha, const compute_t<T>* beta) {
  using A = compute_t<T>;
  const Shape& s = x.shape();
  int64_t es = int64_t(sizeof(T)), as = int64_t(sizeof(A));
  if (x.is_contiguous() && s.rank() >= 2) {
    // Fast path: contiguous [N, C, inner] planes.
    int64_t C = s[1], N = s[0], inner = s.numel() / (N * C);
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        int64_t c = p % C;
        A al = alpha[c], be = beta[c];
        const T* xr = xp + p * inner;
        T* yr = yp + p * inner;
        for (int64_t i = 0; i < inner; ++i) yr[i] = convert_scalar<T>(A(xr[i]) * al + be);
      }
    };
    int64_t planes = N * C;
    if (planes * inner <= kGrain || planes == 1) body(0, planes);
    else parallel_for(0, planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, inner)), body);
    return;
  }
  strided_loop(s,
               {{static_cast<char*>(y.raw()), es, y.strides},
                {static_cast<char*>(x.raw()), es, x.strides},
                {reinterpret_cast<char*>(const_cast<A*>(alpha)), as, channel_strides(s, 1)},
                {reinterpret_cast<char*>(const_cast<A*>(beta)), as, channel_strides(s, 1)}},
               [](char** p, const int64_t* st, int64_t n) {
                 for (int64_t i = 0; i < n; ++i) {
                   A xv = A(*reinterpret_cast<const T*>(p[1] + i * st[1]));
                   A al = *reinterpret_cast<const A*>(p[2] + i * st[2]);
                   A be = *reinterpret_cast<const A*>(p[3] + i * st[3]);
                   *reinterpret_cast<T*>(p[0] + i * st[0]) = convert_scalar<T>(xv * al + be);
                 }
               });
}

std::vector<PrimitivePtr> batch_norm_kernel(CpuBackend&, Op& op) {
  const auto& a = op.attr<NormAttrs>();
  auto y = output_reusing(op, 0, op.outputs[0]);
  auto xp = as_cpu_ptr(op.inputs[0]);
  const Shape& s = xp->shape();
  if (s.numel() == 0) return {y};
  int64_t C = s[1];
  auto get = [&](size_t i) -> CpuTensorPtr {
    return op.inputs.size() > i && op.inputs[i] ? contiguous(op.inputs[i]) : nullptr;
  };
  auto mean = get(1), var = get(2), w = get(3), b = get(4);
  visit_float_dtype(xp->dtype(), op.name(), [&]<class T>() {
    using A = compute_t<T>;
    std::vector<A> ab(size_t(2 * C));
    for (int64_t c = 0; c < C; ++c) {
      A invstd = A(1) / std::sqrt(A(var->data<T>()[c]) + A(a.eps));
      A al = w ? invstd * A(w->data<T>()[c]) : invstd;
      A be = (b ? A(b->data<T>()[c]) : A(0)) - A(mean->data<T>()[c]) * al;
      ab[size_t(c)] = al;
      ab[size_t(C + c)] = be;
    }
    channel_affine<T>(*xp, *y, ab.data(), ab.data() + C);
  });
  return {y};
}

// prelu(v) = v > 0 ? v : w * v, written as v * (v > 0 ? 1 : w) with the select done on the
// bit patterns: a floating select next to a multiplication is not if-converted (and so not
// vectorised) under the default -ftrapping-math. bits(v) > 0 as a signed integer means
// v > 0 or v is a positive NaN (kept as v: NaN either way).
template <class A>
using bits_t = std::conditional_t<sizeof(A) == 4, int32_t, int64_t>;

template <class A>
[[gnu::always_inline]] inline A prelu_val(A v, bits_t<A> wbits) {
  using I = bits_t<A>;
  I m = -I(ember::bit_cast<I>(v) > 0);
  return v * ember::bit_cast<A>(I((m & ember::bit_cast<I>(A(1))) | (~m & wbits)));
}

template <class T>
void prelu_impl(const CpuTensor& x, CpuTensor& y, const CpuTensor& w) {
  using A = compute_t<T>;
  const Shape& s = x.shape();
  int64_t es = int64_t(sizeof(T));
  int64_t wn = w.numel();
  std::vector<int64_t> ws(size_t(s.rank()), 0);
  if (wn > 1) ws[1] = w.strides.empty() ? 1 : w.strides[0];
  if (x.is_contiguous() && s.rank() >= 2 && w.is_contiguous()) {
    int64_t C = s[1], N = s[0], inner = s.numel() / (N * C);
    const T* xp = x.data<T>();
    const T* wp = w.data<T>();
    T* yp = y.data<T>();
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        auto wb = ember::bit_cast<bits_t<A>>(A(wp[wn > 1 ? p % C : 0]));
        const T* xr = xp + p * inner;
        T* yr = yp + p * inner;
        for (int64_t i = 0; i < inner; ++i) yr[i] = convert_scalar<T>(prelu_val(A(xr[i]), wb));
      }
    };
    int64_t planes = N * C;
    if (planes * inner <= kGrain || planes == 1) body(0, planes);
    else parallel_for(0, planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, inner)), body);
    return;
  }
  strided_loop(s,
               {{static_cast<char*>(y.raw()), es, y.strides},
                {static_cast<char*>(x.raw()), es, x.strides},
                {static_cast<char*>(w.raw()), es, ws}},
               [](char** p, const int64_t* st, int64_t n) {
                 for (int64_t i = 0; i < n; ++i) {
                   A v = A(*reinterpret_cast<const T*>(p[1] + i * st[1]));
                   auto wb = ember::bit_cast<bits_t<A>>(A(*reinterpret_cast<const T*>(p[2] + i * st[2])));
                   *reinterpret_cast<T*>(p[0] + i * st[0]) = convert_scalar<T>(prelu_val(v, wb));
                 }
               });
}

std::vector<PrimitivePtr> prelu_kernel(CpuBackend&, Op& op) {
  auto y = output_reusing(op, 0, op.outputs[0]);
  auto x = as_cpu_ptr(op.inputs[0]);
  auto w = as_cpu_ptr(op.inputs[1]);
  if (x->numel() == 0) return {y};
  visit_float_dtype(x->dtype(), op.name(), [&]<class T>() { prelu_impl<T>(*x, *y, *w); });
  return {y};
}

}  // namespace

void register_norm_kernels(KernelTable& t) {
  t[size_t(OpKind::layer_norm)] = layer_norm_kernel;
  t[size_t(OpKind::layer_norm_backward)] = layer_norm_backward_kernel;
  t[size_t(OpKind::batch_norm)] = batch_norm_kernel;
  t[size_t(OpKind::prelu)] = prelu_kernel;
}

}  // namespace ember::cpu
