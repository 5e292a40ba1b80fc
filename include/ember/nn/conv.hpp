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
#include <memory>
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
struct QuantizedWeight;  // nn/quantize.hpp

// torch.nn.Conv1d/2d/3d's arguments; N is the number of spatial dims.
template <int N>
struct ConvConfig {
  int64_t in_channels = 0;   // C_in; positive and divisible by groups
  int64_t out_channels = 0;  // C_out; positive and divisible by groups
  Sizes kernel_size{};       // required: one positive size, or N
  Sizes stride{1};           // the step between output positions
  Sizes padding{0};          // added on both sides of every spatial dim
  Sizes dilation{1};         // the spacing between kernel taps
  int64_t groups = 1;        // in and out channels split into this many independent convolutions
  bool bias = true;          // a learnable bias [out_channels]
  ConvPaddingMode padding_mode = ConvPaddingMode::zeros;  // what the padding is filled with
  // PyTorch's padding="same" (needs stride 1): pads so that the output has the input's size, the
  // odd extra element on the end side. `padding` is then ignored. (padding="valid" is padding {0}.)
  bool padding_same = false;
  // For the weight; the bias is always U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as in PyTorch.
  Initializer initializer = Initializer::torch_default();
  // Builds the layer on `device`; throws ember::Error when the channels do not fit groups, kernel_size is
  // missing or not positive, a size option has neither 1 nor N values, or padding_same has a stride.
  Conv<N> init(const Device& device = Device::default_device()) const;
};

// torch.nn.Conv1d/2d/3d. Each spatial output size is
// floor((in + 2 * padding - dilation * (kernel - 1) - 1) / stride) + 1.
template <int N>
struct Conv {
  Param weight{};               // [out_channels, in_channels / groups, *kernel_size]
  std::optional<Param> bias{};  // [out_channels]
  ConvConfig<N> config{};       // the options it was made with (the initializer is not used again)
  EMBER_MODULE(weight, bias)
  // Set by nn::quantize / nn::prepare / nn::prepare_qat (nn/quantize.hpp): the forward then observes
  // its input, fake-quantizes, or runs the int8 convolution (the float weight may be gone).
  std::shared_ptr<const QuantizedWeight> quantized{};
  // Output [N, C_out, *out_spatial] (unbatched: [C_out, *out_spatial]); throws ember::Error on a wrong
  // rank, channel count or dtype.
  DynTensor forward(DynTensor x) const;  // [N, C_in, *spatial] or [C_in, *spatial]
  // The same followed by `e` in the conv's kernel (conv_fused): + e.residual (the output's shape),
  // then a clamp to [e.min, e.max]. forward(x, {.min = 0}) is relu(forward(x)) in one pass.
  DynTensor forward(DynTensor x, ConvEpilogue e) const;
};

// torch.nn.ConvTranspose1d/2d/3d's arguments, in PyTorch's order; N is the number of spatial dims.
template <int N>
struct ConvTransposeConfig {
  int64_t in_channels = 0;   // C_in; positive and divisible by groups
  int64_t out_channels = 0;  // C_out; positive and divisible by groups
  Sizes kernel_size{};       // required: one positive size, or N
  Sizes stride{1};           // the upsampling step
  Sizes padding{0};          // dilation * (kernel - 1) - padding zeros are added to each side of the input
  Sizes output_padding{0};   // extra size on the end side of each output dim (less than stride or dilation)
  int64_t groups = 1;        // in and out channels split into this many independent convolutions
  bool bias = true;          // a learnable bias [out_channels]
  Sizes dilation{1};         // the spacing between kernel taps
  // For the weight; the bias is always U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as in PyTorch.
  Initializer initializer = Initializer::torch_default();
  // Builds the layer on `device`; throws ember::Error when the channels do not fit groups, kernel_size is
  // missing or not positive, or a size option has neither 1 nor N values.
  ConvTranspose<N> init(const Device& device = Device::default_device()) const;
};

// torch.nn.ConvTranspose1d/2d/3d (the gradient of a convolution). Each spatial output size is
// (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1.
template <int N>
struct ConvTranspose {
  Param weight{};               // [in_channels, out_channels / groups, *kernel_size]
  std::optional<Param> bias{};  // [out_channels]
  ConvTransposeConfig<N> config{};  // the options it was made with (the initializer is not used again)
  EMBER_MODULE(weight, bias)
  // x [N, C_in, *spatial] or [C_in, *spatial]; output [N, C_out, *out_spatial] (unbatched: no N).
  // Throws ember::Error on a wrong rank, channel count or dtype.
  DynTensor forward(DynTensor x) const;
  // Picks output_padding so that the spatial output size is `output_size` (N values, or the full
  // output shape), as torch's forward(input, output_size). Throws ember::Error when no output_padding
  // in [0, stride) reaches it.
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

using Conv1dConfig = ConvConfig<1>;  // input [N, C, L]
using Conv2dConfig = ConvConfig<2>;  // input [N, C, H, W]
using Conv3dConfig = ConvConfig<3>;  // input [N, C, D, H, W]
using Conv1d = Conv<1>;  // torch.nn.Conv1d: input [N, C, L] or [C, L]
using Conv2d = Conv<2>;  // torch.nn.Conv2d: input [N, C, H, W] or [C, H, W]
using Conv3d = Conv<3>;  // torch.nn.Conv3d: input [N, C, D, H, W] or [C, D, H, W]
using ConvTranspose1dConfig = ConvTransposeConfig<1>;  // input [N, C, L]
using ConvTranspose2dConfig = ConvTransposeConfig<2>;  // input [N, C, H, W]
using ConvTranspose3dConfig = ConvTransposeConfig<3>;  // input [N, C, D, H, W]
using ConvTranspose1d = ConvTranspose<1>;  // torch.nn.ConvTranspose1d: input [N, C, L] or [C, L]
using ConvTranspose2d = ConvTranspose<2>;  // torch.nn.ConvTranspose2d: input [N, C, H, W] or [C, H, W]
using ConvTranspose3d = ConvTranspose<3>;  // torch.nn.ConvTranspose3d: input [N, C, D, H, W] or [C, D, H, W]

}  // namespace ember::nn
