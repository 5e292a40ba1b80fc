// Helpers shared by the layer modules' sources (not part of the public headers).
#pragma once

#include <cmath>
#include <string_view>

#include "ember/core/error.hpp"
#include "ember/nn/module.hpp"
#include "ember/tensor/op_hook.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::nn::internal {

// A per-spatial-dim option given as one value (for every dim) or as n values.
inline Sizes expand_sizes(const Sizes& v, int n, std::string_view layer, std::string_view what) {
  if (v.size() == 1) return Sizes(static_cast<size_t>(n), v[0]);
  EMBER_CHECK(static_cast<int>(v.size()) == n, layer, ": ", what, " needs 1 or ", n, " values, got ", v.size());
  return v;
}

inline std::optional<DynTensor> value_of(const std::optional<Param>& p) {
  return p ? std::optional<DynTensor>(p->value()) : std::nullopt;
}

// PyTorch's default bias (and Bilinear weight) initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
// or zeros when fan_in is 0.
inline DynTensor fan_in_uniform(Shape shape, int64_t fan_in, const Device& d) {
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  return DynTensor::uniform(std::move(shape), -bound, bound, kDefaultFloat, d);
}

// A layer refuses an input whose dtype differs from its parameters', as PyTorch does ("mat1 and
// mat2 must have the same dtype"): the ops would promote, and an f32 layer would run in f64 silently.
// Under an op-input hook (amp's autocast) floating dtypes may differ: the hook casts them per op.
inline void check_dtype(std::string_view layer, const DynTensor& input, const DynTensor& param,
                        std::string_view param_name = "weight", std::string_view input_name = "input") {
  if (op_input_hook() && is_float(input.dtype()) && is_float(param.dtype())) return;
  EMBER_CHECK(input.dtype() == param.dtype(), layer, ": ", input_name, " is ", input.dtype(), ", ", param_name, " is ",
              param.dtype(), "; cast the input or the layer's parameters to one dtype");
}
inline void check_dtype(std::string_view layer, const DynTensor& input, const Param& param,
                        std::string_view param_name = "weight", std::string_view input_name = "input") {
  check_dtype(layer, input, param.value(), param_name, input_name);
}
inline void check_dtype(std::string_view layer, const DynTensor& input, const std::optional<Param>& param,
                        std::string_view param_name, std::string_view input_name = "input") {
  if (param) check_dtype(layer, input, param->value(), param_name, input_name);
}

// Adds a batch dim of 1 to an unbatched input (rank == batched_rank - 1), as PyTorch layers accept
// both; `unbatched` tells the caller to remove it again.
inline DynTensor batch_if_unbatched(DynTensor x, int batched_rank, bool& unbatched) {
  unbatched = x.rank() == batched_rank - 1;
  return unbatched ? unsqueeze(std::move(x), 0) : x;
}

}  // namespace ember::nn::internal
