// Elementwise kernels: unary (Unary, FloatUnary, Predicate, BitwiseUnary families), binary
// (Binary, FloatBinary, Compare, Bitwise), where and lerp. Casts live in cast.cpp.
//
// Every op is a small functor computing in compute_t<T> (f16/bf16 in float, rounded once on
// store) and one generic driver per arity (elementwise_loops.hpp) that handles contiguous,
// scalar-broadcast and arbitrary strided operands. Integer semantics follow PyTorch 1.13:
// add/sub/mul/neg/abs wrap, integer fmod/remainder by zero raise, integer pow by a negative
// scalar exponent raises, shifts use the count modulo the promoted width (x86 behaviour).
#include <algorithm>
#include "ember/core/bit.hpp"
#include <cmath>
#include <limits>
#include <mutex>
#include <numbers>
#include <utility>
#include <vector>

#include "cpu_backend.hpp"
#include "elementwise_loops.hpp"
#include "elementwise_simd.hpp"

namespace ember::cpu {

namespace {

using ew::kGrainCheap;
using ew::kGrainHeavy;

template <class T> constexpr bool kAny = true;
template <class T> constexpr bool kNotBool = !std::is_same_v<T, bool>;
template <class T> constexpr bool kFloat = is_floating_v<T>;
template <class T> constexpr bool kInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T> constexpr bool kIntOrBool = std::is_integral_v<T>;

// Wrapping integer arithmetic without signed-overflow UB (sub-int types compute in uint32).
template <class T>
using wide_u = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
template <class T> inline T wrap_add(T a, T b) { return T(wide_u<T>(a) + wide_u<T>(b)); }
template <class T> inline T wrap_sub(T a, T b) { return T(wide_u<T>(a) - wide_u<T>(b)); }
template <class T> inline T wrap_mul(T a, T b) { return T(wide_u<T>(a) * wide_u<T>(b)); }

// k ? x : y on the bit patterns, without a branch (the condition is often
// random; and unlike ?: the compiler cannot turn it back into a branch around an arithmetic
// operation, which it must keep conditional under IEEE trapping rules)
template <class T>
inline T select(bool k, T x, T y) {
  using U = std::conditional_t<sizeof(T) == 8, uint64_t,
                               std::conditional_t<sizeof(T) == 4, uint32_t,
                                                  std::conditional_t<sizeof(T) == 2, uint16_t, uint8_t>>>;
  U m = U(U(0) - U(k));
  return ember::bit_cast<T>(U((ember::bit_cast<U>(x) & m) | (ember::bit_cast<U>(y) & U(~m))));
}

template <class F>
F make_functor(const Op& op) {
  if constexpr (std::is_constructible_v<F, const Op&>) return F(op);
  else return F{};
}

// ============================================================================ unary functors

struct Neg {
  template <class T> static constexpr bool ok = kNotBool<T>;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) return wrap_sub<C>(C(0), x);
    else return -x;
  }
};
struct Abs {
  template <class T> static constexpr bool ok = kNotBool<T>;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (std::is_integral_v<C>) return x < 0 ? wrap_sub<C>(C(0), x) : x;
    else return std::abs(x);
  }
};
struct Sign {  // NaN -> 0 (torch 1.13)
  template <class T> static constexpr bool ok = kNotBool<T>;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return C(x > 0);
    else return C(int(C(0) < x) - int(x < C(0)));
  }
};
struct Square {
  template <class T> static constexpr bool ok = kNotBool<T>;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) return wrap_mul<C>(x, x);
    else return x * x;
  }
};
struct Clamp {  // min(max(x, lo), hi); NaN input or bound gives NaN; lo > hi gives hi
  double lo, hi;
  bool nan_bound;
  explicit Clamp(const Op& op)
      : lo(op.attr<ScalarAttrs>().a), hi(op.attr<ScalarAttrs>().b), nan_bound(lo != lo || hi != hi) {}
  template <class T> static constexpr bool ok = kNotBool<T>;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      C l = bound<C>(lo), h = bound<C>(hi);
      C v = x < l ? l : x;
      return v > h ? h : v;
    } else {
      C l = C(lo), h = C(hi);
      C v = select(x < l, l, x);  // a NaN x compares false and stays
      v = select(v > h, h, v);
      return select(nan_bound, std::numeric_limits<C>::quiet_NaN(), v);
    }
  }
  // an integer bound: +-inf and out-of-range values saturate to the type's range
  template <class C> static C bound(double v) {
    if (v != v) return C(0);
    if (v <= double(std::numeric_limits<C>::lowest())) return std::numeric_limits<C>::lowest();
    if (v >= double(std::numeric_limits<C>::max())) return std::numeric_limits<C>::max();
    return C(v);
  }
};

#define EMBER_FLOAT_UNARY(Name, ...)                                 \
  struct Name {                                                      \
    template <class T> static constexpr bool ok = kFloat<T>;         \
    template <class C> C operator()(C x) const { return __VA_ARGS__; } \
  };
EMBER_FLOAT_UNARY(Exp, std::exp(x))
EMBER_FLOAT_UNARY(Exp2, std::exp2(x))
EMBER_FLOAT_UNARY(Expm1, std::expm1(x))
EMBER_FLOAT_UNARY(Log, std::log(x))
EMBER_FLOAT_UNARY(Log2, std::log2(x))
EMBER_FLOAT_UNARY(Log10, std::log10(x))
EMBER_FLOAT_UNARY(Log1p, std::log1p(x))
EMBER_FLOAT_UNARY(Sqrt, std::sqrt(x))
EMBER_FLOAT_UNARY(Rsqrt, C(1) / std::sqrt(x))
EMBER_FLOAT_UNARY(Reciprocal, C(1) / x)
EMBER_FLOAT_UNARY(Sin, std::sin(x))
EMBER_FLOAT_UNARY(Cos, std::cos(x))
EMBER_FLOAT_UNARY(Tan, std::tan(x))
EMBER_FLOAT_UNARY(Asin, std::asin(x))
EMBER_FLOAT_UNARY(Acos, std::acos(x))
EMBER_FLOAT_UNARY(Atan, std::atan(x))
EMBER_FLOAT_UNARY(Sinh, std::sinh(x))
EMBER_FLOAT_UNARY(Cosh, std::cosh(x))
EMBER_FLOAT_UNARY(Tanh, std::tanh(x))
EMBER_FLOAT_UNARY(Asinh, std::asinh(x))
EMBER_FLOAT_UNARY(Acosh, std::acosh(x))
EMBER_FLOAT_UNARY(Atanh, std::atanh(x))
EMBER_FLOAT_UNARY(Erf, std::erf(x))
EMBER_FLOAT_UNARY(Sigmoid, C(1) / (C(1) + std::exp(-x)))
EMBER_FLOAT_UNARY(LogSigmoid, std::min(x, C(0)) - std::log1p(std::exp(-std::abs(x))))
EMBER_FLOAT_UNARY(HardSigmoid, [](C v) {  // min(max(x + 3, 0), 6) / 6, NaN stays NaN
  v = select(v < C(0), C(0), v);
  return select(v > C(6), C(6), v) / C(6);
}(x + C(3)))
EMBER_FLOAT_UNARY(Gelu, C(0.5) * x * (C(1) + std::erf(x * C(std::numbers::sqrt2 / 2))))
EMBER_FLOAT_UNARY(GeluTanh, C(0.5) * x *
                                (C(1) + std::tanh(C(std::numbers::sqrt2 * std::numbers::inv_sqrtpi) *
                                                  (x + C(0.044715) * x * x * x))))
EMBER_FLOAT_UNARY(Silu, x / (C(1) + std::exp(-x)))
EMBER_FLOAT_UNARY(Floor, std::floor(x))
EMBER_FLOAT_UNARY(Ceil, std::ceil(x))
EMBER_FLOAT_UNARY(Round, std::nearbyint(x))
EMBER_FLOAT_UNARY(Trunc, std::trunc(x))
#undef EMBER_FLOAT_UNARY

struct Relu {  // relu(NaN) = NaN; integers too (torch keeps the dtype)
  template <class T> static constexpr bool ok = kNotBool<T>;
  template <class C> C operator()(C x) const { return x < C(0) ? C(0) : x; }
};
struct LeakyRelu {
  double slope;
  explicit LeakyRelu(const Op& op) : slope(op.attr<ScalarAttrs>().a) {}
  template <class T> static constexpr bool ok = kFloat<T>;
  template <class C> C operator()(C x) const { return select(x > C(0), x, x * C(slope)); }
};
struct Softplus {  // x * beta > threshold ? x : log1p(exp(x * beta)) / beta
  double beta, threshold;
  explicit Softplus(const Op& op) : beta(op.attr<ScalarAttrs>().a), threshold(op.attr<ScalarAttrs>().b) {}
  template <class T> static constexpr bool ok = kFloat<T>;
  template <class C> C operator()(C x) const {
    C xb = x * C(beta);
    return xb > C(threshold) ? x : std::log1p(std::exp(xb)) / C(beta);
  }
};

struct IsNan {
  template <class T> static constexpr bool ok = kAny<T>;
  template <class C> bool operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) return x != x;
    else return false;
  }
};
struct IsInf {
  template <class T> static constexpr bool ok = kAny<T>;
  template <class C> bool operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) return std::abs(x) == std::numeric_limits<C>::infinity();
    else return false;
  }
};
struct IsFinite {
  template <class T> static constexpr bool ok = kAny<T>;
  template <class C> bool operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) return x - x == C(0);
    else return true;
  }
};
struct BoolNot {
  template <class T> static constexpr bool ok = kAny<T>;
  template <class C> bool operator()(C x) const { return x == C(0); }
};
struct BitwiseNot {
  template <class T> static constexpr bool ok = kIntOrBool<T>;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_same_v<C, bool>) return !x;
    else return C(~x);
  }
};

// ============================================================================ unary driver

template <class F, bool kBoolOut, int64_t kGrain>
void unary_compute(const Op& op, const F& f, const CpuTensor& x, CpuTensor* out) {
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!F::template ok<T>) {
      EMBER_FAIL(op.name(), ": not supported for ", dtype_name(x.dtype()), " tensors");
    } else {
      using C = compute_t<T>;
      using TO = std::conditional_t<kBoolOut, bool, T>;
      if constexpr (is_half_v<T>) {  // in float blocks, vector kernels where there are some
        if (op.kind == OpKind::abs || op.kind == OpKind::neg) {  // exact on the sign bit
          if (op.kind == OpKind::abs)
            ew::unary_map<T, T>(x, *out, kGrainCheap, [](T v) { return T::from_bits(uint16_t(v.bits & 0x7fffu)); });
          else
            ew::unary_map<T, T>(x, *out, kGrainCheap, [](T v) { return T::from_bits(uint16_t(v.bits ^ 0x8000u)); });
          return;
        }
        if constexpr (kBoolOut) {
          ew::half_unary<T, bool>(x, *out, kGrain, [f](const float* a, bool* y, int64_t m) {
            for (int64_t j = 0; j < m; ++j) y[j] = f(a[j]);
          });
        } else {
          ew::half_unary<T, T>(x, *out, kGrain, [f, &op](const float* a, float* y, int64_t m) {
            if (simd::unary_block_f32(op, a, y, m)) return;
            for (int64_t j = 0; j < m; ++j) y[j] = f(a[j]);
          });
        }
        return;
      }
      if constexpr (std::is_floating_point_v<T> && !kBoolOut) {
        if (ew::dense_as(x, out->shape()) ? simd::unary(op, x.dtype(), x.raw(), out->raw(), out->numel())
                                          : simd::unary_strided(op, x, *out))
          return;
      }
      ew::unary_map<T, TO>(x, *out, kGrain,
                           [f](T v) -> TO { return convert_scalar<TO>(f(convert_scalar<C>(v))); });
    }
  });
}

template <class F, bool kBoolOut, int64_t kGrain>
std::vector<PrimitivePtr> unary_kernel(CpuBackend&, Op& op) {
  F f = make_functor<F>(op);
  if (auto st = ew::permuted_dense(as_cpu(op.inputs[0]))) {  // keep the input's layout
    CpuTensor xf = ew::flat_view(as_cpu(op.inputs[0]));
    CpuTensorPtr out = ew::permuted_output(op, 0, op.outputs[0], *st);
    CpuTensor of = ew::flat_view(*out);
    unary_compute<F, kBoolOut, kGrain>(op, f, xf, &of);
    return {out};
  }
  CpuTensorPtr out = output_reusing(op, 0, op.outputs[0]);
  CpuTensorPtr hold;
  const CpuTensor& x = ew::input(op, 0, hold);
  unary_compute<F, kBoolOut, kGrain>(op, f, x, out.get());
  return {out};
}

// ============================================================================ binary functors

struct Add {
  template <class T> static constexpr bool ok = kAny<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>) return a || b;
    else if constexpr (std::is_integral_v<C>) return wrap_add(a, b);
    else return a + b;
  }
};
struct Sub {
  template <class T> static constexpr bool ok = kNotBool<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return wrap_sub(a, b);
    else return a - b;
  }
};
struct Mul {
  template <class T> static constexpr bool ok = kAny<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>) return a && b;
    else if constexpr (std::is_integral_v<C>) return wrap_mul(a, b);
    else return a * b;
  }
};
struct Div {  // the tensor layer casts integer operands to floating
  template <class T> static constexpr bool ok = kFloat<T>;
  template <class C> C operator()(C a, C b) const { return a / b; }
};
struct Fmod {
  template <class T> static constexpr bool ok = kNotBool<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      EMBER_CHECK(b != 0, "fmod: ZeroDivisionError (integer division by zero)");
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return C(0);
      return C(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
};
struct Remainder {  // sign of the divisor: m = fmod(a, b); m != 0 && (m < 0) != (b < 0) ? m + b : m
  template <class T> static constexpr bool ok = kNotBool<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      EMBER_CHECK(b != 0, "remainder: ZeroDivisionError (integer division by zero)");
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);
        C m = C(a % b);
        return (m != 0 && ((m < 0) != (b < 0))) ? C(m + b) : m;
      } else {
        return C(a % b);
      }
    } else {
      C m = std::fmod(a, b);
      C mb = m + b;
      return (m != C(0) && ((m < C(0)) != (b < C(0)))) ? mb : m;
    }
  }
};
struct Pow {
  template <class T> static constexpr bool ok = kNotBool<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if constexpr (std::is_signed_v<C>) {
        if (b < 0) {  // torch: 1 -> 1, -1 -> +-1, others -> 0 (integer division result)
          if (a == 1) return C(1);
          if (a == -1) return (b % 2) ? C(-1) : C(1);
          return C(0);
        }
      }
      C result = 1, base = a;
      auto e = std::make_unsigned_t<C>(b);
      while (e) {
        if (e & 1u) result = wrap_mul(result, base);
        base = wrap_mul(base, base);
        e >>= 1;
      }
      return result;
    } else {
      return std::pow(a, b);
    }
  }
};
struct Minimum {  // NaN propagates
  template <class T> static constexpr bool ok = kAny<T>;
  template <class C> C operator()(C a, C b) const {
    C r = b < a ? b : a;
    if constexpr (std::is_floating_point_v<C>) {
      r = b != b ? b : r;
      r = a != a ? a : r;
    }
    return r;
  }
};
struct Maximum {
  template <class T> static constexpr bool ok = kAny<T>;
  template <class C> C operator()(C a, C b) const {
    C r = a < b ? b : a;
    if constexpr (std::is_floating_point_v<C>) {
      r = b != b ? b : r;
      r = a != a ? a : r;
    }
    return r;
  }
};
struct Atan2 {
  template <class T> static constexpr bool ok = kFloat<T>;
  template <class C> C operator()(C a, C b) const { return std::atan2(a, b); }
};
struct Hypot {
  template <class T> static constexpr bool ok = kFloat<T>;
  template <class C> C operator()(C a, C b) const { return std::hypot(a, b); }
};
// Fused activation derivatives: (x, g) -> g f'(x), in the formulas of torch's kernels (so
// their NaNs at x = +-inf are torch's too).
struct GeluBackward {
  template <class T> static constexpr bool ok = kFloat<T>;
  template <class C> C operator()(C x, C g) const {
    const C cdf = C(0.5) * (C(1) + std::erf(x * C(std::numbers::sqrt2 / 2)));
    const C pdf = std::exp(C(-0.5) * x * x) * C(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
    return g * (cdf + x * pdf);
  }
};
struct GeluTanhBackward {
  template <class T> static constexpr bool ok = kFloat<T>;
  template <class C> C operator()(C x, C g) const {
    constexpr C kBeta = C(std::numbers::sqrt2 * std::numbers::inv_sqrtpi), kKappa = C(0.044715);
    const C x2 = x * x;
    const C th = std::tanh(kBeta * (x + kKappa * x2 * x));
    const C left = C(0.5) * (C(1) + th);
    const C right = C(0.5) * x * (C(1) - th * th) * kBeta * (C(1) + C(3) * kKappa * x2);
    return g * (left + right);
  }
};
struct SiluBackward {
  template <class T> static constexpr bool ok = kFloat<T>;
  template <class C> C operator()(C x, C g) const {
    const C s = C(1) / (C(1) + std::exp(-x));
    return g * s * (C(1) + x * (C(1) - s));
  }
};

#define EMBER_COMPARE(Name, expr)                                          \
  struct Name {                                                            \
    template <class T> static constexpr bool ok = kAny<T>;                 \
    template <class C> bool operator()(C a, C b) const { return expr; }    \
  };
EMBER_COMPARE(Equal, a == b)
EMBER_COMPARE(NotEqual, a != b)
EMBER_COMPARE(Greater, a > b)
EMBER_COMPARE(GreaterEqual, a >= b)
EMBER_COMPARE(Lower, a < b)
EMBER_COMPARE(LowerEqual, a <= b)
EMBER_COMPARE(BoolAnd, bool(int(a != C(0)) & int(b != C(0))))
EMBER_COMPARE(BoolOr, bool(int(a != C(0)) | int(b != C(0))))
EMBER_COMPARE(BoolXor, (a != C(0)) != (b != C(0)))
#undef EMBER_COMPARE

struct BitAnd {
  template <class T> static constexpr bool ok = kIntOrBool<T>;
  template <class C> C operator()(C a, C b) const { return C(a & b); }
};
struct BitOr {
  template <class T> static constexpr bool ok = kIntOrBool<T>;
  template <class C> C operator()(C a, C b) const { return C(a | b); }
};
struct BitXor {
  template <class T> static constexpr bool ok = kIntOrBool<T>;
  template <class C> C operator()(C a, C b) const { return C(a ^ b); }
};
// Shifts as torch 1.13 computes them on x86: in the promoted type (int, or int64 for i64)
// with the count taken modulo that type's width.
struct ShiftLeft {
  template <class T> static constexpr bool ok = kInt<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (sizeof(C) == 8) return C(uint64_t(a) << (uint64_t(b) & 63u));
    else return C(uint32_t(int32_t(a)) << (uint32_t(b) & 31u));
  }
};
struct ShiftRight {
  template <class T> static constexpr bool ok = kInt<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (sizeof(C) == 8) return C(a >> (uint64_t(b) & 63u));
    else return C(int32_t(a) >> (uint32_t(b) & 31u));
  }
};

// ============================================================================ binary driver

// The output buffer: the buffer of one of inputs [first, last) when the op owns one of the
// right shape, a new one otherwise.
CpuTensorPtr binary_output(Op& op, size_t first, size_t last) {
  const TensorMeta& m = op.outputs[0];
  for (size_t i = first; i < last; ++i)
    if (op.inputs[i].use_count() == 1 && op.inputs[i]->shape() == m.shape && dtype_size(op.in(i).dtype) == dtype_size(m.dtype))
      return output_reusing(op, i, m);
  return alloc(m);
}

// The layout of a layout-preserving op: every input in [first, last) is a single element or
// has the output's shape in one common permuted dense layout (and at least one does).
std::optional<std::vector<int64_t>> common_permuted(const Op& op, size_t first, size_t last) {
  std::optional<std::vector<int64_t>> st;
  const Shape& s = op.outputs[0].shape;
  for (size_t i = first; i < last; ++i) {
    const CpuTensor& t = as_cpu(op.inputs[i]);
    if (t.numel() == 1) continue;
    if (t.shape() != s) return std::nullopt;
    if (!st) {
      st = ew::permuted_dense(t);
      if (!st) return std::nullopt;
    } else if (!ew::same_layout(t, *st)) {
      return std::nullopt;
    }
  }
  return st;
}
CpuTensorPtr permuted_binary_output(Op& op, size_t first, size_t last, const std::vector<int64_t>& strides) {
  for (size_t i = first; i + 1 < last; ++i)
    if (op.inputs[i].use_count() == 1 && op.inputs[i]->shape() == op.outputs[0].shape)
      return ew::permuted_output(op, i, op.outputs[0], strides);
  return ew::permuted_output(op, last - 1, op.outputs[0], strides);
}

template <class F, bool kBoolOut, int64_t kGrain>
void binary_compute(const Op& op, const CpuTensor& a, const CpuTensor& b, CpuTensor* out) {
  F f{};
  visit_dtype(a.dtype(), [&]<class T>() {
    if constexpr (!F::template ok<T>) {
      EMBER_FAIL(op.name(), ": not supported for ", dtype_name(a.dtype()), " tensors");
    } else {
      using C = compute_t<T>;
      using TO = std::conditional_t<kBoolOut, bool, T>;
      if constexpr (is_half_v<T>) {
        if constexpr (kBoolOut) {
          ew::half_binary<T, bool>(a, b, *out, kGrain, [f](const float* x, const float* y, bool* z, int64_t m) {
            for (int64_t j = 0; j < m; ++j) z[j] = f(x[j], y[j]);
          });
        } else {
          ew::half_binary<T, T>(a, b, *out, kGrain, [f, &op](const float* x, const float* y, float* z, int64_t m) {
            if (simd::binary_block_f32(op, x, y, z, m)) return;
            for (int64_t j = 0; j < m; ++j) z[j] = f(x[j], y[j]);
          });
        }
        return;
      }
      if constexpr (std::is_floating_point_v<T> && !kBoolOut) {
        if (out->numel() > 1 && simd::binary(op, a, b, *out)) return;
      }
      ew::binary_map<T, TO>(a, b, *out, kGrain, [f](T x, T y) -> TO {
        return convert_scalar<TO>(f(convert_scalar<C>(x), convert_scalar<C>(y)));
      });
    }
  });
}

template <class F, bool kBoolOut, int64_t kGrain>
std::vector<PrimitivePtr> binary_kernel(CpuBackend&, Op& op) {
  if (auto st = common_permuted(op, 0, 2)) {  // keep the inputs' common layout
    CpuTensor af = ew::flat_view(as_cpu(op.inputs[0])), bf = ew::flat_view(as_cpu(op.inputs[1]));
    CpuTensorPtr out = permuted_binary_output(op, 0, 2, *st);
    CpuTensor of = ew::flat_view(*out);
    binary_compute<F, kBoolOut, kGrain>(op, af, bf, &of);
    return {out};
  }
  CpuTensorPtr out = binary_output(op, 0, 2);
  CpuTensorPtr hold_a, hold_b;
  const CpuTensor& a = ew::input(op, 0, hold_a);
  const CpuTensor& b = ew::input(op, 1, hold_b);
  binary_compute<F, kBoolOut, kGrain>(op, a, b, out.get());
  return {out};
}

// pow: torch's fast paths for a scalar exponent (x*x, sqrt, ...) and its integer rule.
std::vector<PrimitivePtr> pow_kernel(CpuBackend& be, Op& op) {
  const CpuTensor& a = as_cpu(op.inputs[0]);
  const CpuTensor& b = as_cpu(op.inputs[1]);
  if (b.numel() != 1 || b.shape().rank() > a.shape().rank())
    return binary_kernel<Pow, false, kGrainHeavy>(be, op);
  // b is a single element broadcast over a: the python-scalar case
  double e = 0;
  visit_dtype(b.dtype(), [&]<class T>() { e = convert_scalar<double>(*b.data<T>()); });
  if (is_int(a.dtype())) {
    EMBER_CHECK(e >= 0, "pow: Integers to negative integer powers are not allowed (exponent ", e, ")");
    return binary_kernel<Pow, false, kGrainHeavy>(be, op);
  }
  // f32/f64 go through vec's tensor ** scalar, which has the same fast paths
  bool half = a.dtype() == DType::f16 || a.dtype() == DType::bf16;
  if (!half || (e != 2 && e != 1 && e != 0.5 && e != 3 && e != -1 && e != -0.5 && e != -2))
    return binary_kernel<Pow, false, kGrainHeavy>(be, op);
  CpuTensorPtr out = binary_output(op, 0, 1);
  auto run = [&]<class G>(G g) {
    visit_float_dtype(a.dtype(), "pow", [&]<class T>() {
      if constexpr (is_half_v<T>) {
        ew::half_unary<T, T>(a, *out, kGrainCheap, [g](const float* x, float* y, int64_t m) {
          for (int64_t j = 0; j < m; ++j) y[j] = g(x[j]);
        });
      }
    });
  };
  if (e == 2) run([](auto x) { return x * x; });
  else if (e == 1) run([](auto x) { return x; });
  else if (e == 0.5) run([](auto x) { return std::sqrt(x); });
  else if (e == 3) run([](auto x) { return x * x * x; });
  else if (e == -1) run([](auto x) { return decltype(x)(1) / x; });
  else if (e == -0.5) run([](auto x) { return decltype(x)(1) / std::sqrt(x); });
  else run([](auto x) { return decltype(x)(1) / (x * x); });
  return {out};
}

// ============================================================================ ternary

void where_compute(const CpuTensor& c, const CpuTensor& a, const CpuTensor& b, CpuTensor& out) {
  visit_dtype(a.dtype(), [&]<class T>() {
    ew::ternary_map<bool, T, T>(c, a, b, out, kGrainCheap, [](bool k, T x, T y) { return select(k, x, y); });
  });
}

std::vector<PrimitivePtr> where_kernel(CpuBackend&, Op& op) {
  if (auto st = common_permuted(op, 0, 3)) {
    CpuTensorPtr out = permuted_binary_output(op, 1, 3, *st);
    CpuTensor of = ew::flat_view(*out);
    where_compute(ew::flat_view(as_cpu(op.inputs[0])), ew::flat_view(as_cpu(op.inputs[1])),
                  ew::flat_view(as_cpu(op.inputs[2])), of);
    return {out};
  }
  CpuTensorPtr out = binary_output(op, 1, 3);
  CpuTensorPtr hc, ha, hb;
  const CpuTensor& c = ew::input(op, 0, hc);
  const CpuTensor& a = ew::input(op, 1, ha);
  const CpuTensor& b = ew::input(op, 2, hb);
  where_compute(c, a, b, *out);
  return {out};
}

// torch's two-branch formula: |w| < 0.5 ? start + w * (end - start) : end - (end - start) * (1 - w)
void lerp_compute(const CpuTensor& s, const CpuTensor& e, const CpuTensor& w, CpuTensor& out) {
  visit_float_dtype(s.dtype(), "lerp", [&]<class T>() {
    using C = compute_t<T>;
    ew::ternary_map<T, T, T>(s, e, w, out, kGrainCheap, [](T st, T en, T wt) {
      C a = convert_scalar<C>(st), b = convert_scalar<C>(en), t = convert_scalar<C>(wt);
      // base + w * d with (base, w) = (start, t) or (end, t - 1): the same values as
      // end - d * (1 - t), selected without a branch
      C d = b - a;
      bool low = std::abs(t) < C(0.5);
      C base = select(low, a, b), w = select(low, t, t - C(1));
      return convert_scalar<T>(base + w * d);
    });
  });
}

std::vector<PrimitivePtr> lerp_kernel(CpuBackend&, Op& op) {
  if (auto st = common_permuted(op, 0, 3)) {
    CpuTensorPtr out = permuted_binary_output(op, 0, 3, *st);
    CpuTensor of = ew::flat_view(*out);
    lerp_compute(ew::flat_view(as_cpu(op.inputs[0])), ew::flat_view(as_cpu(op.inputs[1])),
                 ew::flat_view(as_cpu(op.inputs[2])), of);
    return {out};
  }
  CpuTensorPtr out = binary_output(op, 0, 3);
  CpuTensorPtr hs, he, hw;
  const CpuTensor& s = ew::input(op, 0, hs);
  const CpuTensor& e = ew::input(op, 1, he);
  const CpuTensor& w = ew::input(op, 2, hw);
  lerp_compute(s, e, w, *out);
  return {out};
}

// Whether functor F computes dtype dt (its ok<T>): what supports() asks before the kernel runs.
template <class F>
bool dtype_ok(DType dt) {
  bool ok = false;
  visit_dtype(dt, [&]<class T>() { ok = F::template ok<T>; });
  return ok;
}
using DTypeCheck = bool (*)(DType);
// Per op kind: the dtype check of its functor (null: no functor, or any dtype), filled once by
// register_elementwise_kernels from the same lines that register the kernels.
std::array<DTypeCheck, kNumOps> g_dtype_checks{};
std::once_flag g_dtype_checks_once;

}  // namespace

bool elementwise_dtype_supported(const Op& op) {
  const DTypeCheck check = g_dtype_checks[size_t(op.kind)];
  return !check || op.inputs.empty() || !op.inputs[0] || check(op.in(0).dtype);
}

void register_elementwise_kernels(KernelTable& t) {
  // The kernel of each op and, once per process, its dtype check (the functor's ok<T>).
  std::vector<std::pair<OpKind, DTypeCheck>> checks;
#define U(name, F) t[size_t(OpKind::name)] = unary_kernel<F, false, kGrainCheap>; checks.emplace_back(OpKind::name, dtype_ok<F>);
#define UH(name, F) t[size_t(OpKind::name)] = unary_kernel<F, false, kGrainHeavy>; checks.emplace_back(OpKind::name, dtype_ok<F>);
#define P(name, F) t[size_t(OpKind::name)] = unary_kernel<F, true, kGrainCheap>; checks.emplace_back(OpKind::name, dtype_ok<F>);
  U(neg, Neg) U(abs, Abs) U(sign, Sign) U(square, Square) U(clamp, Clamp)
  UH(exp, Exp) UH(exp2, Exp2) UH(expm1, Expm1) UH(log, Log) UH(log2, Log2) UH(log10, Log10) UH(log1p, Log1p)
  U(sqrt, Sqrt) U(rsqrt, Rsqrt) U(reciprocal, Reciprocal)
  UH(sin, Sin) UH(cos, Cos) UH(tan, Tan) UH(asin, Asin) UH(acos, Acos) UH(atan, Atan)
  UH(sinh, Sinh) UH(cosh, Cosh) UH(tanh, Tanh) UH(asinh, Asinh) UH(acosh, Acosh) UH(atanh, Atanh) UH(erf, Erf)
  UH(sigmoid, Sigmoid) UH(log_sigmoid, LogSigmoid) U(hard_sigmoid, HardSigmoid) U(relu, Relu)
  UH(gelu, Gelu) UH(gelu_tanh, GeluTanh) UH(silu, Silu)
  U(floor, Floor) U(ceil, Ceil) U(round, Round) U(trunc, Trunc)
  U(leaky_relu, LeakyRelu) UH(softplus, Softplus)
  P(is_nan, IsNan) P(is_inf, IsInf) P(is_finite, IsFinite) P(bool_not, BoolNot)
  U(bitwise_not, BitwiseNot)
#undef U
#undef UH
#undef P
#define B(name, F) t[size_t(OpKind::name)] = binary_kernel<F, false, kGrainCheap>; checks.emplace_back(OpKind::name, dtype_ok<F>);
#define BH(name, F) t[size_t(OpKind::name)] = binary_kernel<F, false, kGrainHeavy>; checks.emplace_back(OpKind::name, dtype_ok<F>);
#define CMP(name, F) t[size_t(OpKind::name)] = binary_kernel<F, true, kGrainCheap>; checks.emplace_back(OpKind::name, dtype_ok<F>);
  B(add, Add) B(sub, Sub) B(mul, Mul) B(div, Div) BH(fmod, Fmod) BH(remainder, Remainder)
  B(minimum, Minimum) B(maximum, Maximum) BH(atan2, Atan2) BH(hypot, Hypot)
  BH(gelu_backward, GeluBackward) BH(gelu_tanh_backward, GeluTanhBackward) BH(silu_backward, SiluBackward)
  CMP(equal, Equal) CMP(not_equal, NotEqual) CMP(greater, Greater) CMP(greater_equal, GreaterEqual)
  CMP(lower, Lower) CMP(lower_equal, LowerEqual) CMP(bool_and, BoolAnd) CMP(bool_or, BoolOr) CMP(bool_xor, BoolXor)
  B(bitwise_and, BitAnd) B(bitwise_or, BitOr) B(bitwise_xor, BitXor) B(shift_left, ShiftLeft)
  B(shift_right, ShiftRight)
#undef B
#undef BH
#undef CMP
  std::call_once(g_dtype_checks_once, [&] {
    for (auto [kind, check] : checks) g_dtype_checks[size_t(kind)] = check;
  });
  t[size_t(OpKind::pow)] = pow_kernel;
  t[size_t(OpKind::where)] = where_kernel;
  t[size_t(OpKind::lerp)] = lerp_kernel;
  register_cast_kernels(t);
}

}  // namespace ember::cpu
