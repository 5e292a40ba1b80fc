// Calibration observers for post-training quantization: feed them the activations of a few
// batches with observe(), then ask params(scheme) for the scale and zero point.
//
//   # DynTensor batch1 = randn({32, 64}), batch2 = randn({32, 64});
//   using namespace ember::quant;
//   MinMaxObserver minmax;                     // PyTorch's MinMaxObserver
//   PercentileObserver pct(99.99);             // clips the 0.01% tails
//   EntropyObserver kl;                        // TensorRT's KL-divergence threshold
//   for (const DynTensor& b : {batch1, batch2}) { minmax.observe(b); pct.observe(b); kl.observe(b); }
//   QParams p = kl.params(QScheme::per_tensor(QType::int8));
//   QuantizedTensor q = quantize(batch1, QScheme::per_tensor(QType::int8), p);
//   MinMaxObserver per_channel(/*axis=*/1);    // min / max per index of dim 1
//   per_channel.observe(batch1);
//   QParams pc = per_channel.params(QScheme::per_channel(1));   // scales [64]
//   # run
//
// observe() reads each batch to the host (calibration runs a few batches, not a training loop).
// Min/max observers keep exact ranges, per tensor or per index of one axis. The histogram
// observers (percentile, entropy) are per tensor: they keep `bins` counts over [-m, m], m the
// largest |x| seen, re-binning the counts proportionally when m grows, so a later batch with a
// larger range needs no second pass over earlier ones. Symmetric schemes take a threshold over |x|
// (the two halves of the histogram folded); affine schemes clip [min, max] to the thresholds.
// NaN values are skipped by every observer (and infinite ones by the histogram observers).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ember/quant/quantized_tensor.hpp"

namespace ember::quant {

// What every calibration observer offers.
class Observer {
 public:
  virtual ~Observer() = default;
  // Takes one batch into account (a floating tensor; an Error for other dtypes).
  virtual void observe(const DynTensor& x) = 0;
  // Scale and zero point for `scheme`, on `device`. Throws an Error before any observe(), or for a
  // granularity the observer does not track (histogram observers: per tensor only).
  virtual QParams params(const QScheme& scheme, const Device& device = Device::default_device()) const = 0;
  // Forgets every batch seen.
  virtual void reset() = 0;
  // Batches observed since construction or reset().
  int64_t batches() const { return batches_; }

 protected:
  int64_t batches_ = 0;  // observe() calls so far
};

// The running minimum and maximum (torch.ao.quantization.MinMaxObserver, or with an axis
// PerChannelMinMaxObserver). Per-channel ranges answer per-channel schemes of the same axis and
// per-tensor ones (their overall range).
class MinMaxObserver : public Observer {
 public:
  // Without an axis: one range. With one: a range per index of dim `axis` (negative from the end).
  explicit MinMaxObserver(std::optional<int> axis = std::nullopt) : axis_(axis) {}
  void observe(const DynTensor& x) override;  // updates the ranges with x's
  QParams params(const QScheme& scheme, const Device& device = Device::default_device()) const override;  // see Observer
  void reset() override;  // forgets the ranges
  const std::vector<float>& min() const { return min_; }  // the ranges' lower ends (one per channel)
  const std::vector<float>& max() const { return max_; }  // the ranges' upper ends

 protected:
  // Merges one batch's per-channel ranges into min_/max_ (the moving average overrides this).
  virtual void merge(const std::vector<float>& batch_min, const std::vector<float>& batch_max);
  std::optional<int> axis_;  // the channel axis, if any
  int rank_ = -1;  // the rank of the batches (-1 before the first)
  std::vector<float> min_, max_;  // the current ranges
};

// The ranges as an exponential moving average over batches
// (torch.ao.quantization.MovingAverageMinMaxObserver): the first batch sets them, each later one
// moves them by c * (batch - current), c = averaging_constant.
class MovingAverageMinMaxObserver : public MinMaxObserver {
 public:
  // c in (0, 1]; PyTorch's default 0.01. An Error outside that range.
  explicit MovingAverageMinMaxObserver(double averaging_constant = 0.01, std::optional<int> axis = std::nullopt);
  double averaging_constant() const { return c_; }  // c

 protected:
  void merge(const std::vector<float>& batch_min, const std::vector<float>& batch_max) override;  // the average

 private:
  double c_;
};

// A histogram of the values seen over [-m, m] (m: the largest |x| so far), `bins` bins of equal
// width, with the exact min and max beside it. The base of the percentile and entropy observers.
// NaN and infinite values are skipped.
class HistogramObserver : public Observer {
 public:
  // bins: even, at least 16; 4096 by default, so |x| gets 2048 bins, as in TensorRT.
  explicit HistogramObserver(int64_t bins = 4096);
  void observe(const DynTensor& x) override;  // adds x's finite values
  // The whole observed range, as MinMaxObserver would give it (per tensor only).
  QParams params(const QScheme& scheme, const Device& device = Device::default_device()) const override;
  void reset() override;  // empties the histogram
  const std::vector<double>& counts() const { return counts_; }  // per bin, from -m to m
  double range() const { return m_; }  // m: the histogram covers [-m, m]
  double min() const { return min_; }  // the smallest value seen
  double max() const { return max_; }  // the largest value seen
  // The value below which a fraction `q` (0..1) of the observed values lie, interpolated
  // linearly inside a bin (exact at the bins' edges).
  double quantile(double q) const;
  // Counts of |x| over [0, m] in bins / 2 bins (the two halves folded).
  std::vector<double> abs_counts() const;

 protected:
  // Scale and zero point from a threshold T over |x|: symmetric, amax = T; affine, the range
  // [max(min, -T), min(max, T)]. Checks the scheme is per tensor and that something was observed.
  QParams params_from_threshold(double threshold, const QScheme& scheme, const Device& device,
                                const char* who) const;
  std::vector<double> counts_;  // the histogram
  double m_ = 0;  // half-width of its range
  double min_ = 0, max_ = 0;  // exact extremes
  double total_ = 0;  // values counted
};

// Clips the tails: symmetric schemes take the `percentile`-th percentile of |x| as amax; affine ones
// the range [quantile(1 - p), quantile(p)], p = percentile / 100 (TensorRT's percentile calibration).
class PercentileObserver : public HistogramObserver {
 public:
  // percentile in (0, 100]; an Error otherwise.
  explicit PercentileObserver(double percentile = 99.99, int64_t bins = 4096);
  QParams params(const QScheme& scheme, const Device& device = Device::default_device()) const override;  // see above
  double percentile() const { return percentile_; }  // p, in percent

 private:
  double percentile_;
};

// TensorRT's entropy calibration: the threshold T over |x| that minimises the KL divergence
// between the histogram of |x| clipped at T (the outliers added to its last bin) and the same
// histogram merged into 2^(bits - 1) levels and expanded back (each level's count spread evenly
// over its non-empty bins). Candidates are the |x| bin edges from 2^(bits - 1) bins up; T = the
// chosen edge (the largest |x| when there are fewer bins than levels). PyTorch's HistogramObserver searches a similar threshold by a norm.
class EntropyObserver : public HistogramObserver {
 public:
  explicit EntropyObserver(int64_t bins = 4096) : HistogramObserver(bins) {}  // bins: as HistogramObserver
  QParams params(const QScheme& scheme, const Device& device = Device::default_device()) const override;  // see above
  // The KL-optimal threshold for `levels` quantization levels over |x|.
  double threshold(int64_t levels) const;
};

}  // namespace ember::quant
