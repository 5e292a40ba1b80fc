// The fixtures written by gen_fixtures.py (python3-onnx) read back as expected.json says.
#include "onnx_test_util.hpp"

using namespace ember;
using namespace ember::onnx;
using namespace onnx_test;

namespace {

// Compares a tensor with its summary from expected.json (name, type, dims, storage, values).
void expect_tensor(const TensorProto& t, const json& e, const std::string& base_dir = "") {
  SCOPED_TRACE("tensor " + t.name);
  EXPECT_EQ(t.name, e["name"].get<std::string>());
  EXPECT_EQ(t.data_type, e["data_type"].get<int32_t>());
  EXPECT_EQ(t.dims, e["dims"].get<std::vector<int64_t>>());
  const std::string storage = e["storage"];
  EXPECT_EQ(t.raw_data.has_value(), storage == "raw");
  EXPECT_EQ(t.external, storage == "external");
  if (e["values"].is_null()) {
    expect_error([&] { to_tensor_data(t, base_dir); }, {"unsupported dtype", data_type_name(t.data_type), t.name});
    return;
  }
  TensorData d = to_tensor_data(t, base_dir);
  EXPECT_EQ(d.dtype(), *to_dtype(t.data_type));
  EXPECT_EQ(d.shape().dims(), t.dims);
  const json& values = e["values"];
  ASSERT_EQ(static_cast<int64_t>(values.size()), d.numel());
  if (d.dtype() == DType::i64) {
    auto got = d.as<int64_t>();
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(got[i], values[i].get<int64_t>()) << "element " << i;
  } else {
    std::vector<double> got = d.to_doubles();
    for (size_t i = 0; i < values.size(); ++i) {
      const double want = values[i].is_boolean() ? (values[i].get<bool>() ? 1.0 : 0.0) : values[i].get<double>();
      EXPECT_EQ(got[i], want) << "element " << i;
    }
  }
}

struct GraphSummary {
  std::string name;
  std::vector<std::pair<std::string, std::string>> nodes;  // (op_type, name)
  std::vector<std::string> outputs;
};
void expect_graph(const GraphProto& g, const json& e) {
  SCOPED_TRACE("graph " + g.name);
  EXPECT_EQ(g.name, e["name"].get<std::string>());
  ASSERT_EQ(g.nodes.size(), e["nodes"].size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    EXPECT_EQ(g.nodes[i].op_type, e["nodes"][i][0].get<std::string>());
    EXPECT_EQ(g.nodes[i].name, e["nodes"][i][1].get<std::string>());
  }
  ASSERT_EQ(g.outputs.size(), e["outputs"].size());
  for (size_t i = 0; i < g.outputs.size(); ++i) EXPECT_EQ(g.outputs[i].name, e["outputs"][i].get<std::string>());
}

}  // namespace

TEST(OnnxFixtures, ModelFields) {
  const json& e = expected()["attributes"];
  ModelProto m = load_model(fixture("attributes.onnx"));
  EXPECT_EQ(m.ir_version, e["ir_version"].get<int64_t>());
  EXPECT_EQ(m.producer_name, e["producer_name"].get<std::string>());
  EXPECT_EQ(m.producer_version, e["producer_version"].get<std::string>());
  EXPECT_EQ(m.domain, e["domain"].get<std::string>());
  EXPECT_EQ(m.model_version, e["model_version"].get<int64_t>());
  EXPECT_EQ(m.doc_string, e["doc_string"].get<std::string>());
  EXPECT_EQ(m.graph.name, e["graph_name"].get<std::string>());
  EXPECT_EQ(m.graph.doc_string, e["graph_doc"].get<std::string>());
  ASSERT_EQ(m.opset_import.size(), e["opsets"].size());
  for (size_t i = 0; i < m.opset_import.size(); ++i) {
    EXPECT_EQ(m.opset_import[i].domain, e["opsets"][i][0].get<std::string>());
    EXPECT_EQ(m.opset_import[i].version, e["opsets"][i][1].get<int64_t>());
  }
  EXPECT_EQ(m.opset(), 13);
  EXPECT_EQ(m.opset("ai.onnx"), 13);
  EXPECT_EQ(m.opset("test.ember"), 1);
  EXPECT_EQ(m.opset("com.microsoft"), 0);
  ASSERT_EQ(m.metadata.size(), e["metadata"].size());
  for (size_t i = 0; i < m.metadata.size(); ++i) {
    EXPECT_EQ(m.metadata[i].key, e["metadata"][i][0].get<std::string>());
    EXPECT_EQ(m.metadata[i].value, e["metadata"][i][1].get<std::string>());
  }
  ASSERT_EQ(m.functions.size(), 1u);
  EXPECT_EQ(m.functions[0].domain, "test.ember");
  EXPECT_EQ(m.functions[0].name, "MyFunc");
  EXPECT_EQ(m.base_dir, std::string(EMBER_ONNX_TEST_DIR) + "/fixtures");
}

TEST(OnnxFixtures, EveryAttributeType) {
  const json& e = expected()["attributes"];
  ModelProto m = load_model(fixture("attributes.onnx"));
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  const NodeProto& n = m.graph.nodes[0];
  EXPECT_EQ(n.name, e["node"]["name"].get<std::string>());
  EXPECT_EQ(n.op_type, e["node"]["op_type"].get<std::string>());
  EXPECT_EQ(n.domain, e["node"]["domain"].get<std::string>());
  EXPECT_EQ(n.doc_string, e["node"]["doc"].get<std::string>());
  EXPECT_EQ(n.inputs, e["node"]["inputs"].get<std::vector<std::string>>());
  EXPECT_EQ(n.outputs, e["node"]["outputs"].get<std::vector<std::string>>());
  ASSERT_EQ(n.attributes.size(), e["attrs"].size());
  EXPECT_EQ(n.attribute("no_such"), nullptr);

  std::set<std::string> types_seen;
  for (const auto& [name, want] : e["attrs"].items()) {
    SCOPED_TRACE("attribute " + name);
    const AttributeProto* a = n.attribute(name);
    ASSERT_NE(a, nullptr);
    const std::string type = want["type"];
    EXPECT_EQ(attribute_type_name(a->type), type);
    types_seen.insert(type);
    EXPECT_EQ(a->ref_attr_name, want.value("ref_attr_name", ""));
    if (want.contains("f")) { EXPECT_EQ(static_cast<double>(a->f), want["f"].get<double>()); }
    if (want.contains("i")) { EXPECT_EQ(a->i, want["i"].get<int64_t>()); }
    if (want.contains("s")) { EXPECT_EQ(a->s, want["s"].get<std::string>()); }
    if (want.contains("t")) { expect_tensor(a->t, want["t"]); }
    if (want.contains("g")) {
      ASSERT_NE(a->g, nullptr);
      expect_graph(*a->g, want["g"]);
    }
    if (want.contains("floats")) {
      ASSERT_EQ(a->floats.size(), want["floats"].size());
      for (size_t i = 0; i < a->floats.size(); ++i) EXPECT_EQ(double(a->floats[i]), want["floats"][i].get<double>());
    }
    if (want.contains("ints")) { EXPECT_EQ(a->ints, want["ints"].get<std::vector<int64_t>>()); }
    if (want.contains("strings")) { EXPECT_EQ(a->strings, want["strings"].get<std::vector<std::string>>()); }
    if (want.contains("tensors")) {
      ASSERT_EQ(a->tensors.size(), want["tensors"].size());
      for (size_t i = 0; i < a->tensors.size(); ++i) expect_tensor(a->tensors[i], want["tensors"][i]);
    }
    if (want.contains("graphs")) {
      ASSERT_EQ(a->graphs.size(), want["graphs"].size());
      for (size_t i = 0; i < a->graphs.size(); ++i) expect_graph(a->graphs[i], want["graphs"][i]);
    }
    if (want.contains("tp")) { EXPECT_EQ(type_string(a->tp), want["tp"].get<std::string>()); }
    if (want.contains("type_protos")) {
      ASSERT_EQ(a->type_protos.size(), want["type_protos"].size());
      for (size_t i = 0; i < a->type_protos.size(); ++i)
        EXPECT_EQ(type_string(a->type_protos[i]), want["type_protos"][i].get<std::string>());
    }
  }
  // Every non-sparse attribute type is covered.
  EXPECT_EQ(types_seen.size(), 12u);
}

TEST(OnnxFixtures, TensorsRawTypedAndEveryDType) {
  const json& e = expected()["tensors"];
  ModelProto m = load_model(fixture("tensors.onnx"));
  ASSERT_EQ(m.graph.initializers.size(), e.size());
  for (size_t i = 0; i < e.size(); ++i) expect_tensor(m.graph.initializers[i], e[i]);
  EXPECT_EQ(m.opset(), 17);
  // The typed fields of the types ember does not convert are kept as read.
  const json& fields = expected()["tensor_fields"];
  const TensorProto* u64 = m.graph.initializer("uint64");
  ASSERT_NE(u64, nullptr);
  EXPECT_EQ(u64->uint64_data, fields["uint64"]["uint64_data"].get<std::vector<uint64_t>>());
  EXPECT_EQ(m.graph.initializer("uint32")->uint64_data, fields["uint32"]["uint64_data"].get<std::vector<uint64_t>>());
  EXPECT_EQ(m.graph.initializer("uint16")->int32_data, fields["uint16"]["int32_data"].get<std::vector<int32_t>>());
  EXPECT_EQ(m.graph.initializer("string")->string_data, fields["string"]["string_data"].get<std::vector<std::string>>());
  EXPECT_EQ(m.graph.initializer("complex64")->float_data, fields["complex64"]["float_data"].get<std::vector<float>>());
  // f16 and bf16 come back with their own dtypes, bit for bit.
  EXPECT_EQ(to_tensor_data(*m.graph.initializer("float16_raw")).dtype(), DType::f16);
  EXPECT_EQ(to_tensor_data(*m.graph.initializer("bfloat16_typed")).dtype(), DType::bf16);
  EXPECT_EQ(to_tensor_data(*m.graph.initializer("bfloat16_raw")).to_doubles(),
            to_tensor_data(*m.graph.initializer("bfloat16_typed")).to_doubles());
  EXPECT_EQ(to_tensor_data(*m.graph.initializer("scalar")).shape(), Shape{});
}

TEST(OnnxFixtures, ExternalData) {
  const json& e = expected()["external"];
  ModelProto m = load_model(fixture("external.onnx"));
  ASSERT_EQ(m.graph.initializers.size(), e.size());
  for (size_t i = 0; i < e.size(); ++i) expect_tensor(m.graph.initializers[i], e[i], m.base_dir);
  EXPECT_EQ(m.graph.initializers[0].external_value("offset"), "16");
  // From memory without a directory: the reader says why it cannot read the file.
  ModelProto mem = parse_model(read_bytes(fixture("external.onnx")));
  expect_error([&] { to_tensor_data(mem.graph.initializers[0], mem.base_dir); },
               {"ext_a", "external_weights.bin", "without a base directory"});
  // ... and with one, it can.
  ModelProto mem2 = parse_model(read_bytes(fixture("external.onnx")), std::string(EMBER_ONNX_TEST_DIR) + "/fixtures");
  EXPECT_EQ(to_tensor_data(mem2.graph.initializers[1], mem2.base_dir).to_vector<int64_t>(),
            (std::vector<int64_t>{7, -8, 9}));
}

TEST(OnnxFixtures, HostileExternalData) {
  expect_error([] { load_model(fixture("external_traversal.onnx")); },
               {"external_traversal.onnx", "escape", "../gen_fixtures.py", "leaves the model directory"});
  expect_error([] { load_model(fixture("external_absolute.onnx")); }, {"/etc/passwd", "absolute"});
  ModelProto shrt = load_model(fixture("external_short.onnx"));
  expect_error([&] { to_tensor_data(shrt.graph.initializers[0], shrt.base_dir); },
               {"short", "72 bytes, too few for 400 bytes at offset 8"});
  ModelProto bad = load_model(fixture("external_bad_length.onnx"));
  expect_error([&] { to_tensor_data(bad.graph.initializers[0], bad.base_dir); },
               {"bad_length", "length 20", "need 24 bytes"});
  ModelProto missing = load_model(fixture("external_missing.onnx"));
  expect_error([&] { to_tensor_data(missing.graph.initializers[0], missing.base_dir); },
               {"missing", "no_such_file.bin", "cannot open"});
  // A symbolic link inside the model directory that points outside it is refused.
  TempDir dir;
  fs::copy_file(fixture("external.onnx"), dir.file("external.onnx"));
  fs::create_symlink(fixture("external_weights.bin"), dir.file("external_weights.bin"));
  ModelProto linked = load_model(dir.file("external.onnx"));
  expect_error([&] { to_tensor_data(linked.graph.initializers[0], linked.base_dir); },
               {"ext_a", "outside the model directory"});
  // A real copy is fine.
  fs::remove(dir.file("external_weights.bin"));
  fs::copy_file(fixture("external_weights.bin"), dir.file("external_weights.bin"));
  EXPECT_EQ(to_tensor_data(linked.graph.initializers[0], linked.base_dir).numel(), 6);
}

TEST(OnnxFixtures, SymbolicDimsAndValueTypes) {
  const json& e = expected()["symbolic"];
  ModelProto m = load_model(fixture("symbolic.onnx"));
  EXPECT_EQ(m.opset(), 18);
  ASSERT_EQ(m.graph.inputs.size(), e["inputs"].size());
  for (const ValueInfoProto& v : m.graph.inputs) {
    SCOPED_TRACE("input " + v.name);
    ASSERT_TRUE(e["inputs"].contains(v.name));
    const json& want = e["inputs"][v.name];
    EXPECT_TRUE(v.has_type);
    EXPECT_EQ(type_string(v.type), want["type"].get<std::string>());
    EXPECT_EQ(v.elem_type(), want["elem_type"].get<int32_t>());
    if (want["dims"].is_null()) {
      EXPECT_FALSE(v.shape().has_value());
      continue;
    }
    ASSERT_TRUE(v.shape().has_value());
    ASSERT_EQ(v.shape()->size(), want["dims"].size());
    for (size_t i = 0; i < want["dims"].size(); ++i) {
      const Dimension& d = (*v.shape())[i];
      const json& w = want["dims"][i];
      if (w.is_string()) {
        EXPECT_TRUE(d.is_symbolic());
        EXPECT_EQ(d.param, w.get<std::string>());
      } else if (w.is_null()) {
        EXPECT_TRUE(d.is_unknown());
      } else {
        ASSERT_TRUE(d.value.has_value());
        EXPECT_EQ(*d.value, w.get<int64_t>());
      }
    }
  }
  const ValueInfoProto& seq = m.graph.inputs[2];
  EXPECT_EQ(seq.type.kind, TypeProto::Kind::sequence);
  ASSERT_NE(seq.type.elem, nullptr);
  EXPECT_EQ(seq.type.elem->elem_type, int32_t(DataType::int64));
  EXPECT_EQ(m.graph.inputs[3].type.kind, TypeProto::Kind::optional);
  EXPECT_EQ(m.graph.inputs[4].type.kind, TypeProto::Kind::map);
  EXPECT_EQ(m.graph.inputs[4].type.key_type, int32_t(DataType::int64));
  ASSERT_EQ(m.graph.outputs.size(), 1u);
  EXPECT_EQ(type_string(m.graph.outputs[0].type), e["outputs"]["out"].get<std::string>());
  ASSERT_EQ(m.graph.value_info.size(), 1u);
  EXPECT_EQ(m.graph.value_info[0].name, "hidden");
  EXPECT_EQ(type_string(m.graph.value_info[0].type), e["value_info"]["hidden"].get<std::string>());
}

TEST(OnnxFixtures, NestedIfSubgraphs) {
  const json& e = expected()["if_nested"];
  ModelProto m = load_model(fixture("if_nested.onnx"));
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  const NodeProto& outer = m.graph.nodes[0];
  EXPECT_EQ(outer.op_type, "If");
  const AttributeProto* then_b = outer.attribute("then_branch");
  const AttributeProto* else_b = outer.attribute("else_branch");
  ASSERT_TRUE(then_b && else_b && then_b->g && else_b->g);
  EXPECT_EQ(then_b->type, AttributeType::graph);
  expect_graph(*then_b->g, e["then"]);
  expect_graph(*else_b->g, e["else"]);
  const NodeProto& inner = else_b->g->nodes[1];
  ASSERT_TRUE(inner.attribute("then_branch") && inner.attribute("then_branch")->g);
  expect_graph(*inner.attribute("then_branch")->g, e["inner_then"]);
  expect_graph(*inner.attribute("else_branch")->g, e["inner_else"]);
  // The subgraphs read outer-scope names ("x", "one", "cond"); they are not checked there.
  EXPECT_EQ(inner.attribute("then_branch")->g->nodes[0].inputs, (std::vector<std::string>{"x", "one"}));
  ASSERT_NE(m.graph.initializer("one"), nullptr);
  EXPECT_EQ(to_tensor_data(*m.graph.initializer("one")).to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(OnnxFixtures, LoadErrorsNameThePath) {
  expect_error([] { load_model(fixture("no_such.onnx")); }, {"no_such.onnx", "cannot open"});
  expect_error([] { load_model(EMBER_ONNX_TEST_DIR); }, {"not a regular file"});
  expect_error([] { load_model(fixture("expected.json")); }, {"expected.json", "onnx: model"});
}
