// ONNX messages from wire-format bytes (onnx.proto field numbers), then graph validation.
#include <algorithm>
#include <bit>
#include <unordered_map>
#include <unordered_set>

#include "ember/onnx/model.hpp"
#include "onnx_internal.hpp"
#include "proto_reader.hpp"

namespace ember::onnx {

using detail::ProtoReader;

namespace {

std::string indexed(const std::string& where, std::string_view field, size_t i) {
  return where + "." + std::string(field) + "[" + std::to_string(i) + "]";
}

// Parses the next element of a repeated message field into a new element of `v`; errors name
// it "<where>.<field>[i]".
template <class T, class Parse>
void parse_next(ProtoReader& r, std::string_view field, const std::string& where, std::vector<T>& v, Parse parse) {
  ProtoReader child = r.message(field, indexed(where, field, v.size()));
  parse(std::move(child), v.emplace_back());
}

void parse_entry(ProtoReader r, StringStringEntry& e) {
  while (r.next()) {
    switch (r.field()) {
      case 1: e.key = r.string("key"); break;
      case 2: e.value = r.string("value"); break;
      default: r.skip();
    }
  }
}

void parse_tensor(ProtoReader r, TensorProto& t) {
  const std::string where = r.where();
  while (r.next()) {
    switch (r.field()) {
      case 1: r.append_int64("dims", t.dims); break;
      case 2: t.data_type = r.int32("data_type"); break;
      case 3: t.has_segment = true; r.skip(); break;
      case 4: r.append_float32("float_data", t.float_data); break;
      case 5: r.append_int32("int32_data", t.int32_data); break;
      case 6: t.string_data.push_back(r.string("string_data")); break;
      case 7: r.append_int64("int64_data", t.int64_data); break;
      case 8: t.name = r.string("name"); break;
      case 9: {
        auto b = r.bytes("raw_data");
        t.raw_data.emplace(b.begin(), b.end());
        break;
      }
      case 10: r.append_float64("double_data", t.double_data); break;
      case 11: r.append_uint64("uint64_data", t.uint64_data); break;
      case 12: t.doc_string = r.string("doc_string"); break;
      case 13: parse_next(r, "external_data", where, t.external_data, parse_entry); break;
      case 14: {
        const int32_t loc = r.int32("data_location");
        if (loc != 0 && loc != 1) r.fail("data_location", "unknown data location ", loc, " (0 = DEFAULT, 1 = EXTERNAL)");
        t.external = loc == 1;
        break;
      }
      default: r.skip();
    }
  }
  const std::string what = "onnx: " + where + " (tensor '" + t.name + "')";
  detail::check_dims(t.dims, what);
  if (t.external) {
    auto location = t.external_value("location");
    EMBER_CHECK(location.has_value(), what, ": data_location is EXTERNAL but external_data has no 'location'");
    const std::string problem = detail::external_location_problem(*location);
    EMBER_CHECK(problem.empty(), what, ": external data location '", *location, "' ", problem);
  }
}

void parse_type(ProtoReader r, TypeProto& type);

void parse_dimension(ProtoReader r, Dimension& d) {
  while (r.next()) {
    switch (r.field()) {
      case 1: d.value = r.int64("dim_value"); d.param.clear(); break;
      case 2: d.param = r.string("dim_param"); d.value.reset(); break;
      case 3: d.denotation = r.string("denotation"); break;
      default: r.skip();
    }
  }
}

void parse_shape(ProtoReader r, std::vector<Dimension>& dims) {
  while (r.next()) {
    if (r.field() == 1) {
      if (dims.size() >= kMaxTensorRank) r.fail("dim", "shape has more than ", kMaxTensorRank, " dimensions");
      parse_next(r, "dim", r.where(), dims, parse_dimension);
    } else {
      r.skip();
    }
  }
}

// TypeProto.Tensor and TypeProto.SparseTensor share their layout.
void parse_tensor_type(ProtoReader r, TypeProto& type) {
  while (r.next()) {
    switch (r.field()) {
      case 1: type.elem_type = r.int32("elem_type"); break;
      case 2: {
        std::vector<Dimension> dims;
        parse_shape(r.message("shape", r.where() + ".shape"), dims);
        type.shape = std::move(dims);
        break;
      }
      default: r.skip();
    }
  }
}

// TypeProto.Sequence / TypeProto.Optional (field 1: elem_type) and TypeProto.Map (1: key_type,
// 2: value_type).
void parse_wrapper_type(ProtoReader r, TypeProto& type, bool is_map) {
  while (r.next()) {
    if (is_map && r.field() == 1) {
      type.key_type = r.int32("key_type");
    } else if ((!is_map && r.field() == 1) || (is_map && r.field() == 2)) {
      const char* name = is_map ? "value_type" : "elem_type";
      auto elem = std::make_shared<TypeProto>();
      parse_type(r.message(name, r.where() + "." + name), *elem);
      type.elem = std::move(elem);
    } else {
      r.skip();
    }
  }
}

void parse_type(ProtoReader r, TypeProto& type) {
  // The value is a oneof: a later field replaces an earlier one (the denotation stays).
  auto reset = [&](TypeProto::Kind kind) {
    std::string denotation = std::move(type.denotation);
    type = TypeProto{};
    type.kind = kind;
    type.denotation = std::move(denotation);
  };
  while (r.next()) {
    const std::string& w = r.where();
    switch (r.field()) {
      case 1:
        reset(TypeProto::Kind::tensor);
        parse_tensor_type(r.message("tensor_type", w + ".tensor_type"), type);
        break;
      case 8:
        reset(TypeProto::Kind::sparse_tensor);
        parse_tensor_type(r.message("sparse_tensor_type", w + ".sparse_tensor_type"), type);
        break;
      case 4:
        reset(TypeProto::Kind::sequence);
        parse_wrapper_type(r.message("sequence_type", w + ".sequence_type"), type, false);
        break;
      case 9:
        reset(TypeProto::Kind::optional);
        parse_wrapper_type(r.message("optional_type", w + ".optional_type"), type, false);
        break;
      case 5:
        reset(TypeProto::Kind::map);
        parse_wrapper_type(r.message("map_type", w + ".map_type"), type, true);
        break;
      case 6: type.denotation = r.string("denotation"); break;
      default: r.skip();
    }
  }
}

void parse_value_info(ProtoReader r, ValueInfoProto& v) {
  while (r.next()) {
    switch (r.field()) {
      case 1: v.name = r.string("name"); break;
      case 2:
        v.type = TypeProto{};
        parse_type(r.message("type", r.where() + ".type"), v.type);
        v.has_type = true;
        break;
      case 3: v.doc_string = r.string("doc_string"); break;
      default: r.skip();
    }
  }
}

void parse_optional(ProtoReader r, OptionalProto& o);

// The ValueKind field (elem_type) of a SequenceProto / OptionalProto; sparse tensors and maps,
// which the runtime has no values for, are refused here.
int32_t value_kind(ProtoReader& r) {
  const int32_t kind = r.int32("elem_type");
  if (kind == int32_t(ValueKind::sparse_tensor) || kind == int32_t(ValueKind::map))
    r.not_implemented("elem_type", "unsupported element kind ", kind, " (sparse tensors and maps are not read)");
  if (kind < 0 || kind > int32_t(ValueKind::optional))
    r.fail("elem_type", "unknown element kind ", kind, " (0 = UNDEFINED, 1 = TENSOR, 3 = SEQUENCE, 5 = OPTIONAL)");
  return kind;
}

// Checks that a SequenceProto / OptionalProto holds only values of its declared kind.
void check_value_kind(const std::string& where, const std::string& name, int32_t declared, int tensors,
                      int sequences, int optionals) {
  const int kinds = (tensors ? 1 : 0) + (sequences ? 1 : 0) + (optionals ? 1 : 0);
  const std::string what = "onnx: " + where + " ('" + name + "')";
  EMBER_CHECK(kinds <= 1, what, ": holds tensors, sequences and optionals mixed");
  if (kinds == 0) return;
  const int32_t held = tensors ? int32_t(ValueKind::tensor) : sequences ? int32_t(ValueKind::sequence)
                                                                        : int32_t(ValueKind::optional);
  EMBER_CHECK(declared == held, what, ": elem_type is ", declared, " but the values are of kind ", held);
}

void parse_sequence(ProtoReader r, SequenceProto& s) {
  const std::string where = r.where();
  while (r.next()) {
    switch (r.field()) {
      case 1: s.name = r.string("name"); break;
      case 2: s.elem_type = value_kind(r); break;
      case 3: parse_next(r, "tensor_values", where, s.tensor_values, parse_tensor); break;
      case 4: r.not_implemented("sparse_tensor_values", "unsupported: sequences of sparse tensors are not read");
      case 5: parse_next(r, "sequence_values", where, s.sequence_values, parse_sequence); break;
      case 6: r.not_implemented("map_values", "unsupported: sequences of maps are not read");
      case 7: parse_next(r, "optional_values", where, s.optional_values, parse_optional); break;
      default: r.skip();
    }
  }
  check_value_kind(where, s.name, s.elem_type, int(s.tensor_values.size()), int(s.sequence_values.size()),
                   int(s.optional_values.size()));
}

void parse_optional(ProtoReader r, OptionalProto& o) {
  const std::string where = r.where();
  // The value is a oneof: a later field replaces an earlier one.
  auto reset = [&] {
    o.tensor_value.reset();
    o.sequence_value.reset();
    o.optional_value.reset();
  };
  while (r.next()) {
    switch (r.field()) {
      case 1: o.name = r.string("name"); break;
      case 2: o.elem_type = value_kind(r); break;
      case 3:
        reset();
        parse_tensor(r.message("tensor_value", where + ".tensor_value"), o.tensor_value.emplace());
        break;
      case 4: r.not_implemented("sparse_tensor_value", "unsupported: optional sparse tensors are not read");
      case 5: {
        reset();
        auto seq = std::make_shared<SequenceProto>();
        parse_sequence(r.message("sequence_value", where + ".sequence_value"), *seq);
        o.sequence_value = std::move(seq);
        break;
      }
      case 6: r.not_implemented("map_value", "unsupported: optional maps are not read");
      case 7: {
        reset();
        auto opt = std::make_shared<OptionalProto>();
        parse_optional(r.message("optional_value", where + ".optional_value"), *opt);
        o.optional_value = std::move(opt);
        break;
      }
      default: r.skip();
    }
  }
  check_value_kind(where, o.name, o.elem_type, o.tensor_value ? 1 : 0, o.sequence_value ? 1 : 0,
                   o.optional_value ? 1 : 0);
}

void parse_graph(ProtoReader r, GraphProto& g);

// Which value fields an attribute carried (to infer a missing type and check a declared one).
enum AttrField : uint32_t {
  kF = 1u << 1, kI = 1u << 2, kS = 1u << 3, kT = 1u << 4, kG = 1u << 5, kFloats = 1u << 6, kInts = 1u << 7,
  kStrings = 1u << 8, kTensors = 1u << 9, kGraphs = 1u << 10, kSparse = 1u << 11, kSparses = 1u << 12,
  kTp = 1u << 13, kTps = 1u << 14,
};

void parse_attribute(ProtoReader r, AttributeProto& a) {
  const std::string where = r.where();
  uint32_t seen = 0;
  bool has_type = false;
  while (r.next()) {
    switch (r.field()) {
      case 1: a.name = r.string("name"); break;
      case 21: a.ref_attr_name = r.string("ref_attr_name"); break;
      case 13: a.doc_string = r.string("doc_string"); break;
      case 20: {
        const int32_t t = r.int32("type");
        if (t < 0 || t > 14) r.fail("type", "unknown attribute type ", t);
        a.type = static_cast<AttributeType>(t);
        has_type = true;
        break;
      }
      case 2: a.f = r.float32("f"); seen |= kF; break;
      case 3: a.i = r.int64("i"); seen |= kI; break;
      case 4: a.s = r.string("s"); seen |= kS; break;
      case 5:
        if (seen & kT) r.fail("t", "the tensor value appears twice");
        parse_tensor(r.message("t", where + ".t"), a.t);
        seen |= kT;
        break;
      case 6: {
        if (seen & kG) r.fail("g", "the graph value appears twice");
        auto g = std::make_shared<GraphProto>();
        parse_graph(r.message("g", where + ".g"), *g);
        a.g = std::move(g);
        seen |= kG;
        break;
      }
      case 14:
        if (seen & kTp) r.fail("tp", "the type value appears twice");
        parse_type(r.message("tp", where + ".tp"), a.tp);
        seen |= kTp;
        break;
      case 7: r.append_float32("floats", a.floats); seen |= kFloats; break;
      case 8: r.append_int64("ints", a.ints); seen |= kInts; break;
      case 9: a.strings.push_back(r.string("strings")); seen |= kStrings; break;
      case 10:
        parse_next(r, "tensors", where, a.tensors, parse_tensor);
        seen |= kTensors;
        break;
      case 11:
        parse_next(r, "graphs", where, a.graphs, parse_graph);
        seen |= kGraphs;
        break;
      case 22: seen |= kSparse; r.skip(); break;
      case 23: seen |= kSparses; r.skip(); break;
      case 15:
        parse_next(r, "type_protos", where, a.type_protos, parse_type);
        seen |= kTps;
        break;
      default: r.skip();
    }
  }
  const std::string what = "onnx: " + where + " (attribute '" + a.name + "')";
  EMBER_CHECK(!a.name.empty(), what, ": the attribute has no name");
  if (!has_type || a.type == AttributeType::undefined) {
    // IR version 1 files have no type field: infer it from the one value field present.
    EMBER_CHECK(a.ref_attr_name.empty(), what, ": a reference attribute must declare its type");
    EMBER_CHECK(seen != 0 && (seen & (seen - 1)) == 0, what,
                ": the type is missing and cannot be inferred (", seen == 0 ? "no value" : "several values", ")");
    a.type = static_cast<AttributeType>(std::countr_zero(seen));
  }
  if (a.type == AttributeType::sparse_tensor || a.type == AttributeType::sparse_tensors)
    EMBER_NOT_IMPLEMENTED(what, ": ", attribute_type_name(a.type), " attributes are not supported");
  if (a.ref_attr_name.empty()) {
    EMBER_CHECK(a.type != AttributeType::tensor || (seen & kT), what, ": type TENSOR but no tensor value (field t)");
    EMBER_CHECK(a.type != AttributeType::graph || (seen & kG), what, ": type GRAPH but no graph value (field g)");
    EMBER_CHECK(a.type != AttributeType::type_proto || (seen & kTp), what, ": type TYPE_PROTO but no type (field tp)");
  }
}

void parse_node(ProtoReader r, NodeProto& n) {
  const std::string where = r.where();
  while (r.next()) {
    switch (r.field()) {
      case 1: n.inputs.push_back(r.string("input")); break;
      case 2: n.outputs.push_back(r.string("output")); break;
      case 3: n.name = r.string("name"); break;
      case 4: n.op_type = r.string("op_type"); break;
      case 5:
        parse_next(r, "attribute", where, n.attributes, parse_attribute);
        break;
      case 6: n.doc_string = r.string("doc_string"); break;
      case 7: n.domain = r.string("domain"); break;
      default: r.skip();
    }
  }
  const std::string what = "onnx: " + where + " ('" + n.name + "')";
  EMBER_CHECK(!n.op_type.empty(), what, ": the node has no op_type");
  std::unordered_set<std::string_view> names;
  for (const auto& a : n.attributes)
    EMBER_CHECK(names.insert(a.name).second, what, " (", n.op_type, "): attribute '", a.name, "' appears twice");
}

void parse_graph(ProtoReader r, GraphProto& g) {
  const std::string where = r.where();
  while (r.next()) {
    switch (r.field()) {
      case 1: parse_next(r, "node", where, g.nodes, parse_node); break;
      case 2: g.name = r.string("name"); break;
      case 5:
        parse_next(r, "initializer", where, g.initializers, parse_tensor);
        break;
      case 15: r.not_implemented("sparse_initializer", "sparse initializers are not supported");
      case 10: g.doc_string = r.string("doc_string"); break;
      case 11:
        parse_next(r, "input", where, g.inputs, parse_value_info);
        break;
      case 12:
        parse_next(r, "output", where, g.outputs, parse_value_info);
        break;
      case 13:
        parse_next(r, "value_info", where, g.value_info, parse_value_info);
        break;
      default: r.skip();
    }
  }
}

void parse_function_info(ProtoReader r, FunctionInfo& f) {
  while (r.next()) {
    switch (r.field()) {
      case 1: f.name = r.string("name"); break;
      case 10: f.domain = r.string("domain"); break;
      default: r.skip();  // the body (nodes, attributes, opsets) is not read
    }
  }
}

void parse_opset(ProtoReader r, OperatorSetId& o) {
  while (r.next()) {
    switch (r.field()) {
      case 1: o.domain = r.string("domain"); break;
      case 2: o.version = r.int64("version"); break;
      default: r.skip();
    }
  }
}

// --- validation ---

std::string node_label(const GraphProto& g, size_t i) {
  const NodeProto& n = g.nodes[i];
  std::string s = "node " + std::to_string(i);
  if (!n.name.empty()) s += " '" + n.name + "'";
  return s + " (" + n.op_type + ")";
}

// Finds a cycle through node `start` (edges: node -> the nodes producing its inputs) and
// describes it, or returns "" when there is none. Iterative: chains may be long.
std::string find_cycle(const GraphProto& g, const std::unordered_map<std::string_view, size_t>& producer,
                       size_t start) {
  const size_t n = g.nodes.size();
  std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the stack, 2 done
  struct Frame {
    size_t node;
    size_t next_input;
  };
  std::vector<Frame> stack{{start, 0}};
  state[start] = 1;
  while (!stack.empty()) {
    Frame& f = stack.back();
    const auto& inputs = g.nodes[f.node].inputs;
    if (f.next_input == inputs.size()) {
      state[f.node] = 2;
      stack.pop_back();
      continue;
    }
    const std::string& in = inputs[f.next_input++];
    auto it = producer.find(in);
    if (in.empty() || it == producer.end()) continue;
    const size_t p = it->second;
    if (state[p] == 1) {
      // p is on the stack: the cycle is p -> ... -> f.node -> p (in dependency order).
      std::vector<size_t> cycle;
      for (size_t k = stack.size(); k-- > 0;) {
        cycle.push_back(stack[k].node);
        if (stack[k].node == p) break;
      }
      std::string s;
      const size_t shown = std::min<size_t>(cycle.size(), 8);
      for (size_t k = 0; k < shown; ++k) s += node_label(g, cycle[k]) + " -> ";
      if (shown < cycle.size()) s += "... -> ";
      return s + node_label(g, cycle[0]);
    }
    if (state[p] == 0) {
      state[p] = 1;
      stack.push_back({p, 0});
    }
  }
  return "";
}

void validate_graph(const GraphProto& g, const std::string& where, bool subgraph) {
  const std::string what = "onnx: " + where + (g.name.empty() ? "" : " ('" + g.name + "')");
  std::unordered_set<std::string_view> declared;  // graph inputs and initializers
  {
    std::unordered_set<std::string_view> inputs;
    for (const auto& v : g.inputs) {
      EMBER_CHECK(!v.name.empty(), what, ": a graph input has no name");
      EMBER_CHECK(inputs.insert(v.name).second, what, ": graph input '", v.name, "' is declared twice");
      declared.insert(v.name);
    }
    std::unordered_set<std::string_view> inits;
    for (const auto& t : g.initializers) {
      EMBER_CHECK(!t.name.empty(), what, ": an initializer has no name");
      EMBER_CHECK(inits.insert(t.name).second, what, ": initializer '", t.name, "' appears twice");
      declared.insert(t.name);
    }
  }
  std::unordered_map<std::string_view, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& out : g.nodes[i].outputs) {
      if (out.empty()) continue;
      EMBER_CHECK(!declared.contains(out), what, ": ", node_label(g, i), ": output '", out,
                  "' redefines a graph input or initializer");
      auto [it, fresh] = producer.emplace(out, i);
      EMBER_CHECK(fresh, what, ": ", node_label(g, i), ": output '", out, "' is also produced by ",
                  node_label(g, it->second));
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& in : g.nodes[i].inputs) {
      if (in.empty() || declared.contains(in)) continue;
      auto it = producer.find(in);
      if (it != producer.end() && it->second < i) continue;
      if (it != producer.end()) {
        const std::string cycle = find_cycle(g, producer, i);
        EMBER_CHECK(cycle.empty(), what, ": the graph has a cycle: ", cycle);
        EMBER_FAIL(what, ": ", node_label(g, i), ": input '", in, "' is used before ", node_label(g, it->second),
                   " produces it (nodes must be topologically sorted)");
      }
      // In a subgraph, other names may come from an enclosing graph.
      EMBER_CHECK(subgraph, what, ": ", node_label(g, i), ": input '", in,
                  "' is not a graph input, an initializer or an output of an earlier node");
    }
  }
  if (!subgraph) {
    for (const auto& v : g.outputs)
      EMBER_CHECK(declared.contains(v.name) || producer.contains(v.name), what, ": graph output '", v.name,
                  "' is not produced by any node (nor a graph input or initializer)");
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& a : g.nodes[i].attributes) {
      const std::string sub = where + ".node[" + std::to_string(i) + "].attribute '" + a.name + "'";
      if (a.g) validate_graph(*a.g, sub, true);
      for (size_t k = 0; k < a.graphs.size(); ++k)
        validate_graph(a.graphs[k], sub + "[" + std::to_string(k) + "]", true);
    }
  }
}

}  // namespace

ModelProto parse_model(std::span<const std::byte> bytes, const std::string& base_dir) {
  EMBER_CHECK(!bytes.empty(), "onnx: empty input (not an ONNX model)");
  ModelProto m;
  m.base_dir = base_dir;
  ProtoReader r(bytes, 0, "model", 0, kMaxMessageDepth);
  bool has_graph = false;
  while (r.next()) {
    switch (r.field()) {
      case 1: m.ir_version = r.int64("ir_version"); break;
      case 8:
        parse_next(r, "opset_import", "model", m.opset_import, parse_opset);
        break;
      case 2: m.producer_name = r.string("producer_name"); break;
      case 3: m.producer_version = r.string("producer_version"); break;
      case 4: m.domain = r.string("domain"); break;
      case 5: m.model_version = r.int64("model_version"); break;
      case 6: m.doc_string = r.string("doc_string"); break;
      case 7:
        if (has_graph) r.fail("graph", "the model has two graphs");
        parse_graph(r.message("graph", "model.graph"), m.graph);
        has_graph = true;
        break;
      case 14:
        parse_next(r, "metadata_props", "model", m.metadata, parse_entry);
        break;
      case 25:
        parse_next(r, "functions", "model", m.functions, parse_function_info);
        break;
      default: r.skip();  // training_info and fields of newer IR versions
    }
  }
  EMBER_CHECK(has_graph, "onnx: the model has no graph (not an ONNX model?)");
  validate_graph(m.graph, "model.graph", false);
  return m;
}

TensorProto parse_tensor_proto(std::span<const std::byte> bytes) {
  TensorProto t;
  parse_tensor(ProtoReader(bytes, 0, "tensor", 0, kMaxMessageDepth), t);
  return t;
}

SequenceProto parse_sequence_proto(std::span<const std::byte> bytes) {
  SequenceProto s;
  parse_sequence(ProtoReader(bytes, 0, "sequence", 0, kMaxMessageDepth), s);
  return s;
}

OptionalProto parse_optional_proto(std::span<const std::byte> bytes) {
  OptionalProto o;
  parse_optional(ProtoReader(bytes, 0, "optional", 0, kMaxMessageDepth), o);
  return o;
}

ModelProto load_model(const std::string& path) {
  const std::vector<std::byte> bytes = detail::read_whole_file(path);
  try {
    return parse_model(bytes, detail::directory_of(path));
  } catch (const NotImplemented& e) {
    EMBER_NOT_IMPLEMENTED(path, ": ", e.what());
  } catch (const Error& e) {
    EMBER_FAIL(path, ": ", e.what());
  }
}

int64_t ModelProto::opset(std::string_view domain) const {
  auto norm = [](std::string_view d) { return d == "ai.onnx" ? std::string_view() : d; };
  for (const auto& o : opset_import)
    if (norm(o.domain) == norm(domain)) return o.version;
  return 0;
}

const AttributeProto* NodeProto::attribute(std::string_view name) const {
  for (const auto& a : attributes)
    if (a.name == name) return &a;
  return nullptr;
}

const TensorProto* GraphProto::initializer(std::string_view name) const {
  for (const auto& t : initializers)
    if (t.name == name) return &t;
  return nullptr;
}

std::string attribute_type_name(AttributeType type) {
  static constexpr const char* kNames[] = {"UNDEFINED", "FLOAT",   "INT",           "STRING",        "TENSOR",
                                           "GRAPH",     "FLOATS",  "INTS",          "STRINGS",       "TENSORS",
                                           "GRAPHS",    "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
  const auto i = static_cast<int32_t>(type);
  if (i >= 0 && i < 15) return kNames[i];
  return "AttributeType(" + std::to_string(i) + ")";
}

std::string type_string(const TypeProto& type) {
  auto elem = [&](const char* kind) {
    return std::string(kind) + "(" + (type.elem ? type_string(*type.elem) : std::string("?")) + ")";
  };
  switch (type.kind) {
    case TypeProto::Kind::undefined: return "undefined";
    case TypeProto::Kind::sequence: return elem("seq");
    case TypeProto::Kind::optional: return elem("optional");
    case TypeProto::Kind::map:
      return "map(" + data_type_name(type.key_type) + "," + (type.elem ? type_string(*type.elem) : "?") + ")";
    case TypeProto::Kind::tensor:
    case TypeProto::Kind::sparse_tensor: {
      std::string s = (type.kind == TypeProto::Kind::tensor ? "tensor(" : "sparse_tensor(") +
                      data_type_name(type.elem_type) + ")";
      if (type.shape) {
        s += "[";
        for (size_t i = 0; i < type.shape->size(); ++i) {
          const Dimension& d = (*type.shape)[i];
          if (i) s += ",";
          s += d.value ? std::to_string(*d.value) : d.param.empty() ? "?" : d.param;
        }
        s += "]";
      }
      return s;
    }
  }
  return "undefined";
}

}  // namespace ember::onnx
