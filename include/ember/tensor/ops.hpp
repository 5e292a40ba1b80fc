// The tensor operations, as free functions over DynTensor (PyTorch semantics and names where
// the issue tracker does not say otherwise). Tensor<D, K> methods forward here.
//
//   # DynTensor x = randn({4, 8}), w = randn({8, 16}), b = DynTensor::zeros({16});
//   DynTensor y = softmax(matmul(x, w) + b, -1);
//   auto [values, indices] = topk(y, 5);
//   # run
#pragma once

#include <concepts>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

// ---- elementwise unary (integer inputs of float-only ops are computed in f32) ----
#define EMBER_UNARY_DECL(name) DynTensor name(DynTensor x);
EMBER_UNARY_OPS(EMBER_UNARY_DECL)
#undef EMBER_UNARY_DECL

// ---- elementwise binary, with broadcasting and PyTorch type promotion ----
#define EMBER_BINARY_DECL(name)             \
  DynTensor name(DynTensor a, DynTensor b); \
  DynTensor name(DynTensor a, Scalar b);
EMBER_BINARY_OPS(EMBER_BINARY_DECL)
#undef EMBER_BINARY_DECL
DynTensor sub(Scalar a, DynTensor b);
DynTensor div(Scalar a, DynTensor b);
DynTensor pow(Scalar a, DynTensor b);

DynTensor lerp(DynTensor start, DynTensor end, DynTensor weight);
DynTensor lerp(DynTensor start, DynTensor end, Scalar weight);
DynTensor clamp(DynTensor x, std::optional<Scalar> min, std::optional<Scalar> max);
DynTensor clamp_min(DynTensor x, Scalar min);
DynTensor clamp_max(DynTensor x, Scalar max);
DynTensor where(DynTensor cond, DynTensor a, DynTensor b);  // cond ? a : b
DynTensor mask_fill(DynTensor x, DynTensor mask, Scalar value);    // x with value where mask
DynTensor mask_where(DynTensor x, DynTensor mask, DynTensor value);  // x with value's elements where mask

// ---- activations ----
DynTensor leaky_relu(DynTensor x, double negative_slope = 0.01);
DynTensor prelu(DynTensor x, DynTensor weight);
DynTensor softplus(DynTensor x, double beta = 1, double threshold = 20);
#define EMBER_DIM_DECL(name) DynTensor name(DynTensor x, int dim);
EMBER_DIM_OPS(EMBER_DIM_DECL)
#undef EMBER_DIM_DECL

// ---- reductions (dims empty: all elements) ----
// sum(x, {0, 1}) or sum(x, 1); max and min take dims only (max_dim gives values and indices)
#define EMBER_REDUCE_DECL(name) DynTensor name(DynTensor x, Dims dims = {}, bool keepdim = false);
// (a template, so that a braced `{}` or `{1}` still means Dims)
#define EMBER_REDUCE_INT_DECL(name)                                  \
  EMBER_REDUCE_DECL(name)                                            \
  template <std::integral I>                                         \
  DynTensor name(DynTensor x, I dim, bool keepdim = false) {         \
    return name(std::move(x), Dims{static_cast<int>(dim)}, keepdim); \
  }
EMBER_REDUCE_OPS(EMBER_REDUCE_INT_DECL)
EMBER_REDUCE_DIMS_ONLY_OPS(EMBER_REDUCE_DECL)
#undef EMBER_REDUCE_INT_DECL
#undef EMBER_REDUCE_DECL
DynTensor var(DynTensor x, Dims dims = {}, int64_t correction = 1, bool keepdim = false);
// (named stddev, not std, so that `using namespace ember` cannot make `std` ambiguous)
DynTensor stddev(DynTensor x, Dims dims = {}, int64_t correction = 1, bool keepdim = false);
DynTensor norm(DynTensor x, double p = 2, Dims dims = {}, bool keepdim = false);  // p may be +-inf
DynTensor logsumexp(DynTensor x, Dims dims, bool keepdim = false);
DynTensor argmax(DynTensor x, std::optional<int> dim = std::nullopt, bool keepdim = false);
DynTensor argmin(DynTensor x, std::optional<int> dim = std::nullopt, bool keepdim = false);
TensorPair max_dim(DynTensor x, int dim, bool keepdim = false);  // values, indices
TensorPair min_dim(DynTensor x, int dim, bool keepdim = false);

// ---- scans and sorting ----
TensorPair cummax(DynTensor x, int dim);
TensorPair cummin(DynTensor x, int dim);
TensorPair sort(DynTensor x, int dim = -1, bool descending = false);  // stable
DynTensor argsort(DynTensor x, int dim = -1, bool descending = false);
TensorPair topk(DynTensor x, int64_t k, int dim = -1, bool largest = true);

// ---- linear algebra ----
DynTensor matmul(DynTensor a, DynTensor b);  // torch.matmul rules for 1-d and batched operands
// matmul(a, b) + bias; one op when both are matrices (or batches) and bias is a vector along b's
// columns (on the GPU one GEMM with cuBLASLt's bias epilogue), else the two ops.
DynTensor matmul(DynTensor a, DynTensor b, DynTensor bias);
DynTensor dot(DynTensor a, DynTensor b);
DynTensor outer(DynTensor a, DynTensor b);

// ---- shape and layout ----
struct Slice {  // Python slice semantics: out-of-range bounds are clamped
  std::optional<int64_t> start, end;
  int64_t step = 1;
};
DynTensor reshape(DynTensor x, Sizes shape);  // one -1 allowed
// x.reshape(y.shape()), expand(x, y.shape()): a Shape is a size list too (a template so that a
// braced {2, 3} still means Sizes).
template <std::same_as<Shape> S>
DynTensor reshape(DynTensor x, const S& shape) { return reshape(std::move(x), Sizes(shape.begin(), shape.end())); }
DynTensor flatten(DynTensor x, int start_dim = 0, int end_dim = -1);
DynTensor unsqueeze(DynTensor x, int dim);
DynTensor squeeze(DynTensor x);
DynTensor squeeze(DynTensor x, int dim);
DynTensor permute(DynTensor x, Dims dims);
DynTensor transpose(DynTensor x, int dim0, int dim1);
DynTensor swap_dims(DynTensor x, int dim0, int dim1);
DynTensor movedim(DynTensor x, int source, int destination);
DynTensor movedim(DynTensor x, Dims source, Dims destination);
DynTensor flip(DynTensor x, Dims dims);
DynTensor roll(DynTensor x, Sizes shifts, Dims dims = {});
DynTensor expand(DynTensor x, Sizes shape);  // -1 keeps a dim
template <std::same_as<Shape> S>
DynTensor expand(DynTensor x, const S& shape) { return expand(std::move(x), Sizes(shape.begin(), shape.end())); }
DynTensor repeat(DynTensor x, Sizes repeats);
DynTensor tile(DynTensor x, Sizes reps);
DynTensor narrow(DynTensor x, int dim, int64_t start, int64_t length);
DynTensor slice(DynTensor x, std::vector<Slice> ranges);  // one per leading dim
DynTensor slice_assign(DynTensor x, std::vector<Slice> ranges, DynTensor value);  // value broadcasts
std::vector<DynTensor> chunk(DynTensor x, int64_t chunks, int dim = 0);
std::vector<DynTensor> split(DynTensor x, int64_t split_size, int dim = 0);
std::vector<DynTensor> split(DynTensor x, Sizes sections, int dim = 0);
DynTensor cat(std::vector<DynTensor> xs, int dim = 0);
DynTensor stack(std::vector<DynTensor> xs, int dim = 0);
// pads in PyTorch order: (last dim before, last dim after, second-to-last before, ...)
DynTensor pad(DynTensor x, Sizes pads, PadMode mode = PadMode::constant, double value = 0);
DynTensor tril(DynTensor x, int64_t diagonal = 0);
DynTensor triu(DynTensor x, int64_t diagonal = 0);
DynTensor one_hot(DynTensor indices, int64_t num_classes = -1);

// ---- indexing (indices are i64) ----
DynTensor gather(DynTensor x, int dim, DynTensor index);
DynTensor scatter(DynTensor x, int dim, DynTensor index, DynTensor src);
DynTensor scatter_add(DynTensor x, int dim, DynTensor index, DynTensor src);
DynTensor select(DynTensor x, int dim, int64_t index);  // removes dim
DynTensor select_assign(DynTensor x, int dim, DynTensor index, DynTensor src);  // index_copy
DynTensor select_add(DynTensor x, int dim, DynTensor index, DynTensor src);     // index_add
DynTensor index_select(DynTensor x, int dim, DynTensor index);
DynTensor take(DynTensor x, DynTensor index);  // flat indices; negative ones count from the end
DynTensor nonzero(DynTensor x);   // [n, rank] i64
DynTensor argwhere(DynTensor x);  // same as nonzero
DynTensor masked_select(DynTensor x, DynTensor mask);

// ---- dtype and device ----
DynTensor cast(DynTensor x, DType dtype);
DynTensor to_device(DynTensor x, const Device& d);

// ---- neural-network primitives ----
struct ConvOptions {  // a single value applies to every spatial dim
  Sizes stride{1}, padding{0}, dilation{1}, output_padding{0};
  int64_t groups = 1;
};
DynTensor conv1d(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {}, ConvOptions o = {});
DynTensor conv2d(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {}, ConvOptions o = {});
DynTensor conv3d(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {}, ConvOptions o = {});
DynTensor conv_transpose1d(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {}, ConvOptions o = {});
DynTensor conv_transpose2d(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {}, ConvOptions o = {});
DynTensor conv_transpose3d(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {}, ConvOptions o = {});
struct PoolOptions {  // empty stride = kernel size
  Sizes kernel_size{}, stride{}, padding{0}, dilation{1};
  bool ceil_mode = false, count_include_pad = true;
};
DynTensor avg_pool1d(DynTensor x, PoolOptions o);
DynTensor avg_pool2d(DynTensor x, PoolOptions o);
DynTensor max_pool1d(DynTensor x, PoolOptions o);
DynTensor max_pool2d(DynTensor x, PoolOptions o);
TensorPair max_pool1d_with_indices(DynTensor x, PoolOptions o);
TensorPair max_pool2d_with_indices(DynTensor x, PoolOptions o);
DynTensor adaptive_avg_pool1d(DynTensor x, int64_t output_size);
DynTensor adaptive_avg_pool2d(DynTensor x, Sizes output_size);
DynTensor interpolate(DynTensor x, Sizes size, InterpMode mode = InterpMode::nearest, bool align_corners = false);
DynTensor embedding(DynTensor weight, DynTensor indices);
DynTensor layer_norm(DynTensor x, Sizes normalized_shape, std::optional<DynTensor> weight = {},
                     std::optional<DynTensor> bias = {}, double eps = 1e-5);
DynTensor batch_norm(DynTensor x, DynTensor running_mean, DynTensor running_var,
                     std::optional<DynTensor> weight = {}, std::optional<DynTensor> bias = {}, double eps = 1e-5);
DynTensor scaled_dot_product_attention(DynTensor q, DynTensor k, DynTensor v, std::optional<DynTensor> mask = {},
                                       bool is_causal = false, std::optional<double> scale = std::nullopt);
// Softmax cross-entropy of rows in one fused op (nn::cross_entropy's common case): logits
// [N, C], i64 targets [N]. loss[n] = logsumexp(logits[n]) - logits[n, target[n]], 0 where
// target[n] == ignore_index; valid[n] = 1 where the target counts, else 0 (the logits' dtype, no
// gradient). A target outside [0, C) that is not ignore_index is an error.
struct CrossEntropyRows {
  DynTensor loss, valid;
};
CrossEntropyRows cross_entropy_rows(DynTensor logits, DynTensor target, int64_t ignore_index = -100);

// ---- fused optimizer updates ----
// One Adam / AdamW update of a parameter in one kernel (torch.optim.Adam's formulas with
// amsgrad off; `a.step` counts updates from 1). Returns the new param, exp_avg, exp_avg_sq.
struct AdamUpdate {
  DynTensor param, exp_avg, exp_avg_sq;
  DynTensor step;  // the device-scalar form's new step count (undefined otherwise)
};
AdamUpdate adam_step(DynTensor param, DynTensor grad, DynTensor exp_avg, DynTensor exp_avg_sq, const AdamAttrs& a);
// The same update with its learning rate and step count read on the device (torch.optim's
// capturable=True), so that a recorded graph replays it with the values of each replay: `lr` and
// `step` are f32 0-d tensors on the parameter's device, the learning rate used is a.lr * lr (a.lr
// is a group's lr_scale) and the step step + 1, which is also returned (a.step is not used).
AdamUpdate adam_step(DynTensor param, DynTensor grad, DynTensor exp_avg, DynTensor exp_avg_sq, const AdamAttrs& a,
                     DynTensor lr, DynTensor step);

// ---- PyTorch's names (the table is EMBER_PYTORCH_ALIASES in op_list.hpp) ----
#define EMBER_ALIAS_UNARY(alias, name) \
  inline DynTensor alias(DynTensor x) { return name(std::move(x)); }
#define EMBER_ALIAS_BINARY(alias, name)                                                   \
  inline DynTensor alias(DynTensor a, DynTensor b) { return name(std::move(a), std::move(b)); } \
  inline DynTensor alias(DynTensor a, Scalar b) { return name(std::move(a), b); }
#define EMBER_ALIAS_MASK_FILL(alias, name) \
  inline DynTensor alias(DynTensor x, DynTensor mask, Scalar value) { return name(std::move(x), std::move(mask), value); }
#define EMBER_ALIAS_STATISTIC(alias, name)                                                    \
  inline DynTensor alias(DynTensor x, Dims dims = {}, int64_t correction = 1, bool keepdim = false) { \
    return name(std::move(x), std::move(dims), correction, keepdim);                           \
  }
#define EMBER_ALIAS(family, alias, name) EMBER_ALIAS_##family(alias, name)
EMBER_PYTORCH_ALIASES(EMBER_ALIAS)
#undef EMBER_ALIAS

// ---- creation, PyTorch style ----
template <class T>
DynTensor from_vector(const std::vector<T>& v, Shape shape, const Device& d = Device::default_device()) {
  return DynTensor::from_vector(v, std::move(shape), d);
}
template <class T>  // from_vector({1.f, 2.f}, {2}) is f32; from_vector({1, 2}, {2}) is i32
DynTensor from_vector(std::initializer_list<T> v, Shape shape, const Device& d = Device::default_device()) {
  return DynTensor::from_vector(std::vector<T>(v), std::move(shape), d);
}
inline DynTensor randn(Shape shape, DType dtype = kDefaultFloat, const Device& d = Device::default_device()) {
  return DynTensor::normal(std::move(shape), 0, 1, dtype, d);
}
inline DynTensor rand(Shape shape, DType dtype = kDefaultFloat, const Device& d = Device::default_device()) {
  return DynTensor::uniform(std::move(shape), 0, 1, dtype, d);
}
// x's shape, dtype and device (a dtype may be given, as torch's dtype= argument)
inline DynTensor full_like(const DynTensor& x, Scalar value, std::optional<DType> dtype = std::nullopt) {
  return DynTensor::full(x.shape(), value, dtype.value_or(x.dtype()), x.device());
}
inline DynTensor zeros_like(const DynTensor& x, std::optional<DType> dtype = std::nullopt) {
  return full_like(x, 0, dtype);
}
inline DynTensor ones_like(const DynTensor& x, std::optional<DType> dtype = std::nullopt) {
  return full_like(x, 1, dtype);
}
inline DynTensor rand_like(const DynTensor& x, std::optional<DType> dtype = std::nullopt) {
  return DynTensor::uniform(x.shape(), 0, 1, dtype.value_or(x.dtype()), x.device());
}
inline DynTensor randn_like(const DynTensor& x, std::optional<DType> dtype = std::nullopt) {
  return DynTensor::normal(x.shape(), 0, 1, dtype.value_or(x.dtype()), x.device());
}

// ---- indexing, PyTorch style: y.index({Slice(), 0}), y.index({mask}) ----
struct TensorIndex {
  enum class Kind { integer, slice, mask } kind;
  int64_t integer = 0;
  Slice slice{};
  DynTensor mask{};
  template <std::integral I>
  TensorIndex(I i) : kind(Kind::integer), integer(static_cast<int64_t>(i)) {}  // NOLINT: implicit by design
  TensorIndex(Slice s) : kind(Kind::slice), slice(s) {}                        // NOLINT
  TensorIndex(DynTensor m) : kind(Kind::mask), mask(std::move(m)) {}          // NOLINT
};
// Integers remove their dim, slices keep it; a bool mask must be the only index (masked_select).
DynTensor index(DynTensor x, std::initializer_list<TensorIndex> indices);

// ---- operators ----
inline DynTensor operator+(DynTensor a, DynTensor b) { return add(std::move(a), std::move(b)); }
inline DynTensor operator-(DynTensor a, DynTensor b) { return sub(std::move(a), std::move(b)); }
inline DynTensor operator*(DynTensor a, DynTensor b) { return mul(std::move(a), std::move(b)); }
inline DynTensor operator/(DynTensor a, DynTensor b) { return div(std::move(a), std::move(b)); }
inline DynTensor operator+(DynTensor a, Scalar b) { return add(std::move(a), b); }
inline DynTensor operator-(DynTensor a, Scalar b) { return sub(std::move(a), b); }
inline DynTensor operator*(DynTensor a, Scalar b) { return mul(std::move(a), b); }
inline DynTensor operator/(DynTensor a, Scalar b) { return div(std::move(a), b); }
inline DynTensor operator+(Scalar a, DynTensor b) { return add(std::move(b), a); }
inline DynTensor operator-(Scalar a, DynTensor b) { return sub(a, std::move(b)); }
inline DynTensor operator*(Scalar a, DynTensor b) { return mul(std::move(b), a); }
inline DynTensor operator/(Scalar a, DynTensor b) { return div(a, std::move(b)); }
inline DynTensor operator-(DynTensor a) { return neg(std::move(a)); }
inline DynTensor operator!(DynTensor a) { return bool_not(std::move(a)); }
inline DynTensor operator~(DynTensor a) { return bitwise_not(std::move(a)); }
// Compound assignment computes a new value and rebinds the handle (other handles keep theirs).
#define EMBER_COMPOUND(op, name)                                                                         \
  inline DynTensor& operator op##=(DynTensor& a, DynTensor b) { return a = name(std::move(a), std::move(b)); } \
  inline DynTensor& operator op##=(DynTensor& a, Scalar b) { return a = name(std::move(a), b); }
EMBER_COMPOUND(+, add) EMBER_COMPOUND(-, sub) EMBER_COMPOUND(*, mul) EMBER_COMPOUND(/, div)
#undef EMBER_COMPOUND
// Element-wise comparisons give bool tensors, as in PyTorch (not one bool: use equal(a, b).all()).
#define EMBER_COMPARE(op, name, mirrored)                                                       \
  inline DynTensor operator op(DynTensor a, DynTensor b) { return name(std::move(a), std::move(b)); } \
  inline DynTensor operator op(DynTensor a, Scalar b) { return name(std::move(a), b); }         \
  inline DynTensor operator op(Scalar a, DynTensor b) { return mirrored(std::move(b), a); }
EMBER_COMPARE(==, equal, equal) EMBER_COMPARE(!=, not_equal, not_equal) EMBER_COMPARE(<, lower, greater)
EMBER_COMPARE(<=, lower_equal, greater_equal) EMBER_COMPARE(>, greater, lower)
EMBER_COMPARE(>=, greater_equal, lower_equal)
#undef EMBER_COMPARE
// &, |, ^: logical on two bool tensors (masks), bitwise otherwise, as in PyTorch.
#define EMBER_LOGIC(op, logical, bitwise)                                             \
  inline DynTensor operator op(DynTensor a, DynTensor b) {                             \
    bool both_bool = a.dtype() == DType::boolean && b.dtype() == DType::boolean;      \
    return both_bool ? logical(std::move(a), std::move(b)) : bitwise(std::move(a), std::move(b)); \
  }
EMBER_LOGIC(&, bool_and, bitwise_and) EMBER_LOGIC(|, bool_or, bitwise_or) EMBER_LOGIC(^, bool_xor, bitwise_xor)
#undef EMBER_LOGIC

// ---- DynTensor's method forms (declared in dyn_tensor.hpp from the same lists) ----
#define EMBER_METHOD_UNARY(name) \
  inline DynTensor DynTensor::name() const { return ember::name(*this); }
#define EMBER_METHOD_BINARY(name)                                                                      \
  inline DynTensor DynTensor::name(const DynTensor& other) const { return ember::name(*this, other); } \
  inline DynTensor DynTensor::name(Scalar other) const { return ember::name(*this, other); }
#define EMBER_METHOD_REDUCE(name) \
  inline DynTensor DynTensor::name(Dims dims, bool keepdim) const { return ember::name(*this, std::move(dims), keepdim); }
#define EMBER_METHOD_DIM(name) \
  inline DynTensor DynTensor::name(int dim) const { return ember::name(*this, dim); }
#define EMBER_METHOD_MASK_FILL(name)                                          \
  inline DynTensor DynTensor::name(const DynTensor& mask, Scalar value) const { \
    return ember::name(*this, mask, value);                                    \
  }
#define EMBER_METHOD_STATISTIC(name)                                                         \
  inline DynTensor DynTensor::name(Dims dims, int64_t correction, bool keepdim) const {      \
    return ember::name(*this, std::move(dims), correction, keepdim);                        \
  }
#define EMBER_METHOD_ALIAS(family, alias, name) EMBER_METHOD_##family(alias)
EMBER_UNARY_OPS(EMBER_METHOD_UNARY)
EMBER_BINARY_OPS(EMBER_METHOD_BINARY)
EMBER_REDUCE_OPS(EMBER_METHOD_REDUCE)
EMBER_REDUCE_DIMS_ONLY_OPS(EMBER_METHOD_REDUCE)
EMBER_DIM_OPS(EMBER_METHOD_DIM)
EMBER_PYTORCH_ALIASES(EMBER_METHOD_ALIAS)
EMBER_METHOD_MASK_FILL(mask_fill)
EMBER_METHOD_STATISTIC(var)
EMBER_METHOD_STATISTIC(stddev)
#undef EMBER_METHOD_UNARY
#undef EMBER_METHOD_BINARY
#undef EMBER_METHOD_REDUCE
#undef EMBER_METHOD_DIM
#undef EMBER_METHOD_MASK_FILL
#undef EMBER_METHOD_STATISTIC
#undef EMBER_METHOD_ALIAS
inline TensorPair DynTensor::max_dim(int dim, bool keepdim) const { return ember::max_dim(*this, dim, keepdim); }
inline TensorPair DynTensor::min_dim(int dim, bool keepdim) const { return ember::min_dim(*this, dim, keepdim); }
inline DynTensor DynTensor::argmax(std::optional<int> dim, bool keepdim) const { return ember::argmax(*this, dim, keepdim); }
inline DynTensor DynTensor::argmin(std::optional<int> dim, bool keepdim) const { return ember::argmin(*this, dim, keepdim); }
inline DynTensor DynTensor::logsumexp(Dims dims, bool keepdim) const { return ember::logsumexp(*this, std::move(dims), keepdim); }
inline DynTensor DynTensor::norm(double p, Dims dims, bool keepdim) const { return ember::norm(*this, p, std::move(dims), keepdim); }
inline DynTensor DynTensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return ember::clamp(*this, min, max);
}
inline DynTensor DynTensor::matmul(const DynTensor& other) const { return ember::matmul(*this, other); }
inline DynTensor DynTensor::reshape(Sizes shape) const { return ember::reshape(*this, std::move(shape)); }
inline DynTensor DynTensor::flatten(int start_dim, int end_dim) const { return ember::flatten(*this, start_dim, end_dim); }
inline DynTensor DynTensor::unsqueeze(int dim) const { return ember::unsqueeze(*this, dim); }
inline DynTensor DynTensor::squeeze() const { return ember::squeeze(*this); }
inline DynTensor DynTensor::squeeze(int dim) const { return ember::squeeze(*this, dim); }
inline DynTensor DynTensor::permute(Dims dims) const { return ember::permute(*this, std::move(dims)); }
inline DynTensor DynTensor::transpose(int dim0, int dim1) const { return ember::transpose(*this, dim0, dim1); }
inline DynTensor DynTensor::t() const { return rank() < 2 ? *this : ember::transpose(*this, 0, 1); }
inline DynTensor DynTensor::expand(Sizes shape) const { return ember::expand(*this, std::move(shape)); }
inline DynTensor DynTensor::repeat(Sizes repeats) const { return ember::repeat(*this, std::move(repeats)); }
inline DynTensor DynTensor::flip(Dims dims) const { return ember::flip(*this, std::move(dims)); }
inline DynTensor DynTensor::narrow(int dim, int64_t start, int64_t length) const {
  return ember::narrow(*this, dim, start, length);
}
inline DynTensor DynTensor::select(int dim, int64_t index) const { return ember::select(*this, dim, index); }
inline DynTensor DynTensor::gather(int dim, const DynTensor& index) const { return ember::gather(*this, dim, index); }
inline DynTensor DynTensor::index_select(int dim, const DynTensor& index) const {
  return ember::index_select(*this, dim, index);
}
inline DynTensor DynTensor::masked_select(const DynTensor& mask) const { return ember::masked_select(*this, mask); }
inline TensorPair DynTensor::sort(int dim, bool descending) const { return ember::sort(*this, dim, descending); }
inline TensorPair DynTensor::topk(int64_t k, int dim, bool largest) const { return ember::topk(*this, k, dim, largest); }
inline std::vector<DynTensor> DynTensor::chunk(int64_t chunks, int dim) const { return ember::chunk(*this, chunks, dim); }
inline std::vector<DynTensor> DynTensor::split(int64_t split_size, int dim) const {
  return ember::split(*this, split_size, dim);
}
inline DynTensor DynTensor::operator[](int64_t index) const { return ember::select(*this, 0, index); }
inline DynTensor DynTensor::operator[](const DynTensor& mask) const { return ember::masked_select(*this, mask); }
inline DynTensor DynTensor::index(std::initializer_list<TensorIndex> indices) const { return ember::index(*this, indices); }

}  // namespace ember
