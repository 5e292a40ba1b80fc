// examples/llama: config.json and weight checks, tokenizer.json, and the KV cache's consistency.
// The logits themselves are checked against a PyTorch reference by compare_torch.py (test.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ember/store/safetensors.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "llama.hpp"
#include "tokenizer.hpp"

using namespace ember;

namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_has(const std::string& msg, std::initializer_list<std::string_view> parts) {
  ASSERT_FALSE(msg.empty()) << "no ember::Error";
  for (auto p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

const char* kConfig = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96,
  "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 40,
  "max_position_embeddings": 32, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
  "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": [2, 3]})";

// Random weights of the names and shapes kConfig implies.
store::TensorMap weights(const llama::Config& c) {
  store::TensorMap m;
  auto add = [&](const std::string& name, Shape shape) { m.insert(name, randn(shape) * 0.2); };
  const int64_t d = c.hidden_size, hd = c.head_dim, f = c.intermediate_size;
  add("model.embed_tokens.weight", {c.vocab_size, d});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    m.insert(p + "input_layernorm.weight", DynTensor::ones({d}) + randn({d}) * 0.1);
    m.insert(p + "post_attention_layernorm.weight", DynTensor::ones({d}) + randn({d}) * 0.1);
    add(p + "self_attn.q_proj.weight", {c.num_attention_heads * hd, d});
    add(p + "self_attn.k_proj.weight", {c.num_key_value_heads * hd, d});
    add(p + "self_attn.v_proj.weight", {c.num_key_value_heads * hd, d});
    add(p + "self_attn.o_proj.weight", {d, c.num_attention_heads * hd});
    add(p + "mlp.gate_proj.weight", {f, d});
    add(p + "mlp.up_proj.weight", {f, d});
    add(p + "mlp.down_proj.weight", {d, f});
  }
  m.insert("model.norm.weight", DynTensor::ones({d}));
  add("lm_head.weight", {c.vocab_size, d});
  return m;
}

std::string with(std::string json, std::string_view from, std::string_view to) {
  const size_t at = json.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return json.replace(at, from.size(), to);
}

}  // namespace

TEST(LlamaConfig, ParsesHuggingFaceKeys) {
  const auto c = llama::Config::parse(kConfig);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{2, 3}));
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
}

TEST(LlamaConfig, RejectsContradictions) {
  const std::string cfg = kConfig;
  expect_has(error_of([&] { llama::Config::parse(with(cfg, "\"num_attention_heads\": 4", "\"num_attention_heads\": 5"), "c.json"); }),
             {"c.json", "\"num_attention_heads\" (5) does not divide \"hidden_size\" (64)"});
  expect_has(error_of([&] { llama::Config::parse(with(cfg, "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3"), "c.json"); }),
             {"c.json", "\"num_key_value_heads\" (3) does not divide"});
  expect_has(error_of([&] { llama::Config::parse(with(cfg, "\"hidden_size\": 64,", ""), "c.json"); }),
             {"c.json", "key \"hidden_size\" is missing"});
  expect_has(error_of([&] { llama::Config::parse(with(cfg, "\"vocab_size\": 40", "\"vocab_size\": \"40\""), "c.json"); }),
             {"c.json", "key \"vocab_size\" must be an integer"});
  expect_has(error_of([&] { llama::Config::parse(with(cfg, "\"rope_theta\": 10000.0", "\"rope_scaling\": {\"type\": \"linear\"}"), "c.json"); }),
             {"rope_scaling", "not supported"});
  expect_has(error_of([&] { llama::Config::parse("{", "c.json"); }), {"c.json", "not valid JSON"});
}

TEST(LlamaWeights, ContradictingWeightsNameTheTensor) {
  const auto c = llama::Config::parse(kConfig);
  store::TensorMap w = weights(c);
  EXPECT_NO_THROW(llama::from_tensors(c, w, {}, "m.safetensors"));
  // a missing tensor
  store::TensorMap missing = w;
  missing.erase("model.layers.1.mlp.up_proj.weight");
  expect_has(error_of([&] { llama::from_tensors(c, missing, {}, "m.safetensors"); }),
             {"m.safetensors", "\"model.layers.1.mlp.up_proj.weight\" is missing"});
  // a config whose intermediate_size contradicts the weights
  const auto wide = llama::Config::parse(with(kConfig, "\"intermediate_size\": 96", "\"intermediate_size\": 128"));
  expect_has(error_of([&] { llama::from_tensors(wide, w, {}, "m.safetensors"); }),
             {"m.safetensors", "\"model.layers.0.mlp.gate_proj.weight\" has shape [96, 64]", "[128, 64]"});
  // kv heads that contradict k_proj's rows
  const auto mha = llama::Config::parse(with(kConfig, "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 4"));
  expect_has(error_of([&] { llama::from_tensors(mha, w, {}, "m.safetensors"); }),
             {"\"model.layers.0.self_attn.k_proj.weight\" has shape [32, 64]", "[64, 64]", "kv heads 4"});
  // fewer layers in the config than in the file
  const auto short_cfg = llama::Config::parse(with(kConfig, "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1"));
  expect_has(error_of([&] { llama::from_tensors(short_cfg, w, {}, "m.safetensors"); }),
             {"\"model.layers.1.input_layernorm.weight\" exists", "num_hidden_layers"});
  // no lm_head and no tying
  store::TensorMap headless = w;
  headless.erase("lm_head.weight");
  expect_has(error_of([&] { llama::from_tensors(c, headless, {}, "m.safetensors"); }), {"lm_head.weight", "tie_word_embeddings"});
  // an integer tensor
  store::TensorMap ints = w;
  ints.insert_or_assign("model.norm.weight", DynTensor::ones({64}, DType::i32));
  expect_has(error_of([&] { llama::from_tensors(c, ints, {}, "m.safetensors"); }), {"\"model.norm.weight\" is i32"});
  // quantization needs inputs in whole blocks of 32
  const auto odd = llama::Config::parse(with(kConfig, "\"intermediate_size\": 96", "\"intermediate_size\": 40"));
  store::TensorMap w40 = weights(odd);
  expect_has(error_of([&] { llama::from_tensors(odd, w40, {.quant = llama::WeightQuant::int4}, "m.safetensors"); }),
             {"\"model.layers.0.mlp.down_proj.weight\" has 40 inputs", "multiple of the quantization block (32)"});
}

TEST(LlamaModel, DecodingThroughTheCacheMatchesOnePass) {
  // The cache's invariant, for every weight format: prefill of 5 tokens then 3 single steps give the
  // logits of one pass over all 8 (same positions, same keys).
  const auto c = llama::Config::parse(kConfig);
  const store::TensorMap w = weights(c);
  const std::vector<int64_t> ids{1, 7, 30, 4, 12, 9, 39, 0};
  for (auto q : {llama::WeightQuant::none, llama::WeightQuant::int8, llama::WeightQuant::int4}) {
    const llama::Model m = llama::from_tensors(c, w, {.quant = q});
    llama::KvCache full = m.new_cache();
    const std::vector<float> all = m.forward(DynTensor::from_vector(ids, {1, 8}), full, true).to_vector<float>();
    ASSERT_EQ(all.size(), 8u * 40);
    EXPECT_EQ(full.length, 8);
    llama::KvCache cache = m.new_cache();
    std::vector<float> steps =
        m.forward(DynTensor::from_vector(std::vector<int64_t>(ids.begin(), ids.begin() + 5), {1, 5}), cache, true)
            .to_vector<float>();
    for (size_t t = 5; t < 8; ++t) {
      const auto row = m.forward(DynTensor::from_vector(std::vector<int64_t>{ids[t]}, {1, 1}), cache).to_vector<float>();
      steps.insert(steps.end(), row.begin(), row.end());
    }
    ASSERT_EQ(steps.size(), all.size());
    for (size_t i = 0; i < all.size(); ++i) ASSERT_NEAR(steps[i], all[i], 1e-4) << "element " << i << ", " << llama::weight_quant_name(q);
    // a chunk of several tokens against a non-empty cache (the grouped mask with an offset)
    llama::KvCache chunked = m.new_cache();
    m.forward(DynTensor::from_vector(std::vector<int64_t>(ids.begin(), ids.begin() + 3), {1, 3}), chunked);
    const auto rest =
        m.forward(DynTensor::from_vector(std::vector<int64_t>(ids.begin() + 3, ids.end()), {1, 5}), chunked, true)
            .to_vector<float>();
    for (size_t i = 0; i < rest.size(); ++i) ASSERT_NEAR(rest[i], all[3 * 40 + i], 1e-4) << "chunked, element " << i;
  }
}

// Weights of compare_torch.py's formula_weights: tensor n, element j:
// scale * sin(((j * j) % 1009) * 0.0123 + j * 0.37 + n) rounded to f32; gains 1 + that.
store::TensorMap formula_weights(const llama::Config& c) {
  store::TensorMap m;
  int n = 0;
  auto add = [&](const std::string& name, Shape shape, double scale, bool gain) {
    std::vector<float> v(size_t(shape.numel()));
    for (int64_t j = 0; j < int64_t(v.size()); ++j)
      v[size_t(j)] = float(scale * std::sin(double((j * j) % 1009) * 0.0123 + double(j) * 0.37 + n));
    if (gain)
      for (float& x : v) x = 1 + x;
    m.insert(name, DynTensor::from_vector(v, shape));
    ++n;
  };
  const int64_t d = c.hidden_size, hd = c.head_dim, f = c.intermediate_size;
  add("model.embed_tokens.weight", {c.vocab_size, d}, 1.0, false);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {d}, 0.1, true);
    add(p + "post_attention_layernorm.weight", {d}, 0.1, true);
    add(p + "self_attn.q_proj.weight", {c.num_attention_heads * hd, d}, 0.2, false);
    add(p + "self_attn.k_proj.weight", {c.num_key_value_heads * hd, d}, 0.2, false);
    add(p + "self_attn.v_proj.weight", {c.num_key_value_heads * hd, d}, 0.2, false);
    add(p + "self_attn.o_proj.weight", {d, c.num_attention_heads * hd}, 0.2, false);
    add(p + "mlp.gate_proj.weight", {f, d}, 0.2, false);
    add(p + "mlp.up_proj.weight", {f, d}, 0.2, false);
    add(p + "mlp.down_proj.weight", {d, f}, 0.2, false);
  }
  add("model.norm.weight", {d}, 0.1, true);
  add("lm_head.weight", {c.vocab_size, d}, 0.2, false);
  return m;
}

TEST(LlamaModel, MatchesThePyTorchReference) {
  // testdata/reference_logits.json: compare_torch.py's float64 PyTorch forward (rotate-half RoPE,
  // repeat_kv, causal attention) over the same formula weights. Ember runs 5 tokens of prefill,
  // then 3 single steps through the cache; every row within 1e-4 of the logit range.
  std::ifstream f(EMBER_LLAMA_TESTDATA "/reference_logits.json");
  ASSERT_TRUE(f.good()) << EMBER_LLAMA_TESTDATA "/reference_logits.json";
  const nlohmann::json ref = nlohmann::json::parse(f);
  const auto c = llama::Config::parse(ref["config"].dump(), "reference_logits.json");
  const llama::Model m = llama::from_tensors(c, formula_weights(c));
  const auto ids = ref["ids"].get<std::vector<int64_t>>();
  const auto expected = ref["logits"].get<std::vector<std::vector<double>>>();
  ASSERT_EQ(expected.size(), ids.size());
  llama::KvCache cache = m.new_cache();
  std::vector<float> got =
      m.forward(DynTensor::from_vector(std::vector<int64_t>(ids.begin(), ids.begin() + 5), {1, 5}), cache, true)
          .to_vector<float>();
  for (size_t t = 5; t < ids.size(); ++t) {
    const auto row = m.forward(DynTensor::from_vector(std::vector<int64_t>{ids[t]}, {1, 1}), cache).to_vector<float>();
    got.insert(got.end(), row.begin(), row.end());
  }
  double lo = 1e30, hi = -1e30;
  for (const auto& row : expected)
    for (double x : row) lo = std::min(lo, x), hi = std::max(hi, x);
  const size_t V = size_t(c.vocab_size);
  ASSERT_EQ(got.size(), expected.size() * V);
  for (size_t t = 0; t < expected.size(); ++t)
    for (size_t v = 0; v < V; ++v)
      ASSERT_NEAR(got[t * V + v], expected[t][v], 1e-4 * (hi - lo)) << "position " << t << ", token " << v;
}

TEST(LlamaModel, RejectsPositionsPastTheTable) {
  const auto c = llama::Config::parse(kConfig);
  const llama::Model m = llama::from_tensors(c, weights(c));
  llama::KvCache cache = m.new_cache();
  m.forward(DynTensor::zeros({1, 30}, DType::i64), cache);
  expect_has(error_of([&] { m.forward(DynTensor::zeros({1, 3}, DType::i64), cache); }),
             {"positions up to 33 exceed max_position_embeddings 32"});
}

// ---- tokenizer.json -------------------------------------------------------------------------

namespace {

// A byte-level BPE tokenizer.json: bytes are ids 0..255 in GPT-2's spelling (printable ASCII is
// itself, the space is "Ġ" = U+0120); merges "l l" (256), "Ġ h" (257), "Ġh i" (258); added
// tokens <s> (259) and </s> (260).
std::string tokenizer_json(std::string_view pre_tokenizer = R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})",
                           std::string_view merges = R"(["l l", ["Ġ", "h"], "Ġh i"])") {
  auto spelling = [](int b) {
    auto printable = [](int c) { return (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174; };
    int cp = b;
    if (!printable(b)) {
      cp = 256;
      for (int c = 0; c < b; ++c) cp += !printable(c);
    }
    std::string s;
    if (cp < 0x80) s += char(cp);
    else s += {char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
    if (s == "\"" || s == "\\") s.insert(s.begin(), '\\');
    return s;
  };
  std::string vocab;
  for (int b = 0; b < 256; ++b) {
    vocab += '"';
    vocab += spelling(b);
    vocab += "\": ";
    vocab += std::to_string(b);
    vocab += ", ";
  }
  vocab += R"("ll": 256, "Ġh": 257, "Ġhi": 258)";
  return std::string(R"({"version": "1.0", "normalizer": null, "pre_tokenizer": )") + std::string(pre_tokenizer) +
         R"(, "decoder": {"type": "ByteLevel"}, "added_tokens": [{"id": 259, "content": "<s>", "special": true},
         {"id": 260, "content": "</s>", "special": true}], "model": {"type": "BPE", "vocab": {)" + vocab +
         R"(}, "merges": )" + std::string(merges) + "}}";
}

}  // namespace

TEST(LlamaTokenizer, EncodesAndDecodesHandComputedIds) {
  const auto tok = llama::HfTokenizer::parse(tokenizer_json());
  EXPECT_EQ(tok.vocab_size(), 261);
  // "hill hi<s>": pre-tokens "hill", " hi" -> h i ll (256), Ġhi (258); then <s>
  const std::vector<int32_t> ids = tok.encode("hill hi<s>");
  EXPECT_EQ(ids, (std::vector<int32_t>{'h', 'i', 256, 258, 259}));
  EXPECT_EQ(tok.decode(ids), "hill hi<s>");
  EXPECT_EQ(tok.decode(ids, /*skip_special=*/true), "hill hi");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{'h', 261, 'i', -1}), "hi");  // ids past the tokenizer: no text
  for (std::string s : {"", "hello, hill!\n  hi", "caf\xc3\xa9 \xf0\x9f\x94\xa5 </s>"}) EXPECT_EQ(tok.decode(tok.encode(s)), s);
  // add_prefix_space: "hi" is encoded as " hi"
  const auto prefixed = llama::HfTokenizer::parse(
      tokenizer_json(R"({"type": "Sequence", "pretokenizers": [{"type": "ByteLevel", "add_prefix_space": true}]})"));
  EXPECT_EQ(prefixed.encode("hi"), (std::vector<int32_t>{258}));
}

TEST(LlamaTokenizer, RejectsWhatItDoesNotSupport) {
  const std::string good = tokenizer_json();
  expect_has(error_of([&] { llama::HfTokenizer::parse(with(good, R"("type": "BPE")", R"("type": "Unigram")"), "t.json"); }),
             {"t.json", "model.type", "Unigram", "not supported"});
  expect_has(error_of([&] { llama::HfTokenizer::parse(with(good, R"("type": "BPE")", R"("type": "BPE", "byte_fallback": true)"), "t.json"); }),
             {"t.json", "model.byte_fallback", "SentencePiece"});
  expect_has(error_of([&] { llama::HfTokenizer::parse(tokenizer_json(R"({"type": "Split", "pattern": {"Regex": "x"}})"), "t.json"); }),
             {"t.json", "pre_tokenizer", "not supported"});
  expect_has(error_of([&] { llama::HfTokenizer::parse(with(good, R"("normalizer": null)", R"("normalizer": {"type": "NFC"})"), "t.json"); }),
             {"t.json", "normalizer", "not supported"});
  expect_has(error_of([&] { llama::HfTokenizer::parse(tokenizer_json({R"({"type": "ByteLevel"})"}, R"(["l l", "Ġ x"])"), "t.json"); }),
             {"t.json", "merge 1", "not in the vocabulary"});
  expect_has(error_of([&] { llama::HfTokenizer::parse(tokenizer_json({R"({"type": "ByteLevel"})"}, R"(["l l", "lll"])"), "t.json"); }),
             {"t.json", "model.merges[1]", "not two tokens"});
}
