// nn::quantize_dynamic (nn/quantize.hpp): every quantized Linear computes x W^T + b with W its
// dequantized weight (the formula, in f64), the layers it cannot quantize stay float and are
// reported, quantized models save and load through safetensors, and bad uses are errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "ember/nn.hpp"

namespace ember {
namespace {

using quant::QType;

struct Mlp {
  nn::Linear fc1, fc2, head;  // 64 -> 96 -> 40 -> 10: head's in_features 40 is no multiple of 32
  EMBER_MODULE(fc1, fc2, head)
  DynTensor forward(DynTensor x) const { return head.forward(relu(fc2.forward(relu(fc1.forward(x))))); }
};

Mlp make_mlp() {
  Device cpu = Device::cpu();
  return Mlp{nn::LinearConfig{64, 96}.init(cpu), nn::LinearConfig{96, 40}.init(cpu), nn::LinearConfig{40, 10}.init(cpu)};
}

// A model with Linears at several depths: paths "body.fc1", ..., "extra.0", "extra.1".
struct Net {
  Mlp body;
  std::vector<nn::Linear> extra;
  EMBER_MODULE(body, extra)
};

// x W^T + b in f64, W given in full.
DynTensor linear_ref(const DynTensor& x, const DynTensor& w, const std::optional<nn::Param>& b) {
  DynTensor y = matmul(x.cast(DType::f64), transpose(w.cast(DType::f64), 0, 1));
  return b ? y + b->value().cast(DType::f64) : y;
}

// The weight a layer computes with: its quantized weight dequantized, else its float weight.
DynTensor effective_weight(const nn::Linear& l) { return l.quantized ? l.quantized->tensor.dequantize() : l.weight.value(); }

// The Mlp's forward in f64 from each layer's effective weight; `round_x`: the inputs of quantized
// layers rounded to int8 per block of 32 first (quantize_activations).
DynTensor mlp_ref(const Mlp& m, const DynTensor& x, bool round_x = false) {
  auto layer = [&](const nn::Linear& l, DynTensor in) {
    if (round_x && l.quantized)
      in = quant::quantize(in.cast(DType::f32), quant::QScheme::per_block(1, 32, QType::int8)).dequantize();
    return linear_ref(in, effective_weight(l), l.bias);
  };
  return layer(m.head, relu(layer(m.fc2, relu(layer(m.fc1, x)))));
}

// max |a - b| / max |b|
double rel_err(const DynTensor& a, const DynTensor& b) {
  auto av = a.cast(DType::f64).to_vector<double>(), bv = b.cast(DType::f64).to_vector<double>();
  double err = 0, mag = 1e-12;
  for (size_t i = 0; i < av.size(); ++i) err = std::max(err, std::abs(av[i] - bv[i])), mag = std::max(mag, std::abs(bv[i]));
  return err / mag;
}

TEST(QuantizeDynamic, LayersComputeWithTheirDequantizedWeights) {
  const Mlp m = make_mlp();
  const DynTensor x = DynTensor::normal({5, 64}, 0, 1, DType::f32, Device::cpu());
  const DynTensor y_float = m.forward(x);
  for (QType t : {QType::int8, QType::int4, QType::uint8, QType::uint4})
    for (int64_t block : {32, 64}) {
      const std::string what = std::string(quant::qtype_name(t)) + " block " + std::to_string(block);
      nn::QuantizeReport report;
      Mlp q = nn::quantize_dynamic(m, {.dtype = t, .block = block}, &report);
      // fc2's in_features 96 is no multiple of 64
      const std::vector<std::string> want_q = block == 32 ? std::vector<std::string>{"fc1", "fc2"}
                                                         : std::vector<std::string>{"fc1"};
      EXPECT_EQ(report.quantized, want_q) << what;
      ASSERT_EQ(report.skipped.size(), 3 - want_q.size()) << what;
      EXPECT_NE(report.skipped.back().find("head (in_features 40 is not a multiple of"), std::string::npos) << what;
      EXPECT_FALSE(q.fc1.weight.defined()) << what << ": the float weight is dropped";
      EXPECT_TRUE(q.head.weight.defined() && !q.head.quantized) << what;
      EXPECT_EQ(q.fc1.quantized->tensor.scheme().symmetric, quant::is_signed(t)) << what;
      const DynTensor y = q.forward(x);
      EXPECT_LE(rel_err(y, mlp_ref(q, x)), 1e-5) << what;
      // and near the float model (rounding of the weights: about 0.4% a weight for 8 bits, 7% for 4)
      EXPECT_LE(rel_err(y, y_float), quant::bits(t) == 8 ? 0.02 : 0.2) << what;
      EXPECT_GT(rel_err(y, y_float), 0.0) << what << ": the quantized weights were used";
    }
}

TEST(QuantizeDynamic, QuantizedActivationsRoundTheInputsPerBlock) {
  const Mlp m = make_mlp();
  const DynTensor x = DynTensor::normal({3, 64}, 0, 1, DType::f32, Device::cpu());
  for (QType t : {QType::int8, QType::int4}) {
    Mlp q = nn::quantize_dynamic(m, {.dtype = t, .block = 32, .quantize_activations = true});
    const DynTensor y = q.forward(x);
    EXPECT_LE(rel_err(y, mlp_ref(q, x, /*round_x=*/true)), 1e-4) << quant::qtype_name(t);
    EXPECT_GT(rel_err(y, mlp_ref(q, x, /*round_x=*/false)), 1e-6) << quant::qtype_name(t) << ": x was rounded";
  }
}

TEST(QuantizeDynamic, FindsLayersAtAnyDepthAndKeepsFloatWeightsOnRequest) {
  Net n{make_mlp(), {nn::LinearConfig{32, 8}.init(Device::cpu()), nn::LinearConfig{64, 8, false}.init(Device::cpu())}};
  nn::QuantizeReport report;
  Net q = nn::quantize_dynamic(n, {.dtype = QType::int4, .keep_float = true}, &report);
  EXPECT_EQ(report.quantized, (std::vector<std::string>{"body.fc1", "body.fc2", "extra.0", "extra.1"}));
  EXPECT_TRUE(q.extra[1].weight.defined());
  const DynTensor x = DynTensor::normal({2, 64}, 0, 1, DType::f32, Device::cpu());
  EXPECT_LE(rel_err(q.extra[1].forward(x), linear_ref(x, effective_weight(q.extra[1]), std::nullopt)), 1e-5);
  EXPECT_TRUE(n.extra[1].weight.defined() && !n.extra[1].quantized) << "the original model is untouched";
  EXPECT_EQ(nn::quantized_weights(q).size(), 4u);
}

TEST(QuantizeDynamic, SavesAndLoadsThroughSafetensors) {
  const Mlp m = make_mlp();
  Mlp q = nn::quantize_dynamic(m, {.dtype = QType::int4});
  const auto path = (std::filesystem::temp_directory_path() / "ember_quantize_test.safetensors").string();
  nn::save_quantized(path, q, {{"note", "test"}});
  const quant::QuantizedFile file = quant::load_safetensors(path);
  EXPECT_EQ(file.quantized.size(), 2u);
  EXPECT_TRUE(file.quantized.count("fc1.weight") && file.quantized.count("fc2.weight"));
  EXPECT_FALSE(file.plain.contains("fc1.weight"));
  EXPECT_TRUE(file.plain.contains("head.weight") && file.plain.contains("fc1.bias"));

  Mlp r = make_mlp();  // other random weights
  nn::load_quantized(r, path, Device::cpu());
  const DynTensor x = DynTensor::normal({4, 64}, 0, 1, DType::f32, Device::cpu());
  EXPECT_EQ(rel_err(r.forward(x), q.forward(x)), 0.0);

  struct One {
    nn::Linear fc1;
    EMBER_MODULE(fc1)
  };
  One small{nn::LinearConfig{64, 96}.init(Device::cpu())};
  EXPECT_THROW(nn::load_quantized(small, file), Error);  // two quantized tensors, one layer to take them
  std::filesystem::remove(path);
}

TEST(QuantizeDynamic, BadUseIsAnError) {
  const Mlp m = make_mlp();
  try {
    (void)nn::quantize_dynamic(m, {.strict = true});
    ADD_FAILURE() << "strict quantization of a 40-wide layer did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head: in_features 40 is not a multiple of 32"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)nn::quantize_dynamic(m, {.block = 48}), Error);
  Mlp q = nn::quantize_dynamic(m, {});
  try {
    (void)q.forward(DynTensor::normal({2, 60}, 0, 1, DType::f32, Device::cpu()));
    ADD_FAILURE() << "a 60-wide input to a 64-wide quantized layer did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fc1 (Linear)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember
