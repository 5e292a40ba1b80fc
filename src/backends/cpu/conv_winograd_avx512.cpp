// AVX-512 tile transforms of the Winograd F(2x2, 3x3) and F(4x4, 3x3) convolutions (conv_winograd.cpp; declared in
// conv_kernels.hpp): conv_winograd_tiles.hpp's templates, 16 channels a vector. Compiled with -mavx512f/bw/dq/vl and
// called only after checking cpu::features().avx512; no standard-library templates here (see conv_avx512.cpp).
#include <immintrin.h>

#include <cstdint>

#include "conv_kernels.hpp"
#include "conv_winograd_tiles.hpp"

namespace ember::cpu::detail {

namespace {

struct Avx512 {
  using R = __m512;
  using Lanes = __mmask16;
  static constexpr int64_t kWidth = 16;
  static Lanes lanes(int64_t n) { return n >= 16 ? Lanes(0xffff) : Lanes((1u << n) - 1u); }
  static R load(const float* p, Lanes k) { return _mm512_maskz_loadu_ps(k, p); }
  static void store(float* p, Lanes k, R r) { _mm512_mask_storeu_ps(p, k, r); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R madd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R splat(float x) { return _mm512_set1_ps(x); }
};

}  // namespace

WinogradTransforms winograd_transforms_f32_avx512(int tile) { return winograd::transforms<Avx512>(tile); }

}  // namespace ember::cpu::detail
