// Winograd convolution F(m x m, 3x3), m = 2 (the default) or 4 (Lavin and Gray 2015, "Fast
// Algorithms for Convolutional Neural Networks") for f32 3x3 convs with unit stride and dilation,
// one group and a padding of 0 or 1, on AVX-512 or (the wasm build) SIMD128: each m x m output tile
// takes a^2 = (m + 2)^2 multiplies per (input, output) channel pair instead of 9 m^2 (16 for 36; 36
// for 144). Per chunk of images:
//
//   Xp = the input, pixel-major (channels contiguous) and zero padded to whole a x a tiles;
//   V[xi][tile][C] = B^T d B   for each tile's a x a input d            (a^2 positions xi)
//   M[xi][tile][O] = V[xi] x U[xi]                                      (a^2 GEMMs, packed micro-kernel)
//   Yp[pixel][O]   = A^T m A   for each tile's a^2 products (edge tiles store what is inside)
//   y              = Yp transposed into channel planes, with the bias and conv_fused's epilogue.
//
// The tile transforms are conv_winograd_tiles.hpp's, per ISA; the GEMMs run on the build's packed kernel set.
// U[xi][C][O] = G w G^T is computed in f64 from the weights, rounded to f32 once, and kept packed
// for the micro-kernel with the weights (kept_packing), as the other conv paths keep theirs.
#include <cstdlib>

#include "conv_internal.hpp"

namespace ember::cpu::conv {

namespace {

// Lavin and Gray's G (the weight transform) of F(2, 3) and F(4, 3), rows of 3.
constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                              {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                              {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                              {1.0 / 24, 1.0 / 12, 1.0 / 6},
                              {1.0 / 24, -1.0 / 12, 1.0 / 6},
                              {0, 0, 1}};

// U = G w G^T for every (o, c), in f64 (G: a rows of 3): position xi's [C x O] matrix at u + xi * C * O.
// Output channels innermost: a^2 streams of consecutive writes; input channels over the threads.
void transform_weights(const double (*G)[3], int a, const float* w, int64_t C, int64_t O, float* u) {
  parallel_for(0, C, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t o = 0; o < O; ++o) {
        const float* k = w + (o * C + c) * 9;
        double t[6][3];  // G w
        for (int i = 0; i < a; ++i)
          for (int j = 0; j < 3; ++j) t[i][j] = G[i][0] * k[j] + G[i][1] * k[3 + j] + G[i][2] * k[6 + j];
        for (int i = 0; i < a; ++i)
          for (int j = 0; j < a; ++j)
            u[((i * a + j) * C + c) * O + o] = float(t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2]);
      }
  });
}

// Tiles a call needs to pay for transforming and packing weights it does not keep.
constexpr int64_t kUnkeptMinTiles = 1024;

// EMBER_CONV_WINOGRAD: 0 never; 1 F(2x2, 3x3) wherever the shape allows; 4 F(4x4, 3x3) there (a
// quarter of the multiplies, but about 3x F(2x2)'s rounding error: past the conformance suite's
// f32 conv tolerance on some cases); unset: F(2x2, 3x3) where measured faster. Read on each call
// (a few hundred ns against a conv's milliseconds), so that tests can set it.
int winograd_setting() {
  const char* e = std::getenv("EMBER_CONV_WINOGRAD");
  return e && *e ? std::atoi(e) : -1;
}

// The tile transforms of this build, F(tile x tile, 3x3).
detail::WinogradTransforms tile_transforms(int tile) {
#if defined(__wasm_simd128__)
  return detail::winograd_transforms_f32_simd128(tile);
#else
  return detail::winograd_transforms_f32_avx512(tile);
#endif
}

}  // namespace

bool winograd_supported() {
#if defined(__wasm_simd128__)
  return true;
#else
  return features().avx512;
#endif
}

bool winograd_applies(const ConvGeom& g) {
  const int mode = winograd_setting();
  if (mode == 0 || !winograd_supported()) return false;
  if (g.G != 1 || g.in[0] != 1 || g.k[0] != 1 || g.k[1] != 3 || g.k[2] != 3) return false;
  for (int i = 1; i < 3; ++i)
    if (g.s[i] != 1 || g.d[i] != 1 || g.p[i] > 1) return false;
  if (mode == 1 || mode == 4) return true;
  // Measured faster at ResNet-18's 3x3 layers (64-512 channels, 56x56 down to 7x7 maps, batch 1
  // and 32, 2 threads of a Zen 4 EPYC: 1.1-2.9x); smaller convs keep the other paths.
  return g.C >= 64 && g.O >= 64 && g.out[1] >= 7 && g.out[2] >= 7;
}

bool conv_forward_winograd(const ConvGeom& g, const float* x, const float* w, const float* bias, float* y,
                           const detail::GemmKernelSet<float>& ks, const WeightStore& ws, const Epilogue<float>& epi,
                           int64_t tile_block, int tile) {
  const int setting = winograd_setting();
  const bool force = setting == 1 || setting == 4 || tile_block >= 0 || tile != 0;
  if (tile != 2 && tile != 4) tile = setting == 4 ? 4 : 2;
  const int64_t alpha = tile + 2, positions = alpha * alpha;
  const detail::WinogradTransforms transforms = tile_transforms(tile);
  const int64_t C = g.C, O = g.O, H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t ph = g.p[1], pw = g.p[2];
  const int64_t th = (OH + tile - 1) / tile, tw = (OW + tile - 1) / tile, img_tiles = th * tw;
  const int64_t Hp = tile * th + 2, Wp = tile * tw + 2;  // whole tiles (at least the padded input)
  const int64_t MR = ks.mr, NR = ks.nr;
  const int64_t panels = (O + NR - 1) / NR, Opad = panels * NR;
  const int64_t nkb = (C + 255) / 256, kcb = (C + nkb - 1) / nkb;

  // U packed for the micro-kernel: position xi, K block at row k0 (kc rows), panel p at
  // up + xi * C * Opad + k0 * Opad + p * kc * NR.
  auto pack = [&](float* dst) {
    std::vector<float> u(size_t(positions * C * O));
    transform_weights(tile == 4 ? kG4 : kG2, int(alpha), w, C, O, u.data());
    parallel_for(0, positions, 1, [&](int64_t x0, int64_t x1) {
      for (int64_t xi = x0; xi < x1; ++xi)
        for (int64_t k0 = 0; k0 < C; k0 += kcb)
          ks.pack_b(u.data() + (xi * C + k0) * O, O, 1, std::min(kcb, C - k0), O, dst + xi * C * Opad + k0 * Opad);
    });
  };
  std::shared_ptr<const Storage> kept;
  const float* up = kept_packing(ws, {3, tile, C, O, NR, kcb}, size_t(positions * C * Opad), pack, kept);
  std::vector<float> own;
  // Weights not kept (their first use, or weights that change between calls, as in training): the
  // transform and packing in every call, worth it only over many tiles.
  if (!up && !force && g.N * img_tiles < kUnkeptMinTiles) return false;
  if (!up) {
    own.resize(size_t(positions * C * Opad));
    pack(own.data());
    up = own.data();
  }

  // Tiles per block where each thread takes whole blocks through all three steps, their V and M in
  // its L2 (about 512 KB); 0: the whole chunk's V and M in memory, the GEMMs of the positions spread over the
  // threads (few tiles, or channels too many for a block of MR tiles to fit).
  const int64_t fit = (int64_t(128) << 10) / (positions * (C + O)) / MR * MR;
  if (tile_block < 0) tile_block = fit >= 2 * MR ? fit : 0;
  // Images per chunk: their buffers within about 16 MB.
  const int64_t spill = tile_block ? 0 : positions * img_tiles * (C + O);
  const int64_t img_floats = Hp * Wp * C + spill + OH * OW * O;
  const int64_t chunk = std::clamp<int64_t>((int64_t(4) << 20) / img_floats, 1, g.N);
  float* buf = workspace<float, 7>(size_t(chunk * img_floats));
  float* xp = buf;                                   // chunk x Hp x Wp x C
  float* yp = xp + chunk * Hp * Wp * C;              // chunk x OH x OW x O
  float* v = yp + chunk * OH * OW * O;               // positions x T x C (without blocks)
  float* m = v + positions * chunk * img_tiles * C;  // positions x T x O (without blocks)
  const int64_t P = OH * OW;

  // Tiles [t0, t1) of the chunk: their V into vb (tile t at vb + (t - t0) * C, positions vs apart)
  // and, from their M (positions ms apart), their outputs into yp.
  auto input_tiles = [&](int64_t t0, int64_t t1, float* vb, int64_t vs) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / img_tiles, ty = t % img_tiles / tw, tx = t % tw;
      transforms.input(xp + ((n * Hp + tile * ty) * Wp + tile * tx) * C, Wp * C, C, vb + (t - t0) * C, vs);
    }
  };
  auto output_tiles = [&](int64_t t0, int64_t t1, const float* mb, int64_t ms) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / img_tiles, ty = t % img_tiles / tw, tx = t % tw;
      transforms.output(mb + (t - t0) * O, ms, O, yp + (n * P + tile * ty * OW + tile * tx) * O, OW * O,
                        int(std::min<int64_t>(tile, OH - tile * ty)), int(std::min<int64_t>(tile, OW - tile * tx)));
    }
  };
  // M[xi] = V[xi] x U[xi] for positions [x0, x1) of T tiles.
  auto multiply = [&](const float* vb, float* mb, int64_t T, int64_t x0, int64_t x1) {
    float* ap = workspace<float, 8>(size_t(MR * kcb));
    for (int64_t xi = x0; xi < x1; ++xi)
      for (int64_t k0 = 0; k0 < C; k0 += kcb) {
        const int64_t kc = std::min(kcb, C - k0);
        const float* ub = up + xi * C * Opad + k0 * Opad;
        for (int64_t t0 = 0; t0 < T; t0 += MR) {
          const int64_t rows = std::min(MR, T - t0);
          ks.pack_a(vb + (xi * T + t0) * C + k0, C, 1, rows, kc, ap);
          float* mrow = mb + (xi * T + t0) * O;
          for (int64_t p = 0; p < panels; ++p)
            ks.kernel(kc, ap, ub + p * kc * NR, NR, mrow + p * NR, O, 1.0f, k0 == 0 ? 0.0f : 1.0f, int(rows),
                      int(std::min(NR, O - p * NR)));
        }
      }
  };

  for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
    const int64_t nb = std::min(chunk, g.N - n0), T = nb * img_tiles;
    // the padded pixel-major input, a padded row at a time
    parallel_for(0, nb * Hp, 4, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / Hp, h = r % Hp - ph;
        float* row = xp + r * Wp * C;
        if (h < 0 || h >= H) {
          std::fill(row, row + Wp * C, 0.0f);
          continue;
        }
        std::fill(row, row + pw * C, 0.0f);
        std::fill(row + (pw + W) * C, row + Wp * C, 0.0f);
        transpose_epilogue(Epilogue<float>{}, x + (n0 + n) * C * H * W + h * W, C, W, H * W, nullptr, row + pw * C, C);
      }
    });
    if (tile_block > 0) {
      const int64_t blocks = (T + tile_block - 1) / tile_block;
      parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
        float* vb = workspace<float, 9>(size_t(positions * tile_block * C));
        float* mb = workspace<float, 10>(size_t(positions * tile_block * O));
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t t0 = b * tile_block, t1 = std::min(T, t0 + tile_block);
          input_tiles(t0, t1, vb, (t1 - t0) * C);
          multiply(vb, mb, t1 - t0, 0, positions);
          output_tiles(t0, t1, mb, (t1 - t0) * O);
        }
      });
    } else {
      parallel_for(0, T, 8, [&](int64_t t0, int64_t t1) { input_tiles(t0, t1, v + t0 * C, T * C); });
      parallel_for(0, positions, 1, [&](int64_t x0, int64_t x1) { multiply(v, m, T, x0, x1); });
      parallel_for(0, T, 8, [&](int64_t t0, int64_t t1) { output_tiles(t0, t1, m + t0 * O, T * O); });
    }
    // channel planes, with the bias and the epilogue; slices of 16 channels
    const int64_t slices = (O + 15) / 16;
    parallel_for(0, nb * slices, 1, [&](int64_t s0, int64_t s1) {
      for (int64_t s = s0; s < s1; ++s) {
        const int64_t n = s / slices, o0 = s % slices * 16, oc = std::min<int64_t>(16, O - o0);
        transpose_epilogue(epi, yp + n * P * O + o0, P, oc, O, bias ? bias + o0 : nullptr, y + ((n0 + n) * O + o0) * P,
                           P);
      }
    });
  }
  return true;
}

}  // namespace ember::cpu::conv
