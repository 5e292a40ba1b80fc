// Several GPUs in one process: every Device::cuda(i) computes as the CPU does (kernels compiled
// and loaded per device, cuBLASLt, cuDNN convolution and attention plans kept per device),
// tensors move between devices, memory statistics are per device, and threads that each drive
// another device do not disturb one another (ops that mix two GPUs fail clearly:
// runtime_test.cpp). The tests skip, saying so, on machines with fewer than two GPUs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "ember/backends/cuda.hpp"
#include "ember/ember.hpp"

namespace ember {
namespace {

#define REQUIRE_GPUS(n)                                                                                   \
  if (cuda::device_count() < (n))                                                                         \
  GTEST_SKIP() << "needs " << (n) << " CUDA devices; this machine has " << cuda::device_count() << ": " \
               << cuda::describe_devices()

// max |got - want| <= atol + rtol |want| elementwise (got on any device, want on the CPU).
void expect_close(const DynTensor& got, const DynTensor& want, double atol, double rtol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  auto a = got.to(Device::cpu()).cast(DType::f64).to_vector<double>();
  auto b = want.cast(DType::f64).to_vector<double>();
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double err = std::abs(a[i] - b[i]);
    if (!(err <= atol + rtol * std::abs(b[i]))) ++bad, worst = std::max(worst, err);
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << a.size() << " elements off, worst by " << worst;
}

DynTensor randn(Shape s, uint64_t seed) {
  Device::cpu().seed(seed);
  return DynTensor::normal(std::move(s), 0, 1, DType::f32, Device::cpu());
}

// One pass over the backend's families on `dev`, each against the CPU.
void check_families(const Device& dev) {
  const std::string on = " on " + dev.name();
  auto x = randn({64, 300}, 1), y = randn({300}, 2), w = randn({300, 96}, 3);
  auto gx = x.to(dev), gy = y.to(dev), gw = w.to(dev);
  expect_close(gx * gy + gx, x * y + x, 1e-6, 1e-6, "broadcast elementwise" + on);
  expect_close(sum(gx, {1}), sum(x, {1}), 1e-4, 1e-5, "sum" + on);
  expect_close(softmax(gx, -1), softmax(x, -1), 1e-6, 1e-5, "softmax" + on);
  expect_close(matmul(gx, gw), matmul(x, gw.to(Device::cpu())), 1e-3, 1e-4, "matmul (cuBLASLt)" + on);
  expect_close(std::get<0>(sort(gx, -1)), std::get<0>(sort(x, -1)), 0, 0, "sort" + on);
  auto img = randn({2, 8, 17, 19}, 4), k = randn({16, 8, 3, 3}, 5), b = randn({16}, 6);
  ConvOptions o;
  o.padding = {1, 1};
  expect_close(conv2d(img.to(dev), k.to(dev), b.to(dev), o), conv2d(img, k, b, o), 1e-3, 1e-4, "conv2d (cuDNN)" + on);
  // bf16 causal attention: cuDNN's fused kernels where the device has them
  auto q = randn({2, 4, 128, 64}, 7).cast(DType::bf16), kk = randn({2, 4, 128, 64}, 8).cast(DType::bf16),
       v = randn({2, 4, 128, 64}, 9).cast(DType::bf16);
  auto ref = scaled_dot_product_attention(q.cast(DType::f32), kk.cast(DType::f32), v.cast(DType::f32), std::nullopt,
                                          true);
  expect_close(scaled_dot_product_attention(q.to(dev), kk.to(dev), v.to(dev), std::nullopt, true), ref, 2e-2, 2e-2,
               "bf16 attention" + on);
}

TEST(CudaMultiDevice, EveryDeviceComputesLikeTheCpu) {
  REQUIRE_GPUS(2);
  // the last device first: nothing may assume that device 0 was set up before
  for (int i = cuda::device_count() - 1; i >= 0; --i) check_families(Device::cuda(i));
}

TEST(CudaMultiDevice, TensorsMoveBetweenDevices) {
  REQUIRE_GPUS(2);
  Device d0 = Device::cuda(0), d1 = Device::cuda(1);
  auto x = DynTensor::uniform({3, 1000, 1001}, -1, 1, DType::f32, Device::cpu());
  auto on0 = x.to(d0);
  auto on1 = on0.to(d1);
  EXPECT_EQ(on1.device(), d1);
  auto back = (on1 * 2.0).to(d0).to(Device::cpu());
  expect_close(back, x * 2.0, 0, 0, "cuda:0 -> cuda:1 -> cuda:0");
  // a strided view crosses as its values
  auto t = transpose(on0, 1, 2).to(d1);
  expect_close(t, transpose(x, 1, 2), 0, 0, "a transposed view to cuda:1");
}

TEST(CudaMultiDevice, MemoryStatisticsArePerDevice) {
  REQUIRE_GPUS(2);
  Device d0 = Device::cuda(0), d1 = Device::cuda(1);
  d0.sync(), d1.sync();
  const MemoryStats s0 = d0.memory_stats(), s1 = d1.memory_stats();
  {
    auto big = DynTensor::zeros({int64_t(16) << 20}, DType::f32, d1);  // 64 MiB on cuda:1
    d1.sync();
    EXPECT_GE(d1.memory_stats().in_use - s1.in_use, int64_t(64) << 20);
    EXPECT_EQ(d0.memory_stats().in_use, s0.in_use);
  }
  EXPECT_EQ(d1.memory_stats().in_use, s1.in_use);
  d1.memory_cleanup();
  EXPECT_EQ(d1.memory_stats().reserved, d1.memory_stats().in_use);
}

// Ops alternate between the devices on one thread (the current device changes at every op),
// and then two threads drive one device each at once.
TEST(CudaMultiDevice, InterleavedAndConcurrentUse) {
  REQUIRE_GPUS(2);
  Device d0 = Device::cuda(0), d1 = Device::cuda(1);
  auto x = randn({256, 256}, 11), m = randn({256, 256}, 12) * 0.05;
  auto a = x.to(d0), b = x.to(d1), m0 = m.to(d0), m1 = m.to(d1), c = x;
  for (int i = 0; i < 20; ++i) {
    a = tanh(matmul(a, m0)) + a * 0.5;
    b = tanh(matmul(b, m1)) + b * 0.5;
    c = tanh(matmul(c, m)) + c * 0.5;
  }
  expect_close(a, c, 1e-4, 1e-4, "a loop on cuda:0 interleaved with cuda:1");
  expect_close(b, c, 1e-4, 1e-4, "a loop on cuda:1 interleaved with cuda:0");
  // reads, which switch the thread's device themselves, between ops of the other device
  for (int i = 0; i < 3; ++i) {
    auto s1 = sum(b * 2.0);   // cuda:1
    (void)sum(a).item();      // cuda:0, read back
    auto s2 = sum(b * 3.0);   // cuda:1 again
    (void)a.to(Device::cpu());
    EXPECT_NEAR(s2.item() / s1.item(), 1.5, 1e-5);
  }

  auto work = [&](Device dev, DynTensor* out) {
    DynTensor t = x.to(dev);
    for (int i = 0; i < 200; ++i) t = softmax(t * 1.5, -1) + t;
    *out = t.to(Device::cpu());
  };
  DynTensor r0, r1, want;
  std::thread t0(work, d0, &r0), t1(work, d1, &r1);
  t0.join(), t1.join();
  work(Device::cpu(), &want);
  expect_close(r0, want, 1e-3, 1e-4, "thread on cuda:0");
  expect_close(r1, want, 1e-3, 1e-4, "thread on cuda:1");
}

// Autodiff on the second device: the gradients of a small network match the CPU's.
TEST(CudaMultiDevice, GradientsOnTheSecondDevice) {
  REQUIRE_GPUS(2);
  auto x = randn({32, 20}, 21), w1 = randn({20, 16}, 22), w2 = randn({16, 4}, 23);
  auto grads = [&](Device dev) {
    Device ad = dev.autodiff();
    auto gw1 = w1.to(ad).require_grad(), gw2 = w2.to(ad).require_grad();
    auto h = matmul(relu(matmul(x.to(ad), gw1)), gw2);
    Gradients g = sum(h * h).backward();
    return std::vector<DynTensor>{g.get(gw1)->to(Device::cpu()), g.get(gw2)->to(Device::cpu())};
  };
  auto want = grads(Device::cpu()), got = grads(Device::cuda(1));
  expect_close(got[0], want[0], 1e-3, 1e-4, "dw1 on cuda:1");
  expect_close(got[1], want[1], 1e-3, 1e-4, "dw2 on cuda:1");
}

}  // namespace
}  // namespace ember
