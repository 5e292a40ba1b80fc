// The autodiff decorator (DESIGN section 5): wraps any Backend, records the ops whose inputs
// are tracked into a graph, and runs backward rules (one per IR op) on demand.
//
//   Device dev = Device::cpu().autodiff();          // tensor-level API: ember/tensor/dyn_tensor.hpp
//   auto w = DynTensor::ones({3}, DType::f32, dev).require_grad();
//   Gradients g = sum(w * w).backward();
//
// This header is the primitive-level interface the tensor layer uses. Tensors are immutable:
// require_grad() and detach() return new handles, and backward() never mutates parameters;
// it returns a GradientMap keyed by the graph identity of each tracked tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "ember/core/backend.hpp"
#include "ember/core/device.hpp"

namespace ember::autodiff {

// Wraps `inner` (which must not itself be an autodiff backend).
std::shared_ptr<Backend> wrap(std::shared_ptr<Backend> inner, Checkpointing strategy);
// True when `b` itself (not a backend below it) is an autodiff backend.
bool is_autodiff(const Backend& b);
// The wrapped backend of an autodiff backend.
std::shared_ptr<Backend> inner_of(const Backend& b);

// A leaf that gradients are computed for. `p` must be a floating primitive of backend `b`.
PrimitivePtr require_grad(Backend& b, const PrimitivePtr& p);
// A leaf's identity: what gradients are keyed by (null for anything but a leaf). A parameter
// updated by an optimizer keeps it (require_grad_as), as a PyTorch parameter updated in place
// stays the same tensor: a Gradients map computed before the update, such as the one a CUDA
// graph's replays keep writing, then still finds the parameter's gradient. Only for a value
// that replaces the leaf's old one, which nothing else holds.
using LeafIdentity = std::shared_ptr<const void>;
// The identity of leaf `p`; null when `p` is not a leaf.
LeafIdentity leaf_identity(const PrimitivePtr& p);
// require_grad, with the given identity (a fresh one when `id` is null or its shape and dtype
// are not p's).
PrimitivePtr require_grad_as(Backend& b, const PrimitivePtr& p, const LeafIdentity& id);
// True when `p` is tracked (a leaf that requires grad, or the result of an op on one).
bool is_tracked(const PrimitivePtr& p);
// The same value, no longer tracked.
PrimitivePtr detach(const PrimitivePtr& p);
// Moving a value between a backend and its autodiff wrapper without a copy: `wrap_value`
// makes an untracked autodiff primitive of an inner one; `inner_value` gives an autodiff
// primitive's inner value (the primitive itself when it is not an autodiff one).
PrimitivePtr wrap_value(PrimitivePtr inner);
// The inner value of an autodiff primitive; `p` itself when it is not one.
PrimitivePtr inner_value(const PrimitivePtr& p);

// The graph key of a leaf (a tensor made by require_grad); nullopt for anything else. It is
// what a LeafGradientHook receives, so a caller can tell which of its leaves a gradient is for.
std::optional<uint64_t> leaf_key(const PrimitivePtr& p);

// Called during backward as soon as a leaf's gradient is final (every contribution summed),
// while the rest of the graph is still being differentiated: data-parallel training starts
// reducing a bucket of gradients then (DESIGN section 8). `grad` is the value the returned
// GradientMap will hold for the leaf. Runs on the backward's thread; an exception it throws
// ends the backward.
using LeafGradientHook = std::function<void(uint64_t leaf_key, const PrimitivePtr& grad)>;

// Options of backward() (torch.autograd.backward's create_graph and retain_graph, plus a hook).
struct BackwardOptions {
  bool create_graph = false;  // record the backward ops, so gradients can be differentiated again
  bool retain_graph = false;  // keep the saved tensors, so backward can run again (implied by create_graph)
  // Called as each leaf's gradient becomes final (see LeafGradientHook); none by default.
  LeafGradientHook on_leaf_gradient{};
};

// The gradients of one backward pass, keyed by graph identity (node id, output index).
class GradientMap {
 public:
  std::optional<PrimitivePtr> get(const PrimitivePtr& x) const;  // throws Error for foreign tensors
  bool remove(const PrimitivePtr& x);                             // true when a gradient was removed
  // The number of gradients held.
  size_t size() const { return grads_.size(); }

 private:
  friend class Engine;
  std::map<std::pair<uint64_t, int>, PrimitivePtr> grads_;
  std::set<uint64_t> visited_;  // every node this backward reached
};

// Backward from `root` (a tracked primitive of autodiff backend `b`). `upstream` may be null
// when root has one element.
GradientMap backward(Backend& b, const PrimitivePtr& root, const PrimitivePtr& upstream, BackwardOptions opts);

// Gradient recording is on by default, per thread; NoGradGuard turns it off in a scope.
bool grad_enabled();
// Turns gradient recording off on this thread for its lifetime (torch.no_grad()); destruction restores the
// previous setting. Nestable.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace ember::autodiff
