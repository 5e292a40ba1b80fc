// A first look at ember on the CPU: create tensors, run ops, read the values back.
//
//   ninja -C build tensor_basics && build/examples/tensor_basics
// (./test.sh runs it with the other examples; ./demo.sh runs fashion_mnist, not this program)
#include <chrono>
#include <ember/ember.hpp>
#include <iostream>

using namespace ember;

int main() {
  Device::cpu().seed(42);

  // Creation and broadcasting: a [3, 1] column times a [4] row gives a [3, 4] table.
  auto col = reshape(DynTensor::arange(1, 4, 1, DType::f32), {3, 1});
  auto row = DynTensor::arange(1, 5, 1, DType::f32);
  auto table = col * row;
  std::cout << "multiplication table " << table << "\n";

  // Reductions along a dim, with indices.
  auto [best, where] = max_dim(table, 1);
  std::cout << "row maxima " << best << " at columns " << where << "\n";
  std::cout << "mean " << mean(table).item() << ", std " << stddev(table).item() << "\n";

  // Views: transpose and slicing share memory, no copy.
  auto t = transpose(table, 0, 1);
  std::cout << "transposed " << t << "\n";
  std::cout << "every other column " << slice(table, {Slice{}, Slice{0, std::nullopt, 2}}) << "\n";

  // A tiny two-layer network forward pass: softmax(gelu(x W1) W2).
  auto x = DynTensor::normal({8, 16});
  auto w1 = DynTensor::normal({16, 32}, 0, 0.25);
  auto w2 = DynTensor::normal({32, 4}, 0, 0.25);
  auto probs = softmax(matmul(gelu(matmul(x, w1)), w2), -1);
  std::cout << "class probabilities of sample 0 " << select(probs, 0, 0) << "\n";
  std::cout << "predicted classes " << argmax(probs, 1) << "\n";

  // Convolution + pooling on an image batch.
  auto images = DynTensor::uniform({2, 3, 32, 32});
  auto kernels = DynTensor::normal({8, 3, 3, 3}, 0, 0.2);
  auto features = max_pool2d(relu(conv2d(images, kernels, std::nullopt, {.padding = {1}})), {.kernel_size = {2}});
  std::cout << "feature map shape " << features.shape() << "\n";

  // Typed tensors check ranks at compile time.
  Tensor<2> a = Tensor<2>::ones({2, 3});
  Tensor<2> b = (a * 3.0 + 1.0).exp().log();
  std::cout << "typed tensor " << b << "\n";

  // Half precision: values are stored as f16/bf16 and computed in f32.
  auto h = cast(DynTensor::linspace(0, 1, 5), DType::f16);
  std::cout << "f16 " << h << " -> sum " << sum(h).item() << "\n";

  // A 1024x1024 matrix product on every core.
  auto m = DynTensor::normal({1024, 1024});
  auto start = std::chrono::steady_clock::now();
  auto p = matmul(m, m);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "1024^3 matmul: " << ms << " ms (" << 2.0 * 1024 * 1024 * 1024 / ms / 1e6 << " GFLOP/s), checksum "
            << sum(p).item() << "\n";
  return 0;
}
