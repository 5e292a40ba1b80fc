// Scans along DimAttrs.dim: cumsum, cumprod (floats accumulate in double; integers and bool
// give i64, wrapping), cummax, cummin (values + i64 indices, torch's rule: an element equal to
// the running extreme takes over its index, and a NaN becomes — and stays — the extreme, each new
// NaN taking the index).
// Layout: the input is made contiguous and seen as [outer, size, inner]; with inner == 1 each
// row is scanned sequentially (parallel over rows); otherwise blocks of contiguous inner
// positions are scanned together, row by row (vectorised across the block).
#include <cmath>
#include <limits>

#include "reduce_kernels.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

namespace {

constexpr int64_t kW = 256;  // inner block

template <class T, bool IsProd>
void cum_scan(const T* x, void* yraw, const DimGeom& g) {
  constexpr bool kFloat = is_floating_v<T>;
  using A = std::conditional_t<kFloat, double, uint64_t>;
  using Out = std::conditional_t<kFloat, T, int64_t>;
  Out* y = static_cast<Out*>(yraw);
  auto val = [](T v) -> A {
    if constexpr (kFloat) {
      if constexpr (is_half_v<T>) return double(float(v));
      else return double(v);
    } else {
      return uint64_t(int64_t(v));
    }
  };
  auto out = [](A a) -> Out {
    if constexpr (kFloat) return convert_scalar<T>(a);
    else return int64_t(a);
  };
  const int64_t D = g.size, I = g.inner;
  if (I == 1) {
    run_units(g.outer, D, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * D;
        Out* yr = y + r * D;
        A a = IsProd ? A(1) : A(0);
        for (int64_t i = 0; i < D; ++i) {
          if constexpr (IsProd) a *= val(xr[i]);
          else a += val(xr[i]);
          yr[i] = out(a);
        }
      }
    });
    return;
  }
  const int64_t nch = (I + kW - 1) / kW;
  run_units(g.outer * nch, D * std::min(kW, I), [&](int64_t ub, int64_t ue) {
    A acc[kW];
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t o = u / nch, j0 = (u % nch) * kW, w = std::min(kW, I - j0);
      for (int64_t j = 0; j < w; ++j) acc[j] = IsProd ? A(1) : A(0);
      for (int64_t d = 0; d < D; ++d) {
        const T* xr = x + (o * D + d) * I + j0;
        Out* yr = y + (o * D + d) * I + j0;
        for (int64_t j = 0; j < w; ++j) {
          if constexpr (IsProd) acc[j] *= val(xr[j]);
          else acc[j] += val(xr[j]);
          yr[j] = out(acc[j]);
        }
      }
    }
  });
}

template <class T, bool IsMax>
void cum_extreme(const T* x, T* y, int64_t* yi, const DimGeom& g) {
  using C = compute_t<T>;
  auto ld = [](T v) -> C {
    if constexpr (is_half_v<T>) return float(v);
    else return v;
  };
  auto takes = [](C v, C cur) {
    if constexpr (std::is_floating_point_v<C>) {
      if (v != v) return true;
    }
    return IsMax ? v >= cur : v <= cur;
  };
  const int64_t D = g.size, I = g.inner;
  if (I == 1) {
    run_units(g.outer, D, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * D;
        T* yr = y + r * D;
        int64_t* ir = yi + r * D;
        C cur = ld(xr[0]);
        T curv = xr[0];
        int64_t ci = 0;
        for (int64_t i = 0; i < D; ++i) {
          C v = ld(xr[i]);
          if (takes(v, cur)) {
            cur = v;
            curv = xr[i];
            ci = i;
          }
          yr[i] = curv;
          ir[i] = ci;
        }
      }
    });
    return;
  }
  const int64_t nch = (I + kW - 1) / kW;
  run_units(g.outer * nch, D * std::min(kW, I), [&](int64_t ub, int64_t ue) {
    C cur[kW];
    int64_t ci[kW];
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t o = u / nch, j0 = (u % nch) * kW, w = std::min(kW, I - j0);
      const T* x0 = x + o * D * I + j0;
      for (int64_t j = 0; j < w; ++j) {
        cur[j] = ld(x0[j]);
        ci[j] = 0;
      }
      for (int64_t d = 0; d < D; ++d) {
        const T* xr = x0 + d * I;
        T* yr = y + (o * D + d) * I + j0;
        int64_t* ir = yi + (o * D + d) * I + j0;
        for (int64_t j = 0; j < w; ++j) {
          C v = ld(xr[j]);
          if (takes(v, cur[j])) {
            cur[j] = v;
            ci[j] = d;
          }
          yr[j] = xr[j - (d - ci[j]) * I];  // the input element at the running index
          ir[j] = ci[j];
        }
      }
    }
  });
}

template <bool IsProd>
std::vector<PrimitivePtr> cum_kernel(CpuBackend&, Op& op) {
  const TensorMeta& meta = op.outputs[0];
  const DimGeom g = dim_geom(meta.shape, op.attr<DimAttrs>().dim);
  if (meta.shape.numel() == 0) return {alloc(meta)};
  CpuTensorPtr out, xc;
  if (as_cpu(op.inputs[0]).is_contiguous() && op.in(0).dtype == meta.dtype) {
    out = output_reusing(op, 0, meta);  // in place is safe: each element is read before it is written
    xc = as_cpu_ptr(op.inputs[0]);
  } else {
    xc = contiguous(op.inputs[0]);
    out = alloc(meta);
  }
  visit_dtype(xc->dtype(), [&]<class T>() { cum_scan<T, IsProd>(xc->data<T>(), out->raw(), g); });
  return {out};
}

template <bool IsMax>
std::vector<PrimitivePtr> cumext_kernel(CpuBackend&, Op& op) {
  const DimGeom g = dim_geom(op.outputs[0].shape, op.attr<DimAttrs>().dim);
  auto vals = alloc(op.outputs[0]);
  auto idx = alloc(op.outputs[1]);
  if (op.outputs[0].shape.numel() == 0) return {vals, idx};
  auto xc = contiguous(op.inputs[0]);
  visit_dtype(xc->dtype(), [&]<class T>() {
    cum_extreme<T, IsMax>(xc->data<T>(), vals->data<T>(), idx->data<int64_t>(), g);
  });
  return {vals, idx};
}

}  // namespace

void register_scan_kernels(KernelTable& t) {
  t[size_t(OpKind::cumsum)] = cum_kernel<false>;
  t[size_t(OpKind::cumprod)] = cum_kernel<true>;
  t[size_t(OpKind::cummax)] = cumext_kernel<true>;
  t[size_t(OpKind::cummin)] = cumext_kernel<false>;
}

}  // namespace ember::cpu
