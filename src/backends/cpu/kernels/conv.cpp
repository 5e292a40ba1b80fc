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

namespace {

float clamped(float v, Clamp c) {
  v = v < c.lo ? c.lo : v;
  return v > c.hi ? c.hi : v;
}

// Pointwise (1x1, stride 1, no padding) output channel: no taps to clip.
__attribute__((noinline)) void pointwise_channel(int32_t plane, int32_t channels, const float* EMBER_RESTRICT in,
                                                 const float* EMBER_RESTRICT w, float b, float* EMBER_RESTRICT out,
                                                 Clamp clamp) {
  int32_t p = 0;
  for (; p + 4 <= plane; p += 4) {  // four outputs share each weight load; each sums in channel order
    float acc0 = b, acc1 = b, acc2 = b, acc3 = b;
    const float* in_p = in + p;
    for (int32_t c = 0; c < channels; ++c, in_p += plane) {
      const float wc = w[c];
      acc0 += in_p[0] * wc;
      acc1 += in_p[1] * wc;
      acc2 += in_p[2] * wc;
      acc3 += in_p[3] * wc;
    }
    out[p] = clamped(acc0, clamp);
    out[p + 1] = clamped(acc1, clamp);
    out[p + 2] = clamped(acc2, clamp);
    out[p + 3] = clamped(acc3, clamp);
  }
  for (; p < plane; ++p) {
    float acc = b;
    const float* in_p = in + p;
    for (int32_t c = 0; c < channels; ++c) acc += in_p[c * plane] * w[c];
    out[p] = clamped(acc, clamp);
  }
}

// One output channel of any geometry: per output, the taps that land inside the input; rows of
// three taps inside the image (3x3 and 1x3 filters away from the border) unrolled.
__attribute__((noinline)) void general_channel(const Conv2dShape& s, int32_t channels, const float* EMBER_RESTRICT in,
                                               const float* EMBER_RESTRICT w, float b, float* EMBER_RESTRICT out,
                                               Clamp clamp) {
  const int32_t plane = s.in_height * s.in_width, filter = s.kernel_height * s.kernel_width;
  for (int32_t oy = 0; oy < s.out_height; ++oy) {
    const int32_t iy0 = oy * s.stride_height - s.pad_top;
    int32_t ky_first, ky_end;
    tap_range(iy0, s.dilation_height, s.kernel_height, s.in_height, ky_first, ky_end);
    for (int32_t ox = 0; ox < s.out_width; ++ox) {
      const int32_t ix0 = ox * s.stride_width - s.pad_left;
      int32_t kx_first, kx_end;
      tap_range(ix0, s.dilation_width, s.kernel_width, s.in_width, kx_first, kx_end);
      float acc = b;
      if (s.kernel_width == 3 && s.dilation_width == 1 && kx_first == 0 && kx_end == 3) {
        for (int32_t c = 0; c < channels; ++c) {
          const float* in_c = in + c * plane + iy0 * s.in_width + ix0;
          const float* w_c = w + c * filter;
          for (int32_t ky = ky_first; ky < ky_end; ++ky) {  // the same order of sums as below
            const float* row = in_c + ky * s.dilation_height * s.in_width;
            const float* w_row = w_c + ky * 3;
            acc += row[0] * w_row[0];
            acc += row[1] * w_row[1];
            acc += row[2] * w_row[2];
          }
        }
      } else {
        for (int32_t c = 0; c < channels; ++c) {
          const float* in_c = in + c * plane;
          const float* w_c = w + c * filter;
          for (int32_t ky = ky_first; ky < ky_end; ++ky) {
            const float* row = in_c + (iy0 + ky * s.dilation_height) * s.in_width + ix0;
            const float* w_row = w_c + ky * s.kernel_width;
            for (int32_t kx = kx_first; kx < kx_end; ++kx) acc += row[kx * s.dilation_width] * w_row[kx];
          }
        }
      }
      out[oy * s.out_width + ox] = clamped(acc, clamp);
    }
  }
}

}  // namespace

Status conv2d_f32(const Conv2dShape& s, const float* EMBER_RESTRICT input, const float* EMBER_RESTRICT weight,
                  const float* EMBER_RESTRICT bias, float* EMBER_RESTRICT output, Clamp clamp) {
  if (s.in_channels <= 0 || s.in_height <= 0 || s.in_width <= 0 || s.out_channels <= 0 || s.out_height <= 0 ||
      s.out_width <= 0 || s.kernel_height <= 0 || s.kernel_width <= 0 || s.stride_height <= 0 || s.stride_width <= 0 ||
      s.dilation_height <= 0 || s.dilation_width <= 0 || s.groups <= 0)
    return fail("conv2d", "sizes, strides, dilations and groups must be positive");
  if (s.in_channels % s.groups != 0 || s.out_channels % s.groups != 0)
    return fail("conv2d", "groups must divide the input and output channels");
  if (!input || !weight || !output) return fail("conv2d", "null input, weight or output");

  const auto [in_per_group, out_per_group, plane, filter, pointwise] = detail::conv_group_sizes(s);
  for (int32_t m = 0; m < s.out_channels; ++m) {
    const float* in_group = input + (m / out_per_group) * in_per_group * plane;
    const float* w_m = weight + m * in_per_group * filter;
    const float b = bias ? bias[m] : 0.0f;
    float* out_m = output + m * s.out_height * s.out_width;
    if (pointwise)
      pointwise_channel(plane, in_per_group, in_group, w_m, b, out_m, clamp);
    else
      general_channel(s, in_per_group, in_group, w_m, b, out_m, clamp);
  }
  return Status::ok;
}

}  // namespace ember::kernels
