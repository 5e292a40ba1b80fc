// Quantization schemes, quantize / dequantize and the 4-bit packing, composed from tensor ops
// (div, round, add, clamp, cast, bitwise ops) so they run on any device. Parameters are checked
// and computed on the host: there is one per tensor, channel or block, never one per element.
#include "ember/quant/quantized_tensor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::quant {

int bits(QType t) { return t == QType::int8 || t == QType::uint8 ? 8 : 4; }
bool is_signed(QType t) { return t == QType::int8 || t == QType::int4; }
int64_t qmin(QType t) { return is_signed(t) ? -(int64_t(1) << (bits(t) - 1)) : 0; }
int64_t qmax(QType t) { return is_signed(t) ? (int64_t(1) << (bits(t) - 1)) - 1 : (int64_t(1) << bits(t)) - 1; }
DType zero_point_dtype(QType t) { return is_signed(t) ? DType::i8 : DType::u8; }
DType data_dtype(QType t) { return t == QType::int8 ? DType::i8 : DType::u8; }

std::string_view qtype_name(QType t) {
  switch (t) {
    case QType::int8: return "int8";
    case QType::uint8: return "uint8";
    case QType::int4: return "int4";
    case QType::uint4: return "uint4";
  }
  return "?";
}

QType qtype_from_name(std::string_view name) {
  for (QType t : {QType::int8, QType::uint8, QType::int4, QType::uint4})
    if (qtype_name(t) == name) return t;
  EMBER_FAIL("quant: unknown quantized type '", name, "' (expected int8, uint8, int4 or uint4)");
}

std::string_view granularity_name(Granularity g) {
  switch (g) {
    case Granularity::per_tensor: return "per_tensor";
    case Granularity::per_channel: return "per_channel";
    case Granularity::per_block: return "per_block";
  }
  return "?";
}

Granularity granularity_from_name(std::string_view name) {
  for (Granularity g : {Granularity::per_tensor, Granularity::per_channel, Granularity::per_block})
    if (granularity_name(g) == name) return g;
  EMBER_FAIL("quant: unknown granularity '", name, "' (expected per_tensor, per_channel or per_block)");
}

QScheme QScheme::per_tensor(QType dtype, bool symmetric) {
  return QScheme{Granularity::per_tensor, 0, 0, symmetric, dtype};
}
QScheme QScheme::per_channel(int axis, QType dtype, bool symmetric) {
  return QScheme{Granularity::per_channel, axis, 0, symmetric, dtype};
}
QScheme QScheme::per_block(int axis, int64_t block_size, QType dtype, bool symmetric) {
  return QScheme{Granularity::per_block, axis, block_size, symmetric, dtype};
}

int QScheme::normalized_axis(int rank, std::string_view where) const {
  if (granularity == Granularity::per_tensor) return 0;
  EMBER_CHECK(axis >= -rank && axis < rank, where, ": axis ", axis, " is out of range for a tensor of rank ", rank,
              " (", str(), ")");
  return axis < 0 ? axis + rank : axis;
}

Shape QScheme::params_shape(const Shape& shape, std::string_view where) const {
  switch (granularity) {
    case Granularity::per_tensor: return Shape{};
    case Granularity::per_channel: return Shape{shape[normalized_axis(shape.rank(), where)]};
    case Granularity::per_block: {
      const int a = normalized_axis(shape.rank(), where);
      EMBER_CHECK(block_size > 0, where, ": block size ", block_size, " must be positive (", str(), ")");
      EMBER_CHECK(shape[a] % block_size == 0, where, ": block size ", block_size, " does not divide dim ", a,
                  " of size ", shape[a], " (shape ", shape, "); pad the tensor or pick a block size that divides it");
      Shape out = shape;
      out[a] = shape[a] / block_size;
      return out;
    }
  }
  return Shape{};
}

std::string QScheme::str() const {
  std::ostringstream os;
  os << granularity_name(granularity) << "(";
  if (granularity != Granularity::per_tensor) os << "axis=" << axis << ", ";
  if (granularity == Granularity::per_block) os << "block=" << block_size << ", ";
  os << qtype_name(dtype) << ", " << (symmetric ? "symmetric" : "affine") << ")";
  return os.str();
}

namespace {

// The fixed zero point of symmetric schemes: 0 for signed types, the midpoint for unsigned ones.
int64_t symmetric_zero_point(QType t) { return is_signed(t) ? 0 : (qmax(t) + 1) / 2; }

// The data tensor's shape for a logical shape: 4-bit types pack the last dim in pairs.
Shape data_shape(const Shape& shape, QType t, std::string_view where) {
  if (bits(t) == 8) return shape;
  EMBER_CHECK(shape.rank() >= 1, where, ": ", qtype_name(t),
              " values are packed along the last dim; a tensor of rank 0 has none (reshape it to [1])");
  Shape out = shape;
  out[-1] = (shape[-1] + 1) / 2;
  return out;
}

// How a tensor and its parameters line up for broadcasting: per block, the blocked dim is split
// into (blocks, block_size) and the parameters get a 1 after it.
struct Layout {
  Sizes x_view;  // the tensor reshaped
  Sizes p_view;  // the parameters reshaped
};

Layout layout_of(const Shape& shape, const QScheme& s, std::string_view where) {
  Layout l;
  l.x_view.assign(shape.begin(), shape.end());
  const Shape p = s.params_shape(shape, where);
  switch (s.granularity) {
    case Granularity::per_tensor: break;
    case Granularity::per_channel: {
      const int a = s.normalized_axis(shape.rank(), where);
      l.p_view.assign(size_t(shape.rank()), 1);
      l.p_view[size_t(a)] = shape[a];
      break;
    }
    case Granularity::per_block: {
      const int a = s.normalized_axis(shape.rank(), where);
      l.x_view[size_t(a)] = p[a];
      l.x_view.insert(l.x_view.begin() + a + 1, s.block_size);
      l.p_view.assign(p.begin(), p.end());
      l.p_view.insert(l.p_view.begin() + a + 1, 1);
      break;
    }
  }
  return l;
}

void check_floating(const DynTensor& x, std::string_view where) {
  EMBER_CHECK(x.defined(), where, ": x is undefined");
  EMBER_CHECK(is_float(x.dtype()), where, ": x has dtype ", x.dtype(), " (shape ", x.shape(),
              "); only floating tensors (f32, f64, f16, bf16) can be quantized");
}

DynTensor reshaped(const DynTensor& t, const Shape& shape) { return t.reshape(Sizes(shape.begin(), shape.end())); }

// Scales: positive and finite; zero points: in range, and the fixed value of symmetric schemes.
// Both are read to the host (one value per tensor, channel or block).
void check_param_values(const DynTensor& scale, const DynTensor& zero_point, const QScheme& s,
                        std::string_view where) {
  const std::vector<float> sv = scale.to_vector<float>();
  for (size_t i = 0; i < sv.size(); ++i)
    EMBER_CHECK(std::isfinite(sv[i]) && sv[i] > 0, where, ": scale[", i, "] is ", sv[i],
                "; scales must be positive and finite");
  const std::vector<int64_t> zv = zero_point.to_vector<int64_t>();
  const int64_t lo = qmin(s.dtype), hi = qmax(s.dtype), sym = symmetric_zero_point(s.dtype);
  for (size_t i = 0; i < zv.size(); ++i) {
    EMBER_CHECK(zv[i] >= lo && zv[i] <= hi, where, ": zero_point[", i, "] is ", zv[i], ", outside ",
                qtype_name(s.dtype), "'s range [", lo, ", ", hi, "]");
    EMBER_CHECK(!s.symmetric || zv[i] == sym, where, ": zero_point[", i, "] is ", zv[i], " but the scheme ", s.str(),
                " is symmetric, whose zero point is ", sym, " (use an affine scheme for other zero points)");
  }
}

}  // namespace

QuantizedTensor::QuantizedTensor(DynTensor data, DynTensor scale, DynTensor zero_point, Shape shape, QScheme scheme,
                                 std::string_view where)
    : data_(std::move(data)), scale_(std::move(scale)), zero_point_(std::move(zero_point)), shape_(std::move(shape)),
      scheme_(scheme) {
  EMBER_CHECK(data_.defined() && scale_.defined() && zero_point_.defined(), where,
              ": data, scale and zero_point must all be defined");
  const Shape p = scheme_.params_shape(shape_, where);
  const Shape d = data_shape(shape_, scheme_.dtype, where);
  EMBER_CHECK(data_.dtype() == data_dtype(scheme_.dtype) && data_.shape() == d, where, ": data is ", data_.dtype(), " ",
              data_.shape(), " but a ", scheme_.str(), " tensor of shape ", shape_, " stores ",
              data_dtype(scheme_.dtype), " ", d);
  EMBER_CHECK(scale_.dtype() == DType::f32 && scale_.shape() == p, where, ": scale is ", scale_.dtype(), " ",
              scale_.shape(), " but ", scheme_.str(), " of shape ", shape_, " needs f32 ", p);
  EMBER_CHECK(zero_point_.dtype() == zero_point_dtype(scheme_.dtype) && zero_point_.shape() == p, where,
              ": zero_point is ", zero_point_.dtype(), " ", zero_point_.shape(), " but ", scheme_.str(), " of shape ",
              shape_, " needs ", zero_point_dtype(scheme_.dtype), " ", p);
  check_param_values(scale_, zero_point_, scheme_, where);
}

int64_t QuantizedTensor::nbytes() const {
  int64_t n = 0;
  for (const DynTensor* t : {&data_, &scale_, &zero_point_})
    if (t->defined()) n += t->numel() * int64_t(dtype_size(t->dtype()));
  return n;
}

DynTensor QuantizedTensor::values() const {
  EMBER_CHECK(defined(), "quant::QuantizedTensor::values: the tensor is undefined");
  if (bits(scheme_.dtype) == 8) return data_;
  return unpack_int4(data_, shape_[-1], is_signed(scheme_.dtype));
}

DynTensor QuantizedTensor::dequantize() const {
  EMBER_CHECK(defined(), "quant::dequantize: the tensor is undefined");
  const Layout l = layout_of(shape_, scheme_, "quant::dequantize");
  DynTensor v = values().cast(DType::f32).reshape(l.x_view);
  DynTensor z = zero_point_.cast(DType::f32).reshape(l.p_view);
  DynTensor s = scale_.reshape(l.p_view);
  return reshaped(mul(sub(std::move(v), std::move(z)), std::move(s)), shape_);
}

QuantizedTensor QuantizedTensor::to(const Device& device) const {
  QuantizedTensor q = *this;
  if (!defined()) return q;
  q.data_ = data_.to(device);
  q.scale_ = scale_.to(device);
  q.zero_point_ = zero_point_.to(device);
  return q;
}

WeightOnlyOperands QuantizedTensor::weight_only() const {
  const char* fn = "quant::QuantizedTensor::weight_only";
  EMBER_CHECK(defined(), fn, ": the tensor is undefined");
  EMBER_CHECK(shape_.rank() == 2 && scheme_.granularity == Granularity::per_block &&
                  scheme_.normalized_axis(2, fn) == 1,
              fn, ": matmul_wq takes W [N, K] quantized per block along K (QScheme::per_block(1, block, type)); this ",
              "tensor is ", scheme_.str(), " of shape ", shape_);
  EMBER_CHECK(!is_signed(scheme_.dtype) || scheme_.symmetric, fn, ": matmul_wq takes int8 / int4 weights without zero ",
              "points; quantize them symmetrically, or as uint8 / uint4 for zero points (", scheme_.str(), ")");
  EMBER_CHECK(bits(scheme_.dtype) == 8 || shape_[1] % 2 == 0, fn, ": 4-bit weights need an even K, got shape ", shape_);
  WeightOnlyOperands o{data_, scale_, std::nullopt, bits(scheme_.dtype), scheme_.block_size};
  if (!is_signed(scheme_.dtype)) o.zero_point = zero_point_;
  return o;
}

QParams choose_params(const DynTensor& min, const DynTensor& max, const QScheme& scheme) {
  const char* fn = "quant::choose_params";
  EMBER_CHECK(min.defined() && max.defined() && min.numel() == max.numel(), fn,
              ": min and max must be defined and of one size");
  const std::vector<float> lo = min.to_vector<float>(), hi = max.to_vector<float>();
  const int64_t qn = qmin(scheme.dtype), qx = qmax(scheme.dtype);
  const float eps = std::numeric_limits<float>::epsilon();
  std::vector<float> scale(lo.size());
  std::vector<int64_t> zp(lo.size());
  for (size_t i = 0; i < lo.size(); ++i) {
    EMBER_CHECK(std::isfinite(lo[i]) && std::isfinite(hi[i]), fn, ": the range [", lo[i], ", ", hi[i], "] at index ",
                i, " is not finite (does x hold NaN or infinite values?)");
    EMBER_CHECK(lo[i] <= hi[i], fn, ": min ", lo[i], " > max ", hi[i], " at index ", i);
    if (scheme.symmetric) {
      // max|x| / qmax (the zero point is 0, or the midpoint of an unsigned type's range)
      zp[i] = symmetric_zero_point(scheme.dtype);
      const float amax = std::max(std::fabs(lo[i]), std::fabs(hi[i]));
      scale[i] = std::max(amax / float(qx - zp[i]), eps);
    } else {
      // PyTorch's MinMaxObserver, in f32 as it computes: 0 is always representable exactly.
      const float neg = std::min(lo[i], 0.0f), pos = std::max(hi[i], 0.0f);
      scale[i] = std::max((pos - neg) / float(qx - qn), eps);
      zp[i] = std::clamp(qn - int64_t(std::nearbyint(neg / scale[i])), qn, qx);
    }
  }
  const Device& dev = min.device();
  std::vector<int64_t> dims(min.shape().begin(), min.shape().end());
  QParams p;
  p.scale = DynTensor::from_vector<float>(scale, Shape(dims), dev);
  p.zero_point = DynTensor::from_vector<int64_t>(zp, Shape(dims), dev).cast(zero_point_dtype(scheme.dtype));
  return p;
}

DynTensor pack_int4(const DynTensor& values) {
  const char* fn = "quant::pack_int4";
  EMBER_CHECK(values.defined() && is_int(values.dtype()) && values.rank() >= 1, fn,
              ": values must be an integer tensor of rank >= 1, got ", values.defined() ? values.dtype() : DType::f32,
              " ", values.defined() ? values.shape() : Shape{});
  DynTensor v = values.cast(DType::i32);
  const int64_t n = v.size(-1);
  Shape pairs = v.shape();
  if (n % 2) {
    Shape pad = v.shape();
    pad[-1] = 1;
    v = cat({v, DynTensor::zeros(pad, DType::i32, v.device())}, -1);
  }
  pairs[-1] = (n + 1) / 2;
  pairs.dims().push_back(2);
  v = reshaped(v, pairs);
  DynTensor lo = bitwise_and(v.select(-1, 0), 15), hi = bitwise_and(v.select(-1, 1), 15);
  return bitwise_or(lo, shift_left(hi, 4)).cast(DType::u8);
}

DynTensor unpack_int4(const DynTensor& packed, int64_t n, bool is_signed) {
  const char* fn = "quant::unpack_int4";
  EMBER_CHECK(packed.defined() && packed.dtype() == DType::u8 && packed.rank() >= 1, fn,
              ": packed must be a u8 tensor of rank >= 1");
  const int64_t m = packed.size(-1);
  EMBER_CHECK(n >= 0 && (n + 1) / 2 == m, fn, ": ", n, " values do not fit ", m, " bytes per row (need ",
              (n + 1) / 2, ")");
  DynTensor b = packed.cast(DType::i32);
  DynTensor v = stack({bitwise_and(b, 15), shift_right(b, 4)}, -1);
  Shape out = packed.shape();
  out[-1] = 2 * m;
  v = reshaped(v, out);
  if (n < 2 * m) v = v.narrow(-1, 0, n);
  if (!is_signed) return v.cast(DType::u8);
  // two's-complement nibbles: 8..15 are -8..-1
  return where(greater_equal(v, 8), sub(v, 16), v).cast(DType::i8);
}

QuantizedTensor quantize(const DynTensor& x, const QScheme& scheme, const DynTensor& scale,
                         const DynTensor& zero_point) {
  const char* fn = "quant::quantize";
  check_floating(x, fn);
  const Shape p = scheme.params_shape(x.shape(), fn);
  const Shape d = data_shape(x.shape(), scheme.dtype, fn);
  (void)d;
  EMBER_CHECK(scale.defined() && is_float(scale.dtype()), fn, ": scale must be a floating tensor, got ",
              scale.defined() ? scale.dtype() : DType::boolean);
  EMBER_CHECK(zero_point.defined() && is_int(zero_point.dtype()), fn,
              ": zero_point must be an integer tensor, got ", zero_point.defined() ? zero_point.dtype() : DType::boolean);
  EMBER_CHECK(scale.numel() == p.numel() && zero_point.numel() == p.numel(), fn, ": ", scheme.str(),
              " of a tensor of shape ", x.shape(), " takes ", p.numel(), " scales and zero points (shape ", p,
              "), got scale ", scale.shape(), " and zero_point ", zero_point.shape());
  const Device& dev = x.device();
  DynTensor s = reshaped(scale.to(dev).cast(DType::f32), p);
  DynTensor z = reshaped(zero_point.to(dev), p);
  check_param_values(s, z, scheme, fn);
  z = z.cast(zero_point_dtype(scheme.dtype));

  const Layout l = layout_of(x.shape(), scheme, fn);
  DynTensor xf = x.detach().cast(DType::f32).reshape(l.x_view);
  DynTensor zf = z.cast(DType::f32).reshape(l.p_view);
  DynTensor q = add(round(div(std::move(xf), s.reshape(l.p_view))), zf);
  q = clamp(std::move(q), Scalar(double(qmin(scheme.dtype))), Scalar(double(qmax(scheme.dtype))));
  q = where(is_nan(q), zf.expand(q.shape()), q);  // NaN becomes the zero point (0 after dequantize)
  q = reshaped(q, x.shape());
  DynTensor data = bits(scheme.dtype) == 8 ? q.cast(data_dtype(scheme.dtype)) : pack_int4(q.cast(DType::i32));
  return QuantizedTensor(QuantizedTensor::Trusted{}, std::move(data), std::move(s), std::move(z), x.shape(), scheme);
}

QuantizedTensor quantize(const DynTensor& x, const QScheme& scheme) {
  const char* fn = "quant::quantize";
  check_floating(x, fn);
  const Shape p = scheme.params_shape(x.shape(), fn);
  (void)data_shape(x.shape(), scheme.dtype, fn);
  DynTensor lo, hi;
  if (x.numel() == 0) {
    lo = hi = DynTensor::zeros(p, DType::f32, x.device());
  } else {
    const Layout l = layout_of(x.shape(), scheme, fn);
    DynTensor xf = x.detach().cast(DType::f32);
    Dims dims;
    switch (scheme.granularity) {
      case Granularity::per_tensor: break;
      case Granularity::per_channel: {
        const int a = scheme.normalized_axis(x.rank(), fn);
        for (int k = 0; k < x.rank(); ++k)
          if (k != a) dims.push_back(k);
        if (dims.empty()) {  // a 1-d tensor: each element is its own channel
          lo = hi = xf;
        }
        break;
      }
      case Granularity::per_block:
        xf = xf.reshape(l.x_view);
        dims = {scheme.normalized_axis(x.rank(), fn) + 1};
        break;
    }
    if (!lo.defined()) {
      lo = reshaped(ember::min(xf, dims), p);
      hi = reshaped(ember::max(xf, dims), p);
    }
  }
  QParams params = choose_params(lo, hi, scheme);
  return quantize(x, scheme, params.scale, params.zero_point);
}

QuantizedTensor quantize(const DynTensor& x, const QScheme& scheme, const QParams& params) {
  return quantize(x, scheme, params.scale, params.zero_point);
}

DynTensor dequantize(const QuantizedTensor& q) { return q.dequantize(); }

}  // namespace ember::quant
