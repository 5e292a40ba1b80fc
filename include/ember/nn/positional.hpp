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

struct PositionalEncodingConfig {
  int64_t d_model = 0;
  double dropout = 0.1;
  int64_t max_len = 5000;
  bool batch_first = false;  // input [L, N, d_model] (the tutorial's layout) or [N, L, d_model]
  PositionalEncoding init(const Device& device = Device::default_device()) const;
};

struct PositionalEncoding {
  Buffer pe;  // [max_len, 1, d_model]
  Mode mode;
  double dropout = 0.1;
  bool batch_first = false;
  EMBER_MODULE(pe, mode)
  // x [L, N, d_model] (batch_first: [N, L, d_model]; unbatched [L, d_model]), L <= max_len.
  DynTensor forward(const DynTensor& x) const;
};

struct RotaryEncodingConfig {
  int64_t d_model = 0;  // features rotated (the head dim); even
  int64_t max_len = 4096;
  double theta = 10000.0;
  bool interleaved = true;
  RotaryEncoding init(const Device& device = Device::default_device()) const;
};

struct RotaryEncoding {
  DynTensor cos, sin;  // [max_len, d_model / 2] (f32), not part of the state_dict
  bool interleaved = true;
  mutable detail::ModuleInfo ember_module_{};  // its path, for errors (no EMBER_MODULE: nothing to visit)
  void visit(Visitor& /*v*/, const std::string& prefix = {}) { ember_module_.set_path(prefix); }
  // x [..., L, d_model]: row l gets position start + l (start + L <= max_len).
  DynTensor forward(const DynTensor& x, int64_t start = 0) const;
};

}  // namespace ember::nn
