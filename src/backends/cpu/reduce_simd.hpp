// Declarations of the AVX-512 kernels of the reduction family (reduce_avx512.cpp). Kept
// free of any other include so that the AVX-512 translation unit instantiates no inline or
// template code that could be merged (COMDAT) into code running on other CPUs.
#pragma once

#include <cstdint>

namespace ember::cpu {

// AVX-512 kernels over contiguous arrays (reduce_avx512.cpp).
namespace rsimd {
double sum_f32(const float* x, int64_t n);    // blocks of 2048 in float, blocks summed in double
double sumsq_f32(const float* x, int64_t n);  // sum x^2, same scheme
double sum_f64(const double* x, int64_t n);
double sumsq_dev_f32(const float* x, int64_t n, double mean);  // sum (x - mean)^2, in double
double sumsq_dev_f64(const double* x, int64_t n, double mean);
float max_f32(const float* x, int64_t n);  // NaN if any NaN; -inf when n == 0
float min_f32(const float* x, int64_t n);  // NaN if any NaN; +inf when n == 0
void add_row_f32(double* acc, const float* x, int64_t n);  // acc[i] += x[i]
void add_row_f64(double* acc, const double* x, int64_t n);
double sum_exp_f32(const float* x, int64_t n, float shift);  // sum exp(x - shift)
void exp_f32(const float* x, float* y, int64_t n);            // y = exp(x) (in place allowed)
void softmax_row_f32(const float* x, float* y, int64_t n);    // in place allowed
void log_softmax_row_f32(const float* x, float* y, int64_t n);
// softmax / log_softmax over D rows (stride I) of w <= 32 contiguous columns; in place allowed
void softmax_cols_f32(const float* x, float* y, int64_t D, int64_t I, int64_t w, bool log);
// sort keys: out[i] = (order-preserving key of x[i], xor flip) << 32 | i
void pack_keys_f32(const float* x, int64_t n, uint32_t flip, uint64_t* out);
// number of leading elements of x that are >= thr
int64_t count_ge_u64(const uint64_t* x, int64_t n, uint64_t thr);
void f16_to_f32(const uint16_t* x, float* y, int64_t n);
void bf16_to_f32(const uint16_t* x, float* y, int64_t n);
void f32_to_f16(const float* x, uint16_t* y, int64_t n);  // round to nearest even
void f32_to_bf16(const float* x, uint16_t* y, int64_t n);
}  // namespace rsimd

}  // namespace ember::cpu
