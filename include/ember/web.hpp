// The web layer (wasm build; docs/web.md): models that a page runs through the JavaScript API
// (web/ember.js). ONNX files need nothing here. A model defined in C++ (a struct of nn modules,
// as in examples/) is registered by name, so that the same code that trained it runs it in the
// page, with the weights from a safetensors file whose metadata "model" names it. The factory
// takes the Device and returns the module, which runs in eval mode; the registration sits at
// namespace scope in the wasm program (web/models.cpp registers the demos' models):
//
//   # auto make_tiny = [](const Device& d) { return nn::LinearConfig{4, 2}.init(d); };
//   EMBER_WEB_MODEL("tiny_linear", make_tiny);
//   // saved by the training program as nn::save(model, path, {{"model", "tiny_linear"}});
//   // loaded in the page as await ember.load("tiny.safetensors")
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ember/nn/file.hpp"
#include "ember/nn/module.hpp"

namespace ember::web {

// A loaded model as the web API runs it: one input tensor, one output tensor.
using Forward = std::function<DynTensor(DynTensor)>;
// Builds the model on `device`, loads `weights` (a state_dict) into it and returns its forward.
using Loader = std::function<Forward(const nn::NamedTensors& weights, const Device& device)>;

// Registers `name`; a second registration of one name is an Error.
void register_architecture(const std::string& name, Loader loader);
// The registered names, sorted.
std::vector<std::string> architectures();
// The loader of `name`; an Error naming the registered ones when there is none.
const Loader& architecture(const std::string& name);

// A Loader for a module type made by make(device): strict load, eval mode.
template <class Make>
Loader module_loader(Make make) {
  return [make](const nn::NamedTensors& weights, const Device& device) -> Forward {
    auto model = make(device);
    nn::load_state_dict(model, weights);
    nn::set_training(model, false);
    return [model = std::move(model)](DynTensor x) { return model.forward(std::move(x)); };
  };
}

namespace detail {
struct Registrar {
  Registrar(const std::string& name, Loader loader) { register_architecture(name, std::move(loader)); }
};
}  // namespace detail

}  // namespace ember::web

#define EMBER_WEB_CONCAT2(a, b) a##b
#define EMBER_WEB_CONCAT(a, b) EMBER_WEB_CONCAT2(a, b)
// Registers a model type under `name` at start-up; `make` is callable as make(const Device&).
#define EMBER_WEB_MODEL(name, make) \
  static const ::ember::web::detail::Registrar EMBER_WEB_CONCAT(ember_web_model_, __COUNTER__)(name, ::ember::web::module_loader(make))
