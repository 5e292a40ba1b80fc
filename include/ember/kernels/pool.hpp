// Freestanding 2-D pooling over raw float32 pointers (NCHW, one image): max, average and
// global average. Windows are clipped to the input; the output size is the caller's (ONNX's
// floor or ceil rule).
//
//   float x[1 * 4 * 4] = {}, y[1 * 2 * 2];
//   ember::kernels::Pool2dShape s{.channels = 1, .in_height = 4, .in_width = 4, .out_height = 2, .out_width = 2,
//                                 .kernel_height = 2, .kernel_width = 2, .stride_height = 2, .stride_width = 2};
//   ember::kernels::max_pool2d_f32(s, x, y);
#pragma once

#include <cstdint>

#include "ember/core/config.hpp"

namespace ember::kernels {

// The geometry of a pooling window.
struct Pool2dShape {
  int32_t channels = 1;         // C
  int32_t in_height = 1;        // H
  int32_t in_width = 1;         // W
  int32_t out_height = 1;       // output rows
  int32_t out_width = 1;        // output columns
  int32_t kernel_height = 1;    // window rows
  int32_t kernel_width = 1;     // window columns
  int32_t stride_height = 1;    // vertical stride
  int32_t stride_width = 1;     // horizontal stride
  int32_t pad_top = 0;          // padding above the input
  int32_t pad_left = 0;         // padding left of the input
  int32_t pad_bottom = 0;       // padding below (counted by count_include_pad averages)
  int32_t pad_right = 0;        // padding right of the input
  int32_t dilation_height = 1;  // vertical spacing of the window's taps (max pooling)
  int32_t dilation_width = 1;   // horizontal spacing of the window's taps (max pooling)
};

// y[c, oy, ox] = the largest input under the window (padding is never the maximum).
void max_pool2d_f32(const Pool2dShape& shape, const float* EMBER_RESTRICT x, float* EMBER_RESTRICT y);
// y[c, oy, ox] = the mean of the window's inputs; with count_include_pad the divisor also
// counts the window's taps on the padding (not past it).
void avg_pool2d_f32(const Pool2dShape& shape, bool count_include_pad, const float* EMBER_RESTRICT x,
                    float* EMBER_RESTRICT y);
// y[c] = the mean of x[c, 0 .. spatial).
void global_avg_pool_f32(int32_t channels, int32_t spatial, const float* EMBER_RESTRICT x, float* EMBER_RESTRICT y);

}  // namespace ember::kernels
