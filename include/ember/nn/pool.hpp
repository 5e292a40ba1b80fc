// Pooling layers: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d (torch.nn names and defaults).
// They have no parameters and are their own config. Inputs are [N, C, *spatial] or [C, *spatial].
//
//   # DynTensor x = randn({2, 3, 8, 8});
//   DynTensor y = nn::MaxPool2d{.kernel_size = {2}}.forward(x);             // stride defaults to the kernel
//   auto [values, indices] = nn::MaxPool2d{{3}, {2}, {1}}.forward_with_indices(x);
//   DynTensor g = nn::AdaptiveAvgPool2d{{1, 1}}.forward(x);                 // global average: [N, C, 1, 1]
//   # run
#pragma once

#include <cstdint>
#include <utility>

#include "ember/nn/module.hpp"

namespace ember::nn {

// torch.nn.MaxPool1d/2d: the maximum of each window; N is the number of spatial dims.
template <int N>
struct MaxPool {
  Sizes kernel_size{};  // required: one size for every spatial dim, or N
  Sizes stride{};  // empty: kernel_size
  Sizes padding{0};   // implicit -inf padding on both sides
  Sizes dilation{1};  // the spacing between window elements
  bool ceil_mode = false;  // round output sizes up rather than down
  EMBER_MODULE()
  MaxPool init(const Device& /*device*/ = Device::default_device()) const { return *this; }  // a copy
  // [N, C, *spatial] or [C, *spatial] -> the same rank, pooled spatial dims; throws ember::Error on a wrong rank.
  DynTensor forward(DynTensor x) const;
  // (values, i64 indices into each flattened spatial plane), as return_indices=True.
  std::pair<DynTensor, DynTensor> forward_with_indices(DynTensor x) const;
};

// torch.nn.AvgPool1d/2d: the mean of each window; N is the number of spatial dims.
template <int N>
struct AvgPool {
  Sizes kernel_size{};  // required: one size for every spatial dim, or N
  Sizes stride{};  // empty: kernel_size
  Sizes padding{0};  // implicit zero padding on both sides
  bool ceil_mode = false;  // round output sizes up rather than down
  bool count_include_pad = true;  // padded zeros count in the divisor
  EMBER_MODULE()
  AvgPool init(const Device& /*device*/ = Device::default_device()) const { return *this; }  // a copy
  // [N, C, *spatial] or [C, *spatial] -> the same rank, pooled spatial dims; throws ember::Error on a wrong rank.
  DynTensor forward(DynTensor x) const;
};

// Output length `output_size` whatever the input length.
struct AdaptiveAvgPool1d {
  int64_t output_size = 1;  // L_out
  EMBER_MODULE()
  AdaptiveAvgPool1d init(const Device& /*device*/ = Device::default_device()) const { return *this; }  // a copy
  DynTensor forward(DynTensor x) const;  // [N, C, L] or [C, L] -> [N, C, output_size] or [C, output_size]
};

// Output size (H, W), or one value for both; -1 keeps that input dim (PyTorch's None).
struct AdaptiveAvgPool2d {
  Sizes output_size{1};  // (H_out, W_out) or one value for both; default: global average pooling
  EMBER_MODULE()
  AdaptiveAvgPool2d init(const Device& /*device*/ = Device::default_device()) const { return *this; }  // a copy
  DynTensor forward(DynTensor x) const;  // [N, C, H, W] or [C, H, W] -> [N, C, H_out, W_out] or [C, H_out, W_out]
};

extern template struct MaxPool<1>;
extern template struct MaxPool<2>;
extern template struct AvgPool<1>;
extern template struct AvgPool<2>;

using MaxPool1d = MaxPool<1>;  // torch.nn.MaxPool1d: input [N, C, L] or [C, L]
using MaxPool2d = MaxPool<2>;  // torch.nn.MaxPool2d: input [N, C, H, W] or [C, H, W]
using AvgPool1d = AvgPool<1>;  // torch.nn.AvgPool1d: input [N, C, L] or [C, L]
using AvgPool2d = AvgPool<2>;  // torch.nn.AvgPool2d: input [N, C, H, W] or [C, H, W]
using MaxPool1dConfig = MaxPool1d;  // the layer is its own config
using MaxPool2dConfig = MaxPool2d;  // the layer is its own config
using AvgPool1dConfig = AvgPool1d;  // the layer is its own config
using AvgPool2dConfig = AvgPool2d;  // the layer is its own config
using AdaptiveAvgPool1dConfig = AdaptiveAvgPool1d;  // the layer is its own config
using AdaptiveAvgPool2dConfig = AdaptiveAvgPool2d;  // the layer is its own config

}  // namespace ember::nn
