// One device over several backends (the router decorator): a small regression model trained by
// gradient descent on a router, where matrix products go to the first device and everything else
// to the last, and the same training on the CPU alone must give the same loss.
//
//   ninja -C build router && build/examples/router            # a GPU and the CPU where there is one
//   EMBER_LOG=router build/examples/router                     # every move between the devices
// Without a GPU the router is over two CPU backends, so the moves still happen.
#include <cmath>
#include <cstdio>
#include <ember/backends/cpu.hpp>
#include <ember/ember.hpp>
#include <string_view>

using namespace ember;

// loss after `steps` of gradient descent on y = x w + b (x: [64, 8]) on `dev` (an autodiff device)
double train(const Device& dev, int steps) {
  Device::cpu().seed(7);
  auto x_host = DynTensor::normal({64, 8}, 0, 1, DType::f32, Device::cpu());
  auto true_w = DynTensor::normal({8, 1}, 0, 1, DType::f32, Device::cpu());
  auto y = (matmul(x_host, true_w) + 0.5).to(dev);
  auto x = x_host.to(dev);
  auto w = DynTensor::zeros({8, 1}, DType::f32, dev);
  auto b = DynTensor::zeros({1}, DType::f32, dev);
  double loss_value = 0;
  for (int step = 0; step < steps; ++step) {
    auto wt = w.require_grad(), bt = b.require_grad();
    auto loss = mean(square(matmul(x, wt) + bt - y));
    Gradients g = loss.backward();
    w = (wt - *wt.grad(g) * 0.1).detach();
    b = (bt - *bt.grad(g) * 0.1).detach();
    loss_value = loss.item();
  }
  return loss_value;
}

int main() {
  const bool gpu = cuda::available();
  Device first = gpu ? Device::cuda(0) : Device(cpu::make_backend());
  // matmul (and its backward's matmuls) on the first device, the rest on the CPU
  Device routed = Device::router({first, Device::cpu()}, [](const router::Route& r) -> std::optional<size_t> {
    if (r.op.name() == std::string_view("matmul")) return 0;
    return 1;
  });
  const double on_router = train(routed.autodiff(), 50);
  const router::Stats s = router::stats(routed.backend());
  std::printf("%s: loss %.6f after 50 steps; %lld ops on the first device (%s), %lld on the CPU; %lld tensors "
              "moved (%lld bytes)\n",
              routed.name().c_str(), on_router, (long long)s.ops_per_backend[0], first.name().c_str(),
              (long long)s.ops_per_backend[1], (long long)s.transfers, (long long)s.bytes_transferred);
  const double on_cpu = train(Device::cpu().autodiff(), 50);
  std::printf("cpu alone: loss %.6f\n", on_cpu);
  // on two CPU backends the results are the same computation; a GPU rounds differently
  const double tol = gpu ? 1e-4 : 0;
  if (std::fabs(on_router - on_cpu) > tol || s.transfers == 0) {
    std::printf("FAILED: the router's training differs from the CPU's, or nothing moved\n");
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
