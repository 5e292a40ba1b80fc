// General matrix multiply for the cpu backend.
//
//   C = alpha * op(A) * op(B) + beta * C
//
// All matrices are described by (row stride, column stride) in elements, so transposed or
// permuted views need no copy: element (i, k) of A is A[i * rsa + k * csa], element (k, j) of
// B is B[k * rsb + j * csb], element (i, j) of C is C[i * rsc + j * csc]. A is M x K, B is
// K x N, C is M x N. beta == 0 means C is not read (it may hold NaN garbage). C must not
// overlap A or B.
//
// f32 / f64 use Goto/BLIS-style packed micro-kernels (AVX-512 or AVX2+FMA, picked at run
// time through cpu::features(); f32 in the wasm build: SIMD128) and the global ThreadPool. The integer types use a simpler
// cache-friendly kernel that accumulates in the element type with wrap-around.
#pragma once

#include <cstdint>

namespace ember::cpu {

// Work a product hands back as C fills (the fusion decorator's matmul epilogues): ep(c, rows,
// cols, rsc) runs once for every block of C (rows x cols elements at c, rows rsc apart, unit
// column stride) as soon as the block holds its final values, while it is still in cache. The
// blocks of one call are disjoint and cover C; they may be handed back on several threads at
// once. A call with an epilogue needs a C of unit column stride.
struct GemmEpilogue {
  void (*fn)(void* ctx, void* c, int64_t rows, int64_t cols, int64_t rsc) = nullptr;
  void* ctx = nullptr;
  void operator()(void* c, int64_t rows, int64_t cols, int64_t rsc) const { fn(ctx, c, rows, cols, rsc); }
};

void gemm_f32(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t rsa,
              int64_t csa, const float* B, int64_t rsb, int64_t csb, float beta, float* C,
              int64_t rsc, int64_t csc);
void gemm_f64(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t rsa,
              int64_t csa, const double* B, int64_t rsb, int64_t csb, double beta, double* C,
              int64_t rsc, int64_t csc);

// Batched: product b uses A + b*sa, B + b*sb, C + b*sc (sa / sb may be 0 for broadcasting).
// Parallelises across the batch when the products are small, inside each product otherwise.
// `ep`, when given, is handed every finished block of C (see GemmEpilogue).
void gemm_batched_f32(int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                      const float* A, int64_t sa, int64_t rsa, int64_t csa, const float* B,
                      int64_t sb, int64_t rsb, int64_t csb, float beta, float* C, int64_t sc,
                      int64_t rsc, int64_t csc, const GemmEpilogue* ep = nullptr);
void gemm_batched_f64(int64_t batch, int64_t M, int64_t N, int64_t K, double alpha,
                      const double* A, int64_t sa, int64_t rsa, int64_t csa, const double* B,
                      int64_t sb, int64_t rsb, int64_t csb, double beta, double* C, int64_t sc,
                      int64_t rsc, int64_t csc, const GemmEpilogue* ep = nullptr);

// Portable kernel for any arithmetic T. Integers accumulate in T with wrap-around (two's
// complement, like PyTorch). Explicitly instantiated for int64_t, int32_t, int16_t, int8_t,
// uint8_t, float and double.
template <class T>
void gemm_batched_generic(int64_t batch, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                          int64_t sa, int64_t rsa, int64_t csa, const T* B, int64_t sb,
                          int64_t rsb, int64_t csb, T beta, T* C, int64_t sc, int64_t rsc,
                          int64_t csc);

extern template void gemm_batched_generic<int64_t>(int64_t, int64_t, int64_t, int64_t, int64_t,
                                                   const int64_t*, int64_t, int64_t, int64_t,
                                                   const int64_t*, int64_t, int64_t, int64_t,
                                                   int64_t, int64_t*, int64_t, int64_t, int64_t);
extern template void gemm_batched_generic<int32_t>(int64_t, int64_t, int64_t, int64_t, int32_t,
                                                   const int32_t*, int64_t, int64_t, int64_t,
                                                   const int32_t*, int64_t, int64_t, int64_t,
                                                   int32_t, int32_t*, int64_t, int64_t, int64_t);
extern template void gemm_batched_generic<int16_t>(int64_t, int64_t, int64_t, int64_t, int16_t,
                                                   const int16_t*, int64_t, int64_t, int64_t,
                                                   const int16_t*, int64_t, int64_t, int64_t,
                                                   int16_t, int16_t*, int64_t, int64_t, int64_t);
extern template void gemm_batched_generic<int8_t>(int64_t, int64_t, int64_t, int64_t, int8_t,
                                                  const int8_t*, int64_t, int64_t, int64_t,
                                                  const int8_t*, int64_t, int64_t, int64_t,
                                                  int8_t, int8_t*, int64_t, int64_t, int64_t);
extern template void gemm_batched_generic<uint8_t>(int64_t, int64_t, int64_t, int64_t, uint8_t,
                                                   const uint8_t*, int64_t, int64_t, int64_t,
                                                   const uint8_t*, int64_t, int64_t, int64_t,
                                                   uint8_t, uint8_t*, int64_t, int64_t, int64_t);
extern template void gemm_batched_generic<float>(int64_t, int64_t, int64_t, int64_t, float,
                                                 const float*, int64_t, int64_t, int64_t,
                                                 const float*, int64_t, int64_t, int64_t, float,
                                                 float*, int64_t, int64_t, int64_t);
extern template void gemm_batched_generic<double>(int64_t, int64_t, int64_t, int64_t, double,
                                                  const double*, int64_t, int64_t, int64_t,
                                                  const double*, int64_t, int64_t, int64_t,
                                                  double, double*, int64_t, int64_t, int64_t);

// ---------------------------------------------------------------------------------------
// Internals shared by gemm.cpp and the per-ISA translation units (and used by tests).
namespace detail {

enum GemmIsa : int { kIsaScalar = 0, kIsaAvx2 = 1, kIsaAvx512 = 2 };

// Highest ISA level usable on this machine (respects EMBER_CPU_ISA).
int gemm_best_isa();

// Same as gemm_f32 / gemm_batched_f32 but with an explicit ISA level (clamped to
// gemm_best_isa()). Used by the tests to cover every path.
void gemm_f32_isa(int isa, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t rsa, int64_t csa, const float* B, int64_t rsb, int64_t csb, float beta,
                  float* C, int64_t rsc, int64_t csc);
void gemm_f64_isa(int isa, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
                  int64_t rsa, int64_t csa, const double* B, int64_t rsb, int64_t csb,
                  double beta, double* C, int64_t rsc, int64_t csc);
void gemm_batched_f32_isa(int isa, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                          const float* A, int64_t sa, int64_t rsa, int64_t csa, const float* B,
                          int64_t sb, int64_t rsb, int64_t csb, float beta, float* C,
                          int64_t sc, int64_t rsc, int64_t csc, const GemmEpilogue* ep = nullptr);
void gemm_batched_f64_isa(int isa, int64_t batch, int64_t M, int64_t N, int64_t K,
                          double alpha, const double* A, int64_t sa, int64_t rsa, int64_t csa,
                          const double* B, int64_t sb, int64_t rsb, int64_t csb, double beta,
                          double* C, int64_t sc, int64_t rsc, int64_t csc,
                          const GemmEpilogue* ep = nullptr);

// Blocking parameters (tunable for benchmarking; 0 = keep).
struct GemmBlocking {
  int64_t kc = 0;  // depth of a packed panel
  int64_t nc = 0;  // width of a packed B panel (L2 resident)
};
void gemm_set_blocking_f32(int isa, GemmBlocking b);

// Micro-kernel table provided by gemm_avx512.cpp / gemm_avx2.cpp (/ gemm_simd128.cpp).
//
// Packed A micro-panel: for each k, `mr` consecutive values (rows), zero padded.
// Packed B panel: ceil(nc / nr) micro-panels, each kc x nr (row k at k * nr), zero padded.
template <class T>
struct GemmKernelSet {
  int mr = 0;
  int nr = 0;
  int64_t kc = 256;  // default blocking
  int64_t nc = 1024;
  // C[0:m, 0:n] = alpha * Ap * B + beta * C with B row k at b + k * ldb (only n <= nr
  // columns are read, so b may point into an unpacked row-major matrix). C rows at
  // c + i * rsc, unit column stride. beta == 0: C is not read. 1 <= m <= mr, 1 <= n <= nr.
  void (*kernel)(int64_t kc, const T* ap, const T* b, int64_t ldb, T* c, int64_t rsc, T alpha,
                 T beta, int m, int n) = nullptr;
  // Packs rows [0, m) x cols [0, kc) of A (element (i,k) at a[i*rsa + k*csa]) into one micro-panel.
  void (*pack_a)(const T* a, int64_t rsa, int64_t csa, int64_t m, int64_t kc, T* dst) = nullptr;
  // Packs rows [0, kc) x cols [0, nc) of B into ceil(nc / nr) micro-panels.
  void (*pack_b)(const T* b, int64_t rsb, int64_t csb, int64_t kc, int64_t nc, T* dst) = nullptr;
  // y[j] = alpha * sum_k x[k] * P[k*rs + j*cs] + beta * y[j] for j < n; requires rs == 1 or
  // cs == 1. beta == 0: y is not read.
  void (*gemv)(int64_t n, int64_t k, T alpha, const T* x, const T* p, int64_t rs, int64_t cs,
               T beta, T* y) = nullptr;
};

const GemmKernelSet<float>* gemm_kernels_avx512_f32();
const GemmKernelSet<double>* gemm_kernels_avx512_f64();
const GemmKernelSet<float>* gemm_kernels_avx2_f32();
const GemmKernelSet<double>* gemm_kernels_avx2_f64();
#if defined(__wasm_simd128__)
// gemm_simd128.cpp: the wasm build's f32 set, which it runs at the scalar level (kIsaScalar).
const GemmKernelSet<float>* gemm_kernels_simd128_f32();
#endif

}  // namespace detail
}  // namespace ember::cpu
