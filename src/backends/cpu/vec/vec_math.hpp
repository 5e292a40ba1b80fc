// Vectorised elementwise math, reductions, softmax rows and dtype conversions over
// contiguous arrays for the cpu backend.
//
//   vec::unary_f32(vec::Unary::exp, x, y, n);          // y[i] = exp(x[i]), y == x allowed
//   float s = vec::sum_f32(x, n);
//
// Every function is single-threaded and works on one contiguous run; callers thread
// over chunks. Semantics follow PyTorch 1.13 CPU (NaN/Inf propagation, sign(nan) = 0,
// round = half-to-even, fmod = C fmod, remainder = Python floor-mod, ...).
// Accuracy (f32, vs the correctly rounded result; tested): <= 2 ulp for exp, log,
// sigmoid, tanh, erf, gelu (both), silu, softplus, sin, cos (exp/log/sin/cos/tanh <= 1),
// <= 4 ulp elsewhere; tails stay accurate where torch's formulas cancel (gelu(-10),
// sigmoid(-95), silu(-100) give the true tiny values, not 0). f64 transcendental results
// come from the std:: functions. softmax forms x - max in float, as torch does.
//
// Dispatch picks AVX-512, AVX2 or scalar code at run time from cpu::features()
// (EMBER_CPU_ISA=scalar|avx2|avx512 caps it); detail::set_isa() forces a level (tests).
//
// Memory-bound ops (add/sub/mul/div/max/min, relu/abs/neg/square/rounding/sqrt, f64
// cheap ops) write outputs of >= detail::kStreamMinElems elements with non-temporal
// stores (no read-for-ownership, no cache pollution); transcendental kernels always use
// regular stores.
#pragma once

#include <cstdint>

namespace ember::cpu::vec {

enum class Unary {
  exp, exp2, expm1, log, log2, log10, log1p, sqrt, rsqrt, reciprocal, sin, cos, tan,
  asin, acos, atan, sinh, cosh, tanh, asinh, acosh, atanh, erf, sigmoid, log_sigmoid, relu,
  gelu_erf, gelu_tanh, silu, softplus /* beta=1, threshold=20 */, abs, neg, square,
  floor, ceil, round /* half to even */, trunc, sign
};
inline constexpr int kNumUnary = static_cast<int>(Unary::sign) + 1;

enum class Binary { add, sub, mul, div, maximum, minimum, pow, atan2, hypot, fmod, remainder };
inline constexpr int kNumBinary = static_cast<int>(Binary::remainder) + 1;

void unary_f32(Unary fn, const float* x, float* y, int64_t n);
void unary_f64(Unary fn, const double* x, double* y, int64_t n);

// y[i] = a[i] op b[i]; binary_scalar: a[i] op b; scalar_binary: a op b[i].
// binary_scalar_f32(pow, ...) follows torch's tensor ** scalar fast paths
// (exponent 2, 3, 0.5, -0.5, -1, -2 behave like square/cube/sqrt/rsqrt/reciprocal).
void binary_f32(Binary fn, const float* a, const float* b, float* y, int64_t n);
void binary_scalar_f32(Binary fn, const float* a, float b, float* y, int64_t n);
void scalar_binary_f32(Binary fn, float a, const float* b, float* y, int64_t n);
void binary_f64(Binary fn, const double* a, const double* b, double* y, int64_t n);
void binary_scalar_f64(Binary fn, const double* a, double b, double* y, int64_t n);
void scalar_binary_f64(Binary fn, double a, const double* b, double* y, int64_t n);

// Reductions over a contiguous run. sum_f32 accumulates in double; sum_f64 uses
// compensated (Neumaier) summation. max/min propagate NaN; empty runs give the
// identity (0, -inf, +inf).
float sum_f32(const float* x, int64_t n);
double sum_f64(const double* x, int64_t n);
float max_f32(const float* x, int64_t n);
float min_f32(const float* x, int64_t n);

// softmax / log_softmax of one contiguous row (max-subtracted). y == x allowed.
void softmax_row_f32(const float* x, float* y, int64_t n);
void log_softmax_row_f32(const float* x, float* y, int64_t n);
// softmax over x[i*stride], i < n (a non-last dim), written to y[i*stride].
void softmax_strided_f32(const float* x, float* y, int64_t n, int64_t stride);

// Conversions: round-to-nearest-even, overflow to inf, NaN stays NaN (sign kept).
void f32_to_f16(const float* x, uint16_t* y, int64_t n);
void f16_to_f32(const uint16_t* x, float* y, int64_t n);
void f32_to_bf16(const float* x, uint16_t* y, int64_t n);
void bf16_to_f32(const uint16_t* x, float* y, int64_t n);

namespace detail {

enum class Isa { scalar, avx2, avx512 };

// Output size (elements) from which memory-bound elementwise kernels use non-temporal
// stores (16 MiB of f32: beyond what typically stays cached for the next op).
inline constexpr int64_t kStreamMinElems = int64_t{1} << 22;

// One implementation of the whole API for one instruction set.
struct Kernels {
  void (*unary_f32)(Unary, const float*, float*, int64_t);
  void (*unary_f64)(Unary, const double*, double*, int64_t);
  void (*binary_f32)(Binary, const float*, const float*, float*, int64_t);
  void (*binary_scalar_f32)(Binary, const float*, float, float*, int64_t);
  void (*scalar_binary_f32)(Binary, float, const float*, float*, int64_t);
  void (*binary_f64)(Binary, const double*, const double*, double*, int64_t);
  void (*binary_scalar_f64)(Binary, const double*, double, double*, int64_t);
  void (*scalar_binary_f64)(Binary, double, const double*, double*, int64_t);
  float (*sum_f32)(const float*, int64_t);
  double (*sum_f64)(const double*, int64_t);
  float (*max_f32)(const float*, int64_t);
  float (*min_f32)(const float*, int64_t);
  void (*softmax_row_f32)(const float*, float*, int64_t);
  void (*log_softmax_row_f32)(const float*, float*, int64_t);
  void (*f32_to_f16)(const float*, uint16_t*, int64_t);
  void (*f16_to_f32)(const uint16_t*, float*, int64_t);
  void (*f32_to_bf16)(const float*, uint16_t*, int64_t);
  void (*bf16_to_f32)(const uint16_t*, float*, int64_t);
};

const Kernels& kernels_scalar();
const Kernels& kernels_avx2();    // only call when cpu::features().avx2
const Kernels& kernels_avx512();  // only call when cpu::features().avx512
const Kernels& kernels_simd128();  // the wasm build's (-msimd128) only level

Isa best_isa();            // highest level allowed by cpu::features()
Isa active_isa();          // level the public functions currently use
void set_isa(Isa isa);     // force a level (clamped to best_isa()); for tests/benchmarks
const Kernels& kernels(Isa isa);

// Scalar reference semantics shared by the scalar path and SIMD fallbacks
// (computed in double, rounded once).
float scalar_unary_f32(Unary fn, float x);
float scalar_binary_f32(Binary fn, float a, float b);
double scalar_unary_f64(Unary fn, double x);
double scalar_binary_f64(Binary fn, double a, double b);

}  // namespace detail
}  // namespace ember::cpu::vec

// The ISA-generic kernel bodies are in vec_math_kernels.inl (compiled once per instruction set by
// vec_math_avx2.cpp and vec_math_avx512.cpp).
