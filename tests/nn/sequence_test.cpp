// Sequence layers against PyTorch: MultiHeadAttention (masks, causal, the key/value cache),
// Transformer encoder/decoder layers and stacks, Rnn/Lstm/Gru, positional encodings.
// References: cases/sequence.json from gen_sequence_cases.py (torch 1.13, float64). Each case
// loads torch's state_dict with nn::load_state_dict (strict), runs in eval mode on an autodiff
// device in f32, and compares the outputs and the gradients of loss = sum(output * cotangent)
// with respect to the inputs and every parameter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "ember/nn/attention.hpp"
#include "ember/nn/feedforward.hpp"
#include "ember/nn/positional.hpp"
#include "ember/nn/rnn.hpp"
#include "ember/nn/transformer.hpp"

namespace ember::nn {
namespace {

using Json = nlohmann::ordered_json;
constexpr double kTol = 2e-5;  // f32 against float64 references: |a - b| <= kTol * (1 + |b|)

const Json& cases() {
  static const Json j = [] {
    std::ifstream f(std::string(EMBER_NN_TEST_DIR) + "/cases/sequence.json");
    EXPECT_TRUE(f.good()) << "cannot open cases/sequence.json";
    return Json::parse(f);
  }();
  return j;
}

Device dev() { return Device::cpu().autodiff(); }

DynTensor tensor_of(const Json& j) {
  Shape shape(j["shape"].get<std::vector<int64_t>>());
  if (j.contains("dtype") && j["dtype"] == "bool") {
    std::vector<bool> v;
    for (const auto& x : j["data"]) v.push_back(x.get<int>() != 0);
    return DynTensor::from_vector(v, shape, dev());
  }
  std::vector<float> v;
  for (const auto& x : j["data"])  // infinities are written as strings
    v.push_back(x.is_string() ? std::stof(x.get<std::string>()) : x.get<float>());
  return DynTensor::from_vector(v, shape, dev());
}

NamedTensors named_tensors(const Json& params) {
  NamedTensors out;
  for (const auto& [k, v] : params.items()) out.emplace_back(k, tensor_of(v));
  return out;
}

void expect_close(const DynTensor& got, const Json& want, const std::string& what) {
  const Shape shape(want["shape"].get<std::vector<int64_t>>());
  ASSERT_EQ(got.shape(), shape) << what;
  const std::vector<double> g = got.cast(DType::f64).to_vector<double>();
  std::vector<double> w;
  for (const auto& x : want["data"]) w.push_back(x.is_string() ? std::stod(x.get<std::string>()) : x.get<double>());
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double err = std::abs(g[i] - w[i]) / (1 + std::abs(w[i]));
    if (!(err <= worst)) worst = err, at = i;
  }
  EXPECT_LE(worst, kTol) << what << ": element " << at << " is " << g[at] << ", torch " << w[at];
}

// Loads the case's state_dict into `m`, checks the keys come out in torch's order, then compares
// the outputs of `run` (inputs by name) and the gradients of sum(output * cotangent).
template <class M>
void check_case(const std::string& name, M& m,
                const std::function<std::map<std::string, DynTensor>(const std::map<std::string, DynTensor>&)>& run) {
  SCOPED_TRACE(name);
  const Json& c = cases().at(name);
  load_state_dict(m, named_tensors(c["params"]));
  set_training(m, false);
  std::vector<std::string> keys, want_keys;
  for (const auto& [k, v] : state_dict(m)) keys.push_back(k);
  for (const auto& [k, v] : c["params"].items()) want_keys.push_back(k);
  EXPECT_EQ(keys, want_keys);

  std::map<std::string, DynTensor> inputs;
  for (const auto& [k, v] : c["inputs"].items()) {
    DynTensor t = tensor_of(v);
    inputs[k] = c["grads"].contains("input." + k) ? t.require_grad() : t;
  }
  std::map<std::string, DynTensor> outputs = run(inputs);
  DynTensor loss;
  for (const auto& [k, want] : c["outputs"].items()) {
    ASSERT_TRUE(outputs.count(k)) << "no output " << k;
    expect_close(outputs[k], want, "output " + k);
    DynTensor term = sum(outputs[k] * tensor_of(c["cotangents"][k]));
    loss = loss.defined() ? loss + term : term;
  }
  Gradients grads = loss.backward();
  for (const auto& [k, v] : inputs) {
    if (!c["grads"].contains("input." + k)) continue;
    std::optional<DynTensor> g = v.grad(grads);
    ASSERT_TRUE(g.has_value()) << "no gradient for input " << k;
    expect_close(*g, c["grads"]["input." + k], "grad of input " + k);
  }
  for_each_param(m, [&](const std::string& path, Param& p) {
    const std::string key = "param." + path;
    ASSERT_TRUE(c["grads"].contains(key)) << key;
    std::optional<DynTensor> g = p.grad(grads);
    ASSERT_TRUE(g.has_value()) << "no gradient for " << path;
    expect_close(*g, c["grads"][key], "grad of " + path);
  });
}

std::optional<DynTensor> get(const std::map<std::string, DynTensor>& in, const std::string& k) {
  auto it = in.find(k);
  return it == in.end() ? std::nullopt : std::optional<DynTensor>(it->second);
}

FeedForwardActivation activation_of(const Json& cfg) {
  return cfg["activation"] == "gelu" ? FeedForwardActivation::gelu : FeedForwardActivation::relu;
}

// ---------------------------------------------------------------------------------------------
// MultiHeadAttention

MultiHeadAttention mha_of(const Json& cfg) {
  return MultiHeadAttentionConfig{.embed_dim = cfg["embed_dim"],
                                  .num_heads = cfg["num_heads"],
                                  .dropout = 0,
                                  .bias = cfg["bias"],
                                  .batch_first = cfg["batch_first"]}
      .init(dev());
}

// Runs a case; `causal_flag`: use is_causal instead of the recorded (causal) attn_mask.
void check_mha(const std::string& name, bool causal_flag) {
  const Json& cfg = cases().at(name)["config"];
  MultiHeadAttention m = mha_of(cfg);
  check_case(name, m, [&](const std::map<std::string, DynTensor>& in) {
    const DynTensor q = in.at("query");
    const DynTensor k = cfg["self_attention"] ? q : in.at("key");
    const DynTensor v = cfg["self_attention"] ? q : in.at("value");
    AttentionMasks masks{get(in, "key_padding_mask"), get(in, "attn_mask"), false};
    if (causal_flag) masks.attn_mask.reset(), masks.is_causal = true;
    if (cfg["need_weights"]) {
      MhaOutput o = m.forward_with_weights(q, k, v, masks);
      return std::map<std::string, DynTensor>{{"output", o.output}, {"weights", o.weights}};
    }
    return std::map<std::string, DynTensor>{{"output", m.forward(q, k, v, masks)}};
  });
}

TEST(MultiHeadAttention, CrossAttentionWithWeights) { check_mha("mha_cross_weights", false); }
TEST(MultiHeadAttention, BoolMaskAndKeyPadding) { check_mha("mha_self_masks", false); }
TEST(MultiHeadAttention, FloatPerHeadMaskWithoutBias) { check_mha("mha_float_mask_3d_nobias", false); }
TEST(MultiHeadAttention, CausalMaskAndFlagAgree) {
  for (const char* name : {"mha_causal", "mha_causal_seq_first"}) {
    check_mha(name, false);
    check_mha(name, true);
  }
}

// Incremental decoding: feeding the sequence through forward_cached in pieces gives the full
// causal pass's output (torch's, from the case).
TEST(MultiHeadAttention, CacheMatchesFullCausalPass) {
  for (const char* name : {"mha_causal", "mha_causal_seq_first"}) {
    SCOPED_TRACE(name);
    const Json& c = cases().at(name);
    MultiHeadAttention m = mha_of(c["config"]);
    load_state_dict(m, named_tensors(c["params"]));
    set_training(m, false);
    const bool bf = c["config"]["batch_first"];
    const int seq_dim = bf ? 1 : 0;
    const DynTensor x = tensor_of(c["inputs"]["query"]);
    const int64_t len = x.size(seq_dim);
    for (int64_t step : {int64_t(1), int64_t(2), len}) {
      MhaCache cache;
      std::vector<DynTensor> pieces;
      for (int64_t t = 0; t < len; t += step) {
        pieces.push_back(m.forward_cached(narrow(x, seq_dim, t, std::min(step, len - t)), cache));
      }
      EXPECT_EQ(cache.length(), len);
      expect_close(cat(pieces, seq_dim), c["outputs"]["output"], "cached output, step " + std::to_string(step));
    }
    // Gradients flow through the cache as well.
    MhaCache cache;
    DynTensor first = m.forward_cached(narrow(x, seq_dim, 0, 2), cache);
    DynTensor second = m.forward_cached(narrow(x, seq_dim, 2, len - 2), cache);
    Gradients g = (sum(first) + sum(second)).backward();
    EXPECT_TRUE(m.in_proj_weight.grad(g).has_value());
  }
}

TEST(MultiHeadAttention, UnbatchedMatchesBatched) {
  const Json& c = cases().at("mha_cross_weights");
  MultiHeadAttention m = mha_of(c["config"]);
  load_state_dict(m, named_tensors(c["params"]));
  const DynTensor q = tensor_of(c["inputs"]["query"]), k = tensor_of(c["inputs"]["key"]),
                  v = tensor_of(c["inputs"]["value"]);  // seq-first [L, N, E]
  MhaOutput full = m.forward_with_weights(q, k, v);
  MhaOutput one = m.forward_with_weights(select(q, 1, 1), select(k, 1, 1), select(v, 1, 1));
  auto diff = [](const DynTensor& a, const DynTensor& b) { return max(abs(a - b)).item(); };
  EXPECT_LT(diff(one.output, select(full.output, 1, 1)), 1e-5);
  EXPECT_LT(diff(one.weights, select(full.weights, 0, 1)), 1e-5);
}

TEST(MultiHeadAttention, StateDictAndDefaults) {
  MultiHeadAttention m = MultiHeadAttentionConfig{.embed_dim = 12, .num_heads = 3}.init(dev());
  std::vector<std::pair<std::string, Shape>> got;
  for (const auto& [k, v] : state_dict(m)) got.emplace_back(k, v.shape());
  const std::vector<std::pair<std::string, Shape>> want{
      {"in_proj_weight", {36, 12}}, {"in_proj_bias", {36}}, {"out_proj.weight", {12, 12}}, {"out_proj.bias", {12}}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(max(abs(m.in_proj_bias->value())).item(), 0.0);  // PyTorch zeroes the biases
  EXPECT_EQ(max(abs(m.out_proj.bias->value())).item(), 0.0);
  // xavier_uniform over [36, 12]: bound sqrt(6 / 48)
  EXPECT_LE(max(abs(m.in_proj_weight.value())).item(), std::sqrt(6.0 / 48.0) + 1e-6);
  EXPECT_THROW((MultiHeadAttentionConfig{.embed_dim = 10, .num_heads = 3}.init()), Error);
  const DynTensor x = DynTensor::normal({5, 2, 12}, 0, 1, DType::f32, dev());
  AttentionMasks bad_mask{.attn_mask = DynTensor::zeros({4, 5}, DType::f32, dev())};
  EXPECT_THROW(m.forward(x, x, x, bad_mask), Error);
  AttentionMasks bad_padding{.key_padding_mask = DynTensor::zeros({5, 2}, DType::boolean, dev())};
  EXPECT_THROW(m.forward(x, x, x, bad_padding), Error);
}

TEST(MultiHeadAttention, DropoutOnlyInTraining) {
  MultiHeadAttention m =
      MultiHeadAttentionConfig{.embed_dim = 8, .num_heads = 2, .dropout = 0.5, .batch_first = true}.init(dev());
  const DynTensor x = DynTensor::normal({2, 6, 8}, 0, 1, DType::f32, dev());
  set_training(m, false);
  const DynTensor a = m.forward(x, x, x), b = m.forward(x, x, x);
  EXPECT_EQ(max(abs(a - b)).item(), 0.0);
  set_training(m, true);
  MhaOutput t = m.forward_with_weights(x, x, x, {}, /*average_attn_weights=*/false);
  EXPECT_EQ(t.weights.shape(), Shape({2, 2, 6, 6}));
  EXPECT_GT(max(abs(t.output - a)).item(), 1e-4);
}

// ---------------------------------------------------------------------------------------------
// Transformer layers and stacks

TransformerEncoderLayerConfig encoder_layer_cfg(const Json& cfg) {
  return {.d_model = cfg["d_model"],
          .nhead = cfg["nhead"],
          .dim_feedforward = cfg["dim_feedforward"],
          .dropout = 0.1,
          .activation = activation_of(cfg),
          .layer_norm_eps = cfg["layer_norm_eps"],
          .batch_first = cfg["batch_first"],
          .norm_first = cfg["norm_first"]};
}
TransformerDecoderLayerConfig decoder_layer_cfg(const Json& cfg) {
  return {.d_model = cfg["d_model"],
          .nhead = cfg["nhead"],
          .dim_feedforward = cfg["dim_feedforward"],
          .dropout = 0.1,
          .activation = activation_of(cfg),
          .layer_norm_eps = cfg["layer_norm_eps"],
          .batch_first = cfg["batch_first"],
          .norm_first = cfg["norm_first"]};
}

template <class M>
void check_encoder(const std::string& name, M m) {
  for (bool causal_flag : {false, true}) {
    SCOPED_TRACE(causal_flag ? "is_causal" : "mask");
    check_case(name, m, [&](const std::map<std::string, DynTensor>& in) {
      AttentionMasks masks{in.at("src_key_padding_mask"), in.at("mask"), false};
      if (causal_flag) masks.attn_mask.reset(), masks.is_causal = true;
      return std::map<std::string, DynTensor>{{"output", m.forward(in.at("src"), masks)}};
    });
  }
}

template <class M>
void check_decoder(const std::string& name, M m) {
  check_case(name, m, [&](const std::map<std::string, DynTensor>& in) {
    AttentionMasks tgt{in.at("tgt_key_padding_mask"), in.at("tgt_mask"), false};
    AttentionMasks mem{in.at("memory_key_padding_mask"), std::nullopt, false};
    return std::map<std::string, DynTensor>{{"output", m.forward(in.at("tgt"), in.at("memory"), tgt, mem)}};
  });
}

TEST(Transformer, EncoderLayerPostNormRelu) {
  const std::string name = "encoder_layer_post_relu";
  check_encoder(name, encoder_layer_cfg(cases().at(name)["config"]).init(dev()));
}
TEST(Transformer, EncoderLayerPreNormGelu) {
  const std::string name = "encoder_layer_pre_gelu";
  check_encoder(name, encoder_layer_cfg(cases().at(name)["config"]).init(dev()));
}
TEST(Transformer, DecoderLayerPostNormRelu) {
  const std::string name = "decoder_layer_post_relu";
  check_decoder(name, decoder_layer_cfg(cases().at(name)["config"]).init(dev()));
}
TEST(Transformer, DecoderLayerPreNormGelu) {
  const std::string name = "decoder_layer_pre_gelu";
  check_decoder(name, decoder_layer_cfg(cases().at(name)["config"]).init(dev()));
}
TEST(Transformer, EncoderStackWithFinalNorm) {
  const std::string name = "encoder_stack_norm";
  const Json& cfg = cases().at(name)["config"];
  check_encoder(name,
                TransformerEncoderConfig{encoder_layer_cfg(cfg), cfg["num_layers"], cfg["final_norm"]}.init(dev()));
}
TEST(Transformer, DecoderStacks) {
  for (const char* name : {"decoder_stack", "decoder_stack_norm"}) {
    const Json& cfg = cases().at(name)["config"];
    check_decoder(name,
                  TransformerDecoderConfig{decoder_layer_cfg(cfg), cfg["num_layers"], cfg["final_norm"]}.init(dev()));
  }
}

TEST(Transformer, DefaultsAndCausalMask) {
  TransformerEncoderLayer l = TransformerEncoderLayerConfig{.d_model = 16, .nhead = 4}.init(dev());
  EXPECT_EQ(l.linear1.weight.shape(), Shape({2048, 16}));  // dim_feedforward = 2048
  EXPECT_EQ(l.dropout, 0.1);
  EXPECT_FALSE(l.norm_first);
  EXPECT_EQ(l.norm1.config.eps, 1e-5);
  TransformerDecoder d = TransformerDecoderConfig{{.d_model = 8, .nhead = 2, .dim_feedforward = 4}, 3, true}.init();
  EXPECT_EQ(state_dict(d).size(), size_t(3 * 18 + 2));
  EXPECT_EQ(state_dict(d).back().first, "norm.bias");

  // Dropout (p = 0.1 by default) only in training mode; set_training reaches the attention too.
  const DynTensor x = DynTensor::normal({5, 2, 16}, 0, 1, DType::f32, dev());
  set_training(l, false);
  const DynTensor eval = l.forward(x, {.is_causal = true});
  EXPECT_EQ(max(abs(eval - l.forward(x, {.is_causal = true}))).item(), 0.0);
  EXPECT_FALSE(l.self_attn.mode.training);
  set_training(l, true);
  EXPECT_TRUE(l.self_attn.mode.training);
  EXPECT_GT(max(abs(eval - l.forward(x, {.is_causal = true}))).item(), 1e-4);

  // A mask made on the plain CPU device works with a model on the autodiff device.
  set_training(l, false);
  const DynTensor plain_mask = generate_square_subsequent_mask(5);
  EXPECT_LT(max(abs(eval - l.forward(x, {.attn_mask = plain_mask}))).item(), 1e-5);

  const DynTensor m = generate_square_subsequent_mask(3);
  const std::vector<float> v = m.to_vector<float>();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(v, (std::vector<float>{0, -inf, -inf, 0, 0, -inf, 0, 0, 0}));
}

// ---------------------------------------------------------------------------------------------
// Recurrent layers

void check_recurrent(const std::string& name) {
  const Json& cfg = cases().at(name)["config"];
  const std::string kind = cfg["kind"];
  const int64_t in = cfg["input_size"], hid = cfg["hidden_size"], layers = cfg["num_layers"];
  const bool bias = cfg["bias"], bf = cfg["batch_first"], bidir = cfg["bidirectional"];
  auto outputs = [](const DynTensor& o, const DynTensor& h, const DynTensor& c = {}) {
    std::map<std::string, DynTensor> r{{"output", o}, {"h_n", h}};
    if (c.defined()) r["c_n"] = c;
    return r;
  };
  if (kind == "rnn") {
    Rnn m = RnnConfig{.input_size = in,
                      .hidden_size = hid,
                      .num_layers = layers,
                      .nonlinearity = cfg["nonlinearity"] == "relu" ? RnnNonlinearity::relu : RnnNonlinearity::tanh,
                      .bias = bias,
                      .batch_first = bf,
                      .bidirectional = bidir}
                .init(dev());
    check_case(name, m, [&](const std::map<std::string, DynTensor>& x) {
      RnnOutput r = m.forward(x.at("input"), get(x, "h0"));
      return outputs(r.output, r.h_n);
    });
  } else if (kind == "lstm") {
    Lstm m = LstmConfig{.input_size = in,
                        .hidden_size = hid,
                        .num_layers = layers,
                        .bias = bias,
                        .batch_first = bf,
                        .bidirectional = bidir}
                 .init(dev());
    check_case(name, m, [&](const std::map<std::string, DynTensor>& x) {
      LstmOutput r = m.forward(x.at("input"), get(x, "h0"), get(x, "c0"));
      return outputs(r.output, r.h_n, r.c_n);
    });
  } else {
    Gru m = GruConfig{.input_size = in,
                      .hidden_size = hid,
                      .num_layers = layers,
                      .bias = bias,
                      .batch_first = bf,
                      .bidirectional = bidir}
                .init(dev());
    check_case(name, m, [&](const std::map<std::string, DynTensor>& x) {
      RnnOutput r = m.forward(x.at("input"), get(x, "h0"));
      return outputs(r.output, r.h_n);
    });
  }
}

TEST(Recurrent, RnnTanhTwoLayerBidirectional) { check_recurrent("rnn_tanh_2layer_bidir"); }
TEST(Recurrent, RnnReluBatchFirstWithH0) { check_recurrent("rnn_relu_batch_first_h0"); }
TEST(Recurrent, LstmTwoLayerBidirectionalBatchFirst) { check_recurrent("lstm_2layer_bidir_batch_first_h0"); }
TEST(Recurrent, LstmWithoutBias) { check_recurrent("lstm_nobias"); }
TEST(Recurrent, LstmUnbatched) { check_recurrent("lstm_unbatched"); }
TEST(Recurrent, GruTwoLayerBidirectional) { check_recurrent("gru_2layer_bidir"); }
TEST(Recurrent, GruThreeLayerBatchFirstWithH0) { check_recurrent("gru_batch_first_h0"); }

TEST(Recurrent, DefaultInitAndErrors) {
  Lstm m = LstmConfig{.input_size = 3, .hidden_size = 16, .num_layers = 2, .bidirectional = true}.init(dev());
  const NamedTensors sd = state_dict(m);
  ASSERT_EQ(sd.size(), size_t(16));
  EXPECT_EQ(sd[4].first, "weight_ih_l0_reverse");
  EXPECT_EQ(sd[8].second.shape(), Shape({64, 32}));                                // weight_ih_l1: [4H, 2H]
  for (const auto& [k, v] : sd) EXPECT_LE(max(abs(v)).item(), 0.25 + 1e-6) << k;   // U(-1/sqrt(16), 1/sqrt(16))
  EXPECT_THROW(m.forward(DynTensor::zeros({5, 2, 4}, DType::f32, dev())), Error);  // input_size
  EXPECT_THROW(m.forward(DynTensor::zeros({5, 2, 3}, DType::f32, dev()), DynTensor::zeros({2, 2, 16})), Error);
  // Dropout between layers only in training mode.
  Gru g = GruConfig{.input_size = 3, .hidden_size = 8, .num_layers = 2, .dropout = 0.5}.init(dev());
  const DynTensor x = DynTensor::normal({4, 2, 3}, 0, 1, DType::f32, dev());
  set_training(g, false);
  EXPECT_EQ(max(abs(g.forward(x).output - g.forward(x).output)).item(), 0.0);
  set_training(g, true);
  EXPECT_GT(max(abs(g.forward(x).output - g.forward(x).output)).item(), 0.0);
}

// ---------------------------------------------------------------------------------------------
// Positional encodings

TEST(Positional, SinusoidalMatchesTutorialTable) {
  for (const char* name : {"positional_seq_first", "positional_batch_first"}) {
    const Json& c = cases().at(name);
    const Json& cfg = c["config"];
    PositionalEncoding m =
        PositionalEncodingConfig{
            .d_model = cfg["d_model"], .max_len = cfg["max_len"], .batch_first = cfg["batch_first"]}
            .init(dev());
    // The table ember computes itself, against the tutorial's.
    expect_close(m.pe.value, c["params"]["pe"], std::string(name) + " pe");
    check_case(name, m, [&](const std::map<std::string, DynTensor>& in) {
      return std::map<std::string, DynTensor>{{"output", m.forward(in.at("input"))}};
    });
  }
}

TEST(Positional, RotaryMatchesFormula) {
  for (const char* name : {"rope_interleaved", "rope_half", "rope_half_theta"}) {
    const Json& cfg = cases().at(name)["config"];
    RotaryEncoding m = RotaryEncodingConfig{.d_model = cfg["d_model"],
                                            .max_len = cfg["max_len"],
                                            .theta = cfg["theta"],
                                            .interleaved = cfg["interleaved"]}
                           .init(dev());
    const int64_t start = cfg["start"];
    check_case(name, m, [&](const std::map<std::string, DynTensor>& in) {
      return std::map<std::string, DynTensor>{{"output", m.forward(in.at("input"), start)}};
    });
  }
  RotaryEncoding r = RotaryEncodingConfig{.d_model = 4, .max_len = 8}.init();
  EXPECT_TRUE(state_dict(r).empty());
  EXPECT_THROW(r.forward(DynTensor::zeros({2, 6, 4}), 3), Error);  // positions 3..8 > max_len
  EXPECT_THROW((RotaryEncodingConfig{.d_model = 5}.init()), Error);
}

// ---------------------------------------------------------------------------------------------
// PositionWiseFeedForward (no torch module of its own: checked against the same computation
// spelled with Linear layers).

TEST(FeedForward, KeysAndComputation) {
  PositionWiseFeedForward ff = PositionWiseFeedForwardConfig{.d_model = 6, .d_ff = 10}.init(dev());
  std::vector<std::string> keys;
  for (const auto& [k, v] : state_dict(ff)) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"linear_inner.weight", "linear_inner.bias", "linear_outer.weight",
                                            "linear_outer.bias"}));
  set_training(ff, false);
  const DynTensor x = DynTensor::normal({3, 4, 6}, 0, 1, DType::f32, dev());
  const DynTensor want = ff.linear_outer.forward(gelu(ff.linear_inner.forward(x)));
  EXPECT_LT(max(abs(ff.forward(x) - want)).item(), 1e-6);
}

// PyTorch 1.13 refuses an f64 input to f32 attention and recurrent layers ("mat1 and mat2 must have
// the same dtype"); so does ember, naming the layer and both dtypes.
TEST(SequenceDtype, AnInputOfAnotherDtypeIsRefused) {
  auto message = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  const auto x = DynTensor::ones({3, 2, 4}, DType::f64);
  const auto mha = nn::MultiHeadAttentionConfig{.embed_dim = 4, .num_heads = 2}.init();
  std::string msg = message([&] { mha.forward(x, x, x); });
  EXPECT_EQ(msg.rfind("MultiHeadAttention: query is f64, in_proj_weight is f32", 0), 0u) << msg;
  nn::MhaCache cache;
  msg = message([&] { mha.forward_cached(x, cache); });
  EXPECT_EQ(msg.rfind("MultiHeadAttention: input is f64, in_proj_weight is f32", 0), 0u) << msg;
  msg = message([&] { nn::LstmConfig{.input_size = 4, .hidden_size = 3}.init().forward(x); });
  EXPECT_EQ(msg.rfind("Lstm: input is f64, weight_ih_l0 is f32", 0), 0u) << msg;
  msg = message([&] { nn::GruConfig{.input_size = 4, .hidden_size = 3}.init().forward(x); });
  EXPECT_EQ(msg.rfind("Gru: input is f64, weight_ih_l0 is f32", 0), 0u) << msg;
  const auto layer = nn::TransformerEncoderLayerConfig{.d_model = 4, .nhead = 2, .dim_feedforward = 8}.init();
  msg = message([&] { layer.forward(x); });
  EXPECT_EQ(msg.rfind("MultiHeadAttention: query is f64", 0), 0u) << msg;  // its first sublayer refuses
  EXPECT_EQ(mha.forward(x.cast(DType::f32), x.cast(DType::f32), x.cast(DType::f32)).dtype(), DType::f32);
}

}  // namespace
}  // namespace ember::nn
