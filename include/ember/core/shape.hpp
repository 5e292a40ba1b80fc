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

// The dims of a tensor, outermost first (torch.Size). Rank 0 (no dims) is a scalar with one
// element. Dims are not checked here: ops validate them, and inferred outputs use -1 for unknown.
class Shape {
 public:
  Shape() = default;  // rank 0: a scalar
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}  // the listed dims
  explicit Shape(const std::vector<int64_t>& dims) : dims_(dims) {}  // dims from a vector
  explicit Shape(ShapeDims dims) : dims_(std::move(dims)) {}  // takes the dims
  // The dims in [first, last), any iterators over integers.
  template <class It>
  Shape(It first, It last) : dims_(first, last) {}

  int rank() const { return static_cast<int>(dims_.size()); }  // number of dims
  int64_t numel() const;  // number of elements: the product of the dims (1 for rank 0)
  // Negative indices count from the end, like Python.
  int64_t operator[](int i) const { return dims_[i < 0 ? i + rank() : i]; }
  int64_t& operator[](int i) { return dims_[i < 0 ? i + rank() : i]; }  // dim i, writable; negative from the end
  const ShapeDims& dims() const { return dims_; }  // the dims
  ShapeDims& dims() { return dims_; }  // the dims, writable (push_back to add one)
  auto begin() const { return dims_.begin(); }  // iterates the dims, outermost first
  auto end() const { return dims_.end(); }  // end of the dims
  bool operator==(const Shape&) const = default;  // same rank and dims
  std::string str() const;  // "[2, 3, 4]" (operator<< writes the same)

 private:
  ShapeDims dims_;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);  // writes s as "[2, 3, 4]" ("[]" for a scalar)

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
