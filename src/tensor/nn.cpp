// Neural-network primitives of the tensor API.
#include <cmath>

#include "dispatch.hpp"
#include "ember/core/adam_inputs.hpp"

namespace ember {

using namespace detail;

namespace {

Sizes per_dim(const Sizes& v, int nd, const char* op, const char* what) {
  if (v.size() == 1) return Sizes(nd, v[0]);
  EMBER_CHECK(int(v.size()) == nd, op, ": ", what, " needs 1 or ", nd, " values, got ", v.size());
  return v;
}

DynTensor conv_nd(OpKind k, int nd, const char* op, DynTensor x, DynTensor w, std::optional<DynTensor> b,
                  const ConvOptions& o) {
  EMBER_CHECK(x.rank() == nd + 2, op, ": input must have shape [N, C, ", nd == 1 ? "L" : nd == 2 ? "H, W" : "D, H, W",
              "], got ", x.shape());
  ConvAttrs a{per_dim(o.stride, nd, op, "stride"), per_dim(o.padding, nd, op, "padding"),
              per_dim(o.dilation, nd, op, "dilation"), per_dim(o.output_padding, nd, op, "output_padding"),
              o.groups};
  std::vector<DynTensor> in{std::move(x), std::move(w)};
  if (b) in.push_back(std::move(*b));
  return run1(k, std::move(in), std::move(a));
}

PoolAttrs pool_attrs(const PoolOptions& o, int nd, const char* op, bool indices = true) {
  EMBER_CHECK(!o.kernel_size.empty(), op, ": kernel_size is required");
  Sizes k = per_dim(o.kernel_size, nd, op, "kernel_size");
  PoolAttrs a{k,
              o.stride.empty() ? k : per_dim(o.stride, nd, op, "stride"),
              per_dim(o.padding, nd, op, "padding"),
              per_dim(o.dilation, nd, op, "dilation"),
              o.ceil_mode,
              o.count_include_pad};
  a.indices = indices;
  return a;
}

}  // namespace

DynTensor conv1d(DynTensor x, DynTensor w, std::optional<DynTensor> b, ConvOptions o) {
  return conv_nd(OpKind::conv, 1, "conv1d", std::move(x), std::move(w), std::move(b), o);
}
DynTensor conv2d(DynTensor x, DynTensor w, std::optional<DynTensor> b, ConvOptions o) {
  return conv_nd(OpKind::conv, 2, "conv2d", std::move(x), std::move(w), std::move(b), o);
}
DynTensor conv3d(DynTensor x, DynTensor w, std::optional<DynTensor> b, ConvOptions o) {
  return conv_nd(OpKind::conv, 3, "conv3d", std::move(x), std::move(w), std::move(b), o);
}
DynTensor conv_fused(DynTensor x, DynTensor w, std::optional<DynTensor> b, ConvOptions o, ConvEpilogue e) {
  const int nd = x.rank() - 2;
  EMBER_CHECK(nd >= 1 && nd <= 3, "conv_fused: input must have rank 3 to 5 [N, C, *spatial], got ", x.shape());
  ConvAttrs a{per_dim(o.stride, nd, "conv_fused", "stride"), per_dim(o.padding, nd, "conv_fused", "padding"),
              per_dim(o.dilation, nd, "conv_fused", "dilation"), Sizes(size_t(nd), 0), o.groups};
  EMBER_CHECK(!(e.min && std::isnan(*e.min)) && !(e.max && std::isnan(*e.max)),
              "conv_fused: the clamp bounds must not be NaN");
  if (e.min) a.act_min = *e.min;
  if (e.max) a.act_max = *e.max;
  std::vector<DynTensor> in{std::move(x), std::move(w)};
  if (b || e.residual) in.push_back(b ? std::move(*b) : DynTensor());
  if (e.residual) in.push_back(std::move(*e.residual));
  return run1(OpKind::conv, std::move(in), std::move(a));
}
DynTensor conv_transpose1d(DynTensor x, DynTensor w, std::optional<DynTensor> b, ConvOptions o) {
  return conv_nd(OpKind::conv_transpose, 1, "conv_transpose1d", std::move(x), std::move(w), std::move(b), o);
}
DynTensor conv_transpose2d(DynTensor x, DynTensor w, std::optional<DynTensor> b, ConvOptions o) {
  return conv_nd(OpKind::conv_transpose, 2, "conv_transpose2d", std::move(x), std::move(w), std::move(b), o);
}
DynTensor conv_transpose3d(DynTensor x, DynTensor w, std::optional<DynTensor> b, ConvOptions o) {
  return conv_nd(OpKind::conv_transpose, 3, "conv_transpose3d", std::move(x), std::move(w), std::move(b), o);
}

DynTensor avg_pool1d(DynTensor x, PoolOptions o) { return run1(OpKind::avg_pool, {std::move(x)}, pool_attrs(o, 1, "avg_pool1d")); }
DynTensor avg_pool2d(DynTensor x, PoolOptions o) { return run1(OpKind::avg_pool, {std::move(x)}, pool_attrs(o, 2, "avg_pool2d")); }
TensorPair max_pool1d_with_indices(DynTensor x, PoolOptions o) {
  auto r = run_op(OpKind::max_pool, {std::move(x)}, pool_attrs(o, 1, "max_pool1d"));
  return {std::move(r[0]), std::move(r[1])};
}
TensorPair max_pool2d_with_indices(DynTensor x, PoolOptions o) {
  auto r = run_op(OpKind::max_pool, {std::move(x)}, pool_attrs(o, 2, "max_pool2d"));
  return {std::move(r[0]), std::move(r[1])};
}
DynTensor max_pool1d(DynTensor x, PoolOptions o) {
  return run1(OpKind::max_pool, {std::move(x)}, pool_attrs(o, 1, "max_pool1d", false));
}
DynTensor max_pool2d(DynTensor x, PoolOptions o) {
  return run1(OpKind::max_pool, {std::move(x)}, pool_attrs(o, 2, "max_pool2d", false));
}

DynTensor adaptive_avg_pool1d(DynTensor x, int64_t size) {
  return run1(OpKind::adaptive_avg_pool, {std::move(x)}, ShapeAttrs{Shape{size}});
}
DynTensor adaptive_avg_pool2d(DynTensor x, Sizes size) {
  return run1(OpKind::adaptive_avg_pool, {std::move(x)}, ShapeAttrs{Shape(per_dim(size, 2, "adaptive_avg_pool2d", "output_size"))});
}
DynTensor interpolate(DynTensor x, Sizes size, InterpMode mode, bool align_corners) {
  EMBER_CHECK(!(mode == InterpMode::nearest && align_corners), "interpolate: align_corners is only valid for linear and cubic modes");
  return run1(OpKind::interpolate, {to_float(std::move(x))}, InterpolateAttrs{std::move(size), mode, align_corners});
}

DynTensor embedding(DynTensor weight, DynTensor indices) {
  EMBER_CHECK(weight.rank() == 2, "embedding: weight must be [num_embeddings, dim], got ", weight.shape());
  Sizes out = indices.shape().dims();
  out.push_back(weight.shape()[1]);
  return reshape(index_select(std::move(weight), 0, flatten(std::move(indices))), std::move(out));
}

DynTensor layer_norm(DynTensor x, Sizes normalized_shape, std::optional<DynTensor> w, std::optional<DynTensor> b,
                     double eps) {
  int axes = int(normalized_shape.size());
  EMBER_CHECK(axes >= 1 && axes <= x.rank(), "layer_norm: normalized_shape ", Shape(normalized_shape),
              " does not fit input ", x.shape());
  for (int i = 0; i < axes; ++i)
    EMBER_CHECK(x.shape()[x.rank() - axes + i] == normalized_shape[i], "layer_norm: normalized_shape ",
                Shape(normalized_shape), " does not match the trailing dims of input ", x.shape());
  std::vector<DynTensor> in{std::move(x), w ? std::move(*w) : DynTensor(nullptr, Device::cpu()),
                            b ? std::move(*b) : DynTensor(nullptr, Device::cpu())};
  return run1(OpKind::layer_norm, std::move(in), NormAttrs{axes, eps});
}

DynTensor batch_norm(DynTensor x, DynTensor mean, DynTensor var, std::optional<DynTensor> w,
                     std::optional<DynTensor> b, double eps) {
  std::vector<DynTensor> in{std::move(x), std::move(mean), std::move(var),
                            w ? std::move(*w) : DynTensor(nullptr, Device::cpu()),
                            b ? std::move(*b) : DynTensor(nullptr, Device::cpu())};
  return run1(OpKind::batch_norm, std::move(in), NormAttrs{1, eps});
}

DynTensor scaled_dot_product_attention(DynTensor q, DynTensor k, DynTensor v, std::optional<DynTensor> mask,
                                       bool is_causal, std::optional<double> scale) {
  std::vector<DynTensor> in{std::move(q), std::move(k), std::move(v)};
  if (mask) in.push_back(std::move(*mask));
  return run1(OpKind::attention, std::move(in),
              AttentionAttrs{is_causal, scale.value_or(std::numeric_limits<double>::quiet_NaN())});
}

CrossEntropyRows cross_entropy_rows(DynTensor logits, DynTensor target, int64_t ignore_index) {
  auto r = run_op(OpKind::cross_entropy, {std::move(logits), std::move(target)}, DimAttrs{1, false, ignore_index});
  return {std::move(r[0]), r[2].detach()};
}

AdamUpdate adam_step(DynTensor param, DynTensor grad, DynTensor exp_avg, DynTensor exp_avg_sq, const AdamAttrs& a) {
  auto r = run_op(OpKind::adam_step, {std::move(param), std::move(grad), std::move(exp_avg), std::move(exp_avg_sq)}, a);
  return {std::move(r[0]), std::move(r[1]), std::move(r[2]), DynTensor()};
}

std::vector<AdamUpdate> adam_step_multi(std::vector<DynTensor> params, std::vector<DynTensor> grads,
                                        std::vector<DynTensor> exp_avgs, std::vector<DynTensor> exp_avg_sqs,
                                        const AdamAttrs& a) {
  const size_t k = params.size();
  EMBER_CHECK(k > 0 && grads.size() == k && exp_avgs.size() == k && exp_avg_sqs.size() == k,
              "adam_step_multi: needs as many grads, exp_avgs and exp_avg_sqs as params (at least one), got ", k, ", ",
              grads.size(), ", ", exp_avgs.size(), " and ", exp_avg_sqs.size());
  std::vector<DynTensor> in;
  in.reserve(4 * k);
  for (size_t i = 0; i < k; ++i)
    for (DynTensor* t : {&params[i], &grads[i], &exp_avgs[i], &exp_avg_sqs[i]}) in.push_back(std::move(*t));
  auto r = run_op(OpKind::adam_step, std::move(in), a);
  std::vector<AdamUpdate> out(k);
  for (size_t i = 0; i < k; ++i)
    out[i] = {std::move(r[3 * i]), std::move(r[3 * i + 1]), std::move(r[3 * i + 2]), DynTensor()};
  return out;
}

std::vector<AdamUpdate> adam_step_multi(std::vector<DynTensor> params, std::vector<DynTensor> grads,
                                        std::vector<DynTensor> exp_avgs, std::vector<DynTensor> exp_avg_sqs,
                                        const AdamAttrs& a, DynTensor lr, std::vector<DynTensor> steps) {
  const size_t k = params.size();
  EMBER_CHECK(k > 0 && grads.size() == k && exp_avgs.size() == k && exp_avg_sqs.size() == k && steps.size() == k,
              "adam_step_multi: needs as many grads, exp_avgs, exp_avg_sqs and steps as params (at least one), got ", k,
              ", ", grads.size(), ", ", exp_avgs.size(), ", ", exp_avg_sqs.size(), " and ", steps.size());
  std::vector<DynTensor> in;
  in.reserve(5 * k + 1);
  for (size_t i = 0; i < k; ++i)
    for (DynTensor* t : {&params[i], &grads[i], &exp_avgs[i], &exp_avg_sqs[i]}) in.push_back(std::move(*t));
  in.push_back(std::move(lr));
  for (DynTensor& t : steps) in.push_back(std::move(t));
  AdamAttrs d = a;
  d.step = 0;  // (the device-scalar form of several parameters: AdamInputs)
  auto r = run_op(OpKind::adam_step, std::move(in), d);
  std::vector<AdamUpdate> out(k);
  for (size_t i = 0; i < k; ++i)
    out[i] = {std::move(r[3 * i]), std::move(r[3 * i + 1]), std::move(r[3 * i + 2]), std::move(r[3 * k + i])};
  return out;
}

DynTensor norm_multi(std::vector<DynTensor> xs, double p) {
  EMBER_CHECK(!xs.empty(), "norm_multi: needs at least one tensor");
  return run1(OpKind::norm_multi, std::move(xs), ScalarAttrs{p, 0});
}

std::vector<DynTensor> mul_multi(std::vector<DynTensor> xs, DynTensor s) {
  EMBER_CHECK(!xs.empty(), "mul_multi: needs at least one tensor");
  EMBER_CHECK(s.defined(), "mul_multi: the scalar is undefined");
  if (s.dtype() != xs[0].dtype()) s = s.cast(xs[0].dtype());
  xs.push_back(std::move(s));
  return run_op(OpKind::mul_multi, std::move(xs), NoAttrs{});
}

AdamUpdate adam_step(DynTensor param, DynTensor grad, DynTensor exp_avg, DynTensor exp_avg_sq, const AdamAttrs& a,
                     DynTensor lr, DynTensor step) {
  auto r = run_op(OpKind::adam_step,
                  {std::move(param), std::move(grad), std::move(exp_avg), std::move(exp_avg_sq), std::move(lr), std::move(step)},
                  a);
  return {std::move(r[0]), std::move(r[1]), std::move(r[2]), std::move(r[3])};
}

}  // namespace ember
