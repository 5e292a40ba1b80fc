// AVX-512 micro-kernels, packing routines and GEMV for gemm.cpp.
//
// Compiled with -mavx512f/bw/dq/vl -mfma; reached only through gemm_kernels_avx512_*(),
// which gemm.cpp calls after checking cpu::features().avx512. Everything except those two
// getters has internal linkage so no AVX-512 code can leak into other translation units via
// COMDAT folding (hence also: no standard library templates are instantiated here).
//
// Register blocking: C micro-tile of MR = 14 rows x NR = 2 vectors (32 floats / 16 doubles):
// 28 accumulators + 2 B vectors + 1 broadcast A value = 31 of the 32 zmm registers.
// GCC 12 reports its own _mm512_undefined_*() helpers (self-initialised) as
// maybe-uninitialized once the shuffle intrinsics are inlined; that is a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

#include "gemm.hpp"

namespace ember::cpu::detail {
namespace {

constexpr int kMR = 14;

template <class T>
struct V;

template <>
struct V<float> {
  using R = __m512;
  using M = __mmask16;
  static constexpr int W = 16;
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static R loadz(M m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static void mstore(float* p, M m, R v) { _mm512_mask_storeu_ps(p, m, v); }
  static R set1(float x) { return _mm512_set1_ps(x); }
  static R zero() { return _mm512_setzero_ps(); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static float hsum(R v) { return _mm512_reduce_add_ps(v); }
  static M mask(int64_t n) {
    return n >= W ? static_cast<M>(0xFFFF) : n <= 0 ? static_cast<M>(0) : static_cast<M>((1u << n) - 1);
  }
  // In-place transpose of a 16 x 16 block held in r[0..15].
  static void transpose(R* r) {
    R t[16];
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
      r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
      r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
      r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
      r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
      R u0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
      R u1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
      R u2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
      R u3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
      t[c] = _mm512_shuffle_f32x4(u0, u2, 0x88);
      t[8 + c] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
      t[4 + c] = _mm512_shuffle_f32x4(u1, u3, 0x88);
      t[12 + c] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
    }
    for (int i = 0; i < 16; ++i) r[i] = t[i];
  }
};

template <>
struct V<double> {
  using R = __m512d;
  using M = __mmask8;
  static constexpr int W = 8;
  static R load(const double* p) { return _mm512_loadu_pd(p); }
  static R loadz(M m, const double* p) { return _mm512_maskz_loadu_pd(m, p); }
  static void store(double* p, R v) { _mm512_storeu_pd(p, v); }
  static void mstore(double* p, M m, R v) { _mm512_mask_storeu_pd(p, m, v); }
  static R set1(double x) { return _mm512_set1_pd(x); }
  static R zero() { return _mm512_setzero_pd(); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_pd(a, b, c); }
  static R mul(R a, R b) { return _mm512_mul_pd(a, b); }
  static double hsum(R v) { return _mm512_reduce_add_pd(v); }
  static M mask(int64_t n) {
    return n >= W ? static_cast<M>(0xFF) : n <= 0 ? static_cast<M>(0) : static_cast<M>((1u << n) - 1);
  }
  // In-place transpose of an 8 x 8 block held in r[0..7].
  static void transpose(R* r) {
    R t[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
    }
    for (int p = 0; p < 2; ++p) {
      R a = _mm512_shuffle_f64x2(t[p], t[2 + p], 0x44);
      R b = _mm512_shuffle_f64x2(t[4 + p], t[6 + p], 0x44);
      R a2 = _mm512_shuffle_f64x2(t[p], t[2 + p], 0xEE);
      R b2 = _mm512_shuffle_f64x2(t[4 + p], t[6 + p], 0xEE);
      r[p] = _mm512_shuffle_f64x2(a, b, 0x88);
      r[2 + p] = _mm512_shuffle_f64x2(a, b, 0xDD);
      r[4 + p] = _mm512_shuffle_f64x2(a2, b2, 0x88);
      r[6 + p] = _mm512_shuffle_f64x2(a2, b2, 0xDD);
    }
  }
};

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// ---------------------------------------------------------------------------------------
// Micro-kernel: C[0:M, 0:n] = alpha * Ap * B + beta * C, NV vectors of width W per row.
// MASKED: n < NV * W, B loads and C accesses are masked to the first n columns.
template <class T, int M, int NV, bool MASKED>
__attribute__((noinline)) void ukernel(int64_t kc, const T* __restrict a, const T* __restrict b,
                                       int64_t ldb, T* __restrict c, int64_t rsc, T alpha,
                                       T beta, int n) {
  using v = V<T>;
  using R = typename v::R;
  constexpr int W = v::W;
  typename v::M mk[NV];
  for (int j = 0; j < NV; ++j) mk[j] = v::mask(MASKED ? n - j * W : W);

  R acc[M][NV];
#pragma GCC unroll 14
  for (int r = 0; r < M; ++r) {
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) acc[r][j] = v::zero();
  }
#pragma GCC unroll 14
  for (int r = 0; r < M; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * rsc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * rsc + NV * W - 1), _MM_HINT_T0);
  }

#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    R bv[NV];
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) bv[j] = MASKED ? v::loadz(mk[j], b + j * W) : v::load(b + j * W);
#pragma GCC unroll 14
    for (int r = 0; r < M; ++r) {
      R ar = v::set1(a[r]);
#pragma GCC unroll 2
      for (int j = 0; j < NV; ++j) acc[r][j] = v::fma(ar, bv[j], acc[r][j]);
    }
    a += kMR;
    b += ldb;
  }

  const R va = v::set1(alpha);
  if (beta == T(0)) {
#pragma GCC unroll 14
    for (int r = 0; r < M; ++r) {
      T* cr = c + r * rsc;
#pragma GCC unroll 2
      for (int j = 0; j < NV; ++j) {
        R x = v::mul(va, acc[r][j]);
        if (MASKED)
          v::mstore(cr + j * W, mk[j], x);
        else
          v::store(cr + j * W, x);
      }
    }
  } else {
    const R vb = v::set1(beta);
#pragma GCC unroll 14
    for (int r = 0; r < M; ++r) {
      T* cr = c + r * rsc;
#pragma GCC unroll 2
      for (int j = 0; j < NV; ++j) {
        if (MASKED) {
          R x = v::fma(va, acc[r][j], v::mul(vb, v::loadz(mk[j], cr + j * W)));
          v::mstore(cr + j * W, mk[j], x);
        } else {
          R x = v::fma(va, acc[r][j], v::mul(vb, v::load(cr + j * W)));
          v::store(cr + j * W, x);
        }
      }
    }
  }
}

template <class T, int NV, bool MASKED, int Mx = kMR>
inline void ukernel_m(int m, int64_t kc, const T* a, const T* b, int64_t ldb, T* c, int64_t rsc,
                      T alpha, T beta, int n) {
  if constexpr (Mx >= 1) {
    if (m == Mx)
      ukernel<T, Mx, NV, MASKED>(kc, a, b, ldb, c, rsc, alpha, beta, n);
    else
      ukernel_m<T, NV, MASKED, Mx - 1>(m, kc, a, b, ldb, c, rsc, alpha, beta, n);
  }
}

template <class T>
void kernel(int64_t kc, const T* a, const T* b, int64_t ldb, T* c, int64_t rsc, T alpha, T beta,
            int m, int n) {
  constexpr int W = V<T>::W;
  if (n == 2 * W)
    ukernel_m<T, 2, false>(m, kc, a, b, ldb, c, rsc, alpha, beta, n);
  else if (n == W)
    ukernel_m<T, 1, false>(m, kc, a, b, ldb, c, rsc, alpha, beta, n);
  else if (n < W)
    ukernel_m<T, 1, true>(m, kc, a, b, ldb, c, rsc, alpha, beta, n);
  else
    ukernel_m<T, 2, true>(m, kc, a, b, ldb, c, rsc, alpha, beta, n);
}

// ---------------------------------------------------------------------------------------
// Packing.

// One A micro-panel: rows [0,m) (m <= kMR), k in [0,kc) -> dst[k * kMR + i], zero padded.
template <class T>
void pack_a(const T* a, int64_t rsa, int64_t csa, int64_t m, int64_t kc, T* dst) {
  using v = V<T>;
  using R = typename v::R;
  constexpr int W = v::W;
  if (csa == 1 && m > 1) {
    // Rows are contiguous along k: transpose W x W blocks.
    for (int64_t k0 = 0; k0 < kc; k0 += W) {
      const int64_t kk = imin(W, kc - k0);
      const auto km = v::mask(kk);
      for (int g = 0; g * W < kMR; ++g) {
        R r[W];
        for (int i = 0; i < W; ++i) {
          const int64_t row = g * W + i;
          if (row < m)
            r[i] = kk == W ? v::load(a + row * rsa + k0) : v::loadz(km, a + row * rsa + k0);
          else
            r[i] = v::zero();
        }
        v::transpose(r);
        const auto sm = v::mask(kMR - g * W);
        for (int64_t t = 0; t < kk; ++t) v::mstore(dst + (k0 + t) * kMR + g * W, sm, r[t]);
      }
    }
  } else if (rsa == 1 || m == 1) {
    // The m values of one k are contiguous (or there is only one).
    for (int g = 0; g * W < kMR; ++g) {
      const auto lm = v::mask(m - g * W);
      const auto sm = v::mask(kMR - g * W);
      if (m == 1 && g == 0) {
        for (int64_t k = 0; k < kc; ++k) {
          T* d = dst + k * kMR;
          d[0] = a[k * csa];
          for (int i = 1; i < kMR; ++i) d[i] = T(0);
        }
        break;
      }
      for (int64_t k = 0; k < kc; ++k)
        v::mstore(dst + k * kMR + g * W, sm, v::loadz(lm, a + g * W + k * csa));
    }
  } else {
    for (int64_t k = 0; k < kc; ++k)
      for (int i = 0; i < kMR; ++i) dst[k * kMR + i] = i < m ? a[i * rsa + k * csa] : T(0);
  }
}

// B panel: k in [0,kc), j in [0,nc) -> micro-panels of NR = 2W columns, zero padded.
template <class T>
void pack_b(const T* b, int64_t rsb, int64_t csb, int64_t kc, int64_t nc, T* dst) {
  using v = V<T>;
  using R = typename v::R;
  constexpr int W = v::W;
  constexpr int NR = 2 * W;
  const int64_t np = (nc + NR - 1) / NR;
  if (csb == 1) {
    const int64_t nfull = nc / NR;
    for (int64_t k = 0; k < kc; ++k) {
      const T* src = b + k * rsb;
      T* d = dst + k * NR;
      for (int64_t p = 0; p < nfull; ++p) {
        v::store(d + p * kc * NR, v::load(src + p * NR));
        v::store(d + p * kc * NR + W, v::load(src + p * NR + W));
      }
      if (nfull < np) {
        const int64_t rest = nc - nfull * NR;
        v::store(d + nfull * kc * NR, v::loadz(v::mask(rest), src + nfull * NR));
        v::store(d + nfull * kc * NR + W, v::loadz(v::mask(rest - W), src + nfull * NR + W));
      }
    }
  } else if (rsb == 1) {
    // Columns of B are contiguous along k: transpose W x W blocks.
    for (int64_t p = 0; p < np; ++p) {
      T* dp = dst + p * kc * NR;
      for (int h = 0; h < 2; ++h) {
        const int64_t j0 = p * NR + h * W;
        const int64_t nj = imin(W, nc - j0);
        for (int64_t k0 = 0; k0 < kc; k0 += W) {
          const int64_t kk = imin(W, kc - k0);
          const auto km = v::mask(kk);
          R r[W];
          for (int i = 0; i < W; ++i) {
            if (i < nj)
              r[i] = kk == W ? v::load(b + (j0 + i) * csb + k0)
                             : v::loadz(km, b + (j0 + i) * csb + k0);
            else
              r[i] = v::zero();
          }
          v::transpose(r);
          for (int64_t t = 0; t < kk; ++t) v::store(dp + (k0 + t) * NR + h * W, r[t]);
        }
      }
    }
  } else {
    for (int64_t p = 0; p < np; ++p) {
      T* dp = dst + p * kc * NR;
      for (int64_t k = 0; k < kc; ++k)
        for (int j = 0; j < NR; ++j) {
          const int64_t col = p * NR + j;
          dp[k * NR + j] = col < nc ? b[k * rsb + col * csb] : T(0);
        }
    }
  }
}

// ---------------------------------------------------------------------------------------
// GEMV: y[j] = alpha * sum_k x[k] * P[k*rs + j*cs] + beta * y[j].

// Axpy form (P rows contiguous): y += x[k] * P[k, :]. Rows are consumed in blocks of KB (4:
// more concurrent row streams thrash L1 sets when the row stride is a multiple of 4 KiB) so
// that every row is streamed sequentially; partial sums live in a small L1-resident buffer.
template <class T, int KB>
void gemv_rows_kblock(int64_t nj, const T* x, const T* p, int64_t rs, bool first, T* buf) {
  using v = V<T>;
  using R = typename v::R;
  constexpr int W = v::W;
  R xv[KB];
#pragma GCC unroll 16
  for (int t = 0; t < KB; ++t) xv[t] = v::set1(x[t]);
  int64_t jj = 0;
  for (; jj + 2 * W <= nj; jj += 2 * W) {
    R a0 = first ? v::zero() : v::load(buf + jj), a1 = first ? v::zero() : v::load(buf + jj + W);
    R b0 = v::zero(), b1 = v::zero();
#pragma GCC unroll 16
    for (int t = 0; t < KB; t += 2) {
      const T* r0 = p + t * rs + jj;
      a0 = v::fma(xv[t], v::load(r0), a0);
      a1 = v::fma(xv[t], v::load(r0 + W), a1);
      if (t + 1 < KB) {
        b0 = v::fma(xv[t + 1], v::load(r0 + rs), b0);
        b1 = v::fma(xv[t + 1], v::load(r0 + rs + W), b1);
      }
    }
    v::store(buf + jj, a0 + b0);
    v::store(buf + jj + W, a1 + b1);
  }
  for (; jj < nj; jj += W) {
    const auto m = v::mask(nj - jj);
    R a0 = first ? v::zero() : v::loadz(m, buf + jj);
#pragma GCC unroll 16
    for (int t = 0; t < KB; ++t) a0 = v::fma(xv[t], v::loadz(m, p + t * rs + jj), a0);
    v::mstore(buf + jj, m, a0);
  }
}

template <class T>
void gemv(int64_t n, int64_t k, T alpha, const T* x, const T* p, int64_t rs, int64_t cs, T beta,
          T* y) {
  using v = V<T>;
  using R = typename v::R;
  constexpr int W = v::W;
  if (cs == 1) {
    constexpr int64_t kCols = 4096 / int64_t(sizeof(T));  // 4 KiB of partial sums
    alignas(64) T buf[kCols];
    for (int64_t j0 = 0; j0 < n; j0 += kCols) {
      const int64_t nj = imin(kCols, n - j0);
      int64_t k0 = 0;
      for (; k0 + 4 <= k; k0 += 4)
        gemv_rows_kblock<T, 4>(nj, x + k0, p + k0 * rs + j0, rs, k0 == 0, buf);
      for (; k0 < k; ++k0) gemv_rows_kblock<T, 1>(nj, x + k0, p + k0 * rs + j0, rs, k0 == 0, buf);
      const R va = v::set1(alpha), vb = v::set1(beta);
      for (int64_t jj = 0; jj < nj; jj += W) {
        const auto m = v::mask(nj - jj);
        R r = v::mul(va, v::loadz(m, buf + jj));
        if (beta != T(0)) r = v::fma(vb, v::loadz(m, y + j0 + jj), r);
        v::mstore(y + j0 + jj, m, r);
      }
    }
    return;
  }
  // rs == 1: each output is a dot product of x with a contiguous column of P.
  const int64_t kfull = k - k % W;
  const auto km = v::mask(k - kfull);
  int64_t j = 0;
  constexpr int J = 8;
  for (; j + J <= n; j += J) {
    R acc[J];
    for (int t = 0; t < J; ++t) acc[t] = v::zero();
    const T* col = p + j * cs;
    int64_t kk = 0;
    for (; kk < kfull; kk += W) {
      const R xv = v::load(x + kk);
#pragma GCC unroll 8
      for (int t = 0; t < J; ++t) acc[t] = v::fma(xv, v::load(col + t * cs + kk), acc[t]);
    }
    if (kk < k) {
      const R xv = v::loadz(km, x + kk);
#pragma GCC unroll 8
      for (int t = 0; t < J; ++t) acc[t] = v::fma(xv, v::loadz(km, col + t * cs + kk), acc[t]);
    }
    for (int t = 0; t < J; ++t) {
      const T s = alpha * v::hsum(acc[t]);
      y[j + t] = beta == T(0) ? s : s + beta * y[j + t];
    }
  }
  for (; j < n; ++j) {
    R acc0 = v::zero(), acc1 = v::zero();
    const T* col = p + j * cs;
    int64_t kk = 0;
    for (; kk + 2 * W <= kfull; kk += 2 * W) {
      acc0 = v::fma(v::load(x + kk), v::load(col + kk), acc0);
      acc1 = v::fma(v::load(x + kk + W), v::load(col + kk + W), acc1);
    }
    for (; kk < kfull; kk += W) acc0 = v::fma(v::load(x + kk), v::load(col + kk), acc0);
    if (kk < k) acc1 = v::fma(v::loadz(km, x + kk), v::loadz(km, col + kk), acc1);
    const T s = alpha * v::hsum(acc0 + acc1);
    y[j] = beta == T(0) ? s : s + beta * y[j];
  }
}

template <class T>
constexpr GemmKernelSet<T> make_set(int64_t kc, int64_t nc) {
  GemmKernelSet<T> s;
  s.mr = kMR;
  s.nr = 2 * V<T>::W;
  s.kc = kc;
  s.nc = nc;
  s.kernel = &kernel<T>;
  s.pack_a = &pack_a<T>;
  s.pack_b = &pack_b<T>;
  s.gemv = &gemv<T>;
  return s;
}

// Constant-initialised: no code from this file runs before features() was checked.
constexpr GemmKernelSet<float> g_set_f32 = make_set<float>(512, 1024);
constexpr GemmKernelSet<double> g_set_f64 = make_set<double>(512, 512);

}  // namespace

const GemmKernelSet<float>* gemm_kernels_avx512_f32() { return &g_set_f32; }
const GemmKernelSet<double>* gemm_kernels_avx512_f64() { return &g_set_f64; }

}  // namespace ember::cpu::detail
