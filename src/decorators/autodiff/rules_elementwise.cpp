// Backward rules of the elementwise ops: unary maths, activations, binary arithmetic with
// broadcasting, where, lerp, clamp, cast and prelu.
//
// Conventions follow PyTorch 1.13 autograd (derivatives.yaml), including its choices at
// kinks and ties: relu'(0) = 0, abs'(0) = 0, clamp passes the gradient on min <= x <= max,
// minimum/maximum split ties half each, pow gives the exponent no gradient where base == 0
// and exponent >= 0. Every formula is built from differentiable IR ops, so the same rules
// give second-order gradients when they run on the autodiff backend; gelu, gelu_tanh and silu
// emit one fused backward op instead, except under create_graph.
#include <cmath>
#include <numbers>
#include <utility>

#include "rules.hpp"

namespace ember::autodiff {
namespace {

constexpr uint32_t kNone = 0;
constexpr uint32_t kFirst = 1;  // input 0 / output 0
constexpr uint32_t kBoth = 3;   // inputs 0 and 1
constexpr uint32_t kThree = 7;  // inputs 0, 1 and 2

// The gradient reaching one input: the context (for saved tensors and attributes) and the
// upstream gradient g of output 0. Returns the gradient in the output's (broadcast) shape.
using Partial = std::function<Val(BackwardCtx&, const Val& g)>;

// An elementwise op: one partial per input (null: that input never gets a gradient). Partials
// run only for inputs that need a gradient; broadcast inputs get theirs summed back.
void elementwise(RuleTable& t, OpKind k, uint32_t save_inputs, uint32_t save_outputs, std::vector<Partial> partials) {
  Rule r;
  r.save_inputs = save_inputs;
  r.save_outputs = save_outputs;
  r.fn = [partials = std::move(partials)](BackwardCtx& c) -> Grads {
    Val g = c.grad(0);
    Grads out(c.num_inputs());
    for (size_t i = 0; i < partials.size() && i < out.size(); ++i) {
      if (!partials[i] || !c.needs_grad(i)) continue;
      Val d = partials[i](c, g);
      out[i] = c.num_inputs() == 1 ? d : sum_to(d, c.in(i).shape);
    }
    return out;
  };
  t[size_t(k)] = std::move(r);
}

// d/dx f(x) written with the saved input x.
template <class F>
void with_input(RuleTable& t, OpKind k, F f) {
  elementwise(t, k, kFirst, kNone, {[f](BackwardCtx& c, const Val& g) { return f(c.input(0), g); }});
}
// d/dx f(x) written with the saved output y = f(x).
template <class F>
void with_output(RuleTable& t, OpKind k, F f) {
  elementwise(t, k, kNone, kFirst, {[f](BackwardCtx& c, const Val& g) { return f(c.output(0), g); }});
}
// d/dx f(x) with a fused backward op (x, g) -> g f'(x): one kernel where the formula is a chain
// of elementwise ones. Under create_graph the composed formula runs instead (the fused op has no
// rule of its own, and a gradient that will be differentiated again must be made of ops that do).
template <class F>
void with_input_fused(RuleTable& t, OpKind k, OpKind fused, F composed) {
  elementwise(t, k, kFirst, kNone, {[composed, fused](BackwardCtx& c, const Val& g) {
                return c.create_graph() ? composed(c.input(0), g) : run(fused, {c.input(0), g});
              }});
}
// Piecewise-constant ops: a zero gradient (PyTorch still hands the input a gradient tensor).
void zero_gradient(RuleTable& t, OpKind k) {
  elementwise(t, k, kNone, kNone, {[](BackwardCtx&, const Val& g) { return zeros_like(g); }});
}

Val gt(const Val& a, double b) { return cmp(OpKind::greater, a, b); }
Val lt(const Val& a, double b) { return cmp(OpKind::lower, a, b); }
Val sigmoid(const Val& x) { return un(OpKind::sigmoid, x); }

constexpr double kLn2 = std::numbers::ln2;
constexpr double kLn10 = std::numbers::ln10;
constexpr double kInvSqrt2 = 1.0 / std::numbers::sqrt2;
constexpr double kTwoOverSqrtPi = 2.0 * std::numbers::inv_sqrtpi;
constexpr double kInvSqrt2Pi = std::numbers::inv_sqrtpi * kInvSqrt2;
constexpr double kSqrt2OverPi = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;

void register_unary_math(RuleTable& t) {
  // neg: -g
  elementwise(t, OpKind::neg, kNone, kNone, {[](BackwardCtx&, const Val& g) { return -g; }});
  // abs: g * sign(x)   (sign(0) = sign(NaN) = 0)
  with_input(t, OpKind::abs, [](const Val& x, const Val& g) { return g * un(OpKind::sign, x); });
  // square: 2 x g
  with_input(t, OpKind::square, [](const Val& x, const Val& g) { return g * (x * 2.0); });
  // clamp: g where min <= x <= max (NaN x, NaN bound and min > max give 0)
  elementwise(t, OpKind::clamp, kFirst, kNone, {[](BackwardCtx& c, const Val& g) {
                const auto& a = c.attr<ScalarAttrs>();
                Val x = c.input(0);
                Val inside = logical_and(cmp(OpKind::greater_equal, x, a.a), cmp(OpKind::lower_equal, x, a.b));
                return where(inside, g, 0.0);
              }});

  // exp: g y;  exp2: g y ln2;  expm1: g (y + 1)
  with_output(t, OpKind::exp, [](const Val& y, const Val& g) { return g * y; });
  with_output(t, OpKind::exp2, [](const Val& y, const Val& g) { return g * (y * kLn2); });
  with_output(t, OpKind::expm1, [](const Val& y, const Val& g) { return g * (y + 1.0); });
  // log: g / x;  log2: g / (x ln2);  log10: g / (x ln10);  log1p: g / (x + 1)
  with_input(t, OpKind::log, [](const Val& x, const Val& g) { return g / x; });
  with_input(t, OpKind::log2, [](const Val& x, const Val& g) { return g / (x * kLn2); });
  with_input(t, OpKind::log10, [](const Val& x, const Val& g) { return g / (x * kLn10); });
  with_input(t, OpKind::log1p, [](const Val& x, const Val& g) { return g / (x + 1.0); });
  // sqrt: g / (2 y);  rsqrt: -g y^3 / 2;  reciprocal: -g y^2
  with_output(t, OpKind::sqrt, [](const Val& y, const Val& g) { return g / (y * 2.0); });
  with_output(t, OpKind::rsqrt, [](const Val& y, const Val& g) { return g * (y * y * y * -0.5); });
  with_output(t, OpKind::reciprocal, [](const Val& y, const Val& g) { return -g * (y * y); });

  // sin: g cos x;  cos: -g sin x;  tan: g (1 + y^2)
  with_input(t, OpKind::sin, [](const Val& x, const Val& g) { return g * un(OpKind::cos, x); });
  with_input(t, OpKind::cos, [](const Val& x, const Val& g) { return -g * un(OpKind::sin, x); });
  with_output(t, OpKind::tan, [](const Val& y, const Val& g) { return g * (y * y + 1.0); });
  // asin: g / sqrt(1 - x^2);  acos: -g / sqrt(1 - x^2);  atan: g / (1 + x^2)
  with_input(t, OpKind::asin, [](const Val& x, const Val& g) { return g * un(OpKind::rsqrt, 1.0 - x * x); });
  with_input(t, OpKind::acos, [](const Val& x, const Val& g) { return -g * un(OpKind::rsqrt, 1.0 - x * x); });
  with_input(t, OpKind::atan, [](const Val& x, const Val& g) { return g / (x * x + 1.0); });
  // sinh: g cosh x;  cosh: g sinh x;  tanh: g (1 - y^2)
  with_input(t, OpKind::sinh, [](const Val& x, const Val& g) { return g * un(OpKind::cosh, x); });
  with_input(t, OpKind::cosh, [](const Val& x, const Val& g) { return g * un(OpKind::sinh, x); });
  with_output(t, OpKind::tanh, [](const Val& y, const Val& g) { return g * (1.0 - y * y); });
  // asinh: g / sqrt(x^2 + 1);  acosh: g / sqrt(x^2 - 1);  atanh: g / (1 - x^2)
  with_input(t, OpKind::asinh, [](const Val& x, const Val& g) { return g * un(OpKind::rsqrt, x * x + 1.0); });
  with_input(t, OpKind::acosh, [](const Val& x, const Val& g) { return g * un(OpKind::rsqrt, x * x - 1.0); });
  with_input(t, OpKind::atanh, [](const Val& x, const Val& g) { return g / (1.0 - x * x); });
  // erf: g 2/sqrt(pi) exp(-x^2)
  with_input(t, OpKind::erf,
             [](const Val& x, const Val& g) { return g * (un(OpKind::exp, -(x * x)) * kTwoOverSqrtPi); });

  // sign, floor, ceil, round, trunc: zero almost everywhere
  for (OpKind k : {OpKind::sign, OpKind::floor, OpKind::ceil, OpKind::round, OpKind::trunc}) zero_gradient(t, k);
}

void register_activations(RuleTable& t) {
  // sigmoid: g y (1 - y)
  with_output(t, OpKind::sigmoid, [](const Val& y, const Val& g) { return g * (y * (1.0 - y)); });
  // log_sigmoid: g sigmoid(-x)  (= 1 - sigmoid(x), without the cancellation for large x)
  with_input(t, OpKind::log_sigmoid, [](const Val& x, const Val& g) { return g * sigmoid(-x); });
  // hard_sigmoid: g / 6 on the open interval -3 < x < 3
  with_input(t, OpKind::hard_sigmoid,
             [](const Val& x, const Val& g) { return where(logical_and(gt(x, -3.0), lt(x, 3.0)), g / 6.0, 0.0); });
  // relu: g where y > 0 (relu'(0) = 0; a NaN passes g, as torch's threshold_backward)
  with_output(t, OpKind::relu,
              [](const Val& y, const Val& g) { return where(cmp(OpKind::lower_equal, y, 0.0), 0.0, g); });
  // gelu: g (Phi(x) + x phi(x)), Phi(x) = (1 + erf(x / sqrt2)) / 2, phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
  with_input_fused(t, OpKind::gelu, OpKind::gelu_backward, [](const Val& x, const Val& g) {
    Val cdf = (un(OpKind::erf, x * kInvSqrt2) + 1.0) * 0.5;
    Val pdf = un(OpKind::exp, x * x * -0.5) * kInvSqrt2Pi;
    return g * (cdf + x * pdf);
  });
  // gelu_tanh: y = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + k x^3), k = 0.044715
  //   y' = (1 + tanh u) / 2 + x/2 (1 - tanh^2 u) sqrt(2/pi) (1 + 3k x^2)
  with_input_fused(t, OpKind::gelu_tanh, OpKind::gelu_tanh_backward, [](const Val& x, const Val& g) {
    constexpr double kKappa = 0.044715;
    Val x2 = x * x;
    Val th = un(OpKind::tanh, (x + x2 * x * kKappa) * kSqrt2OverPi);
    Val left = (th + 1.0) * 0.5;
    Val right = x * 0.5 * (1.0 - th * th) * ((x2 * (3.0 * kKappa) + 1.0) * kSqrt2OverPi);
    return g * (left + right);
  });
  // silu: g s (1 + x (1 - s)), s = sigmoid(x)
  with_input_fused(t, OpKind::silu, OpKind::silu_backward, [](const Val& x, const Val& g) {
    Val s = sigmoid(x);
    return g * (s * (x * (1.0 - s) + 1.0));
  });
  // leaky_relu: g where x > 0, else slope g
  elementwise(t, OpKind::leaky_relu, kFirst, kNone, {[](BackwardCtx& c, const Val& g) {
                return where(gt(c.input(0), 0.0), g, g * c.attr<ScalarAttrs>().a);
              }});
  // softplus: g where x beta > threshold (the linear part), else g sigmoid(x beta)
  elementwise(t, OpKind::softplus, kFirst, kNone, {[](BackwardCtx& c, const Val& g) {
                const auto& a = c.attr<ScalarAttrs>();
                Val xb = c.input(0) * a.a;
                return where(gt(xb, a.b), g, g * sigmoid(xb));
              }});
}

void register_binary(RuleTable& t) {
  auto a = [](BackwardCtx& c) { return c.input(0); };
  auto b = [](BackwardCtx& c) { return c.input(1); };
  auto pass = [](BackwardCtx&, const Val& g) { return g; };

  // add: g, g;  sub: g, -g
  elementwise(t, OpKind::add, kNone, kNone, {pass, pass});
  elementwise(t, OpKind::sub, kNone, kNone, {pass, [](BackwardCtx&, const Val& g) { return -g; }});
  // mul: g b, g a
  elementwise(
      t, OpKind::mul, kBoth, kNone,
      {[b](BackwardCtx& c, const Val& g) { return g * b(c); }, [a](BackwardCtx& c, const Val& g) { return g * a(c); }});
  // div: g / b, -g (a / b) / b
  elementwise(t, OpKind::div, kBoth, kNone,
              {[b](BackwardCtx& c, const Val& g) { return g / b(c); },
               [a, b](BackwardCtx& c, const Val& g) { return -g * (a(c) / b(c) / b(c)); }});
  // fmod: g, -g trunc(a / b)
  elementwise(t, OpKind::fmod, kBoth, kNone,
              {pass, [a, b](BackwardCtx& c, const Val& g) { return -g * un(OpKind::trunc, a(c) / b(c)); }});
  // remainder: g, -g floor_divide(a, b). The quotient is recovered from the result y as
  // round((a - y) / b), the same integer torch's floor division gives, where floor(a / b)
  // can be one off when a / b rounds up to an integer.
  elementwise(t, OpKind::remainder, kBoth, kFirst, {pass, [a, b](BackwardCtx& c, const Val& g) {
                                                      return -g * un(OpKind::round, (a(c) - c.output(0)) / b(c));
                                                    }});
  // pow: b a^(b-1) g (0 where b == 0);  y ln(a) g (0 where a == 0 and b >= 0)
  elementwise(t, OpKind::pow, kBoth, kFirst,
              {[a, b](BackwardCtx& c, const Val& g) {
                 Val e = b(c);
                 return where(cmp(OpKind::equal, e, 0.0), 0.0, g * (e * pow(a(c), e - 1.0)));
               },
               [a, b](BackwardCtx& c, const Val& g) {
                 Val base = a(c);
                 Val zero_base = logical_and(cmp(OpKind::equal, base, 0.0), cmp(OpKind::greater_equal, b(c), 0.0));
                 return g * where(zero_base, 0.0, c.output(0) * un(OpKind::log, base));
               }});
  // minimum / maximum: g to the selected operand, g / 2 to each on ties (NaN: g to both)
  auto pick = [](OpKind loses) {
    return [loses](BackwardCtx& c, const Val& g) {
      Val x = c.input(0), y = c.input(1);
      return where(cmp(loses, x, y), 0.0, where(cmp(OpKind::equal, x, y), g * 0.5, g));
    };
  };
  elementwise(t, OpKind::minimum, kBoth, kNone, {pick(OpKind::greater), pick(OpKind::lower)});
  elementwise(t, OpKind::maximum, kBoth, kNone, {pick(OpKind::lower), pick(OpKind::greater)});
  // atan2(a, b): g b / (a^2 + b^2), -g a / (a^2 + b^2)
  auto atan2_recip = [a, b](BackwardCtx& c) { return 1.0 / (a(c) * a(c) + b(c) * b(c)); };
  elementwise(t, OpKind::atan2, kBoth, kNone,
              {[b, atan2_recip](BackwardCtx& c, const Val& g) { return g * b(c) * atan2_recip(c); },
               [a, atan2_recip](BackwardCtx& c, const Val& g) { return -g * a(c) * atan2_recip(c); }});
  // hypot: g a / y, g b / y
  elementwise(t, OpKind::hypot, kBoth, kFirst,
              {[a](BackwardCtx& c, const Val& g) { return g * a(c) / c.output(0); },
               [b](BackwardCtx& c, const Val& g) { return g * b(c) / c.output(0); }});
}

// prelu(x, w) = x > 0 ? x : w[c] x, with w of 1 or C elements (C = x.shape[1]; a rank-0/1
// x has one channel). dx = g where x > 0, else w g;  dw[c] = sum of x g where x <= 0.
Rule prelu_rule() {
  Rule r;
  r.save_inputs = kBoth;
  r.fn = [](BackwardCtx& c) -> Grads {
    Val x = c.input(0), w = c.input(1), g = c.grad(0);
    const Shape& ws = c.in(1).shape;
    bool per_channel = ws.numel() > 1 && x.rank() >= 2;  // infer allows C > 1 only then
    // w aligned with dim 1 of x: [C, 1, ..., 1], or a 0-d scalar
    Shape wb;
    if (per_channel) {
      std::vector<int64_t> d(size_t(x.rank() - 1), 1);
      d[0] = ws.numel();
      wb = Shape(std::move(d));
    }
    Val positive = gt(x, 0.0);
    Grads out(2);
    if (c.needs_grad(0)) out[0] = where(positive, g, g * reshape(w, wb));
    if (c.needs_grad(1)) {
      Val gw = where(positive, 0.0, g * x);
      std::vector<int> dims;
      if (per_channel)
        for (int d = 0; d < x.rank(); ++d)
          if (d != 1) dims.push_back(d);
      out[1] = reshape(sum(gw, dims, false), ws);  // dims empty: every dim
    }
    return out;
  };
  return r;
}

// cast: the gradient cast back to the input's dtype; integer and bool inputs get none.
Rule cast_rule() {
  Rule r;
  r.fn = [](BackwardCtx& c) -> Grads {
    DType dt = c.in(0).dtype;
    if (!is_float(dt) || !c.needs_grad(0)) return {Val{}};
    return {cast(c.grad(0), dt)};
  };
  return r;
}

}  // namespace

void register_elementwise_rules(RuleTable& t) {
  register_unary_math(t);
  register_activations(t);
  register_binary(t);

  // where(cond, a, b): g where cond to a, elsewhere to b; cond gets nothing
  elementwise(t, OpKind::where, kFirst, kNone,
              {nullptr, [](BackwardCtx& c, const Val& g) { return where(c.input(0), g, 0.0); },
               [](BackwardCtx& c, const Val& g) { return where(c.input(0), 0.0, g); }});
  // lerp(s, e, w) = s + w (e - s): g (1 - w), g w, g (e - s)
  elementwise(t, OpKind::lerp, kThree, kNone,
              {[](BackwardCtx& c, const Val& g) { return g * (1.0 - c.input(2)); },
               [](BackwardCtx& c, const Val& g) { return g * c.input(2); },
               [](BackwardCtx& c, const Val& g) { return g * (c.input(1) - c.input(0)); }});

  t[size_t(OpKind::cast)] = cast_rule();
  t[size_t(OpKind::prelu)] = prelu_rule();
}

}  // namespace ember::autodiff
