// Index kernels: gather, scatter, scatter_add, index_select, index_add, index_copy, nonzero,
// masked_select. Same semantics as the CPU backend (src/backends/cpu/index.cpp): index tensors
// are i64 or i32, every index must satisfy 0 <= i < size, pure data movement works on raw
// element bits (dispatch on the element size) and the adding ops on the real dtype.
//
// Index errors. A bad index cannot be seen on the host without waiting for the device, so the
// kernels record it instead (skipping the element) in a small per-device record in mapped
// pinned host memory: the offending index, the dim, its size, the op, and a sequence number of
// the launch. The record is checked on the host, without a sync, at the start of every index
// op on the device and right after the sync that nonzero / masked_select need anyway; the Error
// (the CPU backend's message, marked as reported late) is raised there. Set
// EMBER_CUDA_SYNC_INDEX_CHECKS=1 to wait after every checking kernel instead, so that the op that
// received the bad index raises it itself (like the CPU backend), at the cost of a host sync.
//
// Updates through an index (scatter, scatter_add, index_copy, index_add) run one of two ways:
//  - column: one thread per position outside `dim`, walking `dim` in increasing order like the
//    CPU backend: different threads never touch the same element, so repeated indices give the
//    CPU result exactly (last write wins; sums in the CPU's order), without atomics. Used when
//    there are enough columns to fill the GPU or `dim` is short.
//  - element: one thread per update. scatter_add / index_add use atomic adds (16- and 8-bit
//    types through a compare-and-swap on the containing 32-bit word), so float sums of repeated
//    indices may round differently from the CPU (order of the additions). scatter / index_copy
//    stay deterministic: a first kernel claims each target for its last writer (atomicMax of
//    the update's row-major position), a second writes only the claimed updates.
//
// nonzero / masked_select: per-tile counts (4096 elements a tile), one block scans them into
// tile offsets and writes the total into pinned host memory, the host waits for it (the
// output size depends on the data), then every tile writes its selected elements at its
// offset in row-major order (a ballot scan inside the tile): the CPU's order, deterministic.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "cuda_backend.hpp"
#include "index_sources.hpp"

namespace ember::cuda {

namespace {

// ---- the device-side error record and the shared device helpers ----

const char* kIndexErrorCode = R"CUDA(
// Where a kernel records a bad index (index.cpp: IndexErrorRecord).
struct IndexError {
  int64_t seq;
  int64_t index;
  int64_t size;
  int32_t dim;
  int32_t op;
};
struct ErrArg {  // by value: the record, this launch's sequence number, the dim and the op
  IndexError* rec;
  int64_t seq;
  int32_t dim;
  int32_t op;
};
__device__ __forceinline__ bool index_ok(int64_t i, int64_t size) {
  return (unsigned long long)i < (unsigned long long)size;
}
// (inline: an out-of-line call inside the unrolled loops would put their arrays on the stack)
__device__ __forceinline__ void index_fail(const ErrArg& e, int64_t i, int64_t size) {
  e.rec->index = i;
  e.rec->size = size;
  e.rec->dim = e.dim;
  e.rec->op = e.op;
  __threadfence_system();
  *(volatile int64_t*)&e.rec->seq = e.seq;
}
)CUDA";

const char* kIndexHelpers = R"CUDA(

// Offsets of the row-major index i of `sh` in operands with strides a (, b, c). IDX is
// unsigned (32-bit index math, numel < 2^31) or int64_t. The outermost dim needs no division.
// The loops run over the constant EMBER_MAX_RANK dims, guarded by the rank: indexing the
// by-value Shape/Strides arguments with a variable would make every thread copy them to its
// stack (local memory).
template <class IDX>
__device__ __forceinline__ int64_t off1(IDX i, const Shape& sh, const Strides& a) {
  int64_t oa = 0;
#pragma unroll
  for (int d = EMBER_MAX_RANK - 1; d > 0; --d) {
    if (d < sh.rank) {
      const IDX n = IDX(sh.size[d]);
      const IDX q = i / n;
      oa += int64_t(i - q * n) * a.v[d];
      i = q;
    }
  }
  return sh.rank > 0 ? oa + int64_t(i) * a.v[0] : 0;
}
template <class IDX>
__device__ __forceinline__ void off2(IDX i, const Shape& sh, const Strides& a, const Strides& b, int64_t& oa,
                                     int64_t& ob) {
  oa = 0;
  ob = 0;
  if (sh.rank == 0) return;
#pragma unroll
  for (int d = EMBER_MAX_RANK - 1; d > 0; --d) {
    if (d < sh.rank) {
      const IDX n = IDX(sh.size[d]);
      const IDX q = i / n;
      const int64_t r = int64_t(i - q * n);
      oa += r * a.v[d];
      ob += r * b.v[d];
      i = q;
    }
  }
  oa += int64_t(i) * a.v[0];
  ob += int64_t(i) * b.v[0];
}
template <class IDX>
__device__ __forceinline__ void off3(IDX i, const Shape& sh, const Strides& a, const Strides& b, const Strides& c,
                                     int64_t& oa, int64_t& ob, int64_t& oc) {
  oa = 0;
  ob = 0;
  oc = 0;
  if (sh.rank == 0) return;
#pragma unroll
  for (int d = EMBER_MAX_RANK - 1; d > 0; --d) {
    if (d < sh.rank) {
      const IDX n = IDX(sh.size[d]);
      const IDX q = i / n;
      const int64_t r = int64_t(i - q * n);
      oa += r * a.v[d];
      ob += r * b.v[d];
      oc += r * c.v[d];
      i = q;
    }
  }
  oa += int64_t(i) * a.v[0];
  ob += int64_t(i) * b.v[0];
  oc += int64_t(i) * c.v[0];
}
#define GRID_LOOP(IDX, i, n) for (IDX i = IDX(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += IDX(gridDim.x) * blockDim.x)
// Grid-stride steps of ITEMS elements per thread, blockDim.x apart (coalesced): the element
// loop of each step is unrolled so that the independent loads of its elements are in flight
// together. The element j of a step is base + j * blockDim.x (check it against n).
#define ITEMS 4
#define ILP_LOOP(IDX, base, n)                                                       \
  for (IDX base = IDX(blockIdx.x) * (blockDim.x * ITEMS) + threadIdx.x; base < n; \
       base += IDX(gridDim.x) * (blockDim.x * ITEMS))
)CUDA";

// Two-entry kernels: every body is a template over the index type, instantiated as NAME32
// (unsigned, the last parameter `n` < 2^31) and NAME64 (int64_t).
std::string entries(const std::string& name, const std::string& params, const std::string& args) {
  std::string s;
  for (int w : {32, 64}) {
    const char* idx = w == 32 ? "unsigned" : "int64_t";
    s += "extern \"C\" __global__ void " + name + std::to_string(w) + "(" + params + ", " + idx + " n) {\n  " + name +
         "_body<" + idx + ">(" + args + ", n);\n}\n";
  }
  return s;
}

const char* index_type(DType dt) { return dt == DType::i32 ? "int32_t" : "int64_t"; }

// atomic_add_value as a PTX reduction (`red`: no value returned) of `type`, the value passed as
// `operand`. NVRTC compiled atomicAdd with an unused result as a returning atomic (ATOM), whose
// round trips through the L2 made scatter_add 1.4x slower than the same pattern with RED
// (H200, ncu).
std::string red_add(const char* type, const char* operand) {
  return std::string("__device__ __forceinline__ void atomic_add_value(T* p, T v) {\n"
                     "  asm volatile(\"red.global.add.") +
         type + " [%0], %1;\" ::\"l\"(p), " + operand + " : \"memory\");\n}\n";
}

// The parts of the scatter source that depend on the dtype of the adding ops: T + T with the
// CPU backend's rules (ints wrap, bool is or, half types round through float) and an atomic add.
std::string add_helpers(DType dt) {
  std::string s;
  switch (dt) {
    case DType::f64:
    case DType::f32:
      s = "__device__ __forceinline__ T add_values(T a, T b) { return a + b; }\n" +
          (dt == DType::f64 ? red_add("f64", "\"d\"(v)") : red_add("f32", "\"f\"(v)"));
      break;
    case DType::i64:
      s = "__device__ __forceinline__ T add_values(T a, T b) { return T((unsigned long long)a + (unsigned long long)b); }\n" +
          red_add("u64", "\"l\"((unsigned long long)v)");
      break;
    case DType::i32:
      s = "__device__ __forceinline__ T add_values(T a, T b) { return T((unsigned)a + (unsigned)b); }\n" +
          red_add("u32", "\"r\"((unsigned)v)");
      break;
    case DType::boolean:
      // (T is uint8_t) or: every concurrent writer stores the same 1, so a byte store is enough
      s = "__device__ __forceinline__ T add_values(T a, T b) { return T(a != 0 || b != 0); }\n"
          "__device__ __forceinline__ void atomic_add_value(T* p, T v) { if (v) *(volatile T*)p = 1; }\n";
      break;
    default: {  // 16- and 8-bit types: compare-and-swap on the aligned 32-bit word holding *p
      std::string add, to_bits, from_bits;
      if (dt == DType::f16 || dt == DType::bf16) {
        add = "return T(float(a) + float(b));";
        to_bits = "return unsigned(v.bits);";
        from_bits = "return T::from_bits((uint16_t)b);";
      } else if (dt == DType::i16) {
        add = "return T((unsigned)a + (unsigned)b);";
        to_bits = "return unsigned((uint16_t)v);";
        from_bits = "return T((uint16_t)b);";
      } else {  // i8, u8
        add = "return T((unsigned)a + (unsigned)b);";
        to_bits = "return unsigned((uint8_t)v);";
        from_bits = "return T((uint8_t)b);";
      }
      s = "__device__ __forceinline__ T add_values(T a, T b) { " + add +
          " }\n"
          "__device__ __forceinline__ unsigned to_bits(T v) { " +
          to_bits +
          " }\n"
          "__device__ __forceinline__ T from_bits(unsigned b) { " +
          from_bits + " }\n" + R"CUDA(
__device__ __forceinline__ void atomic_add_value(T* p, T v) {
  const unsigned long long addr = (unsigned long long)p;
  unsigned* word = (unsigned*)(addr & ~3ull);
  const unsigned shift = unsigned(addr & 3ull) * 8u;
  const unsigned mask = (sizeof(T) == 2 ? 0xffffu : 0xffu) << shift;
  unsigned old = *(volatile unsigned*)word, assumed;
  do {
    assumed = old;
    const T sum = add_values(from_bits((assumed & mask) >> shift), v);
    old = atomicCAS(word, assumed, (assumed & ~mask) | ((to_bits(sum) << shift) & mask));
  } while (old != assumed);
}
)CUDA";
    }
  }
  return s;
}

// nonzero / masked_select: tiles of 256 threads x 16 elements.
constexpr int kTileThreads = 256;
constexpr int kTileItems = 16;
constexpr int64_t kTile = int64_t(kTileThreads) * kTileItems;

const char* kSelectCommon = R"CUDA(
#define TILE_THREADS 256
#define TILE_ITEMS 16
#define TILE (TILE_THREADS * TILE_ITEMS)

// counts[0..tiles) -> exclusive offsets, counts[tiles] and *total (pinned host memory) = the sum.
extern "C" __global__ void scan(int64_t* counts, int64_t tiles, int64_t* total) {
  __shared__ int64_t warp_sum[32];
  __shared__ int64_t carry;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int64_t b = 0; b < tiles; b += blockDim.x) {
    const int64_t i = b + threadIdx.x;
    const int64_t v = i < tiles ? counts[i] : 0;
    int64_t s = v;
    for (int o = 1; o < 32; o <<= 1) {
      int64_t t = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += t;
    }
    if (lane == 31) warp_sum[warp] = s;
    __syncthreads();
    if (warp == 0) {
      int64_t w = lane < nw ? warp_sum[lane] : 0;
      for (int o = 1; o < 32; o <<= 1) {
        int64_t t = __shfl_up_sync(0xffffffffu, w, o);
        if (lane >= o) w += t;
      }
      if (lane < nw) warp_sum[lane] = w;
    }
    __syncthreads();
    const int64_t excl = carry + (warp > 0 ? warp_sum[warp - 1] : 0) + s - v;
    if (i < tiles) counts[i] = excl;
    __syncthreads();
    if (threadIdx.x == blockDim.x - 1) carry = excl + v;
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    counts[tiles] = carry;
    *(volatile int64_t*)total = carry;
  }
}

// Row-major rank of the selected element of this thread in the current TILE_THREADS-wide step:
// *before = selected elements of the lower warps, returns the rank inside the warp; *step =
// selected elements of the whole step.
__device__ __forceinline__ int step_rank(bool p, int* warp_tot, int* before, int* step) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned b = __ballot_sync(0xffffffffu, p);
  if (lane == 0) warp_tot[warp] = __popc(b);
  __syncthreads();
  int lo = 0, all = 0;
  for (int q = 0; q < TILE_THREADS / 32; ++q) {
    const int t = warp_tot[q];
    lo += q < warp ? t : 0;
    all += t;
  }
  __syncthreads();
  *before = lo;
  *step = all;
  return __popc(b & ((1u << lane) - 1u));
}
)CUDA";

}  // namespace

const char* bits_type(size_t bytes) {
  switch (bytes) {
    case 16: return "ember_b128";
    case 8: return "uint64_t";
    case 4: return "uint32_t";
    case 2: return "uint16_t";
    default: return "uint8_t";
  }
}

std::string gather_source(size_t elem_bytes, DType index) {
  std::string s = std::string(kIndexErrorCode) + kIndexHelpers;
  if (elem_bytes == 16) s += "struct alignas(16) ember_b128 { uint64_t lo, hi; };\n";
  s += "typedef " + std::string(bits_type(elem_bytes)) + " T;\ntypedef " + index_type(index) + " IX;\n";
  s += R"CUDA(
// out (contiguous over the iteration space) [i] = x[ox + index[oi] * xsd]
template <class IDX>
__device__ __forceinline__ void gather_body(T* __restrict__ out, const T* __restrict__ x, const IX* __restrict__ ix,
                                            const Shape& sh, const Strides& si, const Strides& sx, int64_t xsd,
                                            int64_t nd, ErrArg err, IDX n) {
  ILP_LOOP(IDX, base, n) {
    int64_t ox[ITEMS], k[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const IDX i = base + IDX(j) * blockDim.x;
      k[j] = -1;
      if (i < n) {
        int64_t oi;
        off2(i, sh, si, sx, oi, ox[j]);
        k[j] = int64_t(ix[oi]);
      }
    }
    T v[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      v[j] = T{};
      if (base + IDX(j) * blockDim.x < n) {
        if (index_ok(k[j], nd)) v[j] = x[ox[j] + k[j] * xsd];
        else index_fail(err, k[j], nd);
      }
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const IDX i = base + IDX(j) * blockDim.x;
      if (i < n) out[i] = v[j];
    }
  }
}
)CUDA";
  s += entries("gather", "T* out, const T* x, const IX* ix, Shape sh, Strides si, Strides sx, int64_t xsd, int64_t nd, ErrArg err",
               "out, x, ix, sh, si, sx, xsd, nd, err");
  return s;
}

std::string scatter_source(DType dt, DType index, bool add) {
  std::string s = std::string(kIndexErrorCode) + kIndexHelpers;
  const std::string t = add ? (dt == DType::boolean ? "uint8_t" : device_type(dt)) : bits_type(dtype_size(dt));
  // (bool is stored as bytes 0/1; uint8_t keeps a stray byte value from being undefined)
  s += "typedef " + t + " T;\ntypedef " + index_type(index) + " IX;\n";
  if (add) {
    s += "#define EMBER_ADD 1\n";
    s += add_helpers(dt);
  }
  s += R"CUDA(
// One thread per column (position outside dim), along dim in order:
//   out[oo + index[oi + k * isd] * osd] (+)= src[os + k * ssd],  k = 0 .. len-1
template <class IDX>
__device__ __forceinline__ void column_body(T* out, const T* __restrict__ src, const IX* __restrict__ ix,
                                            const Shape& sh, const Strides& so, const Strides& si, const Strides& ss,
                                            int64_t len, int64_t osd, int64_t isd, int64_t ssd, int64_t nd,
                                            ErrArg err, IDX n) {
  GRID_LOOP(IDX, u, n) {
    int64_t oo, oi, os;
    off3(u, sh, so, si, ss, oo, oi, os);
    for (int64_t k = 0; k < len; ++k) {
      const int64_t t = int64_t(ix[oi + k * isd]);
      if (!index_ok(t, nd)) {
        index_fail(err, t, nd);
        continue;
      }
      T* p = out + oo + t * osd;
      const T v = src[os + k * ssd];
#ifdef EMBER_ADD
      *p = add_values(*p, v);
#else
      *p = v;
#endif
    }
  }
}
)CUDA";
  s += entries("column",
               "T* out, const T* src, const IX* ix, Shape sh, Strides so, Strides si, Strides ss, int64_t len, "
               "int64_t osd, int64_t isd, int64_t ssd, int64_t nd, ErrArg err",
               "out, src, ix, sh, so, si, ss, len, osd, isd, ssd, nd, err");
  if (add) {
    s += R"CUDA(
// One thread per update: atomic out[oo + index[oi] * osd] += src[os]  (so has 0 at dim)
template <class IDX>
__device__ __forceinline__ void elem_add_body(T* out, const T* __restrict__ src, const IX* __restrict__ ix,
                                              const Shape& sh, const Strides& so, const Strides& si,
                                              const Strides& ss, int64_t osd, int64_t nd, ErrArg err, IDX n) {
  ILP_LOOP(IDX, base, n) {
    int64_t target[ITEMS], os[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const IDX i = base + IDX(j) * blockDim.x;
      target[j] = -1;
      if (i < n) {
        int64_t oo, oi;
        off3(i, sh, so, si, ss, oo, oi, os[j]);
        const int64_t t = int64_t(ix[oi]);
        if (index_ok(t, nd)) target[j] = oo + t * osd;
        else index_fail(err, t, nd);
      }
    }
    T v[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j)
      if (target[j] >= 0) v[j] = src[os[j]];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j)
      if (target[j] >= 0) atomic_add_value(out + target[j], v[j]);
  }
}
)CUDA";
    s += entries("elem_add",
                 "T* out, const T* src, const IX* ix, Shape sh, Strides so, Strides si, Strides ss, int64_t osd, "
                 "int64_t nd, ErrArg err",
                 "out, src, ix, sh, so, si, ss, osd, nd, err");
  } else {
    s += R"CUDA(
// Last write wins, in parallel: claim[target] = max over its writers of (row-major position + 1)
// (the writers of one target differ only in their position along dim), then each update
// writes only if it holds the claim. out is contiguous: targets are element indices. (PTX
// reductions: see red_add.)
template <class W> __device__ __forceinline__ void claim_max(W* p, W v);
template <> __device__ __forceinline__ void claim_max<unsigned>(unsigned* p, unsigned v) {
  asm volatile("red.global.max.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
template <> __device__ __forceinline__ void claim_max<unsigned long long>(unsigned long long* p, unsigned long long v) {
  asm volatile("red.global.max.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
template <class IDX> struct claim_word { typedef unsigned long long type; };
template <> struct claim_word<unsigned> { typedef unsigned type; };

template <class IDX>
__device__ __forceinline__ void claim_body(void* claims, const IX* __restrict__ ix, const Shape& sh,
                                           const Strides& so, const Strides& si, int64_t osd, int64_t nd,
                                           ErrArg err, IDX n) {
  typedef typename claim_word<IDX>::type W;
  W* c = (W*)claims;
  ILP_LOOP(IDX, base, n) {
    int64_t target[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const IDX i = base + IDX(j) * blockDim.x;
      target[j] = -1;
      if (i < n) {
        int64_t oo, oi;
        off2(i, sh, so, si, oo, oi);
        const int64_t t = int64_t(ix[oi]);
        if (index_ok(t, nd)) target[j] = oo + t * osd;
        else index_fail(err, t, nd);
      }
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j)
      if (target[j] >= 0) claim_max<W>(c + target[j], W(base + IDX(j) * blockDim.x) + 1);
  }
}
template <class IDX>
__device__ __forceinline__ void place_body(T* out, const T* __restrict__ src, const IX* __restrict__ ix,
                                           const void* claims, const Shape& sh, const Strides& so,
                                           const Strides& si, const Strides& ss, int64_t osd, int64_t nd, IDX n) {
  typedef typename claim_word<IDX>::type W;
  const W* c = (const W*)claims;
  ILP_LOOP(IDX, base, n) {
    int64_t target[ITEMS], os[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const IDX i = base + IDX(j) * blockDim.x;
      target[j] = -1;
      if (i < n) {
        int64_t oo, oi;
        off3(i, sh, so, si, ss, oo, oi, os[j]);
        const int64_t t = int64_t(ix[oi]);
        if (index_ok(t, nd)) target[j] = oo + t * osd;  // (a bad index was reported by claim)
      }
    }
    bool mine[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j)
      mine[j] = target[j] >= 0 && c[target[j]] == W(base + IDX(j) * blockDim.x) + 1;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j)
      if (mine[j]) out[target[j]] = src[os[j]];
  }
}
)CUDA";
    s += entries("claim", "void* claims, const IX* ix, Shape sh, Strides so, Strides si, int64_t osd, int64_t nd, ErrArg err",
                 "claims, ix, sh, so, si, osd, nd, err");
    s += entries("place",
                 "T* out, const T* src, const IX* ix, const void* claims, Shape sh, Strides so, Strides si, "
                 "Strides ss, int64_t osd, int64_t nd",
                 "out, src, ix, claims, sh, so, si, ss, osd, nd");
  }
  return s;
}

std::string index_check_source(DType index) {
  std::string s = std::string(kIndexErrorCode) + kIndexHelpers;
  s += "typedef " + std::string(index_type(index)) + " IX;\n";
  s += R"CUDA(
extern "C" __global__ void check(const IX* ix, int64_t stride, int64_t nd, ErrArg err, int64_t n) {
  GRID_LOOP(int64_t, i, n) {
    const int64_t t = int64_t(ix[i * stride]);
    if (!index_ok(t, nd)) index_fail(err, t, nd);
  }
}
)CUDA";
  return s;
}

std::string nonzero_source(DType dt) {
  std::string s = std::string(kIndexErrorCode) + kIndexHelpers;
  s += kSelectCommon;
  s += "typedef " + std::string(dt == DType::boolean ? "uint8_t" : device_type(dt)) + " T;\n";
  s += R"CUDA(
__device__ __forceinline__ bool nonzero_value(T v) {  // NaN is nonzero
  typedef typename ember_compute<T>::type C;
  return C(v) != C(0);
}
template <class IDX>
__device__ __forceinline__ void count_body(const T* __restrict__ x, const Shape& sh, const Strides& sx,
                                           int64_t* counts, IDX n) {
  const IDX base = IDX(blockIdx.x) * TILE + threadIdx.x;
  int c = 0;
  for (int j = 0; j < TILE_ITEMS; ++j) {
    const IDX i = base + IDX(j) * TILE_THREADS;
    bool p = false;
    if (i < n) p = nonzero_value(x[off1(i, sh, sx)]);
    c += __syncthreads_count(p);
  }
  if (threadIdx.x == 0) counts[blockIdx.x] = c;
}
// out[pos] = the coordinates of the selected element over `full` (the uncollapsed shape)
template <class IDX>
__device__ __forceinline__ void write_body(const T* __restrict__ x, const Shape& sh, const Strides& sx,
                                           const Shape& full, const int64_t* __restrict__ offsets,
                                           int64_t* __restrict__ out, IDX n) {
  __shared__ int warp_tot[TILE_THREADS / 32];
  const IDX base = IDX(blockIdx.x) * TILE + threadIdx.x;
  const int r = full.rank;
  int64_t w = offsets[blockIdx.x];
  if (offsets[blockIdx.x + 1] == w) return;  // nothing selected in this tile (uniform)
  for (int j = 0; j < TILE_ITEMS; ++j) {
    const IDX i = base + IDX(j) * TILE_THREADS;
    bool p = false;
    if (i < n) p = nonzero_value(x[off1(i, sh, sx)]);
    int before, step;
    const int rank = step_rank(p, warp_tot, &before, &step);
    if (p) {
      int64_t* o = out + (w + before + rank) * r;
      IDX q = i;
#pragma unroll
      for (int d = EMBER_MAX_RANK - 1; d > 0; --d) {  // (constant indices: see off1)
        if (d < r) {
          const IDX size = IDX(full.size[d]);
          const IDX qq = q / size;
          o[d] = int64_t(q - qq * size);
          q = qq;
        }
      }
      o[0] = int64_t(q);
    }
    w += step;
  }
}
)CUDA";
  s += entries("count", "const T* x, Shape sh, Strides sx, int64_t* counts", "x, sh, sx, counts");
  s += entries("write", "const T* x, Shape sh, Strides sx, Shape full, const int64_t* offsets, int64_t* out",
               "x, sh, sx, full, offsets, out");
  return s;
}

std::string masked_select_source(size_t elem_bytes) {
  std::string s = std::string(kIndexErrorCode) + kIndexHelpers;
  s += kSelectCommon;
  s += "typedef " + std::string(bits_type(elem_bytes)) + " T;\n";
  s += R"CUDA(
template <class IDX>
__device__ __forceinline__ void count_body(const uint8_t* __restrict__ m, const Shape& sh, const Strides& sm,
                                           int64_t* counts, IDX n) {
  const IDX base = IDX(blockIdx.x) * TILE + threadIdx.x;
  int c = 0;
  for (int j = 0; j < TILE_ITEMS; ++j) {
    const IDX i = base + IDX(j) * TILE_THREADS;
    bool p = false;
    if (i < n) p = m[off1(i, sh, sm)] != 0;
    c += __syncthreads_count(p);
  }
  if (threadIdx.x == 0) counts[blockIdx.x] = c;
}
template <class IDX>
__device__ __forceinline__ void write_body(const T* __restrict__ x, const uint8_t* __restrict__ m, const Shape& sh,
                                           const Strides& sx, const Strides& sm, const int64_t* __restrict__ offsets,
                                           T* __restrict__ out, IDX n) {
  __shared__ int warp_tot[TILE_THREADS / 32];
  const IDX base = IDX(blockIdx.x) * TILE + threadIdx.x;
  int64_t w = offsets[blockIdx.x];
  if (offsets[blockIdx.x + 1] == w) return;  // nothing selected in this tile (uniform)
  for (int j = 0; j < TILE_ITEMS; ++j) {
    const IDX i = base + IDX(j) * TILE_THREADS;
    bool p = false;
    int64_t ox = 0, om = 0;
    if (i < n) {
      off2(i, sh, sx, sm, ox, om);
      p = m[om] != 0;
    }
    int before, step;
    const int rank = step_rank(p, warp_tot, &before, &step);
    if (p) out[w + before + rank] = x[ox];
    w += step;
  }
}
)CUDA";
  s += entries("count", "const uint8_t* m, Shape sh, Strides sm, int64_t* counts", "m, sh, sm, counts");
  s += entries("write",
               "const T* x, const uint8_t* m, Shape sh, Strides sx, Strides sm, const int64_t* offsets, T* out",
               "x, m, sh, sx, sm, offsets, out");
  return s;
}

namespace {

// ---- per-device error record and count (mapped pinned host memory) ----

struct IndexErrorRecord {  // the device's IndexError
  int64_t seq;
  int64_t index;
  int64_t size;
  int32_t dim;
  int32_t op;
};
using ErrArg = IndexErrArg;
static_assert(sizeof(ErrArg) == 24);

struct IndexState {
  IndexErrorRecord* rec = nullptr;  // host view
  void* rec_dev = nullptr;          // device view
  int64_t* total = nullptr;         // nonzero / masked_select count (host view)
  void* total_dev = nullptr;
  int64_t next_seq = 0;      // sequence number of the last checking launch
  int64_t reported_seq = 0;  // errors up to this one have been raised
};

// One per device, made on first use and never freed (it outlives the backends; freeing pinned
// memory at exit would race with the driver's teardown). Ops on one device are serialised by
// the backend, so the state itself needs no lock.
std::mutex g_states_mu;
std::map<int, std::unique_ptr<IndexState>> g_states;

IndexState& index_state(CudaBackend& be) {
  std::lock_guard<std::mutex> lock(g_states_mu);
  auto& st = g_states[be.index()];
  if (!st) {
    auto s = std::make_unique<IndexState>();
    void* host = nullptr;
    EMBER_CUDA_CHECK(cudaHostAlloc(&host, 64, cudaHostAllocMapped | cudaHostAllocPortable));
    std::memset(host, 0, 64);
    void* dev = nullptr;
    EMBER_CUDA_CHECK(cudaHostGetDevicePointer(&dev, host, 0));
    s->rec = static_cast<IndexErrorRecord*>(host);
    s->rec_dev = dev;
    s->total = reinterpret_cast<int64_t*>(static_cast<char*>(host) + 32);
    s->total_dev = static_cast<char*>(dev) + 32;
    st = std::move(s);
  }
  return *st;
}

bool sync_checks() {
  static const bool on = [] {
    const char* e = std::getenv("EMBER_CUDA_SYNC_INDEX_CHECKS");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

// Raises the error recorded by a kernel launched since the last report, if any. `late`: the
// kernel belonged to an earlier op.
void raise_recorded(CudaBackend& be, IndexState& st, bool late) {
  volatile IndexErrorRecord* r = st.rec;
  const int64_t seq = r->seq;
  if (seq <= st.reported_seq) return;
  std::atomic_thread_fence(std::memory_order_acquire);
  st.reported_seq = seq;
  const int64_t i = r->index, size = r->size;
  const int dim = r->dim, op = r->op;
  const std::string_view name = op >= 0 && op < kNumOps ? op_name(OpKind(op)) : std::string_view("index");
  if (late)
    EMBER_FAIL(name, ": index ", i, " is out of bounds for dim ", dim, " with size ", size, " (on ", be.name(),
               "; index errors of CUDA kernels are reported by the next index op or nonzero/masked_select; "
               "EMBER_CUDA_SYNC_INDEX_CHECKS=1 reports them at once)");
  EMBER_FAIL(name, ": index ", i, " is out of bounds for dim ", dim, " with size ", size);
}

// The error argument of a new checking launch.
ErrArg err_arg(IndexState& st, const Op& op, int dim) {
  return ErrArg{st.rec_dev, ++st.next_seq, int32_t(dim), int32_t(op.kind)};
}

// After the checking launches of an op: in synchronous mode, wait and raise here.
void finish_checks(CudaBackend& be, IndexState& st) {
  if (!sync_checks()) return;
  be.refuse_in_capture("EMBER_CUDA_SYNC_INDEX_CHECKS (it waits after every index op)");
  EMBER_CUDA_CHECK(cudaStreamSynchronize(be.stream()));
  raise_recorded(be, st, false);
}

// Start of every index op: errors of earlier kernels.
IndexState& begin_op(CudaBackend& be) {
  IndexState& st = index_state(be);
  raise_recorded(be, st, true);
  return st;
}

constexpr int kThreads = 256;

// Launches NAME32 (n < 2^31, 32-bit index math) or NAME64 with `n` appended to the arguments.
template <class... A>
void launch_n(CudaBackend& be, const std::string& key, const std::string& name,
              const std::function<std::string()>& source, int64_t n, unsigned grid, unsigned block, unsigned smem,
              A... args) {
  if (n < (int64_t(1) << 31)) {
    CUfunction f = be.jit().get(key, (name + "32").c_str(), source);
    be.launch(f, grid, block, smem, args..., uint32_t(n));
  } else {
    CUfunction f = be.jit().get(key, (name + "64").c_str(), source);
    be.launch(f, grid, block, smem, args..., int64_t(n));
  }
}

std::string key_of(const Op& op, std::initializer_list<std::string_view> parts) {
  std::string k(op.name());
  for (auto p : parts) {
    k += '/';
    k += p;
  }
  return k;
}

std::string bits_name(size_t bytes) {
  std::string s = "b";
  s += std::to_string(bytes * 8);
  return s;
}

// Strides without `dim`, or with 0 at `dim`.
std::vector<int64_t> drop_dim(const std::vector<int64_t>& v, int dim) {
  std::vector<int64_t> r = v;
  r.erase(r.begin() + dim);
  return r;
}
std::vector<int64_t> zero_dim(const std::vector<int64_t>& v, int dim) {
  std::vector<int64_t> r = v;
  r[size_t(dim)] = 0;
  return r;
}

// A copy of input 0 to update (its own buffer when the op holds the only reference).
CudaTensorPtr writable_copy(CudaBackend& be, Op& op) {
  auto x = as_cuda_ptr(op.inputs[0]);
  auto out = output_reusing(be, op, 0, op.outputs[0]);
  if (out->buffer != x->buffer) copy_view(be, view_of(*out), view_of(*x));
  return out;
}

// Checks every element of a 1-d (or 0-d) index tensor (for the cases where the main kernel
// does not read them all).
void check_all_indices(CudaBackend& be, IndexState& st, const Op& op, const CudaTensor& ix, int dim, int64_t nd) {
  const int64_t n = ix.numel();
  if (n == 0) return;
  const int64_t stride = ix.shape().rank() ? ix.strides[0] : 0;
  std::string key = key_of(op, {"check", dtype_name(ix.dtype())});
  CUfunction f = be.jit().get(key, "check", [&] { return index_check_source(ix.dtype()); });
  be.launch(f, grid_for(be, n, kThreads), kThreads, 0, ix.raw(), stride, nd, err_arg(st, op, dim), n);
}

// ---- gather / index_select: out[i] = x[i with coordinate dim = index[i]] ----

// out (contiguous) over `shape`; index and x (0 at dim) strides over `shape`.
void run_gather(CudaBackend& be, IndexState& st, const Op& op, CudaTensor& out, const CudaTensor& x,
                const CudaTensor& ix, const Shape& shape, const std::vector<int64_t>& si,
                const std::vector<int64_t>& sx, int64_t xsd, int64_t nd, int dim) {
  int64_t n = shape.numel();
  if (n == 0) return;
  Collapsed c = collapse(op.name(), shape, {si, sx});
  size_t es = dtype_size(x.dtype());
  // Rows: when the innermost dim is a contiguous run of x with one index (index_select,
  // embedding lookups), move it in 16-, 8- or 4-byte units instead of elements.
  const int r = c.shape.rank;
  if (r > 0 && c.strides[0].v[r - 1] == 0 && c.strides[1].v[r - 1] == 1) {
    for (size_t vb : {size_t(16), size_t(8), size_t(4)}) {
      if (vb <= es) break;
      const int64_t v = int64_t(vb / es);
      bool ok = c.shape.size[r - 1] % v == 0 && xsd % v == 0 && reinterpret_cast<uintptr_t>(x.raw()) % vb == 0 &&
                reinterpret_cast<uintptr_t>(out.raw()) % vb == 0;
      for (int d = 0; d < r - 1 && ok; ++d) ok = c.strides[1].v[d] % v == 0;
      if (!ok) continue;
      c.shape.size[r - 1] /= v;
      for (int d = 0; d < r - 1; ++d) c.strides[1].v[d] /= v;
      xsd /= v;
      n /= v;
      es = vb;
      break;
    }
  }
  std::string key = key_of(op, {bits_name(es), dtype_name(ix.dtype())});
  launch_n(be, key, "gather", [&] { return gather_source(es, ix.dtype()); }, n, grid_for(be, n, kThreads, 4), kThreads,
           0, out.raw(), x.raw(), ix.raw(), c.shape, c.strides[0], c.strides[1], xsd, nd, err_arg(st, op, dim));
}

std::vector<PrimitivePtr> gather_kernel(CudaBackend& be, Op& op) {
  IndexState& st = begin_op(be);
  auto& x = as_cuda(op.inputs[0]);
  auto& ix = as_cuda(op.inputs[1]);
  const int dim = op.attr<DimAttrs>().dim;
  auto out = alloc(be, op.outputs[0]);
  const Shape& s = ix.shape();
  const int r = s.rank();
  std::vector<int64_t> sx(size_t(r), 0);
  for (int d = 0; d < r; ++d) sx[size_t(d)] = d == dim ? 0 : x.strides[size_t(d)];
  const int64_t nd = r ? x.shape()[dim] : 1, xsd = r ? x.strides[size_t(dim)] : 0;
  run_gather(be, st, op, *out, x, ix, s, ix.strides, sx, xsd, nd, dim);
  finish_checks(be, st);
  return {out};
}

std::vector<PrimitivePtr> index_select_kernel(CudaBackend& be, Op& op) {
  IndexState& st = begin_op(be);
  auto& x = as_cuda(op.inputs[0]);
  auto& ix = as_cuda(op.inputs[1]);
  const int dim = op.attr<DimAttrs>().dim;
  auto out = alloc(be, op.outputs[0]);
  const Shape& s = out->shape();
  const int r = s.rank();
  const int64_t n = ix.numel();
  const int64_t nd = r ? x.shape()[dim] : 1;
  if (r == 0) {  // 0-d: every index must be 0; the value is x's (or 0 without indices)
    check_all_indices(be, st, op, ix, dim, nd);
    if (n > 0)
      EMBER_CUDA_CHECK(cudaMemcpyAsync(out->raw(), x.raw(), dtype_size(x.dtype()), cudaMemcpyDeviceToDevice, be.stream()));
    else
      EMBER_CUDA_CHECK(cudaMemsetAsync(out->raw(), 0, dtype_size(x.dtype()), be.stream()));
  } else if (out->numel() == 0) {  // nothing to copy, but the indices are still checked
    check_all_indices(be, st, op, ix, dim, nd);
  } else {
    std::vector<int64_t> si(size_t(r), 0);
    si[size_t(dim)] = ix.shape().rank() ? ix.strides[0] : 0;
    run_gather(be, st, op, *out, x, ix, s, si, zero_dim(x.strides, dim), x.strides[size_t(dim)], nd, dim);
  }
  finish_checks(be, st);
  return {out};
}

// ---- scatter / scatter_add / index_copy / index_add ----

// out[target(i)] (+)= src[i] for every i of `shape`, target(i) = i with coordinate dim =
// index[i]; so, si, ss: the strides over `shape` of out (its own dim stride at dim), index, src.
template <bool Add>
void run_update(CudaBackend& be, IndexState& st, const Op& op, CudaTensor& out, const CudaTensor& ix,
                const CudaTensor& src, const Shape& shape, int dim, const std::vector<int64_t>& so,
                const std::vector<int64_t>& si, const std::vector<int64_t>& ss, int64_t nd, int err_dim) {
  const int64_t total = shape.numel();
  if (total == 0) return;
  const DType dt = out.dtype();
  const int64_t len = shape[dim], units = total / len;
  const std::string tname = Add ? std::string(dtype_name(dt)) : bits_name(dtype_size(dt));
  const std::string key = key_of(op, {tname, dtype_name(ix.dtype())});
  auto source = [&] { return scatter_source(dt, ix.dtype(), Add); };
  const int64_t osd = so[size_t(dim)];
  // columns: enough of them to fill the GPU, or short ones
  const bool column = len <= 8 || units >= int64_t(be.sm_count()) * 2048;
  if (column) {
    std::vector<int64_t> ushape = shape.dims();
    ushape.erase(ushape.begin() + dim);
    Collapsed c = collapse(op.name(), Shape(ushape), {drop_dim(so, dim), drop_dim(si, dim), drop_dim(ss, dim)});
    launch_n(be, key, "column", source, units, grid_for(be, units, kThreads), kThreads, 0, out.raw(), src.raw(),
             ix.raw(), c.shape, c.strides[0], c.strides[1], c.strides[2], len, osd, si[size_t(dim)], ss[size_t(dim)],
             nd, err_arg(st, op, err_dim));
    return;
  }
  Collapsed c = collapse(op.name(), shape, {zero_dim(so, dim), si, ss});
  const unsigned grid = grid_for(be, total, kThreads, 4);
  if constexpr (Add) {
    launch_n(be, key, "elem_add", source, total, grid, kThreads, 0, out.raw(), src.raw(), ix.raw(), c.shape,
             c.strides[0], c.strides[1], c.strides[2], osd, nd, err_arg(st, op, err_dim));
  } else {
    const bool small = total < (int64_t(1) << 31);
    auto claims = alloc(be, TensorMeta{Shape{out.numel()}, small ? DType::i32 : DType::i64});
    EMBER_CUDA_CHECK(cudaMemsetAsync(claims->raw(), 0, size_t(out.numel()) * (small ? 4 : 8), be.stream()));
    launch_n(be, key, "claim", source, total, grid, kThreads, 0, claims->raw(), ix.raw(), c.shape, c.strides[0],
             c.strides[1], osd, nd, err_arg(st, op, err_dim));
    launch_n(be, key, "place", source, total, grid, kThreads, 0, out.raw(), src.raw(), ix.raw(),
             static_cast<const void*>(claims->raw()), c.shape, c.strides[0], c.strides[1], c.strides[2], osd, nd);
  }
}

template <bool Add>
std::vector<PrimitivePtr> scatter_kernel(CudaBackend& be, Op& op) {
  IndexState& st = begin_op(be);
  const int dim = op.attr<DimAttrs>().dim;
  auto out = writable_copy(be, op);
  auto& ix = as_cuda(op.inputs[1]);
  auto& src = as_cuda(op.inputs[2]);
  if (ix.numel() == 0) return {out};
  const int r = ix.shape().rank();
  if (r == 0) {  // 0-d: one update of the single element
    run_update<Add>(be, st, op, *out, ix, src, Shape{1}, 0, {0}, {0}, {0}, 1, dim);
  } else {
    run_update<Add>(be, st, op, *out, ix, src, ix.shape(), dim, out->strides, ix.strides, src.strides,
                    out->shape()[dim], dim);
  }
  finish_checks(be, st);
  return {out};
}

template <bool Add>
std::vector<PrimitivePtr> index_update_kernel(CudaBackend& be, Op& op) {
  IndexState& st = begin_op(be);
  const int dim = op.attr<DimAttrs>().dim;
  auto& ix = as_cuda(op.inputs[1]);
  auto& src = as_cuda(op.inputs[2]);
  const Shape xs = op.in(0).shape;
  const int r = xs.rank();
  const int64_t nd = r ? xs[dim] : 1;
  auto out = writable_copy(be, op);
  const int64_t n = ix.numel();
  if (n == 0 || out->numel() == 0) {
    check_all_indices(be, st, op, ix, dim, nd);
  } else if (r == 0) {  // 0-d input: one update with index[0] (all indices are checked)
    if (n > 1) check_all_indices(be, st, op, ix, dim, nd);
    run_update<Add>(be, st, op, *out, ix, src, Shape{1}, 0, {0}, {0}, {0}, 1, dim);
  } else {
    std::vector<int64_t> si(size_t(r), 0);
    si[size_t(dim)] = ix.shape().rank() ? ix.strides[0] : 0;
    run_update<Add>(be, st, op, *out, ix, src, src.shape(), dim, out->strides, si, src.strides, nd, dim);
  }
  finish_checks(be, st);
  return {out};
}

// ---- nonzero / masked_select ----

int64_t tiles_of(const Op& op, int64_t n) {
  const int64_t tiles = (n + kTile - 1) / kTile;
  EMBER_CHECK(tiles < (int64_t(1) << 31), op.name(), ": ", n, " elements are too many");
  return tiles;
}

// Scans the tile counts (counts[tiles] = total), waits for the device, returns the total.
int64_t scan_and_wait(CudaBackend& be, IndexState& st, const std::string& key,
                      const std::function<std::string()>& source, CudaTensor& counts, int64_t tiles) {
  *st.total = -1;
  CUfunction f = be.jit().get(key, "scan", source);
  be.refuse_in_capture("nonzero / masked_select (the size of the output is read from the device)");
  be.launch(f, 1, 1024, 0, counts.raw(), tiles, st.total_dev);
  EMBER_CUDA_CHECK(cudaStreamSynchronize(be.stream()));
  raise_recorded(be, st, true);
  const int64_t total = *static_cast<volatile int64_t*>(st.total);
  EMBER_CHECK(total >= 0, "nonzero/masked_select: the device did not report a count");
  return total;
}

std::vector<PrimitivePtr> nonzero_kernel(CudaBackend& be, Op& op) {
  IndexState& st = begin_op(be);
  auto& x = as_cuda(op.inputs[0]);
  const Shape& s = x.shape();
  const int r = s.rank();
  const int64_t n = s.numel();
  EMBER_CHECK(r <= kMaxRank, "nonzero: rank ", r, " is not supported");
  if (n == 0) return {alloc(be, TensorMeta{Shape{0, int64_t(r)}, DType::i64})};
  Collapsed c = collapse(op.name(), s, {x.strides});
  const DType dt = x.dtype();
  const std::string key = key_of(op, {dtype_name(dt)});
  auto source = [&] { return nonzero_source(dt); };
  const int64_t tiles = tiles_of(op, n);
  auto counts = alloc(be, TensorMeta{Shape{tiles + 1}, DType::i64});
  launch_n(be, key, "count", source, n, unsigned(tiles), kTileThreads, 0, x.raw(), c.shape, c.strides[0],
           static_cast<int64_t*>(counts->raw()));
  const int64_t total = scan_and_wait(be, st, key, source, *counts, tiles);
  auto out = alloc(be, TensorMeta{Shape{total, int64_t(r)}, DType::i64});
  if (total == 0 || r == 0) return {out};
  ShapeArg full;
  full.rank = r;
  for (int d = 0; d < r; ++d) full.size[d] = s[d];
  launch_n(be, key, "write", source, n, unsigned(tiles), kTileThreads, 0, x.raw(), c.shape, c.strides[0], full,
           static_cast<const int64_t*>(counts->raw()), static_cast<int64_t*>(out->raw()));
  return {out};
}

std::vector<PrimitivePtr> masked_select_kernel(CudaBackend& be, Op& op) {
  IndexState& st = begin_op(be);
  auto& x = as_cuda(op.inputs[0]);
  auto& m = as_cuda(op.inputs[1]);
  const Shape bs = broadcast_shapes(x.shape(), m.shape(), "masked_select");
  const int64_t n = bs.numel();
  if (n == 0) return {alloc(be, TensorMeta{Shape{0}, x.dtype()})};
  Collapsed c = collapse(op.name(), bs, {broadcast_strides(x, bs), broadcast_strides(m, bs)});
  const size_t es = dtype_size(x.dtype());
  const std::string key = key_of(op, {bits_name(es)});
  auto source = [&] { return masked_select_source(es); };
  const int64_t tiles = tiles_of(op, n);
  auto counts = alloc(be, TensorMeta{Shape{tiles + 1}, DType::i64});
  launch_n(be, key, "count", source, n, unsigned(tiles), kTileThreads, 0, static_cast<const uint8_t*>(m.raw()),
           c.shape, c.strides[1], static_cast<int64_t*>(counts->raw()));
  const int64_t total = scan_and_wait(be, st, key, source, *counts, tiles);
  auto out = alloc(be, TensorMeta{Shape{total}, x.dtype()});
  if (total == 0) return {out};
  launch_n(be, key, "write", source, n, unsigned(tiles), kTileThreads, 0, x.raw(),
           static_cast<const uint8_t*>(m.raw()), c.shape, c.strides[0], c.strides[1],
           static_cast<const int64_t*>(counts->raw()), out->raw());
  return {out};
}

}  // namespace

void register_index_kernels(KernelTable& t) {
  t[size_t(OpKind::gather)] = gather_kernel;
  t[size_t(OpKind::scatter)] = scatter_kernel<false>;
  t[size_t(OpKind::scatter_add)] = scatter_kernel<true>;
  t[size_t(OpKind::index_select)] = index_select_kernel;
  t[size_t(OpKind::index_add)] = index_update_kernel<true>;
  t[size_t(OpKind::index_copy)] = index_update_kernel<false>;
  t[size_t(OpKind::nonzero)] = nonzero_kernel;
  t[size_t(OpKind::masked_select)] = masked_select_kernel;
}

const char* index_error_code() { return kIndexErrorCode; }

IndexErrArg begin_index_checks(CudaBackend& be, const Op& op, int dim) { return err_arg(begin_op(be), op, dim); }

void end_index_checks(CudaBackend& be) { finish_checks(be, index_state(be)); }

// After a synchronisation (read, sync): raise a bad index recorded by any kernel since.
void check_index_errors(CudaBackend& be) {
  IndexState* st = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_states_mu);
    auto it = g_states.find(be.index());
    if (it == g_states.end() || !it->second) return;
    st = it->second.get();
  }
  raise_recorded(be, *st, true);
}

}  // namespace ember::cuda
