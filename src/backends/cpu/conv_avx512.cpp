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

// One im2col row (declared again in conv.cpp).
struct Im2colRow {
  const float* plane;  // the input plane of the row's channel
  int64_t ID, IH, IW, OH, OW;
  int64_t sd, sh, sw;        // strides (sw is 1 or 2)
  int64_t offd, offh, offw;  // kd * dd - pd, kh * dh - ph, kw * dw - pw
  int64_t ow_lo, ow_hi;      // output columns whose input column lies inside the input row
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

// dst[p - p0] = im2col value of output pixel p, p in [p0, p1), for a width stride of 1 or 2:
// the input element (for stride 2, the even elements of a 32-element window, through one
// permute), or 0 in the padding. Masked loads and stores handle the row ends and the padding,
// so short rows cost a few instructions instead of a memcpy call and fills.
void im2col_row_f32_avx512(const Im2colRow& r, int64_t p0, int64_t p1, float* dst) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  // Unit stride, whole rows of at most 32 columns: load and store masks of a row inside the
  // image (columns [ow_lo, ow_hi) read the input).
  const __mmask16 whole_ld0 = lanes(r.ow_lo, r.ow_hi), whole_ld1 = lanes(r.ow_lo - 16, r.ow_hi - 16);
  const __mmask16 whole_st0 = lanes(0, r.OW), whole_st1 = lanes(0, r.OW - 16);
  int64_t p = p0;
  int64_t ow = p0 % r.OW, t = p0 / r.OW;
  int64_t oh = t % r.OH, od = t / r.OH;
  while (p < p1) {
    const int64_t n = r.OW - ow < p1 - p ? r.OW - ow : p1 - p;
    const int64_t e = ow + n;
    float* d = dst + (p - p0) - ow;  // d[o] for output column o
    const int64_t id = od * r.sd + r.offd, ih = oh * r.sh + r.offh;
    int64_t a = 0, b = 0;  // valid output columns
    const float* src = r.plane;
    const bool inside = id >= 0 && id < r.ID && ih >= 0 && ih < r.IH;
    if (inside) {
      a = r.ow_lo > ow ? r.ow_lo : ow;
      b = r.ow_hi < e ? r.ow_hi : e;
      if (b < a) b = a;
      src = r.plane + (id * r.IH + ih) * r.IW;
    }
    if (r.sw == 1 && ow == 0 && n == r.OW && r.OW <= 32) {
      // A whole output row of a short image row (the common case): the masks are the same
      // for every row, valid or in the padding.
      const float* q = at(src, r.offw);
      _mm512_mask_storeu_ps(d, whole_st0, inside ? _mm512_maskz_loadu_ps(whole_ld0, q) : _mm512_setzero_ps());
      if (r.OW > 16)
        _mm512_mask_storeu_ps(d + 16, whole_st1,
                              inside ? _mm512_maskz_loadu_ps(whole_ld1, at(q, 16)) : _mm512_setzero_ps());
      p += n;
      if (++oh == r.OH) {
        oh = 0;
        ++od;
      }
      continue;
    }
    if (r.sw == 1) {
      for (int64_t o = ow; o < e; o += 16) {
        __m512 v;
        if (o >= a && o + 16 <= b)  // inside the input row
          v = _mm512_loadu_ps(at(src, o + r.offw));
        else
          v = _mm512_maskz_loadu_ps(lanes(a - o, b - o), at(src, o + r.offw));
        if (o + 16 <= e)
          _mm512_storeu_ps(d + o, v);
        else
          _mm512_mask_storeu_ps(d + o, lanes(0, e - o), v);
      }
      p += n;
      ow = 0;
      if (++oh == r.OH) {
        oh = 0;
        ++od;
      }
      continue;
    }
    for (int64_t o = ow; o < e; o += 16) {
      const int64_t sa = a - o, sb = b - o;  // valid lanes; lane i reads window element 2i
      const float* q = at(src, 2 * o + r.offw);
      const __m512 lo = _mm512_maskz_loadu_ps(lanes(2 * sa, 2 * sb - 1), q);
      const __m512 hi = _mm512_maskz_loadu_ps(lanes(2 * sa - 16, 2 * sb - 17), at(q, 16));
      _mm512_mask_storeu_ps(d + o, lanes(0, e - o), _mm512_permutex2var_ps(lo, even, hi));
    }
    p += n;
    ow = 0;
    if (++oh == r.OH) {
      oh = 0;
      ++od;
    }
  }
}

// dst[i] += src[i] for i in [0, n).
void add_row_f32_avx512(float* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_add_ps(_mm512_loadu_ps(dst + i), _mm512_loadu_ps(src + i)));
  if (i < n) {
    const __mmask16 m = lanes(0, n - i);
    _mm512_mask_storeu_ps(dst + i, m,
                          _mm512_add_ps(_mm512_maskz_loadu_ps(m, dst + i), _mm512_maskz_loadu_ps(m, src + i)));
  }
}

}  // namespace ember::cpu::detail
