// Internal header of the cpu reduction family: reductions (reduce.cpp), softmax (softmax.cpp),
// scans (scan.cpp), sort/topk (sort.cpp), and the AVX-512 kernels they share
// (reduce_avx512.cpp; call them only when cpu::features().avx512).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cpu_backend.hpp"
#include "cpu_features.hpp"
#include "reduce_simd.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

void register_softmax_kernels(KernelTable& t);  // softmax.cpp
void register_scan_kernels(KernelTable& t);     // scan.cpp
void register_sort_kernels(KernelTable& t);     // sort.cpp

// The eager reductions' arithmetic over one row, for the fused row programs (fused.cpp). A row
// reduction folds its row in row_fold_passes() passes; each pass begins, folds contiguous runs
// of the row in order, and ends; then the value is stored. A pass folds a run as the eager
// kernel folds its runs, so a row folded in one run gives the eager result bit for bit.
// Supported: sum, mean, max, min, var, std, logsumexp of a float dtype (row_fold_supported).
struct RowAcc {
  double acc = 0;   // the pass's accumulator
  double prev = 0;  // the previous pass's result (var/std: the mean; logsumexp: the shift)
};
bool row_fold_supported(OpKind kind, DType dt);
int row_fold_passes(OpKind kind);
void row_fold_begin(OpKind kind, int pass, RowAcc& a);
void row_fold(OpKind kind, int pass, DType dt, const void* p, int64_t n, RowAcc& a);
void row_fold_end_pass(OpKind kind, int pass, int64_t n, RowAcc& a);  // n: the row's length
void row_fold_store(OpKind kind, const ReduceAttrs& ra, int64_t n, const RowAcc& a, DType dt, void* out);

// The same arithmetic over columns, for the fused column programs (reductions over leading dims):
// col_fold folds one row of w values into w per-column accumulators (acc[j] folds p[j]; prev[j]
// is the column's previous-pass result), as the eager kernels' column mode folds whole rows;
// per-thread partials merge with col_combine; each column then ends its pass and is stored with
// row_fold_end_pass / row_fold_store on RowAcc{acc[j], prev[j]}. column_partials says how many
// partials (row ranges [R*k/n, R*(k+1)/n), folded separately and merged in order) the eager
// kernel's column mode splits `rows` into for `cols` outputs; folding the same ranges gives
// the eager bits.
double col_fold_init(OpKind kind, int pass);
void col_fold(OpKind kind, int pass, DType dt, const void* p, int64_t w, double* acc, const double* prev);
void col_combine(OpKind kind, int pass, double& a, double b);
int64_t column_partials(OpKind kind, int pass, DType dt, int64_t rows, int64_t cols);

// Work below this many elements runs on the calling thread.
inline constexpr int64_t kReduceGrain = 32768;

inline bool use_avx512() { return features().avx512; }

// Runs body(unit_begin, unit_end) over [0, units), in parallel chunks of about kReduceGrain
// elements of work when the total is large.
template <class F>
void run_units(int64_t units, int64_t work_per_unit, F&& body) {
  if (units * work_per_unit <= kReduceGrain) body(0, units);
  else parallel_for(0, units, std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(1, work_per_unit)), body);
}

// A tensor seen as [outer, size, inner] around one dim (rank 0 counts as [1, 1, 1]).
struct DimGeom {
  int64_t outer = 1, size = 1, inner = 1;
};
inline DimGeom dim_geom(const Shape& s, int dim) {
  DimGeom g;
  if (s.rank() == 0) return g;
  for (int d = 0; d < dim; ++d) g.outer *= s[d];
  g.size = s[dim];
  for (int d = dim + 1; d < s.rank(); ++d) g.inner *= s[d];
  return g;
}

// Contiguous conversions between a 16-bit float type (or float itself) and float.
template <class T>
inline void to_f32(const T* x, float* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    std::copy(x, x + n, y);
  } else if constexpr (std::is_same_v<T, f16>) {
    if (use_avx512()) return rsimd::f16_to_f32(reinterpret_cast<const uint16_t*>(x), y, n);
    for (int64_t i = 0; i < n; ++i) y[i] = float(x[i]);
  } else {
    static_assert(std::is_same_v<T, bf16>);
    if (use_avx512()) return rsimd::bf16_to_f32(reinterpret_cast<const uint16_t*>(x), y, n);
    for (int64_t i = 0; i < n; ++i) y[i] = float(x[i]);
  }
}
template <class T>
inline void from_f32(const float* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    std::copy(x, x + n, y);
  } else if constexpr (std::is_same_v<T, f16>) {
    if (use_avx512()) return rsimd::f32_to_f16(x, reinterpret_cast<uint16_t*>(y), n);
    for (int64_t i = 0; i < n; ++i) y[i] = T(x[i]);
  } else {
    static_assert(std::is_same_v<T, bf16>);
    if (use_avx512()) return rsimd::f32_to_bf16(x, reinterpret_cast<uint16_t*>(y), n);
    for (int64_t i = 0; i < n; ++i) y[i] = T(x[i]);
  }
}

}  // namespace ember::cpu
