// Vectorised elementwise math, reductions, softmax rows and dtype conversions over
// contiguous arrays for the cpu backend.
//
//   vec::unary_f32(vec::Unary::exp, x, y, n);          // y[i] = exp(x[i]), y == x allowed
//   float s = vec::sum_f32(x, n);
//
// Every function is single-threaded and works on one contiguous run; callers thread
// over chunks. Semantics follow PyTorch 1.13 CPU (NaN/Inf propagation, sign(nan) = 0,
// round = half-to-even, fmod = C fmod, remainder = Python floor-mod, ...).
// Accuracy (f32): <= 2 ulp for exp/log/sigmoid/tanh/erf/gelu/silu/softplus/sin/cos,
// <= 4 ulp elsewhere; f64 transcendental results come from the std:: functions.
//
// Dispatch picks AVX-512, AVX2 or scalar code at run time from cpu::features()
// (EMBER_CPU_ISA=scalar|avx2|avx512 caps it); detail::set_isa() forces a level (tests).
//
// Large outputs (>= detail::kStreamMinElems elements) are written with non-temporal
// stores, so pass big chunks when the result is not consumed right away.
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

// Output size (elements) from which elementwise kernels use non-temporal stores.
inline constexpr int64_t kStreamMinElems = int64_t{1} << 21;

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

// ---------------------------------------------------------------------------------
// ISA-generic kernel bodies. Only vec_math_avx2.cpp / vec_math_avx512.cpp see this:
// each defines EMBER_VEC_MATH_KERNEL_NS (a namespace unique to that translation unit)
// and, inside ember::cpu::vec::EMBER_VEC_MATH_KERNEL_NS, a `struct Simd` that wraps
// its intrinsics (see either file for the required members), then includes this
// header. Everything below is compiled once per instruction set, in that namespace,
// so no inline function with ISA-specific code is shared between translation units.
// ---------------------------------------------------------------------------------
#ifdef EMBER_VEC_MATH_KERNEL_NS
#include <cmath>
#include <cstring>
#include <limits>

namespace ember::cpu::vec::EMBER_VEC_MATH_KERNEL_NS {

using F = Simd::F;
using I = Simd::I;
using M = Simd::M;
using D = Simd::D;
constexpr int W = Simd::W;

static inline F cf(float v) { return Simd::set(v); }
static inline F cbits(uint32_t b) { return Simd::as_f(Simd::iset(static_cast<int32_t>(b))); }
static inline F kInf() { return cf(std::numeric_limits<float>::infinity()); }
static inline F kNaN() { return cf(std::numeric_limits<float>::quiet_NaN()); }
static inline F sign_bits(F x) { return Simd::band(x, cbits(0x80000000u)); }
static inline F xor_sign(F v, F s) { return Simd::bxor(v, s); }  // s: sign bits only

// Horner evaluation with float coefficients c[0] + c[1] t + ...
template <int N>
static inline F horner(F t, const float (&c)[N]) {
  F r = cf(c[N - 1]);
  for (int i = N - 2; i >= 0; --i) r = Simd::fma(r, t, cf(c[i]));
  return r;
}
// Same with per-lane coefficients taken from 8-entry tables tab[k][idx].
template <int N>
static inline F horner_lut(F t, I idx, const float (&tab)[N][8]) {
  F r = Simd::lut8(idx, tab[N - 1]);
  for (int i = N - 2; i >= 0; --i) r = Simd::fma(r, t, Simd::lut8(idx, tab[i]));
  return r;
}

// Run a scalar function over the lanes selected by `which`, replacing those lanes.
template <class Fn>
static inline F scalar_lanes(F x, F res, M which, Fn fn) {
  alignas(64) float in[W];
  alignas(64) float out[W];
  Simd::storeu(in, x);
  Simd::storeu(out, res);
  const uint32_t bits = Simd::mask_bits(which);
  for (int i = 0; i < W; ++i)
    if (bits & (1u << i)) out[i] = fn(in[i]);
  return Simd::loadu(out);
}
template <class Fn>
static inline F scalar_lanes2(F a, F b, F res, M which, Fn fn) {
  alignas(64) float ia[W];
  alignas(64) float ib[W];
  alignas(64) float out[W];
  Simd::storeu(ia, a);
  Simd::storeu(ib, b);
  Simd::storeu(out, res);
  const uint32_t bits = Simd::mask_bits(which);
  for (int i = 0; i < W; ++i)
    if (bits & (1u << i)) out[i] = fn(ia[i], ib[i]);
  return Simd::loadu(out);
}

// ------------------------------ coefficients ----------------------------------
// All polynomial coefficients below were fitted for this file (weighted least squares
// with Lawson re-weighting towards minimax, coefficients rounded to float one at a time
// with the rest refitted).
namespace coef {
// e^r = 1 + r + r^2 * P(r), |r| <= ln2/2
constexpr float kExp[] = {0.4999999403953552f, 0.1666652113199234f, 0.04166825860738754f,
                          0.00836866907775402f, 0.0013821362517774105f};
// 2^r = 1 + r * P(r), |r| <= 1/2
constexpr float kExp2[] = {0.6931471824645996f, 0.24022647738456726f, 0.05550359562039375f,
                           0.00961849931627512f, 0.0013390970416367054f,
                           0.00015329310554079711f};
// expm1(r) = r + r^2/2 + r^3 * P(r), |r| <= ln2/2
constexpr float kExpm1[] = {0.1666666567325592f, 0.04166649281978607f, 0.008333545178174973f,
                            0.0013932319125160575f, 0.00019762451120186597f};
// log1p(f) = f - f^2/2 + f^3 * P(f), f in [sqrt(1/2)-1, sqrt(2)-1]
constexpr float kLog[] = {0.3333333134651184f, -0.2500081956386566f, 0.2000124305486679f,
                          -0.1662341058254242f, 0.14201539754867554f, -0.13159550726413727f,
                          0.12762485444545746f, -0.07636940479278564f};
// sin r = r + r^3 * S(r^2); cos r = 1 - r^2/2 + r^4 * C(r^2), |r| <= pi/4
constexpr float kSin[] = {-0.1666666716337204f, 0.008333379402756691f,
                          -0.00019853092089761049f, 2.8330730401648907e-06f};
constexpr float kCos[] = {0.0416666679084301f, -0.0013888980029150844f, 2.482202216924634e-05f,
                          -2.8881245839329495e-07f};
// asin x = x + x^3 * P(x^2), |x| <= 1/2
constexpr float kAsin[] = {0.16666659712791443f, 0.07500521838665009f, 0.04451335221529007f,
                           0.0318395234644413f, 0.014312174171209335f, 0.03770211711525917f};
// atan x = x + x^3 * P(x^2), |x| <= 1
constexpr float kAtan[] = {-0.33333298563957214f, 0.1999853402376175f, -0.14264102280139923f,
                           0.10951506346464157f, -0.08401581645011902f, 0.05792722851037979f,
                           -0.031148936599493027f, 0.010899696499109268f,
                           -0.0017904058331623673f};
// tanh x = x + x^3 * P(x^2), |x| <= 0.625
constexpr float kTanh[] = {-0.3333333134651184f, 0.13333220779895782f, -0.05394818261265755f,
                           0.02170693688094616f, -0.008190169930458069f,
                           0.0021528673823922873f};
// sinh x = x + x^3 * P(x^2), |x| <= 1
constexpr float kSinh[] = {0.1666666716337204f, 0.00833331048488617f,
                           0.00019842895562760532f, 2.7822131869470468e-06f};
// erf x = x * (kErfC0Hi + kErfC0Lo + x^2 * P(x^2)), |x| <= 1
constexpr float kErfC0Hi = 1.128379225730896f;
constexpr float kErfC0Lo = -5.8635382771399236e-08f;
constexpr float kErfSmall[] = {-0.3761262893676758f, 0.11283603310585022f,
                               -0.026854202151298523f, 0.005188598297536373f,
                               -0.0008009398588910699f, 7.842548802727833e-05f};
// erfc t on [1, 4): 8 intervals (4 per octave), polynomial in d = t - mid
constexpr float kErfcMid[8] = {1.125f, 1.375f, 1.625f, 1.875f, 2.25f, 2.75f, 3.25f, 3.75f};
constexpr float kErfc[7][8] = {
    {0.11161176860332489f, 0.051829926669597626f, 0.021556267514824867f, 0.00800994224846363f,
     0.001462716842070222f, 0.00010062190267490223f, 4.302759862184757e-06f,
     1.1372450359203867e-07f},
    {-0.31827396154403687f, -0.1703597754240036f, -0.08047226071357727f,
     -0.033545829355716705f, -0.007142300251871347f, -0.0005862942198291421f,
     -2.919364305853378e-05f, -8.81886194292747e-07f},
    {0.3580578863620758f, 0.23424528539180756f, 0.1307666152715683f, 0.06289847195148468f,
     0.01607012003660202f, 0.001612270250916481f, 9.487215720582753e-05f,
     3.3064684430428315e-06f},
    {-0.1624508500099182f, -0.1579372137784958f, -0.11484040319919586f, -0.0674414411187172f,
     -0.021726958453655243f, -0.002758209826424718f, -0.00019521954527590424f,
     -7.911757165857125e-06f},
    {-0.02792542241513729f, 0.03040209785103798f, 0.04984800145030022f, 0.0422549769282341f,
     0.01908980682492256f, 0.003257589880377054f, 0.0002860490349121392f,
     1.3768457392870914e-05f},
    {0.061101555824279785f, 0.030594192445278168f, 0.0022054105065762997f,
     -0.01136245857924223f, -0.010581404902040958f, -0.0028257991652935743f,
     -0.00033261263160966337f, -2.0204888642183505e-05f},
    {-0.017288707196712494f, -0.018024705350399017f, -0.019611148163676262f,
     -0.0039709401316940784f, 0.0027631318662315607f, 0.0016691347118467093f,
     0.0002750421117525548f, 2.087319444399327e-05f}};
// gelu, |x| < 1: Phi(x) = 1/2 + x * P(x^2)
constexpr float kGeluSmall[] = {0.3989422917366028f, -0.06649060547351837f,
                                0.009974738582968712f, -0.0011896226787939668f,
                                0.00011681923206197098f, -8.876842002791818e-06f};
// gelu tail: Phi(-t) = exp(-t^2/2) * R(t), t in [1, 16): 8 intervals (2 per octave),
// polynomial in d = t - mid, mids chosen so that R(mid) is (almost) exactly a float.
constexpr float kGeluRMid[8] = {1.2497820854187012f, 1.7499582767486572f, 2.5000431537628174f,
                                3.4999094009399414f, 5.000527381896973f,  6.999445915222168f,
                                9.9987211227417f,    14.000925064086914f};
constexpr float kGeluR[8][8] = {
    {0.23078440129756927f, 0.18523478507995605f, 0.14132936298847198f, 0.10634757578372955f,
     0.07691174000501633f, 0.05589774250984192f, 0.039511650800704956f, 0.02835080586373806f},
    {-0.11051207035779953f, -0.0747891366481781f, -0.045612774789333344f,
     -0.026735400781035423f, -0.014343018643558025f, -0.0076890550553798676f,
     -0.0038763030897825956f, -0.0020047719590365887f},
    {0.046334199607372284f, 0.027178458869457245f, 0.013647736981511116f,
     0.006388049107044935f, 0.002594551770016551f, 0.0010393098928034306f,
     0.00037679256638512015f, 0.00014107186871115118f},
    {-0.01753477193415165f, -0.00907579343765974f, -0.003830940229818225f,
     -0.0014592534862458706f, -0.0004563147376757115f, -0.0001381548645440489f,
     -3.629723869380541e-05f, -9.879216122499201e-06f},
    {0.006104705855250359f, 0.0028239607345312834f, 0.0010173408081755042f,
     0.00032016317709349096f, 7.812078547431156e-05f, 1.806981163099408e-05f,
     3.4611309729370987e-06f, 6.882883099024184e-07f},
    {-0.001981967594474554f, -0.0008330284617841244f, -0.0002574546670075506f,
     -6.783429853385314e-05f, -1.306419198954245e-05f, -2.329134304090985e-06f,
     -3.277963571690634e-07f, -4.773541917302282e-08f},
    {0.0006101335166022182f, 0.00023065204732120037f, 6.385187589330599e-05f,
     1.4064982678974047e-05f, 2.2418917069444433e-06f, 3.0428381592173537e-07f,
     3.2932145899167153e-08f, 3.4165739126734707e-09f},
    {-0.0001680762361502275f, -4.629738668882055e-06f, -1.4668560652353335e-05f,
     -2.5724089027789887e-06f, -3.568656552488392e-07f, -3.765192602145362e-08f,
     -3.0521150051754375e-09f, -2.360981132820683e-10f}};
}  // namespace coef

constexpr float kLog2e = 1.44269502162933349609f;
constexpr float kLn2Hi = 0.693145751953125f;        // 16 significant bits
constexpr float kLn2Lo = 1.428606765330187045e-06f;
constexpr float kPio2Hi = 1.57079637050628662109f;  // float(pi/2)
constexpr float kPio2Lo = -4.37113900018624283e-08f;
constexpr float kPiHi = 3.14159274101257324219f;
constexpr float kPiLo = -8.74227800037248566e-08f;
constexpr float kSqrt2 = 1.41421353816986083984f;

// ------------------------------- exp family -----------------------------------
static inline F exp_poly(F r) {  // e^r, |r| <= ~0.35
  return Simd::fma(r * r, horner(r, coef::kExp), r) + cf(1.0f);
}
// x = n*ln2 + r; returns n (integral float) and r.
static inline F exp_reduce(F x, F& r) {
  F n = Simd::round_even(x * cf(kLog2e));
  r = Simd::fnma(n, cf(kLn2Hi), x);
  r = Simd::fnma(n, cf(kLn2Lo), r);
  return n;
}
static inline F k_exp(F x) {
  x = Simd::max(cf(-104.0f), x);  // max/min return the 2nd operand for NaN: keeps NaN
  x = Simd::min(cf(89.0f), x);
  F r;
  F n = exp_reduce(x, r);
  return Simd::scalef(exp_poly(r), n);
}
// exp(x) for x <= 0 (softmax): no overflow clamp needed.
static inline F k_exp_nonpos(F x) {
  x = Simd::max(cf(-104.0f), x);
  F r;
  F n = exp_reduce(x, r);
  return Simd::scalef(exp_poly(r), n);
}
// e^r - 1 for |r| <= ~0.35
static inline F expm1_poly(F r) { return Simd::fma(r * r, horner(r, coef::kExp), r); }
static inline F k_exp2(F x) {
  x = Simd::max(cf(-152.0f), x);
  x = Simd::min(cf(129.0f), x);
  F n = Simd::round_even(x);
  F r = x - n;
  F p = Simd::fma(r, horner(r, coef::kExp2), cf(1.0f));
  return Simd::scalef(p, n);
}
static inline F k_expm1(F x) {
  F xc = Simd::max(cf(-30.0f), x);
  xc = Simd::min(cf(88.0f), xc);
  F r;
  F n = exp_reduce(xc, r);
  F r2 = r * r;
  F em = Simd::fma(r2 * r, horner(r, coef::kExpm1), r2 * cf(0.5f)) + r;  // expm1(r)
  F scale = Simd::as_f(Simd::isll<23>(Simd::iadd(Simd::cvt_i(n), Simd::iset(127))));
  F res = Simd::fma(scale, em, scale - cf(1.0f));
  M big = Simd::gt(x, cf(88.0f));
  if (Simd::any(big)) res = Simd::sel(big, k_exp(x), res);
  res = Simd::sel(Simd::eq(x, cf(0.0f)), x, res);  // keep -0
  return res;
}

// ------------------------------- log family -----------------------------------
// log1p(f) for f in [sqrt(1/2)-1, sqrt(2)-1]
static inline F log1p_poly(F f) {
  F f2 = f * f;
  F t = Simd::fma(f2 * f, horner(f, coef::kLog), f2 * cf(-0.5f));
  return f + t;
}
// Fix-ups for x outside (0, inf): 0 -> -inf, inf -> inf, x < 0 or NaN -> NaN.
static inline F log_special(F x, F res) {
  M ok = Simd::mand(Simd::gt(x, cf(0.0f)), Simd::lt(x, kInf()));
  if (!Simd::all(ok)) {
    res = Simd::sel(Simd::eq(x, cf(0.0f)), cf(-std::numeric_limits<float>::infinity()), res);
    res = Simd::sel(Simd::eq(x, kInf()), kInf(), res);
    res = Simd::sel(Simd::lt(x, cf(0.0f)), kNaN(), res);
    res = Simd::sel(Simd::isnan(x), x, res);
  }
  return res;
}
static inline F k_log(F x) {
  F e;
  F m = Simd::frexp(x, e);
  F r = log1p_poly(m - cf(1.0f));
  F res = Simd::fma(e, cf(kLn2Hi), Simd::fma(e, cf(kLn2Lo), r));
  return log_special(x, res);
}
static inline F k_log2(F x) {
  F e;
  F m = Simd::frexp(x, e);
  F r = log1p_poly(m - cf(1.0f));
  F l = Simd::fma(r, cf(kLog2e), r * cf(1.925963033500011e-08f));
  return log_special(x, e + l);
}
static inline F k_log10(F x) {
  F e;
  F m = Simd::frexp(x, e);
  F r = log1p_poly(m - cf(1.0f));
  // log10(e) = hi + lo; log10(2) = hi (exact times e) + lo
  F l = Simd::fma(r, cf(0.4342944920063019f), r * cf(1.4205736e-08f));
  F res = Simd::fma(e, cf(0.30102920532226562f), Simd::fma(e, cf(7.9034151668e-07f), l));
  return log_special(x, res);
}
// log1p(x) for x > -1 (finite). Near 0 the polynomial takes x directly; elsewhere
// 1 + x is reduced and the rounding of 1 + x is added back as a correction term.
static inline F log1p_core(F x) {
  const M direct = Simd::mand(Simd::gt(x, cf(-0.2928932f)), Simd::lt(x, cf(0.41421356f)));
  F u = x + cf(1.0f);
  F e;
  F m = Simd::frexp(u, e);
  F f = Simd::sel(direct, x, m - cf(1.0f));
  F corr = Simd::sel(direct, cf(0.0f), (x - (u - cf(1.0f))) * Simd::rcp(u));
  e = Simd::sel(direct, cf(0.0f), e);
  F r = log1p_poly(f) + corr;
  return Simd::fma(e, cf(kLn2Hi), Simd::fma(e, cf(kLn2Lo), r));
}
static inline F k_log1p(F x) {
  F res = log1p_core(x);
  F u = x + cf(1.0f);
  M ok = Simd::mand(Simd::gt(u, cf(0.0f)), Simd::lt(x, kInf()));
  if (!Simd::all(ok)) {
    res = Simd::sel(Simd::eq(x, cf(-1.0f)), cf(-std::numeric_limits<float>::infinity()), res);
    res = Simd::sel(Simd::eq(x, kInf()), kInf(), res);
    res = Simd::sel(Simd::lt(x, cf(-1.0f)), kNaN(), res);
    res = Simd::sel(Simd::isnan(x), x, res);
  }
  return Simd::sel(Simd::eq(x, cf(0.0f)), x, res);  // keep -0
}
// log1p(e) for e in [0, 1] (softplus / log_sigmoid)
static inline F log1p_01(F e) {
  F u = e + cf(1.0f);
  M big = Simd::gt(e, cf(0.41421356f));
  F f = Simd::sel(big, Simd::fma(u, cf(0.5f), cf(-1.0f)), e);  // u/2 - 1 is exact
  F corr = Simd::sel(big, (e - (u - cf(1.0f))) * Simd::rcp(u) + cf(kLn2Lo), cf(0.0f));
  F r = log1p_poly(f) + corr;
  return Simd::sel(big, r + cf(kLn2Hi), r);
}

// ------------------------------- trig -----------------------------------------
constexpr float kTrigMax = 1048576.0f;  // beyond this: scalar double fallback
static inline F trig_reduce(F ax, F& r) {
  F n = Simd::round_even(ax * cf(0.636619772367581343f));
  r = Simd::fnma(n, cf(1.57079637050628662109f), ax);
  r = Simd::fnma(n, cf(-4.37113882867379e-08f), r);
  r = Simd::fnma(n, cf(-1.7151245100059164e-15f), r);
  return n;
}
static inline F sin_poly(F r, F r2) { return Simd::fma(r2 * r, horner(r2, coef::kSin), r); }
static inline F cos_poly(F r2) {
  return Simd::fma(r2 * r2, horner(r2, coef::kCos), r2 * cf(-0.5f)) + cf(1.0f);
}
template <bool kCos>
static inline F k_sincos(F x) {
  F ax = Simd::abs(x);
  F r;
  F n = trig_reduce(ax, r);
  I q = Simd::cvt_i(n);
  if (kCos) q = Simd::iadd(q, Simd::iset(1));
  F r2 = r * r;
  F s = sin_poly(r, r2);
  F c = cos_poly(r2);
  M odd = Simd::ieq(Simd::iand(q, Simd::iset(1)), Simd::iset(1));
  F res = Simd::sel(odd, c, s);
  F sgn = Simd::as_f(Simd::isll<30>(q));  // bit 1 of q -> sign bit
  sgn = Simd::band(sgn, cbits(0x80000000u));
  if (!kCos) sgn = Simd::bxor(sgn, sign_bits(x));
  res = xor_sign(res, sgn);
  M big = Simd::mnot(Simd::le(ax, cf(kTrigMax)));  // also NaN
  if (Simd::any(big))
    res = scalar_lanes(x, res, big, [](float v) {
      return static_cast<float>(kCos ? std::cos(static_cast<double>(v))
                                     : std::sin(static_cast<double>(v)));
    });
  return res;
}
static inline F k_tan(F x) {
  F ax = Simd::abs(x);
  F r;
  F n = trig_reduce(ax, r);
  I q = Simd::cvt_i(n);
  F r2 = r * r;
  F s = sin_poly(r, r2);
  F c = cos_poly(r2);
  M odd = Simd::ieq(Simd::iand(q, Simd::iset(1)), Simd::iset(1));
  F num = Simd::sel(odd, c, s);
  F den = Simd::sel(odd, Simd::neg(s), c);
  F res = xor_sign(num / den, sign_bits(x));
  M big = Simd::mnot(Simd::le(ax, cf(kTrigMax)));
  if (Simd::any(big))
    res = scalar_lanes(x, res, big, [](float v) {
      return static_cast<float>(std::tan(static_cast<double>(v)));
    });
  return res;
}
// asin on |x| <= 1 pieces: returns p = asin(s) where s = small ? a : sqrt((1-a)/2)
static inline F asin_core(F a, M& small) {
  small = Simd::le(a, cf(0.5f));
  F z = Simd::sel(small, a * a, (cf(1.0f) - a) * cf(0.5f));
  F s = Simd::sel(small, a, Simd::sqrt(z));
  return Simd::fma(s * z, horner(z, coef::kAsin), s);
}
static inline F k_asin(F x) {
  F a = Simd::abs(x);
  M small;
  F p = asin_core(a, small);
  F big = Simd::fnma(cf(2.0f), p, cf(kPio2Hi)) + cf(kPio2Lo);
  F res = Simd::sel(small, p, big);
  res = Simd::sel(Simd::gt(a, cf(1.0f)), kNaN(), res);
  return xor_sign(res, sign_bits(x));
}
static inline F k_acos(F x) {
  F a = Simd::abs(x);
  M small;
  F p = asin_core(a, small);
  F ps = xor_sign(p, sign_bits(x));  // asin(x) for the small branch
  F r_small = cf(kPio2Hi) - (ps - cf(kPio2Lo));
  F r_pos = p * cf(2.0f);
  F r_neg = cf(kPiHi) - Simd::fms(cf(2.0f), p, cf(kPiLo));
  F res = Simd::sel(small, r_small, Simd::sel(Simd::lt(x, cf(0.0f)), r_neg, r_pos));
  return Simd::sel(Simd::gt(a, cf(1.0f)), kNaN(), res);
}
static inline F atan_poly(F z) {  // z in [0, 1]; exact float(pi/4) at z = 1
  F t = z * z;
  F p = Simd::fma(z * t, horner(t, coef::kAtan), z);
  return Simd::sel(Simd::eq(z, cf(1.0f)), cf(0.785398185253143310547f), p);
}
static inline F k_atan(F x) {
  F a = Simd::abs(x);
  M inv = Simd::gt(a, cf(1.0f));
  F z = Simd::sel(inv, cf(1.0f) / a, a);
  F p = atan_poly(z);
  p = Simd::sel(inv, cf(kPio2Hi) - (p - cf(kPio2Lo)), p);
  return xor_sign(p, sign_bits(x));
}
static inline F k_atan2(F y, F x) {
  F ay = Simd::abs(y), ax = Simd::abs(x);
  F mx = Simd::max(ax, ay), mn = Simd::min(ax, ay);
  F t = mn / mx;
  t = Simd::sel(Simd::eq(ay, ax), cf(1.0f), t);    // inf/inf
  t = Simd::sel(Simd::eq(mx, cf(0.0f)), cf(0.0f), t);  // 0/0
  F p = atan_poly(t);
  // theta = C + s*p with C in {0, pi/2, pi}: one final rounding
  M swap = Simd::gt(ay, ax);
  M xneg = Simd::ieq(Simd::isra<31>(Simd::as_i(x)), Simd::iset(-1));  // sign bit set
  F c_hi = Simd::sel(swap, cf(kPio2Hi), Simd::sel(xneg, cf(kPiHi), cf(0.0f)));
  F c_lo = Simd::sel(swap, cf(kPio2Lo), Simd::sel(xneg, cf(kPiLo), cf(0.0f)));
  p = Simd::sel(Simd::mxor(swap, xneg), Simd::neg(p), p);
  p = c_hi + (c_lo + p);
  p = xor_sign(p, sign_bits(y));
  return Simd::sel(Simd::mor(Simd::isnan(x), Simd::isnan(y)), x + y, p);
}

// ------------------------------- hyperbolic -----------------------------------
// 0.5 * e^a for a >= 0 (overflow-safe up to a ~ 89.4)
static inline F half_exp(F a) {
  a = Simd::min(cf(90.0f), a);
  F r;
  F n = exp_reduce(a, r);
  return Simd::scalef(exp_poly(r), n - cf(1.0f));
}
static inline F k_sinh(F x) {
  F a = Simd::abs(x);
  F t = a * a;
  F small = Simd::fma(a * t, horner(t, coef::kSinh), a);
  F h = half_exp(a);
  F large = h - cf(0.25f) / h;
  F res = Simd::sel(Simd::lt(a, cf(1.0f)), small, large);
  return xor_sign(res, sign_bits(x));
}
static inline F k_cosh(F x) {
  F h = half_exp(Simd::abs(x));
  return h + cf(0.25f) / h;
}
static inline F k_tanh(F x) {
  F a = Simd::abs(x);
  F t = a * a;
  F small = Simd::fma(a * t, horner(t, coef::kTanh), a);
  F e = k_exp(Simd::min(cf(9.5f), a) * cf(2.0f));
  F large = cf(1.0f) - cf(2.0f) / (e + cf(1.0f));
  F res = Simd::sel(Simd::lt(a, cf(0.625f)), small, large);
  return xor_sign(res, sign_bits(x));
}
static inline F k_asinh(F x) {
  F a = Simd::abs(x);
  // log1p(a + a^2 / (1 + sqrt(1 + a^2))) for moderate a, log(a) + ln2 for large a
  F a2 = a * a;
  F v = a + a2 / (cf(1.0f) + Simd::sqrt(a2 + cf(1.0f)));
  F res_small = log1p_core(v);
  F res_big = k_log(a) + cf(0.693147180559945f);
  F res = Simd::sel(Simd::gt(a, cf(4096.0f)), res_big, res_small);
  res = Simd::sel(Simd::isnan(x), x, res);
  return xor_sign(res, sign_bits(x));
}
static inline F k_acosh(F x) {
  F t = x - cf(1.0f);  // exact for x in [1, 2^24)
  F res_small = log1p_core(t + Simd::sqrt(Simd::fma(t, t, t + t)));
  F res_big = k_log(x) + cf(0.693147180559945f);
  F res = Simd::sel(Simd::gt(x, cf(4096.0f)), res_big, res_small);
  res = Simd::sel(Simd::lt(x, cf(1.0f)), kNaN(), res);
  return Simd::sel(Simd::isnan(x), x, res);
}
static inline F k_atanh(F x) {
  F a = Simd::abs(x);
  F res = log1p_core((a + a) / (cf(1.0f) - a)) * cf(0.5f);
  res = Simd::sel(Simd::eq(a, cf(1.0f)), kInf(), res);
  res = Simd::sel(Simd::gt(a, cf(1.0f)), kNaN(), res);
  res = Simd::sel(Simd::isnan(x), x, res);
  res = Simd::sel(Simd::lt(a, cf(1e-30f)), a, res);
  return xor_sign(res, sign_bits(x));
}

// ------------------------------- erf / gelu ----------------------------------
static inline F k_erf(F x) {
  F a = Simd::abs(x);
  F t = x * x;
  F small = Simd::fma(a, cf(coef::kErfC0Hi),
                      a * Simd::fma(t, horner(t, coef::kErfSmall), cf(coef::kErfC0Lo)));
  small = xor_sign(small, sign_bits(x));
  F tc = Simd::min(cf(3.999f), Simd::max(cf(1.0f), a));  // NaN stays NaN
  I idx = Simd::isub(Simd::isrl<21>(Simd::as_i(tc)), Simd::iset(0x3f800000 >> 21));
  F d = tc - Simd::lut8(idx, coef::kErfcMid);
  F large = xor_sign(cf(1.0f) - horner_lut(d, idx, coef::kErfc), sign_bits(x));
  return Simd::sel(Simd::lt(a, cf(1.0f)), small, large);
}
static inline F k_gelu_erf(F x) {
  F a = Simd::abs(x);
  F x2 = x * x;
  F small = Simd::fma(x2, horner(x2, coef::kGeluSmall), x * cf(0.5f));
  // tail: x * Phi(-|x|) = x * exp(-x^2/2) * R(|x|), exponent kept exact via hi/lo
  F tc = Simd::min(cf(15.99f), Simd::max(cf(1.0f), a));
  F s_hi = tc * tc;
  F s_lo = Simd::fms(tc, tc, s_hi);
  F e_hi = s_hi * cf(-0.5f);
  e_hi = Simd::max(cf(-150.0f), e_hi);
  F r;
  F n = exp_reduce(e_hi, r);
  r = Simd::fnma(s_lo, cf(0.5f), r);
  F pm1 = expm1_poly(r);  // e^r - 1
  I idx = Simd::isub(Simd::isrl<22>(Simd::as_i(tc)), Simd::iset(0x3f800000 >> 22));
  F d = tc - Simd::lut8(idx, coef::kGeluRMid);
  F xc = Simd::max(cf(-16.0f), Simd::min(cf(16.0f), x));
  F rx = horner_lut(d, idx, coef::kGeluR) * xc;
  F v = Simd::scalef(Simd::fma(rx, pm1, rx), n);  // x * Phi(-|x|), one rounding even when tiny
  F large = Simd::sel(Simd::lt(x, cf(0.0f)), v, x - v);
  F res = Simd::sel(Simd::lt(a, cf(1.0f)), small, large);
  M inf = Simd::eq(a, kInf());
  if (Simd::any(inf)) res = Simd::sel(inf, Simd::max(x, cf(0.0f)) * (x + x), res);  // inf, NaN
  return Simd::sel(Simd::isnan(x), x, res);
}
// Sigmoid-like functions: with t = |z| (clamped to 150) write e^t = (1 + pm1) * 2^n and
// d2 = (1 + pm1) + 2^-n = (1 + e^t) * 2^-n (one rounding, never overflows). Then
//   z >= 0: c * sigmoid(z) = c * e^t / (1 + e^t) = c * (1 + pm1) / d2
//   z <  0: c * sigmoid(z) = c / (1 + e^t)       = (c / d2) * 2^-n
// so every result is one or two roundings plus the error of pm1, which mostly cancels.
static inline F sig_parts(F t, F tlo, F& pm1, F& n) {
  t = Simd::min(cf(150.0f), t);  // NaN stays NaN
  F r;
  n = exp_reduce(t, r);
  pm1 = expm1_poly(r + tlo);
  F s = Simd::scalef(cf(1.0f), Simd::neg(n));
  F hi = cf(1.0f) + s;             // exact unless n >= 24
  F lo = s - (hi - cf(1.0f));      // what 1 + s lost
  return hi + (pm1 + lo);
}
static inline F k_sigmoid(F x) {
  F pm1, n;
  F d2 = sig_parts(Simd::abs(x), cf(0.0f), pm1, n);
  M pos = Simd::ge(x, cf(0.0f));
  F q = Simd::sel(pos, pm1 + cf(1.0f), cf(1.0f)) / d2;
  return Simd::sel(pos, q, Simd::scalef(q, Simd::neg(n)));
}
// c * sigmoid(z) for z with the sign of c's branch given by pos (z >= 0)
static inline F times_sigmoid(F c, M pos, F d2, F pm1, F n) {
  F q = Simd::sel(pos, Simd::fma(c, pm1, c), c) / d2;
  return Simd::sel(pos, q, Simd::scalef(q, Simd::neg(n)));
}
static inline F k_silu(F x) {
  F pm1, n;
  F d2 = sig_parts(Simd::abs(x), cf(0.0f), pm1, n);
  F xc = Simd::max(cf(-200.0f), Simd::min(cf(30.0f), x));  // results are 0 / x beyond
  F res = times_sigmoid(xc, Simd::ge(x, cf(0.0f)), d2, pm1, n);
  res = Simd::sel(Simd::gt(x, cf(30.0f)), x, res);
  M ninf = Simd::eq(x, cf(-std::numeric_limits<float>::infinity()));
  return Simd::any(ninf) ? Simd::sel(ninf, kNaN(), res) : res;  // torch: -inf * 0 = NaN
}
static inline F k_softplus(F x) {
  F e = k_exp(Simd::neg(Simd::abs(x)));
  return Simd::max(cf(0.0f), x) + log1p_01(e);
}
static inline F k_log_sigmoid(F x) {
  F e = k_exp(Simd::neg(Simd::abs(x)));
  return Simd::min(cf(0.0f), x) - log1p_01(e);
}
// 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3); 2u is
// formed in double so that exp(-|2u|) keeps full relative accuracy.
static inline F k_gelu_tanh(F x) {
  F xc = Simd::max(cf(-20.0f), Simd::min(cf(20.0f), x));
  D lo = Simd::d_lo(xc), hi = Simd::d_hi(xc);
  const D k1 = Simd::dset(1.5957691216057308), k3 = Simd::dset(1.5957691216057308 * 0.044715);
  D wl = lo * Simd::dfma(lo * lo, k3, k1);
  D wh = hi * Simd::dfma(hi * hi, k3, k1);
  F w = Simd::d_pack(wl, wh);
  F wlo = Simd::d_pack(wl - Simd::d_lo(w), wh - Simd::d_hi(w));
  M pos = Simd::ge(w, cf(0.0f));
  F thi = Simd::abs(w);
  F tlo = Simd::sel(pos, wlo, Simd::neg(wlo));  // |w| = thi + tlo
  F pm1, n;
  F d2 = sig_parts(thi, tlo, pm1, n);
  F res = times_sigmoid(xc, pos, d2, pm1, n);
  res = Simd::sel(Simd::gt(x, cf(10.0f)), x, res);  // sigmoid(w) rounds to 1 there
  M inf = Simd::eq(Simd::abs(x), kInf());
  if (Simd::any(inf)) res = Simd::sel(inf, Simd::max(x, cf(0.0f)) * (x + x), res);
  return res;
}

// ------------------------------- misc unary -----------------------------------
static inline F k_sign(F x) {  // sign(+-0) = +0, sign(NaN) = 0 like torch
  return Simd::sel(Simd::gt(x, cf(0.0f)), cf(1.0f),
                   Simd::sel(Simd::lt(x, cf(0.0f)), cf(-1.0f), cf(0.0f)));
}

// ------------------------------- binary ---------------------------------------
static inline F k_maximum(F a, F b) {  // like torch: NaN propagates, ties return b
  return Simd::sel(Simd::unord(a, b), a + b, Simd::max(a, b));
}
static inline F k_minimum(F a, F b) {
  return Simd::sel(Simd::unord(a, b), a + b, Simd::min(a, b));
}
// C fmod, exact: the quotient is formed in double while |a/b| < 2^24 (then a - q*b is
// exact in one fma); larger quotients go to scalar fmodf.
static inline D fmod_d(D a, D b) {
  D q = Simd::dtrunc(a / b);
  D r = Simd::dfma(-q, b, a);
  // q may be rounded one past the true quotient: then r has the wrong sign
  D fix = Simd::dsel(Simd::dlt(r * a, Simd::dset(0.0)), Simd::dcopysign(b, a), Simd::dset(0.0));
  return r + fix;
}
static inline F k_fmod(F a, F b) {
  F res = Simd::d_pack(fmod_d(Simd::d_lo(a), Simd::d_lo(b)), fmod_d(Simd::d_hi(a), Simd::d_hi(b)));
  res = Simd::bor(Simd::abs(res), sign_bits(a));  // zero results keep the sign of a
  F aa = Simd::abs(a), ab = Simd::abs(b);
  res = Simd::sel(Simd::mand(Simd::eq(ab, kInf()), Simd::lt(aa, kInf())), a, res);
  M big = Simd::mand(Simd::ge(aa, ab * cf(16777216.0f)),
                     Simd::mand(Simd::lt(aa, kInf()), Simd::gt(ab, cf(0.0f))));
  if (Simd::any(big))
    res = scalar_lanes2(a, b, res, big, [](float u, float v) { return std::fmod(u, v); });
  return res;
}
static inline F k_remainder(F a, F b) {  // torch: m = fmod(a, b); m += b if signs differ
  F m = k_fmod(a, b);
  M fix = Simd::mand(Simd::neq(m, cf(0.0f)),
                     Simd::mxor(Simd::lt(b, cf(0.0f)), Simd::lt(m, cf(0.0f))));
  return Simd::sel(fix, m + b, m);
}
static inline F k_hypot(F a, F b) {
  D al = Simd::d_lo(a), bl = Simd::d_lo(b), ah = Simd::d_hi(a), bh = Simd::d_hi(b);
  F res = Simd::d_pack(Simd::dsqrt(Simd::dfma(al, al, bl * bl)),
                       Simd::dsqrt(Simd::dfma(ah, ah, bh * bh)));
  M inf = Simd::mor(Simd::eq(Simd::abs(a), kInf()), Simd::eq(Simd::abs(b), kInf()));
  return Simd::sel(inf, kInf(), res);
}

// pow in double: |a|^b = 2^(b * log2|a|) with log2 and exp2 accurate to ~2^-40, then
// C99 special cases. Coefficients fitted for this file.
namespace coef {
// ln(1+f) = 2s + s^3 * P(s^2) with s = f/(2+f), |s| <= 0.1716 (rel. err ~3e-14)
constexpr double kPowLog[] = {0.6666666667576892, 0.3999999563277039, 0.285721080026406,
                              0.22176236728137574, 0.19583464534171804};
// 2^r = P(r), |r| <= 1/2 (rel. err ~8e-13)
constexpr double kPowExp2[] = {0.9999999999997626,   0.6931471805465139,
                               0.24022650698880463,  0.05550410939340191,
                               0.009618128542851831, 0.0013333452063634932,
                               0.0001540385174984098, 1.5309737068041165e-05,
                               1.3175858908961123e-06};
}  // namespace coef
template <int N>
static inline D dhorner(D t, const double (&c)[N]) {
  D r = Simd::dset(c[N - 1]);
  for (int i = N - 2; i >= 0; --i) r = Simd::dfma(r, t, Simd::dset(c[i]));
  return r;
}
// b * log2(a) for a > 0 finite (float inputs widened to double)
static inline D pow_core_d(D a, D b) {
  D e;
  D m = Simd::dfrexp(a, e);  // m in [sqrt(1/2), sqrt(2)), exact for float inputs
  D f = m - Simd::dset(1.0);
  D s = f / (f + Simd::dset(2.0));
  D s2 = s * s;
  D ln = Simd::dfma(s * s2, dhorner(s2, coef::kPowLog), s + s);
  D l2 = Simd::dfma(ln, Simd::dset(1.4426950408889634), e);  // log2(a)
  D z = b * l2;
  z = Simd::dmin(Simd::dset(300.0), Simd::dmax(Simd::dset(-300.0), z));  // specials fixed later
  D n = Simd::dround_even(z);
  D r = z - n;
  D p = dhorner(r, coef::kPowExp2);
  return Simd::dscale(p, n);
}
static inline F k_pow(F a, F b) {
  F aa = Simd::abs(a);
  F res = Simd::d_pack(pow_core_d(Simd::d_lo(aa), Simd::d_lo(b)),
                       pow_core_d(Simd::d_hi(aa), Simd::d_hi(b)));
  M ordinary = Simd::mand(Simd::mand(Simd::gt(aa, cf(0.0f)), Simd::lt(aa, kInf())),
                          Simd::lt(Simd::abs(b), kInf()));
  // integer / odd-integer exponent
  M bint = Simd::eq(Simd::trunc(b), b);  // false for NaN, true for +-inf
  M bodd = Simd::mand(bint, Simd::mand(Simd::lt(Simd::abs(b), cf(16777216.0f)),
                                       Simd::neq(Simd::trunc(b * cf(0.5f)), b * cf(0.5f))));
  if (!Simd::all(ordinary)) {
    // |a| in {0, inf} or |b| inf or NaNs: |a|^b from the IEEE rules on the magnitude
    M alarge = Simd::gt(aa, cf(1.0f));
    M bneg = Simd::lt(b, cf(0.0f));
    F big = Simd::sel(Simd::mxor(alarge, bneg), kInf(), cf(0.0f));  // |a|^(+-inf) or 0/inf^b
    M binf = Simd::eq(Simd::abs(b), kInf());
    M aspec = Simd::mor(Simd::eq(aa, cf(0.0f)), Simd::eq(aa, kInf()));
    F mag = Simd::sel(Simd::mor(binf, aspec), big, res);
    mag = Simd::sel(Simd::mand(binf, Simd::eq(aa, cf(1.0f))), cf(1.0f), mag);
    mag = Simd::sel(Simd::mand(Simd::eq(aa, cf(0.0f)), Simd::eq(b, cf(0.0f))), cf(1.0f), mag);
    mag = Simd::sel(Simd::mor(Simd::isnan(a), Simd::isnan(b)), a + b, mag);
    res = mag;
  }
  M aneg = Simd::ieq(Simd::isra<31>(Simd::as_i(a)), Simd::iset(-1));  // sign bit of a
  res = Simd::sel(Simd::mand(aneg, bodd), Simd::neg(res), res);
  M afin_neg = Simd::mand(Simd::lt(a, cf(0.0f)), Simd::gt(a, cf(-std::numeric_limits<float>::infinity())));
  res = Simd::sel(Simd::mand(afin_neg, Simd::mnot(Simd::mor(bint, Simd::isnan(b)))), kNaN(), res);
  res = Simd::sel(Simd::eq(a, cf(1.0f)), cf(1.0f), res);  // 1^anything = 1
  res = Simd::sel(Simd::eq(b, cf(0.0f)), cf(1.0f), res);  // anything^0 = 1
  return res;
}

// ------------------------------- loop drivers ---------------------------------
static inline bool use_stream(const void* y, int64_t n, int elem) {
  return n >= detail::kStreamMinElems &&
         (reinterpret_cast<uintptr_t>(y) & static_cast<uintptr_t>(elem - 1)) == 0;
}
static inline int64_t align_head(const void* y, int elem) {
  const uintptr_t mis = reinterpret_cast<uintptr_t>(y) & (Simd::kAlign - 1);
  return mis ? static_cast<int64_t>((Simd::kAlign - mis) / elem) : 0;
}
template <class K>
static inline void map1(const float* x, float* y, int64_t n, K k) {
  int64_t i = 0;
  if (use_stream(y, n, 4)) {
    const int64_t head = align_head(y, 4);
    if (head) Simd::store_n(y, k(Simd::load_n(x, int(head))), int(head));
    for (i = head; i + W <= n; i += W) Simd::stream(y + i, k(Simd::loadu(x + i)));
    Simd::sfence();
  } else {
    for (; i + 2 * W <= n; i += 2 * W) {
      F a = k(Simd::loadu(x + i));
      F b = k(Simd::loadu(x + i + W));
      Simd::storeu(y + i, a);
      Simd::storeu(y + i + W, b);
    }
    for (; i + W <= n; i += W) Simd::storeu(y + i, k(Simd::loadu(x + i)));
  }
  if (i < n) Simd::store_n(y + i, k(Simd::load_n(x + i, int(n - i))), int(n - i));
}
template <class K>
static inline void map2(const float* a, const float* b, float* y, int64_t n, K k) {
  int64_t i = 0;
  if (use_stream(y, n, 4)) {
    const int64_t head = align_head(y, 4);
    if (head) Simd::store_n(y, k(Simd::load_n(a, int(head)), Simd::load_n(b, int(head))), int(head));
    for (i = head; i + W <= n; i += W)
      Simd::stream(y + i, k(Simd::loadu(a + i), Simd::loadu(b + i)));
    Simd::sfence();
  } else {
    for (; i + W <= n; i += W) Simd::storeu(y + i, k(Simd::loadu(a + i), Simd::loadu(b + i)));
  }
  if (i < n) {
    const int r = int(n - i);
    Simd::store_n(y + i, k(Simd::load_n(a + i, r), Simd::load_n(b + i, r)), r);
  }
}
constexpr int WD = W / 2;
template <class K>
static inline void mapd1(const double* x, double* y, int64_t n, K k) {
  int64_t i = 0;
  if (use_stream(y, n, 8)) {
    const int64_t head = align_head(y, 8);
    if (head) Simd::dstore_n(y, k(Simd::dload_n(x, int(head))), int(head));
    for (i = head; i + WD <= n; i += WD) Simd::dstream(y + i, k(Simd::dloadu(x + i)));
    Simd::sfence();
  } else {
    for (; i + WD <= n; i += WD) Simd::dstoreu(y + i, k(Simd::dloadu(x + i)));
  }
  if (i < n) Simd::dstore_n(y + i, k(Simd::dload_n(x + i, int(n - i))), int(n - i));
}
template <class K>
static inline void mapd2(const double* a, const double* b, double* y, int64_t n, K k) {
  int64_t i = 0;
  if (use_stream(y, n, 8)) {
    const int64_t head = align_head(y, 8);
    if (head)
      Simd::dstore_n(y, k(Simd::dload_n(a, int(head)), Simd::dload_n(b, int(head))), int(head));
    for (i = head; i + WD <= n; i += WD)
      Simd::dstream(y + i, k(Simd::dloadu(a + i), Simd::dloadu(b + i)));
    Simd::sfence();
  } else {
    for (; i + WD <= n; i += WD) Simd::dstoreu(y + i, k(Simd::dloadu(a + i), Simd::dloadu(b + i)));
  }
  if (i < n) {
    const int r = int(n - i);
    Simd::dstore_n(y + i, k(Simd::dload_n(a + i, r), Simd::dload_n(b + i, r)), r);
  }
}

// ------------------------------- f32 entry points -----------------------------
static void unary_f32_impl(Unary fn, const float* x, float* y, int64_t n) {
  switch (fn) {
#define EMBER_VEC_U(NAME, EXPR)                          \
  case Unary::NAME:                                      \
    map1(x, y, n, [](F v) __attribute__((always_inline)) { return EXPR; }); \
    return;
    EMBER_VEC_U(exp, k_exp(v))
    EMBER_VEC_U(exp2, k_exp2(v))
    EMBER_VEC_U(expm1, k_expm1(v))
    EMBER_VEC_U(log, k_log(v))
    EMBER_VEC_U(log2, k_log2(v))
    EMBER_VEC_U(log10, k_log10(v))
    EMBER_VEC_U(log1p, k_log1p(v))
    EMBER_VEC_U(sqrt, Simd::sqrt(v))
    EMBER_VEC_U(rsqrt, cf(1.0f) / Simd::sqrt(v))
    EMBER_VEC_U(reciprocal, cf(1.0f) / v)
    EMBER_VEC_U(sin, k_sincos<false>(v))
    EMBER_VEC_U(cos, k_sincos<true>(v))
    EMBER_VEC_U(tan, k_tan(v))
    EMBER_VEC_U(asin, k_asin(v))
    EMBER_VEC_U(acos, k_acos(v))
    EMBER_VEC_U(atan, k_atan(v))
    EMBER_VEC_U(sinh, k_sinh(v))
    EMBER_VEC_U(cosh, k_cosh(v))
    EMBER_VEC_U(tanh, k_tanh(v))
    EMBER_VEC_U(asinh, k_asinh(v))
    EMBER_VEC_U(acosh, k_acosh(v))
    EMBER_VEC_U(atanh, k_atanh(v))
    EMBER_VEC_U(erf, k_erf(v))
    EMBER_VEC_U(sigmoid, k_sigmoid(v))
    EMBER_VEC_U(log_sigmoid, k_log_sigmoid(v))
    EMBER_VEC_U(relu, Simd::max(cf(0.0f), v))  // relu(NaN) = NaN, relu(-0) = -0
    EMBER_VEC_U(gelu_erf, k_gelu_erf(v))
    EMBER_VEC_U(gelu_tanh, k_gelu_tanh(v))
    EMBER_VEC_U(silu, k_silu(v))
    EMBER_VEC_U(softplus, k_softplus(v))
    EMBER_VEC_U(abs, Simd::abs(v))
    EMBER_VEC_U(neg, Simd::neg(v))
    EMBER_VEC_U(square, v * v)
    EMBER_VEC_U(floor, Simd::floor(v))
    EMBER_VEC_U(ceil, Simd::ceil(v))
    EMBER_VEC_U(round, Simd::round_even(v))
    EMBER_VEC_U(trunc, Simd::trunc(v))
    EMBER_VEC_U(sign, k_sign(v))
#undef EMBER_VEC_U
  }
}

// op(a, b) on vectors
template <Binary kOp>
static inline F binop(F a, F b) {
  if constexpr (kOp == Binary::add) return a + b;
  else if constexpr (kOp == Binary::sub) return a - b;
  else if constexpr (kOp == Binary::mul) return a * b;
  else if constexpr (kOp == Binary::div) return a / b;
  else if constexpr (kOp == Binary::maximum) return k_maximum(a, b);
  else if constexpr (kOp == Binary::minimum) return k_minimum(a, b);
  else if constexpr (kOp == Binary::pow) return k_pow(a, b);
  else if constexpr (kOp == Binary::atan2) return k_atan2(a, b);
  else if constexpr (kOp == Binary::hypot) return k_hypot(a, b);
  else if constexpr (kOp == Binary::fmod) return k_fmod(a, b);
  else return k_remainder(a, b);
}
template <Binary kOp>
static void binary_f32_op(const float* a, const float* b, float* y, int64_t n) {
  map2(a, b, y, n, [](F u, F v) __attribute__((always_inline)) { return binop<kOp>(u, v); });
}
template <Binary kOp>
static void binary_scalar_f32_op(const float* a, float b, float* y, int64_t n) {
  const F bv = cf(b);
  map1(a, y, n, [bv](F u) __attribute__((always_inline)) { return binop<kOp>(u, bv); });
}
template <Binary kOp>
static void scalar_binary_f32_op(float a, const float* b, float* y, int64_t n) {
  const F av = cf(a);
  map1(b, y, n, [av](F v) __attribute__((always_inline)) { return binop<kOp>(av, v); });
}
#define EMBER_VEC_BINARY_SWITCH(FN, CALL)         \
  switch (FN) {                                   \
    case Binary::add: CALL(Binary::add); return;  \
    case Binary::sub: CALL(Binary::sub); return;  \
    case Binary::mul: CALL(Binary::mul); return;  \
    case Binary::div: CALL(Binary::div); return;  \
    case Binary::maximum: CALL(Binary::maximum); return; \
    case Binary::minimum: CALL(Binary::minimum); return; \
    case Binary::pow: CALL(Binary::pow); return;  \
    case Binary::atan2: CALL(Binary::atan2); return; \
    case Binary::hypot: CALL(Binary::hypot); return; \
    case Binary::fmod: CALL(Binary::fmod); return; \
    case Binary::remainder: CALL(Binary::remainder); return; \
  }
static void binary_f32_impl(Binary fn, const float* a, const float* b, float* y, int64_t n) {
#define EMBER_VEC_CALL(OP) binary_f32_op<OP>(a, b, y, n)
  EMBER_VEC_BINARY_SWITCH(fn, EMBER_VEC_CALL)
#undef EMBER_VEC_CALL
}
static void binary_scalar_f32_impl(Binary fn, const float* a, float b, float* y, int64_t n) {
  if (fn == Binary::pow) {  // torch's tensor ** scalar fast paths
    if (b == 2.0f) return map1(a, y, n, [](F v) { return v * v; });
    if (b == 3.0f) return map1(a, y, n, [](F v) { return v * v * v; });
    if (b == 0.5f) return map1(a, y, n, [](F v) { return Simd::sqrt(v); });
    if (b == -0.5f) return map1(a, y, n, [](F v) { return cf(1.0f) / Simd::sqrt(v); });
    if (b == -1.0f) return map1(a, y, n, [](F v) { return cf(1.0f) / v; });
    if (b == -2.0f) return map1(a, y, n, [](F v) { return cf(1.0f) / (v * v); });
  }
#define EMBER_VEC_CALL(OP) binary_scalar_f32_op<OP>(a, b, y, n)
  EMBER_VEC_BINARY_SWITCH(fn, EMBER_VEC_CALL)
#undef EMBER_VEC_CALL
}
static void scalar_binary_f32_impl(Binary fn, float a, const float* b, float* y, int64_t n) {
#define EMBER_VEC_CALL(OP) scalar_binary_f32_op<OP>(a, b, y, n)
  EMBER_VEC_BINARY_SWITCH(fn, EMBER_VEC_CALL)
#undef EMBER_VEC_CALL
}

// ------------------------------- f64 entry points -----------------------------
static inline D dsign(D x) {
  return Simd::dsel(Simd::dgt(x, Simd::dset(0.0)), Simd::dset(1.0),
                    Simd::dsel(Simd::dlt(x, Simd::dset(0.0)), Simd::dset(-1.0), Simd::dset(0.0)));
}
static void unary_f64_impl(Unary fn, const double* x, double* y, int64_t n) {
  switch (fn) {
#define EMBER_VEC_U(NAME, EXPR)                                         \
  case Unary::NAME:                                                     \
    mapd1(x, y, n, [](D v) __attribute__((always_inline)) { return EXPR; }); \
    return;
    EMBER_VEC_U(sqrt, Simd::dsqrt(v))
    EMBER_VEC_U(rsqrt, Simd::dset(1.0) / Simd::dsqrt(v))
    EMBER_VEC_U(reciprocal, Simd::dset(1.0) / v)
    EMBER_VEC_U(relu, Simd::dmax(Simd::dset(0.0), v))
    EMBER_VEC_U(abs, Simd::dabs(v))
    EMBER_VEC_U(neg, Simd::dneg(v))
    EMBER_VEC_U(square, v * v)
    EMBER_VEC_U(floor, Simd::dfloor(v))
    EMBER_VEC_U(ceil, Simd::dceil(v))
    EMBER_VEC_U(round, Simd::dround_even(v))
    EMBER_VEC_U(trunc, Simd::dtrunc(v))
    EMBER_VEC_U(sign, dsign(v))
#undef EMBER_VEC_U
    default:
      for (int64_t i = 0; i < n; ++i) y[i] = detail::scalar_unary_f64(fn, x[i]);
      return;
  }
}
static inline D dmaximum(D a, D b) {
  return Simd::dsel(Simd::dunord(a, b), a + b, Simd::dmax(a, b));
}
static inline D dminimum(D a, D b) {
  return Simd::dsel(Simd::dunord(a, b), a + b, Simd::dmin(a, b));
}
template <class K>
static inline bool binary_f64_vec(Binary fn, K run) {
  switch (fn) {
    case Binary::add: run([](D u, D v) { return u + v; }); return true;
    case Binary::sub: run([](D u, D v) { return u - v; }); return true;
    case Binary::mul: run([](D u, D v) { return u * v; }); return true;
    case Binary::div: run([](D u, D v) { return u / v; }); return true;
    case Binary::maximum: run([](D u, D v) { return dmaximum(u, v); }); return true;
    case Binary::minimum: run([](D u, D v) { return dminimum(u, v); }); return true;
    default: return false;
  }
}
static void binary_f64_impl(Binary fn, const double* a, const double* b, double* y, int64_t n) {
  if (binary_f64_vec(fn, [&](auto op) { mapd2(a, b, y, n, op); })) return;
  for (int64_t i = 0; i < n; ++i) y[i] = detail::scalar_binary_f64(fn, a[i], b[i]);
}
static void binary_scalar_f64_impl(Binary fn, const double* a, double b, double* y, int64_t n) {
  const D bv = Simd::dset(b);
  if (binary_f64_vec(fn, [&](auto op) { mapd1(a, y, n, [&](D u) { return op(u, bv); }); })) return;
  if (fn == Binary::pow) {
    if (b == 2.0) return mapd1(a, y, n, [](D v) { return v * v; });
    if (b == 3.0) return mapd1(a, y, n, [](D v) { return v * v * v; });
    if (b == 0.5) return mapd1(a, y, n, [](D v) { return Simd::dsqrt(v); });
    if (b == -0.5) return mapd1(a, y, n, [](D v) { return Simd::dset(1.0) / Simd::dsqrt(v); });
    if (b == -1.0) return mapd1(a, y, n, [](D v) { return Simd::dset(1.0) / v; });
    if (b == -2.0) return mapd1(a, y, n, [](D v) { return Simd::dset(1.0) / (v * v); });
  }
  for (int64_t i = 0; i < n; ++i) y[i] = detail::scalar_binary_f64(fn, a[i], b);
}
static void scalar_binary_f64_impl(Binary fn, double a, const double* b, double* y, int64_t n) {
  const D av = Simd::dset(a);
  if (binary_f64_vec(fn, [&](auto op) { mapd1(b, y, n, [&](D v) { return op(av, v); }); })) return;
  for (int64_t i = 0; i < n; ++i) y[i] = detail::scalar_binary_f64(fn, a, b[i]);
}

// ------------------------------- reductions -----------------------------------
static float sum_f32_impl(const float* x, int64_t n) {
  // accumulate in double: exact products of the float inputs, 8 independent chains
  D a0 = Simd::dset(0.0), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    F v0 = Simd::loadu(x + i), v1 = Simd::loadu(x + i + W);
    F v2 = Simd::loadu(x + i + 2 * W), v3 = Simd::loadu(x + i + 3 * W);
    a0 = a0 + Simd::d_lo(v0);
    a1 = a1 + Simd::d_hi(v0);
    a2 = a2 + Simd::d_lo(v1);
    a3 = a3 + Simd::d_hi(v1);
    a4 = a4 + Simd::d_lo(v2);
    a5 = a5 + Simd::d_hi(v2);
    a6 = a6 + Simd::d_lo(v3);
    a7 = a7 + Simd::d_hi(v3);
  }
  for (; i + W <= n; i += W) {
    F v = Simd::loadu(x + i);
    a0 = a0 + Simd::d_lo(v);
    a1 = a1 + Simd::d_hi(v);
  }
  if (i < n) {
    F v = Simd::load_n(x + i, int(n - i));
    a0 = a0 + Simd::d_lo(v);
    a1 = a1 + Simd::d_hi(v);
  }
  D s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
  return static_cast<float>(Simd::dhsum(s));
}
// Neumaier compensated summation in each lane.
static inline void neumaier(D& s, D& c, D x) {
  D t = s + x;
  D big = Simd::dsel(Simd::dge(Simd::dabs(s), Simd::dabs(x)), s, x);
  D small = Simd::dsel(Simd::dge(Simd::dabs(s), Simd::dabs(x)), x, s);
  c = c + ((big - t) + small);
  s = t;
}
static double sum_f64_impl(const double* x, int64_t n) {
  D s0 = Simd::dset(0.0), c0 = s0, s1 = s0, c1 = s0;
  int64_t i = 0;
  for (; i + 2 * WD <= n; i += 2 * WD) {
    neumaier(s0, c0, Simd::dloadu(x + i));
    neumaier(s1, c1, Simd::dloadu(x + i + WD));
  }
  for (; i + WD <= n; i += WD) neumaier(s0, c0, Simd::dloadu(x + i));
  if (i < n) neumaier(s0, c0, Simd::dload_n(x + i, int(n - i)));
  alignas(64) double sv[2 * WD];
  alignas(64) double cv[2 * WD];
  Simd::dstoreu(sv, s0);
  Simd::dstoreu(sv + WD, s1);
  Simd::dstoreu(cv, c0);
  Simd::dstoreu(cv + WD, c1);
  double s = 0.0, c = 0.0, plain = 0.0;
  for (int k = 0; k < 2 * WD; ++k) {
    plain += sv[k];
    double t = s + sv[k];
    c += (std::fabs(s) >= std::fabs(sv[k])) ? (s - t) + sv[k] : (sv[k] - t) + s;
    s = t;
    c += cv[k];
  }
  // Inf/NaN inputs poison the compensation; the plain sum has the IEEE answer then.
  return std::isfinite(plain) ? s + c : plain;
}
template <bool kMax>
static float minmax_f32_impl(const float* x, int64_t n) {
  const float init = kMax ? -std::numeric_limits<float>::infinity()
                          : std::numeric_limits<float>::infinity();
  auto op = [](F acc, F v) __attribute__((always_inline)) {
    return kMax ? Simd::max(v, acc) : Simd::min(v, acc);  // a NaN v leaves acc as is
  };
  F m0 = cf(init), m1 = m0, m2 = m0, m3 = m0;
  M nan = Simd::mfalse();
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    F v0 = Simd::loadu(x + i), v1 = Simd::loadu(x + i + W);
    F v2 = Simd::loadu(x + i + 2 * W), v3 = Simd::loadu(x + i + 3 * W);
    m0 = op(m0, v0);
    m1 = op(m1, v1);
    m2 = op(m2, v2);
    m3 = op(m3, v3);
    nan = Simd::mor(nan, Simd::mor(Simd::unord(v0, v1), Simd::unord(v2, v3)));
  }
  for (; i + W <= n; i += W) {
    F v = Simd::loadu(x + i);
    m0 = op(m0, v);
    nan = Simd::mor(nan, Simd::isnan(v));
  }
  if (i < n) {
    F v = Simd::load_n(x + i, int(n - i), cf(init));
    m0 = op(m0, v);
    nan = Simd::mor(nan, Simd::isnan(v));
  }
  if (Simd::any(nan)) return std::numeric_limits<float>::quiet_NaN();
  F m = op(op(m0, m1), op(m2, m3));
  return kMax ? Simd::hmax(m) : Simd::hmin(m);
}

// ------------------------------- softmax --------------------------------------
// y = exp(x - m), returns sum(y) (accumulated in double)
static double exp_shift_store(const float* x, float* y, int64_t n, float m) {
  const F mv = cf(m);
  D a0 = Simd::dset(0.0), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    F e0 = k_exp_nonpos(Simd::loadu(x + i) - mv);
    F e1 = k_exp_nonpos(Simd::loadu(x + i + W) - mv);
    Simd::storeu(y + i, e0);
    Simd::storeu(y + i + W, e1);
    a0 = a0 + Simd::d_lo(e0);
    a1 = a1 + Simd::d_hi(e0);
    a2 = a2 + Simd::d_lo(e1);
    a3 = a3 + Simd::d_hi(e1);
  }
  for (; i + W <= n; i += W) {
    F e = k_exp_nonpos(Simd::loadu(x + i) - mv);
    Simd::storeu(y + i, e);
    a0 = a0 + Simd::d_lo(e);
    a1 = a1 + Simd::d_hi(e);
  }
  if (i < n) {
    const int r = int(n - i);
    F e = k_exp_nonpos(Simd::load_n(x + i, r, cf(-std::numeric_limits<float>::infinity())) - mv);
    if (y) Simd::store_n(y + i, e, r);
    a0 = a0 + Simd::d_lo(e);
    a1 = a1 + Simd::d_hi(e);
  }
  return Simd::dhsum((a0 + a1) + (a2 + a3));
}
// sum(exp(x - m)) without storing
static double exp_shift_sum(const float* x, int64_t n, float m) {
  const F mv = cf(m);
  D a0 = Simd::dset(0.0), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    F e0 = k_exp_nonpos(Simd::loadu(x + i) - mv);
    F e1 = k_exp_nonpos(Simd::loadu(x + i + W) - mv);
    a0 = a0 + Simd::d_lo(e0);
    a1 = a1 + Simd::d_hi(e0);
    a2 = a2 + Simd::d_lo(e1);
    a3 = a3 + Simd::d_hi(e1);
  }
  for (; i < n; i += W) {
    const int r = n - i < W ? int(n - i) : W;
    F e = k_exp_nonpos(Simd::load_n(x + i, r, cf(-std::numeric_limits<float>::infinity())) - mv);
    a0 = a0 + Simd::d_lo(e);
    a1 = a1 + Simd::d_hi(e);
  }
  return Simd::dhsum((a0 + a1) + (a2 + a3));
}
static void softmax_row_impl(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const float m = minmax_f32_impl<true>(x, n);
  const double s = exp_shift_store(x, y, n, m);
  const F inv = cf(static_cast<float>(1.0 / s));
  int64_t i = 0;
  for (; i + W <= n; i += W) Simd::storeu(y + i, Simd::loadu(y + i) * inv);
  if (i < n) Simd::store_n(y + i, Simd::load_n(y + i, int(n - i)) * inv, int(n - i));
}
static void log_softmax_row_impl(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const float m = minmax_f32_impl<true>(x, n);
  const double s = exp_shift_sum(x, n, m);
  const F mv = cf(m);
  const F ls = cf(static_cast<float>(std::log(s)));
  map1(x, y, n, [mv, ls](F v) { return (v - mv) - ls; });
}

// ------------------------------- conversions ----------------------------------
static void f32_to_f16_impl(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) Simd::store_f16(y + i, Simd::loadu(x + i));
  if (i < n) Simd::store_f16_n(y + i, Simd::load_n(x + i, int(n - i)), int(n - i));
}
static void f16_to_f32_impl(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) Simd::storeu(y + i, Simd::load_f16(x + i));
  if (i < n) Simd::store_n(y + i, Simd::load_f16_n(x + i, int(n - i)), int(n - i));
}
static inline I to_bf16_bits(F v) {
  I u = Simd::as_i(v);
  I lsb = Simd::iand(Simd::isrl<16>(u), Simd::iset(1));
  I r = Simd::isrl<16>(Simd::iadd(u, Simd::iadd(lsb, Simd::iset(0x7fff))));
  I q = Simd::ior(Simd::isrl<16>(u), Simd::iset(0x40));  // NaN: quiet, keep sign/payload top
  return Simd::seli(Simd::isnan(v), q, r);
}
static void f32_to_bf16_impl(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) Simd::store_u16(y + i, to_bf16_bits(Simd::loadu(x + i)));
  if (i < n) Simd::store_u16_n(y + i, to_bf16_bits(Simd::load_n(x + i, int(n - i))), int(n - i));
}
static void bf16_to_f32_impl(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) Simd::storeu(y + i, Simd::as_f(Simd::isll<16>(Simd::load_u16(x + i))));
  if (i < n)
    Simd::store_n(y + i, Simd::as_f(Simd::isll<16>(Simd::load_u16_n(x + i, int(n - i)))),
                  int(n - i));
}

static const detail::Kernels kKernels = {
    unary_f32_impl,         unary_f64_impl,         binary_f32_impl,
    binary_scalar_f32_impl, scalar_binary_f32_impl, binary_f64_impl,
    binary_scalar_f64_impl, scalar_binary_f64_impl, sum_f32_impl,
    sum_f64_impl,           minmax_f32_impl<true>,  minmax_f32_impl<false>,
    softmax_row_impl,       log_softmax_row_impl,   f32_to_f16_impl,
    f16_to_f32_impl,        f32_to_bf16_impl,       bf16_to_f32_impl,
};

#undef EMBER_VEC_BINARY_SWITCH
}  // namespace ember::cpu::vec::EMBER_VEC_MATH_KERNEL_NS
#endif  // EMBER_VEC_MATH_KERNEL_NS
