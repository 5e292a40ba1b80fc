// Layers that change spatial resolution without parameters: PixelShuffle, PixelUnshuffle and
// Upsample (torch.nn names and defaults). Each is its own config.
//
//   # DynTensor x = randn({1, 8, 4, 4}), img = randn({1, 3, 4, 4});
//   DynTensor hr = nn::PixelShuffle{2}.forward(x);          // [N, C*4, H, W] -> [N, C, 2H, 2W]
//   nn::Upsample up{.scale_factor = {2}, .mode = nn::UpsampleMode::bilinear};
//   DynTensor y = up.forward(img);                          // [N, C, H, W] -> [N, C, 2H, 2W]
//   # run
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ember/nn/module.hpp"

namespace ember::nn {

// torch.nn.PixelShuffle: moves channel blocks of r * r into r x r spatial blocks (sub-pixel upsampling).
struct PixelShuffle {
  int64_t upscale_factor = 1;  // r; the channel count must be divisible by r * r
  EMBER_MODULE()
  PixelShuffle init(const Device& /*device*/ = Device::default_device()) const { return *this; }  // a copy
  DynTensor forward(DynTensor x) const;  // [*, C*r*r, H, W] -> [*, C, H*r, W*r]
};
using PixelShuffleConfig = PixelShuffle;  // the layer is its own config

// torch.nn.PixelUnshuffle: the inverse of PixelShuffle.
struct PixelUnshuffle {
  int64_t downscale_factor = 1;  // r; H and W must be divisible by r
  EMBER_MODULE()
  PixelUnshuffle init(const Device& /*device*/ = Device::default_device()) const { return *this; }  // a copy
  DynTensor forward(DynTensor x) const;  // [*, C, H*r, W*r] -> [*, C*r*r, H, W]
};
using PixelUnshuffleConfig = PixelUnshuffle;  // the layer is its own config

// As PyTorch: linear needs a [N, C, L] input, bilinear and bicubic [N, C, H, W]; nearest any
// [N, C, *spatial]. (trilinear is not supported.)
enum class UpsampleMode : uint8_t { nearest, linear, bilinear, bicubic };

// Resizes the spatial dims to `size`, or to floor(input size * scale_factor). Exactly one of the
// two is given; each takes one value for every spatial dim or one per dim.
//
// With scale_factor, source coordinates follow the input/output size ratio, which equals
// PyTorch's 1 / scale_factor whenever input size * scale_factor is a whole number (for example
// every integer factor); for other factors PyTorch's Upsample maps coordinates with 1 / scale_factor.
struct Upsample {
  Sizes size{};  // the output spatial size (empty: use scale_factor)
  std::vector<double> scale_factor{};  // positive factors (empty: use size)
  UpsampleMode mode = UpsampleMode::nearest;  // the interpolation
  std::optional<bool> align_corners{};  // linear modes only; nullopt: false
  EMBER_MODULE()
  Upsample init(const Device& /*device*/ = Device::default_device()) const { return *this; }  // a copy
  // x [N, C, *spatial] -> [N, C, *new spatial]; throws ember::Error when both or neither of size and
  // scale_factor are given, a count or rank does not fit, or align_corners is set with nearest.
  DynTensor forward(DynTensor x) const;
};
using UpsampleConfig = Upsample;  // the layer is its own config

}  // namespace ember::nn
