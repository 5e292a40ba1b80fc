// The AVX-512 epilogue of the int8 products (qlinear.hpp's requant_tile): 16 sums a step,
// corrected, converted, scaled, rounded (vcvtps2dq: round half to even) and saturated (clamped in
// f32 first, exact since the bounds are integers), then stored as i32, f32 or bytes. Compiled with
// -mavx512f/bw/dq/vl; reached only after cpu::features().avx512.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "qlinear.hpp"

namespace ember::cpu::detail {

void requant_tile_avx512(const Requant& e, const int32_t* t, int64_t ldt, int64_t i0, int64_t j0, int64_t m,
                         int64_t n, void* y, int64_t ldy) {
  const bool bytes = e.out == Requant::U8 || e.out == Requant::I8;
  const float qlo = e.out == Requant::U8 ? 0.f : -128.f, qhi = e.out == Requant::U8 ? 255.f : 127.f;
  const __m512 lo = _mm512_set1_ps(bytes ? qlo - float(e.zp) : e.lo);
  const __m512 hi = _mm512_set1_ps(bytes ? qhi - float(e.zp) : e.hi);
  const __m512i zp = _mm512_set1_epi32(e.zp);
  for (int64_t ii = 0; ii < m; ++ii) {
    const int64_t i = i0 + ii;
    const __m512i ri = _mm512_set1_epi32(e.r ? e.r[i] : 0), pi = _mm512_set1_epi32(e.p ? e.p[i] : 0);
    const __m512 mrow = _mm512_set1_ps(e.per_row && e.mult ? e.mult[i] : 0.f);
    const __m512 brow = _mm512_set1_ps(e.per_row && e.bias ? e.bias[i] : 0.f);
    const int32_t* ti = t + ii * ldt;
    for (int64_t jj = 0; jj < n; jj += 16) {
      const __mmask16 k = n - jj >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - jj)) - 1);
      const int64_t j = j0 + jj, at = ii * ldy + jj;
      __m512i v = _mm512_add_epi32(_mm512_maskz_loadu_epi32(k, ti + jj), ri);
      if (e.c) v = _mm512_add_epi32(v, _mm512_maskz_loadu_epi32(k, e.c + j));
      if (e.q && e.p) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(pi, _mm512_maskz_loadu_epi32(k, e.q + j)));
      if (e.out == Requant::I32) {
        _mm512_mask_storeu_epi32(static_cast<int32_t*>(y) + at, k, v);
        continue;
      }
      const __m512 mv = e.per_row ? mrow : _mm512_maskz_loadu_ps(k, e.mult + j);
      const __m512 f = _mm512_cvtepi32_ps(v);
      if (e.out == Requant::F32) {
        const __m512 bv = e.per_row || !e.bias ? brow : _mm512_maskz_loadu_ps(k, e.bias + j);
        const __m512 r = _mm512_min_ps(_mm512_max_ps(_mm512_fmadd_ps(mv, f, bv), lo), hi);
        _mm512_mask_storeu_ps(static_cast<float*>(y) + at, k, r);
        continue;
      }
      const __m512 s = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(f, mv), lo), hi);
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(s), zp);
      _mm512_mask_cvtepi32_storeu_epi8(static_cast<uint8_t*>(y) + at, k, q);
    }
  }
}

void depthwise_row_avx512(int32_t* acc, const int16_t* src, int64_t n, int32_t w) {
  const __m512i wv = _mm512_set1_epi32(w);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512i x = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(k, src + i));
    const __m512i a = _mm512_maskz_loadu_epi32(k, acc + i);
    _mm512_mask_storeu_epi32(acc + i, k, _mm512_add_epi32(a, _mm512_mullo_epi32(x, wv)));
  }
}

}  // namespace ember::cpu::detail
