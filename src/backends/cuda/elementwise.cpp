// Elementwise kernels: unary (Unary, FloatUnary, Predicate, BitwiseUnary families), binary
// (Binary, FloatBinary, Compare, Bitwise), where, lerp and prelu.
//
// One generated source per (op, dtype), key "add/f32". The op itself is a device function
// ew_op(x0, x1, x2, attr) on storage values (computing in ember_compute: float for f16/bf16,
// rounded once on store); every source has the same entries around it:
//   flat       all operands walk their elements in the output's order (contiguous, or one
//              common permuted dense layout), or are one broadcast value ("scal" bits)
//   flat_vec   the same with 16-byte loads/stores (host checks pointer alignment)
//   strided_vec32  broadcasting over a contiguous innermost dim: packs along it
//   strided32  anything else (broadcast, strided, negative strides) over the dims collapse()
//   strided64  leaves, 32- or 64-bit index arithmetic
// Semantics follow the CPU backend (src/backends/cpu/elementwise.cpp and vec/vec_math.cpp):
// integer add/sub/mul/neg/abs wrap, shifts take the count modulo the promoted width, round is
// half to even, sign(NaN) = 0, relu(NaN) = NaN, minimum/maximum propagate NaN, gelu goes
// through erfc (accurate negative tail, gelu(-0) = +0), sigmoid/silu/gelu_tanh through the
// stable sigmoid, log_sigmoid = min(x, 0) - log1p(exp(-|x|)), softplus with its threshold,
// pow with torch's scalar-exponent fast paths. Transcendentals of f32/f16/bf16 use CUDA's float
// functions (a few ulp, where the CPU computes some of them in double).
//
// Differences from the CPU backend that cannot be avoided without a host synchronisation:
// integer fmod/remainder by zero give 0 instead of raising, and integer pow with a negative
// scalar exponent gives torch's integer results (1, +-1, 0) instead of raising.
#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include "cuda_backend.hpp"
#include "elementwise_sources.hpp"

namespace ember::cuda {

namespace {

constexpr DType kAll[] = {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64,
                          DType::i32, DType::i16, DType::i8,  DType::u8,   DType::boolean};

int arity(OpKind k) {
  switch (op_info(k).family) {
    case OpFamily::Binary:
    case OpFamily::FloatBinary:
    case OpFamily::Compare:
    case OpFamily::Bitwise:
      return 2;
    case OpFamily::Where:
    case OpFamily::Ternary:
      return 3;
    default:
      return k == OpKind::prelu ? 2 : 1;
  }
}

bool bool_out(OpKind k) {
  OpFamily f = op_info(k).family;
  return f == OpFamily::Predicate || f == OpFamily::Compare;
}

// ---------------------------------------------------------------------------------- sources

// Code every elementwise source starts with: the attribute struct, wrapping integer
// arithmetic and the float/double helpers the op bodies use.
const char* kEwCommon = R"CUDA(
struct Attr {
  double a, b;
  long long ia, ib;
};
// Wrapping integer arithmetic without signed overflow (sub-int types compute in 32 bits).
template <class T> struct ew_wide { typedef unsigned int type; };
template <> struct ew_wide<long long> { typedef unsigned long long type; };
template <class T> __device__ __forceinline__ T wrap_add(T a, T b) {
  typedef typename ew_wide<T>::type U;
  return T(U(a) + U(b));
}
template <class T> __device__ __forceinline__ T wrap_sub(T a, T b) {
  typedef typename ew_wide<T>::type U;
  return T(U(a) - U(b));
}
template <class T> __device__ __forceinline__ T wrap_mul(T a, T b) {
  typedef typename ew_wide<T>::type U;
  return T(U(a) * U(b));
}
// sigmoid without overflow: e = exp(-|x|), x >= 0 ? 1 / (1 + e) : e / (1 + e)
__device__ __forceinline__ float ew_sigmoid(float x) {
  float e = expf(-fabsf(x));
  return (x >= 0.f ? 1.f : e) / (1.f + e);
}
__device__ __forceinline__ double ew_sigmoid(double x) {
  double e = exp(-fabs(x));
  return (x >= 0.0 ? 1.0 : e) / (1.0 + e);
}
// erfc(z) in float from the Chebyshev fit of Numerical Recipes (Press et al., 2nd ed., 6.2,
// "erfcc": relative error below 1.2e-7 for every z) with t = 1 / (1 + |z| / 2):
// erfc(|z|) = t exp(-z^2 + P(t)), erfc(-|z|) = 2 - erfc(|z|); -z^2 + P(t) is one fused
// multiply-add. The reciprocal and the exponential are the hardware's approximations (2 ulp;
// __expf adds about 1.2 ulp per unit of its argument, which exceeds 10 only where erfc < 1e-4):
// about 20 instructions where erfcf takes about 80, so that gelu stays bound by memory.
__device__ __forceinline__ float ew_erfc(float z) {
  const float a = fabsf(z);
  const float t = __fdividef(1.0f, fmaf(0.5f, a, 1.0f));
  float q = 0.17087277f;
  q = fmaf(q, t, -0.82215223f);
  q = fmaf(q, t, 1.48851587f);
  q = fmaf(q, t, -1.13520398f);
  q = fmaf(q, t, 0.27886807f);
  q = fmaf(q, t, -0.18628806f);
  q = fmaf(q, t, 0.09678418f);
  q = fmaf(q, t, 0.37409196f);
  q = fmaf(q, t, 1.00002368f);
  q = fmaf(q, t, -1.26551223f);
  const float r = t * __expf(fmaf(-a, a, q));
  return z >= 0.f ? r : 2.f - r;
}
__device__ __forceinline__ double ew_erfc(double z) { return erfc(z); }
// base + w * d rounded twice (no fused multiply-add: the CPU backend's rounding)
__device__ __forceinline__ float ew_mul_add(float base, float w, float d) { return __fadd_rn(base, __fmul_rn(w, d)); }
__device__ __forceinline__ double ew_mul_add(double base, double w, double d) { return __dadd_rn(base, __dmul_rn(w, d)); }
)CUDA";

// The entries around ew_op (EW_ARITY, EW_VEC, T0..T2, O defined before).
const char* kEwDrivers = R"CUDA(
template <class E> struct alignas(sizeof(E) * EW_VEC) EwPack { E v[EW_VEC]; };

__device__ __forceinline__ long long ew_tid() { return (long long)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ long long ew_threads() { return (long long)gridDim.x * blockDim.x; }

extern "C" __global__ void flat(O* out, const T0* a0, const T1* a1, const T2* a2, uint32_t scal, int64_t n, Attr p) {
  for (int64_t i = ew_tid(); i < n; i += ew_threads()) {
    T0 x0 = a0[(scal & 1u) ? 0 : i];
    T1 x1 = EW_ARITY > 1 ? a1[(scal & 2u) ? 0 : i] : T1();
    T2 x2 = EW_ARITY > 2 ? a2[(scal & 4u) ? 0 : i] : T2();
    out[i] = ew_op(x0, x1, x2, p);
  }
}

// The pack `v` of an operand: loaded, or the broadcast scalar s (scal bit set).
template <class E>
__device__ __forceinline__ EwPack<E> ew_pack(const E* a, bool scalar, E s, int64_t v) {
  EwPack<E> x;
  if (scalar) {
#pragma unroll
    for (int k = 0; k < EW_VEC; ++k) x.v[k] = s;
  } else {
    x = reinterpret_cast<const EwPack<E>*>(a)[v];
  }
  return x;
}

// n / EW_VEC packs of 16 bytes (of the widest operand), two a thread at a time (both loaded
// before either is computed: twice the bytes in flight, which memory-bound unary ops with
// some arithmetic, gelu, need), then the tail element by element.
extern "C" __global__ void flat_vec(O* out, const T0* a0, const T1* a1, const T2* a2, uint32_t scal, int64_t n,
                                    Attr p) {
  const int64_t nv = n / EW_VEC;
  const bool c0 = scal & 1u, c1 = EW_ARITY < 2 || (scal & 2u), c2 = EW_ARITY < 3 || (scal & 4u);
  const T0 s0 = c0 ? a0[0] : T0();
  const T1 s1 = (EW_ARITY > 1 && c1) ? a1[0] : T1();
  const T2 s2 = (EW_ARITY > 2 && c2) ? a2[0] : T2();
  const int64_t nt = ew_threads();
  int64_t v = ew_tid();
  for (; v + nt < nv; v += 2 * nt) {
    const EwPack<T0> x0a = ew_pack(a0, c0, s0, v), x0b = ew_pack(a0, c0, s0, v + nt);
    const EwPack<T1> x1a = ew_pack(a1, c1, s1, v), x1b = ew_pack(a1, c1, s1, v + nt);
    const EwPack<T2> x2a = ew_pack(a2, c2, s2, v), x2b = ew_pack(a2, c2, s2, v + nt);
    EwPack<O> ya, yb;
#pragma unroll
    for (int k = 0; k < EW_VEC; ++k) {
      ya.v[k] = ew_op(x0a.v[k], x1a.v[k], x2a.v[k], p);
      yb.v[k] = ew_op(x0b.v[k], x1b.v[k], x2b.v[k], p);
    }
    reinterpret_cast<EwPack<O>*>(out)[v] = ya;
    reinterpret_cast<EwPack<O>*>(out)[v + nt] = yb;
  }
  if (v < nv) {
    const EwPack<T0> x0 = ew_pack(a0, c0, s0, v);
    const EwPack<T1> x1 = ew_pack(a1, c1, s1, v);
    const EwPack<T2> x2 = ew_pack(a2, c2, s2, v);
    EwPack<O> y;
#pragma unroll
    for (int k = 0; k < EW_VEC; ++k) y.v[k] = ew_op(x0.v[k], x1.v[k], x2.v[k], p);
    reinterpret_cast<EwPack<O>*>(out)[v] = y;
  }
  const int64_t t = nv * EW_VEC + ew_tid();
  if (t < n) {
    T0 x0 = (scal & 1u) ? s0 : a0[t];
    T1 x1 = (EW_ARITY > 1 && !(scal & 2u)) ? a1[t] : s1;
    T2 x2 = (EW_ARITY > 2 && !(scal & 4u)) ? a2[t] : s2;
    out[t] = ew_op(x0, x1, x2, p);
  }
}

// The output is contiguous over the collapsed shape; each input has its own strides.
template <class I>
__device__ __forceinline__ void ew_strided(O* out, const T0* a0, const T1* a1, const T2* a2, const Shape& sh,
                                           const Strides& s0, const Strides& s1, const Strides& s2, I n,
                                           const Attr& p) {
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += I(gridDim.x) * I(blockDim.x)) {
    I r = i;
    int64_t o0 = 0, o1 = 0, o2 = 0;
    for (int d = sh.rank - 1; d >= 0; --d) {
      I size = I(sh.size[d]);
      I q = r / size;
      int64_t c = int64_t(r - q * size);
      o0 += c * s0.v[d];
      if (EW_ARITY > 1) o1 += c * s1.v[d];
      if (EW_ARITY > 2) o2 += c * s2.v[d];
      r = q;
    }
    T1 x1 = EW_ARITY > 1 ? a1[o1] : T1();
    T2 x2 = EW_ARITY > 2 ? a2[o2] : T2();
    out[i] = ew_op(a0[o0], x1, x2, p);
  }
}
// Packs of EW_VEC consecutive elements along the innermost collapsed dim (its size is a
// multiple of EW_VEC), which every operand walks with stride 1 (16-byte aligned packs) or 0
// (bit k of bmask: operand k repeats one value along it): one index decomposition per pack.
extern "C" __global__ void strided_vec32(O* out, const T0* a0, const T1* a1, const T2* a2, EMBER_GC Shape sh,
                                         EMBER_GC Strides s0, EMBER_GC Strides s1, EMBER_GC Strides s2, uint32_t n,
                                         uint32_t bmask, Attr p) {
  const uint32_t nv = n / EW_VEC;
  for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < nv; v += gridDim.x * blockDim.x) {
    uint32_t r = v * EW_VEC;
    int64_t o0 = 0, o1 = 0, o2 = 0;
    for (int d = sh.rank - 1; d >= 0; --d) {
      uint32_t size = uint32_t(sh.size[d]);
      uint32_t q = r / size;
      int64_t c = int64_t(r - q * size);
      o0 += c * s0.v[d];
      if (EW_ARITY > 1) o1 += c * s1.v[d];
      if (EW_ARITY > 2) o2 += c * s2.v[d];
      r = q;
    }
    EwPack<T0> x0;
    EwPack<T1> x1;
    EwPack<T2> x2;
    if (bmask & 1u) {
      T0 e = a0[o0];
#pragma unroll
      for (int k = 0; k < EW_VEC; ++k) x0.v[k] = e;
    } else {
      x0 = *reinterpret_cast<const EwPack<T0>*>(a0 + o0);
    }
    if (EW_ARITY > 1 && !(bmask & 2u)) {
      x1 = *reinterpret_cast<const EwPack<T1>*>(a1 + o1);
    } else {
      T1 e = EW_ARITY > 1 ? a1[o1] : T1();
#pragma unroll
      for (int k = 0; k < EW_VEC; ++k) x1.v[k] = e;
    }
    if (EW_ARITY > 2 && !(bmask & 4u)) {
      x2 = *reinterpret_cast<const EwPack<T2>*>(a2 + o2);
    } else {
      T2 e = EW_ARITY > 2 ? a2[o2] : T2();
#pragma unroll
      for (int k = 0; k < EW_VEC; ++k) x2.v[k] = e;
    }
    EwPack<O> y;
#pragma unroll
    for (int k = 0; k < EW_VEC; ++k) y.v[k] = ew_op(x0.v[k], x1.v[k], x2.v[k], p);
    reinterpret_cast<EwPack<O>*>(out)[v] = y;
  }
}
extern "C" __global__ void strided32(O* out, const T0* a0, const T1* a1, const T2* a2, EMBER_GC Shape sh,
                                     EMBER_GC Strides s0, EMBER_GC Strides s1, EMBER_GC Strides s2, uint32_t n,
                                     Attr p) {
  ew_strided<uint32_t>(out, a0, a1, a2, sh, s0, s1, s2, n, p);
}
extern "C" __global__ void strided64(O* out, const T0* a0, const T1* a1, const T2* a2, EMBER_GC Shape sh,
                                     EMBER_GC Strides s0, EMBER_GC Strides s1, EMBER_GC Strides s2, int64_t n,
                                     Attr p) {
  ew_strided<int64_t>(out, a0, a1, a2, sh, s0, s1, s2, n, p);
}
)CUDA";

// Builds the body of ew_op for one (op, dtype). In the body: x0_, x1_, x2_ are the storage
// values, x, y, z the same in the compute type C, p the attributes; it returns an O.
class BodyGen {
 public:
  explicit BodyGen(DType dt) : dt_(dt) {}
  bool is_half() const { return dt_ == DType::f16 || dt_ == DType::bf16; }
  bool is_flt() const { return is_float(dt_); }
  bool is_dbl() const { return dt_ == DType::f64; }
  bool is_bool() const { return dt_ == DType::boolean; }
  bool is_unsigned() const { return dt_ == DType::u8; }
  bool is_wide() const { return dt_ == DType::i64; }
  // The math function `name` in the compute type: expf for float, exp for double.
  std::string f(const std::string& name) const { return is_dbl() ? name : name + "f"; }
  std::string inf() const { return is_dbl() ? "ember_inf_d()" : "ember_inf()"; }
  std::string nan() const { return is_dbl() ? "ember_nan_d()" : "ember_nan()"; }

 private:
  DType dt_;
};

std::string unary_body(OpKind k, const BodyGen& g) {
  auto F = [&](const char* n) { return g.f(n); };
  auto call = [&](const char* n) { return "return O(" + F(n) + "(x));"; };
  switch (k) {
    // ---- Unary (any dtype but bool)
    case OpKind::neg:
      if (g.is_half()) return "return O::from_bits(uint16_t(x0_.bits ^ 0x8000u));";  // exact on the sign bit
      if (g.is_flt()) return "return O(-x);";
      return "return wrap_sub(C(0), x);";
    case OpKind::abs:
      if (g.is_half()) return "return O::from_bits(uint16_t(x0_.bits & 0x7fffu));";
      if (g.is_flt()) return call("fabs");
      if (g.is_unsigned()) return "return x;";
      return "return x < C(0) ? wrap_sub(C(0), x) : x;";
    case OpKind::sign:  // NaN -> 0
      if (g.is_unsigned()) return "return O(x > C(0) ? 1 : 0);";
      return "return O(x > C(0) ? C(1) : (x < C(0) ? C(-1) : C(0)));";
    case OpKind::square:
      if (g.is_flt()) return "return O(x * x);";
      return "return wrap_mul(x, x);";
    case OpKind::clamp:  // min(max(x, lo), hi); a NaN x stays, a NaN bound gives NaN; lo > hi gives hi
      if (g.is_flt())
        return "C l = C(p.a), h = C(p.b);\n  C v = x < l ? l : x;\n  v = v > h ? h : v;\n"
               "  return O((p.a != p.a || p.b != p.b) ? C(" + g.nan() + ") : v);";
      // integer bounds saturated to the dtype's range on the host
      return "C l = C(p.ia), h = C(p.ib);\n  C v = x < l ? l : x;\n  return v > h ? h : v;";
    // ---- FloatUnary
    case OpKind::exp: return call("exp");
    case OpKind::exp2: return call("exp2");
    case OpKind::expm1: return call("expm1");
    case OpKind::log: return call("log");
    case OpKind::log2: return call("log2");
    case OpKind::log10: return call("log10");
    case OpKind::log1p: return call("log1p");
    case OpKind::sqrt: return call("sqrt");
    case OpKind::rsqrt: return "return O(C(1) / " + F("sqrt") + "(x));";  // correctly rounded sqrt and division
    case OpKind::reciprocal: return "return O(C(1) / x);";
    case OpKind::sin: return call("sin");
    case OpKind::cos: return call("cos");
    case OpKind::tan: return call("tan");
    case OpKind::asin: return call("asin");
    case OpKind::acos: return call("acos");
    case OpKind::atan: return call("atan");
    case OpKind::sinh: return call("sinh");
    case OpKind::cosh: return call("cosh");
    case OpKind::tanh: return call("tanh");
    case OpKind::asinh: return call("asinh");
    case OpKind::acosh: return call("acosh");
    case OpKind::atanh: return call("atanh");
    case OpKind::erf: return call("erf");
    case OpKind::sigmoid: return "return O(ew_sigmoid(x));";
    case OpKind::log_sigmoid:
      return "return O(x != x ? x : " + F("fmin") + "(x, C(0)) - " + F("log1p") + "(" + F("exp") + "(-" + F("fabs") +
             "(x))));";
    case OpKind::hard_sigmoid:  // min(max(x + 3, 0), 6) / 6, NaN stays NaN
      return "C v = x + C(3);\n  v = v < C(0) ? C(0) : v;\n  v = v > C(6) ? C(6) : v;\n  return O(v / C(6));";
    case OpKind::relu: return "return O(x < C(0) ? C(0) : x);";  // relu(NaN) = NaN
    case OpKind::gelu:  // x * Phi(x) through erfc (ew_erfc); gelu(+-0) = +0, gelu(-inf) = NaN (as torch)
      // without branches: +-inf come out of erfc(-+inf) = 2 or 0 as inf and NaN; -0 needs the select
      return "const C r = C(0.5) * x * ew_erfc(-x * C(0.70710678118654752440));\n  return O(x == C(0) ? C(0) : r);";
    case OpKind::gelu_tanh:  // 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
      return "if (" + F("fabs") + "(x) == " + g.inf() + ") return O(x > C(0) ? x : C(" + g.nan() +
             "));\n  C u = C(0.79788456080286535588) * (x + C(0.044715) * x * x * x);\n"
             "  return O(x * ew_sigmoid(C(2) * u));";
    case OpKind::silu: return "return O(x * ew_sigmoid(x));";  // silu(-inf) = NaN as torch
    case OpKind::floor: return call("floor");
    case OpKind::ceil: return call("ceil");
    case OpKind::round: return call("rint");  // half to even
    case OpKind::trunc: return call("trunc");
    case OpKind::leaky_relu: return "return O(x > C(0) ? x : x * C(p.a));";
    case OpKind::softplus:  // x * beta > threshold ? x : log1p(exp(x * beta)) / beta
      return "C beta = C(p.a);\n  C xb = x * beta;\n  return O(xb > C(p.b) ? x : " + F("log1p") + "(" + F("exp") +
             "(xb)) / beta);";
    // ---- Predicate (-> bool)
    case OpKind::is_nan: return g.is_flt() ? "return x != x;" : "return false;";
    case OpKind::is_inf: return g.is_flt() ? "return " + F("fabs") + "(x) == " + g.inf() + ";" : "return false;";
    case OpKind::is_finite: return g.is_flt() ? "return x - x == C(0);" : "return true;";
    case OpKind::bool_not: return "return x == C(0);";
    // ---- BitwiseUnary
    case OpKind::bitwise_not: return g.is_bool() ? "return !x;" : "return C(~x);";
    default: break;
  }
  EMBER_FAIL(op_name(k), ": no CUDA elementwise kernel");
}

std::string binary_body(OpKind k, const BodyGen& g) {
  auto F = [&](const char* n) { return g.f(n); };
  const bool flt = g.is_flt(), integer = !flt && !g.is_bool();
  switch (k) {
    case OpKind::add:
      if (g.is_bool()) return "return x || y;";
      return integer ? "return wrap_add(x, y);" : "return O(x + y);";
    case OpKind::sub: return integer ? "return wrap_sub(x, y);" : "return O(x - y);";
    case OpKind::mul:
      if (g.is_bool()) return "return x && y;";
      return integer ? "return wrap_mul(x, y);" : "return O(x * y);";
    case OpKind::div: return "return O(x / y);";
    case OpKind::fmod:
      if (flt) return "return O(" + F("fmod") + "(x, y));";
      if (g.is_unsigned()) return "return y == C(0) ? C(0) : C(x % y);";
      return "if (y == C(0) || y == C(-1)) return C(0);\n  return C(x % y);";
    case OpKind::remainder:  // the sign of the divisor
      if (flt)
        return "C m = " + F("fmod") +
               "(x, y);\n  return O((m != C(0) && ((m < C(0)) != (y < C(0)))) ? m + y : m);";
      if (g.is_unsigned()) return "return y == C(0) ? C(0) : C(x % y);";
      return "if (y == C(0) || y == C(-1)) return C(0);\n  C m = C(x % y);\n"
             "  return (m != C(0) && ((m < C(0)) != (y < C(0)))) ? C(m + y) : m;";
    case OpKind::pow:
      if (flt)  // p.ia: the exponent is one broadcast value (torch's tensor ** scalar fast paths)
        return "if (p.ia) {\n"
               "    if (y == C(2)) return O(x * x);\n"
               "    if (y == C(3)) return O(x * x * x);\n"
               "    if (y == C(0.5)) return O(" + F("sqrt") + "(x));\n"
               "    if (y == C(-0.5)) return O(C(1) / " + F("sqrt") + "(x));\n"
               "    if (y == C(-1)) return O(C(1) / x);\n"
               "    if (y == C(-2)) return O(C(1) / (x * x));\n"
               "  }\n  return O(" + F("pow") + "(x, y));";
      return std::string(g.is_unsigned() ? ""
                                         : "if (y < C(0)) {  // torch: 1 -> 1, -1 -> +-1, others -> 0\n"
                                           "    if (x == C(1)) return C(1);\n"
                                           "    if (x == C(-1)) return (y % 2) ? C(-1) : C(1);\n"
                                           "    return C(0);\n  }\n  ") +
             "C r = C(1), base = x;\n  unsigned long long e = (unsigned long long)y;\n"
             "  while (e) {\n    if (e & 1ull) r = wrap_mul(r, base);\n    base = wrap_mul(base, base);\n"
             "    e >>= 1;\n  }\n  return r;";
    case OpKind::minimum:  // NaN propagates
      if (flt) return "return O((x != x || y != y) ? x + y : (x < y ? x : y));";
      return "return y < x ? y : x;";
    case OpKind::maximum:
      if (flt) return "return O((x != x || y != y) ? x + y : (x > y ? x : y));";
      return "return x < y ? y : x;";
    case OpKind::atan2: return "return O(" + F("atan2") + "(x, y));";
    case OpKind::hypot: return "return O(" + F("hypot") + "(x, y));";
    // fused activation derivatives, x = the input, y = the output's gradient (torch's formulas)
    case OpKind::gelu_backward:
      return "const C cdf = C(0.5) * ew_erfc(-x * C(0.70710678118654752440));\n"
             "  const C pdf = " + F("exp") + "(C(-0.5) * x * x) * C(0.39894228040143267794);\n"
             "  return O(y * (cdf + x * pdf));";
    case OpKind::gelu_tanh_backward:
      return "const C kb = C(0.79788456080286535588), kk = C(0.044715), x2 = x * x;\n"
             "  const C th = " + F("tanh") + "(kb * (x + kk * x2 * x));\n"
             "  return O(y * (C(0.5) * (C(1) + th) + C(0.5) * x * (C(1) - th * th) * kb * (C(1) + C(3) * kk * x2)));";
    case OpKind::silu_backward:
      return "const C s = ew_sigmoid(x);\n  return O(y * s * (C(1) + x * (C(1) - s)));";
    case OpKind::equal: return "return x == y;";
    case OpKind::not_equal: return "return x != y;";
    case OpKind::greater: return "return x > y;";
    case OpKind::greater_equal: return "return x >= y;";
    case OpKind::lower: return "return x < y;";
    case OpKind::lower_equal: return "return x <= y;";
    case OpKind::bool_and: return "return (x != C(0)) && (y != C(0));";
    case OpKind::bool_or: return "return (x != C(0)) || (y != C(0));";
    case OpKind::bool_xor: return "return (x != C(0)) != (y != C(0));";
    case OpKind::bitwise_and: return "return O(x & y);";
    case OpKind::bitwise_or: return "return O(x | y);";
    case OpKind::bitwise_xor: return "return O(x ^ y);";
    // shifts as torch 1.13 on x86: in int (int64 for i64), count modulo that width
    case OpKind::shift_left:
      if (g.is_wide()) return "return O((unsigned long long)x << ((unsigned long long)y & 63ull));";
      return "return O((unsigned)(int)x << ((unsigned)y & 31u));";
    case OpKind::shift_right:
      if (g.is_wide()) return "return O(x >> ((unsigned long long)y & 63ull));";
      return "return O((int)x >> ((unsigned)y & 31u));";
    default: break;
  }
  EMBER_FAIL(op_name(k), ": no CUDA elementwise kernel");
}

std::string ternary_body(OpKind k, const BodyGen& g) {
  if (k == OpKind::where) return "return x0_ ? x1_ : x2_;";
  // lerp, torch's two-branch formula: |w| < 0.5 ? start + w * d : end + (w - 1) * d, d = end - start
  return "C d = y - x;\n  bool low = " + g.f("fabs") + "(z) < C(0.5);\n  C base = low ? x : y, w = low ? z : z - C(1);\n"
         "  return O(ew_mul_add(base, w, d));";
}

std::string prelu_source_for(DType dt) {
  std::string s = "typedef " + std::string(device_type(dt)) + " T;\ntypedef " + compute_type(dt) + " C;\n";
  s += dt == DType::f64 ? "__device__ __forceinline__ bool prelu_pos(double v) { return __double_as_longlong(v) > 0; }\n"
                        : "__device__ __forceinline__ bool prelu_pos(float v) { return __float_as_int(v) > 0; }\n";
  s += R"CUDA(
// prelu(v) = v * (v > 0 ? 1 : w) with the test on the bit pattern, as the CPU backend: a
// positive NaN stays, -0 and negative values are scaled by the channel's weight.
// x is contiguous [N, C, inner] (C = 1 when the weight has one element).
template <class I>
__device__ __forceinline__ void prelu_body(T* out, const T* x, const T* w, I n, I inner, I channels) {
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += I(gridDim.x) * I(blockDim.x)) {
    C v = C(x[i]);
    C wc = C(w[(i / inner) % channels]);
    out[i] = T(v * (prelu_pos(v) ? C(1) : wc));
  }
}
extern "C" __global__ void prelu32(T* out, const T* x, const T* w, uint32_t n, uint32_t inner, uint32_t channels) {
  prelu_body<uint32_t>(out, x, w, n, inner, channels);
}
extern "C" __global__ void prelu64(T* out, const T* x, const T* w, int64_t n, int64_t inner, int64_t channels) {
  prelu_body<int64_t>(out, x, w, n, inner, channels);
}
)CUDA";
  return s;
}

// Elements per 16-byte pack of the widest operand (the op's dtype: conditions and bool
// outputs are narrower or as wide).
int vec_width(DType dt) { return int(16 / dtype_size(dt)); }

}  // namespace

// ---------------------------------------------------------------------------- public sources

std::vector<OpKind> elementwise_ops() {
  std::vector<OpKind> ops;
  for (int i = 0; i < kNumOps; ++i) {
    OpKind k = OpKind(i);
    OpFamily f = op_info(k).family;
    if ((is_elementwise(f) && f != OpFamily::Cast) || k == OpKind::prelu) ops.push_back(k);
  }
  return ops;
}

std::vector<DType> elementwise_dtypes(OpKind k) {
  std::vector<DType> out;
  for (DType dt : kAll) {
    bool ok = false;
    switch (op_info(k).family) {
      case OpFamily::Unary: ok = !is_bool(dt); break;
      case OpFamily::FloatUnary:
      case OpFamily::FloatBinary:
      case OpFamily::Ternary:
        ok = is_float(dt);
        break;
      case OpFamily::Predicate:
      case OpFamily::Compare:
      case OpFamily::Where:
        ok = true;
        break;
      case OpFamily::BitwiseUnary: ok = !is_float(dt); break;
      case OpFamily::Binary:
        if (k == OpKind::div) ok = is_float(dt);
        else if (k == OpKind::add || k == OpKind::mul || k == OpKind::minimum || k == OpKind::maximum) ok = true;
        else ok = !is_bool(dt);
        break;
      case OpFamily::Bitwise:
        ok = (k == OpKind::shift_left || k == OpKind::shift_right) ? is_int(dt) : !is_float(dt);
        break;
      default: ok = k == OpKind::prelu && is_float(dt); break;
    }
    if (ok) out.push_back(dt);
  }
  return out;
}

bool elementwise_supports(OpKind k, DType dt) {
  // a table made once: this runs for every op, and the host cost of small ops matters
  static const auto table = [] {
    std::array<std::array<bool, kNumDTypes>, kNumOps> t{};
    for (OpKind op : elementwise_ops())
      for (DType d : elementwise_dtypes(op)) t[size_t(op)][size_t(d)] = true;
    return t;
  }();
  return table[size_t(k)][size_t(dt)];
}

std::string elementwise_key(OpKind k, DType dt) { return std::string(op_name(k)) + "/" + std::string(dtype_name(dt)); }

namespace {
// The keys, made once (the same strings as elementwise_key).
const std::string& cached_key(OpKind k, DType dt) {
  static const auto keys = [] {
    std::vector<std::string> v(size_t(kNumOps) * kNumDTypes);
    for (int o = 0; o < kNumOps; ++o)
      for (int d = 0; d < kNumDTypes; ++d) v[size_t(o) * kNumDTypes + size_t(d)] = elementwise_key(OpKind(o), DType(d));
    return v;
  }();
  return keys[size_t(k) * kNumDTypes + size_t(dt)];
}
}  // namespace

const char* elementwise_common_source() { return kEwCommon; }

std::string elementwise_op_function(OpKind k, DType dt) {
  EMBER_CHECK(elementwise_supports(k, dt) && k != OpKind::prelu, op_name(k), ": not supported for ", dtype_name(dt),
              " tensors");
  const int n = arity(k);
  const std::string T = device_type(dt);
  const std::string C = compute_type(dt);
  const std::string O = bool_out(k) ? "bool" : T;
  const std::string T0 = k == OpKind::where ? "bool" : T;
  std::string s;
  s += "typedef " + T0 + " T0;\n";
  s += "typedef " + (n > 1 ? T : T0) + " T1;\n";
  s += "typedef " + (n > 2 ? T : T0) + " T2;\n";
  s += "typedef " + O + " O;\n";
  s += "typedef " + C + " C;\n";
  BodyGen g(dt);
  std::string body;
  if (n == 1) body = unary_body(k, g);
  else if (n == 2) body = binary_body(k, g);
  else body = ternary_body(k, g);
  s += "// " + std::string(op_name(k)) + " on " + std::string(dtype_name(dt)) + "\n";
  s += "__device__ __forceinline__ O ew_op(T0 x0_, T1 x1_, T2 x2_, const Attr& p) {\n";
  s += "  (void)x1_; (void)x2_; (void)p;\n";
  if (k != OpKind::where) {
    s += "  C x = C(x0_);\n  (void)x;\n";
    if (n > 1) s += "  C y = C(x1_);\n";
    if (n > 2) s += "  C z = C(x2_);\n";
  }
  s += "  " + body + "\n}\n";
  return s;
}

std::string elementwise_source(OpKind k, DType dt) {
  EMBER_CHECK(elementwise_supports(k, dt), op_name(k), ": not supported for ", dtype_name(dt), " tensors");
  if (k == OpKind::prelu) return prelu_source_for(dt);
  std::string s;
  s += "#define EW_ARITY " + std::to_string(arity(k)) + "\n";
  s += "#define EW_VEC " + std::to_string(vec_width(dt)) + "\n";
  s += kEwCommon;
  s += "\n";
  s += elementwise_op_function(k, dt);
  s += kEwDrivers;
  return s;
}

std::vector<KernelSource> elementwise_kernel_sources() {
  std::vector<KernelSource> out;
  for (OpKind k : elementwise_ops())
    for (DType dt : elementwise_dtypes(k)) out.push_back({elementwise_key(k, dt), elementwise_source(k, dt)});
  return out;
}

// ------------------------------------------------------------------------------------ host

namespace {

constexpr int kThreads = 256;

// An integer clamp bound: +-inf and out-of-range values saturate to the dtype's range, NaN is 0
// (as the CPU backend's Clamp::bound).
int64_t clamp_bound(DType dt, double v) {
  int64_t r = 0;
  visit_dtype(dt, [&]<class T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      using L = std::numeric_limits<T>;
      if (v != v) r = 0;
      else if (v <= double(L::lowest())) r = int64_t(L::lowest());
      else if (v >= double(L::max())) r = int64_t(L::max());
      else r = int64_t(T(v));
    }
  });
  return r;
}

EwAttr make_attr(const Op& op, DType dt) {
  const bool scalar_exponent = op.kind == OpKind::pow && op.in(1).shape.numel() == 1 &&
                               op.in(1).shape.rank() <= op.in(0).shape.rank();
  return elementwise_attr(op.kind, op.attrs, dt, scalar_exponent);
}

// The strides of `t` when its elements exactly fill one block of memory in a dim order other
// than row-major (a permuted dense tensor); nullopt otherwise (as the CPU backend).
std::optional<std::vector<int64_t>> permuted_dense(const CudaTensor& t) {
  if (t.is_contiguous()) return std::nullopt;
  const Shape& s = t.shape();
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims of size > 1
  for (int d = 0; d < s.rank(); ++d) {
    if (s[d] == 1) continue;
    if (t.strides[d] <= 0) return std::nullopt;
    dims.emplace_back(t.strides[d], s[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t expect = 1;
  for (auto [stride, size] : dims) {
    if (stride != expect) return std::nullopt;
    expect *= size;
  }
  return t.strides;
}

bool same_layout(const CudaTensor& t, const std::vector<int64_t>& strides) {
  const Shape& s = t.shape();
  for (int d = 0; d < s.rank(); ++d)
    if (s[d] > 1 && t.strides[d] != strides[d]) return false;
  return true;
}

// The common permuted dense layout of inputs [first, last): every one is a single element or
// has the output's shape in that layout, and at least one is permuted.
std::optional<std::vector<int64_t>> common_permuted(const Op& op, size_t first, size_t last) {
  std::optional<std::vector<int64_t>> st;
  const Shape& s = op.outputs[0].shape;
  for (size_t i = first; i < last; ++i) {
    const CudaTensor& t = as_cuda(op.inputs[i]);
    if (t.numel() == 1) continue;
    if (t.shape() != s) return std::nullopt;
    if (!st) {
      st = permuted_dense(t);
      if (!st) return std::nullopt;
    } else if (!same_layout(t, *st)) {
      return std::nullopt;
    }
  }
  return st;
}

// Whether output_reusing(be, op, i, meta) would hand out input i's buffer.
bool can_reuse(const Op& op, size_t i, const TensorMeta& meta) {
  if (i >= op.inputs.size() || !op.inputs[i] || op.inputs[i].use_count() != 1) return false;
  const CudaTensor& t = as_cuda(op.inputs[i]);
  size_t bytes = size_t(meta.shape.numel()) * dtype_size(meta.dtype);
  return t.shape() == meta.shape && t.buffer_alone() && t.offset == 0 && t.is_contiguous() &&
         t.buffer->bytes == bytes && size_t(t.numel()) * dtype_size(t.dtype()) == bytes;
}

// A contiguous output: the buffer of one of inputs [first, last) when the op holds the only
// reference to it and it has the output's shape and byte size (in-place), else a new one.
CudaTensorPtr ew_output(CudaBackend& be, Op& op, size_t first, size_t last) {
  const TensorMeta& m = op.outputs[0];
  for (size_t i = first; i < last; ++i)
    if (can_reuse(op, i, m)) return output_reusing(be, op, i, m);
  return alloc(be, m);
}

// An output laid out with `strides` (a dense permutation): one of inputs [first, last)'s buffer
// when the op owns it and it has that layout, a new buffer otherwise.
CudaTensorPtr permuted_output(CudaBackend& be, Op& op, size_t first, size_t last, const std::vector<int64_t>& strides) {
  const TensorMeta& m = op.outputs[0];
  size_t bytes = size_t(m.shape.numel()) * dtype_size(m.dtype);
  for (size_t i = first; i < last; ++i) {
    if (!op.inputs[i] || op.inputs[i].use_count() != 1) continue;
    const CudaTensor& t = as_cuda(op.inputs[i]);
    if (t.buffer_alone() && t.offset == 0 && t.shape() == m.shape && dtype_size(t.dtype()) == dtype_size(m.dtype) &&
        t.buffer->bytes == bytes && same_layout(t, strides))
      return std::make_shared<CudaTensor>(m, t.buffer, strides, 0);
  }
  auto buf = std::make_shared<Buffer>(be.allocator(), bytes);
  return std::make_shared<CudaTensor>(m, std::move(buf), strides, 0);
}

// Elements from which a transposed operand is copied first (ew_kernel).
constexpr int64_t kTransposeCopyMin = int64_t(1) << 22;

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Runs the flat entry (vectorised when every non-broadcast pointer is aligned to its pack).
void launch_flat(CudaBackend& be, const Op& op, DType dt, const std::string& key, void* out, const void* const* in,
                 int nin, uint32_t scal, int64_t n, const EwAttr& attr) {
  auto source = [&] { return elementwise_source(op.kind, dt); };
  const int vec = vec_width(dt);
  const size_t osz = dtype_size(op.outputs[0].dtype);
  bool use_vec = n >= 2 * vec && aligned(out, osz * vec);
  for (int i = 0; i < nin && use_vec; ++i) {
    size_t isz = dtype_size(op.in(size_t(i)).dtype);
    if (!(scal >> i & 1u)) use_vec = aligned(in[i], isz * vec);
  }
  const void* p0 = in[0];
  const void* p1 = nin > 1 ? in[1] : nullptr;
  const void* p2 = nin > 2 ? in[2] : nullptr;
  if (use_vec) {
    // one pass of blocks over the packs (2 a thread), not a grid capped at 32 blocks an SM that
    // loops: H200, add_f32_256M 777 -> 739 us (PyTorch 740), gelu [32, 512, 2048] 69.1 -> 66.7 us
    // (PyTorch 66.2); 4 packs a thread in flight measured the same as 2
    CUfunction f = be.jit().get(key, "flat_vec", source);
    const unsigned grid = unsigned(std::clamp<int64_t>(ceil_div(n / vec, 2 * int64_t(kThreads)), 1, 0x7fffffff));
    be.launch(f, grid, kThreads, 0, out, p0, p1, p2, scal, n, attr);
  } else {
    CUfunction f = be.jit().get(key, "flat", source);
    be.launch(f, grid_for(be, n, kThreads), kThreads, 0, out, p0, p1, p2, scal, n, attr);
  }
}

std::vector<PrimitivePtr> ew_kernel(CudaBackend& be, Op& op) {
  const OpKind k = op.kind;
  const int nin = arity(k);
  const DType dt = op.in(k == OpKind::where ? 1 : 0).dtype;
  EMBER_CHECK(elementwise_supports(k, dt), op.name(), ": not supported for ", dtype_name(dt), " tensors");
  const TensorMeta& meta = op.outputs[0];
  const int64_t n = meta.shape.numel();
  const EwAttr attr = make_attr(op, dt);
  const std::string& key = cached_key(k, dt);
  // inputs whose buffer may become the output (same dtype as the output, as on the CPU)
  const size_t reuse_first = k == OpKind::where ? 1 : 0, reuse_last = size_t(nin);

  void* in[3] = {};
  uint32_t scal = 0;
  for (int i = 0; i < nin; ++i) {
    const CudaTensor& t = as_cuda(op.inputs[size_t(i)]);
    in[i] = t.raw();
    if (t.numel() == 1) scal |= 1u << i;
  }

  // all inputs share one permuted dense layout: keep it, and run over memory order
  if (n > 1) {
    if (auto st = common_permuted(op, 0, size_t(nin))) {
      CudaTensorPtr out = permuted_output(be, op, reuse_first, reuse_last, *st);
      launch_flat(be, op, dt, key, out->raw(), in, nin, scal, n, attr);
      return {out};
    }
  }
  const Shape& shape = meta.shape;
  // Large operands that are a dense permutation read across the output's innermost dim
  // (x + y.T): a tiled transposing copy (copy.cpp) and then the flat kernel read and write whole
  // lines, where the strided kernel would read a line for every element. (The copy may then
  // hold the output in place.)
  if (n >= kTransposeCopyMin) {
    int last = shape.rank() - 1;
    while (last >= 0 && shape[last] == 1) --last;
    for (int i = 0; i < nin && last >= 0; ++i) {
      const CudaTensor& t = as_cuda(op.inputs[size_t(i)]);
      if (!(scal >> i & 1u) && t.shape() == shape && t.strides[size_t(last)] != 1 && permuted_dense(t)) {
        op.inputs[size_t(i)] = contiguous(be, op.inputs[size_t(i)]);
        in[i] = as_cuda(op.inputs[size_t(i)]).raw();
      }
    }
  }
  CudaTensorPtr out = ew_output(be, op, reuse_first, reuse_last);
  if (n == 0) return {out};
  // the common case first (every operand contiguous in the output's shape, or one element):
  // no stride bookkeeping, which keeps the host cost of small ops low
  {
    bool dense = out->is_contiguous();
    for (int i = 0; i < nin && dense; ++i) {
      const CudaTensor& t = as_cuda(op.inputs[size_t(i)]);
      dense = (scal >> i & 1u) || (t.shape() == shape && t.is_contiguous());
    }
    if (dense) {
      launch_flat(be, op, dt, key, out->raw(), in, nin, scal, n, attr);
      return {out};
    }
  }
  std::vector<std::vector<int64_t>> strides{out->strides};
  for (int i = 0; i < nin; ++i) {
    const CudaTensor& t = as_cuda(op.inputs[size_t(i)]);
    if (scal >> i & 1u) strides.emplace_back(size_t(shape.rank()), 0);
    else strides.push_back(broadcast_strides(t, shape));
  }
  Collapsed c = collapse(op.name(), shape, strides);
  bool flat = true;
  for (int i = 0; i < nin; ++i)
    if (!(scal >> i & 1u) && !c.contiguous[size_t(i) + 1]) flat = false;
  if (flat) {
    launch_flat(be, op, dt, key, out->raw(), in, nin, scal, n, attr);
    return {out};
  }
  auto source = [&] { return elementwise_source(k, dt); };
  StridesArg s[3];
  for (int i = 0; i < nin; ++i) s[i] = c.strides[size_t(i) + 1];
  const void* p0 = in[0];
  const void* p1 = nin > 1 ? in[1] : nullptr;
  const void* p2 = nin > 2 ? in[2] : nullptr;
  // broadcasting with a contiguous innermost dim (bias adds, per-channel scales): packs along it
  const int vec = vec_width(dt);
  const int rank = c.shape.rank;
  if (n < (int64_t(1) << 31) && rank >= 1 && c.shape.size[rank - 1] % vec == 0 &&
      aligned(out->raw(), dtype_size(meta.dtype) * size_t(vec))) {
    bool ok = true;
    uint32_t bmask = 0;
    for (int i = 0; i < nin && ok; ++i) {
      const int64_t* st = s[i].v;
      if (st[rank - 1] == 0) {
        bmask |= 1u << i;
      } else if (st[rank - 1] == 1) {
        ok = aligned(in[i], dtype_size(op.in(size_t(i)).dtype) * size_t(vec));
        for (int d = 0; d + 1 < rank && ok; ++d) ok = st[d] % vec == 0;
      } else {
        ok = false;
      }
    }
    if (ok) {
      be.launch(be.jit().get(key, "strided_vec32", source), grid_for(be, n / vec, kThreads), kThreads, 0, out->raw(),
                p0, p1, p2, c.shape, s[0], s[1], s[2], uint32_t(n), bmask, attr);
      return {out};
    }
  }
  unsigned grid = grid_for(be, n, kThreads);
  if (n < (int64_t(1) << 31)) {
    be.launch(be.jit().get(key, "strided32", source), grid, kThreads, 0, out->raw(), p0, p1, p2, c.shape, s[0],
              s[1], s[2], uint32_t(n), attr);
  } else {
    be.launch(be.jit().get(key, "strided64", source), grid, kThreads, 0, out->raw(), p0, p1, p2, c.shape, s[0],
              s[1], s[2], n, attr);
  }
  return {out};
}

// prelu: x [N, C, *] (or any shape with a one-element weight), weight [C] or [1].
std::vector<PrimitivePtr> prelu_kernel(CudaBackend& be, Op& op) {
  const DType dt = op.in(0).dtype;
  EMBER_CHECK(is_float(dt), op.name(), ": not supported for ", dtype_name(dt), " tensors");
  CudaTensorPtr out = output_reusing(be, op, 0, op.outputs[0]);
  const Shape& s = op.outputs[0].shape;
  const int64_t n = s.numel();
  if (n == 0) return {out};
  CudaTensorPtr x = contiguous(be, op.inputs[0]);
  CudaTensorPtr w = contiguous(be, op.inputs[1]);
  int64_t channels = 1, inner = n;
  if (w->numel() > 1) {
    channels = s[1];
    inner = n / (s[0] * channels);
  }
  const std::string key = elementwise_key(OpKind::prelu, dt);
  auto source = [&] { return elementwise_source(OpKind::prelu, dt); };
  unsigned grid = grid_for(be, n, kThreads);
  if (n < (int64_t(1) << 31))
    be.launch(be.jit().get(key, "prelu32", source), grid, kThreads, 0, out->raw(), x->raw(), w->raw(), uint32_t(n),
              uint32_t(inner), uint32_t(channels));
  else
    be.launch(be.jit().get(key, "prelu64", source), grid, kThreads, 0, out->raw(), x->raw(), w->raw(), n, inner,
              channels);
  return {out};
}

}  // namespace

EwAttr elementwise_attr(OpKind k, const OpAttrs& attrs, DType dt, bool scalar_exponent) {
  EwAttr a;
  switch (k) {
    case OpKind::clamp:
    case OpKind::leaky_relu:
    case OpKind::softplus: {
      const auto& s = std::get<ScalarAttrs>(attrs);
      a.a = s.a;
      a.b = s.b;
      if (k == OpKind::clamp && !is_float(dt)) {
        a.ia = clamp_bound(dt, s.a);
        a.ib = clamp_bound(dt, s.b);
      }
      break;
    }
    case OpKind::pow:
      // the exponent is a single value broadcast over the base: torch's scalar fast paths
      a.ia = is_float(dt) && scalar_exponent;
      break;
    default: break;
  }
  return a;
}

void register_elementwise_kernels(KernelTable& t) {
  for (OpKind k : elementwise_ops()) t[size_t(k)] = k == OpKind::prelu ? prelu_kernel : ew_kernel;
}

}  // namespace ember::cuda
