// LAMB: You et al. 2020, "Large Batch Optimization for Deep Learning", Algorithm 2 (no PyTorch
// optimizer exists in 1.13), with phi the identity and one "layer" per parameter tensor:
//   m = beta1 * m + (1 - beta1) * g            v = beta2 * v + (1 - beta2) * g^2
//   m_hat = m / (1 - beta1^t)                  v_hat = v / (1 - beta2^t)
//   u = m_hat / (sqrt(v_hat) + eps) + weight_decay * param
//   param = param - lr * (||param|| / ||u||) * u        (L2 norms over the whole tensor)
// The trust ratio ||param|| / ||u|| is taken as 1 when either norm is 0 (a zero-initialised
// parameter must still move, and a zero update must not divide by zero).
#include <cmath>

#include "ember/core/error.hpp"
#include "ember/optim/optimizer.hpp"

namespace ember::optim {

Lamb LambConfig::init() const { return Lamb(*this); }

Lamb::Lamb(LambConfig config) : Optimizer(config.groups, config.clipping, config.weight_decay), c_(std::move(config)) {
  EMBER_CHECK(c_.eps >= 0, "LAMB: eps must be >= 0, got ", c_.eps);
  EMBER_CHECK(c_.betas.first >= 0 && c_.betas.first < 1, "LAMB: betas.first must be in [0, 1), got ", c_.betas.first);
  EMBER_CHECK(c_.betas.second >= 0 && c_.betas.second < 1, "LAMB: betas.second must be in [0, 1), got ",
              c_.betas.second);
}

ParamState Lamb::init_state(const DynTensor& param) const {
  ParamState s;
  DynTensor zeros = DynTensor::zeros(param.shape(), param.dtype(), param.device());
  s.tensors["exp_avg"] = zeros;
  s.tensors["exp_avg_sq"] = zeros;
  return s;
}

std::vector<std::string> Lamb::state_names() const { return {"exp_avg", "exp_avg_sq"}; }

DynTensor Lamb::update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const {
  auto [beta1, beta2] = c_.betas;
  DynTensor exp_avg = state.tensors.at("exp_avg") * beta1 + grad * (1 - beta1);
  DynTensor exp_avg_sq = state.tensors.at("exp_avg_sq") * beta2 + (grad * (1 - beta2)) * grad;
  state.tensors["exp_avg"] = exp_avg;
  state.tensors["exp_avg_sq"] = exp_avg_sq;
  const double step = static_cast<double>(state.step);
  DynTensor m_hat = exp_avg / (1 - std::pow(beta1, step));
  DynTensor v_hat = exp_avg_sq / (1 - std::pow(beta2, step));
  DynTensor u = m_hat / (sqrt(v_hat) + c_.eps);
  if (h.weight_decay != 0) u = u + param * h.weight_decay;
  // Stays on the device: no host round trip for the norms.
  DynTensor param_norm = norm(param), update_norm = norm(u);
  DynTensor both_positive = bool_and(greater(param_norm, 0), greater(update_norm, 0));
  DynTensor trust_ratio =
      where(both_positive, param_norm / update_norm, DynTensor::ones(Shape{}, param.dtype(), param.device()));
  return param - (u * trust_ratio) * h.lr;
}

}  // namespace ember::optim
