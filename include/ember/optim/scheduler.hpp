// Learning-rate schedulers: scalar state machines with the semantics of PyTorch 1.13's
// torch.optim.lr_scheduler.
//
//   # auto train_step = [](double lr) { std::cout << lr << "\n"; };
//   optim::CosineAnnealingLR sched(0.1, {.t_max = 100, .eta_min = 1e-4});
//   for (int64_t i = 0; i < 100; ++i) {
//     train_step(/*lr=*/sched.lr());   // the lr of this optimizer step
//     sched.step();                    // advance to the next one
//   }
//   # run
//
// lr() right after construction equals torch's param_groups[0]['lr'] after constructing the
// scheduler (torch takes an initial step there); after the k-th step() it equals torch's lr after
// the k-th scheduler.step(). Like torch, the "chainable" schedulers (ConstantLR, StepLR,
// MultiStepLR, ExponentialLR, LinearLR, PolynomialLR, CosineAnnealingLR) update the current lr
// recursively rather than from a closed form, so ChainedScheduler and SequentialLR reproduce
// torch's sequences; the others (LambdaLR, CosineAnnealingWarmRestarts, OneCycleLR, NoamLR,
// WarmupLinearLR, FixedLR) compute the lr from the base lr and the step count alone.
//
// state() is a flat map of the mutable counters (all finite, so it stores as JSON or tensors;
// composites prefix their children's keys with "schedulers.<i>."); load_state() into a scheduler
// built with the same base lr and config continues the same sequence. clone() deep-copies.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ember::optim {

// A scheduler's state(): counter name to value (torch's state_dict(), flattened to doubles).
using SchedulerState = std::map<std::string, double>;

class ChainedScheduler;
class SequentialLR;

// Base of the learning-rate schedulers (torch's _LRScheduler): holds the base lr, the current lr and the step
// count; a subclass defines the schedule in next_lr(). Schedulers only compute the lr: pass lr() to the optimizer.
class LrScheduler {
 public:
  virtual ~LrScheduler() = default;

  // Advances one step and returns the lr for the next optimizer step.
  virtual double step();
  // The lr for the next optimizer step.
  double lr() const { return lr_; }
  // The lr the schedule is relative to (torch's base_lrs[0], i.e. the optimizer's initial lr).
  double base_lr() const { return base_lr_; }
  // Steps taken since construction (torch's last_epoch).
  int64_t last_epoch() const { return last_epoch_; }
  // The PyTorch-style class name, e.g. "StepLR".
  virtual std::string_view name() const = 0;

  // The mutable counters ("lr", "last_epoch", and any a subclass adds), for load_state() (torch's state_dict()).
  virtual SchedulerState state() const;
  // Throws ember::Error when a key this scheduler needs is missing.
  virtual void load_state(const SchedulerState& state);
  // A deep copy with the same config and state (a composite's children copied too).
  virtual std::unique_ptr<LrScheduler> clone() const = 0;

 protected:
  // Sets lr to base_lr with last_epoch -1; a subclass constructor then calls begin() for the initial step.
  explicit LrScheduler(double base_lr) : base_lr_(base_lr), lr_(base_lr) {}
  // Copies the lr and counters (a composite deep-copies its children in its own copy constructor).
  LrScheduler(const LrScheduler&) = default;
  // Copies the lr and counters; protected against slicing.
  LrScheduler& operator=(const LrScheduler&) = default;

  // torch's get_lr(): the lr for epoch last_epoch_ (already advanced) given the optimizer's current
  // lr, which other schedulers sharing the optimizer may have changed.
  virtual double next_lr(double current_lr) = 0;
  // One step starting from `current_lr` (torch's step() on a shared optimizer).
  virtual double step_from(double current_lr);
  // Restarts at epoch 0 from `current_lr` (torch's constructor step; SequentialLR's step(0)).
  virtual double begin(double current_lr);

  // The value of `key` in `state`, for load_state() overrides; throws ember::Error when the key is missing.
  static double read(const SchedulerState& state, const std::string& key);

  double base_lr_;           // the lr the schedule is relative to (base_lr())
  double lr_;                // the current lr (lr())
  int64_t last_epoch_ = -1;  // steps taken (last_epoch()); -1 until the constructor's initial step

  friend class ChainedScheduler;
  friend class SequentialLR;
};

// ---- schedules of the base lr alone ----

// Keeps the base lr.
class FixedLR final : public LrScheduler {
 public:
  // The lr is base_lr at every step.
  explicit FixedLR(double base_lr);
  std::string_view name() const override { return "FixedLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<FixedLR>(*this); }

 protected:
  double next_lr(double current_lr) override;
};

// lr = base_lr * factor(last_epoch) (torch LambdaLR).
class LambdaLR final : public LrScheduler {
 public:
  // `factor` maps the step count (last_epoch(): 0 at construction) to the multiplier on base_lr; throws
  // ember::Error when it is empty.
  LambdaLR(double base_lr, std::function<double(int64_t epoch)> factor);
  std::string_view name() const override { return "LambdaLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<LambdaLR>(*this); }

 protected:
  double next_lr(double current_lr) override;

 private:
  std::function<double(int64_t)> factor_;
};

// ---- chainable schedulers (recursive, as torch) ----

// torch.optim.lr_scheduler.ConstantLR: base_lr * factor for the first total_iters steps, then base_lr.
struct ConstantLRConfig {
  double factor = 1.0 / 3;  // multiplier on base_lr for the first total_iters steps, in (0, 1]
  int64_t total_iters = 5;  // steps at the reduced lr, >= 0; base_lr from then on
};
// base_lr * factor for the first total_iters steps, then base_lr.
class ConstantLR final : public LrScheduler {
 public:
  // Throws ember::Error unless factor is in (0, 1] and total_iters >= 0.
  ConstantLR(double base_lr, ConstantLRConfig config = {});
  std::string_view name() const override { return "ConstantLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<ConstantLR>(*this); }

 protected:
  double next_lr(double current_lr) override;

 private:
  ConstantLRConfig config_;
};

// Options of StepLR (torch.optim.lr_scheduler.StepLR's step_size and gamma).
struct StepLRConfig {
  int64_t step_size = 1;  // steps between two decays, >= 1
  double gamma = 0.1;     // multiplier applied every step_size steps
};
// Multiplies the lr by gamma every step_size steps.
class StepLR final : public LrScheduler {
 public:
  // Throws ember::Error when step_size < 1.
  StepLR(double base_lr, StepLRConfig config);
  std::string_view name() const override { return "StepLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<StepLR>(*this); }

 protected:
  double next_lr(double current_lr) override;

 private:
  StepLRConfig config_;
};

// Options of MultiStepLR (torch.optim.lr_scheduler.MultiStepLR's milestones and gamma).
struct MultiStepLRConfig {
  std::vector<int64_t> milestones;  // any order; a repeated milestone applies gamma once per copy
  double gamma = 0.1;               // multiplier applied at each milestone
};
// Multiplies the lr by gamma at each milestone.
class MultiStepLR final : public LrScheduler {
 public:
  // Milestones are step counts (last_epoch() values) and are not checked; one at 0 already applies at
  // construction, as in torch.
  MultiStepLR(double base_lr, MultiStepLRConfig config);
  std::string_view name() const override { return "MultiStepLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<MultiStepLR>(*this); }

 protected:
  double next_lr(double current_lr) override;

 private:
  MultiStepLRConfig config_;
};

// Options of ExponentialLR (torch.optim.lr_scheduler.ExponentialLR's gamma).
struct ExponentialLRConfig {
  double gamma = 0.9;  // multiplier applied every step
};
// Multiplies the lr by gamma every step.
class ExponentialLR final : public LrScheduler {
 public:
  // After k steps the lr is base_lr * gamma^k (computed recursively, as torch does).
  ExponentialLR(double base_lr, ExponentialLRConfig config);
  std::string_view name() const override { return "ExponentialLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<ExponentialLR>(*this); }

 protected:
  double next_lr(double current_lr) override;

 private:
  ExponentialLRConfig config_;
};

// Options of LinearLR (torch.optim.lr_scheduler.LinearLR's arguments).
struct LinearLRConfig {
  double start_factor = 1.0 / 3;  // factor on base_lr at construction, in (0, 1]
  double end_factor = 1.0;        // factor reached after total_iters steps, in [0, 1]
  int64_t total_iters = 5;        // steps from start_factor to end_factor, >= 0
};
// The factor on base_lr moves linearly from start_factor to end_factor over total_iters steps.
// With a small start_factor and end_factor 1 this is a linear warm-up.
class LinearLR final : public LrScheduler {
 public:
  // Throws ember::Error unless start_factor is in (0, 1], end_factor in [0, 1] and total_iters >= 0.
  LinearLR(double base_lr, LinearLRConfig config = {});
  std::string_view name() const override { return "LinearLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<LinearLR>(*this); }

 protected:
  double next_lr(double current_lr) override;

 private:
  LinearLRConfig config_;
};

// Options of PolynomialLR (torch.optim.lr_scheduler.PolynomialLR's total_iters and power).
struct PolynomialLRConfig {
  int64_t total_iters = 5;  // steps until the lr reaches 0 (where it stays), >= 1
  double power = 1.0;       // exponent of the decay; 1 decays linearly
};
// base_lr * (1 - min(t, total_iters) / total_iters)^power.
class PolynomialLR final : public LrScheduler {
 public:
  // Throws ember::Error when total_iters < 1.
  PolynomialLR(double base_lr, PolynomialLRConfig config = {});
  std::string_view name() const override { return "PolynomialLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<PolynomialLR>(*this); }

 protected:
  double next_lr(double current_lr) override;

 private:
  PolynomialLRConfig config_;
};

// Options of CosineAnnealingLR (torch.optim.lr_scheduler.CosineAnnealingLR's T_max and eta_min).
struct CosineAnnealingLRConfig {
  int64_t t_max = 1;     // steps from base_lr down to eta_min (half the period), >= 1
  double eta_min = 0.0;  // the lowest lr of the cosine
};
// Half a cosine from base_lr down to eta_min over t_max steps, then back up (no restart), in torch's
// recursive form.
class CosineAnnealingLR final : public LrScheduler {
 public:
  // Throws ember::Error when t_max < 1.
  CosineAnnealingLR(double base_lr, CosineAnnealingLRConfig config);
  std::string_view name() const override { return "CosineAnnealingLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<CosineAnnealingLR>(*this); }

 protected:
  double next_lr(double current_lr) override;

 private:
  CosineAnnealingLRConfig config_;
};

// ---- absolute schedules ----

// torch.optim.lr_scheduler.CosineAnnealingWarmRestarts (SGDR): cosine annealing from base_lr to eta_min over
// t_0 steps, restarting with periods multiplied by t_mult.
struct CosineAnnealingWarmRestartsConfig {
  int64_t t_0 = 1;       // steps until the first restart, >= 1
  int64_t t_mult = 1;    // each period is t_mult times the previous one, >= 1
  double eta_min = 0.0;  // the lr the cosine approaches at the end of each period
};
// SGDR: cosine from base_lr to eta_min, restarting at base_lr after each period.
class CosineAnnealingWarmRestarts final : public LrScheduler {
 public:
  // Options as torch's T_0, T_mult and eta_min; throws ember::Error when t_0 or t_mult < 1.
  CosineAnnealingWarmRestarts(double base_lr, CosineAnnealingWarmRestartsConfig config);
  std::string_view name() const override { return "CosineAnnealingWarmRestarts"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<CosineAnnealingWarmRestarts>(*this); }
  // Adds "t_i" (the current period's length) and "t_cur" (steps into it) to the base counters.
  SchedulerState state() const override;
  void load_state(const SchedulerState& state) override;

 protected:
  double next_lr(double current_lr) override;

 private:
  CosineAnnealingWarmRestartsConfig config_;
  int64_t t_i_ = 0;    // length of the current period
  int64_t t_cur_ = 0;  // steps since the last restart
};

// How OneCycleLR interpolates within a phase (torch's anneal_strategy "cos" or "linear").
enum class AnnealStrategy { cos, linear };

// Options of OneCycleLR (torch.optim.lr_scheduler.OneCycleLR's lr arguments).
struct OneCycleLRConfig {
  double max_lr = 0.1;                                   // peak lr, reached after pct_start * total_steps steps
  int64_t total_steps = 100;                             // step() may be called at most total_steps times
  double pct_start = 0.3;                                // fraction of total_steps spent rising to max_lr, in [0, 1]
  AnnealStrategy anneal_strategy = AnnealStrategy::cos;  // cosine or linear interpolation within each phase
  double div_factor = 25.0;                              // initial lr = max_lr / div_factor
  double final_div_factor = 1e4;                         // min lr = initial lr / final_div_factor
  bool three_phase = false;  // falls back to the initial lr before decaying to the min lr, as torch's three_phase
};
// The 1cycle policy (torch OneCycleLR, lr only: momentum cycling belongs to the optimizer). Its base
// lr is max_lr / div_factor, whatever the optimizer's lr.
class OneCycleLR final : public LrScheduler {
 public:
  // Throws ember::Error when total_steps < 1, pct_start is outside [0, 1] or a phase would have no steps;
  // step() throws once called more than total_steps times.
  explicit OneCycleLR(OneCycleLRConfig config);
  std::string_view name() const override { return "OneCycleLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<OneCycleLR>(*this); }

 protected:
  double next_lr(double current_lr) override;

 private:
  struct Phase {
    double end_step, start_lr, end_lr;
  };
  OneCycleLRConfig config_;
  std::vector<Phase> phases_;
};

// Options of NoamLR.
struct NoamLRConfig {
  int64_t d_model = 512;        // model width; the lr scales with d_model^-0.5
  int64_t warmup_steps = 4000;  // steps of linear warm-up before the inverse-square-root decay
};
// The Transformer schedule: lr = base_lr * d_model^-0.5 * min(s^-0.5, s * warmup_steps^-1.5), where
// s = last_epoch + 1 is the 1-based number of the optimizer step (base_lr is the paper's "factor").
class NoamLR final : public LrScheduler {
 public:
  // Throws ember::Error when d_model or warmup_steps < 1.
  NoamLR(double base_lr, NoamLRConfig config);
  std::string_view name() const override { return "NoamLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<NoamLR>(*this); }

 protected:
  double next_lr(double current_lr) override;

 private:
  NoamLRConfig config_;
};

// Options of WarmupLinearLR (the schedule of Hugging Face's get_linear_schedule_with_warmup).
struct WarmupLinearLRConfig {
  int64_t warmup_steps = 0;  // steps of warm-up from 0 to base_lr, >= 0
  int64_t total_steps = 1;   // step at which the lr reaches 0, >= warmup_steps
};
// Linear warm-up from 0 to base_lr over warmup_steps, then linear decay to 0 at total_steps:
// factor(t) = t / max(1, warmup) for t < warmup, else max(0, (total - t) / max(1, total - warmup)).
class WarmupLinearLR final : public LrScheduler {
 public:
  // Throws ember::Error when warmup_steps < 0 or total_steps < warmup_steps.
  WarmupLinearLR(double base_lr, WarmupLinearLRConfig config);
  std::string_view name() const override { return "WarmupLinearLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<WarmupLinearLR>(*this); }

 protected:
  double next_lr(double current_lr) override;

 private:
  WarmupLinearLRConfig config_;
};

// ---- metric-driven ----

// Whether ReduceLROnPlateau's metric should fall (min, e.g. a loss) or rise (max, e.g. an accuracy): torch's mode.
enum class PlateauMode { min, max };
// How ReduceLROnPlateau measures an improvement (torch's threshold_mode): by a fraction `threshold` of the best
// metric (rel) or by `threshold` itself (abs).
enum class ThresholdMode { rel, abs };

// Options of ReduceLROnPlateau (torch.optim.lr_scheduler.ReduceLROnPlateau's arguments).
struct ReduceLROnPlateauConfig {
  PlateauMode mode = PlateauMode::min;  // min: the metric should fall (a loss); max: it should rise (an accuracy)
  double factor = 0.1;                  // new lr = lr * factor, in [0, 1)
  int64_t patience = 10;                // bad steps (no improvement) tolerated before the lr is reduced, >= 0
  double threshold = 1e-4;              // the least change that counts as an improvement (see threshold_mode)
  ThresholdMode threshold_mode = ThresholdMode::rel;  // rel: threshold is relative to the best metric; abs: absolute
  int64_t cooldown = 0;  // steps after a reduction during which bad steps are not counted, >= 0
  double min_lr = 0.0;   // the lr is never reduced below min_lr
  double eps = 1e-8;     // reductions smaller than eps are skipped
};
// Reduces the lr when a metric stops improving. Its step takes the metric; it cannot be part of a
// ChainedScheduler or SequentialLR (as in torch).
class ReduceLROnPlateau final : public LrScheduler {
 public:
  // Throws ember::Error unless factor is in [0, 1) and patience and cooldown are >= 0. Unlike the other schedulers
  // it takes no step at construction: last_epoch() starts at 0.
  ReduceLROnPlateau(double base_lr, ReduceLROnPlateauConfig config = {});
  std::string_view name() const override { return "ReduceLROnPlateau"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<ReduceLROnPlateau>(*this); }
  // Throws: this scheduler needs the metric.
  double step() override;
  // Records `metric` (e.g. the validation loss of the epoch just ended) and returns the lr for what follows,
  // reduced by factor after more than patience steps without improvement.
  double step(double metric);
  // Adds "num_bad_epochs", "cooldown_counter" and "best" (left out while no metric has been recorded, as it is
  // infinite until then) to the base counters.
  SchedulerState state() const override;
  void load_state(const SchedulerState& state) override;

 protected:
  double next_lr(double current_lr) override;
  double begin(double current_lr) override;

 private:
  bool is_better(double a, double best) const;
  ReduceLROnPlateauConfig config_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
};

// ---- composition ----

// Steps every scheduler on the same lr each step, in order, so the chainable schedulers' factors
// multiply (an absolute schedule overrides what came before it in the list). The chain starts from
// the first scheduler's base lr, each child's construction step applied in order, as when torch
// builds the children one after another on one optimizer.
class ChainedScheduler final : public LrScheduler {
 public:
  // Takes ownership of `schedulers` (stepped in this order); throws ember::Error when it is empty or holds a null
  // or a ReduceLROnPlateau.
  explicit ChainedScheduler(std::vector<std::unique_ptr<LrScheduler>> schedulers);
  // Deep-copies `other`, its children included.
  ChainedScheduler(const ChainedScheduler& other);
  ChainedScheduler& operator=(const ChainedScheduler&) = delete;
  std::string_view name() const override { return "ChainedScheduler"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<ChainedScheduler>(*this); }
  // The base counters plus each child's, prefixed with "schedulers.<i>.".
  SchedulerState state() const override;
  void load_state(const SchedulerState& state) override;

 protected:
  double next_lr(double current_lr) override;
  double begin(double current_lr) override;

 private:
  std::vector<std::unique_ptr<LrScheduler>> schedulers_;
};

// Runs schedulers[0] until step milestones[0], where it restarts schedulers[1] from that one's base
// lr, and so on (milestones: sorted, one fewer than schedulers). The lr at construction is
// schedulers[0]'s first, whatever lr the sequence is handed (torch resets to the initial lr).
class SequentialLR final : public LrScheduler {
 public:
  // Takes ownership of `schedulers`; `milestones` are step counts, sorted, one fewer than the schedulers. Throws
  // ember::Error when the counts disagree, the milestones are unsorted or a scheduler is null; a ReduceLROnPlateau
  // child throws when it is started.
  SequentialLR(std::vector<std::unique_ptr<LrScheduler>> schedulers, std::vector<int64_t> milestones);
  // Deep-copies `other`, its children included.
  SequentialLR(const SequentialLR& other);
  SequentialLR& operator=(const SequentialLR&) = delete;
  std::string_view name() const override { return "SequentialLR"; }
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<SequentialLR>(*this); }
  // The base counters plus each child's, prefixed with "schedulers.<i>.".
  SchedulerState state() const override;
  void load_state(const SchedulerState& state) override;

 protected:
  double next_lr(double current_lr) override;
  double begin(double current_lr) override;

 private:
  std::vector<std::unique_ptr<LrScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

}  // namespace ember::optim
