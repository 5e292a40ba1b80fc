// Freestanding int8 kernels over raw pointers, with ONNX's quantized semantics as ember's runtime
// computes them (ember-onnx quantize's QOperator models, docs/quantization.md): u8 activations
// with a zero point, i8 weights with per-channel zero points and scales, i32 biases; products
// summed exactly in i32, then requantized in f32 and rounded half to even.
//
//   float x[4] = {0.0f, 0.5f, 1.0f, -1.0f}, back[4];
//   uint8_t q[4];
//   ember::kernels::quantize_u8(4, x, 1.0f / 128, 128, q);      // {128, 192, 255, 0}
//   ember::kernels::dequantize_u8(4, q, 1.0f / 128, 128, back);  // {0, 0.5, 0.9921875, -1}
#pragma once

#include <cstdint>

#include "ember/core/config.hpp"
#include "ember/kernels/conv.hpp"
#include "ember/kernels/pool.hpp"
#include "ember/kernels/status.hpp"

namespace ember::kernels {

// x rounded half to even (as std::nearbyint in the default rounding mode), for |x| < 2^22.
float round_half_even_f32(float x);

// ONNX QuantizeLinear to u8: y = clamp(round(x / scale) + zero_point, 0, 255).
void quantize_u8(int32_t n, const float* EMBER_RESTRICT x, float scale, int32_t zero_point, uint8_t* EMBER_RESTRICT y);
// ONNX DequantizeLinear from u8: y = (x - zero_point) * scale.
void dequantize_u8(int32_t n, const uint8_t* EMBER_RESTRICT x, float scale, int32_t zero_point,
                   float* EMBER_RESTRICT y);

// ONNX QLinearConv on u8 activations and i8 weights (as conv2d_f32's shape and layout):
// acc = bias[m] + sum (x - x_zero_point) (w - w_zero_point[m]) in i32, then
// y = round(clamp(acc * multiplier[m], -y_zero_point, 255 - y_zero_point)) + y_zero_point, where
// multiplier[m] = x_scale * w_scale[m] / y_scale (the caller's, in f32). `bias` may be null.
Status qlinear_conv2d_u8(const Conv2dShape& shape, const uint8_t* EMBER_RESTRICT x, int32_t x_zero_point,
                         const int8_t* EMBER_RESTRICT w, const int32_t* EMBER_RESTRICT w_zero_point,
                         const int32_t* EMBER_RESTRICT bias, const float* EMBER_RESTRICT multiplier,
                         int32_t y_zero_point, uint8_t* EMBER_RESTRICT y);

// com.microsoft QLinearAdd on u8 of the same shape: y = clamp(round(((a - a_zp) a_scale +
// (b - b_zp) b_scale) / y_scale) + y_zp, 0, 255), in f32. y may be a or b.
void qlinear_add_u8(int32_t n, const uint8_t* a, float a_scale, int32_t a_zero_point, const uint8_t* b, float b_scale,
                    int32_t b_zero_point, float y_scale, int32_t y_zero_point, uint8_t* y);

// MaxPool on u8 (the windows of max_pool2d_f32; padding is never the maximum).
void max_pool2d_u8(const Pool2dShape& shape, const uint8_t* EMBER_RESTRICT x, uint8_t* EMBER_RESTRICT y);

}  // namespace ember::kernels
