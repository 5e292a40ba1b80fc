// The range of filter taps that land inside the input, shared by the float and int8 convolutions
// (conv.cpp, quantized.cpp): worked out once per output, so that their inner loops need no bounds
// checks.
#pragma once

#include <cstdint>

namespace ember::kernels::detail {

// The first tap index k in [0, taps) with 0 <= origin + k * dilation < size, and one past the
// last; an empty range when none lands inside.
inline void tap_range(int32_t origin, int32_t dilation, int32_t taps, int32_t size, int32_t& first, int32_t& end) {
  first = 0;
  while (first < taps && origin + first * dilation < 0) ++first;
  end = taps;
  while (end > first && origin + (end - 1) * dilation >= size) --end;
}

}  // namespace ember::kernels::detail
