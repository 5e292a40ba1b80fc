// Embedding: a lookup table of rows, indexed by integer tensors (torch.nn.Embedding).
//
//   # Device dev = Device::cpu(); DynTensor table = randn({400, 50});
//   nn::Embedding emb = nn::EmbeddingConfig{.num_embeddings = 1000, .embedding_dim = 64, .padding_idx = 0}.init(dev);
//   DynTensor tokens = DynTensor::from_vector<int64_t>({5, 0, 7}, {1, 3});
//   DynTensor vecs = emb.forward(tokens);                  // [1, 3, 64]; row 0 is zeros and gets no gradient
//   auto glove = nn::Embedding::from_pretrained(table);    // frozen by default, as in PyTorch
//   # run
#pragma once

#include <cstdint>
#include <optional>

#include "ember/nn/init.hpp"
#include "ember/nn/module.hpp"

namespace ember::nn {

struct Embedding;

// torch.nn.Embedding's arguments.
struct EmbeddingConfig {
  int64_t num_embeddings = 0;  // the number of rows (the vocabulary size); must be positive
  int64_t embedding_dim = 0;   // the size of each row; must be positive
  // This row starts as zeros and receives no gradient. Negative values count from the end.
  std::optional<int64_t> padding_idx{};
  // Rows looked up with a p-norm (p = norm_type) above max_norm are scaled to max_norm.
  std::optional<double> max_norm{};
  double norm_type = 2.0;  // p of the max_norm check
  Initializer initializer = Initializer::normal(0, 1);  // for the weight; N(0, 1) as in PyTorch
  // Builds the table on `device`; throws ember::Error when a size is not positive or padding_idx is
  // outside [-num_embeddings, num_embeddings).
  Embedding init(const Device& device = Device::default_device()) const;
};

// torch.nn.Embedding: row i of weight for each index i.
struct Embedding {
  Param weight{};                        // [num_embeddings, embedding_dim]
  std::optional<int64_t> padding_idx{};  // in [0, num_embeddings)
  std::optional<double> max_norm{};  // looked-up rows with a norm_type-norm above it are scaled to it
  double norm_type = 2.0;            // p of the max_norm check
  EMBER_MODULE(weight)

  // Integer indices of any shape [*] -> [*, embedding_dim]; throws ember::Error on float or bool
  // indices. The padding_idx rows of the output pass no gradient to the weight.
  //
  // max_norm differs from PyTorch in one way: PyTorch rescales the referenced rows of the weight
  // in place; here modules are values, so only the output rows are scaled (same values, and the
  // weight gets the same gradient as in PyTorch), and the stored weight is left unchanged.
  DynTensor forward(DynTensor indices) const;

  // A table from existing rows [num_embeddings, embedding_dim]; `freeze` makes the weight non-trainable.
  // The rows are used as given (padding_idx's row is not zeroed); throws ember::Error unless 2-d.
  static Embedding from_pretrained(DynTensor embeddings, bool freeze = true,
                                   std::optional<int64_t> padding_idx = std::nullopt,
                                   std::optional<double> max_norm = std::nullopt, double norm_type = 2.0);
};

}  // namespace ember::nn
