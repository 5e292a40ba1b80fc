// Freestanding elementwise and data-movement kernels over raw float32 pointers: clamps (ReLU,
// ReLU6), sigmoid, tanh, softmax, adds with broadcasting of a per-channel operand, a per-channel
// scale and shift (an inference BatchNormalization), concatenation and transposition. Unless a
// kernel says otherwise, `y` may be the same buffer as `x` (in place). The exponential is
// ember's own (exp_f32), so results are the same on every target.
//
//   float x[4] = {-1.0f, 0.5f, 3.0f, 9.0f}, y[4];
//   ember::kernels::clamp_f32(4, x, y, ember::kernels::kRelu6);   // y = {0, 0.5, 3, 6}
//   ember::kernels::softmax_f32(1, 4, x, y);                       // each row sums to 1
//   float e = ember::kernels::exp_f32(1.0f);                       // 2.7182817f
#pragma once

#include <cstdint>

#include "ember/core/config.hpp"
#include "ember/kernels/status.hpp"

namespace ember::kernels {

// Bounds that an activation clamps to: ReLU is [0, +inf], ReLU6 [0, 6], none [-inf, +inf].
struct Clamp {
  float lo;  // the smallest value kept
  float hi;  // the largest value kept
};
inline constexpr float kInfinity = __builtin_inff();     // +infinity without <cmath> or <limits>
inline constexpr Clamp kNoClamp{-kInfinity, kInfinity};  // no activation
inline constexpr Clamp kRelu{0.0f, kInfinity};           // ReLU
inline constexpr Clamp kRelu6{0.0f, 6.0f};               // ReLU6 (Clip(0, 6))

// e^x for float32, within about 2 ulp; saturates to 0 below -87.3 and +inf above 88.7.
float exp_f32(float x);
// 1 / (1 + e^-x).
float sigmoid_f32(float x);
// tanh(x), within about 1e-7 of the exact value.
float tanh_f32(float x);

// y[i] = min(max(x[i], clamp.lo), clamp.hi) for i < n.
void clamp_f32(int32_t n, const float* x, float* y, Clamp clamp);
// y[i] = sigmoid(x[i]) for i < n.
void sigmoid_f32(int32_t n, const float* x, float* y);
// y[i] = tanh(x[i]) for i < n.
void tanh_f32(int32_t n, const float* x, float* y);
// Softmax over each of `rows` contiguous rows of `cols` values (the last axis).
void softmax_f32(int32_t rows, int32_t cols, const float* x, float* y);
// Softmax over the middle axis of x [outer, n, inner] (an axis other than the last).
void softmax_axis_f32(int32_t outer, int32_t n, int32_t inner, const float* x, float* y);

// y[i] = clamp(a[i] + b[i]) for i < n (y may be a or b).
void add_f32(int32_t n, const float* a, const float* b, float* y, Clamp clamp = kNoClamp);
// y[o, c, i] = clamp(x[o, c, i] + b[c]) over [outer, channels, inner] (b broadcast; y may be x).
void add_channel_f32(int32_t outer, int32_t channels, int32_t inner, const float* x, const float* b, float* y,
                     Clamp clamp = kNoClamp);
// y[o, c, i] = clamp(x[o, c, i] * scale[c] + shift[c]) over [outer, channels, inner] (y may be x).
void scale_shift_f32(int32_t outer, int32_t channels, int32_t inner, const float* x, const float* scale,
                     const float* shift, float* y, Clamp clamp = kNoClamp);

// Concatenation of `count` parts along an axis: part p is [outer, widths[p]] (widths count the
// elements of the axis and all after it), y is [outer, sum of widths]. y must not be a part.
void concat_f32(int32_t outer, int32_t count, const float* const* parts, const int32_t* widths, float* y);

// y[o, j, i] = x[o, indices[j], i] over x [outer, axis_size, inner] (ONNX Gather with constant
// indices, already made non-negative); y is [outer, count, inner] and must not be x.
void gather_f32(int32_t outer, int32_t axis_size, int32_t inner, int32_t count, const int32_t* indices,
                const float* EMBER_RESTRICT x, float* EMBER_RESTRICT y);

// The largest rank transpose_f32 takes.
inline constexpr int32_t kMaxTransposeRank = 6;
// y = x with its axes permuted: y's axis i is x's axis perm[i]; dims are x's. y must not be x.
Status transpose_f32(int32_t rank, const int32_t* dims, const int32_t* perm, const float* EMBER_RESTRICT x,
                     float* EMBER_RESTRICT y);

}  // namespace ember::kernels
