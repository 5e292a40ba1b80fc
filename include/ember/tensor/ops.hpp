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
DynTensor sub(Scalar a, DynTensor b);  // the scalar minus each element (torch.rsub)
DynTensor div(Scalar a, DynTensor b);  // the scalar over each element; integers divide in f32
DynTensor pow(Scalar a, DynTensor b);  // the scalar raised to each element

// start + weight * (end - start), broadcasting (torch.lerp); floating dtypes only.
DynTensor lerp(DynTensor start, DynTensor end, DynTensor weight);
DynTensor lerp(DynTensor start, DynTensor end, Scalar weight);  // one weight for every element
// Each element limited to [min, max], a missing bound not applied (torch.clamp); a float bound makes an
// integer tensor f32. Error when both bounds are missing.
DynTensor clamp(DynTensor x, std::optional<Scalar> min, std::optional<Scalar> max);
DynTensor clamp_min(DynTensor x, Scalar min);  // clamp(x, min, nullopt)
DynTensor clamp_max(DynTensor x, Scalar max);  // clamp(x, nullopt, max)
DynTensor where(DynTensor cond, DynTensor a, DynTensor b);  // cond ? a : b
DynTensor mask_fill(DynTensor x, DynTensor mask, Scalar value);    // x with value where mask
DynTensor mask_where(DynTensor x, DynTensor mask, DynTensor value);  // x with value's elements where mask

// ---- activations ----
// x where x >= 0, else negative_slope * x (torch.nn.functional.leaky_relu).
DynTensor leaky_relu(DynTensor x, double negative_slope = 0.01);
DynTensor prelu(DynTensor x, DynTensor weight);  // x where x >= 0, else weight * x; weight: 1 or C (dim 1) values
// log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (torch.nn.functional.softplus).
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
// Variance over `dims` (empty: all) with Bessel's `correction` (torch.var); floating tensors only.
DynTensor var(DynTensor x, Dims dims = {}, int64_t correction = 1, bool keepdim = false);
// Standard deviation over `dims` with `correction` (torch.std); floating tensors only.
// (named stddev, not std, so that `using namespace ember` cannot make `std` ambiguous)
DynTensor stddev(DynTensor x, Dims dims = {}, int64_t correction = 1, bool keepdim = false);
DynTensor norm(DynTensor x, double p = 2, Dims dims = {}, bool keepdim = false);  // p may be +-inf
DynTensor logsumexp(DynTensor x, Dims dims, bool keepdim = false);  // log(sum(exp(x))) over dims, computed stably
// i64 index of the maximum along `dim`, or into the flattened tensor without a dim (torch.argmax); the first
// on ties, a NaN counting as the maximum.
DynTensor argmax(DynTensor x, std::optional<int> dim = std::nullopt, bool keepdim = false);
// i64 index of the minimum, as argmax (torch.argmin).
DynTensor argmin(DynTensor x, std::optional<int> dim = std::nullopt, bool keepdim = false);
TensorPair max_dim(DynTensor x, int dim, bool keepdim = false);  // values, indices
TensorPair min_dim(DynTensor x, int dim, bool keepdim = false);  // values, indices (torch.min with a dim)

// ---- scans and sorting ----
// Running maximum along `dim` and the i64 index where each was reached (torch.cummax).
TensorPair cummax(DynTensor x, int dim);
TensorPair cummin(DynTensor x, int dim);  // running minimum and its indices (torch.cummin)
TensorPair sort(DynTensor x, int dim = -1, bool descending = false);  // stable
DynTensor argsort(DynTensor x, int dim = -1, bool descending = false);  // the indices of sort(x, dim, descending)
// The k largest (smallest when !largest) values along `dim`, in order, and their i64 indices (torch.topk).
TensorPair topk(DynTensor x, int64_t k, int dim = -1, bool largest = true);

// ---- linear algebra ----
DynTensor matmul(DynTensor a, DynTensor b);  // torch.matmul rules for 1-d and batched operands
// matmul(a, b) + bias; one op when both are matrices (or batches) and bias is a vector along b's
// columns (on the GPU one GEMM with cuBLASLt's bias epilogue), else the two ops.
DynTensor matmul(DynTensor a, DynTensor b, DynTensor bias);
DynTensor dot(DynTensor a, DynTensor b);  // inner product of two 1-d tensors of one size: 0-d
DynTensor outer(DynTensor a, DynTensor b);  // [n] and [m] -> [n, m] of a[i] * b[j] (torch.outer)

// ---- shape and layout ----
// A range of one dim for slice() and index(): start, end (exclusive) and step, as in Python.
struct Slice {  // Python slice semantics: out-of-range bounds are clamped
  std::optional<int64_t> start, end;  // absent: the dim's bounds; negative: from the end
  int64_t step = 1;  // positive
};
DynTensor reshape(DynTensor x, Sizes shape);  // one -1 allowed
// x.reshape(y.shape()), expand(x, y.shape()): a Shape is a size list too (a template so that a
// braced {2, 3} still means Sizes).
template <std::same_as<Shape> S>
DynTensor reshape(DynTensor x, const S& shape) { return reshape(std::move(x), Sizes(shape.begin(), shape.end())); }
DynTensor flatten(DynTensor x, int start_dim = 0, int end_dim = -1);  // dims start_dim..end_dim merged into one
DynTensor unsqueeze(DynTensor x, int dim);  // a new dim of size 1 at `dim` of the result
DynTensor squeeze(DynTensor x);  // every dim of size 1 removed
DynTensor squeeze(DynTensor x, int dim);  // `dim` removed when its size is 1, else x
DynTensor permute(DynTensor x, Dims dims);  // dim i of the result is dim dims[i] of x; a view
DynTensor transpose(DynTensor x, int dim0, int dim1);  // dims dim0 and dim1 swapped; a view
DynTensor swap_dims(DynTensor x, int dim0, int dim1);  // same as transpose
DynTensor movedim(DynTensor x, int source, int destination);  // `source` moved to `destination`, the others in order
DynTensor movedim(DynTensor x, Dims source, Dims destination);  // several dims at once (torch.movedim)
DynTensor flip(DynTensor x, Dims dims);  // the order reversed along `dims` (torch.flip)
// Elements shifted by shifts[i] along dims[i], wrapping around (torch.roll); without dims, one shift of the
// flattened tensor.
DynTensor roll(DynTensor x, Sizes shifts, Dims dims = {});
DynTensor expand(DynTensor x, Sizes shape);  // -1 keeps a dim
// expand(x, y.shape()).
template <std::same_as<Shape> S>
DynTensor expand(DynTensor x, const S& shape) { return expand(std::move(x), Sizes(shape.begin(), shape.end())); }
DynTensor repeat(DynTensor x, Sizes repeats);  // x tiled repeats[i] times along dim i; a copy
DynTensor tile(DynTensor x, Sizes reps);  // repeat, missing leading reps being 1 (torch.tile)
// `length` elements of `dim` from `start` (negative: from the end), a view (torch.narrow).
DynTensor narrow(DynTensor x, int dim, int64_t start, int64_t length);
DynTensor slice(DynTensor x, std::vector<Slice> ranges);  // one per leading dim
DynTensor slice_assign(DynTensor x, std::vector<Slice> ranges, DynTensor value);  // value broadcasts
// At most `chunks` views along `dim` of ceil(size / chunks) elements, the last one smaller (torch.chunk).
std::vector<DynTensor> chunk(DynTensor x, int64_t chunks, int dim = 0);
// Views of `split_size` elements along `dim`, the last one smaller (torch.split).
std::vector<DynTensor> split(DynTensor x, int64_t split_size, int dim = 0);
// Views of sections[i] elements along `dim`; the sections must add up to the dim's size.
std::vector<DynTensor> split(DynTensor x, Sizes sections, int dim = 0);
// Concatenation along `dim` of tensors equal in the other dims, promoted to one dtype (torch.cat).
DynTensor cat(std::vector<DynTensor> xs, int dim = 0);
// Tensors of one shape stacked along a new dim `dim` (torch.stack).
DynTensor stack(std::vector<DynTensor> xs, int dim = 0);
// pads in PyTorch order: (last dim before, last dim after, second-to-last before, ...)
DynTensor pad(DynTensor x, Sizes pads, PadMode mode = PadMode::constant, double value = 0);
DynTensor tril(DynTensor x, int64_t diagonal = 0);  // zeros above the diagonal (torch.tril)
DynTensor triu(DynTensor x, int64_t diagonal = 0);  // zeros below the diagonal (torch.triu)
// i64 [..., num_classes] with a 1 at each index (torch.nn.functional.one_hot); i64 indices, and
// num_classes < 0 means the largest index + 1.
DynTensor one_hot(DynTensor indices, int64_t num_classes = -1);

// ---- indexing (indices are i64) ----
// The entries of x along `dim` named by `index` (x's rank; it gives the shape of the result), as torch.gather.
DynTensor gather(DynTensor x, int dim, DynTensor index);
// x with src's elements written along `dim` at the positions `index` names (torch.scatter); a new tensor.
DynTensor scatter(DynTensor x, int dim, DynTensor index, DynTensor src);
// x with src's elements added along `dim` at the positions `index` names, repeats adding up (torch.scatter_add).
DynTensor scatter_add(DynTensor x, int dim, DynTensor index, DynTensor src);
DynTensor select(DynTensor x, int dim, int64_t index);  // removes dim
DynTensor select_assign(DynTensor x, int dim, DynTensor index, DynTensor src);  // index_copy
DynTensor select_add(DynTensor x, int dim, DynTensor index, DynTensor src);     // index_add
DynTensor index_select(DynTensor x, int dim, DynTensor index);  // entries `index` (1-d) of `dim`
DynTensor take(DynTensor x, DynTensor index);  // flat indices; negative ones count from the end
DynTensor nonzero(DynTensor x);   // [n, rank] i64
DynTensor argwhere(DynTensor x);  // same as nonzero
DynTensor masked_select(DynTensor x, DynTensor mask);  // 1-d: x's elements where mask (broadcast) is true

// ---- dtype and device ----
// x converted to `dtype` with PyTorch's rules (x itself when it has that dtype).
DynTensor cast(DynTensor x, DType dtype);
DynTensor to_device(DynTensor x, const Device& d);  // x.to(d)

// ---- neural-network primitives ----
// Options of conv1d to conv_transpose3d, named as PyTorch's arguments.
struct ConvOptions {  // a single value applies to every spatial dim
  Sizes stride{1}, padding{0}, dilation{1}, output_padding{0};  // output_padding: transposed ones only
  int64_t groups = 1;  // channels split into groups
};
// Convolution of x [N, C, L] with weight [out, C / groups, k] and an optional bias [out]
// (torch.nn.functional.conv1d); floating dtypes.
DynTensor conv1d(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {}, ConvOptions o = {});
// The same over x [N, C, H, W] with weight [out, C / groups, kH, kW] (torch.nn.functional.conv2d).
DynTensor conv2d(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {}, ConvOptions o = {});
// The same over x [N, C, D, H, W] with weight [out, C / groups, kD, kH, kW] (torch.nn.functional.conv3d).
DynTensor conv3d(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {}, ConvOptions o = {});
// What conv_fused does after the bias, in the same kernel: adds `residual` (when given; the output's
// shape and dtype), then clamps to [min, max] (a missing bound is not applied; NaN stays NaN).
// ReLU: {.min = 0}; ReLU6: {.min = 0, .max = 6}.
struct ConvEpilogue {
  std::optional<DynTensor> residual;  // added to the conv's output (bias included); the output's shape
  std::optional<double> min;          // the clamp's lower bound (none: not applied)
  std::optional<double> max;          // the clamp's upper bound (none: not applied)
};
// conv1d / conv2d / conv3d (by x's rank) followed by an epilogue in one kernel, as inference runtimes
// fuse a conv with the ReLU and the residual add after it (ONNX Runtime's FusedConv):
// clamp(conv(x, weight) + bias + residual, min, max). Differentiable like the unfused ops.
DynTensor conv_fused(DynTensor x, DynTensor weight, std::optional<DynTensor> bias, ConvOptions o, ConvEpilogue e);
// Transposed convolution of x [N, C, L] with weight [C, out / groups, k] (torch.nn.functional.conv_transpose1d).
DynTensor conv_transpose1d(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {}, ConvOptions o = {});
// The same over x [N, C, H, W] (torch.nn.functional.conv_transpose2d).
DynTensor conv_transpose2d(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {}, ConvOptions o = {});
// The same over x [N, C, D, H, W] (torch.nn.functional.conv_transpose3d).
DynTensor conv_transpose3d(DynTensor x, DynTensor weight, std::optional<DynTensor> bias = {}, ConvOptions o = {});
// Options of the pooling ops, named as PyTorch's arguments (one value or one per spatial dim); kernel_size is required.
struct PoolOptions {  // empty stride = kernel size
  Sizes kernel_size{}, stride{}, padding{0}, dilation{1};  // dilation: the spacing of a window's elements
  // ceil_mode: output sizes rounded up instead of down
  bool ceil_mode = false, count_include_pad = true;  // count_include_pad: avg_pool counts padding in its divisor
};
// Window averages of x [N, C, L] or [C, L] (torch.nn.functional.avg_pool1d); floating dtypes.
DynTensor avg_pool1d(DynTensor x, PoolOptions o);
// Window averages of x [N, C, H, W] or [C, H, W] (torch.nn.functional.avg_pool2d).
DynTensor avg_pool2d(DynTensor x, PoolOptions o);
// Window maxima (torch.nn.functional.max_pool1d / max_pool2d, return_indices=False): the values
// alone, so the kernels skip the argmax (under autodiff with grad, the indices are kept for backward).
DynTensor max_pool1d(DynTensor x, PoolOptions o);
DynTensor max_pool2d(DynTensor x, PoolOptions o);  // the same in 2-d
// Window maxima and their i64 indices, flat within each input plane (return_indices=True).
TensorPair max_pool1d_with_indices(DynTensor x, PoolOptions o);
TensorPair max_pool2d_with_indices(DynTensor x, PoolOptions o);  // the same in 2-d
// Averages of `output_size` equal bins of the last dim (torch.nn.functional.adaptive_avg_pool1d).
DynTensor adaptive_avg_pool1d(DynTensor x, int64_t output_size);
// The same over H and W; output_size has 1 or 2 values (torch.nn.functional.adaptive_avg_pool2d).
DynTensor adaptive_avg_pool2d(DynTensor x, Sizes output_size);
// x [N, C, ...] resized to `size` in its spatial dims (torch.nn.functional.interpolate); integers become f32.
// Linear and cubic modes take 1 or 2 spatial dims, and only they take align_corners.
DynTensor interpolate(DynTensor x, Sizes size, InterpMode mode = InterpMode::nearest, bool align_corners = false);
DynTensor embedding(DynTensor weight, DynTensor indices);  // weight's rows at indices: indices' shape + [dim]
// The trailing dims `normalized_shape` normalised to mean 0 and variance 1, then scaled by weight and shifted
// by bias (torch.nn.functional.layer_norm); floating dtypes.
DynTensor layer_norm(DynTensor x, Sizes normalized_shape, std::optional<DynTensor> weight = {},
                     std::optional<DynTensor> bias = {}, double eps = 1e-5);
// x [N, C, ...] normalised per channel with the given running statistics, then scaled by weight and shifted
// by bias, all [C]: inference mode (torch.nn.functional.batch_norm with training=False).
DynTensor batch_norm(DynTensor x, DynTensor running_mean, DynTensor running_var,
                     std::optional<DynTensor> weight = {}, std::optional<DynTensor> bias = {}, double eps = 1e-5);
// softmax(q k^T * scale + mask) v for q [..., L, E], k [..., S, E], v [..., S, Ev]
// (torch.nn.functional.scaled_dot_product_attention). A bool mask keeps its true entries, a float one is
// added; is_causal hides the keys after each query; scale defaults to 1 / sqrt(E).
DynTensor scaled_dot_product_attention(DynTensor q, DynTensor k, DynTensor v, std::optional<DynTensor> mask = {},
                                       bool is_causal = false, std::optional<double> scale = std::nullopt);
// Softmax cross-entropy of rows in one fused op (nn::cross_entropy's common case): logits
// [N, C], i64 targets [N]. loss[n] = logsumexp(logits[n]) - logits[n, target[n]], 0 where
// target[n] == ignore_index; valid[n] = 1 where the target counts, else 0 (loss's dtype: f32, f64
// for f64 logits; no gradient). A target outside [0, C) that is not ignore_index is an error.
struct CrossEntropyRows {
  // loss: [N], f32 (f64 for f64 logits)
  DynTensor loss, valid;  // valid: [N], loss's dtype
};
// The fused op of CrossEntropyRows for `logits` [N, C] and i64 `target` [N].
CrossEntropyRows cross_entropy_rows(DynTensor logits, DynTensor target, int64_t ignore_index = -100);

// ---- fused optimizer updates ----
// One Adam / AdamW update of a parameter in one kernel (torch.optim.Adam's formulas with
// amsgrad off; `a.step` counts updates from 1). Returns the new param, exp_avg, exp_avg_sq.
struct AdamUpdate {
  // param, exp_avg: the updated parameter and first moment estimate
  DynTensor param, exp_avg, exp_avg_sq;  // exp_avg_sq: the updated second moment estimate
  DynTensor step;  // the device-scalar form's new step count (undefined otherwise)
};
// One update (AdamUpdate) of `param` from its gradient, with the hyper-parameters and step count of `a`.
AdamUpdate adam_step(DynTensor param, DynTensor grad, DynTensor exp_avg, DynTensor exp_avg_sq, const AdamAttrs& a);
// The same update with its learning rate and step count read on the device (torch.optim's
// capturable=True), so that a recorded graph replays it with the values of each replay: `lr` and
// `step` are f32 0-d tensors on the parameter's device, the learning rate used is a.lr * lr (a.lr
// is a group's lr_scale) and the step step + 1, which is also returned (a.step is not used).
AdamUpdate adam_step(DynTensor param, DynTensor grad, DynTensor exp_avg, DynTensor exp_avg_sq, const AdamAttrs& a,
                     DynTensor lr, DynTensor step);
// The updates of several parameters in one op (torch.optim's fused=True): result i is
// adam_step(params[i], grads[i], exp_avgs[i], exp_avg_sqs[i], a), all with the hyper-parameters
// and step count of `a`. The parameters share a dtype and a device; CUDA updates up to 32 tensors
// in each launch. Throws an Error when the four lists differ in length or are empty.
std::vector<AdamUpdate> adam_step_multi(std::vector<DynTensor> params, std::vector<DynTensor> grads,
                                        std::vector<DynTensor> exp_avgs, std::vector<DynTensor> exp_avg_sqs,
                                        const AdamAttrs& a);
// The same with the learning rate and the step counts read on the device (the capturable form
// above, for several parameters in one op): result i is adam_step(params[i], grads[i],
// exp_avgs[i], exp_avg_sqs[i], a, lr, steps[i]), its `step` the new count; a.step is not used.
// CUDA updates up to 32 tensors in each launch and counts their steps in one more.
std::vector<AdamUpdate> adam_step_multi(std::vector<DynTensor> params, std::vector<DynTensor> grads,
                                        std::vector<DynTensor> exp_avgs, std::vector<DynTensor> exp_avg_sqs,
                                        const AdamAttrs& a, DynTensor lr, std::vector<DynTensor> steps);

// Multi-tensor ops (torch._foreach_norm / _foreach_mul), which gradient clipping uses: one op,
// and on CUDA a few launches, for any number of tensors of one floating dtype on one device.
// norm_multi: a 1-d tensor of each tensor's p-norm (p > 0 or +inf; 0 for an empty tensor),
// accumulated in f32 (f64 for f64) and returned in the tensors' dtype.
DynTensor norm_multi(std::vector<DynTensor> xs, double p = 2);
// mul_multi: xs[i] * s for each i; s is a 0-d tensor (cast to the tensors' dtype). An input held
// nowhere else gives its buffer to its result.
std::vector<DynTensor> mul_multi(std::vector<DynTensor> xs, DynTensor s);

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
// A tensor of `shape` holding the values of `v` (T's dtype) on `d`, as DynTensor::from_vector.
template <class T>
DynTensor from_vector(const std::vector<T>& v, Shape shape, const Device& d = Device::default_device()) {
  return DynTensor::from_vector(v, std::move(shape), d);
}
template <class T>  // from_vector({1.f, 2.f}, {2}) is f32; from_vector({1, 2}, {2}) is i32
DynTensor from_vector(std::initializer_list<T> v, Shape shape, const Device& d = Device::default_device()) {
  return DynTensor::from_vector(std::vector<T>(v), std::move(shape), d);
}
// Standard normal values (torch.randn).
inline DynTensor randn(Shape shape, DType dtype = kDefaultFloat, const Device& d = Device::default_device()) {
  return DynTensor::normal(std::move(shape), 0, 1, dtype, d);
}
// Values uniform over [0, 1) (torch.rand).
inline DynTensor rand(Shape shape, DType dtype = kDefaultFloat, const Device& d = Device::default_device()) {
  return DynTensor::uniform(std::move(shape), 0, 1, dtype, d);
}
// x's shape, dtype and device (a dtype may be given, as torch's dtype= argument)
inline DynTensor full_like(const DynTensor& x, Scalar value, std::optional<DType> dtype = std::nullopt) {
  return DynTensor::full(x.shape(), value, dtype.value_or(x.dtype()), x.device());
}
// Zeros of x's shape, dtype (unless given) and device (torch.zeros_like).
inline DynTensor zeros_like(const DynTensor& x, std::optional<DType> dtype = std::nullopt) {
  return full_like(x, 0, dtype);
}
// Ones of x's shape, dtype (unless given) and device (torch.ones_like).
inline DynTensor ones_like(const DynTensor& x, std::optional<DType> dtype = std::nullopt) {
  return full_like(x, 1, dtype);
}
// Values uniform over [0, 1) of x's shape, dtype (unless given) and device (torch.rand_like).
inline DynTensor rand_like(const DynTensor& x, std::optional<DType> dtype = std::nullopt) {
  return DynTensor::uniform(x.shape(), 0, 1, dtype.value_or(x.dtype()), x.device());
}
// Standard normal values of x's shape, dtype (unless given) and device (torch.randn_like).
inline DynTensor randn_like(const DynTensor& x, std::optional<DType> dtype = std::nullopt) {
  return DynTensor::normal(x.shape(), 0, 1, dtype.value_or(x.dtype()), x.device());
}

// ---- indexing, PyTorch style: y.index({Slice(), 0}), y.index({mask}) ----
// One entry of an index list (torch's indices in y[...]): an integer, a Slice, or a bool mask or
// 1-d integer index tensor.
struct TensorIndex {
  // What an entry holds
  enum class Kind { integer, slice, mask } kind;  // the entry's kind
  int64_t integer = 0;  // an integer entry's index (negative: from the end)
  Slice slice{};  // a slice entry's range
  DynTensor mask{};  // a bool mask, or a 1-d integer tensor of indices
  // An integer index.
  template <std::integral I>
  TensorIndex(I i) : kind(Kind::integer), integer(static_cast<int64_t>(i)) {}  // NOLINT: implicit by design
  // A range.
  TensorIndex(Slice s) : kind(Kind::slice), slice(s) {}                        // NOLINT
  // A bool mask, or a 1-d integer tensor of indices (index_select).
  TensorIndex(DynTensor m) : kind(Kind::mask), mask(std::move(m)) {}          // NOLINT
};
// Integers remove their dim, slices keep it; a bool mask must be the only index (masked_select).
DynTensor index(DynTensor x, std::initializer_list<TensorIndex> indices);

// ---- operators ----
// Element-wise, broadcasting, with PyTorch's type promotion; `/` of integers gives f32.
inline DynTensor operator+(DynTensor a, DynTensor b) { return add(std::move(a), std::move(b)); }
inline DynTensor operator-(DynTensor a, DynTensor b) { return sub(std::move(a), std::move(b)); }  // sub(a, b)
inline DynTensor operator*(DynTensor a, DynTensor b) { return mul(std::move(a), std::move(b)); }  // mul(a, b)
inline DynTensor operator/(DynTensor a, DynTensor b) { return div(std::move(a), std::move(b)); }  // div(a, b)
inline DynTensor operator+(DynTensor a, Scalar b) { return add(std::move(a), b); }  // add(a, b)
inline DynTensor operator-(DynTensor a, Scalar b) { return sub(std::move(a), b); }  // sub(a, b)
inline DynTensor operator*(DynTensor a, Scalar b) { return mul(std::move(a), b); }  // mul(a, b)
inline DynTensor operator/(DynTensor a, Scalar b) { return div(std::move(a), b); }  // div(a, b)
inline DynTensor operator+(Scalar a, DynTensor b) { return add(std::move(b), a); }  // add(b, a)
inline DynTensor operator-(Scalar a, DynTensor b) { return sub(a, std::move(b)); }  // sub(a, b): a minus each element
inline DynTensor operator*(Scalar a, DynTensor b) { return mul(std::move(b), a); }  // mul(b, a)
inline DynTensor operator/(Scalar a, DynTensor b) { return div(a, std::move(b)); }  // div(a, b): a over each element
inline DynTensor operator-(DynTensor a) { return neg(std::move(a)); }  // neg(a)
inline DynTensor operator!(DynTensor a) { return bool_not(std::move(a)); }  // bool_not(a)
inline DynTensor operator~(DynTensor a) { return bitwise_not(std::move(a)); }  // bitwise_not(a)
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
