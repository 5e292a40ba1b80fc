// Post-training quantization of a model's layers (PyTorch's torch.ao.quantization.quantize_dynamic
// for Linear layers): each Linear's weight is quantized per block along in_features and its
// forward runs the weight-only product matmul_wq (int8 or int4 weights, float activations; with
// quantize_activations, x is also rounded to int8 per block and the products run on int8 dot
// products). The layers are found by type anywhere inside the model (nn::for_each_module).
//
// Static quantization (nn::quantize, or nn::prepare + calibration + nn::convert) and
// quantization-aware training (nn::prepare_qat + training + nn::convert), further down, turn
// Linear and Conv1d/2d/3d layers into int8 layers: u8 input with a calibrated scale, i8 weights
// per output channel, f32 output (docs/quantization.md has an example of each).
//
//   # Device dev = Device::cpu();
//   struct Mlp {
//     nn::Linear fc1, fc2;
//     EMBER_MODULE(fc1, fc2)
//     DynTensor forward(DynTensor x) const { return fc2.forward(relu(fc1.forward(x))); }
//   };
//   Mlp m{nn::LinearConfig{64, 128}.init(dev), nn::LinearConfig{128, 10}.init(dev)};
//   Mlp q = nn::quantize_dynamic(m, {.dtype = quant::QType::int4, .block = 32});
//   DynTensor y = q.forward(randn({2, 64}));                    // int4 weights, f32 in and out
//   nn::save_quantized("mlp_q4.safetensors", q);                // quantized weights + the rest
//   Mlp r{nn::LinearConfig{64, 128}.init(dev), nn::LinearConfig{128, 10}.init(dev)};
//   nn::load_quantized(r, "mlp_q4.safetensors");                 // r now computes as q
//   # run
//
// A Linear whose in_features is not a multiple of the block (or odd, for 4-bit types) is left in
// floating point; quantize_dynamic's report names it (strict = true makes it an error instead).
// Quantized weights are frozen (x gets its gradient through matmul_wq). Move a model to its
// device before quantizing it (to_device moves Params, not the quantized weights; a forward on
// another device is an error naming the layer).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/nn/conv.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/module.hpp"
#include "ember/quant/calibration.hpp"
#include "ember/quant/quantized_tensor.hpp"
#include "ember/quant/safetensors.hpp"
#include "ember/tensor/quantized_ops.hpp"

namespace ember::nn {

// How quantize_dynamic quantizes each Linear's weight.
struct DynamicQuantConfig {
  // int8 / int4: symmetric (scale = max|w| / qmax per block); uint8 / uint4: affine (a zero
  // point per block).
  quant::QType dtype = quant::QType::int8;
  int64_t block = 32;  // weights per scale along in_features: 32, 64 or 128
  // Also round the activations to int8 per block of 32 (WeightQuant::quantize_x): faster products
  // (AVX-512 VNNI), at the cost of the activations' rounding.
  bool quantize_activations = false;
  bool keep_float = false;  // keep each float weight beside its quantized copy (default: drop it)
  bool strict = false;  // a Linear that cannot be quantized is an error (default: it stays float)
};

// What a layer's `quantized` member makes its forward do.
enum class LayerQuant : uint8_t {
  weight_only,  // quantize_dynamic: Linear through matmul_wq (f32 activations)
  observing,    // nn::prepare (static PTQ): the float forward, the input's range recorded
  fake_quant,   // nn::prepare_qat: input and weight fake-quantized (straight-through gradients)
  static_int8,  // nn::quantize / nn::convert: u8 input (calibrated scale), i8 weight, i32 product
};

// A Linear's or Conv's quantized state (the `quantized` member; shared, immutable but for the
// observer's running range). weight_only: the quantized tensor (for saving) and the operands of
// matmul_wq. static_int8: the weight quantized per output channel (symmetric int8) and the
// input's static scale and zero point.
struct QuantizedWeight {
  quant::QuantizedTensor tensor;  // weight_only: [out, in] per block along dim 1; static_int8: per channel of dim 0
  quant::WeightOnlyOperands operands;  // weight_only: tensor.weight_only()
  WeightQuant quant;  // weight_only: bits, block and quantize_x for matmul_wq
  LayerQuant mode = LayerQuant::weight_only;  // how the layer's forward runs
  std::shared_ptr<quant::Observer> observer;  // observing / fake_quant: the input's range
  quant::QParams input;  // static_int8: the input's scale (f32 []) and zero point (u8 [])
  DynTensor product_weight;  // static_int8: i8, Linear [in, out] (qlinear_matmul's b), Conv as the weight
};

// What quantize_dynamic did: the paths of the Linear layers it quantized and of those it left float.
struct QuantizeReport {
  std::vector<std::string> quantized;  // e.g. "encoder.fc1"
  std::vector<std::string> skipped;  // with the reason: "head (in_features 20 is not a multiple of 32)"
};

// The quantized weight of a Linear's float weight under `config` (the layer's path in errors).
// Throws an Error when the weight cannot be quantized so (see the top of the file).
std::shared_ptr<const QuantizedWeight> quantize_linear_weight(const DynTensor& weight, const DynamicQuantConfig& config,
                                                              const std::string& path);
// The same layer from a saved quantized tensor (per block along dim 1, as quantize_linear_weight
// makes them); quantize_activations as in the config it was made with.
std::shared_ptr<const QuantizedWeight> quantized_weight_from(const quant::QuantizedTensor& tensor,
                                                             bool quantize_activations, const std::string& path);
// y = x W^T + b through matmul_wq (x of any floating dtype; the result has x's dtype). Used by
// Linear::forward; an Error names a device mismatch or in_features that differ from x's last dim.
DynTensor quantized_linear(const QuantizedWeight& w, DynTensor x, const std::optional<DynTensor>& bias);
// Linear::forward with a `quantized` member of any mode; `weight` is the layer's float weight
// (undefined once dropped), needed by the observing and fake_quant modes.
DynTensor quantized_linear(const QuantizedWeight& w, DynTensor x, const DynTensor& weight,
                           const std::optional<DynTensor>& bias);

// Conv<N>::forward's hooks. In the observing and fake_quant modes the float convolution runs on
// quantized_input(x) (recorded; fake-quantized too in fake_quant mode) and quantized_weight(w)
// (fake-quantized per output channel in fake_quant mode); in static_int8 mode quantized_conv
// runs the whole convolution: x [N, C, *spatial] to u8, qlinear_conv_f32 (padding as in `o`; the
// scales, bias and a clamp to [min, max] in the kernel's epilogue), f32 out (x's dtype).
DynTensor quantized_input(const QuantizedWeight& q, DynTensor x);
// The weight a Conv in the observing or fake_quant mode convolves with (see quantized_input).
DynTensor quantized_weight(const QuantizedWeight& q, const DynTensor& weight);
// A Conv's whole int8 convolution in the static_int8 mode (see quantized_input).
DynTensor quantized_conv(const QuantizedWeight& q, DynTensor x, const std::optional<DynTensor>& bias,
                         const ConvOptions& o, std::optional<double> min = std::nullopt,
                         std::optional<double> max = std::nullopt);

// ---- static post-training quantization (nn::quantize) and quantization-aware training ----

// How nn::quantize records each layer's input range.
enum class Calibration : uint8_t {
  min_max,     // the exact range (quant::MinMaxObserver; PyTorch's MinMaxObserver)
  percentile,  // [quantile(1 - p), quantile(p)] (quant::PercentileObserver)
  entropy,     // TensorRT's KL-divergence threshold (quant::EntropyObserver)
};

// nn::quantize / nn::prepare / nn::convert. Weights: int8, symmetric, one scale per output
// channel (scale = max|w| / 127); inputs: uint8, affine, one scale and zero point per layer from
// the calibration (PyTorch's x86 / fbgemm qconfig without reduce_range).
struct StaticQuantConfig {
  Calibration calibration = Calibration::min_max;  // how each layer's input range is recorded
  double percentile = 99.99;  // Calibration::percentile: the percentile kept (in (50, 100])
  int64_t max_batches = 0;  // nn::quantize calibrates on at most this many batches (0: every batch given)
  bool keep_float = false;  // keep each float weight beside its quantized copy (default: drop it)
  bool strict = false;  // a layer that cannot be quantized is an error (default: it stays float)
};

// nn::prepare_qat.
struct QatConfig {
  // Each layer's input range is a moving average over the training batches
  // (quant::MovingAverageMinMaxObserver with this constant).
  double averaging_constant = 0.01;
};

// The input an nn::quantize calibration batch gives the model: the batch itself when it is a
// DynTensor, its `images` (data::ImageBatch) or the first of a pair. Pass your own callable to
// nn::quantize for other batch types.
struct CalibrationInput {
  // The model's input in batch `b`.
  template <class B>
  DynTensor operator()(const B& b) const {
    if constexpr (std::is_convertible_v<const B&, DynTensor>) return b;
    else if constexpr (requires { DynTensor(b.images); }) return b.images;
    else if constexpr (requires { DynTensor(b.first); }) return b.first;
    else static_assert(sizeof(B) == 0, "nn::quantize: pass a to_input callable that returns the model's input of a batch");
  }
};

namespace detail {
// The observer `config` asks for.
std::shared_ptr<quant::Observer> make_observer(const StaticQuantConfig& config);
// Why a layer with this weight and `quantized` state cannot be prepared ("" when it can); an Error
// for integer weights (`where` names the function and layer).
std::string why_not_quantizable(const Param& weight, const QuantizedWeight* quantized, const std::string& where);
// A layer state that records the input through `observer`: observing or fake_quant.
std::shared_ptr<const QuantizedWeight> observing_layer(std::shared_ptr<quant::Observer> observer, LayerQuant mode);
// The static int8 state of a layer from its float weight ([out, in] or [out, in / groups, *k]) and
// the input's parameters (f32 [] scale, u8 [] zero point). `conv` picks the product's layout.
std::shared_ptr<const QuantizedWeight> static_layer(const DynTensor& weight, const quant::QParams& input, bool conv,
                                                    const std::string& where);
// The same from a weight already quantized per channel of dim 0, symmetric int8 (a saved one).
std::shared_ptr<const QuantizedWeight> static_layer_from(const quant::QuantizedTensor& weight,
                                                         const quant::QParams& input, bool conv,
                                                         const std::string& where);
// The metadata value that saves a static layer's input parameters, and its inverse (`where`
// names the file and entry in errors).
std::string input_params_text(const quant::QParams& input);
quant::QParams input_params_from_text(const std::string& text, const std::string& where, const Device& device);
inline std::string input_params_key(const std::string& weight_key) { return "ember.nn.input." + weight_key; }
inline std::string layer_name(const std::string& path) { return path.empty() ? std::string("(model)") : path; }
inline std::string weight_key(const std::string& path) { return path.empty() ? std::string("weight") : path + ".weight"; }
}  // namespace detail

// Calls `f(path, layer)` for each layer that static quantization handles (Linear, Conv1d/2d/3d)
// inside `m`, in declaration order; `f` takes the layer as `auto&`.
template <class M, class F>
void for_each_quantizable(M& m, F&& f) {
  struct V : Visitor {
    F& f;
    explicit V(F& fn) : f(fn) {}
    void module(const std::string& p, const std::type_info& type, void* self) override {
      if (type == typeid(Linear)) f(p, *static_cast<Linear*>(self));
      else if (type == typeid(Conv1d)) f(p, *static_cast<Conv1d*>(self));
      else if (type == typeid(Conv2d)) f(p, *static_cast<Conv2d*>(self));
      else if (type == typeid(Conv3d)) f(p, *static_cast<Conv3d*>(self));
    }
  } v{f};
  m.visit(v);
}

namespace detail {
// Gives each quantizable layer of `model` the state `make()` returns; layers that cannot take one
// are named in `report` (an Error when `strict`; `where` names the caller).
template <class M, class Make>
void prepare_layers(M& model, const std::string& where, bool strict, QuantizeReport* report, Make&& make) {
  for_each_quantizable(model, [&](const std::string& path, auto& layer) {
    const std::string name = layer_name(path);
    const std::string why = why_not_quantizable(layer.weight, layer.quantized.get(), where + ": " + name);
    if (why.empty()) {
      layer.quantized = make();
      return;
    }
    EMBER_CHECK(!strict, where, ": ", name, ": ", why);
    if (report) report->skipped.push_back(name + " (" + why + ")");
  });
}
}  // namespace detail

// Inserts an input observer into every Linear and Conv of `model` (PyTorch's prepare): its forward
// stays float and records the range of its input. Run a few batches through it, then convert().
// Layers that cannot be quantized (already quantized) are left alone and named in `report`;
// integer weights are an Error.
template <class M>
M prepare(M model, const StaticQuantConfig& config = {}, QuantizeReport* report = nullptr) {
  detail::prepare_layers(model, "nn::quantize", config.strict, report,
                         [&] { return detail::observing_layer(detail::make_observer(config), LayerQuant::observing); });
  return model;
}

// Quantization-aware training (PyTorch's prepare_qat): every Linear and Conv of `model` runs its
// float op on fake-quantized input (u8 grid from a moving-average range of the inputs seen) and
// weight (int8 per output channel, from the current weight), so that training (on an autodiff
// device) adapts the weights to the grid; gradients pass straight through (quant::fake_quantize).
// nn::convert then makes the trained model's int8 layers. The observers are shared by copies of
// the model (the Learner's copies keep training the same ranges).
template <class M>
M prepare_qat(M model, const QatConfig& config = {}, QuantizeReport* report = nullptr) {
  detail::prepare_layers(model, "nn::prepare_qat", false, report, [&] {
    return detail::observing_layer(std::make_shared<quant::MovingAverageMinMaxObserver>(config.averaging_constant),
                                   LayerQuant::fake_quant);
  });
  return model;
}

// Turns every prepared layer (prepare after calibration, or prepare_qat after training) into a
// static int8 layer: the observed input range gives the input's scale and zero point, the float
// weight is quantized per output channel (and dropped unless config.keep_float). A layer that saw
// no input stays float and is named in `report` (an Error with config.strict). Convert on the
// inference device (after nn::to_device).
template <class M>
M convert(M model, const StaticQuantConfig& config = {}, QuantizeReport* report = nullptr) {
  for_each_quantizable(model, [&](const std::string& path, auto& layer) {
    if (!layer.quantized || !layer.quantized->observer) return;
    const std::string name = detail::layer_name(path);
    constexpr bool conv = !std::is_same_v<std::decay_t<decltype(layer)>, Linear>;
    if (layer.quantized->observer->batches() == 0) {
      EMBER_CHECK(!config.strict, "nn::convert: ", name, " saw no input during calibration");
      if (report) report->skipped.push_back(name + " (saw no input during calibration)");
      layer.quantized = nullptr;
      return;
    }
    const DynTensor& w = layer.weight.value();
    const quant::QParams input =
        layer.quantized->observer->params(quant::QScheme::per_tensor(quant::QType::uint8, false), w.device());
    layer.quantized = detail::static_layer(w, input, conv, "nn::convert: " + name);
    if (!config.keep_float) layer.weight = Param{};
    if (report) report->quantized.push_back(name);
  });
  return model;
}

// Static post-training quantization (PyTorch's prepare, calibrate, convert in one call): puts
// `model` in eval mode, inserts observers (prepare), runs model.forward(to_input(batch)) for each
// batch of `calibration` (at most config.max_batches), and converts every Linear and Conv that saw
// input to int8 (convert). `calibration` is any range of batches: a data::DataLoader (ImageBatch
// gives its images), a std::vector<DynTensor> of inputs, ...; an empty one is an Error.
template <class M, class Batches, class ToInput = CalibrationInput>
M quantize(M model, Batches&& calibration, const StaticQuantConfig& config = {}, QuantizeReport* report = nullptr,
           ToInput to_input = {}) {
  set_training(model, false);
  model = prepare(std::move(model), config, report);
  int64_t batches = 0;
  for (auto&& batch : calibration) {
    if (config.max_batches > 0 && batches >= config.max_batches) break;
    (void)model.forward(to_input(batch));
    ++batches;
  }
  EMBER_CHECK(batches > 0, "nn::quantize: the calibration data gave no batch; pass a few batches of the model's inputs");
  return convert(std::move(model), config, report);
}

// Quantizes the weight of every Linear inside `model` (see the top of the file); `report`, when
// given, lists what was quantized and what was not.
template <class M>
M quantize_dynamic(M model, const DynamicQuantConfig& config = {}, QuantizeReport* report = nullptr) {
  for_each_module<Linear>(model, [&](const std::string& path, Linear& layer) {
    const std::string name = path.empty() ? std::string("(model)") : path;
    if (!layer.weight.defined()) return;  // already quantized without its float weight
    const int64_t k = layer.weight.shape()[1];
    const bool four = quant::bits(config.dtype) == 4;
    std::string why;
    if (k % config.block != 0)
      why = "in_features " + std::to_string(k) + " is not a multiple of " + std::to_string(config.block);
    else if (four && k % 2 != 0)
      why = "in_features " + std::to_string(k) + " is odd";
    if (!why.empty()) {
      EMBER_CHECK(!config.strict, "nn::quantize_dynamic: ", name, ": ", why);
      if (report) report->skipped.push_back(name + " (" + why + ")");
      return;
    }
    layer.quantized = quantize_linear_weight(layer.weight.value(), config, name);
    if (!config.keep_float) layer.weight = Param{};
    if (report) report->quantized.push_back(name);
  });
  return model;
}

// The quantized weights of `model` by parameter path ("fc1.weight"), for quant::save_safetensors.
// Static int8 layers (Linear or Conv) are included; layers being observed or trained are not.
template <class M>
std::map<std::string, quant::QuantizedTensor> quantized_weights(M& model) {
  std::map<std::string, quant::QuantizedTensor> out;
  for_each_quantizable(model, [&](const std::string& path, auto& layer) {
    if (layer.quantized && !layer.quantized->observer) out.emplace(detail::weight_key(path), layer.quantized->tensor);
  });
  return out;
}

// Saves `model` to a safetensors file (quant::save_safetensors, atomic): the quantized weights
// (quantized_weights) and every other tensor of its state dict (float weights kept beside
// quantized ones are not saved twice), with `metadata`.
// Static int8 layers also store their input's scale and zero point, as the metadata string
// "ember.nn.input.<path>.weight" = {"scale":0.0123,"zero_point":128}.
template <class M>
void save_quantized(const std::string& path, M& model, const std::map<std::string, std::string>& metadata = {}) {
  const auto quantized = quantized_weights(model);
  store::TensorMap plain;
  for (auto& [name, t] : state_dict(model))
    if (!quantized.count(name)) plain.insert(name, t);
  std::map<std::string, std::string> meta = metadata;
  for_each_quantizable(model, [&](const std::string& p, auto& layer) {
    if (layer.quantized && layer.quantized->mode == LayerQuant::static_int8)
      meta[detail::input_params_key(detail::weight_key(p))] = detail::input_params_text(layer.quantized->input);
  });
  quant::save_safetensors(path, quantized, plain, meta);
}

// Loads a file written by save_quantized into `model` of the same architecture: each Linear with
// a quantized entry "<path>.weight" takes it (its float weight is dropped), and the plain tensors
// load as load_state_dict does (strictly). quantize_activations as for quantize_dynamic.
template <class M>
void load_quantized(M& model, const quant::QuantizedFile& file, bool quantize_activations = false) {
  std::vector<std::string> used;
  for_each_quantizable(model, [&](const std::string& path, auto& layer) {
    constexpr bool conv = !std::is_same_v<std::decay_t<decltype(layer)>, Linear>;
    const std::string key = detail::weight_key(path);
    auto it = file.quantized.find(key);
    if (it == file.quantized.end()) return;
    auto input = file.metadata.find(detail::input_params_key(key));
    if (input != file.metadata.end()) {  // a static int8 layer
      const std::string where = "nn::load_quantized: " + key;
      layer.quantized = detail::static_layer_from(
          it->second, detail::input_params_from_text(input->second, where, it->second.data().device()), conv, where);
    } else {
      EMBER_CHECK(!conv, "nn::load_quantized: the quantized Conv weight ", key, " has no input parameters (metadata ",
                  detail::input_params_key(key), ")");
      layer.quantized = quantized_weight_from(it->second, quantize_activations, key);
    }
    layer.weight = Param{};
    used.push_back(key);
  });
  EMBER_CHECK(used.size() == file.quantized.size(), "nn::load_quantized: the file has ",
              file.quantized.size(), " quantized tensors but the model has ", used.size(),
              " Linear / Conv layers to take them");
  NamedTensors plain;
  for (const auto& [name, t] : file.plain)
    if (!file.quantized.count(name)) plain.emplace_back(name, t);
  load_state_dict(model, std::move(plain));
}

// load_quantized from the file at `path` (tensors on the model's device: pass it as `device`).
template <class M>
void load_quantized(M& model, const std::string& path, const Device& device = Device::default_device(),
                    bool quantize_activations = false) {
  load_quantized(model, quant::load_safetensors(path, device), quantize_activations);
}

}  // namespace ember::nn
