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

enum class MetricMode { automatic, min, max };

struct EarlyStoppingConfig {
  std::string metric = "valid/loss";
  MetricMode mode = MetricMode::automatic;
  int64_t patience = 3;  // epochs without improvement before stopping (>= 1)
  double min_delta = 0;  // >= 0
};

class EarlyStopping {
 public:
  // `higher_is_better` resolves MetricMode::automatic.
  EarlyStopping(EarlyStoppingConfig config, bool higher_is_better);
  // Records one epoch's value; returns true when training should stop. NaN counts as no improvement.
  bool update(int64_t epoch, double value);
  bool should_stop() const { return bad_epochs_ >= config_.patience; }
  std::optional<double> best() const { return best_; }
  int64_t best_epoch() const { return best_epoch_; }
  int64_t bad_epochs() const { return bad_epochs_; }
  const EarlyStoppingConfig& config() const { return config_; }
  bool maximize() const { return maximize_; }
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
