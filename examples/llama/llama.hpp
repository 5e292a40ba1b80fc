// A Llama-architecture decoder (Llama 2/3, TinyLlama, SmolLM, ...) for inference, built from
// ember's tensor API, reading Hugging Face's checkpoint layout:
//
//   auto model = llama::load_model("TinyLlama-1.1B", {.quant = llama::WeightQuant::int4});
//   llama::KvCache cache = model.new_cache();
//   DynTensor logits = model.forward(tokens, cache);          // tokens i64 [1, T] -> [1, 1, vocab]
//   DynTensor next = model.forward(next_token, cache);        // one step against the cache
//
// The model: token embedding; per layer x += o(attn(rope(q(n1(x))), rope(k(n1(x))), v(n1(x))))
// then x += down(silu(gate(n2(x))) * up(n2(x))) with n1, n2 RMSNorms; a final RMSNorm and
// lm_head (the embedding when tie_word_embeddings). Grouped-query attention: query head h reads
// key/value head h / (heads / kv_heads), as Hugging Face's repeat_kv; the query heads of one
// group are stacked as rows of one attention call, so K and V are never copied per head. RoPE
// is Hugging Face's rotate_half form (nn::RotaryEncoding with interleaved = false): feature i
// pairs with i + head_dim / 2, angle position * theta^(-2i / head_dim).
//
// The cache holds each layer's rotated keys and values [batch, kv_heads, length, head_dim];
// forward appends the new positions, which continue from the cache's length.
//
// Weights load as f32 (f16 / bf16 files are widened). WeightQuant::int8 / int4 quantize every
// linear weight (q, k, v, o, gate, up, down, lm_head) symmetrically per block of 32 along the
// input dim (quant::quantize, QScheme::per_block(1, 32, ...)) and multiply through matmul_wq;
// the embedding and norms stay f32.
#pragma once

#include <cstdint>
#include <ember/ember.hpp>
#include <ember/nn/positional.hpp>
#include <ember/store/tensor_map.hpp>
#include <optional>
#include <string>
#include <vector>

namespace llama {

using ember::DynTensor;

// config.json's fields that the model reads (Hugging Face's names).
struct Config {
  int64_t hidden_size = 0, intermediate_size = 0, num_attention_heads = 0, num_key_value_heads = 0;
  int64_t num_hidden_layers = 0, vocab_size = 0, max_position_embeddings = 2048;
  int64_t head_dim = 0;  // hidden_size / num_attention_heads unless config.json says otherwise
  double rms_norm_eps = 1e-6, rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  std::optional<int64_t> bos_token_id;  // prepended to prompts when present
  std::vector<int64_t> eos_token_ids;   // generation stops at any of them (config: a number or a list)

  // Parses config.json's text; `source` names it in errors. Throws ember::Error naming the key for a
  // missing or mistyped key, a non-positive size, a head count that does not divide the hidden size
  // (without head_dim), kv heads that do not divide the heads, an odd head_dim, or a rope_scaling
  // (not supported).
  static Config parse(const std::string& json_text, const std::string& source = "config.json");
  // Reads and parses a config.json file.
  static Config load(const std::string& path);
};

// How linear weights are stored after loading.
enum class WeightQuant { none, int8, int4 };
// "f32", "int8" or "int4".
const char* weight_quant_name(WeightQuant q);

// One linear layer y = x W^T, W [out, in]: f32, or quantized operands of matmul_wq.
struct Linear {
  DynTensor weight;        // f32 [out, in] (WeightQuant::none)
  DynTensor data, scales;  // matmul_wq's operands (int8: i8 [out, in]; int4: u8 [out, in / 2]; scales f32)
  int bits = 0;            // 0 (f32), 8 or 4
  bool quantize_x = false;  // round x to int8 blocks too (WeightQuant::quantize_x: int8 dot products)
  // x [..., in] -> [..., out].
  DynTensor forward(const DynTensor& x) const;
  // Weight bytes read per product (for bandwidth figures).
  int64_t bytes() const;
};

// One decoder block's weights.
struct Layer {
  DynTensor input_norm, post_attention_norm;  // RMSNorm gains [hidden]
  Linear q, k, v, o, gate, up, down;
};

// Rotated keys and values of the positions seen so far, per layer.
struct KvCache {
  std::vector<DynTensor> k, v;  // per layer [batch, kv_heads, length, head_dim]; undefined while empty
  int64_t length = 0;           // positions cached
};

// The loaded model (see the top of this file).
struct Model {
  Config config;
  DynTensor embed;  // [vocab, hidden]
  std::vector<Layer> layers;
  DynTensor norm;  // final RMSNorm gain [hidden]
  Linear lm_head;
  ember::nn::RotaryEncoding rope;

  // An empty cache for this model.
  KvCache new_cache() const;
  // tokens i64 [batch, T] at positions cache.length .. cache.length + T - 1; appends them to the cache.
  // Returns logits [batch, T, vocab], or of the last position only ([batch, 1, vocab]) unless
  // all_positions. Throws ember::Error for ids outside the vocabulary's range or positions past
  // max_position_embeddings.
  DynTensor forward(const DynTensor& tokens, KvCache& cache, bool all_positions = false) const;
  // Bytes of the linear weights one token's forward pass reads.
  int64_t linear_weight_bytes() const;
};

// Options of load_model / from_tensors.
struct LoadOptions {
  WeightQuant quant = WeightQuant::none;  // quantize the linear weights at load
  // With quant: also round activations to int8 per block of 32 in every product (ggml's Q8_0
  // activations), so that they run on int8 dot products; faster decoding, slightly less exact.
  bool quantize_activations = false;
  ember::Device device = ember::Device::cpu();  // where the weights go
};

// Builds the model from Hugging Face's tensor names (see README.md). Throws ember::Error naming
// `source` and the tensor for a missing tensor, a shape that contradicts the config, or a
// non-floating dtype; and, for quantization, an input dim that is not a multiple of 32.
Model from_tensors(const Config& config, const ember::store::TensorMap& tensors, const LoadOptions& options = {},
                   const std::string& source = "model.safetensors");
// Reads `dir`/config.json and `dir`/model.safetensors (or the shards that
// model.safetensors.index.json lists) and builds the model.
Model load_model(const std::string& dir, const LoadOptions& options = {});

}  // namespace llama
