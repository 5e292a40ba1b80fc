// Fused optimizer updates on the GPU (src/backends/cuda/optim.cpp): every generated source
// compiles (no GPU needed), and on a GPU one adam_step gives the CPU backend's values (whose
// formula the optimizer tests check against PyTorch's trajectories) for each dtype and mode.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda_backend.hpp"
#include "jit.hpp"
#include "ember/backends/cuda.hpp"
#include "ember/tensor/ops.hpp"
#include "optim_sources.hpp"

namespace ember {
namespace {

TEST(CudaOptimCompile, EveryAdamVariant) {
  for (const auto& [key, source] : cuda::optim_variants()) {
    SCOPED_TRACE(key);
    EXPECT_FALSE(cuda::compile_cubin(key, source, 90).empty());
  }
}

TEST(CudaOptim, AdamStepMatchesTheCpu) {
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices();
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (int mode = 0; mode < 4; ++mode) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " mode " + std::to_string(mode));
      AdamAttrs a;
      a.lr = 0.01;
      a.step = 1 + 3 * mode;
      a.weight_decay = mode >= 2 ? 0.1 : 0.0;
      a.decoupled = mode == 3;
      a.maximize = mode == 1;
      Shape s{37, 129};
      auto p = DynTensor::normal(s, 0, 1, DType::f32, Device::cpu()).cast(dt);
      auto g = DynTensor::normal(s, 0, 1, DType::f32, Device::cpu()).cast(dt);
      auto m = DynTensor::normal(s, 0, 0.1, DType::f32, Device::cpu()).cast(dt);
      auto v = abs(DynTensor::normal(s, 0, 0.1, DType::f32, Device::cpu())).cast(dt);
      auto want = adam_step(p, g, m, v, a);
      auto gpu = Device::cuda(0);
      auto got = adam_step(p.to(gpu), g.to(gpu), m.to(gpu), v.to(gpu), a);
      double tol = dt == DType::f64 ? 1e-12 : dt == DType::f32 ? 1e-6 : 1e-2;
      auto err = [&](const DynTensor& x, const DynTensor& y) {
        return max(abs(x.cast(DType::f64) - y.to(Device::cpu()).cast(DType::f64))).item();
      };
      EXPECT_LE(err(want.param, got.param), tol);
      EXPECT_LE(err(want.exp_avg, got.exp_avg), tol);
      EXPECT_LE(err(want.exp_avg_sq, got.exp_avg_sq), tol);
    }
  }
}

}  // namespace
}  // namespace ember
