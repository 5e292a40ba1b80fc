// The AVX-512 epilogue of the int8 products (qlinear.hpp's requant_tile): 16 sums a step,
// corrected, converted, scaled, rounded (vcvtps2dq: round half to even) and saturated (clamped in
// f32 first, exact since the bounds are integers), then stored as i32, f32 or bytes; and the depthwise int8 kernel's taps. Compiled with
// -mavx512f/bw/dq/vl; reached only after cpu::features().avx512.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>

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

void depthwise_plane_avx512(const int16_t* plane, int64_t PW, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                            int64_t sh, int64_t sw, int64_t dh, int64_t dw, const int32_t* wv, int32_t* acc) {
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ow += 16) {
      const int64_t cnt = std::min<int64_t>(16, OW - ow);
      const __mmask16 k = __mmask16((1u << cnt) - 1);
      // stride 2: 32 i16 read as 16 i32, the even ones (the low halves) sign-extended; the last
      // odd one is not read (it may lie past the plane)
      const __mmask32 k2 = __mmask32((uint64_t(1) << (2 * cnt - 1)) - 1);
      __m512i a = _mm512_setzero_si512();
      for (int64_t kh = 0; kh < KH; ++kh) {
        const int16_t* row = plane + (oh * sh + kh * dh) * PW + ow * sw;
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int16_t* src = row + kw * dw;
          __m512i x;
          if (sw == 1) {
            x = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(k, src));
          } else {
            x = _mm512_srai_epi32(_mm512_slli_epi32(_mm512_maskz_loadu_epi16(k2, src), 16), 16);
          }
          a = _mm512_add_epi32(a, _mm512_mullo_epi32(x, _mm512_set1_epi32(wv[kh * KW + kw])));
        }
      }
      _mm512_mask_storeu_epi32(acc + oh * OW + ow, k, a);
    }
}

}  // namespace ember::cpu::detail
