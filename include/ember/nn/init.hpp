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

// Which fan a kaiming initializer scales by: fan_in keeps the forward pass's variance, fan_out the
// backward pass's (torch.nn.init's mode).
enum class FanMode : uint8_t { fan_in, fan_out };

// torch.nn.init.calculate_gain: "linear", "conv*", "sigmoid" -> 1, "tanh" -> 5/3, "relu" -> sqrt(2),
// "leaky_relu" -> sqrt(2 / (1 + param^2)), "selu" -> 3/4.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
// (fan_in, fan_out) of a weight shape; rank 1: both are the size.
std::pair<int64_t, int64_t> fans(const Shape& shape);

// How to fill a new parameter: one of torch.nn.init's schemes with its arguments. Build one with the
// static factories and draw values with init(); draws use the device's seeded generator.
struct Initializer {
  // The scheme: the distribution init() draws from.
  enum class Kind : uint8_t { constant, uniform, normal, xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal, orthogonal };
  Kind kind = Kind::constant;  // the scheme
  // a: the constant, the uniform's low bound or the normal's mean (see b).
  double a = 0, b = 0;            // constant: a; uniform: [a, b); normal: mean a, std b
  double gain = 1;                // xavier, kaiming, orthogonal
  FanMode mode = FanMode::fan_in; // kaiming
  // fan_in: overrides the fan_in computed from the shape (fan_out likewise).
  std::optional<int64_t> fan_in, fan_out;  // override the fans computed from the shape

  static Initializer constant(double v) { return make(Kind::constant, v); }  // every element v
  static Initializer zeros() { return constant(0); }  // every element 0
  static Initializer ones() { return constant(1); }   // every element 1
  static Initializer uniform(double lo, double hi) { return make(Kind::uniform, lo, hi); }  // U(lo, hi)
  static Initializer normal(double mean, double std) { return make(Kind::normal, mean, std); }  // N(mean, std^2)
  // torch.nn.init.xavier_uniform_: U(-bound, bound), bound = gain * sqrt(6 / (fan_in + fan_out)).
  static Initializer xavier_uniform(double gain = 1) { return make(Kind::xavier_uniform, 0, 0, gain); }
  // torch.nn.init.xavier_normal_: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)).
  static Initializer xavier_normal(double gain = 1) { return make(Kind::xavier_normal, 0, 0, gain); }
  // Default gain sqrt(2) (relu), like torch.nn.init.kaiming_*(nonlinearity="relu").
  // U(-bound, bound), bound = gain * sqrt(3 / fan), fan chosen by `m`.
  static Initializer kaiming_uniform(double gain = 1.4142135623730951, FanMode m = FanMode::fan_in) {
    return make(Kind::kaiming_uniform, 0, 0, gain, m);
  }
  // torch.nn.init.kaiming_normal_: N(0, std^2), std = gain / sqrt(fan), fan chosen by `m`; default gain sqrt(2).
  static Initializer kaiming_normal(double gain = 1.4142135623730951, FanMode m = FanMode::fan_in) {
    return make(Kind::kaiming_normal, 0, 0, gain, m);
  }
  // torch.nn.init.orthogonal_: the weight, viewed as [shape[0], rest], has orthonormal rows or columns
  // (whichever are fewer), times gain; needs rank >= 2.
  static Initializer orthogonal(double gain = 1) { return make(Kind::orthogonal, 0, 0, gain); }
  // PyTorch's default for Linear/Conv weights: kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  static Initializer torch_default() { return kaiming_uniform(1.0 / 1.7320508075688772); }

  // An initializer of any kind from raw fields (a, b, gain and mode mean what the fields do).
  static Initializer make(Kind k, double a = 0, double b = 0, double gain = 1, FanMode m = FanMode::fan_in) {
    Initializer i;
    i.kind = k;
    i.a = a;
    i.b = b;
    i.gain = gain;
    i.mode = m;
    return i;
  }

  // A new tensor of `shape` drawn from this scheme. Throws ember::Error when a fan it needs is 0 (or the
  // shape has rank 0), or for orthogonal on a shape of rank < 2.
  DynTensor init(const Shape& shape, const Device& device = Device::default_device(), DType dtype = kDefaultFloat) const;
};

}  // namespace ember::nn
