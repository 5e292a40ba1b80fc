// Graphs on devices without them (ember/tensor/graph.hpp): capture and overwrite throw an Error
// naming the device, and nothing of the region runs; the CUDA behaviour is tested in
// tests/backends/cuda/graph_test.cpp.
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace ember
