// Saving and loading modules: safetensors (native, written atomically) and PyTorch .pt/.pth.
//
//   # nn::Linear model = nn::LinearConfig{4, 2}.init(Device::cpu());
//   nn::save(model, "model.safetensors");
//   nn::load(model, "resnet.pth", {.remap = {{"^module\\.", ""}}, .strict = false});   // -> LoadReport
#pragma once

#include <map>
#include <string>

#include "ember/nn/module.hpp"

namespace ember::nn {

// Named tensors of a file: .safetensors, or a PyTorch checkpoint (.pt/.pth/.bin/.ckpt: torch.save's zip
// format); other extensions are sniffed from the first bytes.
NamedTensors read_tensors(const std::string& path, const Device& device = Device::default_device());
// Writes a safetensors file atomically (temporary file, then rename).
void write_tensors(const std::string& path, const NamedTensors& tensors, const std::map<std::string, std::string>& metadata = {});

// Writes the module's state_dict (parameters and buffers) to a safetensors file at `path`, atomically,
// with the string `metadata` in its header.
template <class M>
void save(const M& module, const std::string& path, const std::map<std::string, std::string>& metadata = {}) {
  write_tensors(path, state_dict(module), metadata);
}

// Loads a file into `module` (on the device of its first parameter); see LoadOptions for remapping,
// layout adapters, dtype casting and partial loading.
template <class M>
LoadReport load(M& module, const std::string& path, const LoadOptions& o = {}) {
  auto sd = state_dict(module);
  Device d = sd.empty() ? Device::default_device() : sd.front().second.device();
  return load_state_dict(module, read_tensors(path, d.inner()), o);
}

}  // namespace ember::nn
