// Fused optimizer updates on the GPU (src/backends/cuda/optim.cpp): every generated source
// compiles (no GPU needed), and on a GPU one adam_step gives the CPU backend's values (whose
// formula the optimizer tests check against PyTorch's trajectories) for each dtype and mode.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

// The device-scalar multi-tensor form (capturable Adam and AdamW): 40 tensors, an empty one among
// them, each with its own step count, so two adam_multi_dev launches and two adam_count_multi;
// each tensor's values and new count the CPU's. A count the op holds alone is counted in place.
TEST(CudaOptim, MultiTensorDeviceScalarAdamStepMatchesTheCpu) {
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices();
  const Device cpu = Device::cpu(), gpu = Device::cuda(0);
  for (DType dt : {DType::f32, DType::bf16, DType::f64}) {
    SCOPED_TRACE(dtype_name(dt));
    AdamAttrs a;
    a.lr = 0.5;
    a.weight_decay = 0.1;
    a.decoupled = dt != DType::bf16;
    const DynTensor lr = DynTensor::full(Shape{}, Scalar(0.02), DType::f32, cpu);
    std::vector<DynTensor> p, g, m, v, st, pg, gg, mg, vg, sg;
    for (int i = 0; i < 40; ++i) {
      const Shape s = i == 7 ? Shape{0, 3} : i % 3 == 0 ? Shape{int64_t(1 + 97 * i), 33} : Shape{int64_t(1 + i)};
      p.push_back(DynTensor::normal(s, 0, 1, DType::f32, cpu).cast(dt));
      g.push_back(DynTensor::normal(s, 0, 1, DType::f32, cpu).cast(dt));
      m.push_back(DynTensor::normal(s, 0, 0.1, DType::f32, cpu).cast(dt));
      v.push_back(abs(DynTensor::normal(s, 0, 0.1, DType::f32, cpu)).cast(dt));
      st.push_back(DynTensor::full(Shape{}, Scalar(double(i % 5)), DType::f32, cpu));
      pg.push_back(p.back().to(gpu));
      gg.push_back(g.back().to(gpu));
      mg.push_back(m.back().to(gpu));
      vg.push_back(v.back().to(gpu));
      sg.push_back(st.back().to(gpu));
    }
    auto want = adam_step_multi(p, g, m, v, a, lr, st);
    auto got = adam_step_multi(pg, gg, mg, vg, a, lr.to(gpu), sg);
    ASSERT_EQ(got.size(), 40u);
    const double tol = dt == DType::f64 ? 1e-12 : dt == DType::f32 ? 1e-6 : 1e-2;
    for (size_t i = 0; i < 40; ++i) {
      ASSERT_EQ(got[i].param.shape(), p[i].shape()) << i;
      EXPECT_EQ(got[i].step.to(cpu).item(), double(i % 5) + 1) << i;
      EXPECT_EQ(sg[i].to(cpu).item(), double(i % 5)) << i;  // (held here: not overwritten)
      if (p[i].numel() == 0) continue;
      auto err = [&](const DynTensor& x, const DynTensor& y) {
        return max(abs(x.cast(DType::f64) - y.to(cpu).cast(DType::f64))).item();
      };
      EXPECT_LE(err(want[i].param, got[i].param), tol) << i;
      EXPECT_LE(err(want[i].exp_avg, got[i].exp_avg), tol) << i;
      EXPECT_LE(err(want[i].exp_avg_sq, got[i].exp_avg_sq), tol) << i;
    }
  }
  auto one = [&] { return DynTensor::ones(Shape{4}, DType::f32, gpu); };
  std::vector<DynTensor> steps;
  steps.push_back(DynTensor::from_vector<float>({5.0f}, Shape{}, gpu));
  steps.push_back(DynTensor::from_vector<float>({9.0f}, Shape{}, gpu));
  const void* b1 = gpu.backend().memory_view(steps[0].primitive())->data;
  AdamAttrs a;
  auto lr = DynTensor::full(Shape{}, Scalar(0.1), DType::f32, gpu);
  auto r = adam_step_multi({one(), one()}, {one(), one()}, {one(), one()}, {one(), one()}, a, lr, std::move(steps));
  EXPECT_EQ(r[0].step.to(cpu).item(), 6.0);
  EXPECT_EQ(r[1].step.to(cpu).item(), 10.0);
  EXPECT_EQ(gpu.backend().memory_view(r[0].step.primitive())->data, b1);
}

// norm_multi and mul_multi over 150 tensors (three launches of 64): the p-norms and products of
// the CPU backend (which the conformance cases check against PyTorch), with an empty tensor,
// a 0-d one, large ones split over many blocks, and views that start 1 element past 16-byte
// alignment (the scalar path). mul_multi writes into the buffers of inputs it holds alone.
TEST(CudaOptim, MultiTensorNormAndMulMatchTheCpu) {
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices();
  const Device cpu = Device::cpu(), gpu = Device::cuda(0);
  for (DType dt : {DType::f32, DType::bf16, DType::f16, DType::f64}) {
    std::vector<DynTensor> xc, xg;
    for (int i = 0; i < 150; ++i) {
      const Shape s = i == 7 ? Shape{0} : i == 8 ? Shape{} : i % 50 == 1 ? Shape{1 << 20, 3} : Shape{int64_t(1 + 13 * i)};
      DynTensor x = DynTensor::normal(s, 0, 1, DType::f32, cpu).cast(dt);
      if (i % 10 == 3) x = narrow(DynTensor::normal(Shape{s.numel() + 1}, 0, 1, DType::f32, cpu).cast(dt), 0, 1, s.numel());
      xc.push_back(x);
      xg.push_back(x.to(gpu));
    }
    for (int i = 3; i < 150; i += 10) {  // misaligned device views with the same values
      DynTensor padded = cat({DynTensor::zeros(Shape{1}, dt, gpu), xg[size_t(i)].reshape({-1})}, 0);
      xg[size_t(i)] = narrow(padded, 0, 1, xc[size_t(i)].numel()).reshape(xc[size_t(i)].shape());
    }
    const double tol = dt == DType::f64 ? 1e-12 : dt == DType::f32 ? 1e-5 : dt == DType::f16 ? 2e-3 : 1.6e-2;
    for (double p : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " p=" + std::to_string(p));
      const std::vector<double> want = norm_multi(xc, p).cast(DType::f64).to_vector<double>();
      const std::vector<double> got = norm_multi(xg, p).to(cpu).cast(DType::f64).to_vector<double>();
      ASSERT_EQ(got.size(), 150u);
      EXPECT_EQ(got[7], 0.0);
      for (size_t i = 0; i < 150; ++i) {
        if (std::isinf(want[i])) EXPECT_EQ(got[i], want[i]) << i;  // f16's 1-norm of 3M elements overflows
        else EXPECT_NEAR(got[i], want[i], tol * std::abs(want[i]) + 1e-30) << i;
      }
    }
    const DynTensor s = DynTensor::full(Shape{}, Scalar(0.375), dt, cpu);
    std::vector<DynTensor> want = mul_multi(xc, s);
    std::vector<DynTensor> got = mul_multi(xg, s.to(gpu));
    for (size_t i = 0; i < 150; ++i) {
      ASSERT_EQ(got[i].shape(), xc[i].shape()) << i;
      if (xc[i].numel() == 0) continue;
      EXPECT_EQ(max(abs(got[i].to(cpu).cast(DType::f64) - want[i].cast(DType::f64))).item(), 0.0) << i;
    }
  }
  // in place: tensors held only by the op keep their buffers; one held elsewhere too does not
  std::vector<DynTensor> xs(3);
  std::vector<const void*> where;
  for (size_t i = 0; i < xs.size(); ++i) {
    xs[i] = DynTensor::from_vector<float>(std::vector<float>(4096, float(i + 1)), Shape{4096}, gpu);
    where.push_back(gpu.backend().memory_view(xs[i].primitive())->data);
  }
  const DynTensor kept = xs[2];
  std::vector<DynTensor> y = mul_multi(std::move(xs), DynTensor::full(Shape{}, Scalar(0.25), DType::f32, gpu));
  for (size_t i = 0; i < y.size(); ++i) {
    const bool reused = gpu.backend().memory_view(y[i].primitive())->data == where[i];
    EXPECT_EQ(reused, i < 2) << i;
    EXPECT_EQ(y[i].to(cpu).to_vector<float>()[4095], 0.25f * float(i + 1)) << i;
  }
  EXPECT_EQ(kept.to(cpu).to_vector<float>()[0], 3.0f);
}

}  // namespace
}  // namespace ember
