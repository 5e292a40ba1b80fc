// Trains the digit classifier that examples/cortex_m deploys on a Cortex-M4: a small CNN for
// UCI's 8x8 digits (Debian's python3-sklearn), sized for a microcontroller (about 10 k
// parameters, 39 KB of f32 weights), and saves it as OUT/digits_cnn_m.safetensors.
// export_models.py then rebuilds the same layers in PyTorch, loads these weights and exports
// ONNX, which `ember-onnx generate --target cortex-m` compiles (examples/cortex_m/README.md).
//
//   conv 3x3 (1 -> 8) - relu - conv 3x3 (8 -> 16) - relu - maxpool 2 - flatten
//   - linear (256 -> 32) - relu - linear (32 -> 10)
//
//   ./build/examples/cortex_m [--out DIR] [--epochs N] [--seed N] [--lr X] [--data FILE]
//
// DIR defaults to build/cortex_m. The same seed gives the same model; a few seconds on two cores.
#include <algorithm>
#include <cstdio>
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "../common/args.hpp"
#include "../common/digits.hpp"

using namespace ember;

struct SmallCnn {
  nn::Conv2d conv1, conv2;
  nn::MaxPool2d pool;
  nn::Linear fc1, fc2;
  EMBER_MODULE(conv1, conv2, fc1, fc2)

  DynTensor forward(DynTensor x) const {  // [N, 1, 8, 8] in [0, 1] -> logits [N, 10]
    x = relu(conv1.forward(std::move(x)));
    x = pool.forward(relu(conv2.forward(std::move(x))));
    x = relu(fc1.forward(flatten(std::move(x), 1)));
    return fc2.forward(std::move(x));
  }
};

SmallCnn make_model(const Device& device) {
  return SmallCnn{
      nn::Conv2dConfig{.in_channels = 1, .out_channels = 8, .kernel_size = {3}, .padding = {1}}.init(device),
      nn::Conv2dConfig{.in_channels = 8, .out_channels = 16, .kernel_size = {3}, .padding = {1}}.init(device),
      nn::MaxPool2d{.kernel_size = {2}},
      nn::LinearConfig{.in_features = 16 * 4 * 4, .out_features = 32}.init(device),
      nn::LinearConfig{.in_features = 32, .out_features = 10}.init(device),
  };
}

struct Args {
  std::string out = "build/cortex_m", data = digits::kPath;
  int64_t epochs = 30, batch_size = 32, seed = 1;
  double lr = 5e-3;
};

Args parse(int argc, char** argv) {
  Args a;
  examples::ArgReader r("cortex_m", argc, argv);
  while (r.next()) {
    if (r.is("--out"))
      a.out = r.value();
    else if (r.is("--epochs"))
      a.epochs = r.count();
    else if (r.is("--seed"))
      a.seed = r.count();
    else if (r.is("--lr"))
      a.lr = r.number();
    else if (r.is("--data"))
      a.data = r.value();
    else
      r.unknown("--out, --epochs, --seed, --lr, --data");
  }
  return a;
}

double accuracy(const SmallCnn& model, const std::vector<data::ImageItem>& items) {
  const data::ImageBatch b = data::batch_images(items, Device::cpu());
  return sum(equal(argmax(model.forward(b.images), 1), b.labels)).item() / double(items.size());
}

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  auto [train, test] = digits::split(digits::read(args.data));
  Device device = Device::cpu().autodiff();
  device.seed(uint64_t(args.seed));
  std::mt19937 rng(uint32_t(args.seed));
  SmallCnn model = make_model(device);
  optim::Adam optimizer;
  const int64_t steps_per_epoch = (int64_t(train.size()) + args.batch_size - 1) / args.batch_size;
  optim::OneCycleLR scheduler({.max_lr = args.lr, .total_steps = args.epochs * steps_per_epoch});
  for (int64_t epoch = 1; epoch <= args.epochs; ++epoch) {
    std::shuffle(train.begin(), train.end(), rng);
    double loss_sum = 0;
    for (size_t i = 0; i < train.size(); i += size_t(args.batch_size)) {
      const size_t end = std::min(train.size(), i + size_t(args.batch_size));
      const data::ImageBatch b = data::batch_images({train.begin() + long(i), train.begin() + long(end)}, device);
      DynTensor loss = nn::cross_entropy(model.forward(b.images), b.labels);
      Gradients grads = loss.backward();
      model = optimizer.step(std::move(model), grads, scheduler.lr());
      scheduler.step();
      loss_sum += loss.item() * double(end - i);
    }
    if (epoch == args.epochs || epoch % 10 == 0)
      std::printf("epoch %lld/%lld  train loss %.4f\n", static_cast<long long>(epoch),
                  static_cast<long long>(args.epochs), loss_sum / double(train.size()));
  }
  SmallCnn trained = nn::to_device(model, Device::cpu());
  std::filesystem::create_directories(args.out);
  const std::string path = args.out + "/digits_cnn_m.safetensors";
  nn::save(trained, path, {{"model", "digits_cnn_m"}});
  std::printf("saved %s (%lld parameters)\n", path.c_str(), static_cast<long long>(nn::num_params(trained)));
  std::printf("test accuracy: %.4f\n", accuracy(trained, test));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
