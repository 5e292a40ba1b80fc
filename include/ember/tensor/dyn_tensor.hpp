// DynTensor: a tensor whose rank is known at run time (for importers, tools and tests).
// Tensor<D, K> (tensor.hpp) wraps it with a compile-time rank and kind.
//
//   auto x = DynTensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
//   auto y = exp(x) + 1.0;                 // free functions and operators: ops.hpp
//   std::vector<float> v = y.to_vector<float>();
//   # run
//
// A DynTensor is a cheap shared handle to an immutable value. Ops take tensors by value:
// pass std::move(x) when x is no longer needed and the backend may reuse its buffer.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/device.hpp"
#include "ember/core/op.hpp"
#include "ember/core/tensor_data.hpp"
#include "ember/tensor/op_list.hpp"

namespace ember {

// A number operand: integers and floating values promote differently (as in PyTorch).
struct Scalar {
  double value;  // the number; an integer's value converted to double
  bool is_integral;  // made from an integer type or bool: promotes like an integer tensor
  Scalar(double v) : value(v), is_integral(false) {}                // NOLINT: implicit by design
  Scalar(float v) : value(v), is_integral(false) {}                 // NOLINT
  // Every integer type (int, int64_t, size_t, bool, ...) by one template, so none is ambiguous.
  template <std::integral I>
  Scalar(I v) : value(double(v)), is_integral(true) {}  // NOLINT
  Scalar(bool v) : value(v ? 1 : 0), is_integral(true) {}  // NOLINT: also for proxies such as vector<bool>'s
};

using Dims = std::vector<int>;  // dimension indices; negative ones count from the end
using Sizes = std::vector<int64_t>;  // sizes or counts, one per dim (a shape to reshape or expand to, pads, repeats)
class DynTensor;
using TensorPair = std::pair<DynTensor, DynTensor>;  // two results: (values, indices) of sort, topk, max_dim, ...
struct TensorIndex;  // one entry of x.index({...}): an integer, a Slice or a bool mask (ops.hpp)

class Gradients;
// Options of DynTensor::backward (torch.autograd.backward's create_graph and retain_graph).
struct BackwardOptions {
  bool create_graph = false;  // record the backward, so gradients can be differentiated again
  bool retain_graph = false;  // keep the graph, so backward can run again (implied by create_graph)
};

// A tensor of run-time rank and dtype on a Device: a cheap shared handle to an immutable value (torch.Tensor
// without in-place ops). Copies share the value; ops never change their inputs and return new handles, which
// may view the input's buffer (reshape, permute, slice). A default-constructed handle is undefined.
class DynTensor {
 public:
  DynTensor() = default;
  // Wraps the IR value `p` living on `d` (for backends and decorators; users make tensors with the factories).
  DynTensor(PrimitivePtr p, Device d) : prim_(std::move(p)), device_(std::move(d)) {}

  // ---- creation ----
  // A tensor on `d` holding a copy of `data` (its shape and dtype).
  static DynTensor from_data(const TensorData& data, const Device& d = Device::default_device());
  // A tensor of `shape` from row-major values; the dtype follows T (float: f32, int64_t: i64, bool: bool).
  // Throws ember::Error when v's size is not shape's element count.
  template <class T>
  static DynTensor from_vector(const std::vector<T>& v, Shape shape, const Device& d = Device::default_device()) {
    return from_data(TensorData::from_vector(v, std::move(shape)), d);
  }
  template <class T>  // from_vector({1.f, 2.f}, {2}): the dtype follows the elements' type
  static DynTensor from_vector(std::initializer_list<T> v, Shape shape, const Device& d = Device::default_device()) {
    return from_vector(std::vector<T>(v), std::move(shape), d);
  }
  // A tensor of `shape` filled with `value` converted to `dtype` (torch.full).
  static DynTensor full(Shape shape, Scalar value, DType dtype, const Device& d = Device::default_device());
  // A tensor of zeros (torch.zeros).
  static DynTensor zeros(Shape shape, DType dtype = kDefaultFloat, const Device& d = Device::default_device());
  // A tensor of ones (torch.ones).
  static DynTensor ones(Shape shape, DType dtype = kDefaultFloat, const Device& d = Device::default_device());
  // A tensor whose values are not to be read (torch.empty); ember fills it with zeros all the same.
  static DynTensor empty(Shape shape, DType dtype = kDefaultFloat, const Device& d = Device::default_device());
  // [start, end) with `step`; dtype defaults to i64 when all three are integral, else f32.
  static DynTensor arange(Scalar start, Scalar end, Scalar step = 1, std::optional<DType> dtype = std::nullopt,
                          const Device& d = Device::default_device());
  // `steps` values evenly spaced from `start` to `end`, both included (torch.linspace).
  static DynTensor linspace(double start, double end, int64_t steps, DType dtype = kDefaultFloat,
                            const Device& d = Device::default_device());
  // An n x m matrix with ones on the diagonal and zeros elsewhere; m < 0 means m = n (torch.eye).
  static DynTensor eye(int64_t n, int64_t m = -1, DType dtype = kDefaultFloat,
                       const Device& d = Device::default_device());
  // Random values from the device's seeded generator (Device::seed).
  // Uniform over [low, high) (torch.rand for 0, 1); floating dtypes only, Error when low > high.
  static DynTensor uniform(Shape shape, double low = 0, double high = 1, DType dtype = kDefaultFloat,
                           const Device& d = Device::default_device());
  // Normal with `mean` and standard deviation `std` (torch.normal, torch.randn for 0, 1); floating dtypes only.
  static DynTensor normal(Shape shape, double mean = 0, double std = 1, DType dtype = kDefaultFloat,
                          const Device& d = Device::default_device());
  // 1 with probability `p`, else 0, in `dtype` (torch.bernoulli); Error unless 0 <= p <= 1.
  static DynTensor bernoulli(Shape shape, double p, DType dtype = kDefaultFloat,
                             const Device& d = Device::default_device());
  // Integers uniform over [low, high) in `dtype` (torch.randint); Error unless low < high.
  static DynTensor randint(Shape shape, int64_t low, int64_t high, DType dtype = kDefaultInt,
                           const Device& d = Device::default_device());

  // ---- metadata ----
  // False for a default-constructed or moved-from handle (any other use of one throws).
  bool defined() const { return prim_ != nullptr; }
  const Shape& shape() const { return meta().shape; }  // sizes per dim (torch.Tensor.shape)
  DType dtype() const { return meta().dtype; }  // element type
  int rank() const { return shape().rank(); }  // number of dims (torch.Tensor.dim())
  int64_t numel() const { return shape().numel(); }  // number of elements (1 for a 0-d tensor)
  int64_t size(int dim) const;  // size of dim `dim`, negative from the end (torch.Tensor.size(dim))
  const Device& device() const { return device_; }  // where the value lives and its ops run
  const PrimitivePtr& primitive() const { return prim_; }  // the IR value behind the handle (null when undefined)
  // Moves the IR value out, leaving the handle undefined.
  PrimitivePtr&& take_primitive() && { return std::move(prim_); }
  const TensorMeta& meta() const;  // shape and dtype; throws for an undefined tensor

  // ---- host access (synchronising) ----
  // A host copy of the values, once the device has computed them.
  TensorData into_data() const;
  // The values in row-major order, converted element-wise to T (torch.Tensor.tolist, flattened).
  template <class T>
  std::vector<T> to_vector() const { return into_data().to_vector<T>(); }
  double item() const;  // one-element tensors
  template <class T>
  T item() const { return static_cast<T>(item()); }  // item() converted to T
  std::string str() const;  // the text operator<< prints

  // The value on `d` (torch.Tensor.to(device)): this handle when d is its device; else a new handle that
  // gradients do not flow through, sharing the buffer between a device and its autodiff() wrapper and
  // copying it through the host otherwise.
  DynTensor to(const Device& d) const;
  DynTensor cast(DType dt) const;  // torch.Tensor.to(dtype); this handle when already `dt`
  DynTensor to(DType dt) const { return cast(dt); }  // same as cast(dt)

  // ---- method forms of the ops (ops.hpp defines them; the lists are in op_list.hpp) ----
#define EMBER_METHOD_UNARY(name) DynTensor name() const;
#define EMBER_METHOD_BINARY(name)               \
  DynTensor name(const DynTensor& other) const; \
  DynTensor name(Scalar other) const;
#define EMBER_METHOD_REDUCE_DIMS(name) DynTensor name(Dims dims = {}, bool keepdim = false) const;
#define EMBER_METHOD_REDUCE(name)                                                                    \
  EMBER_METHOD_REDUCE_DIMS(name)                                                                     \
  template <std::integral I> /* a template, so that a braced {} or {1} still means Dims */          \
  DynTensor name(I dim, bool keepdim = false) const { return name(Dims{static_cast<int>(dim)}, keepdim); }
#define EMBER_METHOD_DIM(name) DynTensor name(int dim) const;
  EMBER_UNARY_OPS(EMBER_METHOD_UNARY)
  EMBER_BINARY_OPS(EMBER_METHOD_BINARY)
  EMBER_REDUCE_OPS(EMBER_METHOD_REDUCE)
  EMBER_REDUCE_DIMS_ONLY_OPS(EMBER_METHOD_REDUCE_DIMS)
  EMBER_DIM_OPS(EMBER_METHOD_DIM)
#define EMBER_METHOD_ALIAS(family, alias, name) EMBER_METHOD_ALIAS_##family(alias)
#define EMBER_METHOD_ALIAS_UNARY(alias) EMBER_METHOD_UNARY(alias)
#define EMBER_METHOD_ALIAS_BINARY(alias) EMBER_METHOD_BINARY(alias)
#define EMBER_METHOD_ALIAS_MASK_FILL(alias) DynTensor alias(const DynTensor& mask, Scalar value) const;
#define EMBER_METHOD_ALIAS_STATISTIC(alias) \
  DynTensor alias(Dims dims = {}, int64_t correction = 1, bool keepdim = false) const;
  EMBER_PYTORCH_ALIASES(EMBER_METHOD_ALIAS)
  EMBER_METHOD_ALIAS_MASK_FILL(mask_fill)
  EMBER_METHOD_ALIAS_STATISTIC(var)
  EMBER_METHOD_ALIAS_STATISTIC(stddev)
#undef EMBER_METHOD_UNARY
#undef EMBER_METHOD_BINARY
#undef EMBER_METHOD_REDUCE_DIMS
#undef EMBER_METHOD_REDUCE
#undef EMBER_METHOD_DIM
#undef EMBER_METHOD_ALIAS
#undef EMBER_METHOD_ALIAS_UNARY
#undef EMBER_METHOD_ALIAS_BINARY
#undef EMBER_METHOD_ALIAS_MASK_FILL
#undef EMBER_METHOD_ALIAS_STATISTIC
  // Methods whose signatures are their own (each forwards to the free function of that name).
  TensorPair max_dim(int dim, bool keepdim = false) const;  // values, indices
  TensorPair min_dim(int dim, bool keepdim = false) const;  // values, indices
  // i64 index of the maximum along `dim` (no dim: into the flattened tensor); first one on ties.
  DynTensor argmax(std::optional<int> dim = std::nullopt, bool keepdim = false) const;
  // i64 index of the minimum along `dim` (no dim: into the flattened tensor); first one on ties.
  DynTensor argmin(std::optional<int> dim = std::nullopt, bool keepdim = false) const;
  DynTensor logsumexp(Dims dims, bool keepdim = false) const;  // log(sum(exp(x))) over `dims`, computed stably
  DynTensor norm(double p = 2, Dims dims = {}, bool keepdim = false) const;  // p-norm over `dims` (all: empty)
  DynTensor clamp(std::optional<Scalar> min, std::optional<Scalar> max) const;  // either bound may be nullopt
  DynTensor matmul(const DynTensor& other) const;  // torch.matmul rules
  DynTensor reshape(Sizes shape) const;  // one -1 allowed; a view when strides allow
  DynTensor view(Sizes shape) const { return reshape(std::move(shape)); }  // same as reshape: copies when it must
  template <std::same_as<Shape> S>  // x.reshape(y.shape()); braced {2, 3} stays Sizes
  DynTensor reshape(const S& shape) const { return reshape(Sizes(shape.begin(), shape.end())); }
  template <std::same_as<Shape> S>  // x.expand(y.shape())
  DynTensor expand(const S& shape) const { return expand(Sizes(shape.begin(), shape.end())); }
  DynTensor flatten(int start_dim = 0, int end_dim = -1) const;  // dims start_dim..end_dim merged into one
  DynTensor unsqueeze(int dim) const;  // inserts a dim of size 1 at `dim`
  DynTensor squeeze() const;  // removes every dim of size 1
  DynTensor squeeze(int dim) const;  // removes `dim` if its size is 1
  DynTensor permute(Dims dims) const;  // dim i of the result is dim dims[i] of x; a view
  DynTensor transpose(int dim0, int dim1) const;  // swaps two dims; a view
  DynTensor t() const;  // a matrix's transpose (a vector as it is), as torch.Tensor.t
  DynTensor expand(Sizes shape) const;  // size-1 dims broadcast to `shape`; -1 keeps a dim
  DynTensor repeat(Sizes repeats) const;  // tiles the tensor repeats[i] times along dim i
  DynTensor flip(Dims dims) const;  // reverses the order along `dims`
  DynTensor narrow(int dim, int64_t start, int64_t length) const;  // `length` elements of `dim` from `start`; a view
  DynTensor select(int dim, int64_t index) const;  // the slice at `index` of `dim`, which is removed
  DynTensor gather(int dim, const DynTensor& index) const;  // torch.gather
  DynTensor index_select(int dim, const DynTensor& index) const;  // entries `index` (1-d, i64) of `dim`
  DynTensor masked_select(const DynTensor& mask) const;  // 1-d: the elements where `mask` is true
  TensorPair sort(int dim = -1, bool descending = false) const;  // values, indices; stable
  TensorPair topk(int64_t k, int dim = -1, bool largest = true) const;  // the k largest (or smallest) values, indices
  std::vector<DynTensor> chunk(int64_t chunks, int dim = 0) const;  // at most `chunks` views, the last one smaller
  std::vector<DynTensor> split(int64_t split_size, int dim = 0) const;  // views of `split_size`, the last one smaller

  // ---- indexing, as in PyTorch ----
  DynTensor operator[](int64_t index) const;           // y[0]: selects along dim 0
  DynTensor operator[](const DynTensor& mask) const;  // y[mask]: the elements where a bool mask is true
  DynTensor index(std::initializer_list<TensorIndex> indices) const;  // y.index({Slice(), 0})

  // ---- autodiff (tensors of a Device::autodiff() device) ----
  // A new handle to the same value whose gradient backward() computes (floating dtypes).
  // On a tensor that is already the result of tracked ops, it asks backward to keep that
  // intermediate gradient too.
  DynTensor require_grad() const;
  bool is_require_grad() const;  // tracked: a leaf that requires grad, or computed from one
  DynTensor detach() const;      // the same value, outside any graph
  // Gradients of this (one-element) tensor with respect to every tracked leaf it depends on.
  Gradients backward(BackwardOptions opts = {}) const;
  // For a tensor of any shape: `upstream` (same shape) is the gradient flowing into it.
  Gradients backward(const DynTensor& upstream, BackwardOptions opts = {}) const;
  // This tensor's gradient in `grads`; empty when the tensor is a leaf that the backward did
  // not reach. Throws for a tensor that does not require grad or belongs to another graph.
  std::optional<DynTensor> grad(const Gradients& grads) const;

 private:
  PrimitivePtr prim_;
  Device device_ = Device::default_device();
};

// Prints the device's name().
inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.name(); }

// Prints as PyTorch does: tensor([[ 0.1000, -1.2000], ...]) by rows, `...` past 1000 elements.
std::ostream& operator<<(std::ostream& os, const DynTensor& t);

}  // namespace ember
