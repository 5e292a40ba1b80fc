// Elementwise ONNX ops: math, activations, comparisons, logic, Clip, Where, Cast.
#include <cmath>

#include "ops.hpp"

namespace ember::onnx::detail {
namespace {

using Unary = DynTensor (*)(DynTensor);

void need_float(const OpContext& c, const DynTensor& x) {
  if (!is_float(x.dtype())) c.unsupported("dtype " + std::string(dtype_name(x.dtype())));
}

OpHandler unary(Unary f, bool float_only = false) {
  return [f, float_only](OpContext& c) -> OpResult {
    if (float_only) need_float(c, c.in(0));
    DynTensor y = f(c.in(0));
    if (y.dtype() != c.in(0).dtype() && !is_bool(y.dtype())) y = cast(y, c.in(0).dtype());
    return {y};
  };
}

template <class F>
OpHandler binary(F f) {
  return [f](OpContext& c) -> OpResult { return {f(c.in(0), c.in(1))}; };
}

DynTensor same_type(const OpContext& c, DynTensor y) {
  return y.dtype() == c.in(0).dtype() ? y : cast(std::move(y), c.in(0).dtype());
}

}  // namespace

void register_elementwise_ops(OpTable& t) {
  t["Neg"] = unary(neg);
  t["Abs"] = unary(abs);
  t["Sign"] = unary(sign);
  t["Exp"] = unary(exp, true);
  t["Log"] = unary(log, true);
  t["Sqrt"] = unary(sqrt, true);
  t["Reciprocal"] = unary(reciprocal, true);
  t["Floor"] = unary(floor, true);
  t["Ceil"] = unary(ceil, true);
  t["Round"] = unary(round, true);
  t["Sin"] = unary(sin, true);
  t["Cos"] = unary(cos, true);
  t["Tan"] = unary(tan, true);
  t["Asin"] = unary(asin, true);
  t["Acos"] = unary(acos, true);
  t["Atan"] = unary(atan, true);
  t["Sinh"] = unary(sinh, true);
  t["Cosh"] = unary(cosh, true);
  t["Tanh"] = unary(tanh, true);
  t["Asinh"] = unary(asinh, true);
  t["Acosh"] = unary(acosh, true);
  t["Atanh"] = unary(atanh, true);
  t["Erf"] = unary(erf, true);
  t["Sigmoid"] = unary(sigmoid, true);
  t["Relu"] = unary(relu);
  t["Not"] = unary(bool_not);
  t["IsNaN"] = unary(is_nan, true);
  t["Identity"] = [](OpContext& c) -> OpResult { return {c.value(0)}; };  // sequences and optionals too
  t["IsInf"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    bool pos = c.attr_i("detect_positive", 1) != 0, neg_ = c.attr_i("detect_negative", 1) != 0;
    DynTensor inf = is_inf(x);
    if (pos && neg_) return {inf};
    if (!pos && !neg_) return {DynTensor::zeros(x.shape(), DType::boolean, x.device())};
    return {bool_and(inf, pos ? greater(x, 0.0) : lower(x, 0.0))};
  };
  t["Softsign"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    return {div(x, add(abs(x), 1.0))};
  };
  t["Softplus"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    // log(1 + exp(x)) computed stably: max(x, 0) + log1p(exp(-|x|))
    return {add(relu(x), log1p(exp(neg(abs(x)))))};
  };
  t["LeakyRelu"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    double a = c.attr_f("alpha", 0.01f);
    return {where(lower(x, 0.0), mul(x, a), x)};
  };
  t["Elu"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    double a = c.attr_f("alpha", 1.0f);
    return {where(lower(x, 0.0), mul(expm1(x), a), x)};
  };
  t["Selu"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    double a = c.attr_f("alpha", 1.67326319217681884765625f), g = c.attr_f("gamma", 1.05070102214813232421875f);
    return {mul(where(lower_equal(x, 0.0), mul(expm1(x), a), x), g)};
  };
  t["Celu"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    double a = c.attr_f("alpha", 1.0f);
    return {add(relu(x), minimum(zeros_like(x), mul(expm1(div(x, a)), a)))};
  };
  t["HardSigmoid"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    double a = c.attr_f("alpha", 0.2f), b = c.attr_f("beta", 0.5f);
    return {clamp(add(mul(x, a), b), Scalar(0.0), Scalar(1.0))};
  };
  t["HardSwish"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    return {mul(x, clamp(add(mul(x, 1.0 / 6), 0.5), Scalar(0.0), Scalar(1.0)))};
  };
  t["ThresholdedRelu"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    double a = c.attr_f("alpha", 1.0f);
    return {where(greater(x, a), x, zeros_like(x))};
  };
  t["Shrink"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    double b = c.attr_f("bias", 0.0f), l = c.attr_f("lambd", 0.5f);
    if (!is_float(x.dtype())) {
      DynTensor xf = cast(x, DType::f64);
      return {cast(where(lower(xf, -l), add(xf, b), where(greater(xf, l), sub(xf, b), zeros_like(xf))), x.dtype())};
    }
    return {where(lower(x, -l), add(x, b), where(greater(x, l), sub(x, b), zeros_like(x)))};
  };
  t["PRelu"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    DynTensor y = where(lower(x, 0.0), mul(x, c.in(1)), x);
    return {same_type(c, y)};
  };
  t["Gelu"] = [](OpContext& c) -> OpResult {
    std::string a = c.attr_s("approximate", "none");
    if (a == "tanh") return {gelu_tanh(c.in(0))};
    return {gelu(c.in(0))};
  };
  t["Mish"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    return {mul(x, tanh(add(relu(x), log1p(exp(neg(abs(x)))))))};
  };

  // ---- binary ----
  t["Add"] = binary([](DynTensor a, DynTensor b) { return add(a, b); });
  t["Sub"] = binary([](DynTensor a, DynTensor b) { return sub(a, b); });
  t["Mul"] = binary([](DynTensor a, DynTensor b) { return mul(a, b); });
  t["Div"] = [](OpContext& c) -> OpResult {
    const DynTensor &a = c.in(0), &b = c.in(1);
    if (is_float(a.dtype())) return {div(a, b)};
    return {cast(trunc(div(cast(a, DType::f64), cast(b, DType::f64))), a.dtype())};
  };
  t["Pow"] = [](OpContext& c) -> OpResult {
    const DynTensor &a = c.in(0), &b = c.in(1);
    if (is_float(a.dtype())) return {pow(a, cast(b, a.dtype()))};
    return {cast(round(pow(cast(a, DType::f64), cast(b, DType::f64))), a.dtype())};
  };
  t["Mod"] = [](OpContext& c) -> OpResult {
    const DynTensor &a = c.in(0), &b = c.in(1);
    bool f = c.attr_i("fmod", 0) != 0;
    if (is_float(a.dtype()) && !f) c.fail("fmod must be 1 for floating inputs");
    return {same_type(c, f ? fmod(a, b) : remainder(a, b))};
  };
  t["BitShift"] = [](OpContext& c) -> OpResult {
    std::string d = c.attr_s("direction", "");
    if (d == "LEFT") return {same_type(c, shift_left(c.in(0), c.in(1)))};
    if (d == "RIGHT") return {same_type(c, shift_right(c.in(0), c.in(1)))};
    c.fail("direction must be LEFT or RIGHT, got '" + d + "'");
  };
  t["And"] = binary([](DynTensor a, DynTensor b) { return bool_and(a, b); });
  t["Or"] = binary([](DynTensor a, DynTensor b) { return bool_or(a, b); });
  t["Xor"] = binary([](DynTensor a, DynTensor b) { return bool_xor(a, b); });
  t["Equal"] = binary([](DynTensor a, DynTensor b) { return equal(a, b); });
  t["Less"] = binary([](DynTensor a, DynTensor b) { return lower(a, b); });
  t["LessOrEqual"] = binary([](DynTensor a, DynTensor b) { return lower_equal(a, b); });
  t["Greater"] = binary([](DynTensor a, DynTensor b) { return greater(a, b); });
  t["GreaterOrEqual"] = binary([](DynTensor a, DynTensor b) { return greater_equal(a, b); });

  // ---- variadic ----
  auto variadic = [](DynTensor (*f)(DynTensor, DynTensor)) {
    return [f](OpContext& c) -> OpResult {
      DynTensor acc = c.in(0);
      for (size_t i = 1; i < c.num_inputs(); ++i) acc = f(acc, c.in(i));
      return {same_type(c, acc)};
    };
  };
  t["Max"] = variadic(maximum);
  t["Min"] = variadic(minimum);
  t["Sum"] = variadic(add);
  t["Mean"] = [](OpContext& c) -> OpResult {
    DynTensor acc = c.in(0);
    for (size_t i = 1; i < c.num_inputs(); ++i) acc = add(acc, c.in(i));
    return {same_type(c, div(acc, double(c.num_inputs())))};
  };

  t["Clip"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    std::optional<Scalar> lo, hi;
    if (c.opset < 11) {
      if (c.attr("min")) lo = Scalar(double(c.attr_f("min", 0)));
      if (c.attr("max")) hi = Scalar(double(c.attr_f("max", 0)));
    } else {
      if (c.has(1)) lo = scalar_of(c.in(1));
      if (c.has(2)) hi = scalar_of(c.in(2));
    }
    if (!lo && !hi) return {x};
    // one pass (ReLU6 in MobileNets); min then max, as below, and NaN stays NaN
    if (is_float(x.dtype())) return {clamp(x, lo, hi)};
    DynTensor y = x;
    if (lo) y = maximum(y, DynTensor::full(Shape{}, *lo, x.dtype(), x.device()));
    if (hi) y = minimum(y, DynTensor::full(Shape{}, *hi, x.dtype(), x.device()));
    return {y};
  };
  t["Where"] = [](OpContext& c) -> OpResult { return {where(c.in(0), c.in(1), c.in(2))}; };
  t["Cast"] = [](OpContext& c) -> OpResult {
    DType to = dtype_of_onnx(int32_t(c.attr_i("to", 0)), c);
    return {cast(c.in(0), to)};
  };
  t["CastLike"] = [](OpContext& c) -> OpResult {
    return {cast(c.in(0), c.in(1).dtype())};
  };
}

}  // namespace ember::onnx::detail
