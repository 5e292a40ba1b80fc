// Renderers show training progress. The Learner calls them on its own thread, once per batch and
// once per epoch; a renderer keeps its own copy of what it draws and throttles itself.
//
// Built in: a terminal dashboard (ncurses; live plots, arrow keys, progress bars, 'q' to stop), a
// plain renderer (for logs and pipes: one line per epoch, or with verbosity 1 a progress line per
// interval, a line per split and checkpoint messages), and none. make_renderer(automatic)
// picks the dashboard when stdout is a terminal and TERM is usable, else the plain one; the
// environment variable EMBER_RENDERER=dashboard|plain|none overrides the automatic choice.
//
// A renderer of your own:
//
//   struct MyRenderer : train::Renderer {
//     void update(const train::ProgressView& p) override {
//       if (p.split == train::Split::train && p.batch % 100 == 0) std::cout << p.batch << "\n";
//     }
//     void epoch_end(const train::EpochView& e) override { std::cout << "epoch " << e.epoch << "\n"; }
//   };
//   # auto builder = train::LearnerBuilder(given<Model>(), &classify_train);
//   builder.renderer(std::make_shared<MyRenderer>());
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "ember/train/history.hpp"
#include "ember/train/summary.hpp"

namespace ember::train {

// What a renderer learns about a run when it starts (Renderer::start).
struct FitInfo {
  int64_t num_epochs = 0;            // epochs the run trains in all
  int64_t start_epoch = 0;           // > 0 when resumed
  int64_t start_iteration = 0;       // train batches a resumed run already did
  std::string device;                // the device's name, e.g. "cpu"
  bool show_device_memory = false;   // a non-CPU device: gpu_memory_mb is reported
  std::vector<std::string> metrics;  // metric names in display order ("loss" first)
  std::string run_dir;               // where logs and plots go; empty: none
  std::string resumed_from;          // the checkpoint, when resumed
  bool has_validation = false;       // a valid split follows each train split
};

// The state of the run after one batch (Renderer::update).
struct ProgressView {
  Split split = Split::train;  // the split the batch belongs to
  int64_t epoch = 0;           // 0-based
  int64_t num_epochs = 0;      // epochs the run trains in all
  int64_t batch = 0;           // batches of this split done in this epoch (1-based after the first)
  int64_t num_batches = -1;    // of this split per epoch; -1 when the loader does not say
  int64_t iteration = 0;       // train batches done in the whole run
  int64_t global_step = 0;     // optimizer steps done in the whole run
  double epoch_position = 0;   // epoch + fraction of the epoch done (train)
  double elapsed_s = 0;        // run time so far in seconds, including the time before a resume
  double epoch_eta_s = -1;     // time left in this split's epoch; < 0: unknown
  double total_eta_s = -1;     // time left in the run; < 0: unknown
  NamedValues step_values;     // this batch: metric values, and for train lr, iter_per_s, cpu, memory, ...
  NamedValues running;         // the split's values over the epoch so far (metrics with per-batch values)
  bool stopping = false;       // a stop was requested; the run ends after this step
};

// One split's values at the end of an epoch (Renderer::epoch_end; one call for train, one for valid).
struct EpochView {
  int64_t epoch = 0;           // 0-based
  int64_t num_epochs = 0;      // epochs the run trains in all
  Split split = Split::train;  // the split the values are for
  NamedValues values;          // loss, metrics and system values over the split's epoch, plus "time_s"
  double seconds = 0;          // time the split took, in seconds
};

// Shows training progress; the Learner calls every method on its training thread (see the header comment).
class Renderer {
 public:
  virtual ~Renderer() = default;
  // Before the first batch; `history` holds what a resumed run already did.
  virtual void start(const FitInfo& /*info*/, const MetricHistory& /*history*/) {}
  // After every batch, train and valid; keep it cheap (throttle drawing).
  virtual void update(const ProgressView& progress) = 0;
  virtual void epoch_end(const EpochView& /*epoch*/) {}  // After each split of each epoch.
  // Checkpoints written, early stopping, interruptions.
  virtual void message(const std::string& /*text*/) {}
  // After the last step (the terminal is restored by then); the built-in ones print the summary.
  virtual void finish(const FitSummary& /*summary*/) {}
  // Polled after every batch: true stops the run like Ctrl-C (the dashboard's quit key).
  virtual bool stop_requested() { return false; }
};

// Which built-in renderer make_renderer() builds: automatic (dashboard on a terminal, else plain), the ncurses
// dashboard, plain text lines, or none.
enum class RendererKind { automatic, dashboard, plain, none };

// Settings of the plain renderer.
struct PlainRendererOptions {
  // 0: one line per epoch (train and valid values, rates, cpu, time) and stop messages;
  // 1: also progress lines (below), a line per split and checkpoint messages.
  int verbosity = 0;
  double interval_s = 10;      // verbosity 1: a progress line at most this often (and at each epoch's first batch)
  int64_t interval_steps = 0;  // when > 0: a line every n batches instead
  bool print_summary = true;   // print the FitSummary when the run finishes
};
// A renderer that writes plain text lines to `out` (suited to logs and pipes).
std::shared_ptr<Renderer> make_plain_renderer(std::ostream& out, PlainRendererOptions options = {});

// Settings of the ncurses dashboard renderer.
struct DashboardOptions {
  int64_t recent_steps = 200;  // the "recent" view: the last n iterations
  double refresh_s = 0.1;      // redraws at most this often
  bool print_summary = true;   // after the screen is restored
};
// The full-screen ncurses dashboard (live plots, progress bars, 'q' to stop); needs a terminal.
std::shared_ptr<Renderer> make_dashboard_renderer(DashboardOptions options = {});

// Whether stdout is a terminal the dashboard can use (isatty, and TERM set and not "dumb").
bool stdout_is_terminal();
// automatic: EMBER_RENDERER if set, else the dashboard on a terminal and the plain renderer
// (to stdout) otherwise.
// `verbosity` is the plain renderer's (PlainRendererOptions::verbosity).
std::shared_ptr<Renderer> make_renderer(RendererKind kind = RendererKind::automatic, int verbosity = 0);
RendererKind parse_renderer_kind(const std::string& name);  // "auto", "dashboard", "plain", "none"; else ember::Error

// Display helpers for renderers: "0.4213", "1.00e-03" (lr), "12.3%" (data_wait), "412 MB", "01:02:03".
std::string format_metric(const std::string& name, double value);
// "mm:ss", or "h:mm:ss" from an hour on; "--:--" for a negative or non-finite time.
std::string format_duration(double seconds);
// Short display names: "iter_per_s" -> "it/s", "cpu_percent" -> "cpu", ...
std::string display_name(const std::string& name);

}  // namespace ember::train
