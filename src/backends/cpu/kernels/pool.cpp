// The freestanding pooling kernels: see include/ember/kernels/pool.hpp.
#include "ember/kernels/pool.hpp"

namespace ember::kernels {

void max_pool2d_f32(const Pool2dShape& s, const float* EMBER_RESTRICT x, float* EMBER_RESTRICT y) {
  for (int32_t c = 0; c < s.channels; ++c) {
    const float* x_c = x + c * s.in_height * s.in_width;
    for (int32_t oy = 0; oy < s.out_height; ++oy)
      for (int32_t ox = 0; ox < s.out_width; ++ox) {
        float best = -__builtin_inff();
        bool any = false;
        for (int32_t ky = 0; ky < s.kernel_height; ++ky) {
          const int32_t iy = oy * s.stride_height - s.pad_top + ky * s.dilation_height;
          if (iy < 0 || iy >= s.in_height) continue;
          for (int32_t kx = 0; kx < s.kernel_width; ++kx) {
            const int32_t ix = ox * s.stride_width - s.pad_left + kx * s.dilation_width;
            if (ix < 0 || ix >= s.in_width) continue;
            const float v = x_c[iy * s.in_width + ix];
            if (!any || v > best || v != v) best = v;  // NaN propagates
            any = true;
          }
        }
        *y++ = best;
      }
  }
}

void avg_pool2d_f32(const Pool2dShape& s, bool count_include_pad, const float* EMBER_RESTRICT x,
                    float* EMBER_RESTRICT y) {
  for (int32_t c = 0; c < s.channels; ++c) {
    const float* x_c = x + c * s.in_height * s.in_width;
    for (int32_t oy = 0; oy < s.out_height; ++oy)
      for (int32_t ox = 0; ox < s.out_width; ++ox) {
        const int32_t y0 = oy * s.stride_height - s.pad_top, x0 = ox * s.stride_width - s.pad_left;
        float sum = 0.0f;
        int32_t count = 0, padded = 0;
        for (int32_t ky = 0; ky < s.kernel_height; ++ky) {
          const int32_t iy = y0 + ky;
          for (int32_t kx = 0; kx < s.kernel_width; ++kx) {
            const int32_t ix = x0 + kx;
            if (iy >= 0 && iy < s.in_height && ix >= 0 && ix < s.in_width) {
              sum += x_c[iy * s.in_width + ix];
              ++count;
            } else if (iy >= -s.pad_top && iy < s.in_height + s.pad_bottom && ix >= -s.pad_left &&
                       ix < s.in_width + s.pad_right) {
              ++padded;
            }
          }
        }
        const int32_t divisor = count_include_pad ? count + padded : count;
        *y++ = divisor > 0 ? sum / float(divisor) : 0.0f;
      }
  }
}

void global_avg_pool_f32(int32_t channels, int32_t spatial, const float* EMBER_RESTRICT x, float* EMBER_RESTRICT y) {
  for (int32_t c = 0; c < channels; ++c) {
    float sum = 0.0f;
    for (int32_t i = 0; i < spatial; ++i) sum += x[c * spatial + i];
    y[c] = sum / float(spatial);
  }
}

}  // namespace ember::kernels
