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

// torch.nn.ReLU: max(0, x), elementwise.
struct Relu {
  EMBER_ACTIVATION_BODY(Relu)
};
// torch.nn.ReLU6: min(max(0, x), 6), elementwise.
struct Relu6 {
  EMBER_ACTIVATION_BODY(Relu6)
};
// torch.nn.LeakyReLU: x for x > 0, negative_slope * x otherwise.
struct LeakyRelu {
  double negative_slope = 0.01;  // the slope for x < 0
  EMBER_ACTIVATION_BODY(LeakyRelu)
};
// gelu(x) = x * Phi(x); approximate = tanh uses the tanh formula.
struct Gelu {
  GeluApproximation approximate = GeluApproximation::none;  // none: the exact erf form (PyTorch's "none")
  EMBER_ACTIVATION_BODY(Gelu)
};
// torch.nn.SiLU (swish): x * sigmoid(x).
struct Silu {
  EMBER_ACTIVATION_BODY(Silu)
};
// torch.nn.Mish: x * tanh(softplus(x)).
struct Mish {
  EMBER_ACTIVATION_BODY(Mish)
};
// torch.nn.ELU: x for x > 0, alpha * (exp(x) - 1) otherwise.
struct Elu {
  double alpha = 1.0;  // scale of the negative branch, which saturates at -alpha
  EMBER_ACTIVATION_BODY(Elu)
};
// torch.nn.SELU: scale * elu(x, alpha) with PyTorch's fixed alpha (1.6733) and scale (1.0507).
struct Selu {
  EMBER_ACTIVATION_BODY(Selu)
};
// torch.nn.CELU: x for x > 0, alpha * (exp(x / alpha) - 1) otherwise.
struct Celu {
  double alpha = 1.0;  // must not be 0 (forward throws ember::Error)
  EMBER_ACTIVATION_BODY(Celu)
};
// log(1 + exp(beta x)) / beta; linear where beta x > threshold.
struct Softplus {
  double beta = 1.0;        // the sharpness
  double threshold = 20.0;  // where beta * x > threshold the output is x
  EMBER_ACTIVATION_BODY(Softplus)
};
// torch.nn.Softsign: x / (1 + |x|).
struct Softsign {
  EMBER_ACTIVATION_BODY(Softsign)
};
// torch.nn.Tanh.
struct Tanh {
  EMBER_ACTIVATION_BODY(Tanh)
};
// torch.nn.Sigmoid: 1 / (1 + exp(-x)).
struct Sigmoid {
  EMBER_ACTIVATION_BODY(Sigmoid)
};
// torch.nn.LogSigmoid: log(sigmoid(x)).
struct LogSigmoid {
  EMBER_ACTIVATION_BODY(LogSigmoid)
};
// torch.nn.Hardsigmoid: relu6(x + 3) / 6.
struct HardSigmoid {
  EMBER_ACTIVATION_BODY(HardSigmoid)
};
// torch.nn.Hardswish: x * relu6(x + 3) / 6.
struct HardSwish {
  EMBER_ACTIVATION_BODY(HardSwish)
};
// torch.nn.Hardtanh: x clamped to [min_val, max_val]; forward throws ember::Error when min_val > max_val.
struct HardTanh {
  double min_val = -1.0;  // the lower clamp
  double max_val = 1.0;   // the upper clamp
  EMBER_ACTIVATION_BODY(HardTanh)
};
// torch.nn.Tanhshrink: x - tanh(x).
struct TanhShrink {
  EMBER_ACTIVATION_BODY(TanhShrink)
};
// torch.nn.Softshrink: x - lambd for x > lambd, x + lambd for x < -lambd, 0 otherwise.
struct SoftShrink {
  double lambd = 0.5;  // the threshold, >= 0 (forward throws ember::Error otherwise)
  EMBER_ACTIVATION_BODY(SoftShrink)
};
// torch.nn.Hardshrink: x where |x| > lambd, 0 otherwise.
struct HardShrink {
  double lambd = 0.5;  // the threshold
  EMBER_ACTIVATION_BODY(HardShrink)
};
// torch.nn.GLU: a * sigmoid(b) for the halves a, b of dim `dim` (the output's `dim` is half as long).
struct Glu {
  int dim = -1;  // the dim split in two; its size must be even (forward throws ember::Error otherwise)
  EMBER_ACTIVATION_BODY(Glu)
};
// silu(a) * b for the halves a, b of dim `dim` (no PyTorch module; see the top of this file).
struct SwiGlu {
  int dim = -1;  // the dim split in two; its size must be even (forward throws ember::Error otherwise)
  EMBER_ACTIVATION_BODY(SwiGlu)
};
// torch.nn.Softmax: exp(x) / sum(exp(x)) along `dim`.
// PyTorch's Softmax(dim=None) picks a dim by input rank (deprecated); here the default is the last dim.
struct Softmax {
  int dim = -1;  // the dim normalised over; negative counts from the end
  EMBER_ACTIVATION_BODY(Softmax)
};
// torch.nn.LogSoftmax: log(softmax(x)) along `dim`.
struct LogSoftmax {
  int dim = -1;  // the dim normalised over; negative counts from the end
  EMBER_ACTIVATION_BODY(LogSoftmax)
};

#undef EMBER_ACTIVATION_BODY

using ReluConfig = Relu;  // Relu is its own config: init() returns a copy
using Relu6Config = Relu6;  // Relu6 is its own config: init() returns a copy
using LeakyReluConfig = LeakyRelu;  // LeakyRelu is its own config: init() returns a copy
using GeluConfig = Gelu;  // Gelu is its own config: init() returns a copy
using SiluConfig = Silu;  // Silu is its own config: init() returns a copy
using MishConfig = Mish;  // Mish is its own config: init() returns a copy
using EluConfig = Elu;  // Elu is its own config: init() returns a copy
using SeluConfig = Selu;  // Selu is its own config: init() returns a copy
using CeluConfig = Celu;  // Celu is its own config: init() returns a copy
using SoftplusConfig = Softplus;  // Softplus is its own config: init() returns a copy
using SoftsignConfig = Softsign;  // Softsign is its own config: init() returns a copy
using TanhConfig = Tanh;  // Tanh is its own config: init() returns a copy
using SigmoidConfig = Sigmoid;  // Sigmoid is its own config: init() returns a copy
using LogSigmoidConfig = LogSigmoid;  // LogSigmoid is its own config: init() returns a copy
using HardSigmoidConfig = HardSigmoid;  // HardSigmoid is its own config: init() returns a copy
using HardSwishConfig = HardSwish;  // HardSwish is its own config: init() returns a copy
using HardTanhConfig = HardTanh;  // HardTanh is its own config: init() returns a copy
using TanhShrinkConfig = TanhShrink;  // TanhShrink is its own config: init() returns a copy
using SoftShrinkConfig = SoftShrink;  // SoftShrink is its own config: init() returns a copy
using HardShrinkConfig = HardShrink;  // HardShrink is its own config: init() returns a copy
using GluConfig = Glu;  // Glu is its own config: init() returns a copy
using SwiGluConfig = SwiGlu;  // SwiGlu is its own config: init() returns a copy
using SoftmaxConfig = Softmax;  // Softmax is its own config: init() returns a copy
using LogSoftmaxConfig = LogSoftmax;  // LogSoftmax is its own config: init() returns a copy

struct PRelu;

// torch.nn.PReLU: one slope, or one per channel (dim 1 of the input).
struct PReluConfig {
  int64_t num_parameters = 1;  // 1 (one shared slope) or the input's channel count; must be positive
  double init_value = 0.25;  // PyTorch's `init` argument (renamed: init() builds the layer)
  // Builds the layer on `device`, weight filled with init_value; throws ember::Error when num_parameters <= 0.
  PRelu init(const Device& device = Device::default_device()) const;
};

// torch.nn.PReLU: a leaky ReLU whose negative slope `weight` is learnt.
struct PRelu {
  Param weight{};  // [num_parameters]
  EMBER_MODULE(weight)
  DynTensor forward(DynTensor x) const;  // max(0, x) + weight * min(0, x)
};

}  // namespace ember::nn
