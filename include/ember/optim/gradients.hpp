// GradientsParams: the gradients of one module's trainable parameters, keyed by parameter id.
// It is what optimizers consume, and where gradient accumulation and clipping happen.
//
//   # Device dev = Device::cpu().autodiff();
//   # nn::Linear model = nn::LinearConfig{4, 1}.init(dev);
//   # DynTensor loss_a = model.forward(DynTensor::ones({2, 4}, DType::f32, dev)).mean();
//   # DynTensor loss_b = model.forward(DynTensor::ones({2, 4}, DType::f32, dev)).sum();
//   # optim::AdamW optimizer = optim::AdamWConfig{}.init();
//   # double lr = 1e-3;
//   auto grads = optim::GradientsParams::from(model, loss_a.backward());
//   grads.accumulate(optim::GradientsParams::from(model, loss_b.backward()));  // micro-batches
//   grads.scale(0.5);                                                          // mean of the two
//   double total = grads.clip_by_norm(1.0);       // torch.nn.utils.clip_grad_norm_
//   model = optimizer.step(model, std::move(grads), lr);
//   # run
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.hpp"
#include "ember/tensor/autodiff.hpp"

namespace ember::optim {

// The gradients of one module's trainable parameters, keyed by parameter id: what Optimizer::step() consumes,
// and where accumulation and clipping happen. The tensors are detached.
class GradientsParams {
 public:
  GradientsParams() = default;

  // The gradients that `grads` holds for the module's parameters; frozen parameters and those
  // the backward did not reach are skipped. The tensors are detached (no graph).
  template <class M>
  static GradientsParams from(const M& module, const Gradients& grads) {
    std::vector<const nn::Param*> params;
    nn::for_each_param(const_cast<M&>(module), [&](const std::string&, nn::Param& p) { params.push_back(&p); });
    return from_params(params, grads);
  }
  // The gradients `grads` holds for `params` (from() without the module walk): frozen and unreached ones skipped.
  static GradientsParams from_params(const std::vector<const nn::Param*>& params, const Gradients& grads);

  // The gradient of the parameter with this id, or nullopt when there is none.
  std::optional<DynTensor> get(uint64_t param_id) const;
  // The gradient of `p`, or nullopt when there is none.
  std::optional<DynTensor> get(const nn::Param& p) const { return get(p.id()); }
  // Sets (or replaces) the gradient of the parameter with this id, detached; throws ember::Error when it is undefined.
  void set(uint64_t param_id, DynTensor grad);
  // Sets (or replaces) the gradient of `p`, detached; throws ember::Error when it is undefined.
  void set(const nn::Param& p, DynTensor grad) { set(p.id(), std::move(grad)); }
  bool remove(uint64_t param_id);  // true if there was a gradient
  // Removes the gradient of `p`; true if there was one.
  bool remove(const nn::Param& p) { return remove(p.id()); }
  // Whether the parameter with this id has a gradient.
  bool contains(uint64_t param_id) const { return grads_.count(param_id) != 0; }
  // The number of parameters with a gradient.
  size_t size() const { return grads_.size(); }
  // Whether no parameter has a gradient.
  bool empty() const { return grads_.empty(); }
  // All gradients by parameter id.
  const std::map<uint64_t, DynTensor>& items() const { return grads_; }

  // Adds `other` (gradient accumulation): shared ids are summed, the others are copied.
  GradientsParams& accumulate(const GradientsParams& other);
  // Multiplies every gradient by s.
  GradientsParams& scale(double s);
  // Clamps every element to [-clip_value, clip_value] (torch.nn.utils.clip_grad_value_).
  GradientsParams& clip_by_value(double clip_value);
  // torch.nn.utils.clip_grad_norm_: the p-norm of all gradients together (p may be infinity);
  // every gradient is multiplied by min(1, max_norm / (total + 1e-6)). Returns the total norm
  // before clipping (0 when there are no gradients).
  double clip_by_norm(double max_norm, double p = 2);
  // The same, returning the total norm as a 0-d tensor on the gradients' device without reading
  // it (nothing waits for the device; a CUDA graph may record it). Undefined when there are no
  // gradients.
  DynTensor clip_by_norm_tensor(double max_norm, double p = 2);

 private:
  std::map<uint64_t, DynTensor> grads_;
};

}  // namespace ember::optim
