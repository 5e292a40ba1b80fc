// Observers against PyTorch's documented formulas (MinMaxObserver, MovingAverageMinMaxObserver),
// exact quantiles of sorted data (percentile), and TensorRT's entropy calibration written out
// here the way its description reads (NVIDIA's "8-bit Inference with TensorRT": P from the first
// i bins with the outliers added to the last, Q from those bins merged into 128 levels).
#include <algorithm>
#include <cmath>
#include <limits>

#include "quant_test_util.hpp"

using namespace ember;
using namespace ember::quant;
using quant_test::expect_error;
using quant_test::normal_values;
using quant_test::round_even;
using quant_test::tensor;

namespace {

// PyTorch MinMaxObserver's affine parameters, in double.
std::pair<double, int64_t> affine_params(double lo, double hi, int64_t qn, int64_t qx) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  const double scale = std::max((hi - lo) / double(qx - qn), double(std::numeric_limits<float>::epsilon()));
  return {scale, int64_t(std::clamp(double(qn) - round_even(lo / scale), double(qn), double(qx)))};
}

double exact_quantile(std::vector<double> v, double q) {  // linear interpolation between order statistics
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const size_t i = size_t(pos);
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (pos - double(i)) * (v[i + 1] - v[i]);
}

// TensorRT's entropy calibration over a histogram of |x| (bins over [0, amax]): the bin count i
// whose clipped distribution P is closest, in KL divergence, to its `levels`-level quantized Q.
double reference_kl_threshold(const std::vector<double>& bins, double width, int levels) {
  const size_t nbins = bins.size();
  double best_kl = std::numeric_limits<double>::infinity();
  size_t best = nbins;
  for (size_t i = size_t(levels); i <= nbins; ++i) {
    std::vector<double> p(bins.begin(), bins.begin() + long(i));
    for (size_t j = i; j < nbins; ++j) p[i - 1] += bins[j];
    // Q: each of `levels` groups of consecutive bins (bin j in group floor(j * levels / i)) gets
    // its total spread evenly over its non-empty bins.
    std::vector<double> q(i, 0.0);
    for (int g = 0; g < levels; ++g) {
      double total = 0, nonzero = 0;
      for (size_t j = 0; j < i; ++j)
        if (size_t(j * size_t(levels) / i) == size_t(g)) {
          total += bins[j];
          nonzero += bins[j] > 0 ? 1 : 0;
        }
      for (size_t j = 0; j < i; ++j)
        if (size_t(j * size_t(levels) / i) == size_t(g) && bins[j] > 0) q[j] = total / nonzero;
    }
    double sp = 0, sq = 0;
    for (size_t j = 0; j < i; ++j) sp += p[j], sq += q[j];
    double kl = 0;
    for (size_t j = 0; j < i && std::isfinite(kl); ++j) {
      if (p[j] == 0) continue;
      kl = q[j] == 0 ? std::numeric_limits<double>::infinity() : kl + p[j] / sp * std::log((p[j] / sp) / (q[j] / sq));
    }
    if (kl < best_kl) best_kl = kl, best = i;
  }
  return double(best) * width;
}

}  // namespace

TEST(MinMaxObserver, RangeOverBatchesAndPyTorchParams) {
  MinMaxObserver obs;
  obs.observe(tensor({-0.5f, 1.5f, 0.25f}, {3}));
  obs.observe(tensor({-1.25f, 0.75f, NAN}, {3}));  // NaN skipped
  EXPECT_EQ(obs.batches(), 2);
  ASSERT_EQ(obs.min().size(), 1u);
  EXPECT_EQ(obs.min()[0], -1.25f);
  EXPECT_EQ(obs.max()[0], 1.5f);
  QParams p = obs.params(QScheme::per_tensor(QType::uint8, false));
  auto [scale, zp] = affine_params(-1.25, 1.5, 0, 255);
  EXPECT_NEAR(p.scale.item<double>(), scale, 1e-6 * scale);
  EXPECT_EQ(p.zero_point.item<int64_t>(), zp);
  QParams s = obs.params(QScheme::per_tensor(QType::int8));
  EXPECT_NEAR(s.scale.item<double>(), 1.5 / 127, 1e-8);
  EXPECT_EQ(s.zero_point.item<int64_t>(), 0);
  obs.reset();
  expect_error([&] { obs.params(QScheme::per_tensor()); }, {"MinMaxObserver::params", "no batch observed"});
}

TEST(MinMaxObserver, PerChannel) {
  std::vector<float> a = normal_values(4 * 3 * 5, 20), b = normal_values(4 * 3 * 5, 21);
  MinMaxObserver obs(1);
  obs.observe(tensor(a, {4, 3, 5}));
  obs.observe(tensor(b, {4, 3, 5}));
  QParams p = obs.params(QScheme::per_channel(1, QType::int8, false));
  QParams p_neg = obs.params(QScheme::per_channel(-2, QType::int8, false));
  ASSERT_EQ(p.scale.shape(), (Shape{3}));
  std::vector<float> s = p.scale.to_vector<float>();
  std::vector<int64_t> z = p.zero_point.to_vector<int64_t>();
  EXPECT_EQ(p_neg.scale.to_vector<float>(), s);
  for (size_t c = 0; c < 3; ++c) {
    double lo = 1e30, hi = -1e30;
    for (const auto* v : {&a, &b})
      for (size_t i = 0; i < v->size(); ++i)
        if ((i / 5) % 3 == c) lo = std::min(lo, double((*v)[i])), hi = std::max(hi, double((*v)[i]));
    auto [scale, zp] = affine_params(lo, hi, -128, 127);
    EXPECT_NEAR(s[c], scale, 1e-6 * scale) << c;
    EXPECT_EQ(z[c], zp) << c;
  }
  // the overall range answers a per-tensor scheme
  QParams t = obs.params(QScheme::per_tensor());
  double amax = 0;
  for (const auto* v : {&a, &b})
    for (float f : *v) amax = std::max(amax, std::fabs(double(f)));
  EXPECT_NEAR(t.scale.item<double>(), amax / 127, 1e-7);
  expect_error([&] { obs.params(QScheme::per_channel(0)); }, {"axis 0", "tracks axis 1"});
  expect_error([&] { obs.params(QScheme::per_block(1, 3)); }, {"per_block", "quantize(w, scheme)"});
  expect_error([&] { obs.observe(tensor(a, {4, 5, 3})); }, {"5 channels after batches of 3"});
  expect_error([&] { obs.observe(tensor(a, {4, 15})); }, {"a batch of rank 2 after batches of rank 3"});
  MinMaxObserver plain;
  plain.observe(tensor(a, {4, 15}));
  expect_error([&] { plain.params(QScheme::per_channel(1)); }, {"MinMaxObserver(axis)"});
  expect_error([&] { plain.observe(DynTensor::arange(0, 4)); }, {"MinMaxObserver::observe", "i64"});
}

TEST(MovingAverageMinMaxObserver, PyTorchsAverage) {
  // PyTorch: the first batch sets the range; then min += c * (batch_min - min), likewise max.
  MovingAverageMinMaxObserver obs(0.1);
  obs.observe(tensor({-1.0f, 2.0f}, {2}));
  obs.observe(tensor({-3.0f, 4.0f}, {2}));
  obs.observe(tensor({0.5f, 1.0f}, {2}));
  double lo = -1, hi = 2;
  lo += 0.1 * (-3 - lo), hi += 0.1 * (4 - hi);
  lo += 0.1 * (0.5 - lo), hi += 0.1 * (1 - hi);
  EXPECT_NEAR(obs.min()[0], lo, 1e-6);
  EXPECT_NEAR(obs.max()[0], hi, 1e-6);
  QParams p = obs.params(QScheme::per_tensor(QType::uint8, false));
  auto [scale, zp] = affine_params(lo, hi, 0, 255);
  EXPECT_NEAR(p.scale.item<double>(), scale, 1e-6 * scale);
  EXPECT_EQ(p.zero_point.item<int64_t>(), zp);
  expect_error([] { MovingAverageMinMaxObserver bad(0.0); }, {"averaging_constant 0"});
  expect_error([] { MovingAverageMinMaxObserver bad(1.5); }, {"(0, 1]"});
}

TEST(HistogramObserver, QuantilesMatchSortedDataAcrossGrowingBatches) {
  // Batches whose range grows force a re-binning; quantiles stay within a bin width or two.
  std::vector<double> all;
  HistogramObserver obs(4096);
  for (uint32_t k = 0; k < 4; ++k) {
    std::vector<float> v = normal_values(20000, 30 + k, 0.5f + 0.5f * float(k));
    obs.observe(tensor(v, {int64_t(v.size())}));
    all.insert(all.end(), v.begin(), v.end());
  }
  double total = 0;
  for (double c : obs.counts()) total += c;
  EXPECT_NEAR(total, double(all.size()), 1e-6 * double(all.size()));
  const double width = 2 * obs.range() / 4096;
  EXPECT_EQ(obs.min(), *std::min_element(all.begin(), all.end()));
  EXPECT_EQ(obs.max(), *std::max_element(all.begin(), all.end()));
  for (double q : {0.001, 0.01, 0.25, 0.5, 0.75, 0.99, 0.999})
    EXPECT_NEAR(obs.quantile(q), exact_quantile(all, q), 3 * width) << q;
  EXPECT_EQ(obs.quantile(0), obs.min());
  EXPECT_EQ(obs.quantile(1), obs.max());
  expect_error([] { HistogramObserver bad(15); }, {"bins 15"});
}

TEST(PercentileObserver, ClipsTheTails) {
  std::vector<float> v = normal_values(100000, 40);
  v[17] = 50.0f;  // outliers that min/max calibration would take
  v[99] = -40.0f;
  std::vector<double> d(v.begin(), v.end()), a;
  for (double x : d) a.push_back(std::fabs(x));
  PercentileObserver obs(99.9);
  obs.observe(tensor(std::vector<float>(v.begin(), v.begin() + 50000), {50000}));
  obs.observe(tensor(std::vector<float>(v.begin() + 50000, v.end()), {50000}));
  const double width = 2 * obs.range() / 4096;
  // symmetric: amax = the 99.9th percentile of |x|
  QParams s = obs.params(QScheme::per_tensor(QType::int8));
  EXPECT_NEAR(s.scale.item<double>() * 127, exact_quantile(a, 0.999), 2 * width);
  // affine: [quantile(0.001), quantile(0.999)]
  QParams p = obs.params(QScheme::per_tensor(QType::uint8, false));
  const double lo = exact_quantile(d, 0.001), hi = exact_quantile(d, 0.999);
  EXPECT_NEAR(p.scale.item<double>() * 255, hi - lo, 4 * width);
  EXPECT_NEAR(double(p.zero_point.item<int64_t>()), -lo / ((hi - lo) / 255), 1.0);
  expect_error([] { PercentileObserver bad(0.0); }, {"percentile 0"});
  expect_error([&] { obs.params(QScheme::per_channel(0)); }, {"per-tensor", "MinMaxObserver(axis)"});
  PercentileObserver empty;
  expect_error([&] { empty.params(QScheme::per_tensor()); }, {"no batch observed"});
}

TEST(EntropyObserver, ThresholdIsTensorRTsKLMinimum) {
  std::vector<float> v = normal_values(60000, 50);
  v[5] = 30.0f;  // an outlier far out
  EntropyObserver obs(2048);
  obs.observe(tensor(v, {int64_t(v.size())}));
  const std::vector<double> h = obs.abs_counts();
  const double want = reference_kl_threshold(h, obs.range() / double(h.size()), 128);
  EXPECT_DOUBLE_EQ(obs.threshold(128), want);
  EXPECT_LT(want, 10.0);  // the outlier is clipped...
  EXPECT_GT(want, 2.5);   // ...the bulk of a unit normal is not
  QParams p = obs.params(QScheme::per_tensor(QType::int8));
  EXPECT_NEAR(p.scale.item<double>(), want / 127, 1e-6 * want);
  // 4-bit: 8 levels
  EXPECT_DOUBLE_EQ(obs.threshold(8), reference_kl_threshold(h, obs.range() / double(h.size()), 8));
  QParams a = obs.params(QScheme::per_tensor(QType::uint8, false));
  const double lo = std::max(double(obs.min()), -want), hi = std::min(double(obs.max()), want);
  auto [scale, zp] = affine_params(lo, hi, 0, 255);
  EXPECT_NEAR(a.scale.item<double>(), scale, 1e-6 * scale);
  EXPECT_EQ(a.zero_point.item<int64_t>(), zp);
}

TEST(EntropyObserver, UniformDataKeepsItsRange) {
  std::vector<float> v(40000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = -1.0f + 2.0f * float(i) / float(v.size() - 1);
  EntropyObserver obs;
  obs.observe(tensor(v, {int64_t(v.size())}));
  EXPECT_GT(obs.threshold(128), 0.95);  // nothing to clip
  EXPECT_LE(obs.threshold(128), 1.0);
}
