// Checkpoints: directories written atomically, of which the last N and the best by a metric are kept.
// Each is a folder:
//   <dir>/checkpoint-0000000938/
//       model.safetensors       the module's state_dict (load with nn::load(model, ".../model.safetensors"))
//       optimizer.safetensors   the optimizer's state_dict
//       metrics.safetensors     the running metric accumulators of an interrupted epoch (may be empty)
//       learner.json            epoch, step, scheduler, early stopping, rng, metric history
//       checkpoint.json         step and score; written last
//
// A checkpoint is first written to <dir>/.tmp-checkpoint-...; every file is fsynced, and the
// folder is then renamed to its final name (one atomic rename), so a process killed at any
// moment leaves either the complete new checkpoint or none: a folder named checkpoint-* is always
// complete. Stale temporary folders are removed when the next Checkpointer opens the directory.
//
//   # Model model = given<Model>(); int64_t step = 938; double score = 0.91;
//   train::Checkpointer ck("runs/a/checkpoints", /*keep_last=*/2, /*keep_best=*/true, /*higher_is_better=*/true);
//   ck.save(step, score, [&](const std::string& tmp) { nn::save(model, tmp + "/model.safetensors"); });
//   std::optional<train::CheckpointInfo> last = train::latest_checkpoint("runs/a/checkpoints");
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ember::train {

// When and where the Learner writes checkpoints, and which it keeps (see the header comment).
struct CheckpointConfig {
  std::string dir{};               // empty: <run dir>/checkpoints (no checkpoints without a run dir)
  int64_t keep_last = 3;           // the most recent ones kept (>= 1)
  std::string best_metric{};       // e.g. "valid/accuracy": its best checkpoint is kept too; empty: none
  std::optional<bool> higher_is_better{};  // for best_metric; by default from the metric
  int64_t every_epochs = 1;        // after every n-th epoch's validation (0: never)
  int64_t every_steps = 0;         // also every n optimizer steps (0: never)
};

// A complete checkpoint found on disk.
struct CheckpointInfo {
  std::string path;               // the checkpoint folder
  int64_t step = 0;               // optimizer steps done when it was written
  std::optional<double> score{};  // the best_metric value it was saved with, if any
};

// Complete checkpoints of `dir`, by step (read-only: nothing is cleaned up).
std::vector<CheckpointInfo> list_checkpoints(const std::string& dir);
// The complete checkpoint of `dir` with the most optimizer steps; std::nullopt when there is none.
std::optional<CheckpointInfo> latest_checkpoint(const std::string& dir);
// `path` is a checkpoint folder, or a folder of checkpoints (its latest); throws when neither.
CheckpointInfo resolve_checkpoint(const std::string& path);

// Writes checkpoint folders atomically into one directory and deletes all but the last keep_last (and the best
// by score when keep_best). Throws ember::Error for an empty dir or keep_last < 1.
class Checkpointer {
 public:
  // Creates `dir` if needed and removes what interrupted writes left there.
  Checkpointer(std::string dir, int64_t keep_last, bool keep_best = false, bool higher_is_better = false);

  // Writes a checkpoint: `write` fills the temporary folder it is given; then checkpoint.json is
  // written, everything is synced and the folder renamed into place (replacing one of the same
  // step). Older checkpoints beyond keep_last, other than the best, are then deleted. Returns the
  // final path.
  std::string save(int64_t step, std::optional<double> score, const std::function<void(const std::string&)>& write);

  const std::string& dir() const { return dir_; }                              // The checkpoints directory.
  std::vector<CheckpointInfo> list() const { return list_checkpoints(dir_); }  // Its complete checkpoints, by step.
  // The checkpoint with the most steps, if any.
  std::optional<CheckpointInfo> latest() const { return latest_checkpoint(dir_); }
  // The checkpoint with the best score (higher or lower as configured; NaN scores ignored), if any.
  std::optional<CheckpointInfo> best() const;

 private:
  void prune() const;
  std::string dir_;
  int64_t keep_last_;
  bool keep_best_;
  bool higher_is_better_;
  int64_t counter_ = 0;
};

// Small files written atomically: a temporary file in the same folder, fsync, rename, fsync of the folder.
void write_file_atomic(const std::string& path, const std::string& content);
// The whole file as bytes; throws ember::Error when it cannot be opened.
std::string read_file(const std::string& path);

}  // namespace ember::train
