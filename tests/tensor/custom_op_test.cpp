// User-defined ops (ember/tensor/custom_op.hpp): a kernel of the user's own runs on every CPU
// stack like a built-in op, agrees with the same function composed from built-in ops (values,
// first and second derivatives, whose rules are independent of the custom backward), and bad
// definitions and inputs give an Error naming the op.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <ember/ember.hpp>

#include "custom_swish.hpp"
#include "ember/decorators/fusion.hpp"

using namespace ember;
using namespace ember::testing_ops;

namespace {

std::vector<TensorMeta> same_as_input(std::span<const TensorMeta> in) {
  EMBER_CHECK(in.size() == 1, "test::swish: one input, got ", in.size());
  EMBER_CHECK(in[0].dtype == DType::f32, "test::swish: f32 input, got ", in[0].dtype);
  return {in[0]};
}

// Two outputs: (min(a, b), max(a, b)) elementwise, with a backward that routes each gradient
// to the input that won.
const CustomOp& minmax_op() {
  static const CustomOp op({
      .name = "test::minmax",
      .infer =
          [](std::span<const TensorMeta> in) {
            EMBER_CHECK(in.size() == 2 && in[0].shape == in[1].shape && in[0].dtype == DType::f32 &&
                            in[1].dtype == DType::f32,
                        "test::minmax: two f32 inputs of one shape");
            return std::vector<TensorMeta>{in[0], in[0]};
          },
      .cpu =
          [](const CustomCpuArgs& a) {
            for (int64_t i = 0; i < a.output_meta[0].shape.numel(); ++i) {
              const float x = a.in<float>(0)[i], y = a.in<float>(1)[i];
              a.out<float>(0)[i] = std::min(x, y);
              a.out<float>(1)[i] = std::max(x, y);
            }
          },
      .backward =
          [](const std::vector<DynTensor>& in, const std::vector<DynTensor>&, const std::vector<DynTensor>& g) {
            DynTensor a_low = in[0] <= in[1];
            DynTensor zero = zeros_like(in[0]);
            DynTensor g_low = g[0].defined() ? g[0] : zero, g_high = g[1].defined() ? g[1] : zero;
            return std::vector<DynTensor>{where(a_low, g_low, g_high), where(a_low, g_high, g_low)};
          },
  });
  return op;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::vector<Device>& stacks() {
  static const std::vector<Device> s = {Device::cpu(), Device::cpu().fusion(), Device::cpu().autodiff(),
                                        Device::cpu().fusion().autodiff()};
  return s;
}

}  // namespace

TEST(CustomOp, RunsOnEveryCpuStackLikeItsComposition) {
  auto xc = DynTensor::normal({7, 33}, 0, 2, DType::f32);
  for (const Device& dev : stacks()) {
    SCOPED_TRACE(dev.name());
    auto x = xc.to(dev);
    // a view as input: the kernel reads it contiguous
    expect_near(swish_op()(x), swish_composed(x), 1e-6);
    expect_near(swish_op()(transpose(x, 0, 1)), swish_composed(transpose(xc, 0, 1)), 1e-6);
    // in the middle of a fusable chain: the queue before it is flushed, the chain after it fuses
    expect_near(swish_op()(x * 0.5 + 1) * 3 - 1, swish_composed(xc * 0.5 + 1) * 3 - 1, 1e-6);
    auto mm = minmax_op().run({x, x * -1});
    ASSERT_EQ(mm.size(), 2u);
    expect_near(mm[0], -abs(xc), 0);
    expect_near(mm[1], abs(xc), 0);
  }
}

TEST(CustomOp, GradientsAgreeWithTheComposition) {
  auto xc = DynTensor::normal({5, 9}, 0, 2, DType::f32), wc = DynTensor::normal({5, 9}, 0, 1, DType::f32);
  for (const Device& dev : {Device::cpu().autodiff(), Device::cpu().fusion().autodiff()}) {
    SCOPED_TRACE(dev.name());
    auto x = xc.to(dev).require_grad();
    auto w = wc.to(dev);
    auto dx = x.grad(sum(swish_op()(x) * w).backward()).value();
    auto dx_ref = x.grad(sum(swish_composed(x) * w).backward()).value();
    expect_near(dx, dx_ref, 1e-5);

    // second order: d/dx sum(dx * w) through the custom backward (written with tensor ops)
    auto g1 = x.grad(sum(swish_op()(x)).backward({.create_graph = true})).value();
    auto g2 = x.grad(sum(g1 * w).backward()).value();
    auto r1 = x.grad(sum(swish_composed(x)).backward({.create_graph = true})).value();
    auto r2 = x.grad(sum(r1 * w).backward()).value();
    expect_near(g2, r2, 1e-4);

    // two outputs, one of them unused: its gradient is undefined in the backward
    auto a = xc.to(dev).require_grad(), b = wc.to(dev).require_grad();
    auto grads = sum(minmax_op().run({a, b})[1] * 2).backward();
    auto a_wins = (xc > wc).cast(DType::f32);
    expect_near(a.grad(grads).value(), a_wins * 2, 0);
    expect_near(b.grad(grads).value(), (1 - a_wins) * 2, 0);
  }
}

// The custom backward against central differences of the CPU kernel itself (f64 sums).
TEST(CustomOp, BackwardMatchesFiniteDifferences) {
  auto xc = DynTensor::normal({16}, 0, 2, DType::f32);
  auto x = xc.to(Device::cpu().autodiff()).require_grad();
  auto dx = x.grad(sum(swish_op()(x)).backward())->to_vector<float>();
  auto xs = xc.to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    const float h = 1e-2f;
    auto at = [&](float d) {
      auto v = xs;
      v[i] += d;
      return double(sum(swish_op()(DynTensor::from_vector(v, {16}))).item<float>());
    };
    EXPECT_NEAR(dx[i], (at(h) - at(-h)) / (2 * h), 2e-3) << "element " << i;
  }
}

TEST(CustomOp, BadDefinitionsAndInputsNameTheOp) {
  EXPECT_NE(error_of([] { CustomOp({.name = "", .infer = same_as_input}); }).find("needs a name"), std::string::npos);
  EXPECT_NE(error_of([] { CustomOp({.name = "test::noinfer"}); }).find("test::noinfer"), std::string::npos);
  EXPECT_NE(error_of([] { CustomOp({.name = "test::nokernel", .infer = same_as_input}); }).find("no kernel"),
            std::string::npos);
  // infer's own check reaches the caller, on every stack
  for (const Device& dev : stacks()) {
    SCOPED_TRACE(dev.name());
    auto xi = DynTensor::zeros({3}, DType::i32, dev);
    EXPECT_NE(error_of([&] { swish_op()(xi); }).find("test::swish: f32 input"), std::string::npos);
  }
  // a CUDA-only op on the CPU: not supported, and supports() says so first
  static const CustomOp gpu_only({.name = "test::gpu_only",
                                  .infer = same_as_input,
                                  .cuda_source = "extern \"C\" __global__ void k(float*, const float*, long long) {}",
                                  .cuda_entry = "k"});
  auto x = DynTensor::ones({3}, DType::f32);
  EXPECT_NE(error_of([&] { gpu_only(x); }).find("test::gpu_only: not supported on cpu"), std::string::npos);
  EXPECT_FALSE(Device::cpu().backend().supports(make_op(OpKind::custom, {x.primitive()}, CustomAttrs{gpu_only.impl()})));
  EXPECT_NE(error_of([&] { make_op(OpKind::custom, {x.primitive()}, CustomAttrs{}); }).find("custom: no definition"),
            std::string::npos);
}

TEST(CustomOp, BackwardWithoutARuleOrWithAWrongShapeThrows) {
  static const CustomOp no_grad_op({.name = "test::nograd",
                                    .infer = same_as_input,
                                    .cpu = [](const CustomCpuArgs& a) {
                                      std::copy_n(a.in<float>(0), a.output_meta[0].shape.numel(), a.out<float>(0));
                                    }});
  static const CustomOp bad_grad_op({.name = "test::badgrad",
                                     .infer = same_as_input,
                                     .cpu =
                                         [](const CustomCpuArgs& a) {
                                           std::copy_n(a.in<float>(0), a.output_meta[0].shape.numel(),
                                                       a.out<float>(0));
                                         },
                                     .backward = [](const auto& in, const auto&, const auto&) {
                                       return std::vector<DynTensor>{sum(in[0])};
                                     }});
  auto x = DynTensor::ones({4}, DType::f32, Device::cpu().autodiff()).require_grad();
  EXPECT_NE(error_of([&] { sum(no_grad_op(x)).backward(); }).find("test::nograd: not differentiable"),
            std::string::npos);
  EXPECT_NE(error_of([&] { sum(bad_grad_op(x)).backward(); }).find("test::badgrad: backward gave a f32 [] gradient"),
            std::string::npos);
  EXPECT_EQ(no_grad_op(x).to_vector<float>(), std::vector<float>(4, 1.0f));  // the process goes on
}
