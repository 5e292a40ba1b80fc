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

// torch.nn.TransformerEncoderLayer's arguments.
struct TransformerEncoderLayerConfig {
  int64_t d_model = 0;             // E, the model width; must be positive and a multiple of nhead
  int64_t nhead = 1;               // attention heads
  int64_t dim_feedforward = 2048;  // the feed-forward block's hidden width
  double dropout = 0.1;            // dropout probability (attention weights and every sub-block), in [0, 1]
  FeedForwardActivation activation = FeedForwardActivation::relu;  // the feed-forward block's activation
  double layer_norm_eps = 1e-5;    // eps of every LayerNorm
  bool batch_first = false;        // inputs and outputs [N, S, E] rather than [S, N, E]
  bool norm_first = false;         // pre-norm (true) or post-norm (false, PyTorch's default), see above
  bool bias = true;  // every Linear, attention projection and LayerNorm (PyTorch >= 2.1's bias)
  // Builds the layer on `device`; throws ember::Error when d_model, nhead or dim_feedforward is not
  // positive, d_model is not a multiple of nhead, or dropout is outside [0, 1].
  TransformerEncoderLayer init(const Device& device = Device::default_device()) const;
};

// torch.nn.TransformerDecoderLayer's arguments (the fields mean what they do for the encoder layer).
struct TransformerDecoderLayerConfig {
  int64_t d_model = 0;             // E, the model width; must be positive and a multiple of nhead
  int64_t nhead = 1;               // attention heads
  int64_t dim_feedforward = 2048;  // the feed-forward block's hidden width
  double dropout = 0.1;            // dropout probability (attention weights and every sub-block), in [0, 1]
  FeedForwardActivation activation = FeedForwardActivation::relu;  // the feed-forward block's activation
  double layer_norm_eps = 1e-5;    // eps of every LayerNorm
  bool batch_first = false;        // inputs and outputs [N, S, E] rather than [S, N, E]
  bool norm_first = false;         // pre-norm (true) or post-norm (false, PyTorch's default), see above
  bool bias = true;  // every Linear, attention projection and LayerNorm (PyTorch >= 2.1's bias)
  // Builds the layer on `device`; throws ember::Error as TransformerEncoderLayerConfig::init does.
  TransformerDecoderLayer init(const Device& device = Device::default_device()) const;
};

// torch.nn.TransformerEncoderLayer: self-attention and feed-forward blocks (computation at the top of
// this file).
struct TransformerEncoderLayer {
  MultiHeadAttention self_attn;  // the self-attention
  // linear1: the feed-forward block's first layer, d_model -> dim_feedforward (weight [dim_feedforward, d_model]).
  Linear linear1, linear2;  // linear2: its second layer, dim_feedforward -> d_model
  // norm1: the LayerNorm of the self-attention block (placement at the top of this file).
  LayerNorm norm1, norm2;  // norm2: the LayerNorm of the feed-forward block
  Mode mode;               // training (dropout on) or eval
  double dropout = 0.1;    // dropout probability
  FeedForwardActivation activation = FeedForwardActivation::relu;  // the feed-forward block's activation
  bool norm_first = false;  // pre-norm (true) or post-norm
  EMBER_MODULE(self_attn, linear1, linear2, norm1, norm2, mode)
  // src [S, N, E] (batch_first: [N, S, E]; unbatched [S, E]); masks of the self-attention. The
  // output has src's shape.
  DynTensor forward(const DynTensor& src, const AttentionMasks& src_masks = {}) const;
};

// torch.nn.TransformerDecoderLayer: self-attention, attention over the memory and feed-forward
// blocks (computation at the top of this file).
struct TransformerDecoderLayer {
  // self_attn: the self-attention over tgt.
  MultiHeadAttention self_attn, multihead_attn;  // multihead_attn: tgt's attention over the encoder's memory
  // linear1: the feed-forward block's first layer, d_model -> dim_feedforward (weight [dim_feedforward, d_model]).
  Linear linear1, linear2;  // linear2: its second layer, dim_feedforward -> d_model
  // norm1: the LayerNorm of the self-attention block; norm2: of the attention over the memory.
  LayerNorm norm1, norm2, norm3;  // norm3: the LayerNorm of the feed-forward block
  Mode mode;               // training (dropout on) or eval
  double dropout = 0.1;    // dropout probability
  FeedForwardActivation activation = FeedForwardActivation::relu;  // the feed-forward block's activation
  bool norm_first = false;  // pre-norm (true) or post-norm
  EMBER_MODULE(self_attn, multihead_attn, linear1, linear2, norm1, norm2, norm3, mode)
  // tgt [T, N, E], memory [S, N, E] (batch_first: [N, T, E], [N, S, E]). tgt_masks are the
  // self-attention's (tgt_mask, tgt_key_padding_mask, tgt_is_causal), memory_masks the
  // cross-attention's (memory_mask, memory_key_padding_mask). The output has tgt's shape.
  DynTensor forward(const DynTensor& tgt, const DynTensor& memory, const AttentionMasks& tgt_masks = {},
                    const AttentionMasks& memory_masks = {}) const;
};

// torch.nn.TransformerEncoder's arguments: num_layers layers configured alike.
struct TransformerEncoderConfig {
  TransformerEncoderLayerConfig layer;  // every layer's configuration
  int64_t num_layers = 1;               // at least 1
  bool final_norm = false;  // a LayerNorm after the last layer (PyTorch's norm argument)
  // Builds the stack on `device`, each layer initialised independently; throws ember::Error when
  // num_layers < 1 or the layer configuration is invalid.
  TransformerEncoder init(const Device& device = Device::default_device()) const;
};

// torch.nn.TransformerDecoder's arguments: num_layers layers configured alike.
struct TransformerDecoderConfig {
  TransformerDecoderLayerConfig layer;  // every layer's configuration
  int64_t num_layers = 1;               // at least 1
  bool final_norm = false;  // a LayerNorm after the last layer (PyTorch's norm argument)
  // Builds the stack on `device`, each layer initialised independently; throws ember::Error when
  // num_layers < 1 or the layer configuration is invalid.
  TransformerDecoder init(const Device& device = Device::default_device()) const;
};

// torch.nn.TransformerEncoder: the layers applied in order, then the optional final LayerNorm.
struct TransformerEncoder {
  std::vector<TransformerEncoderLayer> layers;  // state_dict keys layers.{i}.*
  std::optional<LayerNorm> norm;  // the final LayerNorm (final_norm), [d_model]
  EMBER_MODULE(layers, norm)
  // src as TransformerEncoderLayer::forward's, the same masks for every layer; output src's shape.
  DynTensor forward(const DynTensor& src, const AttentionMasks& masks = {}) const;
};

// torch.nn.TransformerDecoder: the layers applied in order over the same memory, then the optional
// final LayerNorm.
struct TransformerDecoder {
  std::vector<TransformerDecoderLayer> layers;  // state_dict keys layers.{i}.*
  std::optional<LayerNorm> norm;  // the final LayerNorm (final_norm), [d_model]
  EMBER_MODULE(layers, norm)
  // tgt and memory as TransformerDecoderLayer::forward's, the same masks for every layer; output
  // tgt's shape.
  DynTensor forward(const DynTensor& tgt, const DynTensor& memory, const AttentionMasks& tgt_masks = {},
                    const AttentionMasks& memory_masks = {}) const;
};

}  // namespace ember::nn
