// AVX-512 (F/BW/DQ/VL) implementation of vec_math: wraps the intrinsics in `Simd` and
// instantiates the ISA-generic kernels of vec_math_kernels.inl. Compiled with -mavx512*;
// only reached through detail::kernels_avx512() after a cpu::features() check.

// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_*(), which trips
// -Wmaybe-uninitialized / -Wuninitialized (known false positives) once inlined; silence
// them for this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ember::cpu::vec::avx512_impl {

struct Simd {
  static constexpr int W = 16;
  static constexpr bool kFusedFma = true;  // fma() rounds once
  static constexpr uintptr_t kAlign = 64;
  using F = __m512;
  using I = __m512i;
  using M = __mmask16;
  using D = __m512d;
  using MD = __mmask8;

  static __mmask16 tail(int n) { return static_cast<__mmask16>((1u << n) - 1u); }

  // ---- float vectors
  static F set(float v) { return _mm512_set1_ps(v); }
  static F loadu(const float* p) { return _mm512_loadu_ps(p); }
  static F load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(tail(n), p); }
  static F load_n(const float* p, int n, F fill) { return _mm512_mask_loadu_ps(fill, tail(n), p); }
  static void storeu(float* p, F v) { _mm512_storeu_ps(p, v); }
  static void store_n(float* p, F v, int n) { _mm512_mask_storeu_ps(p, tail(n), v); }
  static void stream(float* p, F v) { _mm512_stream_ps(p, v); }
  static void sfence() { _mm_sfence(); }

  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }    // a*b + c
  static F fms(F a, F b, F c) { return _mm512_fmsub_ps(a, b, c); }    // a*b - c
  static F fnma(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a*b
  static F min(F a, F b) { return _mm512_min_ps(a, b); }  // NaN in either -> b
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F sqrt(F a) { return _mm512_sqrt_ps(a); }
  static F abs(F a) { return _mm512_abs_ps(a); }
  static F neg(F a) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN))); }
  static F rcp(F a) { return _mm512_rcp14_ps(a); }
  static F band(F a, F b) { return _mm512_and_ps(a, b); }
  static F bor(F a, F b) { return _mm512_or_ps(a, b); }
  static F bxor(F a, F b) { return _mm512_xor_ps(a, b); }
  static F round_even(F a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F floor(F a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static F ceil(F a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
  static F trunc(F a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
  static F scalef(F p, F n) { return _mm512_scalef_ps(p, n); }  // p * 2^floor(n)
  // x = m * 2^e, m in [sqrt(1/2), sqrt(2)) for finite x > 0 (denormals included)
  static F frexp(F x, F& e) {
    F m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_src);
    e = _mm512_getexp_ps(x);
    M big = _mm512_cmp_ps_mask(m, set(1.41421353816986083984f), _CMP_GT_OQ);
    m = _mm512_mask_mul_ps(m, big, m, set(0.5f));
    e = _mm512_mask_add_ps(e, big, e, set(1.0f));
    return m;
  }
  static F lut16(I idx, const float* tab) { return _mm512_permutexvar_ps(idx, _mm512_loadu_ps(tab)); }
  static float hmax(F a) { return _mm512_reduce_max_ps(a); }
  static float hmin(F a) { return _mm512_reduce_min_ps(a); }

  // ---- int32 vectors
  static I iset(int32_t v) { return _mm512_set1_epi32(v); }
  static I as_i(F a) { return _mm512_castps_si512(a); }
  static F as_f(I a) { return _mm512_castsi512_ps(a); }
  static I cvt_i(F a) { return _mm512_cvtps_epi32(a); }
  static I cvtt_i(F a) { return _mm512_cvttps_epi32(a); }
  static I iadd(I a, I b) { return _mm512_add_epi32(a, b); }
  static I isub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I iand(I a, I b) { return _mm512_and_si512(a, b); }
  static I ior(I a, I b) { return _mm512_or_si512(a, b); }
  template <int k> static I isll(I a) { return _mm512_slli_epi32(a, k); }
  template <int k> static I isrl(I a) { return _mm512_srli_epi32(a, k); }
  template <int k> static I isra(I a) { return _mm512_srai_epi32(a, k); }
  static M ieq(I a, I b) { return _mm512_cmpeq_epi32_mask(a, b); }
  static I seli(M m, I a, I b) { return _mm512_mask_blend_epi32(m, b, a); }

  // ---- masks
  static M lt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M le(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
  static M gt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static M ge(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  static M eq(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  static M neq(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ); }
  static M unord(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q); }
  static M isnan(F a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static M mand(M a, M b) { return static_cast<M>(a & b); }
  static M mor(M a, M b) { return static_cast<M>(a | b); }
  static M mxor(M a, M b) { return static_cast<M>(a ^ b); }
  static M mnot(M a) { return static_cast<M>(~a); }
  static bool any(M a) { return a != 0; }
  static bool all(M a) { return a == 0xffff; }
  static uint32_t mask_bits(M a) { return a; }
  static F sel(M m, F a, F b) { return _mm512_mask_blend_ps(m, b, a); }  // m ? a : b

  // ---- double vectors (W/2 lanes)
  static D dset(double v) { return _mm512_set1_pd(v); }
  static D d_lo(F a) { return _mm512_cvtps_pd(_mm512_castps512_ps256(a)); }
  static D d_hi(F a) { return _mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1)); }
  static F d_pack(D lo, D hi) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
  }
  static D dloadu(const double* p) { return _mm512_loadu_pd(p); }
  static D dload_n(const double* p, int n) { return _mm512_maskz_loadu_pd(static_cast<__mmask8>((1u << n) - 1u), p); }
  static void dstoreu(double* p, D v) { _mm512_storeu_pd(p, v); }
  static void dstore_n(double* p, D v, int n) { _mm512_mask_storeu_pd(p, static_cast<__mmask8>((1u << n) - 1u), v); }
  static void dstream(double* p, D v) { _mm512_stream_pd(p, v); }
  static D dfma(D a, D b, D c) { return _mm512_fmadd_pd(a, b, c); }
  static D dsqrt(D a) { return _mm512_sqrt_pd(a); }
  static D dabs(D a) { return _mm512_abs_pd(a); }
  static D dneg(D a) { return _mm512_xor_pd(a, _mm512_set1_pd(-0.0)); }
  static D dcopysign(D mag, D sgn) {
    return _mm512_or_pd(_mm512_abs_pd(mag), _mm512_and_pd(sgn, _mm512_set1_pd(-0.0)));
  }
  static D dtrunc(D a) { return _mm512_roundscale_pd(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
  static D dfloor(D a) { return _mm512_roundscale_pd(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static D dceil(D a) { return _mm512_roundscale_pd(a, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
  static D dround_even(D a) { return _mm512_roundscale_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static D dmax(D a, D b) { return _mm512_max_pd(a, b); }
  static D dmin(D a, D b) { return _mm512_min_pd(a, b); }
  static MD dlt(D a, D b) { return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ); }
  static MD dgt(D a, D b) { return _mm512_cmp_pd_mask(a, b, _CMP_GT_OQ); }
  static MD dge(D a, D b) { return _mm512_cmp_pd_mask(a, b, _CMP_GE_OQ); }
  static MD dunord(D a, D b) { return _mm512_cmp_pd_mask(a, b, _CMP_UNORD_Q); }
  static D dsel(MD m, D a, D b) { return _mm512_mask_blend_pd(m, b, a); }
  static double dhsum(D a) { return _mm512_reduce_add_pd(a); }
  // a = m * 2^e, m in [sqrt(1/2), sqrt(2)), for finite a > 0
  static D dfrexp(D a, D& e) {
    D m = _mm512_getmant_pd(a, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_src);
    e = _mm512_getexp_pd(a);
    MD big = _mm512_cmp_pd_mask(m, _mm512_set1_pd(1.4142135623730951), _CMP_GT_OQ);
    m = _mm512_mask_mul_pd(m, big, m, _mm512_set1_pd(0.5));
    e = _mm512_mask_add_pd(e, big, e, _mm512_set1_pd(1.0));
    return m;
  }
  static D dscale(D p, D n) { return _mm512_scalef_pd(p, n); }

  // ---- 16-bit storage
  static void store_f16(uint16_t* p, F v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static void store_f16_n(uint16_t* p, F v, int n) {
    _mm256_mask_storeu_epi16(p, tail(n), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static F load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static F load_f16_n(const uint16_t* p, int n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(tail(n), p)); }
  static void store_u16(uint16_t* p, I v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(v));
  }
  static void store_u16_n(uint16_t* p, I v, int n) { _mm512_mask_cvtepi32_storeu_epi16(p, tail(n), v); }
  static I load_u16(const uint16_t* p) {
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static I load_u16_n(const uint16_t* p, int n) { return _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(tail(n), p)); }
};

}  // namespace ember::cpu::vec::avx512_impl

#define EMBER_VEC_MATH_KERNEL_NS avx512_impl
#include "vec_math_kernels.inl"

namespace ember::cpu::vec::detail {
const Kernels& kernels_avx512() { return avx512_impl::kKernels; }
}  // namespace ember::cpu::vec::detail
