// Metrics (see include/ember/train/metrics.hpp for the conventions).
#include "ember/train/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "ember/core/error.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::train {
namespace {

void check_shapes(const char* fn, std::span<const float> logits, std::span<const int64_t> targets,
                  int64_t num_classes) {
  EMBER_CHECK(num_classes >= 1, fn, ": num_classes must be >= 1, got ", num_classes);
  EMBER_CHECK(logits.size() == targets.size() * size_t(num_classes), fn, ": logits have ", logits.size(),
              " values, expected ", targets.size(), " targets x ", num_classes, " classes");
}

int64_t argmax_row(const float* row, int64_t c) {
  if (c == 1) return row[0] > 0 ? 1 : 0;
  int64_t best = 0;
  for (int64_t j = 1; j < c; ++j)
    if (row[j] > row[best]) best = j;
  return best;
}

// Binary logits have two classes for the confusion matrix and targets.
int64_t effective_classes(int64_t num_classes) { return num_classes == 1 ? 2 : num_classes; }

void check_target(const char* fn, int64_t t, int64_t classes) {
  EMBER_CHECK(t < classes, fn, ": target ", t, " out of range for ", classes, " classes");
}

}  // namespace

std::vector<int64_t> predictions(std::span<const float> logits, int64_t num_classes) {
  EMBER_CHECK(num_classes >= 1 && logits.size() % size_t(num_classes) == 0, "predictions: ", logits.size(),
              " logits do not split into rows of ", num_classes);
  size_t n = logits.size() / size_t(num_classes);
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = argmax_row(logits.data() + i * size_t(num_classes), num_classes);
  return out;
}

double accuracy(std::span<const float> logits, std::span<const int64_t> targets, int64_t num_classes) {
  check_shapes("accuracy", logits, targets, num_classes);
  int64_t correct = 0, total = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] < 0) continue;
    check_target("accuracy", targets[i], effective_classes(num_classes));
    ++total;
    correct += argmax_row(logits.data() + i * size_t(num_classes), num_classes) == targets[i];
  }
  return total ? double(correct) / double(total) : kNaN;
}

double top_k_accuracy(std::span<const float> logits, std::span<const int64_t> targets, int64_t num_classes,
                      int64_t k) {
  check_shapes("top_k_accuracy", logits, targets, num_classes);
  EMBER_CHECK(k >= 1, "top_k_accuracy: k must be >= 1, got ", k);
  if (num_classes == 1) return k >= 2 ? (targets.empty() ? kNaN : 1.0) : accuracy(logits, targets, 1);
  int64_t correct = 0, total = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    int64_t t = targets[i];
    if (t < 0) continue;
    check_target("top_k_accuracy", t, num_classes);
    ++total;
    const float* row = logits.data() + i * size_t(num_classes);
    int64_t higher = 0;
    for (int64_t j = 0; j < num_classes; ++j) higher += row[j] > row[t];
    correct += higher < k;
  }
  return total ? double(correct) / double(total) : kNaN;
}

std::vector<double> probabilities(std::span<const float> logits, int64_t num_classes) {
  EMBER_CHECK(num_classes >= 1 && logits.size() % size_t(num_classes) == 0, "probabilities: ", logits.size(),
              " logits do not split into rows of ", num_classes);
  std::vector<double> p(logits.size());
  size_t c = size_t(num_classes);
  for (size_t i = 0; i < logits.size() / c; ++i) {
    const float* row = logits.data() + i * c;
    double* out = p.data() + i * c;
    if (c == 1) {
      out[0] = 1.0 / (1.0 + std::exp(-double(row[0])));
      continue;
    }
    double mx = row[0];
    for (size_t j = 1; j < c; ++j) mx = std::max(mx, double(row[j]));
    double s = 0;
    for (size_t j = 0; j < c; ++j) s += out[j] = std::exp(double(row[j]) - mx);
    for (size_t j = 0; j < c; ++j) out[j] /= s;
  }
  return p;
}

double binary_auroc(std::span<const double> scores, std::span<const uint8_t> labels) {
  EMBER_CHECK(scores.size() == labels.size(), "binary_auroc: ", scores.size(), " scores but ", labels.size(),
              " labels");
  size_t n = scores.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Sum of the (tie-averaged, 1-based) ranks of the positives: the Mann-Whitney U statistic.
  double rank_sum = 0;
  double npos = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && scores[order[j]] == scores[order[i]]) ++j;
    double avg_rank = (double(i + 1) + double(j)) / 2;
    for (size_t m = i; m < j; ++m)
      if (labels[order[m]]) {
        rank_sum += avg_rank;
        npos += 1;
      }
    i = j;
  }
  double nneg = double(n) - npos;
  if (npos == 0 || nneg == 0) return kNaN;
  return (rank_sum - npos * (npos + 1) / 2) / (npos * nneg);
}

double auroc(std::span<const float> logits, std::span<const int64_t> targets, int64_t num_classes) {
  check_shapes("auroc", logits, targets, num_classes);
  std::vector<double> p = probabilities(logits, num_classes);
  std::vector<size_t> rows;
  for (size_t i = 0; i < targets.size(); ++i)
    if (targets[i] >= 0) {
      check_target("auroc", targets[i], effective_classes(num_classes));
      rows.push_back(i);
    }
  std::vector<double> scores(rows.size());
  std::vector<uint8_t> labels(rows.size());
  if (num_classes == 1) {
    for (size_t r = 0; r < rows.size(); ++r) {
      scores[r] = p[rows[r]];
      labels[r] = targets[rows[r]] == 1;
    }
    return binary_auroc(scores, labels);
  }
  double sum = 0;
  int64_t counted = 0;
  size_t c = size_t(num_classes);
  for (size_t k = 0; k < c; ++k) {
    for (size_t r = 0; r < rows.size(); ++r) {
      scores[r] = p[rows[r] * c + k];
      labels[r] = targets[rows[r]] == int64_t(k);
    }
    double a = binary_auroc(scores, labels);
    if (std::isnan(a)) continue;
    sum += a;
    ++counted;
    if (c == 2) break;  // class 0's one-vs-rest AUROC is the same number
  }
  return counted ? sum / double(counted) : kNaN;
}

// ---- ConfusionMatrix ----

ConfusionMatrix::ConfusionMatrix(int64_t num_classes) {
  EMBER_CHECK(num_classes >= 0, "ConfusionMatrix: negative number of classes ", num_classes);
  grow(num_classes);
}

void ConfusionMatrix::grow(int64_t num_classes) {
  if (num_classes <= n_) return;
  std::vector<int64_t> c(size_t(num_classes * num_classes), 0);
  for (int64_t t = 0; t < n_; ++t)
    for (int64_t p = 0; p < n_; ++p) c[size_t(t * num_classes + p)] = counts_[size_t(t * n_ + p)];
  counts_ = std::move(c);
  n_ = num_classes;
}

void ConfusionMatrix::add(int64_t target, int64_t prediction) {
  if (target < 0) return;
  EMBER_CHECK(prediction >= 0, "ConfusionMatrix: negative prediction ", prediction);
  grow(std::max(target, prediction) + 1);
  ++counts_[size_t(target * n_ + prediction)];
}

void ConfusionMatrix::add(std::span<const float> logits, std::span<const int64_t> targets, int64_t num_classes) {
  check_shapes("ConfusionMatrix::add", logits, targets, num_classes);
  int64_t classes = effective_classes(num_classes);
  grow(classes);
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] < 0) continue;
    check_target("ConfusionMatrix::add", targets[i], classes);
    add(targets[i], argmax_row(logits.data() + i * size_t(num_classes), num_classes));
  }
}

int64_t ConfusionMatrix::total() const { return std::accumulate(counts_.begin(), counts_.end(), int64_t{0}); }

void ConfusionMatrix::clear() { std::fill(counts_.begin(), counts_.end(), 0); }

void ConfusionMatrix::set_counts(int64_t num_classes, std::vector<int64_t> counts) {
  EMBER_CHECK(num_classes >= 0 && counts.size() == size_t(num_classes * num_classes),
              "ConfusionMatrix::set_counts: ", counts.size(), " counts for ", num_classes, " classes");
  n_ = num_classes;
  counts_ = std::move(counts);
}

bool ConfusionMatrix::present(int64_t cls) const {
  for (int64_t j = 0; j < n_; ++j)
    if (count(cls, j) || count(j, cls)) return true;
  return false;
}

double ConfusionMatrix::accuracy() const {
  int64_t total = this->total();
  if (!total) return kNaN;
  int64_t diag = 0;
  for (int64_t i = 0; i < n_; ++i) diag += count(i, i);
  return double(diag) / double(total);
}

double ConfusionMatrix::precision_of(int64_t cls) const {
  int64_t predicted = 0;
  for (int64_t t = 0; t < n_; ++t) predicted += count(t, cls);
  return predicted ? double(count(cls, cls)) / double(predicted) : 0.0;
}

double ConfusionMatrix::recall_of(int64_t cls) const {
  int64_t actual = 0;
  for (int64_t p = 0; p < n_; ++p) actual += count(cls, p);
  return actual ? double(count(cls, cls)) / double(actual) : 0.0;
}

double ConfusionMatrix::f1_of(int64_t cls) const {
  double p = precision_of(cls), r = recall_of(cls);
  return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
}

namespace {
// The mean of per_class(c) over the classes for which it has a value.
template <class F>
double macro(int64_t n, F per_class) {
  double sum = 0;
  int64_t k = 0;
  for (int64_t c = 0; c < n; ++c) {
    auto v = per_class(c);
    if (!v) continue;
    sum += *v;
    ++k;
  }
  return k ? sum / double(k) : kNaN;
}
}  // namespace

double ConfusionMatrix::precision(Average avg) const {
  if (avg == Average::micro) return accuracy();
  return macro(n_, [&](int64_t c) { return present(c) ? std::optional(precision_of(c)) : std::nullopt; });
}

double ConfusionMatrix::recall(Average avg) const {
  if (avg == Average::micro) return accuracy();
  return macro(n_, [&](int64_t c) { return present(c) ? std::optional(recall_of(c)) : std::nullopt; });
}

double ConfusionMatrix::f1(Average avg) const {
  if (avg == Average::micro) return accuracy();
  return macro(n_, [&](int64_t c) { return present(c) ? std::optional(f1_of(c)) : std::nullopt; });
}

std::string ConfusionMatrix::str(const std::vector<std::string>& class_names) const {
  auto label = [&](int64_t i) { return size_t(i) < class_names.size() ? class_names[size_t(i)] : std::to_string(i); };
  size_t width = 5;
  for (int64_t i = 0; i < n_; ++i) width = std::max(width, label(i).size());
  for (int64_t c : counts_) width = std::max(width, std::to_string(c).size());
  std::ostringstream os;
  os << std::setw(int(width)) << "t\\p";
  for (int64_t p = 0; p < n_; ++p) os << ' ' << std::setw(int(width)) << label(p);
  os << '\n';
  for (int64_t t = 0; t < n_; ++t) {
    os << std::setw(int(width)) << label(t);
    for (int64_t p = 0; p < n_; ++p) os << ' ' << std::setw(int(width)) << count(t, p);
    os << '\n';
  }
  return os.str();
}

// ---- accumulators ----
namespace {

double get1(const MetricState& s, const std::string& key) {
  auto it = s.find(key);
  EMBER_CHECK(it != s.end() && it->second.size() == 1, "metric state: missing or malformed entry '", key, "'");
  return it->second[0];
}

class LossMetric final : public Metric {
 public:
  std::string name() const override { return "loss"; }
  bool higher_is_better() const override { return false; }
  void reset() override { sum_ = 0, n_ = 0; }
  std::optional<double> update(const BatchOutputs& b) override {
    sum_ += b.loss * double(b.batch_size);
    n_ += double(b.batch_size);
    return b.loss;
  }
  double value() const override { return n_ ? sum_ / n_ : kNaN; }
  MetricState state() const override { return {{"sum", {sum_}}, {"count", {n_}}}; }
  void load_state(const MetricState& s) override { sum_ = get1(s, "sum"), n_ = get1(s, "count"); }
  std::unique_ptr<Metric> clone() const override { return std::make_unique<LossMetric>(); }

 private:
  double sum_ = 0, n_ = 0;
};

// Counts of correct samples over counted samples.
class CountMetric : public Metric {
 public:
  void reset() override { correct_ = 0, total_ = 0; }
  std::optional<double> update(const BatchOutputs& b) override {
    if (b.num_classes == 0) return std::nullopt;
    int64_t counted = 0;
    for (int64_t t : b.targets) counted += t >= 0;
    if (!counted) return std::nullopt;
    double v = batch_value(b);
    correct_ += v * double(counted);
    total_ += double(counted);
    return v;
  }
  double value() const override { return total_ ? correct_ / total_ : kNaN; }
  bool higher_is_better() const override { return true; }
  MetricState state() const override { return {{"correct", {correct_}}, {"total", {total_}}}; }
  void load_state(const MetricState& s) override { correct_ = get1(s, "correct"), total_ = get1(s, "total"); }

 protected:
  virtual double batch_value(const BatchOutputs& b) const = 0;

 private:
  double correct_ = 0, total_ = 0;
};

class AccuracyMetric final : public CountMetric {
 public:
  std::string name() const override { return "accuracy"; }
  std::unique_ptr<Metric> clone() const override { return std::make_unique<AccuracyMetric>(); }

 protected:
  double batch_value(const BatchOutputs& b) const override { return accuracy(b.logits, b.targets, b.num_classes); }
};

class TopKMetric final : public CountMetric {
 public:
  explicit TopKMetric(int64_t k) : k_(k) { EMBER_CHECK(k >= 1, "top_k_accuracy_metric: k must be >= 1, got ", k); }
  std::string name() const override { return "top" + std::to_string(k_) + "_accuracy"; }
  std::unique_ptr<Metric> clone() const override { return std::make_unique<TopKMetric>(k_); }

 protected:
  double batch_value(const BatchOutputs& b) const override {
    return top_k_accuracy(b.logits, b.targets, b.num_classes, k_);
  }

 private:
  int64_t k_;
};

// Precision / recall / F1 from a confusion matrix accumulated over the epoch.
class ConfusionMetric final : public Metric {
 public:
  enum class Kind { precision, recall, f1 };
  ConfusionMetric(Kind kind, Average avg) : kind_(kind), avg_(avg) {}
  std::string name() const override {
    static const char* names[] = {"precision", "recall", "f1"};
    return std::string(names[int(kind_)]) + (avg_ == Average::macro ? "_macro" : "_micro");
  }
  bool higher_is_better() const override { return true; }
  void reset() override { cm_ = ConfusionMatrix(); }
  std::optional<double> update(const BatchOutputs& b) override {
    if (b.num_classes == 0) return std::nullopt;
    cm_.add(b.logits, b.targets, b.num_classes);
    ConfusionMatrix one;
    one.add(b.logits, b.targets, b.num_classes);
    return of(one);
  }
  double value() const override { return of(cm_); }
  MetricState state() const override {
    return {{"num_classes", {double(cm_.num_classes())}},
            {"counts", std::vector<double>(cm_.counts().begin(), cm_.counts().end())}};
  }
  void load_state(const MetricState& s) override {
    auto it = s.find("counts");
    EMBER_CHECK(it != s.end(), "metric state: missing entry 'counts'");
    cm_.set_counts(int64_t(get1(s, "num_classes")), std::vector<int64_t>(it->second.begin(), it->second.end()));
  }
  std::unique_ptr<Metric> clone() const override { return std::make_unique<ConfusionMetric>(kind_, avg_); }

 private:
  double of(const ConfusionMatrix& cm) const {
    switch (kind_) {
      case Kind::precision: return cm.precision(avg_);
      case Kind::recall: return cm.recall(avg_);
      case Kind::f1: return cm.f1(avg_);
    }
    return kNaN;
  }
  Kind kind_;
  Average avg_;
  ConfusionMatrix cm_;
};

// Keeps every sample's logits for the epoch's AUROC.
class AurocMetric final : public Metric {
 public:
  std::string name() const override { return "auroc"; }
  bool higher_is_better() const override { return true; }
  void reset() override { logits_.clear(), targets_.clear(), classes_ = 0; }
  std::optional<double> update(const BatchOutputs& b) override {
    if (b.num_classes == 0) return std::nullopt;
    EMBER_CHECK(classes_ == 0 || classes_ == b.num_classes, "auroc: batches with ", classes_, " and ", b.num_classes,
                " classes");
    classes_ = b.num_classes;
    logits_.insert(logits_.end(), b.logits.begin(), b.logits.end());
    targets_.insert(targets_.end(), b.targets.begin(), b.targets.end());
    return std::nullopt;
  }
  double value() const override { return classes_ ? auroc(logits_, targets_, classes_) : kNaN; }
  MetricState state() const override {
    return {{"num_classes", {double(classes_)}},
            {"logits", std::vector<double>(logits_.begin(), logits_.end())},
            {"targets", std::vector<double>(targets_.begin(), targets_.end())}};
  }
  void load_state(const MetricState& s) override {
    classes_ = int64_t(get1(s, "num_classes"));
    auto l = s.find("logits"), t = s.find("targets");
    EMBER_CHECK(l != s.end() && t != s.end(), "metric state: missing entry 'logits' or 'targets'");
    logits_.assign(l->second.begin(), l->second.end());
    targets_.assign(t->second.begin(), t->second.end());
  }
  std::unique_ptr<Metric> clone() const override { return std::make_unique<AurocMetric>(); }

 private:
  std::vector<float> logits_;
  std::vector<int64_t> targets_;
  int64_t classes_ = 0;
};


// Sums over every element of the epoch, per output column: the regression metrics are functions of
// these (so RMSE is the root of the epoch's MSE, and R² uses the epoch's target mean).
struct RegressionSums {
  std::vector<double> count, sse, sae, mean, m2;  // per output; mean/m2: the targets' (Chan et al.)
  void clear() { count.clear(), sse.clear(), sae.clear(), mean.clear(), m2.clear(); }
  void add(const std::vector<double>& pred, const std::vector<double>& target, int64_t k) {
    if (count.empty()) count.assign(size_t(k), 0), sse = sae = mean = m2 = count;
    EMBER_CHECK(int64_t(count.size()) == k, "regression metric: batches with ", count.size(), " and ", k, " outputs");
    size_t n = target.size() / size_t(k);
    if (n == 0) return;
    for (size_t j = 0; j < size_t(k); ++j) {
      double bs = 0, ba = 0, bsum = 0;
      for (size_t i = 0; i < n; ++i) {
        double e = pred[i * size_t(k) + j] - target[i * size_t(k) + j];
        bs += e * e, ba += std::fabs(e), bsum += target[i * size_t(k) + j];
      }
      double bmean = bsum / double(n), bm2 = 0;
      for (size_t i = 0; i < n; ++i) bm2 += (target[i * size_t(k) + j] - bmean) * (target[i * size_t(k) + j] - bmean);
      double na = count[j], nb = double(n), nt = na + nb, delta = bmean - mean[j];
      mean[j] += delta * nb / nt;
      m2[j] += bm2 + delta * delta * na * nb / nt;
      count[j] = nt, sse[j] += bs, sae[j] += ba;
    }
  }
  double total(const std::vector<double>& v) const { return std::accumulate(v.begin(), v.end(), 0.0); }
  double mse() const { return count.empty() || total(count) == 0 ? kNaN : total(sse) / total(count); }
  double mae() const { return count.empty() || total(count) == 0 ? kNaN : total(sae) / total(count); }
  double r2() const {
    if (count.empty()) return kNaN;
    double s = 0;
    for (size_t j = 0; j < count.size(); ++j) s += m2[j] > 0 ? 1 - sse[j] / m2[j] : kNaN;
    return s / double(count.size());
  }
};

class RegressionMetric final : public Metric {
 public:
  enum class Kind { mse, rmse, mae, r2 };
  explicit RegressionMetric(Kind kind) : kind_(kind) {}
  std::string name() const override {
    static const char* names[] = {"mse", "rmse", "mae", "r2"};
    return names[int(kind_)];
  }
  bool higher_is_better() const override { return kind_ == Kind::r2; }
  void reset() override { sums_.clear(); }
  std::optional<double> update(const BatchOutputs& b) override {
    if (b.kind != OutputKind::regression || b.batch_size == 0) return std::nullopt;
    RegressionSums one;
    one.add(b.predictions, b.values, b.num_outputs);
    sums_.add(b.predictions, b.values, b.num_outputs);
    return of(one);
  }
  double value() const override { return of(sums_); }
  MetricState state() const override {
    return {{"count", sums_.count}, {"sse", sums_.sse}, {"sae", sums_.sae}, {"mean", sums_.mean}, {"m2", sums_.m2}};
  }
  void load_state(const MetricState& s) override {
    for (auto [key, field] : {std::pair{"count", &sums_.count}, {"sse", &sums_.sse}, {"sae", &sums_.sae},
                              {"mean", &sums_.mean}, {"m2", &sums_.m2}}) {
      auto it = s.find(key);
      EMBER_CHECK(it != s.end(), "metric state: missing entry '", key, "'");
      *field = it->second;
    }
    for (const auto* v : {&sums_.sse, &sums_.sae, &sums_.mean, &sums_.m2})
      EMBER_CHECK(v->size() == sums_.count.size(), "metric state: ", name(), "'s entries differ in length");
  }
  std::unique_ptr<Metric> clone() const override { return std::make_unique<RegressionMetric>(kind_); }

 private:
  double of(const RegressionSums& s) const {
    switch (kind_) {
      case Kind::mse: return s.mse();
      case Kind::rmse: return std::sqrt(s.mse());
      case Kind::mae: return s.mae();
      case Kind::r2: return s.r2();
    }
    return kNaN;
  }
  Kind kind_;
  RegressionSums sums_;
};

// Per-label true/false positive/negative counts of thresholded sigmoids.
class MultiLabelMetric final : public Metric {
 public:
  enum class Kind { accuracy, f1 };
  MultiLabelMetric(Kind kind, Average avg, double threshold) : kind_(kind), avg_(avg), threshold_(threshold) {
    EMBER_CHECK(threshold > 0 && threshold < 1, "multilabel metric: threshold must be in (0, 1), got ", threshold);
  }
  std::string name() const override {
    if (kind_ == Kind::accuracy) return "label_accuracy";
    return std::string("label_f1") + (avg_ == Average::macro ? "_macro" : "_micro");
  }
  bool higher_is_better() const override { return true; }
  void reset() override { tp_.clear(), fp_.clear(), fn_.clear(), tn_.clear(); }
  std::optional<double> update(const BatchOutputs& b) override {
    if (b.kind != OutputKind::multilabel || b.batch_size == 0) return std::nullopt;
    MultiLabelMetric one(kind_, avg_, threshold_);
    one.add(b);
    add(b);
    return one.value();
  }
  double value() const override {
    if (tp_.empty()) return kNaN;
    auto sum = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); };
    auto f1 = [](double tp, double fp, double fn) { return tp + fp + fn > 0 ? 2 * tp / (2 * tp + fp + fn) : 0.0; };
    if (kind_ == Kind::accuracy) {
      double right = sum(tp_) + sum(tn_), all = right + sum(fp_) + sum(fn_);
      return all > 0 ? right / all : kNaN;
    }
    if (avg_ == Average::micro) return f1(sum(tp_), sum(fp_), sum(fn_));
    double s = 0;
    for (size_t j = 0; j < tp_.size(); ++j) s += f1(tp_[j], fp_[j], fn_[j]);
    return s / double(tp_.size());
  }
  MetricState state() const override { return {{"tp", tp_}, {"fp", fp_}, {"fn", fn_}, {"tn", tn_}}; }
  void load_state(const MetricState& s) override {
    for (auto [key, field] : {std::pair{"tp", &tp_}, {"fp", &fp_}, {"fn", &fn_}, {"tn", &tn_}}) {
      auto it = s.find(key);
      EMBER_CHECK(it != s.end(), "metric state: missing entry '", key, "'");
      *field = it->second;
    }
    for (const auto* v : {&fp_, &fn_, &tn_})
      EMBER_CHECK(v->size() == tp_.size(), "metric state: ", name(), "'s entries differ in length");
  }
  std::unique_ptr<Metric> clone() const override {
    return std::make_unique<MultiLabelMetric>(kind_, avg_, threshold_);
  }

 private:
  void add(const BatchOutputs& b) {
    size_t l = size_t(b.num_labels);
    if (tp_.empty()) tp_.assign(l, 0), fp_ = fn_ = tn_ = tp_;
    EMBER_CHECK(tp_.size() == l, "multilabel metric: batches with ", tp_.size(), " and ", l, " labels");
    // sigmoid(x) > t  <=>  x > log(t / (1 - t))
    double cut = std::log(threshold_ / (1 - threshold_));
    for (size_t i = 0; i < b.values.size(); ++i) {
      bool pred = b.predictions[i] > cut, truth = b.values[i] > 0.5;
      size_t j = i % l;
      (pred ? (truth ? tp_ : fp_) : (truth ? fn_ : tn_))[j] += 1;
    }
  }
  Kind kind_;
  Average avg_;
  double threshold_;
  std::vector<double> tp_, fp_, fn_, tn_;
};

}  // namespace

double mean_squared_error(std::span<const double> pred, std::span<const double> target) {
  EMBER_CHECK(pred.size() == target.size(), "mean_squared_error: ", pred.size(), " predictions, ", target.size(), " targets");
  RegressionSums s;
  s.add({pred.begin(), pred.end()}, {target.begin(), target.end()}, 1);
  return s.mse();
}
double mean_absolute_error(std::span<const double> pred, std::span<const double> target) {
  EMBER_CHECK(pred.size() == target.size(), "mean_absolute_error: ", pred.size(), " predictions, ", target.size(), " targets");
  RegressionSums s;
  s.add({pred.begin(), pred.end()}, {target.begin(), target.end()}, 1);
  return s.mae();
}
double r2_score(std::span<const double> pred, std::span<const double> target, int64_t num_outputs) {
  EMBER_CHECK(pred.size() == target.size() && num_outputs >= 1 && target.size() % size_t(num_outputs) == 0,
              "r2_score: ", pred.size(), " predictions, ", target.size(), " targets, ", num_outputs, " outputs");
  RegressionSums s;
  s.add({pred.begin(), pred.end()}, {target.begin(), target.end()}, num_outputs);
  return s.r2();
}

MetricPtr mse_metric() { return std::make_shared<RegressionMetric>(RegressionMetric::Kind::mse); }
MetricPtr rmse_metric() { return std::make_shared<RegressionMetric>(RegressionMetric::Kind::rmse); }
MetricPtr mae_metric() { return std::make_shared<RegressionMetric>(RegressionMetric::Kind::mae); }
MetricPtr r2_metric() { return std::make_shared<RegressionMetric>(RegressionMetric::Kind::r2); }
MetricPtr multilabel_accuracy_metric(double threshold) {
  return std::make_shared<MultiLabelMetric>(MultiLabelMetric::Kind::accuracy, Average::micro, threshold);
}
MetricPtr multilabel_f1_metric(Average avg, double threshold) {
  return std::make_shared<MultiLabelMetric>(MultiLabelMetric::Kind::f1, avg, threshold);
}

MetricPtr loss_metric() { return std::make_shared<LossMetric>(); }
MetricPtr accuracy_metric() { return std::make_shared<AccuracyMetric>(); }
MetricPtr top_k_accuracy_metric(int64_t k) { return std::make_shared<TopKMetric>(k); }
MetricPtr precision_metric(Average avg) {
  return std::make_shared<ConfusionMetric>(ConfusionMetric::Kind::precision, avg);
}
MetricPtr recall_metric(Average avg) { return std::make_shared<ConfusionMetric>(ConfusionMetric::Kind::recall, avg); }
MetricPtr f1_metric(Average avg) { return std::make_shared<ConfusionMetric>(ConfusionMetric::Kind::f1, avg); }
MetricPtr auroc_metric() { return std::make_shared<AurocMetric>(); }

bool lower_is_better_by_name(const std::string& name) {
  for (const char* s : {"loss", "error", "time", "wait", "memory", "eta", "perplexity", "mse", "mae"})
    if (name.find(s) != std::string::npos) return true;
  return false;
}

}  // namespace ember::train
