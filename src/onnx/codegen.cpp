// ONNX to C++ code generation: see include/ember/onnx/codegen.hpp.
#include "ember/onnx/codegen.hpp"
#include "ember/onnx/shape_inference.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

#include "ember/core/error.hpp"
#include "ember/store/safetensors.hpp"
#include "ember/tensor/dyn_tensor.hpp"
#include "ember/tensor/ops.hpp"
#include "onnx_internal.hpp"

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

// Declared in onnx_internal.hpp (codegen_cortex_m*.cpp use them too).
namespace detail {

// Checks that `name` is a C++ identifier, as the generated code is named after it; `what`
// prefixes errors.
void check_identifier(const std::string& name, std::string_view what) {
  EMBER_CHECK(!name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'), what,
              ": the name '", name, "' is not a C++ identifier");
  for (char ch : name)
    EMBER_CHECK(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_', what, ": the name '", name,
                "' is not a C++ identifier");
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

}  // namespace detail

namespace {

using detail::comment_text;

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

// The shortest literal that reads back as exactly `v` (a float, or a double with as_double).
std::string float_literal(double v, bool as_double = false) {
  if (std::isnan(v))
    return as_double ? "std::numeric_limits<double>::quiet_NaN()" : "std::numeric_limits<float>::quiet_NaN()";
  if (std::isinf(v)) {
    std::string s = as_double ? "std::numeric_limits<double>::infinity()" : "std::numeric_limits<float>::infinity()";
    return v > 0 ? s : "-" + s;
  }
  char buf[48];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (as_double ? std::strtod(buf, nullptr) == v : std::strtof(buf, nullptr) == float(v)) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return as_double ? s : s + "f";
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

std::string ints_text(const std::vector<int64_t>& v) { return list(v, int_literal); }

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
    EMBER_NOT_IMPLEMENTED("onnx codegen: unsupported dtype ", data_type_name(t.data_type), " of ", what);
  TensorData d = to_tensor_data(t);
  return "gen::tensor(" + std::to_string(t.data_type) + " /* " + data_type_name(t.data_type) + " */, " +
         list(t.dims, int_literal) + ", " + quote(hex_of(d.bytes())) + ")";
}

std::string attribute_expr(const AttributeProto& a, const NodeProto& n) {
  const std::string nm = quote(a.name);
  const std::string what = "attribute '" + a.name + "' of node '" + n.name + "' (" + n.op_type + ")";
  if (!a.ref_attr_name.empty()) EMBER_NOT_IMPLEMENTED("onnx codegen: unsupported reference ", what);
  switch (a.type) {
    case AttributeType::int_:
      return "gen::attr_int(" + nm + ", " + int_literal(a.i) + ")";
    case AttributeType::float_:
      return "gen::attr_float(" + nm + ", " + float_literal(a.f) + ")";
    case AttributeType::string:
      return "gen::attr_string(" + nm + ", " + quote(a.s) + ")";
    case AttributeType::ints:
      return "gen::attr_ints(" + nm + ", " + list(a.ints, int_literal) + ")";
    case AttributeType::floats:
      return "gen::attr_floats(" + nm + ", " + list(a.floats, [](float f) { return float_literal(f); }) + ")";
    case AttributeType::strings:
      return "gen::attr_strings(" + nm + ", " + list(a.strings, [](const std::string& s) { return quote(s); }) + ")";
    case AttributeType::tensor:
      return "gen::attr_tensor(" + nm + ", " + tensor_expr(a.t, what) + ")";
    default:
      EMBER_NOT_IMPLEMENTED("onnx codegen: unsupported ", attribute_type_name(a.type), " ", what);
  }
}

const std::set<std::string> kReserved = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char",
    "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr", "constinit",
    "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete", "do", "double",
    "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if",
    "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or",
    "or_eq", "private", "protected", "public", "register", "reinterpret_cast", "requires", "return", "short", "signed",
    "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw",
    "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
    "wchar_t", "while", "xor", "xor_eq",
    // names the generated code uses
    "std", "ember", "onnx", "gen", "nn", "device", "load", "forward", "run", "input_names", "output_names", "weights",
    "inputs", "visit", "kOpset", "DynTensor", "Device", "main", "assert", "errno", "stdin", "stdout", "stderr", "NULL"};

// A C++ identifier for any string: other characters become '_', no "__", no leading '_' or digit.
std::string identifier(std::string_view text) {
  std::string s;
  for (char ch : text) s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  if (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '_') s.insert(0, s[0] == '_' ? "v" : "v_");
  if (s.empty() || s == "_") s = "v";
  if (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '_') s = "v" + (s[0] == '_' ? s : "_" + s);
  if (s.size() > 1 && s.back() == '_' && s[s.size() - 2] == '_') s.pop_back();
  if (kReserved.count(s)) s += "_";
  return s;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t b = 0;
  for (size_t e; (e = s.find(sep, b)) != std::string_view::npos; b = e + 1) parts.emplace_back(s.substr(b, e - b));
  parts.emplace_back(s.substr(b));
  return parts;
}

// PyTorch's exporter names nodes after the module path: "/layer1/layer1.0/conv1/Conv", where a
// child of a container repeats its parent's name ("layer1.0" inside "layer1"). The dotted
// module path of such a scope: "layer1.0.conv1".
std::string module_path(const std::vector<std::string>& scopes) {
  std::vector<std::string> path;
  for (const std::string& s : scopes) {
    if (s.empty()) continue;
    if (!path.empty() && s.size() > path.back().size() && s.compare(0, path.back().size() + 1, path.back() + ".") == 0)
      path.back() = s;
    else
      path.push_back(s);
  }
  std::string o;
  for (const std::string& p : path) o += (o.empty() ? "" : ".") + p;
  return o;
}

// "GlobalAveragePool" -> "global_average_pool".
std::string snake(std::string_view op) {
  std::string o;
  for (size_t i = 0; i < op.size(); ++i) {
    unsigned char ch = static_cast<unsigned char>(op[i]);
    if (std::isupper(ch) && i > 0 &&
        (std::islower(static_cast<unsigned char>(op[i - 1])) || std::isdigit(static_cast<unsigned char>(op[i - 1]))))
      o += '_';
    o += char(std::tolower(ch));
  }
  return o;
}

std::string without_underscores(std::string s) {
  std::erase(s, '_');
  return s;
}

// A readable base name for a value PyTorch's exporter named "/<scopes>/<Op>[_<k>]_output_<i>":
// the module path and the op ("/layer1/layer1.0/conv1/Conv_output_0" -> "layer1_0_conv1_conv",
// "/layer1/layer1.0/relu/Relu_output_0" -> "layer1_0_relu"). Other names are kept.
std::string readable(const std::string& value) {
  if (value.size() < 2 || value[0] != '/') return value;
  static const std::regex last_re("([A-Za-z][A-Za-z0-9]*?)(_[0-9]+)?_output_([0-9]+)");
  std::vector<std::string> parts = split(std::string_view(value).substr(1), '/');
  std::smatch m;
  const std::string last = parts.back();
  if (!std::regex_match(last, m, last_re)) return value;
  parts.pop_back();
  std::string path = identifier(module_path(parts)), op = snake(m[1].str());
  std::string s = parts.empty() ? op : path;
  // The op is left out where the scope already says it ("relu", "relu_1" for Relu).
  static const std::regex numbered("(.*)_[0-9]+");
  std::string scope = parts.empty() ? "" : identifier(parts.back());
  if (std::smatch sm; std::regex_match(scope, sm, numbered)) scope = sm[1].str();
  if (!parts.empty() && without_underscores(scope) != without_underscores(op)) s += "_" + op;
  s += m[2].str();
  if (m[3].str() != "0") s += "_out" + m[3].str();
  return s;
}

class Names {
 public:
  explicit Names(const std::string& reserved) { used_.insert(reserved); }
  // The identifier of an ONNX value (the same one each time it is asked for).
  std::string of(const std::string& value) {
    auto it = map_.find(value);
    if (it != map_.end()) return it->second;
    std::string base = identifier(readable(value));
    if (members_.count(base)) base += "_out";  // what layer `base` computes
    return map_[value] = fresh(base);
  }
  // The identifier of a value a layer computes: "<layer>_out" for PyTorch's scoped names
  // ("/layer1/layer1.0/conv1/Conv_output_0"), the value's own name otherwise.
  std::string output_of(const std::string& value, const std::string& layer) {
    if (!map_.count(value) && value.size() > 1 && value[0] == '/') map_[value] = fresh(layer + "_out");
    return of(value);
  }
  // A layer member's identifier.
  std::string member(const std::string& base) { return *members_.insert(fresh(base)).first; }
  std::string fresh(const std::string& base) {
    std::string s = base;
    for (int k = 2; used_.count(s); ++k) s = base + "_" + std::to_string(k);
    used_.insert(s);
    return s;
  }

 private:
  std::map<std::string, std::string> map_;
  std::set<std::string> used_, members_;
};

bool std_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

bool is_float_type(int32_t t) { return t == int32_t(DataType::float32) || t == int32_t(DataType::float64); }

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

// ---- what the generator knows about the graph's values ----

// Element type (0: unknown) and rank (-1: unknown) of a value, as far as a simple forward pass
// over the nodes can tell. Only used to pick direct tensor ops whose runtime handler would do
// the same thing; anything unknown keeps onnx::run_node.
struct ValueType {
  int32_t elem = 0;
  int rank = -1;
};

struct Graph {
  const GraphProto& g;
  int64_t opset;
  std::string base_dir;                              // where external initializer data lives
  std::map<std::string, const TensorProto*> consts;  // initializers, Constant 'value' outputs, Identity of those
  std::set<std::string> from_initializer;            // consts that are (Identity chains of) initializers
  std::map<std::string, ValueType> types;
  std::map<std::string, int> uses;  // by nodes and graph outputs

  Graph(const GraphProto& graph, int64_t op, std::string dir) : g(graph), opset(op), base_dir(std::move(dir)) {
    for (const TensorProto& t : g.initializers) {
      consts.emplace(t.name, &t);
      from_initializer.insert(t.name);
      types[t.name] = {t.data_type, int(t.dims.size())};
    }
    for (const ValueInfoProto& v : g.inputs)
      if (!types.count(v.name) && v.type.kind == TypeProto::Kind::tensor)
        types[v.name] = {v.elem_type(), v.shape() ? int(v.shape()->size()) : -1};
    for (const NodeProto& n : g.nodes) {
      for (const std::string& in : n.inputs)
        if (!in.empty()) ++uses[in];
      infer(n);
    }
    for (const ValueInfoProto& v : g.outputs) ++uses[v.name];
  }

  const TensorProto* constant(const std::string& v) const {
    auto it = consts.find(v);
    return it == consts.end() ? nullptr : it->second;
  }
  ValueType type(const std::string& v) const {
    auto it = types.find(v);
    return it == types.end() ? ValueType{} : it->second;
  }
  bool is_float(const std::string& v) const { return is_float_type(type(v).elem); }
  // A constant's values as int64 (nullopt when not a constant of an integer type).
  std::optional<std::vector<int64_t>> ints(const std::string& v) const {
    const TensorProto* t = constant(v);
    if (!t || (t->data_type != int32_t(DataType::int64) && t->data_type != int32_t(DataType::int32)))
      return std::nullopt;
    std::vector<int64_t> out;
    for (double d : to_tensor_data(*t, base_dir).to_doubles()) out.push_back(int64_t(d));
    return out;
  }

 private:
  void infer(const NodeProto& n) {
    const bool fused_conv = n.domain == "com.microsoft" && n.op_type == "FusedConv";  // a Conv's type
    if ((!std_domain(n.domain) && !fused_conv) || n.outputs.empty() || (n.inputs.empty() && n.op_type != "Constant"))
      return;
    const std::string& out = n.outputs[0];
    if (n.op_type == "Constant") {
      const AttributeProto* a = n.attribute("value");
      if (a && a->type == AttributeType::tensor && n.attributes.size() == 1) {
        consts[out] = &a->t;
        types[out] = {a->t.data_type, int(a->t.dims.size())};
      }
      return;
    }
    ValueType x = type(n.inputs[0]);
    static const std::set<std::string> same = {"Identity",      "Relu",
                                               "Clip",          "Sigmoid",
                                               "Tanh",          "Erf",
                                               "Exp",           "Log",
                                               "Sqrt",          "Neg",
                                               "Abs",           "LeakyRelu",
                                               "Softmax",       "LogSoftmax",
                                               "Dropout",       "BatchNormalization",
                                               "Conv",          "MaxPool",
                                               "AveragePool",   "GlobalAveragePool",
                                               "GlobalMaxPool", "LayerNormalization",
                                               "Gelu",          "Transpose",
                                               "Concat"};
    static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Pow"};
    if (same.count(n.op_type) || fused_conv) {
      types[out] = x;
      if (n.op_type == "Identity" && constant(n.inputs[0])) {
        consts[out] = constant(n.inputs[0]);
        if (from_initializer.count(n.inputs[0])) from_initializer.insert(out);
      }
    } else if (binary.count(n.op_type) && n.inputs.size() == 2) {
      ValueType y = type(n.inputs[1]);
      types[out] = {x.elem, x.rank >= 0 && y.rank >= 0 ? std::max(x.rank, y.rank) : -1};
    } else if (n.op_type == "Gemm" || n.op_type == "Flatten") {
      types[out] = {x.elem, 2};
    } else if (n.op_type == "MatMul" && n.inputs.size() == 2) {
      int a = x.rank, b = type(n.inputs[1]).rank;
      int r = a < 0 || b < 0 ? -1 : a == 1 && b == 1 ? 0 : a == 1 ? b - 1 : b == 1 ? a - 1 : std::max(a, b);
      types[out] = {x.elem, r};
    } else if (n.op_type == "Reshape") {
      auto shape = n.inputs.size() == 2 ? ints(n.inputs[1]) : std::nullopt;
      types[out] = {x.elem, shape ? int(shape->size()) : -1};
    } else if (n.op_type == "Unsqueeze" || n.op_type == "Squeeze" || n.op_type == "Gather" || n.op_type == "Slice") {
      types[out] = {x.elem, -1};
    } else if (n.op_type == "Shape") {
      types[out] = {int32_t(DataType::int64), 1};
    } else if (n.op_type == "Cast") {
      const AttributeProto* to = n.attribute("to");
      types[out] = {to && to->type == AttributeType::int_ ? int32_t(to->i) : 0, x.rank};
    }
  }
};

// ---- patterns ----

// An nn layer member that replaces one node (or MatMul + Add).
struct Layer {
  std::string member;                                     // identifier
  std::string type;                                       // "ember::nn::Conv2d"
  std::string config;                                     // the expression that builds it: "nn::Conv2dConfig{...}"
  std::string source;                                     // for the member's comment
  std::vector<std::pair<std::string, DynTensor>> params;  // "weight" -> tensor (host)
  bool has_mode = false;                                  // BatchNorm: set to eval mode after loading
};

// One generated statement per node (or per matched pattern).
struct Stmt {
  enum class Kind { generic, direct, layer, absorbed };
  Kind kind = Kind::generic;
  std::string expr;  // direct: the expression, with $0, $1, ... for the identifiers of `reads`
  std::vector<std::string> reads;
  std::string output;         // direct / layer: the value it defines
  size_t layer = 0;           // layer: index into the layers
  std::string extra_comment;  // a second node folded into this statement
  std::string epilogue;       // layer: a second forward() argument ($0 the input, $1 the next read)
  std::string extra;          // layer: the value $1 names (a FusedConv's residual)
};

// A constant's values on the host (what the weights file stores).
DynTensor host_tensor(const Graph& gr, const std::string& v) {
  return DynTensor::from_data(to_tensor_data(*gr.constant(v), gr.base_dir), Device::cpu());
}

bool f32_initializer(const Graph& gr, const std::string& v, size_t rank) {
  const TensorProto* t = gr.constant(v);
  return t && gr.from_initializer.count(v) && t->data_type == int32_t(DataType::float32) && t->dims.size() == rank;
}

const AttributeProto* attr(const NodeProto& n, const char* name, AttributeType type) {
  const AttributeProto* a = n.attribute(name);
  return a && a->type == type ? a : nullptr;
}
int64_t attr_i(const NodeProto& n, const char* name, int64_t def) {
  const AttributeProto* a = attr(n, name, AttributeType::int_);
  return a ? a->i : def;
}
// Whether every attribute of n is one of `known` (others may change the meaning).
bool only_attrs(const NodeProto& n, std::initializer_list<std::string_view> known) {
  for (const AttributeProto& a : n.attributes)
    if (std::find(known.begin(), known.end(), a.name) == known.end()) return false;
  return true;
}

// The member name of a layer: the module path of its weight ("fc.weight" -> fc) or of its
// node's scope ("/layer1/layer1.0/conv1/Conv" -> layer1_0_conv1), else `fallback`.
std::string layer_base(const NodeProto& n, const std::string& weight, const std::string& fallback) {
  const std::string suffix = ".weight";
  if (weight.size() > suffix.size() && weight.compare(weight.size() - suffix.size(), suffix.size(), suffix) == 0 &&
      weight.find("::") == std::string::npos)
    return identifier(weight.substr(0, weight.size() - suffix.size()));
  if (n.name.size() > 1 && n.name[0] == '/') {
    std::vector<std::string> parts = split(std::string_view(n.name).substr(1), '/');
    parts.pop_back();
    std::string path = module_path(parts);
    if (!path.empty()) return identifier(path);
  }
  return fallback;
}

std::string sizes_text(const std::vector<int64_t>& v) { return ints_text(v); }

// Gemm (transA = 0, alpha = beta = 1, B and a 1-D C initializers) or MatMul + Add of a 1-D
// initializer as nn::Linear: y = x W^T + b, with W the [out, in] weight.
std::optional<Layer> linear_layer(const Graph& gr, const NodeProto& n, const NodeProto* add) {
  const std::string& x = n.inputs[0];
  if (gr.type(x).elem != int32_t(DataType::float32) || !f32_initializer(gr, n.inputs[1], 2)) return std::nullopt;
  const TensorProto& w = *gr.constant(n.inputs[1]);
  bool trans_b = false;
  std::string bias;
  if (n.op_type == "Gemm") {
    if (!only_attrs(n, {"alpha", "beta", "transA", "transB"}) || attr_i(n, "transA", 0) != 0) return std::nullopt;
    for (const char* a : {"alpha", "beta"}) {
      const AttributeProto* f = n.attribute(a);
      if (f && (f->type != AttributeType::float_ || f->f != 1.0f)) return std::nullopt;
    }
    trans_b = attr_i(n, "transB", 0) != 0;
    if (n.inputs.size() == 3) bias = n.inputs[2];
  } else {
    bias = add->inputs[0] == n.outputs[0] ? add->inputs[1] : add->inputs[0];
  }
  const int64_t out = trans_b ? w.dims[0] : w.dims[1], in = trans_b ? w.dims[1] : w.dims[0];
  if (in <= 0 || out <= 0) return std::nullopt;
  if (!bias.empty() && (!f32_initializer(gr, bias, 1) || gr.constant(bias)->dims[0] != out)) return std::nullopt;
  Layer l;
  l.type = "ember::nn::Linear";
  l.config = "nn::LinearConfig{.in_features = " + std::to_string(in) + ", .out_features = " + std::to_string(out) +
             (bias.empty() ? ", .bias = false" : "") + "}";
  DynTensor weight = host_tensor(gr, n.inputs[1]);
  if (!trans_b) weight = contiguous(transpose(weight, 0, 1));
  l.params.emplace_back("weight", weight);
  if (!bias.empty()) l.params.emplace_back("bias", host_tensor(gr, bias));
  l.member = layer_base(n, n.inputs[1], "linear");
  return l;
}

// The symmetric padding of a conv or pool node (nullopt: asymmetric, or an auto_pad it cannot
// express). `same_ok`: SAME_UPPER may be returned as {-1} (nn's padding_same, stride 1 only).
std::optional<std::vector<int64_t>> symmetric_pads(const NodeProto& n, size_t spatial, bool same_ok) {
  const AttributeProto* ap = n.attribute("auto_pad");
  std::string mode = ap ? ap->s : "NOTSET";
  if (ap && ap->type != AttributeType::string) return std::nullopt;
  if (mode == "VALID") return std::vector<int64_t>(spatial, 0);
  if (mode == "SAME_UPPER" && same_ok) {
    const AttributeProto* s = attr(n, "strides", AttributeType::ints);
    if (s && s->ints != std::vector<int64_t>(spatial, 1)) return std::nullopt;
    return std::vector<int64_t>{-1};
  }
  if (mode != "NOTSET") return std::nullopt;
  const AttributeProto* p = n.attribute("pads");
  if (!p) return std::vector<int64_t>(spatial, 0);
  if (p->type != AttributeType::ints || p->ints.size() != 2 * spatial) return std::nullopt;
  std::vector<int64_t> begin(p->ints.begin(), p->ints.begin() + long(spatial)),
      end(p->ints.begin() + long(spatial), p->ints.end());
  if (begin != end) return std::nullopt;
  for (int64_t v : begin)
    if (v < 0) return std::nullopt;
  return begin;
}

// An ints attribute of `size` values (default: `def` repeated), nullopt when malformed.
std::optional<std::vector<int64_t>> window_attr(const NodeProto& n, const char* name, size_t size, int64_t def) {
  const AttributeProto* a = n.attribute(name);
  if (!a) return std::vector<int64_t>(size, def);
  if (a->type != AttributeType::ints || a->ints.size() != size) return std::nullopt;
  for (int64_t v : a->ints)
    if (v < 1) return std::nullopt;
  return a->ints;
}

// Conv with initializer weights (and bias) and symmetric pads as nn::Conv1d/2d/3d.
std::optional<Layer> conv_layer(const Graph& gr, const NodeProto& n) {
  if (!only_attrs(n, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", "activation",
                      "activation_params"}))
    return std::nullopt;
  if (n.inputs.size() < 2 || gr.type(n.inputs[0]).elem != int32_t(DataType::float32)) return std::nullopt;
  const TensorProto* w = gr.constant(n.inputs[1]);
  if (!w || w->dims.size() < 3 || w->dims.size() > 5 || !f32_initializer(gr, n.inputs[1], w->dims.size()))
    return std::nullopt;
  const size_t spatial = w->dims.size() - 2;
  const std::vector<int64_t> kernel(w->dims.begin() + 2, w->dims.end());
  if (const AttributeProto* k = n.attribute("kernel_shape"); k && (k->type != AttributeType::ints || k->ints != kernel))
    return std::nullopt;
  auto stride = window_attr(n, "strides", spatial, 1), dilation = window_attr(n, "dilations", spatial, 1);
  auto pads = symmetric_pads(n, spatial, true);
  const int64_t groups = attr_i(n, "group", 1), out = w->dims[0];
  if (!stride || !dilation || !pads || groups < 1 || out % groups != 0 || out == 0) return std::nullopt;
  for (int64_t k : kernel)
    if (k < 1) return std::nullopt;
  const bool bias = n.inputs.size() > 2 && !n.inputs[2].empty();
  if (bias && (!f32_initializer(gr, n.inputs[2], 1) || gr.constant(n.inputs[2])->dims[0] != out)) return std::nullopt;
  const std::string dim = std::to_string(spatial) + "d";
  Layer l;
  l.type = "ember::nn::Conv" + dim;
  std::string c = "nn::Conv" + dim + "Config{.in_channels = " + std::to_string(w->dims[1] * groups) +
                  ", .out_channels = " + std::to_string(out) + ", .kernel_size = " + sizes_text(kernel);
  if (*stride != std::vector<int64_t>(spatial, 1)) c += ", .stride = " + sizes_text(*stride);
  const bool same = *pads == std::vector<int64_t>{-1};
  if (!same && *pads != std::vector<int64_t>(spatial, 0)) c += ", .padding = " + sizes_text(*pads);
  if (*dilation != std::vector<int64_t>(spatial, 1)) c += ", .dilation = " + sizes_text(*dilation);
  if (groups != 1) c += ", .groups = " + std::to_string(groups);
  if (!bias) c += ", .bias = false";
  if (same) c += ", .padding_same = true";
  l.config = c + "}";
  l.params.emplace_back("weight", host_tensor(gr, n.inputs[1]));
  if (bias) l.params.emplace_back("bias", host_tensor(gr, n.inputs[2]));
  l.member = layer_base(n, n.inputs[1], "conv");
  return l;
}

// Inference BatchNormalization with initializer statistics, on an input of known rank 2 to 5,
// as nn::BatchNorm1d/2d/3d in eval mode.
std::optional<Layer> batch_norm_layer(const Graph& gr, const NodeProto& n) {
  if (!only_attrs(n, {"epsilon", "momentum", "training_mode", "spatial"}) || n.inputs.size() != 5) return std::nullopt;
  if (attr_i(n, "training_mode", 0) != 0 || attr_i(n, "spatial", 1) != 1) return std::nullopt;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) return std::nullopt;
  ValueType x = gr.type(n.inputs[0]);
  if (x.elem != int32_t(DataType::float32) || x.rank < 2 || x.rank > 5) return std::nullopt;
  for (size_t i = 1; i < 5; ++i)
    if (!f32_initializer(gr, n.inputs[i], 1)) return std::nullopt;
  const int64_t c = gr.constant(n.inputs[1])->dims[0];
  for (size_t i = 2; i < 5; ++i)
    if (gr.constant(n.inputs[i])->dims[0] != c) return std::nullopt;
  const AttributeProto* eps = n.attribute("epsilon");
  if (eps && eps->type != AttributeType::float_) return std::nullopt;
  const std::string dim = std::to_string(std::max(1, x.rank - 2)) + "d";
  Layer l;
  l.type = "ember::nn::BatchNorm" + dim;
  l.config = "nn::BatchNorm" + dim + "Config{.num_features = " + std::to_string(c) +
             ", .eps = " + float_literal(eps ? eps->f : 1e-5f) + "}";
  l.params = {{"weight", host_tensor(gr, n.inputs[1])},
              {"bias", host_tensor(gr, n.inputs[2])},
              {"running_mean", host_tensor(gr, n.inputs[3])},
              {"running_var", host_tensor(gr, n.inputs[4])},
              {"num_batches_tracked", DynTensor::zeros(Shape{}, DType::i64, Device::cpu())}};
  l.has_mode = true;
  l.member = layer_base(n, n.inputs[1], "batch_norm");
  return l;
}

// LayerNormalization over the last axis with a 1-D FLOAT initializer scale (and bias) as
// nn::LayerNorm (only the normalised output used).
std::optional<Layer> layer_norm_layer(const Graph& gr, const NodeProto& n) {
  if (!only_attrs(n, {"axis", "epsilon", "stash_type"}) || n.inputs.size() < 2 || n.inputs.size() > 3)
    return std::nullopt;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) return std::nullopt;
  const ValueType x = gr.type(n.inputs[0]);
  const int64_t axis = attr_i(n, "axis", -1);
  if (x.elem != int32_t(DataType::float32) || !(axis == -1 || (x.rank > 0 && axis == x.rank - 1))) return std::nullopt;
  if (attr_i(n, "stash_type", 1) != 1 || !f32_initializer(gr, n.inputs[1], 1)) return std::nullopt;
  const int64_t d = gr.constant(n.inputs[1])->dims[0];
  const bool bias = n.inputs.size() == 3 && !n.inputs[2].empty();
  if (bias && (!f32_initializer(gr, n.inputs[2], 1) || gr.constant(n.inputs[2])->dims[0] != d)) return std::nullopt;
  const AttributeProto* eps = n.attribute("epsilon");
  if (eps && eps->type != AttributeType::float_) return std::nullopt;
  Layer l;
  l.type = "ember::nn::LayerNorm";
  l.config = "nn::LayerNormConfig{.normalized_shape = {" + std::to_string(d) +
             "}, .eps = " + float_literal(eps ? eps->f : 1e-5f) + (bias ? "" : ", .bias = false") + "}";
  l.params.emplace_back("weight", host_tensor(gr, n.inputs[1]));
  if (bias) l.params.emplace_back("bias", host_tensor(gr, n.inputs[2]));
  l.member = layer_base(n, n.inputs[1], "layer_norm");
  return l;
}

// A float constant as a literal (nullopt unless a one-element FLOAT or DOUBLE tensor).
std::optional<std::string> float_constant(const Graph& gr, const std::string& v) {
  const TensorProto* t = gr.constant(v);
  if (!t || t->numel() != 1 ||
      (t->data_type != int32_t(DataType::float32) && t->data_type != int32_t(DataType::float64)))
    return std::nullopt;
  return float_literal(to_tensor_data(*t, gr.base_dir).to_doubles()[0], t->data_type == int32_t(DataType::float64));
}

std::string dims_text(const std::vector<int>& v) {
  return list(v, [](int d) { return std::to_string(d); });
}

// The direct tensor-op expression of a node ($0, $1, ... stand for the identifiers of
// stmt.reads), or false when the node keeps onnx::run_node. Each case matches only when the
// attributes and the known operand types make the call do what the runtime's handler does.
bool direct(const Graph& gr, const NodeProto& n, Stmt& s) {
  if (!std_domain(n.domain) || n.outputs.size() != 1 || n.outputs[0].empty() || n.inputs.empty()) return false;
  for (const std::string& in : n.inputs)
    if (in.empty()) return false;
  const std::string& op = n.op_type;
  const std::string& x = n.inputs[0];
  const ValueType xt = gr.type(x);
  const bool fl = is_float_type(xt.elem);
  s.output = n.outputs[0];
  auto unary = [&](const std::string& fn) {
    s.expr = fn + "($0)";
    s.reads = {x};
    return true;
  };
  auto binary = [&](const std::string& fn) {
    s.expr = fn + "($0, $1)";
    s.reads = {x, n.inputs[1]};
    return true;
  };
  const size_t ni = n.inputs.size();
  const bool plain = n.attributes.empty();
  // Elementwise ops whose handler is the tensor op itself.
  if (plain && ni == 2 && (op == "Add" || op == "Sub" || op == "Mul")) return binary("ember::" + snake(op));
  if (plain && ni == 1 && op == "Identity") {
    s.expr = "$0";
    s.reads = {x};
    return true;
  }
  if (plain && ni == 2 && op == "MatMul" && fl) return binary("ember::matmul");
  if (plain && ni == 2 && op == "Div" && fl) return binary("ember::div");
  static const std::map<std::string, std::string> float_unary = {
      {"Relu", "ember::relu"}, {"Tanh", "ember::tanh"}, {"Sigmoid", "ember::sigmoid"}, {"Erf", "ember::erf"},
      {"Exp", "ember::exp"},   {"Log", "ember::log"},   {"Sqrt", "ember::sqrt"}};
  if (plain && ni == 1 && fl && float_unary.count(op)) return unary(float_unary.at(op));
  if (!fl && op != "Concat" && op != "Reshape" && op != "Transpose" && op != "Unsqueeze" && op != "Flatten")
    return false;

  if (op == "Clip") {  // constant bounds: clamp (min then max, as the handler)
    std::optional<std::string> lo, hi;
    if (gr.opset < 11) {
      if (!only_attrs(n, {"min", "max"}) || ni != 1) return false;
      if (const AttributeProto* a = attr(n, "min", AttributeType::float_)) lo = float_literal(a->f);
      if (const AttributeProto* a = attr(n, "max", AttributeType::float_)) hi = float_literal(a->f);
      if (n.attributes.size() != size_t(lo.has_value()) + size_t(hi.has_value())) return false;
    } else {
      if (!plain || ni > 3) return false;
      if (ni > 1 && !(lo = float_constant(gr, n.inputs[1]))) return false;
      if (ni > 2 && !(hi = float_constant(gr, n.inputs[2]))) return false;
      if ((lo && gr.constant(n.inputs[1])->data_type != xt.elem) ||
          (hi && gr.constant(n.inputs[2])->data_type != xt.elem))
        return false;
    }
    s.reads = {x};
    if (lo && hi)
      s.expr = "ember::clamp($0, " + *lo + ", " + *hi + ")";
    else if (lo)
      s.expr = "ember::clamp_min($0, " + *lo + ")";
    else if (hi)
      s.expr = "ember::clamp_max($0, " + *hi + ")";
    else
      s.expr = "$0";
    return true;
  }
  if ((op == "MaxPool" || op == "AveragePool") && ni == 1) {
    const bool is_max = op == "MaxPool";
    if (!only_attrs(n, {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads",
                        "storage_order", "strides"}))
      return false;
    const AttributeProto* k = attr(n, "kernel_shape", AttributeType::ints);
    if (!k || (k->ints.size() != 1 && k->ints.size() != 2)) return false;
    const size_t sp = k->ints.size();
    if (xt.rank >= 0 && xt.rank != int(sp) + 2) return false;
    auto stride = window_attr(n, "strides", sp, 1), dilation = window_attr(n, "dilations", sp, 1);
    auto pads = symmetric_pads(n, sp, false);
    if (!stride || !dilation || !pads) return false;
    for (size_t i = 0; i < sp; ++i)
      if (k->ints[i] < 1 || (*pads)[i] * 2 > k->ints[i]) return false;
    if (!is_max && *dilation != std::vector<int64_t>(sp, 1)) return false;
    std::string o = ".kernel_size = " + sizes_text(k->ints);
    if (*stride != k->ints) o += ", .stride = " + sizes_text(*stride);
    if (*pads != std::vector<int64_t>(sp, 0)) o += ", .padding = " + sizes_text(*pads);
    if (*dilation != std::vector<int64_t>(sp, 1)) o += ", .dilation = " + sizes_text(*dilation);
    if (attr_i(n, "ceil_mode", 0) != 0) o += ", .ceil_mode = true";
    if (!is_max && attr_i(n, "count_include_pad", 0) == 0) o += ", .count_include_pad = false";
    s.expr = std::string("ember::") + (is_max ? "max" : "avg") + "_pool" + std::to_string(sp) + "d($0, {" + o + "})";
    s.reads = {x};
    return true;
  }
  if ((op == "GlobalAveragePool" || op == "GlobalMaxPool") && plain && ni == 1 && xt.rank >= 3) {
    std::vector<int> spatial;
    for (int d = 2; d < xt.rank; ++d) spatial.push_back(d);
    s.expr = std::string(op == "GlobalAveragePool" ? "ember::mean" : "ember::max") + "($0, " + dims_text(spatial) +
             ", true)";
    s.reads = {x};
    return true;
  }
  if ((op == "Softmax" || op == "LogSoftmax") && gr.opset >= 13 && only_attrs(n, {"axis"}) && ni == 1) {
    s.expr = std::string(op == "Softmax" ? "ember::softmax" : "ember::log_softmax") + "($0, " +
             std::to_string(attr_i(n, "axis", -1)) + ")";
    s.reads = {x};
    return true;
  }
  if (op == "Flatten" && only_attrs(n, {"axis"}) && ni == 1 && xt.rank >= 2) {
    int64_t axis = attr_i(n, "axis", 1);
    if (axis < 0) axis += xt.rank;
    if (axis != 1) return false;  // flatten(x, 1) keeps dim 0: ONNX's [outer, inner] only for axis 1
    s.expr = "ember::flatten($0, 1)";
    s.reads = {x};
    return true;
  }
  if (op == "Concat" && only_attrs(n, {"axis"}) && n.attribute("axis")) {
    int64_t axis = attr_i(n, "axis", 0);
    if (axis < 0 && xt.rank >= 0) axis += xt.rank;
    if (axis < 0 || (xt.rank >= 0 && axis >= xt.rank)) return false;
    std::string items;
    for (size_t i = 0; i < ni; ++i) items += (i ? ", $" : "$") + std::to_string(i);
    s.expr = "ember::cat({" + items + "}, " + std::to_string(axis) + ")";
    s.reads = n.inputs;
    return true;
  }
  if (op == "Reshape" && gr.opset >= 5 && only_attrs(n, {"allowzero"}) && ni == 2) {
    auto shape = gr.ints(n.inputs[1]);
    if (!shape || gr.constant(n.inputs[1])->data_type != int32_t(DataType::int64)) return false;
    int minus = 0;
    for (int64_t d : *shape) {
      if (d == 0 || d < -1) return false;  // 0 copies an input dim (or is empty with allowzero)
      minus += d == -1;
    }
    if (minus > 1) return false;
    s.expr = "ember::reshape($0, " + sizes_text(*shape) + ")";
    s.reads = {x};
    return true;
  }
  if (op == "Transpose" && only_attrs(n, {"perm"}) && ni == 1) {
    std::vector<int> perm;
    if (const AttributeProto* p = n.attribute("perm")) {
      if (p->type != AttributeType::ints) return false;
      for (int64_t v : p->ints) {
        if (v < 0 || v >= int64_t(p->ints.size())) return false;
        perm.push_back(int(v));
      }
    } else {
      if (xt.rank < 0) return false;
      for (int d = xt.rank - 1; d >= 0; --d) perm.push_back(d);
    }
    s.expr = "ember::permute($0, " + dims_text(perm) + ")";
    s.reads = {x};
    return true;
  }
  if (op == "Unsqueeze") {  // one constant axis
    std::optional<std::vector<int64_t>> axes;
    if (gr.opset >= 13 && plain && ni == 2) axes = gr.ints(n.inputs[1]);
    if (gr.opset < 13 && only_attrs(n, {"axes"}) && ni == 1)
      if (const AttributeProto* a = attr(n, "axes", AttributeType::ints)) axes = a->ints;
    if (!axes || axes->size() != 1) return false;
    int64_t axis = (*axes)[0];
    if (axis < 0 && xt.rank >= 0) axis += xt.rank + 1;
    if (axis < 0 || (xt.rank >= 0 && axis > xt.rank)) return false;
    s.expr = "ember::unsqueeze($0, " + std::to_string(axis) + ")";
    s.reads = {x};
    return true;
  }
  return false;
}

std::string substitute(const std::string& expr, const std::vector<std::string>& ids) {
  std::string o;
  for (size_t i = 0; i < expr.size(); ++i) {
    if (expr[i] == '$' && i + 1 < expr.size() && std::isdigit(static_cast<unsigned char>(expr[i + 1]))) {
      size_t j = i + 1;
      while (j < expr.size() && std::isdigit(static_cast<unsigned char>(expr[j]))) ++j;
      o += ids.at(size_t(std::stoul(expr.substr(i + 1, j - i - 1))));
      i = j - 1;
    } else {
      o += expr[i];
    }
  }
  return o;
}

}  // namespace

void generate(const ModelProto& model, const std::string& out_dir, const std::string& name) {
  detail::check_identifier(name, "onnx codegen");
  EMBER_CHECK(!kReserved.count(name), "onnx codegen: the name '", name, "' is reserved");
  int64_t opset = model.opset("");
  if (opset == 0) opset = 1;
  // Convs fused with the ReLU / Clip / residual Add after them, as the runtime runs them
  // (com.microsoft FusedConv; a Conv layer then calls forward(x, ConvEpilogue{...})).
  GraphProto fused_graph = model.graph;
  {
    const Graph unfused(model.graph, opset, model.base_dir);
    fuse_conv_epilogues(fused_graph, opset, model.base_dir,
                        [&](const NodeProto& conv) { return conv_layer(unfused, conv).has_value(); });
  }
  const GraphProto& g = fused_graph;

  // Refuse what the generated code cannot express before writing anything.
  for (const NodeProto& n : g.nodes)
    for (const AttributeProto& a : n.attributes) attribute_expr(a, n);
  for (const TensorProto& t : g.initializers)
    if (!to_dtype(t.data_type))
      EMBER_NOT_IMPLEMENTED("onnx codegen: unsupported dtype ", data_type_name(t.data_type), " of initializer '",
                            t.name, "'");

  Names names(name);
  const std::string nodes_ns = name + "_nodes";
  names.fresh(nodes_ns);
  Graph gr(g, opset, model.base_dir);
  std::set<std::string> graph_outputs;
  for (const ValueInfoProto& v : g.outputs) graph_outputs.insert(v.name);

  // ---- match: one statement per node ----
  std::vector<Stmt> stmts(g.nodes.size());
  std::vector<Layer> layers;
  std::set<std::string> init_names;
  for (const TensorProto& t : g.initializers) init_names.insert(t.name);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const NodeProto& n = g.nodes[k];
    Stmt& s = stmts[k];
    if (s.kind == Stmt::Kind::absorbed) continue;
    std::optional<Layer> layer;
    const bool single = std_domain(n.domain) && n.outputs.size() == 1 && !n.outputs[0].empty() && !n.inputs.empty() &&
                        !n.inputs[0].empty();
    if (single && n.op_type == "Gemm" && (n.inputs.size() == 2 || n.inputs.size() == 3)) {
      layer = linear_layer(gr, n, nullptr);
    } else if (single && n.op_type == "MatMul" && n.inputs.size() == 2 && n.attributes.empty() &&
               gr.uses[n.outputs[0]] == 1 && !graph_outputs.count(n.outputs[0]) && k + 1 < g.nodes.size()) {
      // MatMul + Add of a bias: the Add must be the MatMul's only reader (looked for among the next nodes).
      for (size_t j = k + 1; j < g.nodes.size(); ++j) {
        const NodeProto& a = g.nodes[j];
        if (std::find(a.inputs.begin(), a.inputs.end(), n.outputs[0]) == a.inputs.end()) continue;
        if (std_domain(a.domain) && a.op_type == "Add" && a.attributes.empty() && a.inputs.size() == 2 &&
            a.outputs.size() == 1 && !a.outputs[0].empty() && a.inputs[0] != a.inputs[1] &&
            (layer = linear_layer(gr, n, &a))) {
          stmts[j].kind = Stmt::Kind::absorbed;
          s.output = a.outputs[0];
          s.extra_comment = "node " + std::to_string(j) + (a.name.empty() ? "" : " '" + comment_text(a.name) + "'") +
                            " (Add): + " + comment_text(a.inputs[0] == n.outputs[0] ? a.inputs[1] : a.inputs[0]) +
                            " -> " + comment_text(a.outputs[0]);
        }
        break;
      }
    } else if (single && n.op_type == "Conv") {
      layer = conv_layer(gr, n);
    } else if (n.domain == "com.microsoft" && n.op_type == "FusedConv" && n.outputs.size() == 1 &&
               !n.outputs[0].empty() && n.inputs.size() >= 2 && !n.inputs[0].empty()) {
      const AttributeProto* act = n.attribute("activation");
      const AttributeProto* par = n.attribute("activation_params");
      const std::string a = act ? act->s : "";
      if ((a.empty() || a == "Relu" || (a == "Clip" && par && par->floats.size() == 2)) &&
          (layer = conv_layer(gr, n))) {
        const bool z = n.inputs.size() > 3 && !n.inputs[3].empty();
        auto bound = [&](size_t i) {
          if (a == "Relu") return std::string(i == 0 ? "0.0" : "std::nullopt");
          if (a != "Clip" || std::isinf(par->floats[i])) return std::string("std::nullopt");
          return float_literal(par->floats[i], true);
        };
        s.epilogue = "ember::ConvEpilogue{" + std::string(z ? "$1" : "std::nullopt") + ", " + bound(0) + ", " +
                     bound(1) + "}";
        if (z) s.extra = n.inputs[3];
      }
    } else if (std_domain(n.domain) && !n.outputs.empty() && !n.outputs[0].empty() && !n.inputs.empty() &&
               !n.inputs[0].empty()) {
      if (n.op_type == "BatchNormalization") layer = batch_norm_layer(gr, n);
      if (n.op_type == "LayerNormalization") layer = layer_norm_layer(gr, n);
    }
    if (layer) {
      s.kind = Stmt::Kind::layer;
      s.reads = {n.inputs[0]};
      if (!s.extra.empty()) s.reads.push_back(s.extra);
      if (s.output.empty()) s.output = n.outputs[0];
      layer->source =
          "node '" + comment_text(n.name) + "' (" + n.op_type + (s.extra_comment.empty() ? "" : " + Add") + ")";
      s.layer = layers.size();
      layers.push_back(std::move(*layer));
    } else if (direct(gr, n, s)) {
      s.kind = Stmt::Kind::direct;
    } else {
      s.kind = Stmt::Kind::generic;
      s.reads.clear();
      for (const std::string& in : n.inputs)
        if (!in.empty()) s.reads.push_back(in);
    }
  }

  // ---- drop what nothing reads: Identity and Constant nodes that only fed layer weights or
  // inlined constants, and the initializers behind them ----
  std::set<std::string> needed = graph_outputs;
  std::vector<bool> emitted(g.nodes.size(), false);
  for (size_t k = g.nodes.size(); k-- > 0;) {
    const NodeProto& n = g.nodes[k];
    Stmt& s = stmts[k];
    if (s.kind == Stmt::Kind::absorbed) continue;
    bool live = true;
    if (std_domain(n.domain) && (n.op_type == "Identity" || n.op_type == "Constant")) {
      live = false;
      for (const std::string& o : n.outputs) live = live || (!o.empty() && needed.count(o));
    }
    if (!live) continue;
    emitted[k] = true;
    for (const std::string& r : s.reads) needed.insert(r);
  }

  // Initializers (also those listed as graph inputs) that the statements read become members.
  std::set<std::string> loose;
  for (const TensorProto& t : g.initializers)
    if (needed.count(t.name)) loose.insert(t.name);
  // The layers are named first, so that the values they compute read as "<layer>_out" rather than "<layer>_2".
  store::TensorMap weights;
  bool has_mode = false;
  std::set<std::string> layer_headers;
  for (Layer& l : layers) {
    // Its parameters are "<member>.<param>" in the weights file: keep clear of the initializers' names.
    std::string base = l.member;
    for (int i = 2;; ++i) {
      std::string id = names.member(base);
      bool clash = false;
      for (const auto& [p, t] : l.params) clash = clash || loose.count(id + "." + p);
      if (!clash) {
        l.member = id;
        break;
      }
      base = l.member + "_" + std::to_string(i);
    }
    for (const auto& [p, t] : l.params) weights.insert(l.member + "." + p, t);
    has_mode = has_mode || l.has_mode;
    layer_headers.insert(l.type.find("Linear") != std::string::npos ? "linear"
                         : l.type.find("Conv") != std::string::npos ? "conv"
                                                                    : "norm");
  }
  std::ostringstream members, loads;
  std::set<std::string> stored;
  for (const TensorProto& t : g.initializers) {
    if (!loose.count(t.name) || stored.count(t.name)) continue;
    stored.insert(t.name);
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
      EMBER_NOT_IMPLEMENTED("onnx codegen: unsupported non-tensor input '", v->name, "' (", type_string(v->type), ")");
  for (const ValueInfoProto& v : g.outputs)
    if (v.type.kind != TypeProto::Kind::tensor && v.has_type)
      EMBER_NOT_IMPLEMENTED("onnx codegen: unsupported non-tensor output '", v.name, "' (", type_string(v.type), ")");

  std::string params, def_params;
  for (size_t i = 0; i < inputs.size(); ++i) {
    params += std::string(i ? ", " : "") + "const ember::DynTensor& " + names.of(inputs[i]->name);
    def_params += std::string(i ? ", " : "") + "[[maybe_unused]] const ember::DynTensor& " + names.of(inputs[i]->name);
  }

  // ---- the header ----
  std::ostringstream h;
  h << "// Generated by `ember-onnx generate` from an ONNX model (opset " << opset << ", " << g.nodes.size()
    << " nodes";
  if (!model.producer_name.empty()) h << ", producer " << comment_text(model.producer_name);
  h << ").\n// Plain C++ over ember tensors: edit freely. The weights are in " << name << ".safetensors.\n";
  h << "#pragma once\n\n#include <string>\n#include <vector>\n\n#include \"ember/core/device.hpp\"\n";
  for (const std::string& hdr : layer_headers) h << "#include \"ember/nn/" << hdr << ".hpp\"\n";
  h << "#include \"ember/tensor/dyn_tensor.hpp\"\n\n";
  h << "struct " << name << " {\n";
  h << "  // Loads the weights from a safetensors file (" << name << ".safetensors) onto `device`.\n";
  h << "  static " << name
    << " load(const std::string& weights, ember::Device device = ember::Device::default_device());\n\n";
  h << "  // Graph inputs:\n";
  for (const ValueInfoProto* v : inputs)
    h << "  //   " << names.of(v->name) << ": '" << comment_text(v->name) << "' " << data_type_name(v->elem_type())
      << " " << comment_text(shape_text(v->shape())) << "\n";
  h << "  // The inputs must be on `device` (the tensor ops do not move them).\n";
  h << "  // Returns the graph outputs in order:";
  for (const ValueInfoProto& v : g.outputs) h << " '" << comment_text(v.name) << "'";
  h << "\n  std::vector<ember::DynTensor> forward(" << params << ") const;\n";
  h << "  // The same with the inputs in graph order.\n";
  h << "  std::vector<ember::DynTensor> run(const std::vector<ember::DynTensor>& inputs) const;\n";
  h << "  static std::vector<std::string> input_names();   // the ONNX names\n";
  h << "  static std::vector<std::string> output_names();\n\n";
  h << "  ember::Device device = ember::Device::cpu();\n";
  if (!layers.empty()) {
    h << "  // Layers: the weights file holds their parameters as \"<layer>.weight\", \"<layer>.bias\", ...\n";
    for (const Layer& l : layers) h << "  " << l.type << " " << l.member << ";  // " << l.source << "\n";
  }
  if (!loose.empty()) h << "  // Other weights: the initializers, by their ONNX names.\n" << members.str();
  if (!layers.empty()) {
    h << "  // The layers form an nn module (nn::state_dict, nn::save, nn::to_device, ...).\n  EMBER_MODULE(";
    for (size_t i = 0; i < layers.size(); ++i) h << (i ? ", " : "") << layers[i].member;
    h << ")\n";
  }
  h << "};\n";

  // ---- the source ----
  std::ostringstream nodes_fn, body;
  size_t generic = 0, dropped = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const NodeProto& n = g.nodes[k];
    const Stmt& s = stmts[k];
    if (s.kind == Stmt::Kind::absorbed) continue;
    if (!emitted[k]) {
      ++dropped;
      continue;
    }
    std::string ins, outs_c;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      ins += (i ? ", " : "") + (n.inputs[i].empty() ? std::string("<none>") : n.inputs[i]);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      outs_c += (i ? ", " : "") + (n.outputs[i].empty() ? std::string("<none>") : n.outputs[i]);
    body << "  // node " << k << (n.name.empty() ? "" : " '" + comment_text(n.name) + "'") << " ("
         << (std_domain(n.domain) ? "" : comment_text(n.domain) + "::") << comment_text(n.op_type) << ")";
    if (s.kind == Stmt::Kind::layer)  // its other inputs are the layer's parameters
      body << ": " << comment_text(n.inputs[0]) << " -> " << comment_text(n.outputs[0]) << "\n";
    else
      body << ": " << comment_text(ins) << " -> " << comment_text(outs_c) << "\n";
    if (!s.extra_comment.empty()) body << "  //   + " << s.extra_comment << "\n";
    auto arg = [&](const std::string& v) { return v.empty() ? std::string("ember::DynTensor()") : names.of(v); };
    if (s.kind == Stmt::Kind::layer) {
      const std::string& layer = layers[s.layer].member;
      body << "  ember::DynTensor " << names.output_of(s.output, layer) << " = " << layer << ".forward("
           << arg(s.reads[0]);
      if (!s.epilogue.empty()) {
        std::vector<std::string> ids;
        for (const std::string& r : s.reads) ids.push_back(arg(r));
        body << ", " << substitute(s.epilogue, ids);
      }
      body << ");\n";
      continue;
    }
    if (s.kind == Stmt::Kind::direct) {
      std::vector<std::string> ids;
      for (const std::string& r : s.reads) ids.push_back(arg(r));
      body << "  ember::DynTensor " << names.of(s.output) << " = " << substitute(s.expr, ids) << ";\n";
      continue;
    }
    ++generic;
    std::string fn = "node_" + std::to_string(k);
    nodes_fn << "// node " << k << ": " << comment_text(n.op_type) << "\n";
    nodes_fn << "const onnx::NodeProto& " << fn << "() {\n  static const onnx::NodeProto n = gen::node("
             << quote(n.op_type) << ", " << quote(n.name) << ", " << quote(n.domain) << ",\n      "
             << list(n.inputs, [](const std::string& v) { return quote(v); }) << ", "
             << list(n.outputs, [](const std::string& v) { return quote(v); });
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
  c << "// Generated by `ember-onnx generate`: the graph of " << name << ".hpp as ember layers and tensor ops.\n";
  c << "#include \"" << name
    << ".hpp\"\n\n#include <cstdint>\n#include <limits>\n\n#include \"ember/core/error.hpp\"\n";
  if (!layers.empty()) c << "#include \"ember/nn/module.hpp\"\n";
  c << "#include \"ember/onnx/codegen.hpp\"\n#include \"ember/onnx/runtime.hpp\"\n#include "
       "\"ember/store/safetensors.hpp\"\n"
    << "#include \"ember/tensor/ops.hpp\"\n\n";
  c << "namespace " << nodes_ns << " {\nnamespace onnx = ember::onnx;\nnamespace gen = ember::onnx::gen;\n";
  c << "[[maybe_unused]] constexpr int64_t kOpset = " << opset << ";\n\n";
  if (generic)
    c << "// The nodes run through onnx::run_node (the runtime's op handlers), built once.\n" << nodes_fn.str();
  c << "}  // namespace " << nodes_ns << "\n\n";
  c << name << " " << name << "::load(const std::string& weights, ember::Device device) {\n";
  c << (weights.empty() ? "  (void)weights;\n"
                        : "  ember::store::TensorMap w = ember::store::load_safetensors(weights, device);\n");
  c << "  " << name << " m;\n  m.device = device;\n";
  if (!layers.empty()) {
    c << "  namespace nn = ember::nn;\n";
    for (const Layer& l : layers) c << "  m." << l.member << " = " << l.config << ".init(device);\n";
  }
  c << loads.str();
  if (!layers.empty()) {
    c << "  // The layers' parameters (\"<layer>.weight\", ...); the other tensors of the file are the initializers "
         "above.\n";
    c << "  nn::LoadReport report = nn::load_state_dict(m, {w.begin(), w.end()}, {.strict = false});\n";
    c << "  EMBER_CHECK(report.missing.empty() && report.mismatched.empty(), \"" << name
      << ": \", weights, \" does not fit the layers\\n\", report.str());\n";
    if (has_mode) c << "  nn::set_training(m, false);  // BatchNorm uses its running statistics\n";
  }
  c << "  return m;\n}\n\n";
  c << "std::vector<ember::DynTensor> " << name << "::forward(" << def_params << ") const {\n";
  c << "  namespace onnx = ember::onnx;\n";
  if (dropped)
    c << "  // " << dropped << " Identity / Constant node" << (dropped == 1 ? "" : "s")
      << " that only fed layer weights or inlined constants are left out.\n";
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
