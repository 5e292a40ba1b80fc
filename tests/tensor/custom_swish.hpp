// The user-defined op the CustomOp tests share (tests/tensor/custom_op_test.cpp on the CPU
// stacks, tests/backends/cuda/custom_op_test.cpp on the CUDA ones): swish(x) = x * sigmoid(x)
// with a CPU kernel, a CUDA kernel and a backward of tensor ops; and a comparison helper.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <span>
#include <vector>

#include "ember/ember.hpp"

namespace ember::testing_ops {

inline const CustomOp& swish_op() {
  static const CustomOp op({
      .name = "test::swish",
      .infer =
          [](std::span<const TensorMeta> in) {
            EMBER_CHECK(in.size() == 1, "test::swish: one input, got ", in.size());
            EMBER_CHECK(in[0].dtype == DType::f32, "test::swish: f32 input, got ", in[0].dtype);
            return std::vector<TensorMeta>{in[0]};
          },
      .cpu =
          [](const CustomCpuArgs& a) {
            const float* x = a.in<float>(0);
            float* y = a.out<float>(0);
            for (int64_t i = 0; i < a.output_meta[0].shape.numel(); ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
          },
      .cuda_source = R"(
extern "C" __global__ void swish(float* y, const float* x, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = x[i] / (1.0f + expf(-x[i]));
})",
      .cuda_entry = "swish",
      .backward =
          [](const std::vector<DynTensor>& in, const std::vector<DynTensor>& out, const std::vector<DynTensor>& g) {
            DynTensor s = sigmoid(in[0]);
            return std::vector<DynTensor>{g[0] * (s + out[0] * (1 - s))};
          },
  });
  return op;
}
inline DynTensor swish_composed(const DynTensor& x) { return x * sigmoid(x); }

// |got - want| <= tol (1 + |want|) elementwise, on the CPU in f64.
inline void expect_near(const DynTensor& got, const DynTensor& want, double tol) {
  auto g = got.to(Device::cpu()).cast(DType::f64).to_vector<double>();
  auto w = want.to(Device::cpu()).cast(DType::f64).to_vector<double>();
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
}

}  // namespace ember::testing_ops
