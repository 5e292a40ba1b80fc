// The B-panel packer of conv_integer's VNNI path (conv_integer.hpp): four im2col rows at a time
// interleaved by bytes into qgemm_kernel_vnni's layout (each column's 4 values along K side by
// side), the column sums by vpdpbusd against ones. Compiled with -mavx512vnni; reached only after
// cpu::features().avx512vnni.
#include <immintrin.h>

#include "conv_integer.hpp"
#include "qgemm.hpp"

namespace ember::cpu::detail {

void conv_integer_pack_columns_vnni(const uint8_t* b, int64_t ldb, int64_t K, int64_t j0, int n, bool b_signed,
                                    int8_t* dst, int32_t* colsum) {
  static_assert(kVnniNR == 32);
  const __mmask32 mask = n >= 32 ? ~__mmask32(0) : (__mmask32(1) << n) - 1;
  const __m256i flip = _mm256_maskz_mov_epi8(mask, _mm256_set1_epi8(b_signed ? 0 : char(0x80)));
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
  const int64_t KG = (K + 3) / 4;
  for (int64_t g = 0; g < KG; ++g) {
    __m256i r[4];
    for (int t = 0; t < 4; ++t) {
      const int64_t k = g * 4 + t;
      r[t] = k < K ? _mm256_xor_si256(_mm256_maskz_loadu_epi8(mask, b + k * ldb + j0), flip) : _mm256_setzero_si256();
    }
    // per 128-bit lane: bytes of rows 0/1 and 2/3 paired, then the pairs paired: quads of columns
    // [0-3 | 16-19], [4-7 | 20-23], [8-11 | 24-27], [12-15 | 28-31]
    const __m256i lo01 = _mm256_unpacklo_epi8(r[0], r[1]), hi01 = _mm256_unpackhi_epi8(r[0], r[1]);
    const __m256i lo23 = _mm256_unpacklo_epi8(r[2], r[3]), hi23 = _mm256_unpackhi_epi8(r[2], r[3]);
    const __m256i x0 = _mm256_unpacklo_epi16(lo01, lo23), x1 = _mm256_unpackhi_epi16(lo01, lo23);
    const __m256i x2 = _mm256_unpacklo_epi16(hi01, hi23), x3 = _mm256_unpackhi_epi16(hi01, hi23);
    const __m512i c0 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(x0, x1, 0x20)),
                                          _mm256_permute2x128_si256(x2, x3, 0x20), 1);  // columns 0-15
    const __m512i c1 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(x0, x1, 0x31)),
                                          _mm256_permute2x128_si256(x2, x3, 0x31), 1);  // columns 16-31
    _mm512_storeu_si512(dst + g * 128, c0);
    _mm512_storeu_si512(dst + g * 128 + 64, c1);
    s0 = _mm512_dpbusd_epi32(s0, ones, c0);
    s1 = _mm512_dpbusd_epi32(s1, ones, c1);
  }
  _mm512_storeu_si512(colsum, s0);
  _mm512_storeu_si512(colsum + 16, s1);
}

}  // namespace ember::cpu::detail
