// PositionWiseFeedForward and the activations of the feed-forward blocks.
#include "ember/nn/feedforward.hpp"

#include "ember/core/error.hpp"
#include "ember/nn/functional.hpp"

namespace ember::nn {

DynTensor apply_activation(DynTensor x, FeedForwardActivation activation) {
  switch (activation) {
    case FeedForwardActivation::relu:
      return relu(std::move(x));
    case FeedForwardActivation::gelu:
      return gelu(std::move(x));
    case FeedForwardActivation::gelu_tanh:
      return gelu_tanh(std::move(x));
    case FeedForwardActivation::silu:
      return silu(std::move(x));
  }
  EMBER_FAIL("apply_activation: unknown activation ", int(activation));
}

PositionWiseFeedForward PositionWiseFeedForwardConfig::init(const Device& device) const {
  EMBER_CHECK(d_model > 0 && d_ff > 0, "PositionWiseFeedForward: d_model and d_ff must be positive, got ", d_model,
              " and ", d_ff);
  EMBER_CHECK(dropout >= 0 && dropout <= 1, "PositionWiseFeedForward: dropout must be in [0, 1], got ", dropout);
  PositionWiseFeedForward m;
  m.linear_inner = LinearConfig{d_model, d_ff, bias, initializer}.init(device);
  m.linear_outer = LinearConfig{d_ff, d_model, bias, initializer}.init(device);
  m.dropout = dropout;
  m.activation = activation;
  return m;
}

DynTensor PositionWiseFeedForward::forward(const DynTensor& x) const {
  return detail::in_module(ember_module_, "PositionWiseFeedForward", [&] {
    DynTensor h = apply_activation(linear_inner.forward(x), activation);
    return linear_outer.forward(nn::dropout(std::move(h), dropout, mode.training));
  });
}

}  // namespace ember::nn
