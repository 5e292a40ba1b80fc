// The random creation ops (random_uniform, random_normal, random_bernoulli, random_randint) on
// every backend stack: samples of n = 100,000 values follow the distribution's formulas (mean
// and variance within 6 standard errors, a Kolmogorov-Smirnov bound at alpha = 0.001, per-value
// frequencies of the discrete ones within 6 standard errors), respect their bounds, have the
// requested shape (empty and 0-d included), and are reproducible per seed. Every sample comes
// from a fixed seed, so the statistical checks are deterministic: they cannot flake, and a
// generator off by a few percent fails them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ember/backends/cuda.hpp>
#include <ember/ember.hpp>
#include <functional>
#include <limits>
#include <map>
#include <numbers>

using namespace ember;

namespace {

constexpr int64_t kN = 100000;
const double kSqrtN = std::sqrt(double(kN));

// The stacks of the conformance suite: the CPU ones always, the CUDA ones where a GPU is present.
std::vector<std::string> stack_names() {
  std::vector<std::string> names = {"cpu", "autodiff_cpu"};
  if (cuda::available()) {
    names.push_back("cuda");
    names.push_back("autodiff_cuda");
  }
  return names;
}
Device stack_device(const std::string& name) {
  if (name == "cpu") return Device::cpu();
  if (name == "autodiff_cpu") return Device::cpu().autodiff();
  if (name == "cuda") return Device::cuda(0);
  return Device::cuda(0).autodiff();
}

const DType kFloatTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16};

struct Moments {
  double mean, var;
};
Moments moments(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x;
  m /= double(v.size());
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return {m, s / double(v.size() - 1)};
}

// Sample mean and variance against a distribution with mean mu, variance sigma2 and fourth
// central moment mu4: within 6 standard errors (sqrt(sigma2 / n) and sqrt((mu4 - sigma2^2) / n)).
void expect_moments(const std::vector<double>& v, double mu, double sigma2, double mu4, const std::string& what) {
  Moments m = moments(v);
  double n = double(v.size());
  EXPECT_LE(std::abs(m.mean - mu), 6 * std::sqrt(sigma2 / n)) << what << ": mean " << m.mean << ", expected " << mu;
  EXPECT_LE(std::abs(m.var - sigma2), 6 * std::sqrt((mu4 - sigma2 * sigma2) / n))
      << what << ": variance " << m.var << ", expected " << sigma2;
}

// The neighbours of v in dtype dt (v is a value of dt): where rounding to dt maps an interval.
double next_toward(double v, DType dt, double dir) {
  switch (dt) {
    case DType::f64:
      return std::nextafter(v, dir);
    case DType::f32:
      return std::nextafter(float(v), float(dir));
    case DType::f16:
    case DType::bf16: {
      // the 16-bit formats keep a float's sign, exponent and leading mantissa bits: step the
      // bit pattern (sign-magnitude) by one unit
      uint16_t bits = dt == DType::f16 ? f16(v).bits : bf16(v).bits;
      bool neg = bits & 0x8000u;
      bool away = (dir > v) != neg;  // magnitude grows
      if ((bits & 0x7fffu) == 0 && !away)
        bits = uint16_t(0x8001u ^ (neg ? 0x8000u : 0));
      else
        bits = uint16_t(away ? bits + 1 : bits - 1);
      return dt == DType::f16 ? double(float(f16::from_bits(bits))) : double(float(bf16::from_bits(bits)));
    }
    default:
      return v;
  }
}

// The Kolmogorov-Smirnov distance between the sample and the continuous CDF, where each sample
// value stands for the interval of reals that round to it (half-way to its neighbours in dt),
// so that the coarse grids of f16 and bf16 are not mistaken for a wrong distribution.
double ks_distance(std::vector<double> v, DType dt, const std::function<double(double)>& cdf) {
  std::sort(v.begin(), v.end());
  const double n = double(v.size()), inf = std::numeric_limits<double>::infinity();
  double d = 0;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j < v.size() && v[j] == v[i]) ++j;
    double lo = 0.5 * (v[i] + next_toward(v[i], dt, -inf)), hi = 0.5 * (v[i] + next_toward(v[i], dt, inf));
    d = std::max({d, std::abs(double(i) / n - cdf(lo)), std::abs(double(j) / n - cdf(hi))});
    i = j;
  }
  return d;
}
// Critical value of the KS distance at alpha = 0.001 (asymptotic: 1.95 / sqrt(n)).
const double kKsBound = 1.95 / kSqrtN;

std::vector<double> sample(const DynTensor& t) { return t.into_data().to_doubles(); }

class Random : public testing::TestWithParam<std::string> {
 protected:
  Device dev = stack_device(GetParam());
};

TEST_P(Random, UniformDistribution) {
  const double low = -1.5, high = 2.5, w = high - low;
  for (DType dt : kFloatTypes) {
    dev.seed(11);
    auto t = DynTensor::uniform({kN}, low, high, dt, dev);
    ASSERT_EQ(t.dtype(), dt);
    auto v = sample(t);
    std::string what = "uniform " + std::string(dtype_name(dt));
    // variance (b-a)^2/12, fourth central moment (b-a)^4/80
    expect_moments(v, (low + high) / 2, w * w / 12, w * w * w * w / 80, what);
    double d = ks_distance(v, dt, [&](double x) { return std::clamp((x - low) / w, 0.0, 1.0); });
    EXPECT_LE(d, kKsBound) << what << ": KS distance";
    EXPECT_GE(*std::min_element(v.begin(), v.end()), low) << what;
    EXPECT_LT(*std::max_element(v.begin(), v.end()), high) << what;
  }
}

// [0, 1): in f16 and bf16 many values round up to 1, which the generator must keep below it.
TEST_P(Random, UniformStaysBelowHigh) {
  for (DType dt : kFloatTypes) {
    for (auto [low, high] : {std::pair{0.0, 1.0}, std::pair{-3.0, -2.0}, std::pair{1000.0, 1001.0}}) {
      dev.seed(12);
      auto v = sample(DynTensor::uniform({kN}, low, high, dt, dev));
      EXPECT_GE(*std::min_element(v.begin(), v.end()), low) << dtype_name(dt) << " [" << low << ", " << high << ")";
      EXPECT_LT(*std::max_element(v.begin(), v.end()), high) << dtype_name(dt) << " [" << low << ", " << high << ")";
    }
  }
}

TEST_P(Random, NormalDistribution) {
  const double mu = 0.5, sd = 2.0;
  for (DType dt : kFloatTypes) {
    dev.seed(13);
    auto t = DynTensor::normal({kN}, mu, sd, dt, dev);
    ASSERT_EQ(t.dtype(), dt);
    auto v = sample(t);
    std::string what = "normal " + std::string(dtype_name(dt));
    double s2 = sd * sd;
    expect_moments(v, mu, s2, 3 * s2 * s2, what);
    double d = ks_distance(v, dt, [&](double x) { return 0.5 * std::erfc(-(x - mu) / (sd * std::numbers::sqrt2)); });
    EXPECT_LE(d, kKsBound) << what << ": KS distance";
    for (double x : v) ASSERT_TRUE(std::isfinite(x)) << what;
  }
}

// Counts of each value: all in [low, high), each frequency within 6 standard errors of p.
void expect_discrete(const std::vector<double>& v, const std::map<double, double>& p, const std::string& what) {
  std::map<double, int64_t> counts;
  for (double x : v) {
    ASSERT_TRUE(p.count(x)) << what << ": value " << x << " outside the support";
    ++counts[x];
  }
  const double n = double(v.size());
  for (auto [x, px] : p) {
    double f = double(counts[x]) / n;
    EXPECT_LE(std::abs(f - px), 6 * std::sqrt(px * (1 - px) / n) + 1e-12)
        << what << ": frequency of " << x << " is " << f << ", expected " << px;
  }
}

TEST_P(Random, BernoulliDistribution) {
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::boolean}) {
    for (double p : {0.3, 0.0, 1.0, 0.999}) {
      dev.seed(14);
      auto t = DynTensor::bernoulli({kN}, p, dt, dev);
      ASSERT_EQ(t.dtype(), dt);
      auto v = sample(t);
      std::string what = "bernoulli(" + std::to_string(p) + ") " + std::string(dtype_name(dt));
      expect_discrete(v, {{0.0, 1 - p}, {1.0, p}}, what);
      if (p > 0 && p < 1) expect_moments(v, p, p * (1 - p), p * (1 - p) * (1 - 3 * p * (1 - p)), what);
    }
  }
}

TEST_P(Random, RandintDistribution) {
  const int64_t low = -3, high = 5;
  const double m = double(high - low);
  std::map<double, double> p;
  for (int64_t k = low; k < high; ++k) p[double(k)] = 1 / m;
  for (DType dt : {DType::i64, DType::i32, DType::i16, DType::i8, DType::f32, DType::f64}) {
    dev.seed(15);
    auto t = DynTensor::randint({kN}, low, high, dt, dev);
    ASSERT_EQ(t.dtype(), dt);
    auto v = sample(t);
    std::string what = "randint " + std::string(dtype_name(dt));
    expect_discrete(v, p, what);
    // discrete uniform on m values: variance (m^2-1)/12, fourth central moment (m^2-1)(3m^2-7)/240
    expect_moments(v, (low + high - 1) / 2.0, (m * m - 1) / 12, (m * m - 1) * (3 * m * m - 7) / 240, what);
  }
  dev.seed(15);
  auto one = sample(DynTensor::randint({1000}, 7, 8, DType::i64, dev));
  EXPECT_TRUE(std::all_of(one.begin(), one.end(), [](double x) { return x == 7; })) << "randint [7, 8)";
}

// A range wider than 2^32 takes the generator's two-word path.
TEST_P(Random, RandintWideRange) {
  const double low = -(double(int64_t(1) << 40)), high = double(int64_t(1) << 41), w = high - low;
  dev.seed(16);
  auto v = sample(DynTensor::randint({kN}, int64_t(low), int64_t(high), DType::i64, dev));
  EXPECT_GE(*std::min_element(v.begin(), v.end()), low);
  EXPECT_LT(*std::max_element(v.begin(), v.end()), high);
  expect_moments(v, (low + high - 1) / 2, w * w / 12, w * w * w * w / 80, "randint wide");
  double d = ks_distance(v, DType::f64, [&](double x) { return std::clamp((x - low) / w, 0.0, 1.0); });
  EXPECT_LE(d, kKsBound) << "randint wide: KS distance";
}

std::vector<std::byte> bytes_of(const DynTensor& t) {
  auto d = t.into_data();
  return {d.bytes().begin(), d.bytes().end()};
}

// Each op and dtype: the same seed gives bitwise identical tensors, another seed (or the next
// draw without reseeding) a different one.
TEST_P(Random, SeedReproducible) {
  struct Draw {
    std::string name;
    std::function<DynTensor(DType)> make;
    std::vector<DType> dtypes;
  };
  const Shape s{37, 29};
  std::vector<Draw> draws = {
      {"uniform",
       [&](DType dt) { return DynTensor::uniform(s, -1, 2, dt, dev); },
       {kFloatTypes, std::end(kFloatTypes)}},
      {"normal", [&](DType dt) { return DynTensor::normal(s, 1, 3, dt, dev); }, {kFloatTypes, std::end(kFloatTypes)}},
      {"bernoulli", [&](DType dt) { return DynTensor::bernoulli(s, 0.5, dt, dev); }, {DType::f32, DType::boolean}},
      {"randint", [&](DType dt) { return DynTensor::randint(s, 0, 1000, dt, dev); }, {DType::i64, DType::i32}},
  };
  for (const auto& draw : draws) {
    for (DType dt : draw.dtypes) {
      std::string what = draw.name + " " + std::string(dtype_name(dt));
      dev.seed(21);
      auto a = bytes_of(draw.make(dt));
      auto next = bytes_of(draw.make(dt));
      dev.seed(21);
      auto b = bytes_of(draw.make(dt));
      dev.seed(22);
      auto c = bytes_of(draw.make(dt));
      EXPECT_EQ(a, b) << what << ": same seed, different values";
      EXPECT_NE(a, c) << what << ": seeds 21 and 22 give the same values";
      EXPECT_NE(a, next) << what << ": two draws after one seed give the same values";
    }
  }
}

TEST_P(Random, Shapes) {
  for (Shape s : {Shape{0}, Shape{3, 0, 2}, Shape{}, Shape{1}, Shape{2, 3, 4}, Shape{1000, 3}}) {
    std::vector<DynTensor> ts = {
        DynTensor::uniform(s, 2, 3, DType::f32, dev), DynTensor::normal(s, 0, 1, DType::f64, dev),
        DynTensor::bernoulli(s, 0.5, DType::f16, dev), DynTensor::randint(s, 2, 3, DType::i32, dev)};
    for (const auto& t : ts) {
      EXPECT_EQ(t.shape(), s);
      auto v = sample(t);
      ASSERT_EQ(int64_t(v.size()), s.numel()) << s;
      for (double x : v) EXPECT_TRUE(std::isfinite(x)) << s;
    }
    for (double x : sample(ts[0])) EXPECT_TRUE(x >= 2 && x < 3) << s;
    for (double x : sample(ts[2])) EXPECT_TRUE(x == 0 || x == 1) << s;
    for (double x : sample(ts[3])) EXPECT_EQ(x, 2) << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Stacks, Random, testing::ValuesIn(stack_names()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
