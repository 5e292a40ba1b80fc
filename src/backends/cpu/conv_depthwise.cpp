// Depthwise convolution (one input channel per group) for the CPU backend: see conv.cpp's
// overview and conv_internal.hpp.
#include "conv_internal.hpp"
#include "ember/kernels/conv.hpp"

namespace ember::cpu::conv {

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
  // The wasm build: SIMD128 rows and planes (conv_simd128.cpp) instead, none of the AVX-512 paths below.
#if defined(__wasm_simd128__)
  constexpr bool simd_rows = true;
  constexpr auto depthwise_row_f32 = detail::depthwise_row_f32_simd128;
#else
  const bool simd_rows = features().avx512;
  constexpr auto depthwise_row_f32 = detail::depthwise_row_f32_avx512;
#endif
  bool simd = false;
  if constexpr (std::is_same_v<T, float>)
    simd = simd_rows && (sw == 1 || sw == 2) && g.k[0] * g.k[1] * g.k[2] <= kMaxTaps;
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
  const bool plane3x3 = simd && features().avx512 && g.k[0] == 1 && g.k[1] == 3 && g.k[2] == 3 && g.s[1] == 1 &&
                        g.s[2] == 1 && g.p[0] == 0 && g.p[1] == 1 && g.p[2] == 1 && g.d[1] == 1 && g.d[2] == 1 &&
                        ID == 1;
  // fn(kd, kh, id, ih) for each kernel tap row of output row (od, oh) that reads an input row
  // inside the image (id, ih: that input row).
  auto input_rows = [&](int64_t od, int64_t oh, auto&& fn) {
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
      if (id < 0 || id >= ID) continue;
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
        if (ih < 0 || ih >= IH) continue;
        fn(kd, kh, id, ih);
      }
    }
  };
  auto simd_plane = [&](const T* xc, const T* wo, T b, T* yo) {
    if constexpr (std::is_same_v<T, float>) {
      if (plane3x3) {
        detail::depthwise3x3_plane_f32_avx512(xc, IH, IW, wo, b, yo);
        return;
      }
#if defined(__wasm_simd128__)
      if (ID == 1 && OD == 1 && g.k[0] == 1 && g.p[0] == 0) {  // 2-d: the whole plane, from a zero-padded copy
        detail::depthwise_plane_f32_simd128(xc, IH, IW, wo, g.k[1], g.k[2], g.s[1], sw, g.p[1], g.p[2], g.d[1], g.d[2],
                                            OH, OW, b, yo);
        return;
      }
#endif
      detail::DwTap taps[kMaxTaps];
      for (int64_t od = 0; od < OD; ++od) {
        for (int64_t oh = 0; oh < OH; ++oh) {
          int nt = 0;
          input_rows(od, oh, [&](int64_t kd, int64_t kh, int64_t id, int64_t ih) {
            const float* xrow = xc + (id * IH + ih) * IW;
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const TapColumns& tc = tap_columns[size_t(kw)];
              if (tc.hi > tc.lo) taps[nt++] = {xrow, tc.off, tc.lo, tc.hi, wo[(kd * g.k[1] + kh) * g.k[2] + kw]};
            }
          });
          depthwise_row_f32(yo + (od * OH + oh) * OW, OW, sw, taps, nt, b);
        }
      }
    } else {
      (void)xc, (void)wo, (void)b, (void)yo;
    }
  };
  // 2-d f32 planes run the freestanding kernel that microcontroller builds use (one source:
  // include/ember/kernels/conv.hpp); it adds the taps in the same order as the loop below.
  const bool freestanding_kernel = std::is_same_v<T, float> && ID == 1 && OD == 1 && g.k[0] == 1 && g.p[0] == 0 &&
                                   IP < (int64_t(1) << 31) && P < (int64_t(1) << 31);
  auto scalar_plane = [&](const T* __restrict xc, const T* wo, T bv, T* __restrict yo) {
    if constexpr (std::is_same_v<T, float>) {
      if (freestanding_kernel) {
        const kernels::Conv2dShape s{.in_channels = 1,
                                     .in_height = int32_t(IH),
                                     .in_width = int32_t(IW),
                                     .out_channels = 1,
                                     .out_height = int32_t(OH),
                                     .out_width = int32_t(OW),
                                     .kernel_height = int32_t(g.k[1]),
                                     .kernel_width = int32_t(g.k[2]),
                                     .stride_height = int32_t(g.s[1]),
                                     .stride_width = int32_t(sw),
                                     .pad_top = int32_t(g.p[1]),
                                     .pad_left = int32_t(g.p[2]),
                                     .dilation_height = int32_t(g.d[1]),
                                     .dilation_width = int32_t(g.d[2])};
        kernels::check_status(kernels::conv2d_f32(s, xc, wo, &bv, yo));
        return;
      }
    }
    std::fill(yo, yo + P, bv);
    for (int64_t od = 0; od < OD; ++od) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        T* __restrict yrow = yo + (od * OH + oh) * OW;
        input_rows(od, oh, [&](int64_t kd, int64_t kh, int64_t id, int64_t ih) {
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
        });
      }
    }
  };
  // 3x3 / stride 1 / padding 1 planes up to 128 columns, one output per channel (MobileNets'
  // stride-1 layers), f32 on AVX-512: depthwise3x3_small_f32_avx512 on the channel planes in place,
  // 16 / W rows a vector under 16 columns (a 7-wide plane fills 14 of 16 lanes), 16-column chunks
  // of a row above, every tap a masked load, the bias and the clamp before the store: no
  // transposes and no padded copy; one row a vector, each input row's three loads serve the three
  // output rows that read it. One thread, one layer alone (2026-12-07): 384x14x14 56 -> 17 us and
  // 960x7x7 48 -> 22 us against the 16-channel path below (whose transposes in and out cost more
  // than the taps), 192x28x28 98 -> 34 us against the flat grid, 144x56x56 230-260 -> 155 us and
  // 32x112x112 215-237 -> 120-146 us against the plane kernel (one FMA chain a row chunk).
  if constexpr (std::is_same_v<T, float>) {
    if (plane3x3 && g.Og == 1 && g.Cg == 1 && OW <= 128) {
      const bool fuse_clamp = epi.clamp && !epi.residual;
      const float lo = fuse_clamp ? epi.lo : -std::numeric_limits<float>::infinity();
      const float hi = fuse_clamp ? epi.hi : std::numeric_limits<float>::infinity();
      auto run = [&](int64_t q0, int64_t q1) {
        while (q0 < q1) {  // planes q0.. of one image (the bias and weights go by channel)
          const int64_t o = q0 % g.O, m = std::min(q1 - q0, g.O - o);
          detail::depthwise3x3_small_f32_avx512(x + q0 * IP, m, IH, IW, w + o * KK, bias ? bias + o : nullptr, lo, hi,
                                                y + q0 * P);
          if (epi.residual) epi(y + q0 * P, m, P, P);
          q0 += m;
        }
      };
      const int64_t per_plane = std::max<int64_t>(1, P * KK);
      if (ThreadPool::in_parallel_region() || planes * per_plane < (int64_t(1) << 16))
        run(0, planes);
      else
        parallel_for(0, planes, std::max<int64_t>(1, (int64_t(1) << 14) / per_plane), run);
      return;
    }
  }
  // 3x3 / stride 2 / padding 1, one output per channel (MobileNets' stride-2 layers), f32 on
  // AVX-512: depthwise3x3s2_f32_avx512 on the channel planes in place, 16 output columns a vector
  // picked from each input row's even and odd columns by two-source permutes: no transposes into the
  // 16-channel form below (which moves four input pixels an output pixel) and no phase copies.
  // One thread, one layer alone (2026-12-07), against that path: 96x112x112 376-394 -> 205-255 us,
  // 144x56x56 120 -> 56-59 us, 192x28x28 47 -> 16 us, 576x14x14 40-43 -> 24-25 us.
  if constexpr (std::is_same_v<T, float>) {
    const bool s2 = simd && features().avx512 && g.Og == 1 && g.Cg == 1 && ID == 1 && OD == 1 && g.k[0] == 1 &&
                    g.p[0] == 0 && g.k[1] == 3 && g.k[2] == 3 && g.s[1] == 2 && sw == 2 && g.p[1] == 1 &&
                    g.p[2] == 1 && g.d[1] == 1 && g.d[2] == 1;
    if (s2) {
      const bool fuse_clamp = epi.clamp && !epi.residual;
      const float lo = fuse_clamp ? epi.lo : -std::numeric_limits<float>::infinity();
      const float hi = fuse_clamp ? epi.hi : std::numeric_limits<float>::infinity();
      auto run = [&](int64_t q0, int64_t q1) {
        while (q0 < q1) {  // planes q0.. of one image (the bias and weights go by channel)
          const int64_t o = q0 % g.O, m = std::min(q1 - q0, g.O - o);
          detail::depthwise3x3s2_f32_avx512(x + q0 * IP, m, IH, IW, OH, OW, w + o * KK, bias ? bias + o : nullptr, lo,
                                            hi, y + q0 * P);
          if (epi.residual) epi(y + q0 * P, m, P, P);
          q0 += m;
        }
      };
      const int64_t per_plane = std::max<int64_t>(1, P * KK);
      if (ThreadPool::in_parallel_region() || planes * per_plane < (int64_t(1) << 16))
        run(0, planes);
      else
        parallel_for(0, planes, std::max<int64_t>(1, (int64_t(1) << 14) / per_plane), run);
      return;
    }
  }
  // 2-d planes with output rows of 16 to 31 columns, f32 on AVX-512, width stride 1 or 2: each
  // output plane on the flat grid of its zero-padded input (depthwise_grid_f32_avx512), 16
  // consecutive pixels a vector whatever the row width, every tap an unmasked load, the bias and
  // the clamp applied before the store. A stride s becomes s x s stride phases of the padded input
  // (every s-th row and column), each read at unit stride; building them is one pass over the plane.
  // Measured in MobileNet-v2 (2026-12-07, 1 thread, per node): 28-column outputs 6-16% faster than
  // the 16-channel path below (whose transposes in and out cost as much as the taps); 7- and
  // 14-column ones 10-30% slower (that path fills every lane), and 56-column ones 5-15% slower than
  // the row kernels (full rows of vectors): those keep their paths.
  if constexpr (std::is_same_v<T, float>) {
    if (simd && features().avx512 && ID == 1 && OD == 1 && g.k[0] == 1 && g.p[0] == 0 && OW >= 16 && OW < 32) {
      const int64_t sh = g.s[1];
      const int64_t Hp = IH + 2 * g.p[1], Wp = IW + 2 * g.p[2];
      const int64_t pitch = (Wp + sw - 1) / sw, rows = (Hp + sh - 1) / sh;  // each phase's
      const int64_t phase_floats = rows * pitch, slack = 80;
      const int64_t buf_floats = sh * sw * phase_floats + slack;
      struct TapGeom {
        int64_t phase, off, k;
      };
      TapGeom tg[kMaxTaps];
      int ntg = 0;
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          const int64_t rh = kh * g.d[1], rw = kw * g.d[2];
          tg[ntg++] = {(rh % sh) * sw + rw % sw, (rh / sh) * pitch + rw / sw, kh * g.k[2] + kw};
        }
      const float lo = epi.clamp && !epi.residual ? epi.lo : -std::numeric_limits<float>::infinity();
      const float hi = epi.clamp && !epi.residual ? epi.hi : std::numeric_limits<float>::infinity();
      auto run = [&](int64_t q0, int64_t q1) {
        // the phases, back to back, then `slack` zeros (grid reads past the end)
        float* buf = workspace<float, 4>(size_t(buf_floats));
        std::fill(buf + sh * sw * phase_floats, buf + buf_floats, 0.0f);
        detail::DwGridTap taps[kMaxTaps];
        for (int t = 0; t < ntg; ++t) taps[t] = {buf + tg[t].phase * phase_floats, tg[t].off, 0.0f};
        int64_t last_channel = -1;
        int64_t n = q0 / g.O, o = q0 % g.O;
        for (int64_t q = q0; q < q1; ++q, ++o) {
          if (o == g.O) {
            o = 0;
            ++n;
          }
          const int64_t c = n * g.C + o / g.Og;
          if (c != last_channel) {
            detail::depthwise_phases_f32_avx512(x + c * IP, IH, IW, g.p[1], g.p[2], sh, sw, rows, pitch, buf);
            last_channel = c;
          }
          const float* wo = w + o * KK;
          for (int t = 0; t < ntg; ++t) taps[t].w = wo[tg[t].k];
          float* yo = y + q * P;
          detail::depthwise_grid_f32_avx512(yo, OH, OW, pitch, taps, ntg, bias ? bias[o] : 0.0f, lo, hi);
          if (epi.residual) epi(yo, 1, P, P);
        }
      };
      const int64_t per_plane = std::max<int64_t>(1, P * KK);
      if (ThreadPool::in_parallel_region() || planes * per_plane < (int64_t(1) << 16))
        run(0, planes);
      else
        parallel_for(0, planes, std::max<int64_t>(1, (int64_t(1) << 14) / per_plane), run);
      return;
    }
  }
  // Strided or narrow 2-d planes with one output per channel (MobileNets' stride-2 layers; 3x3
  // stride-1 ones take the path above), f32 on AVX-512: 16 channels at a time on a zero-padded
  // pixel-major copy, one channel per lane (depthwise_cvec_f32_avx512), transposed in and out in
  // registers; the
  // per-plane kernels would use a fraction of each vector or a short row per call. Large planes
  // go by strips of output rows.
  if constexpr (std::is_same_v<T, float>) {
    if (simd && features().avx512 && g.Og == 1 && ID == 1 && OD == 1 && (sw != 1 || OW < 32)) {
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
              transpose_epilogue(Epilogue<float>{}, xc + h * IW, nc, IW, IP, nullptr, row + g.p[2] * 16, 16);
            }
            detail::depthwise_cvec_f32_avx512(xb, Wp, wb, g.k[1], g.k[2], g.s[1], sw, g.d[1], g.d[2], rows, OW,
                                              yb + oh0 * OW * 16);
          }
          float* yc = y + (n * g.O + c0) * P;
          transpose_epilogue(epi, yb, P, nc, 16, bias ? bias + c0 : nullptr, yc, P);
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

template void conv_depthwise<float>(const ConvGeom&, const float*, const float*, const float*, float*,
                                    const Epilogue<float>&);
template void conv_depthwise<double>(const ConvGeom&, const double*, const double*, const double*, double*,
                                     const Epilogue<double>&);

}  // namespace ember::cpu::conv
