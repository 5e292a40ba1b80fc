// WebAssembly SIMD128 tile transforms of the Winograd F(2x2, 3x3) and F(4x4, 3x3) convolutions (the wasm build's
// counterparts of conv_winograd_avx512.cpp, declared in conv_kernels.hpp): conv_winograd_tiles.hpp's templates,
// 4 channels a vector. F(2x2) has only adds; F(4x4)'s few multiplies by small constants stay a mul and an add here
// in both modules (the GEMM between the transforms is the relaxed one in ember-relaxed.wasm).
#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include <cstdint>

#include "conv_kernels.hpp"
#include "conv_winograd_tiles.hpp"

namespace ember::cpu::detail {

namespace {

struct Simd128 {
  using R = v128_t;
  using Lanes = int64_t;  // how many of the 4
  static constexpr int64_t kWidth = 4;
  static Lanes lanes(int64_t n) { return n < 4 ? n : 4; }
  static R load(const float* p, Lanes k) {
    if (k == 4) return wasm_v128_load(p);
    alignas(16) float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (Lanes i = 0; i < k; ++i) t[i] = p[i];
    return wasm_v128_load(t);
  }
  static void store(float* p, Lanes k, R r) {
    if (k == 4) return wasm_v128_store(p, r);
    alignas(16) float t[4];
    wasm_v128_store(t, r);
    for (Lanes i = 0; i < k; ++i) p[i] = t[i];
  }
  static R add(R a, R b) { return wasm_f32x4_add(a, b); }
  static R sub(R a, R b) { return wasm_f32x4_sub(a, b); }
  static R madd(R a, R b, R c) { return wasm_f32x4_add(wasm_f32x4_mul(a, b), c); }
  static R splat(float x) { return wasm_f32x4_splat(x); }
};

}  // namespace

WinogradTransforms winograd_transforms_f32_simd128(int tile) { return winograd::transforms<Simd128>(tile); }

}  // namespace ember::cpu::detail

#endif  // __wasm_simd128__
