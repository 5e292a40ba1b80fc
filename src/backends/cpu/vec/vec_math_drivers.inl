// Loop drivers, entry points, reductions, softmax rows and conversions of vec_math_kernels.inl
// (included from there only).
namespace ember::cpu::vec::EMBER_VEC_MATH_KERNEL_NS {

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
// a / b for one divisor b without a divide instruction (vdivps takes 5 to 16 cycles a vector, a
// multiply-add half of one): with y = RN(1/b), q0 = RN(a*y) is within 1.5 ulp of a/b, one
// Newton step q1 = RN(q0 + (a - q0*b)*y) brings it within 1 ulp, and a second gives RN(a/b)
// exactly (Markstein's theorem: y within 1/2 ulp of 1/b and q within 1 ulp of a/b make
// RN(q + (a - q*b)*y) the correctly rounded quotient; each a - q*b is exact in one FMA).
// So the result is the divide instruction's, bit for bit. The theorem needs normal numbers
// throughout: b is checked once (div_scalar_fits), and a lane whose |a| is outside
// [2^-70, 2^100] (zero, denormal, huge, inf, NaN) takes the divide instruction (a zero takes
// a*y, the signed zero a/b gives).
inline bool div_scalar_fits(float b) {
  const float m = std::fabs(b);
  return m >= 0x1p-20f && m <= 0x1p20f;  // false for 0, inf, NaN and denormals
}
EMBER_VEC_INLINE F div_by_scalar(F a, F b, F rb) {
  if constexpr (!kFusedFma) return a / b;  // the residuals below are exact only in an FMA
  F q = a * rb;
  F r = Simd::fnma(q, b, a);
  q = Simd::fma(r, rb, q);
  r = Simd::fnma(q, b, a);
  q = Simd::fma(r, rb, q);
  const F m = Simd::abs(a);
  const M normal = Simd::mand(Simd::ge(m, cf(0x1p-70f)), Simd::le(m, cf(0x1p100f)));  // NaN: false
  if (Simd::all(normal)) return q;
  const M zero = Simd::eq(a, cf(0.0f));
  F other = a * rb;  // +-0 for a zero
  const M slow = Simd::mnot(Simd::mor(normal, zero));
  if (Simd::any(slow)) other = Simd::sel(slow, a / b, other);
  return Simd::sel(normal, q, other);
}
static void binary_scalar_f32_impl(Binary fn, const float* a, float b, float* y, int64_t n) {
  if (fn == Binary::div && div_scalar_fits(b)) {
    const F bv = cf(b), rb = cf(1.0f / b);
    return map1<true>(a, y, n, [bv, rb](F u) __attribute__((always_inline)) { return div_by_scalar(u, bv, rb); });
  }
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
}  // namespace ember::cpu::vec::EMBER_VEC_MATH_KERNEL_NS
