// The quantized products of the tensor API (src/tensor/quantized_ops.cpp): hand-computed values,
// the errors on bad input, and how the decorators treat the ops (fusion: opaque, autodiff: no
// gradient). The values against numpy are in tests/conformance/cases/quant.json; every ISA path
// against the portable one in tests/backends/cpu/qgemm_test.cpp and conv_integer_test.cpp.
#include "ember/tensor/quantized_ops.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ember/ember.hpp"

namespace ember {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR(expr, ...)                                                   \
  do {                                                                            \
    const std::string msg = error_of([&] { (void)(expr); });                      \
    for (const char* part : {__VA_ARGS__})                                        \
      EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg; \
  } while (0)

TEST(MatmulInteger, HandComputedValues) {
  // [[1, 2], [3, 4]] (u8) x [[1, -1], [2, 0]] (i8) = [[5, -1], [11, -3]]; with zero points 1 (a)
  // and [0, -1] (b, per column): [[0, 1], [2, 3]] x [[1, 0], [2, 1]] = [[2, 1], [8, 3]]
  auto a = DynTensor::from_vector<uint8_t>({1, 2, 3, 4}, {2, 2});
  auto b = DynTensor::from_vector<int8_t>({1, -1, 2, 0}, {2, 2});
  EXPECT_EQ(matmul_integer(a, b).to_vector<int32_t>(), (std::vector<int32_t>{5, -1, 11, -3}));
  auto za = DynTensor::from_vector<uint8_t>({1}, {1});
  auto zb = DynTensor::from_vector<int8_t>({0, -1}, {2});
  DynTensor c = matmul_integer(a, b, za, zb);
  EXPECT_EQ(c.dtype(), DType::i32);
  EXPECT_EQ(c.to_vector<int32_t>(), (std::vector<int32_t>{2, 1, 8, 3}));
}

TEST(MatmulWq, HandComputedValues) {
  // 4-bit: the row [1, -2, 7, -8, 0, ..] (low nibble first) with scale 0.5 dotted with ones;
  // affine: nibbles [1, 2, 15, 0, ..] minus zero point 3 with scale 2, dotted with ones
  std::vector<uint8_t> row(16, 0);
  row[0] = 0xE1;  // 1 (low), -2 (high)
  row[1] = 0x87;  // 7, -8
  auto x = DynTensor::ones({1, 32});
  auto y = matmul_wq(x, DynTensor::from_vector<uint8_t>(row, {1, 16}), DynTensor::from_vector<float>({0.5f}, {1, 1}),
                     std::nullopt, {.bits = 4, .block = 32});
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-1.f}));  // 0.5 * (1 - 2 + 7 - 8)
  row[0] = 0x21;
  row[1] = 0x0F;
  auto ya = matmul_wq(x, DynTensor::from_vector<uint8_t>(row, {1, 16}), DynTensor::from_vector<float>({2.f}, {1, 1}),
                      DynTensor::from_vector<uint8_t>({3}, {1, 1}), {.bits = 4, .block = 32});
  EXPECT_EQ(ya.to_vector<float>(), (std::vector<float>{2.f * (1 + 2 + 15 + 0 - 3 * 32)}));
}

TEST(MatmulWq, HalfInputsComputeInF32AndRoundedXStaysClose) {
  std::vector<uint8_t> bytes(3 * 32);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 37 + 11);
  auto data = DynTensor::from_vector<uint8_t>(bytes, {3, 32});
  auto scales = DynTensor::full({3, 2}, 0.25, DType::f32);
  auto x = DynTensor::uniform({2, 64}, -1, 1).cast(DType::bf16);
  const std::vector<float> want = matmul_wq(x.cast(DType::f32), data, scales, std::nullopt, {4, 32}).to_vector<float>();
  DynTensor y = matmul_wq(x, data, scales, std::nullopt, {4, 32});
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_EQ(y.to_vector<float>(), want);
  // x rounded to int8 per 32: within a 127th of each 32's largest |x| per weight (|q| <= 8, scale 0.25)
  const std::vector<float> rounded =
      matmul_wq(x, data, scales, std::nullopt, {.bits = 4, .block = 32, .quantize_x = true}).to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(rounded[i], want[i], 64 * 8 * 0.25 * 0.5 / 127) << i;
}

TEST(MatmulInteger, BadInputErrors) {
  auto a = DynTensor::zeros({2, 3}, DType::u8), b = DynTensor::zeros({3, 4}, DType::i8);
  EXPECT_ERROR(matmul_integer(DynTensor::zeros({2, 3}, DType::f32), b), "matmul_integer", "'a'", "u8 or i8");
  EXPECT_ERROR(matmul_integer(a, DynTensor::zeros({3, 4}, DType::i32)), "matmul_integer", "'b'", "u8 or i8");
  EXPECT_ERROR(matmul_integer(a, DynTensor::zeros({5, 4}, DType::i8)), "matmul_integer", "inner dimensions differ");
  EXPECT_ERROR(matmul_integer(DynTensor::zeros({3}, DType::u8), b), "matmul_integer", "'a'", "rank 1");
  EXPECT_ERROR(matmul_integer(a, b, DynTensor::zeros({1}, DType::i8)), "matmul_integer", "'a_zero_point'", "dtype");
  EXPECT_ERROR(matmul_integer(a, b, DynTensor::zeros({3}, DType::u8)), "matmul_integer", "'a_zero_point'", "[2]");
  EXPECT_ERROR(matmul_integer(a, b, std::nullopt, DynTensor::zeros({3}, DType::i8)), "matmul_integer",
               "'b_zero_point'", "[4]");
}

TEST(MatmulWq, BadInputErrors) {
  auto x = DynTensor::zeros({2, 64});
  auto d4 = DynTensor::zeros({3, 32}, DType::u8), d8 = DynTensor::zeros({3, 64}, DType::i8);
  auto s = DynTensor::zeros({3, 2});
  const WeightQuant q4{4, 32}, q8{8, 32};
  EXPECT_ERROR(matmul_wq(x, d4, s, std::nullopt, {3, 32}), "matmul_wq", "bits must be 4 or 8");
  EXPECT_ERROR(matmul_wq(x, d4, s, std::nullopt, {4, 48}), "matmul_wq", "block must be 32, 64 or 128");
  EXPECT_ERROR(matmul_wq(DynTensor::zeros({2, 96}), d4, s, std::nullopt, {4, 64}), "matmul_wq",
               "not a multiple of the block size 64");
  EXPECT_ERROR(matmul_wq(DynTensor::zeros({2, 64}, DType::i32), d4, s, std::nullopt, q4), "matmul_wq", "'x'", "f32");
  EXPECT_ERROR(matmul_wq(x, d8, s, std::nullopt, q4), "matmul_wq", "'data'", "u8");
  EXPECT_ERROR(matmul_wq(x, d4, s, std::nullopt, q8), "matmul_wq", "'data'", "i8");
  EXPECT_ERROR(matmul_wq(x, DynTensor::zeros({3, 30}, DType::u8), s, std::nullopt, q4), "matmul_wq", "'data'",
               "[3, 32]");
  EXPECT_ERROR(matmul_wq(DynTensor::zeros({2, 128}), d8, DynTensor::zeros({3, 4}), std::nullopt, q8), "matmul_wq",
               "'data'", "[3, 128]");
  EXPECT_ERROR(matmul_wq(x, d4, DynTensor::zeros({3, 3}), std::nullopt, q4), "matmul_wq", "'scales'", "[3, 2]");
  EXPECT_ERROR(matmul_wq(x, d4, DynTensor::zeros({3, 2}, DType::f64), std::nullopt, q4), "matmul_wq", "'scales'");
  EXPECT_ERROR(matmul_wq(x, d4, s, DynTensor::zeros({3, 1}, DType::u8), q4), "matmul_wq", "'zero_point'", "[3, 2]");
  EXPECT_ERROR(matmul_wq(x, d8, s, DynTensor::zeros({3, 2}, DType::u8), q8), "matmul_wq", "'data'",
               "u8 (with a zero point)");
}

TEST(QuantizedOps, PassThroughFusionAndCarryNoGradient) {
  auto a = DynTensor::from_vector<uint8_t>({1, 2, 3, 4}, {2, 2});
  auto b = DynTensor::from_vector<int8_t>({1, -1, 2, 0}, {2, 2});
  for (Device dev : {Device::cpu().fusion(), Device::cpu().fusion().autodiff(), Device::cpu().autodiff()}) {
    DynTensor c = matmul_integer(a.to(dev), b.to(dev));
    EXPECT_EQ(c.to_vector<int32_t>(), (std::vector<int32_t>{5, -1, 11, -3}));
    // an elementwise chain after the op still runs on its result
    EXPECT_EQ(add(c, Scalar(int64_t(1))).to_vector<int32_t>(), (std::vector<int32_t>{6, 0, 12, -2}));
  }
  // the weight-only product has no autodiff rule: its output is not tracked
  Device ad = Device::cpu().autodiff();
  auto x = DynTensor::ones({1, 32}, DType::f32, ad).require_grad();
  auto y = matmul_wq(x, DynTensor::zeros({2, 16}, DType::u8, ad), DynTensor::ones({2, 1}, DType::f32, ad),
                     std::nullopt, {.bits = 4, .block = 32});
  EXPECT_FALSE(y.is_require_grad());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0.f, 0.f}));  // nibbles 0: q = 0
}

TEST(ConvInteger, HandComputedValues) {
  // x = 1..9 (u8, [1, 1, 3, 3]) with zero point 1: x - 1 = [[0, 1, 2], [3, 4, 5], [6, 7, 8]];
  // w = [[1, 0], [0, -1]] (i8) twice, zero points [0, 1] (per output channel): channel 0 sums
  // (x - 1)[i, j] - (x - 1)[i + 1, j + 1] = -4; channel 1 (w - 1 = [[0, -1], [-1, -2]]) sums
  // -(x - 1)[i, j + 1] - (x - 1)[i + 1, j] - 2 (x - 1)[i + 1, j + 1]
  auto x = DynTensor::from_vector<uint8_t>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  auto w = DynTensor::from_vector<int8_t>({1, 0, 0, -1, 1, 0, 0, -1}, {2, 1, 2, 2});
  auto zx = DynTensor::from_vector<uint8_t>({1}, {});
  auto zw = DynTensor::from_vector<int8_t>({0, 1}, {2});
  DynTensor y = conv_integer(x, w, zx, zw);
  EXPECT_EQ(y.dtype(), DType::i32);
  EXPECT_EQ(y.shape(), Shape({1, 2, 2, 2}));
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{-4, -4, -4, -4, -12, -16, -24, -28}));
  // pads only at the end (ONNX's pads [0, 0, 1, 1]): a tap in the padding counts as x's zero point,
  // so it adds 0 (not -(0 - 1))
  DynTensor p = conv_integer(x, w.narrow(0, 0, 1), zx, std::nullopt, {.padding = {0, 0, 1, 1}});
  EXPECT_EQ(p.to_vector<int32_t>(), (std::vector<int32_t>{-4, -4, 2, -4, -4, 5, 6, 7, 8}));
}

TEST(ConvInteger, BadInputErrors) {
  auto x = DynTensor::zeros({1, 4, 5, 5}, DType::u8), w = DynTensor::zeros({6, 4, 3, 3}, DType::i8);
  EXPECT_ERROR(conv_integer(DynTensor::zeros({1, 4, 5, 5}), w), "conv_integer", "'x'", "u8 or i8");
  EXPECT_ERROR(conv_integer(x, DynTensor::zeros({6, 4, 3, 3}, DType::i32)), "conv_integer", "'w'", "u8 or i8");
  EXPECT_ERROR(conv_integer(DynTensor::zeros({4, 5}, DType::u8), w), "conv_integer", "'x'", "spatial");
  EXPECT_ERROR(conv_integer(x, DynTensor::zeros({6, 4, 3}, DType::i8)), "conv_integer", "'w'", "rank 4");
  EXPECT_ERROR(conv_integer(x, DynTensor::zeros({6, 3, 3, 3}, DType::i8)), "conv_integer", "'w'",
               "input channels");
  EXPECT_ERROR(conv_integer(x, DynTensor::zeros({5, 2, 3, 3}, DType::i8), std::nullopt, std::nullopt, {.groups = 2}),
               "conv_integer", "multiple of 2 output channels");
  EXPECT_ERROR(conv_integer(x, w, DynTensor::zeros({}, DType::i8)), "conv_integer", "'x_zero_point'", "one value");
  EXPECT_ERROR(conv_integer(x, w, DynTensor::zeros({2}, DType::u8)), "conv_integer", "'x_zero_point'");
  EXPECT_ERROR(conv_integer(x, w, std::nullopt, DynTensor::zeros({1}, DType::u8)), "conv_integer",
               "'w_zero_point'", "dtype");
  EXPECT_ERROR(conv_integer(x, w, std::nullopt, DynTensor::zeros({4}, DType::i8)), "conv_integer",
               "'w_zero_point'", "[6]");
  EXPECT_ERROR(conv_integer(DynTensor::zeros({1, 4, 2, 2}, DType::u8), w), "conv_integer", "too small");
  EXPECT_ERROR(conv_integer(x, w, std::nullopt, std::nullopt, {.padding = {1, 1, 1}}), "conv_integer", "padding",
               "got 3");
  EXPECT_ERROR(conv_integer(x, w, std::nullopt, std::nullopt, {.stride = {0}}), "conv_integer", "stride");
  EXPECT_ERROR(conv_integer(x, w, std::nullopt, std::nullopt, {.padding = {-1}}), "conv_integer", "padding >= 0");
  EXPECT_ERROR(conv_integer(x, w, std::nullopt, std::nullopt, {.groups = 0}), "conv_integer", "groups");
  EXPECT_ERROR(conv_integer(x, w, std::nullopt, std::nullopt, {.output_padding = {1}}), "conv_integer",
               "output_padding");
}

TEST(ConvInteger, PassesThroughFusionAndCarriesNoGradient) {
  auto x = DynTensor::from_vector<uint8_t>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  auto w = DynTensor::from_vector<int8_t>({1, 0, 0, -1}, {1, 1, 2, 2});
  for (Device dev : {Device::cpu().fusion(), Device::cpu().fusion().autodiff(), Device::cpu().autodiff()}) {
    DynTensor y = conv_integer(x.to(dev), w.to(dev), DynTensor::from_vector<uint8_t>({1}, {}, dev));
    EXPECT_FALSE(y.is_require_grad());
    EXPECT_EQ(add(y, Scalar(int64_t(1))).to_vector<int32_t>(), (std::vector<int32_t>{-3, -3, -3, -3}));
  }
}

}  // namespace
}  // namespace ember
