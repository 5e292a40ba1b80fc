// Embedding: lookup, padding row, max_norm.
#include "ember/nn/embedding.hpp"

#include "ember/core/error.hpp"

namespace ember::nn {

namespace {
std::optional<int64_t> normalize_padding_idx(std::optional<int64_t> idx, int64_t num_embeddings) {
  if (!idx) return idx;
  EMBER_CHECK(*idx >= -num_embeddings && *idx < num_embeddings, "Embedding: padding_idx ", *idx,
              " must be within num_embeddings ", num_embeddings);
  return *idx < 0 ? *idx + num_embeddings : *idx;
}
}  // namespace

Embedding EmbeddingConfig::init(const Device& device) const {
  EMBER_CHECK(num_embeddings > 0 && embedding_dim > 0, "Embedding: num_embeddings ", num_embeddings,
              " and embedding_dim ", embedding_dim, " must be positive");
  Embedding m;
  m.padding_idx = normalize_padding_idx(padding_idx, num_embeddings);
  m.max_norm = max_norm;
  m.norm_type = norm_type;
  DynTensor w = initializer.init({num_embeddings, embedding_dim}, device);
  if (m.padding_idx) {
    const int64_t p = *m.padding_idx;
    w = slice_assign(std::move(w), {Slice{p, p + 1}}, DynTensor::zeros({1, embedding_dim}, w.dtype(), device));
  }
  m.weight = Param(std::move(w));
  return m;
}

Embedding Embedding::from_pretrained(DynTensor embeddings, bool freeze, std::optional<int64_t> padding_idx,
                                     std::optional<double> max_norm, double norm_type) {
  EMBER_CHECK(embeddings.rank() == 2, "Embedding::from_pretrained: embeddings must be 2-d, got ", embeddings.shape());
  Embedding m;
  m.padding_idx = normalize_padding_idx(padding_idx, embeddings.size(0));
  m.max_norm = max_norm;
  m.norm_type = norm_type;
  m.weight = Param(std::move(embeddings), freeze);
  return m;
}

DynTensor Embedding::forward(DynTensor indices) const {
  return detail::in_module(ember_module_, "Embedding", [&] {
    EMBER_CHECK(!is_float(indices.dtype()) && indices.dtype() != DType::boolean,
                "Embedding: indices must be an integer tensor, got ", indices.dtype());
    if (indices.dtype() != DType::i64) indices = cast(std::move(indices), DType::i64);
    DynTensor out = embedding(weight, indices);
    if (max_norm) {
      // PyTorch renormalises the weight under no_grad before the lookup, so the gradient still
      // reaches the weight unscaled: add the scaling as a constant offset.
      DynTensor rows = out.detach();
      DynTensor n = norm(rows, norm_type, {-1}, true);
      DynTensor scale =
          where(greater(n, *max_norm), *max_norm / (n + 1e-7), DynTensor::ones(n.shape(), n.dtype(), n.device()));
      out = out + rows * (scale - 1.0);
    }
    if (padding_idx && out.is_require_grad()) {
      DynTensor is_padding = unsqueeze(equal(indices, *padding_idx), -1);
      out = where(std::move(is_padding), out.detach(), out);
    }
    return out;
  });
}

}  // namespace ember::nn
