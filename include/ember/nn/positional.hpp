// Position information for sequence models: the sinusoidal PositionalEncoding added to the
// input (the PyTorch tutorial's module; Burn's PositionalEncoding) and RotaryEncoding (RoPE),
// which rotates pairs of features of queries and keys by position-dependent angles.
//
//   # Device dev = Device::cpu(); DynTensor embeddings = randn({2, 10, 512});
//   # DynTensor q = randn({2, 8, 10, 64}), k_step = randn({2, 8, 1, 64}); int64_t past_len = 10;
//   auto pos = nn::PositionalEncodingConfig{.d_model = 512, .batch_first = true}.init(dev);
//   DynTensor h = pos.forward(embeddings);                      // [N, L, 512] + pe[:L]
//   auto rope = nn::RotaryEncodingConfig{.d_model = 64, .max_len = 2048}.init(dev);
//   DynTensor q_rot = rope.forward(q);                          // q [N, heads, L, 64]
//   DynTensor k_new = rope.forward(k_step, /*start=*/past_len); // positions past_len, past_len + 1, ...
//   # run
//
// PositionalEncoding: pe[pos, 2i] = sin(pos / 10000^(2i/d)), pe[pos, 2i+1] = cos(pos / 10000^(2i/d)),
// then dropout (training only). Its state_dict holds the table as buffer "pe" [max_len, 1, d_model],
// exactly the tutorial's register_buffer, so the tutorial's checkpoints load unchanged.
//
// RotaryEncoding (theta 10000 by default), angle of pair i at position p: p * theta^(-2i/d).
//   interleaved = true:  pairs (x[2i], x[2i+1])      (RoFormer paper, Burn, Meta's LLaMA code)
//   interleaved = false: pairs (x[i], x[i + d/2])    ("rotate_half": GPT-NeoX, Hugging Face LLaMA)
// (a, b) -> (a cos - b sin, a sin + b cos). Its tables are derived data: no state_dict entries
// (like Hugging Face's non-persistent inv_freq); they follow the input's device and dtype.
#pragma once

#include <cstdint>
#include <string>

#include "ember/nn/module.hpp"

namespace ember::nn {

struct PositionalEncoding;
struct RotaryEncoding;

// The sinusoidal PositionalEncoding's options (the PyTorch tutorial's arguments).
struct PositionalEncodingConfig {
  int64_t d_model = 0;     // the feature size; must be positive
  double dropout = 0.1;    // dropout probability after the addition (training mode), in [0, 1]
  int64_t max_len = 5000;  // the longest sequence the table covers; must be positive
  bool batch_first = false;  // input [L, N, d_model] (the tutorial's layout) or [N, L, d_model]
  // Builds the table (f32) on `device`; throws ember::Error when d_model or max_len is not positive or
  // dropout is outside [0, 1].
  PositionalEncoding init(const Device& device = Device::default_device()) const;
};

// Adds the sinusoidal table to the input, then applies dropout (see the top of this file).
struct PositionalEncoding {
  Buffer pe;  // [max_len, 1, d_model]
  Mode mode;  // training (dropout on) or eval
  double dropout = 0.1;      // dropout probability
  bool batch_first = false;  // input [N, L, d_model] rather than [L, N, d_model]
  EMBER_MODULE(pe, mode)
  // x [L, N, d_model] (batch_first: [N, L, d_model]; unbatched [L, d_model]), L <= max_len; output of
  // x's shape. Throws ember::Error on another shape or a longer sequence.
  DynTensor forward(const DynTensor& x) const;
};

// RotaryEncoding's options.
struct RotaryEncodingConfig {
  int64_t d_model = 0;  // features rotated (the head dim); even
  int64_t max_len = 4096;  // positions covered by the tables (start + L must not exceed it)
  double theta = 10000.0;  // the angle base; must be positive
  bool interleaved = true;  // pair layout: true (x[2i], x[2i+1]), false (x[i], x[i + d/2]); see above
  // Builds the tables on `device`; throws ember::Error when d_model is not positive and even, or
  // max_len or theta is not positive.
  RotaryEncoding init(const Device& device = Device::default_device()) const;
};

// Rotary position embedding (RoPE) of queries or keys (see the top of this file).
struct RotaryEncoding {
  // cos: cos(angle) of every (position, pair), [max_len, d_model / 2] (f32), not part of the state_dict.
  DynTensor cos, sin;  // [max_len, d_model / 2] (f32), not part of the state_dict
  bool interleaved = true;  // pair layout, as RotaryEncodingConfig::interleaved
  mutable detail::ModuleInfo ember_module_{};  // its path, for errors (no EMBER_MODULE: nothing to visit)
  // Records the module's path (for errors) and visits nothing: it has no parameters or buffers.
  void visit(Visitor& /*v*/, const std::string& prefix = {}) { ember_module_.set_path(prefix); }
  // x [..., L, d_model]: row l gets position start + l (start + L <= max_len). Output of x's shape;
  // throws ember::Error on another last dim or positions past max_len.
  DynTensor forward(const DynTensor& x, int64_t start = 0) const;
};

}  // namespace ember::nn
