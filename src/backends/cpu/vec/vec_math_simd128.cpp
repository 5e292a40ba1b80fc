// WebAssembly SIMD128 implementation of vec_math: wraps the wasm_simd128.h intrinsics in
// `Simd` (4 float lanes, 2 double lanes) and instantiates the ISA-generic kernels of
// vec_math_kernels.inl, as vec_math_avx2.cpp does for AVX2. Compiled only for wasm with
// -msimd128 (src/CMakeLists.txt), where detail::kernels() hands it out at every level: a wasm
// module has no run-time ISA choice to make.
//
// SIMD128 has no fused multiply-add (relaxed SIMD's madd is not in clang 14), so fma() here is
// a multiply and an add, and kFusedFma tells the kernels: the three places that need an exact
// product (the division by a scalar, trig's argument reduction, gelu's x^2 in two parts) take
// their unfused forms (vec_math_drivers.inl, vec_math_functions.inl). Everything else keeps
// its accuracy within a rounding or two of the FMA forms.
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

#include <cstdint>
#include <cstring>

namespace ember::cpu::vec::simd128_impl {

struct Simd {
  static constexpr int W = 4;
  static constexpr uintptr_t kAlign = 16;
  static constexpr bool kFusedFma = false;
  using F = float __attribute__((__vector_size__(16), __aligned__(16)));
  using I = int32_t __attribute__((__vector_size__(16), __aligned__(16)));
  using M = F;  // all-ones / all-zeros lanes
  using D = double __attribute__((__vector_size__(16), __aligned__(16)));
  using MD = D;

  static v128_t v(F a) { return (v128_t)a; }
  static v128_t v(I a) { return (v128_t)a; }
  static v128_t v(D a) { return (v128_t)a; }
  static F f(v128_t a) { return (F)a; }
  static I i(v128_t a) { return (I)a; }
  static D d(v128_t a) { return (D)a; }

  // ---- float vectors
  static F set(float x) { return f(wasm_f32x4_splat(x)); }
  static F loadu(const float* p) { return f(wasm_v128_load(p)); }
  static F load_n(const float* p, int n) { return load_n(p, n, set(0.0f)); }
  static F load_n(const float* p, int n, F fill) {
    alignas(16) float buf[4];
    std::memcpy(buf, &fill, sizeof buf);
    std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(float));
    return f(wasm_v128_load(buf));
  }
  static void storeu(float* p, F a) { wasm_v128_store(p, v(a)); }
  static void store_n(float* p, F a, int n) {
    alignas(16) float buf[4];
    wasm_v128_store(buf, v(a));
    std::memcpy(p, buf, static_cast<size_t>(n) * sizeof(float));
  }
  static void stream(float* p, F a) { storeu(p, a); }  // no non-temporal stores in wasm
  static void sfence() {}

  static F fma(F a, F b, F c) { return a * b + c; }
  static F fms(F a, F b, F c) { return a * b - c; }
  static F fnma(F a, F b, F c) { return c - a * b; }
  // x86 semantics, which the kernels assume: NaN in either -> b (pmin(b, a) = a < b ? a : b)
  static F min(F a, F b) { return f(wasm_f32x4_pmin(v(b), v(a))); }
  static F max(F a, F b) { return f(wasm_f32x4_pmax(v(b), v(a))); }
  static F sqrt(F a) { return f(wasm_f32x4_sqrt(v(a))); }
  static F abs(F a) { return f(wasm_f32x4_abs(v(a))); }
  static F neg(F a) { return f(wasm_f32x4_neg(v(a))); }
  static F rcp(F a) { return set(1.0f) / a; }  // exact: there is no estimate instruction
  static F band(F a, F b) { return f(wasm_v128_and(v(a), v(b))); }
  static F bor(F a, F b) { return f(wasm_v128_or(v(a), v(b))); }
  static F bxor(F a, F b) { return f(wasm_v128_xor(v(a), v(b))); }
  static F round_even(F a) { return f(wasm_f32x4_nearest(v(a))); }
  static F floor(F a) { return f(wasm_f32x4_floor(v(a))); }
  static F ceil(F a) { return f(wasm_f32x4_ceil(v(a))); }
  static F trunc(F a) { return f(wasm_f32x4_trunc(v(a))); }
  // p * 2^n for integral n with one rounding (as the AVX2 version: one multiply when every n is
  // in [-126, 127], else two exact steps of 2^(n/2))
  static F scalef(F p, F n) {
    const I ni = cvt_i(n);
    const I u = ni + iset(126);  // in range iff 0 <= u <= 253
    const I bad = u | (iset(253) - u);
    if (!wasm_v128_any_true(wasm_i32x4_lt(v(bad), wasm_i32x4_splat(0))))
      return p * as_f((ni + iset(127)) << 23);
    n = max(min(n, set(254.0f)), set(-254.0f));
    const I nc = cvt_i(n);
    const I lo = nc >> 1;  // arithmetic
    const I hi = nc - lo;
    return p * as_f((lo + iset(127)) << 23) * as_f((hi + iset(127)) << 23);
  }
  // x = m * 2^e, m in [sqrt(1/2), sqrt(2)) for finite x > 0 (denormals included)
  static F frexp(F x, F& e) {
    const M small = lt(x, set(1.17549435e-38f));
    const F xs = sel(small, x * set(8388608.0f), x);
    const I bits = as_i(xs);
    const I ei = (bits - iset(0x3f3504f3)) >> 23;
    const F m = as_f(bits - (ei << 23));
    e = f(wasm_f32x4_convert_i32x4(v(ei))) - band(small, set(23.0f));
    return m;
  }
  static F lut16(I idx, const float* tab) {  // idx in [0, 16) (low four bits used)
    alignas(16) int32_t k[4];
    wasm_v128_store(k, v(idx));
    return f(wasm_f32x4_make(tab[k[0] & 15], tab[k[1] & 15], tab[k[2] & 15], tab[k[3] & 15]));
  }
  static float hmax(F a) {
    F m = max(a, f(wasm_i32x4_shuffle(v(a), v(a), 2, 3, 0, 1)));
    m = max(m, f(wasm_i32x4_shuffle(v(m), v(m), 1, 0, 3, 2)));
    return wasm_f32x4_extract_lane(v(m), 0);
  }
  static float hmin(F a) {
    F m = min(a, f(wasm_i32x4_shuffle(v(a), v(a), 2, 3, 0, 1)));
    m = min(m, f(wasm_i32x4_shuffle(v(m), v(m), 1, 0, 3, 2)));
    return wasm_f32x4_extract_lane(v(m), 0);
  }

  // ---- int32 vectors
  static I iset(int32_t x) { return i(wasm_i32x4_splat(x)); }
  static I as_i(F a) { return (I)a; }
  static F as_f(I a) { return (F)a; }
  // float -> int32 rounding to nearest even, as cvtps2dq with the default rounding mode
  static I cvt_i(F a) { return i(wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_nearest(v(a)))); }
  static I cvtt_i(F a) { return i(wasm_i32x4_trunc_sat_f32x4(v(a))); }
  static I iadd(I a, I b) { return a + b; }
  static I isub(I a, I b) { return a - b; }
  static I iand(I a, I b) { return a & b; }
  static I ior(I a, I b) { return a | b; }
  template <int k> static I isll(I a) { return i(wasm_i32x4_shl(v(a), k)); }
  template <int k> static I isrl(I a) { return i(wasm_u32x4_shr(v(a), k)); }
  template <int k> static I isra(I a) { return i(wasm_i32x4_shr(v(a), k)); }
  static M ieq(I a, I b) { return f(wasm_i32x4_eq(v(a), v(b))); }
  static I seli(M m, I a, I b) { return i(wasm_v128_bitselect(v(a), v(b), v(m))); }

  // ---- masks
  static M lt(F a, F b) { return f(wasm_f32x4_lt(v(a), v(b))); }
  static M le(F a, F b) { return f(wasm_f32x4_le(v(a), v(b))); }
  static M gt(F a, F b) { return f(wasm_f32x4_gt(v(a), v(b))); }
  static M ge(F a, F b) { return f(wasm_f32x4_ge(v(a), v(b))); }
  static M eq(F a, F b) { return f(wasm_f32x4_eq(v(a), v(b))); }
  static M neq(F a, F b) { return f(wasm_f32x4_ne(v(a), v(b))); }  // true when unordered
  static M unord(F a, F b) { return mor(isnan(a), isnan(b)); }
  static M isnan(F a) { return f(wasm_f32x4_ne(v(a), v(a))); }
  static M mand(M a, M b) { return band(a, b); }
  static M mor(M a, M b) { return bor(a, b); }
  static M mxor(M a, M b) { return bxor(a, b); }
  static M mnot(M a) { return f(wasm_v128_not(v(a))); }
  static bool any(M a) { return wasm_i32x4_bitmask(v(a)) != 0; }
  static bool all(M a) { return wasm_i32x4_bitmask(v(a)) == 0xf; }
  static uint32_t mask_bits(M a) { return static_cast<uint32_t>(wasm_i32x4_bitmask(v(a))); }
  static F sel(M m, F a, F b) { return f(wasm_v128_bitselect(v(a), v(b), v(m))); }  // m ? a : b

  // ---- double vectors (W/2 lanes)
  static D dset(double x) { return d(wasm_f64x2_splat(x)); }
  static D d_lo(F a) { return d(wasm_f64x2_promote_low_f32x4(v(a))); }
  static D d_hi(F a) { return d(wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(v(a), v(a), 2, 3, 0, 1))); }
  static F d_pack(D lo, D hi) {
    return f(wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(v(lo)), wasm_f32x4_demote_f64x2_zero(v(hi)), 0, 1, 4, 5));
  }
  static D dloadu(const double* p) { return d(wasm_v128_load(p)); }
  static D dload_n(const double* p, int n) {
    alignas(16) double buf[2] = {};
    std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(double));
    return d(wasm_v128_load(buf));
  }
  static void dstoreu(double* p, D a) { wasm_v128_store(p, v(a)); }
  static void dstore_n(double* p, D a, int n) {
    alignas(16) double buf[2];
    wasm_v128_store(buf, v(a));
    std::memcpy(p, buf, static_cast<size_t>(n) * sizeof(double));
  }
  static void dstream(double* p, D a) { dstoreu(p, a); }
  static D dfma(D a, D b, D c) { return a * b + c; }
  static D dsqrt(D a) { return d(wasm_f64x2_sqrt(v(a))); }
  static D dabs(D a) { return d(wasm_f64x2_abs(v(a))); }
  static D dneg(D a) { return d(wasm_f64x2_neg(v(a))); }
  static D dcopysign(D mag, D sgn) {
    return d(wasm_v128_or(v(dabs(mag)), wasm_v128_and(v(sgn), wasm_f64x2_splat(-0.0))));
  }
  static D dtrunc(D a) { return d(wasm_f64x2_trunc(v(a))); }
  static D dfloor(D a) { return d(wasm_f64x2_floor(v(a))); }
  static D dceil(D a) { return d(wasm_f64x2_ceil(v(a))); }
  static D dround_even(D a) { return d(wasm_f64x2_nearest(v(a))); }
  static D dmax(D a, D b) { return d(wasm_f64x2_pmax(v(b), v(a))); }
  static D dmin(D a, D b) { return d(wasm_f64x2_pmin(v(b), v(a))); }
  static MD dlt(D a, D b) { return d(wasm_f64x2_lt(v(a), v(b))); }
  static MD dgt(D a, D b) { return d(wasm_f64x2_gt(v(a), v(b))); }
  static MD dge(D a, D b) { return d(wasm_f64x2_ge(v(a), v(b))); }
  static MD dunord(D a, D b) { return d(wasm_v128_or(wasm_f64x2_ne(v(a), v(a)), wasm_f64x2_ne(v(b), v(b)))); }
  static D dsel(MD m, D a, D b) { return d(wasm_v128_bitselect(v(a), v(b), v(m))); }
  static double dhsum(D a) { return wasm_f64x2_extract_lane(v(a), 0) + wasm_f64x2_extract_lane(v(a), 1); }
  // a = m * 2^e, m in [sqrt(1/2), sqrt(2)), for finite normal a > 0
  static D dfrexp(D a, D& e) {
    const v128_t bits = v(a);
    const v128_t t =
        wasm_i64x2_add(wasm_i64x2_sub(bits, wasm_i64x2_splat(0x3fe6a09e667f3bcdLL)), wasm_i64x2_splat(1024LL << 52));
    const v128_t eb = wasm_u64x2_shr(t, 52);  // e + 1024
    const v128_t shift = wasm_i64x2_shl(wasm_i64x2_sub(eb, wasm_i64x2_splat(1024)), 52);
    const D m = d(wasm_i64x2_sub(bits, shift));
    const v128_t two52 = wasm_f64x2_splat(4503599627370496.0);
    e = d(wasm_v128_or(eb, two52)) - dset(4503599627370496.0 + 1024.0);
    return m;
  }
  // p * 2^n for integral |n| <= 1000
  static D dscale(D p, D n) {
    const D t = n + dset(4503599627370496.0 + 1023.0);
    return p * d(wasm_i64x2_shl(v(t), 52));
  }

  // ---- 16-bit storage (integer emulation of the half conversions, as the AVX2 version)
  static I gt_i(I a, I b) { return i(wasm_i32x4_gt(v(a), v(b))); }
  static I blend_i(I a, I b, I m) { return i(wasm_v128_bitselect(v(b), v(a), v(m))); }  // m ? b : a
  static I f32_to_f16_bits(F x) {
    const I u = as_i(x);
    const I sign = isrl<16>(u) & iset(0x8000);
    const I a = u & iset(0x7fffffff);
    const I m13 = isrl<13>(a);
    const I nan_h = iset(0x7e00) | (m13 & iset(0x3ff));
    const I norm = isrl<13>(a + iset(static_cast<int32_t>(0xc8000fffu)) + (m13 & iset(1)));
    const I sub = as_i(as_f(a) + set(0.5f)) - iset(0x3f000000);
    I h = blend_i(norm, sub, gt_i(iset(0x38800000), a));
    h = blend_i(h, iset(0x7c00), gt_i(a, iset(0x477fefff)));
    h = blend_i(h, nan_h, gt_i(a, iset(0x7f800000)));
    return h | sign;
  }
  static F f16_bits_to_f32(I h) {
    const I sign = isll<16>(h & iset(0x8000));
    const I e = h & iset(0x7c00);
    const I a = isll<13>(h & iset(0x7fff));
    const I norm = a + iset(0x38000000);
    const I infnan = a + iset(0x70000000);
    const I magic = iset(0x38800000);
    const I sub = as_i(as_f(a + magic) - as_f(magic));
    I r = blend_i(norm, infnan, i(wasm_i32x4_eq(v(e), v(iset(0x7c00)))));
    r = blend_i(r, sub, i(wasm_i32x4_eq(v(e), v(iset(0)))));
    return as_f(r | sign);
  }
  static void store_u16(uint16_t* p, I x) {  // low 16 bits of each lane (values must be < 2^16)
    wasm_v128_store64_lane(p, wasm_u16x8_narrow_i32x4(v(x), v(x)), 0);
  }
  static void store_u16_n(uint16_t* p, I x, int n) {
    alignas(16) uint16_t buf[8];
    wasm_v128_store(buf, wasm_u16x8_narrow_i32x4(v(x), v(x)));
    std::memcpy(p, buf, static_cast<size_t>(n) * 2);
  }
  static I load_u16(const uint16_t* p) { return i(wasm_u32x4_load16x4(p)); }
  static I load_u16_n(const uint16_t* p, int n) {
    alignas(16) uint16_t buf[4] = {};
    std::memcpy(buf, p, static_cast<size_t>(n) * 2);
    return i(wasm_u32x4_load16x4(buf));
  }
  static void store_f16(uint16_t* p, F x) { store_u16(p, f32_to_f16_bits(x)); }
  static void store_f16_n(uint16_t* p, F x, int n) { store_u16_n(p, f32_to_f16_bits(x), n); }
  static F load_f16(const uint16_t* p) { return f16_bits_to_f32(load_u16(p)); }
  static F load_f16_n(const uint16_t* p, int n) { return f16_bits_to_f32(load_u16_n(p, n)); }
};

}  // namespace ember::cpu::vec::simd128_impl

#define EMBER_VEC_MATH_KERNEL_NS simd128_impl
#include "vec_math_kernels.inl"

namespace ember::cpu::vec::detail {
// The f32 sum stays the scalar one: its vector form widens each lane to double, which SIMD128
// does two lanes at a time, and in Node.js 20 it ran 0.82x the scalar loop (1M elements).
const Kernels& kernels_simd128() {
  static const Kernels k = [] {
    Kernels t = simd128_impl::kKernels;
    t.sum_f32 = kernels_scalar().sum_f32;
    return t;
  }();
  return k;
}
}  // namespace ember::cpu::vec::detail

#endif  // __wasm_simd128__
