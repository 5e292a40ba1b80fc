// MultiHeadAttention: torch.nn.MultiheadAttention's parameters, masks and results, plus a
// key/value cache for incremental (token by token) decoding.
//
//   # Device dev = Device::cpu();
//   # DynTensor x = randn({2, 5, 256}), q = x, mem = randn({2, 7, 256});
//   # DynTensor pad = DynTensor::zeros({2, 5}, DType::boolean);
//   # std::vector<DynTensor> steps;
//   auto mha = nn::MultiHeadAttentionConfig{.embed_dim = 256, .num_heads = 8, .batch_first = true}.init(dev);
//   DynTensor y = mha.forward(x, x, x, {.key_padding_mask = pad, .is_causal = true});   // [N, L, 256]
//   auto [y2, w] = mha.forward_with_weights(q, mem, mem);                              // w [N, L, S]
//
//   nn::MhaCache cache;                               // incremental causal self-attention
//   for (const DynTensor& x_t : steps) {                // x_t [N, 1, 256]
//     DynTensor y_t = mha.forward_cached(x_t, cache);   // same results as the full pass
//   }
//   # run
//
// state_dict (exactly PyTorch's, kdim = vdim = embed_dim):
//   in_proj_weight [3E, E] (rows: query, key, value projections), in_proj_bias [3E] (when bias),
//   out_proj.weight [E, E], out_proj.bias [E] (when bias)
// Initialisation as PyTorch: in_proj_weight xavier_uniform, biases zero, out_proj.weight like a Linear.
//
// Layouts: query [L, N, E], key/value [S, N, E] (batch_first: [N, L, E], [N, S, E]; unbatched
// inputs [L, E], [S, E]). Masks, as in PyTorch (a bool mask's true means "do not attend"; a
// float mask is added to the scores):
//   key_padding_mask  [N, S] (unbatched: [S])
//   attn_mask         [L, S] or [N * num_heads, L, S]
//   is_causal         query i attends keys j <= i (combined with the masks above)
// Rows whose keys are all masked give NaN, as in PyTorch. Dropout on the attention weights is
// applied in training mode only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ember/nn/linear.hpp"
#include "ember/nn/module.hpp"

namespace ember::nn {

struct MultiHeadAttention;

// Configuration of a MultiHeadAttention (torch.nn.MultiheadAttention's arguments, kdim = vdim = embed_dim).
struct MultiHeadAttentionConfig {
  int64_t embed_dim = 0;  // E, the model width; must be a positive multiple of num_heads
  int64_t num_heads = 1;  // H; each head attends over E / H features
  double dropout = 0;     // dropout probability on the attention weights (training mode), in [0, 1]
  bool bias = true;       // in_proj_bias and out_proj.bias (zeros)
  bool batch_first = false;  // inputs and outputs [N, L, E] rather than [L, N, E]
  // Builds the module on `device`; throws ember::Error when embed_dim is not a positive multiple of
  // num_heads or dropout is outside [0, 1].
  MultiHeadAttention init(const Device& device = Device::default_device()) const;
};

// The masks of one attention call (see the top of this file); bool true masks out, float is added.
// The masks may be on another device than the module: they are moved to it.
struct AttentionMasks {
  std::optional<DynTensor> key_padding_mask{};  // [N, S] (unbatched [S]): keys to ignore per sample
  std::optional<DynTensor> attn_mask{};  // [L, S] or [N * num_heads, L, S]
  bool is_causal = false;                // query i attends keys j <= i only
};

// What forward_with_weights() returns.
struct MhaOutput {
  DynTensor output{};   // like the query
  DynTensor weights{};  // [N, L, S] averaged over heads, or [N, num_heads, L, S] (unbatched: no N)
};

// Keys and values of the positions seen so far, [N, num_heads, S_past, head_dim] (empty at first).
struct MhaCache {
  // key: the projected keys of the positions seen so far (undefined until the first forward_cached()).
  DynTensor key{}, value{};  // value: the projected values, shaped like key
  int64_t length() const { return key.defined() ? key.size(2) : 0; }  // S_past, the cached positions
  void clear() { key = value = DynTensor(); }  // empties the cache, to start a new sequence
};

// torch.nn.MultiheadAttention with kdim = vdim = embed_dim (layouts and masks: see the top of this
// file). The forwards throw ember::Error on inputs whose shapes, dtype or masks do not fit.
struct MultiHeadAttention {
  Param in_proj_weight;               // [3E, E]
  std::optional<Param> in_proj_bias;  // [3E]
  Linear out_proj;                    // [E, E]
  Mode mode;                 // training (dropout on) or eval
  int64_t num_heads = 1;     // H
  double dropout = 0;        // dropout probability on the attention weights, in training mode
  bool batch_first = false;  // [N, L, E] rather than [L, N, E]
  EMBER_MODULE(in_proj_weight, in_proj_bias, out_proj, mode)

  int64_t embed_dim() const { return in_proj_weight.shape()[1]; }  // E

  // Attention of query over key/value ([L, N, E] and [S, N, E], see the top of this file); the
  // output is shaped like the query.
  DynTensor forward(const DynTensor& query, const DynTensor& key, const DynTensor& value,
                    const AttentionMasks& masks = {}) const;
  // Also returns the attention weights (after dropout, as PyTorch's need_weights=True); with
  // average_attn_weights false they are per head (see MhaOutput).
  MhaOutput forward_with_weights(const DynTensor& query, const DynTensor& key, const DynTensor& value,
                                 const AttentionMasks& masks = {}, bool average_attn_weights = true) const;
  // Causal self-attention of new positions x ([N, T, E] batch_first, [T, N, E] otherwise, or
  // [T, E]) over the cached ones and themselves: position past + t attends keys 0..past + t.
  // Appends x's keys and values to `cache`.
  DynTensor forward_cached(const DynTensor& x, MhaCache& cache) const;
};

}  // namespace ember::nn
