// Reductions: sum mean prod max min any all var std norm logsumexp argmax argmin max_dim min_dim,
// with the CPU backend's semantics (src/backends/cpu/reduce.cpp): sums and products of
// integers / bool give i64 (wrapping), max/min and the arg ops propagate NaN (the first NaN
// wins the arg ops, and ties go to the first occurrence), var/std divide by
// max(n - correction, 0), logsumexp is shifted by the max (inf-safe).
//
// Every op is one generated module built from a small "reducer" (accumulator type, init,
// step, merge, warp shuffle, store) and the same set of kernels:
//   * row_thread / row_warp / row_block: the innermost reduced dim is contiguous (runs of L
//     elements, Q runs per output): one thread, one warp or one block (optionally several
//     blocks, "splits", whose partial accumulators the last split block to finish, or a
//     finalize kernel, merges in order) per output, with 16-byte vector loads;
//   * col: the innermost kept dim is contiguous: threads along it (coalesced), each walking a
//     chunk of the reduced positions, merged through shared memory (and splits); col_vec, when
//     one strided dim is reduced and the layout allows, moves 16-byte vectors of adjacent outputs;
//   * anything else is first copied into a contiguous [kept..., reduced...] buffer.
// Accumulation: half/bf16/f32 in float, f64 in double, integers in 64 bits. No atomics: every
// result is deterministic.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "cuda_backend.hpp"
#include "reduce_sources.hpp"

namespace ember::cuda {

// ---------------------------------------------------------------------------------------------
// Shared device helpers
// ---------------------------------------------------------------------------------------------
namespace {
const char* kHelpers = R"CUDA(
// warp shuffles of every scalar type
#define EMBER_FULL_MASK 0xffffffffu
__device__ __forceinline__ float shfl_x(float v, int m) { return __shfl_xor_sync(EMBER_FULL_MASK, v, m); }
__device__ __forceinline__ double shfl_x(double v, int m) { return __shfl_xor_sync(EMBER_FULL_MASK, v, m); }
__device__ __forceinline__ long long shfl_x(long long v, int m) { return __shfl_xor_sync(EMBER_FULL_MASK, v, m); }
__device__ __forceinline__ unsigned long long shfl_x(unsigned long long v, int m) { return __shfl_xor_sync(EMBER_FULL_MASK, v, m); }
__device__ __forceinline__ int shfl_x(int v, int m) { return __shfl_xor_sync(EMBER_FULL_MASK, v, m); }
__device__ __forceinline__ unsigned shfl_x(unsigned v, int m) { return __shfl_xor_sync(EMBER_FULL_MASK, v, m); }
__device__ __forceinline__ short shfl_x(short v, int m) { return short(__shfl_xor_sync(EMBER_FULL_MASK, int(v), m)); }
__device__ __forceinline__ signed char shfl_x(signed char v, int m) { return (signed char)(__shfl_xor_sync(EMBER_FULL_MASK, int(v), m)); }
__device__ __forceinline__ unsigned char shfl_x(unsigned char v, int m) { return (unsigned char)(__shfl_xor_sync(EMBER_FULL_MASK, int(v), m)); }
__device__ __forceinline__ bool shfl_x(bool v, int m) { return __shfl_xor_sync(EMBER_FULL_MASK, int(v), m) != 0; }
__device__ __forceinline__ float shfl_u(float v, int d) { return __shfl_up_sync(EMBER_FULL_MASK, v, d); }
__device__ __forceinline__ double shfl_u(double v, int d) { return __shfl_up_sync(EMBER_FULL_MASK, v, d); }
__device__ __forceinline__ long long shfl_u(long long v, int d) { return __shfl_up_sync(EMBER_FULL_MASK, v, d); }
__device__ __forceinline__ unsigned long long shfl_u(unsigned long long v, int d) { return __shfl_up_sync(EMBER_FULL_MASK, v, d); }
__device__ __forceinline__ int shfl_u(int v, int d) { return __shfl_up_sync(EMBER_FULL_MASK, v, d); }
__device__ __forceinline__ short shfl_u(short v, int d) { return short(__shfl_up_sync(EMBER_FULL_MASK, int(v), d)); }
__device__ __forceinline__ signed char shfl_u(signed char v, int d) { return (signed char)(__shfl_up_sync(EMBER_FULL_MASK, int(v), d)); }
__device__ __forceinline__ unsigned char shfl_u(unsigned char v, int d) { return (unsigned char)(__shfl_up_sync(EMBER_FULL_MASK, int(v), d)); }
__device__ __forceinline__ bool shfl_u(bool v, int d) { return __shfl_up_sync(EMBER_FULL_MASK, int(v), d) != 0; }

// math in the accumulator's precision
__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return log(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double m_abs(double x) { return fabs(x); }
__device__ __forceinline__ float m_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double m_pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float m_inf(float) { return ember_inf(); }
__device__ __forceinline__ double m_inf(double) { return ember_inf_d(); }
__device__ __forceinline__ float m_nan(float) { return ember_nan(); }
__device__ __forceinline__ double m_nan(double) { return ember_nan_d(); }
// NaN-propagating max
__device__ __forceinline__ float m_nanmax(float a, float b) { return (b != b || b > a) ? b : a; }
__device__ __forceinline__ double m_nanmax(double a, double b) { return (b != b || b > a) ? b : a; }

// All-reductions over groups of `tpr` consecutive threads (a power of two): shuffles within a
// warp for tpr <= 32; for tpr > 32 the group is the whole block (one group per block), through
// `red` (32 entries of shared memory). Every thread of the block must call them (uniformly),
// and every thread gets the result. The order of the operations is fixed: deterministic.
#define EMBER_GROUP_REDUCE(NAME, TYPE, OP)                                              \
  __device__ __forceinline__ TYPE NAME(TYPE v, int tpr, TYPE* red) {                    \
    const int w = tpr < 32 ? tpr : 32;                                                  \
    for (int m = w >> 1; m >= 1; m >>= 1) { TYPE o = shfl_x(v, m); v = OP(v, o); }       \
    if (tpr <= 32) return v;                                                            \
    __syncthreads();                                                                    \
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;                             \
    __syncthreads();                                                                    \
    v = red[0];                                                                         \
    const int nw = blockDim.x >> 5;                                                     \
    for (int i = 1; i < nw; ++i) v = OP(v, red[i]);                                     \
    return v;                                                                           \
  }
// The same over R values at once (rows processed together): the R reductions share the
// shuffle steps and the barriers; `red` holds 32 * R entries. OP: ReduceAdd or ReduceNanMax.
struct ReduceAdd {
  template <class V> __device__ __forceinline__ V operator()(V a, V b) const { return a + b; }
};
struct ReduceNanMax {
  template <class V> __device__ __forceinline__ V operator()(V a, V b) const { return m_nanmax(a, b); }
};
template <int R, class OP, class TYPE>
__device__ __forceinline__ void group_reduce_n(TYPE (&a)[R], int tpr, TYPE* red, OP op) {
  const int w = tpr < 32 ? tpr : 32;
#pragma unroll
  for (int m = 16; m >= 1; m >>= 1) {
    if (m < w) {
#pragma unroll
      for (int i = 0; i < R; ++i) a[i] = op(a[i], shfl_x(a[i], m));
    }
  }
  if (tpr <= 32) return;
  __syncthreads();
  if ((threadIdx.x & 31) == 0) {
#pragma unroll
    for (int i = 0; i < R; ++i) red[32 * i + (threadIdx.x >> 5)] = a[i];
  }
  __syncthreads();
  const int nw = blockDim.x >> 5;
#pragma unroll
  for (int i = 0; i < R; ++i) a[i] = red[32 * i];
  for (int j = 1; j < nw; ++j) {
#pragma unroll
    for (int i = 0; i < R; ++i) a[i] = op(a[i], red[32 * i + j]);
  }
}
#define EMBER_ADD(a, b) ((a) + (b))
EMBER_GROUP_REDUCE(group_sum, float, EMBER_ADD)
EMBER_GROUP_REDUCE(group_sum, double, EMBER_ADD)
EMBER_GROUP_REDUCE(group_max, float, m_nanmax)
EMBER_GROUP_REDUCE(group_max, double, m_nanmax)
)CUDA";
}  // namespace

const std::string& reduce_family_helpers() {
  static const std::string s(kHelpers);
  return s;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Source generation
// ---------------------------------------------------------------------------------------------

bool is_arg_op(OpKind k) {
  return k == OpKind::argmax || k == OpKind::argmin || k == OpKind::max_dim || k == OpKind::min_dim;
}

// The reduced dims may be visited in any order (all but the index-returning ops).
bool reorderable(OpKind k) { return !is_arg_op(k); }

// Literal extremes of a compute type (for max/min identities).
const char* lowest_literal(DType dt) {
  switch (dt) {
    case DType::f64: return "(-ember_inf_d())";
    case DType::f32: case DType::f16: case DType::bf16: return "(-ember_inf())";
    case DType::i64: return "(-9223372036854775807LL - 1)";
    case DType::i32: return "(-2147483647 - 1)";
    case DType::i16: return "((short)-32768)";
    case DType::i8: return "((signed char)-128)";
    case DType::u8: return "((unsigned char)0)";
    case DType::boolean: return "false";
  }
  return "0";
}
const char* highest_literal(DType dt) {
  switch (dt) {
    case DType::f64: return "ember_inf_d()";
    case DType::f32: case DType::f16: case DType::bf16: return "ember_inf()";
    case DType::i64: return "9223372036854775807LL";
    case DType::i32: return "2147483647";
    case DType::i16: return "((short)32767)";
    case DType::i8: return "((signed char)127)";
    case DType::u8: return "((unsigned char)255)";
    case DType::boolean: return "true";
  }
  return "0";
}

// The reducer of `op`: Acc, r_init, r_step(acc, value, flat reduced index), r_merge (in any
// order: the arg ops break ties by index), r_shfl, r_store.
std::string reducer_code(OpKind op, DType dt, int norm_kind) {
  const bool fl = is_float(dt);
  std::string s;
  switch (op) {
    case OpKind::sum:
    case OpKind::mean:
      if (fl) {
        s += "typedef C A;\n";
        s += R"CUDA(
struct Acc { A v; };
__device__ __forceinline__ Acc r_init() { Acc a; a.v = A(0); return a; }
__device__ __forceinline__ void r_step(Acc& a, C x, int64_t) { a.v += A(x); }
__device__ __forceinline__ void r_merge(Acc& a, const Acc& b) { a.v += b.v; }
__device__ __forceinline__ Acc r_shfl(const Acc& a, int m) { Acc b; b.v = shfl_x(a.v, m); return b; }
)CUDA";
        if (op == OpKind::sum)
          s += "__device__ __forceinline__ void r_store(const Params& P, int64_t o, const Acc& a) { ((T*)P.out)[o] = T(a.v); }\n";
        else
          s += "__device__ __forceinline__ void r_store(const Params& P, int64_t o, const Acc& a) { ((T*)P.out)[o] = T(a.v / A(P.div)); }\n";
      } else {
        // integers and bool -> i64, wrapping
        s += R"CUDA(
struct Acc { unsigned long long v; };
__device__ __forceinline__ Acc r_init() { Acc a; a.v = 0ull; return a; }
__device__ __forceinline__ void r_step(Acc& a, C x, int64_t) { a.v += (unsigned long long)(int64_t(x)); }
__device__ __forceinline__ void r_merge(Acc& a, const Acc& b) { a.v += b.v; }
__device__ __forceinline__ Acc r_shfl(const Acc& a, int m) { Acc b; b.v = shfl_x(a.v, m); return b; }
__device__ __forceinline__ void r_store(const Params& P, int64_t o, const Acc& a) { ((int64_t*)P.out)[o] = int64_t(a.v); }
)CUDA";
      }
      break;
    case OpKind::prod:
      if (fl) {
        s += R"CUDA(
typedef C A;
struct Acc { A v; };
__device__ __forceinline__ Acc r_init() { Acc a; a.v = A(1); return a; }
__device__ __forceinline__ void r_step(Acc& a, C x, int64_t) { a.v *= A(x); }
__device__ __forceinline__ void r_merge(Acc& a, const Acc& b) { a.v *= b.v; }
__device__ __forceinline__ Acc r_shfl(const Acc& a, int m) { Acc b; b.v = shfl_x(a.v, m); return b; }
__device__ __forceinline__ void r_store(const Params& P, int64_t o, const Acc& a) { ((T*)P.out)[o] = T(a.v); }
)CUDA";
      } else {
        s += R"CUDA(
struct Acc { unsigned long long v; };
__device__ __forceinline__ Acc r_init() { Acc a; a.v = 1ull; return a; }
__device__ __forceinline__ void r_step(Acc& a, C x, int64_t) { a.v *= (unsigned long long)(int64_t(x)); }
__device__ __forceinline__ void r_merge(Acc& a, const Acc& b) { a.v *= b.v; }
__device__ __forceinline__ Acc r_shfl(const Acc& a, int m) { Acc b; b.v = shfl_x(a.v, m); return b; }
__device__ __forceinline__ void r_store(const Params& P, int64_t o, const Acc& a) { ((int64_t*)P.out)[o] = int64_t(a.v); }
)CUDA";
      }
      break;
    case OpKind::max:
    case OpKind::min: {
      const bool mx = op == OpKind::max;
      s += std::string("#define R_IDENT ") + (mx ? lowest_literal(dt) : highest_literal(dt)) + "\n";
      s += std::string("#define R_BETTER(x, a) ((x) ") + (mx ? ">" : "<") + " (a))\n";
      s += std::string("#define R_FLOAT ") + (fl ? "1" : "0") + "\n";
      s += R"CUDA(
struct Acc { C v; };
__device__ __forceinline__ Acc r_init() { Acc a; a.v = R_IDENT; return a; }
__device__ __forceinline__ void r_step(Acc& a, C x, int64_t) {
#if R_FLOAT
  if (x != x || R_BETTER(x, a.v)) a.v = x;  // a NaN sticks (x > NaN is false)
#else
  if (R_BETTER(x, a.v)) a.v = x;
#endif
}
__device__ __forceinline__ void r_merge(Acc& a, const Acc& b) { r_step(a, b.v, 0); }
__device__ __forceinline__ Acc r_shfl(const Acc& a, int m) { Acc b; b.v = shfl_x(a.v, m); return b; }
__device__ __forceinline__ void r_store(const Params& P, int64_t o, const Acc& a) { ((T*)P.out)[o] = T(a.v); }
)CUDA";
      break;
    }
    case OpKind::any:
    case OpKind::all: {
      const bool all = op == OpKind::all;
      s += std::string("#define R_IDENT ") + (all ? "true" : "false") + "\n";
      s += std::string("#define R_OP ") + (all ? "&&" : "||") + "\n";
      s += R"CUDA(
struct Acc { bool v; };
__device__ __forceinline__ Acc r_init() { Acc a; a.v = R_IDENT; return a; }
__device__ __forceinline__ void r_step(Acc& a, C x, int64_t) { a.v = a.v R_OP (x != C(0)); }
__device__ __forceinline__ void r_merge(Acc& a, const Acc& b) { a.v = a.v R_OP b.v; }
__device__ __forceinline__ Acc r_shfl(const Acc& a, int m) { Acc b; b.v = shfl_x(a.v, m); return b; }
__device__ __forceinline__ void r_store(const Params& P, int64_t o, const Acc& a) { ((bool*)P.out)[o] = a.v; }
)CUDA";
      break;
    }
    case OpKind::var:
    case OpKind::std:
      // Welford: count, mean and sum of squared deviations, merged with Chan's formula
      s += std::string("#define R_STD ") + (op == OpKind::std ? "1" : "0") + "\n";
      s += R"CUDA(
typedef C A;
struct Acc { int64_t n; A mean; A m2; };
__device__ __forceinline__ Acc r_init() { Acc a; a.n = 0; a.mean = A(0); a.m2 = A(0); return a; }
__device__ __forceinline__ void r_step(Acc& a, C x, int64_t) {
  a.n += 1;
  A d = A(x) - a.mean;
  a.mean += d / A(a.n);
  a.m2 += d * (A(x) - a.mean);
}
__device__ __forceinline__ void r_merge(Acc& a, const Acc& b) {
  if (b.n == 0) return;
  if (a.n == 0) { a = b; return; }
  int64_t n = a.n + b.n;
  A d = b.mean - a.mean;
  A fb = A(b.n) / A(n);
  a.mean += d * fb;
  a.m2 += b.m2 + d * d * A(a.n) * fb;
  a.n = n;
}
__device__ __forceinline__ Acc r_shfl(const Acc& a, int m) {
  Acc b; b.n = shfl_x(a.n, m); b.mean = shfl_x(a.mean, m); b.m2 = shfl_x(a.m2, m); return b;
}
__device__ __forceinline__ void r_store(const Params& P, int64_t o, const Acc& a) {
  A v = a.m2 / A(P.div);  // div = max(n - correction, 0): 0 gives inf / NaN like the CPU
#if R_STD
  v = m_sqrt(v);
#endif
  ((T*)P.out)[o] = T(v);
}
)CUDA";
      break;
    case OpKind::norm:
      s += "#define R_KIND " + std::to_string(norm_kind) + "\n";
      s += R"CUDA(
typedef C A;
struct Acc { A v; };
__device__ __forceinline__ Acc r_init() { Acc a; a.v = R_KIND == 4 ? m_inf(A(0)) : A(0); return a; }
__device__ __forceinline__ void r_fold(Acc& a, A av) {  // folds |x| (or a partial of kind 3/4)
#if R_KIND == 3
  if (av != av || av > a.v) a.v = av;
#elif R_KIND == 4
  if (av != av || av < a.v) a.v = av;
#else
  a.v += av;
#endif
}
__device__ __forceinline__ void r_step_p(Acc& a, C x, A p) {
  A v = A(x);
#if R_KIND == 0
  a.v += v != A(0) ? A(1) : A(0);
#elif R_KIND == 1
  a.v += m_abs(v);
#elif R_KIND == 2
  a.v += v * v;
#elif R_KIND == 5
  a.v += m_pow(m_abs(v), p);
#else
  r_fold(a, m_abs(v));
#endif
}
__device__ __forceinline__ void r_merge(Acc& a, const Acc& b) { r_fold(a, b.v); }
__device__ __forceinline__ Acc r_shfl(const Acc& a, int m) { Acc b; b.v = shfl_x(a.v, m); return b; }
__device__ __forceinline__ void r_store(const Params& P, int64_t o, const Acc& a) {
  A v = a.v;
#if R_KIND == 2
  v = m_sqrt(v);
#elif R_KIND == 5
  v = m_pow(v, A(1.0 / P.p));
#endif
  ((T*)P.out)[o] = T(v);
}
#define R_NEEDS_P 1
)CUDA";
      break;
    case OpKind::logsumexp:
      // online (max, sum of exp(x - max)); the result is the CPU's log(sum exp(x - m)) + m with
      // m = max, and +-inf / NaN maxima give +-inf / NaN directly
      s += R"CUDA(
typedef C A;
struct Acc { A m; A s; };
__device__ __forceinline__ Acc r_init() { Acc a; a.m = -m_inf(A(0)); a.s = A(0); return a; }
__device__ __forceinline__ void r_step(Acc& a, C xc, int64_t) {
  A x = A(xc);
  if (x != x) { a.m = x; return; }
  if (a.m != a.m) return;
  if (x > a.m) {
    a.s = (a.m == -m_inf(A(0)) ? A(0) : a.s * m_exp(a.m - x)) + A(1);
    a.m = x;
  } else if (x > -m_inf(A(0))) {
    a.s += m_exp(x - a.m);  // (exp(inf - inf) when a.m = inf is NaN, unused: the result is inf)
  }
}
__device__ __forceinline__ void r_merge(Acc& a, const Acc& b) {
  if (a.m != a.m) return;
  if (b.m != b.m) { a = b; return; }
  if (b.m == -m_inf(A(0))) return;
  if (a.m == -m_inf(A(0))) { a = b; return; }
  if (a.m >= b.m) a.s = a.s + b.s * m_exp(b.m - a.m);
  else { a.s = a.s * m_exp(a.m - b.m) + b.s; a.m = b.m; }
}
__device__ __forceinline__ Acc r_shfl(const Acc& a, int m) { Acc b; b.m = shfl_x(a.m, m); b.s = shfl_x(a.s, m); return b; }
__device__ __forceinline__ void r_store(const Params& P, int64_t o, const Acc& a) {
  A v = a.m;
  if (v == v && v != m_inf(A(0)) && v != -m_inf(A(0))) v = m_log(a.s) + a.m;
  ((T*)P.out)[o] = T(v);
}
)CUDA";
      break;
    case OpKind::argmax:
    case OpKind::argmin:
    case OpKind::max_dim:
    case OpKind::min_dim: {
      const bool mx = op == OpKind::argmax || op == OpKind::max_dim;
      s += std::string("#define R_GT(x, y) ((x) ") + (mx ? ">" : "<") + " (y))\n";
      s += std::string("#define R_FLOAT ") + (fl ? "1" : "0") + "\n";
      s += R"CUDA(
// (value, flat index); index -1 = nothing seen. The order: a NaN beats everything, then the
// larger (smaller) value; equal values (and NaNs) go to the smaller index. Order-independent.
struct Acc { C v; int64_t i; };
__device__ __forceinline__ Acc r_init() { Acc a; a.v = C(0); a.i = -1; return a; }
__device__ __forceinline__ bool r_beats(C x, int64_t xi, C y, int64_t yi) {
#if R_FLOAT
  bool xn = x != x, yn = y != y;
  if (xn || yn) return xn && (!yn || xi < yi);
#endif
  return R_GT(x, y) || (!R_GT(y, x) && xi < yi);
}
__device__ __forceinline__ void r_step(Acc& a, C x, int64_t i) {
  if (a.i < 0 || r_beats(x, i, a.v, a.i)) { a.v = x; a.i = i; }
}
__device__ __forceinline__ void r_merge(Acc& a, const Acc& b) {
  if (b.i >= 0 && (a.i < 0 || r_beats(b.v, b.i, a.v, a.i))) a = b;
}
__device__ __forceinline__ Acc r_shfl(const Acc& a, int m) { Acc b; b.v = shfl_x(a.v, m); b.i = shfl_x(a.i, m); return b; }
__device__ __forceinline__ void r_store(const Params& P, int64_t o, const Acc& a) {
  int64_t i = a.i < 0 ? 0 : a.i;
  if (P.out2) { ((T*)P.out)[o] = T(a.v); ((int64_t*)P.out2)[o] = i; }
  else ((int64_t*)P.out)[o] = i;
}
)CUDA";
      break;
    }
    default:
      EMBER_FAIL(op_name(op), ": not a CUDA reduction");
  }
  return s;
}

// The kernels every reduction module holds (after its reducer).
const char* kReduceKernels = R"CUDA(
// offset_of, compiled once per module (it runs once per row or run: keeping its 64-bit
// divisions out of line keeps the kernels small)
__device__ __noinline__ int64_t r_off(int64_t i, const Shape& sh, const Strides& st) { return offset_of(i, sh, st); }
// (the kernels' Shape and Strides parameters, whose addresses r_off takes, are EMBER_GC)

#ifndef R_NEEDS_P
#define R_STEP(a, x, i) r_step(a, x, i)
#else
#define R_STEP(a, x, i) r_step_p(a, x, pval)
#endif

// 16 bytes of T
union VecT { uint4 u; T v[R_V]; };

__device__ __forceinline__ Acc warp_reduce(Acc a) {
  for (int m = 16; m >= 1; m >>= 1) r_merge(a, r_shfl(a, m));
  return a;
}
// Valid in thread 0. Callable repeatedly (guards its shared memory).
__device__ __forceinline__ Acc block_reduce(Acc a) {
  __shared__ Acc sh[32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  a = warp_reduce(a);
  __syncthreads();
  if (lane == 0) sh[w] = a;
  __syncthreads();
  if (w == 0) {
    a = lane < nw ? sh[lane] : r_init();
    a = warp_reduce(a);
  }
  return a;
}

// Folds p[0..L) (flat reduced indices idx0 + i) into a: thread t of nt takes every nt-th
// element, 16-byte vectors in the aligned middle part.
__device__ __forceinline__ void fold_run(Acc& a, const T* __restrict__ p, int64_t L, int64_t idx0, int t, int nt, double pd) {
#ifdef R_NEEDS_P
  const A pval = A(pd);
#else
  (void)pd;
#endif
  int64_t head = (int64_t)(((16u - (unsigned)((unsigned long long)p & 15u)) & 15u) / sizeof(T));
  if (head > L) head = L;
  for (int64_t i = t; i < head; i += nt) R_STEP(a, C(p[i]), idx0 + i);
  const int64_t nv = (L - head) / R_V;
  const uint4* pv = (const uint4*)(p + head);
  const int64_t base = idx0 + head;
  int64_t j = t;
  // R_U vectors in flight per thread (about 16 elements), each folded into its own accumulator
  // (R_U independent chains of additions, merged after the loop)
  Acc b[R_U];
  b[0] = a;
#pragma unroll
  for (int u = 1; u < R_U; ++u) b[u] = r_init();
  for (; j + (R_U - 1) * (int64_t)nt < nv; j += R_U * (int64_t)nt) {
    VecT v[R_U];
#pragma unroll
    for (int u = 0; u < R_U; ++u) v[u].u = pv[j + u * nt];
#pragma unroll
    for (int u = 0; u < R_U; ++u)
#pragma unroll
      for (int e = 0; e < R_V; ++e) R_STEP(b[u], C(v[u].v[e]), base + (j + u * nt) * R_V + e);
  }
#pragma unroll
  for (int u = 1; u < R_U; ++u) r_merge(b[0], b[u]);
  a = b[0];
  for (; j < nv; j += nt) {
    VecT v0;
    v0.u = pv[j];
#pragma unroll
    for (int e = 0; e < R_V; ++e) R_STEP(a, C(v0.v[e]), base + j * R_V + e);
  }
  for (int64_t i = head + nv * R_V + t; i < L; i += nt) R_STEP(a, C(p[i]), idx0 + i);
}

// One thread per output. Output o's runs start at x + offset(o | ksh, kst) + offset(q | qsh, qst).
extern "C" __global__ void row_thread(Params P, const T* __restrict__ x, EMBER_GC Shape ksh, EMBER_GC Strides kst,
                                      EMBER_GC Shape qsh, EMBER_GC Strides qst, int64_t Q, int64_t L, int64_t out_n) {
#ifdef R_NEEDS_P
  const A pval = A(P.p);
#endif
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < out_n; o += int64_t(gridDim.x) * blockDim.x) {
    const T* base = x + r_off(o, ksh, kst);
    Acc a = r_init();
    for (int64_t q = 0; q < Q; ++q) {
      const T* p = base + r_off(q, qsh, qst);
      for (int64_t i = 0; i < L; ++i) R_STEP(a, C(p[i]), q * L + i);
    }
    r_store(P, o, a);
  }
}

// One warp per output.
extern "C" __global__ void row_warp(Params P, const T* __restrict__ x, EMBER_GC Shape ksh, EMBER_GC Strides kst,
                                    EMBER_GC Shape qsh, EMBER_GC Strides qst, int64_t Q, int64_t L, int64_t out_n) {
  const int lane = threadIdx.x & 31;
  const int64_t w0 = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nw = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t o = w0; o < out_n; o += nw) {
    const T* base = x + r_off(o, ksh, kst);
    Acc a = r_init();
    for (int64_t q = 0; q < Q; ++q) fold_run(a, base + r_off(q, qsh, qst), L, q * L, lane, 32, P.p);
    a = warp_reduce(a);
    if (lane == 0) r_store(P, o, a);
  }
}

// *p read from L2 (written by other blocks of this kernel: not through this SM's L1)
__device__ __forceinline__ Acc load_cg(const Acc* p) {
  Acc a;
  if (sizeof(Acc) % 4 == 0) {
    for (int k = 0; k < int(sizeof(Acc) / 4); ++k)
      reinterpret_cast<unsigned*>(&a)[k] = __ldcg(reinterpret_cast<const unsigned*>(p) + k);
  } else {
    for (int k = 0; k < int(sizeof(Acc)); ++k)
      reinterpret_cast<unsigned char*>(&a)[k] = __ldcg(reinterpret_cast<const unsigned char*>(p) + k);
  }
  return a;
}

// Split s of output o (in thread 0: a) hands its partial over in part[o * S + s]; the block that
// hands over last merges the S partials in split order (as finalize_block does, so the result
// is the same whichever block is last), stores the output and sets cnt[o] back to 0.
__device__ void hand_over(const Params& P, Acc* part, unsigned* cnt, int64_t o, int S, int s, const Acc& a) {
  __shared__ bool last;
  if (threadIdx.x == 0) {
    part[o * S + s] = a;
    __threadfence();
    last = atomicAdd(cnt + o, 1u) == unsigned(S - 1);
  }
  __syncthreads();
  if (last) {
    __threadfence();
    Acc m = r_init();
    for (int k = threadIdx.x; k < S; k += blockDim.x) r_merge(m, load_cg(part + o * S + k));
    m = block_reduce(m);
    if (threadIdx.x == 0) {
      r_store(P, o, m);
      cnt[o] = 0u;
    }
  }
  __syncthreads();  // every thread has read `last` before the next output's hand-over
}

// One block per (split, output): gridDim.x splits, outputs grid-stride over blockIdx.y. With
// S > 1 each block writes its partial accumulator to part[o * S + split]; with counters (cnt:
// zero, one per output) the last block of each output merges them, else finalize_* does.
extern "C" __global__ void row_block(Params P, const T* __restrict__ x, EMBER_GC Shape ksh, EMBER_GC Strides kst,
                                     EMBER_GC Shape qsh, EMBER_GC Strides qst, int64_t Q, int64_t L, int64_t out_n,
                                     int S, Acc* part, unsigned* cnt) {
  const int s = blockIdx.x;
  for (int64_t o = blockIdx.y; o < out_n; o += gridDim.y) {
    const T* base = x + r_off(o, ksh, kst);
    Acc a = r_init();
    if (Q == 1) {
      // split the run into S chunks of a multiple of 128 bytes (whole cache lines: 16 bytes
      // measured 1.7 us slower at [64M] f32 on an H200)
      constexpr int64_t kLine = 128 / sizeof(T);
      int64_t chunk = (L + S - 1) / S;
      chunk = (chunk + kLine - 1) / kLine * kLine;
      int64_t i0 = chunk * s, i1 = i0 + chunk < L ? i0 + chunk : L;
      if (i0 < i1) fold_run(a, base + r_off(0, qsh, qst) + i0, i1 - i0, i0, threadIdx.x, blockDim.x, P.p);
    } else {
      int64_t q0 = Q * s / S, q1 = Q * (s + 1) / S;
      for (int64_t q = q0; q < q1; ++q)
        fold_run(a, base + r_off(q, qsh, qst), L, q * L, threadIdx.x, blockDim.x, P.p);
    }
    a = block_reduce(a);
    if (S > 1 && cnt) {
      hand_over(P, part, cnt, o, S, s, a);
    } else if (threadIdx.x == 0) {
      if (S == 1) r_store(P, o, a);
      else part[o * S + s] = a;
    }
  }
}

// Innermost kept dim contiguous: output o = o2 * K + j reads x[offset(o2 | osh, ost) + j +
// offset(r | rsh, rst)] for r in [0, R). Block (TX, TY): threadIdx.x along j, threadIdx.y takes
// one contiguous chunk of the split's reduced range; chunks merge in order through shared memory.
extern "C" __global__ void col(Params P, const T* __restrict__ x, EMBER_GC Shape osh, EMBER_GC Strides ost,
                               int64_t K, EMBER_GC Shape rsh, EMBER_GC Strides rst, int64_t R, int64_t O2, int S,
                               Acc* part) {
  __shared__ Acc sh[1024];
#ifdef R_NEEDS_P
  const A pval = A(P.p);
#endif
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int64_t j = int64_t(blockIdx.x) * TX + tx;
  const int s = blockIdx.z;
  const int64_t rs0 = R * s / S, rlen = R * (s + 1) / S - rs0;
  const int64_t r0 = rs0 + rlen * ty / TY, r1 = rs0 + rlen * (ty + 1) / TY;
  for (int64_t o2 = blockIdx.y; o2 < O2; o2 += gridDim.y) {
    Acc a = r_init();
    if (j < K && r0 < r1) {
      const T* base = x + r_off(o2, osh, ost) + j;
      if (rsh.rank == 1) {
        const int64_t st = rst.v[0];
        const T* p = base + r0 * st;
        int64_t r = r0;
        for (; r + 4 <= r1; r += 4, p += 4 * st) {
          C v0 = C(p[0]), v1 = C(p[st]), v2 = C(p[2 * st]), v3 = C(p[3 * st]);
          R_STEP(a, v0, r);
          R_STEP(a, v1, r + 1);
          R_STEP(a, v2, r + 2);
          R_STEP(a, v3, r + 3);
        }
        for (; r < r1; ++r, p += st) R_STEP(a, C(*p), r);
      } else {
        // walk the reduced dims with an incremental multi-index
        int64_t idx[EMBER_MAX_RANK];
        int64_t off = 0, rr = r0;
        for (int d = rsh.rank - 1; d >= 0; --d) {
          idx[d] = rr % rsh.size[d];
          rr /= rsh.size[d];
          off += idx[d] * rst.v[d];
        }
        for (int64_t r = r0; r < r1; ++r) {
          R_STEP(a, C(base[off]), r);
          for (int d = rsh.rank - 1; d >= 0; --d) {
            off += rst.v[d];
            if (++idx[d] < rsh.size[d]) break;
            off -= rst.v[d] * rsh.size[d];
            idx[d] = 0;
          }
        }
      }
    }
    sh[ty * TX + tx] = a;
    __syncthreads();
    if (ty == 0 && j < K) {
      for (int t = 1; t < TY; ++t) r_merge(a, sh[t * TX + tx]);
      const int64_t o = o2 * K + j;
      if (S == 1) r_store(P, o, a);
      else part[o * S + s] = a;
    }
    __syncthreads();
  }
}

// col with a 16-byte vector of R_V adjacent outputs per thread: one reduced dim (stride st), and
// K, st and the kept strides multiples of R_V from a 16-byte aligned x. Four vectors in flight per
// thread. The sums of a linear layer's bias gradient (bf16 [8192, 768] -> [768]) took 16.4 us
// on an H100 through col, one element per thread.
extern "C" __global__ void col_vec(Params P, const T* __restrict__ x, EMBER_GC Shape osh, EMBER_GC Strides ost,
                                   int64_t K, int64_t st, int64_t R, int64_t O2, int S, Acc* part) {
  __shared__ Acc sh[256];
#ifdef R_NEEDS_P
  const A pval = A(P.p);
#endif
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int64_t jv = int64_t(blockIdx.x) * TX + tx, nk = K / R_V, sv = st / R_V;
  const int s = blockIdx.z;
  const int64_t rs0 = R * s / S, rlen = R * (s + 1) / S - rs0;
  const int64_t r0 = rs0 + rlen * ty / TY, r1 = rs0 + rlen * (ty + 1) / TY;
  for (int64_t o2 = blockIdx.y; o2 < O2; o2 += gridDim.y) {
    Acc a[R_V];
#pragma unroll
    for (int e = 0; e < R_V; ++e) a[e] = r_init();
    if (jv < nk) {
      const uint4* p = reinterpret_cast<const uint4*>(x + r_off(o2, osh, ost)) + jv;
      int64_t r = r0;
      for (; r + 4 <= r1; r += 4) {
        VecT v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) v[u].u = p[(r + u) * sv];
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int e = 0; e < R_V; ++e) R_STEP(a[e], C(v[u].v[e]), r + u);
      }
      for (; r < r1; ++r) {
        VecT v;
        v.u = p[r * sv];
#pragma unroll
        for (int e = 0; e < R_V; ++e) R_STEP(a[e], C(v.v[e]), r);
      }
    }
#pragma unroll
    for (int e = 0; e < R_V; ++e) {
      sh[ty * TX + tx] = a[e];
      __syncthreads();
      if (ty == 0 && jv < nk) {
        Acc m = a[e];
        for (int t = 1; t < TY; ++t) r_merge(m, sh[t * TX + tx]);
        const int64_t o = o2 * K + jv * R_V + e;
        if (S == 1) r_store(P, o, m);
        else part[o * S + s] = m;
      }
      __syncthreads();
    }
  }
}

// Merges the S partials of every output in order: one block per output...
extern "C" __global__ void finalize_block(Params P, const Acc* __restrict__ part, int64_t out_n, int S) {
  for (int64_t o = blockIdx.x; o < out_n; o += gridDim.x) {
    Acc a = r_init();
    for (int s = threadIdx.x; s < S; s += blockDim.x) r_merge(a, part[o * S + s]);
    a = block_reduce(a);
    if (threadIdx.x == 0) r_store(P, o, a);
  }
}
// ... or one thread per output (few partials).
extern "C" __global__ void finalize_thread(Params P, const Acc* __restrict__ part, int64_t out_n, int S) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < out_n; o += int64_t(gridDim.x) * blockDim.x) {
    Acc a = part[o * S];
    for (int s = 1; s < S; ++s) r_merge(a, part[o * S + s]);
    r_store(P, o, a);
  }
}
)CUDA";

}  // namespace

std::string reduce_key(OpKind op, DType dt, int norm_kind) {
  std::string k = std::string(op_name(op)) + "/" + std::string(dtype_name(dt));
  if (op == OpKind::norm) k += "/k" + std::to_string(norm_kind);
  return k;
}

std::string reduce_source(OpKind op, DType dt, int norm_kind) {
  std::string s = reduce_family_helpers();
  s += "typedef " + std::string(device_type(dt)) + " T;\n";
  s += "typedef " + std::string(compute_type(dt)) + " C;\n";
  s += "struct Params { void* out; void* out2; double div; double p; };\n";
  const size_t vw = 16 / dtype_size(dt);
  s += "#define R_V " + std::to_string(vw) + "  // elements of T in 16 bytes\n";
  s += "#define R_U " + std::to_string(std::clamp<size_t>(16 / vw, 1, 4)) + "  // vectors per thread per step\n";
  s += reducer_code(op, dt, norm_kind);
  s += kReduceKernels;
  return s;
}

std::vector<KernelSource> reduce_variants() {
  const DType all[] = {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64,
                       DType::i32, DType::i16, DType::i8,  DType::u8,   DType::boolean};
  const OpKind any_dtype[] = {OpKind::sum, OpKind::prod,   OpKind::max,    OpKind::min,     OpKind::any,
                              OpKind::all, OpKind::argmax, OpKind::argmin, OpKind::max_dim, OpKind::min_dim};
  const OpKind float_only[] = {OpKind::mean, OpKind::var, OpKind::std, OpKind::logsumexp};
  std::vector<KernelSource> v;
  for (DType dt : all) {
    for (OpKind op : any_dtype) v.push_back({reduce_key(op, dt), reduce_source(op, dt)});
    if (!is_float(dt)) continue;
    for (OpKind op : float_only) v.push_back({reduce_key(op, dt), reduce_source(op, dt)});
    for (int k = 0; k <= 5; ++k) v.push_back({reduce_key(OpKind::norm, dt, k), reduce_source(OpKind::norm, dt, k)});
  }
  return v;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

// Mirrors the kernels' Params.
struct Params {
  void* out = nullptr;
  void* out2 = nullptr;
  double div = 1;
  double p = 2;
};

// Upper bound of sizeof(Acc) of every reducer (partials buffers).
constexpr size_t kMaxAccBytes = 32;

struct DimList {
  std::vector<int64_t> size, stride;
  void push(int64_t sz, int64_t st) {
    if (!size.empty() && stride.back() == st * sz) {
      size.back() *= sz;
      stride.back() = st;
    } else {
      size.push_back(sz);
      stride.push_back(st);
    }
  }
  size_t n() const { return size.size(); }
};

void to_args(const char* op, const DimList& l, size_t begin, size_t end, ShapeArg& sh, StridesArg& st) {
  EMBER_CHECK(end - begin <= size_t(kMaxRank), op, ": ", end - begin,
              " non-mergeable dims exceed the CUDA backend's limit of ", kMaxRank);
  sh = ShapeArg{};
  st = StridesArg{};
  sh.rank = int32_t(end - begin);
  for (size_t i = begin; i < end; ++i) {
    sh.size[i - begin] = l.size[i];
    st.v[i - begin] = l.stride[i];
  }
}

struct Reduction {
  CudaBackend& be;
  Op& op;
  std::string key;
  DType dt;
  int norm_kind;
  Params P;

  CUfunction fn(const char* entry) {
    return be.jit().get(key, entry, [&] { return reduce_source(op.kind, dt, norm_kind); });
  }

  // Merges S partials per output into the outputs.
  void finalize(void* part, int64_t out_n, int S) {
    if (S <= 32) {
      be.launch(fn("finalize_thread"), grid_for(be, out_n, 128), 128, 0, P, part, out_n, S);
    } else {
      unsigned g = unsigned(std::min<int64_t>(out_n, 65535));
      be.launch(fn("finalize_block"), g, 256, 0, P, part, out_n, S);
    }
  }

  // Row mode: outputs at kept (input strides); reduced runs of L contiguous elements, at the
  // offsets of the Q positions of the dims qdims.
  void rows(const void* x, const DimList& kept, const DimList& qdims, int64_t L, int64_t out_n) {
    ShapeArg ksh, qsh;
    StridesArg kst, qst;
    const char* name = op_name(op.kind).data();
    to_args(name, kept, 0, kept.n(), ksh, kst);
    to_args(name, qdims, 0, qdims.n(), qsh, qst);
    int64_t Q = 1;
    for (int64_t s : qdims.size) Q *= s;
    const int64_t W = Q * L;
    const int sms = be.sm_count();
    if (L < 32) {
      be.launch(fn("row_thread"), grid_for(be, out_n, 128), 128, 0, P, x, ksh, kst, qsh, qst, Q, L, out_n);
    } else if (W <= 8192 || out_n >= int64_t(sms) * 64) {
      be.launch(fn("row_warp"), grid_for(be, out_n * 32, 256), 256, 0, P, x, ksh, kst, qsh, qst, Q, L, out_n);
    } else {
      // 2 blocks of 256 threads an SM in all: at [64M] f32 on an H200 this measured 80 us,
      // against 85 us for 2 x 512 or 1 x 1024 threads, 84-98 us for 4 x 256 or 4 x 512 and
      // 118 us for 8 x 256 (more loads in flight per thread, 8 vectors instead of 4, no better)
      constexpr int kThreads = 256;
      const int64_t target = int64_t(sms) * 2;
      int64_t S = 1;
      if (out_n < target) S = std::clamp<int64_t>(target / out_n, 1, std::max<int64_t>(1, W / 8192));
      if (Q > 1) S = std::min(S, Q);
      unsigned gy = unsigned(std::min<int64_t>(out_n, 65535));
      if (S == 1) {
        be.launch(fn("row_block"), dim3(1, gy), kThreads, 0, P, x, ksh, kst, qsh, qst, Q, L, out_n, 1,
                  static_cast<void*>(nullptr), static_cast<unsigned*>(nullptr));
      } else {
        // one launch: the last split block of each output merges (a second, finalize, launch
        // when there are more outputs than counters)
        Buffer part(be.allocator(), size_t(out_n * S) * kMaxAccBytes);
        unsigned* cnt = be.zeroed_counters(size_t(out_n));
        be.launch(fn("row_block"), dim3(unsigned(S), gy), kThreads, 0, P, x, ksh, kst, qsh, qst, Q, L, out_n,
                  int(S), part.ptr, cnt);
        if (!cnt) finalize(part.ptr, out_n, int(S));
      }
    }
  }

  // Column mode: the innermost kept dim (size K) has stride 1.
  void cols(const void* x, const DimList& kept, const DimList& red, int64_t R, int64_t out_n) {
    ShapeArg osh, rsh;
    StridesArg ost, rst;
    const char* name = op_name(op.kind).data();
    to_args(name, kept, 0, kept.n() - 1, osh, ost);
    to_args(name, red, 0, red.n(), rsh, rst);
    const int64_t K = kept.size.back(), O2 = out_n / K;
    const int64_t vw = int64_t(16 / dtype_size(dt));
    bool vec = red.n() == 1 && K % vw == 0 && red.stride[0] % vw == 0 && K / vw >= 4 &&
               reinterpret_cast<uintptr_t>(x) % 16 == 0;
    for (size_t i = 0; vec && i + 1 < kept.n(); ++i) vec = kept.stride[i] % vw == 0;
    if (vec) {
      const int64_t nk = K / vw;
      int TX = 1;
      while (TX < 32 && TX < nk) TX *= 2;
      const int TY = 256 / TX;
      const int64_t bx = ceil_div(nk, TX), blocks = bx * O2, target = int64_t(be.sm_count()) * 8;
      int64_t S = 1;
      if (blocks < target) S = std::clamp<int64_t>(target / blocks, 1, std::max<int64_t>(1, R / (int64_t(TY) * 8)));
      S = std::min<int64_t>(S, 65535);
      dim3 grid(unsigned(bx), unsigned(std::min<int64_t>(O2, 65535)), unsigned(S));
      const int64_t st = red.stride[0];
      if (S == 1) {
        be.launch(fn("col_vec"), grid, dim3(TX, TY), 0, P, x, osh, ost, K, st, R, O2, 1, static_cast<void*>(nullptr));
      } else {
        Buffer part(be.allocator(), size_t(out_n * S) * kMaxAccBytes);
        be.launch(fn("col_vec"), grid, dim3(TX, TY), 0, P, x, osh, ost, K, st, R, O2, int(S), part.ptr);
        finalize(part.ptr, out_n, int(S));
      }
      return;
    }
    int TX = 1;
    while (TX < 32 && TX < K) TX *= 2;
    const int TY = 256 / TX;
    const int64_t bx = ceil_div(K, TX);
    const int64_t blocks = bx * O2;
    const int64_t target = int64_t(be.sm_count()) * 8;
    int64_t S = 1;
    if (blocks < target) S = std::clamp<int64_t>(target / blocks, 1, std::max<int64_t>(1, R / (int64_t(TY) * 32)));
    S = std::min<int64_t>(S, 65535);
    EMBER_CHECK(bx <= INT32_MAX, name, ": too many outputs");
    dim3 grid(unsigned(bx), unsigned(std::min<int64_t>(O2, 65535)), unsigned(S));
    if (S == 1) {
      be.launch(fn("col"), grid, dim3(TX, TY), 0, P, x, osh, ost, K, rsh, rst, R, O2, 1, static_cast<void*>(nullptr));
    } else {
      Buffer part(be.allocator(), size_t(out_n * S) * kMaxAccBytes);
      be.launch(fn("col"), grid, dim3(TX, TY), 0, P, x, osh, ost, K, rsh, rst, R, O2, int(S), part.ptr);
      finalize(part.ptr, out_n, int(S));
    }
  }

  void run(const CudaTensor& x) {
    const Shape& s = x.shape();
    const auto& dims = op.attr<ReduceAttrs>().dims;
    std::vector<bool> red(size_t(s.rank()), dims.empty());
    for (int d : dims) red[size_t(d)] = true;
    int64_t out_n = 1, red_n = 1;
    DimList kept, rd;
    std::vector<std::pair<int64_t, int64_t>> rdims;  // (size, stride) of the reduced dims
    for (int d = 0; d < s.rank(); ++d) {
      const int64_t n = s[d], st = x.strides[size_t(d)];
      if (red[size_t(d)]) red_n *= n;
      else out_n *= n;
      if (n == 1) continue;
      if (red[size_t(d)]) rdims.push_back({n, st});
      else kept.push(n, st);
    }
    if (out_n == 0) return;
    const char* name = op_name(op.kind).data();
    if (red_n == 0) {  // empty reductions: every output is the reducer's identity
      ShapeArg ksh, qsh;
      StridesArg kst, qst;
      to_args(name, kept, 0, kept.n(), ksh, kst);
      be.launch(fn("row_thread"), grid_for(be, out_n, 128), 128, 0, P, x.raw(), ksh, kst, qsh, qst, int64_t(1),
                int64_t(0), out_n);
      return;
    }
    if (reorderable(op.kind))  // innermost = smallest |stride| (stable)
      std::stable_sort(rdims.begin(), rdims.end(),
                       [](const auto& a, const auto& b) { return std::abs(a.second) > std::abs(b.second); });
    for (auto& [n, st] : rdims) rd.push(n, st);

    if (rd.n() == 0) {  // nothing to reduce: one element per output
      rows(x.raw(), kept, DimList{}, 1, out_n);
      return;
    }
    if (rd.stride.back() == 1 && (rd.size.back() >= 32 || rd.n() == 1)) {
      DimList q;
      for (size_t i = 0; i + 1 < rd.n(); ++i) q.push(rd.size[i], rd.stride[i]);
      rows(x.raw(), kept, q, rd.size.back(), out_n);
      return;
    }
    if (kept.n() > 0 && kept.stride.back() == 1 && kept.size.back() >= 4 && rd.n() <= size_t(kMaxRank)) {
      cols(x.raw(), kept, rd, red_n, out_n);
      return;
    }
    // Anything else: copy into a contiguous [kept..., reduced...] buffer, then rows.
    std::vector<int64_t> shape, strides;
    for (size_t i = 0; i < kept.n(); ++i) {
      shape.push_back(kept.size[i]);
      strides.push_back(kept.stride[i]);
    }
    for (size_t i = 0; i < rd.n(); ++i) {
      shape.push_back(rd.size[i]);
      strides.push_back(rd.stride[i]);
    }
    Shape tshape(shape);
    auto tmp = alloc(be, TensorMeta{tshape, x.dtype()});
    copy_view(be, view_of(*tmp), View{x.raw(), x.dtype(), tshape, strides});
    DimList k2;
    k2.push(out_n, red_n);
    rows(tmp->raw(), k2, DimList{}, red_n, out_n);
  }
};

template <OpKind K>
std::vector<PrimitivePtr> reduce_kernel(CudaBackend& be, Op& op) {
  auto x = as_cuda_ptr(op.inputs[0]);
  const auto& a = op.attr<ReduceAttrs>();
  const DType dt = x->dtype();
  if constexpr (K == OpKind::mean || K == OpKind::var || K == OpKind::std || K == OpKind::norm ||
                K == OpKind::logsumexp)
    EMBER_CHECK(is_float(dt), op.name(), ": needs a floating input, got ", dt);
  int64_t red_n = 1;
  for (int d = 0; d < x->shape().rank(); ++d)
    if (a.dims.empty() || std::find(a.dims.begin(), a.dims.end(), d) != a.dims.end()) red_n *= x->shape()[d];
  int norm_kind = 0;
  Params P;
  if constexpr (K == OpKind::mean) P.div = double(red_n);
  if constexpr (K == OpKind::var || K == OpKind::std)
    P.div = std::max<double>(double(red_n) - double(a.correction), 0.0);
  if constexpr (K == OpKind::norm) {
    const double p = a.p;
    EMBER_CHECK(red_n > 0 || (p >= 0 && !std::isinf(p)), "norm: cannot compute the ", p,
                "-norm over an empty reduction (input shape ", x->shape(), "): it has no identity");
    norm_kind = p == 0 ? 0 : p == 1 ? 1 : p == 2 ? 2 : (std::isinf(p) && p > 0) ? 3 : std::isinf(p) ? 4 : 5;
    P.p = p;
  }
  std::vector<PrimitivePtr> outs;
  for (const auto& m : op.outputs) outs.push_back(alloc(be, m));
  P.out = as_cuda(outs[0]).raw();
  if (outs.size() > 1) P.out2 = as_cuda(outs[1]).raw();
  Reduction r{be, op, reduce_key(K, dt, norm_kind), dt, norm_kind, P};
  r.run(*x);
  return outs;
}

}  // namespace

void register_reduce_kernels(KernelTable& t) {
  t[size_t(OpKind::sum)] = reduce_kernel<OpKind::sum>;
  t[size_t(OpKind::mean)] = reduce_kernel<OpKind::mean>;
  t[size_t(OpKind::prod)] = reduce_kernel<OpKind::prod>;
  t[size_t(OpKind::max)] = reduce_kernel<OpKind::max>;
  t[size_t(OpKind::min)] = reduce_kernel<OpKind::min>;
  t[size_t(OpKind::any)] = reduce_kernel<OpKind::any>;
  t[size_t(OpKind::all)] = reduce_kernel<OpKind::all>;
  t[size_t(OpKind::var)] = reduce_kernel<OpKind::var>;
  t[size_t(OpKind::std)] = reduce_kernel<OpKind::std>;
  t[size_t(OpKind::norm)] = reduce_kernel<OpKind::norm>;
  t[size_t(OpKind::logsumexp)] = reduce_kernel<OpKind::logsumexp>;
  t[size_t(OpKind::argmax)] = reduce_kernel<OpKind::argmax>;
  t[size_t(OpKind::argmin)] = reduce_kernel<OpKind::argmin>;
  t[size_t(OpKind::max_dim)] = reduce_kernel<OpKind::max_dim>;
  t[size_t(OpKind::min_dim)] = reduce_kernel<OpKind::min_dim>;
}

int64_t pow2_ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// Each thread holds 32 elements (8 vectors of f32, 4 of bf16; f64 and unvectorised rows 16, past
// which registers spill), but a group of 256 threads is kept while each of its threads still
// holds 4 vectors or more. Measured on an H200 over 128 MB tensors, against 16 elements a thread
// everywhere: softmax f32 at 1024 columns 74.2 -> 68.3 us, at 16384 114.5 -> 71.7 us, bf16 at 4096
// 53.7 -> 41.5 us; layer norm f32 at 16384 85.5 -> 72.4 us, bf16 at 4096 53.6 -> 49.4 us; f32 at
// 4096 columns both keep 256 threads of 16 elements (softmax 69.3 against 70.2 us with 128 of 32,
// layer norm 69.0 against 72.7 us, where its two-rows-a-step kernel needs 16).
RowLayout row_layout(int64_t items, int W, bool vec) {
  const int64_t nv_target = !vec ? 16 : W >= 4 ? 32 / W : 16 / W;
  int64_t tpr = std::min<int64_t>(1024, pow2_ceil((items + nv_target - 1) / nv_target));
  if (vec && tpr < 256 && items >= 256 * 4) tpr = 256;
  return {tpr, pow2_ceil((items + tpr - 1) / tpr)};
}

}  // namespace ember::cuda
