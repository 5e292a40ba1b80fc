// Transformer encoder/decoder layers and stacks (PyTorch's computation, see transformer.hpp).
#include "ember/nn/transformer.hpp"

#include <limits>

#include "ember/core/error.hpp"
#include "ember/nn/functional.hpp"

namespace ember::nn {

DynTensor generate_square_subsequent_mask(int64_t size, const Device& device, DType dtype) {
  EMBER_CHECK(size >= 0, "generate_square_subsequent_mask: size must be non-negative, got ", size);
  DynTensor rows = unsqueeze(DynTensor::arange(0, size, 1, DType::i64, device), 1);
  DynTensor cols = unsqueeze(DynTensor::arange(0, size, 1, DType::i64, device), 0);
  return mask_fill(DynTensor::zeros({size, size}, dtype, device), greater(cols, rows),
                   -std::numeric_limits<double>::infinity());
}

namespace {

template <class Config>
void check_config(const Config& c, const char* name) {
  EMBER_CHECK(c.d_model > 0 && c.nhead > 0 && c.dim_feedforward > 0, name,
              ": d_model, nhead and dim_feedforward must be positive, got ", c.d_model, ", ", c.nhead, " and ",
              c.dim_feedforward);
  EMBER_CHECK(c.dropout >= 0 && c.dropout <= 1, name, ": dropout must be in [0, 1], got ", c.dropout);
}

template <class Config>
MultiHeadAttention attention(const Config& c, const Device& device) {
  return MultiHeadAttentionConfig{c.d_model, c.nhead, c.dropout, c.bias, c.batch_first}.init(device);
}
template <class Config>
LayerNorm make_norm(const Config& c, const Device& device) {
  return LayerNormConfig{{c.d_model}, c.layer_norm_eps, true, c.bias}.init(device);
}

// linear2(dropout(activation(linear1(x)))), then the block's own dropout.
DynTensor feed_forward(const Linear& linear1, const Linear& linear2, FeedForwardActivation activation, double p,
                       bool training, const DynTensor& x) {
  DynTensor h = nn::dropout(apply_activation(linear1.forward(x), activation), p, training);
  return nn::dropout(linear2.forward(h), p, training);
}

}  // namespace

TransformerEncoderLayer TransformerEncoderLayerConfig::init(const Device& device) const {
  check_config(*this, "TransformerEncoderLayer");
  TransformerEncoderLayer m;
  m.self_attn = attention(*this, device);
  m.linear1 = LinearConfig{d_model, dim_feedforward, bias}.init(device);
  m.linear2 = LinearConfig{dim_feedforward, d_model, bias}.init(device);
  m.norm1 = make_norm(*this, device);
  m.norm2 = make_norm(*this, device);
  m.dropout = dropout;
  m.activation = activation;
  m.norm_first = norm_first;
  return m;
}

TransformerDecoderLayer TransformerDecoderLayerConfig::init(const Device& device) const {
  check_config(*this, "TransformerDecoderLayer");
  TransformerDecoderLayer m;
  m.self_attn = attention(*this, device);
  m.multihead_attn = attention(*this, device);
  m.linear1 = LinearConfig{d_model, dim_feedforward, bias}.init(device);
  m.linear2 = LinearConfig{dim_feedforward, d_model, bias}.init(device);
  m.norm1 = make_norm(*this, device);
  m.norm2 = make_norm(*this, device);
  m.norm3 = make_norm(*this, device);
  m.dropout = dropout;
  m.activation = activation;
  m.norm_first = norm_first;
  return m;
}

DynTensor TransformerEncoderLayer::forward(const DynTensor& src, const AttentionMasks& src_masks) const {
  return detail::in_module(ember_module_, "TransformerEncoderLayer", [&] {
    const bool training = mode.training;
    auto sa = [&](const DynTensor& x) { return nn::dropout(self_attn.forward(x, x, x, src_masks), dropout, training); };
    auto ff = [&](const DynTensor& x) { return feed_forward(linear1, linear2, activation, dropout, training, x); };
    DynTensor x = src;
    if (norm_first) {
      x = x + sa(norm1.forward(x));
      return x + ff(norm2.forward(x));
    }
    x = norm1.forward(x + sa(x));
    return norm2.forward(x + ff(x));
  });
}

DynTensor TransformerDecoderLayer::forward(const DynTensor& tgt, const DynTensor& memory,
                                           const AttentionMasks& tgt_masks, const AttentionMasks& memory_masks) const {
  return detail::in_module(ember_module_, "TransformerDecoderLayer", [&] {
    const bool training = mode.training;
    auto sa = [&](const DynTensor& x) { return nn::dropout(self_attn.forward(x, x, x, tgt_masks), dropout, training); };
    auto mha = [&](const DynTensor& x) {
      return nn::dropout(multihead_attn.forward(x, memory, memory, memory_masks), dropout, training);
    };
    auto ff = [&](const DynTensor& x) { return feed_forward(linear1, linear2, activation, dropout, training, x); };
    DynTensor x = tgt;
    if (norm_first) {
      x = x + sa(norm1.forward(x));
      x = x + mha(norm2.forward(x));
      return x + ff(norm3.forward(x));
    }
    x = norm1.forward(x + sa(x));
    x = norm2.forward(x + mha(x));
    return norm3.forward(x + ff(x));
  });
}

TransformerEncoder TransformerEncoderConfig::init(const Device& device) const {
  EMBER_CHECK(num_layers >= 1, "TransformerEncoder: num_layers must be at least 1, got ", num_layers);
  TransformerEncoder m;
  for (int64_t i = 0; i < num_layers; ++i) m.layers.push_back(layer.init(device));
  if (final_norm) m.norm = make_norm(layer, device);
  return m;
}

TransformerDecoder TransformerDecoderConfig::init(const Device& device) const {
  EMBER_CHECK(num_layers >= 1, "TransformerDecoder: num_layers must be at least 1, got ", num_layers);
  TransformerDecoder m;
  for (int64_t i = 0; i < num_layers; ++i) m.layers.push_back(layer.init(device));
  if (final_norm) m.norm = make_norm(layer, device);
  return m;
}

DynTensor TransformerEncoder::forward(const DynTensor& src, const AttentionMasks& masks) const {
  return detail::in_module(ember_module_, "TransformerEncoder", [&] {
    DynTensor x = src;
    for (const auto& l : layers) x = l.forward(x, masks);
    return norm ? norm->forward(x) : x;
  });
}

DynTensor TransformerDecoder::forward(const DynTensor& tgt, const DynTensor& memory, const AttentionMasks& tgt_masks,
                                      const AttentionMasks& memory_masks) const {
  return detail::in_module(ember_module_, "TransformerDecoder", [&] {
    DynTensor x = tgt;
    for (const auto& l : layers) x = l.forward(x, memory, tgt_masks, memory_masks);
    return norm ? norm->forward(x) : x;
  });
}

}  // namespace ember::nn
