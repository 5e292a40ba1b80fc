// Shape: the dimensions of a tensor, plus the broadcasting and stride helpers every layer uses.
//
//   Shape s{2, 3, 4};  s.numel() == 24;  s.rank() == 3;  s[-1] == 4;
//   Shape b = broadcast_shapes(Shape{3, 1}, Shape{1, 4}, "add");   // {3, 4}
//   # run
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/small_vec.hpp"

namespace ember {

// A shape's dims: inline up to rank 6 (no heap allocation for the shapes of almost every op).
using ShapeDims = SmallVec<int64_t, 6>;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(const std::vector<int64_t>& dims) : dims_(dims) {}
  explicit Shape(ShapeDims dims) : dims_(std::move(dims)) {}
  template <class It>
  Shape(It first, It last) : dims_(first, last) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t numel() const;
  // Negative indices count from the end, like Python.
  int64_t operator[](int i) const { return dims_[i < 0 ? i + rank() : i]; }
  int64_t& operator[](int i) { return dims_[i < 0 ? i + rank() : i]; }
  const ShapeDims& dims() const { return dims_; }
  ShapeDims& dims() { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }
  bool operator==(const Shape&) const = default;
  std::string str() const;

 private:
  ShapeDims dims_;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

// Row-major (C-contiguous) strides in elements.
ShapeDims contiguous_strides(const Shape& s);
// Strides that view a tensor of shape `old` with `strides` as `shape` (same numel) without a
// copy, if the strides allow it (every strided backend's reshape): the old dims are grouped
// into maximal runs that are contiguous among themselves, and the new dims must split those
// runs exactly, in order. Empty when a copy is needed.
std::optional<std::vector<int64_t>> view_strides(const Shape& old, std::span<const int64_t> strides,
                                                 const Shape& shape);
// Normalises a possibly negative dim for a tensor of `rank`; throws an Error naming `op`.
int normalize_dim(int64_t dim, int rank, std::string_view op);
// NumPy/PyTorch broadcasting; throws an Error naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);

}  // namespace ember
