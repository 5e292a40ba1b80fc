// onnx::Model: the runtime fixtures of gen_fixtures.py (NumPy expected values), hand-built
// protos for opset-dependent semantics, and the errors for bad inputs and unknown ops.
#include <ember/onnx/codegen.hpp>
#include <ember/onnx/runtime.hpp>
#include <limits>
#include <ember/tensor/ops.hpp>

#include "onnx_test_util.hpp"

using namespace ember;
using namespace ember::onnx;
using namespace onnx_test;

namespace {

std::vector<float> floats(const json& j) {
  std::vector<float> v;
  for (const auto& x : j) v.push_back(x.get<float>());
  return v;
}

void expect_close(const DynTensor& t, const json& want, const std::vector<int64_t>& shape) {
  EXPECT_EQ(t.shape().dims(), shape);
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i].get<double>(), 1e-5) << "element " << i;
}

// A one-node model of the default domain at `opset`.
ModelProto one_node(const std::string& op, std::vector<std::string> inputs, int64_t opset,
                    std::vector<AttributeProto> attrs = {}, std::vector<TensorProto> inits = {}) {
  ModelProto m;
  m.ir_version = 8;
  m.opset_import.push_back({"", opset});
  NodeProto n;
  n.op_type = op;
  n.name = "n0";
  n.inputs = inputs;
  n.outputs = {"y"};
  n.attributes = std::move(attrs);
  m.graph.nodes.push_back(n);
  for (const auto& t : inits) m.graph.initializers.push_back(t);
  ValueInfoProto x;
  x.name = inputs[0];
  m.graph.inputs.push_back(x);
  ValueInfoProto y;
  y.name = "y";
  m.graph.outputs.push_back(y);
  return m;
}

TensorProto i64_tensor(const std::string& name, std::vector<int64_t> v) {
  TensorProto t;
  t.name = name;
  t.data_type = int32_t(DataType::int64);
  t.dims = {int64_t(v.size())};
  t.int64_data = std::move(v);
  return t;
}

AttributeProto ints_attr(const std::string& name, std::vector<int64_t> v) { return gen::attr_ints(name, std::move(v)); }

}  // namespace

TEST(OnnxRuntime, MlpMatchesNumpy) {
  const json& e = expected()["runtime_mlp"];
  Model m = Model::load(fixture("runtime_mlp.onnx"), Device::cpu());
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].name, "x");
  EXPECT_EQ(m.inputs()[0].dtype, DType::f32);
  ASSERT_TRUE(m.inputs()[0].shape.has_value());
  EXPECT_EQ((*m.inputs()[0].shape)[0].param, "batch");
  EXPECT_EQ(*(*m.inputs()[0].shape)[1].value, 3);
  ASSERT_EQ(m.outputs().size(), 2u);
  EXPECT_EQ(m.outputs()[1].dtype, DType::i64);
  EXPECT_TRUE(m.unsupported_ops().empty());
  EXPECT_EQ(m.opset(), 13);
  DynTensor x = DynTensor::from_vector<float>(floats(e["x"]), Shape{2, 3}, Device::cpu());
  auto out = m.run({{"x", x}});
  expect_close(out.at("y"), e["y"], {2, 2});
  EXPECT_EQ(out.at("xshape").to_vector<int64_t>(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(out.at("xshape").dtype(), DType::i64);
}

TEST(OnnxRuntime, ConvNetAtOpset11MatchesNumpy) {
  const json& e = expected()["runtime_conv"];
  Model m = Model::load(fixture("runtime_conv.onnx"), Device::cpu());
  EXPECT_EQ(m.opset(), 11);
  auto out = m.run({{"img", DynTensor::from_vector<float>(floats(e["img"]), Shape{1, 1, 3, 3}, Device::cpu())}});
  expect_close(out.at("out"), e["out"], {1, 3});
}

TEST(OnnxRuntime, UnsupportedOpIsNamed) {
  Model m = Model::load(fixture("runtime_unsupported.onnx"), Device::cpu());
  EXPECT_EQ(m.unsupported_ops(), std::vector<std::string>{"FancyOp"});
  DynTensor x = DynTensor::from_vector<float>({1, -2}, Shape{2}, Device::cpu());
  expect_not_implemented([&] { m.run({{"x", x}}); }, {"onnx: unsupported op 'FancyOp'", "node 'fancy'"});
  // run_node looks ops up in the same table.
  NodeProto fancy;
  fancy.op_type = "FancyOp";
  fancy.inputs = {"x"};
  fancy.outputs = {"y"};
  expect_not_implemented([&] { run_node(fancy, {x}, 17, Device::cpu()); }, {"onnx: unsupported op 'FancyOp'"});
}

TEST(OnnxRuntime, BadInputsAreNamed) {
  Model m = Model::load(fixture("runtime_mlp.onnx"), Device::cpu());
  expect_error([&] { m.run({}); }, {"missing input 'x'", "tensor(FLOAT)[batch,3]"});
  expect_error([&] { m.run({{"x", DynTensor::zeros(Shape{2, 3}, DType::i64, Device::cpu())}}); },
               {"input 'x'", "dtype i64", "f32"});
  expect_error([&] { m.run({{"x", DynTensor::zeros(Shape{2, 4}, DType::f32, Device::cpu())}}); },
               {"input 'x'", "shape", "[batch,3]"});
  expect_error([&] {
    m.run({{"x", DynTensor::zeros(Shape{2, 3}, DType::f32, Device::cpu())},
           {"z", DynTensor::zeros(Shape{1}, DType::f32, Device::cpu())}});
  }, {"'z' is not an input"});
  // The batch dim is symbolic: any size runs.
  auto out = m.run({{"x", DynTensor::zeros(Shape{5, 3}, DType::f32, Device::cpu())}});
  EXPECT_EQ(out.at("y").shape(), (Shape{5, 2}));
}

TEST(OnnxRuntime, AxesAttributeBeforeOpset13InputAfter) {
  DynTensor x = DynTensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{1, 2, 3}, Device::cpu());
  Model old = Model::from_proto(one_node("Squeeze", {"x"}, 11, {ints_attr("axes", {0})}), Device::cpu());
  EXPECT_EQ(old.run({{"x", x}}).at("y").shape(), (Shape{2, 3}));
  Model now = Model::from_proto(one_node("Squeeze", {"x", "axes"}, 13, {}, {i64_tensor("axes", {0})}), Device::cpu());
  EXPECT_EQ(now.run({{"x", x}}).at("y").shape(), (Shape{2, 3}));
  // ReduceSum: keepdims defaults to 1.
  Model rs = Model::from_proto(one_node("ReduceSum", {"x", "axes"}, 13, {}, {i64_tensor("axes", {-1})}), Device::cpu());
  DynTensor s = rs.run({{"x", x}}).at("y");
  EXPECT_EQ(s.shape(), (Shape{1, 2, 1}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{6, 15}));
}

TEST(OnnxRuntime, SoftmaxFlattensBeforeOpset13) {
  DynTensor x = DynTensor::from_vector<float>({0, 1, 2, 3}, Shape{2, 2}, Device::cpu());
  AttributeProto axis;
  axis.name = "axis";
  axis.type = AttributeType::int_;
  axis.i = 0;
  // opset 11, axis 0: one softmax over all four values; opset 13: per column.
  std::vector<float> old = Model::from_proto(one_node("Softmax", {"x"}, 11, {axis}), Device::cpu())
                               .run({{"x", x}}).at("y").to_vector<float>();
  std::vector<float> now = Model::from_proto(one_node("Softmax", {"x"}, 13, {axis}), Device::cpu())
                               .run({{"x", x}}).at("y").to_vector<float>();
  float total = old[0] + old[1] + old[2] + old[3];
  EXPECT_NEAR(total, 1.0f, 1e-6);
  EXPECT_NEAR(now[0] + now[2], 1.0f, 1e-6);
  EXPECT_NEAR(now[1] + now[3], 1.0f, 1e-6);
}

TEST(OnnxRuntime, UnsupportedAttributeCombinationSaysSo) {
  AttributeProto red;
  red.name = "reduction";
  red.type = AttributeType::string;
  red.s = "mul";
  ModelProto p = one_node("ScatterElements", {"x", "idx", "upd"}, 16, {red},
                          {i64_tensor("idx", {0}), [] {
                             TensorProto t;
                             t.name = "upd";
                             t.data_type = int32_t(DataType::float32);
                             t.dims = {1};
                             t.float_data = {2};
                             return t;
                           }()});
  Model m = Model::from_proto(p, Device::cpu());
  expect_not_implemented([&] { m.run({{"x", DynTensor::ones(Shape{2}, DType::f32, Device::cpu())}}); },
                         {"unsupported", "reduction 'mul'", "'ScatterElements'", "node 'n0'"});
  EXPECT_TRUE(has_op_handler("Conv"));
  EXPECT_FALSE(has_op_handler("FancyOp"));
}

TEST(OnnxRuntime, IfRunsTheBranchAndSeesOuterNames) {
  // y = cond ? x + x : -x, the branches reading x from the enclosing graph.
  auto branch = [](const std::string& op, std::vector<std::string> ins) {
    auto g = std::make_shared<GraphProto>();
    g->name = op + "_branch";
    NodeProto n;
    n.op_type = op;
    n.name = op + "_node";
    n.inputs = std::move(ins);
    n.outputs = {op + "_out"};
    g->nodes.push_back(n);
    ValueInfoProto o;
    o.name = op + "_out";
    g->outputs.push_back(o);
    return g;
  };
  AttributeProto then_a, else_a;
  then_a.name = "then_branch";
  then_a.type = AttributeType::graph;
  then_a.g = branch("Add", {"x", "x"});
  else_a.name = "else_branch";
  else_a.type = AttributeType::graph;
  else_a.g = branch("Neg", {"x"});
  ModelProto p = one_node("If", {"cond"}, 16, {then_a, else_a});
  ValueInfoProto x;
  x.name = "x";
  p.graph.inputs.push_back(x);
  Model m = Model::from_proto(p, Device::cpu());
  DynTensor xv = DynTensor::from_vector<float>({1, -2}, Shape{2}, Device::cpu());
  auto yes = m.run({{"cond", DynTensor::from_vector<bool>({true}, Shape{}, Device::cpu())}, {"x", xv}});
  EXPECT_EQ(yes.at("y").to_vector<float>(), (std::vector<float>{2, -4}));
  auto no = m.run({{"cond", DynTensor::from_vector<bool>({false}, Shape{}, Device::cpu())}, {"x", xv}});
  EXPECT_EQ(no.at("y").to_vector<float>(), (std::vector<float>{-1, 2}));
  // Ops inside subgraphs count for unsupported_ops().
  then_a.g = branch("FancyOp", {"x"});
  ModelProto q = one_node("If", {"cond"}, 16, {then_a, else_a});
  EXPECT_EQ(Model::from_proto(q, Device::cpu()).unsupported_ops(), std::vector<std::string>{"FancyOp"});
}

namespace {

NodeProto make_node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                    std::vector<AttributeProto> attrs = {}) {
  NodeProto n;
  n.op_type = op;
  n.name = op + "_" + outputs[0];
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attrs);
  return n;
}

AttributeProto int_attr(const std::string& name, int64_t v) {
  AttributeProto a;
  a.name = name;
  a.type = AttributeType::int_;
  a.i = v;
  return a;
}

ValueInfoProto typed(const std::string& name, TypeProto::Kind kind) {
  ValueInfoProto v;
  v.name = name;
  v.type.kind = kind;
  v.has_type = true;
  if (kind == TypeProto::Kind::tensor) v.type.elem_type = int32_t(DataType::float32);
  return v;
}

// A graph of `nodes` at opset 17 with the given inputs and outputs.
ModelProto graph_model(std::vector<NodeProto> nodes, std::vector<ValueInfoProto> inputs,
                       std::vector<ValueInfoProto> outputs, std::vector<TensorProto> inits = {}) {
  ModelProto m;
  m.ir_version = 8;
  m.opset_import.push_back({"", 17});
  m.graph.nodes = std::move(nodes);
  m.graph.inputs = std::move(inputs);
  m.graph.outputs = std::move(outputs);
  m.graph.initializers = std::move(inits);
  return m;
}

}  // namespace

// Expected values from NumPy: np.split(x, [1], axis=1), np.concatenate(..., axis=1),
// np.stack(list(x), axis=-1) for x = [[1, 2, 3], [4, 5, 6]].
TEST(OnnxRuntime, SequenceOpsSplitInsertConcat) {
  using K = TypeProto::Kind;
  ModelProto p = graph_model(
      {make_node("SplitToSequence", {"x", "split"}, {"parts"}, {int_attr("axis", 1)}),
       make_node("SequenceAt", {"parts", "zero"}, {"first"}),
       make_node("SequenceInsert", {"parts", "first", "minus_one"}, {"seq"}),  // before the last
       make_node("SequenceLength", {"seq"}, {"len"}),
       make_node("ConcatFromSequence", {"seq"}, {"cat"}, {int_attr("axis", 1)}),
       make_node("SplitToSequence", {"x"}, {"rows"}, {int_attr("axis", 0), int_attr("keepdims", 0)}),
       make_node("ConcatFromSequence", {"rows"}, {"stacked"}, {int_attr("axis", -1), int_attr("new_axis", 1)})},
      {typed("x", K::tensor)}, {typed("cat", K::tensor), typed("len", K::tensor), typed("stacked", K::tensor),
                                typed("seq", K::sequence)},
      {i64_tensor("split", {1, 2}), i64_tensor("zero", {0}), i64_tensor("minus_one", {-1})});
  Model m = Model::from_proto(p, Device::cpu());
  EXPECT_TRUE(m.unsupported_ops().empty());
  DynTensor x = DynTensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3}, Device::cpu());
  std::map<std::string, Value> out = m.run_values({{"x", x}});
  EXPECT_EQ(out.at("cat").tensor().shape(), (Shape{2, 4}));
  EXPECT_EQ(out.at("cat").tensor().to_vector<float>(), (std::vector<float>{1, 1, 2, 3, 4, 4, 5, 6}));
  EXPECT_EQ(out.at("len").tensor().to_vector<int64_t>(), (std::vector<int64_t>{3}));
  EXPECT_EQ(out.at("stacked").tensor().shape(), (Shape{3, 2}));
  EXPECT_EQ(out.at("stacked").tensor().to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  const Value& seq = out.at("seq");
  ASSERT_TRUE(seq.is_sequence());
  ASSERT_EQ(seq.elements().size(), 3u);
  EXPECT_EQ(seq.elements()[1].to_vector<float>(), (std::vector<float>{1, 4}));
  EXPECT_EQ(seq.elements()[2].shape(), (Shape{2, 2}));
  // run() returns tensors only and names the sequence output.
  expect_error([&] { m.run({{"x", x}}); }, {"graph output 'seq'", "sequence", "run_values"});
}

TEST(OnnxRuntime, SequenceInputsAndBadPositions) {
  using K = TypeProto::Kind;
  ModelProto p = graph_model(
      {make_node("SequenceAt", {"xs", "i"}, {"y"}), make_node("SequenceErase", {"xs"}, {"rest"})},
      {typed("xs", K::sequence), typed("i", K::tensor)}, {typed("y", K::tensor), typed("rest", K::sequence)});
  p.graph.inputs[1].type.elem_type = int32_t(DataType::int64);
  Model m = Model::from_proto(p, Device::cpu());
  auto t = [](std::vector<float> v) {
    return DynTensor::from_vector<float>(v, Shape{int64_t(v.size())}, Device::cpu());
  };
  auto index = [](int64_t i) { return DynTensor::from_vector<int64_t>({i}, Shape{}, Device::cpu()); };
  Value xs = Value::sequence({t({1}), t({2, 3}), t({4, 5, 6})});
  auto out = m.run_values({{"xs", xs}, {"i", index(-2)}});
  EXPECT_EQ(out.at("y").tensor().to_vector<float>(), (std::vector<float>{2, 3}));
  ASSERT_EQ(out.at("rest").elements().size(), 2u);  // SequenceErase drops the last by default
  EXPECT_EQ(out.at("rest").elements()[1].to_vector<float>(), (std::vector<float>{2, 3}));
  // Position 3 of a 3-element sequence: an Error naming the op and the range.
  expect_error([&] { m.run_values({{"xs", xs}, {"i", index(3)}}); },
               {"op 'SequenceAt'", "position 3 is out of range [-3, 2]"});
  // A tensor where the graph declares a sequence, and a sequence where an op wants a tensor.
  expect_error([&] { m.run_values({{"xs", t({1})}, {"i", index(0)}}); }, {"input 'xs'", "the model declares seq"});
  ModelProto q = graph_model({make_node("Relu", {"xs"}, {"y"})}, {typed("xs", K::sequence)}, {typed("y", K::tensor)});
  expect_error([&] { Model::from_proto(q, Device::cpu()).run_values({{"xs", xs}}); },
               {"op 'Relu'", "input 0 must be a tensor", "sequence of 3"});
  // Elements of one sequence share a dtype.
  EXPECT_THROW(Value::sequence({t({1}), index(1)}), Error);
}

TEST(OnnxRuntime, OptionalValues) {
  using K = TypeProto::Kind;
  ModelProto p = graph_model({make_node("OptionalHasElement", {"o"}, {"has"}),
                              make_node("Optional", {"x"}, {"wrapped"}),
                              make_node("OptionalGetElement", {"wrapped"}, {"unwrapped"})},
                             {typed("o", K::optional), typed("x", K::tensor)},
                             {typed("has", K::tensor), typed("unwrapped", K::tensor)});
  Model m = Model::from_proto(p, Device::cpu());
  DynTensor x = DynTensor::from_vector<float>({7, 8}, Shape{2}, Device::cpu());
  auto empty = m.run_values({{"o", Value::optional()}, {"x", x}});
  EXPECT_EQ(empty.at("has").tensor().to_vector<bool>(), (std::vector<bool>{false}));
  EXPECT_EQ(empty.at("unwrapped").tensor().to_vector<float>(), (std::vector<float>{7, 8}));
  // A plain tensor fed to an optional-typed input is a present optional.
  auto full = m.run_values({{"o", x}, {"x", x}});
  EXPECT_EQ(full.at("has").tensor().to_vector<bool>(), (std::vector<bool>{true}));
  ModelProto q = graph_model({make_node("OptionalGetElement", {"o"}, {"y"})}, {typed("o", K::optional)},
                             {typed("y", K::tensor)});
  expect_error([&] { Model::from_proto(q, Device::cpu()).run_values({{"o", Value::optional()}}); },
               {"op 'OptionalGetElement'", "empty"});
}

// SequenceProto / OptionalProto as the ONNX test data files store them (onnx.proto field
// numbers), and hostile variants.
TEST(OnnxRuntime, SequenceAndOptionalProtos) {
  auto tensor = [](float v) {
    Writer t;
    t.varint(1, 1).varint(2, 1).float32(4, v);  // dims [1], FLOAT, float_data
    return t;
  };
  Writer seq;
  seq.bytes(1, "xs").varint(2, 1).message(3, tensor(1.5f)).message(3, tensor(-2.f));
  SequenceProto s = parse_sequence_proto(as_bytes(seq.str()));
  EXPECT_EQ(s.name, "xs");
  ASSERT_EQ(s.tensor_values.size(), 2u);
  Value sv = to_value(s, Device::cpu());
  ASSERT_TRUE(sv.is_sequence());
  EXPECT_EQ(sv.elements()[1].to_vector<float>(), (std::vector<float>{-2.f}));

  Writer opt;
  opt.bytes(1, "o").varint(2, 3).message(5, seq);  // an optional holding the sequence
  OptionalProto o = parse_optional_proto(as_bytes(opt.str()));
  Value ov = to_value(o, Device::cpu());
  ASSERT_TRUE(ov.has_element());
  EXPECT_EQ(ov.element().elements().size(), 2u);
  OptionalProto none = parse_optional_proto(as_bytes(Writer().bytes(1, "o").varint(2, 0).str()));
  EXPECT_FALSE(to_value(none, Device::cpu()).has_element());

  // Maps are refused, naming the field and its byte offset; so are mismatched kinds and
  // truncated messages.
  Writer with_map;
  with_map.varint(2, 1).message(6, Writer());
  expect_not_implemented([&] { parse_sequence_proto(as_bytes(with_map.str())); },
                         {"onnx: sequence: field 6 (map_values) at byte 2", "unsupported"});
  expect_error([&] { parse_optional_proto(as_bytes(Writer().varint(2, 3).message(3, tensor(1)).str())); },
               {"onnx: optional", "elem_type is 3"});
  const std::string& bytes = seq.str();
  expect_error([&] { parse_sequence_proto(as_bytes(bytes.substr(0, bytes.size() - 2))); }, {"onnx: sequence"});
  // Nesting deeper than the reader's limit.
  Writer deep = Writer().varint(2, 1);
  for (int i = 0; i < kMaxMessageDepth + 2; ++i) deep = Writer().varint(2, 3).message(5, deep);
  expect_error([&] { parse_sequence_proto(as_bytes(deep.str())); }, {"nest deeper than"});
}

// What the node-test runner sorts by type: an invalid node or model is a plain Error (a failure),
// never a NotImplemented (which it would count as unsupported).
TEST(OnnxRuntime, InvalidModelsArePlainErrors) {
  AttributeProto axis;
  axis.name = "axis";
  axis.type = AttributeType::int_;
  axis.i = 5;
  Model bad_axis = Model::from_proto(one_node("Softmax", {"x"}, 13, {axis}), Device::cpu());
  expect_plain_error([&] { bad_axis.run({{"x", DynTensor::ones(Shape{2, 3}, DType::f32, Device::cpu())}}); },
                     {"'Softmax'", "axis 5 out of range for rank 2"});
  // An error from the tensor layer under an op handler (a shape mismatch) stays plain too.
  TensorProto four;
  four.name = "w";
  four.data_type = int32_t(DataType::float32);
  four.dims = {4};
  four.float_data = {1, 2, 3, 4};
  Model add = Model::from_proto(one_node("Add", {"x", "w"}, 14, {}, {four}), Device::cpu());
  expect_plain_error([&] { add.run({{"x", DynTensor::ones(Shape{2, 3}, DType::f32, Device::cpu())}}); },
                     {"onnx: op 'Add' (node 'n0')"});
  expect_plain_error([] { Model::load(fixture("does_not_exist.onnx"), Device::cpu()); }, {"does_not_exist.onnx"});
}

// Slice with a negative step down to the first element: the ONNX spec clamps an end below the
// first element to -1 for a negative step (NumPy's x[::-1]), so element 0 is included. No node
// test of ONNX 1.12 slices that far (test_slice_neg_steps ends at index 0, exclusive); the
// mutation list (tests/mutation, onnx-slice-negative-step-end) found the gap.
TEST(OnnxRuntime, SliceWithNegativeStepReachesTheFirstElement) {
  DynTensor x = DynTensor::from_vector<float>({1, 2, 3, 4, 5}, Shape{5}, Device::cpu());
  for (int64_t end : {std::numeric_limits<int64_t>::min(), int64_t(-6), int64_t(-100)}) {
    Model m = Model::from_proto(one_node("Slice", {"x", "starts", "ends", "axes", "steps"}, 13, {},
                                         {i64_tensor("starts", {-1}), i64_tensor("ends", {end}),
                                          i64_tensor("axes", {0}), i64_tensor("steps", {-1})}),
                                Device::cpu());
    EXPECT_EQ(m.run({{"x", x}}).at("y").to_vector<float>(), (std::vector<float>{5, 4, 3, 2, 1})) << "end " << end;
  }
  // two dims, step -2 on the second: rows 0..1, columns 4, 2, 0 (x[:, ::-2] in NumPy)
  DynTensor y = DynTensor::from_vector<float>({0, 1, 2, 3, 4, 10, 11, 12, 13, 14}, Shape{2, 5}, Device::cpu());
  Model m = Model::from_proto(one_node("Slice", {"x", "starts", "ends", "axes", "steps"}, 13, {},
                                       {i64_tensor("starts", {std::numeric_limits<int64_t>::max()}),
                                        i64_tensor("ends", {std::numeric_limits<int64_t>::min()}),
                                        i64_tensor("axes", {1}), i64_tensor("steps", {-2})}),
                              Device::cpu());
  DynTensor out = m.run({{"x", y}}).at("y");
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{4, 2, 0, 14, 12, 10}));
}

// Model::run drops each value after its last reader (its buffer goes back to the pool for the next
// node's output): values read again later, graph outputs that later nodes also read, and outer
// values that only an If branch reads must all survive until then; and a long chain of large
// values holds a few of them at once, not all.
namespace {
NodeProto unary(const std::string& op, const std::string& in, const std::string& out) {
  NodeProto n;
  n.op_type = op;
  n.name = out;
  n.inputs = {in};
  n.outputs = {out};
  return n;
}
NodeProto binary(const std::string& op, const std::string& a, const std::string& b, const std::string& out) {
  NodeProto n = unary(op, a, out);
  n.inputs.push_back(b);
  return n;
}
ValueInfoProto named_value(const std::string& name) {
  ValueInfoProto v;
  v.name = name;
  return v;
}
}  // namespace

TEST(OnnxRuntime, ValuesLiveUntilTheirLastReader) {
  ModelProto m;
  m.ir_version = 8;
  m.opset_import.push_back({"", 13});
  // a = relu(x); b = -a (an output, also read below); c = |b|; d = c + a; r = If(true) { a };
  // e = d + r: e = 3 relu(x), b = -relu(x)
  m.graph.nodes = {unary("Relu", "x", "a"), unary("Neg", "a", "b"), unary("Abs", "b", "c"),
                   binary("Add", "c", "a", "d")};
  auto branch = std::make_shared<GraphProto>();
  branch->name = "then";
  branch->nodes = {unary("Identity", "a", "r_then")};
  branch->outputs = {named_value("r_then")};
  NodeProto iff;
  iff.op_type = "If";
  iff.name = "if";
  iff.inputs = {"cond"};
  iff.outputs = {"r"};
  for (const char* name : {"then_branch", "else_branch"}) {
    AttributeProto a;
    a.name = name;
    a.type = AttributeType::graph;
    a.g = branch;
    iff.attributes.push_back(a);
  }
  m.graph.nodes.push_back(iff);
  m.graph.nodes.push_back(binary("Add", "d", "r", "e"));
  TensorProto cond;
  cond.name = "cond";
  cond.data_type = int32_t(DataType::boolean);
  cond.int32_data = {1};
  m.graph.initializers.push_back(cond);
  m.graph.inputs = {named_value("x")};
  m.graph.outputs = {named_value("e"), named_value("b")};
  const Model model = Model::from_proto(m, Device::cpu());
  const std::vector<float> xs = {-2, -0.5, 0, 0.25, 1, 3};
  for (int pass = 0; pass < 2; ++pass) {  // a second run gets the same values
    auto out = model.run({{"x", DynTensor::from_vector<float>(xs, {6})}});
    const std::vector<float> e = out.at("e").to_vector<float>(), b = out.at("b").to_vector<float>();
    ASSERT_EQ(e.size(), xs.size());
    ASSERT_EQ(b.size(), xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      EXPECT_FLOAT_EQ(e[i], 3 * std::max(xs[i], 0.0f)) << i;
      EXPECT_FLOAT_EQ(b[i], -std::max(xs[i], 0.0f)) << i;
    }
  }

  // 24 Negs in a chain over 4 MiB values: a few alive at once (input, output, the one being
  // dropped), not 24.
  ModelProto chain;
  chain.ir_version = 8;
  chain.opset_import.push_back({"", 13});
  std::string prev = "x";
  for (int i = 0; i < 24; ++i) {
    std::string next = "v";  // (not "v" + to_string: GCC 12's -Wrestrict false positive)
    next += std::to_string(i);
    chain.graph.nodes.push_back(unary("Neg", prev, next));
    prev = next;
  }
  chain.graph.inputs = {named_value("x")};
  chain.graph.outputs = {named_value(prev)};
  const Model chained = Model::from_proto(chain, Device::cpu());
  const int64_t n = int64_t(1) << 20, bytes = n * 4;
  DynTensor x = DynTensor::from_vector<float>(std::vector<float>(size_t(n), 1.5f), {n});
  Device dev = Device::cpu();
  const int64_t before = dev.memory_stats().in_use;
  dev.backend().reset_peak_memory();
  auto out = chained.run({{"x", x}});
  const int64_t peak = dev.memory_stats().peak;
  EXPECT_EQ(out.at(prev).to_vector<float>()[0], 1.5f);  // an even number of Negs
  EXPECT_LE(peak - before, 4 * bytes) << "peak " << peak << " before " << before;
}
