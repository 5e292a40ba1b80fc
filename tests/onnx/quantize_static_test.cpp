// Static quantization of ONNX models (src/onnx/quantize_static.cpp) and the model writer
// (src/onnx/quantize_writer.cpp). Fixtures from gen_quantize_fixtures.py: a small conv net
// exported by PyTorch, its f32 logits, and the logits of the quantized graph as computed there
// with numpy from the ONNX spec formulas (an implementation independent of ember's).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <ember/onnx/quantize.hpp>
#include <ember/onnx/runtime.hpp>
#include <ember/store/npy.hpp>
#include <map>
#include <string>
#include <vector>

#include "onnx_test_util.hpp"

namespace {

using namespace ember;
using onnx_test::fixture;

DynTensor npy(const std::string& name) { return DynTensor::from_data(store::read_npy(fixture(name))); }

std::vector<onnx::CalibrationSample> calibration() {
  std::vector<onnx::CalibrationSample> s;
  for (int k = 0; k < 4; ++k) s.push_back({{"x", npy("quant_convnet_calib_" + std::to_string(k) + ".npy")}});
  return s;
}

std::vector<float> logits(const onnx::ModelProto& m, const DynTensor& x) {
  return onnx::Model::from_proto(m, Device::cpu()).run({{"x", x}}).at("y").to_vector<float>();
}

struct Quantized {
  onnx::ModelProto model;
  onnx::QuantizeReport report;
};
const Quantized& quantized() {
  static const Quantized q = [] {
    Quantized r;
    r.model = onnx::quantize_static(onnx::load_model(fixture("quant_convnet.onnx")), calibration(), {}, &r.report);
    return r;
  }();
  return q;
}

std::map<std::string, int> histogram(const onnx::GraphProto& g) {
  std::map<std::string, int> h;
  for (const onnx::NodeProto& n : g.nodes) ++h[n.op_type];
  return h;
}

TEST(QuantizeStatic, RewritesTheGraphIntoQOperatorForm) {
  const Quantized& q = quantized();
  std::map<std::string, int> h = histogram(q.model.graph);
  EXPECT_EQ(h["QLinearConv"], 4);
  EXPECT_EQ(h["QLinearAdd"], 1);
  EXPECT_EQ(h["MaxPool"], 1);
  EXPECT_EQ(h["QuantizeLinear"], 1);    // the graph input
  EXPECT_EQ(h["DequantizeLinear"], 1);  // before the f32 pool and head
  EXPECT_EQ(h["Conv"] + h["Relu"] + h["Add"], 0);
  EXPECT_EQ(q.report.quantized_convs, 4);
  EXPECT_EQ(q.report.quantized_adds, 1);
  EXPECT_EQ(q.report.u8_max_pools, 1);
  EXPECT_EQ(q.model.opset("com.microsoft"), 1);
  // Every QLinearConv but the one without a Relu (conv3) writes with zero point 0: saturation is the Relu.
  int relu_outputs = 0;
  for (const onnx::NodeProto& n : q.model.graph.nodes) {
    if (n.op_type != "QLinearConv") continue;
    const onnx::TensorProto* zp = q.model.graph.initializer(n.inputs[7]);
    ASSERT_NE(zp, nullptr);
    relu_outputs += onnx::to_tensor_data(*zp).to_vector<int>()[0] == 0;
  }
  EXPECT_EQ(relu_outputs, 3);
}

// The numpy reference evaluates the same quantized graph; they agree to f32 rounding (7e-8 when
// written). The bound leaves room for a rare u8 flip where a rounding tie or a calibrated range
// differs in its last float bit, far below what a wrong scale, zero point or rounding mode costs.
TEST(QuantizeStatic, MatchesTheNumpyReferenceOfTheQuantizedGraph) {
  std::vector<float> got = logits(quantized().model, npy("quant_convnet_eval.npy"));
  std::vector<float> want = npy("quant_convnet_int8.npy").to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_diff = std::max(max_diff, double(std::fabs(got[i] - want[i])));
    max_ref = std::max(max_ref, double(std::fabs(want[i])));
  }
  EXPECT_LE(max_diff, 2e-4 * max_ref) << "largest |ember - reference| " << max_diff << " of logits up to " << max_ref;
}

// Against PyTorch's f32 model: int8 keeps the top-1 class of at least 15 of the 16 inputs and a
// relative L2 error under 3% (the reference quantization reaches 16/16 and 0.6%).
TEST(QuantizeStatic, StaysCloseToTheFloatModel) {
  std::vector<float> got = logits(quantized().model, npy("quant_convnet_eval.npy"));
  std::vector<float> ref = npy("quant_convnet_f32.npy").to_vector<float>();
  ASSERT_EQ(got.size(), ref.size());
  const size_t classes = 10, rows = ref.size() / classes;
  int agree = 0;
  double err = 0, norm = 0;
  for (size_t r = 0; r < rows; ++r) {
    size_t a = 0, b = 0;
    for (size_t c = 0; c < classes; ++c) {
      if (got[r * classes + c] > got[r * classes + a]) a = c;
      if (ref[r * classes + c] > ref[r * classes + b]) b = c;
      err += std::pow(got[r * classes + c] - ref[r * classes + c], 2);
      norm += std::pow(ref[r * classes + c], 2);
    }
    agree += a == b;
  }
  EXPECT_GE(agree, int(rows) - 1);
  EXPECT_LE(std::sqrt(err / norm), 0.03);
}

TEST(QuantizeStatic, SavedModelLoadsBackAndComputesTheSame) {
  onnx_test::TempDir dir;
  const std::string path = dir.file("q.onnx");
  onnx::save_model(quantized().model, path);
  EXPECT_FALSE(onnx_test::fs::exists(dir.file(".q.onnx.tmp")));
  onnx::ModelProto back = onnx::load_model(path);
  EXPECT_EQ(histogram(back.graph), histogram(quantized().model.graph));
  EXPECT_EQ(back.opset_import, quantized().model.opset_import);
  DynTensor x = npy("quant_convnet_eval.npy");
  EXPECT_EQ(logits(back, x), logits(quantized().model, x));
}

TEST(QuantizeStatic, ExcludedNodesStayFloat) {
  onnx::ModelProto m = onnx::load_model(fixture("quant_convnet.onnx"));
  std::string first_conv;
  for (const onnx::NodeProto& n : m.graph.nodes)
    if (n.op_type == "Conv" && first_conv.empty()) first_conv = n.outputs[0];
  onnx::QuantizeReport r;
  onnx::ModelProto q = onnx::quantize_static(m, calibration(), {.exclude_nodes = {first_conv}}, &r);
  EXPECT_EQ(r.quantized_convs, 3);
  EXPECT_EQ(histogram(q.graph)["Conv"], 1);
  std::vector<float> got = logits(q, npy("quant_convnet_eval.npy"));
  std::vector<float> ref = npy("quant_convnet_f32.npy").to_vector<float>();
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) err += std::pow(got[i] - ref[i], 2), norm += std::pow(ref[i], 2);
  EXPECT_LE(std::sqrt(err / norm), 0.03);
}

// A graph after the runtime's load-time passes (Model::proto()): Conv+Relu are com.microsoft
// FusedConv nodes, which quantize like Conv+Relu; the conv fused with the residual Add (a Z
// input) stays f32 between a DequantizeLinear and a QuantizeLinear.
TEST(QuantizeStatic, QuantizesFusedConvNodes) {
  const onnx::ModelProto fused = onnx::Model::load(fixture("quant_convnet.onnx"), Device::cpu()).proto();
  ASSERT_EQ(histogram(fused.graph)["FusedConv"], 4);
  onnx::QuantizeReport r;
  onnx::ModelProto q = onnx::quantize_static(fused, calibration(), {}, &r);
  EXPECT_EQ(r.quantized_convs, 3);
  EXPECT_EQ(histogram(q.graph)["FusedConv"], 1);
  std::vector<float> got = logits(q, npy("quant_convnet_eval.npy"));
  std::vector<float> ref = npy("quant_convnet_f32.npy").to_vector<float>();
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) err += std::pow(got[i] - ref[i], 2), norm += std::pow(ref[i], 2);
  EXPECT_LE(std::sqrt(err / norm), 0.03);
}

// Percentile calibration narrows ranges (the conv outputs' scales shrink) and stays close to
// the f32 model; 100 is min-max exactly.
TEST(QuantizeStatic, PercentileCalibrationClipsTheRanges) {
  const onnx::ModelProto m = onnx::load_model(fixture("quant_convnet.onnx"));
  auto scales = [](const onnx::ModelProto& q) {
    std::vector<float> out;
    for (const onnx::NodeProto& n : q.graph.nodes)
      if (n.op_type == "QLinearConv") out.push_back(onnx::to_tensor_data(*q.graph.initializer(n.inputs[6])).to_vector<float>()[0]);
    return out;
  };
  auto with_percentile = [](double p) {
    onnx::QuantizeOptions o;
    o.percentile = p;
    return o;
  };
  const std::vector<float> minmax = scales(quantized().model);
  EXPECT_EQ(scales(onnx::quantize_static(m, calibration(), with_percentile(100))), minmax);
  onnx::ModelProto q = onnx::quantize_static(m, calibration(), with_percentile(99.9));
  const std::vector<float> clipped = scales(q);
  ASSERT_EQ(clipped.size(), minmax.size());
  for (size_t i = 0; i < clipped.size(); ++i) EXPECT_LT(clipped[i], minmax[i]) << "QLinearConv " << i;
  std::vector<float> got = logits(q, npy("quant_convnet_eval.npy"));
  std::vector<float> ref = npy("quant_convnet_f32.npy").to_vector<float>();
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) err += std::pow(got[i] - ref[i], 2), norm += std::pow(ref[i], 2);
  EXPECT_LE(std::sqrt(err / norm), 0.05);
  onnx_test::expect_plain_error([&] { onnx::quantize_static(m, calibration(), with_percentile(40)); },
                                {"quantize_static", "percentile 40"});
}

TEST(QuantizeStatic, RefusesBadCalibration) {
  const onnx::ModelProto m = onnx::load_model(fixture("quant_convnet.onnx"));
  onnx_test::expect_plain_error([&] { onnx::quantize_static(m, {}); }, {"quantize_static", "calibration set is empty"});
  onnx_test::expect_plain_error(
      [&] { onnx::quantize_static(m, {{{"x", DynTensor::zeros(Shape{2, 3, 8, 8}, DType::f32)}}}); },
      {"calibration sample 0", "input 'x' has shape [2, 3, 8, 8]"});
  onnx_test::expect_plain_error([&] { onnx::quantize_static(m, {{{"image", npy("quant_convnet_calib_0.npy")}}}); },
                                {"calibration sample 0", "missing input 'x'"});
}

TEST(QuantizeStatic, CommandLineWritesARunnableModel) {
  onnx_test::TempDir dir;
  onnx_test::fs::create_directory(dir.file("calib"));
  for (int k = 0; k < 4; ++k) {
    const std::string name = "quant_convnet_calib_" + std::to_string(k) + ".npy";
    onnx_test::fs::copy_file(fixture(name), dir.file("calib/" + name));
  }
  const std::string out = dir.file("q.onnx");
  const std::string cmd = std::string("'") + EMBER_ONNX_CLI + "' quantize '" + fixture("quant_convnet.onnx") + "' '" +
                          out + "' --calibration '" + dir.file("calib") + "' > '" + dir.file("log") + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  DynTensor x = npy("quant_convnet_eval.npy");
  EXPECT_EQ(logits(onnx::load_model(out), x), logits(quantized().model, x));
  const std::string empty = std::string("'") + EMBER_ONNX_CLI + "' quantize '" + fixture("quant_convnet.onnx") + "' '" +
                            out + "' --calibration '" + dir.file("nothing") + "' > /dev/null 2>&1";
  EXPECT_NE(std::system(empty.c_str()), 0);
}

}  // namespace
