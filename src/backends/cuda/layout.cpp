// Layout kernels: ops that move elements into a new buffer (flip, roll, cat, pad, tril/triu,
// slice_assign), as src/backends/cpu/layout.cpp. Most are strided copies (copy_view): flip is
// one copy from a negative-stride view, roll a copy per rolled block, cat a copy per input
// into a slice of the output (one launch for all where each copies 16-byte packed rows),
// slice_assign a copy of x (skipped when its buffer is reused in place) and a copy of the value
// into the slice. pad and tril/triu are small index kernels that move raw elements (dispatched
// on the element size).
#include <algorithm>
#include <cstring>

#include "cuda_backend.hpp"
#include "elementwise_sources.hpp"

namespace ember::cuda {

namespace {

constexpr int kThreads = 256;

const char* uint_type(size_t bytes) {
  switch (bytes) {
    case 1: return "uint8_t";
    case 2: return "uint16_t";
    case 4: return "uint32_t";
    default: return "uint64_t";
  }
}

std::string key_of(std::string_view op, size_t bytes) { return std::string(op) + "/b" + std::to_string(bytes); }

// `p` advanced by `elems` elements of dtype `dt`.
void* advance(void* p, int64_t elems, DType dt) { return static_cast<char*>(p) + elems * int64_t(dtype_size(dt)); }

}  // namespace

// ------------------------------------------------------------------------------ sources

std::string pad_source(size_t bytes) {
  std::string s = "typedef " + std::string(uint_type(bytes)) + " U;\n";
  s += R"CUDA(
// out (contiguous, shape osh) from x (shape ish, strides xs) padded by lo[d] elements before
// each dim. mode 0: constant `val`; 1: reflect (without repeating the edge); 2: replicate.
template <class I>
__device__ __forceinline__ void pad_body(U* out, const U* x, const Shape& osh, const Shape& ish, const Strides& xs,
                                         const Strides& lo, int mode, U val, I n) {
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += I(gridDim.x) * I(blockDim.x)) {
    I r = i;
    int64_t off = 0;
    bool inside = true;
    for (int d = osh.rank - 1; d >= 0; --d) {
      I size = I(osh.size[d]);
      I q = r / size;
      int64_t j = int64_t(r - q * size) - lo.v[d];
      r = q;
      int64_t nin = ish.size[d];
      if (mode == 0) {
        inside = inside && j >= 0 && j < nin;
      } else if (mode == 1) {
        j = j < 0 ? -j : (j >= nin ? 2 * (nin - 1) - j : j);
      } else {
        j = j < 0 ? 0 : (j >= nin ? nin - 1 : j);
      }
      off += j * xs.v[d];
    }
    out[i] = inside ? x[off] : val;
  }
}
extern "C" __global__ void pad32(U* out, const U* x, EMBER_GC Shape osh, EMBER_GC Shape ish, EMBER_GC Strides xs,
                                 EMBER_GC Strides lo, int mode, U val, uint32_t n) {
  pad_body<uint32_t>(out, x, osh, ish, xs, lo, mode, val, n);
}
extern "C" __global__ void pad64(U* out, const U* x, EMBER_GC Shape osh, EMBER_GC Shape ish, EMBER_GC Strides xs,
                                 EMBER_GC Strides lo, int mode, U val, int64_t n) {
  pad_body<int64_t>(out, x, osh, ish, xs, lo, mode, val, n);
}
)CUDA";
  return s;
}

std::string tri_source(bool lower, size_t bytes) {
  std::string s = "typedef " + std::string(uint_type(bytes)) + " U;\n";
  s += lower ? "// tril: keep column j of row i when j - i <= k\n"
               "__device__ __forceinline__ bool tri_keep(int64_t i, int64_t j, int64_t k) { return j - i <= k; }\n"
             : "// triu: keep column j of row i when j - i >= k\n"
               "__device__ __forceinline__ bool tri_keep(int64_t i, int64_t j, int64_t k) { return j - i >= k; }\n";
  s += R"CUDA(
// x contiguous [*, R, C] (or x is out: in place, only the zeros are written).
template <class I>
__device__ __forceinline__ void tri_contig(U* out, const U* x, I rows, I cols, int64_t k, I n, int inplace) {
  for (I e = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); e < n; e += I(gridDim.x) * I(blockDim.x)) {
    I q = e / cols;
    int64_t j = int64_t(e - q * cols), i = int64_t(q % rows);
    if (tri_keep(i, j, k)) {
      if (!inplace) out[e] = x[e];
    } else {
      out[e] = U(0);
    }
  }
}
// x strided with shape sh (rank >= 2), out contiguous.
template <class I>
__device__ __forceinline__ void tri_strided(U* out, const U* x, const Shape& sh, const Strides& xs, int64_t k, I n) {
  for (I e = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); e < n; e += I(gridDim.x) * I(blockDim.x)) {
    I r = e;
    int64_t off = 0, i = 0, j = 0;
    for (int d = sh.rank - 1; d >= 0; --d) {
      I size = I(sh.size[d]);
      I q = r / size;
      int64_t c = int64_t(r - q * size);
      r = q;
      off += c * xs.v[d];
      if (d == sh.rank - 1) j = c;
      if (d == sh.rank - 2) i = c;
    }
    out[e] = tri_keep(i, j, k) ? x[off] : U(0);
  }
}
extern "C" __global__ void contig32(U* out, const U* x, uint32_t rows, uint32_t cols, int64_t k, uint32_t n,
                                    int inplace) {
  tri_contig<uint32_t>(out, x, rows, cols, k, n, inplace);
}
extern "C" __global__ void contig64(U* out, const U* x, int64_t rows, int64_t cols, int64_t k, int64_t n, int inplace) {
  tri_contig<int64_t>(out, x, rows, cols, k, n, inplace);
}
extern "C" __global__ void strided32(U* out, const U* x, EMBER_GC Shape sh, EMBER_GC Strides xs, int64_t k, uint32_t n) {
  tri_strided<uint32_t>(out, x, sh, xs, k, n);
}
extern "C" __global__ void strided64(U* out, const U* x, EMBER_GC Shape sh, EMBER_GC Strides xs, int64_t k, int64_t n) {
  tri_strided<int64_t>(out, x, sh, xs, k, n);
}
)CUDA";
  return s;
}

std::vector<KernelSource> layout_kernel_sources() {
  std::vector<KernelSource> out;
  for (size_t b : {1, 2, 4, 8}) {
    out.push_back({key_of("pad", b), pad_source(b)});
    out.push_back({key_of("tril", b), tri_source(true, b)});
    out.push_back({key_of("triu", b), tri_source(false, b)});
  }
  return out;
}

// --------------------------------------------------------------------------------- host

namespace {

// ---- flip: one copy from a view with negated strides ----

std::vector<PrimitivePtr> flip_kernel(CudaBackend& be, Op& op) {
  const CudaTensor& x = as_cuda(op.inputs[0]);
  const Shape& s = x.shape();
  View src = view_of(x);
  std::vector<bool> seen(size_t(s.rank()), false);
  for (int d : op.attr<DimsAttrs>().dims) {
    if (s.rank() == 0) continue;
    EMBER_CHECK(!seen[size_t(d)], "flip: dim ", d, " appears multiple times in the list of dims");
    seen[size_t(d)] = true;
    if (s[d] > 0) src.ptr = advance(src.ptr, (s[d] - 1) * src.strides[size_t(d)], x.dtype());
    src.strides[size_t(d)] = -src.strides[size_t(d)];
  }
  auto out = alloc(be, op.outputs[0]);
  copy_view(be, view_of(*out), src);
  return {out};
}

// ---- roll: up to 2^k block copies (k = number of rolled dims) ----

std::vector<PrimitivePtr> roll_kernel(CudaBackend& be, Op& op) {
  const auto& a = op.attr<RollAttrs>();
  auto out = alloc(be, op.outputs[0]);
  const DType dt = out->dtype();
  const Shape& s = out->shape();
  const int64_t n = s.numel();
  if (n == 0) return {out};
  if (a.dims.empty()) {  // roll of the flattened tensor: two copies of a contiguous version
    CudaTensorPtr c = contiguous(be, op.inputs[0]);
    int64_t sh = a.shifts.empty() ? 0 : ((a.shifts[0] % n) + n) % n;
    if (n - sh > 0)
      copy_view(be, View{advance(out->raw(), sh, dt), dt, Shape{n - sh}, {1}}, View{c->raw(), dt, Shape{n - sh}, {1}});
    if (sh > 0)
      copy_view(be, View{out->raw(), dt, Shape{sh}, {1}}, View{advance(c->raw(), n - sh, dt), dt, Shape{sh}, {1}});
    return {out};
  }
  const CudaTensor& x = as_cuda(op.inputs[0]);
  const int r = s.rank();
  std::vector<int64_t> shift(size_t(r), 0);
  for (size_t i = 0; i < a.dims.size(); ++i) {
    if (r == 0) continue;
    int d = a.dims[i];
    shift[size_t(d)] = ((shift[size_t(d)] + a.shifts[i] % s[d]) % s[d] + s[d]) % s[d];
  }
  std::vector<int> rolled;
  for (int d = 0; d < r; ++d)
    if (shift[size_t(d)] != 0) rolled.push_back(d);
  const size_t k = rolled.size();
  for (uint64_t mask = 0; mask < (uint64_t(1) << k); ++mask) {
    View dst = view_of(*out), src = view_of(x);
    for (size_t j = 0; j < k; ++j) {
      int d = rolled[j];
      int64_t sh = shift[size_t(d)], len = s[d];
      if (mask >> j & 1) {  // out [0, sh) <- x [len - sh, len)
        src.ptr = advance(src.ptr, (len - sh) * x.strides[size_t(d)], dt);
        dst.shape[d] = src.shape[d] = sh;
      } else {  // out [sh, len) <- x [0, len - sh)
        dst.ptr = advance(dst.ptr, sh * out->strides[size_t(d)], dt);
        dst.shape[d] = src.shape[d] = len - sh;
      }
    }
    copy_view(be, dst, src);
  }
  return {out};
}

// ---- cat: one copy per input into its slice of the output ----

std::vector<PrimitivePtr> cat_kernel(CudaBackend& be, Op& op) {
  const int dim = op.attr<DimAttrs>().dim;
  auto out = alloc(be, op.outputs[0]);
  if (out->numel() == 0) return {out};
  std::vector<View> dsts, srcs;
  int64_t off = 0;
  for (const auto& p : op.inputs) {
    const CudaTensor& t = as_cuda(p);
    if (t.numel() > 0) {
      dsts.push_back(
          {advance(out->raw(), off * out->strides[size_t(dim)], t.dtype()), t.dtype(), t.shape(), out->strides});
      srcs.push_back(view_of(t));
    }
    off += t.shape()[dim];
  }
  // rows in whole 16-byte packs (a contiguous cat along an inner dim): one launch for all inputs.
  // H200, two f32 [4096, 4096] along dim 1: 74.1 us as two launches, 70.7 us as one (PyTorch 69.5)
  if (dsts.size() > 1 && copy_rows_batched(be, dsts, srcs)) return {out};
  for (size_t i = 0; i < dsts.size(); ++i) copy_view(be, dsts[i], srcs[i]);
  return {out};
}

// ---- pad: an index kernel for every mode ----

std::vector<PrimitivePtr> pad_kernel(CudaBackend& be, Op& op) {
  const CudaTensor& x = as_cuda(op.inputs[0]);
  const auto& a = op.attr<PadAttrs>();
  auto out = alloc(be, op.outputs[0]);
  const Shape& is = x.shape();
  const Shape& os = out->shape();
  const int r = os.rank();
  const int64_t n = os.numel();
  if (n == 0) return {out};
  if (r == 0) {
    copy_view(be, view_of(*out), view_of(x));
    return {out};
  }
  EMBER_CHECK(r <= kMaxRank, "pad: rank ", r, " is not supported on CUDA (at most ", kMaxRank, ")");
  ShapeArg osh, ish;
  StridesArg xs, lo;
  osh.rank = ish.rank = r;
  for (int d = 0; d < r; ++d) {
    osh.size[d] = os[d];
    ish.size[d] = is[d];
    xs.v[d] = x.strides[size_t(d)];
    lo.v[d] = a.pads[size_t(2 * d)];
  }
  const int mode = a.mode == PadMode::constant ? 0 : a.mode == PadMode::reflect ? 1 : 2;
  uint64_t vbits = 0;
  visit_dtype(x.dtype(), [&]<class T>() {
    T v = convert_scalar<T>(a.value);
    std::memcpy(&vbits, &v, sizeof(T));
  });
  const size_t bytes = dtype_size(x.dtype());
  const bool small = n < (int64_t(1) << 31);
  CUfunction f = be.jit().get(key_of("pad", bytes), small ? "pad32" : "pad64", [&] { return pad_source(bytes); });
  const unsigned grid = grid_for(be, n, kThreads);
  auto launch = [&]<class U>(U val) {
    if (small)
      be.launch(f, grid, kThreads, 0, out->raw(), x.raw(), osh, ish, xs, lo, mode, val, uint32_t(n));
    else
      be.launch(f, grid, kThreads, 0, out->raw(), x.raw(), osh, ish, xs, lo, mode, val, n);
  };
  switch (bytes) {
    case 1: launch(uint8_t(vbits)); break;
    case 2: launch(uint16_t(vbits)); break;
    case 4: launch(uint32_t(vbits)); break;
    default: launch(uint64_t(vbits)); break;
  }
  return {out};
}

// ---- tril / triu ----

template <bool Lower>
std::vector<PrimitivePtr> tri_kernel(CudaBackend& be, Op& op) {
  CudaTensorPtr out = output_reusing(be, op, 0, op.outputs[0]);
  const Shape& s = op.outputs[0].shape;
  const int r = s.rank();
  const int64_t n = s.numel();
  if (n == 0) return {out};
  const int64_t rows = s[r - 2], cols = s[r - 1];
  const int64_t k = op.attr<DimAttrs>().k;
  const size_t bytes = dtype_size(op.outputs[0].dtype);
  const std::string key = key_of(Lower ? "tril" : "triu", bytes);
  auto source = [&] { return tri_source(Lower, bytes); };
  const bool small = n < (int64_t(1) << 31);
  const unsigned grid = grid_for(be, n, kThreads);
  const CudaTensor& x0 = as_cuda(op.inputs[0]);
  const int inplace = out->buffer == x0.buffer;
  if (!inplace && !x0.is_contiguous() && r <= kMaxRank) {
    ShapeArg sh;
    StridesArg xs;
    sh.rank = r;
    for (int d = 0; d < r; ++d) {
      sh.size[d] = s[d];
      xs.v[d] = x0.strides[size_t(d)];
    }
    if (small)
      be.launch(be.jit().get(key, "strided32", source), grid, kThreads, 0, out->raw(), x0.raw(), sh, xs, k,
                uint32_t(n));
    else
      be.launch(be.jit().get(key, "strided64", source), grid, kThreads, 0, out->raw(), x0.raw(), sh, xs, k, n);
    return {out};
  }
  CudaTensorPtr x = inplace ? out : contiguous(be, op.inputs[0]);
  if (small)
    be.launch(be.jit().get(key, "contig32", source), grid, kThreads, 0, out->raw(), x->raw(), uint32_t(rows),
              uint32_t(cols), k, uint32_t(n), inplace);
  else
    be.launch(be.jit().get(key, "contig64", source), grid, kThreads, 0, out->raw(), x->raw(), rows, cols, k, n,
              inplace);
  return {out};
}

// ---- slice_assign: x (in place when the op owns its buffer), then value into the slice ----

std::vector<PrimitivePtr> slice_assign_kernel(CudaBackend& be, Op& op) {
  CudaTensorPtr out = output_reusing(be, op, 0, op.outputs[0]);
  const CudaTensor& x = as_cuda(op.inputs[0]);
  const CudaTensor& v = as_cuda(op.inputs[1]);
  if (out->buffer != x.buffer) copy_view(be, view_of(*out), view_of(x));
  if (v.numel() == 0) return {out};
  const auto& ranges = op.attr<SliceAttrs>().ranges;
  const int r = out->shape().rank();
  View dst{out->raw(), out->dtype(), v.shape(), std::vector<int64_t>(size_t(r))};
  int64_t off = 0;
  for (int d = 0; d < r; ++d) {
    off += ranges[size_t(d)].start * out->strides[size_t(d)];
    dst.strides[size_t(d)] = out->strides[size_t(d)] * ranges[size_t(d)].step;
  }
  dst.ptr = advance(out->raw(), off, out->dtype());
  copy_view(be, dst, view_of(v));
  return {out};
}

}  // namespace

void register_layout_kernels(KernelTable& t) {
  t[size_t(OpKind::flip)] = flip_kernel;
  t[size_t(OpKind::roll)] = roll_kernel;
  t[size_t(OpKind::cat)] = cat_kernel;
  t[size_t(OpKind::pad)] = pad_kernel;
  t[size_t(OpKind::tril)] = tri_kernel<true>;
  t[size_t(OpKind::triu)] = tri_kernel<false>;
  t[size_t(OpKind::slice_assign)] = slice_assign_kernel;
}

}  // namespace ember::cuda
