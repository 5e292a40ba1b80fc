// The digit recogniser's model (web/demos/digits): a small CNN for UCI's 8x8 grey digits, about
// 38 k parameters. The trainer (train.cpp) and the wasm module (web/models.cpp registers it as
// "digits_cnn") compile this same header, so the page runs exactly the trained network.
//
//   conv 3x3 (1 -> 16) - relu - conv 3x3 (16 -> 32) - relu - maxpool 2
//   - flatten - linear (512 -> 64) - relu - dropout - linear (64 -> 10)
//
//   digits_demo::Cnn model = digits_demo::make_model(Device::cpu());
//   DynTensor logits = model.forward(images);   // [N, 1, 8, 8] in [0, 1] -> [N, 10]
#pragma once

#include <ember/nn.hpp>

namespace digits_demo {

using namespace ember;

struct Cnn {
  nn::Conv2d conv1, conv2;
  nn::MaxPool2d pool;
  nn::Linear fc1, fc2;
  nn::Dropout dropout;
  EMBER_MODULE(conv1, conv2, fc1, fc2, dropout)

  DynTensor forward(DynTensor x) const {  // x: [N, 1, 8, 8] in [0, 1] (0 = background) -> logits [N, 10]
    x = relu(conv1.forward(std::move(x)));
    x = pool.forward(relu(conv2.forward(std::move(x))));
    x = relu(fc1.forward(flatten(std::move(x), 1)));
    return fc2.forward(dropout.forward(std::move(x)));
  }
};

inline Cnn make_model(const Device& device) {
  return Cnn{
      nn::Conv2dConfig{.in_channels = 1, .out_channels = 16, .kernel_size = {3}, .padding = {1}}.init(device),
      nn::Conv2dConfig{.in_channels = 16, .out_channels = 32, .kernel_size = {3}, .padding = {1}}.init(device),
      nn::MaxPool2d{.kernel_size = {2}},
      nn::LinearConfig{.in_features = 32 * 4 * 4, .out_features = 64}.init(device),
      nn::LinearConfig{.in_features = 64, .out_features = 10}.init(device),
      nn::Dropout{.p = 0.25},
  };
}

}  // namespace digits_demo
