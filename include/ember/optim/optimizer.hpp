// Optimizers: they take a module and its gradients and return the updated module (parameters
// keep their ids, so the per-parameter state follows them). The algorithms reproduce PyTorch
// 1.13's update formulas, names and defaults; Lion and LAMB follow their papers.
//
//   # Device dev = Device::cpu().autodiff();
//   # nn::Linear model = nn::LinearConfig{4, 1}.init(dev);
//   # auto loss = [&](const nn::Linear& m) { return m.forward(DynTensor::ones({2, 4}, DType::f32, dev)).mean(); };
//   # optim::CosineAnnealingLR sched(0.1, {.t_max = 100});
//   optim::AdamW opt({.weight_decay = 0.01, .clipping = optim::GradientClipping::by_norm(1.0)});
//   for (int step = 0; step < 100; ++step) {
//     Gradients grads = loss(model).backward();
//     model = opt.step(model, grads, /*lr=*/sched.lr());
//   }
//   nn::NamedTensors s = opt.state_dict(model);   // "fc1.weight.exp_avg", "fc1.weight.step", ...
//   opt.load_state_dict(model, s);                 // by parameter path
//   # run
//
// Parameter groups: the first ParamGroup whose pattern (std::regex, ECMAScript, searched in the
// parameter path as with std::regex_search: anchor with ^...$ for a whole-path match) matches a
// parameter gives it lr * lr_scale and, when set, its own weight decay; the other parameters use
// lr and the config's weight_decay. Frozen parameters and parameters without a gradient are left
// untouched (as PyTorch skips parameters whose .grad is None). Clipping, when configured, applies
// to the gradients of all the stepped parameters together before the update. Updates are tensor
// ops computed in each parameter's dtype on its device; Adam and AdamW (amsgrad and capturable
// off) update all the parameters that share a dtype, a device, a step count and a group in one
// multi-tensor op (adam_step_multi: on CUDA one launch per 32 tensors, as torch.optim's fused=True).
//
// In place. When the module was moved into step() (nothing else holds its parameters), each new
// value and state tensor takes the memory of the old one, so a step allocates nothing and a CUDA
// graph that reads the parameters and the state reads the new values. (An Error in such a step,
// which the checks before any update leave to out-of-memory, resets the state of the parameters
// it reached.) A module passed as a copy keeps its values and the optimizer state is replaced,
// not overwritten.
//
// Capturable (Adam and AdamW with `.capturable = true`, torch.optim's capturable=True): the
// learning rate and the step counts live in device memory and the update reads them there, so
// the whole step, optimizer included, can be recorded in a CUDA graph and replayed. Pass the
// learning rate as an f32 0-d tensor that is an input of the graph::Step (docs/cuda-graphs.md);
// a double learning rate is recorded as the value of the capture.
//
//   # Device dev = Device::cpu().autodiff();
//   # nn::Linear model = nn::LinearConfig{4, 1}.init(dev);
//   # auto loss = [&](const nn::Linear& m) { return m.forward(DynTensor::ones({2, 4}, DType::f32, dev)).mean(); };
//   optim::AdamW opt({.capturable = true});
//   DynTensor lr = DynTensor::full({}, 1e-3, DType::f32, dev);
//   Gradients grads = loss(model).backward();
//   model = opt.step(std::move(model), grads, lr);   // reads lr on the device
//   # run
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.hpp"
#include "ember/optim/gradients.hpp"

namespace ember::optim {

// Overrides for the parameters whose path matches `pattern` (torch's param_groups); of several groups the first
// match applies.
struct ParamGroup {
  std::string pattern;                   // std::regex searched in the parameter path, e.g. "^encoder\\." or "bias$"
  double lr_scale = 1;                   // the parameters' lr is the step's lr times lr_scale, >= 0
  std::optional<double> weight_decay{};  // replaces the config's weight_decay for this group
};

// Gradient clipping applied to all the stepped gradients together before each update.
struct GradientClipping {
  // Clamp each element (torch.nn.utils.clip_grad_value_) or rescale by the total norm (clip_grad_norm_).
  enum class Kind : uint8_t { value, norm };
  Kind kind = Kind::norm;  // which clipping: see by_value() and by_norm()
  double threshold = 1;    // value: clip_value; norm: max_norm
  double norm_type = 2;    // norm only; may be infinity

  // Clamps every gradient element to [-clip_value, clip_value].
  static GradientClipping by_value(double clip_value) { return {Kind::value, clip_value, 2}; }
  // Scales every gradient by min(1, max_norm / (total + 1e-6)), total being the norm_type-norm of all the gradients
  // together (norm_type may be infinity).
  static GradientClipping by_norm(double max_norm, double norm_type = 2) { return {Kind::norm, max_norm, norm_type}; }
  // Clips `grads` in place as configured (the total norm is not read back, so nothing waits for the device).
  void apply(GradientsParams& grads) const;
};

// One parameter's optimizer state: the number of updates it received and named tensors
// (PyTorch's names: "exp_avg", "momentum_buffer", ...).
struct ParamState {
  int64_t step = 0;                          // updates received; for capturable optimizers, the host's step() calls
  std::map<std::string, DynTensor> tensors;  // by state name, each with the parameter's shape, dtype and device
  // capturable optimizers: the step count before this update in device memory (f32 0-d), which
  // the updates advance there; `step` is then the count of the host's calls
  DynTensor device_step{};
};

// Base of the optimizers (torch.optim.Optimizer): parameter groups, clipping and the per-parameter state around
// one subclass update() per parameter (or one update_all() of them all). The state is keyed by parameter id and follows the module across steps.
class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // One update of every trainable parameter that has a gradient; returns the updated module.
  template <class M>
  M step(M module, const Gradients& grads, double lr) {
    GradientsParams g = GradientsParams::from(module, grads);
    return step(std::move(module), std::move(g), lr);
  }
  // As above, with the gradients already collected (e.g. accumulated or clipped by hand). Throws ember::Error when
  // lr is negative or not finite, or a gradient's shape differs from its parameter's.
  template <class M>
  M step(M module, GradientsParams grads, double lr) {
    step_params(slots(module), std::move(grads), lr, DynTensor());
    return module;
  }
  // The learning rate as a 0-d floating tensor, read on the device (capturable optimizers only).
  template <class M>
  M step(M module, const Gradients& grads, const DynTensor& lr) {
    GradientsParams g = GradientsParams::from(module, grads);
    return step(std::move(module), std::move(g), lr);
  }
  // As above, with the gradients already collected. Throws ember::Error unless the optimizer is capturable and lr is
  // a floating 0-d tensor.
  template <class M>
  M step(M module, GradientsParams grads, const DynTensor& lr) {
    step_params(slots(module), std::move(grads), 0, lr);
    return module;
  }

  // The state of the module's parameters as "<param path>.<state name>" -> tensor; the step
  // counter is an i64 0-d tensor "<param path>.step". Parameters not yet updated have no keys.
  template <class M>
  nn::NamedTensors state_dict(const M& module) const {
    return save_state(slots(const_cast<M&>(module)));
  }
  // Replaces the state of the module's parameters with `state` (keys as state_dict writes them;
  // tensors are cast to the parameter's dtype and moved to its device). A parameter without any
  // key starts fresh. Throws an Error listing every unexpected key, missing state entry and
  // shape mismatch, and then changes nothing.
  template <class M>
  void load_state_dict(const M& module, const nn::NamedTensors& state) {
    load_state(slots(const_cast<M&>(module)), state);
  }
  // Forgets all state.
  void reset() { state_.clear(); }

  // What update() is given for one parameter:
  struct Hyper {            // resolved for one parameter: lr * lr_scale and the group's weight decay
    double lr;              // the step's lr times the group's lr_scale (0 when the lr is the tensor lr_tensor)
    double weight_decay;    // the group's weight decay, or else the config's
    double lr_scale = 1;    // the group's lr_scale, which a capturable update applies to lr_tensor
    DynTensor lr_tensor{};  // capturable: the step's learning rate (f32 0-d, on the parameter's device)
  };

  // What update_all() is given for one parameter, and `next`, its new value, which it sets.
  struct Item {
    DynTensor param, grad;  // as update() takes them
    ParamState state;       // as update() takes it, updated in place
    Hyper hyper;            // the parameter's hyper-parameters
    DynTensor next{};       // the new value (set by update_all)
  };
  // The PyTorch-style name, e.g. "Adam".
  virtual std::string name() const = 0;
  // Whether the learning rate and the step counts are read on the device (see above).
  virtual bool capturable() const { return false; }

 protected:
  // `weight_decay` applies to parameters without a group that sets its own. Throws ember::Error when a weight decay,
  // lr_scale or clipping threshold is negative, a norm_type is not > 0 or a pattern is not a valid regex.
  Optimizer(std::vector<ParamGroup> groups, std::optional<GradientClipping> clipping, double weight_decay);

  // The state of a parameter before its first update.
  virtual ParamState init_state(const DynTensor& param) const = 0;
  // The tensor names a state holds after an update (to check load_state_dict input).
  virtual std::vector<std::string> state_names() const = 0;
  // One parameter's new value. `state.step` has already been incremented; `grad` has the
  // parameter's dtype, shape and device. Runs with gradient recording off. `param` is the
  // module's own tensor, moved out of it: an update that moves it into its last op lets the
  // backend write the new value into the same memory when nothing else holds the parameter (the
  // caller moved the module in), which a CUDA graph reading the parameter relies on.
  virtual DynTensor update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const = 0;
  // The new values of all the parameters of one step: update() of each by default. An optimizer
  // that updates many tensors in one op overrides it (Adam and AdamW without amsgrad: one
  // multi-tensor adam_step per dtype, device, step count and hyper-parameters).
  virtual void update_all(std::vector<Item>& items) const;

 private:
  using Slots = std::vector<std::pair<std::string, nn::Param*>>;
  template <class M>
  static Slots slots(M& module) {
    Slots out;
    nn::for_each_param(module, [&](const std::string& path, nn::Param& p) { out.emplace_back(path, &p); });
    return out;
  }
  void step_params(const Slots& params, GradientsParams grads, double lr, const DynTensor& lr_tensor);
  nn::NamedTensors save_state(const Slots& params) const;
  void load_state(const Slots& params, const nn::NamedTensors& state);
  Hyper resolve(const std::string& path, double lr) const;

  struct CompiledGroups;  // the groups' regexes (kept out of this header)
  std::shared_ptr<const CompiledGroups> groups_;
  std::optional<GradientClipping> clipping_;
  double weight_decay_;
  std::map<uint64_t, ParamState> state_;  // by parameter id
};

// ---- torch.optim.SGD ----
class Sgd;
// Options of Sgd, with torch.optim.SGD's names and defaults (the lr is passed to each step).
struct SgdConfig {
  double momentum = 0;                         // momentum factor, >= 0; 0 turns momentum off
  double dampening = 0;                        // the momentum buffer adds (1 - dampening) * grad
  double weight_decay = 0;                     // L2 penalty added to the gradient
  bool nesterov = false;                       // Nesterov momentum; needs momentum > 0 and dampening 0
  bool maximize = false;                       // ascends the objective instead of descending it
  std::vector<ParamGroup> groups{};            // per-parameter overrides (see ParamGroup)
  std::optional<GradientClipping> clipping{};  // clipping before the update; none by default
  // An Sgd with this config; throws as its constructor does.
  Sgd init() const;
};
// Stochastic gradient descent with optional momentum (torch.optim.SGD); with momentum, state "momentum_buffer".
class Sgd final : public Optimizer {
 public:
  // Throws ember::Error when momentum < 0, when nesterov is set without momentum > 0 and dampening 0, or when a
  // group or the clipping is invalid (see Optimizer's constructor).
  explicit Sgd(SgdConfig config = {});
  // The options it was built with.
  const SgdConfig& config() const { return c_; }
  std::string name() const override { return "SGD"; }

 protected:
  ParamState init_state(const DynTensor& param) const override;
  std::vector<std::string> state_names() const override;
  DynTensor update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const override;

 private:
  SgdConfig c_;
};

// ---- torch.optim.Adam (L2 weight decay) and torch.optim.AdamW (decoupled weight decay) ----
class Adam;
// Options of Adam, with torch.optim.Adam's names and defaults (the lr is passed to each step).
struct AdamConfig {
  std::pair<double, double> betas{0.9, 0.999};  // decay rates of the first and second moment averages, each in [0, 1)
  double eps = 1e-8;                            // added to the denominator for numerical stability, >= 0
  double weight_decay = 0;                      // L2 penalty added to the gradient, >= 0
  bool amsgrad = false;              // uses the maximum of the second-moment averages so far (state "max_exp_avg_sq")
  bool maximize = false;             // ascends the objective instead of descending it
  bool capturable = false;           // lr and step read on the device (amsgrad off)
  std::vector<ParamGroup> groups{};  // per-parameter overrides (see ParamGroup)
  std::optional<GradientClipping> clipping{};  // clipping before the update; none by default
  // An Adam with this config; throws as its constructor does.
  Adam init() const;
};
class AdamW;
// Options of AdamW, with torch.optim.AdamW's names and defaults (the lr is passed to each step).
struct AdamWConfig {
  std::pair<double, double> betas{0.9, 0.999};  // decay rates of the first and second moment averages, each in [0, 1)
  double eps = 1e-8;                            // added to the denominator for numerical stability, >= 0
  double weight_decay = 1e-2;                   // decoupled: param *= 1 - lr * weight_decay
  bool amsgrad = false;              // uses the maximum of the second-moment averages so far (state "max_exp_avg_sq")
  bool maximize = false;             // ascends the objective instead of descending it
  bool capturable = false;           // lr and step read on the device (amsgrad off)
  std::vector<ParamGroup> groups{};  // per-parameter overrides (see ParamGroup)
  std::optional<GradientClipping> clipping{};  // clipping before the update; none by default
  // An AdamW with this config; throws as its constructor does.
  AdamW init() const;
};
// Adam with L2 weight decay (torch.optim.Adam); state "exp_avg", "exp_avg_sq" and, with amsgrad, "max_exp_avg_sq".
class Adam final : public Optimizer {
 public:
  // Throws ember::Error when a beta is outside [0, 1), eps < 0, capturable is set with amsgrad, or a group or the
  // clipping is invalid (see Optimizer's constructor).
  explicit Adam(AdamConfig config = {});
  // The options it was built with.
  const AdamConfig& config() const { return c_; }
  std::string name() const override { return "Adam"; }
  bool capturable() const override { return c_.capturable; }

 protected:
  ParamState init_state(const DynTensor& param) const override;
  std::vector<std::string> state_names() const override;
  DynTensor update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const override;
  void update_all(std::vector<Item>& items) const override;

 private:
  AdamConfig c_;
};
// Adam with decoupled weight decay (torch.optim.AdamW); the same state as Adam.
class AdamW final : public Optimizer {
 public:
  // Throws ember::Error when a beta is outside [0, 1), eps < 0, capturable is set with amsgrad, or a group or the
  // clipping is invalid (see Optimizer's constructor).
  explicit AdamW(AdamWConfig config = {});
  // The options it was built with.
  const AdamWConfig& config() const { return c_; }
  std::string name() const override { return "AdamW"; }
  bool capturable() const override { return c_.capturable; }

 protected:
  ParamState init_state(const DynTensor& param) const override;
  std::vector<std::string> state_names() const override;
  DynTensor update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const override;
  void update_all(std::vector<Item>& items) const override;

 private:
  AdamWConfig c_;
};

// ---- torch.optim.RMSprop ----
class RmsProp;
// Options of RmsProp, with torch.optim.RMSprop's names and defaults (the lr is passed to each step).
struct RmsPropConfig {
  double alpha = 0.99;      // smoothing constant of the squared-gradient average, >= 0
  double eps = 1e-8;        // added to the denominator for numerical stability, >= 0
  double weight_decay = 0;  // L2 penalty added to the gradient, >= 0
  double momentum = 0;      // momentum factor, >= 0; 0 turns momentum off
  bool centered = false;    // normalizes by an estimate of the gradient's variance instead of its second moment
  bool maximize = false;    // ascends the objective instead of descending it
  std::vector<ParamGroup> groups{};            // per-parameter overrides (see ParamGroup)
  std::optional<GradientClipping> clipping{};  // clipping before the update; none by default
  // An RmsProp with this config; throws as its constructor does.
  RmsProp init() const;
};
// RMSprop (torch.optim.RMSprop); state "square_avg", plus "momentum_buffer" with momentum and "grad_avg" when
// centered.
class RmsProp final : public Optimizer {
 public:
  // Throws ember::Error when alpha, eps or momentum is negative, or a group or the clipping is invalid (see
  // Optimizer's constructor).
  explicit RmsProp(RmsPropConfig config = {});
  // The options it was built with.
  const RmsPropConfig& config() const { return c_; }
  std::string name() const override { return "RMSprop"; }

 protected:
  ParamState init_state(const DynTensor& param) const override;
  std::vector<std::string> state_names() const override;
  DynTensor update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const override;

 private:
  RmsPropConfig c_;
};

// ---- torch.optim.Adagrad ----
class AdaGrad;
// Options of AdaGrad, with torch.optim.Adagrad's names and defaults (the lr is passed to each step).
struct AdaGradConfig {
  double lr_decay = 0;                         // the lr of the t-th update is lr / (1 + (t - 1) * lr_decay), >= 0
  double weight_decay = 0;                     // L2 penalty added to the gradient, >= 0
  double initial_accumulator_value = 0;        // starting value of the squared-gradient sum, >= 0
  double eps = 1e-10;                          // added to the denominator for numerical stability, >= 0
  bool maximize = false;                       // ascends the objective instead of descending it
  std::vector<ParamGroup> groups{};            // per-parameter overrides (see ParamGroup)
  std::optional<GradientClipping> clipping{};  // clipping before the update; none by default
  // An AdaGrad with this config; throws as its constructor does.
  AdaGrad init() const;
};
// Adagrad (torch.optim.Adagrad, dense gradients); state "sum".
class AdaGrad final : public Optimizer {
 public:
  // Throws ember::Error when lr_decay, initial_accumulator_value or eps is negative, or a group or the clipping is
  // invalid (see Optimizer's constructor).
  explicit AdaGrad(AdaGradConfig config = {});
  // The options it was built with.
  const AdaGradConfig& config() const { return c_; }
  std::string name() const override { return "Adagrad"; }

 protected:
  ParamState init_state(const DynTensor& param) const override;
  std::vector<std::string> state_names() const override;
  DynTensor update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const override;

 private:
  AdaGradConfig c_;
};

// ---- Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms", Algorithm 2) ----
class Lion;
// Options of Lion, with the paper's defaults (the lr is passed to each step; the paper uses 3-10x less than AdamW).
struct LionConfig {
  // beta1 weighs the momentum in the update direction, beta2 in the momentum's running average; each in [0, 1].
  std::pair<double, double> betas{0.9, 0.99};
  double weight_decay = 0;                     // decoupled: param *= 1 - lr * weight_decay
  std::vector<ParamGroup> groups{};            // per-parameter overrides (see ParamGroup)
  std::optional<GradientClipping> clipping{};  // clipping before the update; none by default
  // A Lion with this config; throws as its constructor does.
  Lion init() const;
};
// Lion: steps by the sign of an interpolated momentum, with decoupled weight decay; state "exp_avg".
class Lion final : public Optimizer {
 public:
  // Throws ember::Error when a beta is outside [0, 1], or a group or the clipping is invalid (see Optimizer's
  // constructor).
  explicit Lion(LionConfig config = {});
  // The options it was built with.
  const LionConfig& config() const { return c_; }
  std::string name() const override { return "Lion"; }

 protected:
  ParamState init_state(const DynTensor& param) const override;
  std::vector<std::string> state_names() const override;
  DynTensor update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const override;

 private:
  LionConfig c_;
};

// ---- LAMB (You et al. 2020, "Large Batch Optimization for Deep Learning", Algorithm 2) ----
class Lamb;
// Options of Lamb (the lr is passed to each step).
struct LambConfig {
  std::pair<double, double> betas{0.9, 0.999};  // decay rates of the first and second moment averages, each in [0, 1)
  double eps = 1e-6;                            // added to the denominator for numerical stability, >= 0
  double weight_decay = 0;                      // added to the Adam ratio before the trust ratio is taken
  std::vector<ParamGroup> groups{};             // per-parameter overrides (see ParamGroup)
  std::optional<GradientClipping> clipping{};   // clipping before the update; none by default
  // A Lamb with this config; throws as its constructor does.
  Lamb init() const;
};
// LAMB: Adam's update scaled for each parameter tensor by the trust ratio norm(param) / norm(update), 1 when
// either norm is 0; state "exp_avg" and "exp_avg_sq".
class Lamb final : public Optimizer {
 public:
  // Throws ember::Error when a beta is outside [0, 1), eps < 0, or a group or the clipping is invalid (see
  // Optimizer's constructor).
  explicit Lamb(LambConfig config = {});
  // The options it was built with.
  const LambConfig& config() const { return c_; }
  std::string name() const override { return "LAMB"; }

 protected:
  ParamState init_state(const DynTensor& param) const override;
  std::vector<std::string> state_names() const override;
  DynTensor update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const override;

 private:
  LambConfig c_;
};

}  // namespace ember::optim
