// The autodiff decorator's API and engine: gradients, accumulation, detach/no_grad, graph
// lifetime, errors, checkpointing, threads, and second order (against PyTorch values in
// second_order.json, made by gen_second_order.py). Per-op gradients are checked by the
// autodiff conformance suite.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "../core/op_recorder.hpp"
#include "ember/ember.hpp"
#include "ember/nn/loss.hpp"

namespace ember {
namespace {

Device ad() { return Device::cpu().autodiff(); }

DynTensor vec(std::vector<double> v, Shape s, const Device& d = ad()) {
  return DynTensor::from_data(TensorData::from_doubles(v, std::move(s), DType::f64), d);
}

void expect_near(const DynTensor& got, std::vector<double> want, double tol = 1e-10) {
  auto g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}

TEST(Autodiff, SquareSumGradientIsTwoX) {
  auto w = vec({1, -2, 3}, {3}).require_grad();
  Gradients g = sum(w * w).backward();
  expect_near(*w.grad(g), {2, -4, 6});
  expect_near(w, {1, -2, 3});  // parameters are never mutated
  EXPECT_FALSE(w.grad(g)->is_require_grad());
  EXPECT_EQ(w.grad(g)->device(), ad());
}

TEST(Autodiff, AccumulatesWhenATensorFeedsSeveralOps) {
  auto x = vec({0.5, 2}, {2}).require_grad();
  auto y = sum(x * x + exp(x) + x);  // 2x + e^x + 1
  Gradients g = y.backward();
  expect_near(*x.grad(g), {1 + std::exp(0.5) + 1, 4 + std::exp(2.0) + 1});
}

TEST(Autodiff, BroadcastingSumsGradientsToTheInputShape) {
  auto a = vec({1, 2, 3, 4, 5, 6}, {2, 3}).require_grad();
  auto b = vec({10, 20, 30}, {3}).require_grad();
  Gradients g = sum(a * b).backward();
  expect_near(*a.grad(g), {10, 20, 30, 10, 20, 30});
  expect_near(*b.grad(g), {5, 7, 9});
}

TEST(Autodiff, UpstreamGradientForNonScalarRoots) {
  auto x = vec({1, 2, 3}, {3}).require_grad();
  auto y = x * x;
  Gradients g = y.backward(vec({1, 0.5, -1}, {3}));
  expect_near(*x.grad(g), {2, 2, -6});
}

TEST(Autodiff, LeafOutsideTheGraphHasNoGradient) {
  auto x = vec({1, 2}, {2}).require_grad();
  auto unused = vec({3, 4}, {2}).require_grad();
  Gradients g = sum(x).backward();
  EXPECT_TRUE(x.grad(g).has_value());
  EXPECT_FALSE(unused.grad(g).has_value());
  EXPECT_TRUE(g.remove(x));
  EXPECT_FALSE(x.grad(g).has_value());
  EXPECT_FALSE(g.remove(x));
}

TEST(Autodiff, DetachAndNoGradStopGradients) {
  auto x = vec({1, 2}, {2}).require_grad();
  EXPECT_TRUE(x.is_require_grad());
  EXPECT_FALSE(x.detach().is_require_grad());
  Gradients g = sum(x * x.detach()).backward();  // d/dx (x * c) = c
  expect_near(*x.grad(g), {1, 2});
  {
    NoGradGuard off;
    EXPECT_FALSE(grad_enabled());
    EXPECT_FALSE((x * 2.0).is_require_grad());
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_FALSE(no_grad([&] { return exp(x); }).is_require_grad());
  EXPECT_TRUE(exp(x).is_require_grad());
}

TEST(Autodiff, MovingToAndFromTheInnerDeviceKeepsValuesAndDropsTracking) {
  auto plain = vec({1, 2, 3}, {3}, Device::cpu());
  auto x = plain.to(ad());  // shares the value: no copy through the host
  EXPECT_EQ(x.device(), ad());
  EXPECT_FALSE(x.is_require_grad());
  auto w = x.require_grad();
  Gradients g = sum(w * w).backward();
  expect_near(*w.grad(g), {2, 4, 6});
  auto back = (w * 2.0).to(Device::cpu());  // untracked, like a copy
  EXPECT_EQ(back.device(), Device::cpu());
  expect_near(back, {2, 4, 6});
  auto other = w.to(Device::cpu().autodiff(Checkpointing::balanced));
  EXPECT_FALSE(other.is_require_grad());
  expect_near(other, {1, 2, 3});
  expect_near(plain, {1, 2, 3});
}

TEST(Autodiff, IntegerAndBoolOutputsStopTheGradient) {
  auto x = vec({1, 5, 2}, {3}).require_grad();
  EXPECT_FALSE(argmax(x).is_require_grad());
  EXPECT_FALSE(greater(x, 1.5).is_require_grad());
  auto [v, i] = max_dim(x, 0);
  EXPECT_TRUE(v.is_require_grad());
  EXPECT_FALSE(i.is_require_grad());
  Gradients g = v.backward();
  expect_near(*x.grad(g), {0, 1, 0});
}

TEST(Autodiff, IntermediateGradientsOnRequest) {
  auto x = vec({1, 2}, {2}).require_grad();
  auto h = (x * 3.0).require_grad();  // keep h's gradient
  auto y = sum(h * h);
  Gradients g = y.backward();
  expect_near(*h.grad(g), {6, 12});
  expect_near(*x.grad(g), {18, 36});
}

// Several slices of one tensor: their gradients are placed into one gradient of the whole
// (concatenated where they are runs along one dim, written into zeros otherwise, overlapping
// parts added); expected values from the elementwise formula.
TEST(Autodiff, GradientsOfSlicesOfOneTensor) {
  std::vector<double> xv(12);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = 0.25 * double(i) - 1;
  {  // three row blocks that tile the tensor (an attention projection's q, k, v), plus a dense use
    auto x = vec(xv, {6, 2}).require_grad();
    auto loss = sum(narrow(x, 0, 0, 2)) + sum(square(narrow(x, 0, 2, 2))) + sum(narrow(x, 0, 4, 2) * 3) + sum(x * 0.5);
    std::vector<double> want(12);
    for (size_t i = 0; i < 12; ++i) want[i] = (i < 4 ? 1 : i < 8 ? 2 * xv[i] : 3) + 0.5;
    expect_near(*x.grad(loss.backward()), want);
  }
  {  // runs along dim 1, out of order, with a gap (column 1 gets no gradient)
    auto x = vec(xv, {3, 4}).require_grad();
    auto loss = sum(narrow(x, 1, 2, 2) * 2) + sum(square(narrow(x, 1, 0, 1)));
    std::vector<double> want(12);
    for (size_t i = 0; i < 12; ++i) want[i] = i % 4 == 0 ? 2 * xv[i] : i % 4 == 1 ? 0 : 2;
    expect_near(*x.grad(loss.backward()), want);
  }
  {  // overlapping and strided boxes: rows 0..2, rows 1 and 3, columns 0 and 2
    std::vector<double> yv(15);
    for (size_t i = 0; i < yv.size(); ++i) yv[i] = 0.5 * double(i) - 3;
    auto y = vec(yv, {5, 3}).require_grad();
    auto a = slice(y, {Slice{0, 3}});
    auto b = slice(y, {Slice{1, 5, 2}});
    auto c = slice(y, {Slice{}, Slice{0, 3, 2}});
    auto loss = sum(square(a)) + sum(b * 7) + sum(c * 5);
    std::vector<double> want(15);
    for (size_t i = 0; i < 15; ++i) {
      const size_t r = i / 3, col = i % 3;
      want[i] = (r < 3 ? 2 * yv[i] : 0) + (r == 1 || r == 3 ? 7 : 0) + (col != 1 ? 5 : 0);
    }
    expect_near(*y.grad(loss.backward()), want);
  }
}

TEST(Autodiff, GradientsOfSlicesOfAnIntermediateAndSecondOrder) {
  auto x = vec({1, -2, 0.5, 3}, {4}).require_grad();
  {
    auto h = (x * 3.0).require_grad();  // h = 3, -6, 1.5, 9
    auto loss = sum(square(narrow(h, 0, 0, 2))) + sum(narrow(h, 0, 2, 2));
    Gradients g = loss.backward();
    expect_near(*h.grad(g), {6, -12, 1, 1});
    expect_near(*x.grad(g), {18, -36, 3, 3});
  }
  // f = sum(x[:2]^3) + sum(x[2:]^2): grad 3x^2 | 2x, Hessian-vector product 6xv | 2v
  auto f = sum(narrow(x, 0, 0, 2) * square(narrow(x, 0, 0, 2))) + sum(square(narrow(x, 0, 2, 2)));
  auto g = *x.grad(f.backward(BackwardOptions{.create_graph = true}));
  expect_near(g, {3, 12, 1, 6});
  auto v = vec({0.5, 1, -1, 2}, {4});
  expect_near(*x.grad(sum(g * v).backward()), {3, -12, -2, 4});
}

TEST(Autodiff, RetainGraphAllowsASecondBackward) {
  auto x = vec({1, 2}, {2}).require_grad();
  auto y = sum(exp(x));
  Gradients g1 = y.backward({.retain_graph = true});
  Gradients g2 = y.backward();
  expect_near(*x.grad(g2), x.grad(g1)->to_vector<double>());
}

TEST(Autodiff, DroppingAGraphWithoutBackwardFreesEverything) {
  Device dev = ad();
  auto w = DynTensor::normal({64, 64}, 0, 1, DType::f32, dev).require_grad();
  auto x = DynTensor::normal({32, 64}, 0, 1, DType::f32, dev);
  dev.memory_cleanup();
  const int64_t before = dev.memory_stats().in_use;
  for (int step = 0; step < 3; ++step) {
    DynTensor h = x;
    for (int i = 0; i < 10; ++i) h = tanh(matmul(h, w));
    // h (and its graph of saved activations) goes out of scope here, without backward
  }
  EXPECT_EQ(dev.memory_stats().in_use, before);
  // A very long chain is destroyed without recursion.
  {
    auto s = vec({1}, {1}).require_grad();
    DynTensor h = s;
    for (int i = 0; i < 100000; ++i) h = h + 1.0;
  }
  SUCCEED();
}

// ---- bad input ----
TEST(AutodiffErrors, BackwardOfANonScalarNeedsAnUpstreamGradient) {
  auto x = vec({1, 2, 3, 4}, {2, 2}).require_grad();
  try {
    (x * 2.0).backward();
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 2]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a scalar"), std::string::npos) << e.what();
  }
}

TEST(AutodiffErrors, DeviceWithoutAutodiff) {
  auto x = vec({1, 2}, {2}, Device::cpu());
  try {
    x.require_grad();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no autodiff"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2]"), std::string::npos) << e.what();
  }
  try {
    sum(x).backward();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no autodiff"), std::string::npos) << e.what();
  }
  auto i = DynTensor::from_vector<int64_t>({1, 2}, {2}, ad());
  EXPECT_THROW(i.require_grad(), Error);  // integer tensors cannot require grad
}

TEST(AutodiffErrors, BackwardTwiceThroughAFreedGraph) {
  auto x = vec({1, 2}, {2}).require_grad();
  auto y = sum(exp(x) * x);
  y.backward();
  try {
    y.backward();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already freed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("retain_graph"), std::string::npos) << e.what();
  }
}

TEST(AutodiffErrors, GradOfATensorOfAnotherGraph) {
  auto x = vec({1, 2}, {2}).require_grad();
  auto a = (x * 2.0).require_grad();
  auto b = x * 3.0;
  Gradients gb = sum(b).backward();
  try {
    a.grad(gb);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another graph"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2]"), std::string::npos) << e.what();
  }
  auto untracked = vec({1}, {1});
  EXPECT_THROW(untracked.grad(gb), Error);
  EXPECT_THROW(sum(x).backward(vec({1, 2}, {2})), Error);  // upstream shape mismatch
}

// ---- max_pool without indices ----
// max_pool1d/2d (values only) under autodiff: with grad, the decorator runs the pool with its
// indices (the rule's record_as) and the gradient is the indexed op's and the finite differences';
// without grad the values-only pool reaches the backend.
TEST(Autodiff, ValuesOnlyMaxPoolGradient) {
  struct Case {
    Shape shape;
    PoolOptions o;
  };
  const std::vector<Case> cases = {
      {{2, 3, 7, 8}, {.kernel_size = {3}, .stride = {2}, .padding = {1}, .ceil_mode = true}},
      {{2, 9, 6}, {.kernel_size = {3, 2}, .stride = {2, 1}, .padding = {1, 0}, .dilation = {2, 2}}},
      {{3, 11}, {.kernel_size = {4}, .stride = {3}, .padding = {2}, .dilation = {2}, .ceil_mode = true}},
  };
  for (Checkpointing cp : {Checkpointing::none, Checkpointing::balanced})
    for (const Case& c : cases) {
      const int nd = c.shape.rank() == 4 || (c.shape.rank() == 3 && c.o.kernel_size.size() == 2) ? 2 : 1;
      auto pool = [&](const DynTensor& x) { return nd == 2 ? max_pool2d(x, c.o) : max_pool1d(x, c.o); };
      auto pool_indexed = [&](const DynTensor& x) {
        return nd == 2 ? max_pool2d_with_indices(x, c.o).first : max_pool1d_with_indices(x, c.o).first;
      };
      auto recorder = std::make_shared<test::OpRecorder>(Device::cpu().backend_ptr());
      Device dev = Device(recorder).autodiff(cp);
      // distinct values 0.01 apart (no ties, so finite differences of step 1e-4 keep every argmax)
      const int64_t n = c.shape.numel();
      std::vector<double> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = double((i * 37) % n) * 0.01 - 1.0;
      const Shape out = pool(vec(v, c.shape, Device::cpu())).shape();
      std::vector<double> wv(size_t(out.numel()));
      for (size_t i = 0; i < wv.size(); ++i) wv[i] = 0.5 + double(i % 7);
      auto loss = [&](auto&& f, const DynTensor& x) { return sum(f(x) * vec(wv, out, x.device())); };

      auto x = vec(v, c.shape, dev).require_grad();
      Gradients g = loss(pool, x).backward();
      auto x2 = vec(v, c.shape, dev).require_grad();
      Gradients g2 = loss(pool_indexed, x2).backward();
      const std::string what = "max_pool" + std::to_string(nd) + "d " + c.shape.str();
      EXPECT_EQ(x.grad(g)->to_vector<double>(), x2.grad(g2)->to_vector<double>()) << what;
      // every recorded pool ran with its indices
      const std::vector<bool> recorded = test::max_pool_indices(*recorder);
      EXPECT_TRUE(std::all_of(recorded.begin(), recorded.end(), [](bool b) { return b; })) << what;

      std::vector<double> fd(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        auto at = [&](double h) {
          std::vector<double> p = v;
          p[size_t(i)] += h;
          return loss(pool, vec(p, c.shape, Device::cpu())).item<double>();
        };
        fd[size_t(i)] = (at(1e-4) - at(-1e-4)) / 2e-4;
      }
      expect_near(*x.grad(g), fd, 1e-8);

      recorder->clear();
      {
        NoGradGuard no_grad;
        DynTensor y = pool(x);
        EXPECT_FALSE(y.is_require_grad());
      }
      pool(vec(v, c.shape, dev));  // untracked input
      EXPECT_EQ(test::max_pool_indices(*recorder), (std::vector<bool>{false, false})) << what;
    }
}

// ---- checkpointing ----
struct MlpResult {
  std::vector<std::vector<float>> grads;
  int64_t peak = 0;
};
MlpResult mlp24_step(Checkpointing c) {
  Device dev = Device::cpu().autodiff(c);
  dev.seed(7);
  std::vector<DynTensor> ws, bs;
  for (int i = 0; i < 24; ++i) {
    ws.push_back((DynTensor::normal({128, 128}, 0, 1, DType::f32, dev) * (1.0 / std::sqrt(128.0))).require_grad());
    bs.push_back(DynTensor::zeros({128}, DType::f32, dev).require_grad());
  }
  auto x = DynTensor::normal({256, 128}, 0, 1, DType::f32, dev);
  dev.memory_cleanup();
  dev.backend().reset_peak_memory();
  MlpResult r;
  {
    DynTensor h = x;
    for (int i = 0; i < 24; ++i) h = gelu(matmul(h, ws[i]) + bs[i]);
    Gradients g = mean(square(h)).backward();
    for (int i = 0; i < 24; ++i) r.grads.push_back(ws[i].grad(g)->to_vector<float>());
  }
  r.peak = dev.memory_stats().peak;
  return r;
}

TEST(AutodiffCheckpointing, BalancedGivesIdenticalGradientsWithLessMemory) {
  MlpResult none = mlp24_step(Checkpointing::none);
  MlpResult bal = mlp24_step(Checkpointing::balanced);
  ASSERT_EQ(none.grads.size(), bal.grads.size());
  for (size_t i = 0; i < none.grads.size(); ++i) EXPECT_EQ(none.grads[i], bal.grads[i]) << "layer " << i;
  EXPECT_LT(bal.peak, none.peak);
  std::cout << "mlp24 peak bytes: none " << none.peak << ", balanced " << bal.peak << "\n";
}

// ---- threads ----
TEST(AutodiffThreads, IndependentGraphsBackpropagateConcurrently) {
  auto w = vec({0.5, -1, 2}, {3}).require_grad();
  auto work = [&](double scale, std::vector<double>* out) {
    for (int it = 0; it < 200; ++it) {
      auto x = vec({scale, 2 * scale, 3 * scale}, {3});
      Gradients g = sum(tanh(w * x)).backward();
      *out = w.grad(g)->to_vector<double>();
    }
  };
  std::vector<double> g1, g2;
  std::thread t1(work, 1.0, &g1), t2(work, -0.5, &g2);
  t1.join();
  t2.join();
  for (int i = 0; i < 3; ++i) {
    double wv[] = {0.5, -1, 2};
    for (auto [s, g] : {std::pair{1.0, &g1}, std::pair{-0.5, &g2}}) {
      double x = s * (i + 1), t = std::tanh(wv[i] * x);
      EXPECT_NEAR((*g)[i], (1 - t * t) * x, 1e-12);
    }
  }
}

TEST(AutodiffThreads, GradientsComputedOnAnotherThreadAndSentBack) {
  auto w = vec({1, 2, 3}, {3}).require_grad();
  Gradients g;
  std::thread worker([&] { g = sum(w * w * w).backward(); });  // the "module" is used there
  worker.join();
  expect_near(*w.grad(g), {3, 12, 27});
  auto updated = no_grad([&] { return w - 0.1 * *w.grad(g); });  // the update happens here
  expect_near(updated, {0.7, 0.8, 0.3});
}

// ---- second order, against PyTorch ----
using Json = nlohmann::json;
const Json& so_cases() {
  static Json j = [] {
    std::ifstream in(EMBER_AUTODIFF_DIR "/second_order.json");
    return Json::parse(in)["cases"];
  }();
  return j;
}
DynTensor tj(const Json& j, bool grad = false) {
  Shape s(j["shape"].get<std::vector<int64_t>>());
  auto t = DynTensor::from_data(TensorData::from_doubles(j["data"].get<std::vector<double>>(), s, DType::f64), ad());
  return grad ? t.require_grad() : t;
}
void expect_json(const DynTensor& got, const Json& want, double tol = 1e-9) {
  ASSERT_EQ(got.shape(), Shape(want["shape"].get<std::vector<int64_t>>()));
  expect_near(got, want["data"].get<std::vector<double>>(), tol);
}
const BackwardOptions kCreate{.create_graph = true};

TEST(AutodiffSecondOrder, HessianVectorProductOfActivations) {
  const Json& c = so_cases()["hvp_elementwise"];
  auto x = tj(c["x"], true);
  auto v = tj(c["v"]);
  auto f = sum(tanh(x) * exp(0.5 * x) + sigmoid(x) * square(x) + gelu(x) + silu(x) + softplus(x) +
               sin(x) * log1p(square(x)));
  auto g = *x.grad(f.backward(kCreate));
  EXPECT_TRUE(g.is_require_grad());
  expect_json(g, c["grad"]);
  expect_json(*x.grad(sum(g * v).backward()), c["hvp"]);
}

TEST(AutodiffSecondOrder, HessianVectorProductThroughAnMlp) {
  const Json& c = so_cases()["hvp_mlp"];
  auto x = tj(c["x"]);
  auto w1 = tj(c["w1"], true), w2 = tj(c["w2"], true), b1 = tj(c["b1"], true);
  auto loss = mean(square(matmul(tanh(matmul(x, w1) + b1), w2)));
  auto g = *w1.grad(loss.backward(kCreate));
  expect_json(g, c["grad_w1"]);
  Gradients h = sum(g * tj(c["v"])).backward();
  expect_json(*w1.grad(h), c["hvp_w1"]);
  expect_json(*w2.grad(h), c["hvp_w2"]);
  expect_json(*b1.grad(h), c["hvp_b1"]);
}

TEST(AutodiffSecondOrder, WganGradientPenalty) {
  const Json& c = so_cases()["wgan_gp"];
  auto w1 = tj(c["w1"], true), b1 = tj(c["b1"], true), w2 = tj(c["w2"], true), b2 = tj(c["b2"], true);
  auto eps = tj(c["eps"]);
  auto xhat = (eps * tj(c["real"]) + (1.0 - eps) * tj(c["fake"])).require_grad();
  auto critic = matmul(leaky_relu(matmul(xhat, w1) + b1, 0.2), w2) + b2;
  auto gx = *xhat.grad(sum(critic).backward(kCreate));
  auto gp = mean(square(norm(gx, 2, {1}) - 1.0));
  expect_json(gp, c["gp"]);
  auto loss = mean(critic) + 10.0 * gp;
  expect_json(loss, c["loss"]);
  Gradients g = loss.backward();
  expect_json(*w1.grad(g), c["grad_w1"]);
  expect_json(*b1.grad(g), c["grad_b1"]);
  expect_json(*w2.grad(g), c["grad_w2"]);
  expect_json(*b2.grad(g), c["grad_b2"]);
}

TEST(AutodiffSecondOrder, MixedSecondDerivativeThroughBroadcastMatmul) {
  const Json& c = so_cases()["matmul_mixed"];
  auto a = tj(c["a"], true), b = tj(c["b"], true);
  auto ga = *a.grad(sum(sigmoid(matmul(a, b))).backward(kCreate));
  expect_json(ga, c["grad_a"]);
  Gradients g = sum(square(ga)).backward();
  expect_json(*a.grad(g), c["d_a"]);
  expect_json(*b.grad(g), c["d_b"]);
}

TEST(AutodiffSecondOrder, HessianVectorProductOfReductions) {
  const Json& c = so_cases()["hvp_reductions"];
  auto x = tj(c["x"], true);
  auto f = sum(logsumexp(x, {1})) + sum(var(x, {0})) + sum(softmax(x, 1) * x) + sum(norm(x, 2, {1})) +
           sum(square(mean(exp(x), {1}))) + sum(max(x, {1}));
  auto g = *x.grad(f.backward(kCreate));
  expect_json(g, c["grad"]);
  expect_json(*x.grad(sum(g * tj(c["v"])).backward()), c["hvp"]);
}

TEST(AutodiffSecondOrder, ThirdOrder) {
  const Json& c = so_cases()["third_order"];
  auto x = tj(c["x"], true);
  auto g1 = *x.grad(sum(pow(x, 4) * sin(x)).backward(kCreate));
  auto g2 = *x.grad(sum(g1).backward(kCreate));
  auto g3 = *x.grad(sum(g2).backward());
  expect_json(g1, c["g1"]);
  expect_json(g2, c["g2"]);
  expect_json(g3, c["g3"]);
}

// cross_entropy's fused backward (first order) and its composed form (create_graph) agree with
// torch, and the composed form differentiates again.
TEST(AutodiffSecondOrder, HessianVectorProductOfCrossEntropy) {
  const Json& c = so_cases()["hvp_cross_entropy"];
  auto target = DynTensor::from_vector(c["target"].get<std::vector<int64_t>>(), Shape{5}, ad());
  auto x = tj(c["x"], true);
  auto loss = nn::cross_entropy(x, target);
  expect_json(loss, c["loss"]);
  expect_json(*x.grad(loss.backward()), c["grad"]);
  auto g = *x.grad(nn::cross_entropy(x, target).backward(kCreate));
  expect_json(g, c["grad"]);
  expect_json(*x.grad(sum(g * tj(c["v"])).backward()), c["hvp"]);
}

}  // namespace
}  // namespace ember

// The leaf-gradient hook (DESIGN section 8, data-parallel overlap): it fires once per leaf with
// the leaf's final (summed) gradient, and for a chain x -> ... -> y the leaf nearest the loss
// fires before the backward has reached the farther one.
namespace ember {
namespace {
TEST(Autodiff, LeafGradientHookFiresOnceWithTheFinalGradient) {
  auto a = vec({1, 2}, {2}).require_grad();
  auto b = vec({3, -1}, {2}).require_grad();
  auto h = exp(a) * 2.0;              // a is far from the loss
  auto y = sum(h * b + b * b + b);   // b's gradient sums three contributions: h + 2b + 1
  auto ka = autodiff::leaf_key(a.primitive()), kb = autodiff::leaf_key(b.primitive());
  ASSERT_TRUE(ka && kb);
  EXPECT_FALSE(autodiff::leaf_key(h.primitive()).has_value());
  std::vector<std::pair<uint64_t, std::vector<double>>> seen;
  autodiff::BackwardOptions opts;
  opts.on_leaf_gradient = [&](uint64_t key, const PrimitivePtr& g) {
    seen.emplace_back(key, DynTensor(g, ad()).to_vector<double>());
  };
  Gradients grads(autodiff::backward(ad().backend(), y.primitive(), nullptr, opts), ad());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, *kb);  // b's gradient is final before a's rule chain has run
  EXPECT_EQ(seen[1].first, *ka);
  double e1 = std::exp(1.0), e2 = std::exp(2.0);
  std::vector<double> want_b{2 * e1 + 6 + 1, 2 * e2 - 2 + 1}, want_a{2 * e1 * 3, 2 * e2 * -1};
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(seen[0].second[i], want_b[i], 1e-12);
    EXPECT_NEAR(seen[1].second[i], want_a[i], 1e-12);
  }
  expect_near(*b.grad(grads), want_b);  // the map holds the same values
}
}  // namespace
}  // namespace ember
