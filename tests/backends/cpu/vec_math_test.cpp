#include "backends/cpu/vec/vec_math.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_features.hpp"

namespace ember::cpu::vec {
namespace {

using detail::Isa;
using detail::Kernels;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kInfD = std::numeric_limits<double>::infinity();
constexpr double kNaND = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------------------------
// ISA paths available on this machine
std::vector<Isa> isas() {
  std::vector<Isa> v = {Isa::scalar};
  if (cpu::features().avx2) v.push_back(Isa::avx2);
  if (cpu::features().avx512) v.push_back(Isa::avx512);
  return v;
}
const char* isa_name(Isa i) {
  return i == Isa::scalar ? "scalar" : i == Isa::avx2 ? "avx2" : "avx512";
}

const char* unary_name(Unary f) {
  static const char* names[] = {
      "exp",      "exp2",     "expm1",     "log",       "log2",       "log10",   "log1p",
      "sqrt",     "rsqrt",    "reciprocal", "sin",      "cos",        "tan",     "asin",
      "acos",     "atan",     "sinh",      "cosh",      "tanh",       "asinh",   "acosh",
      "atanh",    "erf",      "sigmoid",   "log_sigmoid", "relu",     "gelu_erf", "gelu_tanh",
      "silu",     "softplus", "abs",       "neg",       "square",     "floor",   "ceil",
      "round",    "trunc",    "sign"};
  return names[static_cast<int>(f)];
}

// ---------------------------------------------------------------------------------
// Double-precision references (independent of the library)
double sigmoid_ref(double x) {
  const double e = std::exp(-std::fabs(x));
  return (x >= 0 ? 1.0 : e) / (1.0 + e);
}
double unary_ref(Unary fn, double x) {
  switch (fn) {
    case Unary::exp: return std::exp(x);
    case Unary::exp2: return std::exp2(x);
    case Unary::expm1: return std::expm1(x);
    case Unary::log: return std::log(x);
    case Unary::log2: return std::log2(x);
    case Unary::log10: return std::log10(x);
    case Unary::log1p: return std::log1p(x);
    case Unary::sqrt: return std::sqrt(x);
    case Unary::rsqrt: return 1.0 / std::sqrt(x);
    case Unary::reciprocal: return 1.0 / x;
    case Unary::sin: return std::sin(x);
    case Unary::cos: return std::cos(x);
    case Unary::tan: return std::tan(x);
    case Unary::asin: return std::asin(x);
    case Unary::acos: return std::acos(x);
    case Unary::atan: return std::atan(x);
    case Unary::sinh: return std::sinh(x);
    case Unary::cosh: return std::cosh(x);
    case Unary::tanh: return std::tanh(x);
    case Unary::asinh: return std::asinh(x);
    case Unary::acosh: return std::acosh(x);
    case Unary::atanh: return std::atanh(x);
    case Unary::erf: return std::erf(x);
    case Unary::sigmoid: return sigmoid_ref(x);
    case Unary::log_sigmoid:
      return std::isnan(x) ? x : std::min(x, 0.0) - std::log1p(std::exp(-std::fabs(x)));
    case Unary::relu: return x < 0 ? 0.0 : x;
    case Unary::gelu_erf:  // x * Phi(x) via erfc: accurate in the negative tail
      if (std::isinf(x)) return x > 0 ? x : kNaND;
      return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case Unary::gelu_tanh: {  // 0.5 x (1 + tanh(u)) == x * sigmoid(2u)
      if (std::isinf(x)) return x > 0 ? x : kNaND;
      const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
      return x * sigmoid_ref(2.0 * u);
    }
    case Unary::silu: return x * sigmoid_ref(x);
    case Unary::softplus: return x > 20 ? x : std::log1p(std::exp(x));
    case Unary::abs: return std::fabs(x);
    case Unary::neg: return -x;
    case Unary::square: return x * x;
    case Unary::floor: return std::floor(x);
    case Unary::ceil: return std::ceil(x);
    case Unary::round: return std::nearbyint(x);
    case Unary::trunc: return std::trunc(x);
    case Unary::sign: return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
  }
  return kNaND;
}
// f32 binary reference (double math, C semantics; remainder = torch's fmod-based rule)
double binary_ref(Binary fn, float af, float bf) {
  const double a = af, b = bf;
  switch (fn) {
    case Binary::add: return a + b;
    case Binary::sub: return a - b;
    case Binary::mul: return a * b;
    case Binary::div: return a / b;
    case Binary::maximum: return (std::isnan(a) || std::isnan(b)) ? kNaND : (a > b ? a : b);
    case Binary::minimum: return (std::isnan(a) || std::isnan(b)) ? kNaND : (a < b ? a : b);
    case Binary::pow: return std::pow(a, b);
    case Binary::atan2: return std::atan2(a, b);
    case Binary::hypot: return std::hypot(a, b);
    case Binary::fmod: return std::fmod(a, b);
    case Binary::remainder: {
      double m = std::fmod(a, b);  // exact
      if (m != 0 && ((b < 0) != (m < 0))) m = static_cast<float>(m + b);
      return m;
    }
  }
  return kNaND;
}

// ulp distance between y and the correctly rounded value of r (0 for equal zeros)
int64_t ord(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i < 0 ? int64_t{INT32_MIN} - i : i;
}
int64_t ulp_dist(float y, double r) {
  const float rf = static_cast<float>(r);
  if (std::isnan(rf) || std::isnan(y)) return (std::isnan(rf) && std::isnan(y)) ? 0 : INT32_MAX;
  if (y == rf) return 0;
  const int64_t d = ord(y) - ord(rf);
  return d < 0 ? -d : d;
}

// Accuracy bound (ulp from the correctly rounded result) for the SIMD paths.
int64_t unary_bound(Unary fn) {
  switch (fn) {
    case Unary::sqrt: case Unary::reciprocal: case Unary::relu: case Unary::abs:
    case Unary::neg: case Unary::square: case Unary::floor: case Unary::ceil:
    case Unary::round: case Unary::trunc: case Unary::sign:
      return 0;
    case Unary::rsqrt: return 1;  // 1 / sqrt(x): two roundings, like torch
    case Unary::exp: case Unary::log: case Unary::sigmoid: case Unary::tanh: case Unary::erf:
    case Unary::gelu_erf: case Unary::gelu_tanh: case Unary::silu: case Unary::softplus:
    case Unary::sin: case Unary::cos:
      return 2;
    default: return 4;
  }
}

float bits_f(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t f_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// equal bits, or both NaN (NaN payloads are unspecified)
bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || f_bits(a) == f_bits(b); }

std::vector<float> special_values() {
  std::vector<float> v = {0.0f, -0.0f, kInf, -kInf, kNaN, -kNaN, 1e-45f, -1e-45f, 1e-40f, -1e-40f,
                          1.17549435e-38f, -1.17549435e-38f, 3.4028235e38f, -3.4028235e38f,
                          1.0f, -1.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 2.0f, -2.0f, 3.0f,
                          0.99999994f, 1.00000012f, -0.99999994f, 1e-7f, -1e-7f, 5.9604645e-8f,
                          20.0f, 20.000002f, 19.999998f, -20.0f, 88.72f, 88.73f, 89.0f, -87.33f,
                          -88.8f, -103.9f, -104.0f, -150.0f, 9.01f, -9.01f, 3.92f, 4.0f, -4.0f,
                          0.625f, 16.0f, -16.0f, 14.5f, -14.5f, 8388608.5f, 8388609.0f, 1e30f,
                          -1e30f, 65536.0f, 1048576.0f, 1e7f, -1e7f, 3.1415927f, -3.1415927f,
                          1.5707964f, 0.41421356f, -0.29289323f, 4096.0f, 4097.0f, -0.999f};
  return v;
}
// Inputs: specials, a strided walk over all bit patterns, dense grids near 0.
std::vector<float> unary_inputs() {
  std::vector<float> v = special_values();
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 9973) v.push_back(bits_f(static_cast<uint32_t>(u)));
  for (int i = -250000; i <= 250000; ++i) v.push_back(static_cast<float>(i) * 1e-4f);  // [-25, 25]
  for (int i = -100000; i <= 100000; ++i) v.push_back(static_cast<float>(i) * 1e-5f);  // [-1, 1]
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (int i = 0; i < 100000; ++i) v.push_back(nd(rng));
  return v;
}

// ---------------------------------------------------------------------------------
// Unary f32: every function, every ISA, against double references.
class UnaryF32 : public ::testing::TestWithParam<int> {};

TEST_P(UnaryF32, MatchesDoubleReference) {
  const Unary fn = static_cast<Unary>(GetParam());
  static const std::vector<float> xs = unary_inputs();
  std::vector<double> ref(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) ref[i] = unary_ref(fn, xs[i]);
  std::vector<float> y(xs.size());
  for (Isa isa : isas()) {
    detail::kernels(isa).unary_f32(fn, xs.data(), y.data(), static_cast<int64_t>(xs.size()));
    const int64_t bound = isa == Isa::scalar ? std::max<int64_t>(1, unary_bound(fn)) : unary_bound(fn);
    int64_t worst = 0;
    size_t worst_i = 0, fails = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const int64_t d = ulp_dist(y[i], ref[i]);
      if (d > worst) worst = d, worst_i = i;
      if (d > bound) ++fails;
    }
    EXPECT_EQ(fails, 0u) << unary_name(fn) << " [" << isa_name(isa) << "] max ulp " << worst
                         << " at x=" << xs[worst_i] << " got " << y[worst_i] << " want "
                         << ref[worst_i];
  }
}

INSTANTIATE_TEST_SUITE_P(AllFunctions, UnaryF32, ::testing::Range(0, kNumUnary),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(unary_name(static_cast<Unary>(i.param)));
                         });

// Dense sweep of the main ranges for the functions with a 2-ulp contract (every 241st float).
TEST(VecMath, HotFunctionsDenseSweep) {
  const Unary fns[] = {Unary::exp, Unary::log, Unary::tanh, Unary::sigmoid, Unary::erf,
                       Unary::gelu_erf, Unary::gelu_tanh, Unary::silu, Unary::softplus,
                       Unary::sin, Unary::cos};
  std::vector<float> xs;
  for (uint32_t u = 0; u < 0x7f800000u; u += 241) {
    const float f = bits_f(u);
    if (f > 120.0f) break;
    xs.push_back(f);
    xs.push_back(-f);
  }
  std::vector<float> y(xs.size());
  for (Unary fn : fns) {
    for (Isa isa : isas()) {
      if (isa == Isa::scalar) continue;
      detail::kernels(isa).unary_f32(fn, xs.data(), y.data(), static_cast<int64_t>(xs.size()));
      size_t fails = 0, first = 0;
      for (size_t i = 0; i < xs.size(); ++i)
        if (ulp_dist(y[i], unary_ref(fn, xs[i])) > 2 && !fails++) first = i;
      EXPECT_EQ(fails, 0u) << unary_name(fn) << " [" << isa_name(isa) << "] first x=" << xs[first]
                           << " got " << y[first] << " want " << unary_ref(fn, xs[first]);
    }
  }
}

// Torch 1.13 results for special inputs (signed zeros, NaN/Inf handling).
TEST(VecMath, TorchSpecialValues) {
  struct Case {
    Unary fn;
    float x, want;
  };
  const float pi2 = 1.57079637f;
  const Case cases[] = {
      {Unary::sign, kNaN, 0.0f},        {Unary::sign, -0.0f, 0.0f},       {Unary::sign, 1e-40f, 1.0f},
      {Unary::relu, -0.0f, -0.0f},      {Unary::relu, kNaN, kNaN},        {Unary::relu, -1.0f, 0.0f},
      {Unary::round, -0.5f, -0.0f},     {Unary::round, 2.5f, 2.0f},       {Unary::round, 1.5f, 2.0f},
      {Unary::floor, -0.5f, -1.0f},     {Unary::ceil, -0.5f, -0.0f},      {Unary::trunc, -0.5f, -0.0f},
      {Unary::abs, -0.0f, 0.0f},        {Unary::neg, 0.0f, -0.0f},        {Unary::sqrt, -0.0f, -0.0f},
      {Unary::sqrt, -1.0f, kNaN},       {Unary::rsqrt, -0.0f, -kInf},     {Unary::rsqrt, kInf, 0.0f},
      {Unary::reciprocal, -0.0f, -kInf}, {Unary::exp, -kInf, 0.0f},       {Unary::exp, kInf, kInf},
      {Unary::exp, 88.73f, kInf},       {Unary::exp2, -kInf, 0.0f},       {Unary::expm1, -0.0f, -0.0f},
      {Unary::expm1, -kInf, -1.0f},     {Unary::expm1, 100.0f, kInf},     {Unary::log, 0.0f, -kInf},
      {Unary::log, -0.0f, -kInf},       {Unary::log, -1.0f, kNaN},        {Unary::log, kInf, kInf},
      {Unary::log2, 0.5f, -1.0f},       {Unary::log10, 100.0f, 2.0f},     {Unary::log1p, -1.0f, -kInf},
      {Unary::log1p, -0.0f, -0.0f},     {Unary::log1p, -2.0f, kNaN},      {Unary::sin, -0.0f, -0.0f},
      {Unary::sin, kInf, kNaN},         {Unary::cos, kInf, kNaN},         {Unary::tan, -0.0f, -0.0f},
      {Unary::asin, 1.5f, kNaN},        {Unary::asin, -0.0f, -0.0f},      {Unary::acos, -1.0f, 3.14159274f},
      {Unary::acos, 0.0f, pi2},         {Unary::atan, kInf, pi2},         {Unary::atan, -0.0f, -0.0f},
      {Unary::sinh, -kInf, -kInf},      {Unary::sinh, -0.0f, -0.0f},      {Unary::cosh, -kInf, kInf},
      {Unary::tanh, kInf, 1.0f},        {Unary::tanh, -100.0f, -1.0f},    {Unary::tanh, -0.0f, -0.0f},
      {Unary::asinh, -kInf, -kInf},     {Unary::asinh, -0.0f, -0.0f},     {Unary::acosh, 0.5f, kNaN},
      {Unary::acosh, 1.0f, 0.0f},       {Unary::acosh, kInf, kInf},       {Unary::atanh, 1.0f, kInf},
      {Unary::atanh, -1.0f, -kInf},     {Unary::atanh, 1.5f, kNaN},       {Unary::atanh, -0.0f, -0.0f},
      {Unary::erf, kInf, 1.0f},         {Unary::erf, -4.0f, -1.0f},       {Unary::erf, -0.0f, -0.0f},
      {Unary::sigmoid, kInf, 1.0f},     {Unary::sigmoid, -kInf, 0.0f},    {Unary::sigmoid, kNaN, kNaN},
      {Unary::log_sigmoid, -kInf, -kInf}, {Unary::log_sigmoid, kInf, 0.0f}, {Unary::silu, -kInf, kNaN},
      {Unary::silu, kInf, kInf},        {Unary::silu, -0.0f, -0.0f},      {Unary::softplus, -kInf, 0.0f},
      {Unary::softplus, kInf, kInf},    {Unary::softplus, 20.0f, 20.0f},  {Unary::softplus, 21.0f, 21.0f},
      {Unary::softplus, -100.0f, 3.78350585e-44f},  // torch: 3.92e-44 (1 ulp off) {Unary::gelu_erf, kInf, kInf}, {Unary::gelu_erf, -kInf, kNaN},
      {Unary::gelu_erf, -0.0f, 0.0f},   {Unary::gelu_tanh, -kInf, kNaN},  {Unary::gelu_tanh, kInf, kInf},
      {Unary::gelu_tanh, -0.0f, -0.0f}, {Unary::square, -0.0f, 0.0f},
  };
  for (Isa isa : isas()) {
    for (const Case& c : cases) {
      float y = 123.0f;
      detail::kernels(isa).unary_f32(c.fn, &c.x, &y, 1);
      if (std::isnan(c.want)) {
        EXPECT_TRUE(std::isnan(y)) << unary_name(c.fn) << "(" << c.x << ") [" << isa_name(isa) << "] = " << y;
      } else {
        EXPECT_EQ(f_bits(y), f_bits(c.want))
            << unary_name(c.fn) << "(" << c.x << ") [" << isa_name(isa) << "] = " << y << " want " << c.want;
      }
    }
  }
}

// Lengths 0..70 at every start offset and in place: tails and alignment peeling.
TEST(VecMath, TailsOffsetsAndInPlace) {
  std::vector<float> base(200);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> ud(-5.0f, 5.0f);
  for (float& v : base) v = ud(rng);
  const Unary fns[] = {Unary::exp, Unary::tanh, Unary::gelu_erf, Unary::sin, Unary::relu};
  for (Isa isa : isas()) {
    const Kernels& k = detail::kernels(isa);
    for (Unary fn : fns) {
      std::vector<float> want(base.size());
      k.unary_f32(fn, base.data(), want.data(), static_cast<int64_t>(base.size()));
      for (int off = 0; off < 17; ++off) {
        for (int n = 0; n <= 70; ++n) {
          std::vector<float> y(base.size() + 2, -7.0f);
          k.unary_f32(fn, base.data() + off, y.data() + 1 + off, n);
          for (int i = 0; i < n; ++i) ASSERT_EQ(y[1 + off + i], want[off + i]) << isa_name(isa) << " n=" << n;
          ASSERT_EQ(y[off], -7.0f);  // nothing written outside [off+1, off+1+n)
          ASSERT_EQ(y[1 + off + n], -7.0f);
          std::vector<float> inplace(base.begin() + off, base.begin() + off + n);
          k.unary_f32(fn, inplace.data(), inplace.data(), n);
          for (int i = 0; i < n; ++i) ASSERT_EQ(inplace[i], want[off + i]);
        }
      }
    }
  }
}

// Big arrays take the non-temporal-store path (memory-bound ops); results must not change.
TEST(VecMath, LargeArraysStreamingPath) {
  const int64_t n = detail::kStreamMinElems + 37;
  std::vector<float> x(n + 1), y(n + 1), ref(n + 1);
  for (int64_t i = 0; i <= n; ++i) x[i] = static_cast<float>((i % 2001) - 1000) * 0.01f;
  std::vector<double> xd(x.begin(), x.end()), yd(n + 1);
  for (Isa isa : isas()) {
    const Kernels& k = detail::kernels(isa);
    for (int64_t off : {0, 1}) {
      for (Unary fn : {Unary::sqrt, Unary::relu, Unary::exp}) {
        k.unary_f32(fn, x.data(), y.data() + off, n);
        for (int64_t s = 0; s < n; s += 1000)
          k.unary_f32(fn, x.data() + s, ref.data() + s, std::min<int64_t>(1000, n - s));
        for (int64_t i = 0; i < n; ++i)
          ASSERT_TRUE(same_value(y[off + i], ref[i])) << isa_name(isa) << " " << unary_name(fn) << " i=" << i;
      }
      k.binary_f32(Binary::add, x.data(), x.data() + 1, y.data() + off, n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[off + i], x[i] + x[i + 1]) << isa_name(isa);
      k.binary_scalar_f32(Binary::mul, x.data(), 3.0f, y.data() + off, n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[off + i], x[i] * 3.0f) << isa_name(isa);
      k.unary_f64(Unary::sqrt, xd.data(), yd.data() + off, n);
      for (int64_t i = 0; i < n; i += 7) {
        const double w = std::sqrt(xd[i]);
        ASSERT_TRUE(yd[off + i] == w || (std::isnan(w) && std::isnan(yd[off + i])));
      }
    }
  }
}

// ---------------------------------------------------------------------------------
// Binary f32
const char* binary_name(Binary f) {
  static const char* names[] = {"add", "sub", "mul", "div", "maximum", "minimum",
                                "pow", "atan2", "hypot", "fmod", "remainder"};
  return names[static_cast<int>(f)];
}
int64_t binary_bound(Binary fn, Isa isa) {
  switch (fn) {
    case Binary::pow: case Binary::atan2: return isa == Isa::scalar ? 1 : 4;
    case Binary::hypot: return 1;
    default: return 0;
  }
}

class BinaryF32 : public ::testing::TestWithParam<int> {};

TEST_P(BinaryF32, MatchesDoubleReference) {
  const Binary fn = static_cast<Binary>(GetParam());
  std::vector<float> a, b;
  const std::vector<float> sp = special_values();
  for (float u : sp)
    for (float v : sp) a.push_back(u), b.push_back(v);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> ud(-10.0f, 10.0f);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 100000; ++i) {
    a.push_back(ud(rng));
    b.push_back(ud(rng));
    float x = bits_f(bits(rng)), z = bits_f(bits(rng));
    a.push_back(x), b.push_back(z);
    a.push_back(ud(rng) * 1e3f), b.push_back(ud(rng) * 1e-3f);  // large quotients for fmod
    a.push_back(std::fabs(ud(rng)) * 3.0f), b.push_back(std::round(ud(rng) * 4.0f));  // pow integer exps
    a.push_back(-std::fabs(ud(rng)) * 3.0f), b.push_back(std::round(ud(rng) * 4.0f));
    a.push_back(1.0f + ud(rng) * 1e-6f), b.push_back(ud(rng) * 1e7f);
  }
  const size_t n = a.size();
  std::vector<float> y(n);
  for (Isa isa : isas()) {
    detail::kernels(isa).binary_f32(fn, a.data(), b.data(), y.data(), static_cast<int64_t>(n));
    const int64_t bound = binary_bound(fn, isa);
    size_t fails = 0, first = 0;
    int64_t worst = 0;
    for (size_t i = 0; i < n; ++i) {
      const double r = binary_ref(fn, a[i], b[i]);
      int64_t d = ulp_dist(y[i], r);
      if (d == 0 && y[i] == 0 && r == 0 && std::signbit(y[i]) != std::signbit(r) &&
          fn != Binary::add && fn != Binary::sub)
        d = 1000;  // signed zeros must match (max/min ties, fmod, pow(-0, odd))
      worst = std::max(worst, d);
      if (d > bound && !fails++) first = i;
    }
    EXPECT_EQ(fails, 0u) << binary_name(fn) << " [" << isa_name(isa) << "] worst " << worst << " first a="
                         << a[first] << " b=" << b[first] << " got " << y[first] << " want "
                         << binary_ref(fn, a[first], b[first]);
    // scalar-broadcast variants agree with the array version (pow has torch fast paths)
    const float bs[] = {0.0f, 1.0f, -1.5f, 2.5f, 1e-3f, kInf, kNaN, 7.0f};
    std::vector<float> bb(n), ys(n), yb(n);
    for (float s : bs) {
      std::fill(bb.begin(), bb.end(), s);
      detail::kernels(isa).binary_f32(fn, a.data(), bb.data(), yb.data(), static_cast<int64_t>(n));
      detail::kernels(isa).binary_scalar_f32(fn, a.data(), s, ys.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i)
        ASSERT_TRUE(same_value(ys[i], yb[i])) << binary_name(fn) << " a=" << a[i] << " b=" << s;
      detail::kernels(isa).binary_f32(fn, bb.data(), a.data(), yb.data(), static_cast<int64_t>(n));
      detail::kernels(isa).scalar_binary_f32(fn, s, a.data(), ys.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i)
        ASSERT_TRUE(same_value(ys[i], yb[i])) << binary_name(fn) << " a=" << s << " b=" << a[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFunctions, BinaryF32, ::testing::Range(0, kNumBinary),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(binary_name(static_cast<Binary>(i.param)));
                         });

// Division by one scalar runs without a divide instruction (Newton steps from the rounded
// reciprocal); it must still be the correctly rounded quotient, bit for bit. The reference is
// the quotient in double rounded to float, which is correctly rounded (53 >= 2 * 24 + 2 bits).
// Operands: random bit patterns over every exponent, and the edge values.
TEST(VecMath, DivByScalarIsCorrectlyRounded) {
  std::mt19937 rng(7);
  std::vector<float> a;
  for (int i = 0; i < 1 << 20; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &u, 4);
    a.push_back(f);
  }
  for (float e : {0.0f, -0.0f, kInf, -kInf, kNaN, 1e-45f, -1e-40f, 1e-38f, 0x1p-70f, 0x1p100f, 0x1.fffffep127f})
    a.push_back(e);
  const float divisors[] = {1.41421356f, 3.0f, 7.0f, 0.1f, -2.5f, 1e-5f, 6.02e5f, 11.3137085f, 0x1p-20f, 0x1p20f,
                            1.0f / 3.0f, 0.70710678f, 1.0e-3f, 0x1.8p-21f, 3e7f, 1e-30f, 0.0f};
  std::vector<float> y(a.size());
  for (Isa isa : isas())
    for (float b : divisors) {
      detail::kernels(isa).binary_scalar_f32(Binary::div, a.data(), b, y.data(), static_cast<int64_t>(a.size()));
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        const float want = static_cast<float>(double(a[i]) / double(b));
        if (!same_value(y[i], want) && !bad++) first = i;
      }
      EXPECT_EQ(bad, 0u) << "[" << isa_name(isa) << "] b=" << b << " first a=" << a[first] << " got " << y[first]
                         << " want " << static_cast<float>(double(a[first]) / double(b));
    }
}

TEST(VecMath, TorchBinarySpecialValues) {
  struct Case {
    Binary fn;
    float a, b, want;
  };
  const Case cases[] = {
      {Binary::maximum, 0.0f, -0.0f, -0.0f},  {Binary::maximum, -0.0f, 0.0f, 0.0f},
      {Binary::minimum, 0.0f, -0.0f, -0.0f},  {Binary::maximum, kNaN, 1.0f, kNaN},
      {Binary::minimum, 1.0f, kNaN, kNaN},    {Binary::fmod, -3.0f, 3.0f, -0.0f},
      {Binary::fmod, 5.0f, kInf, 5.0f},       {Binary::fmod, kInf, 2.0f, kNaN},
      {Binary::fmod, 5.0f, 0.0f, kNaN},       {Binary::fmod, -7.5f, 2.0f, -1.5f},
      {Binary::fmod, 1e30f, 3.3f, 2.61345768f}, {Binary::remainder, -1.0f, kInf, kInf},
      {Binary::remainder, 5.0f, -kInf, -kInf}, {Binary::remainder, -3.0f, 3.0f, -0.0f},
      {Binary::remainder, 3.0f, -3.0f, 0.0f}, {Binary::remainder, -7.5f, 2.0f, 0.5f},
      {Binary::remainder, 0.0f, -2.0f, 0.0f}, {Binary::remainder, 1e30f, 3.3f, 2.61345768f},
      {Binary::remainder, -1e30f, 3.3f, 0.686542273f}, {Binary::atan2, 0.0f, -0.0f, 3.14159274f},
      {Binary::atan2, -0.0f, 0.0f, -0.0f},    {Binary::atan2, -0.0f, -0.0f, -3.14159274f},
      {Binary::atan2, kInf, kInf, 0.785398185f}, {Binary::atan2, -kInf, -kInf, -2.3561945f},
      {Binary::atan2, 1.0f, -kInf, 3.14159274f}, {Binary::atan2, -1.0f, kInf, -0.0f},
      {Binary::atan2, 2.0f, -0.0f, 1.57079637f}, {Binary::hypot, kInf, kNaN, kInf},
      {Binary::hypot, kNaN, -kInf, kInf},     {Binary::hypot, 3e38f, 3e38f, kInf},
      {Binary::hypot, 1e-45f, 1e-45f, 1e-45f}, {Binary::pow, 0.0f, 0.0f, 1.0f},
      {Binary::pow, kNaN, 0.0f, 1.0f},        {Binary::pow, 1.0f, kNaN, 1.0f},
      {Binary::pow, -1.0f, kInf, 1.0f},       {Binary::pow, -1.0f, kNaN, kNaN},
      {Binary::pow, -2.0f, 3.0f, -8.0f},      {Binary::pow, -2.0f, 0.5f, kNaN},
      {Binary::pow, -0.0f, 3.0f, -0.0f},      {Binary::pow, -0.0f, -3.0f, -kInf},
      {Binary::pow, -0.0f, -2.0f, kInf},      {Binary::pow, -0.0f, 0.5f, 0.0f},
      {Binary::pow, -kInf, 2.5f, kInf},       {Binary::pow, -kInf, -3.0f, -0.0f},
      {Binary::pow, -kInf, 3.0f, -kInf},      {Binary::pow, 0.5f, kInf, 0.0f},
      {Binary::pow, 0.5f, -kInf, kInf},       {Binary::pow, 2.0f, -kInf, 0.0f},
      {Binary::pow, -2.0f, 1e10f, kInf},      {Binary::pow, -0.5f, 1e10f, 0.0f},
      {Binary::pow, -0.5f, -3.0f, -8.0f},     {Binary::pow, 3.0f, -3.0f, 0.0370370373f},
      {Binary::pow, 1.00000012f, 1e10f, kInf}, {Binary::pow, 2.0f, 128.0f, kInf},
      {Binary::pow, 2.0f, -149.0f, 1e-45f},   {Binary::pow, 2.0f, -150.0f, 0.0f},
  };
  for (Isa isa : isas()) {
    for (const Case& c : cases) {
      float y = 123.0f;
      detail::kernels(isa).binary_f32(c.fn, &c.a, &c.b, &y, 1);
      if (std::isnan(c.want)) {
        EXPECT_TRUE(std::isnan(y)) << binary_name(c.fn) << "(" << c.a << "," << c.b << ") [" << isa_name(isa) << "] = " << y;
      } else {
        EXPECT_EQ(f_bits(y), f_bits(c.want)) << binary_name(c.fn) << "(" << c.a << "," << c.b << ") ["
                                             << isa_name(isa) << "] = " << y << " want " << c.want;
      }
    }
  }
}

// tensor ** scalar takes torch's fast paths (sqrt/rsqrt/square/cube/reciprocal)
TEST(VecMath, PowScalarFastPaths) {
  const float xs[] = {0.0f, -0.0f, -1.0f, -2.0f, 2.0f, kInf, -kInf, kNaN, -0.5f, 0.5f};
  struct Row {
    float e;
    float want[10];
  };
  const Row rows[] = {
      {0.5f, {0.0f, -0.0f, kNaN, kNaN, 1.41421354f, kInf, kNaN, kNaN, kNaN, 0.707106769f}},
      {2.0f, {0.0f, 0.0f, 1.0f, 4.0f, 4.0f, kInf, kInf, kNaN, 0.25f, 0.25f}},
      {3.0f, {0.0f, -0.0f, -1.0f, -8.0f, 8.0f, kInf, -kInf, kNaN, -0.125f, 0.125f}},
      {-0.5f, {kInf, -kInf, kNaN, kNaN, 0.707106769f, 0.0f, kNaN, kNaN, kNaN, 1.41421354f}},
      {-1.0f, {kInf, -kInf, -1.0f, -0.5f, 0.5f, 0.0f, -0.0f, kNaN, -2.0f, 2.0f}},
      {-2.0f, {kInf, kInf, 1.0f, 0.25f, 0.25f, 0.0f, 0.0f, kNaN, 4.0f, 4.0f}},
      {0.0f, {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}},
      {1.0f, {0.0f, -0.0f, -1.0f, -2.0f, 2.0f, kInf, -kInf, kNaN, -0.5f, 0.5f}},
      {2.5f, {0.0f, 0.0f, kNaN, kNaN, 5.65685415f, kInf, kInf, kNaN, kNaN, 0.176776692f}},
  };
  for (Isa isa : isas()) {
    for (const Row& r : rows) {
      float y[10];
      detail::kernels(isa).binary_scalar_f32(Binary::pow, xs, r.e, y, 10);
      for (int i = 0; i < 10; ++i) {
        if (std::isnan(r.want[i])) EXPECT_TRUE(std::isnan(y[i])) << xs[i] << "^" << r.e;
        else EXPECT_EQ(f_bits(y[i]), f_bits(r.want[i])) << xs[i] << "^" << r.e << " [" << isa_name(isa) << "] = " << y[i];
      }
    }
  }
}

// ---------------------------------------------------------------------------------
// f64: results equal to the std:: based scalar path (and to std:: where direct)
TEST(VecMath, UnaryF64) {
  std::vector<double> xs = {0.0, -0.0, kInfD, -kInfD, kNaND, 1e-310, -1e-310, 0.5, -0.5, 1.5, 2.5, -2.5,
                            1e300, -1e300, 20.0, 21.0, 3.0, -3.0, 4503599627370497.0};
  std::mt19937_64 rng(5);
  std::normal_distribution<double> nd(0.0, 5.0);
  for (int i = 0; i < 20000; ++i) xs.push_back(nd(rng));
  const int64_t n = static_cast<int64_t>(xs.size());
  std::vector<double> want(n), y(n);
  for (int f = 0; f < kNumUnary; ++f) {
    const Unary fn = static_cast<Unary>(f);
    for (int64_t i = 0; i < n; ++i) want[i] = detail::scalar_unary_f64(fn, xs[i]);
    for (Isa isa : isas()) {
      detail::kernels(isa).unary_f64(fn, xs.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const bool same = (std::isnan(want[i]) && std::isnan(y[i])) ||
                          (want[i] == y[i] && std::signbit(want[i]) == std::signbit(y[i]));
        ASSERT_TRUE(same) << unary_name(fn) << " [" << isa_name(isa) << "] x=" << xs[i] << " got " << y[i] << " want " << want[i];
      }
    }
  }
  // the scalar path is std:: for the direct functions
  for (double x : xs) {
    auto same = [](double u, double v) { return (std::isnan(u) && std::isnan(v)) || u == v; };
    EXPECT_TRUE(same(detail::scalar_unary_f64(Unary::exp, x), std::exp(x))) << x;
    EXPECT_TRUE(same(detail::scalar_unary_f64(Unary::tanh, x), std::tanh(x))) << x;
    EXPECT_TRUE(same(detail::scalar_unary_f64(Unary::erf, x), std::erf(x))) << x;
    EXPECT_TRUE(same(detail::scalar_unary_f64(Unary::log1p, x), std::log1p(x))) << x;
  }
}

TEST(VecMath, BinaryF64) {
  std::vector<double> a = {0.0, -0.0, 0.0, kNaND, 1.0, -3.0, 5.0, -5.0, kInfD, 2.0, -2.0, 1e300, -7.5};
  std::vector<double> b = {-0.0, 0.0, 0.0, 1.0, kNaND, 3.0, kInfD, kInfD, 2.0, 0.5, 3.0, 1e-300, 2.0};
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> ud(-10.0, 10.0);
  for (int i = 0; i < 20000; ++i) a.push_back(ud(rng)), b.push_back(ud(rng));
  const int64_t n = static_cast<int64_t>(a.size());
  std::vector<double> y(n), want(n);
  for (int f = 0; f < kNumBinary; ++f) {
    const Binary fn = static_cast<Binary>(f);
    for (int64_t i = 0; i < n; ++i) want[i] = detail::scalar_binary_f64(fn, a[i], b[i]);
    for (Isa isa : isas()) {
      auto check = [&](const char* what) {
        for (int64_t i = 0; i < n; ++i) {
          const bool same = (std::isnan(want[i]) && std::isnan(y[i])) ||
                            (want[i] == y[i] && std::signbit(want[i]) == std::signbit(y[i]));
          ASSERT_TRUE(same) << binary_name(fn) << " " << what << " [" << isa_name(isa) << "] " << a[i] << ", " << b[i];
        }
      };
      detail::kernels(isa).binary_f64(fn, a.data(), b.data(), y.data(), n);
      check("array");
      const double s = 1.75;
      for (int64_t i = 0; i < n; ++i) want[i] = detail::scalar_binary_f64(fn, a[i], s);
      detail::kernels(isa).binary_scalar_f64(fn, a.data(), s, y.data(), n);
      check("binary_scalar");
      for (int64_t i = 0; i < n; ++i) want[i] = detail::scalar_binary_f64(fn, s, a[i]);
      detail::kernels(isa).scalar_binary_f64(fn, s, a.data(), y.data(), n);
      check("scalar_binary");
      for (int64_t i = 0; i < n; ++i) want[i] = detail::scalar_binary_f64(fn, a[i], b[i]);
    }
  }
  EXPECT_EQ(detail::scalar_binary_f64(Binary::pow, -2.0, 3.0), -8.0);
  EXPECT_EQ(detail::scalar_binary_f64(Binary::remainder, -7.5, 2.0), 0.5);
}

// ---------------------------------------------------------------------------------
// Reductions
TEST(VecMath, SumF32) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(1.0f, 100.0f);
  for (int64_t n : {0, 1, 2, 7, 15, 16, 17, 33, 64, 100, 1000, 65537, (1 << 20) + 3}) {
    std::vector<float> x(n);
    for (float& v : x) v = nd(rng);
    long double exact = 0;
    for (float v : x) exact += v;
    for (Isa isa : isas()) {
      const float s = n ? detail::kernels(isa).sum_f32(x.data(), n) : sum_f32(x.data(), n);
      EXPECT_LE(ulp_dist(s, static_cast<double>(exact)), 1) << isa_name(isa) << " n=" << n << " got " << s;
    }
  }
  const float inf_mix[] = {1.0f, kInf, 2.0f, -kInf};
  const float with_nan[] = {1.0f, 2.0f, kNaN, 3.0f};
  const float big[] = {1e38f, 1e38f, -1e38f};
  for (Isa isa : isas()) {
    EXPECT_TRUE(std::isnan(detail::kernels(isa).sum_f32(inf_mix, 4)));
    EXPECT_EQ(detail::kernels(isa).sum_f32(inf_mix, 2), kInf);
    EXPECT_TRUE(std::isnan(detail::kernels(isa).sum_f32(with_nan, 4)));
    EXPECT_EQ(detail::kernels(isa).sum_f32(big, 3), 1e38f);  // no intermediate overflow
  }
}

TEST(VecMath, SumF64Compensated) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> ud(-1.0, 1.0);
  for (int64_t n : {1, 3, 8, 9, 1000, 100003}) {
    std::vector<double> x(n);
    for (double& v : x) v = ud(rng) * std::pow(10.0, static_cast<int>(ud(rng) * 10));
    long double exact = 0;
    for (double v : x) exact += v;
    for (Isa isa : isas()) {
      const double s = detail::kernels(isa).sum_f64(x.data(), n);
      EXPECT_NEAR(s, static_cast<double>(exact), std::fabs(static_cast<double>(exact)) * 4e-16 + 1e-300)
          << isa_name(isa) << " n=" << n;
    }
  }
  const double cancel[] = {1e100, 1.0, -1e100, 1.0};  // naive summation gives 1
  const double infs[] = {1.0, kInfD, 2.0};
  for (Isa isa : isas()) {
    EXPECT_EQ(detail::kernels(isa).sum_f64(cancel, 4), 2.0) << isa_name(isa);
    EXPECT_EQ(detail::kernels(isa).sum_f64(infs, 3), kInfD) << isa_name(isa);
  }
  EXPECT_EQ(sum_f64(cancel, 0), 0.0);
}

TEST(VecMath, MaxMinF32) {
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0.0f, 10.0f);
  for (int64_t n : {1, 2, 15, 16, 17, 63, 64, 65, 1000, 100001}) {
    std::vector<float> x(n);
    for (float& v : x) v = nd(rng);
    const float mx = *std::max_element(x.begin(), x.end());
    const float mn = *std::min_element(x.begin(), x.end());
    for (Isa isa : isas()) {
      const Kernels& k = detail::kernels(isa);
      EXPECT_EQ(k.max_f32(x.data(), n), mx) << isa_name(isa) << " n=" << n;
      EXPECT_EQ(k.min_f32(x.data(), n), mn) << isa_name(isa) << " n=" << n;
      for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {
        std::vector<float> z = x;
        z[pos] = kNaN;  // NaN anywhere propagates
        EXPECT_TRUE(std::isnan(k.max_f32(z.data(), n))) << isa_name(isa) << " n=" << n << " pos=" << pos;
        EXPECT_TRUE(std::isnan(k.min_f32(z.data(), n))) << isa_name(isa) << " n=" << n << " pos=" << pos;
      }
    }
  }
  const float infs[] = {-kInf, -kInf};
  for (Isa isa : isas()) EXPECT_EQ(detail::kernels(isa).max_f32(infs, 2), -kInf);
  EXPECT_EQ(max_f32(infs, 0), -kInf);
  EXPECT_EQ(min_f32(infs, 0), kInf);
}

// ---------------------------------------------------------------------------------
// softmax rows. Like torch, the shifted value x - max is formed in float; the reference
// uses that float difference and is exact from there on.
void softmax_ref(const std::vector<float>& x, std::vector<double>& sm, std::vector<double>& lsm) {
  float m = -kInf;
  for (float v : x) m = std::max(m, v);
  double s = 0;
  for (float v : x) s += std::exp(static_cast<double>(v - m));
  sm.resize(x.size());
  lsm.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    sm[i] = std::exp(static_cast<double>(x[i] - m)) / s;
    lsm[i] = static_cast<double>(x[i] - m) - std::log(s);
  }
}

TEST(VecMath, SoftmaxRows) {
  std::mt19937 rng(6);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  for (int64_t n : {1, 2, 3, 15, 16, 17, 100, 1000, 4096, 4099}) {
    std::vector<float> x(n);
    for (float& v : x) v = nd(rng);
    std::vector<double> sm, lsm;
    softmax_ref(x, sm, lsm);
    for (Isa isa : isas()) {
      const Kernels& k = detail::kernels(isa);
      std::vector<float> y(n), z = x;
      k.softmax_row_f32(x.data(), y.data(), n);
      k.softmax_row_f32(z.data(), z.data(), n);  // in place
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_LE(ulp_dist(y[i], sm[i]), 3) << isa_name(isa) << " n=" << n << " i=" << i << " " << y[i] << " vs " << sm[i];
        ASSERT_EQ(y[i], z[i]);
      }
      k.log_softmax_row_f32(x.data(), y.data(), n);
      z = x;
      k.log_softmax_row_f32(z.data(), z.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(y[i], lsm[i], 4e-7 * (1.0 + std::fabs(lsm[i]))) << isa_name(isa) << " n=" << n;
        ASSERT_EQ(y[i], z[i]);
      }
    }
  }
  // torch: a +inf or NaN element, or an all -inf row, gives NaN everywhere
  for (Isa isa : isas()) {
    const Kernels& k = detail::kernels(isa);
    float a[3] = {1.0f, kInf, 2.0f}, b[2] = {-kInf, -kInf}, c[2] = {1.0f, kNaN}, y[3];
    k.softmax_row_f32(a, y, 3);
    for (float v : {y[0], y[1], y[2]}) EXPECT_TRUE(std::isnan(v));
    k.softmax_row_f32(b, y, 2);
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
    k.softmax_row_f32(c, y, 2);
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
    float d[2] = {-kInf, 0.0f};
    k.log_softmax_row_f32(d, y, 2);
    EXPECT_EQ(y[0], -kInf);
    EXPECT_EQ(y[1], 0.0f);
    k.softmax_row_f32(d, y, 2);
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_EQ(y[1], 1.0f);
    float big[2] = {-1000.0f, -1001.0f};  // needs the max shift
    k.softmax_row_f32(big, y, 2);
    EXPECT_NEAR(y[0], 0.7310586f, 1e-7f);
  }
}

TEST(VecMath, SoftmaxStrided) {
  const int64_t n = 1500, stride = 7;
  std::vector<float> x(n * stride), y(n * stride, -1.0f), row(n), want(n);
  std::mt19937 rng(8);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  for (float& v : x) v = nd(rng);
  for (int64_t i = 0; i < n; ++i) row[i] = x[i * stride + 3];
  softmax_row_f32(row.data(), want.data(), n);
  softmax_strided_f32(x.data() + 3, y.data() + 3, n, stride);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[i * stride + 3], want[i]);
    ASSERT_EQ(y[i * stride + 2], -1.0f);
  }
}

// ---------------------------------------------------------------------------------
// Conversions: exhaustive over 16-bit values, midpoints for round-to-nearest-even.
double half_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0x1f) return m ? kNaND : s * kInfD;
  if (e == 0) return s * std::ldexp(m, -24);
  return s * std::ldexp(1024 + m, e - 25);
}

TEST(VecMath, HalfConversions) {
  std::vector<uint16_t> all(65536);
  for (int i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> f(65536);
  std::vector<uint16_t> back(65536);
  // candidate floats: every half value, midpoints between neighbours, and +-1 float ulp
  std::vector<float> xs;
  for (int i = 0; i < 0x7c00; ++i) {
    const double lo = half_value(static_cast<uint16_t>(i));
    const double hi = i + 1 < 0x7c00 ? half_value(static_cast<uint16_t>(i + 1)) : 65536.0;
    const float mid = static_cast<float>((lo + hi) / 2);  // exact in float
    for (float v : {static_cast<float>(lo), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, kInf)}) {
      xs.push_back(v);
      xs.push_back(-v);
    }
  }
  for (float v : {kInf, -kInf, kNaN, -kNaN, 65519.996f, 65520.0f, 1e6f, -1e30f, 1e-8f, 2.98023224e-8f})
    xs.push_back(v);
  // nearest half by search over the finite magnitudes, ties to even
  auto to_half_ref = [](float x) -> uint16_t {
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    if (std::isnan(x)) return 0;  // checked separately
    const double a = std::fabs(static_cast<double>(x));
    if (a >= 65520.0) return sign | 0x7c00;
    int lo = 0, hi = 0x7bff;
    while (lo < hi) {  // largest h with value <= a
      const int mid = (lo + hi + 1) / 2;
      if (half_value(static_cast<uint16_t>(mid)) <= a) lo = mid;
      else hi = mid - 1;
    }
    const double vlo = half_value(static_cast<uint16_t>(lo));
    const double vhi = lo < 0x7bff ? half_value(static_cast<uint16_t>(lo + 1)) : 65536.0;
    int pick = lo;
    if (a - vlo > vhi - a || (a - vlo == vhi - a && (lo & 1))) pick = lo + 1;
    return static_cast<uint16_t>(sign | pick);
  };
  std::vector<uint16_t> h(xs.size());
  for (Isa isa : isas()) {
    const Kernels& k = detail::kernels(isa);
    k.f16_to_f32(all.data(), f.data(), 65536);
    for (int i = 0; i < 65536; ++i) {
      const double v = half_value(static_cast<uint16_t>(i));
      if (std::isnan(v)) ASSERT_TRUE(std::isnan(f[i])) << i;
      else ASSERT_EQ(f_bits(f[i]), f_bits(static_cast<float>(v))) << isa_name(isa) << " h=" << i;
    }
    k.f32_to_f16(f.data(), back.data(), 65536);
    for (int i = 0; i < 65536; ++i) {
      if (std::isnan(f[i])) ASSERT_TRUE((back[i] & 0x7c00) == 0x7c00 && (back[i] & 0x3ff) && ((back[i] ^ i) & 0x8000) == 0);
      else ASSERT_EQ(back[i], i) << isa_name(isa);
    }
    k.f32_to_f16(xs.data(), h.data(), static_cast<int64_t>(xs.size()));
    for (size_t i = 0; i < xs.size(); ++i) {
      if (std::isnan(xs[i])) ASSERT_TRUE((h[i] & 0x7c00) == 0x7c00 && (h[i] & 0x3ff)) << isa_name(isa);
      else ASSERT_EQ(h[i], to_half_ref(xs[i])) << isa_name(isa) << " x=" << xs[i];
    }
  }
}

TEST(VecMath, BFloat16Conversions) {
  std::vector<uint16_t> all(65536), back(65536);
  for (int i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> f(65536);
  std::vector<float> xs;
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint32_t b = i << 16;
    for (uint32_t low : {0u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) xs.push_back(bits_f(b | low));
  }
  for (Isa isa : isas()) {
    const Kernels& k = detail::kernels(isa);
    k.bf16_to_f32(all.data(), f.data(), 65536);
    for (uint32_t i = 0; i < 65536; ++i) ASSERT_EQ(f_bits(f[i]), i << 16);
    k.f32_to_bf16(f.data(), back.data(), 65536);
    for (int i = 0; i < 65536; ++i) {
      if (std::isnan(f[i])) ASSERT_TRUE((back[i] & 0x7f80) == 0x7f80 && (back[i] & 0x7f) && ((back[i] ^ i) & 0x8000) == 0);
      else ASSERT_EQ(back[i], i);
    }
    std::vector<uint16_t> h(xs.size());
    k.f32_to_bf16(xs.data(), h.data(), static_cast<int64_t>(xs.size()));
    for (size_t i = 0; i < xs.size(); ++i) {
      const uint32_t u = f_bits(xs[i]);
      if (std::isnan(xs[i])) {
        ASSERT_TRUE((h[i] & 0x7f80) == 0x7f80 && (h[i] & 0x7f)) << isa_name(isa);
        continue;
      }
      const uint32_t lo = u & 0xffff, up = u >> 16;
      const uint32_t want = lo > 0x8000 || (lo == 0x8000 && (up & 1)) ? up + 1 : up;  // RNE
      ASSERT_EQ(h[i], want) << isa_name(isa) << " x=" << xs[i];
    }
  }
  // odd lengths exercise the tails
  for (Isa isa : isas()) {
    for (int n = 0; n < 40; ++n) {
      std::vector<uint16_t> out(n + 1, 0xabcd);
      detail::kernels(isa).f32_to_f16(f.data() + 0x3c00, out.data(), n);
      EXPECT_EQ(out[n], 0xabcd);
      std::vector<float> fo(n + 1, -3.0f);
      detail::kernels(isa).bf16_to_f32(all.data() + 5, fo.data(), n);
      EXPECT_EQ(fo[n], -3.0f);
    }
  }
}

// ---------------------------------------------------------------------------------
TEST(VecMath, DispatchAndForcedIsa) {
  const Isa saved = detail::active_isa();
  EXPECT_EQ(saved, detail::best_isa());
  const float x[3] = {0.0f, 1.0f, -2.0f};
  for (Isa isa : isas()) {
    detail::set_isa(isa);
    EXPECT_EQ(detail::active_isa(), isa);
    float y[3];
    unary_f32(Unary::exp, x, y, 3);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_NEAR(y[1], 2.7182817f, 3e-7f);
    binary_scalar_f32(Binary::mul, x, 2.0f, y, 3);
    EXPECT_EQ(y[2], -4.0f);
    EXPECT_EQ(sum_f32(x, 3), -1.0f);
  }
  detail::set_isa(Isa::avx512);  // clamps to what the machine has
  EXPECT_EQ(detail::active_isa(), detail::best_isa());
  detail::set_isa(saved);
}

}  // namespace
}  // namespace ember::cpu::vec
