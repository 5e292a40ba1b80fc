// WebAssembly SIMD128 kernels for the convolution files (the wasm build, -msimd128): the
// counterparts of conv_avx512.cpp's depthwise rows, im2col rows, fused epilogue and transpose, declared in
// conv_kernels.hpp. The callers pick these at compile time (the wasm build has no x86 kernels).
#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "conv_kernels.hpp"

namespace ember::cpu::detail {
namespace {

// acc + w * x: a mul and an add, or relaxed SIMD's f32x4.relaxed_madd in ember-relaxed.wasm (the
// same builtin and operand order as madd() in gemm_simd128.cpp, which says why).
inline v128_t madd(v128_t w, v128_t x, v128_t acc) {
#if defined(EMBER_WASM_RELAXED_SIMD)
  return __builtin_wasm_fma_f32x4(w, x, acc);
#else
  return wasm_f32x4_add(acc, wasm_f32x4_mul(w, x));
#endif
}

inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// src[0], src[2], src[4], src[6] (reads src[0..7]).
inline v128_t load_even(const float* src) {
  return wasm_i32x4_shuffle(wasm_v128_load(src), wasm_v128_load(src + 4), 0, 2, 4, 6);
}

// One output column of a depthwise row, every tap checked against its valid range.
inline float depthwise_column(int64_t o, int64_t stride, const DwTap* taps, int ntaps, float bias) {
  float s = bias;
  for (int t = 0; t < ntaps; ++t)
    if (o >= taps[t].lo && o < taps[t].hi) s += taps[t].w * taps[t].row[o * stride + taps[t].off];
  return s;
}

}  // namespace

void depthwise_row_f32_simd128(float* y, int64_t n, int64_t stride, const DwTap* taps, int ntaps, float bias) {
  // Columns [lo, hi) read every tap inside its row: vectors there, single columns at the edges.
  int64_t lo = 0, hi = n;
  for (int t = 0; t < ntaps; ++t) {
    lo = imax(lo, taps[t].lo);
    hi = imin(hi, taps[t].hi);
  }
  if (hi < lo) hi = lo;
  // With stride 2 a vector of 4 columns reads one element past its last column, so that column
  // must not be the last valid one.
  const int64_t vec_end = stride == 1 ? hi : hi - 1;
  for (int64_t o = 0; o < lo && o < n; ++o) y[o] = depthwise_column(o, stride, taps, ntaps, bias);
  const v128_t vb = wasm_f32x4_splat(bias);
  int64_t o = lo;
  if (stride == 1) {
    for (; o + 8 <= vec_end; o += 8) {
      v128_t a0 = vb, a1 = vb;
      for (int t = 0; t < ntaps; ++t) {
        const float* src = taps[t].row + o + taps[t].off;
        const v128_t w = wasm_f32x4_splat(taps[t].w);
        a0 = madd(w, wasm_v128_load(src), a0);
        a1 = madd(w, wasm_v128_load(src + 4), a1);
      }
      wasm_v128_store(y + o, a0);
      wasm_v128_store(y + o + 4, a1);
    }
    for (; o + 4 <= vec_end; o += 4) {
      v128_t a0 = vb;
      for (int t = 0; t < ntaps; ++t)
        a0 = madd(wasm_f32x4_splat(taps[t].w), wasm_v128_load(taps[t].row + o + taps[t].off), a0);
      wasm_v128_store(y + o, a0);
    }
  } else if (stride == 2) {
    for (; o + 4 <= vec_end; o += 4) {
      v128_t a0 = vb;
      for (int t = 0; t < ntaps; ++t)
        a0 = madd(wasm_f32x4_splat(taps[t].w), load_even(taps[t].row + 2 * o + taps[t].off), a0);
      wasm_v128_store(y + o, a0);
    }
  }
  for (; o < n; ++o) y[o] = depthwise_column(o, stride, taps, ntaps, bias);
}

namespace {

// Output row oh of a depthwise plane from the zero-padded input xp (rows Wp apart, every read
// inside), KH x KW taps (K > 0: KH = KW = K known at compile time), in vectors of 4 columns.
template <int K>
void depthwise_padded_row(const float* xp, int64_t Wp, const v128_t* wv, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                          int64_t dh, int64_t dw, int64_t oh, int64_t OW, float bias, float* yrow) {
  const int64_t kh_n = K > 0 ? K : KH, kw_n = K > 0 ? K : KW;
  const v128_t vb = wasm_f32x4_splat(bias);
  const float* top = xp + oh * sh * Wp;
  for (int64_t o = 0; o < OW; o += 4) {
    v128_t acc = vb;
    for (int64_t kh = 0; kh < kh_n; ++kh) {
      const float* r = top + kh * dh * Wp + o * sw;
      for (int64_t kw = 0; kw < kw_n; ++kw) {
        const v128_t xv = sw == 1 ? wasm_v128_load(r + kw * dw) : load_even(r + kw * dw);
        acc = madd(wv[kh * kw_n + kw], xv, acc);
      }
    }
    if (o + 4 <= OW) {
      wasm_v128_store(yrow + o, acc);
    } else {
      alignas(16) float t[4];
      wasm_v128_store(t, acc);
      for (int64_t i = 0; o + i < OW; ++i) yrow[o + i] = t[i];
    }
  }
}

}  // namespace

void depthwise_plane_f32_simd128(const float* x, int64_t IH, int64_t IW, const float* w, int64_t KH, int64_t KW,
                                 int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t OH,
                                 int64_t OW, float bias, float* y) {
  // Zero-padded copy of the plane, wide enough for whole vectors of output columns (and the one
  // extra element a stride-2 vector reads).
  const int64_t ow4 = (OW + 3) / 4 * 4;
  const int64_t Wp = imax(IW + 2 * pw, (ow4 - 1) * sw + (KW - 1) * dw + 2);
  const int64_t Hp = imax(IH + 2 * ph, (OH - 1) * sh + (KH - 1) * dh + 1);
  thread_local std::vector<float> buf;
  if (buf.size() < size_t(Hp * Wp)) buf.resize(size_t(Hp * Wp));
  float* xp = buf.data();
  std::fill(xp, xp + Hp * Wp, 0.0f);
  for (int64_t h = 0; h < IH; ++h) copy_row_f32_simd128(xp + (h + ph) * Wp + pw, x + h * IW, IW, 1);
  constexpr int kMaxTaps = 64;
  v128_t wv[kMaxTaps];
  for (int64_t t = 0; t < KH * KW; ++t) wv[t] = wasm_f32x4_splat(w[t]);
  for (int64_t oh = 0; oh < OH; ++oh) {
    if (KH == 3 && KW == 3)
      depthwise_padded_row<3>(xp, Wp, wv, KH, KW, sh, sw, dh, dw, oh, OW, bias, y + oh * OW);
    else
      depthwise_padded_row<0>(xp, Wp, wv, KH, KW, sh, sw, dh, dw, oh, OW, bias, y + oh * OW);
  }
}

void copy_row_f32_simd128(float* dst, const float* src, int64_t n, int64_t stride) {
  int64_t i = 0;
  if (stride == 1) {
    for (; i + 8 <= n; i += 8) {
      wasm_v128_store(dst + i, wasm_v128_load(src + i));
      wasm_v128_store(dst + i + 4, wasm_v128_load(src + i + 4));
    }
    for (; i + 4 <= n; i += 4) wasm_v128_store(dst + i, wasm_v128_load(src + i));
  } else if (stride == 2) {
    // reads src[2 i + 7]: keep the last vector's last element before the row's last one
    for (; i + 4 < n; i += 4) wasm_v128_store(dst + i, load_even(src + 2 * i));
  }
  for (; i < n; ++i) dst[i] = src[i * stride];
}

namespace {

// d[0:n] = 0
inline void zero_floats(float* d, int64_t n) {
  const v128_t z = wasm_f32x4_const_splat(0.0f);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(d + i, z);
  for (; i < n; ++i) d[i] = 0.0f;
}

}  // namespace

void im2col_row_f32_simd128(const Im2colRow& r, int64_t p0, int64_t p1, float* dst) {
  int64_t p = p0;
  int64_t ow = p0 % r.OW, t = p0 / r.OW;
  int64_t oh = t % r.OH, od = t / r.OH;
  while (p < p1) {
    const int64_t n = r.OW - ow < p1 - p ? r.OW - ow : p1 - p;
    const int64_t e = ow + n;
    float* d = dst + (p - p0) - ow;  // d[o] for output column o
    const int64_t id = od * r.sd + r.offd, ih = oh * r.sh + r.offh;
    if (id < 0 || id >= r.ID || ih < 0 || ih >= r.IH) {
      zero_floats(d + ow, n);
    } else {
      const int64_t a = imin(e, imax(r.ow_lo, ow)), b = imax(a, imin(r.ow_hi, e));  // columns inside the row
      const float* src = r.plane + (id * r.IH + ih) * r.IW + r.offw;  // src[o * sw] for output column o
      for (int64_t o = ow; o < a; ++o) d[o] = 0.0f;
      int64_t o = a;
      if (r.sw == 1) {
        for (; o + 8 <= b; o += 8) {
          wasm_v128_store(d + o, wasm_v128_load(src + o));
          wasm_v128_store(d + o + 4, wasm_v128_load(src + o + 4));
        }
        for (; o + 4 <= b; o += 4) wasm_v128_store(d + o, wasm_v128_load(src + o));
      } else if (r.sw == 2) {
        // load_even reads src[2 o + 7], one past the vector's last column: not the row's last one
        for (; o + 4 < b; o += 4) wasm_v128_store(d + o, load_even(src + 2 * o));
      }
      for (; o < b; ++o) d[o] = src[o * r.sw];
      for (o = b; o < e; ++o) d[o] = 0.0f;
    }
    p += n;
    ow = 0;
    if (++oh == r.OH) {
      oh = 0;
      ++od;
    }
  }
}

void conv_epilogue_f32_simd128(float* y, const float* res, const float* bias, int64_t rows, int64_t cols, int64_t ld,
                               float lo, float hi) {
  const v128_t vlo = wasm_f32x4_splat(lo), vhi = wasm_f32x4_splat(hi);
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * ld;
    const float* rr = res ? res + r * ld : nullptr;
    const float b = bias ? bias[r] : 0.0f;
    const v128_t vb = wasm_f32x4_splat(b);
    int64_t i = 0;
    for (; i + 4 <= cols; i += 4) {
      v128_t v = wasm_f32x4_add(wasm_v128_load(yr + i), vb);
      if (rr) v = wasm_f32x4_add(v, wasm_v128_load(rr + i));
      // pmax(v, lo) = v < lo ? lo : v and pmin(v, hi) = hi < v ? hi : v: NaN stays NaN
      wasm_v128_store(yr + i, wasm_f32x4_pmin(wasm_f32x4_pmax(v, vlo), vhi));
    }
    for (; i < cols; ++i) {
      float v = yr[i] + b + (rr ? rr[i] : 0.0f);
      v = v < lo ? lo : v;
      yr[i] = v > hi ? hi : v;
    }
  }
}

namespace {

// The clamp of conv_epilogue_f32_simd128 (NaN stays NaN), for one value.
inline float clamp_value(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

}  // namespace

void transpose_bias_f32_simd128(const float* src, int64_t rows, int64_t cols, int64_t lds, const float* bias,
                                float* dst, int64_t ldd, const float* res, float lo, float hi) {
  const v128_t vlo = wasm_f32x4_splat(lo), vhi = wasm_f32x4_splat(hi);
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* s = src + r * lds;
    int64_t c = 0;
    for (; c + 4 <= cols; c += 4) {
      // 4 rows x 4 columns turned into 4 columns x 4 rows
      const v128_t a = wasm_v128_load(s + c), b = wasm_v128_load(s + lds + c);
      const v128_t e = wasm_v128_load(s + 2 * lds + c), f = wasm_v128_load(s + 3 * lds + c);
      const v128_t ab01 = wasm_i32x4_shuffle(a, b, 0, 4, 1, 5), ef01 = wasm_i32x4_shuffle(e, f, 0, 4, 1, 5);
      const v128_t ab23 = wasm_i32x4_shuffle(a, b, 2, 6, 3, 7), ef23 = wasm_i32x4_shuffle(e, f, 2, 6, 3, 7);
      const v128_t t[4] = {wasm_i32x4_shuffle(ab01, ef01, 0, 1, 4, 5), wasm_i32x4_shuffle(ab01, ef01, 2, 3, 6, 7),
                           wasm_i32x4_shuffle(ab23, ef23, 0, 1, 4, 5), wasm_i32x4_shuffle(ab23, ef23, 2, 3, 6, 7)};
      for (int j = 0; j < 4; ++j) {
        v128_t v = bias ? wasm_f32x4_add(t[j], wasm_f32x4_splat(bias[c + j])) : t[j];
        if (res) v = wasm_f32x4_add(v, wasm_v128_load(res + (c + j) * ldd + r));
        wasm_v128_store(dst + (c + j) * ldd + r, wasm_f32x4_pmin(wasm_f32x4_pmax(v, vlo), vhi));
      }
    }
    for (; c < cols; ++c)
      for (int64_t i = r; i < r + 4; ++i)
        dst[c * ldd + i] =
            clamp_value(src[i * lds + c] + (bias ? bias[c] : 0.0f) + (res ? res[c * ldd + i] : 0.0f), lo, hi);
  }
  for (; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[c * ldd + r] =
          clamp_value(src[r * lds + c] + (bias ? bias[c] : 0.0f) + (res ? res[c * ldd + r] : 0.0f), lo, hi);
}

}  // namespace ember::cpu::detail

#endif  // __wasm_simd128__
