// GPT-2 (Radford et al., 2019), built from ember's nn, with Hugging Face's parameter names and
// layouts, so that `nn::save` writes a safetensors file that the `transformers` GPT-2 classes read
// and `load_gpt2` reads theirs:
//
//   wte.weight [vocab, d]          wpe.weight [context, d]
//   h.{i}.ln_1.{weight,bias} [d]   h.{i}.attn.c_attn.{weight [d, 3d], bias [3d]}
//   h.{i}.attn.c_proj.{weight [d, d], bias [d]}
//   h.{i}.ln_2.{weight,bias} [d]   h.{i}.mlp.c_fc.{weight [d, 4d], bias [4d]}
//   h.{i}.mlp.c_proj.{weight [4d, d], bias [d]}
//   ln_f.{weight,bias} [d]         (the output head is wte, tied: logits = x wte^T)
//
// The projections are GPT-2's "Conv1D": y = x W + b with W stored [in, out] (the transpose of
// nn::Linear's). Pre-norm blocks, causal self-attention, the tanh approximation of GELU
// ("gelu_new"), LayerNorm eps 1e-5; initialisation as GPT-2's: weights N(0, 0.02), the residual
// projections' N(0, 0.02 / sqrt(2 * layers)), biases 0.
#pragma once

#include <cmath>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <string>
#include <vector>

namespace gpt2 {

using namespace ember;

struct Config {
  int64_t vocab = 50257, context = 1024, layers = 12, heads = 12, d_model = 768;
  static Config small() { return {}; }  // GPT-2 small, 124M parameters
  // A model that trains in seconds on two CPU cores (for test.sh and quick experiments).
  static Config tiny(int64_t vocab) { return {vocab, 128, 2, 4, 128}; }
};

// GPT-2's Conv1D: y = x W + b, W [in, out].
struct Conv1D {
  nn::Param weight, bias;
  EMBER_MODULE(weight, bias)
  DynTensor forward(const DynTensor& x) const { return matmul(x, weight.value(), bias.value()); }
};

struct Attention {
  Conv1D c_attn, c_proj;
  int64_t heads = 1;
  EMBER_MODULE(c_attn, c_proj)
  DynTensor forward(const DynTensor& x) const {  // [B, T, d] -> [B, T, d]
    const int64_t B = x.size(0), T = x.size(1), d = x.size(2), hd = d / heads;
    DynTensor qkv = c_attn.forward(x);  // [B, T, 3d]
    auto head_split = [&](int64_t part) {  // [B, heads, T, hd]
      return transpose(reshape(narrow(qkv, 2, part * d, d), {B, T, heads, hd}), 1, 2);
    };
    DynTensor y = scaled_dot_product_attention(head_split(0), head_split(1), head_split(2), {}, /*is_causal=*/true);
    return c_proj.forward(reshape(transpose(y, 1, 2), {B, T, d}));
  }
};

struct Mlp {
  Conv1D c_fc, c_proj;
  EMBER_MODULE(c_fc, c_proj)
  DynTensor forward(const DynTensor& x) const { return c_proj.forward(gelu_tanh(c_fc.forward(x))); }
};

struct Block {
  nn::LayerNorm ln_1;
  Attention attn;
  nn::LayerNorm ln_2;
  Mlp mlp;
  EMBER_MODULE(ln_1, attn, ln_2, mlp)
  DynTensor forward(DynTensor x) const {
    x = x + attn.forward(ln_1.forward(x));
    return x + mlp.forward(ln_2.forward(x));
  }
};

struct Model {
  nn::Embedding wte, wpe;
  std::vector<Block> h;
  nn::LayerNorm ln_f;
  EMBER_MODULE(wte, wpe, h, ln_f)

  // i64 tokens [B, T], T <= context -> logits [B, T, vocab]
  DynTensor forward(const DynTensor& tokens) const {
    EMBER_CHECK(tokens.rank() == 2 && tokens.size(1) <= wpe.weight.shape()[0], "gpt2: tokens must be [batch, T] with T <= ",
                wpe.weight.shape()[0], ", got ", tokens.shape());
    DynTensor positions = DynTensor::arange(0, tokens.size(1), 1, DType::i64, tokens.device());
    DynTensor x = wte.forward(tokens) + wpe.forward(positions);
    for (const Block& b : h) x = b.forward(std::move(x));
    return matmul(ln_f.forward(std::move(x)), transpose(wte.weight.value(), 0, 1));
  }
  // Mean next-token cross-entropy of `tokens` predicting `targets` (both [B, T]).
  DynTensor loss(const DynTensor& tokens, const DynTensor& targets) const {
    DynTensor logits = forward(tokens);
    return nn::cross_entropy(reshape(logits, {-1, logits.size(2)}), reshape(targets, {-1}));
  }
};

inline Model make_model(const Config& c, const Device& device) {
  EMBER_CHECK(c.d_model % c.heads == 0, "gpt2: d_model ", c.d_model, " is not a multiple of heads ", c.heads);
  const auto w = nn::Initializer::normal(0, 0.02);
  const auto w_res = nn::Initializer::normal(0, 0.02 / std::sqrt(2.0 * double(c.layers)));
  auto conv = [&](int64_t in, int64_t out, const nn::Initializer& init) {
    return Conv1D{nn::Param(init.init({in, out}, device)), nn::Param(nn::Initializer::zeros().init({out}, device))};
  };
  auto norm = [&] { return nn::LayerNormConfig{.normalized_shape = {c.d_model}}.init(device); };
  Model m{nn::EmbeddingConfig{.num_embeddings = c.vocab, .embedding_dim = c.d_model, .initializer = w}.init(device),
          nn::EmbeddingConfig{.num_embeddings = c.context, .embedding_dim = c.d_model, .initializer = w}.init(device),
          {},
          norm()};
  for (int64_t i = 0; i < c.layers; ++i)
    m.h.push_back(Block{norm(), Attention{conv(c.d_model, 3 * c.d_model, w), conv(c.d_model, c.d_model, w_res), c.heads},
                        norm(), Mlp{conv(c.d_model, 4 * c.d_model, w), conv(4 * c.d_model, c.d_model, w_res)}});
  return m;
}

}  // namespace gpt2
