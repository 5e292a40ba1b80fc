// Post-training quantization of a model's layers (PyTorch's torch.ao.quantization.quantize_dynamic
// for Linear layers): each Linear's weight is quantized per block along in_features and its
// forward runs the weight-only product matmul_wq (int8 or int4 weights, float activations; with
// quantize_activations, x is also rounded to int8 per block and the products run on int8 dot
// products). The layers are found by type anywhere inside the model (nn::for_each_module).
//
//   # Device dev = Device::cpu();
//   struct Mlp {
//     nn::Linear fc1, fc2;
//     EMBER_MODULE(fc1, fc2)
//     DynTensor forward(DynTensor x) const { return fc2.forward(relu(fc1.forward(x))); }
//   };
//   Mlp m{nn::LinearConfig{64, 128}.init(dev), nn::LinearConfig{128, 10}.init(dev)};
//   Mlp q = nn::quantize_dynamic(m, {.dtype = quant::QType::int4, .block = 32});
//   DynTensor y = q.forward(randn({2, 64}));                    // int4 weights, f32 in and out
//   nn::save_quantized("mlp_q4.safetensors", q);                // quantized weights + the rest
//   Mlp r{nn::LinearConfig{64, 128}.init(dev), nn::LinearConfig{128, 10}.init(dev)};
//   nn::load_quantized(r, "mlp_q4.safetensors");                 // r now computes as q
//   # run
//
// A Linear whose in_features is not a multiple of the block (or odd, for 4-bit types) is left in
// floating point; quantize_dynamic's report names it (strict = true makes it an error instead).
// Quantized layers are for inference: no gradient flows through matmul_wq. Move a model to its
// device before quantizing it (to_device moves Params, not the quantized weights; a forward on
// another device is an error naming the layer).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/nn/linear.hpp"
#include "ember/nn/module.hpp"
#include "ember/quant/quantized_tensor.hpp"
#include "ember/quant/safetensors.hpp"
#include "ember/tensor/quantized_ops.hpp"

namespace ember::nn {

// How quantize_dynamic quantizes each Linear's weight.
struct DynamicQuantConfig {
  // int8 / int4: symmetric (scale = max|w| / qmax per block); uint8 / uint4: affine (a zero
  // point per block).
  quant::QType dtype = quant::QType::int8;
  int64_t block = 32;  // weights per scale along in_features: 32, 64 or 128
  // Also round the activations to int8 per block of 32 (WeightQuant::quantize_x): faster products
  // (AVX-512 VNNI), at the cost of the activations' rounding.
  bool quantize_activations = false;
  bool keep_float = false;  // keep each float weight beside its quantized copy (default: drop it)
  bool strict = false;  // a Linear that cannot be quantized is an error (default: it stays float)
};

// A Linear's quantized weight: the quantized tensor (for saving) and the operands of matmul_wq.
struct QuantizedWeight {
  quant::QuantizedTensor tensor;  // [out_features, in_features], per block along dim 1
  quant::WeightOnlyOperands operands;  // tensor.weight_only()
  WeightQuant quant;  // bits, block and quantize_x for matmul_wq
};

// What quantize_dynamic did: the paths of the Linear layers it quantized and of those it left float.
struct QuantizeReport {
  std::vector<std::string> quantized;  // e.g. "encoder.fc1"
  std::vector<std::string> skipped;  // with the reason: "head (in_features 20 is not a multiple of 32)"
};

// The quantized weight of a Linear's float weight under `config` (the layer's path in errors).
// Throws an Error when the weight cannot be quantized so (see the top of the file).
std::shared_ptr<const QuantizedWeight> quantize_linear_weight(const DynTensor& weight, const DynamicQuantConfig& config,
                                                              const std::string& path);
// The same layer from a saved quantized tensor (per block along dim 1, as quantize_linear_weight
// makes them); quantize_activations as in the config it was made with.
std::shared_ptr<const QuantizedWeight> quantized_weight_from(const quant::QuantizedTensor& tensor,
                                                             bool quantize_activations, const std::string& path);
// y = x W^T + b through matmul_wq (x of any floating dtype; the result has x's dtype). Used by
// Linear::forward; an Error names a device mismatch or in_features that differ from x's last dim.
DynTensor quantized_linear(const QuantizedWeight& w, DynTensor x, const std::optional<DynTensor>& bias);

// Quantizes the weight of every Linear inside `model` (see the top of the file); `report`, when
// given, lists what was quantized and what was not.
template <class M>
M quantize_dynamic(M model, const DynamicQuantConfig& config = {}, QuantizeReport* report = nullptr) {
  for_each_module<Linear>(model, [&](const std::string& path, Linear& layer) {
    const std::string name = path.empty() ? std::string("(model)") : path;
    if (!layer.weight.defined()) return;  // already quantized without its float weight
    const int64_t k = layer.weight.shape()[1];
    const bool four = quant::bits(config.dtype) == 4;
    std::string why;
    if (k % config.block != 0)
      why = "in_features " + std::to_string(k) + " is not a multiple of " + std::to_string(config.block);
    else if (four && k % 2 != 0)
      why = "in_features " + std::to_string(k) + " is odd";
    if (!why.empty()) {
      EMBER_CHECK(!config.strict, "nn::quantize_dynamic: ", name, ": ", why);
      if (report) report->skipped.push_back(name + " (" + why + ")");
      return;
    }
    layer.quantized = quantize_linear_weight(layer.weight.value(), config, name);
    if (!config.keep_float) layer.weight = Param{};
    if (report) report->quantized.push_back(name);
  });
  return model;
}

// The quantized weights of `model` by parameter path ("fc1.weight"), for quant::save_safetensors.
template <class M>
std::map<std::string, quant::QuantizedTensor> quantized_weights(M& model) {
  std::map<std::string, quant::QuantizedTensor> out;
  for_each_module<Linear>(model, [&](const std::string& path, Linear& layer) {
    if (layer.quantized) out.emplace(path.empty() ? "weight" : path + ".weight", layer.quantized->tensor);
  });
  return out;
}

// Saves `model` to a safetensors file (quant::save_safetensors, atomic): the quantized weights
// (quantized_weights) and every other tensor of its state dict (float weights kept beside
// quantized ones are not saved twice), with `metadata`.
template <class M>
void save_quantized(const std::string& path, M& model, const std::map<std::string, std::string>& metadata = {}) {
  const auto quantized = quantized_weights(model);
  store::TensorMap plain;
  for (auto& [name, t] : state_dict(model))
    if (!quantized.count(name)) plain.insert(name, t);
  quant::save_safetensors(path, quantized, plain, metadata);
}

// Loads a file written by save_quantized into `model` of the same architecture: each Linear with
// a quantized entry "<path>.weight" takes it (its float weight is dropped), and the plain tensors
// load as load_state_dict does (strictly). quantize_activations as for quantize_dynamic.
template <class M>
void load_quantized(M& model, const quant::QuantizedFile& file, bool quantize_activations = false) {
  std::vector<std::string> used;
  for_each_module<Linear>(model, [&](const std::string& path, Linear& layer) {
    const std::string key = path.empty() ? "weight" : path + ".weight";
    auto it = file.quantized.find(key);
    if (it == file.quantized.end()) return;
    layer.quantized = quantized_weight_from(it->second, quantize_activations, key);
    layer.weight = Param{};
    used.push_back(key);
  });
  EMBER_CHECK(used.size() == file.quantized.size(), "nn::load_quantized: the file has ",
              file.quantized.size(), " quantized tensors but the model has ", used.size(),
              " Linear layers to take them");
  NamedTensors plain;
  for (const auto& [name, t] : file.plain)
    if (!file.quantized.count(name)) plain.emplace_back(name, t);
  load_state_dict(model, std::move(plain));
}

// load_quantized from the file at `path` (tensors on the model's device: pass it as `device`).
template <class M>
void load_quantized(M& model, const std::string& path, const Device& device = Device::default_device(),
                    bool quantize_activations = false) {
  load_quantized(model, quant::load_safetensors(path, device), quantize_activations);
}

}  // namespace ember::nn
