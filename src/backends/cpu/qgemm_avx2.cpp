// AVX2 kernels of the quantized products (qgemm.hpp): the 6 x 16 i16 x i16 -> i32 micro-kernel of
// qgemm_u8i8 (vpmaddwd on operands already minus their zero points, which fit i16: no
// saturation, unlike vpmaddubsw), and the GEMV rows of matmul_wq (x in f32, or rounded to int8). Compiled with -mavx2 -mfma;
// reached only after cpu::features().avx2.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "qgemm.hpp"

namespace ember::cpu::detail {

void qgemm_kernel_avx2(int64_t pairs, const int16_t* ap, const int16_t* bp, int32_t* c, int64_t ldc, int m, int n,
                       bool accumulate) {
  static_assert(kAvx2MR == 6 && kAvx2NR == 16);
  __m256i acc[kAvx2MR][2];
  for (auto& r : acc) r[0] = r[1] = _mm256_setzero_si256();
  for (int64_t p = 0; p < pairs; ++p) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + p * 32));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + p * 32 + 16));
    const int16_t* a = ap + p * 2 * kAvx2MR;
    for (int r = 0; r < kAvx2MR; ++r) {
      int32_t two;
      std::memcpy(&two, a + 2 * r, 4);
      const __m256i av = _mm256_set1_epi32(two);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
    }
  }
  for (int r = 0; r < m; ++r) {
    int32_t* cr = c + r * ldc;
    if (n == kAvx2NR) {
      __m256i v0 = acc[r][0], v1 = acc[r][1];
      if (accumulate) {
        v0 = _mm256_add_epi32(v0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cr)));
        v1 = _mm256_add_epi32(v1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cr + 8)));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(cr), v0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(cr + 8), v1);
      continue;
    }
    alignas(32) int32_t t[kAvx2NR];
    _mm256_store_si256(reinterpret_cast<__m256i*>(t), acc[r][0]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(t + 8), acc[r][1]);
    for (int j = 0; j < n; ++j) cr[j] = int32_t(uint32_t(t[j]) + (accumulate ? uint32_t(cr[j]) : 0u));
  }
}

namespace {

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// M rows of x (template, so the accumulators stay in registers).
template <int M>
void gemv_rows(const QuantWeight& w, const float* xp, const float* xsum, int64_t n0, int64_t n1, float* y,
               int64_t ldy) {
  const int64_t K = w.K, nb = K / w.block;
  const bool sym4 = w.bits == 4 && !w.zp;
  const __m256i low = _mm256_set1_epi32(0xF);
  for (int64_t n = n0; n < n1; ++n) {
    __m256 acc[M];
    float corr[M];
    for (int j = 0; j < M; ++j) acc[j] = _mm256_setzero_ps(), corr[j] = 0;
    const float* sc = w.scales + n * nb;
    for (int64_t b = 0; b < nb; ++b) {
      __m256 blk[M];
      for (int j = 0; j < M; ++j) blk[j] = _mm256_setzero_ps();
      const int64_t k0 = b * w.block;
      if (w.bits == 4) {
        const uint8_t* row = w.data + n * (K / 2);
        for (int64_t k = k0; k < k0 + w.block; k += 16) {
          // 8 bytes: weights k + 2i (low nibbles) and k + 2i + 1 (high); x reordered per 32
          int64_t eight;
          std::memcpy(&eight, row + k / 2, 8);
          if (sym4) eight ^= int64_t(0x8888888888888888ull);  // two's complement nibble q -> q + 8
          const __m256i v = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(eight));
          const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(v, low));
          const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
          const int64_t base = (k & ~int64_t(31)) + ((k & 31) >> 1);  // even half of this 32, then odd
          for (int j = 0; j < M; ++j) {
            const float* xj = xp + j * K + base;
            blk[j] = _mm256_fmadd_ps(lo, _mm256_loadu_ps(xj), blk[j]);
            blk[j] = _mm256_fmadd_ps(hi, _mm256_loadu_ps(xj + 16), blk[j]);
          }
        }
      } else {
        const uint8_t* row = w.data + n * K;
        for (int64_t k = k0; k < k0 + w.block; k += 8) {
          const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + k));
          const __m256 q = _mm256_cvtepi32_ps(w.zp ? _mm256_cvtepu8_epi32(bytes) : _mm256_cvtepi8_epi32(bytes));
          for (int j = 0; j < M; ++j) blk[j] = _mm256_fmadd_ps(q, _mm256_loadu_ps(xp + j * K + k), blk[j]);
        }
      }
      const float s = sc[b];
      const float z = w.zp ? float(w.zp[n * nb + b]) : sym4 ? 8.f : 0.f;
      const __m256 sv = _mm256_set1_ps(s);
      for (int j = 0; j < M; ++j) {
        acc[j] = _mm256_fmadd_ps(sv, blk[j], acc[j]);
        corr[j] += s * z * xsum[j * nb + b];
      }
    }
    for (int j = 0; j < M; ++j) y[j * ldy + n] = hsum(acc[j]) - corr[j];
  }
}

// The GEMV rows with x rounded to int8 (quantize_x): vpmaddubsw on unsigned weights (nibbles
// made unsigned: q + 8 / the stored nibble) and xq, 32 weights a step; 8-bit weights as
// |v| times xq with v's sign (v = q, or q - 128 with a zero point) so that no i16 pair sum
// saturates (at most 2 * 128 * 127). Each 32's integer sum is scaled by its block's scale times
// x's scale; the zero point's share, zc * sum(xq), is taken off per 32 in the scalar `corr`.
template <int M, bool Four, bool Affine>
void q8_rows(const QuantWeight& w, const int8_t* xq, const int32_t* xqsum, const float* sx, int64_t n0, int64_t n1,
             float* y, int64_t ldy) {
  const int64_t K = w.K, nb = K / w.block, nx = K / 32;
  const __m256i ones = _mm256_set1_epi16(1);
  const __m128i low = _mm_set1_epi8(0x0F);
  for (int64_t n = n0; n < n1; ++n) {
    __m256 acc[M];
    float corr[M];
    for (int j = 0; j < M; ++j) acc[j] = _mm256_setzero_ps(), corr[j] = 0;
    for (int64_t xb = 0; xb < nx; ++xb) {
      const int64_t k = xb * 32, b = k / w.block;
      const float sw = w.scales[n * nb + b];
      float zc = 0;
      __m256i wv, sv;  // unsigned weights and, for 8-bit, the sign they take from v
      if constexpr (Four) {
        __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.data + n * (K / 2) + k / 2));
        if constexpr (!Affine) bytes = _mm_xor_si128(bytes, _mm_set1_epi8(char(0x88)));
        const __m128i lo = _mm_and_si128(bytes, low), hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low);
        wv = _mm256_set_m128i(hi, lo);  // even weights, then odd ones (x is laid out alike)
        zc = Affine ? float(w.zp[n * nb + b]) : 8.f;
      } else {
        __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.data + n * K + k));
        if constexpr (Affine) v = _mm256_xor_si256(v, _mm256_set1_epi8(char(0x80)));  // q - 128
        wv = _mm256_abs_epi8(v);
        sv = v;
        zc = Affine ? float(int(w.zp[n * nb + b]) - 128) : 0.f;
      }
      for (int j = 0; j < M; ++j) {
        __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + j * K + k));
        if constexpr (!Four) xv = _mm256_sign_epi8(xv, sv);
        const __m256i isum = _mm256_madd_epi16(_mm256_maddubs_epi16(wv, xv), ones);
        const float scale = sw * sx[j * nx + xb];
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(scale), acc[j]);
        corr[j] += scale * zc * float(xqsum[j * nx + xb]);
      }
    }
    for (int j = 0; j < M; ++j) y[j * ldy + n] = hsum(acc[j]) - corr[j];
  }
}

}  // namespace

void wq_gemv_q8_avx2(const QuantWeight& w, int m, const int8_t* xq, const int32_t* xqsum, const float* sx, int64_t n0,
                     int64_t n1, float* y, int64_t ldy) {
  gemv_dispatch(w, m, [&](auto M, auto four, auto affine) {
    q8_rows<decltype(M)::value, decltype(four)::value, decltype(affine)::value>(w, xq, xqsum, sx, n0, n1, y, ldy);
  });
}

void wq_gemv_avx2(const QuantWeight& w, int m, const float* xp, const float* xsum, int64_t n0, int64_t n1, float* y,
                  int64_t ldy) {
  gemv_dispatch(w, m, [&](auto M, auto, auto) { gemv_rows<decltype(M)::value>(w, xp, xsum, n0, n1, y, ldy); });
}

}  // namespace ember::cpu::detail
