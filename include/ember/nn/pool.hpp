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

template <int N>
struct MaxPool {
  Sizes kernel_size{};
  Sizes stride{};  // empty: kernel_size
  Sizes padding{0};
  Sizes dilation{1};
  bool ceil_mode = false;
  EMBER_MODULE()
  MaxPool init(const Device& /*device*/ = Device::default_device()) const { return *this; }
  DynTensor forward(DynTensor x) const;
  // (values, i64 indices into each flattened spatial plane), as return_indices=True.
  std::pair<DynTensor, DynTensor> forward_with_indices(DynTensor x) const;
};

template <int N>
struct AvgPool {
  Sizes kernel_size{};
  Sizes stride{};  // empty: kernel_size
  Sizes padding{0};
  bool ceil_mode = false;
  bool count_include_pad = true;
  EMBER_MODULE()
  AvgPool init(const Device& /*device*/ = Device::default_device()) const { return *this; }
  DynTensor forward(DynTensor x) const;
};

// Output length `output_size` whatever the input length.
struct AdaptiveAvgPool1d {
  int64_t output_size = 1;
  EMBER_MODULE()
  AdaptiveAvgPool1d init(const Device& /*device*/ = Device::default_device()) const { return *this; }
  DynTensor forward(DynTensor x) const;
};

// Output size (H, W), or one value for both; -1 keeps that input dim (PyTorch's None).
struct AdaptiveAvgPool2d {
  Sizes output_size{1};
  EMBER_MODULE()
  AdaptiveAvgPool2d init(const Device& /*device*/ = Device::default_device()) const { return *this; }
  DynTensor forward(DynTensor x) const;
};

extern template struct MaxPool<1>;
extern template struct MaxPool<2>;
extern template struct AvgPool<1>;
extern template struct AvgPool<2>;

using MaxPool1d = MaxPool<1>;
using MaxPool2d = MaxPool<2>;
using AvgPool1d = AvgPool<1>;
using AvgPool2d = AvgPool<2>;
using MaxPool1dConfig = MaxPool1d;
using MaxPool2dConfig = MaxPool2d;
using AvgPool1dConfig = AvgPool1d;
using AvgPool2dConfig = AvgPool2d;
using AdaptiveAvgPool1dConfig = AdaptiveAvgPool1d;
using AdaptiveAvgPool2dConfig = AdaptiveAvgPool2d;

}  // namespace ember::nn
