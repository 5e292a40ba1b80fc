#include "ember/nn/functional.hpp"

#include "ember/tensor/op_hook.hpp"

#include <cmath>
#include <limits>

namespace ember::nn {
namespace {

// [1, C, 1, ...] for broadcasting a per-channel vector against x [N, C, *].
DynTensor per_channel(DynTensor v, int rank, std::string_view op) {
  EMBER_CHECK(v.rank() == 1, op, ": per-channel weight/bias must be 1-d, got ", v.shape());
  Sizes s(static_cast<size_t>(rank), 1);
  s[1] = v.size(0);
  return reshape(std::move(v), std::move(s));
}

DynTensor affine(DynTensor y, const std::optional<DynTensor>& weight, const std::optional<DynTensor>& bias,
                 std::string_view op) {
  const int rank = y.rank();
  if (weight) y = y * per_channel(*weight, rank, op);
  if (bias) y = y + per_channel(*bias, rank, op);
  return y;
}

double machine_epsilon(DType dt) {
  switch (dt) {
    case DType::f64:
      return std::numeric_limits<double>::epsilon();
    case DType::f16:
      return 0.0009765625;  // 2^-10
    case DType::bf16:
      return 0.0078125;  // 2^-7
    default:
      return std::numeric_limits<float>::epsilon();
  }
}

std::pair<DynTensor, DynTensor> halves(DynTensor x, int dim, std::string_view op) {
  const int d = normalize_dim(dim, x.rank(), op);
  EMBER_CHECK(x.size(d) % 2 == 0, op, ": dim ", dim, " of ", x.shape(), " must have an even size");
  auto parts = chunk(std::move(x), 2, d);
  return {std::move(parts[0]), std::move(parts[1])};
}

}  // namespace

// ---- activations ----
DynTensor relu6(DynTensor x) { return clamp(std::move(x), 0.0, 6.0); }

// The exponential branch sees min(x, 0) so that large positive x cannot overflow it (an inf
// there would turn the masked-out gradient into NaN).
DynTensor elu(DynTensor x, double alpha) {
  DynTensor negative = expm1(clamp_max(x, 0.0)) * alpha;
  return where(greater(x, 0.0), x, std::move(negative));
}

DynTensor selu(DynTensor x) {
  constexpr double kAlpha = 1.6732632423543772848170429916717;
  constexpr double kScale = 1.0507009873554804934193349852946;
  return elu(std::move(x), kAlpha) * kScale;
}

DynTensor celu(DynTensor x, double alpha) {
  EMBER_CHECK(alpha != 0, "celu: alpha must not be 0");
  DynTensor negative = expm1(clamp_max(x, 0.0) / alpha) * alpha;
  return where(greater(x, 0.0), x, std::move(negative));
}

DynTensor mish(DynTensor x) { return x * tanh(softplus(x)); }
DynTensor softsign(DynTensor x) { return x / (abs(x) + 1.0); }
DynTensor hard_swish(DynTensor x) { return x * ember::hard_sigmoid(x); }
DynTensor hard_tanh(DynTensor x, double min_val, double max_val) {
  EMBER_CHECK(min_val <= max_val, "hard_tanh: min_val ", min_val, " > max_val ", max_val);
  return clamp(std::move(x), min_val, max_val);
}
DynTensor tanh_shrink(DynTensor x) { return x - tanh(x); }
DynTensor soft_shrink(DynTensor x, double lambda) {
  EMBER_CHECK(lambda >= 0, "soft_shrink: lambda must be >= 0, got ", lambda);
  return x - clamp(x, -lambda, lambda);
}
DynTensor hard_shrink(DynTensor x, double lambda) { return mask_fill(x, lower_equal(abs(x), lambda), 0.0); }

DynTensor gelu(DynTensor x, GeluApproximation approximate) {
  return approximate == GeluApproximation::tanh ? gelu_tanh(std::move(x)) : ember::gelu(std::move(x));
}

DynTensor glu(DynTensor x, int dim) {
  auto [a, b] = halves(std::move(x), dim, "glu");
  return a * sigmoid(b);
}

DynTensor swiglu(DynTensor x, int dim) {
  auto [a, b] = halves(std::move(x), dim, "swiglu");
  return silu(a) * b;
}

DynTensor dropout(DynTensor x, double p, bool training) {
  EMBER_CHECK(p >= 0 && p <= 1, "dropout: p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  if (p == 1) return x * 0.0;
  DType dt = is_float(x.dtype()) ? x.dtype() : kDefaultFloat;
  DynTensor keep = DynTensor::bernoulli(x.shape(), 1 - p, dt, x.device());
  return x * keep * (1.0 / (1.0 - p));
}

// ---- normalisation ----
DynTensor group_norm(DynTensor x, int64_t groups, std::optional<DynTensor> weight, std::optional<DynTensor> bias,
                     double eps) {
  EMBER_CHECK(x.rank() >= 2, "group_norm: input must be [N, C, *], got ", x.shape());
  const int64_t n = x.size(0), c = x.size(1);
  EMBER_CHECK(groups > 0 && c % groups == 0, "group_norm: ", c, " channels are not divisible into ", groups, " groups");
  Shape shape = x.shape();
  DynTensor g = reshape(std::move(x), {n, groups, -1});
  DynTensor mu = mean(g, {2}, true);
  DynTensor v = var(g, {2}, 0, true);
  DynTensor y = reshape((g - mu) * rsqrt(v + eps), shape.dims());
  return affine(std::move(y), weight, bias, "group_norm");
}

DynTensor instance_norm(DynTensor x, std::optional<DynTensor> weight, std::optional<DynTensor> bias, double eps) {
  EMBER_CHECK(x.rank() >= 3, "instance_norm: input must be [N, C, *spatial], got ", x.shape());
  const int64_t c = x.size(1);
  return group_norm(std::move(x), c, std::move(weight), std::move(bias), eps);
}

DynTensor rms_norm(DynTensor x, Sizes normalized_shape, std::optional<DynTensor> weight, std::optional<double> eps) {
  const int k = static_cast<int>(normalized_shape.size());
  EMBER_CHECK(k >= 1 && k <= x.rank(), "rms_norm: normalized_shape of ", k, " dims for input ", x.shape());
  Dims dims;
  for (int i = 0; i < k; ++i) {
    EMBER_CHECK(x.size(x.rank() - k + i) == normalized_shape[static_cast<size_t>(i)], "rms_norm: input ", x.shape(),
                " does not end in normalized_shape");
    dims.push_back(x.rank() - k + i);
  }
  const double e = eps ? *eps : machine_epsilon(x.dtype());
  DynTensor y = x * rsqrt(mean(square(x), dims, true) + e);
  if (weight) {
    EMBER_CHECK(weight->shape().dims() == normalized_shape, "rms_norm: weight ", weight->shape(),
                " differs from normalized_shape");
    y = y * *weight;
  }
  return y;
}

BatchNormTrainResult batch_norm_train(DynTensor x, std::optional<DynTensor> weight, std::optional<DynTensor> bias,
                                      double eps) {
  EMBER_CHECK(x.rank() >= 2, "batch_norm_train: input must be [N, C, *], got ", x.shape());
  EMBER_CHECK(x.numel() / x.size(1) > 1, "batch_norm_train: expected more than 1 value per channel, input ", x.shape());
  Dims dims{0};
  for (int d = 2; d < x.rank(); ++d) dims.push_back(d);
  DynTensor mu = mean(x, dims, true);
  DynTensor biased = var(x, dims, 0, true);
  DynTensor y = affine((x - mu) * rsqrt(biased + eps), weight, bias, "batch_norm_train");
  DynTensor unbiased = var(x.detach(), dims, 1);
  return {std::move(y), flatten(mu.detach()), std::move(unbiased)};
}

DynTensor normalize(DynTensor x, double p, int dim, double eps) { return x / clamp_min(norm(x, p, {dim}, true), eps); }

// ---- layout ----
DynTensor pixel_shuffle(DynTensor x, int64_t r) {
  EMBER_CHECK(x.rank() >= 3, "pixel_shuffle: input must be [*, C, H, W], got ", x.shape());
  EMBER_CHECK(r > 0 && x.size(-3) % (r * r) == 0, "pixel_shuffle: channels of ", x.shape(),
              " are not divisible by upscale_factor^2 = ", r * r);
  const int b = x.rank() - 3;
  const int64_t c = x.size(-3) / (r * r), h = x.size(-2), w = x.size(-1);
  Sizes lead(x.shape().begin(), x.shape().begin() + b);
  Sizes split = lead, out = lead;
  split.insert(split.end(), {c, r, r, h, w});
  out.insert(out.end(), {c, h * r, w * r});
  Dims order;
  for (int i = 0; i < b; ++i) order.push_back(i);
  order.insert(order.end(), {b, b + 3, b + 1, b + 4, b + 2});
  return reshape(permute(reshape(std::move(x), split), order), out);
}

DynTensor pixel_unshuffle(DynTensor x, int64_t r) {
  EMBER_CHECK(x.rank() >= 3, "pixel_unshuffle: input must be [*, C, H, W], got ", x.shape());
  EMBER_CHECK(r > 0 && x.size(-2) % r == 0 && x.size(-1) % r == 0, "pixel_unshuffle: spatial size of ", x.shape(),
              " is not divisible by downscale_factor ", r);
  const int b = x.rank() - 3;
  const int64_t c = x.size(-3), h = x.size(-2) / r, w = x.size(-1) / r;
  Sizes lead(x.shape().begin(), x.shape().begin() + b);
  Sizes split = lead, out = lead;
  split.insert(split.end(), {c, h, r, w, r});
  out.insert(out.end(), {c * r * r, h, w});
  Dims order;
  for (int i = 0; i < b; ++i) order.push_back(i);
  order.insert(order.end(), {b, b + 2, b + 4, b + 1, b + 3});
  return reshape(permute(reshape(std::move(x), split), order), out);
}

DynTensor upsample(DynTensor x, Sizes size, InterpMode mode, bool align_corners) {
  return interpolate(std::move(x), std::move(size), mode, align_corners);
}

DynTensor upsample(DynTensor x, double scale_factor, InterpMode mode, bool align_corners) {
  EMBER_CHECK(x.rank() >= 3 && scale_factor > 0, "upsample: needs [N, C, *spatial] and a positive scale, got ",
              x.shape(), " and ", scale_factor);
  Sizes size;
  for (int d = 2; d < x.rank(); ++d)
    size.push_back(static_cast<int64_t>(std::floor(static_cast<double>(x.size(d)) * scale_factor)));
  return interpolate(std::move(x), std::move(size), mode, align_corners);
}

// ---- layers ----
DynTensor linear(DynTensor x, DynTensor weight, std::optional<DynTensor> bias) {
  EMBER_CHECK(weight.rank() == 2 && x.rank() >= 1 && x.size(-1) == weight.size(1), "linear: input ", x.shape(),
              " does not match weight [out, in] ", weight.shape());
  // The weight (and bias) go to the op-input hook before the transpose, so that autocast casts the
  // parameter itself, once per scope, rather than a new transposed view at every call.
  weight = hook_operand(OpKind::matmul, std::move(weight));
  if (bias) return matmul(std::move(x), transpose(std::move(weight), 0, 1), hook_operand(OpKind::matmul, *bias));
  return matmul(std::move(x), transpose(std::move(weight), 0, 1));
}

DynTensor bilinear(DynTensor x1, DynTensor x2, DynTensor weight, std::optional<DynTensor> bias) {
  EMBER_CHECK(weight.rank() == 3 && x1.rank() >= 1 && x1.size(-1) == weight.size(1) && x2.size(-1) == weight.size(2),
              "bilinear: inputs ", x1.shape(), " and ", x2.shape(), " do not match weight [out, in1, in2] ",
              weight.shape());
  EMBER_CHECK(Sizes(x1.shape().begin(), x1.shape().end() - 1) == Sizes(x2.shape().begin(), x2.shape().end() - 1),
              "bilinear: leading dims of ", x1.shape(), " and ", x2.shape(), " differ");
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  Sizes result(x1.shape().begin(), x1.shape().end() - 1);
  result.push_back(out);
  DynTensor a = reshape(std::move(x1), {-1, in1});
  DynTensor b = reshape(std::move(x2), {-1, 1, in2});
  DynTensor w = reshape(permute(std::move(weight), {1, 0, 2}), {in1, out * in2});
  DynTensor t = reshape(matmul(std::move(a), std::move(w)), {-1, out, in2});  // [M, out, in2]
  DynTensor y = sum(std::move(t) * std::move(b), {2});
  if (bias) y = y + *bias;
  return reshape(std::move(y), std::move(result));
}

}  // namespace ember::nn
