// MultiHeadAttention. Inputs are brought to [N, L, E], projected, split into heads
// [N, H, L, head_dim] and attended by the scaled_dot_product_attention op; the explicit
// softmax(q k^T / sqrt(head_dim) + mask) v path is used only when the weights are wanted or
// dropout is active (the op has neither).
#include "ember/nn/attention.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/nn/functional.hpp"
#include "ember/nn/init.hpp"
#include "layer_util.hpp"

namespace ember::nn {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// [N, L, E] -> [N, H, L, E / H]
DynTensor split_heads(const DynTensor& x, int64_t heads) {
  return transpose(reshape(x, {x.size(0), x.size(1), heads, x.size(2) / heads}), 1, 2);
}
// [N, H, L, D] -> [N, L, H * D]
DynTensor merge_heads(const DynTensor& x) {
  return reshape(transpose(x, 1, 2), {x.size(0), x.size(2), x.size(1) * x.size(3)});
}

// Keep-mask [L, S]: query i may attend key j when j <= i + offset.
DynTensor causal_keep(int64_t L, int64_t S, int64_t offset, const Device& d) {
  DynTensor rows = unsqueeze(DynTensor::arange(offset, offset + L, 1, DType::i64, d), 1);
  DynTensor cols = unsqueeze(DynTensor::arange(0, S, 1, DType::i64, d), 0);
  return lower_equal(cols, rows);
}

// One mask from several, each broadcastable to the scores [N, H, L, S]: bool ones are keep-masks,
// float ones are added. All bool: their conjunction; otherwise a float mask with -inf where a
// bool mask forbids.
std::optional<DynTensor> combine(const std::vector<DynTensor>& parts, DType dt) {
  if (parts.empty()) return std::nullopt;
  bool all_bool = true;
  for (const auto& p : parts) all_bool = all_bool && p.dtype() == DType::boolean;
  DynTensor out;
  for (const auto& p : parts) {
    DynTensor m = p;
    if (!all_bool)
      m = m.dtype() == DType::boolean ? mask_fill(DynTensor::zeros(m.shape(), dt, m.device()), bool_not(m), kNegInf)
                                      : (m.dtype() == dt ? m : m.cast(dt));
    out = !out.defined() ? m : all_bool ? bool_and(out, m) : out + m;
  }
  return out;
}

// q [N, H, L, D], k and v [N, H, S, D]. Returns the output [N, H, L, D] and, when asked for, the
// attention probabilities [N, H, L, S] (after dropout).
std::pair<DynTensor, DynTensor> attend(const DynTensor& q, const DynTensor& k, const DynTensor& v,
                                       std::optional<DynTensor> mask, bool causal, double dropout_p, bool want_probs) {
  if (!want_probs && dropout_p == 0) return {scaled_dot_product_attention(q, k, v, std::move(mask), causal), {}};
  if (causal) {
    std::vector<DynTensor> parts{causal_keep(q.size(2), k.size(2), 0, q.device())};
    if (mask) parts.push_back(*mask);
    mask = combine(parts, q.dtype());
  }
  const double scale = 1.0 / std::sqrt(double(q.size(-1)));
  DynTensor scores = matmul(q * scale, transpose(k, -1, -2));
  if (mask) scores = mask->dtype() == DType::boolean ? mask_fill(scores, bool_not(*mask), kNegInf) : scores + *mask;
  DynTensor probs = softmax(scores, -1);
  if (dropout_p > 0) probs = nn::dropout(probs, dropout_p, true);
  return {matmul(probs, v), probs};
}

}  // namespace

MultiHeadAttention MultiHeadAttentionConfig::init(const Device& device) const {
  EMBER_CHECK(embed_dim > 0 && num_heads > 0 && embed_dim % num_heads == 0, "MultiHeadAttention: embed_dim (",
              embed_dim, ") must be a positive multiple of num_heads (", num_heads, ")");
  EMBER_CHECK(dropout >= 0 && dropout <= 1, "MultiHeadAttention: dropout must be in [0, 1], got ", dropout);
  MultiHeadAttention m;
  m.in_proj_weight = Param(Initializer::xavier_uniform().init({3 * embed_dim, embed_dim}, device));
  m.out_proj.weight = Param(Initializer::torch_default().init({embed_dim, embed_dim}, device));
  if (bias) {
    m.in_proj_bias = Param(DynTensor::zeros({3 * embed_dim}, kDefaultFloat, device));
    m.out_proj.bias = Param(DynTensor::zeros({embed_dim}, kDefaultFloat, device));
  }
  m.num_heads = num_heads;
  m.dropout = dropout;
  m.batch_first = batch_first;
  return m;
}

namespace {
// The whole forward; weights are computed when `want_weights`.
MhaOutput mha_forward(const MultiHeadAttention& m, const DynTensor& query, const DynTensor& key, const DynTensor& value,
                      const AttentionMasks& masks, bool want_weights, bool average_attn_weights) {
  const int64_t E = m.embed_dim(), H = m.num_heads;
  const bool batch_first = m.batch_first;
  EMBER_CHECK((query.rank() == 2 || query.rank() == 3) && key.rank() == query.rank() && value.rank() == query.rank(),
              "MultiHeadAttention: query ", query.shape(), ", key ", key.shape(), " and value ", value.shape(),
              " must all be rank 3 (or all rank 2, unbatched)");
  EMBER_CHECK(query.size(-1) == E && key.size(-1) == E && value.size(-1) == E, "MultiHeadAttention: query ",
              query.shape(), ", key ", key.shape(), " and value ", value.shape(), " must end in embed_dim ", E);
  EMBER_CHECK(key.shape() == value.shape(), "MultiHeadAttention: key ", key.shape(), " and value ", value.shape(),
              " must have the same shape");
  internal::check_dtype("MultiHeadAttention", query, m.in_proj_weight, "in_proj_weight", "query");
  internal::check_dtype("MultiHeadAttention", key, m.in_proj_weight, "in_proj_weight", "key");
  internal::check_dtype("MultiHeadAttention", value, m.in_proj_weight, "in_proj_weight", "value");
  const bool unbatched = query.rank() == 2;
  const bool self = query.primitive() == key.primitive() && key.primitive() == value.primitive();
  auto batch_major = [&](const DynTensor& x) {
    return unbatched ? unsqueeze(x, 0) : batch_first ? x : transpose(x, 0, 1);
  };
  const DynTensor qn = batch_major(query);
  const int64_t N = qn.size(0), L = qn.size(1);
  const DynTensor& w = m.in_proj_weight.value();
  const std::optional<DynTensor> b = m.in_proj_bias ? std::optional<DynTensor>(m.in_proj_bias->value()) : std::nullopt;

  DynTensor q, k, v;
  // rows [first * E, (first + parts) * E) of the packed projection
  auto project = [&](const DynTensor& x, int64_t first, int64_t parts) {
    return nn::linear(batch_major(x), narrow(w, 0, first * E, parts * E),
                      b ? std::optional<DynTensor>(narrow(*b, 0, first * E, parts * E)) : std::nullopt);
  };
  if (self) {
    // One product cut in three, in training too: autodiff places the three slices' gradients
    // with one concatenation (a8a0a80), so the backward is one cat, one product for the input's
    // gradient and one for the weight's, where three products on the weight's row blocks took
    // three of each, two adds and a cat (16 kernels a layer against 5).
    std::vector<DynTensor> qkv = chunk(nn::linear(qn, w, b), 3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    q = project(query, 0, 1);
    if (key.primitive() == value.primitive()) {  // attention over a memory: one matmul for both
      std::vector<DynTensor> kv = chunk(project(key, 1, 2), 2, -1);
      k = kv[0], v = kv[1];
    } else {
      k = project(key, 1, 1), v = project(value, 2, 1);
    }
  }
  EMBER_CHECK(k.size(0) == N, "MultiHeadAttention: query batch ", N, " differs from key batch ", k.size(0));
  const int64_t S = k.size(1);
  q = split_heads(q, H), k = split_heads(k, H), v = split_heads(v, H);

  // Masks may come from another device (a plain CPU mask for an autodiff model, say).
  auto on_device = [&](const DynTensor& t) { return t.device() == q.device() ? t : t.to(q.device()); };
  std::vector<DynTensor> parts;
  if (masks.attn_mask) {
    const DynTensor am = on_device(*masks.attn_mask);
    EMBER_CHECK(am.shape() == Shape({L, S}) || am.shape() == Shape({N * H, L, S}), "MultiHeadAttention: attn_mask ",
                am.shape(), " must be [", L, ", ", S, "] or [", N * H, ", ", L, ", ", S, "] (N * num_heads, L, S)");
    DynTensor a = am.rank() == 3 ? reshape(am, {N, H, L, S}) : am;
    parts.push_back(a.dtype() == DType::boolean ? bool_not(a) : a);
  }
  if (masks.key_padding_mask) {
    const DynTensor kpm = on_device(*masks.key_padding_mask);
    const Shape want = unbatched ? Shape{S} : Shape{N, S};
    EMBER_CHECK(kpm.shape() == want, "MultiHeadAttention: key_padding_mask ", kpm.shape(), " must be ", want);
    DynTensor a = reshape(kpm, {N, 1, 1, S});
    parts.push_back(a.dtype() == DType::boolean ? bool_not(a) : a);
  }
  const double p = m.mode.training ? m.dropout : 0.0;
  bool causal = masks.is_causal;
  if (causal && !parts.empty()) {
    parts.push_back(causal_keep(L, S, 0, q.device()));
    causal = false;
  }
  auto [out, probs] = attend(q, k, v, combine(parts, q.dtype()), causal, p, want_weights);
  DynTensor y = m.out_proj.forward(merge_heads(out));
  y = unbatched ? squeeze(y, 0) : batch_first ? y : transpose(y, 0, 1);
  if (!want_weights) return {y, {}};
  DynTensor weights = average_attn_weights ? mean(probs, {1}) : probs;
  if (unbatched) weights = squeeze(weights, 0);
  return {y, weights};
}
}  // namespace

DynTensor MultiHeadAttention::forward(const DynTensor& query, const DynTensor& key, const DynTensor& value,
                                      const AttentionMasks& masks) const {
  return detail::in_module(ember_module_, "MultiHeadAttention",
                           [&] { return mha_forward(*this, query, key, value, masks, false, true).output; });
}

MhaOutput MultiHeadAttention::forward_with_weights(const DynTensor& query, const DynTensor& key, const DynTensor& value,
                                                   const AttentionMasks& masks, bool average_attn_weights) const {
  return detail::in_module(ember_module_, "MultiHeadAttention",
                           [&] { return mha_forward(*this, query, key, value, masks, true, average_attn_weights); });
}

DynTensor MultiHeadAttention::forward_cached(const DynTensor& x, MhaCache& cache) const {
  return detail::in_module(ember_module_, "MultiHeadAttention", [&] {
    const int64_t E = embed_dim(), H = num_heads;
    EMBER_CHECK((x.rank() == 2 || x.rank() == 3) && x.size(-1) == E, "MultiHeadAttention::forward_cached: input ",
                x.shape(), " must be ", batch_first ? "[N, T, " : "[T, N, ", E, "] or [T, ", E, "]");
    const bool unbatched = x.rank() == 2;
    const DynTensor xn = unbatched ? unsqueeze(x, 0) : batch_first ? x : transpose(x, 0, 1);
    const int64_t N = xn.size(0), T = xn.size(1);
    internal::check_dtype("MultiHeadAttention", x, in_proj_weight, "in_proj_weight");
    const std::optional<DynTensor> b = in_proj_bias ? std::optional<DynTensor>(in_proj_bias->value()) : std::nullopt;
    std::vector<DynTensor> qkv = chunk(nn::linear(xn, in_proj_weight.value(), b), 3, -1);
    DynTensor q = split_heads(qkv[0], H), k = split_heads(qkv[1], H), v = split_heads(qkv[2], H);
    const int64_t past = cache.length();
    if (past > 0) {
      EMBER_CHECK(cache.key.size(0) == N && cache.key.size(1) == H && cache.key.size(3) == E / H,
                  "MultiHeadAttention::forward_cached: cache holds ", cache.key.shape(), ", input needs [", N, ", ", H,
                  ", S, ", E / H, "]");
      k = cat({cache.key, k}, 2);
      v = cat({cache.value, v}, 2);
    }
    cache.key = k;
    cache.value = v;
    std::optional<DynTensor> mask;
    bool causal = false;
    if (T > 1) {
      if (past == 0)
        causal = true;
      else
        mask = causal_keep(T, past + T, past, q.device());
    }
    const double p = mode.training ? dropout : 0.0;
    DynTensor y = out_proj.forward(merge_heads(attend(q, k, v, mask, causal, p, false).first));
    return unbatched ? squeeze(y, 0) : batch_first ? y : transpose(y, 0, 1);
  });
}

}  // namespace ember::nn
