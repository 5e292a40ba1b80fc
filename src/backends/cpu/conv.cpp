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
//   * where the output rows suit the micro-kernel, without an im2col: the GEMM turned around
//     (pixels x channels), whole images per thread, or one image at a time split inside when
//     there are too few (conv_forward_image_implicit, conv_image.cpp);
//   * otherwise with too few images (and groups) for the threads, e.g. batch 1: one image at
//     a time, turned around, with an im2col (conv_forward_image);
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
// The depthwise and single-image paths have files of their own (conv_internal.hpp lists them).
#include "conv_internal.hpp"
#include "vec/vec_math.hpp"

#if defined(__wasm_simd128__)
namespace ember::cpu::detail {
// conv_simd128.cpp: one im2col row, im2col_row_f32_avx512's contract for any width stride
// (vectors for 1 and 2).
void im2col_row_f32_simd128(const Im2colRow& r, int64_t p0, int64_t p1, float* dst);
}  // namespace ember::cpu::detail
#endif

namespace ember::cpu {
namespace conv {

const detail::GemmKernelSet<float>* packed_conv_kernels() {
#if defined(__wasm_simd128__)
  return detail::gemm_kernels_simd128_f32();  // the wasm build's baseline (conv_forward_packed only)
#endif
  if (detail::gemm_best_isa() < detail::kIsaAvx512) return nullptr;
  const detail::GemmKernelSet<float>* ks = detail::gemm_kernels_avx512_f32();
  return ks && ks->kernel && ks->pack_a && ks->mr > 0 && ks->nr > 0 ? ks : nullptr;
}

namespace {

// dst[i] = src[i * stride] for i < n (one row of im2col's columns).
template <class T>
inline void copy_columns(T* dst, const T* src, int64_t n, int64_t stride) {
#if defined(__wasm_simd128__)
  // emscripten's memcpy calls out to JavaScript from 512 bytes on and copies 4 bytes a step below
  if constexpr (std::is_same_v<T, float>) return detail::copy_row_f32_simd128(dst, src, n, stride);
#endif
  if (stride == 1) {
    std::memcpy(dst, src, size_t(n) * sizeof(T));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i * stride];
  }
}

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
#if defined(__wasm_simd128__)
  simd = std::is_same_v<T, float>;  // the wasm build: SIMD128 rows for every stride (conv_simd128.cpp)
#endif
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
#if defined(__wasm_simd128__)
        detail::im2col_row_f32_simd128(ir, p0, p1, row + p0);
#else
        detail::im2col_row_f32_avx512(ir, p0, p1, row + p0);
#endif
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
        if (b > a) copy_columns(dst + a, src + a * g.s[2], b - a, g.s[2]);
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

// f32 conv through the AVX-512 GEMM micro-kernel directly: the weights are packed into
// MR-row micro-panels once per call (shared by every thread and image), and each K block of
// the column matrix (row-major, L2 resident; for a pointwise conv the input's own channel rows,
// no im2col) is read in place by the micro-kernel, which accumulates straight into the output
// image (beta = 0 for the first block); the bias, residual and clamp follow per work unit, while
// its output rows are in cache. Work units (image, group, pixel chunk[, strip range]) are spread
// over the threads, each with its own column buffer.
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
    bool even = true;
#if defined(__wasm_simd128__)
    // The wasm build (NR = 8): only where the threads' shares of whole-panel chunks come out
    // within 1/8 of each other (49 pixels would split 32 + 17); else they split the strips below.
    const int64_t clen = ((P + c - 1) / c + NR - 1) / NR * NR;
    even = 8 * P >= 7 * c * clen;
#endif
    if ((ng * c) % nth == 0 && P / c >= 2 * NR && even) nchunks = c;
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
        // Maps of at most 64 pixels (MobileNets' 7x7 layers) turned around: the pixels down the
        // micro-kernel's 14 rows (49 fill 56 of them, where they filled 64 columns), the channels
        // along its 32 columns, the weights streamed once as channel panels (2 vCPUs of a
        // Sapphire Rapids, one thread, one layer alone: 960->320 at 7x7 245-251 -> 211-231 us,
        // 320->1280 340-351 -> 297-311, 160->960 127-136 -> 100-106; 14x14 maps measured 20-50%
        // slower turned around, their transpose costing more than the rows saved). One thread
        // only: on two, the packed path's split measured 1.1-1.7x faster at these shapes.
        if (P <= 64 && nth == 1 && features().avx512 && ks->pack_b && ks->mr <= 16) {
          conv_forward_image(g, x, w, bias, y, *ks, nth, ws, epi);
          return;
        }
        conv_forward_packed(g, x, w, bias, y, *ks, nth, ws, epi);
        return;
      }
    }
    if (winograd_applies(g)) {
      const auto* ks = packed_conv_kernels();
      if (ks && conv_forward_winograd(g, x, w, bias, y, *ks, ws, epi)) return;
    }
    // Worth it when the GEMM has some depth; tiny channel counts stay on the plain path.
    if (!direct && Kdim >= 16 && g.Og >= 4) {
      if (const auto* ks = packed_conv_kernels()) {
        // Where the output rows suit it, the implicit single-image path (no im2col, no
        // masked column tail): whole images per thread when there are enough, else one at a
        // time split inside (2026-12-07, 2 vCPUs of a Sapphire Rapids: 8-27% faster than the
        // packed path on ResNet-18's 3x3 layers at batch 8, ResNet-18 batch 32 480-525 ->
        // 443-446 ms). Too few images and groups to go round the threads otherwise: one at a
        // time with the im2col, unless the channels are few and the pixels many, where the
        // usual orientation needs no transpose and a cheaper im2col.
        // Both single-image paths use AVX-512 kernels of conv_avx512.cpp besides the set.
        const bool image_paths = features().avx512 && ks->pack_b && ks->mr <= 16;
        if (image_paths && implicit_applies(g, *ks))
          conv_forward_image_implicit(g, x, w, bias, y, *ks, nth, ws, epi);
        else if (image_paths && ng < 2 * nth && (g.Og >= 128 || P <= 4 * g.Og))
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
}  // namespace conv

void register_conv_kernels(KernelTable& t) {
  t[size_t(OpKind::conv)] = conv::conv_kernel_impl<false>;
  t[size_t(OpKind::conv_transpose)] = conv::conv_kernel_impl<true>;
}

}  // namespace ember::cpu
