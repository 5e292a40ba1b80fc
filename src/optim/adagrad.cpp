// torch.optim.Adagrad (PyTorch 1.13, _single_tensor_adagrad, dense gradients).
#include "ember/core/error.hpp"
#include "ember/optim/optimizer.hpp"

namespace ember::optim {

AdaGrad AdaGradConfig::init() const { return AdaGrad(*this); }

AdaGrad::AdaGrad(AdaGradConfig config)
    : Optimizer(config.groups, config.clipping, config.weight_decay), c_(std::move(config)) {
  EMBER_CHECK(c_.lr_decay >= 0, "Adagrad: lr_decay must be >= 0, got ", c_.lr_decay);
  EMBER_CHECK(c_.initial_accumulator_value >= 0, "Adagrad: initial_accumulator_value must be >= 0, got ",
              c_.initial_accumulator_value);
  EMBER_CHECK(c_.eps >= 0, "Adagrad: eps must be >= 0, got ", c_.eps);
}

ParamState AdaGrad::init_state(const DynTensor& param) const {
  ParamState s;
  s.tensors["sum"] = DynTensor::full(param.shape(), c_.initial_accumulator_value, param.dtype(), param.device());
  return s;
}

std::vector<std::string> AdaGrad::state_names() const { return {"sum"}; }

DynTensor AdaGrad::update(DynTensor param, DynTensor grad, ParamState& state, const Hyper& h) const {
  if (c_.maximize) grad = -grad;
  if (h.weight_decay != 0) grad = grad + param * h.weight_decay;
  const double clr = h.lr / (1 + static_cast<double>(state.step - 1) * c_.lr_decay);
  DynTensor sum = state.tensors.at("sum") + grad * grad;
  state.tensors["sum"] = sum;
  DynTensor std_dev = sqrt(sum) + c_.eps;
  return param + (grad * -clr) / std_dev;
}

}  // namespace ember::optim
