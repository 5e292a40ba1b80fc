// onnx::infer_shapes and onnx::fold_constants: hand-built graphs with symbolic dims (expected
// sizes follow the ONNX operator definitions, the same formulas PyTorch documents for
// Conv2d/MaxPool2d), a folded Shape -> Reshape chain, and the real models of build/onnx-models
// (export_models.py): every declared graph output type must be re-inferred from the inputs
// alone, and the folded graph must compute the same outputs.
#include <cstdio>
#include <cstdlib>
#include <ember/onnx/codegen.hpp>
#include <ember/onnx/runtime.hpp>
#include <ember/onnx/shape_inference.hpp>

#include "onnx_test_util.hpp"

using namespace ember;
using namespace ember::onnx;
using namespace onnx_test;

namespace {

constexpr int32_t kF32 = int32_t(DataType::float32);
constexpr int32_t kI64 = int32_t(DataType::int64);

// A dims list: ints are static, strings symbolic, "?" unknown.
struct D {
  D(int64_t v) : dim(make(v)) {}      // NOLINT(google-explicit-constructor)
  D(const char* p) : dim(make(p)) {}  // NOLINT(google-explicit-constructor)
  static Dimension make(int64_t v) {
    Dimension d;
    d.value = v;
    return d;
  }
  static Dimension make(const std::string& p) {
    Dimension d;
    if (p != "?") d.param = p;
    return d;
  }
  Dimension dim;
};
std::vector<Dimension> dims(std::initializer_list<D> ds) {
  std::vector<Dimension> out;
  for (const D& d : ds) out.push_back(d.dim);
  return out;
}

ValueInfoProto tensor_value(const std::string& name, int32_t elem, std::initializer_list<D> shape) {
  ValueInfoProto v;
  v.name = name;
  v.has_type = true;
  v.type.kind = TypeProto::Kind::tensor;
  v.type.elem_type = elem;
  v.type.shape = dims(shape);
  return v;
}

TensorProto i64s(const std::string& name, std::vector<int64_t> v) {
  TensorProto t;
  t.name = name;
  t.data_type = kI64;
  t.dims = {int64_t(v.size())};
  t.int64_data = std::move(v);
  return t;
}
TensorProto i64_scalar(const std::string& name, int64_t v) {
  TensorProto t = i64s(name, {v});
  t.dims.clear();
  return t;
}

TensorProto f32s(const std::string& name, std::vector<int64_t> shape) {
  TensorProto t;
  t.name = name;
  t.data_type = kF32;
  t.dims = shape;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  for (int64_t i = 0; i < n; ++i) t.float_data.push_back(float(i % 7) * 0.25f - 0.5f);
  return t;
}

AttributeProto ints_attr(const std::string& name, std::vector<int64_t> v) { return gen::attr_ints(name, std::move(v)); }
AttributeProto int_attr(const std::string& name, int64_t v) {
  AttributeProto a;
  a.name = name;
  a.type = AttributeType::int_;
  a.i = v;
  return a;
}

NodeProto op_node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                  std::vector<AttributeProto> attrs = {}) {
  NodeProto n;
  n.op_type = op;
  n.name = op + "_" + out[0];
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attributes = std::move(attrs);
  return n;
}

std::string shape_of(const std::map<std::string, InferredType>& types, const std::string& name) {
  auto it = types.find(name);
  return it == types.end() ? "(none)" : it->second.str();
}

}  // namespace

TEST(OnnxShapeInference, ConvAndPoolKeepSymbolicBatch) {
  GraphProto g;
  g.inputs.push_back(tensor_value("x", kF32, {"N", 3, 32, 32}));
  g.initializers.push_back(f32s("w", {8, 3, 3, 3}));
  g.nodes.push_back(
      op_node("Conv", {"x", "w"}, {"c"}, {ints_attr("pads", {1, 1, 1, 1}), ints_attr("strides", {2, 2})}));
  g.nodes.push_back(op_node("Relu", {"c"}, {"r"}));
  // 16 -> (16 + 0 - 3) / 2 + 1 = 7 (floor), 8 with ceil_mode.
  g.nodes.push_back(
      op_node("MaxPool", {"r"}, {"p"}, {ints_attr("kernel_shape", {3, 3}), ints_attr("strides", {2, 2})}));
  g.nodes.push_back(
      op_node("MaxPool", {"r"}, {"pc"},
              {ints_attr("kernel_shape", {3, 3}), ints_attr("strides", {2, 2}), int_attr("ceil_mode", 1)}));
  AttributeProto same;
  same.name = "auto_pad";
  same.type = AttributeType::string;
  same.s = "SAME_UPPER";
  g.nodes.push_back(op_node("Conv", {"x", "w"}, {"s"}, {same, ints_attr("strides", {3, 3})}));
  g.nodes.push_back(
      op_node("ConvTranspose", {"c", "wt"}, {"t"},
              {ints_attr("strides", {2, 2}), ints_attr("pads", {1, 1, 1, 1}), ints_attr("output_padding", {1, 1})}));
  g.initializers.push_back(f32s("wt", {8, 4, 3, 3}));
  g.nodes.push_back(op_node("GlobalAveragePool", {"p"}, {"gap"}));
  g.nodes.push_back(op_node("Flatten", {"gap"}, {"f"}));
  auto t = infer_shapes(g, 13);
  EXPECT_EQ(shape_of(t, "c"), "FLOAT[N,8,16,16]");
  EXPECT_EQ(shape_of(t, "r"), "FLOAT[N,8,16,16]");
  EXPECT_EQ(shape_of(t, "p"), "FLOAT[N,8,7,7]");
  EXPECT_EQ(shape_of(t, "pc"), "FLOAT[N,8,8,8]");
  EXPECT_EQ(shape_of(t, "s"), "FLOAT[N,8,11,11]");
  // (16 - 1) * 2 - 2 + 3 + 1 = 32
  EXPECT_EQ(shape_of(t, "t"), "FLOAT[N,4,32,32]");
  EXPECT_EQ(shape_of(t, "gap"), "FLOAT[N,8,1,1]");
  EXPECT_EQ(shape_of(t, "f"), "FLOAT[N,8]");
}

TEST(OnnxShapeInference, MatMulGemmAndBroadcasting) {
  GraphProto g;
  g.inputs.push_back(tensor_value("a", kF32, {"B", 1, 4, 5}));
  g.inputs.push_back(tensor_value("b", kF32, {7, 5, 6}));
  g.inputs.push_back(tensor_value("v", kF32, {5}));
  g.inputs.push_back(tensor_value("p", kF32, {"N", 1, 4}));
  g.inputs.push_back(tensor_value("q", kF32, {3, 1}));
  g.inputs.push_back(tensor_value("r", kF32, {"N", "S"}));
  g.inputs.push_back(tensor_value("s", kF32, {"M", "S"}));
  g.inputs.push_back(tensor_value("m", kF32, {"N", 6}));
  g.initializers.push_back(f32s("w", {10, 6}));
  g.nodes.push_back(op_node("MatMul", {"a", "b"}, {"ab"}));
  g.nodes.push_back(op_node("MatMul", {"a", "v"}, {"av"}));
  g.nodes.push_back(op_node("Add", {"p", "q"}, {"pq"}));
  g.nodes.push_back(op_node("Mul", {"r", "s"}, {"rs"}));
  g.nodes.push_back(op_node("Greater", {"r", "r"}, {"rr"}));
  g.nodes.push_back(op_node("Where", {"rr", "r", "q"}, {"w3"}));
  g.nodes.push_back(op_node("Gemm", {"m", "w"}, {"gm"}, {int_attr("transB", 1)}));
  auto t = infer_shapes(g, 13);
  EXPECT_EQ(shape_of(t, "ab"), "FLOAT[B,7,4,6]");
  EXPECT_EQ(shape_of(t, "av"), "FLOAT[B,1,4]");
  EXPECT_EQ(shape_of(t, "pq"), "FLOAT[N,3,4]");
  EXPECT_EQ(shape_of(t, "rs"), "FLOAT[?,S]");  // N vs M: unknown; S vs S: S
  EXPECT_EQ(shape_of(t, "rr"), "BOOL[N,S]");
  EXPECT_EQ(shape_of(t, "w3"), "FLOAT[3,S]");  // 3 vs N: only 3 is a valid broadcast
  EXPECT_EQ(shape_of(t, "gm"), "FLOAT[N,10]");
}

TEST(OnnxShapeInference, ReshapeFromComputedShapeKeepsSymbols) {
  GraphProto g;
  g.inputs.push_back(tensor_value("x", kF32, {"N", "S", 8}));
  g.initializers.push_back(i64_scalar("zero", 0));
  g.initializers.push_back(i64_scalar("one", 1));
  g.initializers.push_back(i64s("two_four", {2, 4}));
  g.initializers.push_back(i64s("axes0", {0}));
  g.initializers.push_back(i64s("axes1", {1}));
  g.initializers.push_back(i64s("flat", {0, -1}));
  g.nodes.push_back(op_node("Shape", {"x"}, {"shape"}));
  g.nodes.push_back(op_node("Gather", {"shape", "zero"}, {"n"}));
  g.nodes.push_back(op_node("Gather", {"shape", "one"}, {"s"}));
  g.nodes.push_back(op_node("Unsqueeze", {"n", "axes0"}, {"n1"}));
  g.nodes.push_back(op_node("Unsqueeze", {"s", "axes0"}, {"s1"}));
  g.nodes.push_back(op_node("Concat", {"n1", "s1", "two_four"}, {"target"}, {int_attr("axis", 0)}));
  g.nodes.push_back(op_node("Reshape", {"x", "target"}, {"y"}));
  g.nodes.push_back(op_node("Reshape", {"x", "flat"}, {"z"}));
  g.nodes.push_back(op_node("Concat", {"y", "y"}, {"yy"}, {int_attr("axis", -1)}));
  g.nodes.push_back(op_node("Transpose", {"yy"}, {"yt"}, {ints_attr("perm", {1, 0, 3, 2})}));
  g.initializers.push_back(i64s("st", {1}));
  g.initializers.push_back(i64s("en", {-1}));
  g.initializers.push_back(i64s("ax", {3}));
  g.nodes.push_back(op_node("Slice", {"yt", "st", "en", "ax"}, {"sl2"}));
  g.nodes.push_back(op_node("ReduceMean", {"sl2"}, {"rm"}, {ints_attr("axes", {-1, 0}), int_attr("keepdims", 0)}));
  g.nodes.push_back(op_node("Squeeze", {"y", "axes1"}, {"sq"}));  // axes given: S must be 1 at run time
  g.nodes.push_back(op_node("Unsqueeze", {"x", "two_four"}, {"us"}));
  auto t = infer_shapes(g, 13);
  EXPECT_EQ(shape_of(t, "shape"), "INT64[3]");
  EXPECT_EQ(shape_of(t, "n"), "INT64[]");
  EXPECT_EQ(shape_of(t, "target"), "INT64[4]");
  EXPECT_EQ(shape_of(t, "y"), "FLOAT[N,S,2,4]");
  EXPECT_EQ(shape_of(t, "z"), "FLOAT[N,?]");  // S * 8 has no name
  EXPECT_EQ(shape_of(t, "yy"), "FLOAT[N,S,2,8]");
  EXPECT_EQ(shape_of(t, "yt"), "FLOAT[S,N,8,2]");
  EXPECT_EQ(shape_of(t, "sl2"), "FLOAT[S,N,8,0]");  // 1 .. -1 of 2 is empty
  EXPECT_EQ(shape_of(t, "rm"), "FLOAT[N,8]");
  EXPECT_EQ(shape_of(t, "sq"), "FLOAT[N,2,4]");
  EXPECT_EQ(shape_of(t, "us"), "FLOAT[N,S,1,8,1]");
}

TEST(OnnxShapeInference, AxesAsAttributeBeforeOpset13) {
  GraphProto g;
  g.inputs.push_back(tensor_value("x", kF32, {1, "T", 4}));
  g.nodes.push_back(op_node("Squeeze", {"x"}, {"sq"}, {ints_attr("axes", {0})}));
  g.nodes.push_back(op_node("ReduceSum", {"x"}, {"rs"}, {ints_attr("axes", {2})}));
  g.nodes.push_back(op_node("Split", {"x"}, {"a", "b"}, {int_attr("axis", 2), ints_attr("split", {1, 3})}));
  g.nodes.push_back(op_node("Split", {"x"}, {"c", "d"}, {int_attr("axis", -1)}));
  g.nodes.push_back(op_node("Cast", {"x"}, {"ci"}, {int_attr("to", kI64)}));
  g.nodes.push_back(op_node("ArgMax", {"x"}, {"am"}, {int_attr("axis", 1), int_attr("keepdims", 0)}));
  auto t = infer_shapes(g, 11);
  EXPECT_EQ(shape_of(t, "sq"), "FLOAT[T,4]");
  EXPECT_EQ(shape_of(t, "rs"), "FLOAT[1,T,1]");
  EXPECT_EQ(shape_of(t, "a"), "FLOAT[1,T,1]");
  EXPECT_EQ(shape_of(t, "b"), "FLOAT[1,T,3]");
  EXPECT_EQ(shape_of(t, "c"), "FLOAT[1,T,2]");
  EXPECT_EQ(shape_of(t, "ci"), "INT64[1,T,4]");
  EXPECT_EQ(shape_of(t, "am"), "INT64[1,4]");
}

TEST(OnnxShapeInference, UnknownOpsAndDeclaredTypes) {
  GraphProto g;
  g.inputs.push_back(tensor_value("x", kF32, {"N", 4}));
  g.nodes.push_back(op_node("FancyOp", {"x"}, {"f"}));
  g.nodes.push_back(op_node("Relu", {"f"}, {"r"}));
  g.nodes.push_back(op_node("Relu", {"x"}, {"y"}));
  g.value_info.push_back(tensor_value("r", kF32, {"N", 4}));  // declared: refines the unknown
  g.outputs.push_back(tensor_value("y", kF32, {2, 4}));       // N is 2 here: no conflict
  auto t = infer_shapes(g, 13);
  EXPECT_EQ(shape_of(t, "f"), "?[rank unknown]");
  EXPECT_EQ(shape_of(t, "r"), "FLOAT[N,4]");
  EXPECT_EQ(shape_of(t, "y"), "FLOAT[2,4]");
  // Static dims that disagree: an error naming the value and both types.
  g.outputs[0] = tensor_value("y", kF32, {"N", 5});
  expect_error([&] { infer_shapes(g, 13); }, {"'y'", "FLOAT[N,4]", "FLOAT[N,5]"});
  g.outputs[0] = tensor_value("y", kF32, {"N"});
  expect_error([&] { infer_shapes(g, 13); }, {"'y'", "FLOAT[N]"});
}

TEST(OnnxConstantFolding, ShapeChainFoldsToOneReshape) {
  ModelProto m;
  m.ir_version = 8;
  m.opset_import.push_back({"", 13});
  GraphProto& g = m.graph;
  g.inputs.push_back(tensor_value("x", kF32, {2, 3, 4}));
  g.initializers.push_back(i64_scalar("zero", 0));
  g.initializers.push_back(i64s("axes0", {0}));
  g.initializers.push_back(i64s("minus_one", {-1}));
  g.nodes.push_back(op_node("Shape", {"x"}, {"shape"}));
  g.nodes.push_back(op_node("Gather", {"shape", "zero"}, {"n"}));
  g.nodes.push_back(op_node("Unsqueeze", {"n", "axes0"}, {"n1"}));
  g.nodes.push_back(op_node("Concat", {"n1", "minus_one"}, {"target"}, {int_attr("axis", 0)}));
  g.nodes.push_back(op_node("Reshape", {"x", "target"}, {"y"}));
  g.outputs.push_back(tensor_value("y", kF32, {2, 12}));

  ModelProto folded = m;
  FoldStats s = fold_constants(folded.graph, 13, Device::cpu());
  EXPECT_EQ(s.nodes_before, 5);
  EXPECT_EQ(s.nodes_folded, 4);
  ASSERT_EQ(folded.graph.nodes.size(), 1u);
  EXPECT_EQ(folded.graph.nodes[0].op_type, "Reshape");
  const TensorProto* target = folded.graph.initializer("target");
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(to_tensor_data(*target).to_vector<int64_t>(), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(folded.graph.initializers.size(), 1u);  // zero, axes0, minus_one are dead
  EXPECT_EQ(shape_of(infer_shapes(folded.graph, 13), "y"), "FLOAT[2,12]");

  std::vector<float> xs(24);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(i) - 3.5f;
  DynTensor x = DynTensor::from_vector<float>(xs, Shape{2, 3, 4}, Device::cpu());
  DynTensor want = Model::from_proto(m, Device::cpu()).run({{"x", x}}).at("y");
  DynTensor got = Model::from_proto(folded, Device::cpu()).run({{"x", x}}).at("y");
  EXPECT_EQ(got.shape(), (Shape{2, 12}));
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
  EXPECT_EQ(got.to_vector<float>(), xs);
}

TEST(OnnxConstantFolding, SymbolicShapesAndRandomOpsStay) {
  GraphProto g;
  g.inputs.push_back(tensor_value("x", kF32, {"N", 3}));
  g.initializers.push_back(f32s("w", {3, 3}));
  g.initializers.push_back(i64s("perm_shape", {3, 3}));
  g.nodes.push_back(op_node("Shape", {"x"}, {"shape"}));   // N is symbolic: stays
  g.nodes.push_back(op_node("Transpose", {"w"}, {"wt"}));  // folds
  g.nodes.push_back(op_node("RandomNormalLike", {"wt"}, {"noise"}));
  g.nodes.push_back(op_node("Identity", {"wt"}, {"wt_alias"}));  // an alias: readers read wt
  g.nodes.push_back(op_node("MatMul", {"x", "wt_alias"}, {"y"}));
  g.outputs.push_back(tensor_value("y", kF32, {"N", 3}));
  g.outputs.push_back(tensor_value("noise", kF32, {3, 3}));
  g.outputs.push_back(tensor_value("shape", kI64, {2}));
  FoldStats s = fold_constants(g, 13, Device::cpu());
  EXPECT_EQ(s.nodes_folded, 2);
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].op_type, "Shape");
  EXPECT_EQ(g.nodes[1].op_type, "RandomNormalLike");
  EXPECT_EQ(g.nodes[2].inputs, (std::vector<std::string>{"x", "wt"}));
  EXPECT_EQ(g.initializer("wt_alias"), nullptr);
  EXPECT_NE(g.initializer("wt"), nullptr);
  EXPECT_EQ(g.initializer("w"), nullptr);
  EXPECT_EQ(g.initializer("perm_shape"), nullptr);
}

// ---- real models -------------------------------------------------------------------------

namespace {

std::string models_dir() {
  if (const char* env = std::getenv("EMBER_ONNX_MODELS_DIR"); env && *env) return env;
  return std::string(EMBER_ONNX_TEST_DIR) + "/../../build/onnx-models";
}

void check_model(const std::string& name) {
  const std::string path = models_dir() + "/" + name + ".onnx";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is missing (tests/onnx/models/export_models.py DIR)";
  ModelProto m = load_model(path);
  const int64_t opset = m.opset("");

  // Inference from the inputs alone: forget every declared intermediate and output type.
  GraphProto bare = m.graph;
  bare.value_info.clear();
  for (ValueInfoProto& o : bare.outputs) o.has_type = false, o.type = {};
  const auto types = infer_shapes(bare, opset, m.base_dir);
  for (const ValueInfoProto& o : m.graph.outputs) {
    InferredType declared{o.type.elem_type, o.type.shape};
    EXPECT_EQ(shape_of(types, o.name), declared.str()) << name << ": output " << o.name;
  }
  EXPECT_NO_THROW(infer_shapes(m.graph, opset, m.base_dir)) << name << ": declared types conflict";

  ModelProto folded = m;
  const FoldStats s = fold_constants(folded.graph, opset, Device::cpu(), m.base_dir);
  std::printf(
      "%s: outputs %s; constant folding: %lld of %lld nodes fold (%lld passes), %lld initializers "
      "added, %lld removed\n",
      name.c_str(), shape_of(types, m.graph.outputs[0].name).c_str(), (long long)s.nodes_folded,
      (long long)s.nodes_before, (long long)s.passes, (long long)s.initializers_added,
      (long long)s.initializers_removed);

  Model original = Model::from_proto(m, Device::cpu());
  const Model simplified = Model::from_proto(folded, Device::cpu());
  std::map<std::string, DynTensor> inputs;
  for (const ValueInfo& in : original.inputs()) {
    std::vector<int64_t> shape;
    for (const Dimension& d : *in.shape) shape.push_back(d.value ? *d.value : 2);  // symbolic dims: 2
    Shape sh(shape);
    std::vector<float> xs(size_t(sh.numel()));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = float((i * 37) % 101) / 50.0f - 1.0f;
    inputs[in.name] = DynTensor::from_vector<float>(xs, sh, Device::cpu());
  }
  const auto want = original.run(inputs);
  const auto same_outputs = [&](const Model& folded_model, const std::string& what) {
    const auto got = folded_model.run(inputs);
    for (const auto& [oname, w] : want) {
      ASSERT_TRUE(got.count(oname)) << what << ": " << oname;
      EXPECT_EQ(got.at(oname).shape(), w.shape()) << what << ": " << oname;
      const std::vector<float> a = got.at(oname).to_vector<float>(), b = w.to_vector<float>();
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5f + 1e-5f * std::abs(b[i])) << what << " " << i;
    }
  };
  same_outputs(simplified, name);

  // With the symbolic input dims fixed, every Shape folds and what depends on it too: the
  // inferred static shapes decide those values, so a wrong shape shows as a wrong output.
  ModelProto fixed_shapes = m;
  for (ValueInfoProto& in : fixed_shapes.graph.inputs)
    if (in.type.shape)
      for (Dimension& d : *in.type.shape)
        if (!d.value) d.value = inputs.at(in.name).shape()[int(&d - in.type.shape->data())], d.param.clear();
  const FoldStats fs = fold_constants(fixed_shapes.graph, opset, Device::cpu(), m.base_dir);
  std::printf("%s with static inputs: %lld of %lld nodes fold\n", name.c_str(), (long long)fs.nodes_folded,
              (long long)fs.nodes_before);
  same_outputs(Model::from_proto(fixed_shapes, Device::cpu()), name + " (static inputs)");
}

}  // namespace

TEST(OnnxShapeInferenceModels, Resnet18) {
  check_model("resnet18_op13");
  check_model("resnet18_op17");
}
TEST(OnnxShapeInferenceModels, MobilenetV2) {
  check_model("mobilenet_v2_op13");
  check_model("mobilenet_v2_op17");
}
TEST(OnnxShapeInferenceModels, Squeezenet11) {
  check_model("squeezenet1_1_op13");
  check_model("squeezenet1_1_op17");
}
TEST(OnnxShapeInferenceModels, TransformerEncoder) {
  check_model("transformer_encoder_op13");
  check_model("transformer_encoder_op17");
}
TEST(OnnxShapeInferenceModels, SmallConvNet) {
  check_model("small_conv_net_op13");
  check_model("small_conv_net_op17");
}

// `ember-onnx info` appends the inferred output types (--values: every computed value) and the
// folding count.
TEST(OnnxShapeInference, CliInfoPrintsInferredTypes) {
  const std::string cmd = std::string(EMBER_ONNX_CLI) + " info '" + fixture("runtime_mlp.onnx") + "' --values 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << out;
  for (const char* want : {"inferred outputs:\n  y: FLOAT [batch, 2]\n  xshape: INT64 [2]\n", "inferred values:\n",
                           "  r3: FLOAT [batch, 2, 2]\n", "constant folding: 0 of 7 nodes fold\n"})
    EXPECT_NE(out.find(want), std::string::npos) << "missing '" << want << "' in:\n" << out;
}
