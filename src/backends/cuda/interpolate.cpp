// interpolate: nearest (1 to 3 spatial dims), linear and cubic (1 or 2 spatial dims: linear,
// bilinear, bicubic with A = -0.75; shape inference rejects 3-d linear/cubic, as the CPU
// backend does), with the semantics of the CPU backend (src/backends/cpu/pool.cpp):
//  - nearest is PyTorch's legacy rule: src = min(floor(dst * (float)in / out), in - 1) in float
//    (dst when in == out, dst >> 1 when out == 2 * in);
//  - linear / cubic use PyTorch's area_pixel_compute_scale / source_index from the sizes
//    (align_corners: (in - 1) / (out - 1); else in / out, source (dst + 0.5) * scale - 0.5,
//    clamped at 0 for linear), cubic taps clamped at the border, an in = out = 1 dim is the
//    identity; computed in float (f32, f16, bf16) or double (f64).
// The input is viewed as [planes, d0, d1, d2] (1-d / 2-d lifted to 3-d as on the CPU). One
// thread per output element computes its taps and the separable sum in the CPU's order:
// h_a = sum_b w2[b] * x[row_a, col_b], out = sum_a w1[a] * h_a, every multiply and add
// rounded separately (no fused multiply-add), so f32/f64 results match the CPU's bit for bit.
#include "cuda_backend.hpp"
#include "index_sources.hpp"

namespace ember::cuda {

namespace {

// The kernels' InterpArgs (the same layout on both sides).
struct InterpArgs {
  int64_t planes = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t align_corners = 0;
  float nearest_scale[3] = {1, 1, 1};  // float(in) / float(out) (nearest)
  int32_t pad = 0;
};
static_assert(sizeof(InterpArgs) == 80);

const char* kInterpCommon = R"CUDA(
struct InterpArgs {
  int64_t planes;
  int64_t in[3], out[3];
  int64_t align_corners;
  float nearest_scale[3];
  int32_t pad;
};
)CUDA";

}  // namespace

std::string interpolate_source(DType dt, InterpMode mode) {
  std::string s = std::string(kInterpCommon) + spatial_kernel_helpers();
  if (mode == InterpMode::nearest) {
    s += "typedef " + std::string(bits_type(dtype_size(dt))) + " T;\n";
    s += R"CUDA(
template <class I>
__device__ __forceinline__ I nearest_src(I dst, I in, I out, float scale) {
  if (in == out) return dst;
  if (out == 2 * in) return dst >> 1;
  const I s = (I)floorf(__fmul_rn(float(dst), scale));
  return s < in - 1 ? s : in - 1;
}
template <class I>
__device__ __forceinline__ void interp_body(const T* __restrict__ x, T* __restrict__ y, InterpArgs a, I n) {
  I in[3], out[3];
  for (int j = 0; j < 3; ++j) {
    in[j] = I(a.in[j]);
    out[j] = I(a.out[j]);
  }
  const I in_plane = in[0] * in[1] * in[2];
  GRID_LOOP(I, i, n) {
    I pl, o[3], src[3];
    decode(i, out, pl, o);
    for (int d = 0; d < 3; ++d) src[d] = nearest_src(o[d], in[d], out[d], a.nearest_scale[d]);
    y[i] = x[pl * in_plane + (src[0] * in[1] + src[1]) * in[2] + src[2]];
  }
}
)CUDA";
  } else {
    s += "typedef " + std::string(device_type(dt)) + " T;\ntypedef " + compute_type(dt) + " A;\n";
    s += mode == InterpMode::linear ? "#define LINEAR 1\n#define TAPS 2\n" : "#define CUBIC 1\n#define TAPS 4\n";
    s += R"CUDA(
// Separately rounded arithmetic (the CPU backend does not contract a * b + c).
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ float floor_a(float a) { return floorf(a); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ double floor_a(double a) { return floor(a); }

// The taps of output o along one dim: k source indices and weights.
template <class I>
struct Taps {
  int k;
  I idx[4];
  A w[4];
};
template <class I>
__device__ __forceinline__ void make_taps(I o, I in, I out, bool align, Taps<I>& t) {
  if (in == 1 && out == 1) {  // identity
    t.k = 1;
    t.idx[0] = 0;
    t.w[0] = A(1);
    return;
  }
  const A scale = align ? (out > 1 ? div_rn(A(in - 1), A(out - 1)) : A(0)) : div_rn(A(in), A(out));
  A real = align ? mul_rn(scale, A(o)) : sub_rn(mul_rn(scale, add_rn(A(o), A(0.5))), A(0.5));
#ifdef LINEAR
  if (!align && real < A(0)) real = A(0);
  I i0 = (I)floor_a(real);
  if (i0 > in - 1) i0 = in - 1;
  A l1 = sub_rn(real, A(i0));
  l1 = l1 < A(0) ? A(0) : (l1 > A(1) ? A(1) : l1);
  t.k = 2;
  t.idx[0] = i0;
  t.idx[1] = i0 + (i0 < in - 1 ? 1 : 0);
  t.w[0] = sub_rn(A(1), l1);
  t.w[1] = l1;
#else
  // cubic convolution, A = -0.75: cc1(x) = ((A + 2) x - (A + 3)) x x + 1 for |x| <= 1,
  // cc2(x) = ((A x - 5 A) x + 8 A) x - 4 A for 1 < |x| < 2
  const A fl = floor_a(real);
  const I i0 = (I)fl;
  const A tt = sub_rn(real, fl);
  const A ca = A(-0.75), c2 = A(1.25), c3 = A(2.25), c5 = A(-3.75), c8 = A(-6), c4 = A(-3);
  const A xs[4] = {add_rn(tt, A(1)), tt, sub_rn(A(1), tt), sub_rn(A(2), tt)};
  for (int j = 0; j < 4; ++j) {
    const A v = xs[j];
    if (j == 1 || j == 2)
      t.w[j] = add_rn(mul_rn(mul_rn(sub_rn(mul_rn(c2, v), c3), v), v), A(1));
    else
      t.w[j] = sub_rn(mul_rn(add_rn(mul_rn(sub_rn(mul_rn(ca, v), c5), v), c8), v), c4);
    const I k = i0 - 1 + j;
    t.idx[j] = k < 0 ? 0 : (k > in - 1 ? in - 1 : k);
  }
  t.k = 4;
#endif
}

// K1 x K2 taps per output (K = 1 on an identity dim): all loads first, then the sums.
template <int K1, int K2, class I>
__device__ __forceinline__ void resample(const T* __restrict__ x, T* __restrict__ y, const InterpArgs& a, I n) {
  I out[3];
  for (int j = 0; j < 3; ++j) out[j] = I(a.out[j]);
  const I in0 = I(a.in[0]), in1 = I(a.in[1]), in2 = I(a.in[2]);
  const bool align = a.align_corners != 0;
  GRID_LOOP(I, i, n) {
    I pl, o[3];
    decode(i, out, pl, o);
    Taps<I> t1, t2;
    make_taps(o[1], in1, out[1], align, t1);
    make_taps(o[2], in2, out[2], align, t2);
    // (dim 0 is always a lifted dim of size 1: linear/cubic have at most 2 spatial dims)
    const T* xp = x + (pl * in0 + o[0]) * in1 * in2;
    A xv[K1][K2];
#pragma unroll
    for (int r = 0; r < K1; ++r)
#pragma unroll
      for (int c = 0; c < K2; ++c) xv[r][c] = A(xp[t1.idx[r] * in2 + t2.idx[c]]);
    A v = 0;
#pragma unroll
    for (int r = 0; r < K1; ++r) {
      A h = mul_rn(xv[r][0], t2.w[0]);
#pragma unroll
      for (int c = 1; c < K2; ++c) h = add_rn(h, mul_rn(xv[r][c], t2.w[c]));
      v = r == 0 ? mul_rn(h, t1.w[0]) : add_rn(v, mul_rn(h, t1.w[r]));
    }
    y[i] = T(v);
  }
}
template <class I>
__device__ __forceinline__ void interp_body(const T* __restrict__ x, T* __restrict__ y, InterpArgs a, I n) {
  const bool id1 = a.in[1] == 1 && a.out[1] == 1, id2 = a.in[2] == 1 && a.out[2] == 1;
  if (id1) {
    if (id2) resample<1, 1, I>(x, y, a, n);
    else resample<1, TAPS, I>(x, y, a, n);
  } else {
    if (id2) resample<TAPS, 1, I>(x, y, a, n);
    else resample<TAPS, TAPS, I>(x, y, a, n);
  }
}
)CUDA";
  }
  s += R"CUDA(
extern "C" __global__ void interp32(const T* x, T* y, InterpArgs a, int n) { interp_body<int>(x, y, a, n); }
extern "C" __global__ void interp64(const T* x, T* y, InterpArgs a, int64_t n) { interp_body<int64_t>(x, y, a, n); }
)CUDA";
  return s;
}

namespace {

constexpr int kThreads = 256;

const char* mode_name(InterpMode m) {
  switch (m) {
    case InterpMode::nearest: return "nearest";
    case InterpMode::linear: return "linear";
    default: return "cubic";
  }
}

std::vector<PrimitivePtr> interpolate_kernel(CudaBackend& be, Op& op) {
  const auto& attrs = op.attr<InterpolateAttrs>();
  const int nd = int(attrs.size.size());
  EMBER_CHECK(nd >= 1 && nd <= 3, op.name(), ": supports 1 to 3 spatial dims, got ", nd);
  EMBER_CHECK(attrs.mode == InterpMode::nearest || nd <= 2, op.name(),
              ": linear/cubic modes support 1 or 2 spatial dims, got ", nd);
  const Shape& is = op.in(0).shape;
  const Shape& os = op.outputs[0].shape;
  InterpArgs a;
  const int lead = is.rank() - nd;
  for (int d = 0; d < lead; ++d) a.planes *= is[d];
  for (int i = 0; i < nd; ++i) {
    a.in[3 - nd + i] = is[lead + i];
    a.out[3 - nd + i] = os[lead + i];
  }
  for (int j = 0; j < 3; ++j) a.nearest_scale[j] = float(a.in[j]) / float(a.out[j]);
  a.align_corners = attrs.align_corners ? 1 : 0;
  auto x = contiguous(be, op.inputs[0]);
  auto y = alloc(be, op.outputs[0]);
  const int64_t n = y->numel();
  if (n == 0) return {y};
  EMBER_CHECK(x->numel() > 0, op.name(), ": input ", x->shape(), " is empty but the output ", y->shape(), " is not");
  const DType dt = x->dtype();
  std::string key(op.name());
  key += '/';
  key += mode_name(attrs.mode);
  key += '/';
  if (attrs.mode == InterpMode::nearest) {  // nearest moves bits: keyed by the element size
    key += 'b';
    key += std::to_string(dtype_size(dt) * 8);
  } else {
    key += dtype_name(dt);
  }
  auto source = [&] { return interpolate_source(dt, attrs.mode); };
  const unsigned grid = grid_for(be, n, kThreads);
  if (n < (int64_t(1) << 31) && x->numel() < (int64_t(1) << 31))
    be.launch(be.jit().get(key, "interp32", source), grid, kThreads, 0, static_cast<const void*>(x->raw()), y->raw(), a,
              int32_t(n));
  else
    be.launch(be.jit().get(key, "interp64", source), grid, kThreads, 0, static_cast<const void*>(x->raw()), y->raw(), a,
              int64_t(n));
  return {y};
}

}  // namespace

void register_interpolate_kernels(KernelTable& t) { t[size_t(OpKind::interpolate)] = interpolate_kernel; }

}  // namespace ember::cuda
