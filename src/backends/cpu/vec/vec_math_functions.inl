// Elementwise function kernels of vec_math_kernels.inl (included from there only).
namespace ember::cpu::vec::EMBER_VEC_MATH_KERNEL_NS {

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
  if constexpr (!kFusedFma) {
    // Without an FMA, n * (pi/2) is formed in double: pi/2 in three parts of at most 33
    // significant bits, so that each product with n (at most 20 bits) is exact.
    auto reduce = [](D x, D k) {
      return ((x - k * Simd::dset(1.5707963267341256)) - k * Simd::dset(6.077100506303966e-11)) -
             k * Simd::dset(2.0222662487959506e-21);
    };
    r = Simd::d_pack(reduce(Simd::d_lo(ax), Simd::d_lo(n)), reduce(Simd::d_hi(ax), Simd::d_hi(n)));
    return n;
  }
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
  F s_lo;
  if constexpr (kFusedFma) {
    s_lo = Simd::fms(t, t, s_hi);
  } else {  // Dekker's exact product: t split into halves of 12 bits (Veltkamp)
    const F c = t * cf(4097.0f);
    const F th = c - (c - t), tl = t - th;
    s_lo = ((th * th - s_hi) + cf(2.0f) * th * tl) + tl * tl;
  }
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

}  // namespace ember::cpu::vec::EMBER_VEC_MATH_KERNEL_NS
