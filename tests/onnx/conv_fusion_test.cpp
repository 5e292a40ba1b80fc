// fuse_conv_epilogues (Conv + Relu / Clip / Add into com.microsoft FusedConv at load) and the
// FusedConv handler: which nodes fuse, which must not, and that a fused model computes what the
// same ops compute one by one (conv_fused itself is checked against PyTorch by the conformance
// suite's conv_fused cases).
#include <gtest/gtest.h>

#include <ember/onnx/codegen.hpp>
#include <ember/onnx/runtime.hpp>
#include <ember/onnx/shape_inference.hpp>
#include <ember/tensor/ops.hpp>
#include <random>

using namespace ember;
using namespace ember::onnx;

namespace {

NodeProto node(const std::string& op, std::vector<std::string> in, std::string out,
               std::vector<AttributeProto> attrs = {}, std::string domain = "") {
  NodeProto n;
  n.op_type = op;
  n.domain = std::move(domain);
  n.name = op + "_" + out;
  n.inputs = std::move(in);
  n.outputs = {std::move(out)};
  n.attributes = std::move(attrs);
  return n;
}

std::vector<float> random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

TensorProto f32(const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
  TensorProto t;
  t.name = name;
  t.data_type = int32_t(DataType::float32);
  t.dims = std::move(dims);
  t.float_data = std::move(v);
  return t;
}

DynTensor tensor_of(const TensorProto& t) {
  return DynTensor::from_vector<float>(t.float_data, Shape(t.dims), Device::cpu());
}

ValueInfoProto value(const std::string& name) {
  ValueInfoProto v;
  v.name = name;
  return v;
}

// x [1, 4, 8, 8] through four 3x3 convs of 4 channels (padding 1):
//   r1 = Relu(Conv1(x));  y = Relu(Conv2(r1) + r1)        -> two FusedConvs (Relu; Add + Relu)
//   y2 = Clip(Conv3(x), -0.1, 0.3)                         -> a FusedConv (Clip)
//   c4 = Conv4(x), an output and read by Relu -> y4        -> not fused (c4 is a graph output)
//   y5 = Conv5(x) + r1 (no activation), read once          -> a FusedConv (Add only)
ModelProto residual_model() {
  ModelProto m;
  m.ir_version = 8;
  m.opset_import.push_back({"", 13});
  GraphProto& g = m.graph;
  const std::vector<AttributeProto> conv = {gen::attr_ints("pads", {1, 1, 1, 1}), gen::attr_ints("kernel_shape", {3, 3})};
  for (int k = 1; k <= 5; ++k) {
    g.initializers.push_back(f32("w" + std::to_string(k), {4, 4, 3, 3}, random(144, 10 + k)));
    g.initializers.push_back(f32("b" + std::to_string(k), {4}, random(4, 20 + k)));
  }
  g.initializers.push_back(f32("lo", {}, {-0.1f}));
  g.initializers.push_back(f32("hi", {}, {0.3f}));
  g.nodes = {node("Conv", {"x", "w1", "b1"}, "c1", conv),
             node("Relu", {"c1"}, "r1"),
             node("Conv", {"r1", "w2", "b2"}, "c2", conv),
             node("Add", {"c2", "r1"}, "s2"),
             node("Relu", {"s2"}, "y"),
             node("Conv", {"x", "w3", "b3"}, "c3", conv),
             node("Clip", {"c3", "lo", "hi"}, "y2"),
             node("Conv", {"x", "w4", "b4"}, "c4", conv),
             node("Relu", {"c4"}, "y4"),
             node("Conv", {"x", "w5", "b5"}, "c5", conv),
             node("Add", {"r1", "c5"}, "y5")};
  g.inputs = {value("x")};
  g.outputs = {value("y"), value("y2"), value("c4"), value("y4"), value("y5")};
  return m;
}

}  // namespace

TEST(OnnxConvFusion, FusesConvsWithTheirOnlyActivationOrAdd) {
  ModelProto m = residual_model();
  EXPECT_EQ(fuse_conv_epilogues(m.graph, 13), 4);
  std::vector<std::string> ops;
  for (const NodeProto& n : m.graph.nodes) ops.push_back(n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"com.microsoft::FusedConv", "com.microsoft::FusedConv",
                                           "com.microsoft::FusedConv", "Conv", "Relu", "com.microsoft::FusedConv"}));
  const NodeProto& res = m.graph.nodes[1];  // Conv2 + Add + Relu, at the Relu's place
  EXPECT_EQ(res.inputs, (std::vector<std::string>{"r1", "w2", "b2", "r1"}));
  EXPECT_EQ(res.outputs, std::vector<std::string>{"y"});
  ASSERT_NE(res.attribute("activation"), nullptr);
  EXPECT_EQ(res.attribute("activation")->s, "Relu");
  const NodeProto& clip = m.graph.nodes[2];
  ASSERT_NE(clip.attribute("activation_params"), nullptr);
  EXPECT_EQ(clip.attribute("activation_params")->floats, (std::vector<float>{-0.1f, 0.3f}));
  EXPECT_EQ(m.graph.nodes[5].attribute("activation"), nullptr);  // Add alone
  EXPECT_EQ(m.graph.nodes[5].inputs[3], "r1");
}

TEST(OnnxConvFusion, FusedModelComputesTheOpsOneByOne) {
  ModelProto m = residual_model();
  std::map<std::string, DynTensor> init;
  for (const TensorProto& t : m.graph.initializers) init[t.name] = tensor_of(t);
  Model model = Model::from_proto(m, Device::cpu());
  DynTensor x = DynTensor::from_vector<float>(random(256, 1), Shape{1, 4, 8, 8}, Device::cpu());
  auto got = model.run({{"x", x}});
  ConvOptions o;
  o.padding = {1};
  auto conv = [&](const DynTensor& in, int k) {
    return conv2d(in, init["w" + std::to_string(k)], init["b" + std::to_string(k)], o);
  };
  DynTensor r1 = relu(conv(x, 1));
  std::map<std::string, DynTensor> want = {{"y", relu(add(conv(r1, 2), r1))},
                                           {"y2", clamp(conv(x, 3), -0.1, 0.3)},
                                           {"c4", conv(x, 4)},
                                           {"y4", relu(conv(x, 4))},
                                           {"y5", add(r1, conv(x, 5))}};
  for (const auto& [name, w] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    std::vector<float> a = got.at(name).to_vector<float>(), b = w.to_vector<float>();
    ASSERT_EQ(a.size(), b.size()) << name;
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5) << name << " at " << i;
  }
}

TEST(OnnxConvFusion, FusedConvNodeAsOnnxRuntimeWritesIt) {
  // com.microsoft FusedConv from a file ONNX Runtime optimised: activations it fuses that the
  // kernel has no epilogue for run after the conv, and a Z that broadcasts is added after it.
  ModelProto m;
  m.ir_version = 8;
  m.opset_import.push_back({"", 13});
  m.opset_import.push_back({"com.microsoft", 1});
  m.graph.initializers = {f32("w", {4, 4, 1, 1}, random(16, 3)), f32("z", {1, 4, 1, 1}, random(4, 4))};
  m.graph.nodes = {node("FusedConv", {"x", "w", "", "z"}, "y",
                        {gen::attr_string("activation", "LeakyRelu"), gen::attr_floats("activation_params", {0.2f})},
                        "com.microsoft")};
  m.graph.inputs = {value("x")};
  m.graph.outputs = {value("y")};
  Model model = Model::from_proto(m, Device::cpu());
  DynTensor x = DynTensor::from_vector<float>(random(4 * 9, 5), Shape{1, 4, 3, 3}, Device::cpu());
  std::vector<float> got = model.run({{"x", x}}).at("y").to_vector<float>();
  std::vector<float> want =
      leaky_relu(add(conv2d(x, tensor_of(m.graph.initializers[0])), tensor_of(m.graph.initializers[1])), 0.2)
          .to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  // an activation it does not know is named
  m.graph.nodes[0].attributes[0].s = "Softsign";
  Model bad = Model::from_proto(m, Device::cpu());
  EXPECT_THROW(bad.run({{"x", x}}), NotImplemented);
}
