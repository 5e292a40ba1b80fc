// AVX-512 kernels for pool.cpp. Compiled with -mavx512f/bw/dq/vl; pool.cpp calls them only
// after checking cpu::features().avx512. No standard library templates are used here, so no
// AVX-512 code can leak into other translation units through COMDAT folding.
#include <immintrin.h>

#include <cstdint>

namespace ember::cpu::detail {

namespace {

// Lanes [0, n) of a 16-lane mask (n is clamped to [0, 16]).
inline __mmask16 first_lanes(int64_t n) {
  if (n <= 0) return 0;
  if (n >= 16) return 0xFFFF;
  return static_cast<__mmask16>((1u << n) - 1u);
}

// row + i without forming an out-of-range pointer in C++ terms (masked lanes are not read).
inline const float* at(const float* row, int64_t i) {
  return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(row) + static_cast<uintptr_t>(i * 4));
}

}  // namespace

namespace {

// The kernel below for one kind of output: with Idx the argmax positions too, else the values alone
// (no position is tracked).
template <bool Idx>
inline void max_pool_2x2_rows(const float* x, float* y, int64_t* idx, int64_t IH, int64_t IW, int64_t OH, int64_t OW,
                              int64_t r0, int64_t r1) {
  // even: lane j picks element 2j (also output j's column offset in the row); odd: 2j + 1.
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i one = _mm512_set1_epi32(1), down = _mm512_set1_epi32(static_cast<int32_t>(IW));
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t p = r / OH, oh = r % OH;
    const float* row0 = x + p * IH * IW + 2 * oh * IW;
    const float* row1 = row0 + IW;
    float* yr = y + r * OW;
    for (int64_t o = 0; o < OW; o += 16) {
      const int64_t m = OW - o < 16 ? OW - o : 16;
      const __mmask16 lo = first_lanes(2 * m), hi = first_lanes(2 * m - 16);
      const float* q0 = at(row0, 2 * o);
      const float* q1 = at(row1, 2 * o);
      const __m512 a0 = _mm512_maskz_loadu_ps(lo, q0), b0 = _mm512_maskz_loadu_ps(hi, at(q0, 16));
      const __m512 a1 = _mm512_maskz_loadu_ps(lo, q1), b1 = _mm512_maskz_loadu_ps(hi, at(q1, 16));
      __m512 best = _mm512_permutex2var_ps(a0, even, b0);
      __m512i bi = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(2 * oh * IW + 2 * o)), even);
      auto tap = [&](__m512 v, [[maybe_unused]] __m512i pos) {
        const __mmask16 take = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        best = _mm512_mask_mov_ps(best, take, v);
        if constexpr (Idx) bi = _mm512_mask_mov_epi32(bi, take, pos);
      };
      const __m512i i00 = bi;
      tap(_mm512_permutex2var_ps(a0, odd, b0), _mm512_add_epi32(i00, one));
      tap(_mm512_permutex2var_ps(a1, even, b1), _mm512_add_epi32(i00, down));
      tap(_mm512_permutex2var_ps(a1, odd, b1), _mm512_add_epi32(_mm512_add_epi32(i00, down), one));
      const __mmask16 out = first_lanes(m);
      _mm512_mask_storeu_ps(yr + o, out, best);
      if constexpr (Idx) {
        int64_t* ir = idx + r * OW;
        _mm512_mask_storeu_epi64(ir + o, static_cast<__mmask8>(out), _mm512_cvtepi32_epi64(_mm512_castsi512_si256(bi)));
        if (m > 8)
          _mm512_mask_storeu_epi64(ir + o + 8, static_cast<__mmask8>(out >> 8),
                                   _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(bi, 1)));
      }
    }
  }
}

}  // namespace

// Max pooling with 2x2 windows and stride 2 (no padding or dilation, every window inside the
// input) for output rows [r0, r1) of [planes, OH, OW] from [planes, IH, IW]: values and flat
// argmax positions in the input plane (idx null: the values alone). The taps are visited in
// PyTorch's order (row by row) and a later tap wins when it is greater or NaN, as in the generic
// kernel. Each input row pair gives 16 outputs per step: 32 elements per row, split into even and
// odd columns.
void max_pool_2x2_f32_avx512(const float* x, float* y, int64_t* idx, int64_t IH, int64_t IW, int64_t OH, int64_t OW,
                             int64_t r0, int64_t r1) {
  if (idx)
    max_pool_2x2_rows<true>(x, y, idx, IH, IW, OH, OW, r0, r1);
  else
    max_pool_2x2_rows<false>(x, y, idx, IH, IW, OH, OW, r0, r1);
}

}  // namespace ember::cpu::detail
