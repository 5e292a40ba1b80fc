// conv / conv_transpose / matmul kernels of the cpu backend against direct double-precision
// references: every spatial rank, stride / padding / dilation / output_padding / groups,
// depthwise and 1x1 fast paths, strided (non-contiguous) inputs, every float dtype, and
// several thread counts (serial, image-parallel and pixel-chunk-parallel schedules).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cpu_tensor.hpp"
#include "ember/backends/cpu.hpp"
#include "ember/ember.hpp"

namespace ember {
namespace {

struct ConvCase {
  int nd;
  int64_t N, C, O;
  std::vector<int64_t> in, k, s, p, d, op;
  int64_t groups;
  bool bias;
};

std::vector<double> random_values(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

// Values rounded to `dt` (so the reference sees exactly what the kernel sees).
std::vector<double> rounded(const std::vector<double>& v, DType dt) {
  return TensorData::from_vector(v, Shape{int64_t(v.size())}).convert(dt).to_doubles();
}

// A tensor with the given values; `transposed` stores the last two dims swapped and views
// them back through a transpose (a non-contiguous input).
DynTensor make_tensor(const std::vector<double>& v, const Shape& s, DType dt, bool transposed) {
  if (!transposed || s.rank() < 2) return DynTensor::from_data(TensorData::from_vector(v, s).convert(dt));
  std::vector<int64_t> d = s.dims();
  const int r = s.rank();
  const int64_t R = d[r - 2], C = d[r - 1], mat = R * C;
  std::swap(d[r - 2], d[r - 1]);
  std::vector<double> w(v.size());
  for (size_t b = 0; mat > 0 && b < v.size() / size_t(mat); ++b)
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) w[b * mat + j * R + i] = v[b * mat + i * C + j];
  return transpose(DynTensor::from_data(TensorData::from_vector(w, Shape(d)).convert(dt)), -1, -2);
}

// Spatial sizes padded to 3 dims (leading 1s).
std::vector<int64_t> pad3(const std::vector<int64_t>& v, int nd, int64_t fill) {
  std::vector<int64_t> r(3, fill);
  for (int i = 0; i < nd; ++i) r[3 - nd + i] = v[i];
  return r;
}

std::vector<int64_t> out_size(const ConvCase& c, bool tr) {
  std::vector<int64_t> o(c.nd);
  for (int i = 0; i < c.nd; ++i)
    o[i] = tr ? (c.in[i] - 1) * c.s[i] - 2 * c.p[i] + c.d[i] * (c.k[i] - 1) + c.op[i] + 1
              : (c.in[i] + 2 * c.p[i] - c.d[i] * (c.k[i] - 1) - 1) / c.s[i] + 1;
  return o;
}

std::vector<double> conv_reference(const ConvCase& c, bool tr, const std::vector<double>& x, const std::vector<double>& w,
                                   const std::vector<double>* b) {
  const auto in = pad3(c.in, c.nd, 1), k = pad3(c.k, c.nd, 1), s = pad3(c.s, c.nd, 1), p = pad3(c.p, c.nd, 0),
             d = pad3(c.d, c.nd, 1), out = pad3(out_size(c, tr), c.nd, 1);
  const int64_t G = c.groups, Cg = c.C / G, Og = c.O / G;
  const int64_t IP = in[0] * in[1] * in[2], OP = out[0] * out[1] * out[2], KK = k[0] * k[1] * k[2];
  std::vector<double> y(size_t(c.N * c.O * OP), 0.0);
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t o = 0; o < c.O; ++o)
      for (int64_t q = 0; q < OP; ++q) y[size_t((n * c.O + o) * OP + q)] = b ? (*b)[size_t(o)] : 0.0;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t ci = 0; ci < Cg; ++ci)
        for (int64_t oi = 0; oi < Og; ++oi)
          for (int64_t kd = 0; kd < k[0]; ++kd)
            for (int64_t kh = 0; kh < k[1]; ++kh)
              for (int64_t kw = 0; kw < k[2]; ++kw) {
                const int64_t kq = (kd * k[1] + kh) * k[2] + kw;
                const double wv = tr ? w[size_t(((g * Cg + ci) * Og + oi) * KK + kq)]
                                     : w[size_t(((g * Og + oi) * Cg + ci) * KK + kq)];
                const double* xc = x.data() + (n * c.C + g * Cg + ci) * IP;
                double* yo = y.data() + (n * c.O + g * Og + oi) * OP;
                if (!tr) {
                  for (int64_t a = 0; a < out[0]; ++a)
                    for (int64_t bb = 0; bb < out[1]; ++bb)
                      for (int64_t e = 0; e < out[2]; ++e) {
                        const int64_t i0 = a * s[0] - p[0] + kd * d[0], i1 = bb * s[1] - p[1] + kh * d[1],
                                      i2 = e * s[2] - p[2] + kw * d[2];
                        if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                        yo[(a * out[1] + bb) * out[2] + e] += wv * xc[(i0 * in[1] + i1) * in[2] + i2];
                      }
                } else {
                  for (int64_t a = 0; a < in[0]; ++a)
                    for (int64_t bb = 0; bb < in[1]; ++bb)
                      for (int64_t e = 0; e < in[2]; ++e) {
                        const int64_t o0 = a * s[0] - p[0] + kd * d[0], o1 = bb * s[1] - p[1] + kh * d[1],
                                      o2 = e * s[2] - p[2] + kw * d[2];
                        if (o0 < 0 || o0 >= out[0] || o1 < 0 || o1 >= out[1] || o2 < 0 || o2 >= out[2]) continue;
                        yo[(o0 * out[1] + o1) * out[2] + o2] += wv * xc[(a * in[1] + bb) * in[2] + e];
                      }
                }
              }
  return y;
}

double tolerance(DType dt) {
  switch (dt) {
    case DType::f64: return 1e-10;
    case DType::f32: return 2e-5;
    case DType::f16: return 4e-3;
    default: return 2e-2;
  }
}

void check_conv(const ConvCase& c, bool tr, DType dt, bool strided, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> xs = {c.N, c.C}, ws = tr ? std::vector<int64_t>{c.C, c.O / c.groups}
                                                : std::vector<int64_t>{c.O, c.C / c.groups};
  xs.insert(xs.end(), c.in.begin(), c.in.end());
  ws.insert(ws.end(), c.k.begin(), c.k.end());
  const Shape xshape(xs), wshape(ws);
  auto xv = rounded(random_values(xshape.numel(), rng), dt);
  auto wv = rounded(random_values(wshape.numel(), rng), dt);
  auto bv = rounded(random_values(c.O, rng), dt);
  ConvOptions o{c.s, c.p, c.d, c.op, c.groups};
  std::optional<DynTensor> bt;
  if (c.bias) bt = make_tensor(bv, Shape{c.O}, dt, false);
  DynTensor x = make_tensor(xv, xshape, dt, strided), w = make_tensor(wv, wshape, dt, strided);
  DynTensor y;
  if (!tr)
    y = c.nd == 1 ? conv1d(x, w, bt, o) : c.nd == 2 ? conv2d(x, w, bt, o) : conv3d(x, w, bt, o);
  else
    y = c.nd == 1 ? conv_transpose1d(x, w, bt, o) : c.nd == 2 ? conv_transpose2d(x, w, bt, o) : conv_transpose3d(x, w, bt, o);
  std::vector<int64_t> ys = {c.N, c.O};
  for (int64_t v : out_size(c, tr)) ys.push_back(v);
  ASSERT_EQ(y.shape(), Shape(ys));
  ASSERT_EQ(y.dtype(), dt);
  const auto want = conv_reference(c, tr, xv, wv, c.bias ? &bv : nullptr);
  const auto got = y.into_data().to_doubles();
  double scale = 1.0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  const double tol = tolerance(dt) * scale;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol) << (tr ? "conv_transpose" : "conv") << " dtype " << dt << " nd " << c.nd
                                      << " strided " << strided << " at " << i;
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      // nd, N, C, O, in, k, s, p, d, op, groups, bias
      {2, 2, 4, 6, {9, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, true},
      {2, 3, 6, 4, {11, 10}, {3, 2}, {2, 1}, {1, 0}, {1, 2}, {0, 0}, 2, true},
      {2, 1, 8, 8, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 8, false},    // depthwise
      {2, 2, 3, 3, {9, 70}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 3, true},     // depthwise 3x3 plane kernel
      {2, 1, 4, 8, {17, 33}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 4, true},    // the same, 2 outputs a channel
      {2, 2, 6, 12, {15, 14}, {3, 3}, {2, 1}, {1, 2}, {1, 2}, {0, 0}, 6, true},  // depthwise x2
      {2, 2, 8, 8, {13, 37}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 8, true},    // depthwise, stride 2
      {1, 2, 4, 8, {40}, {3}, {2}, {2}, {2}, {0}, 4, true},                         // depthwise, dilated
      {1, 1, 2, 2, {21}, {7}, {3}, {3}, {1}, {0}, 2, false},                         // depthwise, stride 3
      // depthwise on 16-channel vectors (strided or narrow planes): two blocks and a tail, dilated;
      // then a 14x14 plane at stride 1
      {2, 2, 40, 40, {11, 19}, {5, 5}, {2, 2}, {2, 2}, {2, 2}, {0, 0}, 40, true},
      {2, 1, 32, 32, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 32, true},
      {2, 1, 16, 16, {40, 300}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 16, true},  // strips of rows
      // depthwise planes on the flat pixel grid (outputs 16 to 31 wide): stride-2 phases of odd-sized
      // planes, no padding, padding wider than the kernel (an output wider than the input), a row
      // stride of 3 with a channel multiplier, and a 5x5 kernel dilated at stride 2; and a 7x7 plane
      {2, 1, 5, 5, {15, 33}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 5, true},
      {2, 1, 3, 3, {10, 20}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 3, true},
      {2, 1, 3, 3, {6, 15}, {3, 3}, {1, 1}, {3, 2}, {1, 1}, {0, 0}, 3, false},
      {2, 2, 3, 6, {20, 41}, {3, 2}, {3, 2}, {1, 0}, {1, 1}, {0, 0}, 3, true},
      {2, 1, 4, 4, {23, 45}, {5, 5}, {2, 2}, {3, 4}, {2, 2}, {0, 0}, 4, true},
      {2, 2, 24, 24, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 24, true},
      // 3x3 / stride 1 / padding 1 planes under 16 wide, 16 / W rows a vector
      // (depthwise3x3_small_f32_avx512): a last vector part full, one vector for the whole plane,
      // one row a vector, a one-column plane, two rows a vector exactly, and batches across threads
      {2, 2, 5, 5, {11, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 5, true},
      {2, 1, 4, 4, {2, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 4, false},
      {2, 1, 3, 3, {30, 15}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 3, true},
      {2, 2, 20, 20, {9, 1}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 20, true},
      {2, 3, 40, 40, {6, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 40, true},
      {2, 2, 400, 400, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 400, true},
      // and wider ones in 16-column chunks: a one-column last chunk, 28 wide, 128 wide (the widest),
      // then 129 wide (the plane kernel)
      {2, 1, 3, 3, {5, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 3, true},
      {2, 2, 5, 5, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 5, true},
      {2, 1, 2, 2, {3, 128}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 2, false},
      {2, 1, 2, 2, {4, 129}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 2, true},
      // 3x3 / stride 2 / padding 1 (depthwise3x3s2_f32_avx512): odd and even sizes, one output
      // column, two and three 16-column chunks, MobileNet's 14 -> 7 with a batch
      {2, 2, 5, 5, {9, 13}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 5, true},
      {2, 1, 3, 3, {6, 2}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 3, false},
      {2, 1, 4, 4, {7, 64}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 4, true},
      {2, 1, 2, 2, {5, 71}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 2, true},
      {2, 3, 40, 40, {14, 14}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 40, true},
      {2, 2, 8, 16, {6, 5}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 2, true},    // 1x1
      {2, 2, 8, 16, {6, 5}, {1, 1}, {2, 2}, {1, 0}, {1, 1}, {0, 0}, 1, false},   // 1x1 strided
      {1, 2, 3, 5, {17}, {4}, {3}, {2}, {2}, {0}, 1, true},
      {1, 4, 6, 6, {20}, {3}, {1}, {5}, {1}, {0}, 3, false},
      {3, 2, 4, 6, {5, 6, 7}, {3, 2, 3}, {1, 2, 1}, {1, 0, 2}, {1, 1, 2}, {0, 0, 0}, 2, true},
      {2, 1, 3, 4, {2, 2}, {3, 3}, {1, 1}, {2, 2}, {2, 1}, {0, 0}, 1, true},
      {2, 5, 16, 24, {20, 21}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, true},  // image + pixel split
      {2, 8, 16, 32, {14, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, true},  // implicit, whole images a thread
      {2, 6, 16, 64, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 2, true},    // the same, row pairs, 2 groups
      {2, 1, 32, 40, {30, 31}, {5, 5}, {2, 1}, {2, 2}, {1, 1}, {0, 0}, 1, true},
      {2, 1, 32, 40, {36, 30}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, true},   // several chunks
      {2, 3, 48, 64, {33, 35}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, true},
      // pointwise through the packed micro-kernel (input rows read in place): two K blocks, two
      // pixel chunks, a strip and a column tail; then groups and a batch
      {2, 1, 300, 40, {20, 21}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, true},
      {2, 3, 24, 30, {7, 9}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 2, true},
      // pointwise on 7-wide planes (one pixel panel and a 17-column tail): one image, then groups
      {2, 1, 40, 48, {7, 7}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, true},
      {2, 3, 24, 30, {9, 7}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 2, false},
      // pointwise on maps of at most 64 pixels, turned around (pixels down the rows, channels along
      // the columns): several K blocks, a 7-row pixel tail and a channel tail; 1x1 and 8x8 maps; a
      // batch; groups
      {2, 1, 600, 70, {7, 7}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, true},
      {2, 1, 17, 33, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, true},
      {2, 1, 40, 96, {8, 8}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, false},
      {2, 3, 160, 40, {5, 7}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, true},
      {2, 2, 64, 48, {7, 7}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 4, true},
      {2, 2, 16, 8, {13, 17}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 1, true},    // width stride 2
      {2, 1, 8, 6, {9, 40}, {3, 3}, {1, 2}, {2, 3}, {2, 2}, {0, 0}, 1, false},    // stride 2, dilated
      {2, 2, 8, 6, {9, 40}, {2, 3}, {1, 3}, {0, 1}, {1, 1}, {0, 0}, 1, true},      // width stride 3
  };
  return cases;
}

const std::vector<ConvCase>& conv_transpose_cases() {
  static const std::vector<ConvCase> cases = {
      {2, 2, 4, 6, {5, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {2, 2, 6, 4, {5, 6}, {3, 2}, {1, 2}, {0, 1}, {2, 1}, {1, 0}, 2, true},
      {2, 2, 8, 6, {5, 6}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 2, true},  // 1x1
      {1, 3, 4, 6, {9}, {4}, {2}, {1}, {1}, {1}, 1, false},
      {1, 1, 4, 4, {9}, {1}, {1}, {0}, {2}, {1}, 1, true},  // 1x1 with output_padding
      {3, 2, 4, 6, {3, 4, 5}, {2, 3, 2}, {2, 1, 2}, {0, 1, 1}, {1, 2, 1}, {1, 0, 0}, 2, true},
      {2, 3, 32, 16, {12, 13}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 1, true},
      {2, 1, 32, 48, {20, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, true},
      {2, 4, 32, 32, {16, 16}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 1, false},
  };
  return cases;
}

class ConvThreads : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    saved_ = cpu::num_threads();
    cpu::set_num_threads(GetParam());
  }
  void TearDown() override { cpu::set_num_threads(saved_); }
  int saved_ = 1;
};

TEST_P(ConvThreads, ConvMatchesReference) {
  uint32_t seed = 1;
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (const auto& c : conv_cases())
      for (bool strided : {false, true}) check_conv(c, false, dt, strided, seed++);
}

TEST_P(ConvThreads, ConvTransposeMatchesReference) {
  uint32_t seed = 1000;
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (const auto& c : conv_transpose_cases())
      for (bool strided : {false, true}) check_conv(c, true, dt, strided, seed++);
}

// f32 convs keep their weights packed from the second use of the same weights on (Storage::
// derived): the first, second (packs and keeps) and third (reads the kept packing) calls all
// match the reference; after an in-place write into the weights' buffer (an op given their
// last handle) the result follows the new weights; and two weight views at different offsets
// of one buffer keep separate packings.
TEST_P(ConvThreads, KeptWeightPackingFollowsTheWeights) {
  std::vector<ConvCase> cases = conv_cases();
  // the single-image paths (with and without an im2col, both splits) and the batched one
  cases.push_back({2, 1, 64, 64, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, true});
  cases.push_back({2, 1, 96, 160, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, true});
  cases.push_back({2, 1, 32, 200, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 2, false});
  cases.push_back({2, 6, 32, 48, {12, 12}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 1, true});
  cases.push_back({2, 8, 16, 32, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 2, true});  // implicit, whole images
  // Each case with Winograd off (every path keeps and reads its own packing), then at the default
  // (3x3 convs of 64+ channels take Winograd, with its own kept packing, from their second call on).
  struct WinogradSetting {
    explicit WinogradSetting(const char* v) { ::setenv("EMBER_CONV_WINOGRAD", v, 1); }
    ~WinogradSetting() { ::unsetenv("EMBER_CONV_WINOGRAD"); }
  };
  for (const char* winograd : {"0", ""}) {
    SCOPED_TRACE(std::string("EMBER_CONV_WINOGRAD=") + winograd);
    WinogradSetting setting(winograd);
    uint32_t seed = 5000;
    for (const ConvCase& c : cases) {
      std::mt19937 rng(seed++);
      std::vector<int64_t> xs = {c.N, c.C}, ws = {2 * c.O, c.C / c.groups};
      xs.insert(xs.end(), c.in.begin(), c.in.end());
      ws.insert(ws.end(), c.k.begin(), c.k.end());
      const Shape xshape(xs), wshape(ws);
      auto xv = rounded(random_values(xshape.numel(), rng), DType::f32);
      auto wv = rounded(random_values(wshape.numel(), rng), DType::f32);  // two weight sets, back to back
      auto bv = rounded(random_values(c.O, rng), DType::f32);
      const size_t half = wv.size() / 2;
      const std::vector<double> w0(wv.begin(), wv.begin() + long(half)), w1(wv.begin() + long(half), wv.end());
      ConvOptions o{c.s, c.p, c.d, c.op, c.groups};
      std::optional<DynTensor> bt;
      if (c.bias) bt = make_tensor(bv, Shape{c.O}, DType::f32, false);
      DynTensor x = make_tensor(xv, xshape, DType::f32, false);
      DynTensor both = make_tensor(wv, wshape, DType::f32, false);
      auto conv = [&](const DynTensor& w) {
        return c.nd == 1 ? conv1d(x, w, bt, o) : c.nd == 2 ? conv2d(x, w, bt, o) : conv3d(x, w, bt, o);
      };
      auto expect = [&](DynTensor y, const std::vector<double>& w, const char* what) {
        const auto want = conv_reference(c, false, xv, w, c.bias ? &bv : nullptr);
        const auto got = y.into_data().to_doubles();
        double scale = 1.0;
        for (double v : want) scale = std::max(scale, std::abs(v));
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], tolerance(DType::f32) * scale) << what << ", case in " << c.in[0] << " C " << c.C
                                                                      << " O " << c.O << " at " << i;
      };
      {
        DynTensor lo = narrow(both, 0, 0, c.O), hi = narrow(both, 0, c.O, c.O);  // one buffer, two offsets
        for (int call = 0; call < 3; ++call) {
          expect(conv(lo), w0, "first weights");
          expect(conv(hi), w1, "second weights");
        }
      }
      // `both` is the buffer's last handle now: add writes into it
      const void* before = cpu::as_cpu(both.primitive()).storage->data;
      DynTensor changed = add(std::move(both), 0.25);
      ASSERT_EQ(cpu::as_cpu(changed.primitive()).storage->data, before) << "add did not reuse the buffer";
      std::vector<double> w0b = w0;
      for (double& v : w0b) v += 0.25;
      DynTensor lo = narrow(changed, 0, 0, c.O);
      for (int call = 0; call < 2; ++call) expect(conv(lo), w0b, "weights written in place");
    }
  }
}

// conv_fused's epilogue (+ residual, then a clamp) on every conv path: the cases above, and
// convs that take the single-image paths (each split) and the batched packed one, in f32 (the
// AVX-512 epilogue on the tiles each path finishes), f64 and bf16 (one pass at the end).
TEST_P(ConvThreads, FusedEpilogueMatchesReference) {
  std::vector<ConvCase> cases = conv_cases();
  cases.push_back({2, 1, 64, 64, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, true});   // implicit, pixels
  cases.push_back({2, 1, 96, 160, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, true});    // implicit, channels
  cases.push_back({2, 1, 32, 200, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 2, false});   // image, channels
  cases.push_back({2, 1, 16, 128, {20, 19}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, true});  // image, pixels
  cases.push_back({2, 6, 32, 48, {12, 12}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 1, true});   // packed
  cases.push_back({2, 8, 16, 32, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, true});   // implicit, whole images
  cases.push_back({2, 1, 16, 24, {8, 8}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, true});     // pointwise
  cases.push_back({2, 1, 320, 100, {7, 7}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, true});  // pointwise, turned
  cases.push_back({2, 2, 3, 4, {5, 5}, {5, 5}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, true});       // small output
  struct Bounds {
    std::optional<double> lo, hi;
    bool residual;
  };
  const Bounds bounds[] = {{0.0, std::nullopt, true}, {-0.3, 0.4, false}, {std::nullopt, std::nullopt, true},
                           {0.0, 0.5, true}};
  uint32_t seed = 9000;
  int k = 0;
  for (DType dt : {DType::f32, DType::f64, DType::bf16})
    for (const ConvCase& c : cases) {
      const Bounds& bd = bounds[k++ % 4];
      std::mt19937 rng(seed++);
      std::vector<int64_t> xs = {c.N, c.C}, ws = {c.O, c.C / c.groups}, ys = {c.N, c.O};
      xs.insert(xs.end(), c.in.begin(), c.in.end());
      ws.insert(ws.end(), c.k.begin(), c.k.end());
      for (int64_t v : out_size(c, false)) ys.push_back(v);
      auto xv = rounded(random_values(Shape(xs).numel(), rng), dt);
      auto wv = rounded(random_values(Shape(ws).numel(), rng), dt);
      auto bv = rounded(random_values(c.O, rng), dt);
      auto rv = rounded(random_values(Shape(ys).numel(), rng), dt);
      ConvOptions o{c.s, c.p, c.d, c.op, c.groups};
      std::optional<DynTensor> bt;
      if (c.bias) bt = make_tensor(bv, Shape{c.O}, dt, false);
      ConvEpilogue e{std::nullopt, bd.lo, bd.hi};
      if (bd.residual) e.residual = make_tensor(rv, Shape(ys), dt, false);
      DynTensor y = conv_fused(make_tensor(xv, Shape(xs), dt, false), make_tensor(wv, Shape(ws), dt, false), bt, o, e);
      ASSERT_EQ(y.shape(), Shape(ys));
      auto want = conv_reference(c, false, xv, wv, c.bias ? &bv : nullptr);
      double scale = 1.0;
      for (size_t i = 0; i < want.size(); ++i) {
        if (bd.residual) want[i] += rv[i];
        scale = std::max(scale, std::abs(want[i]));
        if (bd.lo) want[i] = std::max(want[i], *bd.lo);
        if (bd.hi) want[i] = std::min(want[i], *bd.hi);
      }
      const auto got = y.into_data().to_doubles();
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], tolerance(dt) * scale) << "dtype " << dt << " case in " << c.in[0] << " C " << c.C
                                                             << " O " << c.O << " at " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Threads, ConvThreads, ::testing::Values(1, 2, 3));

TEST(Conv, EmptyBatch) {
  auto x = DynTensor::zeros({0, 4, 5, 5});
  auto w = DynTensor::ones({6, 4, 3, 3});
  auto y = conv2d(x, w);
  EXPECT_EQ(y.shape(), Shape({0, 6, 3, 3}));
}

// ---- matmul ----

template <class T>
void check_matmul(const Shape& as, const Shape& bs, bool ta, bool tb, uint32_t seed) {
  constexpr DType dt = dtype_v<T>;
  std::mt19937 rng(seed);
  std::vector<double> av(size_t(as.numel())), bv(size_t(bs.numel()));
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<int> u(std::is_signed_v<T> ? -5 : 0, 5);
    for (auto& v : av) v = u(rng);
    for (auto& v : bv) v = u(rng);
  } else {
    av = rounded(random_values(as.numel(), rng), dt);
    bv = rounded(random_values(bs.numel(), rng), dt);
  }
  auto y = matmul(make_tensor(av, as, dt, ta), make_tensor(bv, bs, dt, tb));
  // Reference: broadcast batch dims by hand.
  const int ra = as.rank(), rb = bs.rank();
  const int64_t M = as[-2], K = as[-1], N = bs[-1];
  Shape ba(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  Shape bo = broadcast_shapes(ba, bb, "test");
  std::vector<int64_t> ys = bo.dims();
  ys.push_back(M);
  ys.push_back(N);
  ASSERT_EQ(y.shape(), Shape(ys));
  const auto got = y.into_data().to_doubles();
  const int64_t nb = bo.numel();
  double scale = 1.0;
  std::vector<double> want(size_t(nb * M * N));
  for (int64_t b = 0; b < nb; ++b) {
    // batch index -> operand batch offsets
    int64_t rem = b, oa = 0, ob = 0, sa = 1, sb = 1;
    for (int d = bo.rank() - 1; d >= 0; --d) {
      const int64_t i = rem % bo[d];
      rem /= bo[d];
      const int da = d - (bo.rank() - (ra - 2)), db = d - (bo.rank() - (rb - 2));
      if (da >= 0) {
        oa += (as[da] == 1 ? 0 : i) * sa;
        sa *= as[da];
      }
      if (db >= 0) {
        ob += (bs[db] == 1 ? 0 : i) * sb;
        sb *= bs[db];
      }
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += av[size_t((oa * M + i) * K + k)] * bv[size_t((ob * K + k) * N + j)];
        if constexpr (std::is_integral_v<T>) acc = double(static_cast<T>(static_cast<int64_t>(acc)));  // wraps
        want[size_t((b * M + i) * N + j)] = acc;
        scale = std::max(scale, std::abs(acc));
      }
  }
  const double tol = std::is_integral_v<T> ? 0.0 : tolerance(dt) * scale;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol) << "matmul " << as << " x " << bs << " dtype " << dt << " at " << i;
}

template <class T>
void matmul_suite() {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 5}, {5, 4}},           {{37, 70}, {70, 45}},         {{2, 3, 40, 33}, {3, 33, 20}},
      {{1, 100}, {100, 70}},      {{60, 100}, {100, 1}},        {{4, 1, 30, 20}, {1, 5, 20, 30}},
      {{6, 50, 64}, {64, 40}},    {{300, 3, 4}, {300, 4, 5}},   {{5, 0}, {0, 3}},
      {{2, 0, 4}, {4, 3}},        {{3, 1, 1, 4}, {2, 4, 1}},
  };
  uint32_t seed = 7;
  for (const auto& [as, bs] : shapes)
    for (int m = 0; m < 4; ++m) check_matmul<T>(as, bs, m & 1, m & 2, seed++);
}

TEST(Matmul, F32) { matmul_suite<float>(); }
TEST(Matmul, F64) { matmul_suite<double>(); }
TEST(Matmul, F16) { matmul_suite<f16>(); }
TEST(Matmul, BF16) { matmul_suite<bf16>(); }
TEST(Matmul, I64) { matmul_suite<int64_t>(); }
TEST(Matmul, I32) { matmul_suite<int32_t>(); }
TEST(Matmul, I16) { matmul_suite<int16_t>(); }
TEST(Matmul, I8) { matmul_suite<int8_t>(); }
TEST(Matmul, U8) { matmul_suite<uint8_t>(); }

TEST(Matmul, Int8WrapsAround) {
  auto a = DynTensor::from_vector<int8_t>({100, 100}, Shape{1, 2});
  auto b = DynTensor::from_vector<int8_t>({2, 1}, Shape{2, 1});
  // 100*2 + 100*1 = 300 -> 300 - 256 = 44 (two's complement wrap, like PyTorch)
  EXPECT_EQ(matmul(a, b).to_vector<int8_t>(), std::vector<int8_t>{44});
}

}  // namespace
}  // namespace ember
