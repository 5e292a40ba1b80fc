// Renderer selection, display helpers, the plain renderer, and the fit summary's text forms.
#include "ember/train/renderer.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "ember/core/error.hpp"
#include "json_util.hpp"

namespace ember::train {

// ---- display helpers ----

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  auto s = static_cast<long long>(seconds + 0.5);
  char buf[48];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld", s / 60, s % 60);
  return buf;
}

std::string format_metric(const std::string& name, double v) {
  if (std::isnan(v)) return "-";
  char buf[64];
  if (name == "lr")
    std::snprintf(buf, sizeof buf, "%.2e", v);
  else if (name == "loss_scale")  // a power of two: 65536, 0.5
    std::snprintf(buf, sizeof buf, "%.6g", v);
  else if (name == "data_wait")
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * v);
  else if (name == "cpu_percent")
    std::snprintf(buf, sizeof buf, "%.0f%%", v);
  else if (name.size() > 3 && name.compare(name.size() - 3, 3, "_mb") == 0)
    std::snprintf(buf, sizeof buf, "%.0f MB", v);
  else if (name == "eta_s" || name == "time_s")
    return format_duration(v);
  else if (name == "iter_per_s" || name == "samples_per_s")
    std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.1f", v);
  else if (std::fabs(v) >= 1e5 || (v != 0 && std::fabs(v) < 1e-3))
    std::snprintf(buf, sizeof buf, "%.3e", v);
  else
    std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

std::string display_name(const std::string& name) {
  if (name == "iter_per_s") return "it/s";
  if (name == "samples_per_s") return "samples/s";
  if (name == "cpu_percent") return "cpu";
  if (name == "memory_mb") return "mem";
  if (name == "gpu_memory_mb") return "gpu mem";
  if (name == "data_wait") return "data wait";
  if (name == "time_s") return "time";
  if (name == "loss_scale") return "loss scale";
  return name;
}

bool stdout_is_terminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDOUT_FILENO) && ::isatty(STDIN_FILENO) && term && *term && std::string(term) != "dumb";
}

RendererKind parse_renderer_kind(const std::string& name) {
  if (name == "auto" || name == "automatic") return RendererKind::automatic;
  if (name == "dashboard" || name == "tui") return RendererKind::dashboard;
  if (name == "plain") return RendererKind::plain;
  if (name == "none") return RendererKind::none;
  EMBER_FAIL("renderer: unknown kind '", name, "' (expected auto, dashboard, plain or none)");
}

namespace {
class NullRenderer final : public Renderer {
 public:
  void update(const ProgressView&) override {}
};
}  // namespace

std::shared_ptr<Renderer> make_renderer(RendererKind kind, int verbosity) {
  if (kind == RendererKind::automatic) {
    const char* env = std::getenv("EMBER_RENDERER");
    if (env && *env) kind = parse_renderer_kind(env);
  }
  if (kind == RendererKind::automatic) kind = stdout_is_terminal() ? RendererKind::dashboard : RendererKind::plain;
  switch (kind) {
    case RendererKind::dashboard: return make_dashboard_renderer();
    case RendererKind::plain: {
      PlainRendererOptions o;
      o.verbosity = verbosity;
      return make_plain_renderer(std::cout, o);
    }
    default: return std::make_shared<NullRenderer>();
  }
}

// ---- plain renderer ----
namespace {

std::string join_values(const NamedValues& values, bool skip_system = false) {
  std::string out;
  for (const auto& [name, v] : values) {
    if (skip_system && (name == "lr" || name == "iter_per_s" || name == "cpu_percent" || name == "memory_mb" ||
                        name == "gpu_memory_mb" || name == "data_wait" || name == "eta_s" || name == "time_s" ||
                        name == "samples_per_s"))
      continue;
    if (std::isnan(v)) continue;
    if (!out.empty()) out += "  ";
    out += display_name(name) + " " + format_metric(name, v);
  }
  return out;
}

class PlainRenderer final : public Renderer {
 public:
  PlainRenderer(std::ostream& out, PlainRendererOptions o) : out_(out), o_(o) {}

  void start(const FitInfo& info, const MetricHistory&) override {
    out_ << "training " << info.num_epochs << " epoch" << (info.num_epochs == 1 ? "" : "s") << " on "
         << info.device;
    if (!info.resumed_from.empty()) out_ << ", resumed from " << info.resumed_from << " (epoch " << info.start_epoch + 1
                                         << ", iteration " << info.start_iteration << ")";
    if (!info.run_dir.empty()) out_ << ", logs in " << info.run_dir;
    out_ << std::endl;
    has_valid_ = info.has_validation;
  }

  void update(const ProgressView& p) override {
    if (o_.verbosity < 1) {
      if (p.stopping && !stopping_shown_) out_ << "stopping after this step" << std::endl;
      stopping_shown_ |= p.stopping;
      return;
    }
    auto now = std::chrono::steady_clock::now();
    bool first = p.batch <= 1 || split_ != p.split;
    bool due = o_.interval_steps > 0 ? p.batch % o_.interval_steps == 0
                                     : std::chrono::duration<double>(now - last_).count() >= o_.interval_s;
    split_ = p.split;
    if (!(first || due || p.stopping)) return;
    last_ = now;
    std::ostringstream line;
    line << "epoch " << p.epoch + 1 << "/" << p.num_epochs << " " << split_name(p.split) << " " << p.batch;
    if (p.num_batches > 0) line << "/" << p.num_batches << " (" << (100 * p.batch / p.num_batches) << "%)";
    std::string running = join_values(p.running, true);
    if (!running.empty()) line << "  " << running;
    if (p.split == Split::train)
      for (const auto& [name, v] : p.step_values)
        if ((name == "lr" || name == "iter_per_s" || name == "data_wait" || name == "cpu_percent" ||
             name == "memory_mb" || name == "gpu_memory_mb") && !std::isnan(v))
          line << "  " << display_name(name) << " " << format_metric(name, v);
    if (p.total_eta_s >= 0) line << "  eta " << format_duration(p.total_eta_s);
    if (p.stopping) line << "  (stopping)";
    out_ << line.str() << std::endl;
  }

  void epoch_end(const EpochView& e) override {
    if (o_.verbosity < 1) {  // one line: train values, then valid values, then rates and time
      if (e.split == Split::train) {
        train_ = e;
        if (has_valid_) return;
      }
      std::ostringstream line;
      line << "epoch " << e.epoch + 1 << "/" << e.num_epochs;
      double secs = 0;
      NamedValues rates;
      for (const EpochView* v : {static_cast<const EpochView*>(&train_), e.split == Split::valid ? &e : nullptr}) {
        if (!v || v->epoch != e.epoch) continue;
        std::string vals = join_values(v->values, true);
        line << "  " << split_name(v->split) << " " << (vals.empty() ? "-" : vals);
        secs += v->seconds;
      }
      if (train_.epoch == e.epoch)
        for (const auto& [name, v] : train_.values)
          if (name == "lr" || name == "samples_per_s" || name == "cpu_percent") rates.emplace_back(name, v);
      std::string r = join_values(rates);
      if (!r.empty()) line << "  " << r;
      line << "  (" << format_duration(secs) << ")";
      out_ << line.str() << std::endl;
      return;
    }
    out_ << "epoch " << e.epoch + 1 << "/" << e.num_epochs << " " << split_name(e.split) << " done in "
         << format_duration(e.seconds) << ": " << join_values(e.values) << std::endl;
  }

  void message(const std::string& text) override {
    if (o_.verbosity < 1 && text.rfind("checkpoint ", 0) == 0) return;  // listed in the summary
    out_ << text << std::endl;
  }

  void finish(const FitSummary& s) override {
    if (o_.print_summary) out_ << s.str() << std::flush;
  }

 private:
  std::ostream& out_;
  PlainRendererOptions o_;
  Split split_ = Split::valid;
  std::chrono::steady_clock::time_point last_{};
  bool has_valid_ = false, stopping_shown_ = false;
  EpochView train_ = [] {
    EpochView v;
    v.epoch = -1;
    return v;
  }();
};

}  // namespace

std::shared_ptr<Renderer> make_plain_renderer(std::ostream& out, PlainRendererOptions options) {
  return std::make_shared<PlainRenderer>(out, options);
}

// ---- FitSummary ----

std::string FitSummary::str() const {
  std::ostringstream os;
  os << "training " << stop_reason << ": " << epochs_completed << "/" << num_epochs << " epochs, " << global_step
     << " steps (" << iterations << " iterations) in " << format_duration(elapsed_s) << "\n";
  if (!last_train.empty()) os << "  train  " << join_values(last_train) << "\n";
  if (!last_valid.empty()) os << "  valid  " << join_values(last_valid) << "\n";
  if (best_value)
    os << "  best   " << monitor << " " << format_metric(MetricRef::parse(monitor).name, *best_value) << " at epoch "
       << best_epoch + 1 << "\n";
  if (!last_checkpoint.empty()) os << "  checkpoint  " << last_checkpoint << "\n";
  if (!best_checkpoint.empty() && best_checkpoint != last_checkpoint)
    os << "  best checkpoint  " << best_checkpoint << "\n";
  if (!run_dir.empty()) os << "  logs   " << run_dir << " (steps.jsonl, epochs.jsonl, plots/*.svg)\n";
  if (valid_confusion && valid_confusion->num_classes() > 0 && valid_confusion->num_classes() <= 20) {
    os << "  confusion matrix (valid; rows: target, columns: prediction)\n";
    std::istringstream table(valid_confusion->str());
    for (std::string line; std::getline(table, line);) os << "    " << line << "\n";
  }
  return os.str();
}

std::string FitSummary::to_json() const {
  using detail::Json;
  using detail::number;
  auto values = [](const NamedValues& v) {
    Json j = Json::object();
    for (const auto& [k, x] : v) j[k] = number(x);
    return j;
  };
  Json j = {{"num_epochs", num_epochs},
            {"epochs_completed", epochs_completed},
            {"global_step", global_step},
            {"iterations", iterations},
            {"interrupted", interrupted},
            {"early_stopped", early_stopped},
            {"stop_reason", stop_reason},
            {"elapsed_s", elapsed_s},
            {"last_train", values(last_train)},
            {"last_valid", values(last_valid)},
            {"monitor", monitor},
            {"best_value", best_value ? number(*best_value) : Json(nullptr)},
            {"best_epoch", best_epoch},
            {"last_checkpoint", last_checkpoint},
            {"best_checkpoint", best_checkpoint},
            {"run_dir", run_dir}};
  if (valid_confusion)
    j["valid_confusion_matrix"] = {{"num_classes", valid_confusion->num_classes()},
                                   {"counts", valid_confusion->counts()}};
  return j.dump(2);
}

}  // namespace ember::train
