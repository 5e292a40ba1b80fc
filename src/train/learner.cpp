// FitSession: the model-independent half of the Learner (positions, metrics, timing, logs,
// checkpoints, early stopping, renderers).
#include "ember/train/learner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "ember/train/interrupt.hpp"
#include "ember/train/plot.hpp"
#include "ember/train/system_stats.hpp"
#include "json_util.hpp"

namespace fs = std::filesystem;

namespace ember::train::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kStateFormat = "ember-learner";

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void ema(double& acc, double v, double alpha) { acc = std::isfinite(acc) ? acc + alpha * (v - acc) : v; }

Json values_json(const std::map<std::string, double>& m) {
  Json j = Json::object();
  for (const auto& [k, v] : m) j[k] = number(v);
  return j;
}

}  // namespace

struct FitSession::Impl {
  LearnerConfig cfg;
  optim::LrScheduler& sched;
  Device device;
  std::function<void(const std::string&)> write_model;

  std::shared_ptr<Renderer> renderer;
  std::optional<InterruptGuard> sigint;
  std::unique_ptr<Checkpointer> ckpt;
  std::optional<MetricRef> best_ref;  // the checkpoint score
  bool best_higher = false;
  std::optional<EarlyStopping> early;
  std::optional<MetricRef> early_ref;
  MetricRef monitor;
  bool monitor_higher = false;
  std::optional<double> monitor_best;
  int64_t monitor_best_epoch = -1;

  std::vector<MetricPtr> prototypes;
  std::vector<std::unique_ptr<Metric>> metrics[2];
  ConfusionMatrix confusion[2];
  std::optional<ConfusionMatrix> last_valid_confusion;
  MetricHistory history;
  std::string resumed_from;
  bool metrics_restored = false;

  // Position.
  int64_t epoch = 0, batches_done = 0, iteration = 0, global_step = 0;
  bool train_done = false;
  int64_t train_batches = -1, valid_batches = 0, last_train_batches = -1;
  bool has_valid = false;

  // The running split.
  Split split = Split::train;
  int64_t split_batches = -1, split_done = 0, split_done_here = 0, split_samples = 0;
  Clock::time_point split_start, last_end, step_start;
  double split_wait = 0, split_cpu_start = 0;
  double split_comm_start = 0;  // data-parallel: communication_seconds() when the split began
  double lr_used = kNan;
  std::optional<double> loss_scale;  // a GradScaler's, after each optimizer step

  // Rates.
  double ema_dt[2] = {kNan, kNan}, ema_wait[2] = {kNan, kNan}, ema_samples[2] = {kNan, kNan};
  double avg_batch_s[2] = {kNan, kNan};
  ProcessMonitor proc;
  Clock::time_point last_sample{};
  ProcessSample proc_sample{};
  std::optional<MemoryStats> dev_mem;

  Clock::time_point fit_start = Clock::now();
  double elapsed_before = 0;

  bool stop_pending = false, interrupted = false, early_stopped = false, finished = false;
  std::string stop_reason = "completed";
  std::string last_checkpoint;

  std::ofstream steps_log, epochs_log;
  Clock::time_point last_flush{};

  Impl(const LearnerConfig& c, optim::LrScheduler& s, Device d, std::function<void(const std::string&)> w)
      : cfg(c), sched(s), device(std::move(d)), write_model(std::move(w)) {}

  bool higher_is_better(const std::string& name) const {
    for (const auto& m : prototypes)
      if (m->name() == name) return m->higher_is_better();
    return !lower_is_better_by_name(name);
  }

  std::string run_file(const std::string& name) const { return (fs::path(cfg.run_dir) / name).string(); }

  double elapsed() const { return elapsed_before + seconds(Clock::now() - fit_start); }

  double epoch_position() const {
    int64_t n = train_batches > 0 ? train_batches : last_train_batches;
    double frac = n > 0 ? double(batches_done) / double(n) : double(batches_done) / double(batches_done + 1);
    return double(epoch) + std::min(frac, 1.0);
  }

  // Estimated seconds left in this split's epoch and in the whole run.
  std::pair<double, double> eta() const {
    auto per = [&](Split s) {
      double v = s == split && std::isfinite(ema_dt[int(s)]) ? ema_dt[int(s)] : avg_batch_s[int(s)];
      if (!std::isfinite(v) && s == Split::valid) v = 0.5 * per_train();
      return v;
    };
    double t = per(Split::train), v = has_valid ? per(Split::valid) : 0;
    int64_t tb = train_batches > 0 ? train_batches : last_train_batches;
    if (!std::isfinite(t) || tb <= 0) return {-1, -1};
    double valid_epoch = has_valid ? double(valid_batches) * v : 0;
    double epoch_left, total;
    if (split == Split::train) {
      epoch_left = double(std::max<int64_t>(0, tb - batches_done)) * t;
      total = epoch_left + valid_epoch;
    } else {
      epoch_left = double(std::max<int64_t>(0, valid_batches - split_done)) * v;
      total = epoch_left;
    }
    total += double(std::max<int64_t>(0, cfg.num_epochs - epoch - 1)) * (double(tb) * t + valid_epoch);
    return {epoch_left, total};
  }
  double per_train() const {
    return std::isfinite(ema_dt[0]) ? ema_dt[0] : avg_batch_s[0];
  }

  void sample_resources(bool force) {
    auto now = Clock::now();
    if (!force && now - last_sample < std::chrono::milliseconds(500)) return;
    if (!cfg.system_metrics) return;
    proc_sample = proc.sample();
    dev_mem = device_memory(device);
    last_sample = now;
  }

  void add_system_values(NamedValues& v, bool step) {
    if (!cfg.system_metrics) return;
    v.emplace_back("memory_mb", double(proc_sample.rss_bytes) / (1 << 20));
    if (step) v.emplace_back("cpu_percent", proc_sample.cpu_percent);
    if (dev_mem) v.emplace_back("gpu_memory_mb", double(dev_mem->in_use) / (1 << 20));
  }

  // ---- logs ----
  static std::string step_line(int64_t it, double pos, const NamedValues& vals) {
    Json j = {{"iteration", it}, {"epoch", int64_t(std::ceil(pos) - 1 < 0 ? 0 : std::ceil(pos) - 1)}, {"position", pos}};
    for (const auto& [k, v] : vals) j[k] = number(v);
    return j.dump();
  }
  Json epoch_json(const MetricHistory::EpochRecord& r) const {
    return {{"epoch", r.epoch}, {"train", values_json(r.train)}, {"valid", values_json(r.valid)}};
  }

  void open_logs() {
    if (cfg.run_dir.empty()) return;
    fs::create_directories(cfg.run_dir);
    // The logs are rewritten from the history, so a resumed run's files continue exactly.
    std::ostringstream steps, epochs;
    const auto& its = history.step_iterations();
    const auto& pos = history.step_positions();
    auto names = history.step_names();
    std::vector<std::vector<double>> cols;
    for (const auto& n : names) cols.push_back(history.step_series(n));
    for (size_t i = 0; i < its.size(); ++i) {
      NamedValues v;
      for (size_t c = 0; c < names.size(); ++c)
        if (!std::isnan(cols[c][i])) v.emplace_back(names[c], cols[c][i]);
      steps << step_line(its[i], pos[i], v) << '\n';
    }
    for (const auto& r : history.epochs())
      if (r.epoch < epoch) epochs << epoch_json(r).dump() << '\n';
    write_file_atomic(run_file("steps.jsonl"), steps.str());
    write_file_atomic(run_file("epochs.jsonl"), epochs.str());
    steps_log.open(run_file("steps.jsonl"), std::ios::app);
    epochs_log.open(run_file("epochs.jsonl"), std::ios::app);
    EMBER_CHECK(steps_log && epochs_log, "Learner: cannot open the logs in '", cfg.run_dir, "'");
  }

  void flush_logs() {
    if (steps_log.is_open()) steps_log.flush();
    if (epochs_log.is_open()) epochs_log.flush();
    last_flush = Clock::now();
  }

  // ---- checkpoints ----
  Json state_json(bool metrics_in_progress) const {
    Json sched_state = Json::object();
    for (const auto& [k, v] : sched.state()) sched_state[k] = number(v);
    Json j = {{"format", kStateFormat},
              {"version", 1},
              {"epoch", epoch},
              {"train_done", train_done},
              {"batches_done", batches_done},
              {"iteration", iteration},
              {"global_step", global_step},
              {"num_epochs", cfg.num_epochs},
              {"grad_accumulation", cfg.grad_accumulation},
              {"seed", cfg.seed ? Json(*cfg.seed) : Json(nullptr)},
              {"rng", {{"kind", "device reseeded with splitmix64(seed ^ splitmix64(iteration)) per train batch"},
                       {"iteration", iteration}}},
              {"scheduler", {{"name", std::string(sched.name())}, {"lr", sched.lr()}, {"state", sched_state}}},
              {"monitor", {{"metric", monitor.str()},
                           {"best", monitor_best ? number(*monitor_best) : Json(nullptr)},
                           {"best_epoch", monitor_best_epoch}}},
              {"elapsed_s", elapsed()},
              {"avg_batch_s", {number(avg_batch_s[0]), number(avg_batch_s[1])}},
              {"train_batches", train_batches > 0 ? train_batches : last_train_batches},
              {"metrics_in_progress", metrics_in_progress},
              {"history", history_to_json(history)}};
    if (early)
      j["early_stopping"] = {{"metric", early->config().metric},
                             {"best", early->best() ? number(*early->best()) : Json(nullptr)},
                             {"best_epoch", early->best_epoch()},
                             {"bad_epochs", early->bad_epochs()}};
    if (last_valid_confusion)
      j["valid_confusion"] = {{"num_classes", last_valid_confusion->num_classes()},
                              {"counts", last_valid_confusion->counts()}};
    return j;
  }

  nn::NamedTensors metric_tensors() const {
    nn::NamedTensors out;
    auto add = [&](const std::string& key, const std::vector<double>& v) {
      out.emplace_back(key, DynTensor::from_vector<double>(v, Shape{int64_t(v.size())}, Device::cpu()));
    };
    for (const auto& m : metrics[0])
      for (const auto& [k, v] : m->state()) add("train." + m->name() + "." + k, v);
    const ConfusionMatrix& cm = confusion[0];
    add("train.__confusion.num_classes", {double(cm.num_classes())});
    add("train.__confusion.counts", std::vector<double>(cm.counts().begin(), cm.counts().end()));
    return out;
  }

  void load_metric_tensors(const std::string& path) {
    std::map<std::string, MetricState> states;
    for (auto& [key, t] : nn::read_tensors(path, Device::cpu())) {
      auto dot1 = key.find('.'), dot2 = key.rfind('.');
      if (key.rfind("train.", 0) != 0 || dot2 <= dot1) continue;
      states[key.substr(dot1 + 1, dot2 - dot1 - 1)][key.substr(dot2 + 1)] =
          t.numel() ? t.cast(DType::f64).to_vector<double>() : std::vector<double>{};
    }
    for (auto& m : metrics[0]) {
      auto it = states.find(m->name());
      EMBER_CHECK(it != states.end(), "resume: ", path, " has no state for metric '", m->name(),
                  "' (was the checkpoint written with other metrics?)");
      m->load_state(it->second);
    }
    if (auto it = states.find("__confusion"); it != states.end()) {
      const auto& counts = it->second["counts"];
      auto n = it->second["num_classes"];
      if (!n.empty()) confusion[0].set_counts(int64_t(n[0]), std::vector<int64_t>(counts.begin(), counts.end()));
    }
    metrics_restored = true;
  }

  void write_checkpoint(std::optional<double> score) {
    if (!ckpt) return;
    bool in_progress = !train_done && batches_done > 0;
    std::string path = ckpt->save(global_step, score, [&](const std::string& dir) {
      write_model(dir);
      nn::write_tensors(dir + "/metrics.safetensors", in_progress ? metric_tensors() : nn::NamedTensors{});
      std::ofstream(dir + "/learner.json") << state_json(in_progress).dump() << '\n';
    });
    last_checkpoint = path;
    flush_logs();
    renderer->message("checkpoint " + path);
  }
};

FitSession::FitSession(const LearnerConfig& config, optim::LrScheduler& scheduler, Device device,
                       std::function<void(const std::string&)> write_model)
    : impl_(std::make_unique<Impl>(config, scheduler, std::move(device), std::move(write_model))) {
  Impl& s = *impl_;
  s.prototypes.push_back(loss_metric());
  for (auto& m : s.cfg.metrics) {
    EMBER_CHECK(m, "Learner: a null metric");
    bool dup = false;
    for (const auto& p : s.prototypes) dup |= p->name() == m->name();
    if (!dup) s.prototypes.push_back(m);
  }
  for (int sp = 0; sp < 2; ++sp)
    for (const auto& p : s.prototypes) s.metrics[sp].push_back(p->clone());

  s.renderer = s.cfg.renderer ? s.cfg.renderer : make_renderer(s.cfg.renderer_kind, s.cfg.verbosity);
  if (s.cfg.handle_sigint) s.sigint.emplace();

  if (s.cfg.checkpoints) {
    CheckpointConfig c = *s.cfg.checkpoints;
    if (c.dir.empty()) {
      EMBER_CHECK(!s.cfg.run_dir.empty(), "Learner: checkpoints need a directory (CheckpointConfig::dir) or a run_dir");
      c.dir = s.run_file("checkpoints");
    }
    if (!c.best_metric.empty()) {
      s.best_ref = MetricRef::parse(c.best_metric);
      s.best_higher = c.higher_is_better.value_or(s.higher_is_better(s.best_ref->name));
    }
    s.ckpt = std::make_unique<Checkpointer>(c.dir, c.keep_last, s.best_ref.has_value(), s.best_higher);
    s.cfg.checkpoints = c;
  }
  if (s.cfg.early_stopping) {
    s.early_ref = MetricRef::parse(s.cfg.early_stopping->metric);
    s.early.emplace(*s.cfg.early_stopping, s.higher_is_better(s.early_ref->name));
  }
  s.monitor = s.early_ref ? *s.early_ref : s.best_ref ? *s.best_ref : MetricRef{Split::valid, "loss"};
  s.monitor_higher = s.early ? s.early->maximize() : s.best_ref ? s.best_higher : false;
}

FitSession::~FitSession() {
  if (impl_ && !impl_->finished) {
    try {
      finish("the fit ended without a summary");
    } catch (...) {
    }
  }
}

std::optional<std::string> FitSession::resume_checkpoint() const {
  const LearnerConfig& c = impl_->cfg;
  if (c.resume_from.empty()) return std::nullopt;
  if (!c.resume_required && !fs::exists(fs::path(c.resume_from) / "checkpoint.json") &&
      !latest_checkpoint(c.resume_from))
    return std::nullopt;
  return resolve_checkpoint(c.resume_from).path;
}

void FitSession::load_state(const std::string& dir) {
  Impl& s = *impl_;
  std::string file = dir + "/learner.json";
  Json j = parse_json(read_file(file), file);
  try {
    EMBER_CHECK(j.at("format") == kStateFormat, file, ": not a learner state (format ", j.at("format").dump(), ")");
    s.epoch = j.at("epoch").get<int64_t>();
    s.train_done = j.at("train_done").get<bool>();
    s.batches_done = j.at("batches_done").get<int64_t>();
    s.iteration = j.at("iteration").get<int64_t>();
    s.global_step = j.at("global_step").get<int64_t>();
    s.last_train_batches = j.value("train_batches", int64_t(-1));
    const Json& sc = j.at("scheduler");
    EMBER_CHECK(sc.at("name").get<std::string>() == s.sched.name(), file, ": the checkpoint's scheduler is ",
                sc.at("name").get<std::string>(), " but this learner has ", s.sched.name());
    optim::SchedulerState st;
    for (const auto& [k, v] : sc.at("state").items()) st[k] = to_double(v);
    s.sched.load_state(st);
    s.history = history_from_json(j.at("history"), file);
    const Json& mon = j.at("monitor");
    if (mon.at("metric").get<std::string>() == s.monitor.str() && mon.at("best").is_number()) {
      s.monitor_best = mon.at("best").get<double>();
      s.monitor_best_epoch = mon.at("best_epoch").get<int64_t>();
    }
    s.elapsed_before = j.value("elapsed_s", 0.0);
    if (j.contains("avg_batch_s"))
      for (int i = 0; i < 2; ++i) s.avg_batch_s[i] = to_double(j["avg_batch_s"][size_t(i)]);
    if (s.early && j.contains("early_stopping") && j["early_stopping"].at("metric") == s.early->config().metric) {
      const Json& e = j["early_stopping"];
      std::optional<double> best;
      if (e.at("best").is_number()) best = e.at("best").get<double>();
      s.early->restore(best, e.at("best_epoch").get<int64_t>(), e.at("bad_epochs").get<int64_t>());
    }
    if (j.contains("valid_confusion")) {
      const Json& c = j["valid_confusion"];
      s.last_valid_confusion.emplace();
      s.last_valid_confusion->set_counts(c.at("num_classes").get<int64_t>(), c.at("counts").get<std::vector<int64_t>>());
    }
    if (j.value("metrics_in_progress", false)) s.load_metric_tensors(dir + "/metrics.safetensors");
  } catch (const Json::exception& e) {
    EMBER_FAIL(file, ": malformed learner state: ", e.what());
  }
  // Anything recorded after the checkpoint (by a run that went on) is not part of this history.
  s.history.truncate(s.iteration, s.train_done ? s.epoch + 1 : s.epoch);
  s.resumed_from = dir;
}

void FitSession::begin(int64_t train_batches, int64_t valid_batches, bool has_valid) {
  Impl& s = *impl_;
  if (!has_valid)
    for (const auto& ref : {s.early_ref, s.best_ref})
      EMBER_CHECK(!ref || ref->split == Split::train, "Learner: ", ref->str(),
                  " is monitored (early stopping or best checkpoint) but fit() got no validation loader");
  s.fit_start = Clock::now();
  s.train_batches = train_batches;
  s.valid_batches = std::max<int64_t>(0, valid_batches);
  s.has_valid = has_valid;
  if (s.monitor.split == Split::valid && !has_valid && !s.early_ref && !s.best_ref) s.monitor.split = Split::train;
  s.open_logs();
  s.sample_resources(true);
  FitInfo info;
  info.num_epochs = s.cfg.num_epochs;
  info.start_epoch = s.epoch;
  info.start_iteration = s.iteration;
  info.device = s.device.name();
  info.show_device_memory = s.cfg.system_metrics && device_memory(s.device).has_value();
  for (const auto& p : s.prototypes) info.metrics.push_back(p->name());
  if (s.cfg.system_metrics) {
    for (const char* n : {"lr", "iter_per_s", "samples_per_s", "data_wait", "cpu_percent", "memory_mb"})
      info.metrics.push_back(n);
    if (info.show_device_memory) info.metrics.push_back("gpu_memory_mb");
  } else {
    info.metrics.push_back("lr");
  }
  if (s.cfg.grad_scaler) info.metrics.push_back("loss_scale");
  info.run_dir = s.cfg.run_dir;
  info.has_validation = has_valid;
  info.resumed_from = s.resumed_from;
  s.renderer->start(info, s.history);
}

bool FitSession::running() const {
  return !impl_->stop_pending && !impl_->early_stopped && impl_->epoch < impl_->cfg.num_epochs;
}
int64_t FitSession::epoch() const { return impl_->epoch; }
bool FitSession::train_done() const { return impl_->train_done; }
int64_t FitSession::skip_batches() const { return impl_->batches_done; }
int64_t FitSession::grad_accumulation() const { return impl_->cfg.grad_accumulation; }
double FitSession::lr() const { return impl_->sched.lr(); }
const MetricHistory& FitSession::history() const { return impl_->history; }

void FitSession::begin_split(Split split, int64_t num_batches) {
  Impl& s = *impl_;
  s.split = split;
  s.split_batches = num_batches;
  if (split == Split::train) s.train_batches = num_batches;
  else s.valid_batches = std::max<int64_t>(0, num_batches);
  int sp = int(split);
  if (!(split == Split::train && s.metrics_restored)) {
    for (auto& m : s.metrics[sp]) m->reset();
    s.confusion[sp] = ConfusionMatrix();
  }
  s.metrics_restored = false;
  s.split_done = split == Split::train ? s.batches_done : 0;
  s.split_done_here = 0;
  s.split_samples = 0;
  s.split_wait = 0;
  s.split_cpu_start = process_cpu_seconds();
  if (s.cfg.communication_seconds) s.split_comm_start = s.cfg.communication_seconds();
  s.proc = ProcessMonitor();  // the split's first sample covers its first batch
  s.last_sample = {};
  s.ema_dt[sp] = s.ema_wait[sp] = s.ema_samples[sp] = kNan;
  s.split_start = s.last_end = Clock::now();
}

void FitSession::before_step() {
  Impl& s = *impl_;
  s.step_start = Clock::now();
  s.lr_used = s.sched.lr();
  if (s.split == Split::train && s.cfg.seed) s.device.seed(splitmix64(*s.cfg.seed ^ splitmix64(uint64_t(s.iteration))));
}

void FitSession::set_loss_scale(double scale) { impl_->loss_scale = scale; }

void FitSession::optimizer_stepped() {
  Impl& s = *impl_;
  ++s.global_step;
  bool plateau = dynamic_cast<optim::ReduceLROnPlateau*>(&s.sched) != nullptr;
  if (s.cfg.scheduler_interval == SchedulerInterval::step && !plateau) s.sched.step();
}

bool FitSession::after_batch(Split split, const BatchOutputs& out, bool stepped) {
  Impl& s = *impl_;
  int sp = int(split);
  auto now = Clock::now();
  double dt = seconds(now - s.last_end);
  double wait = s.step_start >= s.last_end ? seconds(s.step_start - s.last_end) : 0;

  NamedValues vals;
  std::vector<const Metric*> per_batch;  // metrics with a per-batch value: cheap to show running
  for (auto& m : s.metrics[sp])
    if (auto v = m->update(out)) {
      vals.emplace_back(m->name(), *v);
      per_batch.push_back(m.get());
    }
  if (out.num_classes > 0) s.confusion[sp].add(out.logits, out.targets, out.num_classes);
  ++s.split_done;
  ++s.split_done_here;
  s.split_samples += out.batch_size;
  s.split_wait += wait;
  ema(s.ema_dt[sp], dt, 0.05);
  ema(s.ema_wait[sp], dt > 0 ? wait / dt : 0, 0.05);
  ema(s.ema_samples[sp], dt > 0 ? double(out.batch_size) / dt : 0, 0.05);
  if (split == Split::train) {
    ++s.batches_done;
    ++s.iteration;
  }
  s.sample_resources(false);
  auto [epoch_eta, total_eta] = s.eta();

  ProgressView p;
  p.split = split;
  p.epoch = s.epoch;
  p.num_epochs = s.cfg.num_epochs;
  p.batch = s.split_done;
  p.num_batches = s.split_batches;
  p.iteration = s.iteration;
  p.global_step = s.global_step;
  p.epoch_position = s.epoch_position();
  p.elapsed_s = s.elapsed();
  p.epoch_eta_s = epoch_eta;
  p.total_eta_s = total_eta;
  for (const Metric* m : per_batch) {  // epoch-only metrics (AUROC) would cost O(n log n) per batch
    double v = m->value();
    if (!std::isnan(v)) p.running.emplace_back(m->name(), v);
  }
  if (split == Split::train) {
    vals.emplace_back("lr", s.lr_used);
    if (s.loss_scale) vals.emplace_back("loss_scale", *s.loss_scale);
    if (s.cfg.system_metrics) {
      vals.emplace_back("iter_per_s", s.ema_dt[sp] > 0 ? 1 / s.ema_dt[sp] : kNan);
      vals.emplace_back("samples_per_s", s.ema_samples[sp]);
      vals.emplace_back("data_wait", s.ema_wait[sp]);
      s.add_system_values(vals, true);
      vals.emplace_back("eta_s", total_eta >= 0 ? total_eta : kNan);
    }
    s.history.add_step(s.iteration - 1, p.epoch_position, vals);
    if (s.steps_log.is_open()) {
      s.steps_log << Impl::step_line(s.iteration - 1, p.epoch_position, vals) << '\n';
      if (now - s.last_flush > std::chrono::seconds(2)) s.flush_logs();
    }
  }
  p.step_values = std::move(vals);

  if (!s.stop_pending) {
    bool sig = s.sigint && s.sigint->requested();
    if (sig || s.renderer->stop_requested()) {
      s.stop_pending = s.interrupted = true;
      s.stop_reason = sig ? "interrupted (SIGINT)" : "stopped by the renderer (quit)";
    }
  }
  if (split == Split::train && s.cfg.on_step) {
    StepInfo info{s.epoch, s.batches_done, s.iteration, s.global_step, out.loss, stepped};
    s.cfg.on_step(info);
    if (!s.stop_pending && s.sigint && s.sigint->requested()) {
      s.stop_pending = s.interrupted = true;
      s.stop_reason = "interrupted (SIGINT)";
    }
  }
  bool stop_now = s.stop_pending && (split == Split::valid || stepped);
  p.stopping = s.stop_pending;
  s.renderer->update(p);
  if (split == Split::train && stepped && !stop_now && s.cfg.checkpoints && s.cfg.checkpoints->every_steps > 0 &&
      s.global_step % s.cfg.checkpoints->every_steps == 0)
    s.write_checkpoint(std::nullopt);
  s.last_end = Clock::now();
  return stop_now;
}

void FitSession::end_split(Split split, std::optional<double> loader_wait_s) {
  Impl& s = *impl_;
  // Data-parallel training: this rank's data wait and communication time of the train split go to
  // its stderr (when that is a log, not a terminal), and every rank's are gathered (all ranks end the split together) so that rank 0's
  // epoch values name the slowest rank: the one with the most time left after waiting for data and
  // for the others, which is the time everyone else waits for in the collectives.
  auto add_rank_times = [&s](NamedValues& vals, double wait, double secs) {
    double comm = s.cfg.communication_seconds ? s.cfg.communication_seconds() - s.split_comm_start : 0;
    if (!isatty(STDERR_FILENO))  // on a terminal the lines would cut through rank 0's dashboard
      std::fprintf(stderr, "rank %d: epoch %lld: data wait %.2f s, communication %.2f s\n", s.cfg.rank,
                   static_cast<long long>(s.epoch), wait, comm);
    if (!s.cfg.gather_values) return;
    std::vector<double> all = s.cfg.gather_values({wait, comm, secs});
    int slowest = 0;
    double worst = -1;
    for (size_t r = 0; r + 2 < all.size(); r += 3) {
      double compute = all[r + 2] - all[r] - all[r + 1];
      if (compute > worst) worst = compute, slowest = int(r / 3);
    }
    vals.emplace_back("comm_s", comm);
    vals.emplace_back("slowest_rank", double(slowest));
    vals.emplace_back("slowest_rank_compute_s", worst);
  };
  int sp = int(split);
  double secs = std::max(1e-9, seconds(Clock::now() - s.split_start));
  s.sample_resources(true);
  NamedValues vals;
  for (const auto& m : s.metrics[sp]) {
    double v = m->value();
    if (!std::isnan(v)) vals.emplace_back(m->name(), v);
  }
  if (s.split_done_here > 0) {
    s.avg_batch_s[sp] = secs / double(s.split_done_here);
    if (s.cfg.system_metrics) {
      vals.emplace_back("iter_per_s", double(s.split_done_here) / secs);
      vals.emplace_back("samples_per_s", double(s.split_samples) / secs);
    }
  }
  if (split == Split::train) {
    vals.emplace_back("lr", s.lr_used);
    if (s.cfg.world_size > 1) add_rank_times(vals, loader_wait_s ? *loader_wait_s : s.split_wait, secs);
    if (s.cfg.system_metrics) {
      double wait = loader_wait_s ? *loader_wait_s : s.split_wait;
      vals.emplace_back("data_wait", std::clamp(wait / secs, 0.0, 1.0));
      double cpu = process_cpu_seconds();
      if (std::isfinite(cpu)) vals.emplace_back("cpu_percent", 100 * (cpu - s.split_cpu_start) / secs);
      s.add_system_values(vals, false);
    }
    s.train_done = true;
    s.last_train_batches = s.batches_done;
  } else if (s.confusion[sp].num_classes() > 0) {
    s.last_valid_confusion = s.confusion[sp];
  }
  vals.emplace_back("time_s", secs);
  s.history.add_epoch(s.epoch, split, vals);
  s.renderer->epoch_end({s.epoch, s.cfg.num_epochs, split, vals, secs});
}

bool FitSession::end_epoch() {
  Impl& s = *impl_;
  int64_t finished = s.epoch;
  auto value_of = [&](const MetricRef& r) { return s.history.epoch_value(finished, r.split, r.name).value_or(kNan); };
  for (const auto& r : s.history.epochs())
    if (r.epoch == finished && s.epochs_log.is_open()) s.epochs_log << s.epoch_json(r).dump() << '\n';

  double monitored = value_of(s.monitor);
  if (std::isfinite(monitored) &&
      (!s.monitor_best || (s.monitor_higher ? monitored > *s.monitor_best : monitored < *s.monitor_best))) {
    s.monitor_best = monitored;
    s.monitor_best_epoch = finished;
  }
  if (auto* plateau = dynamic_cast<optim::ReduceLROnPlateau*>(&s.sched)) {
    double v = value_of(MetricRef::parse(s.cfg.plateau_metric));
    if (std::isfinite(v)) plateau->step(v);
  } else if (s.cfg.scheduler_interval == SchedulerInterval::epoch) {
    s.sched.step();
  }
  bool stop = false;
  if (s.early && s.early->update(finished, value_of(*s.early_ref))) {
    stop = true;
    s.early_stopped = true;
    std::ostringstream why;
    why << "stopped early: " << s.early_ref->str() << " did not improve for " << s.early->bad_epochs() << " epoch"
        << (s.early->bad_epochs() == 1 ? "" : "s");
    s.stop_reason = why.str();
    s.renderer->message(s.stop_reason);
  }
  s.epoch = finished + 1;
  s.batches_done = 0;
  s.train_done = false;
  const auto& cc = s.cfg.checkpoints;
  if (s.ckpt && cc->every_epochs > 0 &&
      (s.epoch % cc->every_epochs == 0 || s.epoch == s.cfg.num_epochs || stop)) {
    std::optional<double> score;
    if (s.best_ref) score = value_of(*s.best_ref);
    s.write_checkpoint(score);
  }
  if (!s.cfg.run_dir.empty()) write_svg_plots(s.history, s.run_file("plots"));
  s.flush_logs();
  return !stop;
}

void FitSession::stop() {
  Impl& s = *impl_;
  s.stop_pending = true;
  s.write_checkpoint(std::nullopt);
}

FitSummary FitSession::finish(const std::string& failure) {
  Impl& s = *impl_;
  s.finished = true;
  FitSummary sum;
  sum.num_epochs = s.cfg.num_epochs;
  sum.epochs_completed = s.epoch;
  sum.global_step = s.global_step;
  sum.iterations = s.iteration;
  sum.interrupted = s.interrupted;
  sum.early_stopped = s.early_stopped;
  sum.stop_reason = failure.empty() ? s.stop_reason : "failed: " + failure;
  sum.elapsed_s = seconds(Clock::now() - s.fit_start);
  // The last epoch's values, in display order (loss, the metrics, then resources).
  std::vector<std::string> order;
  for (const auto& p : s.prototypes) order.push_back(p->name());
  for (const auto& n : s.history.all_names())
    if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
  auto ordered = [&](const std::map<std::string, double>& m) {
    NamedValues out;
    for (const auto& n : order)
      if (auto it = m.find(n); it != m.end()) out.emplace_back(n, it->second);
    return out;
  };
  for (auto it = s.history.epochs().rbegin(); it != s.history.epochs().rend(); ++it) {
    if (sum.last_train.empty() && !it->train.empty()) sum.last_train = ordered(it->train);
    if (sum.last_valid.empty() && !it->valid.empty()) sum.last_valid = ordered(it->valid);
  }
  sum.monitor = s.monitor.str();
  sum.best_value = s.monitor_best;
  sum.best_epoch = s.monitor_best_epoch;
  sum.last_checkpoint = s.last_checkpoint;
  if (s.ckpt) {
    if (sum.last_checkpoint.empty())
      if (auto l = s.ckpt->latest()) sum.last_checkpoint = l->path;
    if (auto b = s.ckpt->best()) sum.best_checkpoint = b->path;
  }
  sum.run_dir = s.cfg.run_dir;
  sum.valid_confusion = s.last_valid_confusion;
  s.sigint.reset();  // Ctrl-C works normally again
  if (!s.cfg.run_dir.empty()) {
    try {
      s.flush_logs();
      write_svg_plots(s.history, s.run_file("plots"));
      write_file_atomic(s.run_file("summary.json"), sum.to_json() + "\n");
      write_file_atomic(s.run_file("summary.txt"), sum.str());
    } catch (const std::exception& e) {
      if (failure.empty()) {
        s.renderer->finish(sum);
        throw;
      }
    }
  }
  s.renderer->finish(sum);
  return sum;
}

// ---- Evaluator ----

struct Evaluator::Impl {
  std::vector<std::unique_ptr<Metric>> metrics;
  ConfusionMatrix confusion;
  int64_t samples = 0;
  Clock::time_point start = Clock::now();
};

bool file_exists(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

Evaluator::Evaluator(const std::vector<MetricPtr>& metrics) : impl_(std::make_unique<Impl>()) {
  impl_->metrics.push_back(loss_metric()->clone());
  for (const auto& m : metrics)
    if (m && m->name() != "loss") impl_->metrics.push_back(m->clone());
  for (auto& m : impl_->metrics) m->reset();
}
Evaluator::~Evaluator() = default;

void Evaluator::add(const BatchOutputs& b) {
  for (auto& m : impl_->metrics) m->update(b);
  if (b.num_classes > 0) impl_->confusion.add(b.logits, b.targets, b.num_classes);
  impl_->samples += b.batch_size;
}

EvalResult Evaluator::result() const {
  EvalResult r;
  for (const auto& m : impl_->metrics) r.values.emplace_back(m->name(), m->value());
  r.confusion = impl_->confusion;
  r.samples = impl_->samples;
  r.seconds = seconds(Clock::now() - impl_->start);
  return r;
}

}  // namespace ember::train::detail

namespace ember::train {

double EvalResult::value(const std::string& name) const {
  for (const auto& [k, v] : values)
    if (k == name) return v;
  return std::numeric_limits<double>::quiet_NaN();
}

std::string EvalResult::str() const {
  std::string out;
  for (const auto& [k, v] : values) out += (out.empty() ? "" : "  ") + k + " " + format_metric(k, v);
  return out;
}

}  // namespace ember::train
