// The freestanding int8 kernels (include/ember/kernels/quantized.hpp) against the CPU backend's
// qlinear_conv (the ONNX runtime's QLinearConv): the same integer sums and f32 requantization, so
// the same bytes.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ember/kernels/quantized.hpp"
#include "ember/tensor/ops.hpp"
#include "ember/tensor/quantized_ops.hpp"

using namespace ember;

namespace {

DynTensor scalar_f32(double v) { return DynTensor::full({}, v, DType::f32); }

struct QConvCase {
  int32_t c, h, w, m, k, stride, pad, groups;
};

class QuantizedConv : public ::testing::TestWithParam<QConvCase> {};

TEST_P(QuantizedConv, MatchesCpuBackendBytes) {
  const QConvCase p = GetParam();
  const int32_t out = (p.h + 2 * p.pad - p.k) / p.stride + 1, out_w = (p.w + 2 * p.pad - p.k) / p.stride + 1;
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> u8(0, 255), i8(-127, 127), b32(-2000, 2000);
  std::vector<uint8_t> x(size_t(p.c * p.h * p.w));
  for (uint8_t& v : x) v = uint8_t(u8(rng));
  std::vector<int8_t> w(size_t(p.m * (p.c / p.groups) * p.k * p.k));
  for (int8_t& v : w) v = int8_t(i8(rng));
  std::vector<int32_t> bias(size_t(p.m)), wz(size_t(p.m));
  std::vector<int8_t> wz8(size_t(p.m));
  for (int32_t& v : bias) v = b32(rng);
  for (size_t i = 0; i < wz.size(); ++i) wz8[i] = int8_t(wz[i] = int32_t(i % 5) - 2);  // per-channel zero points
  std::vector<float> w_scale(size_t(p.m));
  for (size_t i = 0; i < w_scale.size(); ++i) w_scale[i] = 0.002f + 0.0005f * float(i);
  const float x_scale = 0.02f, y_scale = 0.05f;
  const int32_t x_zp = 117, y_zp = 9;
  std::vector<float> mult(size_t(p.m));
  for (size_t i = 0; i < mult.size(); ++i) mult[i] = (x_scale * w_scale[i]) / y_scale;

  const kernels::Conv2dShape s{p.c,      p.h,      p.w,   p.m,   out, out_w, p.k,     p.k,
                               p.stride, p.stride, p.pad, p.pad, 1,   1,     p.groups};
  std::vector<uint8_t> y(size_t(p.m * out * out_w));
  ASSERT_EQ(
      kernels::qlinear_conv2d_u8(s, x.data(), x_zp, w.data(), wz.data(), bias.data(), mult.data(), y_zp, y.data()),
      kernels::Status::ok);

  DynTensor want =
      qlinear_conv(from_vector(x, Shape{1, p.c, p.h, p.w}), scalar_f32(x_scale), DynTensor::full({}, x_zp, DType::u8),
                   from_vector(w, Shape{p.m, p.c / p.groups, p.k, p.k}), from_vector(w_scale, Shape{p.m}),
                   from_vector(wz8, Shape{p.m}), scalar_f32(y_scale), DynTensor::full({}, y_zp, DType::u8),
                   from_vector(bias, Shape{p.m}), {.stride = {p.stride}, .padding = {p.pad}, .groups = p.groups});
  EXPECT_EQ(y, want.to_vector<uint8_t>());
}

INSTANTIATE_TEST_SUITE_P(Shapes, QuantizedConv,
                         ::testing::Values(QConvCase{3, 8, 8, 5, 3, 1, 1, 1},    // ordinary, padded
                                           QConvCase{8, 7, 9, 8, 3, 2, 1, 8},    // depthwise, stride 2
                                           QConvCase{16, 5, 5, 12, 1, 1, 0, 1},  // pointwise
                                           QConvCase{6, 6, 6, 4, 3, 1, 0, 2}));  // grouped

TEST(QuantizedKernels, QuantizeRoundsHalfToEvenAndSaturates) {
  const float x[] = {0.5f, 1.5f, 2.5f, -0.5f, 1000.0f, -1000.0f, 3.49f};
  uint8_t q[7];
  kernels::quantize_u8(7, x, 1.0f, 10, q);
  EXPECT_EQ(std::vector<uint8_t>(q, q + 7), (std::vector<uint8_t>{10, 12, 12, 10, 255, 0, 13}));
  float back[7];
  kernels::dequantize_u8(7, q, 0.5f, 10, back);
  EXPECT_EQ(back[1], 1.0f);
  EXPECT_EQ(back[5], -5.0f);
  uint8_t sum[2];
  const uint8_t a[2] = {20, 200}, b[2] = {30, 250};
  kernels::qlinear_add_u8(2, a, 0.1f, 10, b, 0.2f, 20, 0.25f, 5, sum);
  // (20 - 10) 0.1 + (30 - 20) 0.2 = 3 -> 12 steps + 5; (190 0.1 + 230 0.2) / 0.25 = 260 -> 255
  EXPECT_EQ(sum[0], 17);
  EXPECT_EQ(sum[1], 255);
}

}  // namespace
