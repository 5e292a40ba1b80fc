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
      // the device-scalar form (capturable optimizers): lr = a.lr * lr, step + 1 read on the device
      AdamAttrs d = a;
      d.lr = 0.5;  // a group's lr_scale
      auto lr = DynTensor::full(Shape{}, Scalar(0.02), DType::f32, Device::cpu());
      auto step = DynTensor::full(Shape{}, Scalar(double(a.step - 1)), DType::f32, Device::cpu());
      auto dwant = adam_step(p, g, m, v, d, lr, step);
      auto dgot = adam_step(p.to(gpu), g.to(gpu), m.to(gpu), v.to(gpu), d, lr.to(gpu), step.to(gpu));
      EXPECT_LE(err(dwant.param, dgot.param), tol);
      EXPECT_LE(err(dwant.exp_avg, dgot.exp_avg), tol);
      EXPECT_LE(err(dwant.exp_avg_sq, dgot.exp_avg_sq), tol);
      EXPECT_EQ(dgot.step.to(Device::cpu()).item(), double(a.step));
      EXPECT_EQ(step.item(), double(a.step - 1));  // (the input is not overwritten: it is held here)
      // and it is the host form's update at lr 0.01 (0.5 * 0.02): within the f32 rounding of the lr
      // tensor (2.2e-8 relative) times the largest update
      if (dt == DType::f64) {
        const double largest = max(abs(want.param - p)).item();
        EXPECT_LE(err(want.param, dgot.param), 1e-7 * largest);
      }
    }
  }
}

}  // namespace
}  // namespace ember
