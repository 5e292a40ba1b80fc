// Parameter initializers (PyTorch's torch.nn.init formulas). Fans follow PyTorch: for a weight of
// shape [out, in, *kernel], fan_in = in * prod(kernel) and fan_out = out * prod(kernel).
//
//   # Device dev = Device::cpu();
//   DynTensor w = nn::Initializer::kaiming_uniform().init({128, 64}, dev);
//   DynTensor b = nn::Initializer::uniform(-0.1, 0.1).init({128}, dev);
//   # run
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember::nn {

enum class FanMode : uint8_t { fan_in, fan_out };

// torch.nn.init.calculate_gain: "linear", "conv*", "sigmoid" -> 1, "tanh" -> 5/3, "relu" -> sqrt(2),
// "leaky_relu" -> sqrt(2 / (1 + param^2)), "selu" -> 3/4.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
// (fan_in, fan_out) of a weight shape; rank 1: both are the size.
std::pair<int64_t, int64_t> fans(const Shape& shape);

struct Initializer {
  enum class Kind : uint8_t { constant, uniform, normal, xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal, orthogonal };
  Kind kind = Kind::constant;
  double a = 0, b = 0;            // constant: a; uniform: [a, b); normal: mean a, std b
  double gain = 1;                // xavier, kaiming, orthogonal
  FanMode mode = FanMode::fan_in; // kaiming
  std::optional<int64_t> fan_in, fan_out;  // override the fans computed from the shape

  static Initializer constant(double v) { return make(Kind::constant, v); }
  static Initializer zeros() { return constant(0); }
  static Initializer ones() { return constant(1); }
  static Initializer uniform(double lo, double hi) { return make(Kind::uniform, lo, hi); }
  static Initializer normal(double mean, double std) { return make(Kind::normal, mean, std); }
  static Initializer xavier_uniform(double gain = 1) { return make(Kind::xavier_uniform, 0, 0, gain); }
  static Initializer xavier_normal(double gain = 1) { return make(Kind::xavier_normal, 0, 0, gain); }
  // Default gain sqrt(2) (relu), like torch.nn.init.kaiming_*(nonlinearity="relu").
  static Initializer kaiming_uniform(double gain = 1.4142135623730951, FanMode m = FanMode::fan_in) {
    return make(Kind::kaiming_uniform, 0, 0, gain, m);
  }
  static Initializer kaiming_normal(double gain = 1.4142135623730951, FanMode m = FanMode::fan_in) {
    return make(Kind::kaiming_normal, 0, 0, gain, m);
  }
  static Initializer orthogonal(double gain = 1) { return make(Kind::orthogonal, 0, 0, gain); }
  // PyTorch's default for Linear/Conv weights: kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  static Initializer torch_default() { return kaiming_uniform(1.0 / 1.7320508075688772); }

  static Initializer make(Kind k, double a = 0, double b = 0, double gain = 1, FanMode m = FanMode::fan_in) {
    Initializer i;
    i.kind = k;
    i.a = a;
    i.b = b;
    i.gain = gain;
    i.mode = m;
    return i;
  }

  DynTensor init(const Shape& shape, const Device& device = Device::default_device(), DType dtype = kDefaultFloat) const;
};

}  // namespace ember::nn
