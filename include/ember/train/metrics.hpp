// Metrics: plain functions over host arrays, and the Metric accumulators the Learner feeds batch by
// batch (one copy per split; reset at each epoch). Classification, regression (MSE, RMSE, MAE, R²)
// and multi-label (label accuracy, F1 over thresholded sigmoids); each metric reads the outputs of
// its kind and ignores other batches.
//
//   int64_t c = 2;
//   std::vector<float> logits = {2.0f, -1.0f, 0.5f, 1.5f};   // [n, c] row-major
//   std::vector<int64_t> targets = {0, 1};                // [n]
//   double acc = train::accuracy(logits, targets, c);
//   train::ConfusionMatrix cm(c);  cm.add(logits, targets, c);
//   double f1 = cm.f1(train::Average::macro);
//   double auc = train::auroc(logits, targets, c);   // binary, or one-vs-rest macro
//
//   # auto learner_builder = train::LearnerBuilder(given<Model>(), &classify_train);
//   learner_builder.metrics({train::accuracy_metric(), train::top_k_accuracy_metric(5),
//                            train::f1_metric(train::Average::macro), train::auroc_metric()});
//   learner_builder.metrics({train::rmse_metric(), train::mae_metric(), train::r2_metric()});
//
// Conventions (those of scikit-learn unless said otherwise):
// - Targets below 0 (e.g. an ignore_index of -100) are skipped by every metric.
// - Predictions are the argmax of the logits (the first index on ties); with one column (binary
//   logits) the prediction is 1 when the logit is > 0, and the confusion matrix has 2 classes.
// - top-k: a sample counts when fewer than k classes score strictly higher than its target.
// - Macro averages run over the classes that occur in the targets or the predictions; a class's
//   precision (recall) is 0 when it was never predicted (never a target); F1 is 0 when P + R = 0.
//   Macro F1 is the mean of the per-class F1 scores. Micro P, R and F1 all equal the accuracy.
// - AUROC is the area under the ROC curve with ties counted half (Mann-Whitney). Scores are the
//   logits' softmax (the sigmoid for one column); with 2+ columns it is the mean over classes of
//   the one-vs-rest AUROC, over the classes that have both positive and negative samples; with 2
//   columns this equals the binary AUROC of class 1. NaN when no class qualifies.
// Regression (scikit-learn's and torchmetrics' definitions, over every sample of the epoch, never
// a mean of batch values): MSE = mean squared error over all elements, RMSE = sqrt(MSE),
// MAE = mean absolute error, R² = 1 - SS_res / SS_tot with SS_tot about the epoch's target mean;
// with K outputs per sample, R² is the mean of the K outputs' R² (multioutput="uniform_average"),
// and NaN for an output whose targets are constant.
// Multi-label: a label is predicted when sigmoid(logit) > threshold (strictly: a probability equal
// to the threshold is not). multilabel accuracy is the fraction of correct (sample, label) pairs
// (1 - scikit-learn's hamming_loss; the same as the mean of per-label accuracies, since every
// label has one value per sample); multilabel F1 "macro" is the mean over labels of each label's F1 (0 for a
// label never predicted nor present, as scikit-learn's zero_division=0), "micro" the F1 of the
// pooled counts.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ember/train/output.hpp"

namespace ember::train {

// Quiet NaN: what a metric returns when it has no value.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// How precision, recall and F1 combine classes: micro pools the counts (equal to the accuracy), macro averages
// the per-class scores.
enum class Average { micro, macro };

// ---- functions ----
// logits: [n, num_classes] row-major; num_classes == 1 means binary logits.
std::vector<int64_t> predictions(std::span<const float> logits, int64_t num_classes);
// Fraction of samples whose predicted class is the target (targets < 0 skipped; NaN when none is left).
// Throws ember::Error for mismatched sizes or a target >= num_classes.
double accuracy(std::span<const float> logits, std::span<const int64_t> targets, int64_t num_classes);
// Fraction of samples whose target is among the k best-scoring classes (k >= 1), like
// torchmetrics' top_k accuracy; throws as accuracy().
double top_k_accuracy(std::span<const float> logits, std::span<const int64_t> targets, int64_t num_classes, int64_t k);
// Binary AUROC of scores against labels (nonzero = positive); NaN without both kinds of labels.
double binary_auroc(std::span<const double> scores, std::span<const uint8_t> labels);
// AUROC of the logits (binary, or the one-vs-rest macro mean; see the header comment); NaN when no class has
// both positive and negative samples.
double auroc(std::span<const float> logits, std::span<const int64_t> targets, int64_t num_classes);
// Row-wise softmax (sigmoid for one column), in double.
std::vector<double> probabilities(std::span<const float> logits, int64_t num_classes);

// counts[target][prediction].
// A confusion matrix that grows to fit the largest class seen.
class ConfusionMatrix {
 public:
  // An empty num_classes x num_classes matrix; throws ember::Error when num_classes < 0.
  explicit ConfusionMatrix(int64_t num_classes = 0);
  int64_t num_classes() const { return n_; }  // Number of classes (rows and columns).
  // Counts one sample; a target < 0 is skipped, a negative prediction throws ember::Error.
  void add(int64_t target, int64_t prediction);
  // Counts each row of logits as its argmax prediction against its target.
  void add(std::span<const float> logits, std::span<const int64_t> targets, int64_t num_classes);
  // Samples of class `target` predicted as `prediction` (both must be < num_classes()).
  int64_t count(int64_t target, int64_t prediction) const { return counts_[size_t(target * n_ + prediction)]; }
  int64_t total() const;                                          // Number of samples counted.
  void clear();                                                   // Zeroes every count (the size stays).
  const std::vector<int64_t>& counts() const { return counts_; }  // row-major [target][prediction]
  // Replaces the matrix (row-major counts of num_classes^2 entries, else ember::Error).
  void set_counts(int64_t num_classes, std::vector<int64_t> counts);

  double accuracy() const;                 // Fraction of samples on the diagonal; NaN when empty.
  double precision(Average avg) const;     // Precision, micro or macro averaged (see the header comment).
  double recall(Average avg) const;        // Recall, micro or macro averaged.
  double f1(Average avg) const;            // F1, micro or macro averaged.
  double precision_of(int64_t cls) const;  // Precision of one class; 0 when it was never predicted.
  double recall_of(int64_t cls) const;     // Recall of one class; 0 when it is never a target.
  double f1_of(int64_t cls) const;         // F1 of one class; 0 when precision + recall is 0.
  // A text table with row/column labels (targets down, predictions across).
  std::string str(const std::vector<std::string>& class_names = {}) const;

 private:
  bool present(int64_t cls) const;
  void grow(int64_t num_classes);
  int64_t n_ = 0;
  std::vector<int64_t> counts_;
};

// ---- accumulators ----

// A metric's mutable state as flat named arrays (saved in checkpoints).
using MetricState = std::map<std::string, std::vector<double>>;

// An accumulator of a metric over an epoch, fed the host outputs of every batch (like a torchmetrics.Metric).
// The Learner clones one per split and calls it from the training thread only.
class Metric {
 public:
  virtual ~Metric() = default;
  // The name used in logs, plots and metric references ("valid/<name>").
  virtual std::string name() const = 0;
  // Whether larger values are better (early stopping and best checkpoints use it).
  virtual bool higher_is_better() const = 0;
  virtual void reset() = 0;  // Forgets every batch added so far.
  // Adds one batch; returns the batch's own value when it is cheap to have one per step.
  virtual std::optional<double> update(const BatchOutputs& batch) = 0;
  // The value over every batch since reset (NaN when there is none).
  virtual double value() const = 0;
  virtual MetricState state() const = 0;                  // The accumulated state, saved in checkpoints.
  virtual void load_state(const MetricState& state) = 0;  // Restores a state() (resuming an interrupted epoch).
  // A fresh metric of the same kind and settings (the Learner keeps one per split).
  virtual std::unique_ptr<Metric> clone() const = 0;
};
// Shared, immutable metric prototype; the Learner clone()s it for each split.
using MetricPtr = std::shared_ptr<const Metric>;

// Mean loss over samples (weighted by batch size).
MetricPtr loss_metric();
MetricPtr accuracy_metric();                               // "accuracy": argmax prediction equals the target
MetricPtr top_k_accuracy_metric(int64_t k);                // name "top<k>_accuracy"
MetricPtr precision_metric(Average avg = Average::macro);  // "precision_macro", "precision_micro"
MetricPtr recall_metric(Average avg = Average::macro);     // "recall_macro", "recall_micro"
MetricPtr f1_metric(Average avg = Average::macro);         // "f1_macro", "f1_micro"
MetricPtr auroc_metric();                                  // epoch value only (no per-step value)

// Regression.
MetricPtr mse_metric();   // "mse"
MetricPtr rmse_metric();  // "rmse"
MetricPtr mae_metric();   // "mae"
MetricPtr r2_metric();    // "r2"
// Multi-label.
MetricPtr multilabel_accuracy_metric(double threshold = 0.5);                       // "label_accuracy"
MetricPtr multilabel_f1_metric(Average avg = Average::macro, double threshold = 0.5);  // "label_f1_macro"

// Regression functions over flat arrays of equal length (one output per sample; r2 with
// num_outputs columns averages the columns' R²).
double mean_squared_error(std::span<const double> pred, std::span<const double> target);
// Mean absolute error; throws ember::Error for arrays of different lengths.
double mean_absolute_error(std::span<const double> pred, std::span<const double> target);
// R² (scikit-learn's r2_score, multioutput="uniform_average"); targets hold num_outputs values per sample.
// Throws ember::Error for mismatched lengths.
double r2_score(std::span<const double> pred, std::span<const double> target, int64_t num_outputs = 1);

// Whether a metric of this name improves downward (loss, error, time, wait, memory) when there is
// no Metric object to ask.
bool lower_is_better_by_name(const std::string& name);

}  // namespace ember::train
