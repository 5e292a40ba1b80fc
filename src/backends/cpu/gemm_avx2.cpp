// AVX2 + FMA micro-kernels, packing routines and GEMV for gemm.cpp.
//
// Compiled with -mavx2 -mfma; reached only through gemm_kernels_avx2_*(), which gemm.cpp
// calls after checking cpu::features().avx2. Everything else has internal linkage (and no
// standard library templates are instantiated here) so no AVX2 code leaks into other
// translation units.
//
// Register blocking: C micro-tile of MR = 6 rows x NR = 2 vectors (16 floats / 8 doubles):
// 12 accumulators + 2 B vectors + 1 broadcast A value = 15 of the 16 ymm registers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

#include "gemm.hpp"

namespace ember::cpu::detail {
namespace {

constexpr int kMR = 6;

template <class T>
struct V;

template <>
struct V<float> {
  using R = __m256;
  using M = __m256i;
  static constexpr int W = 8;
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static R loadz(M m, const float* p) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static void mstore(float* p, M m, R v) { _mm256_maskstore_ps(p, m, v); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static R zero() { return _mm256_setzero_ps(); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static float hsum(R v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static M mask(int64_t n) {
    const int c = n >= W ? W : n <= 0 ? 0 : static_cast<int>(n);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
};

template <>
struct V<double> {
  using R = __m256d;
  using M = __m256i;
  static constexpr int W = 4;
  static R load(const double* p) { return _mm256_loadu_pd(p); }
  static R loadz(M m, const double* p) { return _mm256_maskload_pd(p, m); }
  static void store(double* p, R v) { _mm256_storeu_pd(p, v); }
  static void mstore(double* p, M m, R v) { _mm256_maskstore_pd(p, m, v); }
  static R set1(double x) { return _mm256_set1_pd(x); }
  static R zero() { return _mm256_setzero_pd(); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_pd(a, b, c); }
  static R mul(R a, R b) { return _mm256_mul_pd(a, b); }
  static double hsum(R v) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
  }
  static M mask(int64_t n) {
    const int64_t c = n >= W ? W : n <= 0 ? 0 : n;
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(c), _mm256_setr_epi64x(0, 1, 2, 3));
  }
};

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// C[0:M, 0:n] = alpha * Ap * B + beta * C with NV vectors per row; MASKED when n < NV * W.
template <class T, int M, int NV, bool MASKED>
__attribute__((noinline)) void ukernel(int64_t kc, const T* __restrict a, const T* __restrict b,
                                       int64_t ldb, T* __restrict c, int64_t rsc, T alpha,
                                       T beta, int n) {
  using v = V<T>;
  using R = typename v::R;
  constexpr int W = v::W;
  R acc[M][NV];
#pragma GCC unroll 6
  for (int r = 0; r < M; ++r) {
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) acc[r][j] = v::zero();
  }
#pragma GCC unroll 6
  for (int r = 0; r < M; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * rsc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * rsc + NV * W - 1), _MM_HINT_T0);
  }
  if (MASKED) {
    const typename v::M m0 = v::mask(n), m1 = v::mask(n - W);
    for (int64_t k = 0; k < kc; ++k) {
      R bv[NV];
      bv[0] = v::loadz(m0, b);
      if constexpr (NV > 1) bv[1] = v::loadz(m1, b + W);
#pragma GCC unroll 6
      for (int r = 0; r < M; ++r) {
        R ar = v::set1(a[r]);
#pragma GCC unroll 2
        for (int j = 0; j < NV; ++j) acc[r][j] = v::fma(ar, bv[j], acc[r][j]);
      }
      a += kMR;
      b += ldb;
    }
  } else {
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
      R bv[NV];
#pragma GCC unroll 2
      for (int j = 0; j < NV; ++j) bv[j] = v::load(b + j * W);
#pragma GCC unroll 6
      for (int r = 0; r < M; ++r) {
        R ar = v::set1(a[r]);
#pragma GCC unroll 2
        for (int j = 0; j < NV; ++j) acc[r][j] = v::fma(ar, bv[j], acc[r][j]);
      }
      a += kMR;
      b += ldb;
    }
  }
  const R va = v::set1(alpha);
  const R vb = v::set1(beta);
  const bool use_beta = beta != T(0);
#pragma GCC unroll 6
  for (int r = 0; r < M; ++r) {
    T* cr = c + r * rsc;
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) {
      if (MASKED) {
        const typename v::M mk = v::mask(n - j * W);
        R x = v::mul(va, acc[r][j]);
        if (use_beta) x = v::fma(vb, v::loadz(mk, cr + j * W), x);
        v::mstore(cr + j * W, mk, x);
      } else {
        R x = v::mul(va, acc[r][j]);
        if (use_beta) x = v::fma(vb, v::load(cr + j * W), x);
        v::store(cr + j * W, x);
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

template <class T>
void pack_a(const T* a, int64_t rsa, int64_t csa, int64_t m, int64_t kc, T* dst) {
  if (m == kMR && csa == 1) {
    const T* r0 = a;
    for (int64_t k = 0; k < kc; ++k) {
      T* d = dst + k * kMR;
#pragma GCC unroll 6
      for (int i = 0; i < kMR; ++i) d[i] = r0[i * rsa + k];
    }
    return;
  }
  for (int64_t k = 0; k < kc; ++k) {
    T* d = dst + k * kMR;
    for (int i = 0; i < kMR; ++i) d[i] = i < m ? a[i * rsa + k * csa] : T(0);
  }
}

template <class T>
void pack_b(const T* b, int64_t rsb, int64_t csb, int64_t kc, int64_t nc, T* dst) {
  using v = V<T>;
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
    return;
  }
  for (int64_t p = 0; p < np; ++p) {
    T* dp = dst + p * kc * NR;
    const int64_t nj = imin(NR, nc - p * NR);
    const T* bp = b + p * NR * csb;
    for (int64_t k = 0; k < kc; ++k) {
      T* d = dp + k * NR;
      for (int j = 0; j < NR; ++j) d[j] = j < nj ? bp[k * rsb + j * csb] : T(0);
    }
  }
}

// Axpy form (P rows contiguous): y += x[k] * P[k, :], rows consumed 4 at a time (each row
// streamed sequentially) with partial sums in a small L1-resident buffer.
template <class T, int KB>
void gemv_rows_kblock(int64_t nj, const T* x, const T* p, int64_t rs, bool first, T* buf) {
  using v = V<T>;
  using R = typename v::R;
  constexpr int W = v::W;
  R xv[KB];
#pragma GCC unroll 4
  for (int t = 0; t < KB; ++t) xv[t] = v::set1(x[t]);
  int64_t jj = 0;
  for (; jj + 2 * W <= nj; jj += 2 * W) {
    R a0 = first ? v::zero() : v::load(buf + jj), a1 = first ? v::zero() : v::load(buf + jj + W);
    R b0 = v::zero(), b1 = v::zero();
#pragma GCC unroll 4
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
#pragma GCC unroll 4
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
    alignas(32) T buf[kCols];
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
  const int64_t kfull = k - k % W;
  const typename v::M km = v::mask(k - kfull);
  int64_t j = 0;
  constexpr int J = 4;
  for (; j + J <= n; j += J) {
    R acc[J];
    for (int t = 0; t < J; ++t) acc[t] = v::zero();
    const T* col = p + j * cs;
    int64_t kk = 0;
    for (; kk < kfull; kk += W) {
      const R xv = v::load(x + kk);
#pragma GCC unroll 4
      for (int t = 0; t < J; ++t) acc[t] = v::fma(xv, v::load(col + t * cs + kk), acc[t]);
    }
    if (kk < k) {
      const R xv = v::loadz(km, x + kk);
#pragma GCC unroll 4
      for (int t = 0; t < J; ++t) acc[t] = v::fma(xv, v::loadz(km, col + t * cs + kk), acc[t]);
    }
    for (int t = 0; t < J; ++t) {
      const T s = alpha * v::hsum(acc[t]);
      y[j + t] = beta == T(0) ? s : s + beta * y[j + t];
    }
  }
  for (; j < n; ++j) {
    R acc = v::zero();
    const T* col = p + j * cs;
    int64_t kk = 0;
    for (; kk < kfull; kk += W) acc = v::fma(v::load(x + kk), v::load(col + kk), acc);
    if (kk < k) acc = v::fma(v::loadz(km, x + kk), v::loadz(km, col + kk), acc);
    const T s = alpha * v::hsum(acc);
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

const GemmKernelSet<float>* gemm_kernels_avx2_f32() { return &g_set_f32; }
const GemmKernelSet<double>* gemm_kernels_avx2_f64() { return &g_set_f64; }

}  // namespace ember::cpu::detail
