// An elementwise op's maths as one GLSL function, for the eager kernels (elementwise.cpp) and
// the fused ones (fused.cpp), so that each op is written once.
//
//   std::string f = ew_function("f3", OpKind::clamp, DType::f32, ew_literal_attrs(OpKind::clamp, DType::f32, attrs));
//   // "int f3(...)"-like text: `C f3(C x, C y, C z)` (bool for predicates and comparisons),
//   // C the dtype's compute type (glsl::compute_type), A and B the op's scalar attributes.
#pragma once

#include <string>

#include "ember/core/op.hpp"

namespace ember::vulkan {

// GLSL expressions for the attributes a function reads: A and B (ScalarAttrs a and b, in the
// compute type; integer bounds saturated to the dtype as the CPU backend does) and whether pow's
// exponent is one broadcast value (torch's tensor ** scalar fast paths).
struct EwAttrs {
  std::string a, b, scalar_exponent;
};
EwAttrs ew_param_attrs(DType dt);  // read from the kernel's KernelParams (eager kernels)
// Baked in as constants (fused kernels): the same values the eager kernel's parameters hold.
EwAttrs ew_literal_attrs(OpKind k, DType dt, const OpAttrs& attrs, bool scalar_exponent);

// `R name(C x, C y, C z)` computing op k (of the Unary ... Ternary families, not where or cast)
// on values of dtype dt; R is bool for predicates and comparisons, else C.
std::string ew_function(const std::string& name, OpKind k, DType dt, const EwAttrs& attrs);
bool ew_returns_bool(OpKind k);  // predicates and comparisons
int ew_arity(OpKind k);          // operands of the op (1 to 3)
// Whether the eager kernels of this backend take op k on values of dtype dt (the CPU backend's
// restrictions; the device's dtype features are checked apart).
bool ew_allows(OpKind k, DType dt);

}  // namespace ember::vulkan
