// Resize (opset 10+: nearest / linear / cubic, every coordinate_transformation_mode of ONNX
// 1.12) and Upsample. Each resized axis is a [out, in] weight matrix built on the host, as
// the ONNX reference computes it (edge-padded neighbours, ratio in (0, 1]); nearest uses an
// index_select (exact for every dtype), linear / cubic a matmul along the axis. Axes are
// applied last to first, as the reference recursion does.
#include <algorithm>
#include <cmath>

#include "ops.hpp"

namespace ember::onnx::detail {
namespace {

enum class Mode { nearest, linear, cubic };

struct AxisPlan {
  std::vector<std::vector<std::pair<int64_t, double>>> taps;  // per output index
  std::vector<bool> extrapolate;                              // per output index
};

AxisPlan plan_axis(const OpContext& c, int64_t in, int64_t out, double scale, Mode mode, const std::string& ctm,
                   const std::string& nearest_mode, double a, bool exclude_outside, double roi_start, double roi_end) {
  AxisPlan p;
  double out_width = scale * double(in);
  for (int64_t xo = 0; xo < out; ++xo) {
    double x = double(xo), xr = 0;
    bool extra = false;
    if (ctm == "align_corners") {
      xr = out_width == 1 ? 0.0 : x * double(in - 1) / (out_width - 1);
    } else if (ctm == "asymmetric") {
      xr = x / scale;
    } else if (ctm == "tf_crop_and_resize") {
      xr = out_width == 1 ? (roi_end - roi_start) * double(in - 1) / 2 : x * (roi_end - roi_start) * double(in - 1) / (out_width - 1);
      xr += roi_start * double(in - 1);
      if (xr < 0 || xr > double(in - 1)) extra = true;
    } else if (ctm == "pytorch_half_pixel") {
      xr = out_width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    } else if (ctm == "half_pixel") {
      xr = (x + 0.5) / scale - 0.5;
    } else {
      c.unsupported("coordinate_transformation_mode '" + ctm + "'");
    }
    p.extrapolate.push_back(extra);
    std::vector<std::pair<int64_t, double>> taps;
    if (!extra) {
      double fl = std::floor(xr);
      bool integral = xr == fl;
      double ratio = integral ? 1.0 : xr - fl;
      int64_t base = int64_t(fl) - (integral ? 1 : 0);  // the left neighbour, ratio in (0, 1]
      std::vector<double> coeffs;
      int64_t first;
      if (mode == Mode::nearest) {
        first = base;
        bool right;
        if (integral) right = true;
        else if (nearest_mode == "round_prefer_floor") right = ratio > 0.5;
        else if (nearest_mode == "round_prefer_ceil") right = ratio >= 0.5;
        else if (nearest_mode == "floor") right = false;
        else if (nearest_mode == "ceil") right = true;
        else c.unsupported("nearest_mode '" + nearest_mode + "'");
        coeffs = {right ? 0.0 : 1.0, right ? 1.0 : 0.0};
      } else if (mode == Mode::linear) {
        first = base;
        coeffs = {1 - ratio, ratio};
      } else {
        first = base - 1;
        double r = ratio, s = 1 - ratio;
        coeffs = {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a, ((a + 2) * r - (a + 3)) * r * r + 1,
                  ((a + 2) * s - (a + 3)) * s * s + 1, ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
      }
      int64_t pad = int64_t(coeffs.size() + 1) / 2;
      if (first < -pad || first + int64_t(coeffs.size()) - 1 >= in + pad)
        c.unsupported("sampling point far outside the input");
      if (exclude_outside) {
        double total = 0;
        for (size_t k = 0; k < coeffs.size(); ++k) {
          int64_t idx = first + int64_t(k);
          if (idx < 0 || idx >= in) coeffs[k] = 0;
          total += coeffs[k];
        }
        for (double& v : coeffs) v /= total;
      }
      for (size_t k = 0; k < coeffs.size(); ++k)
        if (coeffs[k] != 0) taps.emplace_back(std::clamp<int64_t>(first + int64_t(k), 0, in - 1), coeffs[k]);
    }
    p.taps.push_back(std::move(taps));
  }
  return p;
}

DynTensor apply_axis(const OpContext& c, DynTensor x, int axis, const AxisPlan& p, Mode mode, double extrapolation) {
  int64_t in = x.shape()[axis], out = int64_t(p.taps.size());
  bool any_extra = std::any_of(p.extrapolate.begin(), p.extrapolate.end(), [](bool b) { return b; });
  bool single = mode == Mode::nearest && !any_extra;
  for (const auto& t : p.taps)
    if (t.size() != 1 || t[0].second != 1.0) single = false;
  if (single) {
    std::vector<int64_t> idx;
    for (const auto& t : p.taps) idx.push_back(t[0].first);
    return index_select(x, axis, DynTensor::from_vector<int64_t>(idx, Shape{out}, c.device));
  }
  if (!is_float(x.dtype())) c.unsupported("interpolation of dtype " + std::string(dtype_name(x.dtype())));
  std::vector<double> w(size_t(in * out), 0.0);  // [in, out]
  for (int64_t o = 0; o < out; ++o)
    for (const auto& [i, v] : p.taps[size_t(o)]) w[size_t(i * out + o)] += v;
  DType compute = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  DynTensor wt = DynTensor::from_data(TensorData::from_doubles(w, Shape{in, out}, compute), c.device);
  DynTensor y = movedim(matmul(movedim(cast(x, compute), axis, -1), wt), -1, axis);
  if (any_extra) {
    std::vector<bool> m(p.extrapolate.begin(), p.extrapolate.end());
    Sizes shape(size_t(x.rank()), 1);
    shape[size_t(axis)] = out;
    DynTensor mt = DynTensor::from_vector<bool>(m, Shape(shape), c.device);
    y = where(mt, DynTensor::full(Shape{}, Scalar(extrapolation), compute, c.device), y);
  }
  return cast(y, x.dtype());
}

OpResult resize(OpContext& c, bool upsample) {
  const DynTensor& x = c.in(0);
  int r = x.rank();
  std::string m = c.attr_s("mode", "nearest");
  Mode mode = m == "nearest" ? Mode::nearest : (m == "linear" || m == "bilinear") ? Mode::linear
              : m == "cubic" ? Mode::cubic : (c.unsupported("mode '" + m + "'"), Mode::nearest);
  std::string ctm = c.attr_s("coordinate_transformation_mode", "half_pixel");
  std::string nearest_mode = c.attr_s("nearest_mode", "round_prefer_floor");
  if (upsample || c.opset < 11) {
    ctm = "asymmetric";
    nearest_mode = "floor";
  }
  if (c.attr("antialias") && c.attr_i("antialias", 0)) c.unsupported("antialias");
  if (c.attr("axes")) c.unsupported("axes");
  if (c.attr("keep_aspect_ratio_policy")) c.unsupported("keep_aspect_ratio_policy");
  double a = c.attr_f("cubic_coeff_a", -0.75f);
  bool exclude = c.attr_i("exclude_outside", 0) != 0;
  double extrapolation = c.attr_f("extrapolation_value", 0.0f);
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  size_t scales_input = (upsample || c.opset < 11) ? 1 : 2;
  if (upsample && c.opset < 9) {
    auto s = c.attr_floats("scales");
    if (!s) c.fail("scales are required");
    scales.assign(s->begin(), s->end());
  } else if (c.has(scales_input) && c.in(scales_input).numel() > 0) {
    scales = c.in(scales_input).to_vector<double>();
    // The reference computes in float32 for the scales (numpy float32 input)
    for (double& v : scales) v = double(float(v));
  }
  if (!upsample && c.opset >= 11) {
    if (c.has(3) && c.in(3).numel() > 0) sizes = c.required_ints(3);
    if (c.has(1) && c.in(1).numel() > 0) roi = c.in(1).to_vector<double>();
  }
  if (!sizes.empty()) {
    if (int(sizes.size()) != r) c.fail("sizes needs one value per dim");
    scales.clear();
    for (int d = 0; d < r; ++d) scales.push_back(double(sizes[size_t(d)]) / double(x.shape()[d]));
  } else {
    if (int(scales.size()) != r) c.fail("scales needs one value per dim");
    for (int d = 0; d < r; ++d) sizes.push_back(int64_t(scales[size_t(d)] * double(x.shape()[d])));
  }
  if (ctm == "tf_crop_and_resize" && int(roi.size()) != 2 * r) c.fail("roi needs 2 values per dim");
  DynTensor y = x;
  for (int d = r - 1; d >= 0; --d) {
    int64_t in = x.shape()[d];
    bool identity = sizes[size_t(d)] == in && scales[size_t(d)] == 1.0 && ctm != "tf_crop_and_resize";
    if (identity) continue;
    if (in == 0) c.unsupported("resizing an empty dim");
    double rs = roi.empty() ? 0 : roi[size_t(d)], re = roi.empty() ? 1 : roi[size_t(d + r)];
    AxisPlan p = plan_axis(c, in, sizes[size_t(d)], scales[size_t(d)], mode, ctm, nearest_mode, a, exclude, rs, re);
    y = apply_axis(c, y, d, p, mode, extrapolation);
  }
  return {y};
}

}  // namespace

void register_resize_ops(OpTable& t) {
  t["Resize"] = [](OpContext& c) { return resize(c, false); };
  t["Upsample"] = [](OpContext& c) { return resize(c, true); };
}

}  // namespace ember::onnx::detail
