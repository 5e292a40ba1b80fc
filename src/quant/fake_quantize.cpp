// Fake quantization with the straight-through estimator, composed from ops that have autodiff
// rules: the rounded value is computed on a detached copy, and (x - detach(x)) * mask, which is 0
// in value, carries the gradient where the value was inside the grid's range.
#include "ember/quant/fake_quantize.hpp"

#include <cmath>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::quant {
namespace {

// x's fake-quantized value and, for a tracked x, the gradient path. s and z broadcast against x
// and are in the compute dtype.
DynTensor fake_quantize_with(const DynTensor& x, const DynTensor& s, const DynTensor& z, int64_t qmin, int64_t qmax) {
  const DType ct = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  DynTensor xd = x.detach();
  DynTensor r = add(round(div(xd.cast(ct), s)), z);  // the unclamped integer value
  DynTensor fq = mul(sub(clamp(r, Scalar(double(qmin)), Scalar(double(qmax))), z), s).cast(x.dtype());
  if (!x.is_require_grad()) return fq;
  DynTensor inside = bool_and(greater_equal(r, double(qmin)), lower_equal(r, double(qmax)));
  return add(std::move(fq), mul(sub(x, xd), inside.cast(x.dtype())));
}

void check_args(const DynTensor& x, int64_t qmin, int64_t qmax, const char* fn) {
  EMBER_CHECK(x.defined(), fn, ": x is undefined");
  EMBER_CHECK(is_float(x.dtype()), fn, ": x has dtype ", x.dtype(), " (shape ", x.shape(),
              "); fake quantization takes floating tensors");
  EMBER_CHECK(qmin < qmax, fn, ": qmin ", qmin, " must be less than qmax ", qmax);
}

}  // namespace

DynTensor fake_quantize(const DynTensor& x, double scale, int64_t zero_point, int64_t qmin, int64_t qmax) {
  const char* fn = "quant::fake_quantize";
  check_args(x, qmin, qmax, fn);
  EMBER_CHECK(std::isfinite(scale) && scale > 0, fn, ": scale is ", scale, "; it must be positive and finite");
  EMBER_CHECK(zero_point >= qmin && zero_point <= qmax, fn, ": zero_point ", zero_point, " is outside [qmin, qmax] = [",
              qmin, ", ", qmax, "]");
  const DType ct = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  if (ct == DType::f32) EMBER_CHECK(float(scale) > 0, fn, ": scale ", scale, " is 0 in f32");
  DynTensor s = DynTensor::full(Shape{}, scale, ct, x.device());
  DynTensor z = DynTensor::full(Shape{}, double(zero_point), ct, x.device());
  return fake_quantize_with(x, s, z, qmin, qmax);
}

DynTensor fake_quantize(const DynTensor& x, const DynTensor& scale, const DynTensor& zero_point, int axis,
                        int64_t qmin, int64_t qmax) {
  const char* fn = "quant::fake_quantize";
  check_args(x, qmin, qmax, fn);
  const int rank = x.rank();
  EMBER_CHECK(axis >= -rank && axis < rank, fn, ": axis ", axis, " is out of range for x of shape ", x.shape());
  const int a = axis < 0 ? axis + rank : axis;
  const int64_t c = x.shape()[a];
  EMBER_CHECK(scale.defined() && zero_point.defined() && scale.rank() == 1 && zero_point.rank() == 1 &&
                  scale.numel() == c && zero_point.numel() == c,
              fn, ": scale and zero_point must be 1-d with ", c, " entries (x ", x.shape(), ", axis ", axis, "), got ",
              scale.defined() ? scale.shape() : Shape{}, " and ", zero_point.defined() ? zero_point.shape() : Shape{});
  EMBER_CHECK(is_float(scale.dtype()), fn, ": scale has dtype ", scale.dtype(), "; it must be floating");
  const DType ct = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  DynTensor s = scale.detach().to(x.device()).cast(ct), z = zero_point.detach().to(x.device()).cast(ct);
  const std::vector<double> sv = s.to_vector<double>(), zv = zero_point.to_vector<double>();
  for (size_t i = 0; i < sv.size(); ++i) {
    EMBER_CHECK(std::isfinite(sv[i]) && sv[i] > 0, fn, ": scale[", i, "] is ", sv[i],
                "; scales must be positive and finite");
    EMBER_CHECK(zv[i] == std::nearbyint(zv[i]) && zv[i] >= double(qmin) && zv[i] <= double(qmax), fn,
                ": zero_point[", i, "] is ", zv[i], "; zero points must be integers in [qmin, qmax] = [", qmin, ", ",
                qmax, "]");
  }
  Sizes view(size_t(rank), 1);
  view[size_t(a)] = c;
  return fake_quantize_with(x, s.reshape(view), z.reshape(view), qmin, qmax);
}

}  // namespace ember::quant
