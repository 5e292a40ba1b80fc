// Printing a tensor as PyTorch prints it (torch/_tensor_str.py's layout and number formats):
// rows and columns, lines of at most 80 characters, every element padded to one width, and
// past 1000 elements only the first and last 3 entries of each dim, with `...` between.
// Booleans print as true/false (issue 27), other dtypes than f32, i64 and bool are named.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {
namespace {

constexpr int64_t kThreshold = 1000;  // torch.set_printoptions defaults
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 80;
constexpr int kPrecision = 4;

std::string format_c(const char* fmt, int precision, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, precision, v);
  return buf;
}

// One number format for the whole tensor, chosen from the values that will be shown.
class Formatter {
 public:
  Formatter(DType dt, const std::vector<double>& shown) : dtype_(dt) {
    if (!is_float(dt)) {
      for (double v : shown) width_ = std::max(width_, raw(v).size());
      return;
    }
    double lo = INFINITY, hi = 0;
    bool any = false;
    for (double v : shown) {
      if (!std::isfinite(v) || v == 0) continue;
      any = true;
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (!any) return;
    sci_mode_ = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
    for (double v : shown)
      if (std::isfinite(v) && v != 0) width_ = std::max(width_, raw(v).size());
  }

  size_t width() const { return width_; }
  std::string operator()(double v) const {
    std::string s = raw(v);
    if (s.size() < width_) s.insert(0, width_ - s.size(), ' ');
    return s;
  }

 private:
  std::string raw(double v) const {
    if (dtype_ == DType::boolean) return v != 0 ? "true" : "false";
    if (!is_float(dtype_)) return std::to_string(static_cast<long long>(v));
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (sci_mode_) return format_c("%.*e", kPrecision, v);
    if (int_mode_) return format_c("%.*f.", 0, v);
    return format_c("%.*f", kPrecision, v);
  }

  DType dtype_;
  bool int_mode_ = true, sci_mode_ = false;
  size_t width_ = 1;
};

// Walks the tensor as the printed layout does: the flat offsets of the elements shown.
struct Layout {
  const Shape& shape;
  bool summarize;
  std::vector<int64_t> strides;

  bool elided(int dim) const { return summarize && shape[dim] > 2 * kEdgeItems; }
  template <class F>
  void for_each_shown(int dim, int64_t offset, F&& f) const {
    for (int64_t i = 0; i < shape[dim]; ++i) {
      if (elided(dim) && i == kEdgeItems) i = shape[dim] - kEdgeItems;
      if (dim + 1 == shape.rank()) f(offset + i * strides[dim]);
      else for_each_shown(dim + 1, offset + i * strides[dim], f);
    }
  }
};

void print_dims(std::ostream& os, const Layout& l, const Formatter& fmt, const std::vector<double>& v, int dim,
                int64_t offset, int indent) {
  int rank = l.shape.rank();
  os << '[';
  if (dim + 1 == rank) {  // a row: as many elements per line as fit
    int per_line = std::max<int>(1, (kLineWidth - indent) / int(fmt.width() + 2));
    int on_line = 0;
    auto item = [&](const std::string& s) {
      if (on_line == per_line) {
        os << ",\n" << std::string(indent + 1, ' ');
        on_line = 0;
      } else if (on_line > 0) {
        os << ", ";
      }
      os << s;
      ++on_line;
    };
    for (int64_t i = 0; i < l.shape[dim]; ++i) {
      if (l.elided(dim) && i == kEdgeItems) {
        item(" ...");
        i = l.shape[dim] - kEdgeItems;
      }
      item(fmt(v[offset + i * l.strides[dim]]));
    }
  } else {
    std::string sep(1, ',');
    sep.append(rank - dim - 1, '\n').append(indent + 1, ' ');
    for (int64_t i = 0; i < l.shape[dim]; ++i) {
      if (i > 0) os << sep;
      if (l.elided(dim) && i == kEdgeItems) {
        os << "..." << sep;
        i = l.shape[dim] - kEdgeItems;
      }
      print_dims(os, l, fmt, v, dim + 1, offset + i * l.strides[dim], indent + 1);
    }
  }
  os << ']';
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const DynTensor& t) {
  if (!t.defined()) return os << "tensor(undefined)";
  TensorData data = t.into_data();
  std::vector<double> v = data.to_doubles();
  const Shape& shape = data.shape();
  DType dt = data.dtype();
  const int indent = 7;  // strlen("tensor(")
  os << "tensor(";
  if (shape.numel() == 0) {
    os << "[]";
    if (shape.rank() != 1) {
      os << ", size=(";
      for (int i = 0; i < shape.rank(); ++i) os << (i ? ", " : "") << shape[i];
      os << (shape.rank() == 1 ? ",)" : ")");
    }
  } else if (shape.rank() == 0) {
    os << Formatter(dt, v)(v[0]);
  } else {
    auto cs = contiguous_strides(shape);
    Layout layout{shape, shape.numel() > kThreshold, std::vector<int64_t>(cs.begin(), cs.end())};
    std::vector<double> shown;
    layout.for_each_shown(0, 0, [&](int64_t i) { shown.push_back(v[i]); });
    print_dims(os, layout, Formatter(dt, shown), v, 0, 0, indent);
  }
  if (dt != DType::f32 && dt != DType::i64 && dt != DType::boolean) os << ", dtype=" << dt;
  if (!(t.device().inner() == Device::cpu().inner())) os << ", device=" << t.device();
  return os << ')';
}

}  // namespace ember
