// Shape and indexing ONNX ops: Reshape, Flatten, Transpose, (Un)Squeeze, Concat, Split, Slice,
// Gather*, Scatter*, Expand, Tile, Pad, Shape, Size, Constant*, Range, Trilu, OneHot, NonZero, ...
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops.hpp"

namespace ember::onnx::detail {
namespace {

DynTensor i64_vector(const std::vector<int64_t>& v, const Device& d) {
  return DynTensor::from_vector<int64_t>(v, Shape{int64_t(v.size())}, d);
}

std::vector<int64_t> axes_of(const OpContext& c, size_t input, int rank) {
  std::optional<std::vector<int64_t>> a = c.opset >= 13 ? c.ints_input(input) : c.attr_ints("axes");
  std::vector<int64_t> out;
  if (a)
    for (int64_t x : *a) out.push_back(normalize_axis(x, rank, c));
  return out;
}

// Indices with negative values counted from the end of a dim of size n, as i64.
DynTensor wrap_indices(DynTensor idx, int64_t n) {
  idx = cast(std::move(idx), DType::i64);
  return where(lower(idx, int64_t(0)), add(idx, n), idx);
}

Sizes broadcast_shapes(const Sizes& a, const Sizes& b, const OpContext& c) {
  size_t r = std::max(a.size(), b.size());
  Sizes out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1) c.fail("shapes " + Shape(a).str() + " and " + Shape(b).str() + " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// ONNX pads [x1_begin, x2_begin, ..., x1_end, x2_end, ...] applied to x (negative values crop).
DynTensor apply_pads(const OpContext& c, DynTensor x, const std::vector<int64_t>& pads, PadMode mode, double value) {
  int r = x.rank();
  if (int(pads.size()) != 2 * r) c.fail("pads has " + std::to_string(pads.size()) + " values for rank " + std::to_string(r));
  std::vector<Slice> crop(static_cast<size_t>(r));
  bool any_crop = false;
  Sizes tp(size_t(2 * r), 0);
  for (int d = 0; d < r; ++d) {
    int64_t b = pads[size_t(d)], e = pads[size_t(d + r)];
    if (b < 0 || e < 0) {
      any_crop = true;
      crop[size_t(d)] = Slice{b < 0 ? -b : 0, x.shape()[d] - (e < 0 ? -e : 0), 1};
    }
    tp[size_t(2 * (r - 1 - d))] = std::max<int64_t>(b, 0);
    tp[size_t(2 * (r - 1 - d) + 1)] = std::max<int64_t>(e, 0);
  }
  if (any_crop) x = slice(x, crop);
  bool any = std::any_of(tp.begin(), tp.end(), [](int64_t v) { return v != 0; });
  if (!any) return x;
  if (mode == PadMode::reflect)
    for (int d = 0; d < r; ++d)
      if (x.shape()[d] <= std::max(tp[size_t(2 * (r - 1 - d))], tp[size_t(2 * (r - 1 - d) + 1)]))
        c.unsupported("reflect padding wider than the input");
  return pad(x, tp, mode, value);
}

}  // namespace

DynTensor constant_from_attribute(const OpContext& c);

void register_shape_ops(OpTable& t) {
  t["Reshape"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    std::vector<int64_t> shape;
    if (c.opset < 5) shape = c.attr_ints("shape").value_or(std::vector<int64_t>{});
    else shape = c.required_ints(1);
    bool allowzero = c.attr_i("allowzero", 0) != 0;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0 && !allowzero) {
        if (int(i) >= x.rank()) c.fail("shape[" + std::to_string(i) + "] = 0 copies a dim the input lacks");
        shape[i] = x.shape()[int(i)];
      }
    }
    return {reshape(x, shape)};
  };
  t["Flatten"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    int64_t axis = c.attr_i("axis", 1);
    if (axis < 0) axis += x.rank();
    if (axis < 0 || axis > x.rank()) c.fail("axis out of range");
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
    int64_t inner = 1;
    for (int d = int(axis); d < x.rank(); ++d) inner *= x.shape()[d];
    return {reshape(x, {outer, inner})};
  };
  t["Transpose"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    Dims perm;
    if (auto p = c.attr_ints("perm")) {
      for (int64_t v : *p) perm.push_back(int(v));
    } else {
      for (int d = x.rank() - 1; d >= 0; --d) perm.push_back(d);
    }
    return {permute(x, perm)};
  };
  t["Squeeze"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    std::vector<int64_t> axes = axes_of(c, 1, x.rank());
    Sizes shape;
    for (int d = 0; d < x.rank(); ++d) {
      bool listed = std::find(axes.begin(), axes.end(), d) != axes.end();
      if (axes.empty() ? x.shape()[d] == 1 : listed) {
        if (x.shape()[d] != 1) c.fail("cannot squeeze dim " + std::to_string(d) + " of shape " + x.shape().str());
        continue;
      }
      shape.push_back(x.shape()[d]);
    }
    return {reshape(x, shape)};
  };
  t["Unsqueeze"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    std::optional<std::vector<int64_t>> a = c.opset >= 13 ? c.ints_input(1) : c.attr_ints("axes");
    if (!a) c.fail("axes are required");
    int out_rank = x.rank() + int(a->size());
    std::vector<bool> is_new(size_t(out_rank), false);
    for (int64_t v : *a) {
      int d = normalize_axis(v, out_rank, c);
      if (is_new[size_t(d)]) c.fail("repeated axis");
      is_new[size_t(d)] = true;
    }
    Sizes shape;
    int k = 0;
    for (int d = 0; d < out_rank; ++d) shape.push_back(is_new[size_t(d)] ? 1 : x.shape()[k++]);
    return {reshape(x, shape)};
  };
  t["Concat"] = [](OpContext& c) -> OpResult {
    std::vector<DynTensor> xs;
    for (size_t i = 0; i < c.num_inputs(); ++i) xs.push_back(c.in(i));
    int axis = normalize_axis(c.attr_i("axis", 0), xs[0].rank(), c);
    return {cat(xs, axis)};
  };
  t["Split"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    int axis = normalize_axis(c.attr_i("axis", 0), x.rank(), c);
    std::optional<std::vector<int64_t>> sizes = c.opset >= 13 ? c.ints_input(1) : c.attr_ints("split");
    int64_t n = x.shape()[axis];
    size_t outs = c.num_outputs();
    if (!sizes) {
      int64_t num = c.attr_i("num_outputs", int64_t(outs));
      int64_t each = (n + num - 1) / num;
      sizes = std::vector<int64_t>();
      for (int64_t i = 0, left = n; i < num; ++i, left -= each) sizes->push_back(std::min(each, left));
    }
    std::vector<DynTensor> parts = split(x, *sizes, axis);
    return OpResult(parts.begin(), parts.end());
  };
  t["Slice"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    std::vector<int64_t> starts, ends, axes, steps;
    if (c.opset < 10) {
      starts = c.attr_ints("starts").value_or(std::vector<int64_t>{});
      ends = c.attr_ints("ends").value_or(std::vector<int64_t>{});
      axes = c.attr_ints("axes").value_or(std::vector<int64_t>{});
    } else {
      starts = c.required_ints(1);
      ends = c.required_ints(2);
      axes = c.ints_input(3).value_or(std::vector<int64_t>{});
      steps = c.ints_input(4).value_or(std::vector<int64_t>{});
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      c.fail("starts, ends, axes and steps differ in length");
    std::vector<Slice> ranges(static_cast<size_t>(x.rank()));
    Dims flips;  // dims sliced with a negative step: flipped, then sliced forwards
    for (size_t i = 0; i < starts.size(); ++i) {
      int d = normalize_axis(axes[i], x.rank(), c);
      int64_t n = x.shape()[d], s = starts[i], e = ends[i], st = steps[i];
      if (st == 0) c.fail("step 0");
      if (s < 0) s += n;
      if (e < 0) e += n;
      if (st > 0) {
        s = std::clamp<int64_t>(s, 0, n);
        e = std::clamp<int64_t>(e, 0, n);
        ranges[size_t(d)] = Slice{s, std::max(e, s), st};
      } else {
        s = std::clamp<int64_t>(s, 0, n - 1);
        e = std::clamp<int64_t>(e, -1, n - 1);
        flips.push_back(d);
        if (n == 0 || e >= s) ranges[size_t(d)] = Slice{0, 0, 1};
        else ranges[size_t(d)] = Slice{n - 1 - s, n - 1 - e, -st};  // on the flipped dim
      }
    }
    return {slice(flips.empty() ? x : flip(x, flips), ranges)};
  };
  t["Gather"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    int axis = normalize_axis(c.attr_i("axis", 0), x.rank(), c);
    const DynTensor& idx = c.in(1);
    DynTensor flat = reshape(wrap_indices(idx, x.shape()[axis]), {idx.numel()});
    DynTensor g = index_select(x, axis, flat);
    Sizes shape;
    for (int d = 0; d < axis; ++d) shape.push_back(x.shape()[d]);
    for (int64_t v : idx.shape()) shape.push_back(v);
    for (int d = axis + 1; d < x.rank(); ++d) shape.push_back(x.shape()[d]);
    return {reshape(g, shape)};
  };
  t["GatherElements"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    int axis = normalize_axis(c.attr_i("axis", 0), x.rank(), c);
    return {gather(x, axis, wrap_indices(c.in(1), x.shape()[axis]))};
  };
  auto scatter_elements = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    int axis = normalize_axis(c.attr_i("axis", 0), x.rank(), c);
    DynTensor idx = wrap_indices(c.in(1), x.shape()[axis]);
    std::string red = c.attr_s("reduction", "none");
    if (red == "none") return {scatter(x, axis, idx, c.in(2))};
    if (red == "add") return {scatter_add(x, axis, idx, c.in(2))};
    c.unsupported("reduction '" + red + "'");
  };
  t["ScatterElements"] = scatter_elements;
  t["Scatter"] = scatter_elements;
  t["Expand"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    Sizes shape = broadcast_shapes(x.shape().dims(), c.required_ints(1), c);
    return {expand(x, shape)};
  };
  t["Tile"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    std::vector<int64_t> reps = c.required_ints(1);
    if (int(reps.size()) != x.rank()) c.fail("repeats must have one value per dim");
    return {tile(x, reps)};
  };
  t["Pad"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    std::string mode = c.attr_s("mode", "constant");
    PadMode m = mode == "constant" ? PadMode::constant
                : mode == "reflect" ? PadMode::reflect
                : mode == "edge"    ? PadMode::replicate
                                    : (c.unsupported("mode '" + mode + "'"), PadMode::constant);
    std::vector<int64_t> pads;
    double value = 0;
    if (c.opset < 11) {
      pads = c.attr_ints("pads").value_or(std::vector<int64_t>{});
      value = c.attr_f("value", 0.0f);
    } else {
      pads = c.required_ints(1);
      if (c.has(2)) value = scalar_of(c.in(2)).value;
      if (c.has(3)) {
        std::vector<int64_t> axes = c.required_ints(3), full(size_t(2 * x.rank()), 0);
        for (size_t i = 0; i < axes.size(); ++i) {
          int d = normalize_axis(axes[i], x.rank(), c);
          full[size_t(d)] = pads[i];
          full[size_t(d + x.rank())] = pads[i + axes.size()];
        }
        pads = full;
      }
    }
    return {apply_pads(c, x, pads, m, value)};
  };
  t["Shape"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    int64_t r = x.rank();
    int64_t s = c.attr_i("start", 0), e = c.attr_i("end", r);
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = std::clamp<int64_t>(s, 0, r);
    e = std::clamp<int64_t>(e, 0, r);
    std::vector<int64_t> dims;
    for (int64_t d = s; d < e; ++d) dims.push_back(x.shape()[int(d)]);
    return {i64_vector(dims, c.device)};
  };
  t["Size"] = [](OpContext& c) -> OpResult {
    return {DynTensor::from_vector<int64_t>({c.in(0).numel()}, Shape{}, c.device)};
  };
  t["Constant"] = [](OpContext& c) -> OpResult { return {constant_from_attribute(c)}; };
  t["ConstantOfShape"] = [](OpContext& c) -> OpResult {
    std::vector<int64_t> shape = c.required_ints(0);
    DType dt = DType::f32;
    Scalar v(0.0f);
    if (const AttributeProto* a = c.attr("value")) {
      DynTensor vt = tensor_from_proto(a->t, c);
      dt = vt.dtype();
      v = scalar_of(vt);
    }
    return {DynTensor::full(Shape(shape), v, dt, c.device)};
  };
  t["Range"] = [](OpContext& c) -> OpResult {
    const DynTensor& st = c.in(0);
    DType dt = st.dtype();
    double s = scalar_of(st).value, l = scalar_of(c.in(1)).value, d = scalar_of(c.in(2)).value;
    if (d == 0) c.fail("delta is 0");
    double steps = std::ceil((l - s) / d);
    if (!(steps < double(int64_t(1) << 40))) c.fail("too many elements (" + std::to_string(steps) + ")");
    int64_t n = std::max<int64_t>(int64_t(steps), 0);
    std::vector<double> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(s + double(i) * d);
    return {DynTensor::from_data(TensorData::from_doubles(v, Shape{n}, dt), c.device)};
  };
  t["Trilu"] = [](OpContext& c) -> OpResult {
    int64_t k = 0;
    if (c.has(1)) k = int64_t(scalar_of(c.in(1)).value);
    bool upper = c.attr_i("upper", 1) != 0;
    return {upper ? triu(c.in(0), k) : tril(c.in(0), k)};
  };
  t["OneHot"] = [](OpContext& c) -> OpResult {
    const DynTensor& idx = c.in(0);
    int64_t depth = int64_t(scalar_of(c.in(1)).value);
    const DynTensor& values = c.in(2);
    int axis = normalize_axis(c.attr_i("axis", -1), idx.rank() + 1, c);
    DynTensor i = cast(is_float(idx.dtype()) ? trunc(idx) : idx, DType::i64);
    i = where(lower(i, int64_t(0)), add(i, depth), i);
    i = unsqueeze(i, axis);
    Sizes shape(size_t(idx.rank() + 1), 1);
    shape[size_t(axis)] = depth;
    DynTensor r = reshape(DynTensor::arange(int64_t(0), depth, int64_t(1), DType::i64, c.device), shape);
    DynTensor off = reshape(narrow(values, 0, 0, 1), {});
    DynTensor on = reshape(narrow(values, 0, 1, 1), {});
    return {where(equal(i, r), on, off)};
  };
  t["NonZero"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    if (x.rank() == 0) c.unsupported("a 0-d input");
    return {cast(transpose(nonzero(x), 0, 1), DType::i64)};
  };
  t["EyeLike"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    if (x.rank() != 2) c.fail("input must be 2-d");
    DType dt = c.attr("dtype") ? dtype_of_onnx(int32_t(c.attr_i("dtype", 1)), c) : x.dtype();
    int64_t k = c.attr_i("k", 0), n = x.shape()[0], m = x.shape()[1];
    std::vector<double> v(size_t(n * m), 0.0);
    for (int64_t i = 0; i < n; ++i)
      if (i + k >= 0 && i + k < m) v[size_t(i * m + i + k)] = 1;
    return {DynTensor::from_data(TensorData::from_doubles(v, Shape{n, m}, dt), c.device)};
  };
  t["DepthToSpace"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    int64_t b = c.attr_i("blocksize", 0);
    if (x.rank() != 4 || b <= 0) c.fail("needs a 4-d input and a positive blocksize");
    int64_t n = x.shape()[0], ch = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
    std::string mode = c.attr_s("mode", "DCR");
    DynTensor y;
    if (mode == "DCR") y = permute(reshape(x, {n, b, b, ch / (b * b), h, w}), {0, 3, 4, 1, 5, 2});
    else if (mode == "CRD") y = permute(reshape(x, {n, ch / (b * b), b, b, h, w}), {0, 1, 4, 2, 5, 3});
    else c.unsupported("mode '" + mode + "'");
    return {reshape(y, {n, ch / (b * b), h * b, w * b})};
  };
  t["SpaceToDepth"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    int64_t b = c.attr_i("blocksize", 0);
    if (x.rank() != 4 || b <= 0) c.fail("needs a 4-d input and a positive blocksize");
    int64_t n = x.shape()[0], ch = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
    DynTensor y = permute(reshape(x, {n, ch, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
    return {reshape(y, {n, ch * b * b, h / b, w / b})};
  };
}

DynTensor constant_from_attribute(const OpContext& c) {
  const NodeProto& n = c.node;
  if (n.attributes.size() != 1) c.fail("needs exactly one value attribute");
  const AttributeProto& a = n.attributes[0];
  const Device& d = c.device;
  if (a.name == "value") return tensor_from_proto(a.t, c);
  if (a.name == "value_float") return DynTensor::from_vector<float>({a.f}, Shape{}, d);
  if (a.name == "value_floats") return DynTensor::from_vector<float>(a.floats, Shape{int64_t(a.floats.size())}, d);
  if (a.name == "value_int") return DynTensor::from_vector<int64_t>({a.i}, Shape{}, d);
  if (a.name == "value_ints") return DynTensor::from_vector<int64_t>(a.ints, Shape{int64_t(a.ints.size())}, d);
  c.unsupported("attribute '" + a.name + "'");
}

}  // namespace ember::onnx::detail
