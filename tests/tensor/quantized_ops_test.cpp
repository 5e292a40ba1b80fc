// The quantized products of the tensor API (src/tensor/quantized_ops.cpp): hand-computed values,
// the errors on bad input, and how the decorators treat the ops (fusion: opaque, autodiff: no
// gradient). The values against numpy are in tests/conformance/cases/quant.json; every ISA path
// against the portable one in tests/backends/cpu/qgemm_test.cpp and conv_integer_test.cpp.
#include "ember/tensor/quantized_ops.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

TEST(QuantizedOps, PassThroughFusionAndGradientToX) {
  auto a = DynTensor::from_vector<uint8_t>({1, 2, 3, 4}, {2, 2});
  auto b = DynTensor::from_vector<int8_t>({1, -1, 2, 0}, {2, 2});
  for (Device dev : {Device::cpu().fusion(), Device::cpu().fusion().autodiff(), Device::cpu().autodiff()}) {
    DynTensor c = matmul_integer(a.to(dev), b.to(dev));
    EXPECT_EQ(c.to_vector<int32_t>(), (std::vector<int32_t>{5, -1, 11, -3}));
    // an elementwise chain after the op still runs on its result
    EXPECT_EQ(add(c, Scalar(int64_t(1))).to_vector<int32_t>(), (std::vector<int32_t>{6, 0, 12, -2}));
  }
  // the weight-only product passes x its gradient, g @ dequant(W): bytes 0x11 are two nibbles
  // q = 1, scale 1, so W is all ones [2, 32], y = [32, 32] and d sum(y) / dx = 2 everywhere
  Device ad = Device::cpu().autodiff();
  auto x = DynTensor::ones({1, 32}, DType::f32, ad).require_grad();
  auto y = matmul_wq(x, DynTensor::full({2, 16}, 0x11, DType::u8, ad), DynTensor::ones({2, 1}, DType::f32, ad),
                     std::nullopt, {.bits = 4, .block = 32});
  EXPECT_TRUE(y.is_require_grad());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{32.f, 32.f}));
  EXPECT_EQ(x.grad(sum(y).backward())->to_vector<float>(), std::vector<float>(32, 2.f));
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

namespace ember {
namespace {

// ONNX QLinearConv / QLinearMatMul written out: acc (i64) -> saturate(rint(f32(acc) * m) + zp),
// m = (xs * ws[c]) / ys in f32 (the operators' definition; the conformance cases check the same
// formula through numpy).
uint8_t requantized_u8(int64_t acc, float xs, float ws, float ys, int zp) {
  const float m = (xs * ws) / ys;
  const float f = std::nearbyint(float(int32_t(acc)) * m) + float(zp);
  return uint8_t(std::clamp(f, 0.f, 255.f));
}

// A 3x3 conv (pad 1) of u8 x (zero point zx) with i8 w [M, C, 3, 3] plus an i32 bias, per-channel
// w scales, u8 y (zero point zy).
std::vector<uint8_t> qconv_reference(const std::vector<uint8_t>& x, const std::vector<int8_t>& w, int64_t N, int64_t C,
                                     int64_t H, int64_t W, int64_t M, int zx, const std::vector<int32_t>& bias,
                                     float xs, const std::vector<float>& ws, float ys, int zy) {
  std::vector<uint8_t> y(size_t(N * M * H * W));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          int64_t acc = bias[size_t(m)];
          for (int64_t c = 0; c < C; ++c)
            for (int64_t a = 0; a < 3; ++a)
              for (int64_t b = 0; b < 3; ++b) {
                const int64_t ii = i + a - 1, jj = j + b - 1;
                if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                acc += (int64_t(x[size_t(((n * C + c) * H + ii) * W + jj)]) - zx) *
                       int64_t(w[size_t(((m * C + c) * 3 + a) * 3 + b)]);
              }
          y[size_t(((n * M + m) * H + i) * W + j)] = requantized_u8(acc, xs, ws[size_t(m)], ys, zy);
        }
  return y;
}

// The weights stay packed with their storage from the second call on (Storage::derived): the
// first, second (packs and keeps) and third (reads the kept packing) calls match the formula, for
// two weight views at different offsets of one buffer; after an in-place write into the buffer
// (add given its last handle) the result follows the new weights.
TEST(QLinearConv, KeptWeightPackingFollowsTheWeights) {
  const int64_t N = 2, C = 16, H = 7, W = 9, M = 20;
  std::vector<uint8_t> xv(static_cast<size_t>(N * C * H * W));
  std::vector<int8_t> wv(static_cast<size_t>(2 * M * C * 9));
  std::vector<int32_t> bias(static_cast<size_t>(M));
  std::vector<float> ws(static_cast<size_t>(M));
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = uint8_t((i * 37 + 11) % 256);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = int8_t(int((i * 53 + 7) % 255) - 127);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = int32_t(i * 97) - 900, ws[i] = 0.001f * float(i + 3);
  const float xs = 0.02f, ys = 0.05f;
  const int zx = 128, zy = 100;
  auto x = DynTensor::from_vector<uint8_t>(xv, {N, C, H, W});
  auto both = DynTensor::from_vector<int8_t>(wv, {2 * M, C, 3, 3});
  auto b = DynTensor::from_vector<int32_t>(bias, {M});
  auto wst = DynTensor::from_vector<float>(ws, {M});
  auto s = [](float v) { return DynTensor::full({}, v, DType::f32); };
  auto conv = [&](const DynTensor& w) {
    return qlinear_conv(x, s(xs), DynTensor::full({}, zx, DType::u8), w, wst, std::nullopt, s(ys),
                        DynTensor::full({}, zy, DType::u8), b, {.padding = {1}})
        .to_vector<uint8_t>();
  };
  const std::vector<int8_t> w0(wv.begin(), wv.begin() + long(wv.size() / 2)), w1(wv.begin() + long(wv.size() / 2), wv.end());
  const auto want0 = qconv_reference(xv, w0, N, C, H, W, M, zx, bias, xs, ws, ys, zy);
  const auto want1 = qconv_reference(xv, w1, N, C, H, W, M, zx, bias, xs, ws, ys, zy);
  {
    DynTensor lo = narrow(both, 0, 0, M), hi = narrow(both, 0, M, M);
    for (int call = 0; call < 3; ++call) {
      EXPECT_EQ(conv(lo), want0) << "first weights, call " << call;
      EXPECT_EQ(conv(hi), want1) << "second weights, call " << call;
    }
  }
  DynTensor changed = add(std::move(both), Scalar(int64_t(1)));  // the buffer's last handle: in place
  std::vector<int8_t> w0b = w0;
  for (int8_t& v : w0b) v = int8_t(v + 1);
  const auto want0b = qconv_reference(xv, w0b, N, C, H, W, M, zx, bias, xs, ws, ys, zy);
  DynTensor lo = narrow(changed, 0, 0, M);
  for (int call = 0; call < 2; ++call) EXPECT_EQ(conv(lo), want0b) << "weights written in place, call " << call;
}

TEST(QLinearMatMul, KeptWeightPackingFollowsTheWeights) {
  const int64_t M = 11, K = 37, N = 45;
  std::vector<uint8_t> av(static_cast<size_t>(M * K));
  std::vector<int8_t> bv(static_cast<size_t>(K * N));
  for (size_t i = 0; i < av.size(); ++i) av[i] = uint8_t((i * 29 + 3) % 256);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = int8_t(int((i * 71 + 5) % 255) - 127);
  const float as = 0.03f, bs = 0.004f, ys = 0.2f;
  const int za = 120, zy = 128;
  auto want = [&](const std::vector<int8_t>& bb) {
    std::vector<uint8_t> y(static_cast<size_t>(M * N));
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += (int64_t(av[size_t(i * K + k)]) - za) * int64_t(bb[size_t(k * N + j)]);
        y[size_t(i * N + j)] = requantized_u8(acc, as, bs, ys, zy);
      }
    return y;
  };
  auto a = DynTensor::from_vector<uint8_t>(av, {M, K});
  auto b = DynTensor::from_vector<int8_t>(bv, {K, N});
  auto s = [](float v) { return DynTensor::full({}, v, DType::f32); };
  auto mm = [&](const DynTensor& w) {
    return qlinear_matmul(a, s(as), DynTensor::full({}, za, DType::u8), w, s(bs), std::nullopt, s(ys),
                          DynTensor::full({}, zy, DType::u8))
        .to_vector<uint8_t>();
  };
  const auto want0 = want(bv);
  for (int call = 0; call < 3; ++call) EXPECT_EQ(mm(b), want0) << "call " << call;
  DynTensor changed = add(std::move(b), Scalar(int64_t(-3)));
  std::vector<int8_t> bb = bv;
  for (int8_t& v : bb) v = int8_t(v - 3);
  const auto want1 = want(bb);
  for (int call = 0; call < 2; ++call) EXPECT_EQ(mm(changed), want1) << "weights written in place, call " << call;
}

TEST(QLinearConv, HeaderExamples) {
  auto x = DynTensor::full({1, 1, 3, 3}, 130, DType::u8);
  auto w = DynTensor::full({2, 1, 3, 3}, 3, DType::i8);
  auto s = [](double v) { return DynTensor::full({}, v, DType::f32); };
  DynTensor y = qlinear_conv(x, s(0.5), DynTensor::full({}, 128, DType::u8), w, s(0.25), std::nullopt, s(1.0),
                             DynTensor::full({}, 10, DType::u8), std::nullopt, {.padding = {1}});
  EXPECT_EQ(y.dtype(), DType::u8);
  EXPECT_EQ(y.to_vector<uint8_t>()[4], 17);  // 54 steps * 0.125 = 6.75 -> 7, + 10
  EXPECT_EQ(y.to_vector<uint8_t>()[0], 13);  // a corner: 4 taps, 24 * 0.125 = 3, + 10
  auto a = DynTensor::from_vector<uint8_t>({10, 20}, {1, 2});
  auto b = DynTensor::from_vector<int8_t>({1, 2, 3, 4}, {2, 2});
  DynTensor ym = qlinear_matmul(a, s(0.1), std::nullopt, b, s(1.0), std::nullopt, s(1.0), std::nullopt);
  EXPECT_EQ(ym.to_vector<uint8_t>(), (std::vector<uint8_t>{7, 10}));
  // the f32 form: 0.1 * [70, 100] + [1, -20], then ReLU
  DynTensor yf = qlinear_matmul_f32(a, s(0.1), std::nullopt, b, s(1.0), std::nullopt,
                                    DynTensor::from_vector<float>({1.f, -20.f}, {2}), 0.0);
  const auto f = yf.to_vector<float>();
  EXPECT_NEAR(f[0], 8.f, 1e-5);
  EXPECT_EQ(f[1], 0.f);
}

TEST(QLinearConv, ErrorsNameTheArgument) {
  auto x = DynTensor::full({1, 2, 4, 4}, 1, DType::u8);
  auto w = DynTensor::full({3, 2, 3, 3}, 1, DType::i8);
  auto s = [](double v) { return DynTensor::full({}, v, DType::f32); };
  auto zu = DynTensor::full({}, 0, DType::u8);
  EXPECT_ERROR(qlinear_conv(x, DynTensor::full({}, 1, DType::i32), zu, w, s(1), std::nullopt, s(1), zu),
               "qlinear_conv", "'x_scale'", "f32");
  EXPECT_ERROR(qlinear_conv(x, s(1), zu, w, DynTensor::ones({2}), std::nullopt, s(1), zu), "qlinear_conv",
               "'w_scale'", "[3]");
  EXPECT_ERROR(qlinear_conv(x, s(1), DynTensor::full({}, 0, DType::i8), w, s(1), std::nullopt, s(1), zu),
               "qlinear_conv", "'x_zero_point'");
  EXPECT_ERROR(qlinear_conv(x, s(1), zu, w, s(1), std::nullopt, s(1), DynTensor::full({}, 0, DType::i32)),
               "qlinear_conv", "'y_zero_point'", "u8 or i8");
  EXPECT_ERROR(qlinear_conv(x, s(1), zu, w, s(1), std::nullopt, s(1), zu, DynTensor::ones({3})), "qlinear_conv",
               "'bias'", "i32");
  EXPECT_ERROR(qlinear_conv_f32(x, s(1), zu, w, s(1), std::nullopt, DynTensor::ones({3}, DType::i32)), "qlinear_conv",
               "'bias'", "f32");
  EXPECT_ERROR(qlinear_conv(x.cast(DType::f32), s(1), std::nullopt, w, s(1), std::nullopt, s(1), zu), "qlinear_conv",
               "'x'", "u8 or i8");
  EXPECT_ERROR(qlinear_matmul(DynTensor::full({2, 5}, 1, DType::u8), s(1), std::nullopt, DynTensor::full({4, 3}, 1, DType::i8),
                              s(1), std::nullopt, s(1), std::nullopt),
               "qlinear_matmul", "inner dimensions");
  EXPECT_ERROR(qlinear_matmul(DynTensor::full({2, 4}, 1, DType::u8), s(1), std::nullopt, DynTensor::full({4, 3}, 1, DType::i8),
                              s(1), DynTensor::full({2}, 0, DType::i8), s(1), std::nullopt),
               "qlinear_matmul", "'b_zero_point'", "[3]");
}

}  // namespace
}  // namespace ember
