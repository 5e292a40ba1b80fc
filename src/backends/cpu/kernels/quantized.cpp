// The freestanding int8 kernels: see include/ember/kernels/quantized.hpp. The arithmetic follows
// ember's runtime step for step (the order of the f32 operations included), so that a generated
// model gives the runtime's bytes.
#include "ember/kernels/quantized.hpp"

#include "taps.hpp"

namespace ember::kernels {

namespace {
uint8_t saturate_u8(float q) { return uint8_t(q < 0.0f ? 0.0f : q > 255.0f ? 255.0f : q); }
}  // namespace

float round_half_even_f32(float x) {
  // Adding and subtracting 1.5 * 2^23 leaves x rounded to an integer by the FPU's default mode
  // (to nearest, ties to even); no libm needed. Without -ffast-math the compiler keeps both
  // operations (they are not an identity in floating point).
  constexpr float kMagic = 12582912.0f;
  return (x + kMagic) - kMagic;
}

void quantize_u8(int32_t n, const float* EMBER_RESTRICT x, float scale, int32_t zero_point, uint8_t* EMBER_RESTRICT y) {
  for (int32_t i = 0; i < n; ++i) {
    float q = x[i] / scale;
    q = q > 4194304.0f ? 4194304.0f : q < -4194304.0f ? -4194304.0f : q;  // where rounding is exact anyway
    y[i] = saturate_u8(round_half_even_f32(q) + float(zero_point));
  }
}

void dequantize_u8(int32_t n, const uint8_t* EMBER_RESTRICT x, float scale, int32_t zero_point,
                   float* EMBER_RESTRICT y) {
  for (int32_t i = 0; i < n; ++i) y[i] = (float(x[i]) - float(zero_point)) * scale;
}

Status qlinear_conv2d_u8(const Conv2dShape& s, const uint8_t* EMBER_RESTRICT x, int32_t x_zero_point,
                         const int8_t* EMBER_RESTRICT w, const int32_t* EMBER_RESTRICT w_zero_point,
                         const int32_t* EMBER_RESTRICT bias, const float* EMBER_RESTRICT multiplier,
                         int32_t y_zero_point, uint8_t* EMBER_RESTRICT y) {
  if (s.in_channels <= 0 || s.out_channels <= 0 || s.groups <= 0 || s.in_channels % s.groups != 0 ||
      s.out_channels % s.groups != 0 || s.stride_height <= 0 || s.stride_width <= 0 || s.dilation_height <= 0 ||
      s.dilation_width <= 0)
    return fail("qlinear_conv2d", "bad sizes, strides, dilations or groups");
  const auto [in_per_group, out_per_group, plane, filter, pointwise] = detail::conv_group_sizes(s);
  const float lo = float(-y_zero_point), hi = float(255 - y_zero_point);
  for (int32_t m = 0; m < s.out_channels; ++m) {
    const uint8_t* x_group = x + (m / out_per_group) * in_per_group * plane;
    const int8_t* w_m = w + m * in_per_group * filter;
    const int32_t wz = w_zero_point ? w_zero_point[m] : 0;
    uint8_t* y_m = y + m * s.out_height * s.out_width;
    auto requantize = [&](int32_t acc) {
      float f = float(acc) * multiplier[m];
      f = f < lo ? lo : f > hi ? hi : f;
      return uint8_t(int32_t(round_half_even_f32(f)) + y_zero_point);
    };
    if (pointwise) {
      int32_t p = 0;
      for (; p + 4 <= plane; p += 4) {  // four outputs share each weight
        const int32_t b = bias ? bias[m] : 0;
        int32_t acc0 = b, acc1 = b, acc2 = b, acc3 = b;
        const uint8_t* x_p = x_group + p;
        for (int32_t c = 0; c < in_per_group; ++c, x_p += plane) {
          const int32_t wc = int32_t(w_m[c]) - wz;
          acc0 += (int32_t(x_p[0]) - x_zero_point) * wc;
          acc1 += (int32_t(x_p[1]) - x_zero_point) * wc;
          acc2 += (int32_t(x_p[2]) - x_zero_point) * wc;
          acc3 += (int32_t(x_p[3]) - x_zero_point) * wc;
        }
        y_m[p] = requantize(acc0);
        y_m[p + 1] = requantize(acc1);
        y_m[p + 2] = requantize(acc2);
        y_m[p + 3] = requantize(acc3);
      }
      for (; p < plane; ++p) {
        int32_t acc = bias ? bias[m] : 0;
        for (int32_t c = 0; c < in_per_group; ++c)
          acc += (int32_t(x_group[c * plane + p]) - x_zero_point) * (int32_t(w_m[c]) - wz);
        y_m[p] = requantize(acc);
      }
      continue;
    }
    for (int32_t oy = 0; oy < s.out_height; ++oy) {
      const int32_t iy0 = oy * s.stride_height - s.pad_top;
      int32_t ky_first, ky_end;
      detail::tap_range(iy0, s.dilation_height, s.kernel_height, s.in_height, ky_first, ky_end);
      for (int32_t ox = 0; ox < s.out_width; ++ox) {
        const int32_t ix0 = ox * s.stride_width - s.pad_left;
        int32_t kx_first, kx_end;
        detail::tap_range(ix0, s.dilation_width, s.kernel_width, s.in_width, kx_first, kx_end);
        // Taps on the padding read x_zero_point: they add nothing, so they are skipped.
        int32_t acc = bias ? bias[m] : 0;
        for (int32_t c = 0; c < in_per_group; ++c)
          for (int32_t ky = ky_first; ky < ky_end; ++ky) {
            const uint8_t* row = x_group + c * plane + (iy0 + ky * s.dilation_height) * s.in_width + ix0;
            const int8_t* w_row = w_m + (c * s.kernel_height + ky) * s.kernel_width;
            for (int32_t kx = kx_first; kx < kx_end; ++kx)
              acc += (int32_t(row[kx * s.dilation_width]) - x_zero_point) * (int32_t(w_row[kx]) - wz);
          }
        y_m[oy * s.out_width + ox] = requantize(acc);
      }
    }
  }
  return Status::ok;
}

void qlinear_add_u8(int32_t n, const uint8_t* a, float a_scale, int32_t a_zero_point, const uint8_t* b, float b_scale,
                    int32_t b_zero_point, float y_scale, int32_t y_zero_point, uint8_t* y) {
  for (int32_t i = 0; i < n; ++i) {
    const float ra = (float(a[i]) - float(a_zero_point)) * a_scale;
    const float rb = (float(b[i]) - float(b_zero_point)) * b_scale;
    y[i] = saturate_u8(round_half_even_f32((ra + rb) / y_scale) + float(y_zero_point));
  }
}

void max_pool2d_u8(const Pool2dShape& s, const uint8_t* EMBER_RESTRICT x, uint8_t* EMBER_RESTRICT y) {
  for (int32_t c = 0; c < s.channels; ++c) {
    const uint8_t* x_c = x + c * s.in_height * s.in_width;
    for (int32_t oy = 0; oy < s.out_height; ++oy)
      for (int32_t ox = 0; ox < s.out_width; ++ox) {
        uint8_t best = 0;
        for (int32_t ky = 0; ky < s.kernel_height; ++ky) {
          const int32_t iy = oy * s.stride_height - s.pad_top + ky * s.dilation_height;
          if (iy < 0 || iy >= s.in_height) continue;
          for (int32_t kx = 0; kx < s.kernel_width; ++kx) {
            const int32_t ix = ox * s.stride_width - s.pad_left + kx * s.dilation_width;
            if (ix >= 0 && ix < s.in_width && x_c[iy * s.in_width + ix] > best) best = x_c[iy * s.in_width + ix];
          }
        }
        *y++ = best;
      }
  }
}

}  // namespace ember::kernels
