// nn::quantize (static post-training quantization), nn::prepare_qat / nn::convert and the
// gradient of matmul_wq, against PyTorch 1.13's torch.ao.quantization (cases/quantize_static.json
// from gen_quantize_static_ref.py: the same weights and calibration batches), finite differences
// and the formulas; saving and loading int8 models; errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember/ember.hpp"
#include "ember/nn.hpp"

namespace ember {
namespace {

using nlohmann::json;

const json& ref() {
  static const json j = [] {
    std::ifstream in(EMBER_NN_TEST_DIR "/cases/quantize_static.json");
    return json::parse(in);
  }();
  return j;
}

DynTensor tensor(const json& values, Sizes shape) {
  return DynTensor::from_vector<float>(values.get<std::vector<float>>(), Shape(shape));
}

// The reference's model: conv (2 -> 4, 3x3, pad 1) - relu - flatten - fc (100 -> 3).
struct Net {
  nn::Conv2d conv;
  nn::Linear fc;
  EMBER_MODULE(conv, fc)
  DynTensor forward(DynTensor x) const { return fc.forward(flatten(relu(conv.forward(std::move(x))), 1)); }
};

Net make_net() {
  Device cpu = Device::cpu();
  return Net{nn::Conv2dConfig{.in_channels = 2, .out_channels = 4, .kernel_size = {3}, .padding = {1}}.init(cpu),
             nn::LinearConfig{100, 3}.init(cpu)};
}

Net reference_net() {
  const json& s = ref()["static"];
  Net n = make_net();
  n.conv.weight = nn::Param(tensor(s["conv_weight"], {4, 2, 3, 3}));
  n.conv.bias = nn::Param(tensor(s["conv_bias"], {4}));
  n.fc.weight = nn::Param(tensor(s["fc_weight"], {3, 100}));
  n.fc.bias = nn::Param(tensor(s["fc_bias"], {3}));
  return n;
}

std::vector<DynTensor> calibration_batches() {
  std::vector<DynTensor> out;
  for (const json& b : ref()["static"]["calibration"]) out.push_back(tensor(b, {2, 2, 5, 5}));
  return out;
}

std::vector<double> values(const DynTensor& t) { return t.cast(DType::f64).to_vector<double>(); }

void expect_near_all(const std::vector<double>& got, const json& want, double tol, const std::string& what) {
  const auto w = want.get<std::vector<double>>();
  ASSERT_EQ(got.size(), w.size()) << what;
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(got[i], w[i], tol) << what << "[" << i << "]";
}

TEST(StaticQuantize, MatchesPyTorchQuantizationParametersAndInt8Outputs) {
  const json& s = ref()["static"];
  nn::QuantizeReport report;
  Net q = nn::quantize(reference_net(), calibration_batches(), {}, &report);
  EXPECT_EQ(report.quantized, (std::vector<std::string>{"conv", "fc"}));
  EXPECT_TRUE(report.skipped.empty());
  ASSERT_TRUE(q.conv.quantized && q.fc.quantized);
  EXPECT_FALSE(q.conv.weight.defined());  // the float weights are dropped
  // Input scales and zero points: PyTorch's MinMaxObserver (f32, the same formula): equal up to
  // f32 rounding; weight scales max|w| / 127 per channel; int8 weights equal.
  EXPECT_NEAR(q.conv.quantized->input.scale.item(), s["conv_input_scale"].get<double>(), 1e-7);
  EXPECT_EQ(q.conv.quantized->input.zero_point.item<int64_t>(), s["conv_input_zero_point"].get<int64_t>());
  EXPECT_NEAR(q.fc.quantized->input.scale.item(), s["fc_input_scale"].get<double>(), 1e-7);
  EXPECT_EQ(q.fc.quantized->input.zero_point.item<int64_t>(), s["fc_input_zero_point"].get<int64_t>());
  expect_near_all(values(q.conv.quantized->tensor.scale()), s["conv_weight_scales"], 1e-8, "conv weight scales");
  expect_near_all(values(q.fc.quantized->tensor.scale()), s["fc_weight_scales"], 1e-8, "fc weight scales");
  expect_near_all(values(q.conv.quantized->tensor.data()), s["conv_weight_int8"], 0, "conv int8 weight");
  expect_near_all(values(q.fc.quantized->tensor.data()), s["fc_weight_int8"], 0, "fc int8 weight");

  const DynTensor y = q.forward(tensor(s["x"], {2, 2, 5, 5}));
  ASSERT_EQ(y.shape(), Shape({2, 3}));
  // The int8 formula from torch's quantized tensors (f64): the same integers, so only f32
  // rounding of the scaling differs (outputs are O(0.5)).
  expect_near_all(values(y), s["y_int8_formula"], 2e-6, "int8 output vs the formula");
  // torch's converted model also rounds each layer's output to u8: within 2 of its output steps.
  expect_near_all(values(y), s["y_torch_quantized"], 2 * s["torch_fc_output_scale"].get<double>(),
                  "int8 output vs torch's quantized model");
}

// The int8 Conv's epilogue (a clamp in the kernel, a residual before it) and unbatched input
// agree with the same int8 layer's plain output, clamped or summed afterwards.
TEST(StaticQuantize, ConvEpilogueAndUnbatchedInput) {
  Net q = nn::quantize(reference_net(), calibration_batches());
  const DynTensor x = tensor(ref()["static"]["x"], {2, 2, 5, 5});
  const DynTensor y = q.conv.forward(x);
  EXPECT_EQ(values(q.conv.forward(x, {.residual = std::nullopt, .min = 0.0, .max = std::nullopt})), values(relu(y)));
  const DynTensor r = DynTensor::full({2, 4, 5, 5}, 0.25, DType::f32);
  EXPECT_EQ(values(q.conv.forward(x, {.residual = r, .min = std::nullopt, .max = 0.5})), values(clamp(y + r, std::nullopt, 0.5)));
  EXPECT_EQ(values(q.conv.forward(narrow(x, 0, 1, 1).reshape(Sizes{2, 5, 5}))), values(narrow(y, 0, 1, 1).reshape(Sizes{4, 5, 5})));
}

// Conv1d and a strided, grouped, dilated Conv2d with reflect padding: the int8 layer against the
// formula, the float convolution (f64) of its quantized input and weight, dequantized.
TEST(StaticQuantize, Conv1dAndGroupedStridedConv2dMatchTheInt8Formula) {
  Device cpu = Device::cpu();
  cpu.seed(11);
  struct Convs {
    nn::Conv1d c1;
    nn::Conv2d c2;
    EMBER_MODULE(c1, c2)
    DynTensor forward(DynTensor x) const { return c1.forward(x); }
  };
  Convs m{nn::Conv1dConfig{.in_channels = 3, .out_channels = 5, .kernel_size = {3}, .padding = {2}, .dilation = {2}}.init(cpu),
          nn::Conv2dConfig{.in_channels = 4, .out_channels = 6, .kernel_size = {3}, .stride = {2}, .padding = {1},
                           .groups = 2, .padding_mode = nn::ConvPaddingMode::reflect}.init(cpu)};
  const DynTensor x1 = DynTensor::normal({2, 3, 17}, 0.5, 1.0, DType::f32, cpu);
  const DynTensor x2 = DynTensor::normal({2, 4, 9, 9}, -0.2, 0.7, DType::f32, cpu);
  m = nn::prepare(m);
  m.c1.forward(x1);
  m.c2.forward(x2);
  Convs q = nn::convert(m);
  ASSERT_TRUE(q.c1.quantized && q.c2.quantized);
  auto formula = [](const auto& layer, const DynTensor& x, auto conv, ConvOptions o) {
    const nn::QuantizedWeight& w = *layer.quantized;
    const DynTensor xq = quant::quantize(x, quant::QScheme::per_tensor(quant::QType::uint8, false), w.input).dequantize();
    return conv(xq.cast(DType::f64), w.tensor.dequantize().cast(DType::f64), layer.bias->value().cast(DType::f64), o);
  };
  const DynTensor r1 = formula(q.c1, x1, [](auto... a) { return conv1d(a...); },
                               ConvOptions{.padding = {2}, .dilation = {2}});
  const DynTensor x2p = pad(x2, {1, 1, 1, 1}, PadMode::reflect);
  const DynTensor r2 = formula(q.c2, x2p, [](auto... a) { return conv2d(a...); },
                               ConvOptions{.stride = {2}, .groups = 2});
  const auto y1 = values(q.c1.forward(x1)), y2 = values(q.c2.forward(x2));
  const auto e1 = values(r1), e2 = values(r2);
  ASSERT_EQ(y1.size(), e1.size());
  ASSERT_EQ(y2.size(), e2.size());
  for (size_t i = 0; i < e1.size(); ++i) EXPECT_NEAR(y1[i], e1[i], 1e-5) << "conv1d " << i;
  for (size_t i = 0; i < e2.size(); ++i) EXPECT_NEAR(y2[i], e2[i], 1e-5) << "conv2d " << i;
}

TEST(StaticQuantize, CalibratesFromADataLoaderLikeRangeOfBatchesWithACallable) {
  struct Batch {
    DynTensor x, y;
  };
  std::vector<Batch> batches;
  for (const DynTensor& b : calibration_batches()) batches.push_back({b, DynTensor::zeros({2})});
  Net a = nn::quantize(reference_net(), batches, {}, nullptr, [](const Batch& b) { return b.x; });
  Net b = nn::quantize(reference_net(), calibration_batches(), {.max_batches = 2});
  EXPECT_NEAR(a.conv.quantized->input.scale.item(), ref()["static"]["conv_input_scale"].get<double>(), 1e-7);
  // max_batches: only the first two batches were seen (their range is no wider than all three).
  EXPECT_LE(b.conv.quantized->input.scale.item(), a.conv.quantized->input.scale.item());
}

TEST(StaticQuantize, PercentileAndEntropyCalibrationNarrowTheRange) {
  Net mm = nn::quantize(reference_net(), calibration_batches());
  for (auto c : {nn::Calibration::percentile, nn::Calibration::entropy}) {
    Net q = nn::quantize(reference_net(), calibration_batches(), {.calibration = c, .percentile = 99.0});
    EXPECT_LT(q.conv.quantized->input.scale.item(), mm.conv.quantized->input.scale.item()) << int(c);
    EXPECT_GT(q.conv.quantized->input.scale.item(), 0.0) << int(c);
  }
}

TEST(StaticQuantize, SavesAndLoadsTheInt8Model) {
  Net q = nn::quantize(reference_net(), calibration_batches());
  const std::string path = (std::filesystem::temp_directory_path() / "ember_static_q.safetensors").string();
  nn::save_quantized(path, q, {{"note", "static"}});
  quant::QuantizedFile f = quant::load_safetensors(path);
  EXPECT_TRUE(f.quantized.count("conv.weight") && f.quantized.count("fc.weight"));
  ASSERT_TRUE(f.metadata.count("ember.nn.input.conv.weight"));
  Net r = make_net();
  nn::load_quantized(r, f);
  ASSERT_TRUE(r.conv.quantized && r.fc.quantized);
  EXPECT_EQ(r.conv.quantized->input.scale.item(), q.conv.quantized->input.scale.item());  // bit-exact
  const DynTensor x = tensor(ref()["static"]["x"], {2, 2, 5, 5});
  EXPECT_EQ(values(r.forward(x)), values(q.forward(x)));
  // A Conv's quantized weight without its input parameters is an error naming them.
  f.metadata.erase("ember.nn.input.conv.weight");
  Net bad = make_net();
  try {
    nn::load_quantized(bad, f);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ember.nn.input.conv.weight"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(StaticQuantize, BadInputsAreClearErrors) {
  auto expect_error = [](auto&& f, const std::string& part) {
    try {
      f();
      ADD_FAILURE() << "no error (wanted '" << part << "')";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error([] { nn::quantize(reference_net(), std::vector<DynTensor>{}); }, "calibration data gave no batch");
  expect_error(
      [] {
        Net n = reference_net();
        n.fc.weight = nn::Param(n.fc.weight.value().cast(DType::i32));
        nn::quantize(n, calibration_batches());
      },
      "fc: the weight has dtype i32");
  expect_error([] { nn::detail::input_params_from_text("{\"scale\":0,\"zero_point\":3}", "f.safetensors: fc", Device::cpu()); },
               "f.safetensors: fc: the input scale 0");
  expect_error([] { nn::detail::input_params_from_text("{\"scale\":0.1,\"zero_point\":300}", "fc", Device::cpu()); },
               "zero point 300");
  // Already quantized layers are skipped and reported (strict: an error).
  nn::QuantizeReport report;
  Net twice = nn::quantize(nn::quantize(reference_net(), calibration_batches()), calibration_batches(), {}, &report);
  EXPECT_EQ(report.skipped, (std::vector<std::string>{"conv (already quantized)", "fc (already quantized)"}));
  expect_error([&] { nn::quantize(twice, calibration_batches(), {.strict = true}); }, "conv: already quantized");
  // A layer the calibration never reaches stays float.
  struct Two {
    nn::Linear used, unused;
    EMBER_MODULE(used, unused)
    DynTensor forward(DynTensor x) const { return used.forward(x); }
  };
  nn::QuantizeReport r2;
  Two t = nn::quantize(Two{nn::LinearConfig{4, 4}.init(), nn::LinearConfig{4, 4}.init()},
                       std::vector<DynTensor>{DynTensor::ones({2, 4})}, {}, &r2);
  EXPECT_EQ(r2.skipped, (std::vector<std::string>{"unused (saw no input during calibration)"}));
  EXPECT_FALSE(t.unused.quantized);
  EXPECT_TRUE(t.unused.weight.defined());
}

TEST(Qat, FakeQuantForwardAndStraightThroughGradientsMatchPyTorch) {
  const json& r = ref()["qat"];
  Device dev = Device::cpu().autodiff();
  struct One {
    nn::Linear fc;
    EMBER_MODULE(fc)
  };
  One m{nn::LinearConfig{6, 4}.init(dev)};
  m.fc.weight = nn::Param(tensor(r["weight"], {4, 6}).to(dev));
  m.fc.bias = nn::Param(tensor(r["bias"], {4}).to(dev));
  m = nn::prepare_qat(m);
  DynTensor x = tensor(r["x"], {5, 6}).to(dev).require_grad();
  DynTensor y = m.fc.forward(x);
  expect_near_all(values(y), r["y"], 1e-5, "QAT forward");
  Gradients g = (y * tensor(r["g"], {5, 4}).to(dev)).sum().backward();
  expect_near_all(values(*g.get(x)), r["grad_x"], 1e-5, "grad x");
  expect_near_all(values(*g.get(m.fc.weight)), r["grad_w"], 1e-5, "grad w");
  // convert: the observed range gives the int8 layer's input parameters (the first batch sets a
  // moving average), and the int8 layer computes what the fake-quantized one did.
  One c = nn::convert(nn::to_device(m, Device::cpu()));
  ASSERT_TRUE(c.fc.quantized && !c.fc.quantized->observer);
  EXPECT_NEAR(c.fc.quantized->input.scale.item(), r["input_scale"].get<double>(), 1e-7);
  EXPECT_EQ(c.fc.quantized->input.zero_point.item<int64_t>(), r["input_zero_point"].get<int64_t>());
  expect_near_all(values(c.fc.forward(tensor(r["x"], {5, 6}))), r["y"], 1e-5, "converted QAT layer");
}

TEST(Qat, TrainingStepsReduceTheLossOfAFakeQuantizedConvModel) {
  Device dev = Device::cpu().autodiff();
  dev.seed(3);
  Net m = nn::prepare_qat(nn::to_device(reference_net(), dev));
  const DynTensor x = tensor(ref()["static"]["x"], {2, 2, 5, 5}).to(dev);
  const DynTensor target = DynTensor::full({2, 3}, 0.5, DType::f32, dev);
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    DynTensor loss = (m.forward(x) - target).square().mean();
    Gradients g = loss.backward();
    if (step == 0) first = loss.item();
    last = loss.item();
    m.conv.weight = nn::Param((m.conv.weight.value() - *g.get(m.conv.weight) * 0.1).detach().to(dev));
    m.fc.weight = nn::Param((m.fc.weight.value() - *g.get(m.fc.weight) * 0.1).detach().to(dev));
  }
  EXPECT_LT(last, 0.5 * first);
  Net c = nn::convert(nn::to_device(m, Device::cpu()));
  EXPECT_TRUE(c.conv.quantized && c.fc.quantized);
}

// matmul_wq on an autodiff device: x's gradient is g @ dequant(W), by finite differences (the
// product is linear in x), for 8- and 4-bit weights with and without zero points.
TEST(MatmulWqGradient, MatchesFiniteDifferences) {
  Device dev = Device::cpu().autodiff();
  const DynTensor w = DynTensor::normal({3, 64}, 0, 0.5, DType::f32, Device::cpu());
  const DynTensor x0 = DynTensor::normal({2, 64}, 0, 1, DType::f32, Device::cpu());
  const DynTensor gy = DynTensor::normal({2, 3}, 0, 1, DType::f32, Device::cpu());
  for (auto type : {quant::QType::int8, quant::QType::uint8, quant::QType::int4, quant::QType::uint4}) {
    const quant::QuantizedTensor q = quant::quantize(w, quant::QScheme::per_block(1, 32, type, quant::is_signed(type)));
    const quant::WeightOnlyOperands o = q.weight_only();
    const WeightQuant wq{.bits = o.bits, .block = o.block_size};
    auto f = [&](const DynTensor& x) {
      std::optional<DynTensor> zp;
      if (o.zero_point) zp = o.zero_point->to(x.device());
      return (matmul_wq(x, o.data.to(x.device()), o.scales.to(x.device()), zp, wq) * gy.to(x.device())).sum();
    };
    DynTensor x = x0.to(dev).require_grad();
    const auto grad = values(*f(x).backward().get(x));
    std::vector<float> xv = x0.to_vector<float>();
    for (size_t i = 0; i < xv.size(); i += 7) {
      const float h = 0.25f;
      auto at = [&](float d) {
        std::vector<float> v = xv;
        v[i] += d;
        return f(DynTensor::from_vector<float>(v, x0.shape())).item();
      };
      EXPECT_NEAR(grad[i], (at(h) - at(-h)) / (2 * h), 2e-3) << quant::qtype_name(type) << " x[" << i << "]";
    }
  }
}

TEST(MatmulWqGradient, ATrackedScaleIsAnError) {
  Device dev = Device::cpu().autodiff();
  const quant::QuantizedTensor q = quant::quantize(DynTensor::normal({2, 32}, 0, 1, DType::f32, Device::cpu()),
                                                   quant::QScheme::per_block(1, 32, quant::QType::int8));
  DynTensor s = q.scale().to(dev).require_grad();
  DynTensor y = matmul_wq(DynTensor::ones({1, 32}, DType::f32, dev), q.data().to(dev), s, std::nullopt,
                          {.bits = 8, .block = 32});
  try {
    y.sum().backward();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul_wq: no gradient flows to its scales"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember
