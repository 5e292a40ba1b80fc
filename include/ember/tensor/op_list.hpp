// The tensor ops grouped by signature, as X-macro lists. ops.hpp declares the free functions
// from these lists and DynTensor's method forms come from the same lists, so an op added to a
// family gets both `f(x, ...)` and `x.f(...)` from one line here.
//
//   #define X(name) DynTensor name(DynTensor x);
//   EMBER_UNARY_OPS(X)
//   #undef X
#pragma once

// DynTensor f(DynTensor x)
#define EMBER_UNARY_OPS(X)                                                                                          \
  X(neg) X(abs) X(sign) X(square) X(exp) X(exp2) X(expm1) X(log) X(log2) X(log10) X(log1p) X(sqrt) X(rsqrt)       \
  X(reciprocal) X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(asinh) X(acosh) X(atanh)  \
  X(erf) X(sigmoid) X(floor) X(ceil) X(round) X(trunc) X(is_nan) X(is_inf) X(is_finite) X(relu) X(gelu)          \
  X(gelu_tanh) X(silu) X(hard_sigmoid) X(log_sigmoid) X(bool_not) X(bitwise_not) X(contiguous)

// DynTensor f(DynTensor a, DynTensor b) and DynTensor f(DynTensor a, Scalar b), broadcasting
#define EMBER_BINARY_OPS(X)                                                                                      \
  X(add) X(sub) X(mul) X(div) X(fmod) X(remainder) X(pow) X(atan2) X(minimum) X(maximum) X(hypot) X(equal)     \
  X(not_equal) X(greater) X(greater_equal) X(lower) X(lower_equal) X(bool_and) X(bool_or) X(bool_xor)           \
  X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(shift_left) X(shift_right)

// DynTensor f(DynTensor x, Dims dims = {}, bool keepdim = false) and f(x, int dim, keepdim)
#define EMBER_REDUCE_OPS(X) X(sum) X(mean) X(prod) X(any) X(all)
// The same Dims form, without the int one: PyTorch's max(x, dim) returns values and indices,
// which is max_dim here, so `max(x, 1)` must not compile to something else.
#define EMBER_REDUCE_DIMS_ONLY_OPS(X) X(max) X(min)

// DynTensor f(DynTensor x, int dim)
#define EMBER_DIM_OPS(X) X(softmax) X(log_softmax) X(cumsum) X(cumprod)

// PyTorch's spellings of ops that ember names differently: X(family, pytorch_name, ember_name).
// The family picks the signature (ops.hpp: EMBER_ALIAS_<family>); each alias is a real overload
// set that forwards to the ember op, for free functions, DynTensor and Tensor<D, K> methods.
// (`std` is also callable as ember::std(x) or x.std(); an unqualified std(x) after
// `using namespace ember` is ambiguous with namespace std.)
#define EMBER_PYTORCH_ALIASES(X)                                                                  \
  X(BINARY, lt, lower) X(BINARY, le, lower_equal) X(BINARY, gt, greater) X(BINARY, ge, greater_equal) \
  X(BINARY, eq, equal) X(BINARY, ne, not_equal) X(UNARY, logical_not, bool_not)                    \
  X(MASK_FILL, masked_fill, mask_fill) X(STATISTIC, std, stddev)
