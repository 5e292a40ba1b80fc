// fake_quantize: the forward pass against (clamp(round_half_even(x / s) + zp, qmin, qmax) - zp) * s
// in double; the backward pass against torch.fake_quantize_per_tensor_affine's gradient, the
// upstream gradient where qmin <= round(x / s) + zp <= qmax and 0 elsewhere (the rounded values
// are right at the bounds in some of the inputs below). The STE surrogate is x itself inside the
// range, so finite differences of x -> x (slope 1) and of a clamped input (slope 0) are the
// reference: the test checks the gradient of a loss against both.
#include <cmath>

#include "quant_test_util.hpp"

using namespace ember;
using namespace ember::quant;
using quant_test::expect_error;
using quant_test::normal_values;
using quant_test::round_even;

namespace {

double fq_ref(double x, double s, double zp, double qn, double qx) {
  return (std::clamp(round_even(x / s) + zp, qn, qx) - zp) * s;
}
bool inside(double x, double s, double zp, double qn, double qx) {
  const double r = round_even(x / s) + zp;
  return r >= qn && r <= qx;
}

}  // namespace

TEST(FakeQuantize, ForwardAndGradientPerTensor) {
  Device dev = Device::cpu().autodiff();
  const double s = 0.5, zp = 3, qn = -8, qx = 7;
  // round(x / 0.5) + 3 in [-8, 7] <=> round(2x) in [-11, 4]; bounds: 2.0 -> 4 (in), 2.26 -> 4.52 -> 5 (out),
  // 2.24 -> 4 (in), -5.5 -> -11 (in), -5.76 -> -12 (out), 2.25 -> 4.5 -> 4 (half to even: in)
  std::vector<float> xv = {2.0f, 2.26f, 2.24f, -5.5f, -5.76f, 2.25f, 0.1f, -1.3f, 100.0f, -100.0f};
  std::vector<float> gv = normal_values(xv.size(), 60);
  DynTensor x = DynTensor::from_vector<float>(xv, Shape{int64_t(xv.size())}, dev).require_grad();
  DynTensor up = DynTensor::from_vector<float>(gv, Shape{int64_t(xv.size())}, dev);
  DynTensor y = fake_quantize(x, s, int64_t(zp), int64_t(qn), int64_t(qx));
  std::vector<float> yv = y.to_vector<float>();
  Gradients grads = mul(y, up).sum().backward();
  std::vector<float> g = x.grad(grads)->to_vector<float>();
  for (size_t i = 0; i < xv.size(); ++i) {
    EXPECT_NEAR(yv[i], fq_ref(xv[i], s, zp, qn, qx), 1e-6) << i;
    EXPECT_EQ(g[i], inside(xv[i], s, zp, qn, qx) ? gv[i] : 0.0f) << i;
  }
  const std::vector<float> mask = {1, 0, 1, 1, 0, 1, 1, 1, 0, 0};  // written out from the comment above
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(g[i], mask[i] * gv[i]) << i;
}

TEST(FakeQuantize, GradientMatchesFiniteDifferencesOfTheSurrogate) {
  // The STE surrogate of fake_quantize is the identity inside the range and a constant outside:
  // finite differences of sum(w * surrogate(x)) give w inside, 0 outside.
  Device dev = Device::cpu().autodiff();
  const double s = 0.1;
  std::vector<float> xv = normal_values(64, 61, 10.0f);
  std::vector<float> wv = normal_values(64, 62);
  DynTensor x = DynTensor::from_vector<float>(xv, Shape{8, 8}, dev).require_grad();
  DynTensor w = DynTensor::from_vector<float>(wv, Shape{8, 8}, dev);
  Gradients grads = mul(fake_quantize(x, s, 0, -128, 127), w).sum().backward();
  std::vector<float> g = x.grad(grads)->to_vector<float>();
  auto surrogate = [&](double v) { return std::clamp(v, -128.5 * s, 127.5 * s); };
  const double h = 1e-4;
  int in = 0, out = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (std::fabs(std::fabs(xv[i]) - 12.8) < 0.1) continue;  // too close to the edge for a difference
    const double fd = wv[i] * (surrogate(xv[i] + h) - surrogate(xv[i] - h)) / (2 * h);
    EXPECT_NEAR(g[i], fd, 1e-5) << i;
    (fd == 0 ? out : in) += 1;
  }
  EXPECT_GT(in, 10);  // both cases occur
  EXPECT_GT(out, 10);
}

TEST(FakeQuantize, PerChannel) {
  Device dev = Device::cpu().autodiff();
  std::vector<float> xv = normal_values(3 * 4, 63, 2.0f), gv = normal_values(12, 64);
  const std::vector<float> sv = {0.05f, 0.2f, 0.5f};
  const std::vector<int64_t> zv = {0, 2, -3};
  DynTensor x = DynTensor::from_vector<float>(xv, Shape{3, 4}, dev).require_grad();
  DynTensor y = fake_quantize(x, DynTensor::from_vector<float>(sv, Shape{3}, dev),
                              DynTensor::from_vector<int64_t>(zv, Shape{3}, dev), 0, -8, 7);
  Gradients grads = mul(y, DynTensor::from_vector<float>(gv, Shape{3, 4}, dev)).sum().backward();
  std::vector<float> yv = y.to_vector<float>(), g = x.grad(grads)->to_vector<float>();
  int in = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    const size_t c = i / 4;
    EXPECT_NEAR(yv[i], fq_ref(xv[i], sv[c], double(zv[c]), -8, 7), 1e-6) << i;
    const bool ok = inside(xv[i], sv[c], double(zv[c]), -8, 7);
    EXPECT_EQ(g[i], ok ? gv[i] : 0.0f) << i;
    in += ok;
  }
  EXPECT_GT(in, 0);
  EXPECT_LT(in, 12);
}

TEST(FakeQuantize, UntrackedAndOtherDtypes) {
  std::vector<float> xv = normal_values(16, 65);
  DynTensor x = DynTensor::from_vector<float>(xv, Shape{16}, Device::cpu());
  std::vector<float> y = fake_quantize(x, 0.03, -2, -128, 127).to_vector<float>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(y[i], fq_ref(xv[i], 0.03, -2, -128, 127), 1e-6);
  DynTensor xd = x.cast(DType::f64);
  DynTensor yd = fake_quantize(xd, 0.03, -2, -128, 127);
  EXPECT_EQ(yd.dtype(), DType::f64);
  DynTensor yh = fake_quantize(x.cast(DType::bf16), 0.25, 0, 0, 15);
  EXPECT_EQ(yh.dtype(), DType::bf16);
}

TEST(FakeQuantize, QuantizationAwareTrainingConverges) {
  // Fit w so that fake_quantize(w) * x matches 0.4 * x, a point of the 0.1 grid: the STE
  // gradient moves w from -0.5 until its quantized value is 0.4, where the gradient vanishes.
  Device dev = Device::cpu().autodiff();
  DynTensor x = DynTensor::from_vector<float>(normal_values(32, 66), Shape{32}, dev);
  DynTensor target = mul(x, 0.4);
  double w = -0.5;
  for (int step = 0; step < 200; ++step) {
    DynTensor wt = DynTensor::full({}, w, DType::f32, dev).require_grad();
    DynTensor loss = square(sub(mul(fake_quantize(wt, 0.1, 0, -128, 127), x), target)).mean();
    w -= 0.1 * wt.grad(loss.backward())->item();
  }
  EXPECT_NEAR(round_even(w / 0.1) * 0.1, 0.4, 1e-6);
}

TEST(FakeQuantize, BadInput) {
  DynTensor x = DynTensor::from_vector<float>({1.0f, 2.0f}, Shape{2});
  for (double bad : {0.0, -1.0, double(NAN), double(INFINITY)})
    expect_error([&] { fake_quantize(x, bad, 0, -128, 127); }, {"quant::fake_quantize", "scale is"});
  expect_error([&] { fake_quantize(x, 1e-50, 0, -128, 127); }, {"is 0 in f32"});
  expect_error([&] { fake_quantize(x, 0.1, 200, -128, 127); }, {"zero_point 200", "[-128, 127]"});
  expect_error([&] { fake_quantize(x, 0.1, 0, 5, 5); }, {"qmin 5 must be less than qmax 5"});
  expect_error([&] { fake_quantize(DynTensor::arange(0, 3), 0.1, 0, -8, 7); }, {"quant::fake_quantize", "i64"});
  DynTensor s = DynTensor::from_vector<float>({0.1f, 0.0f}, Shape{2}), z = DynTensor::zeros({2}, DType::i32);
  expect_error([&] { fake_quantize(x, s, z, 0, -8, 7); }, {"scale[1] is 0"});
  expect_error([&] { fake_quantize(x, DynTensor::full({2}, 0.1, DType::f32), DynTensor::full({2}, 9, DType::i32), 0, -8, 7); },
               {"zero_point[0] is 9"});
  expect_error([&] { fake_quantize(x, s, z, 1, -8, 7); }, {"axis 1 is out of range"});
  expect_error([&] { fake_quantize(x, DynTensor::full({3}, 0.1, DType::f32), z, 0, -8, 7); }, {"1-d with 2 entries"});
}
