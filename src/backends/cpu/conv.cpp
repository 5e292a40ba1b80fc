// Convolution kernels: conv and conv_transpose (1-d, 2-d, 3-d, groups, stride, padding,
// dilation, output_padding), channels-first (NC*) layouts with PyTorch weight layouts.
//
// Everything is lowered to GEMMs on the NCHW layout, one image and group at a time:
//
//   conv:            Y[Og, P] = W[Og, Cg*KK] x col[Cg*KK, P]      col = im2col(X)
//   conv_transpose:  col[Og*KK, Pin] = W^T[Og*KK, Cg] x X[Cg, Pin] Y += col2im(col)
//
// P (output pixels) is processed in chunks small enough for the column matrix to stay in the
// L2 cache; the GEMM writes straight into the output image (row stride P), whose rows were
// pre-filled with the bias (beta = 1: a fused bias epilogue). Paths:
//   * f32 with the AVX-512 GEMM: the weights are packed once per call and the micro-kernel
//     is driven directly over K blocks of the column matrix (conv_forward_packed);
//   * the same with too few images (and groups) for the threads, e.g. batch 1: one image at a
//     time, the GEMM turned around (pixels x channels) and split inside over output
//     channels or pixels (conv_forward_image), without an im2col where the output rows suit
//     the micro-kernel (conv_forward_image_implicit);
//   * 1x1, stride-1, unpadded: no im2col, X is used in place as the [Cg, P] matrix (f32 on
//     AVX-512: read by the packed micro-kernel of conv_forward_packed, weights kept packed);
//   * one input channel per group (depthwise): a direct kernel (AVX-512 rows for f32, and a
//     whole-plane kernel for 3x3 / stride 1 / padding 1, MobileNets' case), except
//     a single-channel input with 8+ outputs (a network's first layer), where im2col + GEMM
//     with K = kernel volume is faster;
//   * a few output pixels from a large kernel (autodiff's weight-gradient convs): one GEMM
//     per input channel over every image's windows (conv_forward_small_output);
//   * otherwise im2col + gemm_f32 / gemm_f64 per (image, group, pixel chunk).
// conv_transpose's col2im gathers, for f32 with a unit width stride, every column row that
// lands on an output row in one pass (col2im_gather_f32). Work items are spread over the
// threads, each with its own thread-local workspace; when there are too few items the GEMM
// parallelises internally instead. 1-d and 2-d convs are handled as 3-d ones with leading
// unit spatial dims. f16 / bf16 are converted to f32 once, computed in f32 and rounded once.
// Inputs are made contiguous first (the small-output path reads transposed views in place).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "cpu_backend.hpp"
#include "cpu_features.hpp"
#include "gemm.hpp"
#include "thread_pool.hpp"
#include "vec/vec_math.hpp"

namespace ember::cpu {

namespace detail {
// conv_avx512.cpp (call only when features().avx512).
struct DwTap {
  const float* row;  // the input row
  int64_t off;       // output column o reads row[o * stride + off]
  int64_t lo, hi;    // the output columns [lo, hi) for which that element is inside the row
  float w;           // the tap's weight
};
void depthwise_row_f32_avx512(float* y, int64_t n, int64_t stride, const DwTap* taps, int ntaps, float bias);
void depthwise3x3_plane_f32_avx512(const float* x, int64_t H, int64_t W, const float* w, float bias, float* y);
void depthwise_cvec_f32_avx512(const float* xb, int64_t Wp, const float* w, int64_t KH, int64_t KW, int64_t sh,
                               int64_t sw, int64_t dh, int64_t dw, int64_t OH, int64_t OW, float* yb);
struct Im2colRow {
  const float* plane;  // the input plane of the row's channel
  int64_t ID, IH, IW, OH, OW;
  int64_t sd, sh, sw;        // strides (sw is 1 or 2)
  int64_t offd, offh, offw;  // kd * dd - pd, kh * dh - ph, kw * dw - pw
  int64_t ow_lo, ow_hi;      // output columns whose input column lies inside the input row
};
void im2col_row_f32_avx512(const Im2colRow& r, int64_t p0, int64_t p1, float* dst);
void add_row_f32_avx512(float* dst, const float* src, int64_t n);
struct Im2colGeom {
  const float* x;  // the first input channel plane of the image / group
  int64_t plane;   // distance between channel planes
  int64_t in[3], out[3], k[3], s[3], p[3], d[3];
};
void im2col_panels_f32_avx512(const Im2colGeom& g, int64_t r0, int64_t kc, int64_t p0, int64_t p1, int mr,
                              float* dst);
void conv_implicit_tile_f32_avx512(int m, int sw, bool split7, int64_t rowstep, int64_t kc, const float* a,
                                   const int64_t* off, const float* b, float* ct, int64_t ldc, bool accumulate,
                                   int n);
void transpose_bias_f32_avx512(const float* src, int64_t rows, int64_t cols, int64_t lds, const float* bias,
                               float* dst, int64_t ldd);
void conv_epilogue_f32_avx512(float* y, const float* res, const float* bias, int64_t rows, int64_t cols, int64_t ld,
                              float lo, float hi);
}  // namespace detail

namespace {

constexpr int64_t kColBudgetBytes = int64_t(1) << 19;  // per-thread column chunk (L2 resident)

struct ConvGeom {
  int64_t N = 0, C = 0, O = 0, G = 1, Cg = 0, Og = 0;
  // Spatial dims as (D, H, W); 1-d and 2-d convs get leading 1s.
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
  int64_t plane_stride = 0;  // im2col: distance between consecutive channels' planes (0: in_px())
  int64_t in_px() const { return in[0] * in[1] * in[2]; }
  int64_t out_px() const { return out[0] * out[1] * out[2]; }
  int64_t kk() const { return k[0] * k[1] * k[2]; }
  // A 1x1 kernel with unit stride and no padding: the conv is a plain GEMM on the layout.
  bool pointwise() const {
    for (int i = 0; i < 3; ++i)
      if (k[i] != 1 || s[i] != 1 || p[i] != 0 || in[i] != out[i]) return false;
    return true;
  }
};

ConvGeom make_geom(const Op& op) {
  const auto& a = op.attr<ConvAttrs>();
  const Shape& xs = op.in(0).shape;
  const Shape& ws = op.in(1).shape;
  const Shape& ys = op.outputs[0].shape;
  const int nd = int(a.stride.size());
  ConvGeom g;
  g.N = xs[0];
  g.C = xs[1];
  g.O = ys[1];
  g.G = a.groups;
  g.Cg = g.C / g.G;
  g.Og = g.O / g.G;
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    g.in[j] = xs[2 + i];
    g.out[j] = ys[2 + i];
    g.k[j] = ws[2 + i];
    g.s[j] = a.stride[i];
    g.p[j] = a.padding[i];
    g.d[j] = a.dilation[i];
  }
  return g;
}

// First index o in [0, n) with 0 <= o*s + off (off may be negative).
inline int64_t first_valid(int64_t off, int64_t s) { return off >= 0 ? 0 : (-off + s - 1) / s; }
// One past the last index o with o*s + off < limit (at most n).
inline int64_t end_valid(int64_t off, int64_t s, int64_t limit, int64_t n) {
  const int64_t num = limit - 1 - off;
  if (num < 0) return 0;
  return std::min(n, num / s + 1);
}

// A thread's scratch buffer; Tag tells apart buffers that are live at the same time.
template <class T, int Tag = 0>
T* workspace(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) {
    buf.clear();
    buf.shrink_to_fit();
    buf.resize(n);
  }
  return buf.data();
}

// Where the weights live, for packings kept with them (Storage::derived): their storage (null
// when they were converted or copied for this call) and their offset in it, in elements.
struct WeightStore {
  Storage* storage = nullptr;
  int64_t offset = 0;
};

// The weights packed by `pack` into `floats` values, kept with the weights from their second
// use on (inference packs once, as ONNX Runtime does at load); null when not kept (the caller
// packs into its own buffer). `hold` keeps the block alive for the call.
const float* kept_packing(const WeightStore& ws, std::initializer_list<int64_t> key, size_t floats,
                          const std::function<void(float*)>& pack, std::shared_ptr<const Storage>& hold) {
  if (!ws.storage) return nullptr;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ uint64_t(ws.offset);
  for (int64_t k : key) h = (h ^ uint64_t(k)) * 0x100000001b3ull + (h >> 29);
  hold = ws.storage->derived(h, floats * sizeof(float), [&](void* dst) { pack(static_cast<float*>(dst)); });
  return hold ? static_cast<const float*>(hold->data) : nullptr;
}

// conv_fused's epilogue (ConvAttrs::act_min / act_max and the residual input): y = clamp(y +
// residual, lo, hi), applied by each path to the output rows it has just finished, while they are
// in cache.
template <class T>
struct Epilogue {
  const T* residual = nullptr;  // the residual's element 0 (laid out as the output), or null
  const T* y0 = nullptr;        // the output's element 0
  T lo = -std::numeric_limits<T>::infinity(), hi = std::numeric_limits<T>::infinity();
  bool clamp = false;
  bool active() const { return residual || clamp; }
  // rows x cols of the output at y (row stride ld)
  void operator()(T* y, int64_t rows, int64_t cols, int64_t ld) const {
    if (active()) with_bias(y, rows, cols, ld, nullptr);
  }
  // The same with bias[r] added to row r first (bias null: none), for paths that leave the
  // bias to the epilogue instead of starting from it.
  void with_bias(T* y, int64_t rows, int64_t cols, int64_t ld, const T* bias) const {
    if ((!active() && !bias) || rows <= 0 || cols <= 0) return;
    const T* res = residual ? residual + (y - y0) : nullptr;
    if constexpr (std::is_same_v<T, float>) {
      if (features().avx512) {
        detail::conv_epilogue_f32_avx512(y, res, bias, rows, cols, ld, lo, hi);
        return;
      }
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < cols; ++i) {
        T v = y[r * ld + i] + (bias ? bias[r] : T(0)) + (res ? res[r * ld + i] : T(0));
        v = v < lo ? lo : v;  // NaN stays NaN
        y[r * ld + i] = v > hi ? hi : v;
      }
  }
};

// ---------------------------------------------------------------------------------------
// im2col: rows r in [r0, r1), r = ((c * KD + kd) * KH + kh) * KW + kw, of one image/group
// (x: its Cg planes), columns = output pixels [p0, p1); row r is at col + (r - r0) * ld.
template <class T>
void im2col(const ConvGeom& g, const T* x, int64_t r0, int64_t r1, int64_t p0, int64_t p1, T* col, int64_t ld) {
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2];
  const int64_t OH = g.out[1], OW = g.out[2];
  const int64_t plane = g.plane_stride ? g.plane_stride : g.in_px();
  if (r1 <= r0) return;
  int64_t kw = r0 % g.k[2], t = r0 / g.k[2];
  int64_t kh = t % g.k[1];
  t /= g.k[1];
  int64_t kd = t % g.k[0], c = t / g.k[0];
  bool simd = false;
  // AVX-512 rows for width stride 2 (permutes) and for short unit-stride rows (masked copies
  // beat a memcpy call and fills there; long rows are faster as memcpy's, below).
  if constexpr (std::is_same_v<T, float>) simd = (g.s[2] == 2 || (g.s[2] == 1 && g.out[2] < 32)) && features().avx512;
  for (int64_t r = r0; r < r1; ++r) {
    const T* xc = x + c * plane;
    T* row = col + (r - r0) * ld - p0;
    const int64_t woff = kw * g.d[2] - g.p[2];
    const int64_t ow_lo = std::min(OW, first_valid(woff, g.s[2]));
    const int64_t ow_hi = std::max(ow_lo, end_valid(woff, g.s[2], IW, OW));
    bool done = false;
    if constexpr (std::is_same_v<T, float>) {
      if (simd) {
        const detail::Im2colRow ir{xc, ID, IH, IW, OH, OW, g.s[0], g.s[1], g.s[2],
                                   kd * g.d[0] - g.p[0], kh * g.d[1] - g.p[1], woff, ow_lo, ow_hi};
        detail::im2col_row_f32_avx512(ir, p0, p1, row + p0);
        done = true;
      }
    }
    int64_t ow = p0 % OW, t2 = p0 / OW;
    int64_t oh = t2 % OH, od = t2 / OH;
    for (int64_t p = p0; !done && p < p1;) {
      const int64_t n = std::min(OW - ow, p1 - p);
      T* dst = row + p - ow;  // dst[o] for o in [ow, ow + n)
      const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
      const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
      const int64_t e = ow + n;
      if (id < 0 || id >= ID || ih < 0 || ih >= IH) {
        std::fill(dst + ow, dst + e, T(0));
      } else {
        const T* src = xc + (id * IH + ih) * IW + woff;  // src[o * s] for output column o
        const int64_t a = std::clamp(ow_lo, ow, e), b = std::clamp(ow_hi, a, e);
        for (int64_t o = ow; o < a; ++o) dst[o] = T(0);
        if (g.s[2] == 1) {
          if (b > a) std::memcpy(dst + a, src + a, size_t(b - a) * sizeof(T));
        } else {
          const int64_t sw = g.s[2];
          for (int64_t o = a; o < b; ++o) dst[o] = src[o * sw];
        }
        for (int64_t o = b; o < e; ++o) dst[o] = T(0);
      }
      p += n;
      ow = 0;
      if (++oh == OH) {
        oh = 0;
        ++od;
      }
    }
    // next row: (c, kd, kh, kw) += 1
    if (++kw == g.k[2]) {
      kw = 0;
      if (++kh == g.k[1]) {
        kh = 0;
        if (++kd == g.k[0]) {
          kd = 0;
          ++c;
        }
      }
    }
  }
}

// dst[i] += src[i] for i < n (AVX-512 for f32 when `simd`).
template <class T>
inline void add_row(T* dst, const T* src, int64_t n, bool simd) {
  if constexpr (std::is_same_v<T, float>) {
    if (simd) {
      if (n > 0) detail::add_row_f32_avx512(dst, src, n);
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

// col2im (scatter-add) for conv_transpose: rows (o, kd, kh, kw) for output channels [o0, o1)
// of one image/group (y: Og planes of the output), columns = input pixels [p0, p1).
template <class T>
void col2im(const ConvGeom& g, const T* col, int64_t ld, int64_t o0, int64_t o1, int64_t p0, int64_t p1, T* y) {
  const int64_t IH = g.in[1], IW = g.in[2];
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t out_px = g.out_px();
  const bool simd = std::is_same_v<T, float> && features().avx512;
  for (int64_t o = o0; o < o1; ++o) {
    T* yo = y + o * out_px;
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          const int64_t r = ((o * g.k[0] + kd) * g.k[1] + kh) * g.k[2] + kw;
          const T* row = col + r * ld - p0;
          const int64_t woff = kw * g.d[2] - g.p[2];
          const int64_t iw_lo = std::min(IW, first_valid(woff, g.s[2]));
          const int64_t iw_hi = std::max(iw_lo, end_valid(woff, g.s[2], OW, IW));
          int64_t p = p0;
          int64_t iw = p0 % IW, t = p0 / IW;
          int64_t ih = t % IH, id = t / IH;
          while (p < p1) {
            const int64_t n = std::min(IW - iw, p1 - p);
            const int64_t od = id * g.s[0] - g.p[0] + kd * g.d[0];
            const int64_t oh = ih * g.s[1] - g.p[1] + kh * g.d[1];
            if (od >= 0 && od < OD && oh >= 0 && oh < OH) {
              const T* src = row + p - iw;  // src[i] for input column i
              T* dst = yo + (od * OH + oh) * OW + woff;  // dst[i * s] for input column i
              const int64_t a = std::clamp(iw_lo, iw, iw + n), b = std::clamp(iw_hi, a, iw + n);
              if (g.s[2] == 1) {
                add_row(dst + a, src + a, b - a, simd);
              } else {
                const int64_t sw = g.s[2];
                for (int64_t i = a; i < b; ++i) dst[i * sw] += src[i];
              }
            }
            p += n;
            iw = 0;
            if (++ih == IH) {
              ih = 0;
              ++id;
            }
          }
        }
      }
    }
  }
}

// col2im of a whole image (one column chunk covers every input pixel) for a width stride of 1,
// f32 on AVX-512: each output row is its bias plus the shifted column rows of every
// (kd, kh, kw) that lands on it, summed in one pass (the depthwise row kernel with unit
// weights), instead of a fill and one read-modify-write of the row per tap.
constexpr int kGatherMaxTaps = 64;
bool col2im_gather_applies(const ConvGeom& g) {
  return features().avx512 && g.s[2] == 1 && g.kk() <= kGatherMaxTaps;
}
void col2im_gather_f32(const ConvGeom& g, const float* col, int64_t ld, int64_t o0, int64_t o1, const float* bias,
                       float* y) {
  constexpr int kMaxTaps = kGatherMaxTaps;
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2];
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t out_px = g.out_px();
  struct TapColumns {
    int64_t off, lo, hi;  // output column ow reads input column ow + off, for ow in [lo, hi)
  };
  TapColumns cols[kMaxTaps];
  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
    const int64_t off = g.p[2] - kw * g.d[2];
    const int64_t lo = std::clamp<int64_t>(-off, 0, OW);
    cols[kw] = {off, lo, std::clamp<int64_t>(IW - off, lo, OW)};
  }
  // Input index along a strided dim that output index `o` reads through kernel tap k, or -1.
  auto source = [](int64_t o, int64_t k, int64_t s, int64_t p, int64_t d, int64_t in) -> int64_t {
    const int64_t num = o + p - k * d;
    if (num < 0 || num % s != 0) return -1;
    return num / s < in ? num / s : -1;
  };
  detail::DwTap taps[kMaxTaps];
  for (int64_t o = o0; o < o1; ++o) {
    float* yo = y + o * out_px;
    for (int64_t od = 0; od < OD; ++od) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        float* yrow = yo + (od * OH + oh) * OW;
        int nt = 0;
        for (int64_t kd = 0; kd < g.k[0]; ++kd) {
          const int64_t id = source(od, kd, g.s[0], g.p[0], g.d[0], ID);
          if (id < 0) continue;
          for (int64_t kh = 0; kh < g.k[1]; ++kh) {
            const int64_t ih = source(oh, kh, g.s[1], g.p[1], g.d[1], IH);
            if (ih < 0) continue;
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const TapColumns& c = cols[kw];
              if (c.hi <= c.lo) continue;
              const int64_t r = ((o * g.k[0] + kd) * g.k[1] + kh) * g.k[2] + kw;
              taps[nt++] = {col + r * ld + (id * IH + ih) * IW, c.off, c.lo, c.hi, 1.0f};
            }
          }
        }
        detail::depthwise_row_f32_avx512(yrow, OW, 1, taps, nt, bias ? bias[o] : 0.0f);
      }
    }
  }
}

template <class T>
void gemm_t(int64_t M, int64_t N, int64_t K, const T* A, int64_t rsa, int64_t csa, const T* B, int64_t rsb,
            T beta, T* C, int64_t rsc) {
  if constexpr (std::is_same_v<T, float>)
    gemm_f32(M, N, K, 1.0f, A, rsa, csa, B, rsb, 1, beta, C, rsc, 1);
  else
    gemm_f64(M, N, K, 1.0, A, rsa, csa, B, rsb, 1, beta, C, rsc, 1);
}

int num_threads_for(int64_t macs) {
  if (ThreadPool::in_parallel_region()) return 1;
  if (macs < (int64_t(1) << 18)) return 1;
  return ThreadPool::global().size();
}

// Fills rows [0, rows) x cols [p0, p1) of y (row stride ld) with bias[r] (or 0).
template <class T>
void fill_bias(T* y, int64_t ld, int64_t rows, int64_t p0, int64_t p1, const T* bias) {
  for (int64_t r = 0; r < rows; ++r) std::fill(y + r * ld + p0, y + r * ld + p1, bias ? bias[r] : T(0));
}

// ---------------------------------------------------------------------------------------
// Direct conv for one input channel per group (depthwise, possibly with a channel
// multiplier): a GEMM with K = KK would be dominated by packing. Each output plane is the
// bias plus a sum of shifted, scaled input rows (vectorised along the output row).
template <class T>
void conv_depthwise(const ConvGeom& g, const T* x, const T* w, const T* bias, T* y, const Epilogue<T>& epi) {
  const int64_t P = g.out_px(), IP = g.in_px(), KK = g.kk();
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2];
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t sw = g.s[2];
  const int64_t planes = g.N * g.O;
  // AVX-512 rows (f32, width stride 1 or 2): the taps of a row accumulate in registers.
  constexpr int kMaxTaps = 64;
  bool simd = false;
  if constexpr (std::is_same_v<T, float>)
    simd = features().avx512 && (sw == 1 || sw == 2) && g.k[0] * g.k[1] * g.k[2] <= kMaxTaps;
  // The output columns and the input offset of each kernel column are the same in every row.
  struct TapColumns {
    int64_t off, lo, hi;
  };
  std::vector<TapColumns> tap_columns(size_t(g.k[2]));
  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
    const int64_t woff = kw * g.d[2] - g.p[2];
    const int64_t a = std::min(OW, first_valid(woff, sw));
    tap_columns[size_t(kw)] = {woff, a, std::max(a, end_valid(woff, sw, IW, OW))};
  }
  // 3x3, stride 1, padding 1, 2-d (MobileNets): a kernel for the whole plane
  const bool plane3x3 = simd && g.k[0] == 1 && g.k[1] == 3 && g.k[2] == 3 && g.s[1] == 1 && g.s[2] == 1 &&
                        g.p[0] == 0 && g.p[1] == 1 && g.p[2] == 1 && g.d[1] == 1 && g.d[2] == 1 && ID == 1;
  auto simd_plane = [&](const T* xc, const T* wo, T b, T* yo) {
    if constexpr (std::is_same_v<T, float>) {
      if (plane3x3) {
        detail::depthwise3x3_plane_f32_avx512(xc, IH, IW, wo, b, yo);
        return;
      }
      detail::DwTap taps[kMaxTaps];
      for (int64_t od = 0; od < OD; ++od) {
        for (int64_t oh = 0; oh < OH; ++oh) {
          int nt = 0;
          for (int64_t kd = 0; kd < g.k[0]; ++kd) {
            const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
            if (id < 0 || id >= ID) continue;
            for (int64_t kh = 0; kh < g.k[1]; ++kh) {
              const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
              if (ih < 0 || ih >= IH) continue;
              const float* xrow = xc + (id * IH + ih) * IW;
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                const TapColumns& tc = tap_columns[size_t(kw)];
                if (tc.hi > tc.lo) taps[nt++] = {xrow, tc.off, tc.lo, tc.hi, wo[(kd * g.k[1] + kh) * g.k[2] + kw]};
              }
            }
          }
          detail::depthwise_row_f32_avx512(yo + (od * OH + oh) * OW, OW, sw, taps, nt, b);
        }
      }
    } else {
      (void)xc, (void)wo, (void)b, (void)yo;
    }
  };
  auto scalar_plane = [&](const T* __restrict xc, const T* wo, T bv, T* __restrict yo) {
    std::fill(yo, yo + P, bv);
    for (int64_t od = 0; od < OD; ++od) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        T* __restrict yrow = yo + (od * OH + oh) * OW;
        for (int64_t kd = 0; kd < g.k[0]; ++kd) {
          const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
          if (id < 0 || id >= ID) continue;
          for (int64_t kh = 0; kh < g.k[1]; ++kh) {
            const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
            if (ih < 0 || ih >= IH) continue;
            const T* __restrict xrow = xc + (id * IH + ih) * IW;
            const T* wk = wo + (kd * g.k[1] + kh) * g.k[2];
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const int64_t woff = tap_columns[size_t(kw)].off;
              const int64_t a = tap_columns[size_t(kw)].lo, b = tap_columns[size_t(kw)].hi;
              const T wv = wk[kw];
              const T* __restrict src = xrow + woff;
              if (sw == 1) {
                for (int64_t i = a; i < b; ++i) yrow[i] += wv * src[i];
              } else {
                for (int64_t i = a; i < b; ++i) yrow[i] += wv * src[i * sw];
              }
            }
          }
        }
      }
    }
  };
  // Strided or narrow 2-d planes with one output per channel (MobileNets' stride-2 and 14x14 /
  // 7x7 layers), f32 on AVX-512: 16 channels at a time on a zero-padded pixel-major copy, one
  // channel per lane (depthwise_cvec_f32_avx512), transposed in and out in registers; the
  // per-plane kernels would use a fraction of each vector or a short row per call. Large planes
  // go by strips of output rows.
  if constexpr (std::is_same_v<T, float>) {
    if (simd && g.Og == 1 && ID == 1 && OD == 1 && (sw != 1 || OW < 32)) {
      const int64_t Wp = IW + 2 * g.p[2];
      const int64_t blocks = (g.C + 15) / 16, units = g.N * blocks;
      // Output rows a strip, so that its padded input rows (~256 KB) stay in L2.
      const int64_t span = (g.k[1] - 1) * g.d[1] + 1;  // input rows under one output row
      const int64_t strip = std::clamp<int64_t>((4096 / Wp - span) / g.s[1] + 1, 1, OH);
      const int64_t strip_rows = (strip - 1) * g.s[1] + span;
      auto run = [&](int64_t u0, int64_t u1) {
        float* xb = workspace<float, 3>(size_t(16 * (strip_rows * Wp + P + KK)));
        float* yb = xb + 16 * strip_rows * Wp;
        float* wb = yb + 16 * P;
        for (int64_t u = u0; u < u1; ++u) {
          // (the lanes of absent channels in a last block hold stale values: lanes never mix)
          const int64_t n = u / blocks, c0 = (u % blocks) * 16, nc = std::min<int64_t>(16, g.C - c0);
          for (int64_t t = 0; t < KK; ++t)
            for (int64_t j = 0; j < 16; ++j) wb[t * 16 + j] = j < nc ? w[(c0 + j) * KK + t] : 0.0f;
          const float* xc = x + (n * g.C + c0) * IP;
          for (int64_t oh0 = 0; oh0 < OH; oh0 += strip) {
            const int64_t rows = std::min(strip, OH - oh0);
            // padded input rows [oh0 * sh, + (rows - 1) * sh + span) into xb's rows
            for (int64_t i = 0; i < (rows - 1) * g.s[1] + span; ++i) {
              const int64_t h = oh0 * g.s[1] + i - g.p[1];
              float* row = xb + i * Wp * 16;
              if (h < 0 || h >= IH) {
                std::fill(row, row + Wp * 16, 0.0f);
                continue;
              }
              std::fill(row, row + g.p[2] * 16, 0.0f);
              std::fill(row + (g.p[2] + IW) * 16, row + Wp * 16, 0.0f);
              detail::transpose_bias_f32_avx512(xc + h * IW, nc, IW, IP, nullptr, row + g.p[2] * 16, 16);
            }
            detail::depthwise_cvec_f32_avx512(xb, Wp, wb, g.k[1], g.k[2], g.s[1], sw, g.d[1], g.d[2], rows, OW,
                                              yb + oh0 * OW * 16);
          }
          float* yc = y + (n * g.O + c0) * P;
          detail::transpose_bias_f32_avx512(yb, P, nc, 16, bias ? bias + c0 : nullptr, yc, P);
          epi(yc, nc, P, P);
        }
      };
      if (ThreadPool::in_parallel_region() || units * 16 * P * KK < (int64_t(1) << 16))
        run(0, units);
      else
        parallel_for(0, units, 1, run);
      return;
    }
  }
  auto body = [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t n = q / g.O, o = q % g.O;
      const T* xc = x + (n * g.C + o / g.Og) * IP;
      T* yo = y + q * P;
      if (simd)
        simd_plane(xc, w + o * KK, bias ? bias[o] : T(0), yo);
      else
        scalar_plane(xc, w + o * KK, bias ? bias[o] : T(0), yo);
      epi(yo, 1, P, P);
    }
  };
  const int64_t per_plane = std::max<int64_t>(1, P * KK);
  if (ThreadPool::in_parallel_region() || planes * per_plane < (int64_t(1) << 16))
    body(0, planes);
  else
    parallel_for(0, planes, std::max<int64_t>(1, (int64_t(1) << 15) / per_plane), body);
}

// ---------------------------------------------------------------------------------------
// fn(u) for u in [0, units), claimed one at a time by up to nth threads: a thread that starts
// late (or shares its core) does less.
void run_units_dynamic(int64_t units, int nth, const std::function<void(int64_t)>& fn) {
  if (nth <= 1 || units <= 1) {
    for (int64_t u = 0; u < units; ++u) fn(u);
    return;
  }
  std::atomic<int64_t> next{0};
  parallel_for(0, std::min<int64_t>(nth, units), 1, [&](int64_t, int64_t) {
    for (int64_t u = next.fetch_add(1); u < units; u = next.fetch_add(1)) fn(u);
  });
}

// f32 conv through the AVX-512 GEMM micro-kernel directly: the weights are packed into
// MR-row micro-panels once per call (shared by every thread and image), and each K block of
// the column matrix (row-major, L2 resident; for a pointwise conv the input's own channel rows,
// no im2col) is read in place by the micro-kernel, which accumulates straight into the output
// image (beta = 0 for the first block); the bias, residual and clamp follow per work unit, while
// its output rows are in cache. Work units (image, group, pixel chunk[, strip range]) are spread
// over the threads, each with its own column buffer.
const detail::GemmKernelSet<float>* packed_conv_kernels() {
  if (detail::gemm_best_isa() < detail::kIsaAvx512) return nullptr;
  const detail::GemmKernelSet<float>* ks = detail::gemm_kernels_avx512_f32();
  return ks && ks->kernel && ks->pack_a && ks->mr > 0 && ks->nr > 0 ? ks : nullptr;
}

void conv_forward_packed(const ConvGeom& g, const float* x, const float* w, const float* bias, float* y,
                         const detail::GemmKernelSet<float>& ks, int nth, const WeightStore& ws,
                         const Epilogue<float>& epi) {
  const int64_t MR = ks.mr, NR = ks.nr;
  const int64_t P = g.out_px(), IP = g.in_px(), KK = g.kk();
  const int64_t Kdim = g.Cg * KK;
  const int64_t ng = g.N * g.G;
  // K blocks of at most ~256 rows, equal sized.
  const int64_t nkb = std::max<int64_t>(1, (Kdim + 255) / 256);
  const int64_t kcb = (Kdim + nkb - 1) / nkb;
  const int64_t strips = (g.Og + MR - 1) / MR;
  const bool direct = g.pointwise();  // no im2col: the micro-kernel reads the input rows in place

  // Packed weights: group gi, K block at row k0 (kc rows), strip st at
  // apack + gi * a_group + strips * k0 * MR + st * kc * MR.
  const int64_t a_group = strips * Kdim * MR;
  auto pack_weights = [&](float* apack, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t gi = t / strips, st = t % strips;
      const int64_t m = std::min<int64_t>(MR, g.Og - st * MR);
      const float* wg = w + (gi * g.Og + st * MR) * Kdim;
      for (int64_t k0 = 0; k0 < Kdim; k0 += kcb) {
        const int64_t kc = std::min(kcb, Kdim - k0);
        ks.pack_a(wg + k0, Kdim, 1, m, kc, apack + gi * a_group + strips * k0 * MR + st * kc * MR);
      }
    }
  };
  std::shared_ptr<const Storage> kept;
  const float* apack = kept_packing(
      ws, {1, g.G, g.Og, Kdim, MR, kcb}, size_t(g.G * a_group),
      [&](float* dst) { pack_weights(dst, 0, g.G * strips); }, kept);
  std::vector<float> own;
  if (!apack) {
    own.resize(size_t(g.G * a_group));
    if (nth > 1 && g.G * strips > 1 && g.G * a_group > 65536)
      parallel_for(0, g.G * strips, 1, [&](int64_t t0, int64_t t1) { pack_weights(own.data(), t0, t1); });
    else
      pack_weights(own.data(), 0, g.G * strips);
    apack = own.data();
  }

  // Pixel chunks of whole micro-panels (~ 384 pixels); more of them, or strip ranges, when
  // there are too few units for the threads.
  int64_t nchunks = std::max<int64_t>(1, (P + 383) / 384);
  if (nth > 1 && !(ng % nth == 0 || ng >= 4 * nth)) {
    int64_t c = nchunks;
    while ((ng * c) % nth != 0 && c < nchunks + nth) ++c;
    if ((ng * c) % nth == 0 && P / c >= 2 * NR) nchunks = c;
  }
  const int64_t len = (((P + nchunks - 1) / nchunks) + NR - 1) / NR * NR;
  nchunks = (P + len - 1) / len;
  const int64_t items = ng * nchunks;
  int64_t sgroups = 1;
  if (nth > 1 && items < 2 * nth) sgroups = std::min<int64_t>(strips, (2 * nth + items - 1) / items);
  const int64_t units = items * sgroups;

  auto run_units = [&](int64_t u0, int64_t u1) {
    float* col = direct ? nullptr : workspace<float>(size_t(kcb * len));
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t sgi = u % sgroups, it = u / sgroups;
      const int64_t s0 = strips * sgi / sgroups, s1 = strips * (sgi + 1) / sgroups;
      if (s1 <= s0) continue;
      const int64_t chunk = it % nchunks, ngi = it / nchunks;
      const int64_t n = ngi / g.G, gi = ngi % g.G;
      const int64_t p0 = chunk * len, p1 = std::min(P, p0 + len), cl = p1 - p0;
      const float* xg = x + (n * g.C + gi * g.Cg) * IP;
      float* yg = y + (n * g.O + gi * g.Og) * P;
      const int64_t o0 = s0 * MR, o1 = std::min(g.Og, s1 * MR);
      const float* ag = apack + gi * a_group;
      for (int64_t k0 = 0; k0 < Kdim; k0 += kcb) {
        const int64_t kc = std::min(kcb, Kdim - k0);
        // The K block's column rows: the input's channel rows themselves for a pointwise conv.
        const float* b = col;
        int64_t ldb = cl;
        if (direct) {
          b = xg + k0 * IP + p0;
          ldb = IP;
        } else {
          im2col(g, xg, k0, k0 + kc, p0, p1, col, cl);
        }
        const float beta = k0 == 0 ? 0.0f : 1.0f;
        for (int64_t st = s0; st < s1; ++st) {
          const int m = int(std::min<int64_t>(MR, g.Og - st * MR));
          const float* ap = ag + strips * k0 * MR + st * kc * MR;
          float* crow = yg + st * MR * P + p0;
          for (int64_t j = 0; j < cl; j += NR) {
            const int nn = int(std::min<int64_t>(NR, cl - j));
            ks.kernel(kc, ap, b + j, ldb, crow + j, P, 1.0f, beta, m, nn);
          }
        }
      }
      // the bias, residual and clamp while the rows are in cache
      epi.with_bias(yg + o0 * P + p0, o1 - o0, cl, P, bias ? bias + gi * g.Og + o0 : nullptr);
    }
  };
  if (nth > 1 && units > 1)
    parallel_for(0, units, 1, run_units);
  else
    run_units(0, units);
}

// The weights of the single-image paths below as NR-channel panels (Kdim x NR each, panel j of
// group gi at gi * Np * Kdim + j * Kdim * NR): kept with the weights where they are
// (kept_packing), else packed in each call.
class ChannelPanels {
 public:
  ChannelPanels(const ConvGeom& g, const detail::GemmKernelSet<float>& ks, const float* w, int nth,
                const WeightStore& ws)
      : g_(g), ks_(ks), w_(w), nth_(nth), Kdim_(g.Cg * g.kk()), NR_(ks.nr), Np_((g.Og + ks.nr - 1) / ks.nr * ks.nr) {
    kept_ = kept_packing(
        ws, {2, g.G, g.Og, Kdim_, NR_}, size_t(g.G * Np_ * Kdim_),
        [&](float* dst) {
          for (int64_t gi = 0; gi < g.G; ++gi) pack(gi, 0, g.Og, dst + gi * Np_ * Kdim_);
        },
        hold_);
  }
  // Group gi's panels of channels [c0, c0 + cols) (c0 a multiple of NR): kept, or packed into
  // the calling thread's buffer.
  const float* unit(int64_t gi, int64_t c0, int64_t cols) const {
    if (kept_) return kept_ + gi * Np_ * Kdim_ + c0 * Kdim_;
    float* dst = workspace<float>(size_t(Kdim_ * ((cols + NR_ - 1) / NR_) * NR_));
    pack(gi, c0, cols, dst);
    return dst;
  }
  // All of group gi's panels: kept, or packed over the threads into a shared buffer.
  const float* all(int64_t gi) const {
    if (kept_) return kept_ + gi * Np_ * Kdim_;
    float* dst = workspace<float, 2>(size_t(Np_ * Kdim_));
    run_units_dynamic(Np_ / NR_, nth_, [&](int64_t j) {
      pack(gi, j * NR_, std::min(NR_, g_.Og - j * NR_), dst + j * Kdim_ * NR_);
    });
    return dst;
  }

 private:
  void pack(int64_t gi, int64_t c0, int64_t cols, float* dst) const {
    ks_.pack_b(w_ + (gi * g_.Og + c0) * Kdim_, 1, Kdim_, Kdim_, cols, dst);
  }
  const ConvGeom& g_;
  const detail::GemmKernelSet<float>& ks_;
  const float* w_;
  int nth_;
  int64_t Kdim_, NR_, Np_;
  std::shared_ptr<const Storage> hold_;
  const float* kept_ = nullptr;
};

// ---------------------------------------------------------------------------------------
// f32 conv of one image at a time (batch 1) through the AVX-512 micro-kernel, with the GEMM
// turned around:
//
//   Y^T[P, Og] = col^T[P, K] x W^T[K, Og]
//
// The pixels run down the micro-kernel's MR = 14 rows and the output channels along its
// NR = 32 columns: CNN channel counts are multiples of 32 and their pixel counts often
// multiples of 7 (a 7x7 map has P = 49: 88% of 14-row tiles used, 77% of 32-wide ones). The
// column matrix is written by im2col_panels_f32_avx512 K block by K block, directly as
// MR-pixel micro-panels; the weights are packed into NR-channel panels (whole rows at a
// time: a large layer's weights stream from memory once, sequentially). The work is split
// over the threads along whichever side is larger, and the smaller side is packed once up
// front and shared:
//   * channel split (fewer pixels than channels, the late layers): the whole column matrix
//     is packed first (K blocks over the threads); then each unit of channel panels packs
//     its own weights (L2 resident) and multiplies them with every pixel;
//   * pixel split: the weights are packed first (channel panels over the threads); each
//     pixel chunk then builds its own column blocks.
// Products accumulate in a pixel-major buffer, transposed into the output planes with the
// bias at the end. Units are claimed dynamically, so a thread that starts late (or shares
// its core) does less. Requires a micro-kernel of at most 16 rows (AVX-512: 14).
constexpr int64_t kImageKBlock = 256;  // K rows per block

void conv_forward_image(const ConvGeom& g, const float* x, const float* w, const float* bias, float* y,
                        const detail::GemmKernelSet<float>& ks, int nth, const WeightStore& ws,
                        const Epilogue<float>& epi) {
  const int64_t MR = ks.mr, NR = ks.nr;
  const int64_t P = g.out_px(), IP = g.in_px(), Og = g.Og;
  const int64_t Kdim = g.Cg * g.kk();
  const int64_t nkb = std::max<int64_t>(1, (Kdim + kImageKBlock - 1) / kImageKBlock);
  const int64_t kcb = (Kdim + nkb - 1) / nkb;
  const int64_t mpanels = (P + MR - 1) / MR, npanels = (Og + NR - 1) / NR;
  const int64_t Mp = mpanels * MR, Np = npanels * NR;
  const bool channel_split = Mp < Np;

  // Column block of pixels [p0, p1) and K rows [k0, k0 + kc) as MR-pixel micro-panels
  // (panel i at dst + i * kc * MR).
  auto build_a = [&](const float* xg, int64_t p0, int64_t p1, int64_t k0, int64_t kc, float* dst) {
    detail::Im2colGeom ig{xg, IP, {}, {}, {}, {}, {}, {}};
    for (int i = 0; i < 3; ++i) {
      ig.in[i] = g.in[i], ig.out[i] = g.out[i], ig.k[i] = g.k[i];
      ig.s[i] = g.s[i], ig.p[i] = g.p[i], ig.d[i] = g.d[i];
    }
    detail::im2col_panels_f32_avx512(ig, k0, kc, p0, p1, int(MR), dst);
  };
  // Weights of channels [c0, c0 + cols), all K rows, as NR-channel panels of Kdim x NR at dst
  // (K block k0 of panel j at dst + j * Kdim * NR + k0 * NR).
  const ChannelPanels panels(g, ks, w, nth, ws);
  // ct[rows, cols] (row stride ldc) (+)= A block x B block (panel j at bp + j * Kdim * NR).
  auto multiply = [&](const float* ap, int64_t rows, const float* bp, int64_t cols, int64_t kc, float beta,
                      float* ct, int64_t ldc) {
    for (int64_t j = 0; j * NR < cols; ++j) {
      const int n = int(std::min(NR, cols - j * NR));
      for (int64_t i = 0; i * MR < rows; ++i) {
        const int m = int(std::min(MR, rows - i * MR));
        ks.kernel(kc, ap + i * kc * MR, bp + j * Kdim * NR, NR, ct + i * MR * ldc + j * NR, ldc, 1.0f, beta, m, n);
      }
    }
  };

  for (int64_t ngi = 0; ngi < g.N * g.G; ++ngi) {
    const int64_t n = ngi / g.G, gi = ngi % g.G;
    const float* xg = x + (n * g.C + gi * g.Cg) * IP;
    const float* bg = bias ? bias + gi * Og : nullptr;
    float* yg = y + (n * g.O + gi * Og) * P;
    if (channel_split) {
      // K block kb of the column matrix at ap + k0 * Mp; the products in ct[P, Og].
      float* ap = workspace<float, 1>(size_t(Mp * Kdim + P * Og));
      float* ct = ap + Mp * Kdim;
      run_units_dynamic(nkb, nth, [&](int64_t kb) {
        const int64_t k0 = kb * kcb, kc = std::min(kcb, Kdim - k0);
        build_a(xg, 0, P, k0, kc, ap + k0 * Mp);
      });
      const int64_t per_unit = std::max<int64_t>(1, npanels / (8 * std::max(nth, 1)));
      run_units_dynamic((npanels + per_unit - 1) / per_unit, nth, [&](int64_t u) {
        const int64_t c0 = u * per_unit * NR, cols = std::min(per_unit * NR, Og - c0);
        const float* bp = panels.unit(gi, c0, cols);
        for (int64_t k0 = 0; k0 < Kdim; k0 += kcb) {
          const int64_t kc = std::min(kcb, Kdim - k0);
          multiply(ap + k0 * Mp, P, bp + k0 * NR, cols, kc, k0 == 0 ? 0.0f : 1.0f, ct + c0, Og);
        }
        detail::transpose_bias_f32_avx512(ct + c0, P, cols, Og, bg ? bg + c0 : nullptr, yg + c0 * P, P);
        epi(yg + c0 * P, cols, P, P);
      });
    } else {
      const float* bp = panels.all(gi);
      // Chunks of at most 16 micro-panels (224 pixels), four per thread where there are enough.
      const int64_t ppc = std::clamp<int64_t>((mpanels + 4 * nth - 1) / (4 * nth), 1, 16);
      const int64_t len = ppc * MR;
      run_units_dynamic((P + len - 1) / len, nth, [&](int64_t u) {
        const int64_t p0 = u * len, p1 = std::min(P, p0 + len), cl = p1 - p0;
        float* apk = workspace<float>(size_t(kcb * len + len * Og));
        float* ct = apk + kcb * len;
        for (int64_t k0 = 0; k0 < Kdim; k0 += kcb) {
          const int64_t kc = std::min(kcb, Kdim - k0);
          build_a(xg, p0, p1, k0, kc, apk);
          multiply(apk, cl, bp + k0 * NR, Og, kc, k0 == 0 ? 0.0f : 1.0f, ct, Og);
        }
        detail::transpose_bias_f32_avx512(ct, cl, Og, Og, bg, yg + p0, P);
        epi(yg + p0, Og, cl, P);
      });
    }
  }
}

// The same single-image conv without an im2col, for width strides 1 and 2 when the output
// rows fill most of the micro-kernel's 14 rows (widths 14, 28, 56, 112, ...; or 7, two rows a
// panel, in 2-d): each micro-panel is up to 14 pixels of one output row, whose column-matrix
// values for K row (c, kd, kh, kw) are 14 consecutive (or every other) elements of a
// zero-padded copy of the input (for width 7: two runs of 7, a padded row stride apart), at a
// fixed offset from the panel's first pixel. The micro-kernel (conv_implicit_tile_f32_avx512)
// broadcasts them from there through a table of those offsets, so the column matrix is never
// written. Splits, weight packing and the final transpose are as in conv_forward_image.
bool implicit_applies(const ConvGeom& g, const detail::GemmKernelSet<float>& ks) {
  if (ks.mr != 14 || ks.nr != 32 || (g.s[2] != 1 && g.s[2] != 2)) return false;
  const int64_t OW = g.out[2], tile_rows = (OW + 13) / 14 * 14;
  return (OW >= 14 && 8 * OW >= 7 * tile_rows) || (OW == 7 && g.out[0] == 1);
}

void conv_forward_image_implicit(const ConvGeom& g, const float* x, const float* w, const float* bias, float* y,
                                 const detail::GemmKernelSet<float>& ks, int nth, const WeightStore& ws,
                                 const Epilogue<float>& epi) {
  constexpr int64_t MR = 14, NR = 32;
  const int64_t P = g.out_px(), IP = g.in_px(), Og = g.Og;
  const int64_t Kdim = g.Cg * g.kk();
  const int64_t nkb = std::max<int64_t>(1, (Kdim + kImageKBlock - 1) / kImageKBlock);
  const int64_t kcb = (Kdim + nkb - 1) / nkb;
  const int64_t OH = g.out[1], OW = g.out[2];
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2];
  const int64_t Dp = ID + 2 * g.p[0], Hp = IH + 2 * g.p[1], Wp = IW + 2 * g.p[2];
  const int64_t plane = Dp * Hp * Wp;
  const bool pairs = OW == 7;                       // two output rows a panel
  const int64_t ppr = (OW + MR - 1) / MR;           // pixel panels per output row
  const int64_t mpanels = pairs ? (OH + 1) / 2 : g.out[0] * OH * ppr;
  const int64_t npanels = (Og + NR - 1) / NR, Np = npanels * NR;
  const bool channel_split = mpanels * MR < Np;
  const int sw = int(g.s[2]);

  // Padded-input offset of K row (c, kd, kh, kw) from a pixel's window corner.
  std::vector<int64_t> off(static_cast<size_t>(Kdim));
  for (int64_t c = 0, r = 0; c < g.Cg; ++c)
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw, ++r)
          off[size_t(r)] = c * plane + (kd * g.d[0] * Hp + kh * g.d[1]) * Wp + kw * g.d[2];
  // Pixel panel q: its first output pixel, its size and its window corner in the padded input.
  struct Panel {
    int64_t start, base;
    int m;
  };
  auto panel = [&](int64_t q) {
    if (pairs) return Panel{2 * q * OW, 2 * q * g.s[1] * Wp, int(std::min<int64_t>(2, OH - 2 * q) * OW)};
    const int64_t t = q / ppr, piece = q % ppr;
    const int64_t od = t / OH, oh = t % OH, ow = piece * MR;
    return Panel{t * OW + ow, ((od * g.s[0]) * Hp + oh * g.s[1]) * Wp + ow * sw, int(std::min(MR, OW - ow))};
  };
  // ct rows of panels [q0, q1) (ct row 0 = pixel `first`) (+)= K block [k0, k0 + kc) of the
  // products with channel panels [0, cols) of bp (panel j at bp + j * Kdim * NR).
  auto multiply = [&](const float* xp, int64_t q0, int64_t q1, int64_t first, const float* bp, int64_t cols,
                      int64_t k0, int64_t kc, float* ct, int64_t ldc) {
    for (int64_t j = 0; j * NR < cols; ++j) {
      const int n = int(std::min(NR, cols - j * NR));
      for (int64_t q = q0; q < q1; ++q) {
        const Panel pn = panel(q);
        detail::conv_implicit_tile_f32_avx512(pn.m, sw, pairs, g.s[1] * Wp, kc, xp + pn.base, off.data() + k0,
                                              bp + j * Kdim * NR + k0 * NR, ct + (pn.start - first) * ldc + j * NR,
                                              ldc, k0 > 0, n);
      }
    }
  };
  const ChannelPanels panels(g, ks, w, nth, ws);

  for (int64_t ngi = 0; ngi < g.N * g.G; ++ngi) {
    const int64_t n = ngi / g.G, gi = ngi % g.G;
    const float* xg = x + (n * g.C + gi * g.Cg) * IP;
    const float* bg = bias ? bias + gi * Og : nullptr;
    float* yg = y + (n * g.O + gi * Og) * P;
    // The padded input (the input itself when there is no padding), then the products
    // (channel split).
    const bool padded = g.p[0] || g.p[1] || g.p[2];
    float* buf = workspace<float, 1>(size_t((padded ? g.Cg * plane : 0) + (channel_split ? P * Og : 0)));
    float* rest = buf + (padded ? g.Cg * plane : 0);
    const float* xp = padded ? buf : xg;
    // (a small input is copied by the caller alone: a dispatch would cost more)
    if (padded) {
      run_units_dynamic((g.Cg + 7) / 8, g.Cg * plane > (int64_t(1) << 17) ? nth : 1, [&](int64_t u) {
        for (int64_t c = u * 8; c < std::min(g.Cg, u * 8 + 8); ++c) {
          for (int64_t dz = 0; dz < Dp; ++dz) {
            for (int64_t hz = 0; hz < Hp; ++hz) {
              float* row = buf + c * plane + (dz * Hp + hz) * Wp;
              const int64_t id = dz - g.p[0], ih = hz - g.p[1];
              if (id < 0 || id >= ID || ih < 0 || ih >= IH) {
                std::fill(row, row + Wp, 0.0f);
                continue;
              }
              std::fill(row, row + g.p[2], 0.0f);
              std::memcpy(row + g.p[2], xg + c * IP + (id * IH + ih) * IW, size_t(IW) * sizeof(float));
              std::fill(row + g.p[2] + IW, row + Wp, 0.0f);
            }
          }
        }
      });
    }
    if (channel_split) {
      float* ct = rest;
      const int64_t per_unit = std::max<int64_t>(1, npanels / (8 * std::max(nth, 1)));
      run_units_dynamic((npanels + per_unit - 1) / per_unit, nth, [&](int64_t u) {
        const int64_t c0 = u * per_unit * NR, cols = std::min(per_unit * NR, Og - c0);
        const float* bp = panels.unit(gi, c0, cols);
        for (int64_t k0 = 0; k0 < Kdim; k0 += kcb)
          multiply(xp, 0, mpanels, 0, bp, cols, k0, std::min(kcb, Kdim - k0), ct + c0, Og);
        detail::transpose_bias_f32_avx512(ct + c0, P, cols, Og, bg ? bg + c0 : nullptr, yg + c0 * P, P);
        epi(yg + c0 * P, cols, P, P);
      });
    } else {
      const float* bp = panels.all(gi);
      // Runs of at most 16 pixel panels, four per thread where there are enough.
      const int64_t ppc = std::clamp<int64_t>((mpanels + 4 * nth - 1) / (4 * nth), 1, 16);
      run_units_dynamic((mpanels + ppc - 1) / ppc, nth, [&](int64_t u) {
        const int64_t q0 = u * ppc, q1 = std::min(mpanels, q0 + ppc);
        const Panel last = panel(q1 - 1);
        const int64_t first = panel(q0).start, cl = last.start + last.m - first;
        float* ct = workspace<float>(size_t(cl * Og));
        for (int64_t k0 = 0; k0 < Kdim; k0 += kcb)
          multiply(xp, q0, q1, first, bp, Og, k0, std::min(kcb, Kdim - k0), ct, Og);
        detail::transpose_bias_f32_avx512(ct, cl, Og, Og, bg, yg + first, P);
        epi(yg + first, Og, cl, P);
      });
    }
  }
}

// ---------------------------------------------------------------------------------------
// Small outputs of large kernels. Autodiff computes a convolution's weight gradient as a conv
// with batch and channels swapped, whose kernel is the forward's output image and whose
// output is the forward's (small) kernel: the usual lowering would give GEMMs with only P
// (e.g. 9) columns and an im2col of P-element rows. Here the roles are turned around once
// more: for each input channel c, the windows of every image form the column matrix of the
// "dual" conv (kernel = this conv's output, output = this conv's kernel),
//   colT[(n, t), r] = x[n, c, t * stride + r * dilation - padding]   ((N P) x KK),
// and acc[(n, t), o] += colT x W[o, c, :]^T is one GEMM of (N P) x O x KK per channel. The
// channels are split over the threads, each summing into its own accumulator.
template <class T>
void gemm_strided(int64_t M, int64_t N, int64_t K, const T* A, int64_t rsa, int64_t csa, const T* B, int64_t rsb,
                  int64_t csb, T beta, T* C, int64_t rsc) {
  if constexpr (std::is_same_v<T, float>)
    gemm_f32(M, N, K, 1.0f, A, rsa, csa, B, rsb, csb, beta, C, rsc, 1);
  else
    gemm_f64(M, N, K, 1.0, A, rsa, csa, B, rsb, csb, beta, C, rsc, 1);
}

bool small_output_conv(const ConvGeom& g) {
  const int64_t P = g.out_px(), KK = g.kk();
  return g.G == 1 && !g.pointwise() && P < 32 && KK >= 4 * P;
}

// x and w may have any strides along their first two dims (x[n, c] at x + n * xs0 + c * xs1,
// w[o, c] at w + o * ws0 + c * ws1), e.g. the transposed views autodiff hands over; their
// spatial dims are contiguous.
template <class T>
void conv_forward_small_output(const ConvGeom& g, const T* x, int64_t xs0, int64_t xs1, const T* w, int64_t ws0,
                               int64_t ws1, const T* bias, T* y) {
  const int64_t P = g.out_px(), KK = g.kk();
  const int64_t rows = g.N * P;  // (n, t)
  ConvGeom dual;
  dual.Cg = g.N;
  dual.plane_stride = xs0;
  for (int i = 0; i < 3; ++i) {
    dual.in[i] = g.in[i];
    dual.k[i] = g.out[i];
    dual.out[i] = g.k[i];
    dual.s[i] = g.d[i];
    dual.d[i] = g.s[i];
    dual.p[i] = g.p[i];
  }
  // Rows of colT per block (the whole matrix when it fits the L2 budget).
  const int64_t block =
      std::clamp<int64_t>(4 * kColBudgetBytes / int64_t(sizeof(T)) / std::max<int64_t>(KK, 1), 1, rows);
  const int nth = num_threads_for(g.N * g.O * P * g.C * KK);
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(nth, g.C));
  std::vector<T> acc(size_t(parts * rows * g.O));
  auto run_part = [&](int64_t part) {
    T* a = acc.data() + part * rows * g.O;
    T* col = workspace<T>(size_t(block * KK));
    const int64_t c0 = g.C * part / parts, c1 = g.C * (part + 1) / parts;
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t r0 = 0; r0 < rows; r0 += block) {
        const int64_t r1 = std::min(rows, r0 + block);
        im2col(dual, x + c * xs1, r0, r1, 0, KK, col, KK);
        // acc[r, o] (+)= sum_k colT[r, k] W[o, c, k]
        gemm_strided<T>(r1 - r0, g.O, KK, col, KK, 1, w + c * ws1, 1, ws0, c == c0 ? T(0) : T(1), a + r0 * g.O, g.O);
      }
    }
    if (c1 <= c0) std::fill(a, a + rows * g.O, T(0));
  };
  if (parts > 1)
    parallel_for(0, parts, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) run_part(p);
    });
  else
    run_part(0);
  // y[n, o, t] = bias[o] + sum over parts of acc[(n, t), o]
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t t = 0; t < P; ++t) {
        T v = bias ? bias[o] : T(0);
        for (int64_t part = 0; part < parts; ++part) v += acc[size_t((part * rows + n * P + t) * g.O + o)];
        y[(n * g.O + o) * P + t] = v;
      }
}

// ---------------------------------------------------------------------------------------
template <class T>
void conv_forward(const ConvGeom& g, const T* x, const T* w, const T* bias, T* y, const WeightStore& ws,
                  const Epilogue<T>& epi) {
  const int64_t P = g.out_px(), IP = g.in_px(), KK = g.kk();
  const int64_t Kdim = g.Cg * KK;
  const int64_t ng = g.N * g.G;
  if (ng == 0 || P == 0) return;
  if (small_output_conv(g)) {
    conv_forward_small_output<T>(g, x, g.C * IP, IP, w, g.C * KK, KK, bias, y);
    epi(y, 1, g.N * g.O * P, 0);
    return;
  }
  if (g.Cg == 1 && !g.pointwise() && !(g.G == 1 && g.Og >= 8)) {
    conv_depthwise<T>(g, x, w, bias, y, epi);
    return;
  }
  const bool direct = g.pointwise();
  const int nth = num_threads_for(ng * g.Og * P * std::max<int64_t>(Kdim, 1));
  if constexpr (std::is_same_v<T, float>) {
    // Pointwise (1x1) convs: the packed micro-kernel reads the input's channel rows in place,
    // with the weights packed once (kept) and the bias and epilogue applied per output block.
    if (direct && Kdim >= 8 && g.Og >= 4) {
      if (const auto* ks = packed_conv_kernels()) {
        conv_forward_packed(g, x, w, bias, y, *ks, nth, ws, epi);
        return;
      }
    }
    // Worth it when the GEMM has some depth; tiny channel counts stay on the plain path.
    if (!direct && Kdim >= 16 && g.Og >= 4) {
      if (const auto* ks = packed_conv_kernels()) {
        // Too few images and groups to go round the threads: one at a time, split inside
        // (without an im2col where the output rows suit it); with the im2col, unless the
        // channels are few and the pixels many, where the usual orientation needs no
        // transpose and a cheaper im2col.
        if (ng < 2 * nth && ks->pack_b && ks->mr <= 16 && implicit_applies(g, *ks))
          conv_forward_image_implicit(g, x, w, bias, y, *ks, nth, ws, epi);
        else if (ng < 2 * nth && ks->pack_b && ks->mr <= 16 && (g.Og >= 128 || P <= 4 * g.Og))
          conv_forward_image(g, x, w, bias, y, *ks, nth, ws, epi);
        else
          conv_forward_packed(g, x, w, bias, y, *ks, nth, ws, epi);
        return;
      }
    }
  }

  // Pixel chunks per (image, group).
  int64_t max_len = direct ? P : std::max<int64_t>(64, kColBudgetBytes / int64_t(sizeof(T)) / std::max<int64_t>(Kdim, 1));
  int64_t nchunks = (P + max_len - 1) / max_len;
  bool items_parallel = nth > 1 && ng >= nth && (ng % nth == 0 || ng >= 4 * nth);
  if (nth > 1 && !items_parallel) {
    // Split the pixels further so that the items divide evenly over the threads.
    int64_t c = nchunks;
    while ((ng * c) % nth != 0) ++c;
    if (P / c >= 64 || ng * c >= 4 * nth) {
      nchunks = std::max(c, nchunks);
      items_parallel = ng * nchunks >= nth;
    }
  }
  const int64_t len = (P + nchunks - 1) / nchunks;
  const int64_t items = ng * nchunks;
  const T beta = bias ? T(1) : T(0);

  auto run_item = [&](int64_t it, bool inner_parallel) {
    const int64_t chunk = it % nchunks, ngi = it / nchunks;
    const int64_t n = ngi / g.G, gi = ngi % g.G;
    const int64_t p0 = chunk * len, p1 = std::min(P, p0 + len);
    if (p1 <= p0) return;
    const T* xg = x + (n * g.C + gi * g.Cg) * IP;
    const T* wg = w + gi * g.Og * Kdim;
    T* yg = y + (n * g.O + gi * g.Og) * P;
    if (bias) fill_bias(yg, P, g.Og, p0, p1, bias + gi * g.Og);
    if (direct) {
      gemm_t<T>(g.Og, p1 - p0, Kdim, wg, Kdim, 1, xg + p0, IP, beta, yg + p0, P);
      epi(yg + p0, g.Og, p1 - p0, P);
      return;
    }
    const int64_t cl = p1 - p0;
    T* col = workspace<T>(size_t(Kdim * cl));
    if (inner_parallel && g.Cg > 1) {
      parallel_for(0, g.Cg, 1, [&](int64_t c0, int64_t c1) {
        im2col(g, xg, c0 * KK, c1 * KK, p0, p1, col + c0 * KK * cl, cl);
      });
    } else {
      im2col(g, xg, 0, Kdim, p0, p1, col, cl);
    }
    gemm_t<T>(g.Og, cl, Kdim, wg, Kdim, 1, col, cl, beta, yg + p0, P);
    epi(yg + p0, g.Og, cl, P);
  };

  if (items_parallel) {
    parallel_for(0, items, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t it = i0; it < i1; ++it) run_item(it, false);
    });
  } else {
    for (int64_t it = 0; it < items; ++it) run_item(it, nth > 1);
  }
}

template <class T>
void conv_transpose_forward(const ConvGeom& g, const T* x, const T* w, const T* bias, T* y) {
  // Here g.in / g.out are the transpose's input / output spatial sizes; the weight is
  // [C, Og, *k]: group gi's block is a [Cg, Og*KK] row-major matrix.
  const int64_t P = g.out_px(), IP = g.in_px(), KK = g.kk();
  const int64_t Mdim = g.Og * KK;
  const int64_t ng = g.N * g.G;
  if (ng == 0) return;
  const bool direct = g.pointwise();
  const int nth = num_threads_for(ng * Mdim * IP * std::max<int64_t>(g.Cg, 1));
  const bool items_parallel = nth > 1 && ng >= nth && (ng % nth == 0 || ng >= 4 * nth);

  const int64_t max_len =
      direct ? std::max<int64_t>(IP, 1) : std::max<int64_t>(64, kColBudgetBytes / int64_t(sizeof(T)) / std::max<int64_t>(Mdim, 1));
  // One column chunk per image and a gathering col2im: the output needs no fill first.
  const bool gather = std::is_same_v<T, float> && !direct && IP <= max_len && col2im_gather_applies(g);

  auto run_item = [&](int64_t ngi, bool inner_parallel) {
    const int64_t n = ngi / g.G, gi = ngi % g.G;
    const T* xg = x + (n * g.C + gi * g.Cg) * IP;
    const T* wg = w + gi * g.Cg * Mdim;
    T* yg = y + (n * g.O + gi * g.Og) * P;
    const T* bg = bias ? bias + gi * g.Og : nullptr;
    if (direct) {
      if (bg) fill_bias(yg, P, g.Og, 0, P, bg);
      // Y[Og, P] = W^T[Og, Cg] X[Cg, P]; element (o, c) of W^T is wg[c * Og + o].
      gemm_t<T>(g.Og, P, g.Cg, wg, 1, g.Og, xg, IP, bg ? T(1) : T(0), yg, P);
      return;
    }
    if (!gather) {
      if (inner_parallel) {
        parallel_for(0, g.Og, std::max<int64_t>(1, 32768 / std::max<int64_t>(P, 1)),
                     [&](int64_t o0, int64_t o1) { fill_bias(yg + o0 * P, P, o1 - o0, 0, P, bg ? bg + o0 : nullptr); });
      } else {
        fill_bias(yg, P, g.Og, 0, P, bg);
      }
    }
    for (int64_t p0 = 0; p0 < IP; p0 += max_len) {
      const int64_t p1 = std::min(IP, p0 + max_len), cl = p1 - p0;
      T* col = workspace<T>(size_t(Mdim * cl));
      // col[(o,kk), p] = sum_c W[c, (o,kk)] X[c, p]
      gemm_t<T>(Mdim, cl, g.Cg, wg, 1, Mdim, xg + p0, IP, T(0), col, cl);
      auto scatter = [&](int64_t o0, int64_t o1) {
        if constexpr (std::is_same_v<T, float>) {
          if (gather) {
            col2im_gather_f32(g, col, cl, o0, o1, bg, yg);
            return;
          }
        }
        col2im(g, col, cl, o0, o1, p0, p1, yg);
      };
      if (inner_parallel && g.Og > 1) {
        parallel_for(0, g.Og, 1, scatter);
      } else {
        scatter(0, g.Og);
      }
    }
  };

  if (items_parallel) {
    parallel_for(0, ng, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t it = i0; it < i1; ++it) run_item(it, false);
    });
  } else {
    for (int64_t it = 0; it < ng; ++it) run_item(it, nth > 1);
  }
}

// ---------------------------------------------------------------------------------------
// f16 / bf16 <-> f32 for contiguous arrays (vectorised, chunked over the threads).
template <class H>
void half_to_f32(const H* src, float* dst, int64_t n) {
  const auto* s = reinterpret_cast<const uint16_t*>(src);
  parallel_for(0, n, 65536, [&](int64_t i0, int64_t i1) {
    if constexpr (std::is_same_v<H, f16>)
      vec::f16_to_f32(s + i0, dst + i0, i1 - i0);
    else
      vec::bf16_to_f32(s + i0, dst + i0, i1 - i0);
  });
}
template <class H>
void f32_to_half(const float* src, H* dst, int64_t n) {
  auto* d = reinterpret_cast<uint16_t*>(dst);
  parallel_for(0, n, 65536, [&](int64_t i0, int64_t i1) {
    if constexpr (std::is_same_v<H, f16>)
      vec::f32_to_f16(src + i0, d + i0, i1 - i0);
    else
      vec::f32_to_bf16(src + i0, d + i0, i1 - i0);
  });
}

// Whether t's dims after the first two are laid out contiguously (the first two may have any
// strides).
bool spatially_contiguous(const CpuTensor& t) {
  const Shape& s = t.shape();
  int64_t expect = 1;
  for (int d = s.rank() - 1; d >= 2; --d) {
    if (s[d] != 1 && t.strides[size_t(d)] != expect) return false;
    expect *= s[d];
  }
  return true;
}

// The epilogue of `op` over output y (T: the compute type) with the residual at `res` (laid out as
// the output).
template <class T>
Epilogue<T> epilogue_of(const Op& op, const T* y, const T* res) {
  const auto& a = op.attr<ConvAttrs>();
  Epilogue<T> e;
  e.y0 = y;
  e.residual = res;
  e.clamp = a.has_activation();
  e.lo = T(a.act_min);
  e.hi = T(a.act_max);
  return e;
}

template <bool Transpose>
std::vector<PrimitivePtr> conv_kernel_impl(CpuBackend&, Op& op) {
  const TensorMeta& om = op.outputs[0];
  auto out = alloc(om);
  if (om.shape.numel() == 0) return {out};
  const ConvGeom g = make_geom(op);
  // conv_fused's residual (contiguous, as the output)
  CpuTensorPtr rc;
  if (op.inputs.size() > 3 && op.inputs[3]) rc = contiguous(op.inputs[3]);
  if (!Transpose && small_output_conv(g) && (om.dtype == DType::f32 || om.dtype == DType::f64)) {
    // Read the inputs in place when only their first two dims are permuted (autodiff's
    // weight-gradient convs get transposed views): no contiguous copies.
    const CpuTensor& xv = as_cpu(op.inputs[0]);
    const CpuTensor& wv = as_cpu(op.inputs[1]);
    if (spatially_contiguous(xv) && spatially_contiguous(wv)) {
      CpuTensorPtr bc;
      if (op.inputs.size() > 2 && op.inputs[2]) bc = contiguous(op.inputs[2]);
      visit_float_dtype(om.dtype, op.name(), [&]<class T>() {
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          conv_forward_small_output<T>(g, xv.data<T>(), xv.strides[0], xv.strides[1], wv.data<T>(), wv.strides[0],
                                       wv.strides[1], bc ? bc->data<T>() : nullptr, out->data<T>());
          epilogue_of<T>(op, out->data<T>(), rc ? rc->data<T>() : nullptr)(out->data<T>(), 1, om.shape.numel(), 0);
        }
      });
      return {out};
    }
  }
  auto xc = contiguous(op.inputs[0]);
  auto wc = contiguous(op.inputs[1]);
  CpuTensorPtr bc;
  if (op.inputs.size() > 2 && op.inputs[2]) bc = contiguous(op.inputs[2]);

  auto run = [&]<class T>(const T* x, const T* w, const T* b, T* y, const WeightStore& ws, const T* res) {
    if constexpr (Transpose)
      conv_transpose_forward<T>(g, x, w, b, y);
    else
      conv_forward<T>(g, x, w, b, y, ws, epilogue_of<T>(op, y, res));
  };
  visit_float_dtype(om.dtype, op.name(), [&]<class T>() {
    if constexpr (is_half_v<T>) {
      const int64_t nx = xc->numel(), nw = wc->numel(), nb = bc ? bc->numel() : 0, ny = om.shape.numel();
      const int64_t nr = rc ? ny : 0;
      auto buf = alloc({Shape{nx + nw + nb + ny + nr}, DType::f32});  // uninitialised scratch
      float *x = buf->template data<float>(), *w = x + nx, *b = w + nw, *y = b + nb, *r = y + ny;
      half_to_f32(xc->data<T>(), x, nx);
      half_to_f32(wc->data<T>(), w, nw);
      if (bc) half_to_f32(bc->data<T>(), b, nb);
      if (rc) half_to_f32(rc->data<T>(), r, nr);
      run.template operator()<float>(x, w, bc ? b : nullptr, y, WeightStore{}, rc ? r : nullptr);
      f32_to_half(y, out->data<T>(), ny);
    } else {
      run.template operator()<T>(xc->data<T>(), wc->data<T>(), bc ? bc->data<T>() : nullptr, out->data<T>(),
                                 WeightStore{wc->storage.get(), wc->offset}, rc ? rc->data<T>() : nullptr);
    }
  });
  return {out};
}

}  // namespace

void register_conv_kernels(KernelTable& t) {
  t[size_t(OpKind::conv)] = conv_kernel_impl<false>;
  t[size_t(OpKind::conv_transpose)] = conv_kernel_impl<true>;
}

}  // namespace ember::cpu
