// Graphs on devices without them (ember/tensor/graph.hpp): capture and overwrite throw an Error
// naming the device, and nothing of the region runs; the CUDA behaviour is tested in
// tests/backends/cuda/graph_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/decorators/fusion.hpp"
#include "ember/tensor/graph.hpp"
#include "ember/tensor/ops.hpp"

namespace ember {
namespace {

TEST(Graph, CpuDevicesCannotCapture) {
  for (Device dev : {Device::cpu(), Device::cpu().fusion(), Device::cpu().autodiff(), Device::cpu().fusion().autodiff()}) {
    SCOPED_TRACE(dev.name());
    bool ran = false;
    try {
      graph::capture(dev, [&] { ran = true; });
      ADD_FAILURE() << "no Error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot record graphs"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(ran);
    auto x = DynTensor::zeros({3}, DType::f32, dev);
    EXPECT_THROW(graph::overwrite(x, DynTensor::ones({3}, DType::f32, dev)), Error);
    EXPECT_THROW(graph::overwrite(x, DynTensor::ones({4}, DType::f32, dev)), Error);
  }
  graph::Graph empty;
  EXPECT_FALSE(empty);
  EXPECT_EQ(empty.kernels(), 0);
  EXPECT_THROW(empty.replay(), Error);
}

// graph::Step on a device without graphs runs its function eagerly at every call, with the
// arguments given, and says why it does not capture.
TEST(GraphStep, RunsEagerlyWhereThereAreNoGraphs) {
  for (Device dev : {Device::cpu(), Device::cpu().fusion().autodiff()}) {
    SCOPED_TRACE(dev.name());
    DynTensor y;
    graph::Step step(dev, [&](const DynTensor& a, const DynTensor& b) { y = a * 2.0 + b; });
    for (int i = 0; i < 4; ++i) {
      auto a = DynTensor::full({3}, double(i), DType::f32, dev), b = DynTensor::ones({3}, DType::f32, dev);
      step(a, b);
      EXPECT_EQ(y.to_vector<float>(), std::vector<float>(3, float(2 * i + 1))) << "call " << i;
    }
    EXPECT_EQ(step.stats().calls, 4);
    EXPECT_EQ(step.stats().eager, 4);
    EXPECT_EQ(step.stats().captures, 0);
    EXPECT_EQ(step.stats().replays, 0);
    EXPECT_NE(step.refusal().find("cannot record graphs"), std::string::npos) << step.refusal();
  }
}

TEST(GraphStep, TakesAnyArityAndChecksTheCount) {
  Device dev = Device::cpu();
  int zero = 0;
  graph::Step none(dev, [&] { ++zero; });
  none();
  none();
  EXPECT_EQ(zero, 2);
  size_t seen = 0;
  graph::Step vec(dev, [&](const std::vector<DynTensor>& v) { seen = v.size(); });
  auto x = DynTensor::zeros({2}, DType::f32, dev);
  vec(x, x, x);
  EXPECT_EQ(seen, 3u);
  graph::Step two(dev, [&](const DynTensor&, const DynTensor&) {});
  try {
    two(x);
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("takes 2 inputs, called with 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember
