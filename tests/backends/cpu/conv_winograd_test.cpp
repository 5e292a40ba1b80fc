// The Winograd conv path (conv_winograd.cpp), F(2x2, 3x3) and F(4x4, 3x3), against a direct f64 loop: batches of
// 1-3, channel counts off multiples of 16, odd and even maps, padding 0 and 1, edge tiles, the bias
// and conv_fused's residual and clamp, on 1 and 2 threads; and through conv2d with the path forced
// on (EMBER_CONV_WINOGRAD=1 and 4), its transformed weights kept from the second call on. Built for
// the wasm build too (tests/wasm), where the transforms are the SIMD128 ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "conv_internal.hpp"
#include "ember/backends/cpu.hpp"
#include "ember/ember.hpp"

namespace ember {
namespace {

struct WinogradCase {
  int64_t N, C, O, H, W, pad;
  bool bias, residual;
  float lo, hi;  // the clamp (infinite: none)
};

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// y = clamp(conv(x, w) + bias + residual, lo, hi) in f64; `scale` gets the largest |value| before the clamp.
std::vector<double> reference(const WinogradCase& c, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& b, const std::vector<float>& r, double& scale) {
  const int64_t OH = c.H + 2 * c.pad - 2, OW = c.W + 2 * c.pad - 2;
  std::vector<double> y(size_t(c.N * c.O * OH * OW));
  scale = 1.0;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t o = 0; o < c.O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double s = c.bias ? b[size_t(o)] : 0.0;
          for (int64_t ci = 0; ci < c.C; ++ci)
            for (int64_t ki = 0; ki < 3; ++ki)
              for (int64_t kj = 0; kj < 3; ++kj) {
                const int64_t ih = i + ki - c.pad, iw = j + kj - c.pad;
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                s += double(x[size_t(((n * c.C + ci) * c.H + ih) * c.W + iw)]) *
                     double(w[size_t(((o * c.C + ci) * 3 + ki) * 3 + kj)]);
              }
          const size_t at = size_t(((n * c.O + o) * OH + i) * OW + j);
          if (c.residual) s += r[at];
          scale = std::max(scale, std::abs(s));
          y[at] = std::min<double>(std::max<double>(s, c.lo), c.hi);
        }
  return y;
}

const std::vector<WinogradCase>& cases() {
  static const std::vector<WinogradCase> v = {
      {1, 3, 5, 7, 9, 1, true, false, -kInf, kInf},     // few channels, odd maps, edge tiles both ways
      {2, 17, 33, 10, 11, 0, true, true, 0.0f, kInf},   // unpadded, residual + ReLU
      {3, 20, 40, 9, 8, 1, false, true, -kInf, kInf},   // batch 3, residual, no bias
      {1, 64, 64, 14, 14, 1, true, false, 0.0f, kInf},  // ResNet's shape, small
      {2, 300, 37, 6, 5, 1, true, false, -0.5f, 0.5f},  // two K blocks, an output channel tail
      {1, 16, 16, 3, 3, 0, true, true, -kInf, kInf},    // a 1 x 1 output
      {1, 48, 70, 8, 8, 1, true, true, 0.0f, 1.0f},     // whole tiles
  };
  return v;
}

// The thread counts the tests run on: 1 and 2, only 1 in the single-threaded wasm build (no threads to start).
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
constexpr int kThreadCounts[] = {1};
#else
constexpr int kThreadCounts[] = {1, 2};
#endif

// Sets the CPU backend's thread count for a scope.
struct ThreadCount {
  explicit ThreadCount(int n) : saved(cpu::num_threads()) { cpu::set_num_threads(n); }
  ~ThreadCount() { cpu::set_num_threads(saved); }
  int saved;
};

TEST(Winograd, MatchesDirectReference) {
  const auto* ks = cpu::conv::packed_conv_kernels();
  if (!ks || !cpu::conv::winograd_supported()) GTEST_SKIP() << "no Winograd kernels (AVX-512 or SIMD128)";
  uint32_t seed = 31;
  double worst[5] = {};  // by tile side: the largest error, relative to the largest |output|
  for (const WinogradCase& c : cases()) {
    std::mt19937 rng(seed++);
    const int64_t OH = c.H + 2 * c.pad - 2, OW = c.W + 2 * c.pad - 2;
    const auto x = random_floats(size_t(c.N * c.C * c.H * c.W), rng);
    const auto w = random_floats(size_t(c.O * c.C * 9), rng);
    const auto b = random_floats(size_t(c.O), rng);
    const auto r = random_floats(size_t(c.N * c.O * OH * OW), rng);
    cpu::conv::ConvGeom g;
    g.N = c.N;
    g.C = g.Cg = c.C;
    g.O = g.Og = c.O;
    g.in[1] = c.H;
    g.in[2] = c.W;
    g.out[1] = OH;
    g.out[2] = OW;
    g.k[1] = g.k[2] = 3;
    g.p[1] = g.p[2] = c.pad;
    std::vector<float> y(size_t(c.N * c.O * OH * OW), std::nanf(""));
    cpu::conv::Epilogue<float> epi;
    epi.y0 = y.data();
    epi.residual = c.residual ? r.data() : nullptr;
    epi.clamp = c.lo != -kInf || c.hi != kInf;
    epi.lo = c.lo;
    epi.hi = c.hi;
    double scale = 1.0;
    const auto want = reference(c, x, w, b, r, scale);
    for (int threads : kThreadCounts)
      for (int tile : {2, 4})
        for (int64_t block : {int64_t(0), int64_t(ks->mr), int64_t(2 * ks->mr)}) {  // positions per thread, tile blocks
          const ThreadCount tc(threads);
          std::fill(y.begin(), y.end(), std::nanf(""));
          cpu::conv::conv_forward_winograd(g, x.data(), w.data(), c.bias ? b.data() : nullptr, y.data(), *ks,
                                           cpu::conv::WeightStore{}, epi, block, tile);
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_NEAR(y[i], want[i], 2e-5 * scale)
                << "F(" << tile << ", 3) case C " << c.C << " O " << c.O << " " << c.H << "x" << c.W << " pad " << c.pad
                << " block " << block << " threads " << threads << " at " << i;
            worst[tile] = std::max(worst[tile], std::abs(y[i] - want[i]) / scale);
          }
        }
  }
  std::printf("winograd: largest error of the largest |output|: F(2x2, 3x3) %.3g, F(4x4, 3x3) %.3g\n", worst[2],
              worst[4]);
}

// Through conv2d with the path forced on: the first call packs, later ones read the kept packing.
TEST(Winograd, Conv2dForcedOnKeepsItsPacking) {
  if (!cpu::conv::packed_conv_kernels() || !cpu::conv::winograd_supported())
    GTEST_SKIP() << "no Winograd kernels (AVX-512 or SIMD128)";
  const WinogradCase c{2, 24, 40, 11, 13, 1, true, false, -kInf, kInf};
  std::mt19937 rng(77);
  const auto x = random_floats(size_t(c.N * c.C * c.H * c.W), rng);
  const auto w = random_floats(size_t(c.O * c.C * 9), rng);
  const auto b = random_floats(size_t(c.O), rng);
  double scale = 1.0;
  const auto want = reference(c, x, w, b, {}, scale);
  auto tensor = [](const std::vector<float>& v, Shape s) {
    return DynTensor::from_data(
        TensorData::from_vector(std::vector<double>(v.begin(), v.end()), s).convert(DType::f32));
  };
  const DynTensor xt = tensor(x, Shape{c.N, c.C, c.H, c.W}), wt = tensor(w, Shape{c.O, c.C, 3, 3}),
                  bt = tensor(b, Shape{c.O});
  for (int threads : kThreadCounts)
    for (const char* mode : {"1", "4"}) {
      const ThreadCount tc(threads);
      ::setenv("EMBER_CONV_WINOGRAD", mode, 1);
      for (int call = 0; call < 3; ++call) {
        const auto got = conv2d(xt, wt, bt, ConvOptions{{1, 1}, {1, 1}, {1, 1}, {0, 0}, 1}).into_data().to_doubles();
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 2e-5 * scale)
              << "EMBER_CONV_WINOGRAD=" << mode << " call " << call << " at " << i;
      }
    }
  ::unsetenv("EMBER_CONV_WINOGRAD");
}

}  // namespace
}  // namespace ember
