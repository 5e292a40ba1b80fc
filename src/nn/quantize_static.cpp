// Static post-training quantization and quantization-aware training of Linear / Conv layers
// (nn/quantize.hpp): the layer states and the forwards of the observing, fake_quant and
// static_int8 modes.
#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstdlib>

#include "ember/core/error.hpp"
#include "ember/nn/functional.hpp"
#include "ember/nn/quantize.hpp"
#include "ember/quant/fake_quantize.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::nn {

namespace {

const quant::QScheme kInputScheme = quant::QScheme::per_tensor(quant::QType::uint8, /*symmetric=*/false);
const quant::QScheme kWeightScheme = quant::QScheme::per_channel(0, quant::QType::int8, /*symmetric=*/true);

// x quantized to u8 with the layer's static input parameters (quant::quantize's formula).
DynTensor quantize_input(const QuantizedWeight& q, const DynTensor& x, const char* layer) {
  EMBER_CHECK(x.device() == q.product_weight.device(), layer, ": the input is on ", x.device().name(),
              " but the int8 weight is on ", q.product_weight.device().name(), " (convert after moving the model)");
  EMBER_CHECK(is_float(x.dtype()), layer, ": the input has dtype ", x.dtype(), "; an int8 layer takes floating input");
  return quant::quantize(x.cast(DType::f32), kInputScheme, q.input).data();
}

std::optional<DynTensor> f32_bias(const std::optional<DynTensor>& bias) {
  return bias ? std::optional<DynTensor>(bias->cast(DType::f32)) : std::nullopt;
}

}  // namespace

namespace detail {

std::shared_ptr<quant::Observer> make_observer(const StaticQuantConfig& config) {
  switch (config.calibration) {
    case Calibration::min_max: return std::make_shared<quant::MinMaxObserver>();
    case Calibration::percentile: return std::make_shared<quant::PercentileObserver>(config.percentile);
    case Calibration::entropy: return std::make_shared<quant::EntropyObserver>();
  }
  EMBER_FAIL("nn::quantize: unknown calibration ", int(config.calibration));
}

std::string why_not_quantizable(const Param& weight, const QuantizedWeight* quantized, const std::string& where) {
  if (quantized && quantized->observer) return "already prepared";
  if (quantized || !weight.defined()) return "already quantized";
  EMBER_CHECK(is_float(weight.value().dtype()), where, ": the weight has dtype ", weight.value().dtype(),
              "; only floating layers can be quantized");
  return "";
}

std::shared_ptr<const QuantizedWeight> observing_layer(std::shared_ptr<quant::Observer> observer, LayerQuant mode) {
  auto q = std::make_shared<QuantizedWeight>();
  q->mode = mode;
  q->observer = std::move(observer);
  return q;
}

std::shared_ptr<const QuantizedWeight> static_layer(const DynTensor& weight, const quant::QParams& input, bool conv,
                                                    const std::string& where) {
  EMBER_CHECK(weight.defined() && weight.rank() >= 2, where, ": a weight [out, in, ...] is needed");
  EMBER_CHECK(is_float(weight.dtype()), where, ": the weight has dtype ", weight.dtype(),
              "; only floating layers can be quantized");
  return static_layer_from(quant::quantize(weight.detach().cast(DType::f32), kWeightScheme), input, conv, where);
}

std::shared_ptr<const QuantizedWeight> static_layer_from(const quant::QuantizedTensor& weight,
                                                         const quant::QParams& input, bool conv,
                                                         const std::string& where) {
  EMBER_CHECK(weight.scheme() == kWeightScheme, where, ": an int8 layer's weight is quantized ", kWeightScheme.str(),
              ", not ", weight.scheme().str());
  EMBER_CHECK(conv ? weight.shape().rank() >= 3 : weight.shape().rank() == 2, where,
              ": a ", conv ? "Conv" : "Linear", " weight of shape ", weight.shape(), " does not fit the layer");
  EMBER_CHECK(input.scale.defined() && input.scale.numel() == 1 && input.scale.dtype() == DType::f32, where,
              ": the input scale must be one f32 value");
  EMBER_CHECK(input.zero_point.defined() && input.zero_point.numel() == 1 && input.zero_point.dtype() == DType::u8,
              where, ": the input zero point must be one u8 value");
  const double s = input.scale.item();
  EMBER_CHECK(std::isfinite(s) && s > 0, where, ": the input scale ", s, " must be positive and finite");
  auto q = std::make_shared<QuantizedWeight>();
  q->mode = LayerQuant::static_int8;
  q->tensor = weight;
  const Device dev = weight.data().device();
  q->input = quant::QParams{input.scale.reshape(Sizes{}).to(dev), input.zero_point.reshape(Sizes{}).to(dev)};
  if (conv) {
    q->product_weight = weight.data();
  } else {  // matmul_integer's b: [in, out], made contiguous once
    const int64_t out = weight.shape()[0], in = weight.shape()[1];
    q->product_weight = weight.data().t().reshape(Sizes{-1}).reshape(Sizes{in, out});
  }
  return q;
}

std::string input_params_text(const quant::QParams& input) {
  // The scale with f32's shortest round-trip digits, so that loading gives the same bits.
  char buf[64];
#if defined(__cpp_lib_to_chars)
  char* end = std::to_chars(buf, buf + sizeof buf, input.scale.item<float>()).ptr;
#else  // the wasm build's libc++ has no float to_chars; 9 significant digits round-trip an f32 too
  char* end = buf + std::snprintf(buf, sizeof buf, "%.9g", double(input.scale.item<float>()));
#endif
  return std::string("{\"scale\":") + std::string(buf, end) +
         ",\"zero_point\":" + std::to_string(input.zero_point.item<int64_t>()) + "}";
}

quant::QParams input_params_from_text(const std::string& text, const std::string& where, const Device& device) {
  auto number = [&](const std::string& field) {
    const std::string key = "\"" + field + "\":";
    const size_t at = text.find(key);
    EMBER_CHECK(at != std::string::npos, where, ": the input parameters '", text, "' lack \"", field, "\"");
    const char* begin = text.c_str() + at + key.size();
    char* end = nullptr;
    const double v = std::strtod(begin, &end);
    EMBER_CHECK(end != begin, where, ": \"", field, "\" in '", text, "' is not a number");
    return v;
  };
  const float scale = static_cast<float>(number("scale"));
  const double zp = number("zero_point");
  EMBER_CHECK(std::isfinite(scale) && scale > 0, where, ": the input scale ", scale, " must be positive and finite");
  EMBER_CHECK(zp >= 0 && zp <= 255 && zp == std::floor(zp), where, ": the input zero point ", zp,
              " is not a u8 value");
  return quant::QParams{DynTensor::full({}, scale, DType::f32, device), DynTensor::full({}, zp, DType::u8, device)};
}

}  // namespace detail

DynTensor quantized_input(const QuantizedWeight& q, DynTensor x) {
  if (!q.observer) return x;
  q.observer->observe(x.detach());
  if (q.mode != LayerQuant::fake_quant) return x;
  const quant::QParams p = q.observer->params(kInputScheme, x.device());
  return quant::fake_quantize(x, p.scale.item(), p.zero_point.item<int64_t>(), 0, 255);
}

DynTensor quantized_weight(const QuantizedWeight& q, const DynTensor& weight) {
  if (q.mode != LayerQuant::fake_quant) return weight;
  quant::MinMaxObserver range(/*axis=*/0);  // the current weight's range per output channel
  range.observe(weight.detach());
  const quant::QParams p = range.params(kWeightScheme, weight.device());
  return quant::fake_quantize(weight, p.scale, p.zero_point, /*axis=*/0, -128, 127);
}

DynTensor quantized_conv(const QuantizedWeight& q, DynTensor x, const std::optional<DynTensor>& bias,
                         const ConvOptions& o, std::optional<double> min, std::optional<double> max) {
  const DType dt = x.dtype();
  // y = clamp(x_scale * w_scale[c] * acc + bias[c], min, max) in the int8 kernel's epilogue
  DynTensor y = qlinear_conv_f32(quantize_input(q, x, "int8 Conv"), q.input.scale, q.input.zero_point,
                                 q.product_weight, q.tensor.scale(), std::nullopt, f32_bias(bias), o, min, max);
  return dt == DType::f32 ? y : y.cast(dt);
}

DynTensor quantized_linear(const QuantizedWeight& w, DynTensor x, const DynTensor& weight,
                           const std::optional<DynTensor>& bias) {
  if (w.mode == LayerQuant::weight_only) return quantized_linear(w, std::move(x), bias);
  if (w.observer) {  // observing / fake_quant: the float product on the recorded (fake-quantized) operands
    EMBER_CHECK(weight.defined(), "Linear: a prepared layer needs its float weight");
    return linear(quantized_input(w, std::move(x)), quantized_weight(w, weight), bias);
  }
  EMBER_CHECK(x.rank() >= 1 && x.shape()[-1] == w.tensor.shape()[1], "int8 Linear: input ", x.shape(),
              " does not end in in_features ", w.tensor.shape()[1]);
  const DType dt = x.dtype();
  const bool vector = x.rank() == 1;
  DynTensor xq = quantize_input(w, vector ? unsqueeze(std::move(x), 0) : std::move(x), "int8 Linear");
  DynTensor y = qlinear_matmul_f32(std::move(xq), w.input.scale, w.input.zero_point, w.product_weight,
                                   w.tensor.scale(), std::nullopt, f32_bias(bias));
  if (vector) y = squeeze(std::move(y), 0);
  return dt == DType::f32 ? y : y.cast(dt);
}

}  // namespace ember::nn
