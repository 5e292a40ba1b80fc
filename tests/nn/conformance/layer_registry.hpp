// Maps each layer type of cases/layers.json (PyTorch's module names) to ember: build the layer
// from the case's config (PyTorch argument names) and run its forward on the case's inputs.
// Used by layer_conformance_test.cpp.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.hpp"

namespace ember::nn_conformance {

using Json = nlohmann::json;
using Tensors = std::vector<DynTensor>;

// A layer built for one case, type-erased: the module lives behind the functions.
struct BuiltLayer {
  std::function<Tensors(const Tensors& inputs)> forward;
  std::function<void(nn::NamedTensors)> load_strict;                       // nn::load_state_dict, strict
  std::function<std::vector<std::pair<std::string, nn::Param>>()> params;  // by state_dict path
  std::function<nn::NamedTensors()> buffers;                               // by state_dict path
  std::function<void(bool)> set_training;
};

// Wraps a module value and its forward call (a callable (M&, const Tensors&) -> Tensors; the
// module is non-const so that a training-mode BatchNorm updates its running statistics).
template <class M, class Fwd>
BuiltLayer wrap(M module, Fwd fwd) {
  auto m = std::make_shared<M>(std::move(module));
  BuiltLayer b;
  b.forward = [m, fwd](const Tensors& in) { return fwd(*m, in); };
  b.load_strict = [m](nn::NamedTensors src) { nn::load_state_dict(*m, std::move(src)); };
  b.params = [m] {
    std::vector<std::pair<std::string, nn::Param>> out;
    nn::for_each_param(*m, [&](const std::string& path, nn::Param& p) { out.emplace_back(path, p); });
    return out;
  };
  b.buffers = [m] {
    nn::NamedTensors out;
    nn::for_each_buffer(*m, [&](const std::string& path, nn::Buffer& x) { out.emplace_back(path, x.value); });
    return out;
  };
  b.set_training = [m](bool t) { nn::set_training(*m, t); };
  return b;
}

// Builds the layer for (config, call options) on `device`.
using LayerBuilder = std::function<BuiltLayer(const Json& config, const Json& call, const Device& device)>;

const std::map<std::string, LayerBuilder>& layer_registry();

}  // namespace ember::nn_conformance
