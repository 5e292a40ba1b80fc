// ONNX to C++ code generation: see include/ember/onnx/codegen.hpp.
#include "ember/onnx/codegen.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "ember/core/error.hpp"
#include "ember/store/safetensors.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::onnx {

namespace gen {
AttributeProto attr_int(std::string name, int64_t v) {
  AttributeProto a;
  a.name = std::move(name);
  a.type = AttributeType::int_;
  a.i = v;
  return a;
}
AttributeProto attr_float(std::string name, float v) {
  AttributeProto a;
  a.name = std::move(name);
  a.type = AttributeType::float_;
  a.f = v;
  return a;
}
AttributeProto attr_string(std::string name, std::string v) {
  AttributeProto a;
  a.name = std::move(name);
  a.type = AttributeType::string;
  a.s = std::move(v);
  return a;
}
AttributeProto attr_ints(std::string name, std::vector<int64_t> v) {
  AttributeProto a;
  a.name = std::move(name);
  a.type = AttributeType::ints;
  a.ints = std::move(v);
  return a;
}
AttributeProto attr_floats(std::string name, std::vector<float> v) {
  AttributeProto a;
  a.name = std::move(name);
  a.type = AttributeType::floats;
  a.floats = std::move(v);
  return a;
}
AttributeProto attr_strings(std::string name, std::vector<std::string> v) {
  AttributeProto a;
  a.name = std::move(name);
  a.type = AttributeType::strings;
  a.strings = std::move(v);
  return a;
}
AttributeProto attr_tensor(std::string name, TensorProto v) {
  AttributeProto a;
  a.name = std::move(name);
  a.type = AttributeType::tensor;
  a.t = std::move(v);
  return a;
}
TensorProto tensor(int32_t data_type, std::vector<int64_t> dims, std::string_view hex) {
  EMBER_CHECK(hex.size() % 2 == 0, "onnx codegen: odd hex string");
  auto nibble = [](char ch) -> int {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    EMBER_FAIL("onnx codegen: bad hex digit");
  };
  TensorProto t;
  t.data_type = data_type;
  t.dims = std::move(dims);
  std::vector<std::byte> raw(hex.size() / 2);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = std::byte((nibble(hex[2 * i]) << 4) | nibble(hex[2 * i + 1]));
  t.raw_data = std::move(raw);
  return t;
}
NodeProto node(std::string op_type, std::string name, std::string domain, std::vector<std::string> inputs,
               std::vector<std::string> outputs, std::vector<AttributeProto> attributes) {
  NodeProto n;
  n.op_type = std::move(op_type);
  n.name = std::move(name);
  n.domain = std::move(domain);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attributes);
  return n;
}
}  // namespace gen

namespace {

namespace fs = std::filesystem;

// A C++ string literal (octal escapes for anything unusual).
std::string quote(std::string_view s) {
  std::string o = "\"";
  for (char ch : s) {
    unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      o += '\\';
      o += ch;
    } else if (u < 0x20 || u >= 0x7f || ch == '?') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", unsigned(u));
      o += buf;
    } else {
      o += ch;
    }
  }
  return o + "\"";
}

// Text for a comment: printable ASCII, no line breaks or comment terminators.
std::string comment_text(std::string_view s) {
  std::string o;
  for (char ch : s) {
    unsigned char u = static_cast<unsigned char>(ch);
    o += (u < 0x20 || u >= 0x7f || ch == '\\') ? '?' : ch;
  }
  for (size_t p; (p = o.find("*/")) != std::string::npos;) o[p] = '?';
  return o;
}

std::string float_literal(float v) {
  if (std::isnan(v)) return "std::numeric_limits<float>::quiet_NaN()";
  if (std::isinf(v)) return v > 0 ? "std::numeric_limits<float>::infinity()" : "-std::numeric_limits<float>::infinity()";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s + "f";
}

std::string int_literal(int64_t v) {
  if (v == INT64_MIN) return "INT64_MIN";
  return std::to_string(v) + (v > INT32_MAX || v < INT32_MIN ? "LL" : "");
}

template <class T, class F>
std::string list(const std::vector<T>& v, F f) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + f(v[i]);
  return s + "}";
}

std::string hex_of(std::span<const std::byte> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (std::byte b : bytes) {
    s += digits[unsigned(b) >> 4];
    s += digits[unsigned(b) & 15];
  }
  return s;
}

std::string tensor_expr(const TensorProto& t, const std::string& what) {
  if (!to_dtype(t.data_type))
    EMBER_FAIL("onnx codegen: unsupported dtype ", data_type_name(t.data_type), " of ", what);
  TensorData d = to_tensor_data(t);
  return "gen::tensor(" + std::to_string(t.data_type) + " /* " + data_type_name(t.data_type) + " */, " +
         list(t.dims, int_literal) + ", " + quote(hex_of(d.bytes())) + ")";
}

std::string attribute_expr(const AttributeProto& a, const NodeProto& n) {
  const std::string nm = quote(a.name);
  const std::string what = "attribute '" + a.name + "' of node '" + n.name + "' (" + n.op_type + ")";
  if (!a.ref_attr_name.empty()) EMBER_FAIL("onnx codegen: unsupported reference ", what);
  switch (a.type) {
    case AttributeType::int_: return "gen::attr_int(" + nm + ", " + int_literal(a.i) + ")";
    case AttributeType::float_: return "gen::attr_float(" + nm + ", " + float_literal(a.f) + ")";
    case AttributeType::string: return "gen::attr_string(" + nm + ", " + quote(a.s) + ")";
    case AttributeType::ints: return "gen::attr_ints(" + nm + ", " + list(a.ints, int_literal) + ")";
    case AttributeType::floats: return "gen::attr_floats(" + nm + ", " + list(a.floats, float_literal) + ")";
    case AttributeType::strings:
      return "gen::attr_strings(" + nm + ", " + list(a.strings, [](const std::string& s) { return quote(s); }) + ")";
    case AttributeType::tensor: return "gen::attr_tensor(" + nm + ", " + tensor_expr(a.t, what) + ")";
    default: EMBER_FAIL("onnx codegen: unsupported ", attribute_type_name(a.type), " ", what);
  }
}

const std::set<std::string> kReserved = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
    "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
    "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
    "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
    "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
    "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
    "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
    "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
    // names the generated code uses
    "std", "ember", "onnx", "gen", "device", "load", "forward", "run", "input_names", "output_names", "weights",
    "inputs", "kOpset", "DynTensor", "Device", "main", "assert", "errno", "stdin", "stdout", "stderr", "NULL"};

class Names {
 public:
  explicit Names(const std::string& reserved) { used_.insert(reserved); }
  // The identifier of an ONNX value (the same one each time it is asked for).
  std::string of(const std::string& value) {
    auto it = map_.find(value);
    if (it != map_.end()) return it->second;
    std::string s;
    for (char ch : value) s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    while (s.find("__") != std::string::npos) s.replace(s.find("__"), 2, "_");  // "__" is reserved in C++
    if (s.empty() || s == "_") s = "v";
    if (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '_') s = "v" + (s[0] == '_' ? s : "_" + s);
    if (s.size() > 1 && s.back() == '_' && s[s.size() - 2] == '_') s.pop_back();
    if (kReserved.count(s)) s += "_";
    std::string base = s;
    for (int k = 2; used_.count(s); ++k) s = base + "_" + std::to_string(k);
    used_.insert(s);
    return map_[value] = s;
  }
  std::string fresh(const std::string& base) {
    std::string s = base;
    for (int k = 2; used_.count(s); ++k) s = base + "_" + std::to_string(k);
    used_.insert(s);
    return s;
  }

 private:
  std::map<std::string, std::string> map_;
  std::set<std::string> used_;
};

bool std_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// Ops spelled as direct ember tensor ops: (function, arity). Their handlers do exactly this.
const std::map<std::string, std::pair<std::string, size_t>> kDirect = {
    {"Add", {"ember::add", 2}},         {"Sub", {"ember::sub", 2}},   {"Mul", {"ember::mul", 2}},
    {"MatMul", {"ember::matmul", 2}},   {"Relu", {"ember::relu", 1}}, {"Tanh", {"ember::tanh", 1}},
    {"Sigmoid", {"ember::sigmoid", 1}}, {"Identity", {"", 1}},
};

bool is_direct(const NodeProto& n, const GraphProto& g) {
  if (!std_domain(n.domain) || !n.attributes.empty()) return false;
  auto it = kDirect.find(n.op_type);
  if (it == kDirect.end() || n.inputs.size() != it->second.second || n.outputs.size() != 1) return false;
  for (const std::string& in : n.inputs)
    if (in.empty()) return false;
  // float-only handlers: keep the runtime's checks unless the operand is a float graph value.
  if (n.op_type == "MatMul" || n.op_type == "Tanh" || n.op_type == "Sigmoid" || n.op_type == "Relu") {
    auto declared_float = [&](const std::string& v) {
      for (const auto& vi : g.inputs)
        if (vi.name == v) return vi.elem_type() == int32_t(DataType::float32) || vi.elem_type() == int32_t(DataType::float64);
      for (const auto& t : g.initializers)
        if (t.name == v) return t.data_type == int32_t(DataType::float32) || t.data_type == int32_t(DataType::float64);
      return false;
    };
    if (!declared_float(n.inputs[0])) return false;
  }
  return true;
}

std::string shape_text(const std::optional<std::vector<Dimension>>& s) {
  if (!s) return "[?]";
  std::string o = "[";
  for (size_t i = 0; i < s->size(); ++i) {
    const Dimension& d = (*s)[i];
    o += (i ? ", " : "") + (d.value ? std::to_string(*d.value) : d.param.empty() ? "?" : d.param);
  }
  return o + "]";
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  EMBER_CHECK(f.good(), "onnx codegen: cannot write ", p.string());
  f << text;
  f.close();
  EMBER_CHECK(f.good(), "onnx codegen: cannot write ", p.string());
}

}  // namespace

void generate(const ModelProto& model, const std::string& out_dir, const std::string& name) {
  EMBER_CHECK(!name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'),
              "onnx codegen: the name '", name, "' is not a C++ identifier");
  for (char ch : name)
    EMBER_CHECK(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_', "onnx codegen: the name '", name,
                "' is not a C++ identifier");
  EMBER_CHECK(!kReserved.count(name), "onnx codegen: the name '", name, "' is reserved");
  const GraphProto& g = model.graph;
  int64_t opset = model.opset("");
  if (opset == 0) opset = 1;

  // Refuse what the generated code cannot express before writing anything.
  for (const NodeProto& n : g.nodes)
    for (const AttributeProto& a : n.attributes) attribute_expr(a, n);

  Names names(name);
  const std::string nodes_ns = name + "_nodes";
  names.fresh(nodes_ns);

  // Initializers (also those listed as graph inputs) become members.
  std::set<std::string> init_names;
  store::TensorMap weights;
  std::ostringstream members, loads;
  for (const TensorProto& t : g.initializers) {
    if (!to_dtype(t.data_type))
      EMBER_FAIL("onnx codegen: unsupported dtype ", data_type_name(t.data_type), " of initializer '", t.name, "'");
    if (init_names.count(t.name)) continue;
    init_names.insert(t.name);
    weights.insert(t.name, DynTensor::from_data(to_tensor_data(t, model.base_dir), Device::cpu()));
    std::string id = names.of(t.name);
    members << "  ember::DynTensor " << id << ";  // initializer '" << comment_text(t.name) << "' "
            << data_type_name(t.data_type) << " " << list(t.dims, [](int64_t d) { return std::to_string(d); }) << "\n";
    loads << "  m." << id << " = w.at(" << quote(t.name) << ");\n";
  }
  std::vector<const ValueInfoProto*> inputs;
  for (const ValueInfoProto& v : g.inputs)
    if (!init_names.count(v.name)) inputs.push_back(&v);
  for (const ValueInfoProto* v : inputs)
    if (v->type.kind != TypeProto::Kind::tensor)
      EMBER_FAIL("onnx codegen: unsupported non-tensor input '", v->name, "' (", type_string(v->type), ")");
  for (const ValueInfoProto& v : g.outputs)
    if (v.type.kind != TypeProto::Kind::tensor && v.has_type)
      EMBER_FAIL("onnx codegen: unsupported non-tensor output '", v.name, "' (", type_string(v.type), ")");

  std::string params, def_params;
  for (size_t i = 0; i < inputs.size(); ++i) {
    params += std::string(i ? ", " : "") + "const ember::DynTensor& " + names.of(inputs[i]->name);
    def_params += std::string(i ? ", " : "") + "[[maybe_unused]] const ember::DynTensor& " + names.of(inputs[i]->name);
  }

  // ---- the header ----
  std::ostringstream h;
  h << "// Generated by `ember-onnx generate` from an ONNX model (opset " << opset << ", "
    << g.nodes.size() << " nodes";
  if (!model.producer_name.empty()) h << ", producer " << comment_text(model.producer_name);
  h << ").\n// Plain C++ over ember tensors: edit freely. The weights are in " << name << ".safetensors.\n";
  h << "#pragma once\n\n#include <string>\n#include <vector>\n\n#include \"ember/core/device.hpp\"\n"
    << "#include \"ember/tensor/dyn_tensor.hpp\"\n\n";
  h << "struct " << name << " {\n";
  h << "  // Loads the initializers from a safetensors file (" << name << ".safetensors) onto `device`.\n";
  h << "  static " << name << " load(const std::string& weights, ember::Device device = ember::Device::default_device());\n\n";
  h << "  // Graph inputs:\n";
  for (const ValueInfoProto* v : inputs)
    h << "  //   " << names.of(v->name) << ": '" << comment_text(v->name) << "' " << data_type_name(v->elem_type()) << " "
      << comment_text(shape_text(v->shape())) << "\n";
  h << "  // The inputs must be on `device` (the tensor ops do not move them).\n";
  h << "  // Returns the graph outputs in order:";
  for (const ValueInfoProto& v : g.outputs) h << " '" << comment_text(v.name) << "'";
  h << "\n  std::vector<ember::DynTensor> forward(" << params << ") const;\n";
  h << "  // The same with the inputs in graph order.\n";
  h << "  std::vector<ember::DynTensor> run(const std::vector<ember::DynTensor>& inputs) const;\n";
  h << "  static std::vector<std::string> input_names();   // the ONNX names\n";
  h << "  static std::vector<std::string> output_names();\n\n";
  h << "  ember::Device device = ember::Device::cpu();\n";
  if (!init_names.empty()) h << "  // Weights.\n" << members.str();
  h << "};\n";

  // ---- the source ----
  std::ostringstream nodes_fn, body;
  size_t generic = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const NodeProto& n = g.nodes[k];
    std::string ins, outs_c;
    for (size_t i = 0; i < n.inputs.size(); ++i) ins += (i ? ", " : "") + (n.inputs[i].empty() ? std::string("<none>") : n.inputs[i]);
    for (size_t i = 0; i < n.outputs.size(); ++i) outs_c += (i ? ", " : "") + (n.outputs[i].empty() ? std::string("<none>") : n.outputs[i]);
    body << "  // node " << k << (n.name.empty() ? "" : " '" + comment_text(n.name) + "'") << " ("
         << (std_domain(n.domain) ? "" : comment_text(n.domain) + "::") << comment_text(n.op_type) << "): "
         << comment_text(ins) << " -> " << comment_text(outs_c) << "\n";
    auto arg = [&](const std::string& v) { return v.empty() ? std::string("ember::DynTensor()") : names.of(v); };
    if (is_direct(n, g)) {
      const auto& [fn, arity] = kDirect.at(n.op_type);
      std::string call = fn.empty() ? arg(n.inputs[0]) : fn + "(";
      if (!fn.empty()) {
        for (size_t i = 0; i < arity; ++i) call += (i ? ", " : "") + arg(n.inputs[i]);
        call += ")";
      }
      body << "  ember::DynTensor " << names.of(n.outputs[0]) << " = " << call << ";\n";
      continue;
    }
    ++generic;
    std::string fn = "node_" + std::to_string(k);
    nodes_fn << "// node " << k << ": " << comment_text(n.op_type) << "\n";
    nodes_fn << "const onnx::NodeProto& " << fn << "() {\n  static const onnx::NodeProto n = gen::node(" << quote(n.op_type)
             << ", " << quote(n.name) << ", " << quote(n.domain) << ",\n      "
             << list(n.inputs, [](const std::string& s) { return quote(s); }) << ", "
             << list(n.outputs, [](const std::string& s) { return quote(s); });
    if (!n.attributes.empty()) {
      nodes_fn << ",\n      {";
      for (size_t i = 0; i < n.attributes.size(); ++i)
        nodes_fn << (i ? ",\n       " : "") << attribute_expr(n.attributes[i], n);
      nodes_fn << "}";
    }
    nodes_fn << ");\n  return n;\n}\n\n";
    std::string call = "onnx::run_node(" + nodes_ns + "::" + fn + "(), {";
    for (size_t i = 0; i < n.inputs.size(); ++i) call += (i ? ", " : "") + arg(n.inputs[i]);
    call += "}, " + nodes_ns + "::kOpset, device)";
    size_t produced = 0;
    for (const std::string& o : n.outputs) produced += !o.empty();
    if (n.outputs.size() == 1 && produced == 1) {
      body << "  ember::DynTensor " << names.of(n.outputs[0]) << " = " << call << "[0];\n";
    } else {
      std::string tmp = names.fresh("outs_" + std::to_string(k));
      body << "  std::vector<ember::DynTensor> " << tmp << " = " << call << ";\n";
      for (size_t i = 0; i < n.outputs.size(); ++i)
        if (!n.outputs[i].empty())
          body << "  ember::DynTensor " << names.of(n.outputs[i]) << " = " << tmp << "[" << i << "];\n";
    }
  }

  std::ostringstream c;
  c << "// Generated by `ember-onnx generate`: the graph of " << name << ".hpp as ember tensor ops.\n";
  c << "#include \"" << name << ".hpp\"\n\n#include <cstdint>\n#include <limits>\n\n#include \"ember/core/error.hpp\"\n"
    << "#include \"ember/onnx/codegen.hpp\"\n#include \"ember/onnx/runtime.hpp\"\n#include \"ember/store/safetensors.hpp\"\n"
    << "#include \"ember/tensor/ops.hpp\"\n\n";
  c << "namespace " << nodes_ns << " {\nnamespace onnx = ember::onnx;\nnamespace gen = ember::onnx::gen;\n";
  c << "[[maybe_unused]] constexpr int64_t kOpset = " << opset << ";\n\n";
  if (generic) c << "// The nodes run through onnx::run_node (the runtime's op handlers), built once.\n" << nodes_fn.str();
  c << "}  // namespace " << nodes_ns << "\n\n";
  c << name << " " << name << "::load(const std::string& weights, ember::Device device) {\n";
  c << (init_names.empty() ? "  (void)weights;\n" : "  ember::store::TensorMap w = ember::store::load_safetensors(weights, device);\n");
  c << "  " << name << " m;\n  m.device = device;\n" << loads.str() << "  return m;\n}\n\n";
  c << "std::vector<ember::DynTensor> " << name << "::forward(" << def_params << ") const {\n";
  c << "  namespace onnx = ember::onnx;\n";
  c << body.str();
  c << "  return {";
  for (size_t i = 0; i < g.outputs.size(); ++i) c << (i ? ", " : "") << names.of(g.outputs[i].name);
  c << "};\n}\n\n";
  c << "std::vector<ember::DynTensor> " << name << "::run(const std::vector<ember::DynTensor>& inputs) const {\n";
  c << "  EMBER_CHECK(inputs.size() == " << inputs.size() << ", \"" << name << ": expected " << inputs.size()
    << " inputs, got \", inputs.size());\n";
  c << "  return forward(";
  for (size_t i = 0; i < inputs.size(); ++i) c << (i ? ", " : "") << "inputs[" << i << "]";
  c << ");\n}\n\n";
  c << "std::vector<std::string> " << name << "::input_names() { return "
    << list(inputs, [](const ValueInfoProto* v) { return quote(v->name); }) << "; }\n";
  c << "std::vector<std::string> " << name << "::output_names() { return "
    << list(g.outputs, [](const ValueInfoProto& v) { return quote(v.name); }) << "; }\n";

  fs::create_directories(out_dir);
  write_file(fs::path(out_dir) / (name + ".hpp"), h.str());
  write_file(fs::path(out_dir) / (name + ".cpp"), c.str());
  store::save_safetensors((fs::path(out_dir) / (name + ".safetensors")).string(), weights);
}

}  // namespace ember::onnx
