// quantize / dequantize / packing against the formulas evaluated in double here (ONNX
// QuantizeLinear's saturate(round_half_even(x / scale) + zero_point), PyTorch MinMaxObserver's
// affine parameters, max|x| / qmax for symmetric ones) and hand-written int4 bytes.
#include <algorithm>
#include <cmath>

#include "quant_test_util.hpp"

using namespace ember;
using namespace ember::quant;
using quant_test::expect_error;
using quant_test::normal_values;
using quant_test::round_even;
using quant_test::tensor;

namespace {

// Expected q for every element, from the library's scale and zero point (checked separately).
std::vector<int64_t> expected_q(const std::vector<float>& x, const std::vector<float>& scale,
                                const std::vector<int64_t>& zp, const std::vector<size_t>& param_of, QType t) {
  std::vector<int64_t> q(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t p = param_of[i];
    const double v = round_even(double(x[i]) / double(scale[p])) + double(zp[p]);
    q[i] = int64_t(std::clamp(v, double(qmin(t)), double(qmax(t))));
  }
  return q;
}

std::vector<int64_t> values_of(const QuantizedTensor& q) { return q.values().to_vector<int64_t>(); }

}  // namespace

TEST(QuantTypes, RangesAndNames) {
  EXPECT_EQ(qmin(QType::int8), -128);
  EXPECT_EQ(qmax(QType::int8), 127);
  EXPECT_EQ(qmin(QType::uint8), 0);
  EXPECT_EQ(qmax(QType::uint8), 255);
  EXPECT_EQ(qmin(QType::int4), -8);
  EXPECT_EQ(qmax(QType::int4), 7);
  EXPECT_EQ(qmin(QType::uint4), 0);
  EXPECT_EQ(qmax(QType::uint4), 15);
  for (QType t : {QType::int8, QType::uint8, QType::int4, QType::uint4}) EXPECT_EQ(qtype_from_name(qtype_name(t)), t);
  expect_error([] { qtype_from_name("int3"); }, {"int3"});
  EXPECT_EQ(QScheme::per_block(1, 32, QType::int4).str(), "per_block(axis=1, block=32, int4, symmetric)");
  EXPECT_EQ(QScheme::per_block(1, 32).params_shape(Shape{4, 64}), (Shape{4, 2}));
  EXPECT_EQ(QScheme::per_channel(-1).params_shape(Shape{4, 6}), (Shape{6}));
  EXPECT_EQ(QScheme::per_tensor().params_shape(Shape{4, 6}), Shape{});
}

TEST(Quantize, PerTensorSymmetricInt8IsMaxAbsOver127) {
  std::vector<float> x = normal_values(96, 1);
  QuantizedTensor q = quantize(tensor(x, {8, 12}), QScheme::per_tensor(QType::int8));
  double amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(double(v)));
  const float s = q.scale().item<float>();
  EXPECT_NEAR(s, amax / 127, 1e-7 * amax);
  EXPECT_EQ(q.zero_point().item<int64_t>(), 0);
  EXPECT_EQ(q.data().dtype(), DType::i8);
  EXPECT_EQ(q.data().shape(), (Shape{8, 12}));
  EXPECT_EQ(values_of(q), expected_q(x, {s}, {0}, std::vector<size_t>(x.size(), 0), QType::int8));
}

TEST(Quantize, AffineUint8FollowsPyTorchMinMaxObserver) {
  // Hand-computed with PyTorch's formulas: [-1, 2] -> scale 3/255, zero point 0 - round(-1 / scale) = 85.
  QuantizedTensor q = quantize(tensor({-1.0f, 0.0f, 2.0f, 1.0f}, {4}), QScheme::per_tensor(QType::uint8, false));
  EXPECT_NEAR(q.scale().item<double>(), 3.0 / 255, 1e-9);
  EXPECT_EQ(q.zero_point().item<int64_t>(), 85);
  EXPECT_EQ(q.zero_point().dtype(), DType::u8);
  EXPECT_EQ(values_of(q), (std::vector<int64_t>{0, 85, 255, 170}));
  // Zero is always in range: all-positive values keep zero point 0 (min' = min(min, 0)).
  QuantizedTensor p = quantize(tensor({0.5f, 3.0f}, {2}), QScheme::per_tensor(QType::uint8, false));
  EXPECT_EQ(p.zero_point().item<int64_t>(), 0);
  EXPECT_NEAR(p.scale().item<double>(), 3.0 / 255, 1e-9);
  // Random data against the formula in double.
  std::vector<float> x = normal_values(200, 2);
  for (float& v : x) v += 0.7f;
  QuantizedTensor r = quantize(tensor(x, {200}), QScheme::per_tensor(QType::int8, false));
  const double lo = std::min(0.0, double(*std::min_element(x.begin(), x.end())));
  const double hi = std::max(0.0, double(*std::max_element(x.begin(), x.end())));
  const double scale = (hi - lo) / 255;
  EXPECT_NEAR(r.scale().item<double>(), scale, 1e-6 * scale);
  EXPECT_EQ(r.zero_point().item<int64_t>(), int64_t(std::clamp(-128 - round_even(lo / scale), -128.0, 127.0)));
  EXPECT_EQ(values_of(r), expected_q(x, {r.scale().item<float>()}, {r.zero_point().item<int64_t>()},
                                     std::vector<size_t>(x.size(), 0), QType::int8));
  // An all-zero tensor gets PyTorch's smallest scale, f32 epsilon.
  QuantizedTensor z = quantize(DynTensor::zeros({3}), QScheme::per_tensor(QType::int8, false));
  EXPECT_EQ(z.scale().item<float>(), std::numeric_limits<float>::epsilon());
}

TEST(Quantize, SymmetricUnsignedUsesTheMidpoint) {
  QuantizedTensor q = quantize(tensor({-2.54f, 1.0f, 2.54f}, {3}), QScheme::per_tensor(QType::uint8, true));
  EXPECT_EQ(q.zero_point().item<int64_t>(), 128);
  EXPECT_NEAR(q.scale().item<double>(), 2.54 / 127, 1e-7);
  EXPECT_EQ(values_of(q), (std::vector<int64_t>{1, 128 + 50, 255}));
}

TEST(Quantize, PerChannelScalesAlongTheAxis) {
  std::vector<float> x = normal_values(5 * 7, 3);
  for (int axis : {0, 1, -1}) {
    QuantizedTensor q = quantize(tensor(x, {5, 7}), QScheme::per_channel(axis, QType::int8));
    const int a = axis < 0 ? axis + 2 : axis;
    const int64_t channels = a == 0 ? 5 : 7;
    ASSERT_EQ(q.scale().shape(), (Shape{channels}));
    std::vector<float> s = q.scale().to_vector<float>();
    std::vector<size_t> param_of(x.size());
    std::vector<double> amax(size_t(channels), 0.0);
    for (size_t i = 0; i < x.size(); ++i) {
      param_of[i] = a == 0 ? i / 7 : i % 7;
      amax[param_of[i]] = std::max(amax[param_of[i]], std::fabs(double(x[i])));
    }
    for (int64_t c = 0; c < channels; ++c) EXPECT_NEAR(s[size_t(c)], amax[size_t(c)] / 127, 1e-7) << axis << " " << c;
    EXPECT_EQ(values_of(q), expected_q(x, s, std::vector<int64_t>(size_t(channels), 0), param_of, QType::int8));
  }
}

TEST(Quantize, PerBlockInt4ScalesPerBlockOfTheRow) {
  const int64_t n = 3, k = 64, block = 32;
  std::vector<float> x = normal_values(size_t(n * k), 4);
  QuantizedTensor q = quantize(tensor(x, {n, k}), QScheme::per_block(1, block, QType::int4));
  ASSERT_EQ(q.scale().shape(), (Shape{n, k / block}));
  ASSERT_EQ(q.data().shape(), (Shape{n, k / 2}));
  ASSERT_EQ(q.data().dtype(), DType::u8);
  std::vector<float> s = q.scale().to_vector<float>();
  std::vector<size_t> param_of(x.size());
  std::vector<double> amax(s.size(), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    param_of[i] = (i / size_t(k)) * size_t(k / block) + (i % size_t(k)) / size_t(block);
    amax[param_of[i]] = std::max(amax[param_of[i]], std::fabs(double(x[i])));
  }
  for (size_t b = 0; b < s.size(); ++b) EXPECT_NEAR(s[b], amax[b] / 7, 1e-7) << b;
  EXPECT_EQ(values_of(q), expected_q(x, s, std::vector<int64_t>(s.size(), 0), param_of, QType::int4));
  // blocks along dim 0 of a 3-d tensor, affine uint8
  std::vector<float> y = normal_values(4 * 2 * 3, 5);
  QuantizedTensor r = quantize(tensor(y, {4, 2, 3}), QScheme::per_block(0, 2, QType::uint8, false));
  ASSERT_EQ(r.scale().shape(), (Shape{2, 2, 3}));
  std::vector<float> rs = r.scale().to_vector<float>();
  std::vector<int64_t> rz = r.zero_point().to_vector<int64_t>();
  for (size_t p = 0; p < rs.size(); ++p) {  // p = (b, j, l): elements (2b, j, l) and (2b + 1, j, l)
    const size_t b = p / 6, rest = p % 6;
    const double v0 = y[(2 * b) * 6 + rest], v1 = y[(2 * b + 1) * 6 + rest];
    const double lo = std::min({0.0, v0, v1}), hi = std::max({0.0, v0, v1});
    EXPECT_NEAR(rs[p], (hi - lo) / 255, 1e-6 * (hi - lo)) << p;
    EXPECT_EQ(rz[p], int64_t(std::clamp(0 - round_even(lo / double(rs[p])), 0.0, 255.0))) << p;
  }
}

TEST(Quantize, RoundsHalfToEvenAndSaturates) {
  DynTensor one = DynTensor::full({}, 1.0, DType::f32), zero = DynTensor::zeros({}, DType::i8);
  QuantizedTensor q = quantize(tensor({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 1000.0f, -1000.0f}, {8}),
                               QScheme::per_tensor(QType::int8), one, zero);
  EXPECT_EQ(values_of(q), (std::vector<int64_t>{0, 2, 2, 0, -2, -2, 127, -128}));
  QuantizedTensor u = quantize(tensor({-300.0f, 0.5f, 300.0f}, {3}), QScheme::per_tensor(QType::uint8, false), one,
                               DynTensor::full({}, 10, DType::u8));
  EXPECT_EQ(values_of(u), (std::vector<int64_t>{0, 10, 255}));
  QuantizedTensor f = quantize(tensor({-9.0f, 7.5f, 6.5f}, {3}), QScheme::per_tensor(QType::int4), one, zero);
  EXPECT_EQ(values_of(f), (std::vector<int64_t>{-8, 7, 6}));
  // NaN with given parameters quantizes to the zero point
  QuantizedTensor n = quantize(tensor({NAN, 1.0f}, {2}), QScheme::per_tensor(QType::uint8, false), one,
                               DynTensor::full({}, 3, DType::u8));
  EXPECT_EQ(values_of(n), (std::vector<int64_t>{3, 4}));
}

TEST(Int4Packing, MatchesHandWrittenBytes) {
  // int4: -8 -> 0x8 (low), 7 -> 0x7 (high): 0x78; 1, -1 -> 0x1, 0xF: 0xF1; 3 and the zero pad: 0x03
  DynTensor v = DynTensor::from_vector<int8_t>({-8, 7, 1, -1, 3}, Shape{5});
  EXPECT_EQ(pack_int4(v).to_vector<int64_t>(), (std::vector<int64_t>{0x78, 0xF1, 0x03}));
  EXPECT_EQ(unpack_int4(pack_int4(v), 5, true).to_vector<int64_t>(), (std::vector<int64_t>{-8, 7, 1, -1, 3}));
  // per row of the last dim: [[0, 15, 9, 2], [4, 5, 6, 7]] uint4
  DynTensor u = DynTensor::from_vector<uint8_t>({0, 15, 9, 2, 4, 5, 6, 7}, Shape{2, 4});
  DynTensor pu = pack_int4(u);
  EXPECT_EQ(pu.shape(), (Shape{2, 2}));
  EXPECT_EQ(pu.to_vector<int64_t>(), (std::vector<int64_t>{0xF0, 0x29, 0x54, 0x76}));
  EXPECT_EQ(unpack_int4(pu, 4, false).to_vector<int64_t>(), (std::vector<int64_t>{0, 15, 9, 2, 4, 5, 6, 7}));
  // quantize lays the data out the same way (scale 1, zero point 0)
  QuantizedTensor q = quantize(tensor({-8, 7, 1, -1, 3, 0, -2, 5, 6, -7}, {2, 5}), QScheme::per_tensor(QType::int4),
                               DynTensor::full({}, 1.0, DType::f32), DynTensor::zeros({}, DType::i8));
  EXPECT_EQ(q.data().shape(), (Shape{2, 3}));
  EXPECT_EQ(q.data().to_vector<int64_t>(), (std::vector<int64_t>{0x78, 0xF1, 0x03, 0xE0, 0x65, 0x09}));
  expect_error([&] { unpack_int4(pu, 6, false); }, {"quant::unpack_int4", "6 values"});
}

TEST(Quantize, DequantizeIsScaleTimesQMinusZeroPoint) {
  std::vector<float> x = normal_values(6 * 8, 6);
  QuantizedTensor q = quantize(tensor(x, {6, 8}), QScheme::per_channel(0, QType::uint8, false));
  std::vector<float> s = q.scale().to_vector<float>(), d = dequantize(q).to_vector<float>();
  std::vector<int64_t> z = q.zero_point().to_vector<int64_t>(), v = values_of(q);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = double(s[i / 8]) * double(v[i] - z[i / 8]);
    EXPECT_NEAR(d[i], want, 1e-6 * std::fabs(want) + 1e-12) << i;
    EXPECT_LE(std::fabs(d[i] - x[i]), s[i / 8] * 0.5 + 1e-6) << i;  // inside the range: half a step
  }
}

TEST(Quantize, RoundTripIsExact) {
  std::vector<float> x = normal_values(4 * 6 * 8, 7);
  DynTensor t = tensor(x, {4, 6, 8});
  for (QType dt : {QType::int8, QType::uint8, QType::int4, QType::uint4})
    for (bool sym : {true, false})
      for (QScheme s : {QScheme::per_tensor(dt, sym), QScheme::per_channel(1, dt, sym), QScheme::per_block(2, 4, dt, sym),
                        QScheme::per_block(0, 2, dt, sym)}) {
        QuantizedTensor q = quantize(t, s);
        QuantizedTensor again = quantize(dequantize(q), s, q.scale(), q.zero_point());
        EXPECT_EQ(again.data().to_vector<int64_t>(), q.data().to_vector<int64_t>()) << s.str();
        EXPECT_EQ(q.values().shape(), t.shape()) << s.str();
        // and the assembling constructor accepts quantize's parts
        QuantizedTensor same(q.data(), q.scale(), q.zero_point(), q.shape(), q.scheme());
        EXPECT_EQ(same.dequantize().to_vector<float>(), q.dequantize().to_vector<float>()) << s.str();
      }
}

TEST(Quantize, OddLastDimInt4) {
  std::vector<float> x = normal_values(3 * 5, 8);
  QuantizedTensor q = quantize(tensor(x, {3, 5}), QScheme::per_channel(0, QType::int4));
  EXPECT_EQ(q.data().shape(), (Shape{3, 3}));
  EXPECT_EQ(q.values().shape(), (Shape{3, 5}));
  std::vector<float> s = q.scale().to_vector<float>();
  std::vector<size_t> param_of(x.size());
  for (size_t i = 0; i < x.size(); ++i) param_of[i] = i / 5;
  EXPECT_EQ(values_of(q), expected_q(x, s, {0, 0, 0}, param_of, QType::int4));
}

TEST(Quantize, WeightOnlyOperandsForMatmulWq) {
  std::vector<float> w = normal_values(4 * 64, 9);
  QuantizedTensor q8 = quantize(tensor(w, {4, 64}), QScheme::per_block(1, 32, QType::int8));
  WeightOnlyOperands o8 = q8.weight_only();
  EXPECT_EQ(o8.bits, 8);
  EXPECT_EQ(o8.block_size, 32);
  EXPECT_EQ(o8.data.dtype(), DType::i8);
  EXPECT_EQ(o8.data.shape(), (Shape{4, 64}));
  EXPECT_EQ(o8.scales.dtype(), DType::f32);
  EXPECT_EQ(o8.scales.shape(), (Shape{4, 2}));
  QuantizedTensor q4 = quantize(tensor(w, {4, 64}), QScheme::per_block(-1, 64, QType::int4));
  WeightOnlyOperands o4 = q4.weight_only();
  EXPECT_EQ(o4.bits, 4);
  EXPECT_EQ(o4.data.dtype(), DType::u8);
  EXPECT_EQ(o4.data.shape(), (Shape{4, 32}));
  EXPECT_EQ(o4.scales.shape(), (Shape{4, 1}));
  // w[n, k] ~ scales[n, k / block] * nibble(data[n, k / 2], k % 2)
  std::vector<int64_t> bytes = o4.data.to_vector<int64_t>();
  std::vector<float> s = o4.scales.to_vector<float>();
  for (size_t i = 0; i < w.size(); ++i) {
    const int64_t byte = bytes[i / 2], nib = (i % 2) ? byte >> 4 : byte & 15;
    const int64_t v = nib >= 8 ? nib - 16 : nib;
    EXPECT_LE(std::fabs(double(s[i / 64]) * double(v) - w[i]), s[i / 64] * 0.5 + 1e-6) << i;
  }
  expect_error([&] { quantize(tensor(w, {4, 64}), QScheme::per_channel(0)).weight_only(); },
               {"weight_only", "per_channel"});
  expect_error([&] { quantize(tensor(w, {4, 64}), QScheme::per_block(0, 2)).weight_only(); }, {"weight_only"});
  expect_error([&] { quantize(tensor(w, {4, 64}), QScheme::per_block(1, 32, QType::int8, false)).weight_only(); },
               {"weight_only", "without zero points"});
  expect_error([&] { quantize(tensor(std::vector<float>(w.begin(), w.begin() + 252), {4, 63}), QScheme::per_block(1, 9, QType::int4)).weight_only(); },
               {"weight_only", "even K"});
  // unsigned types hand over their zero points
  QuantizedTensor u4 = quantize(tensor(w, {4, 64}), QScheme::per_block(1, 32, QType::uint4, false));
  WeightOnlyOperands ou = u4.weight_only();
  ASSERT_TRUE(ou.zero_point.has_value());
  EXPECT_EQ(ou.zero_point->dtype(), DType::u8);
  EXPECT_EQ(ou.zero_point->shape(), (Shape{4, 2}));
  EXPECT_FALSE(o8.zero_point.has_value());
}

TEST(Quantize, WeightOnlyOperandsFeedMatmulWq) {
  // matmul_wq (tensor/quantized_ops.hpp) reads the layout quantize writes: its product equals the
  // product with the dequantized weight.
  const int64_t n = 5, k = 128;
  DynTensor w = tensor(normal_values(size_t(n * k), 12), {n, k});
  DynTensor x = tensor(normal_values(size_t(3 * k), 13), {3, k});
  for (QScheme s : {QScheme::per_block(1, 32, QType::int8), QScheme::per_block(1, 32, QType::int4),
                    QScheme::per_block(1, 64, QType::uint8, false), QScheme::per_block(1, 128, QType::uint4, false)}) {
    QuantizedTensor q = quantize(w, s);
    WeightOnlyOperands o = q.weight_only();
    std::vector<float> got = matmul_wq(x, o.data, o.scales, o.zero_point, {.bits = o.bits, .block = o.block_size})
                                 .to_vector<float>();
    std::vector<float> want = matmul(x, dequantize(q).t()).to_vector<float>();
    ASSERT_EQ(got.size(), want.size()) << s.str();
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << s.str();
  }
}

TEST(Quantize, OtherDtypesDevicesAndShapes) {
  std::vector<float> x = normal_values(24, 14);
  DynTensor t = tensor(x, {4, 6});
  const QScheme s = QScheme::per_channel(1, QType::uint8, false);
  // f64 and bf16 inputs quantize as their f32 values do
  EXPECT_EQ(quantize(t.cast(DType::f64), s).data().to_vector<int64_t>(), quantize(t, s).data().to_vector<int64_t>());
  DynTensor h = t.cast(DType::bf16);
  EXPECT_EQ(quantize(h, s).data().to_vector<int64_t>(), quantize(h.cast(DType::f32), s).data().to_vector<int64_t>());
  // a tracked tensor of an autodiff device: the values, no graph
  Device dev = Device::cpu().autodiff();
  DynTensor tracked = DynTensor::from_vector<float>(x, Shape{4, 6}, dev).require_grad();
  QuantizedTensor qt = quantize(tracked, s);
  EXPECT_EQ(qt.data().to_vector<int64_t>(), quantize(t, s).data().to_vector<int64_t>());
  EXPECT_FALSE(qt.dequantize().is_require_grad());
  // 1-d per channel: each element its own channel, exactly representable
  QuantizedTensor one = quantize(tensor({0.5f, -2.0f, 3.0f}, {3}), QScheme::per_channel(0, QType::int8));
  EXPECT_EQ(one.values().to_vector<int64_t>(), (std::vector<int64_t>{127, -127, 127}));
  EXPECT_EQ(one.dequantize().to_vector<float>(), (std::vector<float>{0.5f, -2.0f, 3.0f}));
  // empty tensors
  QuantizedTensor empty = quantize(DynTensor::zeros({0, 4}), QScheme::per_channel(1, QType::int4));
  EXPECT_EQ(empty.data().shape(), (Shape{0, 2}));
  EXPECT_EQ(empty.dequantize().shape(), (Shape{0, 4}));
  // to(device) keeps every part
  QuantizedTensor moved = quantize(t, s).to(dev);
  EXPECT_EQ(moved.scale().device().name(), dev.name());
  EXPECT_EQ(moved.dequantize().to_vector<float>(), quantize(t, s).dequantize().to_vector<float>());
}

TEST(QuantizeErrors, EachBadInputNamesTheFunctionAndArgument) {
  DynTensor x = tensor(normal_values(40, 10), {4, 10});
  DynTensor one = DynTensor::full({}, 1.0, DType::f32), zero = DynTensor::zeros({}, DType::i8);
  // an integer tensor
  expect_error([] { quantize(DynTensor::arange(0, 6), QScheme::per_tensor()); },
               {"quant::quantize", "x has dtype i64", "floating"});
  expect_error([&] { quantize(DynTensor::zeros({2}, DType::i8), QScheme::per_tensor(), one, zero); },
               {"quant::quantize", "x has dtype i8"});
  // scales that are zero, negative, NaN, infinite
  for (float bad : {0.0f, -0.5f, NAN, INFINITY})
    expect_error([&] { quantize(x, QScheme::per_tensor(), DynTensor::full({}, bad, DType::f32), zero); },
                 {"quant::quantize", "scale[0]", "positive and finite"});
  expect_error(
      [&] {
        quantize(x, QScheme::per_channel(0), tensor({1, 1, 0, 1}, {4}), DynTensor::zeros({4}, DType::i8));
      },
      {"scale[2] is 0"});
  // zero points out of range, or not the symmetric one
  expect_error(
      [&] { quantize(x, QScheme::per_tensor(QType::uint8, false), one, DynTensor::full({}, 300, DType::i32)); },
      {"quant::quantize", "zero_point[0] is 300", "uint8", "[0, 255]"});
  expect_error([&] { quantize(x, QScheme::per_tensor(QType::int4, false), one, DynTensor::full({}, -9, DType::i8)); },
               {"zero_point[0] is -9", "int4", "[-8, 7]"});
  expect_error([&] { quantize(x, QScheme::per_tensor(QType::int8, true), one, DynTensor::full({}, 3, DType::i8)); },
               {"zero_point[0] is 3", "symmetric"});
  expect_error([&] { quantize(x, QScheme::per_tensor(), one, DynTensor::full({}, 0.0, DType::f32)); },
               {"zero_point must be an integer tensor"});
  expect_error([&] { quantize(x, QScheme::per_channel(0), one, zero); }, {"takes 4 scales"});
  // a block size that does not divide the dim
  expect_error([&] { quantize(x, QScheme::per_block(1, 4)); },
               {"quant::quantize", "block size 4 does not divide dim 1 of size 10", "[4, 10]"});
  expect_error([&] { quantize(x, QScheme::per_block(1, 0)); }, {"block size 0 must be positive"});
  // an axis out of range
  expect_error([&] { quantize(x, QScheme::per_channel(2)); },
               {"quant::quantize", "axis 2 is out of range for a tensor of rank 2"});
  expect_error([&] { quantize(x, QScheme::per_block(-3, 2)); }, {"axis -3 is out of range"});
  // values that have no range
  expect_error([] { quantize(tensor({1.0f, NAN}, {2}), QScheme::per_tensor()); }, {"not finite"});
  expect_error([] { quantize(tensor({1.0f, INFINITY}, {2}), QScheme::per_tensor()); }, {"not finite"});
  // 4-bit scalars have no last dim
  expect_error([] { quantize(DynTensor::full({}, 1.0, DType::f32), QScheme::per_tensor(QType::int4)); },
               {"rank 0"});
}

TEST(QuantizeErrors, AssemblingContradictoryParts) {
  QuantizedTensor q = quantize(tensor(normal_values(16, 11), {2, 8}), QScheme::per_block(1, 4, QType::int4));
  expect_error([&] { QuantizedTensor(q.data(), q.scale(), q.zero_point(), Shape{2, 6}, q.scheme(), "here"); },
               {"here", "block size 4 does not divide"});
  expect_error([&] { QuantizedTensor(q.data(), q.scale(), q.zero_point(), q.shape(), QScheme::per_block(1, 4), "here"); },
               {"here", "data is u8 [2, 4]", "stores i8 [2, 8]"});
  expect_error(
      [&] { QuantizedTensor(q.data(), q.scale(), q.zero_point(), q.shape(), QScheme::per_block(1, 2, QType::int4)); },
      {"scale is f32 [2, 2]", "needs f32 [2, 4]"});
  expect_error([&] { QuantizedTensor(q.data(), q.scale().cast(DType::f64), q.zero_point(), q.shape(), q.scheme()); },
               {"scale is f64"});
  expect_error(
      [&] { QuantizedTensor(q.data(), q.scale(), q.zero_point().cast(DType::u8), q.shape(), q.scheme()); },
      {"zero_point is u8", "needs i8"});
  expect_error([&] { QuantizedTensor(q.data(), mul(q.scale(), -1.0), q.zero_point(), q.shape(), q.scheme()); },
               {"scale[0]", "positive"});
}
