// onnx::generate (ember-onnx generate): the files it writes for runtime_mlp.onnx, their
// declarations, the weights file, the patterns it builds from nn layers and tensor ops (and the
// cases it leaves to run_node), the attribute / node builders the generated code calls,
// onnx::run_node, and the errors for what it cannot express.
#include <gtest/gtest.h>

#include <ember/core/error.hpp>
#include <ember/onnx/codegen.hpp>
#include <ember/onnx/model.hpp>
#include <ember/onnx/runtime.hpp>
#include <ember/store/safetensors.hpp>
#include <ember/tensor/ops.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "onnx_test_util.hpp"

namespace {

using namespace ember;
using namespace onnx_test;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void expect_has(const std::string& text, std::initializer_list<std::string> fragments) {
  for (const auto& frag : fragments) EXPECT_NE(text.find(frag), std::string::npos) << "missing: " << frag;
}

// A FLOAT initializer of the given dims filled with 0.5, 1.5, 2.5, ...
onnx::TensorProto f32_initializer(const std::string& name, std::vector<int64_t> dims) {
  onnx::TensorProto t;
  t.name = name;
  t.data_type = int32_t(onnx::DataType::float32);
  t.dims = std::move(dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.float_data.push_back(float(i) + 0.5f);
  return t;
}

onnx::ValueInfoProto f32_value(const std::string& name, const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto v;
  v.name = name;
  v.has_type = true;
  v.type.kind = onnx::TypeProto::Kind::tensor;
  v.type.elem_type = int32_t(onnx::DataType::float32);
  v.type.shape.emplace();
  for (int64_t d : dims) v.type.shape->push_back(onnx::Dimension{d, "", ""});
  return v;
}

// A one-node model over a FLOAT input x of `x_dims`, opset 13.
onnx::ModelProto one_node(onnx::NodeProto node, const std::vector<int64_t>& x_dims,
                          std::vector<onnx::TensorProto> inits) {
  onnx::ModelProto m;
  m.ir_version = 8;
  m.opset_import = {{"", 13}};
  m.graph.name = "g";
  m.graph.nodes = {std::move(node)};
  m.graph.initializers = std::move(inits);
  m.graph.inputs = {f32_value("x", x_dims)};
  m.graph.outputs = {f32_value("y", {})};
  m.graph.outputs[0].type.shape.reset();
  return m;
}

struct Generated {
  std::string h, c;
  store::TensorMap weights;
};

Generated generate(const onnx::ModelProto& m, const std::string& name) {
  TempDir dir;
  onnx::generate(m, dir.path(), name);
  return {slurp(dir.file(name + ".hpp")), slurp(dir.file(name + ".cpp")),
          store::load_safetensors(dir.file(name + ".safetensors"), Device::cpu())};
}

std::vector<float> values_of(const onnx::TensorProto& t) { return onnx::to_tensor_data(t).to_vector<float>(); }

TEST(OnnxCodegen, WritesHeaderSourceAndWeights) {
  TempDir dir;
  onnx::ModelProto m = onnx::load_model(fixture("runtime_mlp.onnx"));
  onnx::generate(m, dir.file("out"), "mlp");
  ASSERT_TRUE(fs::exists(dir.file("out/mlp.hpp")));
  ASSERT_TRUE(fs::exists(dir.file("out/mlp.cpp")));
  ASSERT_TRUE(fs::exists(dir.file("out/mlp.safetensors")));
  std::string h = slurp(dir.file("out/mlp.hpp")), c = slurp(dir.file("out/mlp.cpp"));
  // MatMul x W + Add b is an nn::Linear; Reshape (a 0 in its shape) and ReduceSum stay run_node.
  expect_has(h, {"#pragma once", "struct mlp {", "#include \"ember/nn/linear.hpp\"",
                 "static mlp load(const std::string& weights, ember::Device device = ember::Device::default_device());",
                 "std::vector<ember::DynTensor> forward(const ember::DynTensor& x) const;",
                 "std::vector<ember::DynTensor> run(const std::vector<ember::DynTensor>& inputs) const;",
                 "ember::nn::Linear linear;  // node 'matmul' (MatMul + Add)", "EMBER_MODULE(linear)",
                 "ember::DynTensor shape;  // initializer 'shape' INT64"});
  expect_has(c, {"#include \"mlp.hpp\"", "mlp mlp::load(const std::string& weights, ember::Device device) {",
                 "m.linear = nn::LinearConfig{.in_features = 3, .out_features = 4}.init(device);",
                 "m.shape = w.at(\"shape\");", "nn::load_state_dict(m, {w.begin(), w.end()}, {.strict = false});",
                 "// node 0 'matmul' (MatMul): x -> xw", "//   + node 1 'add' (Add): + b -> h",
                 "ember::DynTensor h = linear.forward(x);", "ember::DynTensor r = ember::relu(h);",
                 "gen::node(\"Softmax\", \"softmax\", \"\"", "gen::attr_int(\"axis\", -1)", "return {y, xshape};"});
  EXPECT_EQ(c.find("ember::matmul"), std::string::npos);
  EXPECT_EQ(c.find("m.W = "), std::string::npos);  // W and b live in the layer
  // The weights: the layer's parameters by their state_dict names (the weight as [out, in]), the
  // other initializers by their ONNX names.
  store::TensorMap w = store::load_safetensors(dir.file("out/mlp.safetensors"), Device::cpu());
  EXPECT_EQ(w.size(), 4u);
  const TensorData weight = onnx::to_tensor_data(*m.graph.initializer("W"));
  EXPECT_EQ(w.at("linear.weight").shape(), Shape({4, 3}));
  EXPECT_EQ(w.at("linear.weight").to_vector<float>(),
            transpose(DynTensor::from_data(weight, Device::cpu()), 0, 1).to_vector<float>());
  EXPECT_FALSE(
      w.at("linear.bias").into_data().approx_equal(onnx::to_tensor_data(*m.graph.initializer("b")), 0, 0).has_value());
  for (const char* name : {"shape", "axes"})
    EXPECT_FALSE(
        w.at(name).into_data().approx_equal(onnx::to_tensor_data(*m.graph.initializer(name)), 0, 0).has_value())
        << name;
}

TEST(OnnxCodegen, BuildersAndRunNode) {
  onnx::NodeProto n = onnx::gen::node("Transpose", "t", "", {"x"}, {"y"}, {onnx::gen::attr_ints("perm", {1, 0})});
  DynTensor x = DynTensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  std::vector<DynTensor> y = onnx::run_node(n, {x}, 13, Device::cpu());
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].shape(), Shape({3, 2}));
  EXPECT_EQ(y[0].to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  onnx::TensorProto t = onnx::gen::tensor(1, {2}, "0000803f00000040");  // 1.0f, 2.0f
  EXPECT_EQ(onnx::to_tensor_data(t).to_vector<float>(), (std::vector<float>{1, 2}));
  onnx::NodeProto k = onnx::gen::node("Constant", "", "", {}, {"c"}, {onnx::gen::attr_tensor("value", t)});
  EXPECT_EQ(onnx::run_node(k, {}, 13, Device::cpu())[0].to_vector<float>(), (std::vector<float>{1, 2}));
  expect_error([] { onnx::run_node(onnx::gen::node("NoSuchOp", "n1", "", {}, {"y"}), {}, 13, Device::cpu()); },
               {"unsupported op 'NoSuchOp'"});
}

TEST(OnnxCodegen, Errors) {
  TempDir dir;
  onnx::ModelProto m = onnx::load_model(fixture("runtime_mlp.onnx"));
  expect_error([&] { onnx::generate(m, dir.path(), "1abc"); }, {"not a C++ identifier"});
  expect_error([&] { onnx::generate(m, dir.path(), "struct"); }, {"reserved"});
  onnx::ModelProto g = m;
  onnx::AttributeProto a;
  a.name = "then_branch";
  a.type = onnx::AttributeType::graph;
  a.g = std::make_shared<onnx::GraphProto>();
  g.graph.nodes[0].attributes.push_back(a);
  expect_error([&] { onnx::generate(g, dir.path(), "m"); }, {"codegen: unsupported GRAPH attribute 'then_branch'"});
}

// Patterns (issue 7): Gemm / MatMul + Add as nn::Linear, Conv as nn::Conv2d, BatchNormalization
// as nn::BatchNorm2d, and direct tensor ops; anything not exactly equivalent stays run_node.
TEST(OnnxCodegen, GemmBecomesLinear) {
  onnx::NodeProto gemm = onnx::gen::node("Gemm", "/fc/Gemm", "", {"x", "fc.weight", "fc.bias"}, {"y"},
                                         {onnx::gen::attr_int("transB", 1), onnx::gen::attr_float("alpha", 1.0f)});
  onnx::ModelProto m = one_node(gemm, {2, 3}, {f32_initializer("fc.weight", {4, 3}), f32_initializer("fc.bias", {4})});
  Generated g = generate(m, "net");
  expect_has(g.h, {"#include \"ember/nn/linear.hpp\"", "ember::nn::Linear fc;  // node '/fc/Gemm' (Gemm)",
                   "EMBER_MODULE(fc)"});
  expect_has(g.c, {"m.fc = nn::LinearConfig{.in_features = 3, .out_features = 4}.init(device);",
                   "ember::DynTensor y = fc.forward(x);"});
  EXPECT_EQ(g.c.find("run_node"), std::string::npos);
  // transB = 1: the file holds the weight as it is, under the layer's parameter names.
  ASSERT_EQ(g.weights.size(), 2u);
  EXPECT_EQ(g.weights.at("fc.weight").to_vector<float>(), values_of(m.graph.initializers[0]));
  EXPECT_EQ(g.weights.at("fc.bias").to_vector<float>(), values_of(m.graph.initializers[1]));

  // transB = 0 ([in, out] weight, no bias): transposed into the layer's [out, in].
  onnx::ModelProto plain =
      one_node(onnx::gen::node("Gemm", "", "", {"x", "w"}, {"y"}), {2, 3}, {f32_initializer("w", {3, 4})});
  g = generate(plain, "net");
  expect_has(g.c, {"nn::LinearConfig{.in_features = 3, .out_features = 4, .bias = false}", "linear.forward(x)"});
  EXPECT_EQ(g.weights.at("linear.weight").shape(), Shape({4, 3}));
  EXPECT_EQ(g.weights.at("linear.weight").to_vector<float>(),
            transpose(DynTensor::from_data(onnx::to_tensor_data(plain.graph.initializers[0]), Device::cpu()), 0, 1)
                .to_vector<float>());

  // alpha != 1, transA, a 2-D bias or a weight fed at run time: not a Linear.
  const std::vector<std::function<void(onnx::ModelProto&)>> variants = {
      [](onnx::ModelProto& v) { v.graph.nodes[0].attributes[1].f = 0.5f; },
      [](onnx::ModelProto& v) { v.graph.nodes[0].attributes.push_back(onnx::gen::attr_int("transA", 1)); },
      [](onnx::ModelProto& v) {
        v.graph.initializers[1] = f32_initializer("fc.bias", {1, 4});
      },
      [](onnx::ModelProto& v) {
        v.graph.initializers.erase(v.graph.initializers.begin());
        v.graph.inputs.push_back(f32_value("fc.weight", {4, 3}));
      }};
  for (size_t i = 0; i < variants.size(); ++i) {
    onnx::ModelProto other = m;
    variants[i](other);
    g = generate(other, "net");
    EXPECT_EQ(g.h.find("nn::Linear"), std::string::npos) << "variant " << i;
    expect_has(g.c, {"gen::node(\"Gemm\", \"/fc/Gemm\""});
  }
}

TEST(OnnxCodegen, MatMulAddBecomesLinear) {
  onnx::ModelProto m = one_node(onnx::gen::node("MatMul", "/layers.0/linear1/MatMul", "", {"x", "W"}, {"xw"}),
                                {2, 5, 3}, {f32_initializer("W", {3, 4}), f32_initializer("bias", {4})});
  // The bias first, as PyTorch exports it; the weight through an Identity (shared weights).
  m.graph.nodes[0].inputs[1] = "W_shared";
  m.graph.nodes.insert(m.graph.nodes.begin(), onnx::gen::node("Identity", "", "", {"W"}, {"W_shared"}));
  m.graph.nodes.push_back(onnx::gen::node("Add", "/layers.0/linear1/Add", "", {"bias", "xw"}, {"y"}));
  Generated g = generate(m, "net");
  expect_has(g.h, {"ember::nn::Linear layers_0_linear1;  // node '/layers.0/linear1/MatMul' (MatMul + Add)"});
  expect_has(g.c, {"nn::LinearConfig{.in_features = 3, .out_features = 4}",
                   "//   + node 2 '/layers.0/linear1/Add' (Add): + bias -> y",
                   "ember::DynTensor y = layers_0_linear1.forward(x);",
                   "1 Identity / Constant node that only fed layer weights"});
  EXPECT_EQ(g.c.find("run_node"), std::string::npos);
  EXPECT_EQ(g.c.find("ember::add"), std::string::npos);
  ASSERT_EQ(g.weights.size(), 2u);  // the Identity and the initializers behind the layer are gone
  EXPECT_EQ(g.weights.at("layers_0_linear1.weight").shape(), Shape({4, 3}));
  EXPECT_EQ(g.weights.at("layers_0_linear1.bias").to_vector<float>(), values_of(m.graph.initializers[1]));

  // The MatMul's result also read elsewhere: MatMul and Add stay separate ops.
  onnx::ModelProto shared = m;
  shared.graph.outputs.push_back(f32_value("xw", {2, 5, 4}));
  g = generate(shared, "net");
  EXPECT_EQ(g.h.find("nn::Linear"), std::string::npos);
  expect_has(g.c, {"ember::DynTensor xw = ember::matmul(x, W_shared);", "ember::DynTensor y = ember::add(bias, xw);"});
}

TEST(OnnxCodegen, ConvBecomesConv2d) {
  onnx::NodeProto conv =
      onnx::gen::node("Conv", "/layer1/layer1.0/conv1/Conv", "", {"x", "w", "b"}, {"y"},
                      {onnx::gen::attr_ints("kernel_shape", {3, 3}), onnx::gen::attr_ints("pads", {1, 1, 1, 1}),
                       onnx::gen::attr_ints("strides", {2, 2}), onnx::gen::attr_int("group", 2)});
  onnx::ModelProto m = one_node(conv, {1, 4, 8, 8}, {f32_initializer("w", {6, 2, 3, 3}), f32_initializer("b", {6})});
  Generated g = generate(m, "net");
  expect_has(g.h, {"#include \"ember/nn/conv.hpp\"", "ember::nn::Conv2d layer1_0_conv1;"});
  expect_has(g.c, {"m.layer1_0_conv1 = nn::Conv2dConfig{.in_channels = 4, .out_channels = 6, .kernel_size = {3, 3}, "
                   ".stride = {2, 2}, .padding = {1, 1}, .groups = 2}.init(device);",
                   "ember::DynTensor y = layer1_0_conv1.forward(x);"});
  EXPECT_EQ(g.weights.at("layer1_0_conv1.weight").to_vector<float>(), values_of(m.graph.initializers[0]));
  EXPECT_EQ(g.weights.at("layer1_0_conv1.bias").to_vector<float>(), values_of(m.graph.initializers[1]));

  // Asymmetric pads (which nn::Conv2d cannot express): the runtime's handler.
  onnx::ModelProto asym = m;
  asym.graph.nodes[0].attributes[1] = onnx::gen::attr_ints("pads", {0, 0, 1, 1});
  g = generate(asym, "net");
  EXPECT_EQ(g.h.find("nn::Conv2d"), std::string::npos);
  expect_has(g.c,
             {"gen::node(\"Conv\", \"/layer1/layer1.0/conv1/Conv\"", "gen::attr_ints(\"pads\", {0, 0, 1, 1})",
              "ember::DynTensor y = onnx::run_node(net_nodes::node_0(), {x, w, b}, net_nodes::kOpset, device)[0];"});
  EXPECT_EQ(g.weights.size(), 2u);
  EXPECT_NE(g.weights.find("w"), nullptr);
}

TEST(OnnxCodegen, BatchNormalizationBecomesBatchNorm2d) {
  onnx::NodeProto bn =
      onnx::gen::node("BatchNormalization", "/bn1/BatchNormalization", "", {"x", "s", "b", "mean", "var"}, {"y"},
                      {onnx::gen::attr_float("epsilon", 1e-3f)});
  onnx::ModelProto m = one_node(bn, {2, 3, 4, 4},
                                {f32_initializer("s", {3}), f32_initializer("b", {3}), f32_initializer("mean", {3}),
                                 f32_initializer("var", {3})});
  Generated g = generate(m, "net");
  expect_has(g.h, {"#include \"ember/nn/norm.hpp\"", "ember::nn::BatchNorm2d bn1;"});
  expect_has(g.c, {"m.bn1 = nn::BatchNorm2dConfig{.num_features = 3, .eps = 0.001f}.init(device);",
                   "nn::set_training(m, false);", "ember::DynTensor y = bn1.forward(x);"});
  EXPECT_EQ(g.weights.at("bn1.running_var").to_vector<float>(), values_of(m.graph.initializers[3]));
  EXPECT_EQ(g.weights.at("bn1.num_batches_tracked").dtype(), DType::i64);
  // Unknown input rank: the runtime's handler.
  m.graph.inputs[0].type.shape.reset();
  g = generate(m, "net");
  EXPECT_EQ(g.h.find("BatchNorm"), std::string::npos);
}

TEST(OnnxCodegen, LayerNormalizationBecomesLayerNorm) {
  onnx::NodeProto ln = onnx::gen::node("LayerNormalization", "/layers.0/norm1/LayerNormalization", "",
                                       {"x", "layers.0.norm1.weight", "layers.0.norm1.bias"}, {"y"},
                                       {onnx::gen::attr_int("axis", -1), onnx::gen::attr_float("epsilon", 1e-5f)});
  onnx::ModelProto m = one_node(
      ln, {2, 5, 8}, {f32_initializer("layers.0.norm1.weight", {8}), f32_initializer("layers.0.norm1.bias", {8})});
  m.opset_import = {{"", 17}};
  Generated g = generate(m, "net");
  expect_has(g.h, {"ember::nn::LayerNorm layers_0_norm1;"});
  expect_has(g.c, {"m.layers_0_norm1 = nn::LayerNormConfig{.normalized_shape = {8}, .eps = 1e-05f}.init(device);",
                   "ember::DynTensor y = layers_0_norm1.forward(x);"});
  EXPECT_EQ(g.weights.at("layers_0_norm1.bias").to_vector<float>(), values_of(m.graph.initializers[1]));
  // Normalising over the last two axes: the runtime's handler.
  m.graph.nodes[0].attributes[0].i = -2;
  g = generate(m, "net");
  EXPECT_EQ(g.h.find("LayerNorm"), std::string::npos);
}

TEST(OnnxCodegen, DirectTensorOps) {
  // runtime_conv.onnx: Conv with asymmetric pads and Gemm with alpha 0.5 stay run_node; Clip
  // with constant bounds and MaxPool become tensor ops.
  onnx::ModelProto m = onnx::load_model(fixture("runtime_conv.onnx"));
  Generated g = generate(m, "convnet");
  EXPECT_EQ(g.h.find("ember::nn::"), std::string::npos);
  expect_has(g.c, {"gen::node(\"Conv\", \"conv\"", "gen::node(\"Gemm\", \"gemm\"",
                   "ember::DynTensor cl = ember::clamp(c, -0.5f, 1.5f);",
                   "ember::DynTensor p = ember::max_pool2d(cl, {.kernel_size = {3, 3}, .stride = {1, 1}});"});
  EXPECT_EQ(g.c.find("m.lo ="), std::string::npos);  // the bounds are inlined

  // Flatten, Softmax, Concat, a Reshape to a constant shape, Transpose and GlobalAveragePool.
  onnx::ModelProto ops;
  ops.ir_version = 8;
  ops.opset_import = {{"", 13}};
  ops.graph.inputs = {f32_value("x", {2, 3, 4, 4})};
  ops.graph.outputs = {f32_value("y", {2, 16, 3})};
  onnx::TensorProto shape;
  shape.name = "shape";
  shape.data_type = int32_t(onnx::DataType::int64);
  shape.dims = {3};
  shape.int64_data = {2, -1, 3};
  ops.graph.initializers = {shape};
  ops.graph.nodes = {onnx::gen::node("GlobalAveragePool", "", "", {"x"}, {"g"}),
                     onnx::gen::node("Flatten", "", "", {"g"}, {"f"}, {onnx::gen::attr_int("axis", 1)}),
                     onnx::gen::node("Softmax", "", "", {"f"}, {"s"}, {onnx::gen::attr_int("axis", -1)}),
                     onnx::gen::node("Transpose", "", "", {"x"}, {"t"}, {onnx::gen::attr_ints("perm", {0, 2, 3, 1})}),
                     onnx::gen::node("Concat", "", "", {"t", "t"}, {"c"}, {onnx::gen::attr_int("axis", -1)}),
                     onnx::gen::node("Reshape", "", "", {"c", "shape"}, {"r"}),
                     onnx::gen::node("Mul", "", "", {"r", "s"}, {"y"})};
  g = generate(ops, "ops");
  expect_has(g.c,
             {"ember::DynTensor g = ember::mean(x, {2, 3}, true);", "ember::DynTensor f = ember::flatten(g, 1);",
              "ember::DynTensor s = ember::softmax(f, -1);", "ember::DynTensor t = ember::permute(x, {0, 2, 3, 1});",
              "ember::DynTensor c = ember::cat({t, t}, 3);", "ember::DynTensor r = ember::reshape(c, {2, -1, 3});"});
  EXPECT_EQ(g.c.find("run_node"), std::string::npos);
  EXPECT_TRUE(g.weights.empty());
  // A Flatten to axis 2 and a Reshape that copies a dim (0): the runtime's handlers.
  ops.graph.nodes[1].attributes[0].i = 2;
  ops.graph.initializers[0].int64_data = {0, -1, 3};
  g = generate(ops, "ops");
  expect_has(g.c, {"gen::node(\"Flatten\"", "gen::node(\"Reshape\""});
}

// PyTorch's scoped names read as the module path: members and values alike.
TEST(OnnxCodegen, ReadableNames) {
  onnx::ModelProto m =
      one_node(onnx::gen::node("Conv", "/layer2/layer2.0/downsample/downsample.0/Conv", "", {"x", "onnx::Conv_214"},
                               {"/layer2/layer2.0/downsample/downsample.0/Conv_output_0"}),
               {1, 2, 4, 4}, {f32_initializer("onnx::Conv_214", {2, 2, 1, 1})});
  m.graph.nodes.push_back(onnx::gen::node("Relu", "/layer2/layer2.0/relu_1/Relu", "",
                                          {"/layer2/layer2.0/downsample/downsample.0/Conv_output_0"}, {"y"}));
  Generated g = generate(m, "net");
  expect_has(g.h, {"ember::nn::Conv2d layer2_0_downsample_0;"});
  // the Relu runs in the conv's kernel (fuse_conv_epilogues)
  expect_has(g.c, {"ember::DynTensor y = layer2_0_downsample_0.forward(x, ember::ConvEpilogue{std::nullopt, 0.0, "
                   "std::nullopt});"});
  EXPECT_EQ(g.c.find("ember::relu("), std::string::npos);
  EXPECT_NE(g.weights.find("layer2_0_downsample_0.weight"), nullptr);
}

}  // namespace
