// Fake quantization for quantization-aware training: the forward pass rounds values to the grid
// of a quantized type and back (dequantize(quantize(x))); the backward pass lets the gradient
// through unchanged where the rounded value is inside [qmin, qmax] and blocks it outside (the
// straight-through estimator of torch.fake_quantize_per_tensor_affine).
//
//   # Device dev = Device::cpu().autodiff();
//   using namespace ember::quant;
//   DynTensor w = DynTensor::normal({8, 4}, 0, 1, DType::f32, dev).require_grad();
//   DynTensor y = fake_quantize(w, /*scale=*/0.05, /*zero_point=*/0, -128, 127);
//   Gradients g = y.sum().backward();          // w's gradient: 1 inside the range, 0 outside
//   DynTensor scales = DynTensor::full({8}, 0.02, DType::f32, dev), zps = DynTensor::zeros({8}, DType::i32, dev);
//   DynTensor yc = fake_quantize(w, scales, zps, /*axis=*/0, -8, 7);   // per channel (int4 grid)
//   # run
//
// Built from ordinary ops with autodiff rules: y = fq(x) + (x - detach(x)) * mask, so it works on
// any autodiff device with no rule of its own. The scales and zero points get no gradient (use
// them as constants, e.g. from an observer).
#pragma once

#include <cstdint>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember::quant {

// y = (clamp(round(x / scale) + zero_point, qmin, qmax) - zero_point) * scale, rounding half to
// even; dy/dx = 1 where qmin <= round(x / scale) + zero_point <= qmax, else 0. x: floating;
// y has x's dtype. Throws an Error for a scale that is not positive and finite, qmin >= qmax, or
// a zero point outside [qmin, qmax].
DynTensor fake_quantize(const DynTensor& x, double scale, int64_t zero_point, int64_t qmin, int64_t qmax);
// Per channel of dim `axis` (torch.fake_quantize_per_channel_affine): scale and zero_point are
// 1-d with x.size(axis) entries (zero_point any integer or floating dtype holding integers).
DynTensor fake_quantize(const DynTensor& x, const DynTensor& scale, const DynTensor& zero_point, int axis,
                        int64_t qmin, int64_t qmax);

}  // namespace ember::quant
