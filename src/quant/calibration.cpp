// Calibration observers: exact ranges (min/max, moving average) and a symmetric histogram with
// percentile and KL-divergence (entropy) thresholds. Batches are read to the host once each.
#include "ember/quant/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/core/error.hpp"

namespace ember::quant {
namespace {

// x's values as f32 on the host; an Error for tensors that are not floating.
std::vector<float> host_values(const DynTensor& x, const char* who) {
  EMBER_CHECK(x.defined(), who, "::observe: x is undefined");
  EMBER_CHECK(is_float(x.dtype()), who, "::observe: x has dtype ", x.dtype(), " (shape ", x.shape(),
              "); observers take floating tensors");
  return x.to_vector<float>();
}

QParams params_of(const std::vector<float>& lo, const std::vector<float>& hi, const Shape& shape,
                  const QScheme& scheme, const Device& device) {
  return choose_params(DynTensor::from_vector<float>(lo, shape, device),
                       DynTensor::from_vector<float>(hi, shape, device), scheme);
}

constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

// ---- MinMaxObserver -------------------------------------------------------------------------

void MinMaxObserver::observe(const DynTensor& x) {
  const char* who = "quant::MinMaxObserver";
  std::vector<float> v = host_values(x, who);
  int64_t channels = 1, inner = 1;
  if (axis_) {
    const int rank = x.rank();
    EMBER_CHECK(*axis_ >= -rank && *axis_ < rank, who, "::observe: axis ", *axis_,
                " is out of range for a tensor of rank ", rank, " (shape ", x.shape(), ")");
    const int a = *axis_ < 0 ? *axis_ + rank : *axis_;
    channels = x.shape()[a];
    for (int k = a + 1; k < rank; ++k) inner *= x.shape()[k];
    EMBER_CHECK(rank_ < 0 || rank_ == rank, who, "::observe: a batch of rank ", rank, " after batches of rank ", rank_);
    rank_ = rank;
  }
  EMBER_CHECK(min_.empty() || int64_t(min_.size()) == channels, who, "::observe: a batch of ", channels,
              " channels after batches of ", min_.size(), " (shape ", x.shape(), ")");
  std::vector<float> lo(size_t(channels), kInf), hi(size_t(channels), -kInf);
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) continue;
    const size_t c = size_t((int64_t(i) / inner) % channels);
    lo[c] = std::min(lo[c], v[i]);
    hi[c] = std::max(hi[c], v[i]);
  }
  merge(lo, hi);
  ++batches_;
}

void MinMaxObserver::merge(const std::vector<float>& batch_min, const std::vector<float>& batch_max) {
  if (min_.empty()) {
    min_ = batch_min;
    max_ = batch_max;
    return;
  }
  for (size_t c = 0; c < min_.size(); ++c) {
    min_[c] = std::min(min_[c], batch_min[c]);
    max_[c] = std::max(max_[c], batch_max[c]);
  }
}

void MinMaxObserver::reset() {
  min_.clear();
  max_.clear();
  rank_ = -1;
  batches_ = 0;
}

QParams MinMaxObserver::params(const QScheme& scheme, const Device& device) const {
  const char* who = "quant::MinMaxObserver::params";
  EMBER_CHECK(!min_.empty(), who, ": no batch observed yet (call observe first)");
  for (size_t c = 0; c < min_.size(); ++c)
    EMBER_CHECK(min_[c] <= max_[c], who, ": channel ", c, " has seen only NaN values");
  switch (scheme.granularity) {
    case Granularity::per_tensor: {
      const float lo = *std::min_element(min_.begin(), min_.end()), hi = *std::max_element(max_.begin(), max_.end());
      return params_of({lo}, {hi}, Shape{}, scheme, device);
    }
    case Granularity::per_channel: {
      EMBER_CHECK(axis_.has_value(), who, ": ", scheme.str(),
                  " needs per-channel ranges: construct the observer with the axis (MinMaxObserver(axis))");
      const int a = scheme.normalized_axis(rank_, who), mine = *axis_ < 0 ? *axis_ + rank_ : *axis_;
      EMBER_CHECK(a == mine, who, ": ", scheme.str(), " asks for axis ", scheme.axis, " but the observer tracks axis ",
                  *axis_);
      return params_of(min_, max_, Shape{int64_t(min_.size())}, scheme, device);
    }
    case Granularity::per_block: break;
  }
  EMBER_FAIL(who, ": observers give per-tensor or per-channel parameters, not ", scheme.str(),
             "; quantize weights per block directly with quantize(w, scheme)");
}

// ---- MovingAverageMinMaxObserver ------------------------------------------------------------

MovingAverageMinMaxObserver::MovingAverageMinMaxObserver(double averaging_constant, std::optional<int> axis)
    : MinMaxObserver(axis), c_(averaging_constant) {
  EMBER_CHECK(c_ > 0 && c_ <= 1, "quant::MovingAverageMinMaxObserver: averaging_constant ", c_,
              " must be in (0, 1]");
}

void MovingAverageMinMaxObserver::merge(const std::vector<float>& batch_min, const std::vector<float>& batch_max) {
  if (min_.empty()) {
    min_ = batch_min;
    max_ = batch_max;
    return;
  }
  const float c = float(c_);
  for (size_t k = 0; k < min_.size(); ++k) {
    if (!(batch_min[k] <= batch_max[k])) continue;  // only NaN in this batch's channel
    if (!(min_[k] <= max_[k])) {  // only NaN so far: the batch's range as it is
      min_[k] = batch_min[k];
      max_[k] = batch_max[k];
      continue;
    }
    min_[k] += c * (batch_min[k] - min_[k]);
    max_[k] += c * (batch_max[k] - max_[k]);
  }
}

// ---- HistogramObserver ----------------------------------------------------------------------

HistogramObserver::HistogramObserver(int64_t bins) {
  EMBER_CHECK(bins >= 16 && bins % 2 == 0, "quant::HistogramObserver: bins ", bins, " must be even and at least 16");
  counts_.assign(size_t(bins), 0.0);
}

void HistogramObserver::reset() {
  std::fill(counts_.begin(), counts_.end(), 0.0);
  m_ = 0;
  min_ = max_ = 0;
  total_ = 0;
  batches_ = 0;
}

void HistogramObserver::observe(const DynTensor& x) {
  std::vector<float> v = host_values(x, "quant::HistogramObserver");
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (float f : v)
    if (std::isfinite(f)) {
      lo = std::min(lo, double(f));
      hi = std::max(hi, double(f));
    }
  ++batches_;
  if (lo > hi) return;  // nothing finite
  const double amax = std::max(std::fabs(lo), std::fabs(hi));
  const size_t n = counts_.size();
  if (total_ == 0) {
    m_ = amax > 0 ? amax : 1.0;
    min_ = lo;
    max_ = hi;
  } else {
    min_ = std::min(min_, lo);
    max_ = std::max(max_, hi);
    if (amax > m_) {
      // Re-bin: each old bin's count spreads over the new bins it overlaps, in proportion.
      std::vector<double> grown(n, 0.0);
      const double w0 = 2 * m_ / double(n), w1 = 2 * amax / double(n);
      for (size_t j = 0; j < n; ++j) {
        if (counts_[j] == 0) continue;
        const double a = -m_ + double(j) * w0, b = a + w0;
        size_t k = std::min(n - 1, size_t(std::max(0.0, std::floor((a + amax) / w1))));
        for (; k < n; ++k) {
          const double ka = -amax + double(k) * w1, kb = ka + w1;
          if (ka >= b) break;
          const double overlap = std::min(b, kb) - std::max(a, ka);
          if (overlap > 0) grown[k] += counts_[j] * overlap / w0;
        }
      }
      counts_ = std::move(grown);
      m_ = amax;
    }
  }
  const double w = 2 * m_ / double(n);
  for (float f : v) {
    if (!std::isfinite(f)) continue;
    const double idx = std::floor((double(f) + m_) / w);
    counts_[size_t(std::clamp(idx, 0.0, double(n - 1)))] += 1;
    total_ += 1;
  }
}

double HistogramObserver::quantile(double q) const {
  EMBER_CHECK(total_ > 0, "quant::HistogramObserver::quantile: no finite value observed yet");
  EMBER_CHECK(q >= 0 && q <= 1, "quant::HistogramObserver::quantile: q ", q, " must be in [0, 1]");
  const double target = q * total_, w = 2 * m_ / double(counts_.size());
  double cum = 0;
  for (size_t k = 0; k < counts_.size(); ++k) {
    if (counts_[k] > 0 && cum + counts_[k] >= target) {
      const double v = -m_ + double(k) * w + (target - cum) / counts_[k] * w;
      return std::clamp(v, min_, max_);
    }
    cum += counts_[k];
  }
  return max_;
}

std::vector<double> HistogramObserver::abs_counts() const {
  const size_t half = counts_.size() / 2;
  std::vector<double> out(half);
  for (size_t k = 0; k < half; ++k) out[k] = counts_[half + k] + counts_[half - 1 - k];
  return out;
}

QParams HistogramObserver::params_from_threshold(double threshold, const QScheme& scheme, const Device& device,
                                                 const char* who) const {
  EMBER_CHECK(batches_ > 0, who, ": no batch observed yet (call observe first)");
  EMBER_CHECK(total_ > 0, who, ": the observed batches hold no finite value");
  EMBER_CHECK(scheme.granularity == Granularity::per_tensor, who, ": histogram observers give per-tensor parameters, not ",
              scheme.str(), " (use MinMaxObserver(axis) per channel)");
  if (scheme.symmetric) return params_of({float(-threshold)}, {float(threshold)}, Shape{}, scheme, device);
  const double lo = std::max(min_, -threshold), hi = std::min(max_, threshold);
  return params_of({float(lo)}, {float(hi)}, Shape{}, scheme, device);
}

QParams HistogramObserver::params(const QScheme& scheme, const Device& device) const {
  return params_from_threshold(std::max(std::fabs(min_), std::fabs(max_)), scheme, device,
                               "quant::HistogramObserver::params");
}

// ---- PercentileObserver ---------------------------------------------------------------------

PercentileObserver::PercentileObserver(double percentile, int64_t bins)
    : HistogramObserver(bins), percentile_(percentile) {
  EMBER_CHECK(percentile > 0 && percentile <= 100, "quant::PercentileObserver: percentile ", percentile,
              " must be in (0, 100]");
}

QParams PercentileObserver::params(const QScheme& scheme, const Device& device) const {
  const char* who = "quant::PercentileObserver::params";
  const double p = percentile_ / 100;
  if (!scheme.symmetric && total_ > 0 && scheme.granularity == Granularity::per_tensor)
    return params_of({float(quantile(1 - p))}, {float(quantile(p))}, Shape{}, scheme, device);
  // symmetric: the p-quantile of |x| from the folded histogram
  double t = 0;
  if (total_ > 0) {
    const std::vector<double> a = abs_counts();
    const double w = m_ / double(a.size()), target = p * total_, amax = std::max(std::fabs(min_), std::fabs(max_));
    double cum = 0;
    t = amax;
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k] > 0 && cum + a[k] >= target) {
        t = std::min(amax, double(k) * w + (target - cum) / a[k] * w);
        break;
      }
      cum += a[k];
    }
  }
  return params_from_threshold(t, scheme, device, who);
}

// ---- EntropyObserver ------------------------------------------------------------------------

double EntropyObserver::threshold(int64_t levels) const {
  EMBER_CHECK(levels >= 2, "quant::EntropyObserver::threshold: levels ", levels, " must be at least 2");
  const std::vector<double> h = abs_counts();
  const int64_t nb = int64_t(h.size());
  const double w = m_ / double(nb), amax = std::max(std::fabs(min_), std::fabs(max_));
  if (total_ == 0 || levels >= nb) return amax;
  std::vector<double> tail(size_t(nb) + 1, 0.0);  // tail[i] = sum of h[i..]
  for (int64_t j = nb - 1; j >= 0; --j) tail[size_t(j)] = tail[size_t(j) + 1] + h[size_t(j)];
  double best = std::numeric_limits<double>::infinity();
  int64_t best_i = nb;
  std::vector<double> level_sum(static_cast<size_t>(levels)), level_nonzero(static_cast<size_t>(levels));
  for (int64_t i = levels; i <= nb; ++i) {
    // P: the first i bins, the outliers folded into the last; Q: the same i bins merged into
    // `levels` groups and spread back evenly over each group's non-empty bins.
    std::fill(level_sum.begin(), level_sum.end(), 0.0);
    std::fill(level_nonzero.begin(), level_nonzero.end(), 0.0);
    for (int64_t j = 0; j < i; ++j) {
      const size_t g = size_t(j * levels / i);
      level_sum[g] += h[size_t(j)];
      if (h[size_t(j)] > 0) level_nonzero[g] += 1;
    }
    const double p_total = tail[0];  // P keeps every count
    double q_total = 0;
    for (int64_t g = 0; g < levels; ++g) q_total += level_sum[size_t(g)];
    if (q_total <= 0) continue;
    double kl = 0;
    for (int64_t j = 0; j < i; ++j) {
      double p = h[size_t(j)];
      if (j == i - 1) p += tail[size_t(i)];
      if (p <= 0) continue;
      const size_t g = size_t(j * levels / i);
      const double q = h[size_t(j)] > 0 ? level_sum[g] / level_nonzero[g] : 0.0;
      if (q <= 0) {
        kl = std::numeric_limits<double>::infinity();
        break;
      }
      const double pn = p / p_total, qn = q / q_total;
      kl += pn * std::log(pn / qn);
    }
    if (kl < best) {
      best = kl;
      best_i = i;
    }
  }
  return std::min(amax, double(best_i) * w);
}

QParams EntropyObserver::params(const QScheme& scheme, const Device& device) const {
  const char* who = "quant::EntropyObserver::params";
  EMBER_CHECK(batches_ > 0 && total_ > 0, who, ": no finite value observed yet (call observe first)");
  return params_from_threshold(threshold(int64_t(1) << (bits(scheme.dtype) - 1)), scheme, device, who);
}

}  // namespace ember::quant
