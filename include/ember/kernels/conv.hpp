// Freestanding 2-D convolution over raw float32 pointers (NCHW, one image): ordinary, grouped
// and depthwise, with the bias and a clamp (ReLU, ReLU6) applied in the same pass. No
// allocation, no exceptions: errors are a Status (kernels/status.hpp). A 1-D convolution is
// one of height 1.
//
//   float input[1 * 4 * 4] = {}, weight[2 * 1 * 3 * 3] = {}, bias[2] = {0.5f, -1.0f}, output[2 * 4 * 4];
//   ember::kernels::Conv2dShape shape{.in_channels = 1, .in_height = 4, .in_width = 4,
//                                     .out_channels = 2, .out_height = 4, .out_width = 4,
//                                     .kernel_height = 3, .kernel_width = 3, .pad_top = 1, .pad_left = 1};
//   ember::kernels::Status s = ember::kernels::conv2d_f32(shape, input, weight, bias, output, ember::kernels::kRelu);
//   // s == Status::ok; output[0] == 0.5f, output[16] == 0.0f (the ReLU of -1)
#pragma once

#include <cstdint>

#include "ember/kernels/elementwise.hpp"
#include "ember/kernels/status.hpp"

namespace ember::kernels {

// The geometry of a convolution: the output size is the caller's (ONNX's rules, ceil or floor);
// taps that fall outside the input read zeros.
struct Conv2dShape {
  int32_t in_channels = 1;      // C: input channels
  int32_t in_height = 1;        // H
  int32_t in_width = 1;         // W
  int32_t out_channels = 1;     // M: output channels (filters)
  int32_t out_height = 1;       // output rows
  int32_t out_width = 1;        // output columns
  int32_t kernel_height = 1;    // filter rows
  int32_t kernel_width = 1;     // filter columns
  int32_t stride_height = 1;    // vertical stride
  int32_t stride_width = 1;     // horizontal stride
  int32_t pad_top = 0;          // zeros above the input (the bottom padding follows from out_height)
  int32_t pad_left = 0;         // zeros left of the input
  int32_t dilation_height = 1;  // vertical spacing of the taps
  int32_t dilation_width = 1;   // horizontal spacing of the taps
  int32_t groups = 1;           // channel groups: 1 ordinary, in_channels == out_channels == groups depthwise
};

// output[M, OH, OW] = clamp(conv(input[C, H, W], weight[M, C / groups, KH, KW]) + bias[M]).
// `bias` may be null (zero). Fails on non-positive sizes or channels that groups do not divide.
Status conv2d_f32(const Conv2dShape& shape, const float* EMBER_RESTRICT input, const float* EMBER_RESTRICT weight,
                  const float* EMBER_RESTRICT bias, float* EMBER_RESTRICT output, Clamp clamp = kNoClamp);

}  // namespace ember::kernels
