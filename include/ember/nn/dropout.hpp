// Dropout (torch.nn.Dropout): in training mode zeroes each element with probability p and scales
// the rest by 1 / (1 - p); in eval mode it returns its input. The mask comes from the input
// device's seeded generator (Device::seed).
//
//   # DynTensor x = randn({4, 8});
//   nn::Dropout drop{0.1};
//   DynTensor h = drop.forward(x);          // training (the default mode)
//   nn::set_training(drop, false);          // or on the whole model
//   h = drop.forward(x);                    // == x
//   # run
#pragma once

#include "ember/nn/module.hpp"

namespace ember::nn {

struct Dropout {
  double p = 0.5;
  Mode mode{};
  EMBER_MODULE(mode)
  Dropout init(const Device& /*device*/ = Device::default_device()) const { return *this; }
  DynTensor forward(DynTensor x) const;
};
using DropoutConfig = Dropout;

}  // namespace ember::nn
