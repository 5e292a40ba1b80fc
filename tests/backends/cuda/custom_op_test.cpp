// A user-defined op's CUDA kernel (ember/tensor/custom_op.hpp): compiled by NVRTC from the
// definition's source, it gives the CPU kernel's values and the composition's, on every CUDA
// stack, with gradients through its backward.
#include <gtest/gtest.h>

#include <cmath>

#include "../../tensor/custom_swish.hpp"
#include "ember/backends/cuda.hpp"
#include "ember/decorators/fusion.hpp"
#include "ember/ember.hpp"

namespace ember {
namespace {

#define REQUIRE_GPU() \
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices()

using testing_ops::expect_near;
using testing_ops::swish_op;

TEST(CudaCustomOp, RunsOnEveryCudaStackLikeTheCpuKernel) {
  REQUIRE_GPU();
  auto xc = DynTensor::normal({300, 257}, 0, 2, DType::f32);  // not a multiple of the block
  const DynTensor want = swish_op()(xc);
  for (Device dev : {Device::cuda(0), Device::cuda(0).fusion(), Device::cuda(0).autodiff(),
                     Device::cuda(0).fusion().autodiff()}) {
    SCOPED_TRACE(dev.name());
    auto x = xc.to(dev);
    expect_near(swish_op()(x), want, 1e-6);
    expect_near(swish_op()(transpose(x, 0, 1)), swish_op()(transpose(xc, 0, 1)), 1e-6);
    expect_near(swish_op()(x * 0.5 + 1) * 3, swish_op()(xc * 0.5 + 1) * 3, 1e-6);
    EXPECT_TRUE(dev.backend().supports(make_op(OpKind::custom, {x.primitive()}, CustomAttrs{swish_op().impl()})));
  }
  auto x = xc.to(Device::cuda(0).autodiff()).require_grad();
  auto dx = x.grad(sum(swish_op()(x)).backward()).value();
  auto xr = xc.to(Device::cuda(0).autodiff()).require_grad();
  expect_near(dx, xr.grad(sum(xr * sigmoid(xr)).backward()).value(), 1e-5);
}

TEST(CudaCustomOp, ACpuOnlyOpIsNotSupportedOnCuda) {
  REQUIRE_GPU();
  static const CustomOp cpu_only({.name = "test::cpu_only",
                                  .infer = [](std::span<const TensorMeta> in) { return std::vector<TensorMeta>{in[0]}; },
                                  .cpu = [](const CustomCpuArgs&) {}});
  auto x = DynTensor::ones({3}, DType::f32, Device::cuda(0));
  EXPECT_FALSE(Device::cuda(0).backend().supports(make_op(OpKind::custom, {x.primitive()}, CustomAttrs{cpu_only.impl()})));
  try {
    cpu_only(x);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test::cpu_only: not supported on cuda"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember
