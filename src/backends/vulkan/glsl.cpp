#include "glsl.hpp"

#include <algorithm>

#include "ember/core/error.hpp"

namespace ember::vulkan::glsl {

namespace {

// The KernelParams block (vulkan_backend.hpp: the same std430 layout) and the index function.
const char* kParams = R"GLSL(
struct Params {
  uint n; int rank; uint contig; uint flag;
  float fa; float fb; ivec2 ia; ivec2 ib; uvec2 da; uvec2 db; int pad0; int pad1;
  int off[4]; int size[8]; int st[32];
};
layout(std430, binding = 6) readonly buffer ParamsBuf { Params p; };

// The element of operand k (0 = the output) at linear index i of the iteration space.
int ember_index(uint i, int k) {
  if ((p.contig & (1u << uint(k))) != 0u) return p.off[k] + int(i);
  int r = int(i), o = p.off[k];
  for (int d = p.rank - 1; d >= 0; --d) {
    int s = p.size[d];
    int q = r / s;
    o += (r - q * s) * p.st[k * 8 + d];
    r = q;
  }
  return o;
}
)GLSL";

// Float helpers. NaN and inf are tested on the bits (a compiler may fold x != x), and the
// transcendentals are ember's own (range reduction and polynomials, a few ulp): the GLSL
// built-ins only promise 3 ulp or 2^-21 absolute and are looser on some drivers.
const char* kFloatMath = R"GLSL(
const float EMBER_LN2_HI = 0.693145751953125;
const float EMBER_LN2_LO = 1.428606765330187e-06;
const float EMBER_PI = 3.14159265358979323846;
float ember_nan() { return uintBitsToFloat(0x7fc00000u); }
float ember_inf() { return uintBitsToFloat(0x7f800000u); }
bool ember_isnan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
bool ember_isinf(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0x7f800000u; }
bool ember_signbit(float x) { return (floatBitsToUint(x) & 0x80000000u) != 0u; }
float ember_copysign(float a, float s) { return uintBitsToFloat((floatBitsToUint(a) & 0x7fffffffu) | (floatBitsToUint(s) & 0x80000000u)); }
// exp(r) - 1 for |r| <= 0.35 (Taylor to r^8: below 1e-9 relative)
float ember_expm1_small(float r) {
  return r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0 + r * (1.0 / 40320.0))))))));
}
float ember_scale2(float v, float k) {  // v * 2^k for integral k, without overflowing the scale
  int ki = int(k);
  if (ki > 127) return ldexp(ldexp(v, 127), ki - 127);
  if (ki < -126) return ldexp(ldexp(v, -126), ki + 126);
  return ldexp(v, ki);
}
float ember_exp(float x) {
  if (ember_isnan(x)) return x;
  if (x > 88.72284) return ember_inf();
  if (x < -103.972084) return 0.0;
  float k = roundEven(x * 1.44269504088896341);
  float r = (x - k * EMBER_LN2_HI) - k * EMBER_LN2_LO;
  return ember_scale2(1.0 + ember_expm1_small(r), k);
}
float ember_exp2(float x) {
  if (ember_isnan(x)) return x;
  if (x >= 128.0) return ember_inf();
  if (x < -150.0) return 0.0;
  float k = roundEven(x);
  return ember_scale2(1.0 + ember_expm1_small((x - k) * 0.693147180559945309), k);
}
float ember_expm1(float x) {
  if (abs(x) <= 0.35) return ember_expm1_small(x);
  return ember_exp(x) - 1.0;
}
// log(m) for m in [sqrt(1/2), sqrt(2)): 2 atanh(s), s = (m - 1) / (m + 1)
float ember_log_reduced(float m) {
  float f = m - 1.0;
  float s = f / (2.0 + f);
  float s2 = s * s;
  return 2.0 * s * (1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0 + s2 * (1.0 / 11.0))))));
}
// x = m 2^e with m in [sqrt(1/2), sqrt(2)) (x finite and > 0)
float ember_split(float x, out float e) {
  int ei;
  float m = frexp(x, ei);
  if (m < 0.70710678118654752) { m *= 2.0; ei -= 1; }
  e = float(ei);
  return m;
}
float ember_log(float x) {
  if (ember_isnan(x) || x == ember_inf()) return x;
  if (x == 0.0) return -ember_inf();
  if (x < 0.0) return ember_nan();
  float e;
  float m = ember_split(x, e);
  return e * EMBER_LN2_HI + (ember_log_reduced(m) + e * EMBER_LN2_LO);
}
float ember_log2(float x) {
  if (ember_isnan(x) || x == ember_inf()) return x;
  if (x == 0.0) return -ember_inf();
  if (x < 0.0) return ember_nan();
  float e;
  float m = ember_split(x, e);
  return e + ember_log_reduced(m) * 1.44269504088896341;
}
float ember_log1p(float x) {
  if (ember_isnan(x) || x == ember_inf()) return x;
  if (x == -1.0) return -ember_inf();
  if (x < -1.0) return ember_nan();
  float u = 1.0 + x;
  if (u == 1.0) return x;
  return ember_log(u) * (x / (u - 1.0));  // corrects the rounding of 1 + x
}
float ember_sigmoid(float x) {
  float e = ember_exp(-abs(x));
  return (x >= 0.0 ? 1.0 : e) / (1.0 + e);
}
// erfc(|z|) from the Chebyshev fit of Numerical Recipes (erfcc: relative error below 1.2e-7)
float ember_erfc_pos(float a) {
  float t = 1.0 / (1.0 + 0.5 * a);
  float q = 0.17087277;
  q = q * t - 0.82215223; q = q * t + 1.48851587; q = q * t - 1.13520398; q = q * t + 0.27886807;
  q = q * t - 0.18628806; q = q * t + 0.09678418; q = q * t + 0.37409196; q = q * t + 1.00002368;
  q = q * t - 1.26551223;
  return t * ember_exp(-a * a + q);
}
float ember_erf(float x) {
  if (ember_isnan(x)) return x;
  float a = abs(x);
  float r;
  if (a < 0.5) {  // Taylor: erf(x) = 2/sqrt(pi) (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320)
    float a2 = a * a;
    r = 1.12837916709551257 * a * (1.0 - a2 * (1.0 / 3.0 - a2 * (0.1 - a2 * (1.0 / 42.0 - a2 * (1.0 / 216.0 - a2 / 1320.0)))));
  } else {
    r = 1.0 - ember_erfc_pos(a);
  }
  return x < 0.0 ? -r : r;
}
float ember_erfc(float z) {  // erfc(z), both tails accurate
  if (ember_isnan(z)) return z;
  if (abs(z) < 0.5) return 1.0 - ember_erf(z);
  float r = ember_erfc_pos(abs(z));
  return z >= 0.0 ? r : 2.0 - r;
}
// sin (cos: want_cos) with Cody-Waite reduction by pi/2 in three parts (k * part exact for
// |x| below about 6000; accurate to a few ulp up to about 1e5) and Taylor polynomials on
// [-pi/4, pi/4]
float ember_sincos(float x, bool want_cos) {
  if (ember_isnan(x) || ember_isinf(x)) return ember_nan();
  float k = roundEven(x * 0.636619772367581343);
  float r = ((x - k * 1.5703125) - k * 0.0004838705062866211) - k * -4.371138828673793e-08;
  float r2 = r * r;
  float s = r + r * r2 * (-1.0 / 6.0 + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0 + r2 * (1.0 / 362880.0 - r2 / 39916800.0))));
  float c = 1.0 - 0.5 * r2 + r2 * r2 * (1.0 / 24.0 + r2 * (-1.0 / 720.0 + r2 * (1.0 / 40320.0 + r2 * (-1.0 / 3628800.0 + r2 / 479001600.0))));
  int q = (int(k) + (want_cos ? 1 : 0)) & 3;
  return q == 0 ? s : (q == 1 ? c : (q == 2 ? -s : -c));
}
float ember_sinh(float x) {
  float a = abs(x), r;
  if (a < 1.0) { float e = ember_expm1(a); r = 0.5 * (e + e / (e + 1.0)); }
  else if (a < 20.0) { float e = ember_exp(a); r = 0.5 * (e - 1.0 / e); }
  else r = ember_exp(a - 0.693147180559945309);
  return x < 0.0 ? -r : (ember_isnan(x) ? x : r);
}
float ember_cosh(float x) {
  float a = abs(x);
  if (ember_isnan(x)) return x;
  if (a < 20.0) { float e = ember_exp(a); return 0.5 * (e + 1.0 / e); }
  return ember_exp(a - 0.693147180559945309);
}
float ember_tanh(float x) {
  if (ember_isnan(x)) return x;
  float a = abs(x), r;
  if (a > 9.5) r = 1.0;
  else { float e = ember_expm1(2.0 * a); r = e / (e + 2.0); }
  return ember_copysign(r, x);
}
float ember_asinh(float x) {
  if (ember_isnan(x) || ember_isinf(x)) return x;
  float a = abs(x), r;
  if (a > 1e18) r = ember_log(a) + 0.693147180559945309;
  else r = ember_log1p(a + a * a / (1.0 + sqrt(1.0 + a * a)));
  return ember_copysign(r, x);
}
float ember_acosh(float x) {
  if (ember_isnan(x)) return x;
  if (x < 1.0) return ember_nan();
  if (x > 1e18) return ember_log(x) + 0.693147180559945309;
  float t = x - 1.0;
  return ember_log1p(t + sqrt(2.0 * t + t * t));
}
float ember_atanh(float x) {
  if (ember_isnan(x)) return x;
  float a = abs(x);
  if (a > 1.0) return ember_nan();
  if (a == 1.0) return ember_copysign(ember_inf(), x);
  return ember_copysign(0.5 * ember_log1p(2.0 * a / (1.0 - a)), x);
}
// atan(t) for 0 <= t <= tan(pi/8) (odd Taylor series to t^21: below 1e-9)
float ember_atan_reduced(float t) {
  float t2 = t * t;
  float q = 1.0 / 21.0;
  q = 1.0 / 19.0 - t2 * q; q = 1.0 / 17.0 - t2 * q; q = 1.0 / 15.0 - t2 * q; q = 1.0 / 13.0 - t2 * q;
  q = 1.0 / 11.0 - t2 * q; q = 1.0 / 9.0 - t2 * q; q = 1.0 / 7.0 - t2 * q; q = 1.0 / 5.0 - t2 * q;
  q = 1.0 / 3.0 - t2 * q;
  return t - t * t2 * q;
}
float ember_atan(float x) {
  if (ember_isnan(x)) return x;
  float a = abs(x), r;
  bool inv = a > 1.0;
  float t = inv ? 1.0 / a : a;
  if (t > 0.41421356237309505) r = 0.785398163397448310 + ember_atan_reduced((t - 1.0) / (t + 1.0));
  else r = ember_atan_reduced(t);
  if (inv) r = 1.57079632679489662 - r;
  return ember_copysign(r, x);
}
float ember_atan2(float y, float x) {
  if (ember_isnan(x) || ember_isnan(y)) return ember_nan();
  if (ember_isinf(x) && ember_isinf(y))
    return ember_copysign(x > 0.0 ? 0.785398163397448310 : 2.35619449019234492, y);
  if (y == 0.0) return ember_signbit(x) ? ember_copysign(EMBER_PI, y) : y;
  if (x == 0.0 || ember_isinf(y)) return ember_copysign(1.57079632679489662, y);
  if (ember_isinf(x)) return x > 0.0 ? ember_copysign(0.0, y) : ember_copysign(EMBER_PI, y);
  float r = ember_atan(abs(y) / abs(x));
  return ember_copysign(x > 0.0 ? r : EMBER_PI - r, y);
}
float ember_asin(float x) {
  if (abs(x) > 1.0) return ember_nan();
  return ember_atan2(x, sqrt((1.0 - x) * (1.0 + x)));
}
float ember_acos(float x) {
  if (abs(x) > 1.0) return ember_nan();
  return ember_atan2(sqrt((1.0 - x) * (1.0 + x)), x);
}
float ember_pow(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (ember_isnan(x) || ember_isnan(y)) return ember_nan();
  bool yint = trunc(y) == y;
  bool yodd = yint && abs(y) < 16777216.0 && mod(y, 2.0) == 1.0;
  float a = abs(x);
  if (x < 0.0 && !yint && !ember_isinf(x)) return ember_nan();
  float r;
  if (a == 0.0) r = y > 0.0 ? 0.0 : ember_inf();
  else if (ember_isinf(a)) r = y > 0.0 ? ember_inf() : 0.0;
  else if (ember_isinf(y)) r = (a == 1.0) ? 1.0 : ((a > 1.0) == (y > 0.0) ? ember_inf() : 0.0);
  else {
    float e;
    float m = ember_split(a, e);
    float l = ember_log_reduced(m) * 1.44269504088896341;  // log2(a) = e + l
    float t = y * e;
    float terr = fma(y, e, -t);  // y e = t + terr exactly
    if (t + y * l > 300.0) r = ember_inf();
    else if (t + y * l < -300.0) r = 0.0;
    else {
      float k = roundEven(t);
      float f = (t - k) + (terr + y * l);
      float k2 = roundEven(f);
      r = ember_scale2(1.0 + ember_expm1_small((f - k2) * 0.693147180559945309), k + k2);
    }
  }
  return (x < 0.0 || (x == 0.0 && ember_signbit(x))) && yodd ? -r : r;
}
float ember_fmod(float x, float y) {  // exact, through double where the device has it
  if (ember_isnan(x) || ember_isnan(y) || ember_isinf(x) || y == 0.0) return ember_nan();
  if (ember_isinf(y)) return x;
  float ay = abs(y), r = abs(x);
  // subtract ay 2^k for the largest k that fits, down to ay: each step is exact (Sterbenz)
  while (r >= ay) {
    int ey, er;
    frexp(r, er);
    frexp(ay, ey);
    float s = ldexp(ay, er - ey);
    if (s > r) s = ldexp(ay, er - ey - 1);
    r -= s;
  }
  return ember_copysign(r, x);
}
float ember_hypot(float x, float y) {
  float a = abs(x), b = abs(y);
  if (ember_isinf(a) || ember_isinf(b)) return ember_inf();
  if (ember_isnan(a) || ember_isnan(b)) return ember_nan();
  float m = max(a, b), n = min(a, b);
  if (m == 0.0) return 0.0;
  float q = n / m;
  return m * sqrt(1.0 + q * q);
}
)GLSL";

// The same functions in double, with longer series and fdlibm's split constants (a few ulp
// of double: well within the f64 cases' 1e-10).
const char* kDoubleMath = R"GLSL(
double ember_nan_d() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
double ember_inf_d() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }
bool ember_isnan(double x) { uvec2 b = unpackDouble2x32(x); uint h = b.y & 0x7fffffffu; return h > 0x7ff00000u || (h == 0x7ff00000u && b.x != 0u); }
bool ember_isinf(double x) { uvec2 b = unpackDouble2x32(x); return (b.y & 0x7fffffffu) == 0x7ff00000u && b.x == 0u; }
bool ember_signbit(double x) { return (unpackDouble2x32(x).y & 0x80000000u) != 0u; }
double ember_copysign(double a, double s) {
  uvec2 b = unpackDouble2x32(a);
  b.y = (b.y & 0x7fffffffu) | (unpackDouble2x32(s).y & 0x80000000u);
  return packDouble2x32(b);
}
const double EMBER_LN2_HI_D = 6.93147180369123816490e-01LF;
const double EMBER_LN2_LO_D = 1.90821492927058770002e-10LF;
const double EMBER_PI_D = 3.14159265358979311600e+00LF;
const double EMBER_PI_LO_D = 1.22464679914735317720e-16LF;
double ember_expm1_small(double r) {  // |r| <= 0.35: Taylor to r^15
  double q = 1.0LF / 1307674368000.0LF;
  q = 1.0LF / 87178291200.0LF + r * q; q = 1.0LF / 6227020800.0LF + r * q; q = 1.0LF / 479001600.0LF + r * q;
  q = 1.0LF / 39916800.0LF + r * q; q = 1.0LF / 3628800.0LF + r * q; q = 1.0LF / 362880.0LF + r * q;
  q = 1.0LF / 40320.0LF + r * q; q = 1.0LF / 5040.0LF + r * q; q = 1.0LF / 720.0LF + r * q; q = 1.0LF / 120.0LF + r * q;
  q = 1.0LF / 24.0LF + r * q; q = 1.0LF / 6.0LF + r * q; q = 0.5LF + r * q;
  return r + r * r * q;
}
double ember_scale2(double v, double k) {
  int ki = int(k);
  if (ki > 1000) return ldexp(ldexp(v, 1000), ki - 1000);
  if (ki < -1000) return ldexp(ldexp(v, -1000), ki + 1000);
  return ldexp(v, ki);
}
double ember_exp(double x) {
  if (ember_isnan(x)) return x;
  if (x > 709.782712893384LF) return ember_inf_d();
  if (x < -745.2LF) return 0.0LF;
  double k = roundEven(x * 1.44269504088896338700LF);
  double r = (x - k * EMBER_LN2_HI_D) - k * EMBER_LN2_LO_D;
  return ember_scale2(1.0LF + ember_expm1_small(r), k);
}
double ember_exp2(double x) {
  if (ember_isnan(x)) return x;
  if (x >= 1024.0LF) return ember_inf_d();
  if (x < -1080.0LF) return 0.0LF;
  double k = roundEven(x);
  double f = x - k;  // exact
  double r = f * EMBER_LN2_HI_D + f * EMBER_LN2_LO_D;
  return ember_scale2(1.0LF + ember_expm1_small(r), k);
}
double ember_expm1(double x) {
  if (abs(x) <= 0.35LF) return ember_expm1_small(x);
  if (x > 709.8LF) return ember_inf_d();
  if (x < -40.0LF) return -1.0LF;
  double k = roundEven(x * 1.44269504088896338700LF);
  double r = (x - k * EMBER_LN2_HI_D) - k * EMBER_LN2_LO_D;
  double e = ember_expm1_small(r);  // exp(x) - 1 = 2^k (e + 1) - 1
  return ember_scale2(e + 1.0LF, k) - 1.0LF;
}
double ember_log_reduced(double m) {  // 2 atanh((m - 1) / (m + 1)) to s^25
  double f = m - 1.0LF;
  double s = f / (2.0LF + f);
  double s2 = s * s;
  double q = 1.0LF / 25.0LF;
  q = 1.0LF / 23.0LF + s2 * q; q = 1.0LF / 21.0LF + s2 * q; q = 1.0LF / 19.0LF + s2 * q; q = 1.0LF / 17.0LF + s2 * q;
  q = 1.0LF / 15.0LF + s2 * q; q = 1.0LF / 13.0LF + s2 * q; q = 1.0LF / 11.0LF + s2 * q; q = 1.0LF / 9.0LF + s2 * q;
  q = 1.0LF / 7.0LF + s2 * q; q = 1.0LF / 5.0LF + s2 * q; q = 1.0LF / 3.0LF + s2 * q;
  return 2.0LF * s + 2.0LF * s * s2 * q;
}
double ember_split(double x, out double e) {
  int ei;
  double m = frexp(x, ei);
  if (m < 0.70710678118654752440LF) { m *= 2.0LF; ei -= 1; }
  e = double(ei);
  return m;
}
double ember_log(double x) {
  if (ember_isnan(x) || x == ember_inf_d()) return x;
  if (x == 0.0LF) return -ember_inf_d();
  if (x < 0.0LF) return ember_nan_d();
  double e;
  double m = ember_split(x, e);
  return e * EMBER_LN2_HI_D + (ember_log_reduced(m) + e * EMBER_LN2_LO_D);
}
double ember_log2(double x) {
  if (ember_isnan(x) || x == ember_inf_d()) return x;
  if (x == 0.0LF) return -ember_inf_d();
  if (x < 0.0LF) return ember_nan_d();
  double e;
  double m = ember_split(x, e);
  return e + ember_log_reduced(m) * 1.44269504088896338700LF;
}
double ember_log1p(double x) {
  if (ember_isnan(x) || x == ember_inf_d()) return x;
  if (x == -1.0LF) return -ember_inf_d();
  if (x < -1.0LF) return ember_nan_d();
  double u = 1.0LF + x;
  if (u == 1.0LF) return x;
  return ember_log(u) * (x / (u - 1.0LF));
}
double ember_sigmoid(double x) {
  double e = ember_exp(-abs(x));
  return (x >= 0.0LF ? 1.0LF : e) / (1.0LF + e);
}
double ember_erf_series(double a) {  // 2/sqrt(pi) sum (-1)^n a^(2n+1) / (n! (2n+1)), a < 2.5
  double a2 = a * a, term = a, sum = a;
  for (int n = 1; n < 80; ++n) {
    term *= -a2 / double(n);
    double c = term / double(2 * n + 1);
    sum += c;
    if (abs(c) < 1e-18LF * abs(sum)) break;
  }
  return 1.12837916709551257390LF * sum;
}
double ember_erfc_cf(double a) {  // a >= 2.5: exp(-a^2) / sqrt(pi) / (a + (1/2) / (a + 1 / (a + (3/2) / (a + ...))))
  double f = a;
  for (int n = 90; n >= 1; --n) f = a + (double(n) * 0.5LF) / f;
  return ember_exp(-a * a) * 0.56418958354775628695LF / f;
}
double ember_erf(double x) {
  if (ember_isnan(x)) return x;
  double a = abs(x);
  double r = a < 2.5LF ? ember_erf_series(a) : 1.0LF - ember_erfc_cf(a);
  return x < 0.0LF ? -r : r;
}
double ember_erfc(double z) {
  if (ember_isnan(z)) return z;
  double a = abs(z);
  double r = a < 2.5LF ? 1.0LF - ember_erf_series(a) : ember_erfc_cf(a);
  if (a < 2.5LF) return z >= 0.0LF ? r : 2.0LF - r;
  return z >= 0.0LF ? r : 2.0LF - r;
}
double ember_sincos(double x, bool want_cos) {
  if (ember_isnan(x) || ember_isinf(x)) return ember_nan_d();
  double k = roundEven(x * 6.36619772367581382433e-01LF);
  double r = ((x - k * 1.57079632673412561417e+00LF) - k * 6.07710050630396597660e-11LF) - k * 2.02226624871116645580e-21LF;
  double r2 = r * r;
  double qs = -1.0LF / 1307674368000.0LF;
  qs = 1.0LF / 6227020800.0LF + r2 * qs; qs = -1.0LF / 39916800.0LF + r2 * qs; qs = 1.0LF / 362880.0LF + r2 * qs;
  qs = -1.0LF / 5040.0LF + r2 * qs; qs = 1.0LF / 120.0LF + r2 * qs; qs = -1.0LF / 6.0LF + r2 * qs;
  double s = r + r * r2 * qs;
  double qc = 1.0LF / 20922789888000.0LF;
  qc = -1.0LF / 87178291200.0LF + r2 * qc; qc = 1.0LF / 479001600.0LF + r2 * qc; qc = -1.0LF / 3628800.0LF + r2 * qc;
  qc = 1.0LF / 40320.0LF + r2 * qc; qc = -1.0LF / 720.0LF + r2 * qc; qc = 1.0LF / 24.0LF + r2 * qc;
  double c = 1.0LF - 0.5LF * r2 + r2 * r2 * qc;
  int q = (int(k) + (want_cos ? 1 : 0)) & 3;
  return q == 0 ? s : (q == 1 ? c : (q == 2 ? -s : -c));
}
double ember_sinh(double x) {
  double a = abs(x), r;
  if (ember_isnan(x)) return x;
  if (a < 1.0LF) { double e = ember_expm1(a); r = 0.5LF * (e + e / (e + 1.0LF)); }
  else if (a < 22.0LF) { double e = ember_exp(a); r = 0.5LF * (e - 1.0LF / e); }
  else r = ember_exp(a - 0.69314718055994530942LF);
  return x < 0.0LF ? -r : r;
}
double ember_cosh(double x) {
  double a = abs(x);
  if (ember_isnan(x)) return x;
  if (a < 22.0LF) { double e = ember_exp(a); return 0.5LF * (e + 1.0LF / e); }
  return ember_exp(a - 0.69314718055994530942LF);
}
double ember_tanh(double x) {
  if (ember_isnan(x)) return x;
  double a = abs(x), r;
  if (a > 22.0LF) r = 1.0LF;
  else { double e = ember_expm1(2.0LF * a); r = e / (e + 2.0LF); }
  return ember_copysign(r, x);
}
double ember_asinh(double x) {
  if (ember_isnan(x) || ember_isinf(x)) return x;
  double a = abs(x), r;
  if (a > 1e150LF) r = ember_log(a) + 0.69314718055994530942LF;
  else r = ember_log1p(a + a * a / (1.0LF + sqrt(1.0LF + a * a)));
  return ember_copysign(r, x);
}
double ember_acosh(double x) {
  if (ember_isnan(x)) return x;
  if (x < 1.0LF) return ember_nan_d();
  if (x > 1e150LF) return ember_log(x) + 0.69314718055994530942LF;
  double t = x - 1.0LF;
  return ember_log1p(t + sqrt(2.0LF * t + t * t));
}
double ember_atanh(double x) {
  if (ember_isnan(x)) return x;
  double a = abs(x);
  if (a > 1.0LF) return ember_nan_d();
  if (a == 1.0LF) return ember_copysign(ember_inf_d(), x);
  return ember_copysign(0.5LF * ember_log1p(2.0LF * a / (1.0LF - a)), x);
}
double ember_atan_reduced(double t) {  // |t| <= tan(pi/8): the odd series to t^49
  double t2 = t * t, q = 1.0LF / 49.0LF;
  for (int n = 23; n >= 1; --n) q = 1.0LF / double(2 * n + 1) - t2 * q;
  return t - t * t2 * q;
}
double ember_atan(double x) {
  if (ember_isnan(x)) return x;
  double a = abs(x), r;
  bool inv = a > 1.0LF;
  double t = inv ? 1.0LF / a : a;
  if (t > 0.41421356237309504880LF) r = 7.85398163397448278999e-01LF + ember_atan_reduced((t - 1.0LF) / (t + 1.0LF));
  else r = ember_atan_reduced(t);
  if (inv) r = (1.57079632679489655800LF - r) + 6.12323399573676588613e-17LF;
  return ember_copysign(r, x);
}
double ember_atan2(double y, double x) {
  if (ember_isnan(x) || ember_isnan(y)) return ember_nan_d();
  if (ember_isinf(x) && ember_isinf(y))
    return ember_copysign(x > 0.0LF ? 7.85398163397448278999e-01LF : 2.35619449019234483700LF, y);
  if (y == 0.0LF) return ember_signbit(x) ? ember_copysign(EMBER_PI_D, y) : y;
  if (x == 0.0LF || ember_isinf(y)) return ember_copysign(1.57079632679489655800LF, y);
  if (ember_isinf(x)) return x > 0.0LF ? ember_copysign(0.0LF, y) : ember_copysign(EMBER_PI_D, y);
  double r = ember_atan(abs(y) / abs(x));
  return ember_copysign(x > 0.0LF ? r : (EMBER_PI_D - r) + EMBER_PI_LO_D, y);
}
double ember_asin(double x) {
  if (abs(x) > 1.0LF) return ember_nan_d();
  return ember_atan2(x, sqrt((1.0LF - x) * (1.0LF + x)));
}
double ember_acos(double x) {
  if (abs(x) > 1.0LF) return ember_nan_d();
  return ember_atan2(sqrt((1.0LF - x) * (1.0LF + x)), x);
}
double ember_pow(double x, double y) {
  if (y == 0.0LF || x == 1.0LF) return 1.0LF;
  if (ember_isnan(x) || ember_isnan(y)) return ember_nan_d();
  bool yint = trunc(y) == y;
  bool yodd = yint && abs(y) < 9007199254740992.0LF && mod(y, 2.0LF) == 1.0LF;
  double a = abs(x);
  if (x < 0.0LF && !yint && !ember_isinf(x)) return ember_nan_d();
  double r;
  if (a == 0.0LF) r = y > 0.0LF ? 0.0LF : ember_inf_d();
  else if (ember_isinf(a)) r = y > 0.0LF ? ember_inf_d() : 0.0LF;
  else if (ember_isinf(y)) r = (a == 1.0LF) ? 1.0LF : ((a > 1.0LF) == (y > 0.0LF) ? ember_inf_d() : 0.0LF);
  else r = ember_exp(y * ember_log(a));
  return (x < 0.0LF || (x == 0.0LF && ember_signbit(x))) && yodd ? -r : r;
}
double ember_fmod(double x, double y) {
  if (ember_isnan(x) || ember_isnan(y) || ember_isinf(x) || y == 0.0LF) return ember_nan_d();
  if (ember_isinf(y)) return x;
  double ay = abs(y), r = abs(x);
  while (r >= ay) {
    int ey, er;
    frexp(r, er);
    frexp(ay, ey);
    double s = ldexp(ay, er - ey);
    if (s > r) s = ldexp(ay, er - ey - 1);
    r -= s;
  }
  return ember_copysign(r, x);
}
double ember_hypot(double x, double y) {
  double a = abs(x), b = abs(y);
  if (ember_isinf(a) || ember_isinf(b)) return ember_inf_d();
  if (ember_isnan(a) || ember_isnan(b)) return ember_nan_d();
  double m = max(a, b), n = min(a, b);
  if (m == 0.0LF) return 0.0LF;
  double q = n / m;
  return m * sqrt(1.0LF + q * q);
}
)GLSL";

const char* kBf16 = R"GLSL(
float ember_bf16_load(uint16_t b) { return uintBitsToFloat(uint(b) << 16); }
uint16_t ember_bf16_store(float f) {  // round to nearest even, NaN kept quiet
  uint x = floatBitsToUint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
)GLSL";

bool uses(const std::vector<DType>& v, std::initializer_list<DType> any) {
  for (DType d : any)
    if (std::find(v.begin(), v.end(), d) != v.end()) return true;
  return false;
}

}  // namespace

const char* const kErrorRecord = R"GLSL(
layout(std430, binding = 7) buffer ErrorRecord { uint e_flag; uint e_op; int e_dim; int e_pad; ivec2 e_index; ivec2 e_size; };
void ember_record_error(uint op, int dim, int64_t v, int64_t size) {
  if (atomicCompSwap(e_flag, 0u, 1u) == 0u) {
    e_op = op;
    e_dim = dim;
    e_index = unpackInt2x32(v);
    e_size = unpackInt2x32(size);
  }
}
)GLSL";

std::string storage_type(DType dt) {
  switch (dt) {
    case DType::f64:
      return "double";
    case DType::f32:
      return "float";
    case DType::f16:
      return "float16_t";
    case DType::bf16:
      return "uint16_t";
    case DType::i64:
      return "int64_t";
    case DType::i32:
      return "int";
    case DType::i16:
      return "int16_t";
    case DType::i8:
      return "int8_t";
    case DType::u8:
    case DType::boolean:
      return "uint8_t";
  }
  EMBER_FAIL("vulkan: invalid dtype");
}

std::string compute_type(DType dt) {
  switch (dt) {
    case DType::f64:
      return "double";
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      return "float";
    case DType::i64:
      return "int64_t";
    default:
      return "int";
  }
}

std::string raw_type(size_t bytes) {
  switch (bytes) {
    case 1:
      return "uint8_t";
    case 2:
      return "uint16_t";
    case 4:
      return "uint";
    default:
      return "uvec2";
  }
}

std::string header(const std::vector<DType>& dts, bool generic_params) {
  std::string s = "#version 450\n";
  if (uses(dts, {DType::i8, DType::u8, DType::boolean}))
    s += "#extension GL_EXT_shader_8bit_storage : require\n"
         "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n";
  if (uses(dts, {DType::f16, DType::bf16, DType::i16})) s += "#extension GL_EXT_shader_16bit_storage : require\n";
  if (uses(dts, {DType::f16})) s += "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";
  if (uses(dts, {DType::bf16, DType::i16})) s += "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n";
  if (uses(dts, {DType::i64})) s += "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
  s += "layout(local_size_x = " + std::to_string(kLocalSize) + ") in;\n";
  if (generic_params) s += kParams;
  s += kFloatMath;
  if (uses(dts, {DType::f64})) s += kDoubleMath;
  if (uses(dts, {DType::bf16})) s += kBf16;
  return s;
}

std::string buffer(int binding, DType dt, const std::string& name, bool readonly) {
  const std::string b = std::to_string(binding);
  return "layout(std430, binding = " + b + ") " + (readonly ? "readonly " : "") + "buffer B" + b + " { " +
         storage_type(dt) + " " + name + "[]; };\n";
}

std::string raw_buffer(int binding, size_t bytes, const std::string& name, bool readonly) {
  const std::string b = std::to_string(binding);
  return "layout(std430, binding = " + b + ") " + (readonly ? "readonly " : "") + "buffer B" + b + " { " +
         raw_type(bytes) + " " + name + "[]; };\n";
}

std::string load(DType dt, const std::string& e) {
  switch (dt) {
    case DType::f16:
      return "float(" + e + ")";
    case DType::bf16:
      return "ember_bf16_load(" + e + ")";
    case DType::i16:
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      return "int(" + e + ")";
    default:
      return e;
  }
}

std::string store(DType dt, const std::string& e) {
  switch (dt) {
    case DType::f16:
      return "float16_t(" + e + ")";
    case DType::bf16:
      return "ember_bf16_store(" + e + ")";
    case DType::i16:
      return "int16_t(" + e + ")";
    case DType::i8:
      return "int8_t(" + e + ")";
    case DType::u8:
      return "uint8_t(" + e + ")";
    case DType::boolean:
      return "uint8_t((" + e + ") != 0 ? 1 : 0)";
    default:
      return e;
  }
}

std::string convert(DType from, DType to, const std::string& e) {
  const std::string c_to = compute_type(to), c_from = compute_type(from);
  const std::string lf = from == DType::f64 ? "LF" : "";  // double literals
  if (to == DType::boolean) {
    if (is_float(from)) return "((ember_isnan(" + e + ") || " + e + " != " + c_from + "(0)) ? 1 : 0)";
    return "(" + e + " != " + c_from + "(0) ? 1 : 0)";
  }
  if (is_float(from) && !is_float(to)) {
    if (to == DType::i64)
      return "((" + e + " >= " + c_from + "(-9223372036854775808.0" + lf + ") && " + e + " < " + c_from +
             "(9223372036854775808.0" + lf + ")) ? int64_t(" + e + ") : int64_t(0x8000000000000000ul))";
    return "((" + e + " > " + c_from + "(-2147483649.0" + lf + ") && " + e + " < " + c_from + "(2147483648.0" + lf +
           ")) ? int(" + e + ") : int(0x80000000u))";
  }
  if (c_to == c_from) return e;
  return c_to + "(" + e + ")";
}

}  // namespace ember::vulkan::glsl
