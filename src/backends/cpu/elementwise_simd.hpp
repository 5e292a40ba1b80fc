// Vectorised fast paths of the cpu elementwise kernels: contiguous f32/f64 data through
// vec/vec_math.hpp (which picks AVX-512 / AVX2 / scalar code at run time), split across the
// thread pool for large tensors.
#pragma once

#include <cstdint>

#include "cpu_tensor.hpp"

namespace ember::cpu::simd {

// y[i] = op(x[i]) for i < n on contiguous f32 or f64 data (y may equal x). False when the
// op / dtype / attributes have no vector kernel (the caller runs its scalar loop).
bool unary(const Op& op, DType dt, const void* x, void* y, int64_t n);
// Same for a strided input x (out contiguous, same shape): vector kernels on each innermost
// run, gathering strided runs through a small buffer.
bool unary_strided(const Op& op, const CpuTensor& x, CpuTensor& out);
// out = op(a, b) for f32/f64 with any strides/broadcasting (out contiguous). False when the
// dtype or op has no vector kernel.
bool binary(const Op& op, const CpuTensor& a, const CpuTensor& b, CpuTensor& out);
// Single-threaded vector kernels on float blocks (the f16/bf16 paths compute in float);
// false when the op has no vector kernel.
bool unary_block_f32(const Op& op, const float* x, float* y, int64_t n);
bool binary_block_f32(const Op& op, const float* a, const float* b, float* y, int64_t n);
// The same with one operand a single value (a op s, s op b): the eager kernels' paths for a
// broadcast value (pow's scalar-exponent fast paths included).
bool binary_scalar_block_f32(const Op& op, const float* a, float s, float* y, int64_t n);
bool scalar_binary_block_f32(const Op& op, float s, const float* b, float* y, int64_t n);
// Contiguous conversion of n elements for f32 <-> f16 / bf16; false for other pairs.
bool cast(DType from, DType to, const void* x, void* y, int64_t n);

}  // namespace ember::cpu::simd
