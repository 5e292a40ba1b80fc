// PositionWiseFeedForward: the transformer's two-layer MLP applied to every position,
// linear -> activation -> dropout -> linear (Burn's PositionWiseFeedForward).
//
//   # Device dev = Device::cpu(); DynTensor x = randn({4, 512});
//   auto ff = nn::PositionWiseFeedForwardConfig{.d_model = 512, .d_ff = 2048}.init(dev);
//   DynTensor y = ff.forward(x);     // [*, 512] -> [*, 512]
//   # run
//
// state_dict keys follow Burn: linear_inner.weight [d_ff, d_model], linear_inner.bias [d_ff],
// linear_outer.weight [d_model, d_ff], linear_outer.bias [d_model]. (PyTorch's
// TransformerEncoderLayer names the same two layers linear1 / linear2: the transformer layers in
// transformer.hpp hold them directly under those names; to load such weights into this module,
// remap "linear1" -> "linear_inner" and "linear2" -> "linear_outer" with LoadOptions::remap.)
// The activation defaults to GELU (erf form), as in Burn; dropout is active in training mode only.
#pragma once

#include <cstdint>

#include "ember/nn/init.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/module.hpp"

namespace ember::nn {

// The activations the feed-forward blocks offer (gelu is the exact erf form, gelu_tanh the
// tanh approximation).
enum class FeedForwardActivation : uint8_t { relu, gelu, gelu_tanh, silu };
// The activation applied elementwise to `x` (any shape).
DynTensor apply_activation(DynTensor x, FeedForwardActivation activation);

struct PositionWiseFeedForward;

// Configuration of a PositionWiseFeedForward (Burn's PositionWiseFeedForwardConfig).
struct PositionWiseFeedForwardConfig {
  int64_t d_model = 0;  // the input and output width; must be positive
  int64_t d_ff = 0;     // the hidden width; must be positive
  double dropout = 0.1;  // dropout probability after the activation (training mode), in [0, 1]
  FeedForwardActivation activation = FeedForwardActivation::gelu;  // the hidden activation
  bool bias = true;  // biases in both Linear layers
  Initializer initializer = Initializer::torch_default();  // for both weights
  // Builds the module on `device`; throws ember::Error when d_model or d_ff is not positive or dropout
  // is outside [0, 1].
  PositionWiseFeedForward init(const Device& device = Device::default_device()) const;
};

// linear_outer(dropout(activation(linear_inner(x)))), applied to the last dim of every position.
struct PositionWiseFeedForward {
  Linear linear_inner;  // d_model -> d_ff
  Linear linear_outer;  // d_ff -> d_model
  Mode mode;             // training (dropout on) or eval
  double dropout = 0.1;  // dropout probability after the activation
  FeedForwardActivation activation = FeedForwardActivation::gelu;  // the hidden activation
  EMBER_MODULE(linear_inner, linear_outer, mode)
  DynTensor forward(const DynTensor& x) const;  // [*, d_model] -> [*, d_model]
};

}  // namespace ember::nn
