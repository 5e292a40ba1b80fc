// The quantized products' kernels (src/backends/cpu/qgemm.cpp): every ISA path against an int64
// / f64 reference written here, and the SIMD paths against the portable one.
#include "backends/cpu/qgemm.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "backends/cpu/gemm.hpp"

namespace ember::cpu {
namespace {

using detail::kIsaAvx2;
using detail::kIsaAvx512;
using detail::kIsaScalar;

struct IntCase {
  int64_t M, N, K;
  bool a_signed, b_signed;
  int zero_points;  // 0: none, 1: one value each, 2: per row of a and per column of b
  int extreme;      // 0: random bytes, 1: the largest products (255 x -128 / -128 x -128)
};

// sum_k (a - za)(b - zb) in int64, wrapped to i32.
std::vector<int32_t> reference(const IntCase& c, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                               const std::vector<int32_t>& za, const std::vector<int32_t>& zb) {
  std::vector<int32_t> out(size_t(c.M * c.N));
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j) {
      int64_t s = 0;
      for (int64_t k = 0; k < c.K; ++k) {
        const int64_t av = c.a_signed ? int8_t(a[size_t(i * c.K + k)]) : a[size_t(i * c.K + k)];
        const int64_t bv = c.b_signed ? int8_t(b[size_t(k * c.N + j)]) : b[size_t(k * c.N + j)];
        s += (av - za[size_t(i)]) * (bv - zb[size_t(j)]);
      }
      out[size_t(i * c.N + j)] = int32_t(uint32_t(uint64_t(s)));
    }
  return out;
}

void check_int_case(const IntCase& c) {
  std::mt19937 rng(uint32_t(c.M * 131 + c.N * 17 + c.K + c.zero_points * 7 + c.a_signed * 2 + c.b_signed));
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> a(size_t(c.M * c.K)), b(size_t(c.K * c.N));
  for (auto& v : a) v = c.extreme ? (c.a_signed ? 0x80 : 0xFF) : uint8_t(byte(rng));
  for (auto& v : b) v = c.extreme ? (c.b_signed ? 0x80 : 0x00) : uint8_t(byte(rng));
  auto zp = [&](bool is_signed) { return is_signed ? byte(rng) - 128 : byte(rng); };
  std::vector<int32_t> za(size_t(c.M), 0), zb(size_t(c.N), 0);
  if (c.zero_points == 1) {
    std::fill(za.begin(), za.end(), zp(c.a_signed));
    std::fill(zb.begin(), zb.end(), zp(c.b_signed));
  } else if (c.zero_points == 2) {
    for (auto& z : za) z = zp(c.a_signed);
    for (auto& z : zb) z = zp(c.b_signed);
  }
  const auto want = reference(c, a, b, za, zb);
  for (int isa : {kIsaScalar, kIsaAvx2, kIsaAvx512}) {
    std::vector<int32_t> got(size_t(c.M * c.N), 12345);
    detail::qgemm_u8i8_isa(isa, c.M, c.N, c.K, a.data(), c.K, c.a_signed, b.data(), c.N, c.b_signed, za.data(),
                           zb.data(), got.data(), c.N);
    ASSERT_EQ(got, want) << "isa " << isa << " M " << c.M << " N " << c.N << " K " << c.K << " a_signed "
                         << c.a_signed << " b_signed " << c.b_signed << " zero_points " << c.zero_points;
  }
}

TEST(QGemm, EveryIsaEqualsTheInt64Reference) {
  const int64_t shapes[][3] = {{1, 1, 1},  {1, 37, 64}, {3, 5, 7},    {8, 32, 4},    {9, 33, 5},
                               {17, 65, 130}, {4, 300, 96}, {70, 40, 1030}, {2, 3, 2049}};
  for (const auto& s : shapes)
    for (bool as : {false, true})
      for (bool bs : {false, true})
        for (int zp = 0; zp < 3; ++zp) check_int_case({s[0], s[1], s[2], as, bs, zp, 0});
}

TEST(QGemm, LargestProductsDoNotSaturate) {
  // 255 x -128 pairs overflow vpmaddubsw's i16 sums; -128 x -128 every i8 x i8 one
  for (bool as : {false, true})
    for (bool bs : {false, true})
      for (int zp = 0; zp < 3; ++zp) check_int_case({9, 35, 301, as, bs, zp, 1});
}

TEST(QGemm, SumsWrapModulo2To32) {
  // 255 * 255 * 70000 exceeds 2^32: every path wraps as the reference does
  check_int_case({2, 17, 70000, false, false, 0, 1});
}

TEST(QGemm, EmptyInnerDimensionGivesZeros) {
  for (int isa : {kIsaScalar, kIsaAvx2, kIsaAvx512}) {
    std::vector<int32_t> z(3, 0), c(6, 7);
    detail::qgemm_u8i8_isa(isa, 2, 3, 0, nullptr, 0, false, nullptr, 3, true, z.data(), z.data(), c.data(), 3);
    EXPECT_EQ(c, std::vector<int32_t>(6, 0));
  }
}

// ---- matmul_wq ----

struct WqCase {
  int64_t M, N, K;
  int bits;
  int64_t block;
  bool affine;
  bool quantize_x = false;
};

struct WqData {
  std::vector<uint8_t> data, zp;
  std::vector<float> scales, x;
  QuantWeight w;
};

WqData make_wq(const WqCase& c) {
  std::mt19937 rng(uint32_t(c.M * 7 + c.N * 3 + c.K + c.bits + c.block + c.affine));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  WqData d;
  d.data.resize(size_t(c.N * (c.bits == 4 ? c.K / 2 : c.K)));
  for (auto& v : d.data) v = uint8_t(byte(rng));
  const int64_t nb = c.K / c.block;
  d.scales.resize(size_t(c.N * nb));
  for (auto& s : d.scales) s = 0.01f + 0.05f * std::abs(u(rng));
  if (c.affine) {
    d.zp.resize(size_t(c.N * nb));
    for (auto& z : d.zp) z = uint8_t(c.bits == 4 ? byte(rng) % 16 : byte(rng));
  }
  d.x.resize(size_t(c.M * c.K));
  for (auto& v : d.x) v = u(rng);
  d.w = QuantWeight{c.N, c.K, c.bits, c.block, d.data.data(), d.scales.data(), c.affine ? d.zp.data() : nullptr,
                    c.quantize_x};
  return d;
}

// x rounded to int8 per 32 (Q8_0: scale amax / 127, round half to even), written out here.
std::vector<float> rounded_x(const WqCase& c, const std::vector<float>& x) {
  std::vector<float> r(x.size());
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float id = amax > 0 ? 127.f / amax : 0.f;
    for (size_t i = b; i < b + 32; ++i) r[i] = std::nearbyint(x[i] * id) * (amax / 127.f);
  }
  (void)c;
  return r;
}

// The dequantize-then-multiply formula in f64 (with x rounded first under quantize_x).
std::vector<double> wq_reference(const WqCase& c, const WqData& d) {
  const int64_t nb = c.K / c.block;
  const std::vector<float> x = c.quantize_x ? rounded_x(c, d.x) : d.x;
  std::vector<double> y(size_t(c.M * c.N));
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t k = 0; k < c.K; ++k) {
      int q;
      if (c.bits == 4) {
        const uint8_t byte = d.data[size_t(n * (c.K / 2) + k / 2)];
        q = (k % 2) ? byte >> 4 : byte & 0xF;
        if (!c.affine && q >= 8) q -= 16;
      } else {
        const uint8_t byte = d.data[size_t(n * c.K + k)];
        q = c.affine ? int(byte) : int(int8_t(byte));
      }
      const int64_t b = k / c.block;
      const double w = double(d.scales[size_t(n * nb + b)]) * (q - (c.affine ? d.zp[size_t(n * nb + b)] : 0));
      for (int64_t m = 0; m < c.M; ++m) y[size_t(m * c.N + n)] += w * double(x[size_t(m * c.K + k)]);
    }
  return y;
}

TEST(MatmulWq, EveryIsaAndPathMatchesTheF64Reference) {
  const WqCase cases[] = {{1, 1, 32, 4, 32, false},  {1, 37, 64, 4, 32, false}, {3, 17, 128, 4, 64, true},
                          {4, 19, 256, 8, 128, false}, {2, 9, 96, 8, 32, true},  {1, 5, 384, 4, 128, true},
                          {7, 70, 128, 4, 32, false},  {6, 33, 64, 8, 64, false},
                          // x rounded to int8 first: the VNNI kernel, chunk tails (K not a multiple
                          // of 128 / 64), zero points, 8-bit blocks of 128 over 64-weight chunks
                          {1, 37, 96, 4, 32, false, true}, {3, 17, 256, 4, 64, true, true},
                          {4, 9, 160, 4, 32, true, true},  {2, 19, 384, 8, 128, false, true},
                          {1, 5, 96, 8, 32, true, true},   {6, 21, 128, 4, 128, false, true}};
  for (const auto& c : cases) {
    WqData d = make_wq(c);
    const auto want = wq_reference(c, d);
    double mag = 0;
    for (int64_t k = 0; k < c.K; ++k) mag += 8 * 0.06;  // |w x| <= 128 * max scale over K terms, loosely
    for (int isa : {kIsaScalar, kIsaAvx2, kIsaAvx512})
      for (int64_t gemv_rows : {int64_t(0), int64_t(8)}) {  // every row on the GEMM path / on the GEMV path
        std::vector<float> y(size_t(c.M * c.N), NAN);
        detail::matmul_wq_f32_isa(isa, d.w, c.M, d.x.data(), y.data(), gemv_rows);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_NEAR(y[i], want[i], 1e-5 * mag * (c.bits == 8 ? 16 : 1))
              << "isa " << isa << " gemv_rows " << gemv_rows << " M " << c.M << " N " << c.N << " K " << c.K
              << " bits " << c.bits << " block " << c.block << " affine " << c.affine << " quantize_x "
              << c.quantize_x << " at " << i;
      }
  }
}

}  // namespace
}  // namespace ember::cpu
