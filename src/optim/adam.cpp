// torch.optim.Adam and torch.optim.AdamW (PyTorch 1.13, _single_tensor_adam / _single_tensor_adamw).
#include <cmath>

#include "ember/core/error.hpp"
#include "ember/optim/optimizer.hpp"

namespace ember::optim {

namespace {
void check_adam(const char* name, std::pair<double, double> betas, double eps, bool amsgrad, bool capturable) {
  EMBER_CHECK(!(amsgrad && capturable), name, ": capturable needs amsgrad off");
  EMBER_CHECK(eps >= 0, name, ": eps must be >= 0, got ", eps);
  EMBER_CHECK(betas.first >= 0 && betas.first < 1, name, ": betas.first must be in [0, 1), got ", betas.first);
  EMBER_CHECK(betas.second >= 0 && betas.second < 1, name, ": betas.second must be in [0, 1), got ", betas.second);
}

ParamState adam_state(const DynTensor& param, bool amsgrad) {
  ParamState s;
  DynTensor zeros = DynTensor::zeros(param.shape(), param.dtype(), param.device());
  s.tensors["exp_avg"] = zeros;
  s.tensors["exp_avg_sq"] = zeros;
  if (amsgrad) s.tensors["max_exp_avg_sq"] = zeros;
  return s;
}

std::vector<std::string> adam_names(bool amsgrad) {
  if (amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

// The moment updates and the step shared by both; `grad` already carries any L2 term, and
// `param` any decoupled decay.
DynTensor adam_step(const DynTensor& param, const DynTensor& grad, ParamState& state, double lr,
                    std::pair<double, double> betas, double eps, bool amsgrad) {
  auto [beta1, beta2] = betas;
  DynTensor exp_avg = state.tensors.at("exp_avg") * beta1 + grad * (1 - beta1);
  DynTensor exp_avg_sq = state.tensors.at("exp_avg_sq") * beta2 + (grad * (1 - beta2)) * grad;
  state.tensors["exp_avg"] = exp_avg;
  state.tensors["exp_avg_sq"] = exp_avg_sq;
  const double step = static_cast<double>(state.step);
  const double bias_correction1 = 1 - std::pow(beta1, step);
  const double bias_correction2 = 1 - std::pow(beta2, step);
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  DynTensor second = exp_avg_sq;
  if (amsgrad) {
    second = maximum(state.tensors.at("max_exp_avg_sq"), exp_avg_sq);
    state.tensors["max_exp_avg_sq"] = second;
  }
  DynTensor denom = sqrt(second) / bias_correction2_sqrt + eps;
  return param + (exp_avg * -step_size) / denom;
}

// Without amsgrad the whole update is one fused op (one kernel instead of about eleven).
// Capturable (h.lr_tensor defined): the op reads the learning rate and the step on the device.
DynTensor fused_step(DynTensor param, DynTensor grad, ParamState& state, const Optimizer::Hyper& h,
                     std::pair<double, double> betas, double eps, bool maximize, bool decoupled) {
  const double lr = h.lr, weight_decay = h.weight_decay;
  AdamAttrs a;
  a.lr = lr;
  a.beta1 = betas.first;
  a.beta2 = betas.second;
  a.eps = eps;
  a.weight_decay = weight_decay;
  a.step = state.step;
  a.decoupled = decoupled;
  a.maximize = maximize;
  if (h.lr_tensor.defined()) {
    a.lr = h.lr_scale;
    a.step = 1;  // (not used: the device's count is)
    if (!state.device_step.defined())
      state.device_step = DynTensor::full(Shape{}, Scalar(double(state.step - 1)), DType::f32, param.device());
    auto r = ember::adam_step(std::move(param), std::move(grad), std::move(state.tensors.at("exp_avg")),
                              std::move(state.tensors.at("exp_avg_sq")), a, h.lr_tensor,
                              std::move(state.device_step));
    state.tensors["exp_avg"] = std::move(r.exp_avg);
    state.tensors["exp_avg_sq"] = std::move(r.exp_avg_sq);
    state.device_step = std::move(r.step);
    return std::move(r.param);
  }
  auto r = ember::adam_step(std::move(param), std::move(grad), std::move(state.tensors.at("exp_avg")),
                            std::move(state.tensors.at("exp_avg_sq")), a);
  state.tensors["exp_avg"] = std::move(r.exp_avg);
  state.tensors["exp_avg_sq"] = std::move(r.exp_avg_sq);
  return std::move(r.param);
}
// Every item's update through multi-tensor adam_step ops: one per run of parameters that share a
// device, a dtype and hyper-parameters, in the items' order (in a training loop: one per
// parameter group and dtype). The host form's runs also share a step count. The capturable form
// (`capturable`, items whose learning rate is a tensor) takes the device-scalar op, whose
// parameters share the learning-rate tensor and lr_scale and each read and advance their own step
// count on the device: on CUDA two launches per 32 parameters where one update each took two.
// Items of a capturable optimizer stepped with a host learning rate update one by one.
void fused_steps(std::vector<Optimizer::Item>& items, std::pair<double, double> betas, double eps, bool maximize,
                 bool decoupled, bool capturable) {
  std::vector<bool> done(items.size(), false);
  for (size_t i = 0; i < items.size(); ++i) {
    if (done[i]) continue;
    Optimizer::Item& lead = items[i];
    const bool device_scalars = capturable && lead.hyper.lr_tensor.defined();
    if (capturable && !device_scalars) {
      lead.next = fused_step(std::move(lead.param), std::move(lead.grad), lead.state, lead.hyper, betas, eps, maximize,
                             decoupled);
      done[i] = true;
      continue;
    }
    auto same = [&](const Optimizer::Item& o) {
      if (o.param.device() != lead.param.device() || o.param.dtype() != lead.param.dtype() ||
          o.hyper.weight_decay != lead.hyper.weight_decay)
        return false;
      if (!device_scalars) return o.state.step == lead.state.step && o.hyper.lr == lead.hyper.lr;
      return o.hyper.lr_tensor.defined() && o.hyper.lr_tensor.primitive() == lead.hyper.lr_tensor.primitive() &&
             o.hyper.lr_scale == lead.hyper.lr_scale;
    };
    std::vector<size_t> run;
    for (size_t j = i; j < items.size(); ++j)
      if (!done[j] && same(items[j])) {
        run.push_back(j);
        done[j] = true;
      }
    AdamAttrs a;
    a.lr = device_scalars ? lead.hyper.lr_scale : lead.hyper.lr;
    a.beta1 = betas.first;
    a.beta2 = betas.second;
    a.eps = eps;
    a.weight_decay = lead.hyper.weight_decay;
    a.step = lead.state.step;  // (the device-scalar form reads the counts below)
    a.decoupled = decoupled;
    a.maximize = maximize;
    std::vector<DynTensor> params, grads, ms, vs, steps;
    for (size_t j : run) {
      Optimizer::Item& it = items[j];
      params.push_back(std::move(it.param));
      grads.push_back(std::move(it.grad));
      ms.push_back(std::move(it.state.tensors.at("exp_avg")));
      vs.push_back(std::move(it.state.tensors.at("exp_avg_sq")));
      if (!device_scalars) continue;
      if (!it.state.device_step.defined())
        it.state.device_step =
            DynTensor::full(Shape{}, Scalar(double(it.state.step - 1)), DType::f32, params.back().device());
      steps.push_back(std::move(it.state.device_step));
    }
    std::vector<AdamUpdate> r =
        device_scalars ? adam_step_multi(std::move(params), std::move(grads), std::move(ms), std::move(vs), a,
                                         lead.hyper.lr_tensor, std::move(steps))
                       : adam_step_multi(std::move(params), std::move(grads), std::move(ms), std::move(vs), a);
    for (size_t q = 0; q < run.size(); ++q) {
      Optimizer::Item& it = items[run[q]];
      it.next = std::move(r[q].param);
      it.state.tensors["exp_avg"] = std::move(r[q].exp_avg);
      it.state.tensors["exp_avg_sq"] = std::move(r[q].exp_avg_sq);
      if (device_scalars) it.state.device_step = std::move(r[q].step);
    }
  }
}
}  // namespace

Adam AdamConfig::init() const { return Adam(*this); }
AdamW AdamWConfig::init() const { return AdamW(*this); }

Adam::Adam(AdamConfig config) : Optimizer(config.groups, config.clipping, config.weight_decay), c_(std::move(config)) {
  check_adam("Adam", c_.betas, c_.eps, c_.amsgrad, c_.capturable);
}
ParamState Adam::init_state(const DynTensor& param) const { return adam_state(param, c_.amsgrad); }
std::vector<std::string> Adam::state_names() const { return adam_names(c_.amsgrad); }
DynTensor Adam::update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const {
  if (!c_.amsgrad)
    return fused_step(std::move(param), std::move(grad), state, h, c_.betas, c_.eps, c_.maximize, false);
  if (c_.maximize) grad = -grad;
  if (h.weight_decay != 0) grad = grad + param * h.weight_decay;
  return adam_step(param, grad, state, h.lr, c_.betas, c_.eps, c_.amsgrad);
}

void Adam::update_all(std::vector<Item>& items) const {
  if (c_.amsgrad) return Optimizer::update_all(items);
  fused_steps(items, c_.betas, c_.eps, c_.maximize, false, c_.capturable);
}

AdamW::AdamW(AdamWConfig config)
    : Optimizer(config.groups, config.clipping, config.weight_decay), c_(std::move(config)) {
  check_adam("AdamW", c_.betas, c_.eps, c_.amsgrad, c_.capturable);
}
ParamState AdamW::init_state(const DynTensor& param) const { return adam_state(param, c_.amsgrad); }
std::vector<std::string> AdamW::state_names() const { return adam_names(c_.amsgrad); }
DynTensor AdamW::update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const {
  if (!c_.amsgrad)
    return fused_step(std::move(param), std::move(grad), state, h, c_.betas, c_.eps, c_.maximize, true);
  if (c_.maximize) grad = -grad;
  DynTensor decayed = param * (1 - h.lr * h.weight_decay);
  return adam_step(decayed, grad, state, h.lr, c_.betas, c_.eps, c_.amsgrad);
}

void AdamW::update_all(std::vector<Item>& items) const {
  if (c_.amsgrad) return Optimizer::update_all(items);
  fused_steps(items, c_.betas, c_.eps, c_.maximize, true, c_.capturable);
}

}  // namespace ember::optim
