#include "ember/core/shape.hpp"

#include <sstream>

#include "ember/core/error.hpp"

namespace ember {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::string Shape::str() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << '[';
  for (int i = 0; i < s.rank(); ++i) os << (i ? ", " : "") << s[i];
  return os << ']';
}

ShapeDims contiguous_strides(const Shape& s) {
  ShapeDims st(size_t(s.rank()), 0);
  int64_t acc = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

std::optional<std::vector<int64_t>> view_strides(const Shape& old, std::span<const int64_t> strides,
                                                 const Shape& shape) {
  if (old.numel() == 0) return contiguous_strides(shape).vec();
  struct Group {
    int64_t size, inner_stride;
  };
  std::vector<Group> groups;
  int64_t last_stride = 0;
  for (int d = 0; d < old.rank(); ++d) {
    if (old[d] == 1) continue;
    if (!groups.empty() && last_stride == strides[d] * old[d]) {
      groups.back().size *= old[d];
      groups.back().inner_stride = strides[d];
    } else {
      groups.push_back({old[d], strides[d]});
    }
    last_stride = strides[d];
  }
  std::vector<int64_t> out(shape.rank(), 1);
  int g = int(groups.size()) - 1;
  int64_t acc = 1;
  for (int ni = shape.rank() - 1; ni >= 0; --ni) {
    int64_t n = shape[ni];
    if (n == 1) {
      out[ni] = g >= 0 ? groups[g].inner_stride * acc : 1;
      continue;
    }
    if (g < 0) return std::nullopt;
    out[ni] = groups[g].inner_stride * acc;
    acc *= n;
    if (acc == groups[g].size) {
      --g;
      acc = 1;
    } else if (groups[g].size % acc != 0) {
      return std::nullopt;
    }
  }
  return out;
}

int normalize_dim(int64_t dim, int rank, std::string_view op) {
  int r = rank == 0 ? 1 : rank;  // like PyTorch, a 0-d tensor accepts dim 0 / -1
  EMBER_CHECK(dim >= -r && dim < r, op, ": dim ", dim, " is out of range for a tensor of rank ", rank,
              " (expected -", r, " <= dim < ", r, ")");
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  int r = std::max(a.rank(), b.rank());
  ShapeDims out(size_t(r), 0);
  for (int i = 0; i < r; ++i) {
    int64_t da = i < r - a.rank() ? 1 : a[i - (r - a.rank())];
    int64_t db = i < r - b.rank() ? 1 : b[i - (r - b.rank())];
    EMBER_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", a, " and ", b,
                " are not broadcastable (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return Shape(std::move(out));
}

}  // namespace ember
