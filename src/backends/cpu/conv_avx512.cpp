// AVX-512 kernels for the conv files (declared in conv_kernels.hpp). Compiled with
// -mavx512f/bw/dq/vl; they are called only after checking cpu::features().avx512. No standard library
// templates are used here, so no AVX-512 code can leak into other translation units through
// COMDAT folding.
#include <immintrin.h>

#include <cstdint>

#include "conv_kernels.hpp"

namespace ember::cpu::detail {

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
namespace {
// Output columns [o0, o0 + 16 NC) of a depthwise row (the last chunk may be short: n ends the
// row), each 16-column chunk with its own accumulator: NC independent FMA chains instead of one
// (a chain of ntaps FMAs waits on each one's latency).
template <int NC>
inline void depthwise_chunks(float* y, int64_t n, int64_t o0, int64_t stride, const DwTap* taps, int ntaps,
                             float bias) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  __m512 acc[NC];
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) acc[c] = _mm512_set1_ps(bias);
  for (int t = 0; t < ntaps; ++t) {
    const DwTap& tp = taps[t];
    const __m512 w = _mm512_set1_ps(tp.w);
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) {
      const int64_t o = o0 + 16 * c;
      const int64_t m = n - o < 16 ? n - o : 16;
      int64_t s = tp.lo - o, e = tp.hi - o;
      if (s < 0) s = 0;
      if (e > m) e = m;
      if (e <= s) continue;
      const float* p = at(tp.row, o * stride + tp.off);
      __m512 v;
      if (stride == 1) {
        v = s == 0 && e == 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(lanes(s, e), p);
      } else {
        // Elements 2s, 2s+2, ..., 2e-2 of a 32-element window, then keep the even ones.
        const int64_t js = 2 * s, je = 2 * e - 1;
        const __m512 a = _mm512_maskz_loadu_ps(lanes(js, je), p);
        const __m512 b = _mm512_maskz_loadu_ps(lanes(js - 16, je - 16), at(p, 16));
        v = _mm512_permutex2var_ps(a, even, b);
      }
      acc[c] = _mm512_fmadd_ps(w, v, acc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) {
    const int64_t o = o0 + 16 * c;
    _mm512_mask_storeu_ps(y + o, lanes(0, n - o), acc[c]);
  }
}
}  // namespace

void depthwise_row_f32_avx512(float* y, int64_t n, int64_t stride, const DwTap* taps, int ntaps, float bias) {
  int64_t o0 = 0;
  for (; o0 + 48 < n; o0 += 64) depthwise_chunks<4>(y, n, o0, stride, taps, ntaps, bias);
  switch ((n - o0 + 15) / 16) {
    case 3: depthwise_chunks<3>(y, n, o0, stride, taps, ntaps, bias); break;
    case 2: depthwise_chunks<2>(y, n, o0, stride, taps, ntaps, bias); break;
    case 1: depthwise_chunks<1>(y, n, o0, stride, taps, ntaps, bias); break;
    default: break;
  }
}

// A whole depthwise plane of a 3x3 kernel with stride 1, padding 1 and dilation 1 (MobileNets'):
// y[h, o] = bias + sum over kh, kw of w[3 kh + kw] x[h + kh - 1, o + kw - 1] (zero outside), for an
// H x W plane. The nine weights stay in registers for the plane; four 16-column chunks of a row
// accumulate at once (four FMA chains); each column offset's load mask is the same in every row.
void depthwise3x3_plane_f32_avx512(const float* x, int64_t H, int64_t W, const float* w, float bias, float* y) {
  __m512 wv[9];
  for (int k = 0; k < 9; ++k) wv[k] = _mm512_set1_ps(w[k]);
  const __m512 vb = _mm512_set1_ps(bias);
  for (int64_t o0 = 0; o0 < W; o0 += 64) {
    __mmask16 m[4][3], st[4];
    for (int c = 0; c < 4; ++c) {
      const int64_t o = o0 + 16 * c;
      st[c] = lanes(0, W - o);
      for (int kw = 0; kw < 3; ++kw) m[c][kw] = lanes(1 - kw - o, W + 1 - kw - o);  // o + l + kw - 1 in [0, W)
    }
    const int nc = W - o0 >= 64 ? 4 : int((W - o0 + 15) / 16);
    for (int64_t h = 0; h < H; ++h) {
      __m512 acc[4] = {vb, vb, vb, vb};
      for (int kh = 0; kh < 3; ++kh) {
        const int64_t ih = h + kh - 1;
        if (ih < 0 || ih >= H) continue;
        const float* row = x + ih * W + o0;
        for (int kw = 0; kw < 3; ++kw) {
          const __m512 wk = wv[3 * kh + kw];
          if (nc == 4) {
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c)
              acc[c] = _mm512_fmadd_ps(wk, _mm512_maskz_loadu_ps(m[c][kw], at(row, 16 * c + kw - 1)), acc[c]);
          } else {
            for (int c = 0; c < nc; ++c)
              acc[c] = _mm512_fmadd_ps(wk, _mm512_maskz_loadu_ps(m[c][kw], at(row, 16 * c + kw - 1)), acc[c]);
          }
        }
      }
      for (int c = 0; c < nc; ++c) _mm512_mask_storeu_ps(y + h * W + o0 + 16 * c, st[c], acc[c]);
    }
  }
}

// Depthwise 3x3 / stride 1 / padding 1 planes up to 128 columns (conv_kernels.hpp): planes
// narrower than a vector take R = 16 / W rows a vector, so that a vector is R consecutive rows,
// contiguous in the plane; wider ones take each row in chunks of 16 columns. Each tap is one masked
// load at the fixed offset (kh - 1) W + kw - 1 from the vector's first pixel: the column masks drop
// the lanes whose tap column is outside the row (the padding), and only the first and the last row
// group need row masks (the rows above and below the plane). No transposes, no padded copy; the
// vectors of a plane are independent FMA chains.
void depthwise3x3_small_f32_avx512(const float* x, int64_t planes, int64_t H, int64_t W, const float* w,
                                   const float* bias, float lo, float hi, float* y) {
  constexpr int kMaxChunks = 8;
  const int64_t R = W < 16 ? 16 / W : 1, RW = R * W, HW = H * W, V = (H + R - 1) / R;
  const int NC = W < 16 ? 1 : int((W + 15) / 16);
  // chunk c: lanes [0, n[c]) at row-group offset 16 c; col[c][kw]: lanes whose tap column is inside
  __mmask16 col[kMaxChunks][3] = {}, full[kMaxChunks];
  for (int c = 0; c < NC; ++c) {
    const int64_t n = W < 16 ? RW : (W - 16 * c < 16 ? W - 16 * c : 16);
    full[c] = lanes(0, n);
    for (int64_t l = 0; l < n; ++l)
      for (int kw = 0; kw < 3; ++kw) {
        const int64_t cc = (W < 16 ? l % W : 16 * c + l) + kw - 1;
        if (cc >= 0 && cc < W) col[c][kw] = static_cast<__mmask16>(col[c][kw] | (1u << l));
      }
  }
  // the masks of row group v's taps: inside the row, inside the plane, and a pixel of the plane
  auto edge_masks = [&](int64_t v, __mmask16 (*m)[9], __mmask16* st) {
    for (int c = 0; c < NC; ++c) {
      const int64_t p0 = v * RW + 16 * c;
      st[c] = static_cast<__mmask16>(full[c] & lanes(0, HW - p0));
      for (int kh = 0; kh < 3; ++kh)
        for (int kw = 0; kw < 3; ++kw) {
          const int64_t off = p0 + (kh - 1) * W;
          m[c][3 * kh + kw] = static_cast<__mmask16>(col[c][kw] & lanes(-off, HW - off) & st[c]);
        }
    }
  };
  __mmask16 first[kMaxChunks][9], last[kMaxChunks][9], first_st[kMaxChunks], last_st[kMaxChunks];
  edge_masks(0, first, first_st);
  edge_masks(V - 1, last, last_st);
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  for (int64_t q = 0; q < planes; ++q) {
    const float* xp = x + q * HW;
    float* yp = y + q * HW;
    __m512 wk[9];
    for (int k = 0; k < 9; ++k) wk[k] = _mm512_set1_ps(w[9 * q + k]);
    const __m512 vb = _mm512_set1_ps(bias ? bias[q] : 0.0f);
    if (R == 1) {
      // one row a vector: down each 16-column strip, each input row's three shifted loads feed the
      // three output rows that read it (3 loads an output vector, not 9); rows outside the plane
      // are zero vectors
      for (int c = 0; c < NC; ++c) {
        const __m512 zero = _mm512_setzero_ps();
        __m512 a0 = zero, a1 = zero, a2 = zero;  // row v - 1
        const float* r = xp + 16 * c;
        __m512 b0 = _mm512_maskz_loadu_ps(col[c][0], at(r, -1)), b1 = _mm512_maskz_loadu_ps(col[c][1], r),
               b2 = _mm512_maskz_loadu_ps(col[c][2], at(r, 1));  // row v
        for (int64_t v = 0; v < H; ++v) {
          __m512 c0 = zero, c1 = zero, c2 = zero;  // row v + 1
          if (v + 1 < H) {
            const float* n = xp + (v + 1) * W + 16 * c;
            c0 = _mm512_maskz_loadu_ps(col[c][0], at(n, -1));
            c1 = _mm512_maskz_loadu_ps(col[c][1], n);
            c2 = _mm512_maskz_loadu_ps(col[c][2], at(n, 1));
          }
          __m512 acc = _mm512_fmadd_ps(wk[0], a0, vb);
          __m512 acc2 = _mm512_mul_ps(wk[3], b0);
          acc = _mm512_fmadd_ps(wk[1], a1, acc);
          acc2 = _mm512_fmadd_ps(wk[4], b1, acc2);
          acc = _mm512_fmadd_ps(wk[2], a2, acc);
          acc2 = _mm512_fmadd_ps(wk[5], b2, acc2);
          acc = _mm512_fmadd_ps(wk[6], c0, acc);
          acc2 = _mm512_fmadd_ps(wk[7], c1, acc2);
          acc = _mm512_fmadd_ps(wk[8], c2, acc);
          acc = _mm512_add_ps(acc, acc2);
          _mm512_mask_storeu_ps(yp + v * W + 16 * c, full[c], _mm512_min_ps(vhi, _mm512_max_ps(vlo, acc)));
          a0 = b0, a1 = b1, a2 = b2;
          b0 = c0, b1 = c1, b2 = c2;
        }
      }
      continue;
    }
    auto edge = [&](int64_t v, __mmask16 (*m)[9], const __mmask16* st) {
      for (int c = 0; c < NC; ++c) {
        const int64_t p0 = v * RW + 16 * c;
        __m512 acc = vb;
        for (int kh = 0; kh < 3; ++kh)
          for (int kw = 0; kw < 3; ++kw)
            acc = _mm512_fmadd_ps(wk[3 * kh + kw],
                                  _mm512_maskz_loadu_ps(m[c][3 * kh + kw], at(xp, p0 + (kh - 1) * W + kw - 1)), acc);
        _mm512_mask_storeu_ps(yp + p0, st[c], _mm512_min_ps(vhi, _mm512_max_ps(vlo, acc)));  // NaN stays NaN
      }
    };
    edge(0, first, V == 1 ? last_st : first_st);
    for (int64_t v = 1; v < V - 1; ++v)
      for (int c = 0; c < NC; ++c) {
        const float* cp = xp + v * RW + 16 * c;
        __m512 acc = vb;
#pragma GCC unroll 3
        for (int kh = 0; kh < 3; ++kh) {
          const float* r = at(cp, (kh - 1) * W);
          acc = _mm512_fmadd_ps(wk[3 * kh], _mm512_maskz_loadu_ps(col[c][0], at(r, -1)), acc);
          acc = _mm512_fmadd_ps(wk[3 * kh + 1], _mm512_maskz_loadu_ps(col[c][1], r), acc);
          acc = _mm512_fmadd_ps(wk[3 * kh + 2], _mm512_maskz_loadu_ps(col[c][2], at(r, 1)), acc);
        }
        _mm512_mask_storeu_ps(yp + v * RW + 16 * c, full[c], _mm512_min_ps(vhi, _mm512_max_ps(vlo, acc)));
      }
    if (V > 1) edge(V - 1, last, last_st);
  }
}

// Depthwise 3x3 / stride 2 / padding 1 planes (conv_kernels.hpp) on the channel planes in place:
// 16 output columns a vector; each input row under them is read as two vector loads at its even
// column 2j and two at 2j - 1, from which two-source permutes pick the even columns (tap kw = 1),
// the odd ones (kw = 2) and the odd ones one to the left (kw = 0). The load masks keep the columns
// inside the row, so the padding reads as zero; rows outside the plane are skipped.
void depthwise3x3s2_f32_avx512(const float* x, int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW,
                               const float* w, const float* bias, float lo, float hi, float* y) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  const int64_t chunks = (OW + 15) / 16;
  for (int64_t q = 0; q < planes; ++q) {
    const float* xp = x + q * H * W;
    float* yp = y + q * OH * OW;
    __m512 wk[9];
    for (int k = 0; k < 9; ++k) wk[k] = _mm512_set1_ps(w[9 * q + k]);
    const __m512 vb = _mm512_set1_ps(bias ? bias[q] : 0.0f);
    if (chunks > 2) {
      // wide planes row by row (strips down a plane past the L1 cache measured slower: 96x112x112
      // 205-225 -> 310 us), each output row reading its three input rows
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t c = 0; c < chunks; ++c) {
          const int64_t b = 32 * c;
          const __mmask16 m0 = lanes(-b, W - b), m1 = lanes(-b - 16, W - b - 16);
          const __mmask16 s0 = lanes(1 - b, W + 1 - b), s1 = lanes(-b - 15, W - b - 15);
          __m512 acc = vb;
          for (int kh = 0; kh < 3; ++kh) {
            const int64_t r = 2 * oh + kh - 1;
            if (r < 0 || r >= H) continue;
            const float* row = xp + r * W;
            const __m512 a = _mm512_maskz_loadu_ps(m0, at(row, b)), a1 = _mm512_maskz_loadu_ps(m1, at(row, b + 16));
            const __m512 p = _mm512_maskz_loadu_ps(s0, at(row, b - 1)), p1 = _mm512_maskz_loadu_ps(s1, at(row, b + 15));
            acc = _mm512_fmadd_ps(wk[3 * kh], _mm512_permutex2var_ps(p, even, p1), acc);
            acc = _mm512_fmadd_ps(wk[3 * kh + 1], _mm512_permutex2var_ps(a, even, a1), acc);
            acc = _mm512_fmadd_ps(wk[3 * kh + 2], _mm512_permutex2var_ps(a, odd, a1), acc);
          }
          _mm512_mask_storeu_ps(yp + oh * OW + 16 * c, lanes(0, OW - 16 * c), _mm512_min_ps(vhi, _mm512_max_ps(vlo, acc)));
        }
      continue;
    }
    // narrower ones down each 16-column strip: input row 2 oh + 1 serves output rows oh (kh = 2)
    // and oh + 1 (kh = 0), so each output row reads two new input rows (rows outside the plane are
    // zeros)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t b = 32 * c;  // input column of the chunk's first output's centre tap
      const __mmask16 m0 = lanes(-b, W - b), m1 = lanes(-b - 16, W - b - 16);
      const __mmask16 s0 = lanes(1 - b, W + 1 - b), s1 = lanes(-b - 15, W - b - 15);
      const __mmask16 st = lanes(0, OW - 16 * c);
      // the left (kw = 0), centre and right taps' columns of input row r
      auto pick = [&](int64_t r, __m512& l, __m512& m, __m512& rt) {
        if (r < 0 || r >= H) {
          l = m = rt = _mm512_setzero_ps();
          return;
        }
        const float* row = xp + r * W;
        const __m512 a = _mm512_maskz_loadu_ps(m0, at(row, b)), a1 = _mm512_maskz_loadu_ps(m1, at(row, b + 16));
        const __m512 p = _mm512_maskz_loadu_ps(s0, at(row, b - 1)), p1 = _mm512_maskz_loadu_ps(s1, at(row, b + 15));
        l = _mm512_permutex2var_ps(p, even, p1);
        m = _mm512_permutex2var_ps(a, even, a1);
        rt = _mm512_permutex2var_ps(a, odd, a1);
      };
      __m512 t0, t1, t2;  // input row 2 oh - 1
      pick(-1, t0, t1, t2);
      for (int64_t oh = 0; oh < OH; ++oh) {
        __m512 u0, u1, u2, d0, d1, d2;  // input rows 2 oh and 2 oh + 1
        pick(2 * oh, u0, u1, u2);
        pick(2 * oh + 1, d0, d1, d2);
        __m512 acc = _mm512_fmadd_ps(wk[0], t0, vb);
        __m512 acc2 = _mm512_mul_ps(wk[3], u0);
        acc = _mm512_fmadd_ps(wk[1], t1, acc);
        acc2 = _mm512_fmadd_ps(wk[4], u1, acc2);
        acc = _mm512_fmadd_ps(wk[2], t2, acc);
        acc2 = _mm512_fmadd_ps(wk[5], u2, acc2);
        acc = _mm512_fmadd_ps(wk[6], d0, acc);
        acc2 = _mm512_fmadd_ps(wk[7], d1, acc2);
        acc = _mm512_fmadd_ps(wk[8], d2, acc);
        acc = _mm512_add_ps(acc, acc2);
        _mm512_mask_storeu_ps(yp + oh * OW + 16 * c, st, _mm512_min_ps(vhi, _mm512_max_ps(vlo, acc)));  // NaN stays NaN
        t0 = d0, t1 = d1, t2 = d2;
      }
    }
  }
}

// A depthwise plane on the flat OH x pitch grid of its zero-padded input: 16 consecutive grid
// pixels a vector whatever the row width (a 7x7 plane of pitch 9 fills 63 of 64 lanes, where
// row-wise vectors would fill 7 of 16), every tap an unmasked load at a fixed offset. Four vectors
// at a time (four FMA chains); each vector's lanes of columns below OW are compressed into the
// output row(s) they belong to, so the output needs no pass of its own.
void depthwise_grid_f32_avx512(float* y, int64_t OH, int64_t OW, int64_t pitch, const DwGridTap* taps, int ntaps,
                               float bias, float lo, float hi) {
  const int64_t n = (OH - 1) * pitch + OW;  // grid pixels up to the last output one
  const __m512 vb = _mm512_set1_ps(bias), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  const __m512i vpitch = _mm512_set1_epi32(int32_t(pitch)), vow = _mm512_set1_epi32(int32_t(OW));
  const __m512i step = _mm512_set1_epi32(int32_t(16 % pitch));
  // the column of each lane of the current vector: (p + l) mod pitch
  __m512i col = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (__mmask16 over; (over = _mm512_cmp_epi32_mask(col, vpitch, _MM_CMPINT_NLT)) != 0;)
    col = _mm512_mask_sub_epi32(col, over, col, vpitch);
  float* out = y;
  for (int64_t p0 = 0; p0 < n; p0 += 64) {
    __m512 a0 = vb, a1 = vb, a2 = vb, a3 = vb;
    for (int t = 0; t < ntaps; ++t) {
      const float* q = taps[t].src + taps[t].off + p0;
      const __m512 w = _mm512_set1_ps(taps[t].w);
      a0 = _mm512_fmadd_ps(w, _mm512_loadu_ps(q), a0);
      a1 = _mm512_fmadd_ps(w, _mm512_loadu_ps(q + 16), a1);
      a2 = _mm512_fmadd_ps(w, _mm512_loadu_ps(q + 32), a2);
      a3 = _mm512_fmadd_ps(w, _mm512_loadu_ps(q + 48), a3);
    }
    const __m512 acc[4] = {a0, a1, a2, a3};
    for (int c = 0; c < 4; ++c) {
      const int64_t p = p0 + 16 * c;
      if (p >= n) break;
      const __mmask16 keep = _mm512_mask_cmp_epi32_mask(lanes(0, n - p), col, vow, _MM_CMPINT_LT);
      const __m512 v = _mm512_maskz_compress_ps(keep, _mm512_min_ps(vhi, _mm512_max_ps(vlo, acc[c])));
      const int k = __builtin_popcount(unsigned(keep));
      _mm512_mask_storeu_ps(out, lanes(0, k), v);
      out += k;
      col = _mm512_add_epi32(col, step);
      col = _mm512_mask_sub_epi32(col, _mm512_cmp_epi32_mask(col, vpitch, _MM_CMPINT_NLT), col, vpitch);
    }
  }
}

void depthwise_phases_f32_avx512(const float* x, int64_t H, int64_t W, int64_t ph, int64_t pw, int64_t sh, int64_t sw,
                                 int64_t rows, int64_t pitch, float* dst) {
  const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const int64_t plane = rows * pitch;
  int64_t a = 0, i = 0;  // padded row r = sh * i + a
  for (int64_t r = 0; r < sh * rows; ++r) {
    const int64_t h = r - ph;
    const bool inside = h >= 0 && h < H;
    const float* src = x + (inside ? h : 0) * W - pw;  // src[c]: padded column c of the row
    float* d0 = dst + a * sw * plane + i * pitch;
    for (int64_t j = 0; j < pitch; j += 16) {
      const __mmask16 st = lanes(0, pitch - j);
      if (sw == 1) {
        const __m512 v = inside ? _mm512_maskz_loadu_ps(lanes(pw - j, pw + W - j), at(src, j)) : _mm512_setzero_ps();
        _mm512_mask_storeu_ps(d0 + j, st, v);
      } else {
        const int64_t c = 2 * j;  // padded columns [c, c + 32)
        __m512 lo = _mm512_setzero_ps(), hi = lo;
        if (inside) {
          lo = _mm512_maskz_loadu_ps(lanes(pw - c, pw + W - c), at(src, c));
          hi = _mm512_maskz_loadu_ps(lanes(pw - c - 16, pw + W - c - 16), at(src, c + 16));
        }
        _mm512_mask_storeu_ps(d0 + j, st, _mm512_permutex2var_ps(lo, ie, hi));
        _mm512_mask_storeu_ps(d0 + plane + j, st, _mm512_permutex2var_ps(lo, io, hi));
      }
    }
    if (++a == sh) {
      a = 0;
      ++i;
    }
  }
}

// Depthwise 2-d conv of 16 channels at once on a pixel-major copy (one channel per lane):
// xb is the zero-padded input [Hp][Wp][16], w the taps [KH * KW][16]; writes yb [OH][OW][16].
// Every lane is used whatever the plane's width or the stride, and no load is masked.
void depthwise_cvec_f32_avx512(const float* xb, int64_t Wp, const float* w, int64_t KH, int64_t KW, int64_t sh,
                               int64_t sw, int64_t dh, int64_t dw, int64_t OH, int64_t OW, float* yb) {
  const int64_t step = 16 * sw;
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* yr = yb + oh * OW * 16;
    const float* top = xb + oh * sh * Wp * 16;
    int64_t ow = 0;
    for (; ow + 4 <= OW; ow += 4) {
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int64_t kh = 0; kh < KH; ++kh) {
        const float* row = top + kh * dh * Wp * 16 + ow * step;
        for (int64_t kw = 0; kw < KW; ++kw) {
          const __m512 wv = _mm512_loadu_ps(w + (kh * KW + kw) * 16);
          const float* q = row + kw * dw * 16;
          a0 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(q), a0);
          a1 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(q + step), a1);
          a2 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(q + 2 * step), a2);
          a3 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(q + 3 * step), a3);
        }
      }
      _mm512_storeu_ps(yr + ow * 16, a0);
      _mm512_storeu_ps(yr + ow * 16 + 16, a1);
      _mm512_storeu_ps(yr + ow * 16 + 32, a2);
      _mm512_storeu_ps(yr + ow * 16 + 48, a3);
    }
    for (; ow < OW; ++ow) {
      __m512 a = _mm512_setzero_ps();
      for (int64_t kh = 0; kh < KH; ++kh) {
        const float* row = top + kh * dh * Wp * 16 + ow * step;
        for (int64_t kw = 0; kw < KW; ++kw)
          a = _mm512_fmadd_ps(_mm512_loadu_ps(w + (kh * KW + kw) * 16), _mm512_loadu_ps(row + kw * dw * 16), a);
      }
      _mm512_storeu_ps(yr + ow * 16, a);
    }
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

namespace {
// One run of a micro-panel: lanes [l0, l0 + n) are the output pixels (od, oh, ow + L - l0).
struct PanelRun {
  int64_t pix;       // input offset of lane 0 at a zero kernel offset: (od*sd*IH + oh*sh)*IW + (ow-l0)*sw
  int64_t idb, ihb;  // od * sd, oh * sh
  int64_t owa, owb;  // the run's output columns [owa, owb)
  int64_t shift;     // ow - l0: lane L is output column L + shift
};

template <int SW>
void im2col_panels_rows(const Im2colGeom& g, int64_t r0, int64_t kc, int mr, const PanelRun (*runs)[16],
                        const int* nruns, int np, float* dst, int64_t panel_stride) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2];
  const int64_t sw = SW > 0 ? SW : g.s[2];
  const __m512i steps = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(static_cast<int>(sw)));
  const __mmask16 store_mask = lanes(0, mr);
  int64_t kw = r0 % g.k[2], t = r0 / g.k[2];
  int64_t kh = t % g.k[1];
  t /= g.k[1];
  int64_t kd = t % g.k[0], c = t / g.k[0];
  for (int64_t r = 0; r < kc; ++r) {
    const int64_t offd = kd * g.d[0] - g.p[0], offh = kh * g.d[1] - g.p[1], offw = kw * g.d[2] - g.p[2];
    const float* base = at(g.x, c * g.plane + (offd * IH + offh) * IW + offw);  // may lie before the plane
    // Output columns whose input column lies inside the row: [ow_lo, ow_hi).
    const int64_t ow_lo = offw >= 0 ? 0 : (-offw + sw - 1) / sw;
    const int64_t ow_hi = IW - 1 - offw < 0 ? 0 : (IW - 1 - offw) / sw + 1;
    float* d = dst + r * mr;
    for (int q = 0; q < np; ++q, d += panel_stride) {
      __m512 v = _mm512_setzero_ps();
      for (int u = 0; u < nruns[q]; ++u) {
        const PanelRun& run = runs[q][u];
        const uint64_t id = static_cast<uint64_t>(run.idb + offd), ih = static_cast<uint64_t>(run.ihb + offh);
        if (id >= static_cast<uint64_t>(ID) || ih >= static_cast<uint64_t>(IH)) continue;
        // Valid lanes [la, lb).
        const int64_t la = (run.owa > ow_lo ? run.owa : ow_lo) - run.shift;
        const int64_t lb = (run.owb < ow_hi ? run.owb : ow_hi) - run.shift;
        if (lb <= la) continue;
        const __mmask16 m = lanes(la, lb);
        const float* q0 = at(base, run.pix);  // lane L reads q0[L * sw]
        if constexpr (SW == 1) {
          v = _mm512_mask_loadu_ps(v, m, q0);
        } else if constexpr (SW == 2) {
          // Lane L is element 2L of the 32-element window at q0: load the lanes' elements only.
          const __m512 lo = _mm512_maskz_loadu_ps(lanes(2 * la, 2 * lb - 1), q0);
          const __m512 hi = _mm512_maskz_loadu_ps(lanes(2 * la - 16, 2 * lb - 17), at(q0, 16));
          v = _mm512_mask_mov_ps(v, m, _mm512_permutex2var_ps(lo, even, hi));
        } else {
          v = _mm512_mask_i32gather_ps(v, m, steps, q0, 4);
        }
      }
      _mm512_mask_storeu_ps(d, store_mask, v);
    }
    if (++kw == g.k[2]) {
      kw = 0;
      if (++kh == g.k[1]) {
        kh = 0;
        if (++kd == g.k[0]) {
          kd = 0;
          ++c;
        }
      }
    }
  }
}
}  // namespace

// Rows [r0, r0 + kc) x output pixels [p0, p1) of the column matrix (row r = ((c * KD + kd) *
// KH + kh) * KW + kw) as micro-panels of mr <= 16 pixels: element (r, p) at
// dst[(p - p0) / mr * kc * mr + (r - r0) * mr + (p - p0) % mr], the last panel zero padded.
// A panel is cut into runs of pixels in one output row (tabulated once); each (row, run) is
// one masked load (stride 2 through a permute, other strides through a gather).
void im2col_panels_f32_avx512(const Im2colGeom& g, int64_t r0, int64_t kc, int64_t p0, int64_t p1, int mr,
                              float* dst) {
  constexpr int kGroup = 16;  // panels per pass
  const int64_t IH = g.in[1], IW = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t sw = g.s[2];
  const int64_t npanels = (p1 - p0 + mr - 1) / mr;
  PanelRun runs[kGroup][16];
  int nruns[kGroup];
  for (int64_t pg = 0; pg < npanels; pg += kGroup) {
    const int np = static_cast<int>(npanels - pg < kGroup ? npanels - pg : kGroup);
    for (int q = 0; q < np; ++q) {
      const int64_t a = p0 + (pg + q) * mr, b = a + mr < p1 ? a + mr : p1;
      int64_t ow = a % OW, t = a / OW;
      int64_t oh = t % OH, od = t / OH;
      int nr = 0;
      for (int64_t p = a; p < b;) {
        const int64_t n = OW - ow < b - p ? OW - ow : b - p;
        const int64_t l0 = p - a, idb = od * g.s[0], ihb = oh * g.s[1];
        runs[q][nr++] = {(idb * IH + ihb) * IW + (ow - l0) * sw, idb, ihb, ow, ow + n, ow - l0};
        p += n;
        ow = 0;
        if (++oh == OH) {
          oh = 0;
          ++od;
        }
      }
      nruns[q] = nr;
    }
    float* d = dst + pg * kc * mr;
    if (sw == 1)
      im2col_panels_rows<1>(g, r0, kc, mr, runs, nruns, np, d, kc * mr);
    else if (sw == 2)
      im2col_panels_rows<2>(g, r0, kc, mr, runs, nruns, np, d, kc * mr);
    else
      im2col_panels_rows<0>(g, r0, kc, mr, runs, nruns, np, d, kc * mr);
  }
}

namespace {
// In-place transpose of the 16 x 16 block v[0..15] (t: scratch): pairs of rows interleaved,
// then groups of 4 (within 128-bit lanes), then the 128-bit lanes across 8 and 16 rows.
inline void transpose16(__m512* v, __m512* t) {
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    v[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    v[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    v[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    v[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(v[i], v[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(v[i], v[i + 4], 0xDD);
    t[i + 8] = _mm512_shuffle_f32x4(v[i + 8], v[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(v[i + 8], v[i + 12], 0xDD);
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    v[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    v[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
    v[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xDD);
  }
}
}  // namespace

namespace {
// ct[r, 0:n] (row stride ldc) = (accumulate ? ct[r, 0:n] : 0) + sum_k a[off[k] + pix(r)] * b[k, 0:n]
// for r < M: M pixels of a padded input row times a 32-column weight panel (row k at b + k * 32).
// pix(r) = r * SW, or with SPLIT > 0 (pixels from two output rows), (r - SPLIT) * SW + rowstep
// for r >= SPLIT.
template <int M, int SW, int SPLIT>
__attribute__((noinline)) void implicit_tile(int64_t kc, const float* __restrict a, const int64_t* __restrict off,
                                             int64_t rowstep, const float* __restrict b, float* __restrict ct,
                                             int64_t ldc, bool accumulate, int n) {
  __m512 acc[M][2];
#pragma GCC unroll 14
  for (int r = 0; r < M; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const float* ak = a + off[k];
    const float* ak2 = ak + rowstep;
    const __m512 b0 = _mm512_loadu_ps(b + k * 32), b1 = _mm512_loadu_ps(b + k * 32 + 16);
#pragma GCC unroll 14
    for (int r = 0; r < M; ++r) {
      const __m512 av = _mm512_set1_ps(SPLIT > 0 && r >= SPLIT ? ak2[(r - SPLIT) * SW] : ak[r * SW]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  const __mmask16 m0 = lanes(0, n), m1 = lanes(0, n - 16);
#pragma GCC unroll 14
  for (int r = 0; r < M; ++r) {
    float* cr = ct + r * ldc;
    if (accumulate) {
      acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_maskz_loadu_ps(m0, cr));
      acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_maskz_loadu_ps(m1, cr + 16));
    }
    _mm512_mask_storeu_ps(cr, m0, acc[r][0]);
    _mm512_mask_storeu_ps(cr + 16, m1, acc[r][1]);
  }
}

template <int SW, int M = 14>
void implicit_tile_m(int m, int64_t kc, const float* a, const int64_t* off, const float* b, float* ct, int64_t ldc,
                     bool accumulate, int n) {
  if constexpr (M >= 1) {
    if (m == M)
      implicit_tile<M, SW, 0>(kc, a, off, 0, b, ct, ldc, accumulate, n);
    else
      implicit_tile_m<SW, M - 1>(m, kc, a, off, b, ct, ldc, accumulate, n);
  }
}
}  // namespace

// The implicit-GEMM micro-kernel of conv.cpp's single-image path: implicit_tile above for
// m <= 14 pixels, n <= 32 channels and a width stride sw of 1 or 2; split7: 14 pixels, the
// last 7 of them from the next output row (rowstep further on).
void conv_implicit_tile_f32_avx512(int m, int sw, bool split7, int64_t rowstep, int64_t kc, const float* a,
                                   const int64_t* off, const float* b, float* ct, int64_t ldc, bool accumulate,
                                   int n) {
  if (split7 && m == 14) {
    if (sw == 1)
      implicit_tile<14, 1, 7>(kc, a, off, rowstep, b, ct, ldc, accumulate, n);
    else
      implicit_tile<14, 2, 7>(kc, a, off, rowstep, b, ct, ldc, accumulate, n);
  } else if (sw == 1) {
    implicit_tile_m<1>(m, kc, a, off, b, ct, ldc, accumulate, n);
  } else {
    implicit_tile_m<2>(m, kc, a, off, b, ct, ldc, accumulate, n);
  }
}

// dst[c * ldd + r] = src[r * lds + c] + bias[c] (bias may be null) for r < rows, c < cols:
// the pixel-major GEMM result of conv.cpp's single-image path back into channel planes, in
// 16 x 16 blocks transposed in registers.
void transpose_bias_f32_avx512(const float* src, int64_t rows, int64_t cols, int64_t lds, const float* bias,
                               float* dst, int64_t ldd, const float* res, float lo, float hi) {
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    const int64_t nr = rows - r0 < 16 ? rows - r0 : 16;
    const __mmask16 rm = lanes(0, nr);
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
      const int64_t nc = cols - c0 < 16 ? cols - c0 : 16;
      const __mmask16 cm = lanes(0, nc);
      __m512 v[16], t[16];
      for (int i = 0; i < 16; ++i)
        v[i] = i < nr ? _mm512_maskz_loadu_ps(cm, src + (r0 + i) * lds + c0) : _mm512_setzero_ps();
      transpose16(v, t);
      for (int i = 0; i < nc; ++i) {
        const __m512 b = _mm512_set1_ps(bias ? bias[c0 + i] : 0.0f);
        __m512 y = _mm512_add_ps(v[i], b);
        if (res) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(rm, res + (c0 + i) * ldd + r0));
        // max(lo, y) and min(hi, y) return y when it is NaN (the second operand): NaN stays NaN
        _mm512_mask_storeu_ps(dst + (c0 + i) * ldd + r0, rm, _mm512_min_ps(vhi, _mm512_max_ps(vlo, y)));
      }
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

// conv_fused's epilogue over rows x cols of the output at y (row stride ld): y = clamp(y + b + r,
// lo, hi), b the row's bias (bias null: none), r at the same offsets from res (null: none).
// max(lo, v) and min(hi, v) return v when v is NaN (the second operand), so NaN stays NaN.
void conv_epilogue_f32_avx512(float* y, const float* res, const float* bias, int64_t rows, int64_t cols, int64_t ld,
                              float lo, float hi) {
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * ld;
    const float* rr = res ? res + r * ld : nullptr;
    const __m512 vb = _mm512_set1_ps(bias ? bias[r] : 0.0f);
    for (int64_t i = 0; i < cols; i += 16) {
      const __mmask16 m = lanes(0, cols - i);
      __m512 v = _mm512_maskz_loadu_ps(m, yr + i);
      if (bias) v = _mm512_add_ps(v, vb);
      if (rr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, rr + i));
      v = _mm512_min_ps(vhi, _mm512_max_ps(vlo, v));
      _mm512_mask_storeu_ps(yr + i, m, v);
    }
  }
}

}  // namespace ember::cpu::detail
