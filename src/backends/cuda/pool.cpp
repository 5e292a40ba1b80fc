// Pooling kernels: avg_pool, max_pool, adaptive_avg_pool, with the semantics of the CPU backend
// (src/backends/cpu/pool.cpp). As there, the input is viewed as [planes, *spatial] and 1-d / 2-d
// problems are lifted to 3-d by prepending spatial dims of size 1 (kernel 1, stride 1, no
// padding), so one kernel serves every rank. avg_pool and max_pool are compiled for their window
// (PoolWindow: kernel, stride, padding, dilation as constants), so that the taps unroll and
// the window arithmetic divides by constants. A thread computes two consecutive outputs of the
// last spatial dim (adaptive_avg_pool: one), consecutive threads the next ones (coalesced), each
// output's window per dim with the CPU's rules:
//   start = o * stride - pad; the first tap is the first one at a position >= 0 (the ceil_mode
//   rule: a window may start in the padding), taps run while < size; the avg_pool divisor is the
//   number of taps inside the padded input [-pad, size + pad) (count_include_pad) or inside the
//   input; max_pool returns the flat index (over the spatial dims of the plane) of the first
//   maximum, NaN wins (and a later NaN replaces an earlier one), the initial index is the
//   window's first in-bounds tap. max_pool without indices (PoolKernel::max_values) keeps only the
//   running maximum.
// adaptive_avg_pool: windows [floor(o * in / out), ceil((o + 1) * in / out)); the sum is divided
// by each window extent in turn (PyTorch), or once by the window volume where the CPU backend
// does (uniform windows: in % out == 0 in every dim, including the global average). Large
// windows take a warp or a whole block per output.
#include "cuda_backend.hpp"
#include "index_sources.hpp"

namespace ember::cuda {

namespace {

// avg_pool / max_pool outputs a thread computes (consecutive along the last dim).
constexpr int kPoolG = 2;

// The kernels' PoolArgs (all 64-bit: the same layout on both sides).
struct PoolArgs {
  int64_t planes = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t flag = 0;  // avg_pool: count_include_pad; adaptive_avg_pool: divide once by the volume
};

const char* kPoolCommon = R"CUDA(
struct PoolArgs {
  int64_t planes;
  int64_t in[3], out[3];
  int64_t flag;
};
)CUDA";

// "a<sep>b<sep>c" (appended piecewise: g++ 12 warns falsely on "literal" + std::string)
std::string joined(const int64_t (&v)[3], const char* sep) {
  std::string s = std::to_string(v[0]);
  for (int i = 1; i < 3; ++i) {
    s += sep;
    s += std::to_string(v[i]);
  }
  return s;
}

}  // namespace

std::string PoolWindow::key() const {
  std::string s;
  for (auto [name, v] : {std::pair{"k", &k}, {"/s", &this->s}, {"/p", &p}, {"/d", &d}}) {
    s += name;
    s += joined(*v, "x");
  }
  return s;
}

const char* spatial_kernel_helpers() {
  return R"CUDA(
// Index arithmetic runs in I: int when every index of the input and the output is < 2^31
// (the "32" kernels), else int64_t.
#define GRID_LOOP(I, i, n) for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += I(gridDim.x) * I(blockDim.x))

// Output index i -> plane and the three spatial coordinates.
template <class I>
__device__ __forceinline__ void decode(I i, const I* out, I& pl, I* o) {
  I r = i / out[2];
  o[2] = i - r * out[2];
  I q = r / out[1];
  o[1] = r - q * out[1];
  r = q / out[0];
  o[0] = q - r * out[0];
  pl = r;
}
)CUDA";
}

std::string pool_source(DType dt, PoolKernel kind, const PoolWindow& w) {
  std::string s = std::string(kPoolCommon) + spatial_kernel_helpers();
  const bool is_float = dt == DType::f64 || dt == DType::f32 || dt == DType::f16 || dt == DType::bf16;
  s += "typedef " + std::string(device_type(dt)) + " T;\ntypedef " + compute_type(dt) + " A;\n";
  const bool is_max = kind == PoolKernel::max || kind == PoolKernel::max_values;
  if (kind == PoolKernel::avg || is_max) {
    for (auto [name, v] : {std::pair{"K", &w.k}, {"S", &w.s}, {"P", &w.p}, {"D", &w.d}}) {
      s += "#define WIN_";
      s += name;
      s += " {" + joined(*v, ", ") + "}\n";
    }
    // taps unrolled in full up to 64 a window (their loads then issue together)
    s += std::string("#define UNROLL_TAPS _Pragma(\"") + (w.k[0] * w.k[1] * w.k[2] <= 64 ? "unroll" : "unroll 1") +
         "\")\n";
    s += "#define POOL_G " + std::to_string(kPoolG) + "\n";
    s += R"CUDA(
// The window of output o along one dim: first tap position lo, taps inside the input n, taps
// inside the padded input cnt.
template <class I>
__device__ __forceinline__ void window(I o, I in, I k, I s, I p, I d, I& lo, I& n, I& cnt) {
  const I start = o * s - p;
  const I t0 = start < 0 ? (-start + d - 1) / d : 0;
  lo = start + t0 * d;
  n = 0;
  cnt = 0;
  if (in - 1 - start >= 0) {
    I t1 = (in - 1 - start) / d;
    if (t1 > k - 1) t1 = k - 1;
    n = t1 - t0 + 1 > 0 ? t1 - t0 + 1 : 0;
  }
  if (in + p - 1 - start >= 0) {
    const I c = (in + p - 1 - start) / d;
    cnt = (c < k - 1 ? c : k - 1) + 1;
  }
}
// Loads the geometry in I (the window's as constants) and computes the windows of output i.
#define POOL_SETUP                                                                   \
  I in[3], out[3];                                                                   \
  const I k[3] = WIN_K, st[3] = WIN_S, pd[3] = WIN_P, dl[3] = WIN_D;                  \
  for (int j = 0; j < 3; ++j) {                                                      \
    in[j] = I(a.in[j]);                                                              \
    out[j] = I(a.out[j]);                                                            \
  }                                                                                  \
  const I in_plane = in[0] * in[1] * in[2];
// A thread takes POOL_G consecutive outputs along the last dim: they share the decoding of
// their index and the windows of the two leading dims. Opens the loop over those groups and, in
// it, the loop over the group's outputs, each with its index i and windows lo, nt, cnt; the
// body ends with POOL_GROUP_END.
#define POOL_GROUP_LOOP                                                              \
  const I out2g = (out[2] + POOL_G - 1) / POOL_G;                                    \
  const I groups = n / out[2] * out2g;                                               \
  GRID_LOOP(I, gi, groups) {                                                         \
    const I r = gi / out2g, o2_first = (gi - r * out2g) * POOL_G;                    \
    const I q = r / out[1], o1 = r - q * out[1];                                     \
    const I pl = q / out[0], o0 = q - pl * out[0];                                   \
    I lo[3], nt[3], cnt[3];                                                          \
    window(o0, in[0], k[0], st[0], pd[0], dl[0], lo[0], nt[0], cnt[0]);              \
    window(o1, in[1], k[1], st[1], pd[1], dl[1], lo[1], nt[1], cnt[1]);              \
    const T* xp = x + pl * in_plane;                                                 \
    _Pragma("unroll") for (int g = 0; g < POOL_G; ++g) {                             \
      const I o2 = o2_first + I(g);                                                  \
      if (o2 >= out[2]) break;                                                       \
      window(o2, in[2], k[2], st[2], pd[2], dl[2], lo[2], nt[2], cnt[2]);            \
      const I i = r * out[2] + o2;
#define POOL_GROUP_END                                                               \
    }                                                                                \
  }
)CUDA";
  }
  if (kind == PoolKernel::avg) {
    s += R"CUDA(
template <class I>
__device__ __forceinline__ void pool_body(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ yi,
                                          PoolArgs a, I n) {
  POOL_SETUP
  POOL_GROUP_LOOP
    A sum = 0;
    // taps t < nt of the k (constant) of each dim
    UNROLL_TAPS for (I t0 = 0; t0 < k[0]; ++t0) {
      if (t0 >= nt[0]) break;
      UNROLL_TAPS for (I t1 = 0; t1 < k[1]; ++t1) {
        if (t1 >= nt[1]) break;
        const T* row = xp + ((lo[0] + t0 * dl[0]) * in[1] + (lo[1] + t1 * dl[1])) * in[2] + lo[2];
        UNROLL_TAPS for (I t2 = 0; t2 < k[2]; ++t2) {
          if (t2 >= nt[2]) break;
          sum += A(row[t2 * dl[2]]);
        }
      }
    }
    const I div = a.flag ? cnt[0] * cnt[1] * cnt[2] : nt[0] * nt[1] * nt[2];
    y[i] = T(sum / A(div));
  POOL_GROUP_END
  (void)yi;
}
)CUDA";
  } else if (is_max) {
    std::string lowest;
    switch (dt) {
      case DType::f64: lowest = "-ember_inf_d()"; break;
      case DType::f32:
      case DType::f16:
      case DType::bf16: lowest = "-ember_inf()"; break;
      case DType::i64: lowest = "T(-9223372036854775807LL - 1)"; break;
      case DType::i32: lowest = "T(-2147483647 - 1)"; break;
      case DType::i16: lowest = "T(-32768)"; break;
      case DType::i8: lowest = "T(-128)"; break;
      default: lowest = "T(0)"; break;  // u8
    }
    s += "#define LOWEST (" + lowest + ")\n";
    s += std::string("#define TAKE(v, best) ") + (is_float ? "((v) > (best) || (v) != (v))" : "((v) > (best))") + "\n";
    // INDICES: also the argmax (yi); without it yi is null and unused.
    s += std::string("#define INDICES ") + (kind == PoolKernel::max ? "1" : "0") + "\n";
    s += R"CUDA(
template <class I>
__device__ __forceinline__ void pool_body(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ yi,
                                          PoolArgs a, I n) {
  POOL_SETUP
  POOL_GROUP_LOOP
    A best = LOWEST;
#if INDICES
    I bi = (lo[0] * in[1] + lo[1]) * in[2] + lo[2];
#endif
    UNROLL_TAPS for (I t0 = 0; t0 < k[0]; ++t0) {
      if (t0 >= nt[0]) break;
      UNROLL_TAPS for (I t1 = 0; t1 < k[1]; ++t1) {
        if (t1 >= nt[1]) break;
        const I rb = ((lo[0] + t0 * dl[0]) * in[1] + (lo[1] + t1 * dl[1])) * in[2] + lo[2];
        UNROLL_TAPS for (I t2 = 0; t2 < k[2]; ++t2) {
          if (t2 >= nt[2]) break;
          const I pos = rb + t2 * dl[2];
          const A v = A(xp[pos]);
#if INDICES
          if (TAKE(v, best)) {
            best = v;
            bi = pos;
          }
#else
          best = TAKE(v, best) ? v : best;
#endif
        }
      }
    }
    y[i] = T(best);
#if INDICES
    yi[i] = int64_t(bi);
#else
    (void)yi;
#endif
  POOL_GROUP_END
}
)CUDA";
  } else {  // adaptive_avg
    s += R"CUDA(
// Window [lo, hi) of output o along one dim (o * in in 64 bits: it may pass 2^31).
template <class I>
__device__ __forceinline__ void adaptive_window(I o, I in, I out, I& lo, I& hi) {
  lo = I((int64_t(o) * in) / out);
  hi = I(((int64_t(o) + 1) * in + out - 1) / out);
}
template <class I>
__device__ __forceinline__ T adaptive_result(A sum, const I* ext, int64_t once) {
  if (once) return T(sum / A(ext[0] * ext[1] * ext[2]));
  return T(sum / A(ext[0]) / A(ext[1]) / A(ext[2]));
}
#define ADAPTIVE_SETUP                                                               \
  I in[3], out[3];                                                                   \
  for (int j = 0; j < 3; ++j) {                                                      \
    in[j] = I(a.in[j]);                                                              \
    out[j] = I(a.out[j]);                                                            \
  }                                                                                  \
  const I in_plane = in[0] * in[1] * in[2];
#define ADAPTIVE_WINDOWS                                                             \
  I pl, o[3], lo[3], hi[3], ext[3];                                                  \
  decode(i, out, pl, o);                                                             \
  for (int j = 0; j < 3; ++j) {                                                      \
    adaptive_window(o[j], in[j], out[j], lo[j], hi[j]);                              \
    ext[j] = hi[j] - lo[j];                                                          \
  }

template <class I>
__device__ __forceinline__ void pool_body(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ yi,
                                          PoolArgs a, I n) {
  ADAPTIVE_SETUP
  GRID_LOOP(I, i, n) {
    ADAPTIVE_WINDOWS
    const T* xp = x + pl * in_plane;
    A sum = 0;
    for (I i0 = lo[0]; i0 < hi[0]; ++i0)
      for (I i1 = lo[1]; i1 < hi[1]; ++i1) {
        const T* row = xp + (i0 * in[1] + i1) * in[2];
        for (I i2 = lo[2]; i2 < hi[2]; ++i2) sum += A(row[i2]);
      }
    y[i] = adaptive_result(sum, ext, a.flag);
  }
  (void)yi;
}

// G threads per output (G = 32: a warp, G = 256: the block), each summing every G-th tap of
// the flattened window (4 partial sums in flight), then a shuffle (and shared memory)
// reduction. A window of whole rows (a global average) is one contiguous run.
template <int G, class I>
__device__ __forceinline__ void group_body(const T* __restrict__ x, T* __restrict__ y, PoolArgs a, I n) {
  __shared__ A part[8];
  ADAPTIVE_SETUP
  const I lane = I(threadIdx.x % G);
  const I per_block = I(blockDim.x / G);
  for (I i = I(blockIdx.x) * per_block + I(threadIdx.x / G); i < n; i += I(gridDim.x) * per_block) {
    ADAPTIVE_WINDOWS
    const T* xp = x + pl * in_plane + (lo[0] * in[1] + lo[1]) * in[2] + lo[2];
    const I vol = ext[0] * ext[1] * ext[2];
    A s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    if (ext[2] == in[2] && (ext[1] == in[1] || ext[0] == 1)) {  // contiguous
      I t = lane;
      for (; t + 3 * G < vol; t += 4 * G) {
        s0 += A(xp[t]);
        s1 += A(xp[t + G]);
        s2 += A(xp[t + 2 * G]);
        s3 += A(xp[t + 3 * G]);
      }
      for (; t < vol; t += G) s0 += A(xp[t]);
    } else {
      for (I t = lane; t < vol; t += G) {
        const I r = t / ext[2], t2 = t - r * ext[2], t0 = r / ext[1], t1 = r - t0 * ext[1];
        s0 += A(xp[(t0 * in[1] + t1) * in[2] + t2]);
      }
    }
    A sum = (s0 + s1) + (s2 + s3);
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (G > 32) {
      if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = sum;
      __syncthreads();
      if (threadIdx.x == 0) {
        A total = 0;
        for (int w = 0; w < G / 32; ++w) total += part[w];
        y[i] = adaptive_result(total, ext, a.flag);
      }
      __syncthreads();
    } else if (lane == 0) {
      y[i] = adaptive_result(sum, ext, a.flag);
    }
  }
}
extern "C" __global__ void warp32(const T* x, T* y, PoolArgs a, int n) { group_body<32, int>(x, y, a, n); }
extern "C" __global__ void warp64(const T* x, T* y, PoolArgs a, int64_t n) { group_body<32, int64_t>(x, y, a, n); }
extern "C" __global__ void block32(const T* x, T* y, PoolArgs a, int n) { group_body<256, int>(x, y, a, n); }
extern "C" __global__ void block64(const T* x, T* y, PoolArgs a, int64_t n) { group_body<256, int64_t>(x, y, a, n); }
)CUDA";
  }
  s += R"CUDA(
extern "C" __global__ void pool32(const T* x, T* y, int64_t* yi, PoolArgs a, int n) { pool_body<int>(x, y, yi, a, n); }
extern "C" __global__ void pool64(const T* x, T* y, int64_t* yi, PoolArgs a, int64_t n) { pool_body<int64_t>(x, y, yi, a, n); }
)CUDA";
  return s;
}

namespace {

constexpr int kThreads = 256;

// Planes and 3-d spatial sizes of a [*lead, *spatial(nd)] input / output (geom3 on the CPU).
PoolArgs geometry(const Op& op, int nd) {
  const Shape& in = op.in(0).shape;
  const Shape& out = op.outputs[0].shape;
  EMBER_CHECK(nd >= 1 && nd <= 3, op.name(), ": supports 1 to 3 spatial dims, got ", nd);
  PoolArgs a;
  const int lead = in.rank() - nd;
  for (int d = 0; d < lead; ++d) a.planes *= in[d];
  for (int i = 0; i < nd; ++i) {
    a.in[3 - nd + i] = in[lead + i];
    a.out[3 - nd + i] = out[lead + i];
  }
  return a;
}

// Launches NAME32 (32-bit index math: the n outputs and the `in_numel` inputs < 2^31) or
// NAME64, with `n` appended.
template <class... Args>
void launch_n(CudaBackend& be, const std::string& key, const std::string& name,
              const std::function<std::string()>& source, int64_t n, int64_t in_numel, unsigned grid, Args... args) {
  if (n < (int64_t(1) << 31) && in_numel < (int64_t(1) << 31)) {
    be.launch(be.jit().get(key, (name + "32").c_str(), source), grid, kThreads, 0, args..., int32_t(n));
  } else {
    be.launch(be.jit().get(key, (name + "64").c_str(), source), grid, kThreads, 0, args..., int64_t(n));
  }
}

std::vector<PrimitivePtr> window_pool(CudaBackend& be, Op& op, PoolKernel kind) {
  const auto& pa = op.attr<PoolAttrs>();
  const int nd = int(pa.kernel.size());
  PoolArgs a = geometry(op, nd);
  PoolWindow w;
  for (int j = 0; j < nd; ++j) {
    const int i = 3 - nd + j;
    w.k[i] = pa.kernel[size_t(j)];
    w.s[i] = pa.stride[size_t(j)];
    w.p[i] = pa.padding[size_t(j)];
    w.d[i] = pa.dilation[size_t(j)];
  }
  a.flag = pa.count_include_pad ? 1 : 0;
  const DType dt = op.in(0).dtype;
  if (kind != PoolKernel::avg)
    EMBER_CHECK(dt != DType::boolean, op.name(), ": not supported for bool input ", op.in(0).shape);
  auto x = contiguous(be, op.inputs[0]);
  auto y = alloc(be, op.outputs[0]);
  CudaTensorPtr yi = kind == PoolKernel::max ? alloc(be, op.outputs[1]) : nullptr;
  const int64_t n = y->numel();
  std::vector<PrimitivePtr> result{y};
  if (yi) result.push_back(yi);
  if (n == 0) return result;
  const std::string key = std::string(op.name()) + (kind == PoolKernel::max_values ? "/values/" : "/") +
                          std::string(dtype_name(dt)) + "/" + w.key();
  launch_n(be, key, "pool", [&] { return pool_source(dt, kind, w); }, n, x->numel(), grid_for(be, n, kThreads, kPoolG),
           static_cast<const void*>(x->raw()), y->raw(), static_cast<int64_t*>(yi ? yi->raw() : nullptr), a);
  return result;
}

std::vector<PrimitivePtr> avg_pool_kernel(CudaBackend& be, Op& op) { return window_pool(be, op, PoolKernel::avg); }
std::vector<PrimitivePtr> max_pool_kernel(CudaBackend& be, Op& op) {
  return window_pool(be, op, op.attr<PoolAttrs>().indices ? PoolKernel::max : PoolKernel::max_values);
}

std::vector<PrimitivePtr> adaptive_avg_pool_kernel(CudaBackend& be, Op& op) {
  const int nd = op.attr<ShapeAttrs>().shape.rank();
  PoolArgs a = geometry(op, nd);
  auto x = contiguous(be, op.inputs[0]);
  auto y = alloc(be, op.outputs[0]);
  const int64_t n = y->numel();
  if (n == 0) return {y};
  EMBER_CHECK(x->numel() > 0, op.name(), ": input ", x->shape(), " has an empty spatial dim");
  // the CPU divides once by the volume for uniform windows (in % out == 0 in every dim)
  a.flag = (a.in[0] % a.out[0] == 0 && a.in[1] % a.out[1] == 0 && a.in[2] % a.out[2] == 0) ? 1 : 0;
  // the largest window volume
  int64_t vol = 1;
  for (int j = 0; j < 3; ++j) vol *= (a.in[j] + a.out[j] - 1) / a.out[j] + 1;
  const DType dt = x->dtype();
  const std::string key = std::string(op.name()) + "/" + std::string(dtype_name(dt));
  auto source = [&] { return pool_source(dt, PoolKernel::adaptive_avg); };
  const void* xp = x->raw();
  void* yp = y->raw();
  const int64_t m = x->numel();
  // A thread per output when there are enough outputs to fill the GPU (or small windows),
  // else a warp, or a block for few outputs with large windows (a global average).
  const int64_t resident = int64_t(be.sm_count()) * 2048;
  if (vol >= 4096 && n * 32 < resident * 4) {
    launch_n(be, key, "block", source, n, m, unsigned(std::min<int64_t>(n, int64_t(be.sm_count()) * 32)), xp, yp, a);
  } else if (vol >= 32 && n < resident) {
    launch_n(be, key, "warp", source, n, m, grid_for(be, n * 32, kThreads), xp, yp, a);
  } else {
    launch_n(be, key, "pool", source, n, m, grid_for(be, n, kThreads), xp, yp, static_cast<int64_t*>(nullptr), a);
  }
  return {y};
}

}  // namespace

void register_pool_kernels(KernelTable& t) {
  t[size_t(OpKind::avg_pool)] = avg_pool_kernel;
  t[size_t(OpKind::max_pool)] = max_pool_kernel;
  t[size_t(OpKind::adaptive_avg_pool)] = adaptive_avg_pool_kernel;
}

}  // namespace ember::cuda
