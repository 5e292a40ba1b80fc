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
#include <optional>

#include "ember/nn/init.hpp"
#include "ember/nn/module.hpp"

namespace ember::nn {

struct Linear;
struct Bilinear;

struct LinearConfig {
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  // For the weight; the bias is always U(-1/sqrt(in_features), 1/sqrt(in_features)), as in PyTorch.
  Initializer initializer = Initializer::torch_default();
  Linear init(const Device& device = Device::default_device()) const;
};

// y = x W^T + b.
struct Linear {
  Param weight{};               // [out_features, in_features]
  std::optional<Param> bias{};  // [out_features]
  EMBER_MODULE(weight, bias)
  DynTensor forward(DynTensor x) const;  // [*, in_features] -> [*, out_features]
};

struct BilinearConfig {
  int64_t in1_features = 0;
  int64_t in2_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  // Weight and bias are U(-1/sqrt(in1_features), 1/sqrt(in1_features)), as in PyTorch.
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

struct Identity {
  EMBER_MODULE()
  Identity init(const Device& /*device*/ = Device::default_device()) const { return *this; }
  DynTensor forward(DynTensor x) const { return x; }
};
using IdentityConfig = Identity;

// Merges dims start_dim..end_dim into one (torch.nn.Flatten: start_dim = 1 keeps the batch dim).
struct Flatten {
  int start_dim = 1;
  int end_dim = -1;
  EMBER_MODULE()
  Flatten init(const Device& /*device*/ = Device::default_device()) const { return *this; }
  DynTensor forward(DynTensor x) const;
};
using FlattenConfig = Flatten;

// Splits dim `dim` into `unflattened_size` (one entry may be -1), as torch.nn.Unflatten.
struct Unflatten {
  int dim = 0;
  Sizes unflattened_size{};
  EMBER_MODULE()
  Unflatten init(const Device& /*device*/ = Device::default_device()) const { return *this; }
  DynTensor forward(DynTensor x) const;
};
using UnflattenConfig = Unflatten;

}  // namespace ember::nn
