// onnx::generate (ember-onnx generate): the files it writes for runtime_mlp.onnx, their
// declarations, the weights file, the attribute / node builders the generated code calls,
// onnx::run_node, and the errors for what it cannot express.
#include <gtest/gtest.h>

#include <ember/core/error.hpp>
#include <ember/onnx/codegen.hpp>
#include <ember/onnx/model.hpp>
#include <ember/onnx/runtime.hpp>
#include <ember/store/safetensors.hpp>
#include <filesystem>
#include <fstream>
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

TEST(OnnxCodegen, WritesHeaderSourceAndWeights) {
  TempDir dir;
  onnx::ModelProto m = onnx::load_model(fixture("runtime_mlp.onnx"));
  onnx::generate(m, dir.file("out"), "mlp");
  ASSERT_TRUE(fs::exists(dir.file("out/mlp.hpp")));
  ASSERT_TRUE(fs::exists(dir.file("out/mlp.cpp")));
  ASSERT_TRUE(fs::exists(dir.file("out/mlp.safetensors")));
  std::string h = slurp(dir.file("out/mlp.hpp")), c = slurp(dir.file("out/mlp.cpp"));
  expect_has(h, {"#pragma once", "struct mlp {",
                 "static mlp load(const std::string& weights, ember::Device device = ember::Device::default_device());",
                 "std::vector<ember::DynTensor> forward(const ember::DynTensor& x) const;",
                 "std::vector<ember::DynTensor> run(const std::vector<ember::DynTensor>& inputs) const;",
                 "ember::DynTensor W;  // initializer 'W' FLOAT"});
  expect_has(c, {"#include \"mlp.hpp\"", "mlp mlp::load(const std::string& weights, ember::Device device) {",
                 "m.W = w.at(\"W\");", "// node 0 'matmul' (MatMul): x, W -> xw",
                 "ember::DynTensor xw = ember::matmul(x, W);", "ember::DynTensor h = ember::add(xw, b);",
                 "gen::node(\"Softmax\", \"softmax\", \"\"", "gen::attr_int(\"axis\", -1)", "return {y, xshape};"});
  // The weights are the initializers, by their ONNX names.
  store::TensorMap w = store::load_safetensors(dir.file("out/mlp.safetensors"), Device::cpu());
  for (const onnx::TensorProto& t : m.graph.initializers) {
    const DynTensor* got = w.find(t.name);
    ASSERT_NE(got, nullptr) << t.name;
    EXPECT_FALSE(got->into_data().approx_equal(onnx::to_tensor_data(t), 0, 0).has_value()) << t.name;
  }
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

}  // namespace
