// Convolutions: Conv1d/2d/3d and ConvTranspose1d/2d/3d (torch.nn.Conv*d, torch.nn.ConvTranspose*d).
// Weights use PyTorch's layouts: Conv [out, in / groups, *kernel], ConvTranspose [in, out / groups, *kernel].
// Inputs are [N, C, *spatial] or unbatched [C, *spatial].
//
//   # Device dev = Device::cpu(); DynTensor images = randn({2, 3, 8, 8});
//   nn::Conv2d conv = nn::Conv2dConfig{.in_channels = 3, .out_channels = 16, .kernel_size = {3},
//                                      .padding = {1}}.init(dev);
//   DynTensor y = conv.forward(images);                         // [N, 3, H, W] -> [N, 16, H, W]
//   auto same = nn::Conv1dConfig{.in_channels = 4, .out_channels = 4, .kernel_size = {4},
//                                .padding_same = true}.init(dev);   // PyTorch's padding="same"
//   auto up = nn::ConvTranspose2dConfig{16, 8, {4}, {2}, {1}}.init(dev);   // doubles H and W
//   # run
//
// Size options (kernel_size, stride, padding, dilation, output_padding) take one value for every
// spatial dim or one value per dim.
#pragma once

#include <cstdint>
#include <optional>

#include "ember/nn/init.hpp"
#include "ember/nn/module.hpp"

namespace ember::nn {

// torch's padding_mode: how the input is padded before the convolution.
enum class ConvPaddingMode : uint8_t { zeros, reflect, replicate, circular };

template <int N>
struct Conv;
template <int N>
struct ConvTranspose;

template <int N>
struct ConvConfig {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  Sizes kernel_size{};
  Sizes stride{1};
  Sizes padding{0};
  Sizes dilation{1};
  int64_t groups = 1;
  bool bias = true;
  ConvPaddingMode padding_mode = ConvPaddingMode::zeros;
  // PyTorch's padding="same" (needs stride 1): pads so that the output has the input's size, the
  // odd extra element on the end side. `padding` is then ignored. (padding="valid" is padding {0}.)
  bool padding_same = false;
  // For the weight; the bias is always U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as in PyTorch.
  Initializer initializer = Initializer::torch_default();
  Conv<N> init(const Device& device = Device::default_device()) const;
};

template <int N>
struct Conv {
  Param weight{};               // [out_channels, in_channels / groups, *kernel_size]
  std::optional<Param> bias{};  // [out_channels]
  ConvConfig<N> config{};       // the options it was made with (the initializer is not used again)
  EMBER_MODULE(weight, bias)
  DynTensor forward(DynTensor x) const;  // [N, C_in, *spatial] or [C_in, *spatial]
};

template <int N>
struct ConvTransposeConfig {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  Sizes kernel_size{};
  Sizes stride{1};
  Sizes padding{0};
  Sizes output_padding{0};
  int64_t groups = 1;
  bool bias = true;
  Sizes dilation{1};
  Initializer initializer = Initializer::torch_default();
  ConvTranspose<N> init(const Device& device = Device::default_device()) const;
};

template <int N>
struct ConvTranspose {
  Param weight{};               // [in_channels, out_channels / groups, *kernel_size]
  std::optional<Param> bias{};  // [out_channels]
  ConvTransposeConfig<N> config{};
  EMBER_MODULE(weight, bias)
  DynTensor forward(DynTensor x) const;
  // Picks output_padding so that the spatial output size is `output_size` (N values, or the full
  // output shape), as torch's forward(input, output_size).
  DynTensor forward(DynTensor x, Sizes output_size) const;
};

extern template struct ConvConfig<1>;
extern template struct ConvConfig<2>;
extern template struct ConvConfig<3>;
extern template struct Conv<1>;
extern template struct Conv<2>;
extern template struct Conv<3>;
extern template struct ConvTransposeConfig<1>;
extern template struct ConvTransposeConfig<2>;
extern template struct ConvTransposeConfig<3>;
extern template struct ConvTranspose<1>;
extern template struct ConvTranspose<2>;
extern template struct ConvTranspose<3>;

using Conv1dConfig = ConvConfig<1>;
using Conv2dConfig = ConvConfig<2>;
using Conv3dConfig = ConvConfig<3>;
using Conv1d = Conv<1>;
using Conv2d = Conv<2>;
using Conv3d = Conv<3>;
using ConvTranspose1dConfig = ConvTransposeConfig<1>;
using ConvTranspose2dConfig = ConvTransposeConfig<2>;
using ConvTranspose3dConfig = ConvTransposeConfig<3>;
using ConvTranspose1d = ConvTranspose<1>;
using ConvTranspose2d = ConvTranspose<2>;
using ConvTranspose3d = ConvTranspose<3>;

}  // namespace ember::nn
