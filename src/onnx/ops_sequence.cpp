// Sequences and optionals: SequenceEmpty / Construct / Insert / At / Erase / Length,
// SplitToSequence, ConcatFromSequence, SequenceMap, Optional, OptionalHasElement,
// OptionalGetElement. A sequence holds tensors of one dtype; positions may be negative
// (counted from the back), as the ONNX operator spec allows.
#include <numeric>

#include "ops.hpp"

namespace ember::onnx::detail {
namespace {

// A position input (a one-element integer tensor), checked against [lo, hi] and made
// non-negative by adding the sequence length n.
int64_t position(const OpContext& c, size_t i, int64_t n, bool may_be_n) {
  std::vector<int64_t> p = c.required_ints(i);
  if (p.size() != 1) c.fail("position must be a scalar, got " + std::to_string(p.size()) + " values");
  const int64_t hi = may_be_n ? n : n - 1;
  if (p[0] < -n || p[0] > hi)
    c.fail("position " + std::to_string(p[0]) + " is out of range [" + std::to_string(-n) + ", " + std::to_string(hi) +
           "] for a sequence of " + std::to_string(n) + " tensors");
  return p[0] < 0 ? p[0] + n : p[0];
}

// The sequence input i with its declared element dtype.
Value sequence_with(const OpContext& c, size_t i, std::vector<DynTensor> elements) {
  std::optional<DType> dt = c.value(i).elem_dtype();
  if (dt)
    for (const DynTensor& t : elements)
      if (t.dtype() != *dt)
        c.fail("a " + std::string(dtype_name(t.dtype())) + " tensor cannot join a sequence of " +
               std::string(dtype_name(*dt)) + " tensors");
  return Value::sequence(std::move(elements), dt);
}

OpResult sequence_empty(OpContext& c) {
  return {Value::sequence({}, dtype_of_onnx(int32_t(c.attr_i("dtype", int64_t(DataType::float32))), c))};
}

OpResult sequence_construct(OpContext& c) {
  if (c.num_inputs() == 0) c.fail("needs at least one input");
  std::vector<DynTensor> elements;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    elements.push_back(c.in(i));
    if (elements[i].dtype() != elements[0].dtype())
      c.fail("input " + std::to_string(i) + " is " + std::string(dtype_name(elements[i].dtype())) + ", input 0 is " +
             std::string(dtype_name(elements[0].dtype())));
  }
  return {Value::sequence(std::move(elements))};
}

OpResult sequence_insert(OpContext& c) {
  std::vector<DynTensor> elements = c.sequence(0);
  const int64_t n = int64_t(elements.size());
  const int64_t at = c.has(2) ? position(c, 2, n, true) : n;
  elements.insert(elements.begin() + at, c.in(1));
  return {sequence_with(c, 0, std::move(elements))};
}

OpResult sequence_at(OpContext& c) {
  const std::vector<DynTensor>& elements = c.sequence(0);
  return {elements[size_t(position(c, 1, int64_t(elements.size()), false))]};
}

OpResult sequence_erase(OpContext& c) {
  std::vector<DynTensor> elements = c.sequence(0);
  const int64_t n = int64_t(elements.size());
  if (n == 0) c.fail("cannot erase from an empty sequence");
  const int64_t at = c.has(1) ? position(c, 1, n, false) : n - 1;
  elements.erase(elements.begin() + at);
  return {sequence_with(c, 0, std::move(elements))};
}

OpResult sequence_length(OpContext& c) {
  const int64_t n = int64_t(c.sequence(0).size());
  return {DynTensor::from_vector<int64_t>({n}, Shape{}, c.device)};
}

OpResult split_to_sequence(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int axis = normalize_axis(c.attr_i("axis", 0), x.rank(), c);
  const int64_t n = x.shape()[axis];
  if (!c.has(1)) {
    // One slice per index along the axis, the axis kept or squeezed.
    std::vector<DynTensor> parts = n == 0 ? std::vector<DynTensor>{} : split(x, int64_t(1), axis);
    if (c.attr_i("keepdims", 1) == 0)
      for (DynTensor& p : parts) p = squeeze(p, axis);
    return {Value::sequence(std::move(parts), x.dtype())};
  }
  const DynTensor& s = c.in(1);
  std::vector<int64_t> sizes = c.required_ints(1);
  if (s.rank() == 0) {
    // Equal chunks of sizes[0]; the last one may be shorter.
    const int64_t each = sizes[0];
    if (each <= 0) c.fail("split " + std::to_string(each) + " must be positive");
    sizes.clear();
    for (int64_t left = n; left > 0; left -= each) sizes.push_back(std::min(each, left));
  } else {
    if (s.rank() != 1) c.fail("split must be a scalar or 1-D, got rank " + std::to_string(s.rank()));
    for (int64_t v : sizes)
      if (v < 0) c.fail("split has a negative length " + std::to_string(v));
    const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
    if (total != n) c.fail("split lengths sum to " + std::to_string(total) + ", the axis has " + std::to_string(n));
  }
  std::vector<DynTensor> parts;
  int64_t start = 0;
  for (int64_t len : sizes) {
    parts.push_back(narrow(x, axis, start, len));
    start += len;
  }
  return {Value::sequence(std::move(parts), x.dtype())};
}

OpResult concat_from_sequence(OpContext& c) {
  const std::vector<DynTensor>& elements = c.sequence(0);
  if (!c.attr("axis")) c.fail("attribute 'axis' is required");
  if (elements.empty()) c.fail("the sequence is empty");
  const bool new_axis = c.attr_i("new_axis", 0) != 0;
  const int rank = elements[0].rank();
  const int axis = normalize_axis(c.attr_i("axis", 0), new_axis ? rank + 1 : rank, c);
  return {new_axis ? stack(elements, axis) : cat(elements, axis)};
}

// Runs the body once per position of the sequences: sequence inputs give their element at that
// position, tensor inputs are passed whole. Every body output becomes a sequence.
OpResult sequence_map(OpContext& c) {
  const GraphProto& body = c.graph_attr("body");
  const size_t n = c.sequence(0).size();
  for (size_t i = 1; i < c.num_inputs(); ++i)
    if (c.value(i).is_sequence() && c.value(i).elements().size() != n)
      c.fail("input " + std::to_string(i) + " has " + std::to_string(c.value(i).elements().size()) +
             " elements, input 0 has " + std::to_string(n));
  std::vector<std::vector<DynTensor>> outs(body.outputs.size());
  for (size_t k = 0; k < n; ++k) {
    std::vector<Value> in;
    for (size_t i = 0; i < c.num_inputs(); ++i) {
      const Value& v = c.value(i);
      in.push_back(v.is_sequence() ? Value(v.elements()[k]) : v);
    }
    std::vector<Value> out = c.run_subgraph(body, in);
    for (size_t j = 0; j < out.size(); ++j) {
      if (!out[j].is_tensor()) c.unsupported("body output " + std::to_string(j) + " that is not a tensor");
      outs[j].push_back(out[j].tensor());
    }
  }
  OpResult r;
  for (size_t j = 0; j < outs.size(); ++j) {
    // An empty result takes its dtype from the body's declaration.
    std::optional<DType> dt;
    const TypeProto& type = body.outputs[j].type;
    if (outs[j].empty() && type.kind == TypeProto::Kind::tensor) dt = to_dtype(type.elem_type);
    r.push_back(Value::sequence(std::move(outs[j]), dt));
  }
  return r;
}

OpResult optional_op(OpContext& c) {
  if (c.has(0)) return {Value::optional(c.value(0))};
  const AttributeProto* type = c.attr("type");
  if (!type || type->type != AttributeType::type_proto)
    c.fail("an empty optional needs the TYPE_PROTO attribute 'type'");
  return {Value::optional()};
}

OpResult optional_has_element(OpContext& c) {
  bool has = false;
  if (c.has(0)) {
    const Value& v = c.value(0);
    has = !v.is_optional() || v.has_element();  // a tensor or sequence (opset 18) is present
  }
  return {DynTensor::from_vector<bool>({has}, Shape{}, c.device)};
}

OpResult optional_get_element(OpContext& c) {
  const Value& v = c.value(0);
  if (!v.is_optional()) return {v};  // opset 18: a tensor or sequence passes through
  if (!v.has_element()) c.fail("the optional input is empty");
  return {v.element()};
}

}  // namespace

void register_sequence_ops(OpTable& t) {
  t["SequenceEmpty"] = sequence_empty;
  t["SequenceConstruct"] = sequence_construct;
  t["SequenceInsert"] = sequence_insert;
  t["SequenceAt"] = sequence_at;
  t["SequenceErase"] = sequence_erase;
  t["SequenceLength"] = sequence_length;
  t["SplitToSequence"] = split_to_sequence;
  t["ConcatFromSequence"] = concat_from_sequence;
  t["SequenceMap"] = sequence_map;
  t["Optional"] = optional_op;
  t["OptionalHasElement"] = optional_has_element;
  t["OptionalGetElement"] = optional_get_element;
}

}  // namespace ember::onnx::detail
