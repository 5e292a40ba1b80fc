#include "ember/tensor/dyn_tensor.hpp"

#include <cmath>
#include <sstream>

#include "dispatch.hpp"
#include "ember/decorators/autodiff.hpp"
#include "ember/tensor/ops.hpp"

namespace ember {

using detail::create;

const TensorMeta& DynTensor::meta() const {
  EMBER_CHECK(prim_ != nullptr, "tensor: use of an undefined (empty or moved-from) tensor");
  return prim_->meta();
}

int64_t DynTensor::size(int dim) const { return shape()[normalize_dim(dim, rank(), "size")]; }

DynTensor DynTensor::from_data(const TensorData& data, const Device& d) {
  return DynTensor(d.backend().write(data), d);
}

DynTensor DynTensor::full(Shape shape, Scalar value, DType dtype, const Device& d) {
  CreateAttrs a;
  a.shape = std::move(shape);
  a.dtype = dtype;
  a.a = value.value;
  return create(OpKind::full, std::move(a), d);
}
DynTensor DynTensor::zeros(Shape s, DType dt, const Device& d) { return full(std::move(s), 0, dt, d); }
DynTensor DynTensor::ones(Shape s, DType dt, const Device& d) { return full(std::move(s), 1, dt, d); }
DynTensor DynTensor::empty(Shape s, DType dt, const Device& d) { return full(std::move(s), 0, dt, d); }

DynTensor DynTensor::arange(Scalar start, Scalar end, Scalar step, std::optional<DType> dtype, const Device& d) {
  EMBER_CHECK(step.value != 0, "arange: step must be nonzero");
  EMBER_CHECK(std::isfinite(start.value) && std::isfinite(end.value), "arange: bounds must be finite");
  EMBER_CHECK((end.value - start.value) * step.value >= 0, "arange: upper bound ", end.value,
              " and lower bound ", start.value, " are inconsistent with step sign ", step.value);
  DType dt = dtype.value_or(start.is_integral && end.is_integral && step.is_integral ? kDefaultInt : kDefaultFloat);
  int64_t n = int64_t(std::ceil((end.value - start.value) / step.value));
  CreateAttrs a{Shape{std::max<int64_t>(n, 0)}, dt, start.value, end.value, step.value};
  return create(OpKind::arange, std::move(a), d);
}

DynTensor DynTensor::linspace(double start, double end, int64_t steps, DType dt, const Device& d) {
  EMBER_CHECK(steps >= 0, "linspace: number of steps must be non-negative, got ", steps);
  return create(OpKind::linspace, CreateAttrs{Shape{steps}, dt, start, end, 0}, d);
}

DynTensor DynTensor::eye(int64_t n, int64_t m, DType dt, const Device& d) {
  if (m < 0) m = n;
  EMBER_CHECK(n >= 0, "eye: n must be non-negative, got ", n);
  return create(OpKind::eye, CreateAttrs{Shape{n, m}, dt, 0, 0, 0}, d);
}

DynTensor DynTensor::uniform(Shape s, double low, double high, DType dt, const Device& d) {
  EMBER_CHECK(low <= high, "uniform: low ", low, " must not exceed high ", high);
  return create(OpKind::random_uniform, CreateAttrs{std::move(s), dt, low, high, 0}, d);
}
DynTensor DynTensor::normal(Shape s, double mean, double std, DType dt, const Device& d) {
  EMBER_CHECK(std >= 0, "normal: std must be non-negative, got ", std);
  return create(OpKind::random_normal, CreateAttrs{std::move(s), dt, mean, std, 0}, d);
}
DynTensor DynTensor::bernoulli(Shape s, double p, DType dt, const Device& d) {
  EMBER_CHECK(p >= 0 && p <= 1, "bernoulli: p must be in [0, 1], got ", p);
  return create(OpKind::random_bernoulli, CreateAttrs{std::move(s), dt, p, 0, 0}, d);
}
DynTensor DynTensor::randint(Shape s, int64_t low, int64_t high, DType dt, const Device& d) {
  EMBER_CHECK(low < high, "randint: low ", low, " must be smaller than high ", high);
  return create(OpKind::random_randint, CreateAttrs{std::move(s), dt, double(low), double(high), 0}, d);
}

TensorData DynTensor::into_data() const {
  EMBER_CHECK(prim_ != nullptr, "into_data: undefined tensor");
  return device_.backend().read(prim_);
}

double DynTensor::item() const {
  EMBER_CHECK(numel() == 1, "item: tensor of shape ", shape(), " has ", numel(), " elements, expected 1");
  return into_data().to_doubles()[0];
}

DynTensor DynTensor::to(const Device& d) const {
  if (d == device_) return *this;
  // Between a device and its autodiff wrapper (either way) the value stays where it is: only
  // the handle changes (untracked, as a copy would be).
  if (d.inner() == device_.inner()) {
    PrimitivePtr v = autodiff::inner_value(prim_);
    return DynTensor(d.is_autodiff() ? autodiff::wrap_value(std::move(v)) : std::move(v), d);
  }
  return DynTensor(d.backend().write(into_data()), d);
}

DynTensor DynTensor::cast(DType dt) const { return detail::cast_to(*this, dt); }

std::string DynTensor::str() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

}  // namespace ember
