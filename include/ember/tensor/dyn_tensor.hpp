// DynTensor: a tensor whose rank is known at run time (for importers, tools and tests).
// Tensor<D, K> (tensor.hpp) wraps it with a compile-time rank and kind.
//
//   auto x = DynTensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
//   auto y = exp(x) + 1.0;                 // free functions and operators: ops.hpp
//   std::vector<float> v = y.to_vector<float>();
//
// A DynTensor is a cheap shared handle to an immutable value. Ops take tensors by value:
// pass std::move(x) when x is no longer needed and the backend may reuse its buffer.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ember/core/device.hpp"
#include "ember/core/op.hpp"
#include "ember/core/tensor_data.hpp"

namespace ember {

// A number operand: integers and floating values promote differently (as in PyTorch).
struct Scalar {
  double value;
  bool is_integral;
  Scalar(double v) : value(v), is_integral(false) {}                // NOLINT: implicit by design
  Scalar(float v) : value(v), is_integral(false) {}                 // NOLINT
  Scalar(int v) : value(v), is_integral(true) {}                    // NOLINT
  Scalar(int64_t v) : value(double(v)), is_integral(true) {}        // NOLINT
  Scalar(bool v) : value(v ? 1 : 0), is_integral(true) {}           // NOLINT
};

class Gradients;
struct BackwardOptions {
  bool create_graph = false;  // record the backward, so gradients can be differentiated again
  bool retain_graph = false;  // keep the graph, so backward can run again (implied by create_graph)
};

class DynTensor {
 public:
  DynTensor() = default;
  DynTensor(PrimitivePtr p, Device d) : prim_(std::move(p)), device_(std::move(d)) {}

  // ---- creation ----
  static DynTensor from_data(const TensorData& data, const Device& d = Device::default_device());
  template <class T>
  static DynTensor from_vector(const std::vector<T>& v, Shape shape, const Device& d = Device::default_device()) {
    return from_data(TensorData::from_vector(v, std::move(shape)), d);
  }
  static DynTensor full(Shape shape, Scalar value, DType dtype, const Device& d = Device::default_device());
  static DynTensor zeros(Shape shape, DType dtype = kDefaultFloat, const Device& d = Device::default_device());
  static DynTensor ones(Shape shape, DType dtype = kDefaultFloat, const Device& d = Device::default_device());
  static DynTensor empty(Shape shape, DType dtype = kDefaultFloat, const Device& d = Device::default_device());
  // [start, end) with `step`; dtype defaults to i64 when all three are integral, else f32.
  static DynTensor arange(Scalar start, Scalar end, Scalar step = 1, std::optional<DType> dtype = std::nullopt,
                          const Device& d = Device::default_device());
  static DynTensor linspace(double start, double end, int64_t steps, DType dtype = kDefaultFloat,
                            const Device& d = Device::default_device());
  static DynTensor eye(int64_t n, int64_t m = -1, DType dtype = kDefaultFloat,
                       const Device& d = Device::default_device());
  // Random values from the device's seeded generator (Device::seed).
  static DynTensor uniform(Shape shape, double low = 0, double high = 1, DType dtype = kDefaultFloat,
                           const Device& d = Device::default_device());
  static DynTensor normal(Shape shape, double mean = 0, double std = 1, DType dtype = kDefaultFloat,
                          const Device& d = Device::default_device());
  static DynTensor bernoulli(Shape shape, double p, DType dtype = kDefaultFloat,
                             const Device& d = Device::default_device());
  static DynTensor randint(Shape shape, int64_t low, int64_t high, DType dtype = kDefaultInt,
                           const Device& d = Device::default_device());

  // ---- metadata ----
  bool defined() const { return prim_ != nullptr; }
  const Shape& shape() const { return meta().shape; }
  DType dtype() const { return meta().dtype; }
  int rank() const { return shape().rank(); }
  int64_t numel() const { return shape().numel(); }
  int64_t size(int dim) const;
  const Device& device() const { return device_; }
  const PrimitivePtr& primitive() const { return prim_; }
  PrimitivePtr&& take_primitive() && { return std::move(prim_); }
  const TensorMeta& meta() const;

  // ---- host access (synchronising) ----
  TensorData into_data() const;
  template <class T>
  std::vector<T> to_vector() const { return into_data().to_vector<T>(); }
  double item() const;  // one-element tensors
  std::string str() const;

  DynTensor to(const Device& d) const;
  DynTensor cast(DType dt) const;

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

std::ostream& operator<<(std::ostream& os, const DynTensor& t);

}  // namespace ember
