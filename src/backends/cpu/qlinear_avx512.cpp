// The AVX-512 epilogue of the int8 products (qlinear.hpp's requant_tile): 16 sums a step,
// corrected, converted, scaled, rounded (vcvtps2dq: round half to even) and saturated (clamped in
// f32 first, exact since the bounds are integers), then stored as i32, f32 or bytes; and the depthwise int8 kernel's taps. Compiled with
// -mavx512f/bw/dq/vl; reached only after cpu::features().avx512.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <vector>

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

namespace {

// The taps over the pair plane: kh rows of kp pairs (KH_, KP_: the same fixed at compile time, 0:
// at run time), 16 outputs of a row at a time.
template <int KH_, int KP_>
void pairs_taps(const int32_t* pairs, int64_t PW, int64_t OH, int64_t OW, int64_t kh_n, int64_t kp_n, int64_t sh,
                int64_t dh, const int32_t* wp, int32_t* acc) {
  const int64_t KH = KH_ ? KH_ : kh_n, kp = KP_ ? KP_ : kp_n;
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ow += 16) {
      const __mmask16 k = __mmask16((1u << std::min<int64_t>(16, OW - ow)) - 1);
      __m512i a = _mm512_setzero_si512();
      for (int64_t kh = 0; kh < KH; ++kh) {
        const int32_t* row = pairs + (oh * sh + kh * dh) * PW + ow;
        for (int64_t j = 0; j < kp; ++j)
          a = _mm512_add_epi32(a, _mm512_madd_epi16(_mm512_maskz_loadu_epi32(k, row + 2 * j),
                                                    _mm512_set1_epi32(wp[kh * kp + j])));
      }
      _mm512_mask_storeu_epi32(acc + oh * OW + ow, k, a);
    }
}

// Stride 1, dilation 1 along the width: the plane's neighbours paired, pairs[c] = (plane[c],
// plane[c + 1]) as two i16 in an i32, so that one vpmaddwd takes two horizontal taps of 16
// outputs (weights (w[kw], w[kw + 1]); an odd last tap with 0).
void depthwise_plane_pairs(const int16_t* plane, int64_t PW, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                           int64_t sh, int64_t dh, const int32_t* wv, int32_t* acc) {
  const int64_t PH = (OH - 1) * sh + (KH - 1) * dh + 1;
  thread_local std::vector<int32_t> pairs;
  pairs.resize(size_t(PH * PW + 16));
  for (int64_t r = 0; r < PH; ++r) {
    const int16_t* row = plane + r * PW;
    int32_t* dst = pairs.data() + r * PW;
    for (int64_t c = 0; c < PW; c += 16) {
      const int64_t cnt = std::min<int64_t>(16, PW - c), nxt = std::min<int64_t>(16, PW - c - 1);
      const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(__mmask16((1u << cnt) - 1), row + c));
      const __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(__mmask16((1u << nxt) - 1), row + c + 1));
      _mm512_mask_storeu_epi32(dst + c, __mmask16((1u << cnt) - 1), _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
  }
  int32_t wp[64];
  const int64_t kp = (KW + 1) / 2;
  for (int64_t kh = 0; kh < KH; ++kh)
    for (int64_t j = 0; j < kp; ++j) {
      const int32_t w0 = wv[kh * KW + 2 * j], w1 = 2 * j + 1 < KW ? wv[kh * KW + 2 * j + 1] : 0;
      wp[kh * kp + j] = int32_t(uint32_t(uint16_t(int16_t(w0))) | (uint32_t(uint16_t(int16_t(w1))) << 16));
    }
  if (KH == 3 && kp == 2) return pairs_taps<3, 2>(pairs.data(), PW, OH, OW, KH, kp, sh, dh, wp, acc);
  pairs_taps<0, 0>(pairs.data(), PW, OH, OW, KH, kp, sh, dh, wp, acc);
}

}  // namespace

void depthwise_plane_avx512(const int16_t* plane, int64_t PW, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                            int64_t sh, int64_t sw, int64_t dh, int64_t dw, const int32_t* wv, int32_t* acc) {
  // the weights minus their zero point fit i16 (|w - zp| <= 255), so do x minus its zero point
  if (sw == 1 && dw == 1 && KH * ((KW + 1) / 2) <= 64)
    return depthwise_plane_pairs(plane, PW, OH, OW, KH, KW, sh, dh, wv, acc);
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
