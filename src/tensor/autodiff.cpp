// The tensor-level autodiff API: DynTensor::require_grad/backward/grad, Gradients, and the
// Device::autodiff() factory (one decorated backend per (backend, strategy), so that two
// calls give equal devices).
#include "ember/tensor/autodiff.hpp"

#include <map>
#include <mutex>

namespace ember {

Device Device::autodiff(Checkpointing strategy) const {
  if (is_autodiff()) return *this;
  static std::mutex mu;
  static std::map<std::pair<const Backend*, Checkpointing>, std::weak_ptr<Backend>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[{backend_.get(), strategy}];
  if (auto b = slot.lock()) return Device(std::move(b));
  auto b = autodiff::wrap(backend_, strategy);
  slot = b;
  return Device(std::move(b));
}

bool Device::is_autodiff() const { return autodiff::is_autodiff(*backend_); }

Device Device::inner() const { return is_autodiff() ? Device(autodiff::inner_of(*backend_)) : *this; }

DynTensor DynTensor::require_grad() const {
  EMBER_CHECK(defined(), "require_grad: undefined tensor");
  return DynTensor(autodiff::require_grad(device_.backend(), prim_), device_);
}

bool DynTensor::is_require_grad() const { return defined() && autodiff::is_tracked(prim_); }

DynTensor DynTensor::detach() const {
  if (!defined()) return *this;
  return DynTensor(autodiff::detach(prim_), device_);
}

Gradients DynTensor::backward(BackwardOptions opts) const {
  EMBER_CHECK(defined(), "backward: undefined tensor");
  return Gradients(autodiff::backward(device_.backend(), prim_, nullptr, {opts.create_graph, opts.retain_graph}),
                   device_);
}

Gradients DynTensor::backward(const DynTensor& upstream, BackwardOptions opts) const {
  EMBER_CHECK(defined() && upstream.defined(), "backward: undefined tensor");
  EMBER_CHECK(upstream.device() == device_, "backward: the upstream gradient is on ", upstream.device().name(),
              ", the tensor (shape ", shape(), ") on ", device_.name());
  return Gradients(
      autodiff::backward(device_.backend(), prim_, upstream.primitive(), {opts.create_graph, opts.retain_graph}),
      device_);
}

std::optional<DynTensor> DynTensor::grad(const Gradients& grads) const { return grads.get(*this); }

std::optional<DynTensor> Gradients::get(const DynTensor& x) const {
  EMBER_CHECK(x.defined(), "grad: undefined tensor");
  EMBER_CHECK(x.device() == device_ || !x.device().is_autodiff(), "grad: tensor of shape ", x.shape(), " is on ",
              x.device().name(), ", these gradients are of ", device_.name());
  auto p = map_.get(x.primitive());
  if (!p) return std::nullopt;
  return DynTensor(std::move(*p), device_);
}

bool Gradients::remove(const DynTensor& x) { return x.defined() && map_.remove(x.primitive()); }

}  // namespace ember
