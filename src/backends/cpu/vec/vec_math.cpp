// Dispatch for vec_math plus the portable scalar implementation (also the reference
// semantics the SIMD paths fall back to for rare lanes). Compiled for baseline x86-64.
#include "vec_math.hpp"

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "../cpu_features.hpp"

namespace ember::cpu::vec {
namespace detail {
namespace {

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;

double sigmoid_d(double x) {
  const double e = std::exp(-std::fabs(x));
  return (x >= 0 ? 1.0 : e) / (1.0 + e);
}

template <class T>
T unary_scalar(Unary fn, T xt) {
  const double x = static_cast<double>(xt);
  switch (fn) {
    case Unary::exp: return static_cast<T>(std::exp(x));
    case Unary::exp2: return static_cast<T>(std::exp2(x));
    case Unary::expm1: return static_cast<T>(std::expm1(x));
    case Unary::log: return static_cast<T>(std::log(x));
    case Unary::log2: return static_cast<T>(std::log2(x));
    case Unary::log10: return static_cast<T>(std::log10(x));
    case Unary::log1p: return static_cast<T>(std::log1p(x));
    case Unary::sqrt: return std::sqrt(xt);
    case Unary::rsqrt: return T(1) / std::sqrt(xt);
    case Unary::reciprocal: return T(1) / xt;
    case Unary::sin: return static_cast<T>(std::sin(x));
    case Unary::cos: return static_cast<T>(std::cos(x));
    case Unary::tan: return static_cast<T>(std::tan(x));
    case Unary::asin: return static_cast<T>(std::asin(x));
    case Unary::acos: return static_cast<T>(std::acos(x));
    case Unary::atan: return static_cast<T>(std::atan(x));
    case Unary::sinh: return static_cast<T>(std::sinh(x));
    case Unary::cosh: return static_cast<T>(std::cosh(x));
    case Unary::tanh: return static_cast<T>(std::tanh(x));
    case Unary::asinh: return static_cast<T>(std::asinh(x));
    case Unary::acosh: return static_cast<T>(std::acosh(x));
    case Unary::atanh: return static_cast<T>(std::atanh(x));
    case Unary::erf: return static_cast<T>(std::erf(x));
    case Unary::sigmoid: return static_cast<T>(sigmoid_d(x));
    case Unary::log_sigmoid:
      if (std::isnan(x)) return xt;
      return static_cast<T>(std::fmin(x, 0.0) - std::log1p(std::exp(-std::fabs(x))));
    case Unary::relu: return xt < T(0) ? T(0) : xt;
    case Unary::gelu_erf:
      // x * Phi(x), with Phi through erfc so the negative tail keeps its accuracy
      if (std::isinf(x)) return x > 0 ? xt : std::numeric_limits<T>::quiet_NaN();
      if (x == 0) return T(0);  // torch: gelu(-0) = +0
      return static_cast<T>(0.5 * x * std::erfc(-x * kSqrt1_2));
    case Unary::gelu_tanh: {
      if (std::isinf(x)) return x > 0 ? xt : std::numeric_limits<T>::quiet_NaN();
      // 0.5 x (1 + tanh(u)) == x * sigmoid(2u)
      const double u = kSqrt2OverPi * (x + 0.044715 * x * x * x);
      return static_cast<T>(x * sigmoid_d(2.0 * u));
    }
    case Unary::silu: return static_cast<T>(x * sigmoid_d(x));  // silu(-inf) = NaN like torch
    case Unary::softplus: return x > 20.0 ? xt : static_cast<T>(std::log1p(std::exp(x)));
    case Unary::abs: return std::fabs(xt);
    case Unary::neg: return -xt;
    case Unary::square: return xt * xt;
    case Unary::floor: return std::floor(xt);
    case Unary::ceil: return std::ceil(xt);
    case Unary::round: return std::nearbyint(xt);
    case Unary::trunc: return std::trunc(xt);
    case Unary::sign: return xt > T(0) ? T(1) : (xt < T(0) ? T(-1) : T(0));
  }
  return xt;
}

template <class T>
T binary_scalar(Binary fn, T a, T b) {
  switch (fn) {
    case Binary::add: return a + b;
    case Binary::sub: return a - b;
    case Binary::mul: return a * b;
    case Binary::div: return a / b;
    case Binary::maximum: return (std::isnan(a) || std::isnan(b)) ? a + b : (a > b ? a : b);
    case Binary::minimum: return (std::isnan(a) || std::isnan(b)) ? a + b : (a < b ? a : b);
    case Binary::pow: return static_cast<T>(std::pow(double(a), double(b)));
    case Binary::atan2: return static_cast<T>(std::atan2(double(a), double(b)));
    case Binary::hypot: return static_cast<T>(std::hypot(double(a), double(b)));
    case Binary::fmod: return std::fmod(a, b);
    case Binary::remainder: {
      T m = std::fmod(a, b);
      if (m != T(0) && ((b < T(0)) != (m < T(0)))) m += b;
      return m;
    }
  }
  return a;
}

// torch's tensor ** scalar fast paths
template <class T>
bool pow_scalar_fast(const T* a, T b, T* y, int64_t n) {
  if (b == T(2)) { for (int64_t i = 0; i < n; ++i) y[i] = a[i] * a[i]; return true; }
  if (b == T(3)) { for (int64_t i = 0; i < n; ++i) y[i] = a[i] * a[i] * a[i]; return true; }
  if (b == T(0.5)) { for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(a[i]); return true; }
  if (b == T(-0.5)) { for (int64_t i = 0; i < n; ++i) y[i] = T(1) / std::sqrt(a[i]); return true; }
  if (b == T(-1)) { for (int64_t i = 0; i < n; ++i) y[i] = T(1) / a[i]; return true; }
  if (b == T(-2)) { for (int64_t i = 0; i < n; ++i) y[i] = T(1) / (a[i] * a[i]); return true; }
  return false;
}

void s_unary_f32(Unary fn, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = unary_scalar<float>(fn, x[i]);
}
void s_unary_f64(Unary fn, const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = unary_scalar<double>(fn, x[i]);
}
template <class T>
void s_binary(Binary fn, const T* a, const T* b, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = binary_scalar<T>(fn, a[i], b[i]);
}
template <class T>
void s_binary_scalar(Binary fn, const T* a, T b, T* y, int64_t n) {
  if (fn == Binary::pow && pow_scalar_fast(a, b, y, n)) return;
  for (int64_t i = 0; i < n; ++i) y[i] = binary_scalar<T>(fn, a[i], b);
}
template <class T>
void s_scalar_binary(Binary fn, T a, const T* b, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = binary_scalar<T>(fn, a, b[i]);
}

float s_sum_f32(const float* x, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += x[i];
    s1 += x[i + 1];
    s2 += x[i + 2];
    s3 += x[i + 3];
  }
  for (; i < n; ++i) s0 += x[i];
  return static_cast<float>((s0 + s1) + (s2 + s3));
}
double s_sum_f64(const double* x, int64_t n) {
  double s = 0, c = 0, plain = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    plain += v;
    const double t = s + v;
    c += (std::fabs(s) >= std::fabs(v)) ? (s - t) + v : (v - t) + s;
    s = t;
  }
  return std::isfinite(plain) ? s + c : plain;
}
template <bool kMax>
float s_minmax_f32(const float* x, int64_t n) {
  float m = kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (std::isnan(v)) return v;
    if (kMax ? !(v < m) : !(v > m)) m = v;
  }
  return m;
}
void s_softmax_row(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const float m = s_minmax_f32<true>(x, n);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>(std::exp(static_cast<double>(x[i] - m)));
    s += y[i];
  }
  const float inv = static_cast<float>(1.0 / s);
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}
void s_log_softmax_row(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const float m = s_minmax_f32<true>(x, n);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<float>(std::exp(static_cast<double>(x[i] - m)));
  const float ls = static_cast<float>(std::log(s));
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - ls;
}

uint32_t f2u(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float u2f(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t f32_to_f16_bits(float f) {
  const uint32_t u = f2u(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  uint32_t h;
  if (a > 0x7f800000u) {
    h = 0x7e00u | ((a >> 13) & 0x3ffu);  // quiet NaN, top payload bits kept
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;  // rounds to >= 65520: inf
  } else if (a >= 0x38800000u) {
    h = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;  // rebias exponent, round to nearest even
  } else {
    // half subnormal / zero: 0.5 + v puts the half's denormal unit (2^-24) at the float ulp
    h = f2u(u2f(a) + 0.5f) - 0x3f000000u;
  }
  return static_cast<uint16_t>(sign | h);
}
float f16_bits_to_f32(uint16_t hb) {
  const uint32_t h = hb;
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t e = h & 0x7c00u;
  const uint32_t a = (h & 0x7fffu) << 13;
  uint32_t bits;
  if (e == 0x7c00u) bits = a + 0x70000000u;  // inf / NaN
  else if (e == 0) bits = f2u(u2f(a + 0x38800000u) - u2f(0x38800000u));  // subnormal / zero
  else bits = a + 0x38000000u;
  return u2f(bits | sign);
}
uint16_t f32_to_bf16_bits(float f) {
  const uint32_t u = f2u(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
void s_f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16_bits(x[i]);
}
void s_f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f16_bits_to_f32(x[i]);
}
void s_f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16_bits(x[i]);
}
void s_bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = u2f(static_cast<uint32_t>(x[i]) << 16);
}

const Kernels kScalar = {
    s_unary_f32,
    s_unary_f64,
    s_binary<float>,
    s_binary_scalar<float>,
    s_scalar_binary<float>,
    s_binary<double>,
    s_binary_scalar<double>,
    s_scalar_binary<double>,
    s_sum_f32,
    s_sum_f64,
    s_minmax_f32<true>,
    s_minmax_f32<false>,
    s_softmax_row,
    s_log_softmax_row,
    s_f32_to_f16,
    s_f16_to_f32,
    s_f32_to_bf16,
    s_bf16_to_f32,
};

std::atomic<const Kernels*> g_active{nullptr};

const Kernels& active() {
  const Kernels* k = g_active.load(std::memory_order_acquire);
  if (!k) {
    k = &kernels(best_isa());
    g_active.store(k, std::memory_order_release);
  }
  return *k;
}

}  // namespace

float scalar_unary_f32(Unary fn, float x) { return unary_scalar<float>(fn, x); }
float scalar_binary_f32(Binary fn, float a, float b) { return binary_scalar<float>(fn, a, b); }
double scalar_unary_f64(Unary fn, double x) { return unary_scalar<double>(fn, x); }
double scalar_binary_f64(Binary fn, double a, double b) { return binary_scalar<double>(fn, a, b); }

const Kernels& kernels_scalar() { return kScalar; }

Isa best_isa() {
  const auto& f = cpu::features();
  if (f.avx512) return Isa::avx512;
  if (f.avx2) return Isa::avx2;
  return Isa::scalar;
}

const Kernels& kernels(Isa isa) {
#if defined(__wasm_simd128__)
  (void)isa;
  return kernels_simd128();  // no run-time choice in a wasm module (best_isa() is scalar)
#endif
  const Isa best = best_isa();
  if (isa == Isa::avx512 && best == Isa::avx512) return kernels_avx512();
  if (isa != Isa::scalar && best != Isa::scalar) return kernels_avx2();
  return kernels_scalar();
}

Isa active_isa() {
  const Kernels* k = &active();
  if (k == &kernels_scalar() || best_isa() == Isa::scalar) return Isa::scalar;
  if (best_isa() == Isa::avx512 && k == &kernels_avx512()) return Isa::avx512;
  return Isa::avx2;
}

void set_isa(Isa isa) { g_active.store(&kernels(isa), std::memory_order_release); }

}  // namespace detail

using detail::active;

void unary_f32(Unary fn, const float* x, float* y, int64_t n) {
  if (n > 0) active().unary_f32(fn, x, y, n);
}
void unary_f64(Unary fn, const double* x, double* y, int64_t n) {
  if (n > 0) active().unary_f64(fn, x, y, n);
}
void binary_f32(Binary fn, const float* a, const float* b, float* y, int64_t n) {
  if (n > 0) active().binary_f32(fn, a, b, y, n);
}
void binary_scalar_f32(Binary fn, const float* a, float b, float* y, int64_t n) {
  if (n > 0) active().binary_scalar_f32(fn, a, b, y, n);
}
void scalar_binary_f32(Binary fn, float a, const float* b, float* y, int64_t n) {
  if (n > 0) active().scalar_binary_f32(fn, a, b, y, n);
}
void binary_f64(Binary fn, const double* a, const double* b, double* y, int64_t n) {
  if (n > 0) active().binary_f64(fn, a, b, y, n);
}
void binary_scalar_f64(Binary fn, const double* a, double b, double* y, int64_t n) {
  if (n > 0) active().binary_scalar_f64(fn, a, b, y, n);
}
void scalar_binary_f64(Binary fn, double a, const double* b, double* y, int64_t n) {
  if (n > 0) active().scalar_binary_f64(fn, a, b, y, n);
}
float sum_f32(const float* x, int64_t n) { return n > 0 ? active().sum_f32(x, n) : 0.0f; }
double sum_f64(const double* x, int64_t n) { return n > 0 ? active().sum_f64(x, n) : 0.0; }
float max_f32(const float* x, int64_t n) {
  return n > 0 ? active().max_f32(x, n) : -std::numeric_limits<float>::infinity();
}
float min_f32(const float* x, int64_t n) {
  return n > 0 ? active().min_f32(x, n) : std::numeric_limits<float>::infinity();
}
void softmax_row_f32(const float* x, float* y, int64_t n) {
  if (n > 0) active().softmax_row_f32(x, y, n);
}
void log_softmax_row_f32(const float* x, float* y, int64_t n) {
  if (n > 0) active().log_softmax_row_f32(x, y, n);
}
void softmax_strided_f32(const float* x, float* y, int64_t n, int64_t stride) {
  if (n <= 0) return;
  if (stride == 1) return softmax_row_f32(x, y, n);
  // gather -> contiguous row softmax -> scatter
  constexpr int64_t kStack = 1024;
  float stack_buf[kStack];
  std::vector<float> heap;
  float* buf = stack_buf;
  if (n > kStack) {
    heap.resize(static_cast<size_t>(n));
    buf = heap.data();
  }
  for (int64_t i = 0; i < n; ++i) buf[i] = x[i * stride];
  softmax_row_f32(buf, buf, n);
  for (int64_t i = 0; i < n; ++i) y[i * stride] = buf[i];
}
void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  if (n > 0) active().f32_to_f16(x, y, n);
}
void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  if (n > 0) active().f16_to_f32(x, y, n);
}
void f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  if (n > 0) active().f32_to_bf16(x, y, n);
}
void bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
  if (n > 0) active().bf16_to_f32(x, y, n);
}

}  // namespace ember::cpu::vec
