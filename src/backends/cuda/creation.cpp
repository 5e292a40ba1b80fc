// Creation kernels: full, arange, linspace, eye, and the random ops random_uniform,
// random_normal, random_bernoulli, random_randint.
//
// Values match the CPU backend (src/backends/cpu/creation.cpp, random.cpp) bit for bit: the
// same formulas with the same rounding (explicit _rn operations, no fused multiply-adds), the
// same Philox-4x32-10 generator with the same (key, counter) from be.next_random(blocks), and
// the same use of each block's four words:
//   uniform f32/f16/bf16, bernoulli, randint with a range <= 2^32: one word per element
//     (element i: block i / 4, word i % 4);
//   uniform f64, randint with a larger range: two words per element (block i / 2, words
//     2 (i % 2) and 2 (i % 2) + 1, high then low);
//   normal f32/f16/bf16: Box-Muller pairs, pair j = i / 2 from words 2 (j % 2) (radius) and
//     2 (j % 2) + 1 (angle) of block i / 4, element 2j = r cos(theta), 2j + 1 = r sin(theta);
//   normal f64: one pair per block, 53-bit uniforms from (w0, w1) and (w2, w3).
// Where results can differ: random_normal takes log, sin and cos from CUDA's math library (f64:
// CUDA's double functions against glibc's; f32/f16/bf16: logf and sincosf, <= 2 ulp, against the
// CPU's vectorised float functions), so some normal values differ in the last bit or two (f16/bf16
// rarely, after rounding). Everything else is bit-identical.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cuda_backend.hpp"
#include "elementwise_sources.hpp"

namespace ember::cuda {

namespace {

constexpr DType kAll[] = {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64,
                          DType::i32, DType::i16, DType::i8,  DType::u8,   DType::boolean};
constexpr int kThreads = 256;

const char* uint_type(size_t bytes) {
  switch (bytes) {
    case 1: return "uint8_t";
    case 2: return "uint16_t";
    case 4: return "uint32_t";
    default: return "uint64_t";
  }
}

// Arguments of every random kernel (same layout as RandArgs in the generated source).
struct RandArgs {
  uint64_t key = 0, counter = 0;
  int64_t n = 0;
  int64_t i0 = 0;
  uint64_t u0 = 0;
  double d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  float f0 = 0, f1 = 0, f2 = 0, f3 = 0;
  int32_t flag = 0, pad = 0;
};

// The Philox generator and uniform conversions, as in src/backends/cpu/random.hpp / random.cpp.
const char* kRandomCommon = R"CUDA(
struct RandArgs {
  unsigned long long key, counter;
  long long n;
  long long i0;
  unsigned long long u0;
  double d0, d1, d2, d3;
  float f0, f1, f2, f3;
  int flag, pad;
};
// Philox-4x32 with 10 rounds; the 128-bit counter is (ctr, 0), the key 64 bits.
__device__ __forceinline__ void philox4x32_10(unsigned long long key, unsigned long long ctr, uint32_t w[4]) {
  uint32_t x0 = uint32_t(ctr), x1 = uint32_t(ctr >> 32), x2 = 0u, x3 = 0u;
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0 = __umulhi(0xD2511F53u, x0), lo0 = 0xD2511F53u * x0;
    uint32_t hi1 = __umulhi(0xCD9E8D57u, x2), lo1 = 0xCD9E8D57u * x2;
    uint32_t y0 = hi1 ^ x1 ^ k0, y1 = lo1, y2 = hi0 ^ x3 ^ k1, y3 = lo0;
    x0 = y0; x1 = y1; x2 = y2; x3 = y3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  w[0] = x0; w[1] = x1; w[2] = x2; w[3] = x3;
}
// Uniforms: [0, 1) with 24 random bits, (0, 1] (for logarithms), and the 53-bit versions.
__device__ __forceinline__ float unit_f32(uint32_t w) { return float(w >> 8) * 0x1p-24f; }
__device__ __forceinline__ float unit_f32_open0(uint32_t w) { return float((w >> 8) + 1u) * 0x1p-24f; }
__device__ __forceinline__ double unit_f64(uint32_t hi, uint32_t lo) {
  return double((((unsigned long long)hi << 32) | lo) >> 11) * 0x1p-53;
}
__device__ __forceinline__ double unit_f64_open0(uint32_t hi, uint32_t lo) {
  return double(((((unsigned long long)hi << 32) | lo) >> 11) + 1ull) * 0x1p-53;
}
)CUDA";

// One thread per Philox block (PER elements); BODY writes element `first + j` for j < PER.
std::string random_driver(const std::string& entry, int per, const std::string& body) {
  std::string s = "extern \"C\" __global__ void " + entry + "(T* out, RandArgs a) {\n";
  s += "  const long long per = " + std::to_string(per) + ";\n";
  s += R"CUDA(  const long long nblocks = (a.n + per - 1) / per;
  for (long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x; b < nblocks;
       b += (long long)gridDim.x * blockDim.x) {
    uint32_t w[4];
    philox4x32_10(a.key, a.counter + (unsigned long long)b, w);
    const long long first = b * per;
)CUDA";
  s += body;
  s += "  }\n}\n";
  return s;
}

std::string random_body(OpKind kind, DType dt, bool wide) {
  const bool half = dt == DType::f16 || dt == DType::bf16;
  switch (kind) {
    case OpKind::random_uniform:
      if (dt == DType::f64)  // d0 = low, d1 = span, d2 = top (just below high), d3 = high, flag = guard
        return R"CUDA(    for (int j = 0; j < 2; ++j) {
      long long i = first + j;
      if (i >= a.n) break;
      double v = __dadd_rn(a.d0, __dmul_rn(a.d1, unit_f64(w[2 * j], w[2 * j + 1])));
      out[i] = (a.flag && v >= a.d3) ? a.d2 : v;
    }
)CUDA";
      if (!half)  // f0 = low, f1 = span, f2 = top, f3 = float(high), flag = guard
        return R"CUDA(    for (int j = 0; j < 4; ++j) {
      long long i = first + j;
      if (i >= a.n) break;
      float v = __fadd_rn(a.f0, __fmul_rn(a.f1, unit_f32(w[j])));
      out[i] = (a.flag && v >= a.f3) ? a.f2 : v;
    }
)CUDA";
      // f0 = low, f1 = span, u0 = bits of top, d3 = high, flag = guard
      return R"CUDA(    for (int j = 0; j < 4; ++j) {
      long long i = first + j;
      if (i >= a.n) break;
      T v = T(__fadd_rn(a.f0, __fmul_rn(a.f1, unit_f32(w[j]))));
      out[i] = (a.flag && double(float(v)) >= a.d3) ? T::from_bits(uint16_t(a.u0)) : v;
    }
)CUDA";
    case OpKind::random_normal:
      if (dt == DType::f64)  // d0 = mean, d1 = stddev
        return R"CUDA(    double r = sqrt(-2.0 * log(unit_f64_open0(w[0], w[1])));
    double theta = __dmul_rn(2.0 * 3.141592653589793, unit_f64(w[2], w[3]));
    out[first] = __dadd_rn(a.d0, __dmul_rn(a.d1, __dmul_rn(r, cos(theta))));
    if (first + 1 < a.n) out[first + 1] = __dadd_rn(a.d0, __dmul_rn(a.d1, __dmul_rn(r, sin(theta))));
)CUDA";
      // f0 = float(mean), f1 = float(stddev)
      return R"CUDA(    for (int q = 0; q < 2; ++q) {
      long long i = first + 2 * q;
      if (i >= a.n) break;
      float r = sqrtf(__fmul_rn(logf(unit_f32_open0(w[2 * q])), -2.0f));
      float theta = __fmul_rn(2.0f * 3.14159265358979323846f, unit_f32(w[2 * q + 1]));
      float c, sn;
      sincosf(theta, &sn, &c);
      out[i] = T(__fadd_rn(a.f0, __fmul_rn(a.f1, __fmul_rn(r, c))));
      if (i + 1 < a.n) out[i + 1] = T(__fadd_rn(a.f0, __fmul_rn(a.f1, __fmul_rn(r, sn))));
    }
)CUDA";
    case OpKind::random_bernoulli:  // u0 = threshold: P(word < threshold) = threshold / 2^32
      return R"CUDA(    for (int j = 0; j < 4; ++j) {
      long long i = first + j;
      if (i >= a.n) break;
      out[i] = (unsigned long long)w[j] < a.u0 ? cast_value<T>(1) : cast_value<T>(0);
    }
)CUDA";
    case OpKind::random_randint:  // i0 = low, u0 = range
      if (!wide)  // multiply-shift maps a 32-bit word onto [0, range)
        return R"CUDA(    for (int j = 0; j < 4; ++j) {
      long long i = first + j;
      if (i >= a.n) break;
      unsigned long long v = ((unsigned long long)w[j] * a.u0) >> 32;
      out[i] = cast_value<T>((long long)((unsigned long long)a.i0 + v));
    }
)CUDA";
      return R"CUDA(    for (int j = 0; j < 2; ++j) {
      long long i = first + j;
      if (i >= a.n) break;
      unsigned long long r = ((((unsigned long long)w[2 * j]) << 32) | w[2 * j + 1]) % a.u0;
      out[i] = cast_value<T>((long long)((unsigned long long)a.i0 + r));
    }
)CUDA";
    default: break;
  }
  EMBER_FAIL(op_name(kind), ": not a random op");
}

// Elements per Philox block.
int per_block(OpKind kind, DType dt, bool wide) {
  if (kind == OpKind::random_uniform || kind == OpKind::random_normal) return dt == DType::f64 ? 2 : 4;
  if (kind == OpKind::random_randint && wide) return 2;
  return 4;
}

std::vector<DType> random_dtypes(OpKind kind) {
  std::vector<DType> out;
  for (DType dt : kAll)
    if (is_float(dt) || kind == OpKind::random_bernoulli || kind == OpKind::random_randint) out.push_back(dt);
  return out;
}

std::string key_of(OpKind kind, DType dt) { return std::string(op_name(kind)) + "/" + std::string(dtype_name(dt)); }
std::string key_of(std::string_view op, size_t bytes) { return std::string(op) + "/b" + std::to_string(bytes); }

}  // namespace

// ------------------------------------------------------------------------------ sources

std::string fill_source(size_t bytes) {
  std::string s = "typedef " + std::string(uint_type(bytes)) + " U;\n";
  s += R"CUDA(
struct alignas(16) Fill16 {
  unsigned long long lo, hi;
};
extern "C" __global__ void fill(U* out, U v, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = v;
}
// n 16-byte chunks of a repeated pattern (16-byte aligned output).
extern "C" __global__ void fill16(Fill16* out, Fill16 v, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = v;
}
)CUDA";
  return s;
}

std::string arange_source(DType dt) {
  std::string s = "typedef " + std::string(device_type(dt)) + " T;\n";
  if (dt == DType::f32 || dt == DType::f64) {  // in double
    s += R"CUDA(
extern "C" __global__ void arange(T* out, double start, double step, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = T(__dadd_rn(start, __dmul_rn(step, double(i))));
}
)CUDA";
  } else if (is_float(dt)) {  // f16/bf16 in float
    s += R"CUDA(
extern "C" __global__ void arange(T* out, float start, float step, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = T(__fadd_rn(start, __fmul_rn(step, float(i))));
}
)CUDA";
  } else {  // integers (and bool) in wrapping int64
    s += R"CUDA(
extern "C" __global__ void arange(T* out, uint64_t start, uint64_t step, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = cast_value<T>((long long)(start + step * (uint64_t)i));
}
)CUDA";
  }
  return s;
}

std::string linspace_source(DType dt) {
  std::string s = "typedef " + std::string(device_type(dt)) + " T;\n";
  if (is_float(dt)) {
    // C = double for f64, float otherwise; the first half counts up from start, the second
    // half down from end
    s += dt == DType::f64 ? R"CUDA(typedef double C;
__device__ __forceinline__ C lin_up(C s, C st, C i) { return __dadd_rn(s, __dmul_rn(st, i)); }
__device__ __forceinline__ C lin_down(C e, C st, C i) { return __dsub_rn(e, __dmul_rn(st, i)); }
)CUDA"
                          : R"CUDA(typedef float C;
__device__ __forceinline__ C lin_up(C s, C st, C i) { return __fadd_rn(s, __fmul_rn(st, i)); }
__device__ __forceinline__ C lin_down(C e, C st, C i) { return __fsub_rn(e, __fmul_rn(st, i)); }
)CUDA";
    s += R"CUDA(
extern "C" __global__ void linspace(T* out, C start, C end, C step, int64_t n, int64_t half) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = T(i < half ? lin_up(start, step, C(i)) : lin_down(end, step, C(n - 1 - i)));
}
)CUDA";
  } else {
    // integers: in double, then truncated (NaN -> 0, saturating to int64) and wrapped
    s += dt == DType::boolean ? "__device__ __forceinline__ T from_double(double v) { return v != 0.0; }\n"
                              : R"CUDA(__device__ __forceinline__ T from_double(double v) {
  long long r;
  if (!(v == v)) r = 0;
  else if (v >= 9223372036854775807.0) r = (long long)0x7fffffffffffffffULL;
  else if (v <= -9223372036854775808.0) r = (long long)0x8000000000000000ULL;
  else r = (long long)v;
  return T((unsigned long long)r);
}
)CUDA";
    s += R"CUDA(
extern "C" __global__ void linspace(T* out, double start, double end, double step, int64_t n, int64_t half) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = from_double(i < half ? __dadd_rn(start, __dmul_rn(step, double(i)))
                                  : __dsub_rn(end, __dmul_rn(step, double(n - 1 - i))));
}
)CUDA";
  }
  return s;
}

std::string eye_source(size_t bytes) {
  std::string s = "typedef " + std::string(uint_type(bytes)) + " U;\n";
  s += R"CUDA(
extern "C" __global__ void eye(U* out, U one, int64_t cols, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = (i / cols == i % cols) ? one : U(0);
}
)CUDA";
  return s;
}

std::string random_source(OpKind kind, DType dt) {
  std::string s = "typedef " + std::string(device_type(dt)) + " T;\n";
  s += kRandomCommon;
  s += random_driver("gen", per_block(kind, dt, false), random_body(kind, dt, false));
  if (kind == OpKind::random_randint)
    s += random_driver("gen_wide", per_block(kind, dt, true), random_body(kind, dt, true));
  return s;
}

std::vector<KernelSource> creation_kernel_sources() {
  std::vector<KernelSource> out;
  for (size_t b : {1, 2, 4, 8}) {
    out.push_back({key_of("full", b), fill_source(b)});
    out.push_back({key_of("eye", b), eye_source(b)});
  }
  for (DType dt : kAll) {
    out.push_back({key_of(OpKind::arange, dt), arange_source(dt)});
    out.push_back({key_of(OpKind::linspace, dt), linspace_source(dt)});
  }
  for (OpKind k : {OpKind::random_uniform, OpKind::random_normal, OpKind::random_bernoulli, OpKind::random_randint})
    for (DType dt : random_dtypes(k)) out.push_back({key_of(k, dt), random_source(k, dt)});
  return out;
}

// --------------------------------------------------------------------------------- host

namespace {

// double -> int64 without undefined behaviour (truncates; out of range saturates, NaN -> 0).
int64_t to_i64(double v) {
  if (!(v == v)) return 0;
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

// Integer dtypes take a double attribute like torch's Scalar.to<T>(): truncate, then wrap.
template <class T>
T int_from_double(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else return static_cast<T>(uint64_t(to_i64(v)));
}

// The bits of `v` converted to dt as the CPU's full does.
uint64_t value_bits(DType dt, double v) {
  uint64_t bits = 0;
  visit_dtype(dt, [&]<class T>() {
    T value;
    if constexpr (is_floating_v<T>) value = convert_scalar<T>(v);
    else value = int_from_double<T>(v);
    std::memcpy(&bits, &value, sizeof(T));
  });
  return bits;
}

template <class U>
void launch_fill(CudaBackend& be, void* p, int64_t n, uint64_t bits) {
  CUfunction f = be.jit().get(key_of("full", sizeof(U)), "fill", [] { return fill_source(sizeof(U)); });
  be.launch(f, grid_for(be, n, kThreads, 4), kThreads, 0, p, U(bits), n);
}

struct alignas(16) Fill16 {
  uint64_t lo, hi;
};

}  // namespace

// n elements of `bytes` bytes at p set to the pattern `bits` (asynchronous).
void fill_bits(CudaBackend& be, void* p, int64_t n, size_t bytes, uint64_t bits) {
  if (n <= 0) return;
  const size_t total = size_t(n) * bytes;
  if (bits == 0) {
    EMBER_CUDA_CHECK(cudaMemsetAsync(p, 0, total, be.stream()));
    return;
  }
  int64_t done = 0;  // elements covered by the 16-byte fill
  if (reinterpret_cast<uintptr_t>(p) % 16 == 0 && total >= 16) {
    unsigned char pattern[16];
    for (size_t i = 0; i < 16; i += bytes) std::memcpy(pattern + i, &bits, bytes);
    Fill16 v;
    std::memcpy(&v, pattern, 16);
    int64_t n16 = int64_t(total / 16);
    CUfunction f = be.jit().get(key_of("full", bytes), "fill16", [&] { return fill_source(bytes); });
    be.launch(f, grid_for(be, n16, kThreads), kThreads, 0, p, v, n16);
    done = n16 * 16 / int64_t(bytes);
  }
  if (done == n) return;
  void* rest = static_cast<char*>(p) + done * int64_t(bytes);
  switch (bytes) {
    case 1: launch_fill<uint8_t>(be, rest, n - done, bits); break;
    case 2: launch_fill<uint16_t>(be, rest, n - done, bits); break;
    case 4: launch_fill<uint32_t>(be, rest, n - done, bits); break;
    default: launch_fill<uint64_t>(be, rest, n - done, bits); break;
  }
}

namespace {

std::vector<PrimitivePtr> full_kernel(CudaBackend& be, Op& op) {
  auto out = alloc(be, op.outputs[0]);
  const DType dt = out->dtype();
  fill_bits(be, out->raw(), out->numel(), dtype_size(dt), value_bits(dt, op.attr<CreateAttrs>().a));
  return {out};
}

// value_i = start + i * step: in int64 for integer dtypes (start and step truncated, as torch),
// in double for f32/f64 and in float for f16/bf16.
std::vector<PrimitivePtr> arange_kernel(CudaBackend& be, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = alloc(be, op.outputs[0]);
  const DType dt = out->dtype();
  const int64_t n = out->numel();
  if (n == 0) return {out};
  CUfunction f = be.jit().get(key_of(OpKind::arange, dt), "arange", [&] { return arange_source(dt); });
  unsigned grid = grid_for(be, n, kThreads, 4);
  if (dt == DType::f32 || dt == DType::f64)
    be.launch(f, grid, kThreads, 0, out->raw(), a.a, a.c, n);
  else if (is_float(dt))
    be.launch(f, grid, kThreads, 0, out->raw(), float(a.a), float(a.c), n);
  else
    be.launch(f, grid, kThreads, 0, out->raw(), uint64_t(to_i64(a.a)), uint64_t(to_i64(a.c)), n);
  return {out};
}

// torch's formula: step = (end - start) / (steps - 1); the first half counts up from start,
// the second half counts down from end (so both ends are exact).
std::vector<PrimitivePtr> linspace_kernel(CudaBackend& be, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = alloc(be, op.outputs[0]);
  const DType dt = out->dtype();
  const int64_t n = out->numel();
  if (n == 0) return {out};
  const int64_t half = n / 2;
  auto get = [&] { return be.jit().get(key_of(OpKind::linspace, dt), "linspace", [&] { return linspace_source(dt); }); };
  unsigned grid = grid_for(be, n, kThreads, 4);
  visit_dtype(dt, [&]<class T>() {
    if constexpr (is_floating_v<T>) {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      C start = C(a.a), end = C(a.b);
      if (n == 1) {
        T v = convert_scalar<T>(start);
        uint64_t bits = 0;
        std::memcpy(&bits, &v, sizeof(T));
        fill_bits(be, out->raw(), 1, sizeof(T), bits);
        return;
      }
      C step = (end - start) / C(n - 1);
      be.launch(get(), grid, kThreads, 0, out->raw(), start, end, step, n, half);
    } else {
      T start = int_from_double<T>(a.a), end = int_from_double<T>(a.b);
      if (n == 1) {
        uint64_t bits = 0;
        std::memcpy(&bits, &start, sizeof(T));
        fill_bits(be, out->raw(), 1, sizeof(T), bits);
        return;
      }
      double ds = double(start), de = double(end);
      double step = (de - ds) / double(n - 1);
      be.launch(get(), grid, kThreads, 0, out->raw(), ds, de, step, n, half);
    }
  });
  return {out};
}

std::vector<PrimitivePtr> eye_kernel(CudaBackend& be, Op& op) {
  auto out = alloc(be, op.outputs[0]);
  const Shape& s = out->shape();
  const int64_t n = s.numel();
  if (n == 0) return {out};
  const DType dt = out->dtype();
  const size_t bytes = dtype_size(dt);
  const uint64_t one = value_bits(dt, 1.0);
  CUfunction f = be.jit().get(key_of("eye", bytes), "eye", [&] { return eye_source(bytes); });
  unsigned grid = grid_for(be, n, kThreads, 4);
  switch (bytes) {
    case 1: be.launch(f, grid, kThreads, 0, out->raw(), uint8_t(one), s[1], n); break;
    case 2: be.launch(f, grid, kThreads, 0, out->raw(), uint16_t(one), s[1], n); break;
    case 4: be.launch(f, grid, kThreads, 0, out->raw(), uint32_t(one), s[1], n); break;
    default: be.launch(f, grid, kThreads, 0, out->raw(), uint64_t(one), s[1], n); break;
  }
  return {out};
}

// ---- random ----

// Reserves the Philox blocks of n elements (nothing when n == 0, as on the CPU) and runs the
// entry of the (op, dtype) kernel over them.
void run_random(CudaBackend& be, OpKind kind, const CudaTensor& out, bool wide, RandArgs args) {
  const int64_t n = out.numel();
  if (n <= 0) return;
  const DType dt = out.dtype();
  const int per = per_block(kind, dt, wide);
  const int64_t nblocks = (n + per - 1) / per;
  auto stream = be.next_random(uint64_t(nblocks));
  args.key = stream.key;
  args.counter = stream.counter;
  args.n = n;
  CUfunction f = be.jit().get(key_of(kind, dt), wide ? "gen_wide" : "gen", [&] { return random_source(kind, dt); });
  be.launch(f, grid_for(be, nblocks, kThreads), kThreads, 0, out.raw(), args);
}

// The largest value of T strictly below `high` (T = double, float, f16 or bf16; high finite).
template <class T>
T below(double high) {
  if constexpr (std::is_same_v<T, double>) {
    return std::nextafter(high, -std::numeric_limits<double>::infinity());
  } else if constexpr (std::is_same_v<T, float>) {
    float h = float(high);
    if (double(h) >= high) h = std::nextafter(h, -std::numeric_limits<float>::infinity());
    return h;
  } else {
    T h(static_cast<float>(high));
    if (double(static_cast<float>(h)) < high) return h;
    uint16_t bits = h.bits;  // one unit towards -inf in the 16-bit format
    constexpr uint16_t sign = 0x8000u;
    if ((bits & 0x7fffu) == 0) return T::from_bits(sign | 1u);
    return T::from_bits(bits & sign ? uint16_t(bits + 1) : uint16_t(bits - 1));
  }
}

std::vector<PrimitivePtr> uniform_kernel(CudaBackend& be, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = alloc(be, op.outputs[0]);
  const double low = a.a, high = a.b;
  const bool guard = high > low;  // results rounding up to `high` are moved just below it
  RandArgs r;
  visit_float_dtype(out->dtype(), "random_uniform", [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) {
      r.d0 = low;
      r.d1 = high - low;
      r.d2 = below<double>(high);
      r.d3 = high;
      r.flag = guard;
    } else if constexpr (std::is_same_v<T, float>) {
      r.f0 = float(low);
      r.f1 = float(high - low);
      r.f2 = below<float>(high);
      r.f3 = float(high);
      r.flag = guard && double(r.f3) >= high;  // float(high) rounded down: nothing reaches it
    } else {
      r.f0 = float(low);
      r.f1 = float(high - low);
      r.u0 = below<T>(high).bits;
      r.d3 = high;
      r.flag = guard;
    }
  });
  run_random(be, OpKind::random_uniform, *out, false, r);
  return {out};
}

std::vector<PrimitivePtr> normal_kernel(CudaBackend& be, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = alloc(be, op.outputs[0]);
  EMBER_CHECK(is_float(out->dtype()), "random_normal: not supported for ", dtype_name(out->dtype()), " tensors");
  RandArgs r;
  r.d0 = a.a;
  r.d1 = a.b;
  r.f0 = float(a.a);
  r.f1 = float(a.b);
  run_random(be, OpKind::random_normal, *out, false, r);
  return {out};
}

std::vector<PrimitivePtr> bernoulli_kernel(CudaBackend& be, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = alloc(be, op.outputs[0]);
  // P(word < threshold) = threshold / 2^32; p = 1 gives 2^32 (always true)
  double pc = std::clamp(a.a, 0.0, 1.0);
  RandArgs r;
  r.u0 = uint64_t(std::llround(pc * 4294967296.0));
  run_random(be, OpKind::random_bernoulli, *out, false, r);
  return {out};
}

std::vector<PrimitivePtr> randint_kernel(CudaBackend& be, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = alloc(be, op.outputs[0]);
  const int64_t low = int64_t(a.a), high = int64_t(a.b);
  EMBER_CHECK(low < high, "random_randint: low ", low, " must be smaller than high ", high);
  const uint64_t range = uint64_t(high) - uint64_t(low);
  visit_dtype(out->dtype(), [&]<class T>() {
    if constexpr (std::is_integral_v<T>) {  // torch: the bounds must fit the dtype
      using L = std::numeric_limits<T>;
      EMBER_CHECK(low >= int64_t(L::lowest()), "random_randint: from ", low, " is out of bounds for ",
                  dtype_name(out->dtype()));
      constexpr bool kWide = std::is_same_v<T, int64_t>;
      EMBER_CHECK(kWide || high - 1 <= int64_t(L::max()), "random_randint: to - 1 = ", high - 1,
                  " is out of bounds for ", dtype_name(out->dtype()));
    }
  });
  RandArgs r;
  r.i0 = low;
  r.u0 = range;
  run_random(be, OpKind::random_randint, *out, range > (uint64_t(1) << 32), r);
  return {out};
}

}  // namespace

void register_creation_kernels(KernelTable& t) {
  t[size_t(OpKind::full)] = full_kernel;
  t[size_t(OpKind::arange)] = arange_kernel;
  t[size_t(OpKind::linspace)] = linspace_kernel;
  t[size_t(OpKind::eye)] = eye_kernel;
  t[size_t(OpKind::random_uniform)] = uniform_kernel;
  t[size_t(OpKind::random_normal)] = normal_kernel;
  t[size_t(OpKind::random_bernoulli)] = bernoulli_kernel;
  t[size_t(OpKind::random_randint)] = randint_kernel;
}

}  // namespace ember::cuda
