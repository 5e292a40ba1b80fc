#include "ember/core/tensor_data.hpp"

#include <cmath>
#include <sstream>

namespace ember {

TensorData::TensorData(Shape shape, DType dtype)
    : shape_(std::move(shape)), dtype_(dtype), bytes_(static_cast<size_t>(shape_.numel()) * dtype_size(dtype)) {
  for (int64_t d : shape_) EMBER_CHECK(d >= 0, "TensorData: negative dimension in shape ", shape_);
}

TensorData::TensorData(Shape shape, DType dtype, std::vector<std::byte> bytes)
    : shape_(std::move(shape)), dtype_(dtype), bytes_(std::move(bytes)) {
  EMBER_CHECK(bytes_.size() == static_cast<size_t>(shape_.numel()) * dtype_size(dtype_), "TensorData: ",
              bytes_.size(), " bytes do not match shape ", shape_, " of ", dtype_);
}

TensorData TensorData::from_doubles(const std::vector<double>& values, Shape shape, DType dtype) {
  EMBER_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "TensorData::from_doubles: ", values.size(),
              " values do not fill shape ", shape);
  TensorData d(std::move(shape), dtype);
  visit_dtype(dtype, [&]<class T>() {
    T* out = reinterpret_cast<T*>(d.bytes_.data());
    for (size_t i = 0; i < values.size(); ++i) out[i] = convert_scalar<T>(values[i]);
  });
  return d;
}

std::vector<double> TensorData::to_doubles() const { return to_vector<double>(); }

TensorData TensorData::convert(DType dtype) const {
  if (dtype == dtype_) return *this;
  TensorData out(shape_, dtype);
  int64_t n = numel();
  visit_dtype(dtype_, [&]<class S>() {
    const S* src = reinterpret_cast<const S*>(bytes_.data());
    visit_dtype(dtype, [&]<class T>() {
      T* dst = reinterpret_cast<T*>(out.bytes_.data());
      for (int64_t i = 0; i < n; ++i) dst[i] = convert_scalar<T>(src[i]);
    });
  });
  return out;
}

TensorData TensorData::reshape(Shape shape) const {
  EMBER_CHECK(shape.numel() == numel(), "TensorData::reshape: ", shape_, " has ", numel(),
              " elements, target shape ", shape, " has ", shape.numel());
  TensorData d = *this;
  d.shape_ = std::move(shape);
  return d;
}

std::optional<std::string> TensorData::approx_equal(const TensorData& other, double rtol, double atol) const {
  if (shape_ != other.shape_) {
    std::ostringstream os;
    os << "shape " << shape_ << " != expected " << other.shape_;
    return os.str();
  }
  std::vector<double> a = to_doubles(), b = other.to_doubles();
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double x = a[i], y = b[i];
    bool ok;
    if (std::isnan(y)) ok = std::isnan(x);
    else if (std::isinf(y)) ok = x == y;
    else ok = std::isfinite(x) && std::fabs(x - y) <= atol + rtol * std::fabs(y);
    if (!ok) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++bad;
      if (std::isfinite(x) && std::isfinite(y)) worst = std::max(worst, std::fabs(x - y));
    }
  }
  if (bad == 0) return std::nullopt;
  std::ostringstream os;
  os.precision(9);
  os << bad << " of " << a.size() << " elements differ (rtol " << rtol << ", atol " << atol << "); first at flat index "
     << first << ": got " << a[first] << ", expected " << b[first] << "; max abs diff " << worst;
  return os.str();
}

std::pair<double, double> TensorData::default_tolerance(DType dt) {
  switch (dt) {
    case DType::f64: return {1e-10, 1e-12};
    case DType::f32: return {1e-5, 1e-6};
    case DType::f16: return {2e-3, 1e-3};
    case DType::bf16: return {1.6e-2, 1e-2};
    default: return {0.0, 0.0};
  }
}

}  // namespace ember
