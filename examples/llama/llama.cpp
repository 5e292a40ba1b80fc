// The Llama decoder of llama.hpp: config.json, the safetensors weights checked against it,
// load-time quantization, and the forward pass with its KV cache.
#include "llama.hpp"

#include <cmath>
#include <ember/nn/functional.hpp>
#include <ember/quant.hpp>
#include <ember/store/safetensors.hpp>
#include <ember/tensor/quantized_ops.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace llama {

using namespace ember;
using nlohmann::json;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK(f.good(), "llama: cannot open ", path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

constexpr int64_t kQuantBlock = 32;

}  // namespace

// ---- config.json ----------------------------------------------------------------------------

Config Config::parse(const std::string& json_text, const std::string& source) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    EMBER_FAIL("llama: ", source, ": not valid JSON: ", e.what());
  }
  EMBER_CHECK(j.is_object(), "llama: ", source, ": the top level is not an object");
  auto integer = [&](const char* key, std::optional<int64_t> fallback) -> int64_t {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      EMBER_CHECK(fallback.has_value(), "llama: ", source, ": key \"", key, "\" is missing");
      return *fallback;
    }
    EMBER_CHECK(it->is_number_integer(), "llama: ", source, ": key \"", key, "\" must be an integer, got ", it->dump());
    return it->get<int64_t>();
  };
  auto real = [&](const char* key, double fallback) -> double {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    EMBER_CHECK(it->is_number(), "llama: ", source, ": key \"", key, "\" must be a number, got ", it->dump());
    return it->get<double>();
  };
  if (auto it = j.find("model_type"); it != j.end() && it->is_string()) {
    const std::string t = it->get<std::string>();
    EMBER_CHECK(t == "llama" || t == "mistral", "llama: ", source, ": model_type \"", t,
                "\" is not a Llama-architecture model (llama or mistral)");
  }
  Config c;
  c.hidden_size = integer("hidden_size", std::nullopt);
  c.intermediate_size = integer("intermediate_size", std::nullopt);
  c.num_attention_heads = integer("num_attention_heads", std::nullopt);
  c.num_key_value_heads = integer("num_key_value_heads", c.num_attention_heads);
  c.num_hidden_layers = integer("num_hidden_layers", std::nullopt);
  c.vocab_size = integer("vocab_size", std::nullopt);
  c.max_position_embeddings = integer("max_position_embeddings", 2048);
  c.rms_norm_eps = real("rms_norm_eps", 1e-6);
  c.rope_theta = real("rope_theta", 10000.0);
  for (const char* key : {"hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
                          "num_hidden_layers", "vocab_size", "max_position_embeddings"})
    EMBER_CHECK(integer(key, 1) > 0, "llama: ", source, ": key \"", key, "\" must be positive, got ", integer(key, 1));
  EMBER_CHECK(c.rms_norm_eps > 0 && c.rope_theta > 0, "llama: ", source,
              ": keys \"rms_norm_eps\" and \"rope_theta\" must be positive");
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
    c.head_dim = integer("head_dim", std::nullopt);
    EMBER_CHECK(c.head_dim > 0, "llama: ", source, ": key \"head_dim\" must be positive, got ", c.head_dim);
  } else {
    EMBER_CHECK(c.hidden_size % c.num_attention_heads == 0, "llama: ", source, ": key \"num_attention_heads\" (",
                c.num_attention_heads, ") does not divide \"hidden_size\" (", c.hidden_size, ")");
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  EMBER_CHECK(c.head_dim % 2 == 0, "llama: ", source, ": the head dim ", c.head_dim, " is odd; RoPE needs it even");
  EMBER_CHECK(c.num_attention_heads % c.num_key_value_heads == 0, "llama: ", source, ": key \"num_key_value_heads\" (",
              c.num_key_value_heads, ") does not divide \"num_attention_heads\" (", c.num_attention_heads, ")");
  if (auto it = j.find("tie_word_embeddings"); it != j.end() && !it->is_null()) {
    EMBER_CHECK(it->is_boolean(), "llama: ", source, ": key \"tie_word_embeddings\" must be true or false");
    c.tie_word_embeddings = it->get<bool>();
  }
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null())
    EMBER_FAIL("llama: ", source, ": key \"rope_scaling\" (", it->dump(), ") is not supported (plain RoPE only)");
  if (auto it = j.find("hidden_act"); it != j.end() && it->is_string())
    EMBER_CHECK(it->get<std::string>() == "silu", "llama: ", source, ": key \"hidden_act\" is \"", it->get<std::string>(),
                "\"; only \"silu\" (SwiGLU) is supported");
  if (auto it = j.find("bos_token_id"); it != j.end() && !it->is_null()) c.bos_token_id = integer("bos_token_id", 0);
  if (auto it = j.find("eos_token_id"); it != j.end() && !it->is_null()) {
    if (it->is_array()) {
      for (const auto& e : *it) {
        EMBER_CHECK(e.is_number_integer(), "llama: ", source, ": key \"eos_token_id\" must hold integers");
        c.eos_token_ids.push_back(e.get<int64_t>());
      }
    } else {
      c.eos_token_ids.push_back(integer("eos_token_id", 0));
    }
  }
  return c;
}

Config Config::load(const std::string& path) { return parse(read_text(path), path); }

const char* weight_quant_name(WeightQuant q) {
  switch (q) {
    case WeightQuant::int8: return "int8";
    case WeightQuant::int4: return "int4";
    default: return "f32";
  }
}

// ---- layers ---------------------------------------------------------------------------------

DynTensor Linear::forward(const DynTensor& x) const {
  if (bits == 0) return nn::linear(x, weight);
  return matmul_wq(x, data, scales, std::nullopt,
                   ember::WeightQuant{.bits = bits, .block = kQuantBlock, .quantize_x = quantize_x});
}

int64_t Linear::bytes() const {
  if (bits == 0) return weight.numel() * 4;
  return data.numel() * int64_t(data.dtype() == DType::u8 || data.dtype() == DType::i8 ? 1 : 4) + scales.numel() * 4;
}

KvCache Model::new_cache() const {
  KvCache c;
  c.k.resize(layers.size());
  c.v.resize(layers.size());
  return c;
}

int64_t Model::linear_weight_bytes() const {
  int64_t n = lm_head.bytes();
  for (const Layer& l : layers)
    for (const Linear* p : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) n += p->bytes();
  return n;
}

DynTensor Model::forward(const DynTensor& tokens, KvCache& cache, bool all_positions) const {
  const Config& c = config;
  EMBER_CHECK(tokens.rank() == 2, "llama: tokens must be [batch, T], got ", tokens.shape());
  const int64_t B = tokens.size(0), T = tokens.size(1), past = cache.length, S = past + T;
  EMBER_CHECK(T > 0, "llama: no tokens to run");
  EMBER_CHECK(S <= c.max_position_embeddings, "llama: positions up to ", S, " exceed max_position_embeddings ",
              c.max_position_embeddings);
  EMBER_CHECK(cache.k.size() == layers.size(), "llama: the cache has ", cache.k.size(), " layers, the model ",
              layers.size(), " (use Model::new_cache)");
  const int64_t H = c.num_attention_heads, Hkv = c.num_key_value_heads, G = H / Hkv, hd = c.head_dim;
  // Query rows of a group are (g, t) for the G heads sharing one kv head; row (g, t) sees keys
  // 0 .. past + t. Without a cache and groups of one this is the plain causal mask.
  std::optional<DynTensor> mask;
  const bool causal = past == 0 && G == 1 && T > 1;
  if (T > 1 && !causal) {
    std::vector<float> m(size_t(G * T * S), 0.f);
    for (int64_t g = 0; g < G; ++g)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t s = past + t + 1; s < S; ++s) m[size_t((g * T + t) * S + s)] = -std::numeric_limits<float>::infinity();
    mask = DynTensor::from_vector(m, {G * T, S}, embed.device());
  }
  DynTensor x = embedding(embed, tokens);  // [B, T, d]
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& L = layers[i];
    DynTensor h = nn::rms_norm(x, {c.hidden_size}, L.input_norm, c.rms_norm_eps);
    auto heads = [&](const Linear& proj, int64_t n) {  // [B, n, T, hd]
      return transpose(reshape(proj.forward(h), {B, T, n, hd}), 1, 2);
    };
    DynTensor q = rope.forward(heads(L.q, H), past);
    DynTensor k = rope.forward(heads(L.k, Hkv), past);
    DynTensor v = heads(L.v, Hkv);
    if (cache.k[i].defined()) {
      k = cat({cache.k[i], k}, 2);
      v = cat({cache.v[i], v}, 2);
    }
    cache.k[i] = k;
    cache.v[i] = v;
    // [B, H, T, hd] -> [B, Hkv, G * T, hd]: head h = kv * G + g, so a group's heads are adjacent.
    DynTensor y = scaled_dot_product_attention(reshape(q, {B, Hkv, G * T, hd}), k, v, mask, causal);
    y = reshape(transpose(reshape(y, {B, H, T, hd}), 1, 2), {B, T, H * hd});
    x = x + L.o.forward(y);
    h = nn::rms_norm(x, {c.hidden_size}, L.post_attention_norm, c.rms_norm_eps);
    x = x + L.down.forward(silu(L.gate.forward(h)) * L.up.forward(h));
  }
  cache.length = S;
  if (!all_positions && T > 1) x = narrow(x, 1, T - 1, 1);
  return lm_head.forward(nn::rms_norm(x, {c.hidden_size}, norm, c.rms_norm_eps));
}

// ---- weights --------------------------------------------------------------------------------

Model from_tensors(const Config& c, const store::TensorMap& tensors, const LoadOptions& options,
                   const std::string& source) {
  auto get = [&](const std::string& name, Shape shape) {
    const DynTensor* t = tensors.find(name);
    EMBER_CHECK(t != nullptr, "llama: ", source, ": tensor \"", name, "\" is missing (config: ",
                c.num_hidden_layers, " layers", c.tie_word_embeddings ? ", tied embeddings" : "", ")");
    EMBER_CHECK(is_float(t->dtype()), "llama: ", source, ": tensor \"", name, "\" is ", t->dtype(),
                "; expected f32, f16 or bf16");
    EMBER_CHECK(t->shape() == shape, "llama: ", source, ": tensor \"", name, "\" has shape ", t->shape(),
                " but the config implies ", shape, " (hidden_size ", c.hidden_size, ", intermediate_size ",
                c.intermediate_size, ", heads ", c.num_attention_heads, ", kv heads ", c.num_key_value_heads,
                ", head_dim ", c.head_dim, ", vocab_size ", c.vocab_size, ")");
    DynTensor r = t->cast(DType::f32);
    return r.device() == options.device ? r : r.to(options.device);
  };
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    Linear l;
    DynTensor w = get(name, {out, in});
    if (options.quant == WeightQuant::none) {
      l.weight = w;
      return l;
    }
    EMBER_CHECK(in % kQuantBlock == 0, "llama: ", source, ": tensor \"", name, "\" has ", in,
                " inputs, not a multiple of the quantization block (", kQuantBlock, ")");
    const auto type = options.quant == WeightQuant::int8 ? quant::QType::int8 : quant::QType::int4;
    const quant::WeightOnlyOperands ops = quant::quantize(w, quant::QScheme::per_block(1, kQuantBlock, type)).weight_only();
    l.data = ops.data;
    l.scales = ops.scales;
    l.bits = ops.bits;
    l.quantize_x = options.quantize_activations;
    return l;
  };
  const int64_t d = c.hidden_size, hd = c.head_dim;
  Model m;
  m.config = c;
  m.embed = get("model.embed_tokens.weight", {c.vocab_size, d});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    Layer L;
    L.input_norm = get(p + "input_layernorm.weight", {d});
    L.post_attention_norm = get(p + "post_attention_layernorm.weight", {d});
    L.q = linear(p + "self_attn.q_proj.weight", c.num_attention_heads * hd, d);
    L.k = linear(p + "self_attn.k_proj.weight", c.num_key_value_heads * hd, d);
    L.v = linear(p + "self_attn.v_proj.weight", c.num_key_value_heads * hd, d);
    L.o = linear(p + "self_attn.o_proj.weight", d, c.num_attention_heads * hd);
    L.gate = linear(p + "mlp.gate_proj.weight", c.intermediate_size, d);
    L.up = linear(p + "mlp.up_proj.weight", c.intermediate_size, d);
    L.down = linear(p + "mlp.down_proj.weight", d, c.intermediate_size);
    m.layers.push_back(std::move(L));
  }
  const std::string extra = "model.layers." + std::to_string(c.num_hidden_layers) + ".input_layernorm.weight";
  EMBER_CHECK(!tensors.contains(extra), "llama: ", source, ": tensor \"", extra, "\" exists but the config has ",
              c.num_hidden_layers, " layers (key \"num_hidden_layers\")");
  m.norm = get("model.norm.weight", {d});
  const bool has_head = tensors.contains("lm_head.weight");
  m.lm_head = linear(has_head && !c.tie_word_embeddings ? "lm_head.weight" : "model.embed_tokens.weight", c.vocab_size, d);
  EMBER_CHECK(has_head || c.tie_word_embeddings, "llama: ", source,
              ": tensor \"lm_head.weight\" is missing and the config does not tie it to the embedding "
              "(key \"tie_word_embeddings\")");
  m.rope = nn::RotaryEncodingConfig{.d_model = hd,
                                    .max_len = c.max_position_embeddings,
                                    .theta = c.rope_theta,
                                    .interleaved = false}
               .init(options.device);
  return m;
}

Model load_model(const std::string& dir, const LoadOptions& options) {
  namespace fs = std::filesystem;
  const Config config = Config::load((fs::path(dir) / "config.json").string());
  const fs::path single = fs::path(dir) / "model.safetensors", index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(single) || !fs::exists(index))
    return from_tensors(config, store::load_safetensors(single.string()), options, single.string());
  // A sharded checkpoint: the index's weight_map names the file of each tensor.
  json j;
  try {
    j = json::parse(read_text(index.string()));
  } catch (const json::exception& e) {
    EMBER_FAIL("llama: ", index.string(), ": not valid JSON: ", e.what());
  }
  EMBER_CHECK(j.contains("weight_map") && j["weight_map"].is_object(), "llama: ", index.string(),
              ": key \"weight_map\" is missing");
  std::set<std::string> files;
  for (const auto& [name, file] : j["weight_map"].items()) {
    EMBER_CHECK(file.is_string(), "llama: ", index.string(), ": weight_map[\"", name, "\"] is not a file name");
    files.insert(file.get<std::string>());
  }
  store::TensorMap all;
  for (const std::string& f : files)
    for (const auto& [name, t] : store::load_safetensors((fs::path(dir) / f).string())) all.insert(name, t);
  return from_tensors(config, all, options, index.string());
}

}  // namespace llama
