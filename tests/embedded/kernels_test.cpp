// The freestanding kernels (include/ember/kernels/) against the CPU backend's ops, which the
// conformance suite checks against PyTorch: the same results within float rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ember/kernels/conv.hpp"
#include "ember/kernels/dense.hpp"
#include "ember/kernels/elementwise.hpp"
#include "ember/kernels/pool.hpp"
#include "ember/tensor/ops.hpp"

using namespace ember;

namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << "element " << i;
}

struct ConvCase {
  int32_t c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, groups;
};

class KernelConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(KernelConv, MatchesCpuBackend) {
  const ConvCase p = GetParam();
  const int32_t oh = (p.h + 2 * p.ph - p.dh * (p.kh - 1) - 1) / p.sh + 1;
  const int32_t ow = (p.w + 2 * p.pw - p.dw * (p.kw - 1) - 1) / p.sw + 1;
  const std::vector<float> x = random_values(size_t(p.c * p.h * p.w), 1);
  const std::vector<float> w = random_values(size_t(p.m * (p.c / p.groups) * p.kh * p.kw), 2);
  const std::vector<float> b = random_values(size_t(p.m), 3);
  std::vector<float> y(size_t(p.m * oh * ow));
  const kernels::Conv2dShape s{p.c, p.h, p.w, p.m, oh, ow, p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.dh, p.dw, p.groups};
  ASSERT_EQ(kernels::conv2d_f32(s, x.data(), w.data(), b.data(), y.data(), kernels::kRelu6), kernels::Status::ok);
  DynTensor want =
      conv2d(from_vector(x, Shape{1, p.c, p.h, p.w}), from_vector(w, Shape{p.m, p.c / p.groups, p.kh, p.kw}),
             from_vector(b, Shape{p.m}),
             {.stride = {p.sh, p.sw}, .padding = {p.ph, p.pw}, .dilation = {p.dh, p.dw}, .groups = p.groups});
  want = clamp(want, 0.0, 6.0);
  expect_near_all(y, want.to_vector<float>(), 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(Shapes, KernelConv,
                         ::testing::Values(ConvCase{3, 9, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},      // ordinary, padded
                                           ConvCase{1, 49, 10, 8, 10, 4, 2, 2, 5, 1, 1, 1, 1},   // KWS stem
                                           ConvCase{8, 6, 6, 8, 3, 3, 2, 2, 1, 1, 1, 1, 8},      // depthwise, stride 2
                                           ConvCase{8, 5, 5, 16, 3, 3, 1, 1, 2, 2, 2, 2, 8},     // multiplier, dilated
                                           ConvCase{6, 4, 5, 9, 1, 1, 1, 1, 0, 0, 1, 1, 3},      // grouped pointwise
                                           ConvCase{16, 7, 3, 12, 1, 1, 1, 1, 0, 0, 1, 1, 1}));  // pointwise

TEST(Kernels, ConvRejectsBadGroups) {
  const kernels::Conv2dShape s{.in_channels = 3, .out_channels = 4, .groups = 2};
  float x[16] = {}, w[16] = {}, y[16];
  EXPECT_EQ(kernels::conv2d_f32(s, x, w, nullptr, y), kernels::Status::invalid_argument);
  EXPECT_STREQ(kernels::last_error(), "conv2d: groups must divide the input and output channels");
  kernels::clear_error();
  EXPECT_STREQ(kernels::last_error(), "");
  EXPECT_THROW(kernels::check_status(kernels::conv2d_f32(s, x, w, nullptr, y)), Error);
}

TEST(Kernels, DenseMatchesMatmul) {
  const std::vector<float> x = random_values(3 * 20, 4), w = random_values(7 * 20, 5), b = random_values(7, 6);
  std::vector<float> y(3 * 7);
  kernels::dense_f32(3, 20, 7, x.data(), w.data(), b.data(), y.data(), kernels::kRelu);
  DynTensor want = relu(matmul(from_vector(x, Shape{3, 20}), transpose(from_vector(w, Shape{7, 20}), 0, 1)) +
                        from_vector(b, Shape{7}));
  expect_near_all(y, want.to_vector<float>(), 1e-5f);
}

TEST(Kernels, PoolsMatchCpuBackend) {
  const std::vector<float> x = random_values(2 * 7 * 9, 7);
  const DynTensor xt = from_vector(x, Shape{1, 2, 7, 9});
  // 3x3 windows, stride 2, padding 1: out 4 x 5
  const kernels::Pool2dShape s{2, 7, 9, 4, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  std::vector<float> y(2 * 4 * 5);
  kernels::max_pool2d_f32(s, x.data(), y.data());
  expect_near_all(y, max_pool2d(xt, {.kernel_size = {3}, .stride = {2}, .padding = {1}}).to_vector<float>(), 0.0f);
  for (bool include_pad : {false, true}) {
    kernels::avg_pool2d_f32(s, include_pad, x.data(), y.data());
    expect_near_all(
        y,
        avg_pool2d(xt, {.kernel_size = {3}, .stride = {2}, .padding = {1}, .count_include_pad = include_pad})
            .to_vector<float>(),
        1e-6f);
  }
  std::vector<float> g(2);
  kernels::global_avg_pool_f32(2, 63, x.data(), g.data());
  expect_near_all(g, adaptive_avg_pool2d(xt, {1}).to_vector<float>(), 1e-6f);
}

TEST(Kernels, ActivationsMatchCpuBackend) {
  std::vector<float> x = random_values(4 * 12, 8);
  for (float& v : x) v *= 6.0f;  // reach the saturated ends of sigmoid and tanh
  x.push_back(1e-5f);
  x.push_back(-0.03f);
  x.push_back(95.0f);
  x.push_back(-95.0f);
  const DynTensor xt = from_vector(x, Shape{int64_t(x.size())});
  std::vector<float> y(x.size());
  kernels::sigmoid_f32(int32_t(x.size()), x.data(), y.data());
  expect_near_all(y, sigmoid(xt).to_vector<float>(), 3e-7f);
  kernels::tanh_f32(int32_t(x.size()), x.data(), y.data());
  expect_near_all(y, tanh(xt).to_vector<float>(), 3e-7f);
  std::vector<float> rows(x.begin(), x.begin() + 48), sm(48);
  kernels::softmax_f32(4, 12, rows.data(), sm.data());
  expect_near_all(sm, softmax(from_vector(rows, Shape{4, 12}), -1).to_vector<float>(), 1e-6f);
  for (float v : {-87.0f, -10.0f, -1.0f, -1e-3f, 0.0f, 0.5f, 1.0f, 20.0f, 88.5f})
    EXPECT_NEAR(kernels::exp_f32(v), std::exp(v), 2.5e-7f * std::exp(v)) << v;
  EXPECT_EQ(kernels::exp_f32(100.0f), kernels::kInfinity);
  EXPECT_EQ(kernels::exp_f32(-100.0f), 0.0f);
}

TEST(Kernels, DataMovementMatchesCpuBackend) {
  const std::vector<float> a = random_values(2 * 3 * 4, 9), b = random_values(2 * 5 * 4, 10);
  std::vector<float> y(2 * 8 * 4);
  const float* parts[] = {a.data(), b.data()};
  const int32_t widths[] = {12, 20};
  kernels::concat_f32(2, 2, parts, widths, y.data());
  expect_near_all(y, cat({from_vector(a, Shape{2, 3, 4}), from_vector(b, Shape{2, 5, 4})}, 1).to_vector<float>(), 0.0f);
  const int32_t dims[] = {2, 3, 4}, perm[] = {2, 0, 1};
  std::vector<float> t(24);
  ASSERT_EQ(kernels::transpose_f32(3, dims, perm, a.data(), t.data()), kernels::Status::ok);
  expect_near_all(t, permute(from_vector(a, Shape{2, 3, 4}), {2, 0, 1}).to_vector<float>(), 0.0f);
}

}  // namespace
