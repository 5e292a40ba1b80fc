// Normalisation kernels: layer_norm and batch_norm (inference), with the numerics of the CPU
// backend (src/backends/cpu/norm.cpp): layer_norm uses the mean and the biased variance of each
// row, rstd = 1 / sqrt(max(var, 0) + eps) and y = (x * rstd - rstd * mean) * w + b, all in the
// compute type (f32 for f16/bf16/f32, f64); batch_norm folds running stats, weight and bias into
// a per-channel (alpha, beta) and applies y = x * alpha[c] + beta[c].
//   * layer_norm rows up to 32768 elements are held in registers (one read, one write), with a
//     group of `tpr` threads per row laid out as softmax's (row_layout, reduce.cpp) and 16-byte
//     vector loads when aligned:
//     the statistics are exact two-pass ones (two group sums: the mean, then the squared
//     deviations from it); blocks walk their groups of rows in a grid-stride loop, at most
//     32 blocks per SM (EMBER_CUDA_LN_GRID). When a group is a whole block, each step takes two
//     rows whose threads hold the same columns (f32/f16/bf16 vector rows; EMBER_CUDA_LN_PAIR=0
//     turns it off): the weight and bias are read once for the two, which measured 69.2 us
//     against 71.6 us at [8192, 4096] f32 on an H200 (without weight and bias: 67.8 us).
//     Longer rows: one block per row, three passes (sum, squared deviations, apply).
//   * batch_norm: a tiny per-channel kernel, then one elementwise pass (vectorised when the
//     input is contiguous, strided otherwise).
#include <algorithm>
#include <cstdlib>

#include "cuda_backend.hpp"
#include "reduce_sources.hpp"

namespace ember::cuda {

namespace {

const char* kLayerNormKernels = R"CUDA(
union VecT { uint4 u; T v[VW]; };

// A grid-stride loop over steps of R rows per group of `tpr` threads: each thread loads its
// items (lane, lane + tpr, ...) of the R rows, the group takes each row's mean, then its squared
// deviations from it (two group sums: exact two-pass statistics), and writes y, reading each
// item's weight and bias once for the R rows.
template <int NV, int W, int R>
__device__ __forceinline__ void ln_rows(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ w,
                                        const T* __restrict__ b, int64_t rows, int64_t D, double eps, int tpr) {
  __shared__ C red[32 * R];
  // (R > 1: for groups of whole blocks only)
  const int lane = R > 1 ? int(threadIdx.x) : threadIdx.x & (tpr - 1);
  const int rpb = R > 1 ? 1 : blockDim.x / tpr;
  const int nitems = int(D / W);
  const C ceps = C(eps);
  for (int64_t r0 = int64_t(blockIdx.x) * rpb * R; r0 < rows; r0 += int64_t(gridDim.x) * rpb * R) {
    const int64_t rg = R > 1 ? r0 : r0 + threadIdx.x / tpr;  // this group's first row
    bool valid[R];
    const T* xr[R];
    C v[R][NV * W], s[R];
#pragma unroll
    for (int i = 0; i < R; ++i) {
      valid[i] = (R > 1 && i == 0) || rg + i < rows;
      xr[i] = x + (rg + i) * D;
      s[i] = C(0);
    }
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int it = k * tpr + lane;
#pragma unroll
      for (int i = 0; i < R; ++i) {
        if (valid[i] && it < nitems) {
          if (W > 1) {
            VecT t;
            t.u = ((const uint4*)xr[i])[it];
#pragma unroll
            for (int e = 0; e < W; ++e) s[i] += (v[i][k * W + e] = C(t.v[e]));
          } else {
            s[i] += (v[i][k] = C(xr[i][it]));
          }
        }
      }
    }
    group_reduce_n<R>(s, tpr, red, ReduceAdd());
    C mean[R], q[R];
#pragma unroll
    for (int i = 0; i < R; ++i) {
      mean[i] = s[i] / C(D);
      q[i] = C(0);
    }
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int it = k * tpr + lane;
#pragma unroll
      for (int i = 0; i < R; ++i) {
        if (valid[i] && it < nitems) {
#pragma unroll
          for (int e = 0; e < W; ++e) {
            const C d = v[i][k * W + e] - mean[i];
            q[i] += d * d;
          }
        }
      }
    }
    group_reduce_n<R>(q, tpr, red, ReduceAdd());
    C rstd[R], shift[R];
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const C var = q[i] / C(D);
      rstd[i] = C(1) / m_sqrt((var > C(0) ? var : C(0)) + ceps);
      shift[i] = -rstd[i] * mean[i];
    }
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int it = k * tpr + lane;
      if (!valid[0] || it >= nitems) continue;
      C wv[W], bv[W];
      if (W > 1) {
        VecT tw, tb;
        if (w) tw.u = ((const uint4*)w)[it];
        if (b) tb.u = ((const uint4*)b)[it];
#pragma unroll
        for (int e = 0; e < W; ++e) {
          wv[e] = w ? C(tw.v[e]) : C(1);
          bv[e] = b ? C(tb.v[e]) : C(0);
        }
      } else {
        wv[0] = w ? C(w[it]) : C(1);
        bv[0] = b ? C(b[it]) : C(0);
      }
      VecT t[R];
#pragma unroll
      for (int e = 0; e < W; ++e) {
#pragma unroll
        for (int i = 0; i < R; ++i) {
          const T o = T((v[i][k * W + e] * rstd[i] + shift[i]) * wv[e] + bv[e]);
          if (W > 1) t[i].v[e] = o;
          else if (valid[i]) y[(xr[i] - x) + it] = o;
        }
      }
      if (W > 1) {
#pragma unroll
        for (int i = 0; i < R; ++i)
          if (valid[i]) ((uint4*)(y + (xr[i] - x)))[it] = t[i].u;
      }
    }
  }
}

// rows_{s,v}NV: one row per group, NV items of W elements (scalar: W = 1; vector: 16 bytes)
// per thread; pair_vNV: two rows per group, for groups of whole blocks.
// (__launch_bounds__: at most 64 registers, so that 1024-thread blocks can launch)
#define LN_KERNEL(NAME, NV, W, R)                                                                      \
  extern "C" __global__ void __launch_bounds__(1024) NAME(const T* __restrict__ x, T* __restrict__ y,  \
                                                          const T* __restrict__ w, const T* __restrict__ b, \
                                                          int64_t rows, int64_t D, double eps, int tpr) { \
    ln_rows<NV, W, R>(x, y, w, b, rows, D, eps, tpr);                                                  \
  }
LN_KERNEL(rows_s1, 1, 1, 1)
LN_KERNEL(rows_s2, 2, 1, 1)
LN_KERNEL(rows_s4, 4, 1, 1)
LN_KERNEL(rows_s8, 8, 1, 1)
LN_KERNEL(rows_s16, 16, 1, 1)
LN_KERNEL(rows_s32, 32, 1, 1)
LN_KERNEL(rows_v1, 1, VW, 1)
LN_KERNEL(rows_v2, 2, VW, 1)
#if VW <= 8
LN_KERNEL(rows_v4, 4, VW, 1)
#endif
#if VW <= 4
LN_KERNEL(rows_v8, 8, VW, 1)
#endif
#if VW <= 2
LN_KERNEL(rows_v16, 16, VW, 1)
#endif
#if VW >= 4
LN_KERNEL(pair_v1, 1, VW, 2)
LN_KERNEL(pair_v2, 2, VW, 2)
#endif
#if VW == 4
LN_KERNEL(pair_v4, 4, VW, 2)
#endif

// Long rows: one block per row, three passes.
extern "C" __global__ void rows_stream(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ w,
                                       const T* __restrict__ b, int64_t rows, int64_t D, double eps) {
  __shared__ C red[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * D;
    T* yr = y + r * D;
    C s = C(0);
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) s += C(xr[i]);
    const C mean = group_sum(s, blockDim.x, red) / C(D);
    C q = C(0);
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
      C d = C(xr[i]) - mean;
      q += d * d;
    }
    const C var = group_sum(q, blockDim.x, red) / C(D);
    const C rstd = C(1) / m_sqrt((var > C(0) ? var : C(0)) + C(eps));
    const C shift = -rstd * mean;
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
      C o = C(xr[i]) * rstd + shift;
      if (w) o = o * C(w[i]);
      if (b) o = o + C(b[i]);
      yr[i] = T(o);
    }
  }
}
)CUDA";

// layer_norm_backward, with xh = (x - mean) * rstd and gh = g * w over a row of D:
//   dx = rstd * (gh - mean(gh) - xh * mean(gh * xh)); dw = sum over rows of g * xh, db = of g.
// Rows of up to 32 16-byte vectors x 8 (f32: D <= 1024; bf16: 2048), aligned: one pass, a warp
// per row (warp_rows), which also sums dw and db per block. Other rows: a row pass (a group of
// `tpr` threads per row, its x and gh in registers; the statistics recomputed two-pass as the
// forward's) writes dx and each row's mean and rstd; then a column pass: blocks of 32 columns x
// 8 row lanes over chunks of rows write partial sums. Either way a last kernel (cols_merge) adds
// the partial sums in a fixed order (deterministic, no atomics).
const char* kLayerNormBackwardKernels = R"CUDA(
template <int NV>
__device__ __forceinline__ void lnb_rows(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ g,
                                         T* __restrict__ dx, C* __restrict__ stats, int64_t rows, int64_t D,
                                         double eps, int tpr) {
  __shared__ C red[32 * 2];
  const int lane = tpr > 32 ? int(threadIdx.x) : int(threadIdx.x) & (tpr - 1);
  const int rpb = tpr > 32 ? 1 : int(blockDim.x) / tpr;
  const C n = C(D);
  for (int64_t r0 = int64_t(blockIdx.x) * rpb; r0 < rows; r0 += int64_t(gridDim.x) * rpb) {
    const int64_t r = r0 + (tpr > 32 ? 0 : int(threadIdx.x) / tpr);
    const bool valid = r < rows;
    const T* xr = x + r * D;
    const T* gr = g + r * D;
    C xv[NV], gv[NV], sx = C(0);
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t i = int64_t(k) * tpr + lane;
      xv[k] = C(0);
      gv[k] = C(0);
      if (valid && i < D) {
        xv[k] = C(xr[i]);
        gv[k] = w ? C(gr[i]) * C(w[i]) : C(gr[i]);
        sx += xv[k];
      }
    }
    const C mean = group_sum(sx, tpr, red) / n;
    C q = C(0);
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t i = int64_t(k) * tpr + lane;
      if (valid && i < D) {
        const C d = xv[k] - mean;
        q += d * d;
      }
    }
    const C var = group_sum(q, tpr, red) / n;
    const C rstd = C(1) / m_sqrt((var > C(0) ? var : C(0)) + C(eps));
    C s[2] = {C(0), C(0)};
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t i = int64_t(k) * tpr + lane;
      if (valid && i < D) {
        xv[k] = (xv[k] - mean) * rstd;
        s[0] += gv[k];
        s[1] += gv[k] * xv[k];
      }
    }
    group_reduce_n<2>(s, tpr, red, ReduceAdd());
    const C mg = s[0] / n, mgx = s[1] / n;
    if (!valid) continue;
    T* o = dx + r * D;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t i = int64_t(k) * tpr + lane;
      if (i < D) o[i] = T(rstd * (gv[k] - mg - xv[k] * mgx));
    }
    if (lane == 0) {
      stats[2 * r] = mean;
      stats[2 * r + 1] = rstd;
    }
  }
}
#define LNB_KERNEL(NV)                                                                                     \
  extern "C" __global__ void __launch_bounds__(1024) rows_##NV(                                            \
      const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ g, T* __restrict__ dx,        \
      C* __restrict__ stats, int64_t rows, int64_t D, double eps, int tpr) {                                \
    lnb_rows<NV>(x, w, g, dx, stats, rows, D, eps, tpr);                                                    \
  }
LNB_KERNEL(1)
LNB_KERNEL(2)
LNB_KERNEL(4)
LNB_KERNEL(8)

// Rows of at most 32 x NV 16-byte vectors (D a multiple of VW, 16-byte aligned rows): one warp
// per row, shuffles only, and no second pass over x and g: each lane keeps its columns' sums of
// g * xh (dw) and g (db) in registers across the warp's rows, the block's warps add theirs in
// warp order in shared memory ([2][D] of C), and the block writes them as its partial
// (part: [2][gridDim.x][D]) for cols_merge. On an H100, [8192, 768] f32 took 85 us in the row
// and column passes above.
union VecT { uint4 u; T v[VW]; };
template <int NV>
__device__ __forceinline__ void lnb_warp_rows(const T* __restrict__ x, const T* __restrict__ w,
                                              const T* __restrict__ g, T* __restrict__ dx, C* __restrict__ part,
                                              int64_t rows, int64_t D, double eps) {
  extern __shared__ unsigned char lnb_smem[];
  C* acc = reinterpret_cast<C*>(lnb_smem);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int nitems = int(D / VW);
  const C n = C(D);
  C aw[NV * VW], ab[NV * VW];
#pragma unroll
  for (int i = 0; i < NV * VW; ++i) aw[i] = ab[i] = C(0);
  for (int64_t r = int64_t(blockIdx.x) * nwarps + warp; r < rows; r += int64_t(gridDim.x) * nwarps) {
    const uint4* xr = reinterpret_cast<const uint4*>(x + r * D);
    const uint4* gr = reinterpret_cast<const uint4*>(g + r * D);
    C xv[NV * VW], gv[NV * VW], s0[1] = {C(0)};
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int it = k * 32 + lane;
      VecT tx, tg;
      tx.u = tg.u = make_uint4(0, 0, 0, 0);
      if (it < nitems) {
        tx.u = xr[it];
        tg.u = gr[it];
      }
#pragma unroll
      for (int e = 0; e < VW; ++e) {
        xv[k * VW + e] = C(tx.v[e]);
        gv[k * VW + e] = C(tg.v[e]);
        s0[0] += xv[k * VW + e];
      }
    }
    group_reduce_n<1>(s0, 32, static_cast<C*>(nullptr), ReduceAdd());
    const C mean = s0[0] / n;
    C q[1] = {C(0)};
#pragma unroll
    for (int k = 0; k < NV; ++k)
      if (k * 32 + lane < nitems) {
#pragma unroll
        for (int e = 0; e < VW; ++e) {
          const C d = xv[k * VW + e] - mean;
          q[0] += d * d;
        }
      }
    group_reduce_n<1>(q, 32, static_cast<C*>(nullptr), ReduceAdd());
    const C var = q[0] / n;
    const C rstd = C(1) / m_sqrt((var > C(0) ? var : C(0)) + C(eps));
    C s[2] = {C(0), C(0)};
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int it = k * 32 + lane;
      if (it < nitems) {
        VecT tw;
        if (w) tw.u = reinterpret_cast<const uint4*>(w)[it];
#pragma unroll
        for (int e = 0; e < VW; ++e) {
          const int i = k * VW + e;
          const C xh = (xv[i] - mean) * rstd;
          xv[i] = xh;
          aw[i] += gv[i] * xh;
          ab[i] += gv[i];
          const C gh = w ? gv[i] * C(tw.v[e]) : gv[i];
          gv[i] = gh;
          s[0] += gh;
          s[1] += gh * xh;
        }
      }
    }
    group_reduce_n<2>(s, 32, static_cast<C*>(nullptr), ReduceAdd());
    const C mg = s[0] / n, mgx = s[1] / n;
    uint4* o = reinterpret_cast<uint4*>(dx + r * D);
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int it = k * 32 + lane;
      if (it < nitems) {
        VecT t;
#pragma unroll
        for (int e = 0; e < VW; ++e) t.v[e] = T(rstd * (gv[k * VW + e] - mg - xv[k * VW + e] * mgx));
        o[it] = t.u;
      }
    }
  }
  // the block's sums, warp by warp in order, then its partial
  for (int wi = 0; wi < nwarps; ++wi) {
    if (warp == wi) {
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int it = k * 32 + lane;
        if (it < nitems) {
#pragma unroll
          for (int e = 0; e < VW; ++e) {
            const int64_t j = int64_t(it) * VW + e;
            acc[j] = wi == 0 ? aw[k * VW + e] : acc[j] + aw[k * VW + e];
            acc[D + j] = wi == 0 ? ab[k * VW + e] : acc[D + j] + ab[k * VW + e];
          }
        }
      }
    }
    __syncthreads();
  }
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    part[int64_t(blockIdx.x) * D + j] = acc[j];
    part[(int64_t(gridDim.x) + blockIdx.x) * D + j] = acc[D + j];
  }
}
#define LNB_WARP_KERNEL(NV)                                                                                \
  extern "C" __global__ void __launch_bounds__(256) warp_rows_##NV(                                       \
      const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ g, T* __restrict__ dx,        \
      C* __restrict__ part, int64_t rows, int64_t D, double eps) {                                          \
    lnb_warp_rows<NV>(x, w, g, dx, part, rows, D, eps);                                                     \
  }
LNB_WARP_KERNEL(1)
LNB_WARP_KERNEL(2)
LNB_WARP_KERNEL(3)
LNB_WARP_KERNEL(4)
LNB_WARP_KERNEL(6)
LNB_WARP_KERNEL(8)

// Long rows: one block per row, its values read again in each pass.
extern "C" __global__ void rows_stream(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ g,
                                       T* __restrict__ dx, C* __restrict__ stats, int64_t rows, int64_t D,
                                       double eps) {
  __shared__ C red[32 * 2];
  const C n = C(D);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * D;
    const T* gr = g + r * D;
    C sx = C(0);
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) sx += C(xr[i]);
    const C mean = group_sum(sx, blockDim.x, red) / n;
    C q = C(0);
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
      const C d = C(xr[i]) - mean;
      q += d * d;
    }
    const C var = group_sum(q, blockDim.x, red) / n;
    const C rstd = C(1) / m_sqrt((var > C(0) ? var : C(0)) + C(eps));
    C s[2] = {C(0), C(0)};
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
      const C gh = w ? C(gr[i]) * C(w[i]) : C(gr[i]);
      s[0] += gh;
      s[1] += gh * ((C(xr[i]) - mean) * rstd);
    }
    group_reduce_n<2>(s, blockDim.x, red, ReduceAdd());
    const C mg = s[0] / n, mgx = s[1] / n;
    T* o = dx + r * D;
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
      const C gh = w ? C(gr[i]) * C(w[i]) : C(gr[i]);
      o[i] = T(rstd * (gh - mg - (C(xr[i]) - mean) * rstd * mgx));
    }
    if (threadIdx.x == 0) {
      stats[2 * r] = mean;
      stats[2 * r + 1] = rstd;
    }
  }
}

// The sums of the 8 row lanes of a (32 columns, 8 lanes) block, added in lane order: the result
// is threadIdx.y == 0's aw and ab. Every thread of the block calls it.
__device__ __forceinline__ void merge_lanes(C& aw, C& ab) {
  __shared__ C sw[8][33], sb[8][33];
  sw[threadIdx.y][threadIdx.x] = aw;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0) {
#pragma unroll
    for (int k = 1; k < 8; ++k) {
      aw += sw[k][threadIdx.x];
      ab += sb[k][threadIdx.x];
    }
  }
}

// Blocks of (32 columns, 8 row lanes); blockIdx.y = the chunk of rows. part: [2][chunks][D].
extern "C" __global__ void __launch_bounds__(256) cols_partial(const T* __restrict__ x, const T* __restrict__ g,
                                                               const C* __restrict__ stats, C* __restrict__ part,
                                                               int64_t rows, int64_t D, int64_t chunk) {
  const int64_t j = int64_t(blockIdx.x) * 32 + threadIdx.x;
  const int64_t r0 = int64_t(blockIdx.y) * chunk;
  const int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
  C aw = C(0), ab = C(0);
  if (j < D) {
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
      const C gv = C(g[r * D + j]);
      aw += gv * ((C(x[r * D + j]) - stats[2 * r]) * stats[2 * r + 1]);
      ab += gv;
    }
  }
  merge_lanes(aw, ab);
  if (threadIdx.y == 0 && j < D) {
    part[int64_t(blockIdx.y) * D + j] = aw;
    part[(int64_t(gridDim.y) + blockIdx.y) * D + j] = ab;
  }
}

// dw, db: the chunks' partial sums (part: [2][chunks][D]) added in a fixed order (chunks = 0:
// no rows, zeros). Blocks of (32 columns, 8 lanes): lane y adds chunks y, y + 8, ..., then the
// lanes' sums are added in order.
extern "C" __global__ void __launch_bounds__(256) cols_merge(const C* __restrict__ part, T* __restrict__ dw,
                                                             T* __restrict__ db, int64_t D, int chunks) {
  const int64_t j = int64_t(blockIdx.x) * 32 + threadIdx.x;
  C aw = C(0), ab = C(0);
  if (j < D)
    for (int c = threadIdx.y; c < chunks; c += 8) {
      aw += part[int64_t(c) * D + j];
      ab += part[int64_t(chunks + c) * D + j];
    }
  merge_lanes(aw, ab);
  if (threadIdx.y == 0 && j < D) {
    dw[j] = T(aw);
    db[j] = T(ab);
  }
}
)CUDA";

const char* kBatchNormKernels = R"CUDA(
union VecT { uint4 u; T v[VW]; };

// ab[c] = alpha = rstd * w, ab[C + c] = beta = b - mean * alpha (w, b may be null).
extern "C" __global__ void coefs(C* __restrict__ ab, const T* __restrict__ mean, const T* __restrict__ var,
                                 const T* __restrict__ w, const T* __restrict__ b, int64_t nc, double eps) {
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < nc; c += int64_t(gridDim.x) * blockDim.x) {
    C invstd = C(1) / m_sqrt(C(var[c]) + C(eps));
    C al = w ? invstd * C(w[c]) : invstd;
    C be = (b ? C(b[c]) : C(0)) - C(mean[c]) * al;
    ab[c] = al;
    ab[nc + c] = be;
  }
}

// Contiguous [N, C, inner]: thread per 16-byte vector (inner % VW == 0, aligned) ...
extern "C" __global__ void apply_vec(T* __restrict__ y, const T* __restrict__ x, const C* __restrict__ ab,
                                     int64_t nvec, int64_t inner_vec, int64_t nc) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < nvec; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / inner_vec) % nc;
    const C al = ab[c], be = ab[nc + c];
    VecT t;
    t.u = ((const uint4*)x)[i];
#pragma unroll
    for (int e = 0; e < VW; ++e) t.v[e] = T(C(t.v[e]) * al + be);
    ((uint4*)y)[i] = t.u;
  }
}
// ... or per element.
extern "C" __global__ void apply_flat(T* __restrict__ y, const T* __restrict__ x, const C* __restrict__ ab,
                                      int64_t n, int64_t inner, int64_t nc) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / inner) % nc;
    y[i] = T(C(x[i]) * ab[c] + ab[nc + c]);
  }
}
// Strided input: y (contiguous) and x through their collapsed strides; sc = the channel
// index's strides over the same space.
extern "C" __global__ void apply_strided(T* __restrict__ y, const T* __restrict__ x, const C* __restrict__ ab,
                                         EMBER_GC Shape sh, EMBER_GC Strides sy, EMBER_GC Strides sx,
                                         EMBER_GC Strides sc, int64_t n, int64_t nc) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = offset_of(i, sh, sc);
    y[offset_of(i, sh, sy)] = T(C(x[offset_of(i, sh, sx)]) * ab[c] + ab[nc + c]);
  }
}
)CUDA";

std::string header(DType dt) {
  std::string s = reduce_family_helpers();
  s += "typedef " + std::string(device_type(dt)) + " T;\n";
  s += "typedef " + std::string(compute_type(dt)) + " C;\n";
  s += "#define VW " + std::to_string(16 / dtype_size(dt)) + "  // elements of T in 16 bytes\n";
  return s;
}

std::string ln_key(DType dt) { return "layer_norm/" + std::string(dtype_name(dt)); }
std::string bn_key(DType dt) { return "batch_norm/" + std::string(dtype_name(dt)); }

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

CudaTensorPtr optional_input(CudaBackend& be, Op& op, size_t i) {
  return op.inputs.size() > i && op.inputs[i] ? contiguous(be, op.inputs[i]) : nullptr;
}

std::vector<PrimitivePtr> layer_norm_kernel(CudaBackend& be, Op& op) {
  const auto& a = op.attr<NormAttrs>();
  const TensorMeta meta = op.outputs[0];
  const DType dt = meta.dtype;
  EMBER_CHECK(is_float(dt), op.name(), ": needs a floating input, got ", dt);
  auto y = output_reusing(be, op, 0, meta);
  auto x = contiguous(be, op.inputs[0]);
  const Shape& s = x->shape();
  int64_t D = 1;
  for (int d = s.rank() - a.axes; d < s.rank(); ++d) D *= s[d];
  const int64_t n = s.numel();
  if (n == 0) return {y};
  const int64_t rows = n / D;
  auto w = optional_input(be, op, 1);
  auto b = optional_input(be, op, 2);
  const void* xp = x->raw();
  void* yp = y->raw();
  const void* wp = w ? w->raw() : nullptr;
  const void* bp = b ? b->raw() : nullptr;
  const std::string key = ln_key(dt);
  auto fn = [&](const char* entry) { return be.jit().get(key, entry, [&] { return layer_norm_source(dt); }); };
  const int vw = int(16 / dtype_size(dt));
  const bool vec = D % vw == 0 && aligned16(xp) && aligned16(yp) && (!wp || aligned16(wp)) && (!bp || aligned16(bp));
  const int W = vec ? vw : 1;
  const int64_t items = D / W;
  const auto [tpr, nv] = row_layout(items, W, vec);
  if (nv <= kMaxRegElems / W) {
    // blocks of 256 threads for groups of a warp or less; a group of more is the whole block
    // (the contract of the group reductions)
    const int threads = int(tpr > 32 ? tpr : 256);
    static const bool pair_on = [] {
      const char* e = std::getenv("EMBER_CUDA_LN_PAIR");
      return !(e && *e == '0');
    }();
    const bool pair = pair_on && vec && vw >= 4 && tpr > 32 && nv * W <= 16 && rows > 1;
    const int64_t rows_per_block = pair ? 2 : threads / tpr;
    const std::string entry = std::string(pair ? "pair_v" : vec ? "rows_v" : "rows_s") + std::to_string(nv);
    // blocks per SM at most (EMBER_CUDA_LN_GRID overrides the default 32, for tuning)
    static const int64_t per_sm = [] {
      const char* e = std::getenv("EMBER_CUDA_LN_GRID");
      int64_t v = e ? std::atoll(e) : 0;
      return v >= 1 && v <= 64 ? v : int64_t(32);
    }();
    const unsigned grid =
        unsigned(std::min<int64_t>((rows + rows_per_block - 1) / rows_per_block, int64_t(be.sm_count()) * per_sm));
    be.launch(fn(entry.c_str()), grid, threads, 0, xp, yp, wp, bp, rows, D, a.eps, int(tpr));
  } else {
    be.launch(fn("rows_stream"), unsigned(std::min<int64_t>(rows, int64_t(be.sm_count()) * 32)), 1024, 0, xp, yp,
              wp, bp, rows, D, a.eps);
  }
  return {y};
}

std::string lnb_key(DType dt) { return "layer_norm_backward/" + std::string(dtype_name(dt)); }

std::vector<PrimitivePtr> layer_norm_backward_kernel(CudaBackend& be, Op& op) {
  const auto& a = op.attr<NormAttrs>();
  const DType dt = op.outputs[0].dtype;
  EMBER_CHECK(is_float(dt), op.name(), ": needs a floating input, got ", dt);
  // (new buffers: the column pass reads x and g after dx is written)
  auto dx = alloc(be, op.outputs[0]), dw = alloc(be, op.outputs[1]), db = alloc(be, op.outputs[2]);
  auto x = contiguous(be, op.inputs[0]);
  auto w = optional_input(be, op, 1);
  auto g = contiguous(be, op.inputs[2]);
  const int64_t D = op.outputs[1].shape.numel(), n = x->numel();
  if (D == 0) return {dx, dw, db};
  const int64_t rows = n / D;
  const std::string key = lnb_key(dt);
  auto fn = [&](const char* entry) {
    return be.jit().get(key, entry, [&] { return layer_norm_backward_source(dt); });
  };
  const size_t cb = dt == DType::f64 ? 8 : 4;
  const int64_t sms = be.sm_count();
  int64_t chunks = 0;
  std::unique_ptr<Buffer> part;
  const int64_t vw = int64_t(16 / dtype_size(dt)), nv = (D + 32 * vw - 1) / (32 * vw);
  const void* wp = w ? w->raw() : nullptr;
  if (rows > 0 && D % vw == 0 && nv <= 8 && aligned16(x->raw()) && aligned16(g->raw()) && aligned16(dx->raw()) &&
      (!w || aligned16(w->raw()))) {
    // a warp per row, the column sums in its registers; 2 blocks of 8 warps per SM
    const int64_t v = nv <= 4 ? nv : nv <= 6 ? 6 : 8;
    chunks = std::min<int64_t>((rows + 7) / 8, 2 * sms);
    part = std::make_unique<Buffer>(be.allocator(), size_t(2 * chunks * D) * cb);
    const std::string entry = "warp_rows_" + std::to_string(v);
    be.launch(fn(entry.c_str()), unsigned(chunks), 256, unsigned(2 * D * int64_t(cb)), x->raw(), wp, g->raw(),
              dx->raw(), part->ptr, rows, D, a.eps);
  } else if (rows > 0) {
    Buffer stats(be.allocator(), size_t(2 * rows) * cb);
    // a group of tpr threads per row, up to 8 values of the row per thread
    constexpr int64_t kMaxNv = 8;
    if (D <= 1024 * kMaxNv) {
      int64_t tpr = 1;
      while (tpr < 1024 && tpr * kMaxNv < D) tpr *= 2;
      int64_t per = (D + tpr - 1) / tpr;
      per = per <= 1 ? 1 : per <= 2 ? 2 : per <= 4 ? 4 : 8;
      const int threads = int(tpr > 32 ? tpr : 256);
      const int64_t rpb = threads / tpr;
      const std::string entry = "rows_" + std::to_string(per);
      const unsigned grid = unsigned(std::min<int64_t>((rows + rpb - 1) / rpb, sms * 32));
      be.launch(fn(entry.c_str()), grid, threads, 0, x->raw(), wp, g->raw(), dx->raw(), stats.ptr, rows, D, a.eps,
                int(tpr));
    } else {
      be.launch(fn("rows_stream"), unsigned(std::min<int64_t>(rows, sms * 2)), 1024, 0, x->raw(), wp, g->raw(),
                dx->raw(), stats.ptr, rows, D, a.eps);
    }
    // chunks of rows so that about 4 blocks per SM run the column pass
    const int64_t col_blocks = (D + 31) / 32;
    chunks = std::clamp<int64_t>((4 * sms + col_blocks - 1) / col_blocks, 1, std::min<int64_t>((rows + 7) / 8, 1024));
    const int64_t chunk = (rows + chunks - 1) / chunks;
    chunks = (rows + chunk - 1) / chunk;
    part = std::make_unique<Buffer>(be.allocator(), size_t(2 * chunks * D) * cb);
    be.launch(fn("cols_partial"), dim3(unsigned(col_blocks), unsigned(chunks)), dim3(32, 8), 0, x->raw(),
              g->raw(), stats.ptr, part->ptr, rows, D, chunk);
  }
  be.launch(fn("cols_merge"), unsigned((D + 31) / 32), dim3(32, 8), 0, part ? part->ptr : nullptr, dw->raw(),
            db->raw(), D, int(chunks));
  return {dx, dw, db};
}

std::vector<PrimitivePtr> batch_norm_kernel(CudaBackend& be, Op& op) {
  const auto& a = op.attr<NormAttrs>();
  const TensorMeta meta = op.outputs[0];
  const DType dt = meta.dtype;
  EMBER_CHECK(is_float(dt), op.name(), ": needs a floating input, got ", dt);
  auto y = output_reusing(be, op, 0, meta);
  auto x = as_cuda_ptr(op.inputs[0]);
  const Shape& s = x->shape();
  const int64_t n = s.numel();
  if (n == 0) return {y};
  const int64_t nc = s[1];
  auto mean = optional_input(be, op, 1), var = optional_input(be, op, 2);
  auto w = optional_input(be, op, 3), b = optional_input(be, op, 4);
  EMBER_CHECK(mean && var, op.name(), ": running_mean and running_var are required");
  const std::string key = bn_key(dt);
  auto fn = [&](const char* entry) { return be.jit().get(key, entry, [&] { return batch_norm_source(dt); }); };
  const size_t cbytes = dt == DType::f64 ? 8 : 4;
  Buffer ab(be.allocator(), size_t(2 * nc) * cbytes);
  be.launch(fn("coefs"), grid_for(be, nc, 128), 128, 0, ab.ptr, mean->raw(), var->raw(),
            w ? w->raw() : static_cast<void*>(nullptr), b ? b->raw() : static_cast<void*>(nullptr), nc, a.eps);
  const int64_t inner = n / (s[0] * nc);
  constexpr int kThreads = 256;
  if (x->is_contiguous()) {
    const int vw = int(16 / dtype_size(dt));
    if (inner % vw == 0 && aligned16(x->raw()) && aligned16(y->raw())) {
      const int64_t nvec = n / vw;
      be.launch(fn("apply_vec"), grid_for(be, nvec, kThreads), kThreads, 0, y->raw(), x->raw(), ab.ptr, nvec,
                inner / vw, nc);
    } else {
      be.launch(fn("apply_flat"), grid_for(be, n, kThreads), kThreads, 0, y->raw(), x->raw(), ab.ptr, n, inner,
                nc);
    }
  } else {
    std::vector<int64_t> cst(size_t(s.rank()), 0);
    cst[1] = 1;
    Collapsed c = collapse(op.name(), s, {y->strides, x->strides, cst});
    be.launch(fn("apply_strided"), grid_for(be, n, kThreads), kThreads, 0, y->raw(), x->raw(), ab.ptr, c.shape,
              c.strides[0], c.strides[1], c.strides[2], n, nc);
  }
  return {y};
}

}  // namespace

std::string layer_norm_source(DType dt) { return header(dt) + kLayerNormKernels; }
std::string batch_norm_source(DType dt) { return header(dt) + kBatchNormKernels; }
std::string layer_norm_backward_source(DType dt) { return header(dt) + kLayerNormBackwardKernels; }

std::vector<KernelSource> norm_variants() {
  std::vector<KernelSource> v;
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    v.push_back({ln_key(dt), layer_norm_source(dt)});
    v.push_back({bn_key(dt), batch_norm_source(dt)});
    v.push_back({lnb_key(dt), layer_norm_backward_source(dt)});
  }
  return v;
}

void register_norm_kernels(KernelTable& t) {
  t[size_t(OpKind::layer_norm)] = layer_norm_kernel;
  t[size_t(OpKind::layer_norm_backward)] = layer_norm_backward_kernel;
  t[size_t(OpKind::batch_norm)] = batch_norm_kernel;
}

}  // namespace ember::cuda
