// Quantization in one include (namespace ember::quant, docs/quantization.md): schemes, quantized
// tensors, quantize / dequantize, calibration observers, fake quantization for
// quantization-aware training, and quantized safetensors files.
//
//   #include <ember/quant.hpp>
//   # DynTensor w = randn({8, 64});
//   auto q = ember::quant::quantize(w, ember::quant::QScheme::per_channel(0, ember::quant::QType::int8));
//   DynTensor w2 = ember::quant::dequantize(q);   // |w - w2| <= scale / 2 per row
//   # run
#pragma once

#include "ember/quant/calibration.hpp"
#include "ember/quant/fake_quantize.hpp"
#include "ember/quant/quantized_tensor.hpp"
#include "ember/quant/safetensors.hpp"
