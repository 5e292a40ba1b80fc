// Lion: Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms", Algorithm 2 (no PyTorch
// optimizer exists in 1.13). With g the gradient, m the momentum, lambda the weight decay:
//   c      = beta1 * m + (1 - beta1) * g
//   param  = param - lr * (sign(c) + lambda * param)   computed as param * (1 - lr * lambda) - lr * sign(c)
//   m      = beta2 * m + (1 - beta2) * g
#include "ember/core/error.hpp"
#include "ember/optim/optimizer.hpp"

namespace ember::optim {

Lion LionConfig::init() const { return Lion(*this); }

Lion::Lion(LionConfig config) : Optimizer(config.groups, config.clipping, config.weight_decay), c_(std::move(config)) {
  EMBER_CHECK(c_.betas.first >= 0 && c_.betas.first <= 1, "Lion: betas.first must be in [0, 1], got ", c_.betas.first);
  EMBER_CHECK(c_.betas.second >= 0 && c_.betas.second <= 1, "Lion: betas.second must be in [0, 1], got ",
              c_.betas.second);
}

ParamState Lion::init_state(const DynTensor& param) const {
  ParamState s;
  s.tensors["exp_avg"] = DynTensor::zeros(param.shape(), param.dtype(), param.device());
  return s;
}

std::vector<std::string> Lion::state_names() const { return {"exp_avg"}; }

DynTensor Lion::update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const {
  auto [beta1, beta2] = c_.betas;
  const DynTensor& exp_avg = state.tensors.at("exp_avg");
  DynTensor direction = sign(exp_avg * beta1 + grad * (1 - beta1));
  DynTensor next = param * (1 - h.lr * h.weight_decay) - direction * h.lr;
  state.tensors["exp_avg"] = exp_avg * beta2 + grad * (1 - beta2);
  return next;
}

}  // namespace ember::optim
