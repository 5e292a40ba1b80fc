// AVX-512 kernels of the reduction family (declared in reduce_simd.hpp). This file is compiled
// with -mavx512f/bw/dq/vl; callers check cpu::features().avx512 before calling in. Everything
// but the rsimd entry points has internal linkage and no standard library code is used here, so
// no AVX-512 instructions can leak into other translation units through COMDAT folding.
// GCC 12 reports its own _mm512_undefined_*() helpers as (maybe-)uninitialized once inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "reduce_simd.hpp"

namespace ember::cpu::rsimd {

namespace {

inline __mmask16 tail_mask16(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
inline __mmask8 tail_mask8(int64_t n) { return static_cast<__mmask8>((1u << n) - 1u); }

// exp(x) for 16 floats: x = n ln2 + r, |r| <= ln2/2, degree-7 Taylor polynomial for e^r (error
// below 1 ulp of float), then scalef by 2^n (handles overflow to inf and gradual underflow).
// NaN propagates (vminps/vmaxps return their second operand when either is NaN).
inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// Adds 16 floats into two double accumulators.
inline void acc16(__m512d& lo, __m512d& hi, __m512 v) {
  lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
}

template <bool IsMax>
float extreme_f32(const float* x, int64_t n) {
  const float init = IsMax ? -__builtin_inff() : __builtin_inff();
  __m512 m0 = _mm512_set1_ps(init), m1 = m0, m2 = m0, m3 = m0;
  __mmask16 nan = 0;
  auto step = [&](__m512& m, __m512 v) {
    m = IsMax ? _mm512_max_ps(m, v) : _mm512_min_ps(m, v);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    step(m0, _mm512_loadu_ps(x + i));
    step(m1, _mm512_loadu_ps(x + i + 16));
    step(m2, _mm512_loadu_ps(x + i + 32));
    step(m3, _mm512_loadu_ps(x + i + 48));
  }
  for (; i + 16 <= n; i += 16) step(m0, _mm512_loadu_ps(x + i));
  if (i < n) step(m1, _mm512_mask_loadu_ps(_mm512_set1_ps(init), tail_mask16(n - i), x + i));
  if (nan) return __builtin_nanf("");
  if (IsMax) {
    m0 = _mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3));
    return _mm512_reduce_max_ps(m0);
  }
  m0 = _mm512_min_ps(_mm512_min_ps(m0, m1), _mm512_min_ps(m2, m3));
  return _mm512_reduce_min_ps(m0);
}

// Blocked summation: float accumulators (8 x 16 lanes, each adding at most 16 values) within a
// block of at most 2048 values, the block sums added in double. Float speed, near-double accuracy.
template <bool Square>
double sum_blocked_f32(const float* x, int64_t n) {
  constexpr int64_t kB = 2048;
  double total = 0;
  auto f = [](__m512 v) { return Square ? _mm512_mul_ps(v, v) : v; };
  for (int64_t b = 0; b < n; b += kB) {
    const float* p = x + b;
    const int64_t m = n - b < kB ? n - b : kB;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    int64_t j = 0;
    for (; j + 128 <= m; j += 128) {
      a0 = _mm512_add_ps(a0, f(_mm512_loadu_ps(p + j)));
      a1 = _mm512_add_ps(a1, f(_mm512_loadu_ps(p + j + 16)));
      a2 = _mm512_add_ps(a2, f(_mm512_loadu_ps(p + j + 32)));
      a3 = _mm512_add_ps(a3, f(_mm512_loadu_ps(p + j + 48)));
      a4 = _mm512_add_ps(a4, f(_mm512_loadu_ps(p + j + 64)));
      a5 = _mm512_add_ps(a5, f(_mm512_loadu_ps(p + j + 80)));
      a6 = _mm512_add_ps(a6, f(_mm512_loadu_ps(p + j + 96)));
      a7 = _mm512_add_ps(a7, f(_mm512_loadu_ps(p + j + 112)));
    }
    for (; j + 16 <= m; j += 16) a0 = _mm512_add_ps(a0, f(_mm512_loadu_ps(p + j)));
    if (j < m) a1 = _mm512_add_ps(a1, f(_mm512_maskz_loadu_ps(tail_mask16(m - j), p + j)));
    __m512d d0 = _mm512_setzero_pd(), d1 = d0;
    acc16(d0, d1, a0);
    acc16(d0, d1, a1);
    acc16(d0, d1, a2);
    acc16(d0, d1, a3);
    acc16(d0, d1, a4);
    acc16(d0, d1, a5);
    acc16(d0, d1, a6);
    acc16(d0, d1, a7);
    total += _mm512_reduce_add_pd(_mm512_add_pd(d0, d1));
  }
  return total;
}

}  // namespace

double sum_f32(const float* x, int64_t n) { return sum_blocked_f32<false>(x, n); }
double sumsq_f32(const float* x, int64_t n) { return sum_blocked_f32<true>(x, n); }

double sum_f64(const double* x, int64_t n) {
  __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm512_add_pd(a0, _mm512_loadu_pd(x + i));
    a1 = _mm512_add_pd(a1, _mm512_loadu_pd(x + i + 8));
    a2 = _mm512_add_pd(a2, _mm512_loadu_pd(x + i + 16));
    a3 = _mm512_add_pd(a3, _mm512_loadu_pd(x + i + 24));
  }
  for (; i + 8 <= n; i += 8) a0 = _mm512_add_pd(a0, _mm512_loadu_pd(x + i));
  if (i < n) a1 = _mm512_add_pd(a1, _mm512_maskz_loadu_pd(tail_mask8(n - i), x + i));
  return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
}

double sumsq_dev_f32(const float* x, int64_t n, double mean) {
  const __m512d m = _mm512_set1_pd(mean);
  __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  auto step = [&](__m512d& lo, __m512d& hi, __m512 v) {
    __m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), m);
    __m512d d1 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)), m);
    lo = _mm512_fmadd_pd(d0, d0, lo);
    hi = _mm512_fmadd_pd(d1, d1, hi);
  };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    step(a0, a1, _mm512_loadu_ps(x + i));
    step(a2, a3, _mm512_loadu_ps(x + i + 16));
  }
  for (; i + 16 <= n; i += 16) step(a0, a1, _mm512_loadu_ps(x + i));
  double s = _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
  for (; i < n; ++i) {
    double d = double(x[i]) - mean;
    s += d * d;
  }
  return s;
}

double sumsq_dev_f64(const double* x, int64_t n, double mean) {
  const __m512d m = _mm512_set1_pd(mean);
  __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  auto step = [&](__m512d& a, const double* p) {
    __m512d d = _mm512_sub_pd(_mm512_loadu_pd(p), m);
    a = _mm512_fmadd_pd(d, d, a);
  };
  for (; i + 32 <= n; i += 32) {
    step(a0, x + i);
    step(a1, x + i + 8);
    step(a2, x + i + 16);
    step(a3, x + i + 24);
  }
  for (; i + 8 <= n; i += 8) step(a0, x + i);
  double s = _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
  for (; i < n; ++i) {
    double d = x[i] - mean;
    s += d * d;
  }
  return s;
}

float max_f32(const float* x, int64_t n) { return extreme_f32<true>(x, n); }
float min_f32(const float* x, int64_t n) { return extreme_f32<false>(x, n); }

void add_row_f32(double* acc, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    _mm512_storeu_pd(acc + i, _mm512_add_pd(_mm512_loadu_pd(acc + i), _mm512_cvtps_pd(_mm512_castps512_ps256(v))));
    _mm512_storeu_pd(acc + i + 8,
                     _mm512_add_pd(_mm512_loadu_pd(acc + i + 8), _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1))));
  }
  for (; i < n; ++i) acc[i] += double(x[i]);
}

void add_row_f64(double* acc, const double* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm512_storeu_pd(acc + i, _mm512_add_pd(_mm512_loadu_pd(acc + i), _mm512_loadu_pd(x + i)));
  for (; i < n; ++i) acc[i] += x[i];
}

double sum_exp_f32(const float* x, int64_t n, float shift) {
  const __m512 s = _mm512_set1_ps(shift);
  __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc16(a0, a1, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), s)));
    acc16(a2, a3, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), s)));
  }
  for (; i + 16 <= n; i += 16) acc16(a0, a1, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), s)));
  if (i < n) {
    __mmask16 k = tail_mask16(n - i);
    acc16(a2, a3, _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), s))));
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
}

void exp_f32(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, exp16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 k = tail_mask16(n - i);
    _mm512_mask_storeu_ps(y + i, k, exp16(_mm512_maskz_loadu_ps(k, x + i)));
  }
}

void softmax_row_f32(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const __m512 m = _mm512_set1_ps(max_f32(x, n));
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512 e0 = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
    __m512 e1 = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), m));
    __m512 e2 = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 32), m));
    __m512 e3 = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 48), m));
    _mm512_storeu_ps(y + i, e0);
    _mm512_storeu_ps(y + i + 16, e1);
    _mm512_storeu_ps(y + i + 32, e2);
    _mm512_storeu_ps(y + i + 48, e3);
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
    s2 = _mm512_add_ps(s2, e2);
    s3 = _mm512_add_ps(s3, e3);
  }
  for (; i + 16 <= n; i += 16) {
    __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
    _mm512_storeu_ps(y + i, e);
    s0 = _mm512_add_ps(s0, e);
  }
  if (i < n) {
    __mmask16 k = tail_mask16(n - i);
    __m512 e = _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m)));
    _mm512_mask_storeu_ps(y + i, k, e);
    s1 = _mm512_add_ps(s1, e);
  }
  float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
  const __m512 inv = _mm512_set1_ps(1.0f / sum);
  i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), inv));
  if (i < n) {
    __mmask16 k = tail_mask16(n - i);
    _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + i), inv));
  }
}

void log_softmax_row_f32(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const float mx = max_f32(x, n);
  const __m512 m = _mm512_set1_ps(mx);
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    s0 = _mm512_add_ps(s0, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), m)));
    s1 = _mm512_add_ps(s1, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), m)));
    s2 = _mm512_add_ps(s2, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 32), m)));
    s3 = _mm512_add_ps(s3, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 48), m)));
  }
  for (; i + 16 <= n; i += 16) s0 = _mm512_add_ps(s0, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), m)));
  if (i < n) {
    __mmask16 k = tail_mask16(n - i);
    s1 = _mm512_add_ps(s1, _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m))));
  }
  float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
  const __m512 ls = _mm512_set1_ps(__builtin_logf(sum));
  i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), m), ls));
  if (i < n) {
    __mmask16 k = tail_mask16(n - i);
    _mm512_mask_storeu_ps(y + i, k, _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m), ls));
  }
}

void softmax_cols_f32(const float* x, float* y, int64_t D, int64_t I, int64_t w, bool log) {
  const __mmask16 k0 = tail_mask16(w < 16 ? w : 16), k1 = tail_mask16(w > 16 ? w - 16 : 0);
  __m512 m0 = _mm512_set1_ps(-__builtin_inff()), m1 = m0;
  __mmask16 n0 = 0, n1 = 0;
  for (int64_t d = 0; d < D; ++d) {
    const float* p = x + d * I;
    __m512 v0 = _mm512_maskz_loadu_ps(k0, p), v1 = _mm512_maskz_loadu_ps(k1, p + 16);
    m0 = _mm512_max_ps(m0, v0);
    m1 = _mm512_max_ps(m1, v1);
    n0 |= _mm512_cmp_ps_mask(v0, v0, _CMP_UNORD_Q);
    n1 |= _mm512_cmp_ps_mask(v1, v1, _CMP_UNORD_Q);
  }
  const __m512 qnan = _mm512_set1_ps(__builtin_nanf(""));
  m0 = _mm512_mask_mov_ps(m0, n0, qnan);
  m1 = _mm512_mask_mov_ps(m1, n1, qnan);
  __m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t d = 0; d < D; ++d) {
    const float* p = x + d * I;
    __m512 e0 = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k0, p), m0));
    __m512 e1 = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k1, p + 16), m1));
    if (!log) {
      _mm512_mask_storeu_ps(y + d * I, k0, e0);
      _mm512_mask_storeu_ps(y + d * I + 16, k1, e1);
    }
    acc16(s0, s1, e0);
    acc16(s2, s3, e1);
  }
  auto join = [](__m512d a, __m512d b) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(a)), _mm512_cvtpd_ps(b), 1);
  };
  if (!log) {
    const __m512d one = _mm512_set1_pd(1.0);
    const __m512 i0 = join(_mm512_div_pd(one, s0), _mm512_div_pd(one, s1));
    const __m512 i1 = join(_mm512_div_pd(one, s2), _mm512_div_pd(one, s3));
    for (int64_t d = 0; d < D; ++d) {
      float* q = y + d * I;
      _mm512_mask_storeu_ps(q, k0, _mm512_mul_ps(_mm512_maskz_loadu_ps(k0, q), i0));
      _mm512_mask_storeu_ps(q + 16, k1, _mm512_mul_ps(_mm512_maskz_loadu_ps(k1, q + 16), i1));
    }
    return;
  }
  double sums[32];
  float logs[32];
  _mm512_storeu_pd(sums, s0);
  _mm512_storeu_pd(sums + 8, s1);
  _mm512_storeu_pd(sums + 16, s2);
  _mm512_storeu_pd(sums + 24, s3);
  for (int j = 0; j < 32; ++j) logs[j] = float(__builtin_log(sums[j]));
  const __m512 l0 = _mm512_loadu_ps(logs), l1 = _mm512_loadu_ps(logs + 16);
  for (int64_t d = 0; d < D; ++d) {
    const float* p = x + d * I;
    float* q = y + d * I;
    _mm512_mask_storeu_ps(q, k0, _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k0, p), m0), l0));
    _mm512_mask_storeu_ps(q + 16, k1, _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k1, p + 16), m1), l1));
  }
}

void pack_keys_f32(const float* x, int64_t n, uint32_t flip, uint64_t* out) {
  const __m512i sign = _mm512_set1_epi32(int(0x80000000u)), fl = _mm512_set1_epi32(int(flip));
  const __m512i qnan = _mm512_set1_epi32(0x7fc00000);
  __m512i idx = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i eight = _mm512_set1_epi64(8);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xffff) : tail_mask16(n - i);
    __m512 v = _mm512_maskz_loadu_ps(k, x + i);
    __m512i b = _mm512_castps_si512(v);
    b = _mm512_mask_mov_epi32(b, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), qnan);
    b = _mm512_maskz_mov_epi32(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NEQ_UQ), b);
    __m512i key = _mm512_xor_si512(b, _mm512_or_si512(_mm512_srai_epi32(b, 31), sign));
    key = _mm512_xor_si512(key, fl);
    __m512i lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(key));
    __m512i hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(key, 1));
    __m512i p0 = _mm512_or_si512(_mm512_slli_epi64(lo, 32), idx);
    idx = _mm512_add_epi64(idx, eight);
    __m512i p1 = _mm512_or_si512(_mm512_slli_epi64(hi, 32), idx);
    idx = _mm512_add_epi64(idx, eight);
    const __mmask8 k0 = __mmask8(k & 0xff), k1 = __mmask8(k >> 8);
    _mm512_mask_storeu_epi64(out + i, k0, p0);
    _mm512_mask_storeu_epi64(out + i + 8, k1, p1);
  }
}

int64_t count_ge_u64(const uint64_t* x, int64_t n, uint64_t thr) {
  const __m512i t = _mm512_set1_epi64(int64_t(thr));
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __mmask8 m0 = _mm512_cmplt_epu64_mask(_mm512_loadu_si512(x + i), t);
    __mmask8 m1 = _mm512_cmplt_epu64_mask(_mm512_loadu_si512(x + i + 8), t);
    __mmask8 m2 = _mm512_cmplt_epu64_mask(_mm512_loadu_si512(x + i + 16), t);
    __mmask8 m3 = _mm512_cmplt_epu64_mask(_mm512_loadu_si512(x + i + 24), t);
    if (m0 | m1 | m2 | m3) break;
  }
  while (i < n && x[i] >= thr) ++i;
  return i;
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
  if (i < n) {
    __mmask16 k = tail_mask16(n - i);
    _mm512_mask_storeu_ps(y + i, k, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, x + i)));
  }
}

void bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  auto cvt = [](__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); };
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, cvt(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
  if (i < n) {
    __mmask16 k = tail_mask16(n - i);
    _mm512_mask_storeu_ps(y + i, k, cvt(_mm256_maskz_loadu_epi16(k, x + i)));
  }
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  if (i < n) {
    __mmask16 k = tail_mask16(n - i);
    _mm256_mask_storeu_epi16(y + i, k,
                             _mm512_cvtps_ph(_mm512_maskz_loadu_ps(k, x + i),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}

void f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  // round to nearest even on the upper 16 bits; NaN keeps its sign and becomes quiet
  auto cvt = [](__m512 v) {
    __m512i b = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    __m512i q = _mm512_or_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(r, nan, q));
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), cvt(_mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 k = tail_mask16(n - i);
    _mm256_mask_storeu_epi16(y + i, k, cvt(_mm512_maskz_loadu_ps(k, x + i)));
  }
}

}  // namespace ember::cpu::rsimd
