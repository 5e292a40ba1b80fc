// nn::quantize_dynamic's layer-level parts: quantizing a Linear's weight and its forward.
#include "ember/nn/quantize.hpp"

#include "ember/core/error.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::nn {

namespace {

WeightQuant weight_quant_of(const quant::WeightOnlyOperands& o, bool quantize_activations) {
  return WeightQuant{.bits = o.bits, .block = o.block_size, .quantize_x = quantize_activations};
}

}  // namespace

std::shared_ptr<const QuantizedWeight> quantize_linear_weight(const DynTensor& weight, const DynamicQuantConfig& config,
                                                              const std::string& path) {
  EMBER_CHECK(weight.defined() && weight.shape().rank() == 2, "nn::quantize_dynamic: ", path,
              ": a Linear weight [out_features, in_features] is needed");
  EMBER_CHECK(config.block == 32 || config.block == 64 || config.block == 128, "nn::quantize_dynamic: ", path,
              ": block ", config.block, " is not 32, 64 or 128");
  const bool symmetric = quant::is_signed(config.dtype);  // int8 / int4 symmetric, uint8 / uint4 affine
  const auto scheme = quant::QScheme::per_block(1, config.block, config.dtype, symmetric);
  return quantized_weight_from(quant::quantize(weight.cast(DType::f32), scheme), config.quantize_activations, path);
}

std::shared_ptr<const QuantizedWeight> quantized_weight_from(const quant::QuantizedTensor& tensor,
                                                             bool quantize_activations, const std::string& path) {
  auto w = std::make_shared<QuantizedWeight>();
  w->tensor = tensor;
  try {
    w->operands = tensor.weight_only();
  } catch (const Error& e) {
    throw Error("nn: " + path + ": not a weight that matmul_wq takes: " + e.what());
  }
  w->quant = weight_quant_of(w->operands, quantize_activations);
  return w;
}

DynTensor quantized_linear(const QuantizedWeight& w, DynTensor x, const std::optional<DynTensor>& bias) {
  const auto& o = w.operands;
  EMBER_CHECK(x.device() == o.data.device(), "quantized Linear: the input is on ", x.device().name(),
              " but the quantized weight is on ", o.data.device().name(), " (quantize after moving the model)");
  EMBER_CHECK(x.shape().rank() >= 1 && x.shape()[-1] == w.tensor.shape()[1], "quantized Linear: input ", x.shape(),
              " does not end in in_features ", w.tensor.shape()[1]);
  const DType dt = x.dtype();
  DynTensor y = matmul_wq(std::move(x), o.data, o.scales, o.zero_point, w.quant);
  if (bias) y = y + bias->cast(DType::f32);
  return dt == DType::f32 ? y : y.cast(dt);
}

}  // namespace ember::nn
