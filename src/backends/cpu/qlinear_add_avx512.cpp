// qlinear_add's element loop on AVX-512 (qlinear_add.hpp): 16 bytes widened to f32, the same
// steps as the portable loop, each its own rounding (no contraction into a fused multiply-add:
// the result must be what the separate ops give), rounded half to even, saturated, narrowed.
#include <immintrin.h>

#include "qlinear_add.hpp"

namespace ember::cpu::detail {

namespace {

__attribute__((optimize("fp-contract=off"))) inline __m512 element(__m512 a, __m512 b, const QAddParams& p) {
  const __m512 ra = _mm512_mul_ps(_mm512_sub_ps(a, _mm512_set1_ps(p.za)), _mm512_set1_ps(p.sa));
  const __m512 rb = _mm512_mul_ps(_mm512_sub_ps(b, _mm512_set1_ps(p.zb)), _mm512_set1_ps(p.sb));
  const __m512 q = _mm512_roundscale_ps(_mm512_div_ps(_mm512_add_ps(ra, rb), _mm512_set1_ps(p.sc)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 y = _mm512_add_ps(q, _mm512_set1_ps(p.zc));
  return _mm512_min_ps(_mm512_max_ps(y, _mm512_set1_ps(p.lo)), _mm512_set1_ps(p.hi));
}

template <bool kSigned>
__attribute__((optimize("fp-contract=off"))) void run(const uint8_t* a, const uint8_t* b, uint8_t* c, int64_t n,
                                                      const QAddParams& p) {
  auto widen = [](__m128i v) {
    return _mm512_cvtepi32_ps(kSigned ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v));
  };
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 y = element(widen(_mm_maskz_loadu_epi8(k, a + i)), widen(_mm_maskz_loadu_epi8(k, b + i)), p);
    _mm_mask_storeu_epi8(c + i, k, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(y)));  // integral, in range
  }
}

}  // namespace

void qlinear_add_avx512(bool is_signed, const void* a, const void* b, void* c, int64_t n, const QAddParams& p) {
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  auto* pc = static_cast<uint8_t*>(c);
  if (is_signed) return run<true>(pa, pb, pc, n, p);
  run<false>(pa, pb, pc, n, p);
}

}  // namespace ember::cpu::detail
