// softmax / log_softmax along any dim, as the CPU backend (src/backends/cpu/softmax.cpp):
// shifted by the row max (a NaN anywhere in a slice makes the whole slice NaN), then
// y = exp(x - m) * (1 / sum) or y = (x - m) - log(sum). f16/bf16 compute in f32.
//   * last dim, rows up to 32768 elements: the row is held in registers (one read, one
//     write): a group of `tpr` threads per row (a power of two: part of a warp, a warp, or a
//     whole block), each thread holding up to 32 values loaded as 16-byte vectors when the
//     rows are aligned; blocks walk their groups of rows in a grid-stride loop; when a row
//     takes a whole 1024-thread block, the blocks are persistent and prefetch their next row
//     into shared memory while reducing the current one (H200, 2048 x 16384 f32 at 16
//     elements a thread: 114 -> 91 us);
//   * other dims, and longer rows: [outer, D, inner] with D cut into chunks: a pass of
//     online (max, sum) partials per (column, chunk), a pass merging them per column (in
//     order), and a pass writing y (two reads and one write of x in all); threads run along
//     inner (coalesced) and along D.
// cross_entropy (the fused softmax cross-entropy of [N, C] rows) and its backward: a group of
// threads per row (a warp, or a whole block for long rows) takes the row's max and sum of
// exp(x - max) in two passes over it, with the CPU backend's arithmetic; a bad target is
// recorded like a bad index of the index kernels (cuda_backend.hpp: begin_index_checks).
#include <algorithm>
#include <cstdlib>

#include "cuda_backend.hpp"
#include "reduce_sources.hpp"

namespace ember::cuda {

namespace {

// Register-resident row kernels: NV items of W elements per thread (W = 16 bytes of T for
// the vector kernels, 1 for the scalar ones), NV * W <= kMaxRegElems.

const char* kSoftmaxKernels = R"CUDA(
union VecT { uint4 u; T v[VW]; };

// The rest of one row once this thread holds its values v (items lane, lane + tpr, ...):
// the group's max, sum of exp(v - max), and y. Every thread of the block calls it (the group
// reductions), `valid` says whether this thread's group has a row.
template <int NV, int W>
__device__ __forceinline__ void softmax_row(C (&v)[NV * W], bool valid, int nitems, int lane, int tpr, T* yr,
                                            int log_out, C* red) {
  C m = -m_inf(C(0));
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int it = k * tpr + lane;
    if (valid && it < nitems) {
#pragma unroll
      for (int e = 0; e < W; ++e) m = m_nanmax(m, v[k * W + e]);
    }
  }
  m = group_max(m, tpr, red);
  C s = C(0);
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int it = k * tpr + lane;
    if (valid && it < nitems) {
#pragma unroll
      for (int e = 0; e < W; ++e) {
        C ex = m_exp(v[k * W + e] - m);
        if (!log_out) v[k * W + e] = ex;
        s += ex;
      }
    }
  }
  s = group_sum(s, tpr, red);
  const C inv = C(1) / s, ls = m_log(s);
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int it = k * tpr + lane;
    if (valid && it < nitems) {
      if (W > 1) {
        VecT t;
#pragma unroll
        for (int e = 0; e < W; ++e) t.v[e] = T(log_out ? (v[k * W + e] - m) - ls : v[k * W + e] * inv);
        ((uint4*)yr)[it] = t.u;
      } else {
        yr[it] = T(log_out ? (v[k * W] - m) - ls : v[k * W] * inv);
      }
    }
  }
}

// A grid-stride loop over groups of rows, each loaded, reduced and written in turn.
template <int NV, int W>
__device__ __forceinline__ void rows_regs(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t D,
                                          int log_out, int tpr) {
  __shared__ C red[32];
  const int lane = threadIdx.x & (tpr - 1);
  const int rpb = blockDim.x / tpr;
  const int64_t nitems = D / W;
  for (int64_t r0 = int64_t(blockIdx.x) * rpb; r0 < rows; r0 += int64_t(gridDim.x) * rpb) {
    const int64_t r = r0 + threadIdx.x / tpr;
    const bool valid = r < rows;
    const T* xr = x + r * D;
    C v[NV * W];
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t it = int64_t(k) * tpr + lane;
      if (valid && it < nitems) {
        if (W > 1) {
          VecT t;
          t.u = ((const uint4*)xr)[it];
#pragma unroll
          for (int e = 0; e < W; ++e) v[k * W + e] = C(t.v[e]);
        } else {
          v[k * W] = C(xr[it]);
        }
      }
    }
    softmax_row<NV, W>(v, valid, int(nitems), lane, tpr, y + r * D, log_out, red);
  }
}

// (__launch_bounds__: at most 64 registers, so that 1024-thread blocks can launch)
#define ROWS_KERNEL(NAME, NV, W)                                                                       \
  extern "C" __global__ void __launch_bounds__(1024) NAME(const T* __restrict__ x, T* __restrict__ y,  \
                                                          int64_t rows, int64_t D, int log_out, int tpr) { \
    rows_regs<NV, W>(x, y, rows, D, log_out, tpr);                                                     \
  }
ROWS_KERNEL(rows_s1, 1, 1)
ROWS_KERNEL(rows_s2, 2, 1)
ROWS_KERNEL(rows_s4, 4, 1)
ROWS_KERNEL(rows_s8, 8, 1)
ROWS_KERNEL(rows_s16, 16, 1)
ROWS_KERNEL(rows_s32, 32, 1)
ROWS_KERNEL(rows_v1, 1, VW)
ROWS_KERNEL(rows_v2, 2, VW)
#if VW <= 8
ROWS_KERNEL(rows_v4, 4, VW)
#endif
#if VW <= 4
ROWS_KERNEL(rows_v8, 8, VW)
#endif
#if VW <= 2
ROWS_KERNEL(rows_v16, 16, VW)
#endif

// The vector kernels as persistent blocks (one per resident slot) that prefetch their next
// row while working on the current one: each thread copies its own 16-byte items of the next
// row into its own shared-memory slots (cp.async, so no registers are held for it), then reads
// them back at the top of the next step. A thread only ever reads the slots it filled, so
// waiting for its own copies is the only synchronisation.
template <int NV>
__device__ __forceinline__ void rows_pipe(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t D,
                                          int log_out, int tpr) {
  extern __shared__ uint4 stage[];  // item k of thread t at stage[k * blockDim.x + t]
  __shared__ C red[32];
  const int lane = threadIdx.x & (tpr - 1);
  const int rpb = blockDim.x / tpr;
  const int nitems = int(D / VW);
  const int64_t step = int64_t(gridDim.x) * rpb;
  const uint32_t slot0 = smem_addr(&stage[threadIdx.x]), slot_step = blockDim.x * 16u;
  auto prefetch = [&](int64_t r0) {
    const int64_t r = r0 + threadIdx.x / tpr;
    const uint4* xr = (const uint4*)(x + r * D);
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int it = k * tpr + lane;
      if (r < rows && it < nitems) cp_async16(slot0 + uint32_t(k) * slot_step, xr + it, true);
    }
    cp_async_commit();
  };
  int64_t r0 = int64_t(blockIdx.x) * rpb;
  if (r0 < rows) prefetch(r0);
  for (; r0 < rows; r0 += step) {
    cp_async_wait<0>();
    const int64_t r = r0 + threadIdx.x / tpr;
    const bool valid = r < rows;
    C v[NV * VW];
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int it = k * tpr + lane;
      if (valid && it < nitems) {
        VecT t;
        t.u = stage[k * blockDim.x + threadIdx.x];
#pragma unroll
        for (int e = 0; e < VW; ++e) v[k * VW + e] = C(t.v[e]);
      }
    }
    if (r0 + step < rows) prefetch(r0 + step);
    softmax_row<NV, VW>(v, valid, nitems, lane, tpr, y + r * D, log_out, red);
  }
}
#define PIPE_KERNEL(NAME, NV)                                                                          \
  extern "C" __global__ void __launch_bounds__(1024) NAME(const T* __restrict__ x, T* __restrict__ y,  \
                                                          int64_t rows, int64_t D, int log_out, int tpr) { \
    rows_pipe<NV>(x, y, rows, D, log_out, tpr);                                                        \
  }
// (taken for rows of whole 1024-thread blocks in f32, f16 and bf16)
#if VW >= 4
PIPE_KERNEL(pipe_v4, 4)
#endif
#if VW == 4
PIPE_KERNEL(pipe_v8, 8)
#endif

// Everything else ([outer, D, inner] with inner > 1, or rows too long for registers) in three
// passes, with D cut into S chunks: block (TX, TY) = (threads along inner, threads along D).
//   part_stats: the online (max, sum of exp(x - max)) of every (column, chunk);
//   col_stats:  merges the S partials of every column in order;
//   apply:      y from x and its column's (max, sum).
// A NaN gives NaN for the whole slice, and so does +inf (as on the CPU, where
// exp(inf - inf) = NaN enters the sum); an all -inf slice gives NaN (exp(-inf + inf)).
__device__ __forceinline__ void ol_add(C& m, C& s, C x) {
  if (x != x) { m = x; return; }
  if (m != m) return;
  if (x > m) {
    s = (m == -m_inf(C(0)) ? C(0) : s * m_exp(m - x)) + C(1);
    m = x;
  } else if (x > -m_inf(C(0))) {
    s += m_exp(x - m);
  }
}
__device__ __forceinline__ void ol_merge(C& m, C& s, C bm, C bs) {
  if (m != m) return;
  if (bm != bm) { m = bm; return; }
  if (bm == -m_inf(C(0))) return;
  if (m == -m_inf(C(0))) { m = bm; s = bs; return; }
  if (m >= bm) s = s + bs * m_exp(bm - m);
  else { s = s * m_exp(m - bm) + bs; m = bm; }
}

extern "C" __global__ void part_stats(C* __restrict__ pm, C* __restrict__ ps, const T* __restrict__ x, int64_t outer,
                                      int64_t D, int64_t inner, int64_t S, int64_t csize) {
  __shared__ C rm[1024], rs[1024];
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int64_t j = int64_t(blockIdx.x) * TX + tx, c = blockIdx.y;
  const int64_t d0 = c * csize, d1 = d0 + csize < D ? d0 + csize : D;
  for (int64_t o = blockIdx.z; o < outer; o += gridDim.z) {
    C m = -m_inf(C(0)), s = C(0);
    if (j < inner)
      for (int64_t d = d0 + ty; d < d1; d += TY) ol_add(m, s, C(x[(o * D + d) * inner + j]));
    rm[ty * TX + tx] = m;
    rs[ty * TX + tx] = s;
    __syncthreads();
    if (ty == 0 && j < inner) {
      for (int t = 1; t < TY; ++t) ol_merge(m, s, rm[t * TX + tx], rs[t * TX + tx]);
      pm[(o * S + c) * inner + j] = m;
      ps[(o * S + c) * inner + j] = s;
    }
    __syncthreads();
  }
}

extern "C" __global__ void col_stats(C* __restrict__ sm, C* __restrict__ ss, const C* __restrict__ pm,
                                     const C* __restrict__ ps, int64_t outer, int64_t inner, int64_t S) {
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < outer * inner; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = u / inner, j = u - o * inner;
    C m = -m_inf(C(0)), s = C(0);
    for (int64_t c = 0; c < S; ++c) ol_merge(m, s, pm[(o * S + c) * inner + j], ps[(o * S + c) * inner + j]);
    if (m == m_inf(C(0))) s = m_nan(C(0));
    sm[u] = m;
    ss[u] = s;
  }
}

extern "C" __global__ void apply(T* __restrict__ y, const T* __restrict__ x, const C* __restrict__ sm,
                                 const C* __restrict__ ss, int64_t outer, int64_t D, int64_t inner, int64_t csize,
                                 int log_out) {
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int64_t j = int64_t(blockIdx.x) * TX + tx, c = blockIdx.y;
  if (j >= inner) return;
  const int64_t d0 = c * csize, d1 = d0 + csize < D ? d0 + csize : D;
  for (int64_t o = blockIdx.z; o < outer; o += gridDim.z) {
    const C m = sm[o * inner + j], s = ss[o * inner + j];
    const C inv = C(1) / s, ls = m_log(s);
    for (int64_t d = d0 + ty; d < d1; d += TY) {
      const int64_t i = (o * D + d) * inner + j;
      const C v = C(x[i]);
      y[i] = T(log_out ? (v - m) - ls : m_exp(v - m) * inv);
    }
  }
}
)CUDA";

const char* kCrossEntropyKernels = R"CUDA(
// tpr threads per row: 32 (blockDim / 32 rows per block) or blockDim (a row per block).
// target and g (the loss's grad) are read through their strides ts and gs. The per-row loss, lse,
// valid and g are in the compute type C; the logits are read in their own type T (no f32 copy).
extern "C" __global__ void __launch_bounds__(256) ce_forward(C* __restrict__ loss, C* __restrict__ lse,
    C* __restrict__ valid, const T* __restrict__ x, const int64_t* __restrict__ target, int64_t ts, int64_t rows,
    int64_t D, int64_t ignore, int tpr, ErrArg err) {
  __shared__ C red[32];
  const int lane = threadIdx.x & (tpr - 1);
  const int64_t r = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const bool has_row = r < rows;
  const T* xr = x + r * D;
  C m = -m_inf(C(0));
  if (has_row) {
#pragma unroll 4
    for (int64_t l = lane; l < D; l += tpr) m = m_nanmax(m, C(xr[l]));
  }
  m = group_max(m, tpr, red);
  C s = C(0);
  if (has_row) {
#pragma unroll 4
    for (int64_t l = lane; l < D; l += tpr) s += m_exp(C(xr[l]) - m);
  }
  s = group_sum(s, tpr, red);
  if (!has_row || lane != 0) return;
  const C ls = m_log(s);
  lse[r] = m + ls;
  const int64_t t = target[r * ts];
  C l = C(0);
  if (t != ignore) {
    if (index_ok(t, D)) {
      l = ls - (C(xr[t]) - m);
    } else {
      index_fail(err, t, D);
      l = m_nan(C(0));
    }
  }
  loss[r] = l;
  valid[r] = t != ignore ? C(1) : C(0);
}

// dx = (exp(x - lse) - onehot(target)) * g, 0 in ignored rows
extern "C" __global__ void __launch_bounds__(256) ce_backward(T* __restrict__ dx, const T* __restrict__ x,
    const int64_t* __restrict__ target, int64_t ts, const C* __restrict__ lse, const C* __restrict__ g, int64_t gs,
    int64_t rows, int64_t D, int64_t ignore, int tpr) {
  const int lane = threadIdx.x & (tpr - 1);
  const int64_t r = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  if (r >= rows) return;
  const int64_t t = target[r * ts];
  const T* xr = x + r * D;
  T* dr = dx + r * D;
  if (t == ignore) {
    for (int64_t l = lane; l < D; l += tpr) dr[l] = T(0.0f);
    return;
  }
  const C gr = C(g[r * gs]), ls = lse[r];
#pragma unroll 4
  for (int64_t l = lane; l < D; l += tpr) dr[l] = T(gr * (m_exp(C(xr[l]) - ls) - (l == t ? C(1) : C(0))));
}
)CUDA";

std::string key_of(DType dt) { return "softmax/" + std::string(dtype_name(dt)); }
std::string ce_key_of(DType dt) { return "cross_entropy/" + std::string(dtype_name(dt)); }

constexpr int kCeThreads = 256;

std::vector<PrimitivePtr> cross_entropy_common(CudaBackend& be, Op& op, bool backward) {
  const int64_t ignore = op.attr<DimAttrs>().k;
  auto x = contiguous(be, op.inputs[0]);
  const CudaTensor& t = as_cuda(op.inputs[1]);  // 1-d: read through its stride
  const int64_t rows = x->shape()[0], D = x->shape()[1];
  std::vector<CudaTensorPtr> out;
  for (const TensorMeta& m : op.outputs) out.push_back(alloc(be, m));
  if (rows > 0) {
    const DType dt = x->dtype();
    auto fn = [&](const char* entry) {
      return be.jit().get(ce_key_of(dt), entry, [&] { return cross_entropy_source(dt); });
    };
    // a warp per row, or a block for long rows
    const int tpr = D > 4096 ? kCeThreads : 32;
    const unsigned grid = unsigned(ceil_div(rows, kCeThreads / tpr));
    const void* xp = x->raw();
    const void* tp = t.raw();
    const int64_t ts = t.strides[0];
    if (!backward) {
      const IndexErrArg err = begin_index_checks(be, op, 1);
      be.launch(fn("ce_forward"), grid, kCeThreads, 0, out[0]->raw(), out[1]->raw(), out[2]->raw(), xp, tp, ts, rows,
                D, ignore, tpr, err);
      end_index_checks(be);
    } else {
      auto lse = contiguous(be, op.inputs[2]);
      const CudaTensor& g = as_cuda(op.inputs[3]);
      const void* gp = g.raw();
      be.launch(fn("ce_backward"), grid, kCeThreads, 0, out[0]->raw(), xp, tp, ts, static_cast<const void*>(lse->raw()),
                gp, g.strides[0], rows, D, ignore, tpr);
    }
  }
  return {out.begin(), out.end()};
}

std::vector<PrimitivePtr> cross_entropy_kernel(CudaBackend& be, Op& op) { return cross_entropy_common(be, op, false); }
std::vector<PrimitivePtr> cross_entropy_backward_kernel(CudaBackend& be, Op& op) {
  return cross_entropy_common(be, op, true);
}

std::vector<PrimitivePtr> softmax_common(CudaBackend& be, Op& op, bool log) {
  const TensorMeta meta = op.outputs[0];
  const DType dt = meta.dtype;
  EMBER_CHECK(is_float(dt), op.name(), ": needs a floating input, got ", dt);
  const Shape& s = meta.shape;
  const int64_t n = s.numel();
  if (n == 0) return {alloc(be, meta)};
  const int dim = op.attr<DimAttrs>().dim;
  int64_t outer = 1, D = 1, inner = 1;
  if (s.rank() > 0) {
    for (int d = 0; d < dim; ++d) outer *= s[d];
    D = s[dim];
    for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  }
  CudaTensorPtr out, xc;
  if (as_cuda(op.inputs[0]).is_contiguous()) {
    out = output_reusing(be, op, 0, meta);  // before taking another reference to the input
    xc = as_cuda_ptr(op.inputs[0]);
  } else {
    xc = contiguous(be, op.inputs[0]);
    out = alloc(be, meta);
  }
  const std::string key = key_of(dt);
  auto fn = [&](const char* entry) { return be.jit().get(key, entry, [&] { return softmax_source(dt); }); };
  const void* x = xc->raw();
  void* y = out->raw();
  const int lg = log ? 1 : 0;
  if (inner == 1) {
    const int64_t rows = outer;
    const int vw = int(16 / dtype_size(dt));
    const bool vec = D % vw == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    const int W = vec ? vw : 1;
    const int64_t items = D / W;
    const int64_t max_nv = kMaxRegElems / W;
    const auto [tpr, nv] = row_layout(items, W, vec);
    if (nv <= max_nv) {
      // blocks of 256 threads for groups of a warp or less; a group of more is the whole
      // block (the contract of the group reductions)
      const int threads = int(tpr > 32 ? tpr : 256);
      const int64_t rpb = threads / tpr;
      static const bool pipe_on = [] {
        const char* e = std::getenv("EMBER_CUDA_SOFTMAX_PIPE");
        return !e || *e != '0';
      }();
      if (vec && W >= 4 && pipe_on && tpr == 1024) {
        const std::string entry = "pipe_v" + std::to_string(nv);
        CUfunction f = fn(entry.c_str());
        const size_t smem = size_t(threads) * size_t(nv) * 16;
        const int64_t resident = be.resident_blocks(f, threads, smem);
        if (resident > 0) {
          const int64_t blocks = std::min<int64_t>((rows + rpb - 1) / rpb, resident);
          be.launch(f, unsigned(blocks), threads, unsigned(smem), x, y, rows, D, lg, int(tpr));
          return {out};
        }
      }
      const std::string entry = std::string(vec ? "rows_v" : "rows_s") + std::to_string(nv);
      be.launch(fn(entry.c_str()), grid_for(be, rows, int(rpb)), threads, 0, x, y, rows, D, lg, int(tpr));
      return {out};
    }
  }
  // chunked three-pass path
  int TX = 1;
  while (TX < 32 && TX < inner) TX *= 2;
  int TY = 256 / TX;
  while (TY > 1 && TY / 2 >= D) TY /= 2;
  const int64_t gx = (inner + TX - 1) / TX;
  EMBER_CHECK(gx <= INT32_MAX, op.name(), ": inner size ", inner, " is too large");
  const int64_t base_blocks = gx * outer;
  const int64_t sms = be.sm_count();
  int64_t S = std::clamp<int64_t>((sms * 8 + base_blocks - 1) / base_blocks, 1, std::max<int64_t>(1, D / (int64_t(TY) * 8)));
  S = std::min<int64_t>(S, 65535);
  const int64_t csize = (D + S - 1) / S;
  S = (D + csize - 1) / csize;
  const size_t cb = dt == DType::f64 ? 8 : 4;
  const int64_t cols = outer * inner;
  Buffer part(be.allocator(), size_t(2 * cols * S) * cb), stats(be.allocator(), size_t(2 * cols) * cb);
  char* pm = static_cast<char*>(part.ptr);
  char* ps = pm + size_t(cols * S) * cb;
  char* sm = static_cast<char*>(stats.ptr);
  char* ss = sm + size_t(cols) * cb;
  dim3 grid(unsigned(gx), unsigned(S), unsigned(std::min<int64_t>(outer, 65535)));
  dim3 block(TX, TY);
  be.launch(fn("part_stats"), grid, block, 0, static_cast<void*>(pm), static_cast<void*>(ps), x, outer, D, inner, S,
            csize);
  be.launch(fn("col_stats"), grid_for(be, cols, 256), 256, 0, static_cast<void*>(sm), static_cast<void*>(ss),
            static_cast<void*>(pm), static_cast<void*>(ps), outer, inner, S);
  be.launch(fn("apply"), grid, block, 0, y, x, static_cast<void*>(sm), static_cast<void*>(ss), outer, D, inner, csize,
            lg);
  return {out};
}

std::vector<PrimitivePtr> softmax_kernel(CudaBackend& be, Op& op) { return softmax_common(be, op, false); }
std::vector<PrimitivePtr> log_softmax_kernel(CudaBackend& be, Op& op) { return softmax_common(be, op, true); }

}  // namespace

std::string softmax_source(DType dt) {
  std::string s = reduce_family_helpers();
  s += "typedef " + std::string(device_type(dt)) + " T;\n";
  s += "typedef " + std::string(compute_type(dt)) + " C;\n";
  s += "#define VW " + std::to_string(16 / dtype_size(dt)) + "  // elements of T in 16 bytes\n";
  s += async_copy_helpers();
  s += kSoftmaxKernels;
  return s;
}

std::string cross_entropy_source(DType dt) {
  std::string s = reduce_family_helpers();
  s += "typedef " + std::string(device_type(dt)) + " T;\n";
  s += "typedef " + std::string(compute_type(dt)) + " C;\n";
  s += index_error_code();
  s += kCrossEntropyKernels;
  return s;
}

std::vector<KernelSource> softmax_variants() {
  std::vector<KernelSource> v;
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    v.push_back({key_of(dt), softmax_source(dt)});
    v.push_back({ce_key_of(dt), cross_entropy_source(dt)});
  }
  return v;
}

void register_softmax_kernels(KernelTable& t) {
  t[size_t(OpKind::softmax)] = softmax_kernel;
  t[size_t(OpKind::log_softmax)] = log_softmax_kernel;
  t[size_t(OpKind::cross_entropy)] = cross_entropy_kernel;
  t[size_t(OpKind::cross_entropy_backward)] = cross_entropy_backward_kernel;
}

}  // namespace ember::cuda
