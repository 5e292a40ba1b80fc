// AVX-512 kernels for conv.cpp. Compiled with -mavx512f/bw/dq/vl; conv.cpp calls them only
// after checking cpu::features().avx512. No standard library templates are used here, so
// no AVX-512 code can leak into other translation units through COMDAT folding.
#include <immintrin.h>

#include <cstdint>

namespace ember::cpu::detail {

// One input row feeding a depthwise output row (declared again in conv.cpp).
struct DwTap {
  const float* row;  // the input row
  int64_t off;       // output column o reads row[o * stride + off]
  int64_t lo, hi;    // the output columns [lo, hi) for which that element is inside the row
  float w;           // the tap's weight
};

namespace {

// Lanes [s, e) of a 16-lane mask (s and e are clamped to [0, 16]).
inline __mmask16 lanes(int64_t s, int64_t e) {
  if (s < 0) s = 0;
  if (e > 16) e = 16;
  if (e <= s) return 0;
  return static_cast<__mmask16>(((1u << e) - 1u) & ~((1u << s) - 1u));
}

// row + i without forming an out-of-range pointer in C++ terms (masked lanes are not read).
inline const float* at(const float* row, int64_t i) {
  return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(row) + static_cast<uintptr_t>(i * 4));
}

}  // namespace

// y[o] = bias + sum_t taps[t].w * taps[t].row[o * stride + taps[t].off] for o in [0, n),
// where tap t only contributes to the columns [lo, hi). stride is 1 or 2.
void depthwise_row_f32_avx512(float* y, int64_t n, int64_t stride, const DwTap* taps, int ntaps, float bias) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (int64_t o = 0; o < n; o += 16) {
    const int64_t m = n - o < 16 ? n - o : 16;
    __m512 acc = _mm512_set1_ps(bias);
    for (int t = 0; t < ntaps; ++t) {
      const DwTap& tp = taps[t];
      int64_t s = tp.lo - o, e = tp.hi - o;
      if (s < 0) s = 0;
      if (e > m) e = m;
      if (e <= s) continue;
      const float* p = at(tp.row, o * stride + tp.off);
      __m512 v;
      if (stride == 1) {
        v = _mm512_maskz_loadu_ps(lanes(s, e), p);
      } else {
        // Elements 2s, 2s+2, ..., 2e-2 of a 32-element window, then keep the even ones.
        const int64_t js = 2 * s, je = 2 * e - 1;
        const __m512 a = _mm512_maskz_loadu_ps(lanes(js, je), p);
        const __m512 b = _mm512_maskz_loadu_ps(lanes(js - 16, je - 16), at(p, 16));
        v = _mm512_permutex2var_ps(a, even, b);
      }
      acc = _mm512_fmadd_ps(_mm512_set1_ps(tp.w), v, acc);
    }
    _mm512_mask_storeu_ps(y + o, lanes(0, m), acc);
  }
}

}  // namespace ember::cpu::detail
