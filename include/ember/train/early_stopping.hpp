// Early stopping: stop training when a metric has not improved for `patience` epochs.
//
//   # auto learner_builder = train::LearnerBuilder(given<Model>(), &classify_train);
//   learner_builder.early_stopping({.metric = "valid/loss", .patience = 3, .min_delta = 1e-3});
//
// An epoch improves when its value beats the best so far by more than min_delta (below it for
// `min`, above it for `max`); `automatic` takes the direction from the metric (loss: min).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ember::train {

// The direction of improvement: automatic (from the metric, e.g. lower for a loss), lower (min) or higher (max).
enum class MetricMode { automatic, min, max };

// Settings of early stopping (like PyTorch Lightning's EarlyStopping: monitor, mode, patience, min_delta).
struct EarlyStoppingConfig {
  std::string metric = "valid/loss";        // "split/name" of the monitored metric
  MetricMode mode = MetricMode::automatic;  // the direction of improvement
  int64_t patience = 3;                     // epochs without improvement before stopping (>= 1)
  double min_delta = 0;                     // >= 0
};

// Tracks a metric epoch by epoch and says when it has stopped improving. Throws ember::Error for patience < 1
// or min_delta < 0.
class EarlyStopping {
 public:
  // `higher_is_better` resolves MetricMode::automatic.
  EarlyStopping(EarlyStoppingConfig config, bool higher_is_better);
  // Records one epoch's value; returns true when training should stop. NaN counts as no improvement.
  bool update(int64_t epoch, double value);
  // True once patience epochs in a row did not improve.
  bool should_stop() const { return bad_epochs_ >= config_.patience; }
  std::optional<double> best() const { return best_; }  // The best value so far; std::nullopt before any non-NaN value.
  int64_t best_epoch() const { return best_epoch_; }    // The epoch of best(); -1 before any.
  int64_t bad_epochs() const { return bad_epochs_; }    // Epochs since the last improvement.
  const EarlyStoppingConfig& config() const { return config_; }  // The settings it was made with.
  bool maximize() const { return maximize_; }                    // True when higher values are better.
  // For checkpoints.
  void restore(std::optional<double> best, int64_t best_epoch, int64_t bad_epochs);

 private:
  EarlyStoppingConfig config_;
  bool maximize_;
  std::optional<double> best_;
  int64_t best_epoch_ = -1;
  int64_t bad_epochs_ = 0;
};

}  // namespace ember::train
