// torch.optim.SGD (PyTorch 1.13, _single_tensor_sgd).
#include "ember/core/error.hpp"
#include "ember/optim/optimizer.hpp"

namespace ember::optim {

Sgd SgdConfig::init() const { return Sgd(*this); }

Sgd::Sgd(SgdConfig config) : Optimizer(config.groups, config.clipping, config.weight_decay), c_(std::move(config)) {
  EMBER_CHECK(c_.momentum >= 0, "SGD: momentum must be >= 0, got ", c_.momentum);
  EMBER_CHECK(!c_.nesterov || (c_.momentum > 0 && c_.dampening == 0),
              "SGD: nesterov momentum requires momentum > 0 and dampening = 0, got momentum ", c_.momentum,
              " and dampening ", c_.dampening);
}

ParamState Sgd::init_state(const DynTensor&) const { return {}; }  // the buffer starts as the first gradient

std::vector<std::string> Sgd::state_names() const {
  if (c_.momentum == 0) return {};
  return {"momentum_buffer"};
}

DynTensor Sgd::update(DynTensor param, DynTensor d_p, ParamState& state, const Hyper& h) const {
  if (c_.maximize) d_p = -d_p;
  if (h.weight_decay != 0) d_p = d_p + param * h.weight_decay;
  if (c_.momentum != 0) {
    auto it = state.tensors.find("momentum_buffer");
    DynTensor buf = it == state.tensors.end() ? d_p : it->second * c_.momentum + d_p * (1 - c_.dampening);
    state.tensors["momentum_buffer"] = buf;
    d_p = c_.nesterov ? d_p + buf * c_.momentum : buf;
  }
  return param - d_p * h.lr;
}

}  // namespace ember::optim
