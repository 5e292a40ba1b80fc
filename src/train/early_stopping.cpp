// Early stopping on a metric (patience, min delta, direction).
#include "ember/train/early_stopping.hpp"

#include <cmath>

#include "ember/core/error.hpp"

namespace ember::train {

EarlyStopping::EarlyStopping(EarlyStoppingConfig config, bool higher_is_better)
    : config_(std::move(config)),
      maximize_(config_.mode == MetricMode::automatic ? higher_is_better : config_.mode == MetricMode::max) {
  EMBER_CHECK(config_.patience >= 1, "early stopping: patience must be >= 1, got ", config_.patience);
  EMBER_CHECK(config_.min_delta >= 0, "early stopping: min_delta must be >= 0, got ", config_.min_delta);
}

bool EarlyStopping::update(int64_t epoch, double value) {
  bool improved = !std::isnan(value) &&
                  (!best_ || (maximize_ ? value > *best_ + config_.min_delta : value < *best_ - config_.min_delta));
  if (improved) {
    best_ = value;
    best_epoch_ = epoch;
    bad_epochs_ = 0;
  } else {
    ++bad_epochs_;
  }
  return should_stop();
}

void EarlyStopping::restore(std::optional<double> best, int64_t best_epoch, int64_t bad_epochs) {
  best_ = best;
  best_epoch_ = best_epoch;
  bad_epochs_ = bad_epochs;
}

}  // namespace ember::train
