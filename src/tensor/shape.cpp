// Shape and layout ops of the tensor API; most are views (reshape, permute, expand, slice).
#include <algorithm>
#include <numeric>

#include "dispatch.hpp"

namespace ember {

using namespace detail;

DynTensor reshape(DynTensor x, Sizes shape) {
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      EMBER_CHECK(infer < 0, "reshape: only one dim may be -1, got ", Shape(shape));
      infer = int(i);
    } else {
      EMBER_CHECK(shape[i] >= 0, "reshape: invalid size ", shape[i], " in ", Shape(shape));
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && x.numel() % known == 0, "reshape: cannot reshape ", x.shape(), " into ", Shape(shape));
    shape[infer] = x.numel() / known;
  }
  if (Shape(shape) == x.shape()) return x;
  return run1(OpKind::reshape, {std::move(x)}, ShapeAttrs{Shape(std::move(shape))});
}

DynTensor flatten(DynTensor x, int start, int end) {
  if (x.rank() == 0) return reshape(std::move(x), {1});
  int s = normalize_dim(start, x.rank(), "flatten"), e = normalize_dim(end, x.rank(), "flatten");
  EMBER_CHECK(s <= e, "flatten: start_dim ", start, " comes after end_dim ", end, " for shape ", x.shape());
  Sizes out(x.shape().begin(), x.shape().begin() + s);
  int64_t m = 1;
  for (int d = s; d <= e; ++d) m *= x.shape()[d];
  out.push_back(m);
  out.insert(out.end(), x.shape().begin() + e + 1, x.shape().end());
  return reshape(std::move(x), std::move(out));
}

DynTensor unsqueeze(DynTensor x, int dim) {
  int d = normalize_dim(dim, x.rank() + 1, "unsqueeze");
  Sizes s = x.shape().dims();
  s.insert(s.begin() + d, 1);
  return reshape(std::move(x), std::move(s));
}

DynTensor squeeze(DynTensor x) {
  Sizes s;
  for (int64_t d : x.shape()) if (d != 1) s.push_back(d);
  return reshape(std::move(x), std::move(s));
}

DynTensor squeeze(DynTensor x, int dim) {
  if (x.rank() == 0) return x;
  int d = normalize_dim(dim, x.rank(), "squeeze");
  if (x.shape()[d] != 1) return x;
  Sizes s = x.shape().dims();
  s.erase(s.begin() + d);
  return reshape(std::move(x), std::move(s));
}

DynTensor permute(DynTensor x, Dims dims) {
  bool identity = true;
  for (size_t i = 0; i < dims.size(); ++i)
    if (normalize_dim(dims[i], x.rank(), "permute") != int(i)) identity = false;
  if (identity && int(dims.size()) == x.rank()) return x;
  return run1(OpKind::permute, {std::move(x)}, DimsAttrs{std::move(dims)});
}

DynTensor transpose(DynTensor x, int d0, int d1) {
  if (x.rank() < 2 && x.rank() == 0) return x;
  int a = normalize_dim(d0, x.rank(), "transpose"), b = normalize_dim(d1, x.rank(), "transpose");
  Dims p(x.rank());
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[a], p[b]);
  return permute(std::move(x), std::move(p));
}
DynTensor swap_dims(DynTensor x, int d0, int d1) { return transpose(std::move(x), d0, d1); }

DynTensor movedim(DynTensor x, int source, int destination) {
  return movedim(std::move(x), Dims{source}, Dims{destination});
}

DynTensor movedim(DynTensor x, Dims source, Dims destination) {
  EMBER_CHECK(source.size() == destination.size(), "movedim: ", source.size(), " source dims but ",
              destination.size(), " destination dims");
  int r = x.rank();
  Dims perm(r, -1);
  std::vector<bool> used(r, false);
  for (size_t i = 0; i < source.size(); ++i) {
    int s = normalize_dim(source[i], r, "movedim"), d = normalize_dim(destination[i], r, "movedim");
    EMBER_CHECK(perm[d] < 0 && !used[s], "movedim: repeated dim in source or destination");
    perm[d] = s;
    used[s] = true;
  }
  int next = 0;  // the other dims keep their order in the free positions
  for (int d = 0; d < r; ++d) {
    if (perm[d] >= 0) continue;
    while (used[next]) ++next;
    perm[d] = next++;
  }
  return permute(std::move(x), std::move(perm));
}

DynTensor flip(DynTensor x, Dims dims) { return run1(OpKind::flip, {std::move(x)}, DimsAttrs{std::move(dims)}); }

DynTensor roll(DynTensor x, Sizes shifts, Dims dims) {
  if (dims.empty()) {
    EMBER_CHECK(shifts.size() == 1, "roll: without dims, exactly one shift is allowed, got ", shifts.size());
    Shape s = x.shape();
    return reshape(roll(flatten(std::move(x)), shifts, {0}), s.dims());
  }
  return run1(OpKind::roll, {std::move(x)}, RollAttrs{std::move(shifts), std::move(dims)});
}

DynTensor expand(DynTensor x, Sizes shape) {
  int off = int(shape.size()) - x.rank();
  EMBER_CHECK(off >= 0, "expand: target ", Shape(shape), " has fewer dims than the tensor ", x.shape());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      EMBER_CHECK(int(i) >= off, "expand: -1 is not allowed for a new leading dim (", Shape(shape), ")");
      shape[i] = x.shape()[int(i) - off];
    }
  }
  if (Shape(shape) == x.shape()) return x;
  return run1(OpKind::expand, {std::move(x)}, ShapeAttrs{Shape(std::move(shape))});
}

DynTensor repeat(DynTensor x, Sizes reps) {
  EMBER_CHECK(int(reps.size()) >= x.rank(), "repeat: ", reps.size(), " repeats for a tensor of rank ", x.rank());
  for (int64_t r : reps) EMBER_CHECK(r >= 0, "repeat: repeats must be non-negative, got ", r);
  int off = int(reps.size()) - x.rank();
  Sizes src(off, 1), expanded, out;
  src.insert(src.end(), x.shape().begin(), x.shape().end());
  Sizes inter;  // [r0, s0, r1, s1, ...]
  for (size_t i = 0; i < reps.size(); ++i) {
    inter.push_back(1);
    inter.push_back(src[i]);
    expanded.push_back(reps[i]);
    expanded.push_back(src[i]);
    out.push_back(reps[i] * src[i]);
  }
  DynTensor y = reshape(std::move(x), inter);
  y = expand(std::move(y), expanded);
  return reshape(contiguous(std::move(y)), out);
}

DynTensor tile(DynTensor x, Sizes reps) {
  while (int(reps.size()) < x.rank()) reps.insert(reps.begin(), 1);
  return repeat(std::move(x), std::move(reps));
}

namespace {
SliceRange normalize_slice(const Slice& s, int64_t size, int dim) {
  EMBER_CHECK(s.step >= 1, "slice: step must be positive, got ", s.step, " for dim ", dim);
  auto clampi = [&](int64_t v) {
    if (v < 0) v += size;
    return std::clamp<int64_t>(v, 0, size);
  };
  int64_t start = s.start ? clampi(*s.start) : 0;
  int64_t end = s.end ? clampi(*s.end) : size;
  if (end < start) end = start;
  return {start, end, s.step};
}
SliceAttrs slice_attrs(const Shape& shape, const std::vector<Slice>& ranges) {
  EMBER_CHECK(int(ranges.size()) <= shape.rank(), "slice: ", ranges.size(), " ranges for a tensor of shape ", shape);
  SliceAttrs a;
  for (int d = 0; d < shape.rank(); ++d)
    a.ranges.push_back(d < int(ranges.size()) ? normalize_slice(ranges[d], shape[d], d)
                                              : SliceRange{0, shape[d], 1});
  return a;
}
}  // namespace

DynTensor slice(DynTensor x, std::vector<Slice> ranges) {
  SliceAttrs a = slice_attrs(x.shape(), ranges);
  bool identity = true;
  for (int d = 0; d < x.rank(); ++d)
    if (a.ranges[d].start != 0 || a.ranges[d].end != x.shape()[d] || a.ranges[d].step != 1) identity = false;
  if (identity) return x;
  return run1(OpKind::slice, {std::move(x)}, std::move(a));
}

DynTensor slice_assign(DynTensor x, std::vector<Slice> ranges, DynTensor value) {
  SliceAttrs a = slice_attrs(x.shape(), ranges);
  Sizes s;
  for (auto& r : a.ranges) s.push_back(r.length());
  value = cast_to(std::move(value), x.dtype());
  if (Shape(s) != value.shape()) value = expand(std::move(value), s);
  return run1(OpKind::slice_assign, {std::move(x), std::move(value)}, std::move(a));
}

DynTensor narrow(DynTensor x, int dim, int64_t start, int64_t length) {
  int d = normalize_dim(dim, x.rank(), "narrow");
  int64_t n = x.shape()[d];
  if (start < 0) start += n;
  EMBER_CHECK(start >= 0 && length >= 0 && start + length <= n, "narrow: start ", start, " and length ", length,
              " are out of range for dim ", d, " of ", x.shape());
  std::vector<Slice> r(d + 1);
  r[d] = Slice{start, start + length, 1};
  return slice(std::move(x), std::move(r));
}

std::vector<DynTensor> split(DynTensor x, Sizes sections, int dim) {
  int d = normalize_dim(dim, x.rank(), "split");
  int64_t total = 0;
  for (int64_t s : sections) {
    EMBER_CHECK(s >= 0, "split: negative section size ", s);
    total += s;
  }
  EMBER_CHECK(total == x.shape()[d], "split: sections sum to ", total, ", dim ", d, " of ", x.shape(), " has ",
              x.shape()[d]);
  std::vector<DynTensor> out;
  int64_t start = 0;
  for (int64_t s : sections) {
    out.push_back(narrow(x, d, start, s));
    start += s;
  }
  return out;
}

std::vector<DynTensor> split(DynTensor x, int64_t size, int dim) {
  EMBER_CHECK(size > 0, "split: split_size must be positive, got ", size);
  int d = normalize_dim(dim, x.rank(), "split");
  int64_t n = x.shape()[d];
  Sizes sections;
  for (int64_t s = 0; s < n; s += size) sections.push_back(std::min(size, n - s));
  if (sections.empty()) sections.push_back(0);
  return split(std::move(x), std::move(sections), d);
}

std::vector<DynTensor> chunk(DynTensor x, int64_t chunks, int dim) {
  EMBER_CHECK(chunks > 0, "chunk: number of chunks must be positive, got ", chunks);
  int d = normalize_dim(dim, x.rank(), "chunk");
  int64_t n = x.shape()[d];
  int64_t size = std::max<int64_t>((n + chunks - 1) / chunks, 1);
  return split(std::move(x), size, d);
}

DynTensor cat(std::vector<DynTensor> xs, int dim) {
  EMBER_CHECK(!xs.empty(), "cat: needs at least one tensor");
  DType dt = xs[0].dtype();
  for (auto& t : xs) dt = promote_types(dt, t.dtype());
  for (auto& t : xs) t = cast_to(std::move(t), dt);
  if (xs.size() == 1) return xs[0];
  return run1(OpKind::cat, std::move(xs), DimAttrs{dim});
}

DynTensor stack(std::vector<DynTensor> xs, int dim) {
  EMBER_CHECK(!xs.empty(), "stack: needs at least one tensor");
  int d = normalize_dim(dim, xs[0].rank() + 1, "stack");
  for (size_t i = 1; i < xs.size(); ++i)
    EMBER_CHECK(xs[i].shape() == xs[0].shape(), "stack: tensor ", i, " has shape ", xs[i].shape(),
                ", tensor 0 has ", xs[0].shape());
  for (auto& t : xs) t = unsqueeze(std::move(t), d);
  return cat(std::move(xs), d);
}

DynTensor pad(DynTensor x, Sizes pads, PadMode mode, double value) {
  EMBER_CHECK(pads.size() % 2 == 0 && int(pads.size()) <= 2 * x.rank(), "pad: ", pads.size(),
              " pad values for a tensor of shape ", x.shape(), " (need an even number, at most ", 2 * x.rank(), ")");
  PadAttrs a;
  a.mode = mode;
  a.value = value;
  a.pads.assign(2 * x.rank(), 0);
  // PyTorch order: the last dim first
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    int d = x.rank() - 1 - int(i);
    a.pads[2 * d] = pads[2 * i];
    a.pads[2 * d + 1] = pads[2 * i + 1];
  }
  return run1(OpKind::pad, {std::move(x)}, std::move(a));
}

DynTensor tril(DynTensor x, int64_t k) { return run1(OpKind::tril, {std::move(x)}, DimAttrs{0, false, k}); }
DynTensor triu(DynTensor x, int64_t k) { return run1(OpKind::triu, {std::move(x)}, DimAttrs{0, false, k}); }

DynTensor one_hot(DynTensor indices, int64_t num_classes) {
  EMBER_CHECK(indices.dtype() == DType::i64, "one_hot: indices must be i64, got ", indices.dtype());
  if (num_classes < 0) num_classes = int64_t(max(indices).item()) + 1;
  EMBER_CHECK(indices.numel() == 0 || int64_t(min(indices).item()) >= 0, "one_hot: indices must be non-negative");
  EMBER_CHECK(indices.numel() == 0 || int64_t(max(indices).item()) < num_classes, "one_hot: index ",
              int64_t(max(indices).item()), " is out of range for ", num_classes, " classes");
  DynTensor classes = DynTensor::arange(0, num_classes, 1, DType::i64, indices.device());
  return cast(equal(unsqueeze(std::move(indices), -1), std::move(classes)), DType::i64);
}

}  // namespace ember
