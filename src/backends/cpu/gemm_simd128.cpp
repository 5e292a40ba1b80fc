// WebAssembly SIMD128 micro-kernels, packing routines and GEMV for gemm.cpp (the wasm build).
//
// Compiled only when the target has SIMD128 (the wasm build passes -msimd128,
// cmake/EmberWasm.cmake); gemm.cpp then uses this set at the scalar ISA level, since a wasm module
// has no x86 kernels and SIMD128 is its baseline. Every engine that runs the module has SIMD128.
//
// Register blocking: C micro-tile of MR = 6 rows x NR = 2 vectors (8 floats): 12 accumulators +
// 2 B vectors + 1 broadcast A value = 15 of the 16 xmm / 32 NEON registers V8 maps v128 onto.
// SIMD128 has no fused multiply-add, so each step is a mul and an add: the results may differ from
// the FMA kernels in the last bit, as any two summation orders do. web/CMakeLists.txt compiles
// this file a second time with -mrelaxed-simd -DEMBER_WASM_RELAXED_SIMD for ember-relaxed.wasm,
// where madd() is relaxed SIMD's f32x4.relaxed_madd (docs/web.md).
#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include <cstdint>

#include "gemm.hpp"

namespace ember::cpu::detail {
namespace {

constexpr int kMR = 6;
constexpr int kW = 4;        // floats per vector
constexpr int kNR = 2 * kW;  // floats per micro-tile row

using R = v128_t;

inline R load(const float* p) { return wasm_v128_load(p); }
inline void store(float* p, R v) { wasm_v128_store(p, v); }
inline R splat(float x) { return wasm_f32x4_splat(x); }
inline R zero() { return wasm_f32x4_const_splat(0.0f); }
// a * b + c. Under EMBER_WASM_RELAXED_SIMD: clang 14 has no relaxed_madd builtin and emits
// __builtin_wasm_fma_f32x4 as the prototype opcode f32x4.fma (fd af 01), which
// web/tools/relaxed_simd.py rewrites after linking into f32x4.relaxed_madd (fd 85 02). That
// instruction computes its operands in stack order as a * b + c, whatever clang 14 assumed, so the
// builtin's arguments are (a, b, c) meaning a * b + c.
#if defined(EMBER_WASM_RELAXED_SIMD)
inline R madd(R a, R b, R c) { return __builtin_wasm_fma_f32x4(a, b, c); }
#else
inline R madd(R a, R b, R c) { return wasm_f32x4_add(c, wasm_f32x4_mul(a, b)); }
#endif
inline float hsum(R v) {
  const R s = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1);
}
// The first n (0..4) floats at p, the rest zero; reads nothing past p[n - 1].
inline R load_part(const float* p, int64_t n) {
  if (n >= kW) return load(p);
  switch (n) {
    case 1:
      return wasm_v128_load32_zero(p);
    case 2:
      return wasm_v128_load64_zero(p);
    case 3:
      return wasm_v128_load32_lane(p + 2, wasm_v128_load64_zero(p), 2);
    default:
      return zero();
  }
}
// Stores the first n (0..4) lanes of v at p.
inline void store_part(float* p, R v, int64_t n) {
  if (n >= kW) return store(p, v);
  switch (n) {
    case 1:
      wasm_v128_store32_lane(p, v, 0);
      break;
    case 2:
      wasm_v128_store64_lane(p, v, 0);
      break;
    case 3:
      wasm_v128_store64_lane(p, v, 0);
      wasm_v128_store32_lane(p + 2, v, 2);
      break;
    default:
      break;
  }
}

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// C[0:M, 0:n] = alpha * Ap * B + beta * C with NV vectors per row; PART when n < NV * kW (B and C
// are then read and written only in their first n columns).
template <int M, int NV, bool PART>
__attribute__((noinline)) void ukernel(int64_t kc, const float* __restrict a, const float* __restrict b, int64_t ldb,
                                       float* __restrict c, int64_t rsc, float alpha, float beta, int n) {
  R acc[M][NV];
#pragma clang loop unroll(full)
  for (int r = 0; r < M; ++r)
#pragma clang loop unroll(full)
    for (int j = 0; j < NV; ++j) acc[r][j] = zero();
  for (int64_t k = 0; k < kc; ++k) {
    R bv[NV];
    if (PART) {
#pragma clang loop unroll(full)
      for (int j = 0; j < NV; ++j) bv[j] = load_part(b + j * kW, n - j * kW);
    } else {
#pragma clang loop unroll(full)
      for (int j = 0; j < NV; ++j) bv[j] = load(b + j * kW);
    }
#pragma clang loop unroll(full)
    for (int r = 0; r < M; ++r) {
      const R ar = wasm_v128_load32_splat(a + r);
#pragma clang loop unroll(full)
      for (int j = 0; j < NV; ++j) acc[r][j] = madd(ar, bv[j], acc[r][j]);
    }
    a += kMR;
    b += ldb;
  }
  const R va = splat(alpha), vb = splat(beta);
  const bool use_beta = beta != 0.0f;
#pragma clang loop unroll(full)
  for (int r = 0; r < M; ++r) {
    float* cr = c + r * rsc;
#pragma clang loop unroll(full)
    for (int j = 0; j < NV; ++j) {
      R x = wasm_f32x4_mul(va, acc[r][j]);
      if (PART) {
        const int64_t nj = n - j * kW;
        if (use_beta) x = madd(vb, load_part(cr + j * kW, nj), x);
        store_part(cr + j * kW, x, nj);
      } else {
        if (use_beta) x = madd(vb, load(cr + j * kW), x);
        store(cr + j * kW, x);
      }
    }
  }
}

template <int NV, bool PART, int Mx = kMR>
inline void ukernel_m(int m, int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t rsc,
                      float alpha, float beta, int n) {
  if constexpr (Mx >= 1) {
    if (m == Mx)
      ukernel<Mx, NV, PART>(kc, a, b, ldb, c, rsc, alpha, beta, n);
    else
      ukernel_m<NV, PART, Mx - 1>(m, kc, a, b, ldb, c, rsc, alpha, beta, n);
  }
}

void kernel(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t rsc, float alpha, float beta,
            int m, int n) {
  if (n == kNR)
    ukernel_m<2, false>(m, kc, a, b, ldb, c, rsc, alpha, beta, n);
  else if (n == kW)
    ukernel_m<1, false>(m, kc, a, b, ldb, c, rsc, alpha, beta, n);
  else if (n < kW)
    ukernel_m<1, true>(m, kc, a, b, ldb, c, rsc, alpha, beta, n);
  else
    ukernel_m<2, true>(m, kc, a, b, ldb, c, rsc, alpha, beta, n);
}

void pack_a(const float* a, int64_t rsa, int64_t csa, int64_t m, int64_t kc, float* dst) {
  if (m == kMR && csa == 1) {
    for (int64_t k = 0; k < kc; ++k) {
      float* d = dst + k * kMR;
#pragma clang loop unroll(full)
      for (int i = 0; i < kMR; ++i) d[i] = a[i * rsa + k];
    }
    return;
  }
  if (m == kMR && rsa == 1) {  // A transposed: each k's rows are contiguous
    for (int64_t k = 0; k < kc; ++k) {
      const float* s = a + k * csa;
      float* d = dst + k * kMR;
      store(d, load(s));
      d[4] = s[4];
      d[5] = s[5];
    }
    return;
  }
  for (int64_t k = 0; k < kc; ++k) {
    float* d = dst + k * kMR;
    for (int i = 0; i < kMR; ++i) d[i] = i < m ? a[i * rsa + k * csa] : 0.0f;
  }
}

void pack_b(const float* b, int64_t rsb, int64_t csb, int64_t kc, int64_t nc, float* dst) {
  const int64_t np = (nc + kNR - 1) / kNR;
  if (csb == 1) {
    const int64_t nfull = nc / kNR;
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = b + k * rsb;
      float* d = dst + k * kNR;
      for (int64_t p = 0; p < nfull; ++p) {
        store(d + p * kc * kNR, load(src + p * kNR));
        store(d + p * kc * kNR + kW, load(src + p * kNR + kW));
      }
      if (nfull < np) {
        const int64_t rest = nc - nfull * kNR;
        store(d + nfull * kc * kNR, load_part(src + nfull * kNR, rest));
        store(d + nfull * kc * kNR + kW, rest > kW ? load_part(src + nfull * kNR + kW, rest - kW) : zero());
      }
    }
    return;
  }
  for (int64_t p = 0; p < np; ++p) {
    float* dp = dst + p * kc * kNR;
    const int64_t nj = imin(kNR, nc - p * kNR);
    const float* bp = b + p * kNR * csb;
    for (int64_t k = 0; k < kc; ++k) {
      float* d = dp + k * kNR;
      for (int j = 0; j < kNR; ++j) d[j] = j < nj ? bp[k * rsb + j * csb] : 0.0f;
    }
  }
}

// Axpy form (P rows contiguous): buf[0:nj] (+)= sum_t x[t] * P[t, 0:nj] for KB rows at once.
template <int KB>
void gemv_rows_kblock(int64_t nj, const float* x, const float* p, int64_t rs, bool first, float* buf) {
  R xv[KB];
#pragma clang loop unroll(full)
  for (int t = 0; t < KB; ++t) xv[t] = splat(x[t]);
  int64_t jj = 0;
  for (; jj + kNR <= nj; jj += kNR) {
    R a0 = first ? zero() : load(buf + jj), a1 = first ? zero() : load(buf + jj + kW);
#pragma clang loop unroll(full)
    for (int t = 0; t < KB; ++t) {
      a0 = madd(xv[t], load(p + t * rs + jj), a0);
      a1 = madd(xv[t], load(p + t * rs + jj + kW), a1);
    }
    store(buf + jj, a0);
    store(buf + jj + kW, a1);
  }
  for (; jj < nj; jj += kW) {
    const int64_t nn = nj - jj;
    R a0 = first ? zero() : load(buf + jj);  // buf is sized in whole vectors
#pragma clang loop unroll(full)
    for (int t = 0; t < KB; ++t) a0 = madd(xv[t], load_part(p + t * rs + jj, nn), a0);
    store(buf + jj, a0);
  }
}

void gemv(int64_t n, int64_t k, float alpha, const float* x, const float* p, int64_t rs, int64_t cs, float beta,
          float* y) {
  if (cs == 1) {
    constexpr int64_t kCols = 1024;  // 4 KiB of partial sums
    alignas(16) float buf[kCols];
    for (int64_t j0 = 0; j0 < n; j0 += kCols) {
      const int64_t nj = imin(kCols, n - j0);
      int64_t k0 = 0;
      for (; k0 + 4 <= k; k0 += 4) gemv_rows_kblock<4>(nj, x + k0, p + k0 * rs + j0, rs, k0 == 0, buf);
      for (; k0 < k; ++k0) gemv_rows_kblock<1>(nj, x + k0, p + k0 * rs + j0, rs, k0 == 0, buf);
      const R va = splat(alpha), vb = splat(beta);
      for (int64_t jj = 0; jj < nj; jj += kW) {
        const int64_t nn = nj - jj;
        R r = wasm_f32x4_mul(va, load(buf + jj));
        if (beta != 0.0f) r = madd(vb, load_part(y + j0 + jj, nn), r);
        store_part(y + j0 + jj, r, nn);
      }
    }
    return;
  }
  // Dot form (P columns contiguous, rs == 1): four columns at a time.
  const int64_t kfull = k - k % kW, krest = k - kfull;
  int64_t j = 0;
  constexpr int J = 4;
  for (; j + J <= n; j += J) {
    R acc[J];
#pragma clang loop unroll(full)
    for (int t = 0; t < J; ++t) acc[t] = zero();
    const float* col = p + j * cs;
    int64_t kk = 0;
    for (; kk < kfull; kk += kW) {
      const R xv = load(x + kk);
#pragma clang loop unroll(full)
      for (int t = 0; t < J; ++t) acc[t] = madd(xv, load(col + t * cs + kk), acc[t]);
    }
    if (krest) {
      const R xv = load_part(x + kk, krest);
#pragma clang loop unroll(full)
      for (int t = 0; t < J; ++t) acc[t] = madd(xv, load_part(col + t * cs + kk, krest), acc[t]);
    }
    for (int t = 0; t < J; ++t) {
      const float s = alpha * hsum(acc[t]);
      y[j + t] = beta == 0.0f ? s : s + beta * y[j + t];
    }
  }
  for (; j < n; ++j) {
    R acc = zero();
    const float* col = p + j * cs;
    int64_t kk = 0;
    for (; kk < kfull; kk += kW) acc = madd(load(x + kk), load(col + kk), acc);
    if (krest) acc = madd(load_part(x + kk, krest), load_part(col + kk, krest), acc);
    const float s = alpha * hsum(acc);
    y[j] = beta == 0.0f ? s : s + beta * y[j];
  }
}

constexpr GemmKernelSet<float> make_set() {
  GemmKernelSet<float> s;
  s.mr = kMR;
  s.nr = kNR;
  s.kc = 256;
  s.nc = 1024;
  s.kernel = &kernel;
  s.pack_a = &pack_a;
  s.pack_b = &pack_b;
  s.gemv = &gemv;
  return s;
}

constexpr GemmKernelSet<float> g_set_f32 = make_set();

}  // namespace

const GemmKernelSet<float>* gemm_kernels_simd128_f32() { return &g_set_f32; }

}  // namespace ember::cpu::detail

#endif  // __wasm_simd128__
