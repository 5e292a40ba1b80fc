// Copies between strided views with dtype conversion (contiguous, cast, and the building block
// of the layout ops), and the view ops, which only make new strides over the same buffer.

#include <algorithm>
#include <optional>

#include "cuda_backend.hpp"
#include "elementwise_sources.hpp"

namespace ember::cuda {

namespace {

std::string copy_source(DType to, DType from) {
  std::string s = "typedef " + std::string(device_type(to)) + " D;\ntypedef " + device_type(from) + " S;\n";
  s += R"CUDA(
extern "C" __global__ void linear(D* __restrict__ out, const S* __restrict__ in, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = cast_value<D>(in[i]);
}
extern "C" __global__ void strided32(D* out, const S* in, EMBER_GC Shape sh, EMBER_GC Strides so, EMBER_GC Strides si,
                                     uint32_t n) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[offset_of32(i, sh, so)] = cast_value<D>(in[offset_of32(i, sh, si)]);
}
extern "C" __global__ void strided64(D* out, const S* in, EMBER_GC Shape sh, EMBER_GC Strides so, EMBER_GC Strides si,
                                     int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[offset_of(i, sh, so)] = cast_value<D>(in[offset_of(i, sh, si)]);
}
// A batch of transposes: out[b][k][j] = in[b][k][j] where `in` has stride 1 along k (si_j along
// j) and `out` stride 1 along j (so_k along k); b indexes the other dims (bsh, with the strides
// bso / bsi). Each 64 x 64 tile is read along k and written along j through shared memory, so
// both sides are coalesced: 32 x 8 threads, 16 elements each per tile.
extern "C" __global__ void tiles(D* __restrict__ out, const S* __restrict__ in, EMBER_GC Shape bsh,
                                 EMBER_GC Strides bso, EMBER_GC Strides bsi, int64_t K, int64_t J, int64_t so_k,
                                 int64_t si_j, int64_t nb) {
  __shared__ S tile[64][65];
  const int64_t tk_n = (K + 63) / 64, tj_n = (J + 63) / 64, per_b = tk_n * tj_n;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t t = blockIdx.x; t < nb * per_b; t += gridDim.x) {
    const int64_t b = t / per_b, r = t - b * per_b, tk = r / tj_n, tj = r - tk * tj_n;
    const S* src = in + offset_of(b, bsh, bsi);
    D* dst = out + offset_of(b, bsh, bso);
    const int64_t k0 = tk * 64, j0 = tj * 64;
#pragma unroll
    for (int m = 0; m < 64; m += 8)
#pragma unroll
      for (int c = 0; c < 64; c += 32) {
        const int64_t k = k0 + tx + c, j = j0 + ty + m;
        if (k < K && j < J) tile[ty + m][tx + c] = src[k + j * si_j];
      }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < 64; m += 8)
#pragma unroll
      for (int c = 0; c < 64; c += 32) {
        const int64_t k = k0 + ty + m, j = j0 + tx + c;
        if (k < K && j < J) dst[k * so_k + j] = cast_value<D>(tile[tx + c][ty + m]);
      }
    __syncthreads();
  }
}
)CUDA";
  return s;
}

// Same-dtype copies whose innermost dim is contiguous on both sides, a whole number of 16-byte
// packs long, with every other stride and both addresses on 16-byte boundaries (the heads of
// attention merged back: [B, H, L, E] viewed as [B, L, H, E]): the strided walk moves 16-byte
// packs instead of elements. H200, f32 [8, 1024, 12, 64] from [8, 12, 1024, 64]: 68 us element
// by element, 24 us in packs.
const char* kPackedCopySource = R"CUDA(
extern "C" __global__ void packed32(uint4* out, const uint4* in, EMBER_GC Shape sh, EMBER_GC Strides so,
                                    EMBER_GC Strides si, uint32_t n) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[offset_of32(i, sh, so)] = in[offset_of32(i, sh, si)];
}
)CUDA";

std::vector<PrimitivePtr> reshape_kernel(CudaBackend& be, Op& op) {
  auto& x = as_cuda(op.inputs[0]);
  const Shape& s = op.outputs[0].shape;
  if (auto st = view_strides(x.shape(), x.strides, s))
    return {std::make_shared<CudaTensor>(op.outputs[0], x.buffer, std::move(*st), x.offset)};
  auto c = contiguous(be, op.inputs[0]);
  return {std::make_shared<CudaTensor>(op.outputs[0], c->buffer, contiguous_strides(s), c->offset)};
}

std::vector<PrimitivePtr> permute_kernel(CudaBackend&, Op& op) {
  auto& x = as_cuda(op.inputs[0]);
  const auto& p = op.attr<DimsAttrs>().dims;
  std::vector<int64_t> st(p.size());
  for (size_t i = 0; i < p.size(); ++i) st[i] = x.strides[p[i]];
  return {std::make_shared<CudaTensor>(op.outputs[0], x.buffer, std::move(st), x.offset)};
}

std::vector<PrimitivePtr> expand_kernel(CudaBackend&, Op& op) {
  auto& x = as_cuda(op.inputs[0]);
  return {std::make_shared<CudaTensor>(op.outputs[0], x.buffer, broadcast_strides(x, op.outputs[0].shape), x.offset)};
}

std::vector<PrimitivePtr> slice_kernel(CudaBackend&, Op& op) {
  auto& x = as_cuda(op.inputs[0]);
  const auto& r = op.attr<SliceAttrs>().ranges;
  std::vector<int64_t> st(r.size());
  int64_t off = x.offset;
  for (size_t d = 0; d < r.size(); ++d) {
    st[d] = x.strides[d] * r[d].step;
    if (r[d].length() > 0) off += r[d].start * x.strides[d];
  }
  return {std::make_shared<CudaTensor>(op.outputs[0], x.buffer, std::move(st), off)};
}

std::vector<PrimitivePtr> contiguous_kernel(CudaBackend& be, Op& op) {
  auto& x = as_cuda(op.inputs[0]);
  if (x.is_contiguous())
    return {std::make_shared<CudaTensor>(op.outputs[0], x.buffer, contiguous_strides(x.shape()), x.offset)};
  return {contiguous(be, op.inputs[0])};
}

std::vector<PrimitivePtr> cast_kernel(CudaBackend& be, Op& op) {
  auto& x = as_cuda(op.inputs[0]);
  const TensorMeta& meta = op.outputs[0];
  if (x.dtype() == meta.dtype) return {contiguous(be, op.inputs[0])};
  auto out = dtype_size(meta.dtype) == dtype_size(x.dtype()) ? output_reusing(be, op, 0, meta) : alloc(be, meta);
  copy_view(be, view_of(*out), view_of(x));
  return {out};
}

// A copy that transposes: the destination has stride 1 along the innermost dim, the source
// along another dim k, both of at least 16 elements. The other dims are the batch.
struct Transposed {
  ShapeArg bsh;
  StridesArg bso, bsi;
  int64_t K, J, so_k, si_j, nb;
};
std::optional<Transposed> transposed(const Collapsed& c) {
  const int r = c.shape.rank;
  if (r < 2 || c.strides[0].v[r - 1] != 1 || c.strides[1].v[r - 1] == 1) return std::nullopt;
  int k = -1;
  for (int d = 0; d < r - 1; ++d)
    if (c.strides[1].v[d] == 1) k = d;
  if (k < 0 || c.shape.size[k] < 16 || c.shape.size[r - 1] < 16) return std::nullopt;
  Transposed t{};
  t.K = c.shape.size[k];
  t.J = c.shape.size[r - 1];
  t.so_k = c.strides[0].v[k];
  t.si_j = c.strides[1].v[r - 1];
  t.nb = 1;
  for (int d = 0; d < r - 1; ++d) {
    if (d == k) continue;
    const int i = t.bsh.rank++;
    t.bsh.size[i] = c.shape.size[d];
    t.bso.v[i] = c.strides[0].v[d];
    t.bsi.v[i] = c.strides[1].v[d];
    t.nb *= c.shape.size[d];
  }
  return t;
}

// A same-dtype copy of rows: two collapsed dims, both operands contiguous along the inner one,
// every row a whole number of 16-byte packs at 16-byte aligned pitches (in packs below).
struct PitchedRows {
  int64_t rows, w, dp, sp;
};
std::optional<PitchedRows> pitched_rows(const Collapsed& c, const View& dst, const View& src) {
  if (src.dtype != dst.dtype || c.shape.rank != 2 || c.strides[0].v[1] != 1 || c.strides[1].v[1] != 1)
    return std::nullopt;
  const int64_t esz = int64_t(dtype_size(dst.dtype)), width = c.shape.size[1];
  const int64_t dp = c.strides[0].v[0], sp = c.strides[1].v[0];
  auto packs = [&](int64_t elems) { return elems * esz % 16 == 0; };
  if (dp < width || sp < width || !packs(width) || !packs(dp) || !packs(sp) ||
      reinterpret_cast<uintptr_t>(dst.ptr) % 16 != 0 || reinterpret_cast<uintptr_t>(src.ptr) % 16 != 0)
    return std::nullopt;
  return PitchedRows{c.shape.size[0], width * esz / 16, dp * esz / 16, sp * esz / 16};
}

// Up to kBatchRows copies of rows into one destination pitch, in one launch: copy i moves `rows`
// rows of w[i] 16-byte packs from src[i] (pitch sp[i]) to dst[i] (pitch dp). blockIdx.y strides
// over the rows, and each thread copies 4 packs of its row, loaded before any is stored.
constexpr int kBatchRows = 8;
struct RowCopies {
  int32_t n = 0;
  int32_t pad = 0;
  int64_t rows = 0, dp = 0;
  const void* src[kBatchRows] = {};
  void* dst[kBatchRows] = {};
  int64_t w[kBatchRows] = {}, sp[kBatchRows] = {};
};
const char* kRowsBatchSource = R"CUDA(
struct RowCopies {
  int n, pad;
  int64_t rows, dp;
  const uint4* src[8];
  uint4* dst[8];
  int64_t w[8], sp[8];
};
extern "C" __global__ void rows16_batch(EMBER_GC RowCopies a) {
  const int64_t span = int64_t(gridDim.x) * blockDim.x * 4;
  for (int64_t r = blockIdx.y; r < a.rows; r += gridDim.y) {
    for (int i = 0; i < a.n; ++i) {
      const uint4* src = a.src[i] + r * a.sp[i];
      uint4* dst = a.dst[i] + r * a.dp;
      const int64_t w = a.w[i];
      for (int64_t c = int64_t(blockIdx.x) * blockDim.x * 4 + threadIdx.x; c < w; c += span) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u)
          if (c + u * blockDim.x < w) v[u] = src[c + u * blockDim.x];
#pragma unroll
        for (int u = 0; u < 4; ++u)
          if (c + u * blockDim.x < w) dst[c + u * blockDim.x] = v[u];
      }
    }
  }
}
)CUDA";

// Rows grid: blocks across a row (4 packs a thread) and enough rows to fill the GPU.
dim3 rows_grid(CudaBackend& be, int64_t w, int64_t rows) {
  const unsigned gx = unsigned(std::min<int64_t>(ceil_div(w, 256 * 4), 64));
  const unsigned gy = unsigned(std::min<int64_t>(rows, std::max<int64_t>(1, int64_t(be.sm_count()) * 16 / gx)));
  return dim3(gx, gy);
}

std::string copy_key(DType to, DType from) {
  return std::string("copy/") + std::string(dtype_name(to)) + "/" + std::string(dtype_name(from));
}

void launch_rows(CudaBackend& be, const RowCopies& b) {
  const int64_t w = *std::max_element(b.w, b.w + b.n);
  be.launch(be.jit().get("copy/rows16_batch", "rows16_batch", [] { return std::string(kRowsBatchSource); }),
            rows_grid(be, w, b.rows), 256, 0, b);
}

}  // namespace

std::vector<KernelSource> copy_kernel_sources() {
  std::vector<KernelSource> out;
  for (int to = 0; to < kNumDTypes; ++to)
    for (int from = 0; from < kNumDTypes; ++from)
      out.push_back({copy_key(DType(to), DType(from)), copy_source(DType(to), DType(from))});
  out.push_back({"copy/rows16_batch", kRowsBatchSource});
  out.push_back({"copy/packed16", kPackedCopySource});
  return out;
}

bool copy_rows_batched(CudaBackend& be, const std::vector<View>& dsts, const std::vector<View>& srcs) {
  std::vector<RowCopies> batches;
  for (size_t i = 0; i < dsts.size(); ++i) {
    if (dsts[i].shape.numel() == 0) continue;
    Collapsed c = collapse("copy", dsts[i].shape, {dsts[i].strides, srcs[i].strides});
    auto r = pitched_rows(c, dsts[i], srcs[i]);
    if (!r) return false;
    if (batches.empty() || batches.back().n == kBatchRows) {
      batches.emplace_back();
      batches.back().rows = r->rows;
      batches.back().dp = r->dp;
    }
    RowCopies& b = batches.back();
    if (r->rows != b.rows || r->dp != b.dp) return false;
    b.src[b.n] = srcs[i].ptr;
    b.dst[b.n] = dsts[i].ptr;
    b.w[b.n] = r->w;
    b.sp[b.n] = r->sp;
    ++b.n;
  }
  for (const RowCopies& b : batches) launch_rows(be, b);
  return true;
}

View view_of(const CudaTensor& t) { return View{t.raw(), t.dtype(), t.shape(), t.strides}; }


// The collapsed layout `c` of a copy in 16-byte packs, when it has one (see kPackedCopySource).
std::optional<Collapsed> packed(const Collapsed& c, const View& dst, const View& src) {
  const int r = c.shape.rank;
  const int64_t esz = int64_t(dtype_size(dst.dtype)), per = 16 / esz;
  if (src.dtype != dst.dtype || r < 2 || 16 % esz != 0 || c.strides[0].v[r - 1] != 1 || c.strides[1].v[r - 1] != 1 ||
      c.shape.size[r - 1] % per != 0 || reinterpret_cast<uintptr_t>(dst.ptr) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(src.ptr) % 16 != 0)
    return std::nullopt;
  Collapsed p = c;
  p.shape.size[r - 1] /= per;
  for (int k = 0; k < 2; ++k)
    for (int d = 0; d + 1 < r; ++d) {
      if (c.strides[size_t(k)].v[d] % per != 0) return std::nullopt;
      p.strides[size_t(k)].v[d] = c.strides[size_t(k)].v[d] / per;
    }
  return p;
}

void copy_view(CudaBackend& be, const View& dst, const View& src) {
  const int64_t n = dst.shape.numel();
  if (n == 0) return;
  Collapsed c = collapse("copy", dst.shape, {dst.strides, src.strides});
  const size_t esz = dtype_size(dst.dtype);
  if (src.dtype == dst.dtype && c.contiguous[0] && c.contiguous[1]) {
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.ptr, src.ptr, size_t(n) * esz, cudaMemcpyDeviceToDevice, be.stream()));
    return;
  }
  const std::string key = copy_key(dst.dtype, src.dtype);
  auto source = [&] { return copy_source(dst.dtype, src.dtype); };
  if (auto r = pitched_rows(c, dst, src)) {
    // rows of contiguous bytes at two pitches (cat, column slices), 16-byte packs. H200, cat of
    // two f32 [4096, 4096] along dim 1: 200.6 us element by element, 164 us through the
    // runtime's cudaMemcpy2DAsync, 74.5 us here (PyTorch 69.8 us)
    RowCopies one;
    one.n = 1;
    one.rows = r->rows, one.dp = r->dp;
    one.src[0] = src.ptr, one.dst[0] = dst.ptr;
    one.w[0] = r->w, one.sp[0] = r->sp;
    launch_rows(be, one);
    return;
  }
  constexpr int kThreads = 256;
  unsigned grid = grid_for(be, n, kThreads, 4);
  if (c.contiguous[0] && c.contiguous[1]) {
    be.launch(be.jit().get(key, "linear", source), grid, kThreads, 0, dst.ptr, src.ptr, n);
  } else if (auto t = transposed(c)) {
    // H200, f32 [4096, 8192] transposed into [8192, 4096]: 256 us element by element (as
    // PyTorch's 242 us), 134 us in 32 x 32 tiles, 86 us in 64 x 64 tiles
    const int64_t tiles = t->nb * ceil_div(t->K, 64) * ceil_div(t->J, 64);
    const unsigned g = unsigned(std::min<int64_t>(tiles, int64_t(be.sm_count()) * 8));
    be.launch(be.jit().get(key, "tiles", source), g, dim3(32, 8), 0, dst.ptr, src.ptr, t->bsh, t->bso, t->bsi, t->K,
              t->J, t->so_k, t->si_j, t->nb);
  } else if (auto p = n < (int64_t(1) << 31) ? packed(c, dst, src) : std::nullopt) {
    const int64_t packs = n * int64_t(esz) / 16;
    be.launch(be.jit().get("copy/packed16", "packed32", [] { return std::string(kPackedCopySource); }),
              grid_for(be, packs, kThreads, 4), kThreads, 0, dst.ptr, src.ptr, p->shape, p->strides[0],
              p->strides[1], uint32_t(packs));
  } else if (n < (int64_t(1) << 31)) {
    be.launch(be.jit().get(key, "strided32", source), grid, kThreads, 0, dst.ptr, src.ptr, c.shape, c.strides[0],
              c.strides[1], uint32_t(n));
  } else {
    be.launch(be.jit().get(key, "strided64", source), grid, kThreads, 0, dst.ptr, src.ptr, c.shape, c.strides[0],
              c.strides[1], n);
  }
}

CudaTensorPtr contiguous(CudaBackend& be, const PrimitivePtr& p) {
  auto t = as_cuda_ptr(p);
  if (t->is_contiguous()) return t;
  auto out = alloc(be, t->meta());
  copy_view(be, view_of(*out), view_of(*t));
  return out;
}

void register_copy_kernels(KernelTable& t) {
  t[size_t(OpKind::reshape)] = reshape_kernel;
  t[size_t(OpKind::permute)] = permute_kernel;
  t[size_t(OpKind::expand)] = expand_kernel;
  t[size_t(OpKind::slice)] = slice_kernel;
  t[size_t(OpKind::contiguous)] = contiguous_kernel;
  t[size_t(OpKind::cast)] = cast_kernel;
}

}  // namespace ember::cuda
