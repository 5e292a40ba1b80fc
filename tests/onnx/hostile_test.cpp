// Malformed, truncated and hostile inputs: each is an ember::Error with a clear message, never a
// crash; plus the wire-format corners (packed/unpacked, unknown fields of every wire type).
#include <random>

#include "onnx_test_util.hpp"
#include "proto_reader.hpp"

using namespace ember;
using namespace ember::onnx;
using namespace onnx_test;

namespace {

// Parses and converts every tensor; only success or an ember::Error are acceptable.
bool parses(std::span<const std::byte> bytes) {
  try {
    ModelProto m = parse_model(bytes);
    for (const auto& t : m.graph.initializers) {
      try {
        (void)to_tensor_data(t);
      } catch (const Error&) {
      }
    }
    return true;
  } catch (const Error&) {
    return false;
  }
}

Writer tensor_proto(const std::string& name, int32_t type, std::initializer_list<int64_t> dims) {
  Writer t;
  for (int64_t d : dims) t.varint(1, static_cast<uint64_t>(d));
  t.varint(2, static_cast<uint64_t>(type)).bytes(8, name);
  return t;
}

// A graph "g" with input x and one Relu node x -> y, output y.
Writer relu_graph() {
  return Writer().message(1, node("Relu", {"x"}, {"y"}, "relu")).bytes(2, "g").message(11, value_info("x")).message(
      12, value_info("y"));
}

}  // namespace

TEST(OnnxHostile, EveryTruncationIsAnErrorOrAnIntactPrefix) {
  for (const char* name : {"attributes.onnx", "tensors.onnx", "if_nested.onnx", "symbolic.onnx", "external.onnx"}) {
    SCOPED_TRACE(name);
    const std::vector<std::byte> full = read_bytes(fixture(name));
    const ModelProto whole = parse_model(full);
    size_t errors = 0;
    for (size_t n = 0; n < full.size(); ++n) {
      std::span<const std::byte> prefix(full.data(), n);
      try {
        ModelProto m = parse_model(prefix);
        // A cut between two top-level fields leaves a shorter but valid message: the graph
        // must then be complete.
        EXPECT_EQ(m.graph.nodes.size(), whole.graph.nodes.size()) << "prefix " << n;
        EXPECT_EQ(m.graph.initializers.size(), whole.graph.initializers.size()) << "prefix " << n;
      } catch (const Error& e) {
        ++errors;
        EXPECT_NE(std::string(e.what()).find("onnx: "), std::string::npos) << e.what();
      }
    }
    EXPECT_GT(errors, full.size() * 3 / 4);
  }
}

TEST(OnnxHostile, ByteMutationsNeverCrash) {
  const std::vector<std::byte> full = read_bytes(fixture("attributes.onnx"));
  size_t ok = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    for (uint8_t v : {uint8_t(0x00), uint8_t(0xff), uint8_t(0x80), uint8_t(0x0b), uint8_t(0x7f)}) {
      std::vector<std::byte> m = full;
      m[i] = std::byte{v};
      ok += parses(m);
    }
  }
  EXPECT_GT(ok, 0u);
}

TEST(OnnxHostile, RandomBytesNeverCrash) {
  std::mt19937 rng(7);
  for (int k = 0; k < 2000; ++k) {
    std::vector<std::byte> b(rng() % 200);
    for (auto& x : b) x = std::byte(rng() & 0xff);
    (void)parses(b);
  }
}

TEST(OnnxHostile, EmptyAndNotOnnx) {
  expect_plain_error([] { parse(""); }, {"empty input"});
  expect_plain_error([] { parse(Writer().varint(1, 8).str()); }, {"has no graph"});
  expect_plain_error([] { parse(std::string("\x00\x01", 2)); }, {"invalid field number 0"});
  expect_plain_error([] { parse(std::string("\x0e\x01", 2)); }, {"invalid wire type 6"});
  expect_plain_error([] { parse(Writer().tag(3, 4).str()); }, {"end-group without a start-group"});
}

TEST(OnnxHostile, WrongWireTypes) {
  expect_error([] { parse(Writer().bytes(1, "8").message(7, relu_graph()).str()); },
               {"model: field 1 (ir_version) at byte 0", "wrong wire type: expected varint, got length-delimited"});
  expect_error([] { parse(Writer().varint(7, 5).str()); }, {"field 7 (graph)", "expected length-delimited, got varint"});
  Writer bad_node = Writer().bytes(1, "x").varint(4, 3);  // op_type as a varint
  expect_error([&] { parse(model(Writer().message(1, bad_node))); },
               {"model.graph.node[0]: field 4 (op_type)", "wrong wire type"});
  Writer bad_attr = Writer().bytes(1, "alpha").varint(20, 1).varint(2, 5);  // f as a varint
  expect_error([&] { parse(model(Writer().message(1, node("Elu", {}, {"y"}).message(5, bad_attr)).message(12, value_info("y")))); },
               {"model.graph.node[0].attribute[0]: field 2 (f)", "expected 32-bit, got varint"});
  Writer bad_dims = tensor_proto("w", 1, {}).fixed64(1, 3);
  expect_error([&] { parse(model(Writer().message(5, bad_dims))); }, {"initializer[0]: field 1 (dims)", "got 64-bit"});
}

TEST(OnnxHostile, LengthsPastTheEnd) {
  std::string s = Writer().varint(1, 8).tag(7, 2).raw_varint(1000).raw("abc").str();
  expect_error([&] { parse(s); }, {"field 7 (graph) at byte 2", "length 1000 runs past the end of the message (3 bytes left)"});
  // A nested length that fits the file but not its enclosing message.
  Writer inner = Writer().tag(2, 2).raw_varint(50).raw("name");
  expect_error([&] { parse(model(inner)); }, {"model.graph: field 2 (name)", "runs past the end"});
  expect_error([] { parse(Writer().tag(1, 0).raw("\xff\xff").str()); }, {"truncated or malformed varint"});
  expect_error([] { parse(Writer().tag(1, 0).raw(std::string(11, '\xff')).str()); }, {"malformed varint"});
  expect_error([] { parse(Writer().tag(30, 5).raw("ab").str()); }, {"needs 4 bytes but 2 are left"});
  expect_error([] { parse(Writer().tag(30, 1).raw("abcdefg").str()); }, {"needs 8 bytes but 7 are left"});
  // A length near 2^64 must not wrap around.
  expect_error([] { parse(Writer().tag(7, 2).raw_varint(~0ull).raw("x").str()); }, {"runs past the end"});
}

TEST(OnnxHostile, DeepNesting) {
  // Graphs nested through If attributes, 200 deep.
  Writer g = relu_graph();
  for (int i = 0; i < 200; ++i) {
    Writer attr = Writer().bytes(1, "then_branch").varint(20, 5).message(6, g);
    g = Writer().message(1, node("If", {"c"}, {"y"}).message(5, attr)).message(11, value_info("c")).message(12, value_info("y"));
  }
  expect_error([&] { parse(model(g)); }, {"nest deeper than 96 levels"});
  // A sequence type nested 10000 deep.
  Writer t = Writer().message(1, Writer().varint(1, 1));
  for (int i = 0; i < 10000; ++i) t = Writer().message(4, Writer().message(1, t));
  expect_error([&] { parse(model(relu_graph().message(13, value_info("y").message(2, t)))); }, {"nest deeper"});
  // Unknown groups nested deeply.
  std::string groups;
  for (int i = 0; i < 500; ++i) groups += Writer().tag(40, 3).str();
  for (int i = 0; i < 500; ++i) groups += Writer().tag(40, 4).str();
  expect_error([&] { parse(groups + Writer().message(7, relu_graph()).str()); }, {"groups nest deeper"});
  // A graph 30 deep is fine.
  Writer ok = relu_graph();
  for (int i = 0; i < 30; ++i) {
    Writer attr = Writer().bytes(1, "then_branch").varint(20, 5).message(6, ok);
    ok = Writer().message(1, node("If", {"c"}, {"y"}).message(5, attr)).message(11, value_info("c")).message(12, value_info("y"));
  }
  EXPECT_NO_THROW(parse(model(ok)));
}

TEST(OnnxHostile, GraphValidation) {
  auto graph = [](std::initializer_list<Writer> nodes) {
    Writer g;
    for (const auto& n : nodes) g.message(1, n);
    return g.bytes(2, "main").message(11, value_info("x"));
  };
  // A cycle: a -> b -> a.
  expect_error([&] { parse(model(graph({node("Relu", {"b"}, {"a"}, "A"), node("Relu", {"a"}, {"b"}, "B")}))); },
               {"('main')", "has a cycle", "'A' (Relu)", "'B' (Relu)"});
  // A self-loop.
  expect_error([&] { parse(model(graph({node("Add", {"x", "s"}, {"s"}, "S")}))); }, {"has a cycle", "'S' (Add)"});
  // Acyclic but out of order.
  expect_error([&] { parse(model(graph({node("Relu", {"a"}, {"b"}, "B"), node("Relu", {"x"}, {"a"}, "A")}))); },
               {"input 'a' is used before node 1 'A' (Relu) produces it", "topologically sorted"});
  // A missing input.
  expect_error([&] { parse(model(graph({node("Add", {"x", "nowhere"}, {"y"}, "add")}))); },
               {"node 0 'add' (Add): input 'nowhere' is not a graph input, an initializer or an output of an earlier node"});
  // Omitted optional inputs ("") are fine.
  EXPECT_NO_THROW(parse(model(graph({node("Clip", {"x", "", ""}, {"y"})}).message(12, value_info("y")))));
  // Two producers of one name, or a node redefining an input.
  expect_error([&] { parse(model(graph({node("Relu", {"x"}, {"y"}, "r1"), node("Neg", {"x"}, {"y"}, "r2")}))); },
               {"node 1 'r2' (Neg): output 'y' is also produced by node 0 'r1' (Relu)"});
  expect_error([&] { parse(model(graph({node("Relu", {"x"}, {"x"}, "r")}))); }, {"redefines a graph input"});
  // Graph outputs must be produced.
  expect_error([&] { parse(model(graph({node("Relu", {"x"}, {"y"})}).message(12, value_info("z")))); },
               {"graph output 'z' is not produced"});
  // Duplicates.
  expect_error([&] { parse(model(graph({}).message(11, value_info("x")))); }, {"graph input 'x' is declared twice"});
  Writer w = tensor_proto("w", 1, {1}).float32(4, 1.0f);
  expect_error([&] { parse(model(graph({}).message(5, w).message(5, w))); }, {"initializer 'w' appears twice"});
  Writer attr = Writer().bytes(1, "alpha").varint(20, 1).float32(2, 1);
  expect_error([&] { parse(model(graph({node("Elu", {"x"}, {"y"}).message(5, attr).message(5, attr)}))); },
               {"attribute 'alpha' appears twice"});
  expect_error([&] { parse(model(graph({Writer().bytes(1, "x").bytes(2, "y")}))); }, {"has no op_type"});
  // In a subgraph, unknown names may come from the outer scope, but a cycle is still refused.
  Writer sub = Writer().message(1, node("Add", {"outer", "x"}, {"s"})).message(12, value_info("s"));
  Writer ok_attr = Writer().bytes(1, "body").varint(20, 5).message(6, sub);
  EXPECT_NO_THROW(parse(model(graph({node("Loop", {"x"}, {"y"}).message(5, ok_attr)}).message(12, value_info("y")))));
  Writer cyc = Writer().message(1, node("Relu", {"q"}, {"p"}, "P")).message(1, node("Relu", {"p"}, {"q"}, "Q"));
  Writer cyc_attr = Writer().bytes(1, "body").varint(20, 5).message(6, cyc);
  expect_error([&] { parse(model(graph({node("Loop", {"x"}, {"y"}).message(5, cyc_attr)}))); },
               {"attribute 'body'", "has a cycle"});
}

TEST(OnnxHostile, AbsurdTensors) {
  auto with_init = [](const Writer& t) { return model(Writer().message(5, t)); };
  expect_error([&] { parse(with_init(tensor_proto("big", 1, {1ll << 40, 1ll << 40}))); },
               {"tensor 'big'", "more elements than can be addressed"});
  expect_error([&] { parse(with_init(tensor_proto("neg", 1, {2, -3}))); }, {"tensor 'neg'", "negative dimension -3"});
  Writer deep = tensor_proto("rank", 1, {});
  for (int i = 0; i < 65; ++i) deep.varint(1, 1);
  expect_error([&] { parse(with_init(deep)); }, {"rank 65 exceeds the limit of 64"});
  // Zero dims excuse no overflow among the others (Shape::numel multiplies them all).
  expect_error([&] { parse(with_init(tensor_proto("z", 1, {0, 1ll << 62, 1ll << 62}))); }, {"more elements"});
  // Data that does not match the dims.
  ModelProto m = parse(with_init(tensor_proto("raw", 1, {2, 3}).bytes(9, std::string(20, '\0'))));
  expect_error([&] { to_tensor_data(m.graph.initializers[0]); }, {"tensor 'raw'", "raw_data has 20 bytes", "need 24"});
  m = parse(with_init(tensor_proto("few", 7, {4}).varint(7, 1)));
  expect_error([&] { to_tensor_data(m.graph.initializers[0]); }, {"int64_data has 1 values", "need 4"});
  m = parse(with_init(tensor_proto("none", 1, {4})));
  expect_error([&] { to_tensor_data(m.graph.initializers[0]); }, {"tensor 'none'", "has no data"});
  m = parse(with_init(tensor_proto("wrong_field", 1, {1}).varint(7, 1)));
  expect_error([&] { to_tensor_data(m.graph.initializers[0]); }, {"FLOAT data must be in float_data, not in int64_data"});
  m = parse(with_init(tensor_proto("both", 1, {1}).float32(4, 1).bytes(9, std::string(4, '\0'))));
  expect_error([&] { to_tensor_data(m.graph.initializers[0]); }, {"more than one place"});
  m = parse(with_init(tensor_proto("i8", 3, {1}).varint(5, 300)));
  expect_error([&] { to_tensor_data(m.graph.initializers[0]); }, {"int32_data[0] = 300 is out of range"});
  m = parse(with_init(tensor_proto("undef", 0, {1}).float32(4, 1)));
  expect_error([&] { to_tensor_data(m.graph.initializers[0]); }, {"unsupported dtype UNDEFINED"});
  m = parse(with_init(tensor_proto("seg", 1, {1}).float32(4, 1).message(3, Writer().varint(1, 0).varint(2, 1))));
  expect_error([&] { to_tensor_data(m.graph.initializers[0]); }, {"segmented tensors are not supported"});
  expect_error([&] { parse(with_init(tensor_proto("loc", 1, {1}).varint(14, 7))); }, {"unknown data location 7"});
  expect_error([&] { parse(with_init(tensor_proto("ext", 1, {1}).varint(14, 1))); }, {"tensor 'ext'", "no 'location'"});
  Writer entry = Writer().bytes(1, "location").bytes(2, "a/../../b.bin");
  expect_error([&] { parse(with_init(tensor_proto("ext", 1, {1}).varint(14, 1).message(13, entry))); },
               {"'a/../../b.bin' leaves the model directory"});
  Writer ok_entry = Writer().bytes(1, "location").bytes(2, "w.bin");
  Writer bad_offset = Writer().bytes(1, "offset").bytes(2, "12x");
  m = parse(with_init(tensor_proto("ext", 1, {1}).varint(14, 1).message(13, ok_entry).message(13, bad_offset)), "/tmp");
  expect_error([&] { to_tensor_data(m.graph.initializers[0], "/tmp"); }, {"'offset' is '12x', not a non-negative integer"});
}

TEST(OnnxHostile, UnsupportedParts) {
  Writer sparse = Writer().message(1, tensor_proto("v", 1, {1})).message(2, tensor_proto("i", 7, {1}));
  // Valid ONNX that ember does not read: NotImplemented; malformed files: plain Errors.
  expect_not_implemented([&] { parse(model(Writer().message(15, sparse))); },
               {"field 15 (sparse_initializer)", "sparse initializers are not supported"});
  Writer sattr = Writer().bytes(1, "s").varint(20, 11).message(22, sparse);
  expect_not_implemented([&] { parse(model(Writer().message(1, node("Constant", {}, {"y"}).message(5, sattr)))); },
               {"attribute 's'", "SPARSE_TENSOR attributes are not supported"});
  Writer no_graph = Writer().bytes(1, "then_branch").varint(20, 5);
  expect_plain_error([&] { parse(model(Writer().message(1, node("If", {}, {"y"}).message(5, no_graph)))); },
               {"type GRAPH but no graph value"});
  Writer bad_type = Writer().bytes(1, "a").varint(20, 99);
  expect_plain_error([&] { parse(model(Writer().message(1, node("X", {}, {"y"}).message(5, bad_type)))); },
               {"unknown attribute type 99"});
  Writer untyped = Writer().bytes(1, "a").varint(3, 1).float32(2, 1);
  expect_plain_error([&] { parse(model(Writer().message(1, node("X", {}, {"y"}).message(5, untyped)))); },
               {"type is missing and cannot be inferred (several values)"});
  Writer no_name = Writer().varint(20, 2).varint(3, 1);
  expect_plain_error([&] { parse(model(Writer().message(1, node("X", {}, {"y"}).message(5, no_name)))); }, {"has no name"});
  expect_plain_error([&] { parse(Writer().message(7, relu_graph()).message(7, relu_graph()).str()); }, {"two graphs"});
}

TEST(OnnxWire, PackedUnpackedAndUnknownFields) {
  // dims packed, float_data unpacked, int64_data unpacked, double_data unpacked.
  Writer dims_packed = Writer().raw_varint(2).raw_varint(3);
  Writer f = Writer().bytes(1, dims_packed.str()).varint(2, 1).bytes(8, "f");
  for (int i = 0; i < 6; ++i) f.float32(4, static_cast<float>(i) * 0.5f);
  Writer l = Writer().varint(1, 3).varint(2, 7).bytes(8, "l").varint(7, 5).varint(7, static_cast<uint64_t>(-6)).varint(7, 1ull << 50);
  Writer d = Writer().varint(1, 2).varint(2, 11).bytes(8, "d");
  uint64_t bits;
  double v = -1.25;
  std::memcpy(&bits, &v, 8);
  d.fixed64(10, bits).fixed64(10, bits);
  // Unknown fields of every wire type, at every level.
  auto unknown = [](Writer w) {
    return w.varint(1000, 5).fixed64(1001, 7).fixed32(1002, 9).bytes(1003, "junk").tag(1004, 3).varint(1, 1).bytes(2, "x").tag(1004, 4);
  };
  Writer n = unknown(node("Relu", {"x"}, {"y"}));
  Writer g = unknown(Writer().message(1, n).message(5, unknown(f)).message(5, l).message(5, d).message(11, unknown(value_info("x"))).message(12, value_info("y")));
  ModelProto m = parse(unknown(Writer().varint(1, 9).message(7, g)).str());
  EXPECT_EQ(m.ir_version, 9);
  ASSERT_EQ(m.graph.initializers.size(), 3u);
  EXPECT_EQ(m.graph.initializers[0].dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(to_tensor_data(m.graph.initializers[0]).to_vector<float>(), (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));
  EXPECT_EQ(to_tensor_data(m.graph.initializers[1]).to_vector<int64_t>(), (std::vector<int64_t>{5, -6, 1ll << 50}));
  EXPECT_EQ(to_tensor_data(m.graph.initializers[2]).to_vector<double>(), (std::vector<double>{-1.25, -1.25}));
  // Packed runs with a broken length or a cut varint.
  expect_error([] { parse(model(Writer().message(5, tensor_proto("p", 1, {}).bytes(4, "abcde")))); },
               {"float_data", "packed run of 5 bytes is not a multiple of 4"});
  expect_error([] { parse(model(Writer().message(5, tensor_proto("p", 1, {}).bytes(7, "\x80")))); },
               {"int64_data", "packed run: truncated or malformed varint"});
  // A negative int32 (sign-extended to 10 bytes) and an int32 out of range.
  Writer neg = Writer().bytes(1, "i").varint(20, 2).varint(3, static_cast<uint64_t>(-1));
  ModelProto mn = parse(model(Writer().message(1, node("X", {}, {"y"}).message(5, neg)).message(12, value_info("y"))));
  EXPECT_EQ(mn.graph.nodes[0].attributes[0].i, -1);
  expect_error([] { parse(model(Writer().message(5, tensor_proto("p", 1, {}).varint(2, 1ull << 40)))); },
               {"data_type", "does not fit in int32"});
  // An unterminated group.
  expect_error([] { parse(Writer().tag(50, 3).varint(1, 1).str()); }, {"group not terminated"});
  expect_error([] { parse(Writer().tag(50, 3).tag(51, 4).str()); }, {"end-group of field 51 closes a group of field 50"});
}

TEST(OnnxWire, ReaderOffsetsAreFileOffsets) {
  // The error in the nested message names the byte offset in the whole buffer.
  std::string s = Writer().varint(1, 8).message(7, Writer().bytes(2, "gg").tag(11, 2).raw_varint(9)).str();
  // bytes: 08 08 | 3a 07 | 12 02 'g' 'g' | 5a 09  -> the input field's tag is at byte 8.
  expect_error([&] { parse(s); }, {"model.graph: field 11 (input) at byte 8"});
}

TEST(OnnxWire, StandaloneTensorProto) {
  // The format of the input_N.pb files of ONNX test cases.
  Writer t = tensor_proto("x", 7, {2}).varint(7, 3).varint(7, static_cast<uint64_t>(-4));
  TensorProto p = parse_tensor_proto(as_bytes(t.str()));
  EXPECT_EQ(p.name, "x");
  EXPECT_EQ(to_tensor_data(p).to_vector<int64_t>(), (std::vector<int64_t>{3, -4}));
  const std::string s = t.str();
  for (size_t n = 0; n < s.size(); ++n) {
    try {
      TensorProto q = parse_tensor_proto(as_bytes(s.substr(0, n)));
      (void)to_tensor_data(q);
    } catch (const Error&) {
    }
  }
  expect_error([&] { parse_tensor_proto(as_bytes(s.substr(0, s.size() - 1))); }, {"onnx: tensor: field 7 (int64_data)", "truncated or malformed varint"});
}
