// Shape/type inference for ONNX graphs: one rule per op type over symbolic dims, plus the
// element-wise propagation of small integer tensors that carry shapes (Shape, Gather, Concat...).
#include "ember/onnx/shape_inference.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "ember/core/error.hpp"

namespace ember::onnx {

bool InferredType::fully_static() const {
  return shape && std::all_of(shape->begin(), shape->end(), [](const Dimension& d) { return d.value.has_value(); });
}

namespace {
std::string dims_string(const std::optional<std::vector<Dimension>>& shape) {
  if (!shape) return "[rank unknown]";
  std::ostringstream os;
  os << "[";
  for (size_t k = 0; k < shape->size(); ++k) {
    const Dimension& d = (*shape)[k];
    if (k) os << ",";
    if (d.value)
      os << *d.value;
    else if (!d.param.empty())
      os << d.param;
    else
      os << "?";
  }
  os << "]";
  return os.str();
}
}  // namespace

std::string InferredType::str() const {
  return (elem_type ? data_type_name(elem_type) : std::string("?")) + dims_string(shape);
}

namespace {

using Dims = std::vector<Dimension>;
constexpr int32_t kFloat = int32_t(DataType::float32);
constexpr int32_t kInt64 = int32_t(DataType::int64);
constexpr int32_t kBool = int32_t(DataType::boolean);
// Constants larger than this are not read: shape arguments are small, weights are not needed.
constexpr int64_t kMaxConstElems = 4096;
// Integer tensors longer than this are not followed element by element.
constexpr size_t kMaxTrackedElems = 64;

Dimension fixed(int64_t v) {
  Dimension d;
  d.value = v;
  return d;
}
bool is_one(const Dimension& d) { return d.value && *d.value == 1; }
bool same_dim(const Dimension& a, const Dimension& b) {
  if (a.value || b.value) return a.value && b.value && *a.value == *b.value;
  return !a.param.empty() && a.param == b.param;
}
bool is_int_type(int32_t t) {
  switch (DataType(t)) {
    case DataType::int8:
    case DataType::int16:
    case DataType::int32:
    case DataType::int64:
    case DataType::uint8:
    case DataType::uint16:
    case DataType::uint32:
    case DataType::uint64:
      return true;
    default:
      return false;
  }
}

// Numpy broadcasting of one dim pair: 1 yields to the other side, a static size other than 1
// is the only valid result, equal symbols stay, anything else is unknown.
Dimension broadcast_dim(const Dimension& a, const Dimension& b) {
  if (is_one(a)) return b;
  if (is_one(b)) return a;
  if (a.value && b.value) return *a.value == *b.value ? a : Dimension{};
  if (a.value) return a;
  if (b.value) return b;
  return same_dim(a, b) ? a : Dimension{};
}

std::optional<Dims> broadcast(const std::vector<std::optional<Dims>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) {
    if (!s) return std::nullopt;
    rank = std::max(rank, s->size());
  }
  Dims out(rank, fixed(1));
  for (const auto& s : shapes)
    for (size_t k = 0; k < s->size(); ++k) {
      Dimension& o = out[rank - s->size() + k];
      o = broadcast_dim(o, (*s)[k]);
    }
  return out;
}

// The product of dims: static, a lone symbol (times 1), or unknown.
Dimension product(Dims::const_iterator first, Dims::const_iterator last) {
  int64_t p = 1;
  const Dimension* symbol = nullptr;
  for (auto it = first; it != last; ++it) {
    if (it->value)
      p *= *it->value;
    else if (it->is_symbolic() && !symbol)
      symbol = &*it;
    else
      return {};
  }
  if (!symbol) return fixed(p);
  return p == 1 ? *symbol : Dimension{};
}

// The "most specific" of two views of one dim (static > symbolic > unknown).
Dimension refine(const Dimension& a, const Dimension& b) {
  if (a.value) return a;
  if (b.value) return b;
  if (a.is_symbolic()) return a;
  return b;
}

int64_t norm_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

const AttributeProto* attr(const NodeProto& n, const char* name) { return n.attribute(name); }
int64_t attr_i(const NodeProto& n, const char* name, int64_t def) {
  const AttributeProto* a = attr(n, name);
  return a && a->type == AttributeType::int_ ? a->i : def;
}
std::optional<std::vector<int64_t>> attr_ints(const NodeProto& n, const char* name) {
  const AttributeProto* a = attr(n, name);
  if (!a || a->type != AttributeType::ints) return std::nullopt;
  return a->ints;
}
std::optional<std::vector<double>> attr_floats(const NodeProto& n, const char* name) {
  const AttributeProto* a = attr(n, name);
  if (!a || a->type != AttributeType::floats) return std::nullopt;
  return std::vector<double>(a->floats.begin(), a->floats.end());
}
std::string attr_s(const NodeProto& n, const char* name, const std::string& def) {
  const AttributeProto* a = attr(n, name);
  return a && a->type == AttributeType::string ? a->s : def;
}

class Inference;

// One node under inference: its inputs' facts and the outputs being built.
struct NodeView {
  const NodeProto& node;
  Inference& inf;
  int64_t opset;
  std::vector<InferredType> out;
  std::vector<std::optional<Dims>> out_elems;

  bool has(size_t i) const { return i < node.inputs.size() && !node.inputs[i].empty(); }
  const InferredType& in(size_t i) const;
  const std::optional<Dims>& shape(size_t i) const { return in(i).shape; }
  int32_t elem(size_t i) const { return in(i).elem_type; }
  std::optional<size_t> rank(size_t i) const {
    return shape(i) ? std::optional<size_t>(shape(i)->size()) : std::nullopt;
  }
  // A rank-0/1 integer input element by element (symbols included), when followed.
  const std::optional<Dims>& elems(size_t i) const;
  // The same, only when every element is static.
  std::optional<std::vector<int64_t>> ints(size_t i) const;
  // A small constant input of any numeric type.
  std::optional<std::vector<double>> doubles(size_t i) const;

  void set(size_t k, int32_t elem_type, std::optional<Dims> s) {
    if (k >= out.size()) return;
    out[k].elem_type = elem_type;
    out[k].shape = std::move(s);
  }
  void same_as_input(size_t k = 0, size_t i = 0) { set(k, elem(i), shape(i)); }
};

using Rule = std::function<void(NodeView&)>;
const std::unordered_map<std::string, Rule>& rules();

class Inference {
 public:
  Inference(const GraphProto& g, int64_t opset, const std::string& base_dir) : g_(g), opset_(opset) {
    std::map<std::string, const ValueInfoProto*> inputs;
    for (const ValueInfoProto& v : g.inputs) inputs[v.name] = &v;
    for (const ValueInfoProto& v : g.value_info) declared_[v.name] = &v;
    for (const ValueInfoProto& v : g.outputs) declared_[v.name] = &v;
    for (const TensorProto& t : g.initializers) {
      InferredType ty{t.data_type, Dims{}};
      for (int64_t d : t.dims) ty.shape->push_back(fixed(d));
      types_[t.name] = ty;
      // An initializer listed as a graph input is a default the caller may override.
      if (inputs.count(t.name) || t.numel() > kMaxConstElems || !to_dtype(t.data_type)) continue;
      try {
        add_constant(t.name, to_tensor_data(t, base_dir));
      } catch (const Error&) {
        // Unreadable data (external file absent): the runtime reports it; inference goes on.
      }
    }
    for (const ValueInfoProto& v : g.inputs)
      if (v.has_type && v.type.kind == TypeProto::Kind::tensor) types_[v.name] = {v.type.elem_type, v.type.shape};
  }

  std::map<std::string, InferredType> run() {
    const auto& table = rules();
    for (const NodeProto& n : g_.nodes) {
      NodeView v{n, *this, opset_, std::vector<InferredType>(n.outputs.size()), {}};
      v.out_elems.resize(n.outputs.size());
      const bool std_domain = n.domain.empty() || n.domain == "ai.onnx";
      if (std_domain) {
        auto r = table.find(n.op_type);
        if (r != table.end()) r->second(v);
      } else if (n.domain == "com.microsoft" && n.op_type == "FusedConv") {  // Conv's type and shape
        table.at("Conv")(v);
      } else if (n.domain == "com.microsoft" && n.op_type == "QLinearAdd") {  // A's type, A and B broadcast
        v.set(0, v.elem(0), broadcast({v.shape(0), v.shape(3)}));
      }
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const std::string& name = n.outputs[k];
        if (name.empty()) continue;
        types_[name] = with_declared(name, v.out[k]);
        if (v.out_elems[k] && v.out_elems[k]->size() <= kMaxTrackedElems) elems_[name] = *v.out_elems[k];
      }
    }
    return types_;
  }

  const InferredType& type(const std::string& name) const {
    static const InferredType none;
    auto it = types_.find(name);
    return it == types_.end() ? none : it->second;
  }
  const std::optional<Dims>& elems(const std::string& name) const {
    static const std::optional<Dims> none;
    auto it = elems_.find(name);
    return it == elems_.end() ? none : it->second;
  }
  const TensorData* constant(const std::string& name) const {
    auto it = consts_.find(name);
    return it == consts_.end() ? nullptr : &it->second;
  }
  void add_constant(const std::string& name, TensorData d) {
    if (is_int(d.dtype()) && d.shape().rank() <= 1 && size_t(d.numel()) <= kMaxTrackedElems) {
      Dims e;
      for (int64_t x : d.to_vector<int64_t>()) e.push_back(fixed(x));
      elems_[name] = std::move(e);
    }
    consts_[name] = std::move(d);
  }

 private:
  // Refines an inferred type with the declared one; contradictions of static facts are errors.
  InferredType with_declared(const std::string& name, const InferredType& inferred) const {
    auto it = declared_.find(name);
    if (it == declared_.end() || !it->second->has_type || it->second->type.kind != TypeProto::Kind::tensor)
      return inferred;
    const InferredType declared{it->second->type.elem_type, it->second->type.shape};
    InferredType out = inferred;
    bool conflict = inferred.elem_type && declared.elem_type && inferred.elem_type != declared.elem_type;
    if (!out.elem_type) out.elem_type = declared.elem_type;
    if (!inferred.shape) {
      out.shape = declared.shape;
    } else if (declared.shape) {
      if (inferred.shape->size() != declared.shape->size()) {
        conflict = true;
      } else {
        for (size_t k = 0; k < out.shape->size(); ++k) {
          const Dimension& a = (*inferred.shape)[k];
          const Dimension& b = (*declared.shape)[k];
          if (a.value && b.value && *a.value != *b.value) conflict = true;
          (*out.shape)[k] = refine(a, b);
        }
      }
    }
    EMBER_CHECK(!conflict, "onnx: shape inference: value '", name, "' is inferred as ", inferred.str(),
                " but declared as ", declared.str());
    return out;
  }

  const GraphProto& g_;
  int64_t opset_;
  std::map<std::string, const ValueInfoProto*> declared_;
  std::map<std::string, InferredType> types_;
  std::map<std::string, TensorData> consts_;
  std::map<std::string, std::optional<Dims>> elems_;  // map nodes are stable: views hold references
};

const InferredType& NodeView::in(size_t i) const {
  static const InferredType none;
  return has(i) ? inf.type(node.inputs[i]) : none;
}
const std::optional<Dims>& NodeView::elems(size_t i) const {
  static const std::optional<Dims> none;
  return has(i) ? inf.elems(node.inputs[i]) : none;
}
std::optional<std::vector<int64_t>> NodeView::ints(size_t i) const {
  const std::optional<Dims>& e = elems(i);
  if (!e) return std::nullopt;
  std::vector<int64_t> v;
  for (const Dimension& d : *e) {
    if (!d.value) return std::nullopt;
    v.push_back(*d.value);
  }
  return v;
}
std::optional<std::vector<double>> NodeView::doubles(size_t i) const {
  const TensorData* d = has(i) ? inf.constant(node.inputs[i]) : nullptr;
  if (!d) return std::nullopt;
  return d->to_vector<double>();
}

// ---- rules ----------------------------------------------------------------------------------

void unary(NodeView& v) { v.same_as_input(); }
void to_bool(NodeView& v) { v.set(0, kBool, v.shape(0)); }

void broadcast_rule(NodeView& v, int32_t elem_type) {
  std::vector<std::optional<Dims>> shapes;
  for (size_t i = 0; i < v.node.inputs.size(); ++i) shapes.push_back(v.shape(i));
  v.set(0, elem_type, broadcast(shapes));
}

// Add/Sub/Mul/Div on shape-carrying integers: static values compute, x+0, x-0, x*1, x/1 keep
// the symbol.
void arithmetic(NodeView& v) {
  broadcast_rule(v, v.elem(0));
  const std::optional<Dims>& a = v.elems(0);
  const std::optional<Dims>& b = v.elems(1);
  if (!a || !b || !is_int_type(v.elem(0))) return;
  if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return;
  const std::string& op = v.node.op_type;
  Dims out;
  for (size_t k = 0; k < std::max(a->size(), b->size()); ++k) {
    const Dimension& x = (*a)[a->size() == 1 ? 0 : k];
    const Dimension& y = (*b)[b->size() == 1 ? 0 : k];
    Dimension r;
    if (x.value && y.value) {
      if (op == "Add")
        r = fixed(*x.value + *y.value);
      else if (op == "Sub")
        r = fixed(*x.value - *y.value);
      else if (op == "Mul")
        r = fixed(*x.value * *y.value);
      else if (*y.value != 0)
        r = fixed(*x.value / *y.value);
    } else if (y.value &&
               ((*y.value == 0 && (op == "Add" || op == "Sub")) || (*y.value == 1 && (op == "Mul" || op == "Div")))) {
      r = x;
    } else if (x.value && ((*x.value == 0 && op == "Add") || (*x.value == 1 && op == "Mul"))) {
      r = y;
    }
    out.push_back(r);
  }
  v.out_elems[0] = out;
}

void pass_elems(NodeView& v) { v.out_elems[0] = v.elems(0); }

void cast(NodeView& v) {
  const int32_t to = int32_t(attr_i(v.node, "to", 0));
  v.set(0, to, v.shape(0));
  if (is_int_type(to) && is_int_type(v.elem(0))) pass_elems(v);
}

void constant(NodeView& v) {
  const NodeProto& n = v.node;
  TensorData data;
  if (const AttributeProto* a = attr(n, "value"); a && a->type == AttributeType::tensor) {
    InferredType t{a->t.data_type, Dims{}};
    for (int64_t d : a->t.dims) t.shape->push_back(fixed(d));
    v.out[0] = t;
    if (a->t.numel() > kMaxConstElems || !to_dtype(a->t.data_type)) return;
    try {
      data = to_tensor_data(a->t);
    } catch (const Error&) {
      return;
    }
  } else if (const AttributeProto* a = attr(n, "value_int")) {
    data = TensorData::from_vector<int64_t>({a->i}, Shape{});
  } else if (const AttributeProto* a = attr(n, "value_ints")) {
    data = TensorData::from_vector<int64_t>(a->ints, Shape{int64_t(a->ints.size())});
  } else if (const AttributeProto* a = attr(n, "value_float")) {
    data = TensorData::from_vector<float>({a->f}, Shape{});
  } else if (const AttributeProto* a = attr(n, "value_floats")) {
    data = TensorData::from_vector<float>(a->floats, Shape{int64_t(a->floats.size())});
  } else if (attr(n, "value_string")) {
    v.set(0, int32_t(DataType::string), Dims{});
    return;
  } else if (const AttributeProto* a = attr(n, "value_strings")) {
    v.set(0, int32_t(DataType::string), Dims{fixed(int64_t(a->strings.size()))});
    return;
  } else {
    return;
  }
  InferredType t{from_dtype(data.dtype()), Dims{}};
  for (int64_t d : data.shape().dims()) t.shape->push_back(fixed(d));
  v.out[0] = t;
  if (!v.node.outputs.empty() && !v.node.outputs[0].empty()) v.inf.add_constant(v.node.outputs[0], std::move(data));
}

// Spatial output size of a convolution or pooling window (static sizes only).
std::optional<int64_t> window_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
                                  const std::string& auto_pad, bool ceil_mode) {
  if (s <= 0) return std::nullopt;
  const int64_t dk = d * (k - 1) + 1;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return (in + s - 1) / s;
  if (auto_pad == "VALID") pb = pe = 0;
  const int64_t span = in + pb + pe - dk;
  if (span < 0) return std::nullopt;
  if (!ceil_mode) return span / s + 1;
  int64_t out = (span + s - 1) / s + 1;
  if ((out - 1) * s >= in + pb) --out;  // the last window must start inside the input or left pad
  return out;
}

struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
  std::string auto_pad;
};

// kernel_shape/strides/dilations/pads of a node with `sp` spatial dims; kernel from the weight
// when not given. nullopt when the kernel is unknown.
std::optional<Window> window_of(const NodeProto& n, size_t sp, const std::optional<Dims>& weight) {
  Window w;
  if (auto k = attr_ints(n, "kernel_shape")) {
    w.kernel = *k;
  } else {
    if (!weight || weight->size() != sp + 2) return std::nullopt;
    for (size_t i = 0; i < sp; ++i) {
      if (!(*weight)[2 + i].value) return std::nullopt;
      w.kernel.push_back(*(*weight)[2 + i].value);
    }
  }
  if (w.kernel.size() != sp) return std::nullopt;
  w.strides = attr_ints(n, "strides").value_or(std::vector<int64_t>(sp, 1));
  w.dilations = attr_ints(n, "dilations").value_or(std::vector<int64_t>(sp, 1));
  w.pads = attr_ints(n, "pads").value_or(std::vector<int64_t>(2 * sp, 0));
  w.auto_pad = attr_s(n, "auto_pad", "NOTSET");
  if (w.strides.size() != sp || w.dilations.size() != sp || w.pads.size() != 2 * sp) return std::nullopt;
  return w;
}

void conv(NodeView& v, bool transpose) {
  const std::optional<Dims>& x = v.shape(0);
  const std::optional<Dims>& wt = v.shape(1);
  if (!x) return v.set(0, v.elem(0), std::nullopt);
  if (x->size() < 3) return v.set(0, v.elem(0), std::nullopt);
  const size_t sp = x->size() - 2;
  const int64_t group = attr_i(v.node, "group", 1);
  Dims out{(*x)[0]};
  if (!wt || wt->size() != x->size())
    out.emplace_back();
  else if (!transpose)
    out.push_back((*wt)[0]);
  else
    out.push_back((*wt)[1].value ? fixed(*(*wt)[1].value * group) : Dimension{});
  std::optional<Window> w = window_of(v.node, sp, wt);
  const auto output_shape = attr_ints(v.node, "output_shape");
  const auto output_padding = attr_ints(v.node, "output_padding").value_or(std::vector<int64_t>(sp, 0));
  for (size_t i = 0; i < sp; ++i) {
    const Dimension& in = (*x)[2 + i];
    if (transpose && output_shape && output_shape->size() == sp) {
      out.push_back(fixed((*output_shape)[i]));
    } else if (!w || !in.value) {
      out.emplace_back();
    } else if (!transpose) {
      auto o = window_out(*in.value, w->kernel[i], w->strides[i], w->dilations[i], w->pads[i], w->pads[sp + i],
                          w->auto_pad, false);
      out.push_back(o ? fixed(*o) : Dimension{});
    } else if (w->auto_pad == "SAME_UPPER" || w->auto_pad == "SAME_LOWER") {
      out.push_back(fixed(*in.value * w->strides[i]));
    } else {
      const int64_t pads = w->auto_pad == "VALID" ? 0 : w->pads[i] + w->pads[sp + i];
      const int64_t op = i < output_padding.size() ? output_padding[i] : 0;
      out.push_back(fixed(w->strides[i] * (*in.value - 1) + op + w->dilations[i] * (w->kernel[i] - 1) + 1 - pads));
    }
  }
  v.set(0, v.elem(0), out);
}

void pool(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  if (!x || x->size() < 3) return v.set(0, v.elem(0), std::nullopt);
  const size_t sp = x->size() - 2;
  std::optional<Window> w = window_of(v.node, sp, std::nullopt);
  const bool ceil_mode = attr_i(v.node, "ceil_mode", 0) != 0;
  Dims out{(*x)[0], (*x)[1]};
  for (size_t i = 0; i < sp; ++i) {
    const Dimension& in = (*x)[2 + i];
    std::optional<int64_t> o;
    if (w && in.value)
      o = window_out(*in.value, w->kernel[i], w->strides[i], w->dilations[i], w->pads[i], w->pads[sp + i], w->auto_pad,
                     ceil_mode);
    out.push_back(o ? fixed(*o) : Dimension{});
  }
  v.set(0, v.elem(0), out);
  v.set(1, kInt64, out);  // MaxPool indices
}

void global_pool(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  if (!x || x->size() < 2) return v.set(0, v.elem(0), std::nullopt);
  Dims out{(*x)[0], (*x)[1]};
  out.resize(x->size(), fixed(1));
  v.set(0, v.elem(0), out);
}

void gemm(NodeView& v) {
  const std::optional<Dims>& a = v.shape(0);
  const std::optional<Dims>& b = v.shape(1);
  Dims out(2);
  if (a && a->size() == 2) out[0] = (*a)[attr_i(v.node, "transA", 0) ? 1 : 0];
  if (b && b->size() == 2) out[1] = (*b)[attr_i(v.node, "transB", 0) ? 0 : 1];
  v.set(0, v.elem(0), out);
}

void matmul(NodeView& v) {
  const std::optional<Dims>& a0 = v.shape(0);
  const std::optional<Dims>& b0 = v.shape(1);
  if (!a0 || !b0 || a0->empty() || b0->empty()) return v.set(0, v.elem(0), std::nullopt);
  Dims a = *a0, b = *b0;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), fixed(1));
  if (b_vec) b.push_back(fixed(1));
  std::optional<Dims> batch = broadcast({Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2)});
  Dims out = *batch;
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  v.set(0, v.elem(0), out);
}

void flatten(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  if (!x) return v.set(0, v.elem(0), Dims(2));
  const int64_t axis = norm_axis(attr_i(v.node, "axis", 1), int64_t(x->size()));
  if (axis < 0 || axis > int64_t(x->size())) return v.set(0, v.elem(0), Dims(2));
  v.set(0, v.elem(0), Dims{product(x->begin(), x->begin() + axis), product(x->begin() + axis, x->end())});
}

// The element count of dims as a static factor and a sorted list of symbols; nullopt when a
// dim is unknown.
std::optional<std::pair<int64_t, std::vector<std::string>>> factor(const Dims& dims) {
  int64_t p = 1;
  std::vector<std::string> symbols;
  for (const Dimension& d : dims) {
    if (d.value)
      p *= *d.value;
    else if (d.is_symbolic())
      symbols.push_back(d.param);
    else
      return std::nullopt;
  }
  std::sort(symbols.begin(), symbols.end());
  return std::make_pair(p, symbols);
}

void reshape(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  const std::optional<Dims>& target = v.elems(1);
  if (!target) {
    const std::optional<Dims>& ts = v.shape(1);
    if (ts && ts->size() == 1 && (*ts)[0].value) return v.set(0, v.elem(0), Dims(size_t(*(*ts)[0].value)));
    return v.set(0, v.elem(0), std::nullopt);
  }
  const bool allowzero = attr_i(v.node, "allowzero", 0) != 0;
  Dims out;
  std::optional<size_t> infer_at;
  for (size_t i = 0; i < target->size(); ++i) {
    const Dimension& t = (*target)[i];
    if (t.value && *t.value == 0 && !allowzero)
      out.push_back(x && i < x->size() ? (*x)[i] : Dimension{});
    else if (t.value && *t.value == -1)
      infer_at = i, out.emplace_back();
    else if (t.value && *t.value < 0)
      out.emplace_back();
    else
      out.push_back(t);
  }
  if (infer_at && x) {
    Dims rest = out;
    rest.erase(rest.begin() + long(*infer_at));
    auto total = factor(*x);
    auto known = factor(rest);
    if (total && known && known->first != 0 && total->first % known->first == 0) {
      std::vector<std::string> left;
      std::set_difference(total->second.begin(), total->second.end(), known->second.begin(), known->second.end(),
                          std::back_inserter(left));
      const bool covered =
          std::includes(total->second.begin(), total->second.end(), known->second.begin(), known->second.end());
      const int64_t q = total->first / known->first;
      if (covered && left.empty())
        out[*infer_at] = fixed(q);
      else if (covered && left.size() == 1 && q == 1)
        out[*infer_at].param = left[0];
    }
  }
  v.set(0, v.elem(0), out);
  if (v.elem(0) && is_int_type(v.elem(0)) && out.size() <= 1) pass_elems(v);
}

void transpose(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  if (!x) return v.set(0, v.elem(0), std::nullopt);
  std::vector<int64_t> perm = attr_ints(v.node, "perm").value_or(std::vector<int64_t>{});
  if (perm.empty())
    for (size_t k = 0; k < x->size(); ++k) perm.push_back(int64_t(x->size() - 1 - k));
  if (perm.size() != x->size()) return v.set(0, v.elem(0), std::nullopt);
  Dims out;
  for (int64_t p : perm) {
    p = norm_axis(p, int64_t(x->size()));
    if (p < 0 || p >= int64_t(x->size())) return v.set(0, v.elem(0), std::nullopt);
    out.push_back((*x)[size_t(p)]);
  }
  v.set(0, v.elem(0), out);
}

void concat(NodeView& v) {
  std::optional<Dims> out;
  const size_t n = v.node.inputs.size();
  for (size_t i = 0; i < n && !out; ++i)
    if (v.shape(i)) out = v.shape(i);
  if (!out) return v.set(0, v.elem(0), std::nullopt);
  const int64_t axis = norm_axis(attr_i(v.node, "axis", 0), int64_t(out->size()));
  if (axis < 0 || axis >= int64_t(out->size())) return v.set(0, v.elem(0), std::nullopt);
  std::optional<int64_t> sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::optional<Dims>& s = v.shape(i);
    if (!s) {
      sum.reset();
      continue;
    }
    if (s->size() != out->size()) return v.set(0, v.elem(0), std::nullopt);
    for (size_t k = 0; k < s->size(); ++k)
      if (int64_t(k) != axis) (*out)[k] = refine((*out)[k], (*s)[k]);
    const Dimension& d = (*s)[size_t(axis)];
    if (sum && d.value)
      *sum += *d.value;
    else
      sum.reset();
  }
  (*out)[size_t(axis)] = sum ? fixed(*sum) : Dimension{};
  v.set(0, v.elem(0), out);
  Dims joined;
  for (size_t i = 0; i < n; ++i) {
    const std::optional<Dims>& e = v.elems(i);
    if (!e) return;
    joined.insert(joined.end(), e->begin(), e->end());
  }
  v.out_elems[0] = joined;
}

void split(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  const size_t n = v.node.outputs.size();
  if (!x) {
    for (size_t k = 0; k < n; ++k) v.set(k, v.elem(0), std::nullopt);
    return;
  }
  const int64_t axis = norm_axis(attr_i(v.node, "axis", 0), int64_t(x->size()));
  if (axis < 0 || axis >= int64_t(x->size())) return;
  std::optional<std::vector<int64_t>> sizes =
      v.opset >= 13 ? (v.has(1) ? v.ints(1) : std::nullopt) : attr_ints(v.node, "split");
  const Dimension& d = (*x)[size_t(axis)];
  if (!sizes && !(v.opset >= 13 && v.has(1)) && d.value && n > 0) {
    // Equal parts; since opset 18 the last one may be smaller.
    const int64_t part = (*d.value + int64_t(n) - 1) / int64_t(n);
    sizes = std::vector<int64_t>();
    for (size_t k = 0; k < n; ++k) sizes->push_back(std::max<int64_t>(0, std::min(part, *d.value - part * int64_t(k))));
  }
  for (size_t k = 0; k < n; ++k) {
    Dims out = *x;
    out[size_t(axis)] = sizes && k < sizes->size() ? fixed((*sizes)[k]) : Dimension{};
    v.set(k, v.elem(0), out);
  }
}

// Slice of one dim (ONNX clamping rules), static sizes only.
int64_t slice_len(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  return start > end ? (start - end - step - 1) / -step : 0;
}

void slice(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  if (!x) return v.set(0, v.elem(0), std::nullopt);
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (v.opset < 10) {
    starts = attr_ints(v.node, "starts");
    ends = attr_ints(v.node, "ends");
    axes = attr_ints(v.node, "axes");
  } else {
    starts = v.ints(1);
    ends = v.ints(2);
    if (v.has(3)) {
      axes = v.ints(3);
      if (!axes) return v.set(0, v.elem(0), Dims(x->size()));
    }
    if (v.has(4)) {
      steps = v.ints(4);
      if (!steps) return v.set(0, v.elem(0), Dims(x->size()));
    }
  }
  if (!starts || !ends || starts->size() != ends->size()) return v.set(0, v.elem(0), Dims(x->size()));
  if (!axes)
    for (size_t k = 0; k < starts->size(); ++k)
      axes = axes.value_or(std::vector<int64_t>{}), axes->push_back(int64_t(k));
  if (!steps) steps = std::vector<int64_t>(starts->size(), 1);
  if (axes->size() != starts->size() || steps->size() != starts->size()) return v.set(0, v.elem(0), Dims(x->size()));
  Dims out = *x;
  for (size_t k = 0; k < starts->size(); ++k) {
    const int64_t a = norm_axis((*axes)[k], int64_t(x->size()));
    if (a < 0 || a >= int64_t(x->size()) || (*steps)[k] == 0) return v.set(0, v.elem(0), Dims(x->size()));
    Dimension& d = out[size_t(a)];
    const int64_t s = (*starts)[k], e = (*ends)[k], st = (*steps)[k];
    if (d.value)
      d = fixed(slice_len(*d.value, s, e, st));
    else if (!(s == 0 && st == 1 && e >= std::numeric_limits<int32_t>::max()))
      d = Dimension{};
  }
  v.set(0, v.elem(0), out);
  // Shape-carrying vectors: slice the elements too.
  const std::optional<Dims>& e = v.elems(0);
  if (e && x->size() == 1 && out[0].value) {
    const int64_t n = int64_t(e->size());
    int64_t s = (*starts)[0], en = (*ends)[0], st = (*steps)[0];
    if (s < 0) s += n;
    if (en < 0) en += n;
    Dims picked;
    if (st > 0) {
      for (int64_t i = std::clamp<int64_t>(s, 0, n); i < std::clamp<int64_t>(en, 0, n); i += st)
        picked.push_back((*e)[size_t(i)]);
    } else {
      for (int64_t i = std::clamp<int64_t>(s, 0, n - 1); i > std::clamp<int64_t>(en, -1, n - 1); i += st)
        picked.push_back((*e)[size_t(i)]);
    }
    v.out_elems[0] = picked;
  }
}

std::optional<std::vector<int64_t>> axes_of(NodeView& v, int64_t input_from_opset, bool& given) {
  if (v.opset >= input_from_opset) {
    given = v.has(1);
    return given ? v.ints(1) : std::nullopt;
  }
  auto a = attr_ints(v.node, "axes");
  given = a.has_value();
  return a;
}

void squeeze(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  bool given = false;
  auto axes = axes_of(v, 13, given);
  pass_elems(v);
  if (!x || (given && !axes)) return v.set(0, v.elem(0), std::nullopt);
  std::vector<bool> drop(x->size(), false);
  if (given) {
    for (int64_t a : *axes) {
      a = norm_axis(a, int64_t(x->size()));
      if (a < 0 || a >= int64_t(x->size())) return v.set(0, v.elem(0), std::nullopt);
      drop[size_t(a)] = true;
    }
  } else {
    for (size_t k = 0; k < x->size(); ++k) {
      if (!(*x)[k].value) return v.set(0, v.elem(0), std::nullopt);  // might be 1
      drop[k] = *(*x)[k].value == 1;
    }
  }
  Dims out;
  for (size_t k = 0; k < x->size(); ++k)
    if (!drop[k]) out.push_back((*x)[k]);
  v.set(0, v.elem(0), out);
}

void unsqueeze(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  bool given = false;
  auto axes = axes_of(v, 13, given);
  pass_elems(v);
  if (x && !axes && v.has(1) && v.shape(1) && v.shape(1)->size() == 1 && (*v.shape(1))[0].value)
    return v.set(0, v.elem(0), Dims(x->size() + size_t(*(*v.shape(1))[0].value)));  // axes unknown
  if (!x || !axes) return v.set(0, v.elem(0), std::nullopt);
  const int64_t rank = int64_t(x->size() + axes->size());
  std::vector<bool> inserted(size_t(rank), false);
  for (int64_t a : *axes) {
    a = norm_axis(a, rank);
    if (a < 0 || a >= rank) return v.set(0, v.elem(0), std::nullopt);
    inserted[size_t(a)] = true;
  }
  Dims out;
  size_t j = 0;
  for (int64_t k = 0; k < rank; ++k)
    out.push_back(inserted[size_t(k)] ? fixed(1) : (j < x->size() ? (*x)[j++] : Dimension{}));
  v.set(0, v.elem(0), out);
}

void gather(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  const std::optional<Dims>& idx = v.shape(1);
  if (!x || !idx) return v.set(0, v.elem(0), std::nullopt);
  const int64_t axis = norm_axis(attr_i(v.node, "axis", 0), int64_t(x->size()));
  if (axis < 0 || axis >= int64_t(x->size())) return v.set(0, v.elem(0), std::nullopt);
  Dims out(x->begin(), x->begin() + axis);
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), x->begin() + axis + 1, x->end());
  v.set(0, v.elem(0), out);
  const std::optional<Dims>& e = v.elems(0);
  const auto picks = v.ints(1);
  if (e && picks && x->size() == 1) {
    Dims got;
    for (int64_t p : *picks) {
      if (p < 0) p += int64_t(e->size());
      if (p < 0 || p >= int64_t(e->size())) return;
      got.push_back((*e)[size_t(p)]);
    }
    v.out_elems[0] = got;
  }
}

void shape_op(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  if (!x) return v.set(0, kInt64, Dims(1));
  const int64_t r = int64_t(x->size());
  int64_t start = v.opset >= 15 ? attr_i(v.node, "start", 0) : 0;
  int64_t end = v.opset >= 15 ? attr_i(v.node, "end", r) : r;
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  Dims e(x->begin() + start, x->begin() + std::max(start, end));
  v.set(0, kInt64, Dims{fixed(int64_t(e.size()))});
  v.out_elems[0] = e;
}

void size_op(NodeView& v) {
  v.set(0, kInt64, Dims{});
  if (v.shape(0)) v.out_elems[0] = Dims{product(v.shape(0)->begin(), v.shape(0)->end())};
}

void reduce(NodeView& v, int64_t input_from_opset) {
  const std::optional<Dims>& x = v.shape(0);
  bool given = false;
  auto axes = axes_of(v, input_from_opset, given);
  const bool keep = attr_i(v.node, "keepdims", 1) != 0;
  if (!x || (given && !axes)) {
    std::optional<Dims> out;
    if (x && keep) out = Dims(x->size());
    // Axes computed at run time: without keepdims the rank still drops by their count.
    else if (x && given && v.shape(1) && v.shape(1)->size() == 1 && (*v.shape(1))[0].value &&
             *(*v.shape(1))[0].value > 0 && size_t(*(*v.shape(1))[0].value) <= x->size())
      out = Dims(x->size() - size_t(*(*v.shape(1))[0].value));
    return v.set(0, v.elem(0), out);
  }
  std::vector<bool> reduced(x->size(), !given || axes->empty());
  if (given && axes->empty() && attr_i(v.node, "noop_with_empty_axes", 0)) return v.same_as_input();
  if (given)
    for (int64_t a : *axes) {
      a = norm_axis(a, int64_t(x->size()));
      if (a < 0 || a >= int64_t(x->size())) return v.set(0, v.elem(0), std::nullopt);
      reduced[size_t(a)] = true;
    }
  Dims out;
  for (size_t k = 0; k < x->size(); ++k) {
    if (!reduced[k])
      out.push_back((*x)[k]);
    else if (keep)
      out.push_back(fixed(1));
  }
  v.set(0, v.elem(0), out);
}

void arg_reduce(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  if (!x) return v.set(0, kInt64, std::nullopt);
  const int64_t axis = norm_axis(attr_i(v.node, "axis", 0), int64_t(x->size()));
  if (axis < 0 || axis >= int64_t(x->size())) return v.set(0, kInt64, std::nullopt);
  Dims out = *x;
  if (attr_i(v.node, "keepdims", 1))
    out[size_t(axis)] = fixed(1);
  else
    out.erase(out.begin() + axis);
  v.set(0, kInt64, out);
}

void expand(NodeView& v) {
  std::optional<Dims> target = v.elems(1);
  // Only the target's length known: its dims are unknown, but x's static sizes > 1 survive.
  if (!target && v.shape(1) && v.shape(1)->size() == 1 && (*v.shape(1))[0].value)
    target = Dims(size_t(*(*v.shape(1))[0].value));
  v.set(0, v.elem(0), target ? broadcast({v.shape(0), *target}) : std::nullopt);
}

void pad(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  if (!x) return v.set(0, v.elem(0), std::nullopt);
  auto pads = v.opset >= 11 ? v.ints(1) : attr_ints(v.node, "pads");
  if (!pads && v.opset < 11) pads = attr_ints(v.node, "paddings");
  const size_t r = x->size();
  std::vector<int64_t> axes;
  if (v.opset >= 18 && v.has(3)) {
    auto a = v.ints(3);
    if (!a) return v.set(0, v.elem(0), Dims(r));
    for (int64_t ax : *a) axes.push_back(norm_axis(ax, int64_t(r)));
  } else {
    for (size_t k = 0; k < r; ++k) axes.push_back(int64_t(k));
  }
  if (!pads || pads->size() != 2 * axes.size()) return v.set(0, v.elem(0), Dims(r));
  Dims out = *x;
  for (size_t k = 0; k < axes.size(); ++k) {
    if (axes[k] < 0 || axes[k] >= int64_t(r)) return v.set(0, v.elem(0), Dims(r));
    Dimension& d = out[size_t(axes[k])];
    const int64_t add = (*pads)[k] + (*pads)[axes.size() + k];
    if (d.value)
      d = fixed(*d.value + add);
    else if (add != 0)
      d = Dimension{};
  }
  v.set(0, v.elem(0), out);
}

// Resize/Upsample: sizes, or floor(dim * scale) for static dims.
void resize(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  if (!x) return v.set(0, v.elem(0), std::nullopt);
  const size_t r = x->size();
  if (attr(v.node, "axes")) return v.set(0, v.elem(0), Dims(r));  // opset 18 subsets: not followed
  std::optional<std::vector<double>> scales;
  if (v.node.op_type == "Upsample")
    scales = v.opset >= 9 ? v.doubles(1) : attr_floats(v.node, "scales");
  else if (v.opset < 11)
    scales = v.doubles(1);
  else {
    if (v.has(3)) {
      if (const std::optional<Dims>& sizes = v.elems(3); sizes && sizes->size() == r)
        return v.set(0, v.elem(0), *sizes);
      return v.set(0, v.elem(0), Dims(r));
    }
    scales = v.doubles(2);
  }
  if (!scales || scales->size() != r) return v.set(0, v.elem(0), Dims(r));
  Dims out;
  for (size_t k = 0; k < r; ++k) {
    const Dimension& d = (*x)[k];
    if ((*scales)[k] == 1.0)
      out.push_back(d);
    else if (d.value)
      out.push_back(fixed(int64_t(std::floor(double(*d.value) * (*scales)[k]))));
    else
      out.emplace_back();
  }
  v.set(0, v.elem(0), out);
}

void tile(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  auto reps = v.ints(1);
  if (!x) return v.set(0, v.elem(0), std::nullopt);
  if (!reps || reps->size() != x->size()) return v.set(0, v.elem(0), Dims(x->size()));
  Dims out = *x;
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k].value)
      out[k] = fixed(*out[k].value * (*reps)[k]);
    else if ((*reps)[k] != 1)
      out[k] = Dimension{};
  }
  v.set(0, v.elem(0), out);
}

void range(NodeView& v) {
  auto s = v.doubles(0), l = v.doubles(1), d = v.doubles(2);
  Dims out(1);
  if (s && l && d && s->size() == 1 && l->size() == 1 && d->size() == 1 && (*d)[0] != 0)
    out[0] = fixed(std::max<int64_t>(0, int64_t(std::ceil(((*l)[0] - (*s)[0]) / (*d)[0]))));
  v.set(0, v.elem(0), out);
}

void constant_of_shape(NodeView& v) {
  const AttributeProto* a = attr(v.node, "value");
  const int32_t et = a && a->type == AttributeType::tensor ? a->t.data_type : kFloat;
  if (const std::optional<Dims>& e = v.elems(0)) return v.set(0, et, *e);
  const std::optional<Dims>& s = v.shape(0);
  v.set(0, et, s && s->size() == 1 && (*s)[0].value ? std::optional<Dims>(Dims(size_t(*(*s)[0].value))) : std::nullopt);
}

void topk(NodeView& v) {
  const std::optional<Dims>& x = v.shape(0);
  if (!x) return v.set(0, v.elem(0), std::nullopt), v.set(1, kInt64, std::nullopt);
  const int64_t axis = norm_axis(attr_i(v.node, "axis", -1), int64_t(x->size()));
  if (axis < 0 || axis >= int64_t(x->size())) return;
  std::optional<int64_t> k;
  if (v.opset >= 10) {
    if (auto kk = v.ints(1); kk && kk->size() == 1) k = (*kk)[0];
  } else {
    k = attr_i(v.node, "k", -1);
  }
  Dims out = *x;
  out[size_t(axis)] = k && *k >= 0 ? fixed(*k) : Dimension{};
  v.set(0, v.elem(0), out);
  v.set(1, kInt64, out);
}

void layer_norm(NodeView& v) {
  v.same_as_input();
  const std::optional<Dims>& x = v.shape(0);
  if (!x) return;
  const int64_t axis = norm_axis(attr_i(v.node, "axis", -1), int64_t(x->size()));
  if (axis < 0 || axis >= int64_t(x->size())) return;
  Dims stat = *x;
  for (size_t k = size_t(axis); k < stat.size(); ++k) stat[k] = fixed(1);
  const int32_t stash = int32_t(attr_i(v.node, "stash_type", kFloat));
  v.set(1, stash, stat);
  v.set(2, stash, stat);
}

void dropout(NodeView& v) {
  v.same_as_input();
  v.set(1, kBool, v.shape(0));
}

void where(NodeView& v) { v.set(0, v.elem(1), broadcast({v.shape(0), v.shape(1), v.shape(2)})); }

void nonzero(NodeView& v) {
  const std::optional<size_t> r = v.rank(0);
  v.set(0, kInt64, Dims{r ? fixed(int64_t(*r)) : Dimension{}, Dimension{}});
}

const std::unordered_map<std::string, Rule>& rules() {
  static const std::unordered_map<std::string, Rule> table = [] {
    std::unordered_map<std::string, Rule> t;
    for (const char* op : {"Abs",
                           "Acos",
                           "Acosh",
                           "Asin",
                           "Asinh",
                           "Atan",
                           "Atanh",
                           "Ceil",
                           "Celu",
                           "Clip",
                           "Cos",
                           "Cosh",
                           "Elu",
                           "Erf",
                           "Exp",
                           "Floor",
                           "Gelu",
                           "HardSigmoid",
                           "HardSwish",
                           "LeakyRelu",
                           "Log",
                           "Mish",
                           "Neg",
                           "Reciprocal",
                           "Relu",
                           "Round",
                           "Selu",
                           "Sigmoid",
                           "Sign",
                           "Sin",
                           "Sinh",
                           "Softplus",
                           "Softsign",
                           "Sqrt",
                           "Tan",
                           "Tanh",
                           "ThresholdedRelu",
                           "Shrink",
                           "LRN",
                           "Hardmax",
                           "Softmax",
                           "LogSoftmax",
                           "CumSum",
                           "Trilu",
                           "ReverseSequence",
                           "PRelu",
                           "BatchNormalization",
                           "InstanceNormalization",
                           "MeanVarianceNormalization",
                           "BitwiseNot"})
      t[op] = unary;
    t["Identity"] = [](NodeView& v) {
      v.same_as_input();
      pass_elems(v);
    };
    for (const char* op : {"IsNaN", "IsInf", "Not"}) t[op] = to_bool;
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) t[op] = arithmetic;
    for (const char* op :
         {"Pow", "Mod", "Max", "Min", "Sum", "Mean", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"})
      t[op] = [](NodeView& v) { broadcast_rule(v, v.elem(0)); };
    for (const char* op : {"And", "Or", "Xor", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"})
      t[op] = [](NodeView& v) { broadcast_rule(v, kBool); };
    t["Where"] = where;
    t["Cast"] = cast;
    t["CastLike"] = [](NodeView& v) { v.set(0, v.elem(1), v.shape(0)); };
    t["Constant"] = constant;
    t["Conv"] = [](NodeView& v) { conv(v, false); };
    t["ConvTranspose"] = [](NodeView& v) { conv(v, true); };
    for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) t[op] = pool;
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) t[op] = global_pool;
    t["LayerNormalization"] = layer_norm;
    t["Gemm"] = gemm;
    t["MatMul"] = matmul;
    t["Flatten"] = flatten;
    t["Reshape"] = reshape;
    t["Transpose"] = transpose;
    t["Concat"] = concat;
    t["Split"] = split;
    t["Slice"] = slice;
    t["Squeeze"] = squeeze;
    t["Unsqueeze"] = unsqueeze;
    t["Gather"] = gather;
    t["GatherElements"] = [](NodeView& v) { v.set(0, v.elem(0), v.shape(1)); };
    t["Shape"] = shape_op;
    t["Size"] = size_op;
    t["ReduceSum"] = [](NodeView& v) { reduce(v, 13); };
    for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                           "ReduceLogSumExp", "ReduceSumSquare"})
      t[op] = [](NodeView& v) { reduce(v, 18); };
    t["ArgMax"] = arg_reduce;
    t["ArgMin"] = arg_reduce;
    t["Expand"] = expand;
    t["Pad"] = pad;
    t["Resize"] = resize;
    t["Upsample"] = resize;
    t["Dropout"] = dropout;
    t["Tile"] = tile;
    t["Range"] = range;
    t["ConstantOfShape"] = constant_of_shape;
    t["TopK"] = topk;
    t["NonZero"] = nonzero;
    t["EyeLike"] = [](NodeView& v) { v.set(0, int32_t(attr_i(v.node, "dtype", v.elem(0))), v.shape(0)); };
    return t;
  }();
  return table;
}

}  // namespace

std::map<std::string, InferredType> infer_shapes(const GraphProto& graph, int64_t opset, const std::string& base_dir) {
  return Inference(graph, opset, base_dir).run();
}

}  // namespace ember::onnx
