// Transformer layers and stacks with torch.nn.TransformerEncoderLayer / DecoderLayer /
// TransformerEncoder / TransformerDecoder's arguments, defaults, computation and state_dict keys.
//
//   # Device dev = Device::cpu(); int64_t L = 10;
//   # DynTensor x = randn({2, L, 256}), pad = DynTensor::zeros({2, L}, DType::boolean);
//   auto layer = nn::TransformerEncoderLayerConfig{.d_model = 256, .nhead = 8, .batch_first = true};
//   auto enc = nn::TransformerEncoderConfig{layer, /*num_layers=*/6, /*final_norm=*/true}.init(dev);
//   DynTensor mask = nn::generate_square_subsequent_mask(L, dev);      // or {.is_causal = true}
//   DynTensor y = enc.forward(x, {.key_padding_mask = pad, .attn_mask = mask});
//   # run
//
// Layer computation (sa = self-attention, mha = attention over the decoder's memory,
// ff(x) = linear2(dropout(activation(linear1(x)))), each sub-block followed by dropout):
//   post-norm (norm_first = false, PyTorch's default):
//     encoder: x = norm1(x + sa(x)); x = norm2(x + ff(x))
//     decoder: x = norm1(x + sa(x)); x = norm2(x + mha(x, memory)); x = norm3(x + ff(x))
//   pre-norm (norm_first = true):
//     encoder: x = x + sa(norm1(x)); x = x + ff(norm2(x))
//     decoder: x = x + sa(norm1(x)); x = x + mha(norm2(x), memory); x = x + ff(norm3(x))
// state_dict keys: self_attn.{in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias},
//   (decoder) multihead_attn.{same}, linear1.{weight, bias} [dim_feedforward, d_model],
//   linear2.{weight, bias} [d_model, dim_feedforward], norm1/norm2(/norm3).{weight, bias};
//   stacks: layers.{i}.<layer keys>, plus norm.{weight, bias} when final_norm.
// Masks are MultiHeadAttention's (attention.hpp): bool true = do not attend, float = added.
// Dropout is active in training mode only (nn::set_training(model, false) for inference).
// Unlike PyTorch, whose stacks deep-copy one layer (identical initial weights), every layer of a
// stack is initialised independently.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ember/nn/attention.hpp"
#include "ember/nn/feedforward.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/module.hpp"
#include "ember/nn/norm.hpp"

namespace ember::nn {

// torch.nn.Transformer.generate_square_subsequent_mask: [size, size] with -inf above the
// diagonal and 0 elsewhere (an additive causal mask).
DynTensor generate_square_subsequent_mask(int64_t size, const Device& device = Device::default_device(),
                                          DType dtype = kDefaultFloat);

struct TransformerEncoderLayer;
struct TransformerDecoderLayer;
struct TransformerEncoder;
struct TransformerDecoder;

struct TransformerEncoderLayerConfig {
  int64_t d_model = 0;
  int64_t nhead = 1;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  FeedForwardActivation activation = FeedForwardActivation::relu;
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
  bool bias = true;  // every Linear, attention projection and LayerNorm (PyTorch >= 2.1's bias)
  TransformerEncoderLayer init(const Device& device = Device::default_device()) const;
};

struct TransformerDecoderLayerConfig {
  int64_t d_model = 0;
  int64_t nhead = 1;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  FeedForwardActivation activation = FeedForwardActivation::relu;
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
  bool bias = true;
  TransformerDecoderLayer init(const Device& device = Device::default_device()) const;
};

struct TransformerEncoderLayer {
  MultiHeadAttention self_attn;
  Linear linear1, linear2;
  LayerNorm norm1, norm2;
  Mode mode;
  double dropout = 0.1;
  FeedForwardActivation activation = FeedForwardActivation::relu;
  bool norm_first = false;
  EMBER_MODULE(self_attn, linear1, linear2, norm1, norm2, mode)
  // src [S, N, E] (batch_first: [N, S, E]; unbatched [S, E]); masks of the self-attention.
  DynTensor forward(const DynTensor& src, const AttentionMasks& src_masks = {}) const;
};

struct TransformerDecoderLayer {
  MultiHeadAttention self_attn, multihead_attn;
  Linear linear1, linear2;
  LayerNorm norm1, norm2, norm3;
  Mode mode;
  double dropout = 0.1;
  FeedForwardActivation activation = FeedForwardActivation::relu;
  bool norm_first = false;
  EMBER_MODULE(self_attn, multihead_attn, linear1, linear2, norm1, norm2, norm3, mode)
  // tgt [T, N, E], memory [S, N, E] (batch_first: [N, T, E], [N, S, E]). tgt_masks are the
  // self-attention's (tgt_mask, tgt_key_padding_mask, tgt_is_causal), memory_masks the
  // cross-attention's (memory_mask, memory_key_padding_mask).
  DynTensor forward(const DynTensor& tgt, const DynTensor& memory, const AttentionMasks& tgt_masks = {},
                    const AttentionMasks& memory_masks = {}) const;
};

struct TransformerEncoderConfig {
  TransformerEncoderLayerConfig layer;
  int64_t num_layers = 1;
  bool final_norm = false;  // a LayerNorm after the last layer (PyTorch's norm argument)
  TransformerEncoder init(const Device& device = Device::default_device()) const;
};

struct TransformerDecoderConfig {
  TransformerDecoderLayerConfig layer;
  int64_t num_layers = 1;
  bool final_norm = false;
  TransformerDecoder init(const Device& device = Device::default_device()) const;
};

struct TransformerEncoder {
  std::vector<TransformerEncoderLayer> layers;
  std::optional<LayerNorm> norm;
  EMBER_MODULE(layers, norm)
  DynTensor forward(const DynTensor& src, const AttentionMasks& masks = {}) const;
};

struct TransformerDecoder {
  std::vector<TransformerDecoderLayer> layers;
  std::optional<LayerNorm> norm;
  EMBER_MODULE(layers, norm)
  DynTensor forward(const DynTensor& tgt, const DynTensor& memory, const AttentionMasks& tgt_masks = {},
                    const AttentionMasks& memory_masks = {}) const;
};

}  // namespace ember::nn
