// The freestanding convolution: see include/ember/kernels/conv.hpp.
//
// One accumulator per output pixel, kept in a register; for each pixel the range of filter taps
// that land inside the input is worked out once, so the inner loops carry no bounds checks.
// Plain C++ on purpose: GCC turns the inner loop into VFP multiply-accumulates on a Cortex-M4F
// and vectorises it on a host.
#include "ember/kernels/conv.hpp"

#include "taps.hpp"

namespace ember::kernels {

using detail::tap_range;

Status conv2d_f32(const Conv2dShape& s, const float* EMBER_RESTRICT input, const float* EMBER_RESTRICT weight,
                  const float* EMBER_RESTRICT bias, float* EMBER_RESTRICT output, Clamp clamp) {
  if (s.in_channels <= 0 || s.in_height <= 0 || s.in_width <= 0 || s.out_channels <= 0 || s.out_height <= 0 ||
      s.out_width <= 0 || s.kernel_height <= 0 || s.kernel_width <= 0 || s.stride_height <= 0 ||
      s.stride_width <= 0 || s.dilation_height <= 0 || s.dilation_width <= 0 || s.groups <= 0)
    return fail("conv2d", "sizes, strides, dilations and groups must be positive");
  if (s.in_channels % s.groups != 0 || s.out_channels % s.groups != 0)
    return fail("conv2d", "groups must divide the input and output channels");
  if (!input || !weight || !output) return fail("conv2d", "null input, weight or output");

  const int32_t in_per_group = s.in_channels / s.groups, out_per_group = s.out_channels / s.groups;
  const int32_t plane = s.in_height * s.in_width, filter = s.kernel_height * s.kernel_width;
  if (filter == 1 && s.stride_height == 1 && s.stride_width == 1 && s.pad_top == 0 && s.pad_left == 0 &&
      s.out_height == s.in_height && s.out_width == s.in_width) {
    // Pointwise (1x1): no taps to clip; the same sums, in the same order, as the general loop.
    for (int32_t m = 0; m < s.out_channels; ++m) {
      const float* in_group = input + (m / out_per_group) * in_per_group * plane;
      const float* w_m = weight + m * in_per_group;
      const float b = bias ? bias[m] : 0.0f;
      float* out_m = output + m * plane;
      for (int32_t p = 0; p < plane; ++p) {
        float acc = b;
        const float* in_p = in_group + p;
        for (int32_t c = 0; c < in_per_group; ++c) acc += in_p[c * plane] * w_m[c];
        acc = acc < clamp.lo ? clamp.lo : acc;
        out_m[p] = acc > clamp.hi ? clamp.hi : acc;
      }
    }
    return Status::ok;
  }
  for (int32_t m = 0; m < s.out_channels; ++m) {
    const int32_t group = m / out_per_group;
    const float* in_group = input + group * in_per_group * plane;
    const float* w_m = weight + m * in_per_group * filter;
    const float b = bias ? bias[m] : 0.0f;
    float* out_m = output + m * s.out_height * s.out_width;
    for (int32_t oy = 0; oy < s.out_height; ++oy) {
      const int32_t iy0 = oy * s.stride_height - s.pad_top;
      int32_t ky_first, ky_end;
      tap_range(iy0, s.dilation_height, s.kernel_height, s.in_height, ky_first, ky_end);
      for (int32_t ox = 0; ox < s.out_width; ++ox) {
        const int32_t ix0 = ox * s.stride_width - s.pad_left;
        int32_t kx_first, kx_end;
        tap_range(ix0, s.dilation_width, s.kernel_width, s.in_width, kx_first, kx_end);
        float acc = b;
        for (int32_t c = 0; c < in_per_group; ++c) {
          const float* in_c = in_group + c * plane;
          const float* w_c = w_m + c * filter;
          for (int32_t ky = ky_first; ky < ky_end; ++ky) {
            const float* row = in_c + (iy0 + ky * s.dilation_height) * s.in_width + ix0;
            const float* w_row = w_c + ky * s.kernel_width;
            for (int32_t kx = kx_first; kx < kx_end; ++kx) acc += row[kx * s.dilation_width] * w_row[kx];
          }
        }
        acc = acc < clamp.lo ? clamp.lo : acc;
        out_m[oy * s.out_width + ox] = acc > clamp.hi ? clamp.hi : acc;
      }
    }
  }
  return Status::ok;
}

}  // namespace ember::kernels
