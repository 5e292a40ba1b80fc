// Scans along DimAttrs.dim: cumsum, cumprod (integers and bool give i64, wrapping; floats
// accumulate in the compute type: f32 for f16/bf16/f32, f64), cummax, cummin (values + i64
// indices with the CPU backend's rule: an element equal to the running extreme takes over its
// index, and a NaN becomes — and stays — the extreme, each new NaN taking the index). That rule
// is a maximum under the total order (is NaN, value, index), so it scans in parallel like a sum.
//
// The input is made contiguous and seen as [outer, D, inner]:
//   * inner == 1, D > 32: a block per row (or per chunk of a row), tiles of blockDim.x * 8
//     elements: each thread scans 8 consecutive elements, then a block-wide exclusive scan of
//     the thread totals (warp shuffles) gives every thread its prefix;
//   * otherwise one thread per (row, chunk) of a column (coalesced along inner), sequential;
//   * when there are too few rows to fill the GPU, rows are cut into chunks: pass 1 reduces
//     every chunk, pass 2 scans the chunk totals of each row, pass 3 scans every chunk from
//     its carry. Everything is deterministic.
#include <algorithm>

#include "cuda_backend.hpp"
#include "reduce_sources.hpp"

namespace ember::cuda {

namespace {

constexpr int kItems = 8;  // elements per thread per tile (row kernel)

// The scan operator of each op: Acc, s_ident, s_make(x, position), s_comb(earlier, later),
// shuffles, s_value / s_index (the outputs), S_HAS_INDEX.
std::string scan_ops(OpKind op, DType dt) {
  const bool fl = is_float(dt);
  std::string s;
  if (op == OpKind::cumsum || op == OpKind::cumprod) {
    const bool sum = op == OpKind::cumsum;
    if (fl) {
      s += "typedef C A;\ntypedef T O;\n";
    } else {
      s += "typedef unsigned long long A;\ntypedef int64_t O;\n";
    }
    s += std::string("#define S_IDENT A(") + (sum ? "0" : "1") + ")\n";
    s += std::string("#define S_OP(a, b) ((a) ") + (sum ? "+" : "*") + " (b))\n";
    s += fl ? "#define S_VAL(x) A(C(x))\n" : "#define S_VAL(x) A(int64_t(x))\n";
    s += fl ? "#define S_OUT(a) O(a)\n" : "#define S_OUT(a) O(int64_t(a))\n";
    s += R"CUDA(
struct Acc { A v; };
__device__ __forceinline__ Acc s_ident() { Acc a; a.v = S_IDENT; return a; }
__device__ __forceinline__ Acc s_make(T x, int64_t) { Acc a; a.v = S_VAL(x); return a; }
__device__ __forceinline__ Acc s_comb(const Acc& a, const Acc& b) { Acc r; r.v = S_OP(a.v, b.v); return r; }
__device__ __forceinline__ Acc s_shfl_up(const Acc& a, int d) { Acc r; r.v = shfl_u(a.v, d); return r; }
__device__ __forceinline__ Acc s_shfl_xor(const Acc& a, int m) { Acc r; r.v = shfl_x(a.v, m); return r; }
__device__ __forceinline__ O s_value(const Acc& a) { return S_OUT(a.v); }
__device__ __forceinline__ int64_t s_index(const Acc&) { return 0; }
#define S_HAS_INDEX 0
)CUDA";
  } else {
    const bool mx = op == OpKind::cummax;
    s += "typedef T O;\n";
    s += std::string("#define S_GT(x, y) ((x) ") + (mx ? ">" : "<") + " (y))\n";
    s += std::string("#define S_FLOAT ") + (fl ? "1" : "0") + "\n";
    s += R"CUDA(
struct Acc { C v; int64_t i; };  // i = -1: identity
__device__ __forceinline__ Acc s_ident() { Acc a; a.v = C(0); a.i = -1; return a; }
__device__ __forceinline__ Acc s_make(T x, int64_t d) { Acc a; a.v = C(x); a.i = d; return a; }
// b beats a: NaN first, then the larger (cummin: smaller) value, then the later index
__device__ __forceinline__ bool s_beats(const Acc& b, const Acc& a) {
#if S_FLOAT
  const bool bn = b.v != b.v, an = a.v != a.v;
  if (bn != an) return bn;
  if (bn) return b.i > a.i;
#endif
  if (b.v != a.v) return S_GT(b.v, a.v);
  return b.i > a.i;
}
__device__ __forceinline__ Acc s_comb(const Acc& a, const Acc& b) {
  if (b.i < 0) return a;
  if (a.i < 0) return b;
  return s_beats(b, a) ? b : a;
}
__device__ __forceinline__ Acc s_shfl_up(const Acc& a, int d) { Acc r; r.v = shfl_u(a.v, d); r.i = shfl_u(a.i, d); return r; }
__device__ __forceinline__ Acc s_shfl_xor(const Acc& a, int m) { Acc r; r.v = shfl_x(a.v, m); r.i = shfl_x(a.i, m); return r; }
__device__ __forceinline__ O s_value(const Acc& a) { return O(a.v); }
__device__ __forceinline__ int64_t s_index(const Acc& a) { return a.i; }
#define S_HAS_INDEX 1
)CUDA";
  }
  return s;
}

const char* kScanKernels = R"CUDA(
// Exclusive scan of one value per thread over the block (blockDim.x a multiple of 32, at most
// 1024); `total` gets the block's aggregate. Every thread must call it.
__device__ __forceinline__ Acc block_exclusive(Acc v, Acc* wsum, Acc& total) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  for (int d = 1; d < 32; d <<= 1) {
    Acc o = s_shfl_up(v, d);
    if (lane >= d) v = s_comb(o, v);
  }
  Acc ex = s_shfl_up(v, 1);  // the warp's exclusive prefix
  if (lane == 0) ex = s_ident();
  __syncthreads();  // wsum may still be read from the previous call
  if (lane == 31) wsum[w] = v;
  __syncthreads();
  if (w == 0) {
    Acc t = lane < nw ? wsum[lane] : s_ident();
    for (int d = 1; d < 32; d <<= 1) {
      Acc o = s_shfl_up(t, d);
      if (lane >= d) t = s_comb(o, t);
    }
    if (lane < nw) wsum[lane] = t;  // inclusive scan of the warp totals
  }
  __syncthreads();
  total = wsum[nw - 1];
  return w > 0 ? s_comb(wsum[w - 1], ex) : ex;
}

__device__ __forceinline__ void s_store(O* y, int64_t* yi, int64_t pos, const Acc& a) {
  y[pos] = s_value(a);
#if S_HAS_INDEX
  yi[pos] = s_index(a);
#endif
}

// ITEMS consecutive elements as whole words (the vector path of scan_rows)
union InV { T v[ITEMS]; VIN u[NIN]; };
union OutV { O v[ITEMS]; VOUT u[NOUT]; };
union IdxV { int64_t v[ITEMS]; uint4 u[ITEMS / 2]; };

// Rows (inner == 1): unit u = row * NC + chunk scans x[row, chunk * csize ...) from the carry
// (the exclusive prefix of the chunk; none when carry is null). vec: D, csize and the pointers
// allow whole-word loads and stores of each thread's ITEMS elements.
extern "C" __global__ void scan_rows(O* __restrict__ y, int64_t* __restrict__ yi, const T* __restrict__ x,
                                     int64_t rows, int64_t D, int64_t NC, int64_t csize, const Acc* __restrict__ carry,
                                     int vec) {
  __shared__ Acc wsum[32];
  const int64_t tile = int64_t(blockDim.x) * ITEMS;
  for (int64_t u = blockIdx.x; u < rows * NC; u += gridDim.x) {
    const int64_t row = u / NC, c = u - row * NC;
    const T* xr = x + row * D;
    const int64_t b0 = c * csize, b1 = b0 + csize < D ? b0 + csize : D;
    Acc prefix = carry ? carry[u] : s_ident();
    for (int64_t t0 = b0; t0 < b1; t0 += tile) {
      const int64_t i0 = t0 + int64_t(threadIdx.x) * ITEMS;
      Acc loc[ITEMS];
      Acc run = s_ident();
      if (vec) {
        InV in;
        if (i0 < b1) {
#pragma unroll
          for (int w = 0; w < NIN; ++w) in.u[w] = ((const VIN*)(xr + i0))[w];
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
          if (i0 < b1) run = s_comb(run, s_make(in.v[k], i0 + k));
          loc[k] = run;
        }
      } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
          if (i0 + k < b1) run = s_comb(run, s_make(xr[i0 + k], i0 + k));
          loc[k] = run;
        }
      }
      Acc total;
      const Acc base = s_comb(prefix, block_exclusive(run, wsum, total));
      if (vec) {
        if (i0 < b1) {
          OutV ov;
          IdxV iv;
#pragma unroll
          for (int k = 0; k < ITEMS; ++k) {
            const Acc a = s_comb(base, loc[k]);
            ov.v[k] = s_value(a);
            iv.v[k] = s_index(a);
          }
#pragma unroll
          for (int w = 0; w < NOUT; ++w) ((VOUT*)(y + row * D + i0))[w] = ov.u[w];
#if S_HAS_INDEX
#pragma unroll
          for (int w = 0; w < ITEMS / 2; ++w) ((uint4*)(yi + row * D + i0))[w] = iv.u[w];
#endif
        }
      } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
          if (i0 + k < b1) s_store(y, yi, row * D + i0 + k, s_comb(base, loc[k]));
      }
      prefix = s_comb(prefix, total);
    }
  }
}

// Pass 1 for rows: agg[u] = the aggregate of chunk u.
extern "C" __global__ void reduce_rows(Acc* __restrict__ agg, const T* __restrict__ x, int64_t rows, int64_t D,
                                       int64_t NC, int64_t csize) {
  __shared__ Acc wsum[32];
  for (int64_t u = blockIdx.x; u < rows * NC; u += gridDim.x) {
    const int64_t row = u / NC, c = u - row * NC;
    const T* xr = x + row * D;
    const int64_t b0 = c * csize, b1 = b0 + csize < D ? b0 + csize : D;
    Acc a = s_ident();
    for (int64_t i = b0 + threadIdx.x; i < b1; i += blockDim.x) a = s_comb(a, s_make(xr[i], i));
    Acc total;
    block_exclusive(a, wsum, total);  // (in thread order: the combination stays ordered)
    if (threadIdx.x == 0) agg[u] = total;
  }
}

// Pass 2: exclusive scan of the NC chunk aggregates of every row, in place.
extern "C" __global__ void carry_scan(Acc* __restrict__ agg, int64_t rows, int64_t NC) {
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += int64_t(gridDim.x) * blockDim.x) {
    Acc run = s_ident();
    for (int64_t c = 0; c < NC; ++c) {
      Acc t = agg[r * NC + c];
      agg[r * NC + c] = run;
      run = s_comb(run, t);
    }
  }
}

// Columns: one thread per (o, chunk, j), j fastest; element d of column (o, j) is at
// (o * D + d) * inner + j. The carry / aggregate of column row = o * inner + j, chunk c is
// at row * NC + c.
extern "C" __global__ void scan_cols(O* __restrict__ y, int64_t* __restrict__ yi, const T* __restrict__ x,
                                     int64_t outer, int64_t D, int64_t inner, int64_t NC, int64_t csize,
                                     const Acc* __restrict__ carry) {
  const int64_t units = outer * NC * inner;
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < units; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = u % inner, rest = u / inner, c = rest % NC, o = rest / NC;
    const int64_t row = o * inner + j;
    Acc run = carry ? carry[row * NC + c] : s_ident();
    const int64_t d1 = (c + 1) * csize < D ? (c + 1) * csize : D;
    for (int64_t d = c * csize; d < d1; ++d) {
      const int64_t pos = (o * D + d) * inner + j;
      run = s_comb(run, s_make(x[pos], d));
      s_store(y, yi, pos, run);
    }
  }
}

extern "C" __global__ void reduce_cols(Acc* __restrict__ agg, const T* __restrict__ x, int64_t outer, int64_t D,
                                       int64_t inner, int64_t NC, int64_t csize) {
  const int64_t units = outer * NC * inner;
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < units; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = u % inner, rest = u / inner, c = rest % NC, o = rest / NC;
    Acc run = s_ident();
    const int64_t d1 = (c + 1) * csize < D ? (c + 1) * csize : D;
    for (int64_t d = c * csize; d < d1; ++d) run = s_comb(run, s_make(x[(o * D + d) * inner + j], d));
    agg[(o * inner + j) * NC + c] = run;
  }
}
)CUDA";

// The values output's dtype: integer and bool sums / products give i64.
DType scan_out_dtype(OpKind op, DType dt) {
  if ((op == OpKind::cumsum || op == OpKind::cumprod) && !is_float(dt)) return DType::i64;
  return dt;
}

std::string key_of(OpKind op, DType dt) { return std::string(op_name(op)) + "/" + std::string(dtype_name(dt)); }

constexpr size_t kMaxAccBytes = 32;

template <OpKind K>
std::vector<PrimitivePtr> scan_kernel(CudaBackend& be, Op& op) {
  constexpr bool kExt = K == OpKind::cummax || K == OpKind::cummin;
  const TensorMeta meta = op.outputs[0];
  const Shape& s = meta.shape;
  const int dim = op.attr<DimAttrs>().dim;
  const DType dt = op.in(0).dtype;
  CudaTensorPtr out, idx, xc;
  if constexpr (kExt) {
    out = alloc(be, op.outputs[0]);
    idx = alloc(be, op.outputs[1]);
  }
  if (s.numel() == 0) {
    if constexpr (kExt) return {out, idx};
    else return {alloc(be, meta)};
  }
  if constexpr (!kExt) {
    if (as_cuda(op.inputs[0]).is_contiguous() && dt == meta.dtype) {
      out = output_reusing(be, op, 0, meta);  // in place is safe: every element is read before it is written
      xc = as_cuda_ptr(op.inputs[0]);
    } else {
      xc = contiguous(be, op.inputs[0]);
      out = alloc(be, meta);
    }
  } else {
    xc = contiguous(be, op.inputs[0]);
  }
  int64_t outer = 1, D = 1, inner = 1;
  if (s.rank() > 0) {
    for (int d = 0; d < dim; ++d) outer *= s[d];
    D = s[dim];
    for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  }
  const std::string key = key_of(K, dt);
  auto fn = [&](const char* entry) { return be.jit().get(key, entry, [&] { return scan_source(K, dt); }); };
  void* y = out->raw();
  void* yi = idx ? idx->raw() : nullptr;
  const void* x = xc->raw();
  const int64_t sms = be.sm_count();
  if (inner == 1 && D > 32) {
    const int64_t rows = outer;
    int threads = 32;  // enough threads for one tile to cover the row, up to 256
    while (threads < 256 && int64_t(threads) * kItems < D) threads *= 2;
    const int64_t tile = int64_t(threads) * kItems;
    int64_t NC = 1, csize = D;
    if (rows < 2 * sms && D > tile) {
      NC = std::min(ceil_div(D, tile), ceil_div(4 * sms, rows));
      csize = ceil_div(ceil_div(D, NC), tile) * tile;
      NC = ceil_div(D, csize);
    }
    const unsigned grid = unsigned(std::min<int64_t>(rows * NC, sms * 32));
    auto aligned = [](const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; };
    const size_t in_b = kItems * dtype_size(dt), out_b = kItems * dtype_size(meta.dtype);
    const int vec = D % kItems == 0 && aligned(x, std::min<size_t>(16, in_b)) && aligned(y, std::min<size_t>(16, out_b)) &&
                    (!yi || aligned(yi, 16));
    if (NC == 1) {
      be.launch(fn("scan_rows"), grid, threads, 0, y, yi, x, rows, D, NC, csize, static_cast<void*>(nullptr), vec);
    } else {
      Buffer agg(be.allocator(), size_t(rows * NC) * kMaxAccBytes);
      be.launch(fn("reduce_rows"), grid, threads, 0, agg.ptr, x, rows, D, NC, csize);
      be.launch(fn("carry_scan"), grid_for(be, rows, 128), 128, 0, agg.ptr, rows, NC);
      be.launch(fn("scan_rows"), grid, threads, 0, y, yi, x, rows, D, NC, csize, agg.ptr, vec);
    }
  } else {
    const int64_t cols = outer * inner;
    const int64_t target = sms * 2048;
    int64_t NC = 1, csize = D;
    if (cols < target / 4 && D > 64) {
      NC = std::min(ceil_div(D, 32), ceil_div(target, cols));
      csize = ceil_div(D, NC);
      NC = ceil_div(D, csize);
    }
    constexpr int kThreads = 256;
    const unsigned grid = grid_for(be, cols * NC, kThreads);
    if (NC == 1) {
      be.launch(fn("scan_cols"), grid, kThreads, 0, y, yi, x, outer, D, inner, NC, csize, static_cast<void*>(nullptr));
    } else {
      Buffer agg(be.allocator(), size_t(cols * NC) * kMaxAccBytes);
      be.launch(fn("reduce_cols"), grid, kThreads, 0, agg.ptr, x, outer, D, inner, NC, csize);
      be.launch(fn("carry_scan"), grid_for(be, cols, 128), 128, 0, agg.ptr, cols, NC);
      be.launch(fn("scan_cols"), grid, kThreads, 0, y, yi, x, outer, D, inner, NC, csize, agg.ptr);
    }
  }
  if constexpr (kExt) return {out, idx};
  else return {out};
}

}  // namespace

std::string scan_source(OpKind op, DType dt) {
  std::string s = reduce_family_helpers();
  s += "typedef " + std::string(device_type(dt)) + " T;\n";
  s += "typedef " + std::string(compute_type(dt)) + " C;\n";
  s += "#define ITEMS " + std::to_string(kItems) + "\n";
  s += scan_ops(op, dt);
  // whole words for ITEMS elements of the input and of the output
  const size_t in_bytes = kItems * dtype_size(dt), out_bytes = kItems * dtype_size(scan_out_dtype(op, dt));
  auto words = [&](const char* type, const char* count, size_t bytes) {
    const bool w16 = bytes >= 16;
    s += std::string("typedef ") + (w16 ? "uint4 " : "uint2 ") + type + ";\n";
    s += std::string("#define ") + count + " " + std::to_string(bytes / (w16 ? 16 : 8)) + "\n";
  };
  words("VIN", "NIN", in_bytes);
  words("VOUT", "NOUT", out_bytes);
  s += kScanKernels;
  return s;
}

std::vector<KernelSource> scan_variants() {
  std::vector<KernelSource> v;
  for (OpKind op : {OpKind::cumsum, OpKind::cumprod, OpKind::cummax, OpKind::cummin})
    for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::i16, DType::i8,
                     DType::u8, DType::boolean})
      v.push_back({key_of(op, dt), scan_source(op, dt)});
  return v;
}

void register_scan_kernels(KernelTable& t) {
  t[size_t(OpKind::cumsum)] = scan_kernel<OpKind::cumsum>;
  t[size_t(OpKind::cumprod)] = scan_kernel<OpKind::cumprod>;
  t[size_t(OpKind::cummax)] = scan_kernel<OpKind::cummax>;
  t[size_t(OpKind::cummin)] = scan_kernel<OpKind::cummin>;
}

}  // namespace ember::cuda
