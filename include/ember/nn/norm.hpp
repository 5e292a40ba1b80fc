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
  int64_t num_features = 0;  // C, the channel count (dim 1 of the input); must be positive
  double eps = 1e-5;         // added to the variance before the square root
  // Weight of the new batch statistic in the running average; nullopt (PyTorch's None): a
  // cumulative average, 1 / num_batches_tracked.
  std::optional<double> momentum = 0.1;
  bool affine = true;  // learnable per-channel weight (ones) and bias (zeros)
  // Keep running_mean, running_var and num_batches_tracked; without them eval mode also normalises
  // with the batch statistics.
  bool track_running_stats = true;
  // Builds the module on `device` (f32 parameters and buffers); throws ember::Error when num_features <= 0.
  BatchNorm<N> init(const Device& device = Device::default_device()) const;
};

// torch.nn.BatchNorm1d/2d/3d: normalises each channel over the batch and spatial dims, then applies
// the affine weight and bias. The output has the input's shape; the input's dtype must be the affine
// parameters' dtype. forward throws ember::Error on a wrong rank or channel count.
template <int N>
struct BatchNorm {
  // weight: the per-channel scale (ones at init); weight and bias are present when config.affine.
  std::optional<Param> weight{}, bias{};                // [C] (affine); bias: the shift (zeros at init)
  // running_mean: zeros at init; both running statistics are present when config.track_running_stats.
  std::optional<Buffer> running_mean{}, running_var{};  // [C] f32 (track_running_stats); running_var: ones at init
  std::optional<Buffer> num_batches_tracked{};          // [] i64 (track_running_stats)
  Mode mode{};                  // training or eval (set_training)
  BatchNormConfig<N> config{};  // the configuration it was built with
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
  int64_t num_features = 0;  // C, the channel count; must be positive
  double eps = 1e-5;         // added to the variance before the square root
  double momentum = 0.1;     // weight of the new statistic in the running average (track_running_stats)
  bool affine = false;       // learnable per-channel weight (ones) and bias (zeros); off as in PyTorch
  // Keep running_mean and running_var, used in eval mode; off as in PyTorch.
  bool track_running_stats = false;
  // Builds the module on `device` (f32 parameters and buffers); throws ember::Error when num_features <= 0.
  InstanceNorm<N> init(const Device& device = Device::default_device()) const;
};

// With track_running_stats, the running statistics are the batch means of the instance
// statistics and work as in BatchNorm (same three forward overloads); PyTorch does not
// increment num_batches_tracked here, and neither does ember.
// torch.nn.InstanceNorm1d/2d/3d: normalises each sample's channel over its spatial dims (more than one
// spatial element needed); the output has the input's shape.
template <int N>
struct InstanceNorm {
  // weight: the per-channel scale, [C] (ones at init); weight and bias are present when config.affine.
  std::optional<Param> weight{}, bias{};  // bias: the per-channel shift, [C] (zeros at init)
  // running_mean [C] f32 (zeros at init), running_var [C] f32 (ones) and a [] i64 counter that stays 0;
  // present when config.track_running_stats.
  std::optional<Buffer> running_mean{}, running_var{}, num_batches_tracked{};  // [] i64, never incremented
  Mode mode{};                     // training or eval (set_training)
  InstanceNormConfig<N> config{};  // the configuration it was built with
  EMBER_MODULE(weight, bias, running_mean, running_var, num_batches_tracked, mode)
  // Training mode with running statistics: normalises with the instance statistics and updates the
  // running ones in place. Otherwise as the const overload.
  DynTensor forward(DynTensor x);
  // Instance statistics, or the running ones in eval mode when tracked; throws in training mode with
  // track_running_stats (a const module cannot update them).
  DynTensor forward(DynTensor x) const;
  // Training-mode forward whatever the mode flag says: the output and this module with updated
  // running statistics (unchanged when it does not track them).
  std::pair<DynTensor, InstanceNorm> forward_train(DynTensor x) const;
};

// Configuration of a LayerNorm (torch.nn.LayerNorm's arguments).
struct LayerNormConfig {
  Sizes normalized_shape{};  // the trailing dims normalised over
  double eps = 1e-5;         // added to the variance before the square root
  // Learnable weight (ones) and, with `bias`, bias (zeros), both of shape normalized_shape.
  bool elementwise_affine = true;
  bool bias = true;  // PyTorch >= 2.1's LayerNorm(bias=...)
  // Builds the module on `device`; throws ember::Error when normalized_shape is empty or has a dim <= 0.
  LayerNorm init(const Device& device = Device::default_device()) const;
};

// torch.nn.LayerNorm: normalises over the trailing normalized_shape dims (biased variance), then
// applies the elementwise weight and bias.
struct LayerNorm {
  // weight: the elementwise scale (ones at init), present with elementwise_affine; bias (zeros) also
  // needs config.bias.
  std::optional<Param> weight{}, bias{};  // normalized_shape
  LayerNormConfig config{};  // the configuration it was built with
  EMBER_MODULE(weight, bias)
  // Input [*, *normalized_shape], output the same shape; throws ember::Error when the input's trailing
  // dims are not normalized_shape.
  DynTensor forward(DynTensor x) const;  // [*, *normalized_shape]
};

// Configuration of a GroupNorm (torch.nn.GroupNorm's arguments).
struct GroupNormConfig {
  int64_t num_groups = 0;    // groups the channels are split into; must divide num_channels
  int64_t num_channels = 0;  // C, the input's dim 1
  double eps = 1e-5;         // added to the variance before the square root
  bool affine = true;        // learnable per-channel weight (ones) and bias (zeros)
  // Builds the module on `device`; throws ember::Error unless num_groups > 0 divides num_channels > 0.
  GroupNorm init(const Device& device = Device::default_device()) const;
};

// torch.nn.GroupNorm: normalises each sample over each group of C / num_groups channels (and all
// spatial positions), then applies the per-channel weight and bias.
struct GroupNorm {
  // weight: the per-channel scale (ones at init); weight and bias (zeros) are present when config.affine.
  std::optional<Param> weight{}, bias{};  // [num_channels]
  GroupNormConfig config{};  // the configuration it was built with
  EMBER_MODULE(weight, bias)
  // Input [N, C, *], output the same shape; throws ember::Error when dim 1 is not num_channels.
  DynTensor forward(DynTensor x) const;  // [N, C, *]
};

// torch.nn.RMSNorm: x / sqrt(mean(x^2 over normalized_shape) + eps) * weight.
struct RmsNormConfig {
  Sizes normalized_shape{};  // the trailing dims normalised over
  std::optional<double> eps{};  // nullopt: the machine epsilon of the input's dtype, as PyTorch
  bool elementwise_affine = true;  // learnable weight (ones) of shape normalized_shape; RMSNorm has no bias
  // Builds the module on `device`; throws ember::Error when normalized_shape is empty.
  RmsNorm init(const Device& device = Device::default_device()) const;
};

// torch.nn.RMSNorm (see RmsNormConfig for the formula).
struct RmsNorm {
  std::optional<Param> weight{};  // normalized_shape
  RmsNormConfig config{};  // the configuration it was built with
  EMBER_MODULE(weight)
  // Input [*, *normalized_shape], output the same shape; throws ember::Error when the input's trailing
  // dims are not normalized_shape.
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

using BatchNorm1dConfig = BatchNormConfig<1>;  // input [N, C] or [N, C, L]
using BatchNorm2dConfig = BatchNormConfig<2>;  // input [N, C, H, W]
using BatchNorm3dConfig = BatchNormConfig<3>;  // input [N, C, D, H, W]
using BatchNorm1d = BatchNorm<1>;  // torch.nn.BatchNorm1d: input [N, C] or [N, C, L]
using BatchNorm2d = BatchNorm<2>;  // torch.nn.BatchNorm2d: input [N, C, H, W]
using BatchNorm3d = BatchNorm<3>;  // torch.nn.BatchNorm3d: input [N, C, D, H, W]
using InstanceNorm1dConfig = InstanceNormConfig<1>;  // input [N, C, L] or [C, L]
using InstanceNorm2dConfig = InstanceNormConfig<2>;  // input [N, C, H, W] or [C, H, W]
using InstanceNorm3dConfig = InstanceNormConfig<3>;  // input [N, C, D, H, W] or [C, D, H, W]
using InstanceNorm1d = InstanceNorm<1>;  // torch.nn.InstanceNorm1d: input [N, C, L] or [C, L]
using InstanceNorm2d = InstanceNorm<2>;  // torch.nn.InstanceNorm2d: input [N, C, H, W] or [C, H, W]
using InstanceNorm3d = InstanceNorm<3>;  // torch.nn.InstanceNorm3d: input [N, C, D, H, W] or [C, D, H, W]

}  // namespace ember::nn
