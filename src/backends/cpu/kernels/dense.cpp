// The freestanding fully connected layer: see include/ember/kernels/dense.hpp.
#include "ember/kernels/dense.hpp"

namespace ember::kernels {

void dense_f32(int32_t rows, int32_t in_features, int32_t out_features, const float* EMBER_RESTRICT x,
               const float* EMBER_RESTRICT weight, const float* EMBER_RESTRICT bias, float* EMBER_RESTRICT y,
               Clamp clamp) {
  for (int32_t r = 0; r < rows; ++r) {
    const float* x_r = x + r * in_features;
    float* y_r = y + r * out_features;
    for (int32_t o = 0; o < out_features; ++o) {
      const float* w_o = weight + o * in_features;
      float acc = bias ? bias[o] : 0.0f;
      for (int32_t i = 0; i < in_features; ++i) acc += x_r[i] * w_o[i];
      acc = acc < clamp.lo ? clamp.lo : acc;
      y_r[o] = acc > clamp.hi ? clamp.hi : acc;
    }
  }
}

}  // namespace ember::kernels
