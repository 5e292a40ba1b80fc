// Gradients and no_grad scopes: the tensor-level face of the autodiff decorator.
//
//   Device dev = Device::cpu().autodiff();              // or .autodiff(Checkpointing::balanced)
//   auto w = DynTensor::normal({4, 3}, 0, 1, DType::f32, dev).require_grad();
//   # DynTensor x = randn({8, 4}, DType::f32, dev);
//   Gradients grads = mean(square(matmul(x, w))).backward();
//   DynTensor dw = *w.grad(grads);                       // on w's device, not tracked
//   { NoGradGuard off; auto w2 = w - 0.1 * dw; }         // nothing recorded in this scope
//   # run
#pragma once

#include <optional>

#include "ember/decorators/autodiff.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

// The gradients one backward() computed, by tensor: read with x.grad(grads) or get(x).
class Gradients {
 public:
  Gradients() = default;
  // Wraps the gradients an autodiff backward computed on `device`.
  Gradients(autodiff::GradientMap map, Device device) : map_(std::move(map)), device_(std::move(device)) {}
  std::optional<DynTensor> get(const DynTensor& x) const;  // same as x.grad(*this)
  bool remove(const DynTensor& x);                         // drops x's gradient; true if it had one
  size_t size() const { return map_.size(); }  // number of gradients held

 private:
  autodiff::GradientMap map_;
  Device device_ = Device::default_device();
};

using autodiff::NoGradGuard;
using autodiff::grad_enabled;

// Runs f with gradient recording off on this thread.
template <class F>
decltype(auto) no_grad(F&& f) {
  NoGradGuard guard;
  return f();
}

}  // namespace ember
