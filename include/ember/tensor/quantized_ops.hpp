// Quantized products: int8 x int8 -> int32 matrix products and convolutions (ONNX MatMulInteger,
// ConvInteger), their requantizing forms (QLinearMatMul, QLinearConv: an int8 or f32 output) and
// weight-only quantized linear layers (int8 / int4 weights in blocks along K, f32 activations: the
// products of LLM decoding, in the spirit of ggml's Q8_0 / Q4_0).
//
//   auto a = DynTensor::from_vector<uint8_t>({1, 2, 3, 4}, {2, 2});
//   auto b = DynTensor::from_vector<int8_t>({1, -1, 2, 0}, {2, 2});
//   DynTensor c = matmul_integer(a, b);                      // i32 [2, 2]: {5, -1, 11, -3}
//   // a 2x2 integer convolution, x's zero point 1: each output (2 - 1) * 3 * 4
//   auto xi = DynTensor::full({1, 1, 3, 3}, 2, DType::u8);
//   auto wi = DynTensor::full({1, 1, 2, 2}, 3, DType::i8);
//   DynTensor yi = conv_integer(xi, wi, DynTensor::full({}, 1, DType::u8));  // i32 [1, 1, 2, 2], each 12
//   // a [1, 64] f32 input times a [3, 64] weight stored as 8-bit blocks of 32
//   auto x = DynTensor::ones({1, 64});
//   auto q = DynTensor::ones({3, 64}, DType::i8);
//   auto s = DynTensor::full({3, 2}, 0.5, DType::f32);
//   DynTensor y = matmul_wq(x, q, s, std::nullopt, {.bits = 8, .block = 32});  // f32 [1, 3], each 32
//   # run
#pragma once

#include <optional>

#include "ember/tensor/dyn_tensor.hpp"
#include "ember/tensor/ops.hpp"

namespace ember {

// sum_k (a - a_zero_point)(b - b_zero_point) in i32 (wrapping modulo 2^32), ONNX MatMulInteger.
// a: u8 or i8 [.., M, K]; b: u8 or i8 [.., K, N]; batch dims broadcast as in matmul. A zero
// point has its operand's dtype and holds one value (any shape of one element) or one per row
// of a ([M]) / per column of b ([N]); absent means 0.
DynTensor matmul_integer(DynTensor a, DynTensor b, std::optional<DynTensor> a_zero_point = std::nullopt,
                         std::optional<DynTensor> b_zero_point = std::nullopt);

// Integer convolution, ONNX ConvInteger: y [N, M, *out] (i32, wrapping modulo 2^32) = the sum over
// each window of (x - x_zero_point)(w - w_zero_point), where padding counts as x_zero_point (it adds
// nothing). x: u8 or i8 [N, C, L] / [N, C, H, W] / [N, C, D, H, W]; w: u8 or i8 [M, C / groups,
// *kernel]; x_zero_point: x's dtype, one value; w_zero_point: w's dtype, one value or [M] (one per
// output channel); absent means 0. o: stride, dilation and groups as conv2d's; padding one value,
// one per spatial dim (both sides), or two per dim (ONNX's pads: every dim's begin, then every
// dim's end); no output_padding. No gradient flows through it.
DynTensor conv_integer(DynTensor x, DynTensor w, std::optional<DynTensor> x_zero_point = std::nullopt,
                       std::optional<DynTensor> w_zero_point = std::nullopt, ConvOptions o = {});

// Requantizing integer convolution, ONNX QLinearConv: acc = conv_integer(x, w, x_zero_point,
// w_zero_point, o) + bias (i32, wrapping), then, in the kernel's epilogue while the output tile is in
// cache, y = saturate(round_half_even(f32(acc) * m[c]) + y_zero_point) with m[c] = (x_scale *
// w_scale[c]) / y_scale computed in f32 (c: the output channel). x_scale, y_scale: one f32 value;
// w_scale: one value or [M] (per output channel); zero points as conv_integer's, y_zero_point one
// u8 or i8 value that gives y's dtype (u8 when absent); bias: i32 [M] (quantized with scale
// x_scale * w_scale, zero point 0). A ReLU before the requantization is y_zero_point at the bottom
// of y's range (a post-ReLU u8 range has zero point 0): saturation clamps it. The weights are packed
// once and kept with their storage from their second use on (inference); a write to them drops it.
//
//   auto x = DynTensor::full({1, 1, 3, 3}, 130, DType::u8);        // x_zero_point 128: x = 2 steps
//   auto w = DynTensor::full({2, 1, 3, 3}, 3, DType::i8);
//   auto s = [](double v) { return DynTensor::full({}, v, DType::f32); };
//   DynTensor y = qlinear_conv(x, s(0.5), DynTensor::full({}, 128, DType::u8), w, s(0.25), std::nullopt,
//                              s(1.0), DynTensor::full({}, 10, DType::u8), std::nullopt, {.padding = {1}});
//   // u8 [1, 2, 3, 3]: the centre 2 * 3 * 9 = 54 steps * 0.125 = 6.75 -> 7, + 10 = 17
DynTensor qlinear_conv(DynTensor x, DynTensor x_scale, std::optional<DynTensor> x_zero_point, DynTensor w,
                       DynTensor w_scale, std::optional<DynTensor> w_zero_point, DynTensor y_scale,
                       std::optional<DynTensor> y_zero_point, std::optional<DynTensor> bias = std::nullopt,
                       ConvOptions o = {});
// The same convolution with a dequantized f32 output (no y_scale): y = clamp(x_scale * w_scale[c] *
// acc + bias[c], min, max), acc the integer sum without bias, bias f32 [M]; ReLU: min = 0.
DynTensor qlinear_conv_f32(DynTensor x, DynTensor x_scale, std::optional<DynTensor> x_zero_point, DynTensor w,
                           DynTensor w_scale, std::optional<DynTensor> w_zero_point,
                           std::optional<DynTensor> bias = std::nullopt, ConvOptions o = {},
                           std::optional<double> min = std::nullopt, std::optional<double> max = std::nullopt);

// Requantizing integer matrix product, ONNX QLinearMatMul: acc = matmul_integer(a, b, a_zero_point,
// b_zero_point) + bias, y = saturate(round_half_even(f32(acc) * m[j]) + y_zero_point), m[j] =
// (a_scale * b_scale[j]) / y_scale in f32. a: u8 / i8 [.., M, K] (leading dims flattened into rows);
// b: u8 / i8 [K, N] (the weight: packed once and kept, as qlinear_conv's); b_scale and
// b_zero_point one value or [N] (per column); a_zero_point one value; bias: i32 [N] or none.
//
//   auto a = DynTensor::from_vector<uint8_t>({10, 20}, {1, 2});
//   auto b = DynTensor::from_vector<int8_t>({1, 2, 3, 4}, {2, 2});
//   auto s = [](double v) { return DynTensor::full({}, v, DType::f32); };
//   DynTensor y = qlinear_matmul(a, s(0.1), std::nullopt, b, s(1.0), std::nullopt, s(1.0), std::nullopt);
//   // u8 [1, 2]: {round(7.0), round(10.0)} = {7, 10}
DynTensor qlinear_matmul(DynTensor a, DynTensor a_scale, std::optional<DynTensor> a_zero_point, DynTensor b,
                         DynTensor b_scale, std::optional<DynTensor> b_zero_point, DynTensor y_scale,
                         std::optional<DynTensor> y_zero_point, std::optional<DynTensor> bias = std::nullopt);
// The same product with a dequantized f32 output: y = clamp(a_scale * b_scale[j] * acc + bias[j],
// min, max), bias f32 [N] (a quantized Linear layer's y = x W^T + b with b = W^T quantized).
DynTensor qlinear_matmul_f32(DynTensor a, DynTensor a_scale, std::optional<DynTensor> a_zero_point, DynTensor b,
                             DynTensor b_scale, std::optional<DynTensor> b_zero_point,
                             std::optional<DynTensor> bias = std::nullopt, std::optional<double> min = std::nullopt,
                             std::optional<double> max = std::nullopt);

// ONNX Runtime's QLinearAdd (com.microsoft): c = saturate(round_half_even((a_scale (a - a_zp) +
// b_scale (b - b_zp)) / c_scale) + c_zp) in one pass, in f32 as the plain ops would compute it; a and
// b u8 or i8 (one dtype, broadcast against each other), scales f32 of one value, zero points one
// value of a's dtype (none: 0); c has a's dtype.
//
//   auto a = DynTensor::from_vector<uint8_t>({10, 20}, {2});
//   auto b = DynTensor::from_vector<uint8_t>({4, 6}, {2});
//   auto s = [](double v) { return DynTensor::full({}, v, DType::f32); };
//   DynTensor c = qlinear_add(a, s(0.5), std::nullopt, b, s(1.0), std::nullopt, s(2.0), std::nullopt);
//   // u8 [2]: {round(4.5), round(8.0)} = {4, 8}
DynTensor qlinear_add(DynTensor a, DynTensor a_scale, std::optional<DynTensor> a_zero_point, DynTensor b,
                      DynTensor b_scale, std::optional<DynTensor> b_zero_point, DynTensor c_scale,
                      std::optional<DynTensor> c_zero_point);

// How a weight of matmul_wq is quantized: bits per weight (4 or 8) and weights per scale
// along K (32, 64 or 128).
struct WeightQuant {
  int bits = 4;        // 4: two weights a byte (element 2j in the low nibble); 8: one a byte
  int64_t block = 32;  // weights sharing one scale (and zero point) along K
  // Round x to int8 per block of 32 along K first (scale max|x| / 127, round half to even: ggml's
  // Q8_0 activations), so that the product runs on int8 dot products (AVX-512 VNNI where the CPU
  // has it): several times less work per weight, for decoding, at the cost of x's rounding.
  bool quantize_x = false;
};

// y [.., N] = x [.., K] W^T with W [N, K] stored quantized per block along K:
// - bits 8: data i8 [N, K], W = scale * q; with a zero point, data u8 and W = scale * (q - zp);
// - bits 4: data u8 [N, K / 2], element 2j of a row in the low nibble of byte j, 2j + 1 in the
//   high nibble (ONNX's int4 packing); W = scale * q with q a two's complement nibble in
//   [-8, 7]; with a zero point, q is the unsigned nibble (0..15) and W = scale * (q - zp).
// scales: f32 [N, K / block]; zero_point: u8 [N, K / block] (nibble values for 4 bits).
// x is f32 (f16 and bf16 are computed in f32); the result is f32. On an autodiff device x gets its
// gradient, g dequant(W) (straight through quantize_x); a tracked scale or zero point is an error.
DynTensor matmul_wq(DynTensor x, DynTensor data, DynTensor scales, std::optional<DynTensor> zero_point,
                    WeightQuant quant);

}  // namespace ember
