// The tensor operations, as free functions over DynTensor (PyTorch semantics and names where
// the issue tracker does not say otherwise). Tensor<D, K> methods forward here.
//
//   DynTensor y = softmax(matmul(x, w) + b, -1);
//   auto [values, indices] = topk(y, 5);
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

using Dims = std::vector<int>;
using Sizes = std::vector<int64_t>;
using TensorPair = std::pair<DynTensor, DynTensor>;

// ---- elementwise unary (integer inputs of float-only ops are computed in f32) ----
#define EMBER_UNARY_DECL(name) DynTensor name(DynTensor x);
EMBER_UNARY_DECL(neg) EMBER_UNARY_DECL(abs) EMBER_UNARY_DECL(sign) EMBER_UNARY_DECL(square)
EMBER_UNARY_DECL(exp) EMBER_UNARY_DECL(exp2) EMBER_UNARY_DECL(expm1) EMBER_UNARY_DECL(log) EMBER_UNARY_DECL(log2)
EMBER_UNARY_DECL(log10) EMBER_UNARY_DECL(log1p) EMBER_UNARY_DECL(sqrt) EMBER_UNARY_DECL(rsqrt)
EMBER_UNARY_DECL(reciprocal) EMBER_UNARY_DECL(sin) EMBER_UNARY_DECL(cos) EMBER_UNARY_DECL(tan)
EMBER_UNARY_DECL(asin) EMBER_UNARY_DECL(acos) EMBER_UNARY_DECL(atan) EMBER_UNARY_DECL(sinh) EMBER_UNARY_DECL(cosh)
EMBER_UNARY_DECL(tanh) EMBER_UNARY_DECL(asinh) EMBER_UNARY_DECL(acosh) EMBER_UNARY_DECL(atanh) EMBER_UNARY_DECL(erf)
EMBER_UNARY_DECL(sigmoid) EMBER_UNARY_DECL(floor) EMBER_UNARY_DECL(ceil) EMBER_UNARY_DECL(round)
EMBER_UNARY_DECL(trunc) EMBER_UNARY_DECL(is_nan) EMBER_UNARY_DECL(is_inf) EMBER_UNARY_DECL(is_finite)
EMBER_UNARY_DECL(relu) EMBER_UNARY_DECL(gelu) EMBER_UNARY_DECL(gelu_tanh) EMBER_UNARY_DECL(silu)
EMBER_UNARY_DECL(hard_sigmoid) EMBER_UNARY_DECL(log_sigmoid) EMBER_UNARY_DECL(bool_not) EMBER_UNARY_DECL(bitwise_not)
EMBER_UNARY_DECL(contiguous)
#undef EMBER_UNARY_DECL

// ---- elementwise binary, with broadcasting and PyTorch type promotion ----
#define EMBER_BINARY_DECL(name)          \
  DynTensor name(DynTensor a, DynTensor b); \
  DynTensor name(DynTensor a, Scalar b);
EMBER_BINARY_DECL(add) EMBER_BINARY_DECL(sub) EMBER_BINARY_DECL(mul) EMBER_BINARY_DECL(div)
EMBER_BINARY_DECL(fmod) EMBER_BINARY_DECL(remainder) EMBER_BINARY_DECL(pow) EMBER_BINARY_DECL(atan2)
EMBER_BINARY_DECL(minimum) EMBER_BINARY_DECL(maximum) EMBER_BINARY_DECL(hypot)
EMBER_BINARY_DECL(equal) EMBER_BINARY_DECL(not_equal) EMBER_BINARY_DECL(greater) EMBER_BINARY_DECL(greater_equal)
EMBER_BINARY_DECL(lower) EMBER_BINARY_DECL(lower_equal)
EMBER_BINARY_DECL(bool_and) EMBER_BINARY_DECL(bool_or) EMBER_BINARY_DECL(bool_xor)
EMBER_BINARY_DECL(bitwise_and) EMBER_BINARY_DECL(bitwise_or) EMBER_BINARY_DECL(bitwise_xor)
EMBER_BINARY_DECL(shift_left) EMBER_BINARY_DECL(shift_right)
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
DynTensor softmax(DynTensor x, int dim);
DynTensor log_softmax(DynTensor x, int dim);

// ---- reductions (dims empty: all elements) ----
DynTensor sum(DynTensor x, Dims dims = {}, bool keepdim = false);
DynTensor mean(DynTensor x, Dims dims = {}, bool keepdim = false);
DynTensor prod(DynTensor x, Dims dims = {}, bool keepdim = false);
DynTensor max(DynTensor x, Dims dims = {}, bool keepdim = false);
DynTensor min(DynTensor x, Dims dims = {}, bool keepdim = false);
DynTensor any(DynTensor x, Dims dims = {}, bool keepdim = false);
DynTensor all(DynTensor x, Dims dims = {}, bool keepdim = false);
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
DynTensor cumsum(DynTensor x, int dim);
DynTensor cumprod(DynTensor x, int dim);
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
};
AdamUpdate adam_step(DynTensor param, DynTensor grad, DynTensor exp_avg, DynTensor exp_avg_sq, const AdamAttrs& a);

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

}  // namespace ember
