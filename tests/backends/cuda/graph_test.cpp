// CUDA graphs (src/backends/cuda/graph.cpp, ember/tensor/graph.hpp): a replayed region computes
// what the same ops compute eagerly, on new inputs written with graph::overwrite; a training
// loop whose forward and backward are one graph follows the eager loop's losses; what a region
// must not do throws an Error naming it, and the device works on afterwards.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ember/backends/cuda.hpp"
#include "ember/decorators/fusion.hpp"
#include "ember/nn.hpp"
#include "ember/optim/optimizer.hpp"
#include "ember/tensor/graph.hpp"
#include "ember/tensor/ops.hpp"

namespace ember {
namespace {

#define REQUIRE_GPU() \
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices()

void expect_close(const DynTensor& got, const DynTensor& want, double tol) {
  auto g = got.cast(DType::f64).to_vector<double>(), w = want.cast(DType::f64).to_vector<double>();
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// relu(x @ w + b) * 0.5 - mean over the rows, on the device and on the CPU
DynTensor small_net(const DynTensor& x, const DynTensor& w, const DynTensor& b) {
  DynTensor h = relu(matmul(x, w) + b) * 0.5;
  return h - mean(h, {0}, true);
}

TEST(CudaGraph, ReplaysOnNewInputs) {
  REQUIRE_GPU();
  for (Device dev : {Device::cuda(0), Device::cuda(0).fusion()}) {
    SCOPED_TRACE(dev.name());
    Device cpu = Device::cpu();
    auto xc = DynTensor::normal({64, 48}, 0, 1, DType::f32, cpu), wc = DynTensor::normal({48, 40}, 0, 1, DType::f32, cpu);
    auto bc = DynTensor::normal({40}, 0, 1, DType::f32, cpu);
    auto x = xc.to(dev), w = wc.to(dev), b = bc.to(dev);
    DynTensor y;
    auto region = [&] { y = small_net(x, w, b); };
    region();  // warm-up
    graph::Graph g = graph::capture(dev, region);
    EXPECT_GT(g.kernels(), 0);
    expect_close(y, small_net(xc, wc, bc), 1e-5);  // the capture ran it once
    for (int i = 0; i < 3; ++i) {
      auto xn = DynTensor::normal({64, 48}, 0, 1, DType::f32, cpu);
      graph::overwrite(x, xn);
      g.replay();
      expect_close(y, small_net(xn, wc, bc), 1e-5);
    }
  }
}

// A 0-d tensor the user makes (a learning rate, a loss scale) is theirs to overwrite: the scalar
// operands of `x + 0` and `x * 1` share buffers per value, and writing into one of those would
// change every such expression in the process. graph::Step copies its inputs into tensors it
// makes the same way, so a 0-d input of a step must not reach them either.
TEST(CudaGraph, OverwritingAZeroDimTensorChangesNoConstant) {
  REQUIRE_GPU();
  for (Device dev : {Device::cuda(0), Device::cuda(0).fusion()}) {
    SCOPED_TRACE(dev.name());
    auto x = DynTensor::normal({1000}, 0, 1, DType::f32, Device::cpu());
    auto xd = x.to(dev);
    auto zero = DynTensor::zeros({}, DType::f32, dev), one = DynTensor::ones({}, DType::f32, dev);
    graph::overwrite(zero, DynTensor::full({}, 5.0, DType::f32, Device::cpu()));
    graph::overwrite(one, DynTensor::full({}, 3.0, DType::f32, Device::cpu()));
    EXPECT_EQ(zero.item<float>(), 5.0f);
    EXPECT_EQ(one.item<float>(), 3.0f);
    expect_close(xd + 0, x, 0);
    expect_close(xd * 1, x, 0);
    expect_close(DynTensor::zeros({}, DType::f32, dev), DynTensor::zeros({}), 0);

    DynTensor out;
    graph::Step step(dev, [&](const DynTensor& lr) { out = xd * lr; });
    for (double lr : {7.0, 9.0, 11.0}) step(DynTensor::full({}, lr, DType::f32, dev));
    EXPECT_EQ(step.stats().replays, 1) << step.refusal();
    expect_close(out, x * 11.0, 0);
    expect_close(xd + 0, x, 0);
    expect_close(DynTensor::empty({}, DType::f32, dev) * 0 + 2, DynTensor::full({}, 2.0, DType::f32), 0);
  }
}

struct TwoLayer {
  nn::Linear fc1, fc2;
  EMBER_MODULE(fc1, fc2)
  DynTensor forward(DynTensor x) const { return fc2.forward(relu(fc1.forward(std::move(x)))); }
};

// The losses of `steps` eager Adam steps (lr 1e-2) of `m`, step s on the pair batch(s).
template <class Batch>
std::vector<float> eager_losses(TwoLayer m, int steps, const Batch& batch) {
  auto opt = optim::AdamConfig{}.init();
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    auto [x, y] = batch(s);
    DynTensor loss = nn::cross_entropy(m.forward(x), y);
    losses.push_back(loss.item<float>());
    m = opt.step(std::move(m), loss.backward(), 1e-2);
  }
  return losses;
}

// Forward and backward as one graph, Adam after each replay: the same losses as the eager loop.
TEST(CudaGraph, TrainingStepFollowsTheEagerLoop) {
  REQUIRE_GPU();
  for (Device base : {Device::cuda(0), Device::cuda(0).fusion()}) {
    Device dev = base.autodiff();
    SCOPED_TRACE(dev.name());
    auto make = [&] {
      dev.seed(7);
      return TwoLayer{nn::LinearConfig{32, 64}.init(dev), nn::LinearConfig{64, 10}.init(dev)};
    };
    auto x = DynTensor::normal({128, 32}, 0, 1, DType::f32, dev);
    auto y = DynTensor::randint({128}, 0, 10, DType::i64, dev);
    constexpr int kSteps = 8;
    const std::vector<float> eager = eager_losses(make(), kSteps, [&](int) { return TensorPair{x, y}; });
    std::vector<float> replayed;
    {
      TwoLayer m = make();
      auto opt = optim::AdamConfig{}.init();
      DynTensor loss;
      Gradients grads;
      auto region = [&] {
        DynTensor l = nn::cross_entropy(m.forward(x), y);
        grads = l.backward();
        loss = l.detach();
      };
      region();  // step 1, eager (the warm-up)
      replayed.push_back(loss.item<float>());
      m = opt.step(std::move(m), grads, 1e-2);
      graph::Graph g = graph::capture(dev, region);  // step 2
      for (int s = 1; s < kSteps; ++s) {
        if (s > 1) g.replay();
        replayed.push_back(loss.item<float>());
        m = opt.step(std::move(m), grads, 1e-2);
      }
    }
    ASSERT_EQ(eager.size(), replayed.size());
    for (size_t i = 0; i < eager.size(); ++i) EXPECT_NEAR(replayed[i], eager[i], 1e-5) << "step " << i + 1;
    EXPECT_LT(eager.back(), eager.front());
  }
}

TEST(CudaGraph, RefusalsNameTheCallAndTheDeviceWorksOn) {
  REQUIRE_GPU();
  Device dev = Device::cuda(0);
  auto x = DynTensor::normal({16, 16}, 0, 1, DType::f32, dev);
  EXPECT_NE(error_of([&] { graph::capture(dev, [&] { (void)exp(x).to_vector<float>(); }); }).find("reading a tensor"),
            std::string::npos);
  EXPECT_NE(error_of([&] { graph::capture(dev, [&] { dev.sync(); }); }).find("sync"), std::string::npos);
  EXPECT_NE(error_of([&] { graph::capture(dev, [&] { (void)DynTensor::normal({4}, 0, 1, DType::f32, dev); }); })
                .find("random op"),
            std::string::npos);
  EXPECT_NE(error_of([&] { graph::capture(dev, [&] { (void)nonzero(x > 0.0); }); }).find("nonzero"), std::string::npos);
  // an Error of the region's own passes through, and the device works on
  EXPECT_NE(error_of([&] { graph::capture(dev, [&] { throw Error("mine"); }); }).find("mine"), std::string::npos);
  DynTensor y;
  graph::Graph g = graph::capture(dev, [&] { y = x * 2.0; });
  expect_close(y, x.to(Device::cpu()) * 2.0, 0);
  expect_close(exp(x), exp(x.to(Device::cpu())), 1e-6);
}

TEST(CudaGraph, ReplayAfterAnInputWasFreedThrows) {
  REQUIRE_GPU();
  Device dev = Device::cuda(0);
  auto x = DynTensor::normal({256}, 0, 1, DType::f32, dev);
  DynTensor y;
  graph::Graph g = graph::capture(dev, [&] { y = x + 1.0; });
  g.replay();
  x = DynTensor::normal({256}, 0, 1, DType::f32, dev);  // the captured x is freed
  EXPECT_NE(error_of([&] { g.replay(); }).find("was freed"), std::string::npos);
}

TEST(CudaGraph, RegionMemoryStaysTheGraphs) {
  REQUIRE_GPU();
  Device dev = Device::cuda(0);
  auto x = DynTensor::normal({1 << 16}, 0, 1, DType::f32, dev);
  DynTensor y;
  graph::Graph g = graph::capture(dev, [&] {
    DynTensor t = exp(x);  // freed inside the region: its block stays the graph's
    y = t * 2.0 + 1.0;
  });
  // eager work after the capture must not take the region's blocks (a replay writes them)
  std::vector<DynTensor> others;
  for (int i = 0; i < 8; ++i) others.push_back(full_like(x, double(i)));
  g.replay();
  for (int i = 0; i < 8; ++i)
    for (float v : others[size_t(i)].to_vector<float>()) ASSERT_EQ(v, float(i));
  expect_close(y, exp(x.to(Device::cpu())) * 2.0 + 1.0, 1e-6);
}

// graph::Step: a training loop written once, eager for the first step, captured for the second
// and replayed after, follows the eager loop's losses; the batches come from the host and from
// the device (copied into the Step's inputs on the device).
TEST(CudaGraphStep, TrainsLikeTheEagerLoop) {
  REQUIRE_GPU();
  for (Device base : {Device::cuda(0), Device::cuda(0).fusion()}) {
    Device dev = base.autodiff();
    SCOPED_TRACE(dev.name());
    auto make = [&] {
      dev.seed(11);
      return TwoLayer{nn::LinearConfig{32, 64}.init(dev), nn::LinearConfig{64, 10}.init(dev)};
    };
    constexpr int kSteps = 8;
    std::vector<DynTensor> xs, ys;
    for (int s = 0; s < kSteps; ++s) {
      xs.push_back(DynTensor::normal({128, 32}, 0, 1, DType::f32, Device::cpu()));
      ys.push_back(DynTensor::randint({128}, 0, 10, DType::i64, Device::cpu()));
    }
    auto batch = [&](int s) {  // even steps from the host, odd ones from the device
      return s % 2 ? TensorPair{xs[size_t(s)].to(dev), ys[size_t(s)].to(dev)} : TensorPair{xs[size_t(s)], ys[size_t(s)]};
    };
    const std::vector<float> eager = eager_losses(
        make(), kSteps, [&](int s) { return TensorPair{xs[size_t(s)].to(dev), ys[size_t(s)].to(dev)}; });
    std::vector<float> stepped;
    {
      TwoLayer m = make();
      auto opt = optim::AdamConfig{}.init();
      graph::Step step(dev, [&](const DynTensor& x, const DynTensor& y) {
        DynTensor l = nn::cross_entropy(m.forward(x.to(dev)), y.to(dev));
        return std::pair{l.detach(), l.backward()};
      });
      for (int s = 0; s < kSteps; ++s) {
        auto [x, y] = batch(s);
        auto [loss, grads] = step(x, y);  // the two signatures' graphs replay in turn
        stepped.push_back(loss.item<float>());
        m = opt.step(std::move(m), grads, 1e-2);
      }
      // host and device batches have different signatures: each warms up, then is captured
      EXPECT_EQ(step.stats().calls, kSteps);
      EXPECT_EQ(step.stats().captures, 2) << step.refusal();
      EXPECT_EQ(step.stats().eager, 2);
      EXPECT_EQ(step.stats().replays, kSteps - 4);
    }
    for (size_t i = 0; i < eager.size(); ++i) EXPECT_NEAR(stepped[i], eager[i], 1e-5) << "step " << i + 1;
  }
}

// The whole step in the graph: forward, backward, clipping and a capturable AdamW whose
// learning rate (a schedule) is an input of the Step and whose step counts live on the device.
// Each replay follows the eager loop with a host learning rate; the state_dict counts the steps.
TEST(CudaGraphStep, CapturableOptimizerRunsInsideTheGraph) {
  REQUIRE_GPU();
  for (Device base : {Device::cuda(0), Device::cuda(0).fusion()}) {
    Device dev = base.autodiff();
    SCOPED_TRACE(dev.name());
    auto make = [&] {
      dev.seed(5);
      return TwoLayer{nn::LinearConfig{32, 64}.init(dev), nn::LinearConfig{64, 10}.init(dev)};
    };
    constexpr int kSteps = 10;
    auto lr_at = [](int s) { return 1e-2 * (1.0 - s / 16.0); };
    std::vector<TensorPair> batches;
    for (int s = 0; s < kSteps; ++s)
      batches.push_back({DynTensor::normal({128, 32}, 0, 1, DType::f32, dev),
                         DynTensor::randint({128}, 0, 10, DType::i64, dev)});
    const optim::AdamWConfig config{.weight_decay = 0.05, .clipping = optim::GradientClipping::by_norm(0.5)};
    std::vector<float> eager;
    {
      TwoLayer m = make();
      optim::AdamW opt(config);
      for (int s = 0; s < kSteps; ++s) {
        DynTensor loss = nn::cross_entropy(m.forward(batches[size_t(s)].first), batches[size_t(s)].second);
        eager.push_back(loss.item<float>());
        m = opt.step(std::move(m), loss.backward(), lr_at(s));
      }
    }
    std::vector<float> stepped;
    TwoLayer m = make();
    optim::AdamWConfig c = config;
    c.capturable = true;
    optim::AdamW opt(c);
    graph::Step step(dev, [&](const DynTensor& x, const DynTensor& y, const DynTensor& lr) {
      DynTensor loss = nn::cross_entropy(m.forward(x), y);
      m = opt.step(std::move(m), loss.backward(), lr);
      return loss.detach();
    });
    for (int s = 0; s < kSteps; ++s) {
      const DynTensor lr = DynTensor::full(Shape{}, Scalar(lr_at(s)), DType::f32, Device::cpu());
      stepped.push_back(step(batches[size_t(s)].first, batches[size_t(s)].second, lr).item<float>());
    }
    EXPECT_EQ(step.stats().captures, 1) << step.refusal();
    EXPECT_EQ(step.stats().replays, kSteps - 2);
    for (size_t i = 0; i < eager.size(); ++i) EXPECT_NEAR(stepped[i], eager[i], 1e-4) << "step " << i + 1;
    for (const auto& [key, t] : opt.state_dict(m)) {
      if (key.size() > 5 && key.compare(key.size() - 5, 5, ".step") == 0) {
        EXPECT_EQ(int64_t(t.item()), kSteps) << key;
      }
    }
  }
}

// A new input shape is a new graph; a random op makes the Step eager for that shape, with the
// reason; a tensor the graph read that was replaced (and freed) makes the call eager and the
// next one capture again. Every call computes what the function computes eagerly.
TEST(CudaGraphStep, FallsBackToEagerWhereAGraphWouldBeWrong) {
  REQUIRE_GPU();
  Device dev = Device::cuda(0).fusion();
  Device cpu = Device::cpu();
  auto wc = DynTensor::normal({48, 40}, 0, 1, DType::f32, cpu), bc = DynTensor::normal({40}, 0, 1, DType::f32, cpu);
  DynTensor w = wc.to(dev), b = bc.to(dev), y;
  graph::Step step(dev, [&](const DynTensor& x) { return small_net(x, w, b); });
  for (int i = 0; i < 9; ++i) {
    const int64_t rows = i % 3 == 2 ? 24 : 64;  // two shapes
    auto xc = DynTensor::normal({rows, 48}, 0, 1, DType::f32, cpu);
    y = step(xc.to(dev));
    expect_close(y, small_net(xc, wc, bc), 1e-5);
  }
  EXPECT_EQ(step.stats().graphs, 2);
  EXPECT_EQ(step.stats().captures, 2);
  EXPECT_EQ(step.stats().replays, 9 - 4);

  // the same function writing its result to `y` instead: a replay cannot assign y, so a graph
  // whose signature was not the previous call's is captured again (which runs the function)
  graph::Step writes(dev, [&](const DynTensor& x) { y = small_net(x, w, b); });
  for (int i = 0; i < 9; ++i) {
    const int64_t rows = i % 3 == 2 ? 24 : 64;
    auto xc = DynTensor::normal({rows, 48}, 0, 1, DType::f32, cpu);
    writes(xc.to(dev));
    expect_close(y, small_net(xc, wc, bc), 1e-5);
  }
  EXPECT_EQ(writes.stats().replays, 2);   // calls 5 and 8 follow a call of their own graph
  EXPECT_EQ(writes.stats().captures, 5);  // calls 2, 4, 6, 7 and 9

  // w replaced by a new tensor: the old one is freed, the replay refused, and the call eager
  wc = wc * 0.5;
  w = wc.to(dev);
  auto xc = DynTensor::normal({64, 48}, 0, 1, DType::f32, cpu);
  y = step(xc.to(dev));
  expect_close(y, small_net(xc, wc, bc), 1e-5);
  EXPECT_NE(step.refusal().find("was freed"), std::string::npos) << step.refusal();
  y = step(xc.to(dev));  // captured again, reading the new w
  expect_close(y, small_net(xc, wc, bc), 1e-5);
  EXPECT_EQ(step.stats().captures, 3);

  graph::Step noisy(dev, [&](const DynTensor& x) { y = x + DynTensor::normal(x.shape(), 0, 1, DType::f32, dev) * 0.0; });
  for (int i = 0; i < 3; ++i) {
    auto xc2 = DynTensor::normal({64, 48}, 0, 1, DType::f32, cpu);
    noisy(xc2.to(dev));
    expect_close(y, xc2, 1e-6);
  }
  EXPECT_EQ(noisy.stats().eager, 3);
  EXPECT_EQ(noisy.stats().captures, 0);
  EXPECT_NE(noisy.refusal().find("random op"), std::string::npos) << noisy.refusal();
}

}  // namespace
}  // namespace ember
