// Convolution of one image at a time (batch 1) for the CPU backend, through the AVX-512 GEMM
// micro-kernel turned around (pixels x channels): see conv.cpp's overview and
// conv_internal.hpp.
#include "conv_internal.hpp"

namespace ember::cpu::conv {

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
  // Every group's panels (group gi's at gi * Np * Kdim), for a loop over whole images on the
  // threads: kept, or packed once over the threads into `own`.
  const float* every_group(std::vector<float>& own) const {
    if (kept_) return kept_;
    own.resize(size_t(g_.G * Np_ * Kdim_));
    const int64_t per = Np_ / NR_;
    run_units_dynamic(g_.G * per, nth_, [&](int64_t u) {
      const int64_t gi = u / per, j = u % per;
      pack(gi, j * NR_, std::min(NR_, g_.Og - j * NR_), own.data() + gi * Np_ * Kdim_ + j * Kdim_ * NR_);
    });
    return own.data();
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
        transpose_epilogue(epi, ct + c0, P, cols, Og, bg ? bg + c0 : nullptr, yg + c0 * P, P);
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
        transpose_epilogue(epi, ct, cl, Og, Og, bg, yg + p0, P);
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

  // Image ngi (and its group) with nt threads; `every`: all groups' panels (the loop over whole
  // images), else null (each call gets them from `panels`, packed over the threads).
  auto image = [&](int64_t ngi, int nt, const float* every) {
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
      run_units_dynamic((g.Cg + 7) / 8, g.Cg * plane > (int64_t(1) << 17) ? nt : 1, [&](int64_t u) {
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
      const int64_t per_unit = std::max<int64_t>(1, npanels / (8 * std::max(nt, 1)));
      run_units_dynamic((npanels + per_unit - 1) / per_unit, nt, [&](int64_t u) {
        const int64_t c0 = u * per_unit * NR, cols = std::min(per_unit * NR, Og - c0);
        const float* bp = every ? every + gi * Np * Kdim + c0 * Kdim : panels.unit(gi, c0, cols);
        for (int64_t k0 = 0; k0 < Kdim; k0 += kcb)
          multiply(xp, 0, mpanels, 0, bp, cols, k0, std::min(kcb, Kdim - k0), ct + c0, Og);
        transpose_epilogue(epi, ct + c0, P, cols, Og, bg ? bg + c0 : nullptr, yg + c0 * P, P);
      });
    } else {
      const float* bp = every ? every + gi * Np * Kdim : panels.all(gi);
      // Runs of at most 16 pixel panels, four per thread where there are enough.
      const int64_t ppc = std::clamp<int64_t>((mpanels + 4 * nt - 1) / (4 * nt), 1, 16);
      run_units_dynamic((mpanels + ppc - 1) / ppc, nt, [&](int64_t u) {
        const int64_t q0 = u * ppc, q1 = std::min(mpanels, q0 + ppc);
        const Panel last = panel(q1 - 1);
        const int64_t first = panel(q0).start, cl = last.start + last.m - first;
        float* ct = workspace<float>(size_t(cl * Og));
        for (int64_t k0 = 0; k0 < Kdim; k0 += kcb)
          multiply(xp, q0, q1, first, bp, Og, k0, std::min(kcb, Kdim - k0), ct, Og);
        transpose_epilogue(epi, ct, cl, Og, Og, bg, yg + first, P);
      });
    }
  };
  // Enough images and groups to go round the threads: whole ones per thread, the weights packed
  // once; else one at a time, split inside.
  const int64_t ng = g.N * g.G;
  if (nth > 1 && ng >= 2 * nth && !ThreadPool::in_parallel_region()) {
    std::vector<float> own;
    const float* every = panels.every_group(own);
    run_units_dynamic(ng, nth, [&](int64_t ngi) { image(ngi, 1, every); });
  } else {
    for (int64_t ngi = 0; ngi < ng; ++ngi) image(ngi, nth, nullptr);
  }
}

}  // namespace ember::cpu::conv
