// The AVX-512 VNNI micro-kernel of qgemm_u8i8 (qgemm.hpp): an 8 x 32 tile of i32 sums, one
// vpdpbusd (64 u8 x i8 products summed by fours into 16 lanes) per row and 16 columns per group
// of 4 along K. Compiled with -mavx512vnni; reached only after cpu::features().avx512vnni.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "qgemm.hpp"

namespace ember::cpu::detail {

void qgemm_kernel_vnni(int64_t groups, const uint8_t* ap, const int8_t* bp, int32_t* c, int64_t ldc, int m, int n,
                       bool accumulate) {
  static_assert(kVnniMR == 8 && kVnniNR == 32);
  __m512i acc[kVnniMR][2];
  for (auto& r : acc) r[0] = r[1] = _mm512_setzero_si512();
  for (int64_t g = 0; g < groups; ++g) {
    const __m512i b0 = _mm512_loadu_si512(bp + g * 128);
    const __m512i b1 = _mm512_loadu_si512(bp + g * 128 + 64);
    const uint8_t* a = ap + g * 32;
    for (int r = 0; r < kVnniMR; ++r) {
      int32_t four;
      std::memcpy(&four, a + 4 * r, 4);
      const __m512i av = _mm512_set1_epi32(four);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
    }
  }
  const __mmask16 m0 = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
  const __mmask16 m1 = n >= 32 ? __mmask16(0xFFFF) : n > 16 ? __mmask16((1u << (n - 16)) - 1) : __mmask16(0);
  for (int r = 0; r < m; ++r) {
    int32_t* cr = c + r * ldc;
    __m512i v0 = acc[r][0], v1 = acc[r][1];
    if (accumulate) {
      v0 = _mm512_add_epi32(v0, _mm512_maskz_loadu_epi32(m0, cr));
      v1 = _mm512_add_epi32(v1, _mm512_maskz_loadu_epi32(m1, cr + 16));
    }
    _mm512_mask_storeu_epi32(cr, m0, v0);
    _mm512_mask_storeu_epi32(cr + 16, m1, v1);
  }
}

}  // namespace ember::cpu::detail
