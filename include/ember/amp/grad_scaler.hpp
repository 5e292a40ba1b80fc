// GradScaler: dynamic loss scaling for f16 training (torch.cuda.amp.GradScaler's semantics and
// defaults). The loss is multiplied by the scale before backward so that small f16 gradients do
// not flush to zero; unscale_ multiplies the gradients by 1/scale and checks them for inf/NaN in
// the same pass; step skips the optimizer step when one was found; update halves the scale after
// an overflow and doubles it after growth_interval clean steps.
//
//   # Device dev = Device::cpu().autodiff();
//   # nn::Linear model = nn::LinearConfig{4, 1}.init(dev);
//   # auto loss_of = [&](const nn::Linear& m) { return m.forward(DynTensor::ones({2, 4}, DType::f32, dev)).mean(); };
//   # optim::AdamW opt = optim::AdamWConfig{}.init();
//   # double lr = 1e-3; int steps = 3;
//   amp::GradScaler scaler;                                // init_scale 2^16, growth 2, backoff 0.5, 2000
//   for (int step = 0; step < steps; ++step) {
//     Gradients g;
//     { amp::Autocast guard(DType::f16); g = scaler.scale(loss_of(model)).backward(); }
//     auto grads = optim::GradientsParams::from(model, g);
//     scaler.unscale_(grads);                              // optional: before clipping
//     grads.clip_by_norm(1.0);
//     model = scaler.step(opt, std::move(model), std::move(grads), lr);   // skipped on inf/NaN
//     scaler.update();
//   }
//   nn::write_tensors("scaler.safetensors", scaler.state_dict());       // checkpoints
//   # run
//
// With dtype = bf16 (which has f32's exponent range) the scaler warns once and passes through:
// scale() returns the loss, step() always steps, update() does nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "ember/nn/module.hpp"
#include "ember/optim/gradients.hpp"
#include "ember/optim/optimizer.hpp"

namespace ember::amp {

// Options of GradScaler (torch.cuda.amp.GradScaler's arguments and defaults).
struct GradScalerConfig {
  double init_scale = 65536.0;     // 2^16
  double growth_factor = 2.0;      // multiplies the scale after growth_interval clean steps, > 1
  double backoff_factor = 0.5;     // multiplies the scale after an inf/NaN, in (0, 1)
  int64_t growth_interval = 2000;  // consecutive clean steps before the scale grows, >= 1
  bool enabled = true;             // false: every call passes through (scale 1, step() always steps)
  DType dtype = DType::f16;        // the autocast dtype the gradients come from; bf16 passes through
};

// Dynamic loss scaling for f16 mixed precision (torch.cuda.amp.GradScaler): the scale, plus the inf/NaN check of
// the current step between unscale_() and update().
class GradScaler {
 public:
  // Throws ember::Error when init_scale is not positive and finite, growth_factor <= 1, backoff_factor is outside
  // (0, 1), growth_interval < 1 or dtype is not floating. With dtype bf16 it warns once and is disabled.
  explicit GradScaler(GradScalerConfig config = {});

  // False when built with enabled = false or for bf16; every call then passes through.
  bool is_enabled() const { return enabled_; }
  // loss * scale (the loss itself when disabled). Under bf16 autocast it warns once and passes
  // the loss through, and the step that follows (unscale_, step, update) passes through too.
  DynTensor scale(DynTensor loss) const;
  // Multiplies every gradient by 1/scale and records whether any element is inf or NaN. At most
  // once per step (between updates); step() calls it when the caller did not.
  void unscale_(optim::GradientsParams& grads);
  // The optimizer's step with the unscaled gradients, or `module` unchanged when they held inf/NaN.
  template <class M>
  M step(optim::Optimizer& opt, M module, optim::GradientsParams grads, double lr) {
    if (!enabled_ || bf16_step_) return opt.step(std::move(module), std::move(grads), lr);
    if (!unscaled_) unscale_(grads);
    if (found_inf_) {
      skipped_ = true;
      return module;
    }
    skipped_ = false;
    return opt.step(std::move(module), std::move(grads), lr);
  }
  // As above, collecting the module's parameter gradients from `grads` first.
  template <class M>
  M step(optim::Optimizer& opt, M module, const Gradients& grads, double lr) {
    optim::GradientsParams g = optim::GradientsParams::from(module, grads);
    return step(opt, std::move(module), std::move(g), lr);
  }
  // Adjusts the scale after a step: backoff after an overflow, growth after growth_interval clean
  // steps. Needs an unscale_ (or step) since the last update.
  void update();
  // Sets the scale (torch's update(new_scale)); the growth tracker restarts.
  void update(double new_scale);

  // The current loss scale; 1 when disabled.
  double get_scale() const { return enabled_ ? scale_ : 1.0; }
  // Clean steps since the scale last changed (torch's _growth_tracker).
  int64_t growth_tracker() const { return growth_tracker_; }
  bool found_inf() const { return found_inf_; }         // of the last unscale_
  bool last_step_skipped() const { return skipped_; }   // the last step() skipped the update
  // The options, with the growth settings as load_state_dict() last restored them.
  const GradScalerConfig& config() const { return config_; }

  // PyTorch's state_dict keys: scale, growth_factor, backoff_factor, growth_interval,
  // _growth_tracker (0-d tensors, f64 and i64). Empty when disabled.
  nn::NamedTensors state_dict() const;
  // Restores it; throws an Error naming a missing key (and changes nothing then).
  void load_state_dict(const nn::NamedTensors& state);

 private:
  GradScalerConfig config_;
  bool enabled_;
  double scale_;
  int64_t growth_tracker_ = 0;
  bool unscaled_ = false;   // unscale_ ran since the last update
  bool found_inf_ = false;
  bool skipped_ = false;
  mutable bool bf16_step_ = false;  // scale() passed the loss through (bf16 autocast); until update()
};

// Where amp's warnings go (default: one line on stderr). Returns the previous handler.
using WarningHandler = std::function<void(std::string_view)>;
// Sends amp's warnings to `handler` (an empty one restores stderr); returns the previous handler. Thread-safe.
WarningHandler set_warning_handler(WarningHandler handler);

// The loss scaling of a train step that does not own the scaler (a Learner's step): multiplied by
// the scale of the scaler made active on this thread by ActiveScaler, the loss itself otherwise.
//   auto train_step = [](Model& m, const Batch& b) {
//     DynTensor loss = nn::cross_entropy(m.forward(b.x), b.y);
//     return train::TrainStepResult{{loss, {}, {}}, amp::scale_loss(loss).backward()};
//   };
DynTensor scale_loss(DynTensor loss);
// Makes a scaler the one scale_loss() uses on this thread, for the guard's lifetime (RAII, nestable).
class ActiveScaler {
 public:
  // Activates `scaler` (not owned; nullptr deactivates) until destruction restores the previous one.
  explicit ActiveScaler(const GradScaler* scaler);
  ~ActiveScaler();
  ActiveScaler(const ActiveScaler&) = delete;
  ActiveScaler& operator=(const ActiveScaler&) = delete;

 private:
  const GradScaler* prev_;
};

}  // namespace ember::amp
