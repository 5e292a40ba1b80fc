// Functional activations, normalisations and layer maths for the nn layer (torch.nn.functional
// names and semantics). Each is a composition of the public tensor ops (ops.hpp), so it runs on
// any device and autodiff differentiates it without a rule of its own.
//
//   using namespace ember;
//   # DynTensor x = randn({4, 8}), w = randn({16, 8}), b = randn({16}), gain = DynTensor::ones({8});
//   DynTensor h = nn::linear(x, w, b);                 // w is [out, in], as in PyTorch
//   h = nn::swiglu(h, -1);                              // silu(first half) * second half
//   h = nn::dropout(h, 0.1, /*training=*/true);         // mask from the device's generator
//   h = nn::rms_norm(h, {h.size(-1)}, gain);
//   # run
#pragma once

#include <optional>

#include "ember/tensor/ops.hpp"

namespace ember::nn {

// ---- activations ----
// The tensor ops of these names, so that nn:: offers every activation (the same functions: an
// unqualified call inside ember::nn is not ambiguous).
using ember::gelu;          // exact (erf) form; gelu(x, GeluApproximation::tanh) below
using ember::hard_sigmoid;  // relu6(x + 3) / 6
using ember::leaky_relu;
using ember::log_sigmoid;
using ember::prelu;
using ember::relu;
using ember::sigmoid;
using ember::silu;
using ember::softplus;
DynTensor relu6(DynTensor x);  // min(max(0, x), 6)
DynTensor elu(DynTensor x, double alpha = 1.0);  // x for x > 0, alpha * (exp(x) - 1) otherwise
// scale * elu(x, alpha) with PyTorch's fixed alpha (1.6733) and scale (1.0507).
DynTensor selu(DynTensor x);
// x for x > 0, alpha * (exp(x / alpha) - 1) otherwise; throws ember::Error when alpha is 0.
DynTensor celu(DynTensor x, double alpha = 1.0);
DynTensor mish(DynTensor x);        // x * tanh(softplus(x))
DynTensor softsign(DynTensor x);    // x / (1 + |x|)
DynTensor hard_swish(DynTensor x);  // x * relu6(x + 3) / 6
// x clamped to [min_val, max_val]; throws ember::Error when min_val > max_val.
DynTensor hard_tanh(DynTensor x, double min_val = -1.0, double max_val = 1.0);
DynTensor tanh_shrink(DynTensor x);  // x - tanh(x)
// x - lambda for x > lambda, x + lambda for x < -lambda, 0 otherwise; throws ember::Error when lambda < 0.
DynTensor soft_shrink(DynTensor x, double lambda = 0.5);
DynTensor hard_shrink(DynTensor x, double lambda = 0.5);  // x where |x| > lambda, 0 otherwise
// GELU's form: none is the exact x * Phi(x) (erf), tanh the tanh approximation (PyTorch's approximate).
enum class GeluApproximation { none, tanh };
DynTensor gelu(DynTensor x, GeluApproximation approximate);  // torch.nn.functional.gelu(x, approximate)
// Gated units: x is split into halves a, b along `dim` (whose size must be even).
DynTensor glu(DynTensor x, int dim = -1);     // a * sigmoid(b)
DynTensor swiglu(DynTensor x, int dim = -1);  // silu(a) * b

// Inverted dropout: zeroes each element with probability p and scales the rest by 1 / (1 - p).
// The mask comes from x's device generator (Device::seed); outside training it returns x.
DynTensor dropout(DynTensor x, double p = 0.5, bool training = true);

// ---- normalisation ----
// x is [N, C, *]; weight and bias are [C].
DynTensor group_norm(DynTensor x, int64_t groups, std::optional<DynTensor> weight = {},
                     std::optional<DynTensor> bias = {}, double eps = 1e-5);
// Statistics of each (sample, channel) over the spatial dims (no running statistics).
DynTensor instance_norm(DynTensor x, std::optional<DynTensor> weight = {}, std::optional<DynTensor> bias = {},
                        double eps = 1e-5);
// x * rsqrt(mean(x^2 over the trailing normalized_shape dims) + eps) * weight, as
// torch.nn.RMSNorm; eps defaults to the machine epsilon of x's dtype, as there.
DynTensor rms_norm(DynTensor x, Sizes normalized_shape, std::optional<DynTensor> weight = {},
                   std::optional<double> eps = std::nullopt);
// Batch normalisation in training mode. x is [N, C, *]; statistics per channel over every
// other dim. y uses the biased batch variance (as PyTorch); var is the unbiased one, for
// updating running statistics. mean and var are not tracked by autodiff.
struct BatchNormTrainResult {
  // y: the normalised (and affine-transformed) x; mean: the per-channel batch mean [C].
  DynTensor y, mean, var;  // var: the per-channel unbiased batch variance [C]
};
// y, mean and var as above; throws ember::Error when x is not [N, C, *] or has a single value per channel.
BatchNormTrainResult batch_norm_train(DynTensor x, std::optional<DynTensor> weight = {},
                                      std::optional<DynTensor> bias = {}, double eps = 1e-5);
// x / max(||x||_p along dim, eps).
DynTensor normalize(DynTensor x, double p = 2.0, int dim = 1, double eps = 1e-12);

// ---- layout ----
// [*, C * r * r, H, W] -> [*, C, H * r, W * r], and back.
// Throws ember::Error when the channel count is not divisible by upscale_factor^2 or x has rank < 3.
DynTensor pixel_shuffle(DynTensor x, int64_t upscale_factor);
// [*, C, H * r, W * r] -> [*, C * r * r, H, W]; throws ember::Error when H or W is not divisible by r.
DynTensor pixel_unshuffle(DynTensor x, int64_t downscale_factor);
// interpolate to a given spatial size, or to floor(size * scale_factor) for every spatial dim
// (coordinates then map by the in/out size ratio, as recompute_scale_factor=True).
DynTensor upsample(DynTensor x, Sizes size, InterpMode mode = InterpMode::nearest, bool align_corners = false);
// x [N, C, *spatial] to floor(size * scale_factor) in every spatial dim; throws ember::Error when
// scale_factor <= 0.
DynTensor upsample(DynTensor x, double scale_factor, InterpMode mode = InterpMode::nearest, bool align_corners = false);

// ---- layers ----
// x [*, in], weight [out, in], bias [out]: x @ weight^T + bias.
DynTensor linear(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {});
// x1 [*, in1], x2 [*, in2], weight [out, in1, in2], bias [out]: y_k = x1^T W_k x2 + b_k.
DynTensor bilinear(DynTensor x1, DynTensor x2, DynTensor weight, std::optional<DynTensor> bias = {});

}  // namespace ember::nn
