// The integer convolution kernel (src/backends/cpu/conv_integer.cpp): every ISA level of its
// int8 GEMM, with and without im2col blocking, against a naive int64 loop written here.
#include "backends/cpu/conv_integer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_features.hpp"
#include "backends/cpu/gemm.hpp"
#include "backends/cpu/qgemm.hpp"
#include "backends/cpu/qlinear.hpp"

namespace ember::cpu {
namespace {

using detail::kIsaAvx2;
using detail::kIsaAvx512;
using detail::kIsaAmx;  // AMX tiles where the CPU has them, else the same as kIsaAvx512
using detail::kIsaScalar;

struct Case {
  ConvIntegerGeometry g;
  bool x_signed, w_signed;
  bool per_channel_zp;  // w's zero point one per output channel (else one value)
};

// The output size of geometry dim i with `pad_end` after the input.
int64_t out_size(const ConvIntegerGeometry& g, int i, int64_t pad_end) {
  const size_t j = size_t(i);
  return (g.in[j] + g.pad[j] + pad_end - g.dilation[j] * (g.kernel[j] - 1) - 1) / g.stride[j] + 1;
}

// sum over each window of (x - x_zp)(w - w_zp[m]) in int64, taps outside x skipped, wrapped to i32.
std::vector<int32_t> reference(const Case& c, const std::vector<uint8_t>& x, const std::vector<uint8_t>& w,
                               int32_t x_zp, const std::vector<int32_t>& w_zp) {
  const auto& g = c.g;
  const int64_t Cg = g.C / g.groups, Mg = g.M / g.groups;
  const auto &in = g.in, &k = g.kernel, &o = g.out;
  std::vector<int32_t> y;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t od = 0; od < o[0]; ++od)
        for (int64_t oh = 0; oh < o[1]; ++oh)
          for (int64_t ow = 0; ow < o[2]; ++ow) {
            int64_t s = 0;
            for (int64_t ci = 0; ci < Cg; ++ci)
              for (int64_t a = 0; a < k[0]; ++a)
                for (int64_t b = 0; b < k[1]; ++b)
                  for (int64_t e = 0; e < k[2]; ++e) {
                    const int64_t id = od * g.stride[0] - g.pad[0] + a * g.dilation[0];
                    const int64_t ih = oh * g.stride[1] - g.pad[1] + b * g.dilation[1];
                    const int64_t iw = ow * g.stride[2] - g.pad[2] + e * g.dilation[2];
                    if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2]) continue;
                    const int64_t c_in = (m / Mg) * Cg + ci;
                    const uint8_t xb = x[size_t((((n * g.C + c_in) * in[0] + id) * in[1] + ih) * in[2] + iw)];
                    const uint8_t wb = w[size_t((((m * Cg + ci) * k[0] + a) * k[1] + b) * k[2] + e)];
                    const int64_t xv = c.x_signed ? int8_t(xb) : xb, wv = c.w_signed ? int8_t(wb) : wb;
                    s += (xv - x_zp) * (wv - w_zp[size_t(m)]);
                  }
            y.push_back(int32_t(uint32_t(uint64_t(s))));
          }
  return y;
}

void check(Case c, const std::vector<int64_t>& pad_end) {
  auto& g = c.g;
  for (int i = 0; i < 3; ++i) g.out[size_t(i)] = out_size(g, i, pad_end[size_t(i)]);
  std::mt19937 rng(uint32_t(g.N * 7 + g.C * 131 + g.M * 17 + g.groups + g.in[2] * 3 + c.x_signed * 2 + c.w_signed));
  std::uniform_int_distribution<int> byte(0, 255);
  const int64_t Cg = g.C / g.groups;
  std::vector<uint8_t> x(size_t(g.N * g.C * g.in[0] * g.in[1] * g.in[2]));
  std::vector<uint8_t> w(size_t(g.M * Cg * g.kernel[0] * g.kernel[1] * g.kernel[2]));
  for (auto& v : x) v = uint8_t(byte(rng));
  for (auto& v : w) v = uint8_t(byte(rng));
  auto zp = [&](bool is_signed) { return is_signed ? byte(rng) - 128 : byte(rng); };
  const int32_t x_zp = zp(c.x_signed);
  std::vector<int32_t> w_zp(size_t(g.M), zp(c.w_signed));
  if (c.per_channel_zp)
    for (auto& z : w_zp) z = zp(c.w_signed);
  const auto want = reference(c, x, w, x_zp, w_zp);
  for (int isa : {int(kIsaScalar), int(kIsaAvx2), int(kIsaAvx512), kIsaAmx})
    for (int64_t col_bytes : {int64_t(-1), int64_t(1)}) {  // 1: one output row of im2col at a time
      std::vector<int32_t> got(want.size(), 12345);
      detail::conv_integer_u8i8_isa(isa, g, x.data(), c.x_signed, w.data(), c.w_signed, x_zp, w_zp.data(),
                                    got.data(), col_bytes);
      ASSERT_EQ(got, want) << "isa " << isa << " col_bytes " << col_bytes << " N " << g.N << " C " << g.C << " M "
                           << g.M << " groups " << g.groups << " in " << g.in[0] << "x" << g.in[1] << "x" << g.in[2]
                           << " kernel " << g.kernel[0] << "x" << g.kernel[1] << "x" << g.kernel[2];
    }
  // qlinear_conv's u8 epilogue on every path: (acc + bias) * m[c] rounded half to even, + 100,
  // saturated (ONNX QLinearConv's formula, f32 multiplier)
  std::vector<int32_t> bias(size_t(g.M));
  std::vector<float> mult(size_t(g.M));
  for (int64_t m = 0; m < g.M; ++m) bias[size_t(m)] = byte(rng) * 40 - 5000, mult[size_t(m)] = 0.0005f * float(1 + m % 7);
  const int64_t P = g.out[0] * g.out[1] * g.out[2];
  std::vector<uint8_t> want_q(want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const int64_t m = int64_t(i) / P % g.M;
    const float f = std::nearbyint(float(int32_t(uint32_t(want[i]) + uint32_t(bias[size_t(m)]))) * mult[size_t(m)]);
    want_q[i] = uint8_t(std::clamp(f + 100.f, 0.f, 255.f));
  }
  for (int isa : {int(kIsaScalar), int(kIsaAvx2), int(kIsaAvx512), kIsaAmx}) {
    std::vector<uint8_t> got(want_q.size(), 7);
    ConvInt8Args a{.x = x.data(), .x_signed = c.x_signed, .w = w.data(), .w_signed = c.w_signed, .x_zp = x_zp,
                   .w_zp = w_zp.data(), .bias = bias.data(), .e = Requant{}, .y = got.data(), .w_storage = nullptr,
                   .w_offset = 0};
    a.e.out = Requant::U8;
    a.e.mult = mult.data();
    a.e.zp = 100;
    detail::conv_int8(isa, g, a);
    ASSERT_EQ(got, want_q) << "u8 epilogue, isa " << isa << " C " << g.C << " M " << g.M << " groups " << g.groups;
  }
}

// A 2-d geometry (depth 1).
ConvIntegerGeometry geom2d(int64_t N, int64_t C, int64_t M, int64_t groups, int64_t H, int64_t W, int64_t kh,
                           int64_t kw, int64_t stride, int64_t pad, int64_t dilation) {
  ConvIntegerGeometry g;
  g.N = N, g.C = C, g.M = M, g.groups = groups;
  g.in = {1, H, W};
  g.kernel = {1, kh, kw};
  g.stride = {1, stride, stride};
  g.pad = {0, pad, pad};
  g.dilation = {1, dilation, dilation};
  return g;
}

TEST(ConvInteger, EveryIsaEqualsANaiveLoop) {
  // 1x1 (read in place), 3x3 padded, strided, dilated, grouped, depthwise (many small tasks),
  // output channels past the GEMM tiles (VNNI: 12-row tiles from 0 and from half-way into an 8-row
  // panel, of 12, 8 and 4 packed rows: M 6, 14, 33, 70), a batch.
  // On VNNI the 2-d ones run as an implicit GEMM (panels packed straight from x), hence also: a
  // 7x7 stride-2 stem (3 channels: rows that fill no group of 4), outputs narrower than a panel
  // (runs of 3 to 7 columns), stride 2 in one dim only, dilation with stride 2, taps that fall off
  // both sides, 1x1 strided and padded, K past 64 rows, width stride 3 (rows split in 3 phases),
  // channels a multiple of 4 a group (x read as quads of channels, rows (tap, channel)), a 7 x 7
  // output of one image (panels of 32 and 17 columns: 16 and 8 at a time), and copies of x big
  // enough to be made by several threads (split by phase, quads)
  const ConvIntegerGeometry shapes[] = {
      geom2d(1, 8, 6, 1, 5, 7, 1, 1, 1, 0, 1),     geom2d(2, 5, 7, 1, 9, 11, 3, 3, 1, 1, 1),
      geom2d(1, 4, 33, 1, 10, 9, 3, 2, 2, 1, 1),   geom2d(1, 6, 4, 2, 12, 10, 3, 3, 1, 2, 2),
      geom2d(3, 8, 8, 8, 7, 7, 3, 3, 2, 1, 1),     geom2d(2, 6, 12, 6, 6, 5, 3, 3, 1, 1, 1),
      geom2d(1, 16, 9, 1, 9, 9, 1, 1, 2, 0, 1),    geom2d(1, 3, 70, 1, 13, 12, 5, 5, 1, 2, 1),
      geom2d(1, 5, 14, 1, 6, 7, 3, 3, 1, 1, 1),    geom2d(1, 3, 10, 1, 9, 75, 3, 3, 2, 1, 1),  // stride 2, 38 wide
      geom2d(2, 3, 20, 1, 23, 21, 7, 7, 2, 3, 1),  geom2d(1, 5, 13, 1, 3, 3, 3, 3, 1, 1, 1),
      geom2d(3, 17, 9, 1, 7, 7, 3, 3, 1, 1, 1),    geom2d(1, 7, 26, 1, 11, 9, 3, 3, 2, 2, 2),
      geom2d(2, 24, 16, 2, 10, 13, 1, 1, 2, 1, 1), geom2d(1, 33, 40, 1, 5, 70, 3, 5, 1, 2, 1),
      geom2d(2, 9, 5, 1, 12, 12, 3, 3, 3, 1, 1),   geom2d(1, 4, 8, 1, 4, 4, 5, 5, 1, 3, 1),
      geom2d(2, 8, 20, 1, 9, 13, 3, 3, 2, 1, 2),   geom2d(3, 12, 14, 1, 7, 7, 3, 3, 1, 1, 1),
      geom2d(1, 16, 30, 2, 11, 40, 3, 3, 3, 1, 1), geom2d(1, 64, 13, 1, 6, 5, 3, 3, 1, 1, 1),
      geom2d(1, 8, 13, 1, 7, 7, 3, 3, 1, 1, 1),    geom2d(2, 3, 8, 1, 100, 12, 7, 7, 2, 3, 1),
      geom2d(1, 8, 8, 1, 70, 9, 3, 3, 2, 1, 1),
  };
  for (const auto& g : shapes)
    for (bool xs : {false, true})
      for (bool ws : {false, true}) check({g, xs, ws, xs != ws}, {0, g.pad[1], g.pad[2]});
  ConvIntegerGeometry s = geom2d(2, 6, 7, 1, 9, 16, 3, 3, 1, 1, 1);  // height stride 2, width stride 1
  s.stride = {1, 2, 1};
  check({s, false, true, true}, {0, 0, 2});
}

TEST(ConvInteger, OneAndThreeSpatialDimsAndAsymmetricPads) {
  ConvIntegerGeometry g1;  // 1-d: [2, 4, 17] * [5, 4, 3], stride 2, pads (2, 1), dilation 2
  g1.N = 2, g1.C = 4, g1.M = 5;
  g1.in = {1, 1, 17};
  g1.kernel = {1, 1, 3};
  g1.stride = {1, 1, 2};
  g1.pad = {0, 0, 2};
  g1.dilation = {1, 1, 2};
  check({g1, false, true, true}, {0, 0, 1});
  ConvIntegerGeometry g3;  // 3-d: [2, 4, 4, 5, 6] * [6, 2, 3, 2, 2], groups 2, pads (0, 1, 2) / (1, 0, 1)
  g3.N = 2, g3.C = 4, g3.M = 6, g3.groups = 2;
  g3.in = {4, 5, 6};
  g3.kernel = {3, 2, 2};
  g3.stride = {2, 1, 1};
  g3.pad = {0, 1, 2};
  g3.dilation = {1, 2, 1};
  check({g3, true, false, true}, {1, 0, 1});
  check({g3, false, false, false}, {1, 0, 1});
}

TEST(ConvInteger, LargestProductsDoNotSaturate) {
  // all x = 255 (u8) or -128 (i8) with zero point 0 against all w = -128: |products| of 2^15 summed
  // over 576 taps; the naive loop holds the exact sum
  ConvIntegerGeometry g = geom2d(1, 64, 9, 1, 5, 5, 3, 3, 1, 0, 1);
  for (int i = 0; i < 3; ++i) g.out[size_t(i)] = out_size(g, i, g.pad[size_t(i)]);
  for (bool xs : {false, true}) {
    std::vector<uint8_t> x(size_t(64 * 25), xs ? 0x80 : 0xFF), w(size_t(9 * 64 * 9), 0x80);
    std::vector<int32_t> zw(9, 0), got(size_t(9 * 9));
    for (int isa : {int(kIsaScalar), int(kIsaAvx2), int(kIsaAvx512), kIsaAmx}) {
      detail::conv_integer_u8i8_isa(isa, g, x.data(), xs, w.data(), true, 0, zw.data(), got.data());
      for (int32_t v : got) ASSERT_EQ(v, (xs ? -128 : 255) * -128 * 576) << "isa " << isa;
    }
  }
}

}  // namespace
}  // namespace ember::cpu

namespace ember::cpu {
namespace {

// The AVX-512 epilogue against the portable one on a tile with every correction term, each output
// type, channels per row and per column, tails of 16: the same bytes (f32 within an ulp or two:
// the AVX-512 form fuses the multiply-add).
TEST(Requant, Avx512EqualsPortable) {
  if (!features().avx512) GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> big(-3000000, 3000000), small(-300, 300);
  const int64_t m = 5, n = 37, ldt = 40;
  std::vector<int32_t> t(static_cast<size_t>(m * ldt)), r(static_cast<size_t>(m)), p(static_cast<size_t>(m)),
      c(static_cast<size_t>(n)), q(static_cast<size_t>(n));
  std::vector<float> mult(size_t(std::max(m, n))), bias(mult.size());
  for (auto& v : t) v = big(rng);
  for (auto* vec : {&r, &c}) for (auto& v : *vec) v = big(rng);
  for (auto* vec : {&p, &q}) for (auto& v : *vec) v = small(rng);
  for (size_t i = 0; i < mult.size(); ++i) mult[i] = 1e-4f * float(1 + i % 9), bias[i] = float(small(rng)) / 7.f;
  for (auto out : {Requant::I32, Requant::F32, Requant::U8, Requant::I8})
    for (bool per_row : {true, false}) {
      Requant e;
      e.out = out;
      e.r = r.data(), e.c = c.data(), e.p = p.data(), e.q = q.data();
      e.mult = mult.data();
      e.bias = out == Requant::F32 ? bias.data() : nullptr;
      e.per_row = per_row;
      e.zp = out == Requant::I8 ? -5 : 17;
      e.lo = -50.f, e.hi = 80.f;
      std::vector<int32_t> want(size_t(m * n), 1), got(size_t(m * n), 2);
      detail::requant_tile_portable(e, t.data(), ldt, 0, 0, m, n, want.data(), n);
      detail::requant_tile_avx512(e, t.data(), ldt, 0, 0, m, n, got.data(), n);
      const int64_t bytes = m * n * e.elem_bytes();
      if (out == Requant::F32) {
        for (int64_t i = 0; i < m * n; ++i)
          ASSERT_NEAR(reinterpret_cast<float*>(got.data())[i], reinterpret_cast<float*>(want.data())[i], 1e-3)
              << "at " << i << " per_row " << per_row;
      } else {
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), size_t(bytes))) << "out " << out << " per_row " << per_row;
      }
    }
}

}  // namespace
}  // namespace ember::cpu
