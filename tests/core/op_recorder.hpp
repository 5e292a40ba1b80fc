// A test decorator that records the kind and attributes of every op reaching the backend it
// wraps, to see which form of an op a layer above chose (e.g. max_pool with or without indices).
//
//   auto recorder = std::make_shared<test::OpRecorder>(Device::cpu().backend_ptr());
//   Device dev(recorder);  // ... run something on dev ...
//   for (const PoolAttrs& a : recorder->attrs_of<PoolAttrs>(OpKind::max_pool)) ...
#pragma once

#include <mutex>
#include <utility>
#include <vector>

#include "ember/core/backend.hpp"

namespace ember::test {

class OpRecorder final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::vector<PrimitivePtr> execute(Op op) override {
    {
      std::lock_guard lock(mu_);
      ops_.emplace_back(op.kind, op.attrs);
    }
    return inner()->execute(std::move(op));
  }
  // The attributes of the recorded ops of kind k, in order.
  template <class A>
  std::vector<A> attrs_of(OpKind k) const {
    std::lock_guard lock(mu_);
    std::vector<A> out;
    for (const auto& [kind, attrs] : ops_)
      if (kind == k) out.push_back(std::get<A>(attrs));
    return out;
  }
  void clear() {
    std::lock_guard lock(mu_);
    ops_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<OpKind, OpAttrs>> ops_;
};

// The PoolAttrs::indices of every max_pool `r` recorded.
inline std::vector<bool> max_pool_indices(const OpRecorder& r) {
  std::vector<bool> out;
  for (const PoolAttrs& a : r.attrs_of<PoolAttrs>(OpKind::max_pool)) out.push_back(a.indices);
  return out;
}

}  // namespace ember::test
