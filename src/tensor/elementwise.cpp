// Elementwise ops, activations and casts of the tensor API: dtype promotion, then one IR op.
#include <cmath>
#include <limits>

#include "dispatch.hpp"

namespace ember {

using namespace detail;

namespace {

DynTensor unary(OpKind k, DynTensor x, OpAttrs attrs = NoAttrs{}) {
  if (op_info(k).family == OpFamily::FloatUnary) x = to_float(std::move(x));
  return run1(k, {std::move(x)}, std::move(attrs));
}

// Promotes both operands to a common dtype (PyTorch rules); float-only ops also lift ints.
DynTensor binary(OpKind k, DynTensor a, DynTensor b) {
  DType dt = result_type(a, b);
  auto fam = op_info(k).family;
  if ((k == OpKind::div || fam == OpFamily::FloatBinary) && !is_float(dt)) dt = kDefaultFloat;
  a = cast_to(std::move(a), dt);
  b = cast_to(std::move(b), dt);
  return run1(k, {std::move(a), std::move(b)});
}

DynTensor binary_scalar(OpKind k, DynTensor a, Scalar s) {
  DType dt = scalar_result_type(a, s);
  auto fam = op_info(k).family;
  if ((k == OpKind::div || fam == OpFamily::FloatBinary) && !is_float(dt)) dt = kDefaultFloat;
  // comparisons against a float scalar compare in float; keep the tensor's dtype otherwise
  DynTensor st = scalar_tensor(s, dt, a.device());
  a = cast_to(std::move(a), dt);
  return run1(k, {std::move(a), std::move(st)});
}

}  // namespace

#define EMBER_UNARY_DEF(name) \
  DynTensor name(DynTensor x) { return unary(OpKind::name, std::move(x)); }
EMBER_UNARY_DEF(neg) EMBER_UNARY_DEF(abs) EMBER_UNARY_DEF(sign) EMBER_UNARY_DEF(square)
EMBER_UNARY_DEF(exp) EMBER_UNARY_DEF(exp2) EMBER_UNARY_DEF(expm1) EMBER_UNARY_DEF(log) EMBER_UNARY_DEF(log2)
EMBER_UNARY_DEF(log10) EMBER_UNARY_DEF(log1p) EMBER_UNARY_DEF(sqrt) EMBER_UNARY_DEF(rsqrt)
EMBER_UNARY_DEF(reciprocal) EMBER_UNARY_DEF(sin) EMBER_UNARY_DEF(cos) EMBER_UNARY_DEF(tan)
EMBER_UNARY_DEF(asin) EMBER_UNARY_DEF(acos) EMBER_UNARY_DEF(atan) EMBER_UNARY_DEF(sinh) EMBER_UNARY_DEF(cosh)
EMBER_UNARY_DEF(tanh) EMBER_UNARY_DEF(asinh) EMBER_UNARY_DEF(acosh) EMBER_UNARY_DEF(atanh) EMBER_UNARY_DEF(erf)
EMBER_UNARY_DEF(sigmoid) EMBER_UNARY_DEF(is_nan) EMBER_UNARY_DEF(is_inf) EMBER_UNARY_DEF(is_finite)
EMBER_UNARY_DEF(gelu) EMBER_UNARY_DEF(gelu_tanh) EMBER_UNARY_DEF(silu)
EMBER_UNARY_DEF(hard_sigmoid) EMBER_UNARY_DEF(log_sigmoid) EMBER_UNARY_DEF(bool_not) EMBER_UNARY_DEF(bitwise_not)
EMBER_UNARY_DEF(contiguous)
#undef EMBER_UNARY_DEF

DynTensor relu(DynTensor x) {
  if (!is_float(x.dtype()) && !is_bool(x.dtype())) return clamp_min(std::move(x), 0);  // integers stay integers
  return unary(OpKind::relu, std::move(x));
}

// Rounding ops are the identity on integers (as in PyTorch).
#define EMBER_ROUNDING_DEF(name)                       \
  DynTensor name(DynTensor x) {                        \
    if (!is_float(x.dtype())) return x;                \
    return unary(OpKind::name, std::move(x));          \
  }
EMBER_ROUNDING_DEF(floor) EMBER_ROUNDING_DEF(ceil) EMBER_ROUNDING_DEF(round) EMBER_ROUNDING_DEF(trunc)
#undef EMBER_ROUNDING_DEF

#define EMBER_BINARY_DEF(name)                                                                          \
  DynTensor name(DynTensor a, DynTensor b) { return binary(OpKind::name, std::move(a), std::move(b)); } \
  DynTensor name(DynTensor a, Scalar b) { return binary_scalar(OpKind::name, std::move(a), b); }
EMBER_BINARY_DEF(add) EMBER_BINARY_DEF(sub) EMBER_BINARY_DEF(mul) EMBER_BINARY_DEF(div)
EMBER_BINARY_DEF(fmod) EMBER_BINARY_DEF(remainder) EMBER_BINARY_DEF(pow) EMBER_BINARY_DEF(atan2)
EMBER_BINARY_DEF(minimum) EMBER_BINARY_DEF(maximum) EMBER_BINARY_DEF(hypot)
EMBER_BINARY_DEF(equal) EMBER_BINARY_DEF(not_equal) EMBER_BINARY_DEF(greater) EMBER_BINARY_DEF(greater_equal)
EMBER_BINARY_DEF(lower) EMBER_BINARY_DEF(lower_equal)
EMBER_BINARY_DEF(bool_and) EMBER_BINARY_DEF(bool_or) EMBER_BINARY_DEF(bool_xor)
EMBER_BINARY_DEF(bitwise_and) EMBER_BINARY_DEF(bitwise_or) EMBER_BINARY_DEF(bitwise_xor)
EMBER_BINARY_DEF(shift_left) EMBER_BINARY_DEF(shift_right)
#undef EMBER_BINARY_DEF

DynTensor sub(Scalar a, DynTensor b) {
  DType dt = scalar_result_type(b, a);
  DynTensor s = scalar_tensor(a, dt, b.device());  // before b is moved (argument order is unspecified)
  return binary(OpKind::sub, std::move(s), std::move(b));
}
DynTensor div(Scalar a, DynTensor b) {
  DType dt = scalar_result_type(b, a);
  DynTensor s = scalar_tensor(a, dt, b.device());  // before b is moved (argument order is unspecified)
  return binary(OpKind::div, std::move(s), std::move(b));
}
DynTensor pow(Scalar a, DynTensor b) {
  DType dt = scalar_result_type(b, a);
  DynTensor s = scalar_tensor(a, dt, b.device());  // before b is moved (argument order is unspecified)
  return binary(OpKind::pow, std::move(s), std::move(b));
}

DynTensor lerp(DynTensor start, DynTensor end, DynTensor weight) {
  DType dt = promote_types(promote_types(start.dtype(), end.dtype()), weight.dtype());
  EMBER_CHECK(is_float(dt), "lerp: needs floating tensors, got ", start.dtype(), ", ", end.dtype(), ", ",
              weight.dtype());
  return run1(OpKind::lerp, {cast_to(std::move(start), dt), cast_to(std::move(end), dt), cast_to(std::move(weight), dt)});
}
DynTensor lerp(DynTensor start, DynTensor end, Scalar weight) {
  DType dt = promote_types(start.dtype(), end.dtype());
  EMBER_CHECK(is_float(dt), "lerp: needs floating tensors, got ", start.dtype(), " and ", end.dtype());
  DynTensor w = scalar_tensor(weight, dt, start.device());
  return run1(OpKind::lerp, {cast_to(std::move(start), dt), cast_to(std::move(end), dt), std::move(w)});
}

DynTensor clamp(DynTensor x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  EMBER_CHECK(lo || hi, "clamp: at least one of min and max must be given");
  double inf = std::numeric_limits<double>::infinity();
  // a float bound on an integer tensor promotes like a binary op
  if ((lo && !lo->is_integral) || (hi && !hi->is_integral)) x = to_float(std::move(x));
  return run1(OpKind::clamp, {std::move(x)}, ScalarAttrs{lo ? lo->value : -inf, hi ? hi->value : inf});
}
DynTensor clamp_min(DynTensor x, Scalar lo) { return clamp(std::move(x), lo, std::nullopt); }
DynTensor clamp_max(DynTensor x, Scalar hi) { return clamp(std::move(x), std::nullopt, hi); }

DynTensor where(DynTensor cond, DynTensor a, DynTensor b) {
  EMBER_CHECK(cond.dtype() == DType::boolean, "where: condition must be bool, got ", cond.dtype());
  DType dt = result_type(a, b);
  return run1(OpKind::where, {std::move(cond), cast_to(std::move(a), dt), cast_to(std::move(b), dt)});
}

DynTensor mask_fill(DynTensor x, DynTensor mask, Scalar value) {
  EMBER_CHECK(mask.dtype() == DType::boolean, "mask_fill: mask must be bool, got ", mask.dtype());
  DynTensor v = scalar_tensor(value, x.dtype(), x.device());
  return run1(OpKind::where, {std::move(mask), std::move(v), std::move(x)});
}

DynTensor mask_where(DynTensor x, DynTensor mask, DynTensor value) {
  EMBER_CHECK(mask.dtype() == DType::boolean, "mask_where: mask must be bool, got ", mask.dtype());
  DType dt = result_type(x, value);
  return run1(OpKind::where, {std::move(mask), cast_to(std::move(value), dt), cast_to(std::move(x), dt)});
}

DynTensor leaky_relu(DynTensor x, double slope) { return unary(OpKind::leaky_relu, std::move(x), ScalarAttrs{slope, 0}); }
DynTensor prelu(DynTensor x, DynTensor weight) { return run1(OpKind::prelu, {std::move(x), std::move(weight)}); }
DynTensor softplus(DynTensor x, double beta, double threshold) {
  return unary(OpKind::softplus, std::move(x), ScalarAttrs{beta, threshold});
}
DynTensor softmax(DynTensor x, int dim) { return run1(OpKind::softmax, {to_float(std::move(x))}, DimAttrs{dim}); }
DynTensor log_softmax(DynTensor x, int dim) {
  return run1(OpKind::log_softmax, {to_float(std::move(x))}, DimAttrs{dim});
}

DynTensor cast(DynTensor x, DType dtype) { return cast_to(std::move(x), dtype); }
DynTensor to_device(DynTensor x, const Device& d) { return x.to(d); }

}  // namespace ember
