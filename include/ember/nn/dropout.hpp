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

// torch.nn.Dropout (see the top of this file); it is its own config.
struct Dropout {
  double p = 0.5;  // the probability of zeroing an element, in [0, 1]
  Mode mode{};     // training (dropout on, the default) or eval (identity)
  EMBER_MODULE(mode)
  Dropout init(const Device& /*device*/ = Device::default_device()) const { return *this; }  // a copy
  // Output of x's shape; throws ember::Error when p is outside [0, 1].
  DynTensor forward(DynTensor x) const;
};
using DropoutConfig = Dropout;  // the layer is its own config

}  // namespace ember::nn
