// Normalisation layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d, LayerNorm, GroupNorm, RmsNorm.
// Parameter and buffer names are PyTorch's (weight, bias, running_mean, running_var,
// num_batches_tracked); affine weights start as ones, biases as zeros.
//
// Running statistics and const. Modules are values and forward() is const, but a training-mode
// BatchNorm updates its running statistics. Three ways to call it:
//   bn.forward(x)                  on a non-const module: PyTorch's behaviour, the buffers update in
//                                  place (training mode with track_running_stats);
//   auto [y, bn2] = bn.forward_train(x);   pure: training-mode output and the updated module;
//   std::as_const(bn).forward(x)   const: fine in eval mode or without running statistics; in
//                                  training mode with track_running_stats it throws rather than
//                                  silently skipping the update.
// So a model holding a BatchNorm gives its own forward a non-const overload (Sequential has one).
//
//   # Device dev = Device::cpu(); DynTensor x = randn({2, 16, 4, 4});
//   nn::BatchNorm2d bn = nn::BatchNorm2dConfig{16}.init(dev);
//   DynTensor y = bn.forward(x);        // batch statistics; running_mean/var move towards them
//   nn::set_training(bn, false);
//   y = bn.forward(x);                  // running statistics
//   # run
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "ember/nn/module.hpp"

namespace ember::nn {

template <int N>
struct BatchNorm;
template <int N>
struct InstanceNorm;
struct LayerNorm;
struct GroupNorm;
struct RmsNorm;

// N spatial dims: BatchNorm1d takes [N, C] or [N, C, L], BatchNorm2d [N, C, H, W], BatchNorm3d [N, C, D, H, W].
template <int N>
struct BatchNormConfig {
  int64_t num_features = 0;
  double eps = 1e-5;
  // Weight of the new batch statistic in the running average; nullopt (PyTorch's None): a
  // cumulative average, 1 / num_batches_tracked.
  std::optional<double> momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
  BatchNorm<N> init(const Device& device = Device::default_device()) const;
};

template <int N>
struct BatchNorm {
  std::optional<Param> weight{}, bias{};                // [C] (affine)
  std::optional<Buffer> running_mean{}, running_var{};  // [C] f32 (track_running_stats)
  std::optional<Buffer> num_batches_tracked{};          // [] i64 (track_running_stats)
  Mode mode{};
  BatchNormConfig<N> config{};
  EMBER_MODULE(weight, bias, running_mean, running_var, num_batches_tracked, mode)

  // Training mode: normalises with the batch statistics (biased variance) and, with running
  // statistics, updates them (unbiased variance) and num_batches_tracked. Eval mode: normalises
  // with the running statistics, or the batch's when there are none.
  DynTensor forward(DynTensor x);
  // The same without updating: throws in training mode with track_running_stats (see above).
  DynTensor forward(DynTensor x) const;
  // Training-mode forward whatever the mode flag says: the output and this module with updated
  // running statistics (unchanged when it does not track them).
  std::pair<DynTensor, BatchNorm> forward_train(DynTensor x) const;
};

// N spatial dims; input [N, C, *spatial] or unbatched [C, *spatial]. Statistics per sample and channel.
template <int N>
struct InstanceNormConfig {
  int64_t num_features = 0;
  double eps = 1e-5;
  double momentum = 0.1;
  bool affine = false;
  bool track_running_stats = false;
  InstanceNorm<N> init(const Device& device = Device::default_device()) const;
};

// With track_running_stats, the running statistics are the batch means of the instance
// statistics and work as in BatchNorm (same three forward overloads); PyTorch does not
// increment num_batches_tracked here, and neither does ember.
template <int N>
struct InstanceNorm {
  std::optional<Param> weight{}, bias{};
  std::optional<Buffer> running_mean{}, running_var{}, num_batches_tracked{};
  Mode mode{};
  InstanceNormConfig<N> config{};
  EMBER_MODULE(weight, bias, running_mean, running_var, num_batches_tracked, mode)
  DynTensor forward(DynTensor x);
  DynTensor forward(DynTensor x) const;
  std::pair<DynTensor, InstanceNorm> forward_train(DynTensor x) const;
};

struct LayerNormConfig {
  Sizes normalized_shape{};  // the trailing dims normalised over
  double eps = 1e-5;
  bool elementwise_affine = true;
  bool bias = true;  // PyTorch >= 2.1's LayerNorm(bias=...)
  LayerNorm init(const Device& device = Device::default_device()) const;
};

struct LayerNorm {
  std::optional<Param> weight{}, bias{};  // normalized_shape
  LayerNormConfig config{};
  EMBER_MODULE(weight, bias)
  DynTensor forward(DynTensor x) const;  // [*, *normalized_shape]
};

struct GroupNormConfig {
  int64_t num_groups = 0;
  int64_t num_channels = 0;
  double eps = 1e-5;
  bool affine = true;
  GroupNorm init(const Device& device = Device::default_device()) const;
};

struct GroupNorm {
  std::optional<Param> weight{}, bias{};  // [num_channels]
  GroupNormConfig config{};
  EMBER_MODULE(weight, bias)
  DynTensor forward(DynTensor x) const;  // [N, C, *]
};

// torch.nn.RMSNorm: x / sqrt(mean(x^2 over normalized_shape) + eps) * weight.
struct RmsNormConfig {
  Sizes normalized_shape{};
  std::optional<double> eps{};  // nullopt: the machine epsilon of the input's dtype, as PyTorch
  bool elementwise_affine = true;
  RmsNorm init(const Device& device = Device::default_device()) const;
};

struct RmsNorm {
  std::optional<Param> weight{};  // normalized_shape
  RmsNormConfig config{};
  EMBER_MODULE(weight)
  DynTensor forward(DynTensor x) const;
};

extern template struct BatchNormConfig<1>;
extern template struct BatchNormConfig<2>;
extern template struct BatchNormConfig<3>;
extern template struct BatchNorm<1>;
extern template struct BatchNorm<2>;
extern template struct BatchNorm<3>;
extern template struct InstanceNormConfig<1>;
extern template struct InstanceNormConfig<2>;
extern template struct InstanceNormConfig<3>;
extern template struct InstanceNorm<1>;
extern template struct InstanceNorm<2>;
extern template struct InstanceNorm<3>;

using BatchNorm1dConfig = BatchNormConfig<1>;
using BatchNorm2dConfig = BatchNormConfig<2>;
using BatchNorm3dConfig = BatchNormConfig<3>;
using BatchNorm1d = BatchNorm<1>;
using BatchNorm2d = BatchNorm<2>;
using BatchNorm3d = BatchNorm<3>;
using InstanceNorm1dConfig = InstanceNormConfig<1>;
using InstanceNorm2dConfig = InstanceNormConfig<2>;
using InstanceNorm3dConfig = InstanceNormConfig<3>;
using InstanceNorm1d = InstanceNorm<1>;
using InstanceNorm2d = InstanceNorm<2>;
using InstanceNorm3d = InstanceNorm<3>;

}  // namespace ember::nn
