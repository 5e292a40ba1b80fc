// Dense layers: Linear, Bilinear, and the shape-only Identity, Flatten and Unflatten.
// Parameter names, shapes and default initialisation are PyTorch's (torch.nn.Linear etc.), so a
// torch state_dict loads with nn::load_state_dict unchanged.
//
//   # Device dev = Device::cpu(); DynTensor x = randn({2, 784}), images = randn({2, 1, 28, 28});
//   nn::Linear fc = nn::LinearConfig{784, 128}.init(dev);     // weight [128, 784], bias [128]
//   DynTensor y = fc.forward(x);                               // [*, 784] -> [*, 128]
//   DynTensor f = nn::Flatten{}.forward(images);               // [N, C, H, W] -> [N, C*H*W]
//   # run
//
// Layers without parameters are their own config: `nn::Flatten{0}` and `nn::FlattenConfig{0}.init(dev)`
// build the same thing, so every layer can be made as `XConfig{...}.init(device)`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "ember/nn/init.hpp"
#include "ember/nn/module.hpp"

namespace ember::nn {

struct Linear;
struct Bilinear;
struct QuantizedWeight;  // nn/quantize.hpp

// torch.nn.Linear's arguments.
struct LinearConfig {
  int64_t in_features = 0;   // the input's last dim; must be non-negative
  int64_t out_features = 0;  // the output's last dim; must be non-negative
  bool bias = true;          // a learnable bias [out_features]
  // For the weight; the bias is always U(-1/sqrt(in_features), 1/sqrt(in_features)), as in PyTorch.
  Initializer initializer = Initializer::torch_default();
  // Builds the layer on `device`; throws ember::Error when a feature count is negative.
  Linear init(const Device& device = Device::default_device()) const;
};

// y = x W^T + b.
struct Linear {
  Param weight{};               // [out_features, in_features]
  std::optional<Param> bias{};  // [out_features]
  EMBER_MODULE(weight, bias)
  // The weight quantized for the weight-only product matmul_wq, set by nn::quantize_dynamic
  // (nn/quantize.hpp); the forward then multiplies with it (the float weight may be gone).
  std::shared_ptr<const QuantizedWeight> quantized{};
  DynTensor forward(DynTensor x) const;  // [*, in_features] -> [*, out_features]
};

// torch.nn.Bilinear's arguments.
struct BilinearConfig {
  int64_t in1_features = 0;  // the first input's last dim; must be positive
  int64_t in2_features = 0;  // the second input's last dim; must be positive
  int64_t out_features = 0;  // the output's last dim; must be positive
  bool bias = true;          // a learnable bias [out_features]
  // Weight and bias are U(-1/sqrt(in1_features), 1/sqrt(in1_features)), as in PyTorch. Throws
  // ember::Error when a feature count is not positive.
  Bilinear init(const Device& device = Device::default_device()) const;
};

// y_k = x1^T W_k x2 + b_k. Takes two inputs, so it cannot sit in a Sequential.
struct Bilinear {
  Param weight{};               // [out_features, in1_features, in2_features]
  std::optional<Param> bias{};  // [out_features]
  EMBER_MODULE(weight, bias)
  // x1 [*, in1_features], x2 [*, in2_features] (same leading dims) -> [*, out_features]
  DynTensor forward(DynTensor x1, DynTensor x2) const;
};

// torch.nn.Identity: returns its input (a placeholder in a Sequential).
struct Identity {
  EMBER_MODULE()
  Identity init(const Device& /*device*/ = Device::default_device()) const { return *this; }  // a copy
  DynTensor forward(DynTensor x) const { return x; }  // x unchanged
};
using IdentityConfig = Identity;  // the layer is its own config

// Merges dims start_dim..end_dim into one (torch.nn.Flatten: start_dim = 1 keeps the batch dim).
struct Flatten {
  int start_dim = 1;  // the first dim merged; negative counts from the end
  int end_dim = -1;   // the last dim merged (inclusive); negative counts from the end
  EMBER_MODULE()
  Flatten init(const Device& /*device*/ = Device::default_device()) const { return *this; }  // a copy
  DynTensor forward(DynTensor x) const;  // dims start_dim..end_dim merged into one; a scalar becomes [1]
};
using FlattenConfig = Flatten;  // the layer is its own config

// Splits dim `dim` into `unflattened_size` (one entry may be -1), as torch.nn.Unflatten.
struct Unflatten {
  int dim = 0;  // the dim split; negative counts from the end
  Sizes unflattened_size{};  // the sizes replacing it (one may be -1); their product must be its size
  EMBER_MODULE()
  Unflatten init(const Device& /*device*/ = Device::default_device()) const { return *this; }  // a copy
  // Throws ember::Error when unflattened_size is empty or does not match the size of `dim`.
  DynTensor forward(DynTensor x) const;
};
using UnflattenConfig = Unflatten;  // the layer is its own config

}  // namespace ember::nn
