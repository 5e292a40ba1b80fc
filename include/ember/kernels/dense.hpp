// A freestanding fully connected layer over raw float32 pointers: y = clamp(x W^T + b), with W
// stored [out_features, in_features] (nn::Linear's and PyTorch's layout, so each output is one
// contiguous dot product). No allocation, no exceptions.
//
//   float x[3] = {1, 2, 3}, w[2 * 3] = {1, 0, 0, 0, 1, 1}, b[2] = {0.5f, 0}, y[2];
//   ember::kernels::dense_f32(1, 3, 2, x, w, b, y);   // y = {1.5, 5}
#pragma once

#include <cstdint>

#include "ember/kernels/elementwise.hpp"

namespace ember::kernels {

// y[r, o] = clamp(sum_i x[r, i] * weight[o, i] + bias[o]) for r < rows, o < out_features.
// `bias` may be null. y must not overlap x.
void dense_f32(int32_t rows, int32_t in_features, int32_t out_features, const float* EMBER_RESTRICT x,
               const float* EMBER_RESTRICT weight, const float* EMBER_RESTRICT bias, float* EMBER_RESTRICT y,
               Clamp clamp = kNoClamp);

}  // namespace ember::kernels
