// How the tensor layer runs an op: check devices, build the IR node (validated in core),
// hand it to the device's backend, wrap the outputs.
#pragma once

#include <vector>

#include "ember/tensor/ops.hpp"

namespace ember::detail {

std::vector<DynTensor> run_op(OpKind kind, std::vector<DynTensor> inputs, OpAttrs attrs = NoAttrs{});
inline DynTensor run1(OpKind kind, std::vector<DynTensor> inputs, OpAttrs attrs = NoAttrs{}) {
  return std::move(run_op(kind, std::move(inputs), std::move(attrs))[0]);
}

// An operand in a braced list: `run1(k, {std::move(a), b})`. An initializer_list's elements
// are const and would keep a second handle alive until the call returns (defeating in-place
// reuse), so the handle is held in a mutable member and moved out.
struct Operand {
  mutable DynTensor t;
  Operand(DynTensor&& x) : t(std::move(x)) {}  // NOLINT: implicit by design
  Operand(const DynTensor& x) : t(x) {}        // NOLINT
};
// The braced-list forms take the handles straight into the op (no intermediate vector: these
// are the calls of every elementwise op, whose host cost is counted in nanoseconds).
std::vector<DynTensor> run_op(OpKind kind, std::initializer_list<Operand> in, OpAttrs attrs = NoAttrs{});
DynTensor run1(OpKind kind, std::initializer_list<Operand> in, OpAttrs attrs = NoAttrs{});
// A creation op on `device`.
DynTensor create(OpKind kind, CreateAttrs attrs, const Device& device);
// A 0-d tensor holding `s` in `dtype` on `device`.
DynTensor scalar_tensor(Scalar s, DType dtype, const Device& device);
// The dtype PyTorch gives `t op s`.
DType scalar_result_type(const DynTensor& t, Scalar s);
// PyTorch's result_type for two tensors (dimensioned tensors outrank 0-d ones of the same category).
DType result_type(const DynTensor& a, const DynTensor& b);
// Casts to `dt` when needed (moves otherwise).
DynTensor cast_to(DynTensor x, DType dt);
// Float-only ops compute integer and bool inputs in the default float type.
DynTensor to_float(DynTensor x);

}  // namespace ember::detail
