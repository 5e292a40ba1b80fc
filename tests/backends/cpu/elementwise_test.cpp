// Edge cases of the cpu creation / random / elementwise / cast kernels that the conformance
// suite does not reach: large (multi-threaded and vectorised) tensors, strided and broadcast
// layouts, in-place buffer reuse, integer wrap-around and errors, and the random streams.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backends/cpu/random.hpp"
#include "ember/backends/cpu.hpp"
#include "ember/ember.hpp"

namespace ember {
namespace {

template <class T>
DynTensor tensor(std::vector<T> v, Shape s) {
  return DynTensor::from_vector<T>(v, std::move(s));
}
template <class T>
DynTensor vec1(std::vector<T> v) {
  int64_t n = int64_t(v.size());
  return DynTensor::from_vector<T>(v, Shape{n});
}
// Values 0.001 * ((i * 7919) mod 2001 - 1000): a deterministic spread over [-1, 1].
DynTensor ramp(Shape s, DType dt = DType::f32) {
  std::vector<double> v(size_t(s.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.001 * double(int64_t(i * 7919 % 2001) - 1000);
  return DynTensor::from_data(TensorData::from_doubles(v, s, dt));
}
void expect_same(const DynTensor& got, const DynTensor& want, double rtol = 0) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) {
      ASSERT_TRUE(std::isnan(g[i])) << "at " << i;
    } else {
      ASSERT_NEAR(g[i], w[i], rtol * std::abs(w[i])) << "at " << i;
    }
  }
}

// ---------------------------------------------------------------- random

TEST(CpuRandom, PhiloxKnownAnswers) {
  // Random123's known-answer vectors for Philox-4x32-10
  auto a = cpu::philox4x32_10(0, 0, 0);
  EXPECT_EQ(a[0], 0x6627e8d5u);
  EXPECT_EQ(a[3], 0x9b00dbd8u);
  auto b = cpu::philox4x32_10(~0ull, ~0ull, ~0ull);
  EXPECT_EQ(b[0], 0x408f276du);
  EXPECT_EQ(b[3], 0x6d5451fdu);
  auto c = cpu::philox4x32_10(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull);
  EXPECT_EQ(c[0], 0xd16cfe09u);
  EXPECT_EQ(c[1], 0x94fdccebu);
  EXPECT_EQ(c[2], 0x5001e420u);
  EXPECT_EQ(c[3], 0x24126ea1u);
  // the batched (vectorised) generator matches block by block, across a 64-bit carry
  std::vector<uint32_t> w(4 * 100);
  cpu::philox_blocks(42, ~0ull - 50, 100, w.data());
  for (int i = 0; i < 100; ++i) {
    auto r = cpu::philox4x32_10(42, ~0ull - 50 + uint64_t(i));
    for (int j = 0; j < 4; ++j) ASSERT_EQ(w[4 * i + j], r[j]) << i;
  }
}

std::vector<std::vector<double>> draw_all(int threads) {
  cpu::set_num_threads(threads);
  Device::default_device().seed(1234);
  std::vector<std::vector<double>> r;
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    r.push_back(DynTensor::uniform(Shape{70001}, -1, 2, dt).to_vector<double>());
    r.push_back(DynTensor::normal(Shape{70001}, 0, 1, dt).to_vector<double>());
  }
  r.push_back(DynTensor::bernoulli(Shape{70001}, 0.25, DType::u8).to_vector<double>());
  r.push_back(DynTensor::randint(Shape{70001}, -3, 9).to_vector<double>());
  r.push_back(DynTensor::randint(Shape{70001}, 0, int64_t(1) << 50).to_vector<double>());
  return r;
}

TEST(CpuRandom, IndependentOfThreadCount) {
  int saved = cpu::num_threads();
  auto one = draw_all(1);
  auto two = draw_all(2);
  auto three = draw_all(3);
  cpu::set_num_threads(saved);
  EXPECT_EQ(one, two);
  EXPECT_EQ(one, three);
}

TEST(CpuRandom, SeedingAndRanges) {
  Device d = Device::default_device();
  d.seed(7);
  auto a = DynTensor::uniform(Shape{1000}).to_vector<float>();
  auto b = DynTensor::uniform(Shape{1000}).to_vector<float>();
  d.seed(7);
  auto c = DynTensor::uniform(Shape{1000}).to_vector<float>();
  EXPECT_NE(a, b);
  EXPECT_EQ(a, c);
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    auto u = DynTensor::uniform(Shape{200000}, 0, 1, dt).to_vector<double>();
    double mean = 0;
    for (double x : u) {
      ASSERT_GE(x, 0.0);
      ASSERT_LT(x, 1.0);
      mean += x;
    }
    EXPECT_NEAR(mean / double(u.size()), 0.5, 0.01) << dtype_name(dt);
    auto z = DynTensor::normal(Shape{200000}, 3, 2, dt).to_vector<double>();
    double m = 0, m2 = 0;
    for (double x : z) m += x, m2 += x * x;
    m /= double(z.size());
    EXPECT_NEAR(m, 3, 0.03) << dtype_name(dt);
    EXPECT_NEAR(m2 / double(z.size()) - m * m, 4, 0.1) << dtype_name(dt);
  }
  for (double p : {0.0, 1.0}) {
    auto v = DynTensor::bernoulli(Shape{5000}, p, DType::boolean).to_vector<double>();
    for (double x : v) ASSERT_EQ(x, p);
  }
  auto r = DynTensor::randint(Shape{100000}, -3, 9).to_vector<int64_t>();
  int64_t lo = 100, hi = -100;
  for (int64_t x : r) lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_EQ(lo, -3);
  EXPECT_EQ(hi, 8);
  auto r8 = DynTensor::randint(Shape{1000}, 0, 256, DType::u8).to_vector<int>();
  for (int x : r8) ASSERT_TRUE(x >= 0 && x < 256);
}

// ---------------------------------------------------------------- creation

TEST(CpuCreation, ArangeLinspaceEye) {
  // integer arange truncates start and step (torch.arange(0.5, 5, 1, dtype=int64))
  EXPECT_EQ(DynTensor::arange(0.5, 5, 1, DType::i64).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(DynTensor::arange(-2.5, 3, 1.5, DType::i32).to_vector<int32_t>(), (std::vector<int32_t>{-2, -1, 0, 1}));
  auto f = DynTensor::arange(0, 1, 0.1).to_vector<float>();
  ASSERT_EQ(f.size(), 10u);
  EXPECT_EQ(f[3], 0.3f);
  EXPECT_EQ(f[7], 0.7f);
  // torch.linspace(-3.7, 2.2, 5, dtype=int32) == [-3, -1, 0, 0, 2]
  EXPECT_EQ(DynTensor::linspace(-3.7, 2.2, 5, DType::i32).to_vector<int32_t>(),
            (std::vector<int32_t>{-3, -1, 0, 0, 2}));
  EXPECT_EQ(DynTensor::linspace(0, 10, 4, DType::i64).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 10}));
  auto l = DynTensor::linspace(0, 1, 100001).to_vector<float>();
  EXPECT_EQ(l.front(), 0.0f);
  EXPECT_EQ(l.back(), 1.0f);
  EXPECT_NEAR(l[50000], 0.5f, 1e-7);
  EXPECT_EQ(DynTensor::linspace(5, 7, 1).to_vector<float>(), (std::vector<float>{5}));
  EXPECT_EQ(DynTensor::linspace(5, 7, 0).numel(), 0);
  auto e = DynTensor::eye(2, 3, DType::i8).to_vector<int>();
  EXPECT_EQ(e, (std::vector<int>{1, 0, 0, 0, 1, 0}));
  auto big = DynTensor::full(Shape{300000}, 2.5, DType::bf16).to_vector<float>();
  for (float x : big) ASSERT_EQ(x, 2.5f);
}

// ---------------------------------------------------------------- layouts

TEST(CpuElementwise, StridedAndBroadcastMatchContiguous) {
  auto x = ramp(Shape{301, 257});
  auto xt = transpose(x, 0, 1);  // non-contiguous
  auto xc = contiguous(xt);
  expect_same(exp(xt), exp(xc));
  expect_same(tanh(xt), tanh(xc));
  expect_same(sign(xt), sign(xc));
  expect_same(hard_sigmoid(xt), hard_sigmoid(xc));
  expect_same(is_nan(xt), is_nan(xc));
  expect_same(cast(xt, DType::f16), cast(xc, DType::f16));
  expect_same(cast(mul(xt, 1000.0), DType::i16), cast(mul(xc, 1000.0), DType::i16));
  auto row = ramp(Shape{1, 301});
  auto col = ramp(Shape{257, 1}, DType::f32);
  auto rowe = contiguous(expand(row, {257, 301})), cole = contiguous(expand(col, {257, 301}));
  std::vector<std::pair<DynTensor, DynTensor>> cases = {
      {add(row, col), add(rowe, cole)},       {sub(xt, row), sub(xc, rowe)},
      {maximum(col, xt), maximum(cole, xc)},  {div(xt, col), div(xc, cole)},
      {atan2(xt, row), atan2(xc, rowe)},      {pow(add(xt, 2.0), col), pow(add(xc, 2.0), cole)}};
  for (const auto& [got, want] : cases) expect_same(got, want);
  expect_same(greater(xt, col), greater(xc, cole));
  expect_same(where(greater(xt, 0.0), row, col), where(greater(xc, 0.0), rowe, cole));
  expect_same(lerp(xt, row, col), lerp(xc, rowe, cole), 1e-6);
  // permuted inputs keep their layout (flat loops); mixed layouts and chains stay correct
  expect_same(add(xt, xc), mul(xc, 2.0));
  expect_same(exp(exp(xt)), exp(exp(xc)));
  expect_same(add(exp(xt), xt), add(exp(xc), xc));
  expect_same(where(greater(xt, 0.0), xt, mul(xt, 3.0)), where(greater(xc, 0.0), xc, mul(xc, 3.0)));
  auto x3 = ramp(Shape{7, 11, 13});
  auto p3 = permute(x3, {2, 0, 1}), p3c = contiguous(p3);
  expect_same(neg(p3), neg(p3c));
  expect_same(sub(p3, 0.25), sub(p3c, 0.25));
  expect_same(cast(p3, DType::bf16), cast(p3c, DType::bf16));
  expect_same(lerp(p3, mul(p3, 2.0), 0.75), lerp(p3c, mul(p3c, 2.0), 0.75), 1e-6);
  // f64 and f16 through the same paths
  auto d = cast(xt, DType::f64);
  expect_same(sigmoid(d), sigmoid(contiguous(d)));
  auto h = cast(xt, DType::f16);
  expect_same(mul(h, cast(col, DType::f16)), mul(contiguous(h), cast(cole, DType::f16)));
}

TEST(CpuElementwise, InPlaceReuseKeepsValues) {
  auto want_exp = exp(ramp(Shape{100003})).to_vector<float>();
  auto y = exp(ramp(Shape{100003}));  // the input buffer is owned by the op: reused
  EXPECT_EQ(y.to_vector<float>(), want_exp);
  auto b = ramp(Shape{100003});
  auto want_add = add(ramp(Shape{100003}), b).to_vector<float>();
  EXPECT_EQ(add(b, ramp(Shape{100003})).to_vector<float>(), want_add);  // reuses input 1
  auto small = add(vec1<float>({1.5f}), vec1<float>({2.25f}));
  EXPECT_EQ(small.to_vector<float>(), std::vector<float>{3.75f});
  auto zero_d = add(DynTensor::full(Shape{}, 2, DType::i32), DynTensor::full(Shape{}, 3, DType::i32));
  EXPECT_EQ(zero_d.shape(), Shape{});
  EXPECT_EQ(zero_d.to_vector<int>(), std::vector<int>{5});
  auto empty = add(DynTensor::zeros(Shape{0, 3}), DynTensor::ones(Shape{3}));
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
  // cast in place between same-size dtypes
  EXPECT_EQ(cast(vec1<int32_t>({-3, 7}), DType::f32).to_vector<float>(), (std::vector<float>{-3, 7}));
}

// ---------------------------------------------------------------- integer semantics

TEST(CpuElementwise, IntegerSemantics) {
  EXPECT_EQ(add(vec1<int8_t>({127, -128}), vec1<int8_t>({1, -1})).to_vector<int>(), (std::vector<int>{-128, 127}));
  EXPECT_EQ(abs(vec1<int8_t>({-128, -5})).to_vector<int>(), (std::vector<int>{-128, 5}));
  EXPECT_EQ(neg(vec1<uint8_t>({0, 1, 255})).to_vector<int>(), (std::vector<int>{0, 255, 1}));
  EXPECT_EQ(sign(vec1<uint8_t>({0, 200})).to_vector<int>(), (std::vector<int>{0, 1}));
  EXPECT_EQ(mul(vec1<int16_t>({300}), vec1<int16_t>({300})).to_vector<int>(), (std::vector<int>{24464}));
  // torch 1.13 shifts: count modulo the promoted width
  auto a8 = vec1<int8_t>({1, -1, 5, -128, 3});
  auto b8 = vec1<int8_t>({0, 1, 8, 9, 100});
  EXPECT_EQ(shift_left(a8, b8).to_vector<int>(), (std::vector<int>{1, -2, 0, 0, 48}));
  EXPECT_EQ(shift_right(a8, b8).to_vector<int>(), (std::vector<int>{1, -1, 0, -1, 0}));
  auto a32 = vec1<int32_t>({1, -1, 5, -128, 3});
  EXPECT_EQ(shift_left(a32, vec1<int32_t>({-1, -1, -1, -1, 40})).to_vector<int64_t>(),
            (std::vector<int64_t>{INT32_MIN, INT32_MIN, INT32_MIN, 0, 768}));
  auto a64 = vec1<int64_t>({3});
  EXPECT_EQ(shift_left(a64, vec1<int64_t>({100})).to_vector<int64_t>(), std::vector<int64_t>{206158430208});
  // fmod / remainder signs; division by zero raises
  auto n = vec1<int64_t>({-5, -5, 5, 5});
  auto d = vec1<int64_t>({3, -3, -3, 3});
  EXPECT_EQ(fmod(n, d).to_vector<int64_t>(), (std::vector<int64_t>{-2, -2, 2, 2}));
  EXPECT_EQ(remainder(n, d).to_vector<int64_t>(), (std::vector<int64_t>{1, -2, -1, 2}));
  EXPECT_THROW(fmod(n, vec1<int64_t>({1, 0, 1, 1})), Error);
  EXPECT_THROW(remainder(vec1<int32_t>({1}), 0), Error);
  EXPECT_EQ(fmod(vec1<int64_t>({INT64_MIN}), vec1<int64_t>({-1})).to_vector<int64_t>(), std::vector<int64_t>{0});
  // pow: negative scalar exponents raise; negative tensor exponents follow torch's rule
  EXPECT_THROW(pow(vec1<int64_t>({2, 3}), -1), Error);
  EXPECT_EQ(pow(vec1<int64_t>({1, -1, -1, 2}), vec1<int64_t>({-3, -3, -2, -1})).to_vector<int64_t>(),
            (std::vector<int64_t>{1, -1, 1, 0}));
  EXPECT_EQ(pow(vec1<int32_t>({3, -2}), 5).to_vector<int>(), (std::vector<int>{243, -32}));
  EXPECT_EQ(bitwise_not(vec1<bool>({true, false})).to_vector<int>(), (std::vector<int>{0, 1}));
  EXPECT_EQ(bitwise_xor(vec1<bool>({true, true}), vec1<bool>({true, false})).to_vector<int>(),
            (std::vector<int>{0, 1}));
  EXPECT_EQ(clamp(vec1<int64_t>({-10, 5, 10}), -2, 7).to_vector<int64_t>(), (std::vector<int64_t>{-2, 5, 7}));
}

// ---------------------------------------------------------------- float semantics

TEST(CpuElementwise, FloatSemantics) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  auto mn = minimum(vec1<float>({nan, 1, 2}), vec1<float>({0, nan, 1})).to_vector<float>();
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]));
  EXPECT_EQ(mn[2], 1);
  auto c = clamp(vec1<float>({nan, -1, 2}), 0, 1).to_vector<float>();
  EXPECT_TRUE(std::isnan(c[0]));
  EXPECT_EQ(c[1], 0);
  EXPECT_EQ(c[2], 1);
  EXPECT_EQ(clamp(vec1<float>({1, 5}), 3, 2).to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_EQ(sign(vec1<float>({nan, -0.0f, -2})).to_vector<float>(), (std::vector<float>{0, 0, -1}));
  EXPECT_EQ(round(vec1<float>({0.5f, 1.5f, 2.5f, -0.5f})).to_vector<float>(), (std::vector<float>{0, 2, 2, -0.0f}));
  EXPECT_EQ(remainder(vec1<float>({-1, 2, -5}), vec1<float>({inf, -inf, 3})).to_vector<float>(),
            (std::vector<float>{inf, -inf, 1}));
  EXPECT_EQ(relu(vec1<float>({-1, 0.5f})).to_vector<float>(), (std::vector<float>{0, 0.5f}));
  EXPECT_TRUE(std::isnan(relu(vec1<float>({nan})).to_vector<float>()[0]));
  // softplus with non-default beta / threshold (scalar path)
  auto sp = softplus(vec1<float>({-1, 0.5f, 3}), 2, 5).to_vector<float>();
  EXPECT_NEAR(sp[0], std::log1p(std::exp(-2.0)) / 2, 1e-7);
  EXPECT_EQ(sp[2], 3.0f);
  auto big = ramp(Shape{200000});
  auto p2 = pow(big, 2.0).to_vector<float>();
  auto sq = square(big).to_vector<float>();
  EXPECT_EQ(p2, sq);
  // f16 arithmetic rounds once from float
  auto h = add(DynTensor::full(Shape{3}, 1.0, DType::f16), DynTensor::full(Shape{3}, 0.0004, DType::f16));
  EXPECT_EQ(h.to_vector<float>()[0], 1.0f);
}

// ---------------------------------------------------------------- cast

TEST(CpuCast, TorchConversionRules) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  auto x = vec1<float>({nan, -1.7f, 300.5f, -300.5f, 1e10f, inf, 2.5f});
  EXPECT_EQ(cast(x, DType::u8).to_vector<int>(), (std::vector<int>{0, 255, 44, 212, 0, 0, 2}));
  EXPECT_EQ(cast(x, DType::i8).to_vector<int>(), (std::vector<int>{0, -1, 44, -44, 0, 0, 2}));
  EXPECT_EQ(cast(x, DType::i32).to_vector<int64_t>(),
            (std::vector<int64_t>{INT32_MIN, -1, 300, -300, INT32_MIN, INT32_MIN, 2}));
  EXPECT_EQ(cast(x, DType::i64).to_vector<int64_t>(),
            (std::vector<int64_t>{INT64_MIN, -1, 300, -300, 10000000000, INT64_MIN, 2}));
  EXPECT_EQ(cast(vec1<float>({nan, -0.0f, 0.1f}), DType::boolean).to_vector<int>(), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(cast(vec1<int64_t>({300, -1}), DType::u8).to_vector<int>(), (std::vector<int>{44, 255}));
  auto h = cast(vec1<float>({65519.0f, 65520.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f}), DType::f16);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{65504.0f, inf, 1.0f, 1.0f + 0x1p-9f}));
  auto bf = cast(vec1<float>({3.4e38f, 1.0f + 0x1p-8f}), DType::bf16).to_vector<float>();
  EXPECT_EQ(bf[0], inf);
  EXPECT_EQ(bf[1], 1.0f);
  // large and strided tensors take the vectorised and the generic paths
  auto big = ramp(Shape{513, 1025});
  for (DType dt : {DType::f16, DType::bf16, DType::f64, DType::i32, DType::boolean}) {
    auto t = transpose(big, 0, 1);
    expect_same(cast(t, dt), cast(contiguous(t), dt));
    expect_same(cast(cast(big, dt), DType::f32), cast(cast(contiguous(big), dt), DType::f32));
  }
}

}  // namespace
}  // namespace ember
