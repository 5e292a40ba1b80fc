// `ember-onnx generate --target cortex-m` (onnx::generate_cortex_m): what it fuses, how it plans
// the arena, what it reports and how it refuses. The generated code runs in QEMU against PyTorch
// in scripts/embedded-check.sh.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/onnx/codegen.hpp"

using namespace ember;
using namespace ember::onnx;

namespace {

ValueInfoProto float_value(const std::string& name, const std::vector<int64_t>& dims) {
  ValueInfoProto v;
  v.name = name;
  v.has_type = true;
  v.type.kind = TypeProto::Kind::tensor;
  v.type.elem_type = int32_t(DataType::float32);
  v.type.shape = std::vector<Dimension>();
  for (int64_t d : dims) {
    Dimension dim;
    if (d >= 0)
      dim.value = d;
    else
      dim.param = "batch";
    v.type.shape->push_back(dim);
  }
  return v;
}

TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims, float fill) {
  TensorProto t;
  t.name = name;
  t.data_type = int32_t(DataType::float32);
  t.dims = dims;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  t.float_data.assign(size_t(n), fill);
  return t;
}

ModelProto model_of(GraphProto g) {
  ModelProto m;
  m.ir_version = 8;
  m.opset_import.push_back({"", 13});
  m.graph = std::move(g);
  return m;
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ember_cortex_m_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

// x [1, 2, 6, 6] -> Conv 3x3 (4 filters, pad 1) -> BatchNormalization -> Relu -> MaxPool 2
// -> Flatten -> Gemm (36 -> 5) -> Softmax
ModelProto small_cnn() {
  GraphProto g;
  g.name = "small_cnn";
  g.inputs = {float_value("x", {1, 2, 6, 6})};
  g.outputs = {float_value("y", {1, 5})};
  g.initializers = {float_tensor("w", {4, 2, 3, 3}, 0.1f), float_tensor("b", {4}, 0.5f),
                    float_tensor("scale", {4}, 2.0f),      float_tensor("shift", {4}, 0.25f),
                    float_tensor("mean", {4}, 1.0f),       float_tensor("var", {4}, 4.0f),
                    float_tensor("fc_w", {5, 36}, 0.01f),  float_tensor("fc_b", {5}, 0.0f)};
  g.nodes = {
      gen::node("Conv", "conv", "", {"x", "w", "b"}, {"c"},
                {gen::attr_ints("kernel_shape", {3, 3}), gen::attr_ints("pads", {1, 1, 1, 1})}),
      gen::node("BatchNormalization", "bn", "", {"c", "scale", "shift", "mean", "var"}, {"n"}),
      gen::node("Relu", "relu", "", {"n"}, {"r"}),
      gen::node("MaxPool", "pool", "", {"r"}, {"p"},
                {gen::attr_ints("kernel_shape", {2, 2}), gen::attr_ints("strides", {2, 2})}),
      gen::node("Flatten", "flatten", "", {"p"}, {"f"}),
      gen::node("Gemm", "fc", "", {"f", "fc_w", "fc_b"}, {"z"}, {gen::attr_int("transB", 1)}),
      gen::node("Softmax", "softmax", "", {"z"}, {"y"}),
  };
  return model_of(std::move(g));
}

TEST(CortexMCodegen, FusesFoldsAndReports) {
  const std::string dir = temp_dir("fuse");
  const CortexMReport r = generate_cortex_m(small_cnn(), dir, "small_cnn");
  // Weights: the conv's (BatchNorm folded in), its bias, and the linear layer's.
  EXPECT_EQ(r.weight_bytes, 4 * (72 + 4 + 180 + 5));
  EXPECT_EQ(r.steps, 4);  // conv + bn + relu, pool, gemm, softmax (in place); flatten is free
  ASSERT_EQ(r.output_sizes, std::vector<int64_t>{5});
  EXPECT_EQ(r.input_sizes, std::vector<int64_t>{72});
  // Live at once at most: the conv's output (144 floats) and the pool's (36).
  EXPECT_EQ(r.arena_bytes, 4 * (144 + 36));
  EXPECT_GT(r.unplanned_bytes, r.arena_bytes);
  const std::string cpp = read(dir + "/small_cnn.cpp"), hpp = read(dir + "/small_cnn.hpp");
  EXPECT_NE(cpp.find("conv2d_f32(s, b0, w0, w1, b1, Clamp{0.0f, kInfinity})"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("(BatchNormalization, folded)"), std::string::npos);
  EXPECT_NE(cpp.find("softmax_f32(1, 5, b3, b3)"), std::string::npos) << cpp;
  // The folded weight: 0.1 * 2 / sqrt(4 + 1e-5); the bias: (0.5 - 1) * 2 / sqrt(4 + 1e-5) + 0.25.
  EXPECT_NE(cpp.find("0.0999998748f"), std::string::npos);
  EXPECT_NE(cpp.find("-0.249999374f"), std::string::npos);
  for (const char* hosted : {"new ", "std::", "throw", "malloc", "#include <vector>"})
    EXPECT_EQ(cpp.find(hosted), std::string::npos) << hosted;
  EXPECT_NE(hpp.find("ember::kernels::Status run(const float* input0, float* output0);"), std::string::npos);
  EXPECT_NE(read(dir + "/small_cnn.json").find("\"arena_bytes\": 720"), std::string::npos);
}

TEST(CortexMCodegen, ArenaSharesBytesBetweenDeadTensors) {
  // Three 1x1 convs in a row: each output lives until the next conv reads it, so two buffers
  // (ping-pong) hold all three.
  GraphProto g;
  g.inputs = {float_value("x", {1, 8, 4, 4})};
  g.outputs = {float_value("c3", {1, 8, 4, 4})};
  g.initializers = {float_tensor("w", {8, 8, 1, 1}, 0.5f)};
  g.nodes = {gen::node("Conv", "c1", "", {"x", "w"}, {"c1"}), gen::node("Conv", "c2", "", {"c1", "w"}, {"c2"}),
             gen::node("Conv", "c3", "", {"c2", "w"}, {"c3"})};
  const CortexMReport r = generate_cortex_m(model_of(std::move(g)), temp_dir("arena"), "chain");
  EXPECT_EQ(r.unplanned_bytes, 3 * 8 * 16 * 4);
  EXPECT_EQ(r.arena_bytes, 2 * 8 * 16 * 4);
}

TensorProto int_tensor(const std::string& name, DataType type, const std::vector<int64_t>& dims,
                       std::vector<int32_t> values) {
  TensorProto t;
  t.name = name;
  t.data_type = int32_t(type);
  t.dims = dims;
  t.int32_data = std::move(values);
  return t;
}

// x -> QuantizeLinear (u8) -> QLinearConv 1x1 (i8 weights, per-channel scales and zero points)
// -> DequantizeLinear -> y, as ember-onnx quantize writes a conv.
GraphProto quantized_conv(DataType activations) {
  GraphProto g;
  g.inputs = {float_value("x", {1, 2, 4, 4})};
  g.outputs = {float_value("y", {1, 3, 4, 4})};
  g.initializers = {float_tensor("s", {}, 0.05f),
                    int_tensor("zp", activations, {}, {activations == DataType::uint8 ? 128 : 0}),
                    int_tensor("w", DataType::int8, {3, 2, 1, 1}, {1, -2, 3, -4, 5, -6}),
                    float_tensor("ws", {3}, 0.01f),
                    int_tensor("wz", DataType::int8, {3}, {0, 1, -1}),
                    float_tensor("ys", {}, 0.1f),
                    int_tensor("yz", activations, {}, {activations == DataType::uint8 ? 10 : 0}),
                    int_tensor("b", DataType::int32, {3}, {100, -100, 7})};
  g.nodes = {gen::node("QuantizeLinear", "q", "", {"x", "s", "zp"}, {"xq"}),
             gen::node("QLinearConv", "qconv", "", {"xq", "s", "zp", "w", "ws", "wz", "ys", "yz", "b"}, {"yq"}),
             gen::node("DequantizeLinear", "dq", "", {"yq", "ys", "yz"}, {"y"})};
  return g;
}

TEST(CortexMCodegen, Int8ConvUsesByteBuffers) {
  const std::string dir = temp_dir("int8");
  const CortexMReport r = generate_cortex_m(model_of(quantized_conv(DataType::uint8)), dir, "qconv");
  EXPECT_EQ(r.steps, 3);
  // Weights: 6 i8, 3 i32 zero points, 3 i32 biases, 3 f32 multipliers.
  EXPECT_EQ(r.weight_bytes, 6 + 4 * 3 + 4 * 3 + 4 * 3);
  // The u8 input and output of the conv (32 and 48 bytes) and the f32 output (192 bytes) never
  // live at once with all of each other: at most 48 + 192 bytes.
  EXPECT_LE(r.arena_bytes, 48 + 192 + 16);
  const std::string cpp = read(dir + "/qconv.cpp");
  EXPECT_NE(cpp.find("quantize_u8(32, b0, 0.0500000007f, 128, b1);"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("qlinear_conv2d_u8(s, b1, 128, "), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("uint8_t* const b1 = reinterpret_cast<uint8_t*>(arena + "), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("const int8_t w"), std::string::npos);
  // multiplier (0.05 * 0.01) / 0.1 in f32
  EXPECT_NE(cpp.find("0.00500000035f"), std::string::npos) << cpp;
}

TEST(CortexMCodegen, Int8ActivationsAreRefused) {
  try {
    generate_cortex_m(model_of(quantized_conv(DataType::int8)), temp_dir("int8_signed"), "qconv");
    FAIL() << "no error";
  } catch (const NotImplemented& e) {
    EXPECT_NE(std::string(e.what()).find("node 'q' (QuantizeLinear)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("INT8"), std::string::npos) << e.what();
  }
}

TEST(CortexMCodegen, UnsupportedNodeNamesNodeAndOp) {
  GraphProto g;
  g.inputs = {float_value("x", {1, 4})};
  g.outputs = {float_value("y", {1, 4})};
  g.nodes = {gen::node("Erf", "my_erf", "", {"x"}, {"y"})};
  const std::string dir = temp_dir("unsupported");
  try {
    generate_cortex_m(model_of(std::move(g)), dir, "bad");
    FAIL() << "no error";
  } catch (const NotImplemented& e) {
    EXPECT_NE(std::string(e.what()).find("node 'my_erf' (Erf)"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/bad.cpp"));  // refused before writing
}

TEST(CortexMCodegen, RefusesSymbolicShapesAndBadNames) {
  GraphProto g;
  g.inputs = {float_value("x", {-1, 4})};
  g.outputs = {float_value("y", {-1, 4})};
  g.nodes = {gen::node("Relu", "relu", "", {"x"}, {"y"})};
  const ModelProto m = model_of(std::move(g));
  try {
    generate_cortex_m(m, temp_dir("symbolic"), "sym");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not static"), std::string::npos) << e.what();
  }
  EXPECT_THROW(generate_cortex_m(small_cnn(), temp_dir("name"), "2bad"), Error);
}

}  // namespace
