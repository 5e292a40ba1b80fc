// custom_kernel: an op of your own, with a CPU kernel, a CUDA kernel (CUDA C++ that ember compiles
// with NVRTC) and a backward rule, used like a built-in op on every device stack (autodiff,
// fusion), checked against the same function composed from built-in ops, then used to train.
//
//   ./build/examples/custom_kernel [--device cpu|cuda] [--steps N]
//
// The op is SiLU (swish), y = x * sigmoid(x), written as one kernel. Its composition from
// built-in ops, x * sigmoid(x), is the reference: values, gradients and second-order gradients
// through the custom backward are compared with those of the composition (whose derivatives come
// from ember's own rules), and two copies of a small MLP, one with each activation, are trained
// side by side on the same data. The last line is
// "max difference: forward F gradient G second-order S  loss: custom A composed B"
// (examples/custom_kernel/README.md says what test.sh requires).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <ember/optim/optimizer.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "../common/args.hpp"

using namespace ember;

// ---- the op ----
// What a definition gives: how its outputs follow from its inputs (and what it accepts), a
// kernel per device, and the backward. Every field but the name and infer is optional.
const CustomOp& swish() {
  static const CustomOp op({
      .name = "example::swish",
      .infer =
          [](std::span<const TensorMeta> in) {
            EMBER_CHECK(in.size() == 1, "example::swish: one input, got ", in.size());
            EMBER_CHECK(in[0].dtype == DType::f32, "example::swish: an f32 input, got ", in[0].dtype);
            return std::vector<TensorMeta>{in[0]};  // one output, the input's shape and dtype
          },
      // contiguous buffers; the output is new and written whole
      .cpu =
          [](const CustomCpuArgs& a) {
            const float* x = a.in<float>(0);
            float* y = a.out<float>(0);
            const int64_t n = a.output_meta[0].shape.numel();
            for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
          },
      // one thread per output element, 256 a block: (outputs..., inputs..., element count)
      .cuda_source = R"(
extern "C" __global__ void swish(float* y, const float* x, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = x[i] / (1.0f + expf(-x[i]));
})",
      .cuda_entry = "swish",
      // d/dx x s(x) = s + x s (1 - s) = s + y (1 - s), with tensor ops: differentiable again
      .backward =
          [](const std::vector<DynTensor>& in, const std::vector<DynTensor>& out, const std::vector<DynTensor>& grad) {
            DynTensor s = sigmoid(in[0]);
            return std::vector<DynTensor>{grad[0] * (s + out[0] * (1 - s))};
          },
  });
  return op;
}
DynTensor swish_composed(const DynTensor& x) { return x * sigmoid(x); }

double max_diff(const DynTensor& a, const DynTensor& b) {
  return max(abs(a.to(Device::cpu()).cast(DType::f64) - b.to(Device::cpu()).cast(DType::f64))).item<double>();
}

// ---- a model that uses it ----
struct Mlp {
  nn::Linear fc1, fc2, fc3;
  bool custom = true;  // which activation
  EMBER_MODULE(fc1, fc2, fc3)
  DynTensor act(const DynTensor& x) const { return custom ? swish()(x) : swish_composed(x); }
  DynTensor forward(const DynTensor& x) const { return fc3.forward(act(fc2.forward(act(fc1.forward(x))))); }
};

int main(int argc, char** argv) try {
  std::string device_name = "cpu";
  int64_t steps = 300;
  examples::ArgReader r("custom_kernel", argc, argv);
  while (r.next()) {
    if (r.is("--device")) device_name = r.value();
    else if (r.is("--steps")) steps = r.count();
    else r.unknown("--device cpu|cuda, --steps N");
  }
  EMBER_CHECK(device_name == "cpu" || device_name == "cuda", "custom_kernel: --device is cpu or cuda, not ", device_name);
  const Device base = device_name == "cuda" ? Device::cuda(0) : Device::cpu();
  std::cout << "device: " << base.name() << "\n";

  // 1. values on every stack, a view and a fused chain around it included
  const DynTensor xc = DynTensor::normal({64, 257}, 0, 3, DType::f32);
  double forward = 0;
  for (const Device& dev : {base, base.fusion(), base.autodiff(), base.fusion().autodiff()}) {
    const DynTensor x = xc.to(dev);
    const double d = std::max({max_diff(swish()(x), swish_composed(x)),
                               max_diff(swish()(transpose(x, 0, 1)), swish_composed(transpose(x, 0, 1))),
                               max_diff(swish()(x * 0.5 + 1) * 2, swish_composed(x * 0.5 + 1) * 2)});
    std::cout << "  " << dev.name() << ": forward max difference " << d << "\n";
    forward = std::max(forward, d);
  }

  // 2. gradients, and gradients of gradients (the backward is made of differentiable ops)
  double gradient = 0, second = 0;
  const DynTensor wc = DynTensor::normal({64, 257}, 0, 1, DType::f32);
  for (const Device& dev : {base.autodiff(), base.fusion().autodiff()}) {
    const DynTensor x = xc.to(dev).require_grad(), w = wc.to(dev);
    auto grad_of = [&](auto f, bool create) {
      return x.grad(sum(f(x) * w).backward({.create_graph = create})).value();
    };
    auto op = [](const DynTensor& v) { return swish()(v); };
    auto ref = [](const DynTensor& v) { return swish_composed(v); };
    gradient = std::max(gradient, max_diff(grad_of(op, false), grad_of(ref, false)));
    const DynTensor g1 = grad_of(op, true), r1 = grad_of(ref, true);
    second = std::max(second, max_diff(x.grad(sum(g1 * g1).backward()).value(), x.grad(sum(r1 * r1).backward()).value()));
  }
  std::cout << "  gradient max difference " << gradient << ", second-order " << second << "\n";

  // 3. training: y = sin(3 x0) + x1^2 / 2 from 2 features, the same MLP with either activation
  const Device dev = base.autodiff();
  const DynTensor features = DynTensor::uniform({512, 2}, -1, 1, DType::f32);
  const DynTensor f0 = narrow(features, 1, 0, 1), f1 = narrow(features, 1, 1, 1);
  const DynTensor target = sin(f0 * 3) + f1 * f1 * 0.5;
  const DynTensor x = features.to(dev), y = target.to(dev);
  auto make = [&](bool custom) {
    dev.seed(5);
    return Mlp{nn::LinearConfig{2, 64}.init(dev), nn::LinearConfig{64, 64}.init(dev), nn::LinearConfig{64, 1}.init(dev),
               custom};
  };
  double loss[2] = {0, 0}, first = 0;
  for (int custom : {1, 0}) {
    Mlp m = make(custom);
    auto opt = optim::AdamConfig{}.init();
    for (int64_t s = 0; s < steps; ++s) {
      DynTensor l = mean(square(m.forward(x) - y));
      loss[custom] = l.item<double>();
      if (s == 0) first = loss[custom];
      m = opt.step(std::move(m), l.backward(), 1e-2);
    }
  }
  std::cout << "  training, " << steps << " Adam steps: loss " << first << " -> " << loss[1] << " (custom op), "
            << loss[0] << " (composed)\n";

  // 4. speed (forward, no autodiff): one kernel against the composition's passes
  const DynTensor big = DynTensor::normal({2048, 2048}, 0, 1, DType::f32, base);
  auto time = [&](auto f) {
    f(big).to(Device::cpu());  // warm-up (and the CUDA kernel's compilation)
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) f(big).to(Device::cpu());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 10;
  };
  std::printf("  [2048, 2048] forward with the copy back: custom %.2f ms, composed %.2f ms\n",
              time([](const DynTensor& v) { return swish()(v); }), time([](const DynTensor& v) { return swish_composed(v); }));

  std::printf("max difference: forward %.3g gradient %.3g second-order %.3g  loss: custom %.6f composed %.6f\n", forward,
              gradient, second, loss[1], loss[0]);
  return 0;
} catch (const Error& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
