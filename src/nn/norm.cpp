// BatchNorm, InstanceNorm, LayerNorm, GroupNorm, RmsNorm.
#include "ember/nn/norm.hpp"

#include <string>

#include "ember/core/error.hpp"
#include "ember/nn/functional.hpp"
#include "layer_util.hpp"

namespace ember::nn {

namespace {

const char* batch_norm_name(int n) {
  static constexpr const char* kNames[] = {"BatchNorm1d", "BatchNorm2d", "BatchNorm3d"};
  return kNames[n - 1];
}
const char* instance_norm_name(int n) {
  static constexpr const char* kNames[] = {"InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"};
  return kNames[n - 1];
}

// A const module cannot update its running statistics, which a training-mode forward does.
void check_const_forward(const char* name, bool training, bool tracking) {
  EMBER_CHECK(!(training && tracking), name,
              ": a training-mode forward updates running_mean/running_var, which a const module cannot do; "
              "call forward on a non-const module, use forward_train, or set eval mode");
}

// The affine parameters' dtype must be the input's (the running statistics are cast instead).
void check_affine_dtype(const char* name, const DynTensor& x, const std::optional<Param>& weight,
                        const std::optional<Param>& bias) {
  internal::check_dtype(name, x, weight, "weight");
  internal::check_dtype(name, x, bias, "bias");
}

struct NormState {
  std::optional<Param> weight, bias;
  std::optional<Buffer> running_mean, running_var, num_batches_tracked;
};

// Affine parameters (ones/zeros) and running statistics (zeros/ones/0) as PyTorch's _NormBase.
NormState make_norm_state(const std::string& name, int64_t c, bool affine, bool track, const Device& d) {
  EMBER_CHECK(c > 0, name, ": num_features must be positive, got ", c);
  NormState s;
  if (affine) {
    s.weight = Param(DynTensor::ones({c}, kDefaultFloat, d));
    s.bias = Param(DynTensor::zeros({c}, kDefaultFloat, d));
  }
  if (track) {
    s.running_mean = Buffer{DynTensor::zeros({c}, kDefaultFloat, d)};
    s.running_var = Buffer{DynTensor::ones({c}, kDefaultFloat, d)};
    s.num_batches_tracked = Buffer{DynTensor::zeros(Shape{}, DType::i64, d)};
  }
  return s;
}

// running = (1 - factor) * running + factor * batch, in the running statistic's dtype.
DynTensor running_average(const DynTensor& running, const DynTensor& batch, double factor) {
  DynTensor b = batch.detach();
  if (b.dtype() != running.dtype()) b = cast(std::move(b), running.dtype());
  return running * (1.0 - factor) + b * factor;
}

// The running statistics in x's dtype, for the eval-mode batch_norm op.
DynTensor as_dtype_of(const DynTensor& x, const Buffer& b) {
  return b.value.dtype() == x.dtype() ? b.value : cast(b.value, x.dtype());
}

void check_batch_norm_input(const DynTensor& x, int n, int64_t c, const std::string& name) {
  const bool ok = n == 1 ? (x.rank() == 2 || x.rank() == 3) : x.rank() == n + 2;
  EMBER_CHECK(ok, name, ": expected ",
              n == 1   ? "[N, C] or [N, C, L]"
              : n == 2 ? "[N, C, H, W]"
                       : "[N, C, D, H, W]",
              " input, got ", x.shape());
  EMBER_CHECK(x.size(1) == c, name, ": input ", x.shape(), " has ", x.size(1), " channels, the layer ", c);
}

}  // namespace

// Moves the parameters and buffers of `s` into a BatchNorm or InstanceNorm.
template <class M>
void adopt_state(M& m, NormState s) {
  m.weight = std::move(s.weight);
  m.bias = std::move(s.bias);
  m.running_mean = std::move(s.running_mean);
  m.running_var = std::move(s.running_var);
  m.num_batches_tracked = std::move(s.num_batches_tracked);
}

// ---- BatchNorm ----

template <int N>
BatchNorm<N> BatchNormConfig<N>::init(const Device& device) const {
  NormState s = make_norm_state(batch_norm_name(N), num_features, affine, track_running_stats, device);
  BatchNorm<N> m;
  adopt_state(m, std::move(s));
  m.config = *this;
  return m;
}

template <int N>
std::pair<DynTensor, BatchNorm<N>> BatchNorm<N>::forward_train(DynTensor x) const {
  return detail::in_module(ember_module_, batch_norm_name(N), [&]() -> std::pair<DynTensor, BatchNorm<N>> {
    check_batch_norm_input(x, N, config.num_features, batch_norm_name(N));
    check_affine_dtype(batch_norm_name(N), x, weight, bias);
    BatchNormTrainResult r =
        batch_norm_train(std::move(x), internal::value_of(weight), internal::value_of(bias), config.eps);
    BatchNorm next = *this;
    if (running_mean && running_var) {
      NoGradGuard no_grad;
      double factor = config.momentum.value_or(0.0);
      if (num_batches_tracked) {
        next.num_batches_tracked->value = num_batches_tracked->value + 1;
        if (!config.momentum) factor = 1.0 / next.num_batches_tracked->value.item();
      }
      next.running_mean->value = running_average(running_mean->value, r.mean, factor);
      next.running_var->value = running_average(running_var->value, r.var, factor);
    }
    return {std::move(r.y), std::move(next)};
  });
}

template <int N>
DynTensor BatchNorm<N>::forward(DynTensor x) const {
  return detail::in_module(ember_module_, batch_norm_name(N), [&] {
    const char* name = batch_norm_name(N);
    const bool tracking = running_mean && running_var;
    check_const_forward(name, mode.training, tracking);
    if (!tracking) return forward_train(std::move(x)).first;
    check_batch_norm_input(x, N, config.num_features, name);
    check_affine_dtype(batch_norm_name(N), x, weight, bias);
    DynTensor mean = as_dtype_of(x, *running_mean), var = as_dtype_of(x, *running_var);
    return batch_norm(std::move(x), std::move(mean), std::move(var), internal::value_of(weight),
                      internal::value_of(bias), config.eps);
  });
}

template <int N>
DynTensor BatchNorm<N>::forward(DynTensor x) {
  if (!(mode.training && running_mean && running_var)) return std::as_const(*this).forward(std::move(x));
  auto [y, next] = std::as_const(*this).forward_train(std::move(x));
  running_mean = std::move(next.running_mean);
  running_var = std::move(next.running_var);
  num_batches_tracked = std::move(next.num_batches_tracked);
  return y;
}

// ---- InstanceNorm ----

template <int N>
InstanceNorm<N> InstanceNormConfig<N>::init(const Device& device) const {
  NormState s = make_norm_state(instance_norm_name(N), num_features, affine, track_running_stats, device);
  InstanceNorm<N> m;
  adopt_state(m, std::move(s));
  m.config = *this;
  return m;
}

namespace {
template <int N>
DynTensor batched_instance_input(DynTensor x, int64_t c, bool& unbatched) {
  const char* name = instance_norm_name(N);
  x = internal::batch_if_unbatched(std::move(x), N + 2, unbatched);
  EMBER_CHECK(x.rank() == N + 2, name, ": input must be [N, C, *spatial] or [C, *spatial] with ", N,
              " spatial dims, got ", x.shape());
  EMBER_CHECK(x.size(1) == c, name, ": input ", x.shape(), " has ", x.size(1), " channels, the layer ", c);
  return x;
}
void check_spatial(const DynTensor& x, const std::string& name) {
  EMBER_CHECK(x.numel() / (x.size(0) * x.size(1)) > 1, name, ": expected more than 1 spatial element, input ",
              x.shape());
}
}  // namespace

template <int N>
std::pair<DynTensor, InstanceNorm<N>> InstanceNorm<N>::forward_train(DynTensor x) const {
  return detail::in_module(ember_module_, instance_norm_name(N), [&]() -> std::pair<DynTensor, InstanceNorm<N>> {
    bool unbatched = false;
    x = batched_instance_input<N>(std::move(x), config.num_features, unbatched);
    check_spatial(x, instance_norm_name(N));
    check_affine_dtype(instance_norm_name(N), x, weight, bias);
    InstanceNorm next = *this;
    if (running_mean && running_var) {
      NoGradGuard no_grad;
      Dims spatial;
      for (int d = 2; d < x.rank(); ++d) spatial.push_back(d);
      DynTensor xs = x.detach();
      DynTensor mean_c = mean(mean(xs, spatial), {0});
      DynTensor var_c = mean(var(xs, spatial, 1), {0});
      next.running_mean->value = running_average(running_mean->value, mean_c, config.momentum);
      next.running_var->value = running_average(running_var->value, var_c, config.momentum);
    }
    DynTensor y = instance_norm(std::move(x), internal::value_of(weight), internal::value_of(bias), config.eps);
    return {unbatched ? squeeze(std::move(y), 0) : std::move(y), std::move(next)};
  });
}

template <int N>
DynTensor InstanceNorm<N>::forward(DynTensor x) const {
  return detail::in_module(ember_module_, instance_norm_name(N), [&] {
    const char* name = instance_norm_name(N);
    const bool tracking = running_mean && running_var;
    check_const_forward(name, mode.training, tracking);
    if (!tracking) return forward_train(std::move(x)).first;
    bool unbatched = false;
    x = batched_instance_input<N>(std::move(x), config.num_features, unbatched);
    check_affine_dtype(instance_norm_name(N), x, weight, bias);
    DynTensor mean = as_dtype_of(x, *running_mean), var = as_dtype_of(x, *running_var);
    DynTensor y = batch_norm(std::move(x), std::move(mean), std::move(var), internal::value_of(weight),
                             internal::value_of(bias), config.eps);
    return unbatched ? squeeze(std::move(y), 0) : y;
  });
}

template <int N>
DynTensor InstanceNorm<N>::forward(DynTensor x) {
  if (!(mode.training && running_mean && running_var)) return std::as_const(*this).forward(std::move(x));
  auto [y, next] = std::as_const(*this).forward_train(std::move(x));
  running_mean = std::move(next.running_mean);
  running_var = std::move(next.running_var);
  return y;
}

template struct BatchNormConfig<1>;
template struct BatchNormConfig<2>;
template struct BatchNormConfig<3>;
template struct BatchNorm<1>;
template struct BatchNorm<2>;
template struct BatchNorm<3>;
template struct InstanceNormConfig<1>;
template struct InstanceNormConfig<2>;
template struct InstanceNormConfig<3>;
template struct InstanceNorm<1>;
template struct InstanceNorm<2>;
template struct InstanceNorm<3>;

// ---- LayerNorm, GroupNorm, RmsNorm ----

LayerNorm LayerNormConfig::init(const Device& device) const {
  EMBER_CHECK(!normalized_shape.empty(), "LayerNorm: normalized_shape is empty");
  for (int64_t s : normalized_shape)
    EMBER_CHECK(s > 0, "LayerNorm: normalized_shape ", Shape(normalized_shape), " must be positive");
  LayerNorm m;
  m.config = *this;
  if (elementwise_affine) {
    m.weight = Param(DynTensor::ones(Shape(normalized_shape), kDefaultFloat, device));
    if (bias) m.bias = Param(DynTensor::zeros(Shape(normalized_shape), kDefaultFloat, device));
  }
  return m;
}

DynTensor LayerNorm::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "LayerNorm", [&] {
    check_affine_dtype("LayerNorm", x, weight, bias);
    return layer_norm(std::move(x), config.normalized_shape, internal::value_of(weight), internal::value_of(bias),
                      config.eps);
  });
}

GroupNorm GroupNormConfig::init(const Device& device) const {
  EMBER_CHECK(num_groups > 0 && num_channels > 0 && num_channels % num_groups == 0, "GroupNorm: num_channels ",
              num_channels, " must be divisible by num_groups ", num_groups);
  GroupNorm m;
  m.config = *this;
  if (affine) {
    m.weight = Param(DynTensor::ones({num_channels}, kDefaultFloat, device));
    m.bias = Param(DynTensor::zeros({num_channels}, kDefaultFloat, device));
  }
  return m;
}

DynTensor GroupNorm::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "GroupNorm", [&] {
    EMBER_CHECK(x.rank() >= 2 && x.size(1) == config.num_channels, "GroupNorm: input ", x.shape(), " must be [N, ",
                config.num_channels, ", *]");
    check_affine_dtype("GroupNorm", x, weight, bias);
    return group_norm(std::move(x), config.num_groups, internal::value_of(weight), internal::value_of(bias),
                      config.eps);
  });
}

RmsNorm RmsNormConfig::init(const Device& device) const {
  EMBER_CHECK(!normalized_shape.empty(), "RmsNorm: normalized_shape is empty");
  RmsNorm m;
  m.config = *this;
  if (elementwise_affine) m.weight = Param(DynTensor::ones(Shape(normalized_shape), kDefaultFloat, device));
  return m;
}

DynTensor RmsNorm::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "RmsNorm", [&] {
    check_affine_dtype("RmsNorm", x, weight, std::nullopt);
    return rms_norm(std::move(x), config.normalized_shape, internal::value_of(weight), config.eps);
  });
}

}  // namespace ember::nn
