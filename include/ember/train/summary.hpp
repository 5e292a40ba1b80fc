// FitSummary: what Learner::fit did, printed at the end of training and saved as summary.json.
//
//   # auto learner = train::LearnerBuilder(given<Model>(), &classify_train).build();
//   const train::FitSummary& s = learner.summary();
//   std::cout << s.str();                              // outcome, time, last metrics, best, checkpoints
//   if (s.interrupted) std::cout << "resume from " << s.last_checkpoint << "\n";
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ember/train/history.hpp"
#include "ember/train/metrics.hpp"

namespace ember::train {

// What Learner::fit did (Learner::summary()); also written to run_dir as summary.json and summary.txt.
struct FitSummary {
  int64_t num_epochs = 0;        // epochs the run was configured for
  int64_t epochs_completed = 0;  // epochs whose training and validation both finished
  int64_t global_step = 0;       // optimizer steps
  int64_t iterations = 0;        // train batches
  bool interrupted = false;      // Ctrl-C, the quit key, or Renderer::stop_requested
  bool early_stopped = false;    // early stopping ended the run
  std::string stop_reason;       // "completed", "interrupted by SIGINT", "early stopping: ..."
  double elapsed_s = 0;          // of this fit() call
  // last_train: the train values of the last epoch that has them, in display order.
  NamedValues last_train, last_valid;  // last_valid: the validation values of the last epoch that has them
  std::string monitor;                 // "valid/accuracy": early stopping's or best checkpoint's metric
  std::optional<double> best_value{};  // the monitored metric's best epoch value; none before any finite value
  int64_t best_epoch = -1;             // 0-based
  // last_checkpoint: the most recent checkpoint folder (empty: none).
  std::string last_checkpoint, best_checkpoint;      // best_checkpoint: the kept best-scoring checkpoint (empty: none)
  std::string run_dir;                               // where logs and plots went (empty: none)
  std::optional<ConfusionMatrix> valid_confusion{};  // of the last validation

  // A few aligned lines: outcome, time, last metrics, best, checkpoints, confusion matrix.
  std::string str() const;
  std::string to_json() const;  // The summary as a JSON object (summary.json's content).
};

}  // namespace ember::train
