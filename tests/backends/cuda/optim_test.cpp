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

// The multi-tensor form (what Adam and AdamW step with): 40 tensors of many sizes, an empty one
// among them, so two launches of up to 32 (adam_multi), each tensor's values the CPU's.
TEST(CudaOptim, MultiTensorAdamStepMatchesTheCpu) {
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices();
  const Device cpu = Device::cpu(), gpu = Device::cuda(0);
  for (DType dt : {DType::f32, DType::bf16, DType::f64}) {
    SCOPED_TRACE(dtype_name(dt));
    AdamAttrs a;
    a.lr = 0.01;
    a.step = 5;
    a.weight_decay = 0.1;
    a.decoupled = true;
    std::vector<DynTensor> p, g, m, v, pg, gg, mg, vg;
    for (int i = 0; i < 40; ++i) {
      const Shape s = i == 7 ? Shape{0, 3} : i % 3 == 0 ? Shape{int64_t(1 + 97 * i), 33} : Shape{int64_t(1 + i)};
      p.push_back(DynTensor::normal(s, 0, 1, DType::f32, cpu).cast(dt));
      g.push_back(DynTensor::normal(s, 0, 1, DType::f32, cpu).cast(dt));
      m.push_back(DynTensor::normal(s, 0, 0.1, DType::f32, cpu).cast(dt));
      v.push_back(abs(DynTensor::normal(s, 0, 0.1, DType::f32, cpu)).cast(dt));
      pg.push_back(p.back().to(gpu));
      gg.push_back(g.back().to(gpu));
      mg.push_back(m.back().to(gpu));
      vg.push_back(v.back().to(gpu));
    }
    auto want = adam_step_multi(p, g, m, v, a);
    auto got = adam_step_multi(pg, gg, mg, vg, a);
    ASSERT_EQ(got.size(), 40u);
    const double tol = dt == DType::f64 ? 1e-12 : dt == DType::f32 ? 1e-6 : 1e-2;
    for (size_t i = 0; i < 40; ++i) {
      ASSERT_EQ(got[i].param.shape(), p[i].shape()) << i;
      if (p[i].numel() == 0) continue;
      auto err = [&](const DynTensor& x, const DynTensor& y) {
        return max(abs(x.cast(DType::f64) - y.to(cpu).cast(DType::f64))).item();
      };
      EXPECT_LE(err(want[i].param, got[i].param), tol) << i;
      EXPECT_LE(err(want[i].exp_avg, got[i].exp_avg), tol) << i;
      EXPECT_LE(err(want[i].exp_avg_sq, got[i].exp_avg_sq), tol) << i;
    }
  }
}

}  // namespace
}  // namespace ember
