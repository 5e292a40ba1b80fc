// The demo's model: a small CNN for 28x28 grey images (Fashion-MNIST), about 0.42 M parameters.
//
//   conv 3x3 (1 -> 32) - relu - maxpool 2 - conv 3x3 (32 -> 64) - relu - maxpool 2
//   - flatten - linear (3136 -> 128) - relu - dropout - linear (128 -> 10)
#pragma once

#include <ember/nn.hpp>

namespace fashion {

using namespace ember;

struct Cnn {
  nn::Conv2d conv1, conv2;
  nn::MaxPool2d pool;
  nn::Linear fc1, fc2;
  nn::Dropout dropout;
  EMBER_MODULE(conv1, conv2, fc1, fc2, dropout)

  DynTensor forward(DynTensor x) const {  // x: [N, 1, 28, 28] in [0, 1] -> logits [N, 10]
    x = (std::move(x) - 0.2860) / 0.3530;  // the training set's mean and standard deviation
    x = pool.forward(relu(conv1.forward(std::move(x))));
    x = pool.forward(relu(conv2.forward(std::move(x))));
    x = relu(fc1.forward(flatten(std::move(x), 1)));
    return fc2.forward(dropout.forward(std::move(x)));
  }
};

inline Cnn make_cnn(const Device& device) {
  return Cnn{
      nn::Conv2dConfig{.in_channels = 1, .out_channels = 32, .kernel_size = {3}, .padding = {1}}.init(device),
      nn::Conv2dConfig{.in_channels = 32, .out_channels = 64, .kernel_size = {3}, .padding = {1}}.init(device),
      nn::MaxPool2d{.kernel_size = {2}},
      nn::LinearConfig{.in_features = 64 * 7 * 7, .out_features = 128}.init(device),
      nn::LinearConfig{.in_features = 128, .out_features = 10}.init(device),
      nn::Dropout{.p = 0.25},
  };
}

}  // namespace fashion
