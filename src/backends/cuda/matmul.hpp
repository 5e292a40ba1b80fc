// Matrix products on the GPU for kernels other than matmul itself (conv, attention, fusion
// decorators): a row-major, strided-batched GEMM through cuBLASLt with an optional epilogue.
//
//   C[b] (M x N) = alpha * op(A[b]) (M x K) * op(B[b]) (K x N)  [+ bias (length N, per column)]
//
// Every matrix is row-major with a leading dimension (elements between rows): A is stored
// M x K (lda >= K), or K x M when ta is set (lda >= M), likewise B (K x N, or N x K when tb);
// C is M x N with ldc >= N. Batch strides (elements) may be 0 (a matrix shared by the batch).
// Descriptors and the chosen algorithm are cached per problem, so repeated calls only launch.
#pragma once

#include <string_view>

#include "cuda_backend.hpp"

namespace ember::cuda {

enum class Epilogue : int {
  none = 0,
  bias = 1,       // C += bias (a vector of N elements of C's dtype)
  relu_bias = 2,  // C = relu(C + bias)
  gelu_bias = 3,  // C = gelu_tanh(C + bias) (cuBLASLt's tanh approximation)
};

struct GemmArgs {
  DType dtype = DType::f32;  // f64, f32, f16 or bf16 (A, B and C alike)
  int64_t M = 0, N = 0, K = 0;
  const void* A = nullptr;
  int64_t lda = 0, stride_a = 0;
  bool ta = false;
  const void* B = nullptr;
  int64_t ldb = 0, stride_b = 0;
  bool tb = false;
  void* C = nullptr;
  int64_t ldc = 0, stride_c = 0;
  int64_t batch = 1;
  double alpha = 1.0;
  Epilogue epilogue = Epilogue::none;
  const void* bias = nullptr;
  // null, or a matrix laid out as C (ldc, stride_c) added to the product, before a relu or gelu
  // epilogue (cuBLASLt's beta * C with beta 1, read from here and written to C)
  const void* addend = nullptr;
};

// Runs the product on be.stream(). Throws an Error naming `op` when cuBLASLt finds no algorithm
// for the problem or fails.
void gemm_lt(CudaBackend& be, const GemmArgs& g, std::string_view op = "matmul");
// The same, returning false (nothing launched) when cuBLASLt has no algorithm for this layout
// (e.g. a batch stride it does not accept), so the caller can fall back to a copy.
bool try_gemm_lt(CudaBackend& be, const GemmArgs& g, std::string_view op = "matmul");

// The product of matmul op `op` (its inputs a, b and an optional bias) plus `addend`, a
// contiguous tensor of the product's shape and dtype, in one cuBLASLt call (beta = 1): a residual
// add folded into the product (the fusion decorator's matmul programs). Null, with nothing
// launched, when cuBLASLt has no algorithm for it; the caller then adds.
PrimitivePtr matmul_plus(CudaBackend& be, Op& op, const CudaTensor& addend);

// Whether f32 products (and f32 convolutions) may use TF32 tensor cores (ember::cuda::set_allow_tf32).
bool tf32_allowed();
void set_tf32_allowed(bool on);

}  // namespace ember::cuda
