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

// Kernels are inlined into their loops so constants are hoisted out of them.
#define EMBER_VEC_INLINE static inline __attribute__((always_inline))

using F = Simd::F;
using I = Simd::I;
using M = Simd::M;
using D = Simd::D;
constexpr int W = Simd::W;

EMBER_VEC_INLINE F cf(float v) { return Simd::set(v); }
EMBER_VEC_INLINE F cbits(uint32_t b) { return Simd::as_f(Simd::iset(static_cast<int32_t>(b))); }
EMBER_VEC_INLINE F kInf() { return cf(std::numeric_limits<float>::infinity()); }
EMBER_VEC_INLINE F kNaN() { return cf(std::numeric_limits<float>::quiet_NaN()); }
EMBER_VEC_INLINE F sign_bits(F x) { return Simd::band(x, cbits(0x80000000u)); }
EMBER_VEC_INLINE F xor_sign(F v, F s) { return Simd::bxor(v, s); }  // s: sign bits only

// Horner evaluation with float coefficients c[0] + c[1] t + ...
template <int N>
EMBER_VEC_INLINE F horner(F t, const float (&c)[N]) {
  F r = cf(c[N - 1]);
  for (int i = N - 2; i >= 0; --i) r = Simd::fma(r, t, cf(c[i]));
  return r;
}
// Same with per-lane coefficients taken from 16-entry tables tab[k][idx].
template <int N>
EMBER_VEC_INLINE F horner_lut16(F t, I idx, const float (&tab)[N][16]) {
  F r = Simd::lut16(idx, tab[N - 1]);
  for (int i = N - 2; i >= 0; --i) r = Simd::fma(r, t, Simd::lut16(idx, tab[i]));
  return r;
}
// c * P(t) with one rounding for the leading term: fma(c0, c, (t * P1(t)) * c)
template <int N>
EMBER_VEC_INLINE F scaled_horner_lut16(F t, I idx, const float (&tab)[N][16], F c) {
  F r = Simd::lut16(idx, tab[N - 1]);
  for (int i = N - 2; i >= 1; --i) r = Simd::fma(r, t, Simd::lut16(idx, tab[i]));
  return Simd::fma(Simd::lut16(idx, tab[0]), c, (r * t) * c);
}

// Run a scalar function over the lanes selected by `which`, replacing those lanes.
template <class Fn>
EMBER_VEC_INLINE F scalar_lanes(F x, F res, M which, Fn fn) {
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
EMBER_VEC_INLINE F scalar_lanes2(F a, F b, F res, M which, Fn fn) {
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
// sinh x = x + x^3 * P(x^2), |x| <= 1
constexpr float kSinh[] = {0.1666666716337204f, 0.00833331048488617f,
                           0.00019842895562760532f, 2.7822131869470468e-06f};
// erf(t), t in [0, 4): 16 intervals of width 1/4, polynomial in d = t - mid. Interval 0
// is anchored at 0 (c0 = 0) so tiny t keeps relative accuracy; the other mids are chosen
// so that erf(mid) is (almost) exactly a float.
constexpr float kErf16Mid[16] = {
    0.0f, 0.37504449486732483f, 0.6249167919158936f, 0.8750695586204529f, 1.124919056892395f,
    1.3751392364501953f, 1.6248712539672852f, 1.8750187158584595f, 2.1248369216918945f,
    2.374636173248291f, 2.6247215270996094f, 2.8747682571411133f, 3.1250364780426025f,
    3.375476598739624f, 3.624523401260376f, 3.874523401260376f};
constexpr float kErf16[7][16] = {
    {
     0.0f, 0.4041605293750763f, 0.6231773495674133f, 0.7841115593910217f, 0.888362467288971f,
     0.9481937885284424f, 0.97843337059021f, 0.9919906854629517f, 0.9973439574241638f,
     0.9992156028747559f, 0.9997943043708801f, 0.9999520778656006f, 0.9999901056289673f,
     0.9999982118606567f, 0.9999997019767761f, 0.9999999403953552f},
    {
     1.128379225730896f, 0.9803200960159302f, 0.7635789513587952f, 0.5246811509132385f,
     0.31833192706108093f, 0.17029455304145813f, 0.08050593733787537f, 0.03354347124695778f,
     0.012349375523626804f, 0.004013407044112682f, 0.0011495545040816069f,
     0.00029061525128781796f, 6.474399560829625e-05f, 1.2707828318525571e-05f,
     2.2233339223021176e-06f, 3.386973332908383e-07f},
    {
     -1.1899931450898293e-05f, -0.3676636219024658f, -0.4771733283996582f, -0.4591325521469116f,
     -0.3580976724624634f, -0.23417872190475464f, -0.13081178069114685f, -0.06289461255073547f,
     -0.026240412145853043f, -0.009530398063361645f, -0.0030172576662153006f,
     -0.0008354560704901814f, -0.0002023277775151655f, -6.652414595009759e-05f,
     -6.013950041960925e-06f, 1.764914850355126e-05f},
    {
     -0.3757309913635254f, -0.23484671115875244f, -0.0557333379983902f, 0.09295736998319626f,
     0.16244195401668549f, 0.15792064368724823f, 0.11486675590276718f, 0.06743922829627991f,
     0.033055055886507034f, 0.013749702833592892f, 0.004896361380815506f, 0.0015042232116684318f,
     0.0003998887841589749f, 9.467802010476589e-05f, 1.893699482025113e-05f,
     5.2142895583529025e-06f},
    {
     -0.004688504617661238f, 0.1665850728750229f, 0.17647375166416168f, 0.11238016188144684f,
     0.028002392500638962f, -0.030520910397171974f, -0.04971757158637047f, -0.04226434975862503f,
     -0.026370946317911148f, -0.01314607821404934f, -0.005420453380793333f,
     -0.0018831960624083877f, -0.000557374965865165f, 0.0038590303156524897f,
     -0.00037772086216136813f, -0.003218883415684104f},
    {
     0.1365692913532257f, 0.04537831246852875f, -0.027024218812584877f, -0.06703009456396103f,
     -0.061103422194719315f, -0.030607538297772408f, -0.0022775395773351192f,
     0.011314000003039837f, 0.012442837469279766f, 0.008363310247659683f, 0.0042380597442388535f,
     0.001726597547531128f, 0.0005838248762302101f, -4.433701542438939e-05f,
     2.2084012016421184e-05f, -0.00016088712436612695f},
    {
     -0.04892094433307648f, -0.049512945115566254f, -0.041322626173496246f,
     -0.010724339634180069f, 0.015249277465045452f, 0.02203722670674324f, 0.014411565847694874f,
     0.004378166981041431f, -0.0018005615565925837f, -0.00319338939152658f,
     -0.0022380659356713295f, -0.0011617121053859591f, -0.0004576958017423749f,
     -0.17016878724098206f, 0.014684450812637806f, 0.13653229176998138f}};
// tanh(t), t in [0, 11): 14 intervals picked by the exponent and top two mantissa bits
// of t + 1 (widths 1/4, 1/2, 1, 2; the last two entries repeat), same scheme as erf.
constexpr float kTanh16Mid[16] = {
    0.0f, 0.37504732608795166f, 0.6251066327095032f, 0.8750615119934082f, 1.2497694492340088f,
    1.7497650384902954f, 2.249577283859253f, 2.750335216522217f, 3.4999313354492188f,
    4.500294208526611f, 5.500362873077393f, 6.499046802520752f, 7.999046802520752f,
    10.001906394958496f, 10.001906394958496f, 10.001906394958496f};
constexpr float kTanh16[7][16] = {
    {
     0.0f, 0.3583986461162567f, 0.5546735525131226f, 0.7039366364479065f, 0.8482189774513245f,
     0.9413487911224365f, 0.9780077338218689f, 0.9918651580810547f, 0.9981776475906372f,
     0.9997533559799194f, 0.9999666213989258f, 0.9999954700469971f, 0.9999997615814209f, 1.0f,
     1.0f, 1.0f},
    {
     1.0f, 0.871550440788269f, 0.6923372745513916f, 0.5044732093811035f, 0.28052443265914917f,
     0.11386240273714066f, 0.0435008704662323f, 0.016203511506319046f, 0.0036414521746337414f,
     0.0004932373412884772f, 6.675758049823344e-05f, 9.058546311280224e-06f,
     4.5112238922229153e-07f, 8.172317045307409e-09f, 8.172317045307409e-09f,
     8.172317045307409e-09f},
    {
     -1.0974263204843737e-06f, -0.312362402677536f, -0.384021133184433f, -0.35511720180511475f,
     -0.2379463016986847f, -0.10718421638011932f, -0.042544178664684296f, -0.016071703284978867f,
     -0.0036347913555800915f, -0.0004931127768941224f, -6.67551503283903e-05f,
     -9.011353540699929e-06f, -2.243385921474328e-07f, -8.038483656491735e-08f,
     -8.038483656491735e-08f, -8.038483656491735e-08f},
    {
     -0.33327019214630127f, -0.17857596278190613f, -0.01778263971209526f, 0.08182145655155182f,
     0.10833887755870819f, 0.0629502609372139f, 0.027108581736683846f, 0.010539387352764606f,
     0.002412090776488185f, 0.00032823780202306807f, 4.4452393922256306e-05f,
     6.0364063756424e-06f, 2.980352462600422e-07f, 5.941947822662996e-09f,
     5.941947822662996e-09f, 5.941947822662996e-09f},
    {
     -0.0011837322963401675f, 0.16809523105621338f, 0.13785786926746368f, 0.06078087538480759f,
     -0.012561100535094738f, -0.023528950288891792f, -0.012331591919064522f,
     -0.005096406675875187f, -0.0011975065572187304f, -0.00016397936269640923f,
     -2.2224956410354935e-05f, -3.514988975439337e-06f, -7.50449828501587e-07f,
     1.8870962037453864e-07f, 1.8870962037453864e-07f, 1.8870962037453864e-07f},
    {
     0.14308428764343262f, 0.01933896169066429f, -0.054145678877830505f, -0.05861717090010643f,
     -0.019729765132069588f, 0.0034802586305886507f, 0.003979098983108997f,
     0.0019142895471304655f, 0.0004903384251520038f, 6.824210868217051e-05f,
     9.272669558413327e-06f, 1.2436049701136653e-06f, 6.813505137870379e-08f,
     5.526973323455309e-10f, 5.526973323455309e-10f, 5.526973323455309e-10f},
    {
     -0.03697703778743744f, -0.06808061897754669f, -0.0235977154225111f, 0.012818592600524426f,
     0.01507679745554924f, 0.0021017047110944986f, -0.0007159977685660124f,
     -0.0005500093684531748f, -0.00015767279546707869f, -2.260425389977172e-05f,
     -3.085250455114874e-06f, 9.000902423395019e-07f, 3.772408945224015e-07f,
     -1.277188346193725e-07f, -1.277188346193725e-07f, -1.277188346193725e-07f}};
// sigmoid(-t) = 1 / (1 + e^t), t in [0, 8): 16 intervals of width 1/2, relative accuracy.
constexpr float kSig16Mid[16] = {
    0.2499791532754898f, 0.7500361800193787f, 1.2502132654190063f, 1.7497682571411133f,
    2.249567985534668f, 2.750065326690674f, 3.250195026397705f, 3.7503089904785156f,
    4.249506950378418f, 4.749314308166504f, 5.250855445861816f, 5.749360084533691f,
    6.2497358322143555f, 6.7500715255737305f, 7.24917459487915f, 7.7492194175720215f};
constexpr float kSig16[7][16] = {
    {
     0.4378286302089691f, 0.3208134174346924f, 0.22266322374343872f, 0.14807642996311188f,
     0.09538673609495163f, 0.06008296087384224f, 0.03731987997889519f, 0.02297043427824974f,
     0.014070465229451656f, 0.008583318442106247f, 0.005215685348957777f, 0.003174707293510437f,
     0.001927242730744183f, 0.0011694267159327865f, 0.0007102559902705252f,
     0.0004308931529521942f},
    {
     -0.2461347132921219f, -0.21789216995239258f, -0.1730843186378479f, -0.12614980340003967f,
     -0.08628810942173004f, -0.05647299811244011f, -0.03592710569500923f, -0.02244279347360134f,
     -0.013872487470507622f, -0.008509645238518715f, -0.005188481882214546f,
     -0.0031646285206079483f, -0.0019235284999012947f, -0.0011680591851472855f,
     -0.0007097515044733882f, -0.0004307074996177107f},
    {
     0.01530252955853939f, 0.03904334828257561f, 0.04800264909863472f, 0.0443950891494751f,
     0.0349133163690567f, 0.024843433871865273f, 0.0166227575391531f, 0.010705876164138317f,
     0.006741051562130451f, 0.004181781783699989f, 0.002567179501056671f, 0.0015722675016149879f,
     0.0009580571786500514f, 0.0005826636333949864f, 0.000354371644789353f,
     0.000215168169233948f},
    {
     0.019559046253561974f, 0.011161810718476772f, 0.001111416146159172f, -0.005110942292958498f,
     -0.006935556884855032f, -0.006223034579306841f, -0.004697172436863184f,
     -0.003236793214455247f, -0.002119622891768813f, -0.0013458500616252422f,
     -0.0008378319907933474f, -0.0005174229154363275f, -0.0003168852999806404f,
     -0.00019330989744048566f, -0.00011778934276662767f, -7.159788947319612e-05f},
    {
     -0.0024909614585340023f, -0.005253317765891552f, -0.004308569710701704f,
     -0.001900959643535316f, -0.00010340426524635404f, 0.0006673294701613486f,
     0.0007880591438151896f, 0.0006518795271404088f, 0.00046822219155728817f,
     0.00031288337777368724f, 0.00020061420218553394f, 0.00012604698713403195f,
     7.799221202731133e-05f, 4.787351281265728e-05f, 2.9280639864737168e-05f,
     1.7836951883509755e-05f},
    {
     -0.00179548270534724f, -0.00029695124248974025f, 0.000846003124024719f,
     0.0009134794818237424f, 0.0004985419218428433f, 0.0001486651017330587f,
     -2.129009590134956e-05f, -7.200917752925307e-05f, -7.023903890512884e-05f,
     -5.356148903956637e-05f, -3.660474976641126e-05f, -2.392949681961909e-05f,
     -1.5167835044849198e-05f, -9.437235348741524e-06f, -5.782690095657017e-06f,
     -3.5636992379295407e-06f},
    {
     0.0003348030732013285f, 0.0005377497873269022f, 0.00019100848294328898f,
     -0.00010059416672447696f, -0.00014169103815220296f, -8.592579251853749e-05f,
     -3.255420597270131e-05f, -4.913589691568632e-06f, 4.615057605406037e-06f,
     6.1349965108092874e-06f, 4.9371415116183925e-06f, 3.5464745451463386e-06f,
     2.3961745228007203e-06f, 1.5242549125105143e-06f, 9.262458888770198e-07f,
     5.965313221167889e-07f}};
// gelu_tanh: G(t) = sigmoid(-w(t)), w(t) = 2 sqrt(2/pi) (t + 0.044715 t^3), t in [0, 4):
// 16 intervals of width 1/4, relative accuracy.
constexpr float kGeluTanhQMid[16] = {
    0.12498821318149567f, 0.37500882148742676f, 0.6250360608100891f, 0.87503981590271f,
    1.1251716613769531f, 1.3750475645065308f, 1.6251661777496338f, 1.8751095533370972f,
    2.1249125003814697f, 2.3747165203094482f, 2.6254167556762695f, 2.8748624324798584f,
    3.1249618530273438f, 3.3752400875091553f, 3.6246187686920166f, 3.8750483989715576f};
constexpr float kGeluTanhQ[7][16] = {
    {
     0.45026707649230957f, 0.35384267568588257f, 0.266034334897995f, 0.19090040028095245f,
     0.13043050467967987f, 0.08472821861505508f, 0.05216994881629944f, 0.030392931774258614f,
     0.016700340434908867f, 0.008619590662419796f, 0.0041485801339149475f,
     0.0018642587820068002f, 0.0007731885998509824f, 0.00029453792376443744f,
     0.00010286889300914481f, 3.24539105349686e-05f},
    {
     -0.3958231210708618f, -0.3717364966869354f, -0.3279193043708801f, -0.27179521322250366f,
     -0.2117268592119217f, -0.15513846278190613f, -0.10686501115560532f, -0.06920628249645233f,
     -0.04207705333828926f, -0.023951929062604904f, -0.012688573449850082f,
     -0.006261491682380438f, -0.002847917377948761f, -0.0011879467638209462f,
     -0.00045341160148382187f, -0.00015610347327310592f},
    {
     0.02485654689371586f, 0.06998281180858612f, 0.10272110253572464f, 0.11890143901109695f,
     0.11875331401824951f, 0.10605572909116745f, 0.08622431010007858f, 0.0644945576786995f,
     0.04463738948106766f, 0.028645271435379982f, 0.017001517117023468f, 0.009350469335913658f,
     0.00472404807806015f, 0.0021821942646056414f, 0.0009193323785439134f,
     0.00034849694930016994f},
    {
     0.06523562967777252f, 0.053307678550481796f, 0.033041663467884064f, 0.010174955241382122f,
     -0.009686307050287724f, -0.022935593500733376f, -0.028735753148794174f,
     -0.02837728150188923f, -0.02417757175862789f, -0.018398722633719444f,
     -0.012676328420639038f, -0.007978420704603195f, -0.00457266578450799f,
     -0.002380151068791747f, -0.0011231079697608948f, -0.00047469016863033175f},
    {
     -0.006291314959526062f, -0.01694275438785553f, -0.022585222497582436f,
     -0.022171951830387115f, -0.016925323754549026f, -0.009458319284021854f,
     -0.002375765470787883f, 0.0026885606348514557f, 0.005329967942088842f,
     0.0059587908908724785f, 0.005301673896610737f, 0.004067654255777597f,
     0.0027598075103014708f, 0.0016701400745660067f, 0.000904278305824846f,
     0.0004345256311353296f},
    {
     -0.009739629924297333f, -0.006877254229038954f, -0.002030355390161276f,
     0.0026326519437134266f, 0.005364362150430679f, 0.00601580273360014f, 0.004960174206644297f,
     0.0030381674878299236f, 0.0012111071264371276f, -0.00010892939462792128f,
     -0.0008402160019613802f, -0.0010676538804545999f, -0.0009822208667173982f,
     -0.0007460374617949128f, -0.0004872016725130379f, -0.00027590576792135835f},
    {
     0.0010769165819510818f, 0.002826154697686434f, 0.0032749974634498358f,
     0.002496299333870411f, 0.0012828416656702757f, -0.00012508188956417143f,
     -0.0011092863278463483f, -0.001262787263840437f, -0.0010554438922554255f,
     -0.0006691875751130283f, -0.00028774389647878706f, -2.5103267034864984e-05f,
     0.00012835646339226514f, 0.0001784132036846131f, 0.00016242080891970545f,
     0.00011610730143729597f}};
// gelu, fast path: Phi(-t) for t in [0, 4) directly, 16 intervals of width 1/4,
// polynomial in d = t - mid (relative accuracy ~5e-9; R(mid) exactly a float as above).
constexpr float kGeluQMid[16] = {
    0.12501920759677887f, 0.3749893009662628f, 0.62497878074646f, 0.8750511407852173f,
    1.1251367330551147f, 1.3751654624938965f, 1.6251744031906128f, 1.8749216794967651f,
    2.12514591217041f, 2.374642848968506f, 2.625150442123413f, 2.8747994899749756f,
    3.1245713233947754f, 3.374868631362915f, 3.6249804496765137f, 3.8749659061431885f};
constexpr float kGeluQ[7][16] = {
    {
     0.4502541720867157f, 0.35383421182632446f, 0.26599249243736267f, 0.19077304005622864f,
     0.13026554882526398f, 0.08454007655382156f, 0.05206270143389702f, 0.030401749536395073f,
     0.016787219792604446f, 0.008782968856394291f, 0.004330534487962723f, 0.0020214207470417023f,
     0.0008903217385523021f, 0.0003692546742968261f, 0.00014449165610130876f,
     5.331981446943246e-05f},
    {
     -0.395836740732193f, -0.37185660004615784f, -0.32816532254219055f, -0.27204281091690063f,
     -0.2118440568447113f, -0.1549769937992096f, -0.10650807619094849f, -0.06879638135433197f,
     -0.04170805215835571f, -0.023792071267962456f, -0.01271915715187788f,
     -0.006401809398084879f, -0.0030263091903179884f, -0.0013417135924100876f,
     -0.0005591011722572148f, -0.00021896057296544313f},
    {
     0.02474360354244709f, 0.06972113251686096f, 0.10254817456007004f, 0.11902566999197006f,
     0.11917676776647568f, 0.10655949264764786f, 0.08654709905385971f, 0.06449391692876816f,
     0.04431784898042679f, 0.02824883535504341f, 0.016694849357008934f, 0.009201958775520325f,
     0.004727959632873535f, 0.0022640535607934f, 0.001013365457765758f, 0.0004242322756908834f},
    {
     0.06494257599115372f, 0.053264766931533813f, 0.033331248909235f, 0.01061925757676363f,
     -0.009388643316924572f, -0.023017745465040207f, -0.029133599251508713f,
     -0.028839997947216034f, -0.024442261084914207f, -0.018395179882645607f,
     -0.012489101849496365f, -0.00775101687759161f, -0.004419887904077768f,
     -0.0023233445826917887f, -0.0011312821879982948f, -0.0005114629748277366f},
    {
     -0.0061549535021185875f, -0.01661660708487034f, -0.02229848876595497f,
     -0.02215604856610298f, -0.017222750931978226f, -0.009843402542173862f,
     -0.0025873836129903793f, 0.0027677121106535196f, 0.005598979536443949f,
     0.006212634965777397f, 0.005414273124188185f, 0.004037115257233381f, 0.002664514584466815f,
     0.0015829133335500956f, 0.0008563084411434829f, 0.00042479229159653187f},
    {
     -0.009615556336939335f, -0.006914198398590088f, -0.0022388030774891376f,
     0.0024468442425131798f, 0.005231771618127823f, 0.006230264902114868f, 0.005216843448579311f,
     0.003238465404137969f, 0.001271321321837604f, -0.0001747173082549125f,
     -0.0009585140505805612f, -0.0011533185606822371f, -0.0010018603643402457f,
     -0.000719917006790638f, -0.00045218385639600456f, -0.00025323720183223486f},
    {
     0.0010794138070195913f, 0.0028078670147806406f, 0.0031835229601711035f,
     0.002347783651202917f, 0.001357144908979535f, -0.0002788348065223545f,
     -0.001087107928469777f, -0.0012917075073346496f, -0.0011597329284995794f,
     -0.0007749222568236291f, -0.00031753815710544586f, 7.990001904545352e-06f,
     0.00016924316878430545f, 0.00019286229507997632f, 0.00015967137005645782f,
     0.00010568826837697998f}};
// gelu: Phi(-t) = exp(-t^2/2) * R(t), t in [0, 15): 16 intervals picked by the exponent
// and top two mantissa bits of t + 1 (widths 1/4, 1/2, 1, 2); polynomial in d = t - mid,
// mids chosen so that R(mid) is (almost) exactly a float.
constexpr float kGeluRMid[16] = {
    0.1250021606683731f, 0.3750462234020233f, 0.6248978972434998f, 0.8749129176139832f,
    1.2497820854187012f, 1.7499582767486572f, 2.2495803833007812f, 2.7500734329223633f,
    3.4999094009399414f, 4.499473571777344f, 5.499284267425537f, 6.500472068786621f,
    8.00062370300293f, 9.9987211227417f, 11.999951362609863f, 14.000925064086914f};
constexpr float kGeluR[7][16] = {
    {
     0.4537924826145172f, 0.37959256768226624f, 0.32337626814842224f, 0.2797839939594269f,
     0.23078440129756927f, 0.18523478507995605f, 0.15367427468299866f, 0.1307218372821808f,
     0.10634757578372955f, 0.08481251448392868f, 0.07035132497549057f, 0.06001150235533714f,
     0.049118828028440475f, 0.039511650800704956f, 0.03301910310983658f, 0.02835080586373806f},
    {
     -0.34221723675727844f, -0.2565775215625763f, -0.19686512649059296f, -0.1541556566953659f,
     -0.11051207780838013f, -0.0747891366481781f, -0.053239647299051285f, -0.03944762796163559f,
     -0.026735404506325722f, -0.01733061484992504f, -0.012060346081852913f,
     -0.00883918534964323f, -0.005961022339761257f, -0.0038763033226132393f,
     -0.002714649075642228f, -0.0020047719590365887f},
    {
     0.205507293343544f, 0.14168207347393036f, 0.1001778244972229f, 0.07245562225580215f,
     0.046334199607372284f, 0.027178458869457245f, 0.01695370487868786f, 0.011118981055915356f,
     0.006388049107044935f, 0.003416940337046981f, 0.002014027675613761f, 0.001276311813853681f,
     0.000713472836650908f, 0.0003767893649637699f, 0.0002217233122792095f,
     0.00014107170864008367f},
    {
     -0.10550981760025024f, -0.06781323254108429f, -0.044755641371011734f,
     -0.030252644792199135f, -0.017533965408802032f, -0.009075784124433994f,
     -0.0050335596315562725f, -0.0029565575532615185f, -0.0014591221697628498f,
     -0.000652009155601263f, -0.0003282016550656408f, -0.00018085284682456404f,
     -8.425147825619206e-05f, -3.629428829299286e-05f, -1.799285746528767e-05f,
     -9.879177923721727e-06f},
    {
     0.048079997301101685f, 0.0290614552795887f, 0.018053853884339333f, 0.011494496837258339f,
     0.00610464159399271f, 0.002823959570378065f, 0.0014075274812057614f, 0.0007470729760825634f,
     0.00032016210025176406f, 0.00012074116239091381f, 5.227290967013687e-05f,
     2.5172090317937545e-05f, 9.823504115047399e-06f, 3.4658391996345017e-06f,
     1.4509769243886694e-06f, 6.885570087433734e-07f},
    {
     -0.019927939400076866f, -0.011414206586778164f, -0.006661364808678627f,
     -0.004137906711548567f, -0.002003768226131797f, -0.0008334574522450566f,
     -0.0003760303370654583f, -0.00018079791334457695f, -6.893173122080043e-05f,
     -2.209280319220852e-05f, -8.229659215430729e-06f, -3.4586591937113553e-06f,
     -1.1577191116884933e-06f, -3.3354035622323863e-07f, -1.1746683270530411e-07f,
     -4.8007180453168985e-08f},
    {
     0.007590023800730705f, 0.004167820326983929f, 0.0022624896373599768f,
     0.0014152646763250232f, 0.0006113846320658922f, 0.00023067857546266168f,
     9.497055725660175e-05f, 4.1900708311004564e-05f, 1.4069565622776281e-05f,
     3.8818125176476315e-06f, 1.2560643654069281e-06f, 4.658042485061742e-07f,
     1.3182173574932676e-07f, 3.12884331776786e-08f, 9.344464757532478e-09f,
     3.3115128417193773e-09f}};
}  // namespace coef

constexpr float kLog2e = 1.44269502162933349609f;
constexpr float kLn2Hi = 0.693145751953125f;        // 16 significant bits
constexpr float kLn2Lo = 1.428606765330187045e-06f;
constexpr float kPio2Hi = 1.57079637050628662109f;  // float(pi/2)
constexpr float kPio2Lo = -4.371138828673793e-08f;
constexpr float kPiHi = 3.14159274101257324219f;
constexpr float kPiLo = -8.742277657347586e-08f;

// ------------------------------- exp family -----------------------------------
EMBER_VEC_INLINE F exp_poly(F r) {  // e^r, |r| <= ~0.35
  return Simd::fma(r * r, horner(r, coef::kExp), r) + cf(1.0f);
}
// x = n*ln2 + r; returns n (integral float) and r.
EMBER_VEC_INLINE F exp_reduce(F x, F& r) {
  F n = Simd::round_even(x * cf(kLog2e));
  r = Simd::fnma(n, cf(kLn2Hi), x);
  r = Simd::fnma(n, cf(kLn2Lo), r);
  return n;
}
EMBER_VEC_INLINE F k_exp(F x) {
  x = Simd::max(cf(-104.0f), x);  // max/min return the 2nd operand for NaN: keeps NaN
  x = Simd::min(cf(89.0f), x);
  F r;
  F n = exp_reduce(x, r);
  return Simd::scalef(exp_poly(r), n);
}
// exp(x) for x <= 0 (softmax): no overflow clamp needed.
EMBER_VEC_INLINE F k_exp_nonpos(F x) {
  x = Simd::max(cf(-104.0f), x);
  F r;
  F n = exp_reduce(x, r);
  return Simd::scalef(exp_poly(r), n);
}
// e^r - 1 for |r| <= ~0.35
EMBER_VEC_INLINE F expm1_poly(F r) { return Simd::fma(r * r, horner(r, coef::kExp), r); }
EMBER_VEC_INLINE F k_exp2(F x) {
  x = Simd::max(cf(-152.0f), x);
  x = Simd::min(cf(129.0f), x);
  F n = Simd::round_even(x);
  F r = x - n;
  F p = Simd::fma(r, horner(r, coef::kExp2), cf(1.0f));
  return Simd::scalef(p, n);
}
EMBER_VEC_INLINE F k_expm1(F x) {
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
EMBER_VEC_INLINE F log1p_poly(F f) {
  F f2 = f * f;
  F t = Simd::fma(f2 * f, horner(f, coef::kLog), f2 * cf(-0.5f));
  return f + t;
}
// Fix-ups for x outside (0, inf): 0 -> -inf, inf -> inf, x < 0 or NaN -> NaN.
EMBER_VEC_INLINE F log_special(F x, F res) {
  M ok = Simd::mand(Simd::gt(x, cf(0.0f)), Simd::lt(x, kInf()));
  if (!Simd::all(ok)) {
    res = Simd::sel(Simd::eq(x, cf(0.0f)), cf(-std::numeric_limits<float>::infinity()), res);
    res = Simd::sel(Simd::eq(x, kInf()), kInf(), res);
    res = Simd::sel(Simd::lt(x, cf(0.0f)), kNaN(), res);
    res = Simd::sel(Simd::isnan(x), x, res);
  }
  return res;
}
EMBER_VEC_INLINE F k_log(F x) {
  F e;
  F m = Simd::frexp(x, e);
  F r = log1p_poly(m - cf(1.0f));
  F res = Simd::fma(e, cf(kLn2Hi), Simd::fma(e, cf(kLn2Lo), r));
  return log_special(x, res);
}
EMBER_VEC_INLINE F k_log2(F x) {
  F e;
  F m = Simd::frexp(x, e);
  F r = log1p_poly(m - cf(1.0f));
  F l = Simd::fma(r, cf(kLog2e), r * cf(1.925963033500011e-08f));  // r * log2(e), hi + lo
  return log_special(x, e + l);
}
EMBER_VEC_INLINE F k_log10(F x) {
  F e;
  F m = Simd::frexp(x, e);
  F r = log1p_poly(m - cf(1.0f));
  // log10(e) = hi + lo; log10(2) = hi (16 bits: exact times e) + lo
  F l = Simd::fma(r, cf(0.4342944920063019f), r * cf(-1.0103049952192578e-08f));
  F res = Simd::fma(e, cf(0.30103302001953125f), Simd::fma(e, cf(-3.024355464731343e-06f), l));
  return log_special(x, res);
}
// log1p(x) for x > -1 (finite). Near 0 the polynomial takes x directly; elsewhere
// 1 + x is reduced and the rounding of 1 + x is added back as a correction term.
EMBER_VEC_INLINE F log1p_core(F x) {
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
EMBER_VEC_INLINE F k_log1p(F x) {
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
EMBER_VEC_INLINE F log1p_01(F e) {
  F u = e + cf(1.0f);
  M big = Simd::gt(e, cf(0.41421356f));
  F f = Simd::sel(big, Simd::fma(u, cf(0.5f), cf(-1.0f)), e);  // u/2 - 1 is exact
  F corr = Simd::sel(big, (e - (u - cf(1.0f))) * Simd::rcp(u) + cf(kLn2Lo), cf(0.0f));
  F r = log1p_poly(f) + corr;
  return Simd::sel(big, r + cf(kLn2Hi), r);
}

// ------------------------------- trig -----------------------------------------
constexpr float kTrigMax = 1048576.0f;  // beyond this: scalar double fallback
EMBER_VEC_INLINE F trig_reduce(F ax, F& r) {
  F n = Simd::round_even(ax * cf(0.636619772367581343f));
  r = Simd::fnma(n, cf(1.57079637050628662109f), ax);
  r = Simd::fnma(n, cf(-4.37113882867379e-08f), r);
  r = Simd::fnma(n, cf(-1.7151245100059164e-15f), r);
  return n;
}
EMBER_VEC_INLINE F sin_poly(F r, F r2) { return Simd::fma(r2 * r, horner(r2, coef::kSin), r); }
EMBER_VEC_INLINE F cos_poly(F r2) {
  return Simd::fma(r2 * r2, horner(r2, coef::kCos), r2 * cf(-0.5f)) + cf(1.0f);
}
template <bool kCos>
EMBER_VEC_INLINE F k_sincos(F x) {
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
EMBER_VEC_INLINE F k_tan(F x) {
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
EMBER_VEC_INLINE F asin_core(F a, M& small) {
  small = Simd::le(a, cf(0.5f));
  F z = Simd::sel(small, a * a, (cf(1.0f) - a) * cf(0.5f));
  F s = Simd::sel(small, a, Simd::sqrt(z));
  return Simd::fma(s * z, horner(z, coef::kAsin), s);
}
EMBER_VEC_INLINE F k_asin(F x) {
  F a = Simd::abs(x);
  M small;
  F p = asin_core(a, small);
  F big = Simd::fnma(cf(2.0f), p, cf(kPio2Hi)) + cf(kPio2Lo);
  F res = Simd::sel(small, p, big);
  res = Simd::sel(Simd::gt(a, cf(1.0f)), kNaN(), res);
  return xor_sign(res, sign_bits(x));
}
EMBER_VEC_INLINE F k_acos(F x) {
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
EMBER_VEC_INLINE F atan_poly(F z) {  // z in [0, 1]; exact float(pi/4) at z = 1
  F t = z * z;
  F p = Simd::fma(z * t, horner(t, coef::kAtan), z);
  return Simd::sel(Simd::eq(z, cf(1.0f)), cf(0.785398185253143310547f), p);
}
EMBER_VEC_INLINE F k_atan(F x) {
  F a = Simd::abs(x);
  M inv = Simd::gt(a, cf(1.0f));
  F z = Simd::sel(inv, cf(1.0f) / a, a);
  F p = atan_poly(z);
  p = Simd::sel(inv, cf(kPio2Hi) - (p - cf(kPio2Lo)), p);
  return xor_sign(p, sign_bits(x));
}
EMBER_VEC_INLINE F k_atan2(F y, F x) {
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
EMBER_VEC_INLINE F half_exp(F a) {
  a = Simd::min(cf(90.0f), a);
  F r;
  F n = exp_reduce(a, r);
  return Simd::scalef(exp_poly(r), n - cf(1.0f));
}
EMBER_VEC_INLINE F k_sinh(F x) {
  F a = Simd::abs(x);
  F t = a * a;
  F small = Simd::fma(a * t, horner(t, coef::kSinh), a);
  F h = half_exp(a);
  F large = h - cf(0.25f) / h;
  F res = Simd::sel(Simd::lt(a, cf(1.0f)), small, large);
  return xor_sign(res, sign_bits(x));
}
EMBER_VEC_INLINE F k_cosh(F x) {
  F h = half_exp(Simd::abs(x));
  return h + cf(0.25f) / h;
}
EMBER_VEC_INLINE F k_tanh(F x) {
  F t = Simd::min(cf(9.5f), Simd::abs(x));  // tanh rounds to 1 beyond 9.01; NaN stays NaN
  I idx = Simd::isub(Simd::isrl<21>(Simd::as_i(t + cf(1.0f))), Simd::iset(0x3f800000 >> 21));
  F d = t - Simd::lut16(idx, coef::kTanh16Mid);
  return xor_sign(horner_lut16(d, idx, coef::kTanh16), sign_bits(x));
}
EMBER_VEC_INLINE F k_asinh(F x) {
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
EMBER_VEC_INLINE F k_acosh(F x) {
  F t = x - cf(1.0f);  // exact for x in [1, 2^24)
  F res_small = log1p_core(t + Simd::sqrt(Simd::fma(t, t, t + t)));
  F res_big = k_log(x) + cf(0.693147180559945f);
  F res = Simd::sel(Simd::gt(x, cf(4096.0f)), res_big, res_small);
  res = Simd::sel(Simd::lt(x, cf(1.0f)), kNaN(), res);
  return Simd::sel(Simd::isnan(x), x, res);
}
EMBER_VEC_INLINE F k_atanh(F x) {
  F a = Simd::abs(x);
  F res = log1p_core((a + a) / (cf(1.0f) - a)) * cf(0.5f);
  res = Simd::sel(Simd::eq(a, cf(1.0f)), kInf(), res);
  res = Simd::sel(Simd::gt(a, cf(1.0f)), kNaN(), res);
  res = Simd::sel(Simd::isnan(x), x, res);
  res = Simd::sel(Simd::lt(a, cf(1e-30f)), a, res);
  return xor_sign(res, sign_bits(x));
}

// ------------------------------- erf / gelu ----------------------------------
EMBER_VEC_INLINE F k_erf(F x) {
  F t = Simd::min(cf(3.999f), Simd::abs(x));  // erf rounds to 1 beyond 3.92; NaN stays NaN
  I idx = Simd::cvtt_i(t * cf(4.0f));
  F d = t - Simd::lut16(idx, coef::kErf16Mid);
  return xor_sign(horner_lut16(d, idx, coef::kErf16), sign_bits(x));
}
// gelu(x) = x * Phi(x): with q = Phi(-|x|), gelu = x*q for x < 0 and x - x*q for x >= 0.
// |x| < 4 (nearly all activations): q from the direct table. Otherwise (vectors with any
// |x| >= 4): q = exp(-x^2/2) * R(|x|) with x^2 kept exact as hi + lo and x * q scaled
// last, so the negative tail stays accurate down to the denormals.
__attribute__((noinline)) static F gelu_erf_wide(F x) {
  F t = Simd::min(cf(14.99f), Simd::abs(x));  // NaN stays NaN
  F s_hi = t * t;
  F s_lo = Simd::fms(t, t, s_hi);
  F r;
  F n = exp_reduce(s_hi * cf(-0.5f), r);
  r = Simd::fnma(s_lo, cf(0.5f), r);
  F pm1 = expm1_poly(r);  // exp(-t^2/2) = (1 + pm1) * 2^n
  I idx = Simd::isub(Simd::isrl<21>(Simd::as_i(t + cf(1.0f))), Simd::iset(0x3f800000 >> 21));
  F d = t - Simd::lut16(idx, coef::kGeluRMid);
  F xc = Simd::max(cf(-15.0f), Simd::min(cf(15.0f), x));
  F rx = scaled_horner_lut16(d, idx, coef::kGeluR, xc);  // x * R(t)
  F v = Simd::scalef(Simd::fma(rx, pm1, rx), n);  // x * q, one rounding even when tiny
  F res = Simd::sel(Simd::lt(x, cf(0.0f)), v, x - v);
  M ninf = Simd::eq(x, cf(-std::numeric_limits<float>::infinity()));
  return Simd::sel(ninf, kNaN(), res);  // torch: -inf * 0 = NaN
}
EMBER_VEC_INLINE F k_gelu_erf(F x) {
  F t = Simd::abs(x);
  I idx = Simd::cvtt_i(t * cf(4.0f));
  F d = t - Simd::lut16(idx, coef::kGeluQMid);
  F v = scaled_horner_lut16(d, idx, coef::kGeluQ, x);  // x * Phi(-|x|)
  F res = Simd::sel(Simd::lt(x, cf(0.0f)), v, x - v);   // NaN propagates through d
  // per-lane merge keeps results independent of how the array is chunked
  M wide = Simd::ge(t, cf(4.0f));
  return Simd::any(wide) ? Simd::sel(wide, gelu_erf_wide(x), res) : res;
}
// Sigmoid-like functions: with t = |z| (clamped to 150) write e^t = (1 + pm1) * 2^n and
// d2 = (1 + pm1) + 2^-n = (1 + e^t) * 2^-n (one rounding, never overflows). Then
//   z >= 0: c * sigmoid(z) = c * e^t / (1 + e^t) = c * (1 + pm1) / d2
//   z <  0: c * sigmoid(z) = c / (1 + e^t)       = (c / d2) * 2^-n
// so every result is one or two roundings plus the error of pm1, which mostly cancels.
EMBER_VEC_INLINE F sig_parts(F t, F tlo, F& pm1, F& n) {
  t = Simd::min(cf(150.0f), t);  // NaN stays NaN
  F r;
  n = exp_reduce(t, r);
  pm1 = expm1_poly(r + tlo);
  F s = Simd::scalef(cf(1.0f), Simd::neg(n));
  F hi = cf(1.0f) + s;             // exact unless n >= 24
  F lo = s - (hi - cf(1.0f));      // what 1 + s lost
  return hi + (pm1 + lo);
}
__attribute__((noinline)) static F sigmoid_wide(F x) {
  F pm1, n;
  F d2 = sig_parts(Simd::abs(x), cf(0.0f), pm1, n);
  M pos = Simd::ge(x, cf(0.0f));
  F q = Simd::sel(pos, pm1 + cf(1.0f), cf(1.0f)) / d2;
  return Simd::sel(pos, q, Simd::scalef(q, Simd::neg(n)));
}
// c * sigmoid(z) for z with the sign of c's branch given by pos (z >= 0)
EMBER_VEC_INLINE F times_sigmoid(F c, M pos, F d2, F pm1, F n) {
  F q = Simd::sel(pos, Simd::fma(c, pm1, c), c) / d2;
  return Simd::sel(pos, q, Simd::scalef(q, Simd::neg(n)));
}
__attribute__((noinline)) static F silu_wide(F x) {
  F pm1, n;
  F d2 = sig_parts(Simd::abs(x), cf(0.0f), pm1, n);
  F xc = Simd::max(cf(-200.0f), Simd::min(cf(30.0f), x));  // results are 0 / x beyond
  F res = times_sigmoid(xc, Simd::ge(x, cf(0.0f)), d2, pm1, n);
  res = Simd::sel(Simd::gt(x, cf(30.0f)), x, res);
  M ninf = Simd::eq(x, cf(-std::numeric_limits<float>::infinity()));
  return Simd::any(ninf) ? Simd::sel(ninf, kNaN(), res) : res;  // torch: -inf * 0 = NaN
}
// |x| < 8 (nearly all inputs): q = sigmoid(-|x|) from the direct table; sigmoid = q or
// 1 - q, silu = x*q or x - x*q. Vectors with any |x| >= 8 take the exp-based forms above.
EMBER_VEC_INLINE F k_sigmoid(F x) {
  F t = Simd::abs(x);
  I idx = Simd::cvtt_i(t * cf(2.0f));
  F d = t - Simd::lut16(idx, coef::kSig16Mid);
  F q = horner_lut16(d, idx, coef::kSig16);
  F res = Simd::sel(Simd::lt(x, cf(0.0f)), q, cf(1.0f) - q);  // NaN propagates through d
  M wide = Simd::ge(t, cf(8.0f));
  return Simd::any(wide) ? Simd::sel(wide, sigmoid_wide(x), res) : res;
}
EMBER_VEC_INLINE F k_silu(F x) {
  F t = Simd::abs(x);
  I idx = Simd::cvtt_i(t * cf(2.0f));
  F d = t - Simd::lut16(idx, coef::kSig16Mid);
  F v = scaled_horner_lut16(d, idx, coef::kSig16, x);  // x * sigmoid(-|x|)
  F res = Simd::sel(Simd::le(x, cf(0.0f)), v, x - v);   // silu(-0) = -0
  M wide = Simd::ge(t, cf(8.0f));
  return Simd::any(wide) ? Simd::sel(wide, silu_wide(x), res) : res;
}
EMBER_VEC_INLINE F k_softplus(F x) {
  F e = k_exp(Simd::neg(Simd::abs(x)));
  return Simd::max(cf(0.0f), x) + log1p_01(e);
}
EMBER_VEC_INLINE F k_log_sigmoid(F x) {
  F e = k_exp(Simd::neg(Simd::abs(x)));
  return Simd::min(cf(0.0f), x) - log1p_01(e);
}
// 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3); 2u is
// formed in double so that exp(-|2u|) keeps full relative accuracy.
__attribute__((noinline)) static F gelu_tanh_wide(F x) {
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

// |x| < 4: gelu_tanh = x * G(|x|) or x - x * G(|x|) from the direct table; vectors with
// any |x| >= 4 merge in the exp-based form above for those lanes.
EMBER_VEC_INLINE F k_gelu_tanh(F x) {
  F t = Simd::abs(x);
  I idx = Simd::cvtt_i(t * cf(4.0f));
  F d = t - Simd::lut16(idx, coef::kGeluTanhQMid);
  F v = scaled_horner_lut16(d, idx, coef::kGeluTanhQ, x);  // x * sigmoid(-|w|)
  F res = Simd::sel(Simd::le(x, cf(0.0f)), v, x - v);       // gelu_tanh(-0) = -0
  M wide = Simd::ge(t, cf(4.0f));
  return Simd::any(wide) ? Simd::sel(wide, gelu_tanh_wide(x), res) : res;
}

// ------------------------------- misc unary -----------------------------------
EMBER_VEC_INLINE F k_sign(F x) {  // sign(+-0) = +0, sign(NaN) = 0 like torch
  return Simd::sel(Simd::gt(x, cf(0.0f)), cf(1.0f),
                   Simd::sel(Simd::lt(x, cf(0.0f)), cf(-1.0f), cf(0.0f)));
}

// ------------------------------- binary ---------------------------------------
EMBER_VEC_INLINE F k_maximum(F a, F b) {  // like torch: NaN propagates, ties return b
  return Simd::sel(Simd::unord(a, b), a + b, Simd::max(a, b));
}
EMBER_VEC_INLINE F k_minimum(F a, F b) {
  return Simd::sel(Simd::unord(a, b), a + b, Simd::min(a, b));
}
// C fmod, exact: the quotient is formed in double while |a/b| < 2^24 (then a - q*b is
// exact in one fma); larger quotients go to scalar fmodf.
EMBER_VEC_INLINE D fmod_d(D a, D b) {
  D q = Simd::dtrunc(a / b);
  D r = Simd::dfma(-q, b, a);
  // q may be rounded one past the true quotient: then r has the wrong sign
  D fix = Simd::dsel(Simd::dlt(r * a, Simd::dset(0.0)), Simd::dcopysign(b, a), Simd::dset(0.0));
  return r + fix;
}
EMBER_VEC_INLINE F k_fmod(F a, F b) {
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
EMBER_VEC_INLINE F k_remainder(F a, F b) {  // torch: m = fmod(a, b); m += b if signs differ
  F m = k_fmod(a, b);
  M fix = Simd::mand(Simd::neq(m, cf(0.0f)),
                     Simd::mxor(Simd::lt(b, cf(0.0f)), Simd::lt(m, cf(0.0f))));
  return Simd::sel(fix, m + b, m);
}
EMBER_VEC_INLINE F k_hypot(F a, F b) {
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
EMBER_VEC_INLINE D dhorner(D t, const double (&c)[N]) {
  D r = Simd::dset(c[N - 1]);
  for (int i = N - 2; i >= 0; --i) r = Simd::dfma(r, t, Simd::dset(c[i]));
  return r;
}
// b * log2(a) for a > 0 finite (float inputs widened to double)
EMBER_VEC_INLINE D pow_core_d(D a, D b) {
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
EMBER_VEC_INLINE F k_pow(F a, F b) {
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
EMBER_VEC_INLINE bool use_stream(const void* y, int64_t n, int elem) {
  return n >= detail::kStreamMinElems &&
         (reinterpret_cast<uintptr_t>(y) & static_cast<uintptr_t>(elem - 1)) == 0;
}
EMBER_VEC_INLINE int64_t align_head(const void* y, int elem) {
  const uintptr_t mis = reinterpret_cast<uintptr_t>(y) & (Simd::kAlign - 1);
  return mis ? static_cast<int64_t>((Simd::kAlign - mis) / elem) : 0;
}
// kStream: the op is memory-bound, so large outputs use non-temporal stores.
template <bool kStream = false, class K>
EMBER_VEC_INLINE void map1(const float* x, float* y, int64_t n, K k) {
  int64_t i = 0;
  if (kStream && use_stream(y, n, 4)) {
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
template <bool kStream = false, class K>
EMBER_VEC_INLINE void map2(const float* a, const float* b, float* y, int64_t n, K k) {
  int64_t i = 0;
  if (kStream && use_stream(y, n, 4)) {
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
template <class K>  // f64 users are all memory-bound
EMBER_VEC_INLINE void mapd1(const double* x, double* y, int64_t n, K k) {
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
EMBER_VEC_INLINE void mapd2(const double* a, const double* b, double* y, int64_t n, K k) {
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
#define EMBER_VEC_U(NAME, EXPR)                                                 \
  case Unary::NAME:                                                             \
    map1(x, y, n, [](F v) __attribute__((always_inline)) { return EXPR; });     \
    return;
#define EMBER_VEC_US(NAME, EXPR) /* memory-bound: may stream */                 \
  case Unary::NAME:                                                             \
    map1<true>(x, y, n, [](F v) __attribute__((always_inline)) { return EXPR; }); \
    return;
    EMBER_VEC_U(exp, k_exp(v))
    EMBER_VEC_U(exp2, k_exp2(v))
    EMBER_VEC_U(expm1, k_expm1(v))
    EMBER_VEC_U(log, k_log(v))
    EMBER_VEC_U(log2, k_log2(v))
    EMBER_VEC_U(log10, k_log10(v))
    EMBER_VEC_U(log1p, k_log1p(v))
    EMBER_VEC_US(sqrt, Simd::sqrt(v))
    EMBER_VEC_US(rsqrt, cf(1.0f) / Simd::sqrt(v))
    EMBER_VEC_US(reciprocal, cf(1.0f) / v)
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
    EMBER_VEC_US(relu, Simd::max(cf(0.0f), v))  // relu(NaN) = NaN, relu(-0) = -0
    EMBER_VEC_U(gelu_erf, k_gelu_erf(v))
    EMBER_VEC_U(gelu_tanh, k_gelu_tanh(v))
    EMBER_VEC_U(silu, k_silu(v))
    EMBER_VEC_U(softplus, k_softplus(v))
    EMBER_VEC_US(abs, Simd::abs(v))
    EMBER_VEC_US(neg, Simd::neg(v))
    EMBER_VEC_US(square, v * v)
    EMBER_VEC_US(floor, Simd::floor(v))
    EMBER_VEC_US(ceil, Simd::ceil(v))
    EMBER_VEC_US(round, Simd::round_even(v))
    EMBER_VEC_US(trunc, Simd::trunc(v))
    EMBER_VEC_US(sign, k_sign(v))
#undef EMBER_VEC_U
#undef EMBER_VEC_US
  }
}

// op(a, b) on vectors
template <Binary kOp>
EMBER_VEC_INLINE F binop(F a, F b) {
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
constexpr bool kCheapBinary = kOp == Binary::add || kOp == Binary::sub || kOp == Binary::mul ||
                              kOp == Binary::div || kOp == Binary::maximum || kOp == Binary::minimum;
template <Binary kOp>
static void binary_f32_op(const float* a, const float* b, float* y, int64_t n) {
  map2<kCheapBinary<kOp>>(a, b, y, n,
                          [](F u, F v) __attribute__((always_inline)) { return binop<kOp>(u, v); });
}
template <Binary kOp>
static void binary_scalar_f32_op(const float* a, float b, float* y, int64_t n) {
  const F bv = cf(b);
  map1<kCheapBinary<kOp>>(a, y, n,
                          [bv](F u) __attribute__((always_inline)) { return binop<kOp>(u, bv); });
}
template <Binary kOp>
static void scalar_binary_f32_op(float a, const float* b, float* y, int64_t n) {
  const F av = cf(a);
  map1<kCheapBinary<kOp>>(b, y, n,
                          [av](F v) __attribute__((always_inline)) { return binop<kOp>(av, v); });
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
    if (b == 2.0f) return map1<true>(a, y, n, [](F v) { return v * v; });
    if (b == 3.0f) return map1<true>(a, y, n, [](F v) { return v * v * v; });
    if (b == 0.5f) return map1<true>(a, y, n, [](F v) { return Simd::sqrt(v); });
    if (b == -0.5f) return map1<true>(a, y, n, [](F v) { return cf(1.0f) / Simd::sqrt(v); });
    if (b == -1.0f) return map1<true>(a, y, n, [](F v) { return cf(1.0f) / v; });
    if (b == -2.0f) return map1<true>(a, y, n, [](F v) { return cf(1.0f) / (v * v); });
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
EMBER_VEC_INLINE D dsign(D x) {
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
EMBER_VEC_INLINE D dmaximum(D a, D b) {
  return Simd::dsel(Simd::dunord(a, b), a + b, Simd::dmax(a, b));
}
EMBER_VEC_INLINE D dminimum(D a, D b) {
  return Simd::dsel(Simd::dunord(a, b), a + b, Simd::dmin(a, b));
}
template <class K>
EMBER_VEC_INLINE bool binary_f64_vec(Binary fn, K run) {
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
EMBER_VEC_INLINE void neumaier(D& s, D& c, D x) {
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
// NaN-sticky chains: acc = isnan(v) ? v : max(v, acc), and max(v, NaN) keeps the NaN
// (x86 max returns its second operand). Few chains on purpose: on the development box
// (Zen 4) a loop issuing loads faster than this streamed DRAM measurably slower.
template <bool kMax>
static float minmax_f32_impl(const float* x, int64_t n) {
  const float init = kMax ? -std::numeric_limits<float>::infinity()
                          : std::numeric_limits<float>::infinity();
  auto step = [](F acc, F v) __attribute__((always_inline)) {
    return Simd::sel(Simd::isnan(v), v, kMax ? Simd::max(v, acc) : Simd::min(v, acc));
  };
  F m0 = cf(init), m1 = m0;
  int64_t i = 0;
  if (n >= (int64_t{1} << 18)) {  // beyond L2: one chain streams DRAM best (see above)
    for (; i + 2 * W <= n; i += 2 * W) {
      m0 = step(m0, Simd::loadu(x + i));
      m0 = step(m0, Simd::loadu(x + i + W));
    }
  }
  for (; i + 2 * W <= n; i += 2 * W) {
    m0 = step(m0, Simd::loadu(x + i));
    m1 = step(m1, Simd::loadu(x + i + W));
  }
  if (i + W <= n) {
    m0 = step(m0, Simd::loadu(x + i));
    i += W;
  }
  if (i < n) m1 = step(m1, Simd::load_n(x + i, int(n - i), cf(init)));
  if (Simd::any(Simd::unord(m0, m1))) return std::numeric_limits<float>::quiet_NaN();
  F m = step(m0, m1);
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
    Simd::store_n(y + i, e, r);
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
EMBER_VEC_INLINE I to_bf16_bits(F v) {
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
#undef EMBER_VEC_INLINE
}  // namespace ember::cpu::vec::EMBER_VEC_MATH_KERNEL_NS
#endif  // EMBER_VEC_MATH_KERNEL_NS
