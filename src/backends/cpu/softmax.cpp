// softmax / log_softmax along any dim, numerically stable (shifted by the max; a NaN anywhere
// in a slice makes the whole slice NaN, like torch). f16/bf16 compute in f32. Also the fused
// softmax cross-entropy of rows (cross_entropy and its backward), with the same arithmetic:
// loss = log(sum) - (x[target] - max), the negated log_softmax entry.
//   * last dim (inner == 1): one row at a time (AVX-512 row kernels for f32), parallel over rows;
//   * other dims: blocks of W contiguous inner positions are processed together, each pass
//     walking the softmax dim row by row (vectorised across the block), parallel over blocks.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "reduce_kernels.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

namespace {

template <class C>
void row_generic(const C* x, C* y, int64_t n, bool log) {
  C m = -std::numeric_limits<C>::infinity();
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    C v = x[i];
    m = v > m ? v : m;
    nan |= v != v;
  }
  if (nan) m = std::numeric_limits<C>::quiet_NaN();
  double s = 0;
  if (!log) {
    for (int64_t i = 0; i < n; ++i) {
      C e = std::exp(x[i] - m);
      y[i] = e;
      s += double(e);
    }
    C inv = C(1.0 / s);
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  } else {
    for (int64_t i = 0; i < n; ++i) s += double(std::exp(x[i] - m));
    C ls = C(std::log(s));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - ls;
  }
}

template <class C>
void softmax_last(const C* x, C* y, int64_t rows, int64_t n, bool log) {
  auto body = [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      if constexpr (std::is_same_v<C, float>) {
        if (use_avx512()) {
          if (log) rsimd::log_softmax_row_f32(x + r * n, y + r * n, n);
          else rsimd::softmax_row_f32(x + r * n, y + r * n, n);
          continue;
        }
      }
      row_generic(x + r * n, y + r * n, n, log);
    }
  };
  run_units(rows, n, body);
}

template <class C>
inline void exp_inplace(C* v, int64_t n) {
  if constexpr (std::is_same_v<C, float>) {
    if (use_avx512()) return rsimd::exp_f32(v, v, n);
  }
  for (int64_t j = 0; j < n; ++j) v[j] = std::exp(v[j]);
}

template <class C>
void softmax_inner(const C* x, C* y, const DimGeom& g, bool log) {
  constexpr int64_t kMaxW = 256;
  const int64_t D = g.size, I = g.inner;
  // block width: the D x W block should stay in L2 across the three passes (at least one
  // 64-byte line per row)
  const int64_t line = 64 / int64_t(sizeof(C));
  const int64_t W = std::clamp<int64_t>((256 * 1024 / int64_t(sizeof(C)) / std::max<int64_t>(D, 1)) / line * line,
                                        line, kMaxW);
  const int64_t nch = (I + W - 1) / W, units = g.outer * nch;
  if constexpr (std::is_same_v<C, float>) {
    if (use_avx512()) {
      // blocks of 32 columns, max and sums held in registers
      const int64_t nb = (I + 31) / 32, bunits = g.outer * nb;
      auto blocks = [&](int64_t ub, int64_t ue) {
        for (int64_t u = ub; u < ue; ++u) {
          const int64_t o = u / nb, j0 = (u % nb) * 32;
          rsimd::softmax_cols_f32(x + o * D * I + j0, y + o * D * I + j0, D, I, std::min<int64_t>(32, I - j0), log);
        }
      };
      run_units(bunits, D * std::min<int64_t>(32, I), blocks);
      return;
    }
  }
  auto body = [&](int64_t ub, int64_t ue) {
    C m[kMaxW], t[kMaxW];
    double s[kMaxW];
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t o = u / nch, j0 = (u % nch) * W, w = std::min(W, I - j0);
      const C* xb = x + o * D * I + j0;
      C* yb = y + o * D * I + j0;
      for (int64_t j = 0; j < w; ++j) m[j] = -std::numeric_limits<C>::infinity();
      for (int64_t d = 0; d < D; ++d) {
        const C* xr = xb + d * I;
        for (int64_t j = 0; j < w; ++j) {
          C v = xr[j];
          m[j] = (v != v || v > m[j]) ? v : m[j];  // a NaN sticks
        }
      }
      for (int64_t j = 0; j < w; ++j) s[j] = 0;
      for (int64_t d = 0; d < D; ++d) {
        const C* xr = xb + d * I;
        C* dst = log ? t : yb + d * I;
        for (int64_t j = 0; j < w; ++j) dst[j] = xr[j] - m[j];
        exp_inplace(dst, w);
        for (int64_t j = 0; j < w; ++j) s[j] += double(dst[j]);
      }
      if (!log) {
        for (int64_t j = 0; j < w; ++j) t[j] = C(1.0 / s[j]);
        for (int64_t d = 0; d < D; ++d) {
          C* yr = yb + d * I;
          for (int64_t j = 0; j < w; ++j) yr[j] *= t[j];
        }
      } else {
        for (int64_t j = 0; j < w; ++j) t[j] = C(std::log(s[j]));
        for (int64_t d = 0; d < D; ++d) {
          const C* xr = xb + d * I;
          C* yr = yb + d * I;
          for (int64_t j = 0; j < w; ++j) yr[j] = (xr[j] - m[j]) - t[j];
        }
      }
    }
  };
  run_units(units, D * std::min(W, I), body);
}

// x and y may be the same buffer.
template <class C>
void softmax_any(const C* x, C* y, const DimGeom& g, bool log) {
  if (g.inner == 1) softmax_last(x, y, g.outer, g.size, log);
  else softmax_inner(x, y, g, log);
}

// Runs f(b, e) over [0, n) in parallel chunks (for elementwise conversions).
template <class F>
void chunked(int64_t n, F&& f) {
  if (n <= 4 * kReduceGrain) f(0, n);
  else parallel_for(0, n, 4 * kReduceGrain, f);
}

std::vector<PrimitivePtr> softmax_common(Op& op, bool log) {
  const TensorMeta meta = op.outputs[0];
  const DimGeom g = dim_geom(meta.shape, op.attr<DimAttrs>().dim);
  const int64_t n = meta.shape.numel();
  if (n == 0) return {alloc(meta)};
  CpuTensorPtr out, xc;
  if (as_cpu(op.inputs[0]).is_contiguous()) {
    out = output_reusing(op, 0, meta);  // before taking another reference to the input
    xc = as_cpu_ptr(op.inputs[0]);
  } else {
    xc = contiguous(op.inputs[0]);
    out = alloc(meta);
  }
  visit_float_dtype(meta.dtype, op.name(), [&]<class T>() {
    if constexpr (is_half_v<T>) {
      std::unique_ptr<float[]> tmp(new float[size_t(n)]);
      const T* src = xc->data<T>();
      chunked(n, [&](int64_t b, int64_t e) { to_f32(src + b, tmp.get() + b, e - b); });
      softmax_any(tmp.get(), tmp.get(), g, log);
      T* dst = out->data<T>();
      chunked(n, [&](int64_t b, int64_t e) { from_f32(tmp.get() + b, dst + b, e - b); });
    } else {
      softmax_any(xc->data<T>(), out->data<T>(), g, log);
    }
  });
  return {out};
}

std::vector<PrimitivePtr> softmax_kernel(CpuBackend&, Op& op) { return softmax_common(op, false); }
std::vector<PrimitivePtr> log_softmax_kernel(CpuBackend&, Op& op) { return softmax_common(op, true); }

// ---- cross_entropy: logits [rows, n], i64 targets, k = ignore_index; per-row loss, lse and valid
// in the compute type (f16/bf16 logits are read as they are, never copied to f32) ----

template <class T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;  // compute type; lse's dtype

template <class T>
void cross_entropy_rows(const T* x, const int64_t* t, Acc<T>* loss, Acc<T>* lse, Acc<T>* valid, int64_t rows,
                        int64_t n, int64_t ignore) {
  using C = Acc<T>;
  run_units(rows, n, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * n;
      C m = -std::numeric_limits<C>::infinity();
      bool nan = false;
      for (int64_t i = 0; i < n; ++i) {
        const C v = C(xr[i]);
        m = v > m ? v : m;
        nan |= v != v;
      }
      if (nan) m = std::numeric_limits<C>::quiet_NaN();
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += double(std::exp(C(xr[i]) - m));
      const C ls = C(std::log(s));
      lse[r] = m + ls;
      const bool counts = t[r] != ignore;
      valid[r] = counts ? C(1) : C(0);
      loss[r] = counts ? ls - (C(xr[t[r]]) - m) : C(0);
    }
  });
}

template <class T>
void cross_entropy_grad(const T* x, const int64_t* t, const Acc<T>* lse, const Acc<T>* g, T* dx, int64_t rows,
                        int64_t n, int64_t ignore) {
  using C = Acc<T>;
  run_units(rows, n, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * n;
      T* d = dx + r * n;
      if (t[r] == ignore) {
        std::fill(d, d + n, T(0.0f));
        continue;
      }
      const C gr = C(g[r]), l = lse[r];
      for (int64_t i = 0; i < n; ++i) d[i] = T(gr * (std::exp(C(xr[i]) - l) - (i == t[r] ? C(1) : C(0))));
    }
  });
}

std::vector<PrimitivePtr> cross_entropy_common(Op& op, bool backward) {
  const int64_t ignore = op.attr<DimAttrs>().k;
  auto x = contiguous(op.inputs[0]);
  auto t = contiguous(op.inputs[1]);
  const int64_t rows = x->shape()[0], n = x->shape()[1];
  const int64_t* tp = t->data<int64_t>();
  if (!backward)
    for (int64_t r = 0; r < rows; ++r)
      EMBER_CHECK(tp[r] == ignore || (tp[r] >= 0 && tp[r] < n), op.name(), ": target ", tp[r], " of row ", r,
                  " is outside [0, ", n, ") and is not ignore_index ", ignore);
  std::vector<PrimitivePtr> out;
  for (const TensorMeta& m : op.outputs) out.push_back(alloc(m));
  visit_float_dtype(x->dtype(), op.name(), [&]<class T>() {
    if (!backward) {
      cross_entropy_rows<T>(x->data<T>(), tp, as_cpu(out[0]).data<Acc<T>>(), as_cpu(out[1]).data<Acc<T>>(),
                            as_cpu(out[2]).data<Acc<T>>(), rows, n, ignore);
    } else {
      auto lse = contiguous(op.inputs[2]);
      auto g = contiguous(op.inputs[3]);
      cross_entropy_grad<T>(x->data<T>(), tp, lse->data<Acc<T>>(), g->data<Acc<T>>(), as_cpu(out[0]).data<T>(),
                            rows, n, ignore);
    }
  });
  return out;
}

std::vector<PrimitivePtr> cross_entropy_kernel(CpuBackend&, Op& op) { return cross_entropy_common(op, false); }
std::vector<PrimitivePtr> cross_entropy_backward_kernel(CpuBackend&, Op& op) { return cross_entropy_common(op, true); }

}  // namespace

void register_softmax_kernels(KernelTable& t) {
  t[size_t(OpKind::softmax)] = softmax_kernel;
  t[size_t(OpKind::log_softmax)] = log_softmax_kernel;
  t[size_t(OpKind::cross_entropy)] = cross_entropy_kernel;
  t[size_t(OpKind::cross_entropy_backward)] = cross_entropy_backward_kernel;
}

}  // namespace ember::cpu
