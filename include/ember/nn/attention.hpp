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

struct MultiHeadAttentionConfig {
  int64_t embed_dim = 0;
  int64_t num_heads = 1;
  double dropout = 0;
  bool bias = true;
  bool batch_first = false;
  MultiHeadAttention init(const Device& device = Device::default_device()) const;
};

struct AttentionMasks {
  std::optional<DynTensor> key_padding_mask{};
  std::optional<DynTensor> attn_mask{};
  bool is_causal = false;
};

struct MhaOutput {
  DynTensor output{};   // like the query
  DynTensor weights{};  // [N, L, S] averaged over heads, or [N, num_heads, L, S] (unbatched: no N)
};

// Keys and values of the positions seen so far, [N, num_heads, S_past, head_dim] (empty at first).
struct MhaCache {
  DynTensor key{}, value{};
  int64_t length() const { return key.defined() ? key.size(2) : 0; }
  void clear() { key = value = DynTensor(); }
};

struct MultiHeadAttention {
  Param in_proj_weight;               // [3E, E]
  std::optional<Param> in_proj_bias;  // [3E]
  Linear out_proj;                    // [E, E]
  Mode mode;
  int64_t num_heads = 1;
  double dropout = 0;
  bool batch_first = false;
  EMBER_MODULE(in_proj_weight, in_proj_bias, out_proj, mode)

  int64_t embed_dim() const { return in_proj_weight.shape()[1]; }

  DynTensor forward(const DynTensor& query, const DynTensor& key, const DynTensor& value,
                    const AttentionMasks& masks = {}) const;
  // Also returns the attention weights (after dropout, as PyTorch's need_weights=True).
  MhaOutput forward_with_weights(const DynTensor& query, const DynTensor& key, const DynTensor& value,
                                 const AttentionMasks& masks = {}, bool average_attn_weights = true) const;
  // Causal self-attention of new positions x ([N, T, E] batch_first, [T, N, E] otherwise, or
  // [T, E]) over the cached ones and themselves: position past + t attends keys 0..past + t.
  // Appends x's keys and values to `cache`.
  DynTensor forward_cached(const DynTensor& x, MhaCache& cache) const;
};

}  // namespace ember::nn
