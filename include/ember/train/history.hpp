// MetricHistory: every value the Learner measured, per training iteration and per epoch and split.
// It is saved in checkpoints (so a resumed run continues the same history), drawn by the
// renderers and the SVG plots, and written as JSON lines.
//
//   # auto learner = train::LearnerBuilder(given<Model>(), &classify_train).build();
//   const train::MetricHistory& h = learner.history();
//   std::vector<double> loss = h.step_series("loss");          // one value per train iteration
//   std::optional<double> acc = h.epoch_value(2, train::Split::valid, "accuracy");
//   std::vector<double> curve = h.epoch_series(train::Split::valid, "accuracy");
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::train {

// The two phases of an epoch: training and validation.
enum class Split { train, valid };
std::string_view split_name(Split s);  // "train" or "valid"

// (name, value) pairs in display order.
using NamedValues = std::vector<std::pair<std::string, double>>;

// "valid/accuracy" -> (valid, "accuracy"); a name without a split means valid.
struct MetricRef {
  Split split = Split::valid;  // the split; valid when the reference names none
  std::string name;            // the metric's name, e.g. "accuracy"
  // Parses "split/name" or "name"; throws ember::Error for an unknown split or an empty name.
  static MetricRef parse(std::string_view ref);
  std::string str() const;  // "split/name", e.g. "valid/accuracy"
};

// Every value measured during a run: one row per train iteration and one record per epoch and split
// (see the header comment).
class MetricHistory {
 public:
  // The values of one epoch, by metric name, for each split.
  struct EpochRecord {
    int64_t epoch = 0;  // 0-based
    // train: the train split's values by name.
    std::map<std::string, double> train, valid;  // valid: the valid split's values by name
    // The values of split `s`.
    const std::map<std::string, double>& of(Split s) const { return s == Split::train ? train : valid; }
  };

  // One train iteration (a batch): its 0-based index, its position in epochs (epoch + fraction of
  // the epoch done), and its values. Names not given are NaN for this iteration.
  void add_step(int64_t iteration, double epoch_position, const NamedValues& values);
  // The values of an epoch's split (merged with what that epoch already has).
  void add_epoch(int64_t epoch, Split split, const NamedValues& values);

  size_t num_steps() const { return iterations_.size(); }  // Number of recorded train iterations.
  // The 0-based iteration index of each recorded step.
  const std::vector<int64_t>& step_iterations() const { return iterations_; }
  // The epoch position of each recorded step (epoch + fraction done).
  const std::vector<double>& step_positions() const { return positions_; }
  // Values of `name` aligned with step_iterations() (NaN where absent); empty for unknown names.
  std::vector<double> step_series(const std::string& name) const;
  std::vector<std::string> step_names() const;  // Names with step values, in first-seen order.

  const std::vector<EpochRecord>& epochs() const { return epochs_; }  // The epoch records in epoch order.
  // The value of `name` for an epoch's split; std::nullopt when not recorded.
  std::optional<double> epoch_value(int64_t epoch, Split split, const std::string& name) const;
  // One value per recorded epoch (NaN where absent).
  std::vector<double> epoch_series(Split split, const std::string& name) const;
  std::vector<std::string> epoch_names() const;  // Names with epoch values, in first-seen order.
  // Every metric name of steps and epochs, in first-seen order with "loss" first.
  std::vector<std::string> all_names() const;

  // Drops steps with iteration >= `iteration` and epochs >= `epoch`.
  void truncate(int64_t iteration, int64_t epoch);
  bool operator==(const MetricHistory& o) const;  // Equal when every step and epoch value matches (NaN equals NaN).

  // JSON: {"steps": {"iteration": [...], "position": [...], "values": {"loss": [...]}}, "epochs": [...]}
  // (NaN as null). from_json throws ember::Error naming `source` on malformed input.
  std::string to_json() const;
  // Parses what to_json() wrote.
  static MetricHistory from_json(std::string_view json, std::string_view source = "<history>");

 private:
  std::vector<int64_t> iterations_;
  std::vector<double> positions_;
  std::vector<std::string> step_order_;
  std::map<std::string, std::vector<double>> columns_;
  std::vector<EpochRecord> epochs_;
};

}  // namespace ember::train
