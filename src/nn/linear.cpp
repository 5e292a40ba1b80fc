// Linear, Bilinear, Flatten, Unflatten.
#include "ember/nn/linear.hpp"

#include "ember/core/error.hpp"
#include "ember/nn/functional.hpp"
#include "ember/nn/quantize.hpp"
#include "layer_util.hpp"

namespace ember::nn {

Linear LinearConfig::init(const Device& device) const {
  EMBER_CHECK(in_features >= 0 && out_features >= 0, "Linear: in_features ", in_features, " and out_features ",
              out_features, " must be non-negative");
  Linear m;
  m.weight = Param(initializer.init({out_features, in_features}, device));
  if (bias) m.bias = Param(internal::fan_in_uniform({out_features}, in_features, device));
  return m;
}

DynTensor Linear::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "Linear", [&] {
    if (quantized) return quantized_linear(*quantized, std::move(x), weight, internal::value_of(bias));
    internal::check_dtype("Linear", x, weight);
    internal::check_dtype("Linear", x, bias, "bias");
    return linear(std::move(x), weight, internal::value_of(bias));
  });
}

Bilinear BilinearConfig::init(const Device& device) const {
  EMBER_CHECK(in1_features > 0 && in2_features > 0 && out_features > 0, "Bilinear: feature sizes (", in1_features, ", ",
              in2_features, ", ", out_features, ") must be positive");
  Bilinear m;
  m.weight = Param(internal::fan_in_uniform({out_features, in1_features, in2_features}, in1_features, device));
  if (bias) m.bias = Param(internal::fan_in_uniform({out_features}, in1_features, device));
  return m;
}

DynTensor Bilinear::forward(DynTensor x1, DynTensor x2) const {
  return detail::in_module(ember_module_, "Bilinear", [&] {
    internal::check_dtype("Bilinear", x1, weight, "weight", "input1");
    internal::check_dtype("Bilinear", x2, weight, "weight", "input2");
    internal::check_dtype("Bilinear", x1, bias, "bias", "input1");
    return bilinear(std::move(x1), std::move(x2), weight, internal::value_of(bias));
  });
}

DynTensor Flatten::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "Flatten", [&] {
    if (x.rank() == 0) return reshape(std::move(x), {1});
    return flatten(std::move(x), start_dim, end_dim);
  });
}

DynTensor Unflatten::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "Unflatten", [&] {
    const int d = normalize_dim(dim, x.rank(), "Unflatten");
    Sizes shape(x.shape().begin(), x.shape().begin() + d);
    shape.insert(shape.end(), unflattened_size.begin(), unflattened_size.end());
    shape.insert(shape.end(), x.shape().begin() + d + 1, x.shape().end());
    EMBER_CHECK(!unflattened_size.empty(), "Unflatten: unflattened_size is empty");
    return reshape(std::move(x), std::move(shape));
  });
}

}  // namespace ember::nn
