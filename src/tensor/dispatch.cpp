#include "dispatch.hpp"

#include <cmath>
#include <sstream>

#include "ember/core/trace.hpp"
#include "ember/tensor/op_hook.hpp"

namespace ember {

namespace detail {
thread_local OpInputHook* t_op_input_hook = nullptr;
}  // namespace detail

OpInputHook* set_op_input_hook(OpInputHook* hook) {
  OpInputHook* prev = detail::t_op_input_hook;
  detail::t_op_input_hook = hook;
  return prev;
}

DynTensor hook_operand(OpKind kind, DynTensor x) {
  if (OpInputHook* h = op_input_hook()) h->before_op(kind, std::span<DynTensor>(&x, 1));
  return x;
}

}  // namespace ember

namespace ember::detail {

namespace {

// The op-input hook (op_hook.hpp) of the braced-list forms: their handles live in Operands.
void apply_hook(OpInputHook* h, OpKind kind, std::initializer_list<Operand> in) {
  std::vector<DynTensor> tmp;  // (only while a hook is installed)
  tmp.reserve(in.size());
  for (const Operand& o : in) tmp.push_back(std::move(o.t));
  h->before_op(kind, tmp);
  for (size_t i = 0; i < in.size(); ++i) in.begin()[i].t = std::move(tmp[i]);
}

// Takes the primitives out of the input handles (`get(i)` is the i-th handle, moved from) and
// returns the device they share; an undefined handle is an absent optional input.
template <class Get>
Device take_inputs(OpKind kind, size_t n, Get get, std::vector<PrimitivePtr>& prims) {
  const Device* dev = nullptr;
  prims.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    DynTensor& t = get(i);
    if (!t.defined()) {
      prims.emplace_back();
      continue;
    }
    if (!dev) dev = &t.device();
    EMBER_CHECK(t.device() == *dev, op_name(kind), ": input ", i, " is on ", t.device().name(), ", input 0 is on ",
                dev->name(), " (move tensors with .to(device) first)");
    prims.push_back(std::move(t).take_primitive());
  }
  EMBER_CHECK(dev != nullptr, op_name(kind), ": needs at least one input tensor");
  return *dev;
}

std::vector<DynTensor> wrap(std::vector<PrimitivePtr> outs, const Device& device) {
  std::vector<DynTensor> result;
  result.reserve(outs.size());
  for (auto& p : outs) result.emplace_back(std::move(p), device);
  return result;
}

// The trace's arguments of an op: its inputs' dtypes and shapes, "f32 [2, 3], f32 [3]".
template <class Get>
std::string describe_inputs(size_t n, Get get) {
  std::ostringstream os;
  for (size_t i = 0; i < n; ++i) {
    const DynTensor& t = get(i);
    if (i) os << ", ";
    if (t.defined())
      os << t.dtype() << ' ' << t.shape();
    else
      os << "none";
  }
  return os.str();
}

}  // namespace

std::vector<DynTensor> run_op(OpKind kind, std::vector<DynTensor> inputs, OpAttrs attrs) {
  if (OpInputHook* h = op_input_hook()) h->before_op(kind, inputs);
  trace::Scope traced("op", op_name(kind), [&] {
    return describe_inputs(inputs.size(), [&](size_t i) -> const DynTensor& { return inputs[i]; });
  });
  std::vector<PrimitivePtr> prims;
  Device device = take_inputs(kind, inputs.size(), [&](size_t i) -> DynTensor& { return inputs[i]; }, prims);
  inputs.clear();  // drop the remaining (moved-from) handles before executing
  return wrap(device.backend().execute(make_op(kind, std::move(prims), std::move(attrs))), device);
}

std::vector<DynTensor> run_op(OpKind kind, std::initializer_list<Operand> in, OpAttrs attrs) {
  if (OpInputHook* h = op_input_hook()) apply_hook(h, kind, in);
  trace::Scope traced("op", op_name(kind), [&] {
    return describe_inputs(in.size(), [&](size_t i) -> const DynTensor& { return in.begin()[i].t; });
  });
  std::vector<PrimitivePtr> prims;
  Device device = take_inputs(kind, in.size(), [&](size_t i) -> DynTensor& { return in.begin()[i].t; }, prims);
  return wrap(device.backend().execute(make_op(kind, std::move(prims), std::move(attrs))), device);
}

DynTensor run1(OpKind kind, std::initializer_list<Operand> in, OpAttrs attrs) {
  if (OpInputHook* h = op_input_hook()) apply_hook(h, kind, in);
  trace::Scope traced("op", op_name(kind), [&] {
    return describe_inputs(in.size(), [&](size_t i) -> const DynTensor& { return in.begin()[i].t; });
  });
  std::vector<PrimitivePtr> prims;
  Device device = take_inputs(kind, in.size(), [&](size_t i) -> DynTensor& { return in.begin()[i].t; }, prims);
  auto outs = device.backend().execute(make_op(kind, std::move(prims), std::move(attrs)));
  return DynTensor(std::move(outs[0]), device);
}

DynTensor create(OpKind kind, CreateAttrs attrs, const Device& device) {
  trace::Scope traced("op", op_name(kind), [&] {
    std::ostringstream os;
    os << "-> " << attrs.dtype << ' ' << attrs.shape;
    return os.str();
  });
  Op op = make_op(kind, {}, std::move(attrs));
  return DynTensor(device.backend().execute(std::move(op))[0], device);
}

DynTensor scalar_tensor(Scalar s, DType dtype, const Device& device) {
  CreateAttrs a;
  a.dtype = dtype;
  a.a = s.value;
  a.shared = true;  // an operand only: no user holds it
  return create(OpKind::full, std::move(a), device);
}

DType scalar_result_type(const DynTensor& t, Scalar s) {
  Kind tk = kind_of(t.dtype());
  if (!s.is_integral && tk != Kind::Float) return kDefaultFloat;
  if (s.is_integral && tk == Kind::Bool) return kDefaultInt;
  return t.dtype();
}

DType result_type(const DynTensor& a, const DynTensor& b) {
  DType da = a.dtype(), db = b.dtype();
  if (da == db) return da;
  bool za = a.rank() == 0, zb = b.rank() == 0;
  if (za != zb) {
    // the dimensioned tensor wins unless the 0-d one is of a higher category
    DType dim = za ? db : da, zero = za ? da : db;
    if (int(kind_of(zero)) < int(kind_of(dim))) {
      // Kind enum order: Float(0) < Int(1) < Bool(2): a lower enum value is a higher category
      return zero;
    }
    return dim;
  }
  return promote_types(da, db);
}

DynTensor cast_to(DynTensor x, DType dt) {
  if (x.dtype() == dt) return x;
  return run1(OpKind::cast, {std::move(x)}, CastAttrs{dt});
}

DynTensor to_float(DynTensor x) {
  if (is_float(x.dtype())) return x;
  return cast_to(std::move(x), kDefaultFloat);
}

}  // namespace ember::detail
