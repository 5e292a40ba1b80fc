// Activation layers (torch.nn names, options and defaults), for models and Sequential.
// Each is its own config except PRelu, which has a parameter:
//
//   # Device dev = Device::cpu(); DynTensor x = randn({4, 8});
//   DynTensor y = nn::LeakyRelu{0.2}.forward(x);
//   nn::Sequential net(nn::LinearConfig{8, 16}.init(dev), nn::Gelu{nn::GeluApproximation::tanh});
//   nn::PRelu act = nn::PReluConfig{.num_parameters = 16}.init(dev);   // weight [16], all 0.25
//   # run
//
// Glu and SwiGlu split dim `dim` into halves a, b (its size must be even) and return
// a * sigmoid(b) and silu(a) * b. SwiGlu is the activation only, with no parameters; a SwiGLU
// feed-forward block is Linear(d, 2h) -> SwiGlu -> Linear(h, d), or two Linear layers whose
// outputs are combined by the caller.
#pragma once

#include <cstdint>

#include "ember/nn/functional.hpp"
#include "ember/nn/module.hpp"

namespace ember::nn {

#define EMBER_ACTIVATION_BODY(Name)                                                      \
  EMBER_MODULE()                                                                         \
  Name init(const Device& /*device*/ = Device::default_device()) const { return *this; } \
  DynTensor forward(DynTensor x) const;

struct Relu {
  EMBER_ACTIVATION_BODY(Relu)
};
struct Relu6 {
  EMBER_ACTIVATION_BODY(Relu6)
};
struct LeakyRelu {
  double negative_slope = 0.01;
  EMBER_ACTIVATION_BODY(LeakyRelu)
};
// gelu(x) = x * Phi(x); approximate = tanh uses the tanh formula.
struct Gelu {
  GeluApproximation approximate = GeluApproximation::none;
  EMBER_ACTIVATION_BODY(Gelu)
};
struct Silu {
  EMBER_ACTIVATION_BODY(Silu)
};
struct Mish {
  EMBER_ACTIVATION_BODY(Mish)
};
struct Elu {
  double alpha = 1.0;
  EMBER_ACTIVATION_BODY(Elu)
};
struct Selu {
  EMBER_ACTIVATION_BODY(Selu)
};
struct Celu {
  double alpha = 1.0;
  EMBER_ACTIVATION_BODY(Celu)
};
// log(1 + exp(beta x)) / beta; linear where beta x > threshold.
struct Softplus {
  double beta = 1.0;
  double threshold = 20.0;
  EMBER_ACTIVATION_BODY(Softplus)
};
struct Softsign {
  EMBER_ACTIVATION_BODY(Softsign)
};
struct Tanh {
  EMBER_ACTIVATION_BODY(Tanh)
};
struct Sigmoid {
  EMBER_ACTIVATION_BODY(Sigmoid)
};
struct LogSigmoid {
  EMBER_ACTIVATION_BODY(LogSigmoid)
};
struct HardSigmoid {
  EMBER_ACTIVATION_BODY(HardSigmoid)
};
struct HardSwish {
  EMBER_ACTIVATION_BODY(HardSwish)
};
struct HardTanh {
  double min_val = -1.0;
  double max_val = 1.0;
  EMBER_ACTIVATION_BODY(HardTanh)
};
struct TanhShrink {
  EMBER_ACTIVATION_BODY(TanhShrink)
};
struct SoftShrink {
  double lambd = 0.5;
  EMBER_ACTIVATION_BODY(SoftShrink)
};
struct HardShrink {
  double lambd = 0.5;
  EMBER_ACTIVATION_BODY(HardShrink)
};
struct Glu {
  int dim = -1;
  EMBER_ACTIVATION_BODY(Glu)
};
struct SwiGlu {
  int dim = -1;
  EMBER_ACTIVATION_BODY(SwiGlu)
};
// PyTorch's Softmax(dim=None) picks a dim by input rank (deprecated); here the default is the last dim.
struct Softmax {
  int dim = -1;
  EMBER_ACTIVATION_BODY(Softmax)
};
struct LogSoftmax {
  int dim = -1;
  EMBER_ACTIVATION_BODY(LogSoftmax)
};

#undef EMBER_ACTIVATION_BODY

using ReluConfig = Relu;
using Relu6Config = Relu6;
using LeakyReluConfig = LeakyRelu;
using GeluConfig = Gelu;
using SiluConfig = Silu;
using MishConfig = Mish;
using EluConfig = Elu;
using SeluConfig = Selu;
using CeluConfig = Celu;
using SoftplusConfig = Softplus;
using SoftsignConfig = Softsign;
using TanhConfig = Tanh;
using SigmoidConfig = Sigmoid;
using LogSigmoidConfig = LogSigmoid;
using HardSigmoidConfig = HardSigmoid;
using HardSwishConfig = HardSwish;
using HardTanhConfig = HardTanh;
using TanhShrinkConfig = TanhShrink;
using SoftShrinkConfig = SoftShrink;
using HardShrinkConfig = HardShrink;
using GluConfig = Glu;
using SwiGluConfig = SwiGlu;
using SoftmaxConfig = Softmax;
using LogSoftmaxConfig = LogSoftmax;

struct PRelu;

// torch.nn.PReLU: one slope, or one per channel (dim 1 of the input).
struct PReluConfig {
  int64_t num_parameters = 1;
  double init_value = 0.25;  // PyTorch's `init` argument (renamed: init() builds the layer)
  PRelu init(const Device& device = Device::default_device()) const;
};

struct PRelu {
  Param weight{};  // [num_parameters]
  EMBER_MODULE(weight)
  DynTensor forward(DynTensor x) const;  // max(0, x) + weight * min(0, x)
};

}  // namespace ember::nn
