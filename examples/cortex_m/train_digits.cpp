// Trains the digit classifier that examples/cortex_m deploys on a Cortex-M4: a small CNN for
// UCI's 8x8 digits (Debian's python3-sklearn), sized for a microcontroller (about 10 k
// parameters, 39 KB of f32 weights), and saves it as OUT/digits_cnn_m.safetensors.
// export_models.py then rebuilds the same layers in PyTorch, loads these weights and exports
// ONNX, which `ember-onnx generate --target cortex-m` compiles (examples/cortex_m/README.md).
//
//   conv 3x3 (1 -> 8) - relu - conv 3x3 (8 -> 16) - relu - maxpool 2 - flatten
//   - linear (256 -> 32) - relu - linear (32 -> 10)
//
//   ./build/examples/cortex_m [--out DIR] [--epochs N] [--seed N] [--lr X] [--batch-size N] [--data FILE]
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

#include "../common/digits.hpp"
#include "../common/digits_training.hpp"

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

int main(int argc, char** argv) try {
  const digits::TrainArgs args = digits::parse_train_args("cortex_m", argc, argv, {.out = "build/cortex_m"});
  auto [train, test] = digits::split(digits::read(args.data));
  const SmallCnn trained = digits::train_model(args, int64_t(train.size()), make_model, [&](std::mt19937& rng) {
    std::shuffle(train.begin(), train.end(), rng);
    return train;
  });
  std::filesystem::create_directories(args.out);
  const std::string path = args.out + "/digits_cnn_m.safetensors";
  nn::save(trained, path, {{"model", "digits_cnn_m"}});
  std::printf("saved %s (%lld parameters)\n", path.c_str(), static_cast<long long>(nn::num_params(trained)));
  std::printf("test accuracy: %.4f\n", digits::accuracy(trained, test));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
