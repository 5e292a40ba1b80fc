// torch.optim.RMSprop (PyTorch 1.13, _single_tensor_rmsprop).
#include "ember/core/error.hpp"
#include "ember/optim/optimizer.hpp"

namespace ember::optim {

RmsProp RmsPropConfig::init() const { return RmsProp(*this); }

RmsProp::RmsProp(RmsPropConfig config)
    : Optimizer(config.groups, config.clipping, config.weight_decay), c_(std::move(config)) {
  EMBER_CHECK(c_.alpha >= 0, "RMSprop: alpha must be >= 0, got ", c_.alpha);
  EMBER_CHECK(c_.eps >= 0, "RMSprop: eps must be >= 0, got ", c_.eps);
  EMBER_CHECK(c_.momentum >= 0, "RMSprop: momentum must be >= 0, got ", c_.momentum);
}

ParamState RmsProp::init_state(const DynTensor& param) const {
  ParamState s;
  DynTensor zeros = DynTensor::zeros(param.shape(), param.dtype(), param.device());
  for (const auto& n : state_names()) s.tensors[n] = zeros;
  return s;
}

std::vector<std::string> RmsProp::state_names() const {
  std::vector<std::string> names{"square_avg"};
  if (c_.momentum > 0) names.emplace_back("momentum_buffer");
  if (c_.centered) names.emplace_back("grad_avg");
  return names;
}

DynTensor RmsProp::update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const {
  if (c_.maximize) grad = -grad;
  if (h.weight_decay != 0) grad = grad + param * h.weight_decay;
  const double alpha = c_.alpha;
  DynTensor square_avg = state.tensors.at("square_avg") * alpha + (grad * (1 - alpha)) * grad;
  state.tensors["square_avg"] = square_avg;
  DynTensor avg;
  if (c_.centered) {
    DynTensor grad_avg = state.tensors.at("grad_avg") * alpha + grad * (1 - alpha);
    state.tensors["grad_avg"] = grad_avg;
    avg = sqrt(square_avg - grad_avg * grad_avg);
  } else {
    avg = sqrt(square_avg);
  }
  avg = avg + c_.eps;
  if (c_.momentum > 0) {
    DynTensor buf = state.tensors.at("momentum_buffer") * c_.momentum + grad / avg;
    state.tensors["momentum_buffer"] = buf;
    return param - buf * h.lr;
  }
  return param + (grad * -h.lr) / avg;
}

}  // namespace ember::optim
