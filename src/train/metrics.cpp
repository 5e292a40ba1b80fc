// Classification metrics (see include/ember/train/metrics.hpp for the conventions).
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

// ---- host read-back ----

BatchOutputs to_host(const ClassificationOutput& out) {
  BatchOutputs b;
  EMBER_CHECK(out.loss.defined(), "Learner: the step returned no loss");
  EMBER_CHECK(out.loss.numel() == 1, "Learner: the step's loss must have one element, got shape ",
              out.loss.shape());
  b.loss = out.loss.detach().item();
  b.batch_size = 1;
  if (!out.output.defined() || !out.targets.defined()) return b;
  DynTensor logits = out.output.detach();
  EMBER_CHECK(logits.rank() == 1 || logits.rank() == 2, "Learner: the step's output must be logits [N, C], [N, 1] or [N], got ",
              logits.shape());
  int64_t n = logits.size(0);
  int64_t c = logits.rank() == 2 ? logits.size(1) : 1;
  EMBER_CHECK(out.targets.numel() == n, "Learner: ", n, " output rows but targets of shape ", out.targets.shape());
  b.batch_size = n;
  b.num_classes = c;
  b.logits = logits.cast(DType::f32).to_vector<float>();
  b.targets = out.targets.detach().cast(DType::i64).to_vector<int64_t>();
  return b;
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

}  // namespace

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
  for (const char* s : {"loss", "error", "time", "wait", "memory", "eta", "perplexity"})
    if (name.find(s) != std::string::npos) return true;
  return false;
}

}  // namespace ember::train
