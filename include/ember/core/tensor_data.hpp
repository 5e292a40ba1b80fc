// TensorData: a tensor's values on the host — contiguous little-endian bytes + dtype + shape.
// It is what backends read and write, what files store and what tests compare.
//
//   auto d = TensorData::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
//   TensorData h = d.convert(DType::f16);
//   std::vector<float> v = h.to_vector<float>();          // converts back element-wise
//   if (auto msg = d.approx_equal(h, 1e-3, 1e-3)) std::cerr << *msg;   // says where they differ
//   # run
#pragma once

#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ember/core/dtype.hpp"
#include "ember/core/shape.hpp"

namespace ember {

// Host values of a tensor (see the file's comment): an owning, copyable value type.
class TensorData {
 public:
  TensorData() = default;  // a placeholder (shape [], f32, but no bytes): assign before use
  TensorData(Shape shape, DType dtype);  // zero-filled
  // Takes `bytes` as the values; throws an Error unless their size is numel * dtype_size(dtype).
  TensorData(Shape shape, DType dtype, std::vector<std::byte> bytes);

  // A copy of `values` with dtype dtype_v<T>; throws an Error unless they fill `shape` exactly.
  template <class T>
  static TensorData from_vector(const std::vector<T>& values, Shape shape) {
    EMBER_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "TensorData::from_vector: ", values.size(),
                " values do not fill shape ", shape);
    TensorData d(std::move(shape), dtype_v<T>);
    if constexpr (std::is_same_v<T, bool>) {
      for (size_t i = 0; i < values.size(); ++i) d.bytes_[i] = std::byte(values[i] ? 1 : 0);
    } else {
      if (!values.empty()) std::memcpy(d.bytes_.data(), values.data(), values.size() * sizeof(T));
    }
    return d;
  }
  // Values of any arithmetic type, converted to `dtype` (for tests and importers).
  static TensorData from_doubles(const std::vector<double>& values, Shape shape, DType dtype);

  const Shape& shape() const { return shape_; }  // the values' shape
  DType dtype() const { return dtype_; }  // the values' element type
  int64_t numel() const { return shape_.numel(); }  // the number of values
  std::span<const std::byte> bytes() const { return bytes_; }  // the raw values, row-major
  std::span<std::byte> bytes() { return bytes_; }  // the raw values, writable
  // The values as T, without conversion; throws an Error unless T is the dtype's type.
  template <class T>
  std::span<const T> as() const {
    EMBER_CHECK(dtype_v<T> == dtype_, "TensorData::as: holds ", dtype_, ", asked for ", dtype_v<T>);
    return {reinterpret_cast<const T*>(bytes_.data()), static_cast<size_t>(numel())};
  }
  // The values as writable T, without conversion; throws an Error unless T is the dtype's type.
  template <class T>
  std::span<T> as() {
    EMBER_CHECK(dtype_v<T> == dtype_, "TensorData::as: holds ", dtype_, ", asked for ", dtype_v<T>);
    return {reinterpret_cast<T*>(bytes_.data()), static_cast<size_t>(numel())};
  }
  // Element-wise conversion to T (any dtype to any type).
  template <class T>
  std::vector<T> to_vector() const {
    TensorData c = convert(dtype_v<T>);
    auto v = c.template as<T>();
    return std::vector<T>(v.begin(), v.end());
  }
  std::vector<double> to_doubles() const;  // to_vector<double>()

  TensorData convert(DType dtype) const;  // PyTorch cast semantics
  // A copy with the same values in `shape`; throws an Error when the element counts differ.
  TensorData reshape(Shape shape) const;

  // Compares values within |a - b| <= atol + rtol * |b| (b = expected = `other`). NaN equals NaN,
  // infinities must match exactly. Returns an explanation of the first mismatch, or nullopt.
  std::optional<std::string> approx_equal(const TensorData& other, double rtol, double atol) const;
  // Tolerances suited to a dtype (f64 tight, f16/bf16 loose, exact for ints and bool).
  static std::pair<double, double> default_tolerance(DType dt);

 private:
  Shape shape_;
  DType dtype_ = DType::f32;
  std::vector<std::byte> bytes_;
};

}  // namespace ember
