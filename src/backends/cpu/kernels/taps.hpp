// The geometry shared by the float and int8 convolutions (conv.cpp, quantized.cpp): the sizes of
// a group, and the range of filter taps that land inside the input, worked out once per output
// so that their inner loops need no bounds checks.
#pragma once

#include <cstdint>

#include "ember/kernels/conv.hpp"

namespace ember::kernels::detail {

// The first tap index k in [0, taps) with 0 <= origin + k * dilation < size, and one past the
// last; an empty range when none lands inside.
inline void tap_range(int32_t origin, int32_t dilation, int32_t taps, int32_t size, int32_t& first, int32_t& end) {
  first = 0;
  while (first < taps && origin + first * dilation < 0) ++first;
  end = taps;
  while (end > first && origin + (end - 1) * dilation >= size) --end;
}

// The sizes a convolution walks per output channel; pointwise: a 1x1 filter at stride 1 without
// padding over an output the size of the input, so no taps to clip.
struct ConvGroupSizes {
  int32_t in_per_group, out_per_group;
  int32_t plane, filter;  // input pixels per channel, filter taps per input channel
  bool pointwise;
};
inline ConvGroupSizes conv_group_sizes(const Conv2dShape& s) {
  const int32_t filter = s.kernel_height * s.kernel_width;
  return {s.in_channels / s.groups, s.out_channels / s.groups, s.in_height * s.in_width, filter,
          filter == 1 && s.stride_height == 1 && s.stride_width == 1 && s.pad_top == 0 && s.pad_left == 0 &&
              s.out_height == s.in_height && s.out_width == s.in_width};
}

}  // namespace ember::kernels::detail
