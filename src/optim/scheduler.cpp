// Learning-rate schedulers. Each formula is written with the same operations in the same order as
// PyTorch 1.13 evaluates it, so sequences agree to the last bit or nearly (the recursive forms
// compound rounding, which a closed form would not reproduce).
#include "ember/optim/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "ember/core/error.hpp"

namespace ember::optim {

namespace {

constexpr double kPi = std::numbers::pi;

std::vector<std::unique_ptr<LrScheduler>> clone_all(const std::vector<std::unique_ptr<LrScheduler>>& v) {
  std::vector<std::unique_ptr<LrScheduler>> out;
  out.reserve(v.size());
  for (const auto& s : v) out.push_back(s->clone());
  return out;
}

std::string child_prefix(size_t i) { return "schedulers." + std::to_string(i) + "."; }

void put_children(SchedulerState& st, const std::vector<std::unique_ptr<LrScheduler>>& children) {
  for (size_t i = 0; i < children.size(); ++i)
    for (const auto& [k, v] : children[i]->state()) st[child_prefix(i) + k] = v;
}

void get_children(const SchedulerState& st, const std::vector<std::unique_ptr<LrScheduler>>& children) {
  for (size_t i = 0; i < children.size(); ++i) {
    const std::string prefix = child_prefix(i);
    SchedulerState sub;
    for (auto it = st.lower_bound(prefix); it != st.end() && it->first.starts_with(prefix); ++it)
      sub[it->first.substr(prefix.size())] = it->second;
    children[i]->load_state(sub);
  }
}

}  // namespace

// ---- LrScheduler ----

double LrScheduler::step() { return step_from(lr_); }

double LrScheduler::step_from(double current_lr) {
  ++last_epoch_;
  lr_ = next_lr(current_lr);
  return lr_;
}

double LrScheduler::begin(double current_lr) {
  last_epoch_ = -1;
  return step_from(current_lr);
}

SchedulerState LrScheduler::state() const { return {{"lr", lr_}, {"last_epoch", static_cast<double>(last_epoch_)}}; }

void LrScheduler::load_state(const SchedulerState& state) {
  const double lr = read(state, "lr");
  last_epoch_ = static_cast<int64_t>(read(state, "last_epoch"));
  lr_ = lr;
}

double LrScheduler::read(const SchedulerState& state, const std::string& key) {
  auto it = state.find(key);
  EMBER_CHECK(it != state.end(), "LrScheduler::load_state: state has no key '", key, "'");
  return it->second;
}

// ---- absolute schedules of the base lr ----

FixedLR::FixedLR(double base_lr) : LrScheduler(base_lr) { begin(base_lr); }

double FixedLR::next_lr(double /*current_lr*/) { return base_lr_; }

LambdaLR::LambdaLR(double base_lr, std::function<double(int64_t)> factor)
    : LrScheduler(base_lr), factor_(std::move(factor)) {
  EMBER_CHECK(static_cast<bool>(factor_), "LambdaLR: factor function is empty");
  begin(base_lr);
}

double LambdaLR::next_lr(double /*current_lr*/) { return base_lr_ * factor_(last_epoch_); }

// ---- chainable schedulers ----

ConstantLR::ConstantLR(double base_lr, ConstantLRConfig config) : LrScheduler(base_lr), config_(config) {
  EMBER_CHECK(config_.factor > 0.0 && config_.factor <= 1.0, "ConstantLR: factor must be in (0, 1], got ",
              config_.factor);
  EMBER_CHECK(config_.total_iters >= 0, "ConstantLR: total_iters must be >= 0, got ", config_.total_iters);
  begin(base_lr);
}

double ConstantLR::next_lr(double current_lr) {
  if (last_epoch_ == 0) return current_lr * config_.factor;
  if (last_epoch_ != config_.total_iters) return current_lr;
  return current_lr * (1.0 / config_.factor);
}

StepLR::StepLR(double base_lr, StepLRConfig config) : LrScheduler(base_lr), config_(config) {
  EMBER_CHECK(config_.step_size >= 1, "StepLR: step_size must be >= 1, got ", config_.step_size);
  begin(base_lr);
}

double StepLR::next_lr(double current_lr) {
  if (last_epoch_ == 0 || last_epoch_ % config_.step_size != 0) return current_lr;
  return current_lr * config_.gamma;
}

MultiStepLR::MultiStepLR(double base_lr, MultiStepLRConfig config) : LrScheduler(base_lr), config_(std::move(config)) {
  begin(base_lr);
}

double MultiStepLR::next_lr(double current_lr) {
  const auto hits = std::count(config_.milestones.begin(), config_.milestones.end(), last_epoch_);
  if (hits == 0) return current_lr;
  return current_lr * std::pow(config_.gamma, static_cast<double>(hits));
}

ExponentialLR::ExponentialLR(double base_lr, ExponentialLRConfig config) : LrScheduler(base_lr), config_(config) {
  begin(base_lr);
}

double ExponentialLR::next_lr(double current_lr) {
  if (last_epoch_ == 0) return current_lr;
  return current_lr * config_.gamma;
}

LinearLR::LinearLR(double base_lr, LinearLRConfig config) : LrScheduler(base_lr), config_(config) {
  EMBER_CHECK(config_.start_factor > 0.0 && config_.start_factor <= 1.0,
              "LinearLR: start_factor must be in (0, 1], got ", config_.start_factor);
  EMBER_CHECK(config_.end_factor >= 0.0 && config_.end_factor <= 1.0, "LinearLR: end_factor must be in [0, 1], got ",
              config_.end_factor);
  EMBER_CHECK(config_.total_iters >= 0, "LinearLR: total_iters must be >= 0, got ", config_.total_iters);
  begin(base_lr);
}

double LinearLR::next_lr(double current_lr) {
  const double start = config_.start_factor, end = config_.end_factor;
  if (last_epoch_ == 0) return current_lr * start;
  if (last_epoch_ > config_.total_iters) return current_lr;
  // The ratio of consecutive factors start + (end - start) * t / total_iters.
  const double t = static_cast<double>(config_.total_iters), e = static_cast<double>(last_epoch_);
  return current_lr * (1.0 + (end - start) / (t * start + (e - 1.0) * (end - start)));
}

PolynomialLR::PolynomialLR(double base_lr, PolynomialLRConfig config) : LrScheduler(base_lr), config_(config) {
  EMBER_CHECK(config_.total_iters >= 1, "PolynomialLR: total_iters must be >= 1, got ", config_.total_iters);
  begin(base_lr);
}

double PolynomialLR::next_lr(double current_lr) {
  if (last_epoch_ == 0 || last_epoch_ > config_.total_iters) return current_lr;
  const double t = static_cast<double>(config_.total_iters), e = static_cast<double>(last_epoch_);
  const double decay = std::pow((1.0 - e / t) / (1.0 - (e - 1.0) / t), config_.power);
  return current_lr * decay;
}

CosineAnnealingLR::CosineAnnealingLR(double base_lr, CosineAnnealingLRConfig config)
    : LrScheduler(base_lr), config_(config) {
  EMBER_CHECK(config_.t_max >= 1, "CosineAnnealingLR: t_max must be >= 1, got ", config_.t_max);
  begin(base_lr);
}

double CosineAnnealingLR::next_lr(double current_lr) {
  const int64_t e = last_epoch_, t_max = config_.t_max;
  const double eta_min = config_.eta_min, t = static_cast<double>(t_max);
  if (e == 0) return current_lr;
  // Leaving the minimum (the step after an odd multiple of t_max) the ratio below would divide by
  // zero; torch adds the first step of the rising half instead.
  if ((e - 1 - t_max) % (2 * t_max) == 0) return current_lr + (base_lr_ - eta_min) * (1.0 - std::cos(kPi / t)) / 2.0;
  const double ed = static_cast<double>(e);
  return (1.0 + std::cos(kPi * ed / t)) / (1.0 + std::cos(kPi * (ed - 1.0) / t)) * (current_lr - eta_min) + eta_min;
}

// ---- absolute schedules ----

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(double base_lr, CosineAnnealingWarmRestartsConfig config)
    : LrScheduler(base_lr), config_(config) {
  EMBER_CHECK(config_.t_0 >= 1, "CosineAnnealingWarmRestarts: t_0 must be >= 1, got ", config_.t_0);
  EMBER_CHECK(config_.t_mult >= 1, "CosineAnnealingWarmRestarts: t_mult must be >= 1, got ", config_.t_mult);
  begin(base_lr);
}

double CosineAnnealingWarmRestarts::next_lr(double /*current_lr*/) {
  if (last_epoch_ == 0) {
    t_i_ = config_.t_0;
    t_cur_ = 0;
  } else if (++t_cur_ >= t_i_) {
    t_cur_ -= t_i_;
    t_i_ *= config_.t_mult;
  }
  const double eta_min = config_.eta_min;
  return eta_min +
         (base_lr_ - eta_min) * (1.0 + std::cos(kPi * static_cast<double>(t_cur_) / static_cast<double>(t_i_))) / 2.0;
}

SchedulerState CosineAnnealingWarmRestarts::state() const {
  SchedulerState st = LrScheduler::state();
  st["t_i"] = static_cast<double>(t_i_);
  st["t_cur"] = static_cast<double>(t_cur_);
  return st;
}

void CosineAnnealingWarmRestarts::load_state(const SchedulerState& state) {
  LrScheduler::load_state(state);
  t_i_ = static_cast<int64_t>(read(state, "t_i"));
  t_cur_ = static_cast<int64_t>(read(state, "t_cur"));
}

OneCycleLR::OneCycleLR(OneCycleLRConfig config) : LrScheduler(config.max_lr / config.div_factor), config_(config) {
  EMBER_CHECK(config_.total_steps >= 1, "OneCycleLR: total_steps must be >= 1, got ", config_.total_steps);
  EMBER_CHECK(config_.pct_start >= 0.0 && config_.pct_start <= 1.0, "OneCycleLR: pct_start must be in [0, 1], got ",
              config_.pct_start);
  const double initial_lr = base_lr_, max_lr = config_.max_lr, min_lr = initial_lr / config_.final_div_factor;
  const double total = static_cast<double>(config_.total_steps), pct = config_.pct_start;
  if (config_.three_phase) {
    phases_ = {{pct * total - 1.0, initial_lr, max_lr},
               {2.0 * pct * total - 2.0, max_lr, initial_lr},
               {total - 1.0, initial_lr, min_lr}};
  } else {
    phases_ = {{pct * total - 1.0, initial_lr, max_lr}, {total - 1.0, max_lr, min_lr}};
  }
  double start = 0.0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    EMBER_CHECK(phases_[i].end_step != start, "OneCycleLR: phase ", i, " has no steps (total_steps ",
                config_.total_steps, ", pct_start ", pct, ")");
    start = phases_[i].end_step;
  }
  begin(base_lr_);
}

double OneCycleLR::next_lr(double /*current_lr*/) {
  if (last_epoch_ > config_.total_steps) {
    --last_epoch_;
    EMBER_FAIL("OneCycleLR: step() called more than total_steps (", config_.total_steps, ") times");
  }
  const double step = static_cast<double>(last_epoch_);
  double start = 0.0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& p = phases_[i];
    if (step <= p.end_step || i + 1 == phases_.size()) {
      const double pct = (step - start) / (p.end_step - start);
      if (config_.anneal_strategy == AnnealStrategy::cos)
        return p.end_lr + (p.start_lr - p.end_lr) / 2.0 * (std::cos(kPi * pct) + 1.0);
      return (p.end_lr - p.start_lr) * pct + p.start_lr;
    }
    start = p.end_step;
  }
  return lr_;  // unreachable: the last phase always matches
}

NoamLR::NoamLR(double base_lr, NoamLRConfig config) : LrScheduler(base_lr), config_(config) {
  EMBER_CHECK(config_.d_model >= 1, "NoamLR: d_model must be >= 1, got ", config_.d_model);
  EMBER_CHECK(config_.warmup_steps >= 1, "NoamLR: warmup_steps must be >= 1, got ", config_.warmup_steps);
  begin(base_lr);
}

double NoamLR::next_lr(double /*current_lr*/) {
  const double s = static_cast<double>(last_epoch_ + 1);
  const double d = static_cast<double>(config_.d_model), w = static_cast<double>(config_.warmup_steps);
  return base_lr_ * std::pow(d, -0.5) * std::min(std::pow(s, -0.5), s * std::pow(w, -1.5));
}

WarmupLinearLR::WarmupLinearLR(double base_lr, WarmupLinearLRConfig config) : LrScheduler(base_lr), config_(config) {
  EMBER_CHECK(config_.warmup_steps >= 0, "WarmupLinearLR: warmup_steps must be >= 0, got ", config_.warmup_steps);
  EMBER_CHECK(config_.total_steps >= config_.warmup_steps, "WarmupLinearLR: total_steps (", config_.total_steps,
              ") must be >= warmup_steps (", config_.warmup_steps, ")");
  begin(base_lr);
}

double WarmupLinearLR::next_lr(double /*current_lr*/) {
  const int64_t t = last_epoch_, warmup = config_.warmup_steps, total = config_.total_steps;
  double factor;
  if (t < warmup) {
    factor = static_cast<double>(t) / static_cast<double>(std::max<int64_t>(1, warmup));
  } else {
    factor = std::max(0.0, static_cast<double>(total - t) / static_cast<double>(std::max<int64_t>(1, total - warmup)));
  }
  return base_lr_ * factor;
}

// ---- ReduceLROnPlateau ----

ReduceLROnPlateau::ReduceLROnPlateau(double base_lr, ReduceLROnPlateauConfig config)
    : LrScheduler(base_lr), config_(config) {
  EMBER_CHECK(config_.factor >= 0.0 && config_.factor < 1.0, "ReduceLROnPlateau: factor must be in [0, 1), got ",
              config_.factor);
  EMBER_CHECK(config_.patience >= 0, "ReduceLROnPlateau: patience must be >= 0, got ", config_.patience);
  EMBER_CHECK(config_.cooldown >= 0, "ReduceLROnPlateau: cooldown must be >= 0, got ", config_.cooldown);
  const double inf = std::numeric_limits<double>::infinity();
  best_ = config_.mode == PlateauMode::min ? inf : -inf;
  last_epoch_ = 0;  // torch takes no step at construction here
}

double ReduceLROnPlateau::step() {
  EMBER_FAIL("ReduceLROnPlateau::step: needs the monitored metric, call step(metric)");
}

double ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs during cooldown do not count
  }
  if (num_bad_epochs_ > config_.patience) {
    const double reduced = std::max(lr_ * config_.factor, config_.min_lr);
    if (lr_ - reduced > config_.eps) lr_ = reduced;
    cooldown_counter_ = config_.cooldown;
    num_bad_epochs_ = 0;
  }
  return lr_;
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  const bool rel = config_.threshold_mode == ThresholdMode::rel;
  if (config_.mode == PlateauMode::min)
    return rel ? a < best * (1.0 - config_.threshold) : a < best - config_.threshold;
  return rel ? a > best * (config_.threshold + 1.0) : a > best + config_.threshold;
}

double ReduceLROnPlateau::next_lr(double /*current_lr*/) {
  EMBER_FAIL("ReduceLROnPlateau: cannot be stepped without a metric (it cannot be chained or sequenced)");
}

double ReduceLROnPlateau::begin(double /*current_lr*/) {
  EMBER_FAIL("ReduceLROnPlateau: cannot be part of a ChainedScheduler or SequentialLR");
}

// "best" is left out while no metric has improved on the initial +-inf, so every value in the state
// is finite (JSON has no infinity).
SchedulerState ReduceLROnPlateau::state() const {
  SchedulerState st = LrScheduler::state();
  if (std::isfinite(best_)) st["best"] = best_;
  st["num_bad_epochs"] = static_cast<double>(num_bad_epochs_);
  st["cooldown_counter"] = static_cast<double>(cooldown_counter_);
  return st;
}

void ReduceLROnPlateau::load_state(const SchedulerState& state) {
  LrScheduler::load_state(state);
  const double inf = std::numeric_limits<double>::infinity();
  auto best = state.find("best");
  best_ = best != state.end() ? best->second : config_.mode == PlateauMode::min ? inf : -inf;
  num_bad_epochs_ = static_cast<int64_t>(read(state, "num_bad_epochs"));
  cooldown_counter_ = static_cast<int64_t>(read(state, "cooldown_counter"));
}

// ---- ChainedScheduler ----

namespace {
double first_base_lr(const std::vector<std::unique_ptr<LrScheduler>>& v, const char* who) {
  EMBER_CHECK(!v.empty(), who, ": needs at least one scheduler");
  for (size_t i = 0; i < v.size(); ++i) EMBER_CHECK(v[i] != nullptr, who, ": scheduler ", i, " is null");
  return v.front()->base_lr();
}
}  // namespace

ChainedScheduler::ChainedScheduler(std::vector<std::unique_ptr<LrScheduler>> schedulers)
    : LrScheduler(first_base_lr(schedulers, "ChainedScheduler")), schedulers_(std::move(schedulers)) {
  begin(base_lr_);
}

ChainedScheduler::ChainedScheduler(const ChainedScheduler& other)
    : LrScheduler(other), schedulers_(clone_all(other.schedulers_)) {}

double ChainedScheduler::begin(double current_lr) {
  for (auto& s : schedulers_) current_lr = s->begin(current_lr);
  last_epoch_ = 0;
  lr_ = current_lr;
  return lr_;
}

double ChainedScheduler::next_lr(double current_lr) {
  for (auto& s : schedulers_) current_lr = s->step_from(current_lr);
  return current_lr;
}

SchedulerState ChainedScheduler::state() const {
  SchedulerState st = LrScheduler::state();
  put_children(st, schedulers_);
  return st;
}

void ChainedScheduler::load_state(const SchedulerState& state) {
  LrScheduler::load_state(state);
  get_children(state, schedulers_);
}

// ---- SequentialLR ----

SequentialLR::SequentialLR(std::vector<std::unique_ptr<LrScheduler>> schedulers, std::vector<int64_t> milestones)
    : LrScheduler(first_base_lr(schedulers, "SequentialLR")),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  EMBER_CHECK(milestones_.size() + 1 == schedulers_.size(), "SequentialLR: ", schedulers_.size(), " schedulers need ",
              schedulers_.size() - 1, " milestones, got ", milestones_.size());
  EMBER_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), "SequentialLR: milestones must be sorted");
  begin(base_lr_);
}

SequentialLR::SequentialLR(const SequentialLR& other)
    : LrScheduler(other), schedulers_(clone_all(other.schedulers_)), milestones_(other.milestones_) {}

double SequentialLR::begin(double /*current_lr*/) {
  last_epoch_ = 0;
  lr_ = schedulers_.front()->begin(schedulers_.front()->base_lr());
  return lr_;
}

double SequentialLR::next_lr(double current_lr) {
  const auto idx =
      static_cast<size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LrScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) return s.begin(s.base_lr());
  return s.step_from(current_lr);
}

SchedulerState SequentialLR::state() const {
  SchedulerState st = LrScheduler::state();
  put_children(st, schedulers_);
  return st;
}

void SequentialLR::load_state(const SchedulerState& state) {
  LrScheduler::load_state(state);
  get_children(state, schedulers_);
}

}  // namespace ember::optim
