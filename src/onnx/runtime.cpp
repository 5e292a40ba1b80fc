// The ONNX runtime: model loading, input binding and the node loop.
#include "ember/onnx/runtime.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <utility>

#include "ember/onnx/shape_inference.hpp"
#include "ops.hpp"

namespace ember::onnx {
namespace detail {

const Value& OpContext::value(size_t i) const {
  if (!has(i)) fail("input " + std::to_string(i) + " is required but missing");
  return *inputs[i];
}
const DynTensor& OpContext::in(size_t i) const {
  const Value& v = value(i);
  if (!v.is_tensor()) fail("input " + std::to_string(i) + " must be a tensor, got " + v.describe());
  return v.tensor();
}
const std::vector<DynTensor>& OpContext::sequence(size_t i) const {
  const Value& v = value(i);
  if (!v.is_sequence()) fail("input " + std::to_string(i) + " must be a sequence, got " + v.describe());
  return v.elements();
}

int64_t OpContext::attr_i(const char* name, int64_t def) const {
  const AttributeProto* a = attr(name);
  if (!a) return def;
  if (a->type != AttributeType::int_) fail(std::string("attribute '") + name + "' must be an INT");
  return a->i;
}
float OpContext::attr_f(const char* name, float def) const {
  const AttributeProto* a = attr(name);
  if (!a) return def;
  if (a->type == AttributeType::int_) return float(a->i);
  if (a->type != AttributeType::float_) fail(std::string("attribute '") + name + "' must be a FLOAT");
  return a->f;
}
std::string OpContext::attr_s(const char* name, const std::string& def) const {
  const AttributeProto* a = attr(name);
  if (!a) return def;
  if (a->type != AttributeType::string) fail(std::string("attribute '") + name + "' must be a STRING");
  return a->s;
}
std::optional<std::vector<int64_t>> OpContext::attr_ints(const char* name) const {
  const AttributeProto* a = attr(name);
  if (!a) return std::nullopt;
  if (a->type != AttributeType::ints) fail(std::string("attribute '") + name + "' must be INTS");
  return a->ints;
}
std::optional<std::vector<float>> OpContext::attr_floats(const char* name) const {
  const AttributeProto* a = attr(name);
  if (!a) return std::nullopt;
  if (a->type != AttributeType::floats) fail(std::string("attribute '") + name + "' must be FLOATS");
  return a->floats;
}
std::optional<std::vector<int64_t>> OpContext::ints_input(size_t i) const {
  if (!has(i)) return std::nullopt;
  const DynTensor& t = in(i);
  if (!is_int(t.dtype()))
    fail("input " + std::to_string(i) + " must be an integer tensor, got " + std::string(dtype_name(t.dtype())));
  return t.to_vector<int64_t>();
}
std::vector<int64_t> OpContext::required_ints(size_t i) const {
  if (!has(i)) fail("input " + std::to_string(i) + " is required but missing");
  return *ints_input(i);
}
void OpContext::unsupported(const std::string& what) const {
  EMBER_NOT_IMPLEMENTED("onnx: unsupported ", what, " in op '", node.op_type, "' (node '", node.name, "')");
}
[[noreturn]] void rethrow_naming_node(const Error& e, const NodeProto& node) {
  const std::string msg = e.what();
  if (msg.rfind("onnx:", 0) == 0) throw;  // called from a handler: rethrows `e`, whatever its type
  if (dynamic_cast<const NotImplemented*>(&e)) EMBER_NOT_IMPLEMENTED("onnx: op '", node.op_type, "' (node '", node.name, "'): ", msg);
  EMBER_FAIL("onnx: op '", node.op_type, "' (node '", node.name, "'): ", msg);
}
void OpContext::fail(const std::string& what) const {
  EMBER_FAIL("onnx: op '", node.op_type, "' (node '", node.name, "'): ", what);
}

int normalize_axis(int64_t axis, int rank, const OpContext& c) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max(rank, 1))
    c.fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return int(a);
}

Scalar scalar_of(const DynTensor& t) {
  EMBER_CHECK(t.numel() >= 1, "onnx: expected a one-element tensor, got shape ", t.shape());
  if (is_float(t.dtype())) return Scalar(t.to_vector<double>()[0]);
  if (is_bool(t.dtype())) return Scalar(t.to_vector<bool>()[0]);
  return Scalar(t.to_vector<int64_t>()[0]);
}

DType dtype_of_onnx(int32_t elem_type, const OpContext& c) {
  std::optional<DType> d = to_dtype(elem_type);
  if (!d) c.unsupported("dtype " + data_type_name(elem_type));
  return *d;
}

DynTensor tensor_from_proto(const TensorProto& t, const OpContext& c) {
  if (!to_dtype(t.data_type)) c.unsupported("dtype " + data_type_name(t.data_type) + " of tensor '" + t.name + "'");
  return DynTensor::from_data(to_tensor_data(t, c.base_dir), c.device);
}


void collect_reads(const GraphProto& g, std::set<std::string>& reads) {
  for (const NodeProto& n : g.nodes) {
    reads.insert(n.inputs.begin(), n.inputs.end());
    collect_subgraph_reads(n, reads);
  }
}

void collect_subgraph_reads(const NodeProto& n, std::set<std::string>& reads) {
  for (const AttributeProto& a : n.attributes) {
    if (a.g) collect_reads(*a.g, reads);
    for (const GraphProto& sub : a.graphs) collect_reads(sub, reads);
  }
}

std::vector<std::vector<std::string>> release_schedule(const GraphProto& graph, const std::set<std::string>& keep) {
  std::set<std::string> pinned = keep;
  for (const NodeProto& n : graph.nodes) collect_subgraph_reads(n, pinned);
  std::unordered_map<std::string, size_t> last;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& in : graph.nodes[i].inputs)
      if (!in.empty()) last[in] = i;
  std::vector<std::vector<std::string>> dead(graph.nodes.size());
  for (const auto& [name, i] : last)
    if (!pinned.count(name)) dead[i].push_back(name);
  // outputs that nothing reads go right after their node
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& out : graph.nodes[i].outputs)
      if (!out.empty() && !last.count(out) && !pinned.count(out)) dead[i].push_back(out);
  return dead;
}

void run_nodes(const GraphProto& graph, std::map<std::string, Value>& values, int64_t opset, const Device& device,
               const std::string& base_dir, const std::vector<std::vector<std::string>>* release) {
  const OpTable& table = op_table();
  if (release)
    EMBER_CHECK(release->size() == graph.nodes.size(), "onnx: a release schedule of ", release->size(),
                " nodes for a graph of ", graph.nodes.size());
  for (size_t ni = 0; ni < graph.nodes.size(); ++ni) {
    const NodeProto& node = graph.nodes[ni];
    const bool std_domain = node.domain.empty() || node.domain == "ai.onnx";
    const std::string key = std_domain ? node.op_type : node.domain + "::" + node.op_type;
    auto h = table.find(key);
    if (h == table.end()) EMBER_NOT_IMPLEMENTED("onnx: unsupported op '", key, "' (node '", node.name, "')");
    OpContext ctx{node, opset, device, base_dir, {}};
    ctx.scope = &values;
    for (const std::string& in : node.inputs) {
      if (in.empty()) {
        ctx.inputs.emplace_back(std::nullopt);
        continue;
      }
      auto it = values.find(in);
      EMBER_CHECK(it != values.end(), "onnx: node '", node.name, "' (", node.op_type, ") reads '", in,
                  "', which no input, initializer or earlier node provides");
      ctx.inputs.emplace_back(it->second);
    }
    while (!ctx.inputs.empty() && !ctx.inputs.back()) ctx.inputs.pop_back();
    OpResult outs;
    try {
      outs = h->second(ctx);
    } catch (const Error& e) {
      rethrow_naming_node(e, node);
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      if (node.outputs[k].empty()) continue;
      if (k >= outs.size() || !outs[k].defined())
        EMBER_NOT_IMPLEMENTED("onnx: unsupported output ", k, " of op '", node.op_type, "' (node '", node.name, "')");
      values[node.outputs[k]] = outs[k];
    }
    if (release)
      for (const std::string& name : (*release)[ni]) values.erase(name);
  }
}

std::vector<Value> OpContext::run_subgraph(const GraphProto& g, const std::vector<Value>& graph_inputs) const {
  std::map<std::string, Value> values;
  if (scope) values = *scope;
  for (const TensorProto& t : g.initializers) values[t.name] = tensor_from_proto(t, *this);
  if (graph_inputs.size() != g.inputs.size())
    fail("subgraph '" + g.name + "' takes " + std::to_string(g.inputs.size()) + " inputs, got " +
         std::to_string(graph_inputs.size()));
  for (size_t i = 0; i < graph_inputs.size(); ++i) values[g.inputs[i].name] = graph_inputs[i];
  run_nodes(g, values, opset, device, base_dir);
  std::vector<Value> out;
  for (const ValueInfoProto& o : g.outputs) {
    auto it = values.find(o.name);
    if (it == values.end()) fail("subgraph output '" + o.name + "' is not computed");
    out.push_back(it->second);
  }
  return out;
}

const GraphProto& OpContext::graph_attr(const char* name) const {
  const AttributeProto* a = attr(name);
  if (!a || a->type != AttributeType::graph || !a->g) fail(std::string("graph attribute '") + name + "' is required");
  return *a->g;
}

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    register_elementwise_ops(t);
    register_reduce_ops(t);
    register_nn_ops(t);
    register_shape_ops(t);
    register_resize_ops(t);
    register_misc_ops(t);
    register_rnn_ops(t);
    register_control_ops(t);
    register_sequence_ops(t);
    return t;
  }();
  return table;
}

}  // namespace detail

namespace {

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

ValueInfo info_of(const ValueInfoProto& v) {
  ValueInfo i;
  i.name = v.name;
  i.kind = v.type.kind;
  i.elem_type = v.elem_type();
  if (i.elem_type) i.dtype = to_dtype(i.elem_type);
  if (v.type.kind == TypeProto::Kind::tensor) i.shape = v.type.shape;
  i.type = type_string(v.type);
  return i;
}

std::string shape_string(const std::vector<Dimension>& dims) {
  std::ostringstream os;
  os << "[";
  for (size_t k = 0; k < dims.size(); ++k) {
    if (k) os << ",";
    if (dims[k].value) os << *dims[k].value;
    else if (!dims[k].param.empty()) os << dims[k].param;
    else os << "?";
  }
  os << "]";
  return os.str();
}

}  // namespace

Value Value::sequence(std::vector<DynTensor> elements, std::optional<DType> elem_dtype) {
  for (size_t i = 0; i < elements.size(); ++i) {
    EMBER_CHECK(elements[i].defined(), "onnx value: sequence element ", i, " is an undefined tensor");
    if (!elem_dtype) elem_dtype = elements[i].dtype();
    EMBER_CHECK(elements[i].dtype() == *elem_dtype, "onnx value: sequence element ", i, " has dtype ",
                elements[i].dtype(), ", the sequence holds ", *elem_dtype);
  }
  Value v;
  v.kind_ = Kind::sequence;
  v.elements_ = std::move(elements);
  v.elem_dtype_ = elem_dtype;
  return v;
}

Value Value::optional(std::optional<Value> element) {
  Value v;
  v.kind_ = Kind::optional;
  if (element) {
    EMBER_CHECK(element->defined() && !element->is_optional(),
                "onnx value: an optional holds a tensor or a sequence, not ", element->describe());
    v.element_ = std::make_shared<const Value>(std::move(*element));
  }
  return v;
}

const DynTensor& Value::tensor() const {
  EMBER_CHECK(is_tensor(), "onnx value: expected a tensor, got ", describe());
  return tensor_;
}
const std::vector<DynTensor>& Value::elements() const {
  EMBER_CHECK(is_sequence(), "onnx value: expected a sequence, got ", describe());
  return elements_;
}
std::optional<DType> Value::elem_dtype() const {
  EMBER_CHECK(is_sequence(), "onnx value: expected a sequence, got ", describe());
  return elem_dtype_;
}
bool Value::has_element() const {
  EMBER_CHECK(is_optional(), "onnx value: expected an optional, got ", describe());
  return element_ != nullptr;
}
const Value& Value::element() const {
  EMBER_CHECK(has_element(), "onnx value: the optional is empty");
  return *element_;
}

Value Value::to(const Device& device) const {
  auto move = [&](const DynTensor& t) { return !t.defined() || t.device() == device ? t : t.to(device); };
  switch (kind_) {
    case Kind::tensor: return move(tensor_);
    case Kind::sequence: {
      std::vector<DynTensor> out;
      for (const DynTensor& t : elements_) out.push_back(move(t));
      return sequence(std::move(out), elem_dtype_);
    }
    case Kind::optional: return element_ ? optional(element_->to(device)) : optional();
  }
  return *this;
}

std::string Value::describe() const {
  std::ostringstream os;
  switch (kind_) {
    case Kind::tensor:
      if (!tensor_.defined()) return "an undefined tensor";
      os << "a tensor(" << dtype_name(tensor_.dtype()) << ")" << tensor_.shape();
      break;
    case Kind::sequence:
      os << "a sequence of " << elements_.size();
      if (elem_dtype_) os << " " << dtype_name(*elem_dtype_);
      os << " tensors";
      break;
    case Kind::optional:
      if (!element_) return "an empty optional";
      os << "an optional holding " << element_->describe();
      break;
  }
  return os.str();
}

namespace {
std::string proto_label(const std::string& kind, const std::string& name) {
  return "onnx: " + kind + (name.empty() ? "" : " '" + name + "'");
}
}  // namespace

Value to_value(const SequenceProto& s, const Device& device) {
  if (!s.sequence_values.empty() || !s.optional_values.empty())
    EMBER_NOT_IMPLEMENTED(proto_label("sequence", s.name),
                          ": unsupported: sequences of sequences or of optionals (the runtime holds sequences of tensors)");
  std::vector<DynTensor> elements;
  for (const TensorProto& t : s.tensor_values) elements.push_back(DynTensor::from_data(to_tensor_data(t), device));
  return Value::sequence(std::move(elements));
}

Value to_value(const OptionalProto& o, const Device& device) {
  if (o.tensor_value) return Value::optional(DynTensor::from_data(to_tensor_data(*o.tensor_value), device));
  if (o.sequence_value) return Value::optional(to_value(*o.sequence_value, device));
  if (o.optional_value)
    EMBER_NOT_IMPLEMENTED(proto_label("optional", o.name), ": unsupported: an optional of an optional");
  return Value::optional();
}

bool has_op_handler(const std::string& op_type) { return detail::op_table().count(op_type) > 0; }

std::vector<DynTensor> run_node(const NodeProto& node, const std::vector<DynTensor>& inputs, int64_t opset,
                                const Device& device) {
  const std::string key = default_domain(node.domain) ? node.op_type : node.domain + "::" + node.op_type;
  const detail::OpTable& table = detail::op_table();
  auto h = table.find(key);
  if (h == table.end()) EMBER_NOT_IMPLEMENTED("onnx: unsupported op '", key, "' (node '", node.name, "')");
  std::map<std::string, Value> scope;
  detail::OpContext ctx{node, opset, device, "", {}};
  ctx.scope = &scope;
  for (const DynTensor& t : inputs) {
    if (t.defined()) ctx.inputs.emplace_back(t.device() == device ? t : t.to(device));
    else ctx.inputs.emplace_back(std::nullopt);
  }
  while (!ctx.inputs.empty() && !ctx.inputs.back()) ctx.inputs.pop_back();
  detail::OpResult outs;
  try {
    outs = h->second(ctx);
  } catch (const Error& e) {
    detail::rethrow_naming_node(e, node);
  }
  outs.resize(node.outputs.size());
  std::vector<DynTensor> tensors(node.outputs.size());
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    if (node.outputs[k].empty()) continue;
    if (!outs[k].defined())
      EMBER_NOT_IMPLEMENTED("onnx: unsupported output ", k, " of op '", node.op_type, "' (node '", node.name, "')");
    if (!outs[k].is_tensor())
      EMBER_NOT_IMPLEMENTED("onnx: unsupported ", outs[k].describe(), " output ", k, " of op '", node.op_type,
                            "' (node '", node.name, "'): run_node passes tensors only");
    tensors[k] = outs[k].tensor();
  }
  return tensors;
}

Model Model::load(const std::string& path, Device device) {
  ModelProto p = load_model(path);
  std::string base = p.base_dir;
  return from_proto(std::move(p), std::move(device), std::move(base));
}

Model Model::from_proto(ModelProto proto, Device device, std::string base_dir) {
  Model m(std::move(device));
  m.base_dir_ = base_dir.empty() ? proto.base_dir : std::move(base_dir);
  m.opset_ = proto.opset("");
  if (m.opset_ == 0) m.opset_ = 1;
  // Constant subgraphs (shape arithmetic, weight transposes, Shape of static values) run once
  // here, on the model's device, instead of on every run().
  fold_constants(proto.graph, m.opset_, m.device_, m.base_dir_);
  fuse_conv_epilogues(proto.graph, m.opset_, m.base_dir_);
  for (const TensorProto& t : proto.graph.initializers) {
    std::optional<DType> dt = to_dtype(t.data_type);
    if (!dt)
      EMBER_NOT_IMPLEMENTED("onnx: unsupported dtype ", data_type_name(t.data_type), " of initializer '", t.name, "'");
    m.initializers_[t.name] = DynTensor::from_data(to_tensor_data(t, m.base_dir_), m.device_);
  }
  for (const ValueInfoProto& v : proto.graph.inputs)
    if (!m.initializers_.count(v.name)) m.inputs_.push_back(info_of(v));
  for (const ValueInfoProto& v : proto.graph.outputs) m.outputs_.push_back(info_of(v));
  std::set<std::string> outputs;
  for (const ValueInfo& o : m.outputs_) outputs.insert(o.name);
  m.release_ = detail::release_schedule(proto.graph, outputs);
  m.proto_ = std::move(proto);
  return m;
}

namespace {
void collect_unsupported(const GraphProto& g, std::set<std::string>& out) {
  for (const NodeProto& n : g.nodes) {
    const std::string key = default_domain(n.domain) ? n.op_type : n.domain + "::" + n.op_type;
    if (!has_op_handler(key)) out.insert(key);
    for (const AttributeProto& a : n.attributes) {
      if (a.g) collect_unsupported(*a.g, out);
      for (const GraphProto& sg : a.graphs) collect_unsupported(sg, out);
    }
  }
}
}  // namespace

std::vector<std::string> Model::unsupported_ops() const {
  std::set<std::string> out;
  collect_unsupported(proto_.graph, out);
  return {out.begin(), out.end()};
}

namespace {

std::string kind_name(TypeProto::Kind kind) {
  switch (kind) {
    case TypeProto::Kind::tensor: return "a tensor";
    case TypeProto::Kind::sequence: return "a sequence";
    case TypeProto::Kind::optional: return "an optional";
    case TypeProto::Kind::map: return "a map";
    case TypeProto::Kind::sparse_tensor: return "a sparse tensor";
    case TypeProto::Kind::undefined: break;
  }
  return "undeclared";
}

// Checks a fed tensor against the dtype and shape its graph input declares.
void check_tensor_input(const ValueInfo& in, const DynTensor& t) {
  EMBER_CHECK(t.defined(), "onnx: input '", in.name, "' is an undefined tensor");
  if (in.elem_type) {
    if (!in.dtype)
      EMBER_NOT_IMPLEMENTED("onnx: unsupported dtype ", data_type_name(in.elem_type), " of input '", in.name, "'");
    EMBER_CHECK(t.dtype() == *in.dtype, "onnx: input '", in.name, "' has dtype ", t.dtype(), ", the model declares ",
                *in.dtype, " (", in.type, ")");
  }
  if (in.shape) {
    const auto& dims = *in.shape;
    bool ok = int(dims.size()) == t.rank();
    for (size_t k = 0; ok && k < dims.size(); ++k)
      if (dims[k].value && *dims[k].value != t.shape()[int(k)]) ok = false;
    EMBER_CHECK(ok, "onnx: input '", in.name, "' has shape ", t.shape(), ", the model declares ", shape_string(dims));
  }
}

// A fed value checked against the kind its graph input declares (and, for tensors, its dtype
// and shape).
Value bind_input(const ValueInfo& in, const Value& v) {
  EMBER_CHECK(v.defined(), "onnx: input '", in.name, "' is an undefined tensor");
  switch (in.kind) {
    case TypeProto::Kind::tensor:
      EMBER_CHECK(v.is_tensor(), "onnx: input '", in.name, "' is ", v.describe(), ", the model declares ", in.type);
      check_tensor_input(in, v.tensor());
      return v;
    case TypeProto::Kind::sequence:
      EMBER_CHECK(v.is_sequence(), "onnx: input '", in.name, "' is ", v.describe(), ", the model declares ", in.type);
      return v;
    case TypeProto::Kind::optional: return v.is_optional() ? v : Value::optional(v);
    case TypeProto::Kind::map:
    case TypeProto::Kind::sparse_tensor:
      EMBER_NOT_IMPLEMENTED("onnx: unsupported input '", in.name, "' of type ", in.type, " (", kind_name(in.kind), ")");
    case TypeProto::Kind::undefined: break;
  }
  return v;
}

}  // namespace

std::map<std::string, Value> Model::run_values(const std::map<std::string, Value>& inputs) const {
  std::map<std::string, Value> values;
  for (const auto& [name, t] : initializers_) values[name] = t;
  std::set<std::string> declared;
  for (const ValueInfo& in : inputs_) {
    declared.insert(in.name);
    auto it = inputs.find(in.name);
    EMBER_CHECK(it != inputs.end(), "onnx: missing input '", in.name, "' (", in.type, ")");
    values[in.name] = bind_input(in, it->second).to(device_);
  }
  for (const auto& [name, v] : inputs)
    EMBER_CHECK(declared.count(name) || initializers_.count(name), "onnx: '", name, "' is not an input of the model");
  // Graph inputs that are also initializers may be overridden (IR < 4 defaults).
  for (const auto& [name, v] : inputs)
    if (!declared.count(name) && initializers_.count(name)) {
      EMBER_CHECK(v.is_tensor() && v.defined(), "onnx: input '", name,
                  "' overrides an initializer, so it must be a tensor, got ", v.describe());
      values[name] = v.to(device_);
    }

  detail::run_nodes(proto_.graph, values, opset_, device_, base_dir_, &release_);
  std::map<std::string, Value> result;
  for (const ValueInfo& o : outputs_) {
    auto it = values.find(o.name);
    EMBER_CHECK(it != values.end(), "onnx: graph output '", o.name, "' is not computed by any node");
    result[o.name] = it->second;
  }
  return result;
}

std::map<std::string, DynTensor> Model::run(const std::map<std::string, DynTensor>& inputs) const {
  std::map<std::string, Value> fed(inputs.begin(), inputs.end());
  std::map<std::string, DynTensor> result;
  for (auto& [name, v] : run_values(fed)) {
    EMBER_CHECK(v.is_tensor(), "onnx: graph output '", name, "' is ", v.describe(),
                ", not a tensor (Model::run_values returns sequences and optionals)");
    result[name] = v.tensor();
  }
  return result;
}

}  // namespace ember::onnx
