// AVX2 + FMA implementation of vec_math: wraps the intrinsics in `Simd` and
// instantiates the ISA-generic kernels of vec_math_kernels.inl. Compiled with -mavx2 -mfma;
// only reached through detail::kernels_avx2() after a cpu::features() check.
// (No F16C is assumed: half conversions use integer arithmetic.)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ember::cpu::vec::avx2_impl {

struct Simd {
  static constexpr int W = 8;
  static constexpr bool kFusedFma = true;  // fma() rounds once
  static constexpr uintptr_t kAlign = 32;
  using F = __m256;
  using I = __m256i;
  using M = __m256;  // all-ones / all-zeros lanes
  using D = __m256d;
  using MD = __m256d;

  static I tail(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static __m256i dtail(int n) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
  }

  // ---- float vectors
  static F set(float v) { return _mm256_set1_ps(v); }
  static F loadu(const float* p) { return _mm256_loadu_ps(p); }
  static F load_n(const float* p, int n) { return _mm256_maskload_ps(p, tail(n)); }
  static F load_n(const float* p, int n, F fill) {
    const I m = tail(n);
    return _mm256_blendv_ps(fill, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static void storeu(float* p, F v) { _mm256_storeu_ps(p, v); }
  static void store_n(float* p, F v, int n) { _mm256_maskstore_ps(p, tail(n), v); }
  static void stream(float* p, F v) { _mm256_stream_ps(p, v); }
  static void sfence() { _mm_sfence(); }

  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F fms(F a, F b, F c) { return _mm256_fmsub_ps(a, b, c); }
  static F fnma(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
  static F min(F a, F b) { return _mm256_min_ps(a, b); }  // NaN in either -> b
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F sqrt(F a) { return _mm256_sqrt_ps(a); }
  static F abs(F a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static F neg(F a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
  static F rcp(F a) { return _mm256_rcp_ps(a); }
  static F band(F a, F b) { return _mm256_and_ps(a, b); }
  static F bor(F a, F b) { return _mm256_or_ps(a, b); }
  static F bxor(F a, F b) { return _mm256_xor_ps(a, b); }
  static F round_even(F a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F floor(F a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static F ceil(F a) { return _mm256_round_ps(a, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
  static F trunc(F a) { return _mm256_round_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
  // p * 2^n for integral n with one rounding. Common case (all n in [-126, 127]): one
  // multiply by 2^n; otherwise scale in two exact steps of 2^(n/2).
  static F scalef(F p, F n) {
    const I ni = _mm256_cvtps_epi32(n);
    const I bias = _mm256_set1_epi32(127);
    const I u = _mm256_add_epi32(ni, _mm256_set1_epi32(126));  // in range iff 0 <= u <= 253
    const I bad = _mm256_or_si256(u, _mm256_sub_epi32(_mm256_set1_epi32(253), u));
    if (_mm256_movemask_ps(_mm256_castsi256_ps(bad)) == 0)
      return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(ni, bias), 23)));
    n = _mm256_max_ps(_mm256_min_ps(n, set(254.0f)), set(-254.0f));
    const I nc = _mm256_cvtps_epi32(n);
    const I lo = _mm256_srai_epi32(nc, 1);
    const I hi = _mm256_sub_epi32(nc, lo);
    const F s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(lo, bias), 23));
    const F s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(hi, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  }
  // x = m * 2^e, m in [sqrt(1/2), sqrt(2)) for finite x > 0 (denormals included)
  static F frexp(F x, F& e) {
    const F small = _mm256_cmp_ps(x, set(1.17549435e-38f), _CMP_LT_OQ);
    const F xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, set(8388608.0f)), small);
    const I bits = _mm256_castps_si256(xs);
    const I ei = _mm256_srai_epi32(_mm256_sub_epi32(bits, _mm256_set1_epi32(0x3f3504f3)), 23);
    const F m = _mm256_castsi256_ps(_mm256_sub_epi32(bits, _mm256_slli_epi32(ei, 23)));
    e = _mm256_sub_ps(_mm256_cvtepi32_ps(ei), _mm256_and_ps(small, set(23.0f)));
    return m;
  }
  static F lut16(I idx, const float* tab) {  // index bit 3 picks the upper half
    const F lo = _mm256_permutevar8x32_ps(_mm256_loadu_ps(tab), idx);
    const F hi = _mm256_permutevar8x32_ps(_mm256_loadu_ps(tab + 8), idx);
    return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
  }
  static float hmax(F a) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }
  static float hmin(F a) {
    __m128 m = _mm_min_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_min_ps(m, _mm_movehl_ps(m, m));
    m = _mm_min_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }

  // ---- int32 vectors
  static I iset(int32_t v) { return _mm256_set1_epi32(v); }
  static I as_i(F a) { return _mm256_castps_si256(a); }
  static F as_f(I a) { return _mm256_castsi256_ps(a); }
  static I cvt_i(F a) { return _mm256_cvtps_epi32(a); }
  static I cvtt_i(F a) { return _mm256_cvttps_epi32(a); }
  static I iadd(I a, I b) { return _mm256_add_epi32(a, b); }
  static I isub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I iand(I a, I b) { return _mm256_and_si256(a, b); }
  static I ior(I a, I b) { return _mm256_or_si256(a, b); }
  template <int k> static I isll(I a) { return _mm256_slli_epi32(a, k); }
  template <int k> static I isrl(I a) { return _mm256_srli_epi32(a, k); }
  template <int k> static I isra(I a) { return _mm256_srai_epi32(a, k); }
  static M ieq(I a, I b) { return _mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b)); }
  static I seli(M m, I a, I b) {
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(b), _mm256_castsi256_ps(a), m));
  }

  // ---- masks
  static M lt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M le(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
  static M gt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static M ge(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  static M eq(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
  static M neq(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_NEQ_UQ); }
  static M unord(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_UNORD_Q); }
  static M isnan(F a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static M mand(M a, M b) { return _mm256_and_ps(a, b); }
  static M mor(M a, M b) { return _mm256_or_ps(a, b); }
  static M mxor(M a, M b) { return _mm256_xor_ps(a, b); }
  static M mnot(M a) { return _mm256_xor_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(-1))); }
  static bool any(M a) { return _mm256_movemask_ps(a) != 0; }
  static bool all(M a) { return _mm256_movemask_ps(a) == 0xff; }
  static uint32_t mask_bits(M a) { return static_cast<uint32_t>(_mm256_movemask_ps(a)); }
  static F sel(M m, F a, F b) { return _mm256_blendv_ps(b, a, m); }  // m ? a : b

  // ---- double vectors (W/2 lanes)
  static D dset(double v) { return _mm256_set1_pd(v); }
  static D d_lo(F a) { return _mm256_cvtps_pd(_mm256_castps256_ps128(a)); }
  static D d_hi(F a) { return _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)); }
  static F d_pack(D lo, D hi) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
  }
  static D dloadu(const double* p) { return _mm256_loadu_pd(p); }
  static D dload_n(const double* p, int n) { return _mm256_maskload_pd(p, dtail(n)); }
  static void dstoreu(double* p, D v) { _mm256_storeu_pd(p, v); }
  static void dstore_n(double* p, D v, int n) { _mm256_maskstore_pd(p, dtail(n), v); }
  static void dstream(double* p, D v) { _mm256_stream_pd(p, v); }
  static D dfma(D a, D b, D c) { return _mm256_fmadd_pd(a, b, c); }
  static D dsqrt(D a) { return _mm256_sqrt_pd(a); }
  static D dabs(D a) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), a); }
  static D dneg(D a) { return _mm256_xor_pd(a, _mm256_set1_pd(-0.0)); }
  static D dcopysign(D mag, D sgn) {
    return _mm256_or_pd(dabs(mag), _mm256_and_pd(sgn, _mm256_set1_pd(-0.0)));
  }
  static D dtrunc(D a) { return _mm256_round_pd(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
  static D dfloor(D a) { return _mm256_round_pd(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static D dceil(D a) { return _mm256_round_pd(a, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
  static D dround_even(D a) { return _mm256_round_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static D dmax(D a, D b) { return _mm256_max_pd(a, b); }
  static D dmin(D a, D b) { return _mm256_min_pd(a, b); }
  static MD dlt(D a, D b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
  static MD dgt(D a, D b) { return _mm256_cmp_pd(a, b, _CMP_GT_OQ); }
  static MD dge(D a, D b) { return _mm256_cmp_pd(a, b, _CMP_GE_OQ); }
  static MD dunord(D a, D b) { return _mm256_cmp_pd(a, b, _CMP_UNORD_Q); }
  static D dsel(MD m, D a, D b) { return _mm256_blendv_pd(b, a, m); }
  static double dhsum(D a) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
  }
  // a = m * 2^e, m in [sqrt(1/2), sqrt(2)), for finite normal a > 0
  static D dfrexp(D a, D& e) {
    const __m256i bits = _mm256_castpd_si256(a);
    const __m256i t = _mm256_add_epi64(_mm256_sub_epi64(bits, _mm256_set1_epi64x(0x3fe6a09e667f3bcdLL)),
                                       _mm256_set1_epi64x(1024LL << 52));
    const __m256i eb = _mm256_srli_epi64(t, 52);  // e + 1024
    const __m256i shift = _mm256_slli_epi64(_mm256_sub_epi64(eb, _mm256_set1_epi64x(1024)), 52);
    const D m = _mm256_castsi256_pd(_mm256_sub_epi64(bits, shift));
    const D two52 = _mm256_set1_pd(4503599627370496.0);
    e = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(eb, _mm256_castpd_si256(two52))),
                      _mm256_set1_pd(4503599627370496.0 + 1024.0));
    return m;
  }
  // p * 2^n for integral |n| <= 1000
  static D dscale(D p, D n) {
    const D t = _mm256_add_pd(n, _mm256_set1_pd(4503599627370496.0 + 1023.0));
    const D s = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_castpd_si256(t), 52));
    return _mm256_mul_pd(p, s);
  }

  // ---- 16-bit storage (integer emulation of the half conversions)
  static I f32_to_f16_bits(F v) {
    const I u = _mm256_castps_si256(v);
    const I sign = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000));
    const I a = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    const I m13 = _mm256_srli_epi32(a, 13);
    const I nan_h = _mm256_or_si256(_mm256_set1_epi32(0x7e00), _mm256_and_si256(m13, _mm256_set1_epi32(0x3ff)));
    const I norm = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(a, _mm256_set1_epi32(static_cast<int32_t>(0xc8000fffu))),
                         _mm256_and_si256(m13, _mm256_set1_epi32(1))),
        13);
    const I sub = _mm256_sub_epi32(
        _mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(a), _mm256_set1_ps(0.5f))),
        _mm256_set1_epi32(0x3f000000));
    I h = _mm256_blendv_epi8(norm, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32(0x38800000), a));
    h = _mm256_blendv_epi8(h, _mm256_set1_epi32(0x7c00), _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x477fefff)));
    h = _mm256_blendv_epi8(h, nan_h, _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000)));
    return _mm256_or_si256(h, sign);
  }
  static F f16_bits_to_f32(I h) {
    const I sign = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), 16);
    const I e = _mm256_and_si256(h, _mm256_set1_epi32(0x7c00));
    const I a = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x7fff)), 13);
    const I norm = _mm256_add_epi32(a, _mm256_set1_epi32(0x38000000));
    const I infnan = _mm256_add_epi32(a, _mm256_set1_epi32(0x70000000));
    const I magic = _mm256_set1_epi32(0x38800000);
    const I sub = _mm256_castps_si256(_mm256_sub_ps(_mm256_castsi256_ps(_mm256_add_epi32(a, magic)),
                                                    _mm256_castsi256_ps(magic)));
    I r = _mm256_blendv_epi8(norm, infnan, _mm256_cmpeq_epi32(e, _mm256_set1_epi32(0x7c00)));
    r = _mm256_blendv_epi8(r, sub, _mm256_cmpeq_epi32(e, _mm256_setzero_si256()));
    return _mm256_castsi256_ps(_mm256_or_si256(r, sign));
  }
  static __m128i pack16(I v) {  // low 16 bits of each lane (values must be < 2^16)
    const I p = _mm256_packus_epi32(v, v);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(p, 0x08));
  }
  static void store_u16(uint16_t* p, I v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), pack16(v)); }
  static void store_u16_n(uint16_t* p, I v, int n) {
    alignas(16) uint16_t buf[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(buf), pack16(v));
    std::memcpy(p, buf, static_cast<size_t>(n) * 2);
  }
  static I load_u16(const uint16_t* p) {
    return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static I load_u16_n(const uint16_t* p, int n) {
    alignas(16) uint16_t buf[8] = {};
    std::memcpy(buf, p, static_cast<size_t>(n) * 2);
    return _mm256_cvtepu16_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(buf)));
  }
  static void store_f16(uint16_t* p, F v) { store_u16(p, f32_to_f16_bits(v)); }
  static void store_f16_n(uint16_t* p, F v, int n) { store_u16_n(p, f32_to_f16_bits(v), n); }
  static F load_f16(const uint16_t* p) { return f16_bits_to_f32(load_u16(p)); }
  static F load_f16_n(const uint16_t* p, int n) { return f16_bits_to_f32(load_u16_n(p, n)); }
};

}  // namespace ember::cpu::vec::avx2_impl

#define EMBER_VEC_MATH_KERNEL_NS avx2_impl
#include "vec_math_kernels.inl"

namespace ember::cpu::vec::detail {
const Kernels& kernels_avx2() { return avx2_impl::kKernels; }
}  // namespace ember::cpu::vec::detail
