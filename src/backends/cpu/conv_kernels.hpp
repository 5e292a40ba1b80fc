// The AVX-512 convolution kernels of conv_avx512.cpp and the plain structs they take; call
// them only when cpu::features().avx512 (the wasm build has SIMD128 ones instead, at the end).
// This header includes nothing but <cstdint>, so that conv_avx512.cpp (built with AVX-512 flags)
// shares no standard-library templates with the other files through COMDAT folding.
#pragma once

#include <cstdint>

namespace ember::cpu::detail {

// One input row feeding a depthwise output row.
struct DwTap {
  const float* row;  // the input row
  int64_t off;       // output column o reads row[o * stride + off]
  int64_t lo, hi;    // the output columns [lo, hi) for which that element is inside the row
  float w;           // the tap's weight
};
void depthwise_row_f32_avx512(float* y, int64_t n, int64_t stride, const DwTap* taps, int ntaps, float bias);
void depthwise3x3_plane_f32_avx512(const float* x, int64_t H, int64_t W, const float* w, float bias, float* y);
// Depthwise 3x3, stride 1, padding 1 over `planes` consecutive H x W planes with W <= 128 (one input
// channel each: x and y planes * H * W, w planes * 9, bias planes or null):
// y = clamp(bias + taps, lo, hi); 16 / W rows a vector under 16 columns, 16-column chunks of a row above.
void depthwise3x3_small_f32_avx512(const float* x, int64_t planes, int64_t H, int64_t W, const float* w,
                                   const float* bias, float lo, float hi, float* y);
// Depthwise 3x3, stride 2, padding 1 over `planes` consecutive H x W planes (OH x OW outputs each;
// w planes * 9, bias planes or null): y = clamp(bias + taps, lo, hi).
void depthwise3x3s2_f32_avx512(const float* x, int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW,
                               const float* w, const float* bias, float lo, float hi, float* y);
void depthwise_cvec_f32_avx512(const float* xb, int64_t Wp, const float* w, int64_t KH, int64_t KW, int64_t sh,
                               int64_t sw, int64_t dh, int64_t dw, int64_t OH, int64_t OW, float* yb);
// One tap of a depthwise plane on a flat pixel grid (depthwise_grid_f32_avx512): grid pixel p reads
// src[p + off]. src is a zero-padded copy of the input plane with rows of `pitch` floats, or for a
// stride s one stride phase of it (every s-th row and column).
struct DwGridTap {
  const float* src;
  int64_t off;
  float w;
};
// The OH x OW output plane y from the OH x pitch grid (pitch >= OW; grid columns from OW on are
// dropped): y = clamp(bias + sum of the taps, lo, hi). Reads each src up to 64 floats past the
// grid's end, which must be readable (and should be zero).
void depthwise_grid_f32_avx512(float* y, int64_t OH, int64_t OW, int64_t pitch, const DwGridTap* taps, int ntaps,
                               float bias, float lo, float hi);
// The stride phases of a zero-padded H x W plane x (padding ph rows, pw columns each side; strides
// sh, and sw of 1 or 2) for depthwise_grid_f32_avx512: phase (a, b) at dst + (a * sw + b) * rows * pitch,
// its row i, column j = padded element (sh * i + a, sw * j + b), or 0 past the padded plane.
void depthwise_phases_f32_avx512(const float* x, int64_t H, int64_t W, int64_t ph, int64_t pw, int64_t sh, int64_t sw,
                                 int64_t rows, int64_t pitch, float* dst);
// One im2col row.
struct Im2colRow {
  const float* plane;  // the input plane of the row's channel
  int64_t ID, IH, IW, OH, OW;
  int64_t sd, sh, sw;        // strides (sw is 1 or 2)
  int64_t offd, offh, offw;  // kd * dd - pd, kh * dh - ph, kw * dw - pw
  int64_t ow_lo, ow_hi;      // output columns whose input column lies inside the input row
};
void im2col_row_f32_avx512(const Im2colRow& r, int64_t p0, int64_t p1, float* dst);
void add_row_f32_avx512(float* dst, const float* src, int64_t n);
// The geometry im2col_panels_f32_avx512 reads; dims (D, H, W).
struct Im2colGeom {
  const float* x;  // the first input channel plane of the image / group
  int64_t plane;   // distance between channel planes
  int64_t in[3], out[3], k[3], s[3], p[3], d[3];
};
void im2col_panels_f32_avx512(const Im2colGeom& g, int64_t r0, int64_t kc, int64_t p0, int64_t p1, int mr,
                              float* dst);
void conv_implicit_tile_f32_avx512(int m, int sw, bool split7, int64_t rowstep, int64_t kc, const float* a,
                                   const int64_t* off, const float* b, float* ct, int64_t ldc, bool accumulate,
                                   int n);
// dst[c * ldd + r] = clamp(src[r * lds + c] + bias[c] + res[c * ldd + r], lo, hi) (bias, res may be
// null: none; lo / hi may be infinite): a pixel-major result back into channel planes, with
// conv_fused's epilogue in the same pass.
void transpose_bias_f32_avx512(const float* src, int64_t rows, int64_t cols, int64_t lds, const float* bias,
                               float* dst, int64_t ldd, const float* res, float lo, float hi);
void conv_epilogue_f32_avx512(float* y, const float* res, const float* bias, int64_t rows, int64_t cols, int64_t ld,
                              float lo, float hi);

// Winograd F(4x4, 3x3) and F(2x2, 3x3) tile transforms (conv_winograd_tiles.hpp), channels contiguous.
// Input: the a x a input tile at d (a = 6 or 4; rows rs floats apart, pixels C apart, C channels
// each) into its a^2 transformed values per channel: position xi = a * i + j at v + xi * vs, channel c
// at [c]. Output: the a^2 products per output channel (position xi at m + xi * ms) into the tile's
// 4 x 4 (2 x 2) outputs, of which the first rows x cols are stored: pixel (i, j) at y + i * rs + j * O.
struct WinogradTransforms {
  void (*input)(const float* d, int64_t rs, int64_t C, float* v, int64_t vs);
  void (*output)(const float* m, int64_t ms, int64_t O, float* y, int64_t rs, int rows, int cols);
};
// Those of F(tile x tile, 3x3), tile 2 or 4 (conv_winograd_avx512.cpp).
WinogradTransforms winograd_transforms_f32_avx512(int tile);

#if defined(__wasm_simd128__)
// conv_simd128.cpp, the wasm build's counterparts: depthwise_row_f32_avx512's contract for a stride
// of 1 or 2 (other strides run scalar); dst[i] = src[i * stride] for i < n; conv_epilogue_f32_avx512's.
void depthwise_row_f32_simd128(float* y, int64_t n, int64_t stride, const DwTap* taps, int ntaps, float bias);
void copy_row_f32_simd128(float* dst, const float* src, int64_t n, int64_t stride);
// A whole 2-d depthwise plane (x: IH x IW, w: KH x KW with KH * KW <= 64, stride sw 1 or 2) into y
// (OH x OW), through a zero-padded copy of the plane.
void depthwise_plane_f32_simd128(const float* x, int64_t IH, int64_t IW, const float* w, int64_t KH, int64_t KW,
                                 int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t OH,
                                 int64_t OW, float bias, float* y);
void conv_epilogue_f32_simd128(float* y, const float* res, const float* bias, int64_t rows, int64_t cols, int64_t ld,
                               float lo, float hi);
// transpose_bias_f32_avx512's contract.
void transpose_bias_f32_simd128(const float* src, int64_t rows, int64_t cols, int64_t lds, const float* bias,
                                float* dst, int64_t ldd, const float* res, float lo, float hi);
// conv_winograd_simd128.cpp: winograd_transforms_f32_avx512's.
WinogradTransforms winograd_transforms_f32_simd128(int tile);
#endif

}  // namespace ember::cpu::detail
