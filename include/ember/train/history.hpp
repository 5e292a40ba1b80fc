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

enum class Split { train, valid };
std::string_view split_name(Split s);

using NamedValues = std::vector<std::pair<std::string, double>>;

// "valid/accuracy" -> (valid, "accuracy"); a name without a split means valid.
struct MetricRef {
  Split split = Split::valid;
  std::string name;
  static MetricRef parse(std::string_view ref);
  std::string str() const;
};

class MetricHistory {
 public:
  struct EpochRecord {
    int64_t epoch = 0;  // 0-based
    std::map<std::string, double> train, valid;
    const std::map<std::string, double>& of(Split s) const { return s == Split::train ? train : valid; }
  };

  // One train iteration (a batch): its 0-based index, its position in epochs (epoch + fraction of
  // the epoch done), and its values. Names not given are NaN for this iteration.
  void add_step(int64_t iteration, double epoch_position, const NamedValues& values);
  // The values of an epoch's split (merged with what that epoch already has).
  void add_epoch(int64_t epoch, Split split, const NamedValues& values);

  size_t num_steps() const { return iterations_.size(); }
  const std::vector<int64_t>& step_iterations() const { return iterations_; }
  const std::vector<double>& step_positions() const { return positions_; }
  // Values of `name` aligned with step_iterations() (NaN where absent); empty for unknown names.
  std::vector<double> step_series(const std::string& name) const;
  std::vector<std::string> step_names() const;

  const std::vector<EpochRecord>& epochs() const { return epochs_; }
  std::optional<double> epoch_value(int64_t epoch, Split split, const std::string& name) const;
  // One value per recorded epoch (NaN where absent).
  std::vector<double> epoch_series(Split split, const std::string& name) const;
  std::vector<std::string> epoch_names() const;
  // Every metric name of steps and epochs, in first-seen order with "loss" first.
  std::vector<std::string> all_names() const;

  // Drops steps with iteration >= `iteration` and epochs >= `epoch`.
  void truncate(int64_t iteration, int64_t epoch);
  bool operator==(const MetricHistory& o) const;

  // JSON: {"steps": {"iteration": [...], "position": [...], "values": {"loss": [...]}}, "epochs": [...]}
  // (NaN as null). from_json throws ember::Error naming `source` on malformed input.
  std::string to_json() const;
  static MetricHistory from_json(std::string_view json, std::string_view source = "<history>");

 private:
  std::vector<int64_t> iterations_;
  std::vector<double> positions_;
  std::vector<std::string> step_order_;
  std::map<std::string, std::vector<double>> columns_;
  std::vector<EpochRecord> epochs_;
};

}  // namespace ember::train
