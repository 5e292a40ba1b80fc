// The per-thread op-input hook: the one seam through which a layer above the tensor API (ember::amp's
// autocast) changes what an op computes in. The tensor layer consults it once per op, just before
// the op is built; the hook may replace floating inputs by casts of them, made with ember::cast, so
// every backend and decorator below sees ordinary `cast` ops followed by the op itself.
//
//   struct Bf16Matmuls final : OpInputHook {
//     void before_op(OpKind k, std::span<DynTensor> in) override {
//       if (k == OpKind::matmul) for (auto& t : in) if (t.defined()) t = cast(t, DType::bf16);
//     }
//     bool casts_inputs(OpKind k) const override { return k == OpKind::matmul; }
//   };
//   Bf16Matmuls hook;
//   OpInputHook* prev = set_op_input_hook(&hook);   // this thread only
//   // ... the matmuls here take bf16 inputs
//   set_op_input_hook(prev);
//
// Ops that the hook itself runs (its casts) pass through it again; it must leave `cast` alone.
#pragma once

#include <span>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

// A per-thread hook that may replace an op's inputs before the op is built (see above); amp's autocast is one.
class OpInputHook {
 public:
  virtual ~OpInputHook() = default;
  // Called with the inputs of every op the tensor layer builds (undefined handles are absent
  // optional inputs); may replace any of them.
  virtual void before_op(OpKind kind, std::span<DynTensor> inputs) = 0;
  // True when before_op brings the inputs of `kind` to one dtype itself: a tensor function that
  // would promote them first (matmul) then leaves that to the hook instead of adding casts.
  virtual bool casts_inputs(OpKind kind) const = 0;
};

namespace detail {
extern thread_local OpInputHook* t_op_input_hook;
}  // namespace detail

// This thread's hook, or nullptr (the common case: one thread-local load per op).
inline OpInputHook* op_input_hook() { return detail::t_op_input_hook; }
// Installs `hook` (nullptr: none) on this thread; returns the previous one.
OpInputHook* set_op_input_hook(OpInputHook* hook);

// `x` as the hook would hand it to an op of `kind` (x itself without a hook). For composites that
// transform an operand before the op (nn::linear transposes its weight): asking first lets the hook
// see the parameter itself, so a cache keyed by the parameter works.
DynTensor hook_operand(OpKind kind, DynTensor x);

}  // namespace ember
