// Philox-4x32-10 for 16 counters at once with AVX-512 (see random.hpp); only called when
// cpu::features().avx512. Produces exactly the words of the scalar philox4x32_10.
// Deliberately includes no project header: inline functions from shared headers must not be
// instantiated here with AVX-512 code generation (the linker could pick this copy).
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsic headers as
// maybe-uninitialized; the warning is spurious here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ember::cpu::detail {

void philox_blocks_avx512(uint64_t key, uint64_t counter0, int64_t nb, uint32_t* words);

namespace {

// (hi, lo) 32-bit halves of the 16 products m * x
inline void mulhilo(__m512i x, __m512i m, __m512i& hi, __m512i& lo) {
  __m512i pe = _mm512_mul_epu32(x, m);                          // even lanes, 64-bit products
  __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), m);   // odd lanes
  hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 32), po);
  lo = _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32));
}

// 16 blocks (counter0 .. counter0 + 15), interleaved as 4 words per block into out[64].
inline void philox16(uint64_t key, uint64_t counter0, uint32_t* out) {
  const __m512i m0 = _mm512_set1_epi32(int32_t(0xD2511F53u)), m1 = _mm512_set1_epi32(int32_t(0xCD9E8D57u));
  // 64-bit counters counter0 + l as 32-bit halves: low = base_lo + l, high += carry
  const __m512i base_lo = _mm512_set1_epi32(int32_t(uint32_t(counter0)));
  __m512i x0 = _mm512_add_epi32(base_lo, _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
  __mmask16 carry = _mm512_cmplt_epu32_mask(x0, base_lo);
  __m512i x1 = _mm512_set1_epi32(int32_t(uint32_t(counter0 >> 32)));
  x1 = _mm512_mask_add_epi32(x1, carry, x1, _mm512_set1_epi32(1));
  __m512i x2 = _mm512_setzero_si512(), x3 = _mm512_setzero_si512();
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int r = 0; r < 10; ++r) {
    __m512i hi0, lo0, hi1, lo1;
    mulhilo(x0, m0, hi0, lo0);
    mulhilo(x2, m1, hi1, lo1);
    x0 = _mm512_xor_si512(_mm512_xor_si512(hi1, x1), _mm512_set1_epi32(int32_t(k0)));
    x1 = lo1;
    x2 = _mm512_xor_si512(_mm512_xor_si512(hi0, x3), _mm512_set1_epi32(int32_t(k1)));
    x3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  // transpose to 4 words per block: u_j holds, in 128-bit lane k, the words of block 4k + j
  __m512i t0 = _mm512_unpacklo_epi32(x0, x1), t1 = _mm512_unpackhi_epi32(x0, x1);
  __m512i t2 = _mm512_unpacklo_epi32(x2, x3), t3 = _mm512_unpackhi_epi32(x2, x3);
  __m512i u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
  __m512i u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
  // 4x4 transpose of the 128-bit lanes
  __m512i a0 = _mm512_shuffle_i32x4(u0, u1, _MM_SHUFFLE(1, 0, 1, 0));
  __m512i a1 = _mm512_shuffle_i32x4(u2, u3, _MM_SHUFFLE(1, 0, 1, 0));
  __m512i a2 = _mm512_shuffle_i32x4(u0, u1, _MM_SHUFFLE(3, 2, 3, 2));
  __m512i a3 = _mm512_shuffle_i32x4(u2, u3, _MM_SHUFFLE(3, 2, 3, 2));
  _mm512_storeu_si512(out, _mm512_shuffle_i32x4(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)));
  _mm512_storeu_si512(out + 16, _mm512_shuffle_i32x4(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)));
  _mm512_storeu_si512(out + 32, _mm512_shuffle_i32x4(a2, a3, _MM_SHUFFLE(2, 0, 2, 0)));
  _mm512_storeu_si512(out + 48, _mm512_shuffle_i32x4(a2, a3, _MM_SHUFFLE(3, 1, 3, 1)));
}

}  // namespace

void philox_blocks_avx512(uint64_t key, uint64_t counter0, int64_t nb, uint32_t* words) {
  int64_t b = 0;
  for (; b + 16 <= nb; b += 16) philox16(key, counter0 + uint64_t(b), words + 4 * b);
  if (b < nb) {
    alignas(64) uint32_t tmp[64];
    philox16(key, counter0 + uint64_t(b), tmp);
    std::memcpy(words + 4 * b, tmp, size_t(nb - b) * 4 * sizeof(uint32_t));
  }
}

}  // namespace ember::cpu::detail
