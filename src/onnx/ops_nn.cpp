// Neural-network ONNX ops: MatMul, Gemm, Conv, ConvTranspose, pooling, normalisations,
// Dropout (inference), losses.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/tensor/quantized_ops.hpp"
#include "ops.hpp"

namespace ember::onnx::detail {
namespace {

void need_float(const OpContext& c, const DynTensor& x) {
  if (!is_float(x.dtype())) c.unsupported("dtype " + std::string(dtype_name(x.dtype())));
}

// [C] -> [1, C, 1, ...] for an input of rank r.
DynTensor per_channel(DynTensor v, int r) {
  Sizes s(size_t(r), 1);
  s[1] = v.numel();
  return reshape(std::move(v), s);
}

struct Window {
  Sizes kernel, stride, dilation, pad_begin, pad_end;
};

// kernel_shape / strides / dilations / pads / auto_pad of a conv or pool node over `spatial` dims.
Window window_of(const OpContext& c, const DynTensor& x, const Sizes& kernel) {
  size_t n = kernel.size();
  if (int(n) != x.rank() - 2) c.fail("kernel_shape has " + std::to_string(n) + " dims for an input of rank " + std::to_string(x.rank()));
  Window w;
  w.kernel = kernel;
  w.stride = c.attr_ints("strides").value_or(Sizes(n, 1));
  w.dilation = c.attr_ints("dilations").value_or(Sizes(n, 1));
  Sizes pads = c.attr_ints("pads").value_or(Sizes(2 * n, 0));
  if (w.stride.size() != n || w.dilation.size() != n || pads.size() != 2 * n) c.fail("window attributes differ in rank");
  w.pad_begin.assign(pads.begin(), pads.begin() + long(n));
  w.pad_end.assign(pads.begin() + long(n), pads.end());
  std::string ap = c.attr_s("auto_pad", "NOTSET");
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t in = x.shape()[int(i) + 2];
      int64_t out = (in + w.stride[i] - 1) / w.stride[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.stride[i] + (kernel[i] - 1) * w.dilation[i] + 1 - in);
      int64_t small = total / 2, big = total - small;
      w.pad_begin[i] = ap == "SAME_UPPER" ? small : big;
      w.pad_end[i] = ap == "SAME_UPPER" ? big : small;
    }
  } else if (ap == "VALID") {
    std::fill(w.pad_begin.begin(), w.pad_begin.end(), 0);
    std::fill(w.pad_end.begin(), w.pad_end.end(), 0);
  } else if (ap != "NOTSET") {
    c.unsupported("auto_pad '" + ap + "'");
  }
  return w;
}

// Pads the spatial dims of x (before/after per dim) with a constant.
DynTensor pad_spatial(DynTensor x, const Sizes& begin, const Sizes& end, double value) {
  size_t n = begin.size();
  Sizes p;
  for (size_t k = 0; k < n; ++k) {
    size_t i = n - 1 - k;
    p.push_back(begin[i]);
    p.push_back(end[i]);
  }
  if (std::all_of(p.begin(), p.end(), [](int64_t v) { return v == 0; })) return x;
  return pad(std::move(x), p, PadMode::constant, value);
}

bool symmetric(const Window& w) { return w.pad_begin == w.pad_end; }

DynTensor conv_nd(DynTensor x, DynTensor wt, std::optional<DynTensor> b, const ConvOptions& o, int n, bool transposed,
                  const OpContext& c) {
  switch (n) {
    case 1: return transposed ? conv_transpose1d(x, wt, b, o) : conv1d(x, wt, b, o);
    case 2: return transposed ? conv_transpose2d(x, wt, b, o) : conv2d(x, wt, b, o);
    case 3: return transposed ? conv_transpose3d(x, wt, b, o) : conv3d(x, wt, b, o);
    default: c.unsupported(std::to_string(n) + "-d convolution");
  }
}

// Conv; with `e`, com.microsoft's FusedConv (what ONNX Runtime's graph optimizer writes, and what
// fuse_conv_epilogues makes at load): the same attributes, then a residual input Z (input 3) and
// a clamp in the conv's kernel.
OpResult conv_with(OpContext& c, std::optional<ConvEpilogue> e);
OpResult conv_op(OpContext& c) { return conv_with(c, std::nullopt); }

OpResult conv_with(OpContext& c, std::optional<ConvEpilogue> e) {
  DynTensor x = c.in(0), wt = c.in(1);
  if (x.rank() < 3 || wt.rank() != x.rank()) c.fail("input and weight must have the same rank, at least 3");
  need_float(c, x);
  int n = x.rank() - 2;
  Sizes kernel = c.attr_ints("kernel_shape").value_or(Sizes(wt.shape().begin() + 2, wt.shape().end()));
  Window w = window_of(c, x, kernel);
  ConvOptions o;
  o.stride = w.stride;
  o.dilation = w.dilation;
  o.groups = c.attr_i("group", 1);
  if (symmetric(w)) {
    o.padding = w.pad_begin;
  } else {
    x = pad_spatial(x, w.pad_begin, w.pad_end, 0);
    o.padding = Sizes(size_t(n), 0);
  }
  std::optional<DynTensor> b;
  if (c.has(2)) b = c.in(2);
  if (!e) return {conv_nd(x, wt, b, o, n, false, c)};
  if (e->residual) {  // a Z that broadcasts is added after the conv
    Sizes out = {x.shape()[0], wt.shape()[0]};
    for (int i = 0; i < n; ++i)
      out.push_back((x.shape()[i + 2] + 2 * o.padding[size_t(i)] - o.dilation[size_t(i)] * (kernel[size_t(i)] - 1) - 1) /
                        o.stride[size_t(i)] +
                    1);
    if (e->residual->shape() != Shape(out)) {
      DynTensor y = add(conv_nd(x, wt, b, o, n, false, c), *e->residual);
      return {e->min || e->max ? clamp(y, e->min, e->max) : y};
    }
  }
  return {conv_fused(x, wt, b, o, *e)};
}

OpResult conv_transpose_op(OpContext& c) {
  DynTensor x = c.in(0), wt = c.in(1);
  if (x.rank() < 3 || wt.rank() != x.rank()) c.fail("input and weight must have the same rank, at least 3");
  need_float(c, x);
  int n = x.rank() - 2;
  Sizes kernel = c.attr_ints("kernel_shape").value_or(Sizes(wt.shape().begin() + 2, wt.shape().end()));
  size_t un = size_t(n);
  Sizes stride = c.attr_ints("strides").value_or(Sizes(un, 1));
  Sizes dil = c.attr_ints("dilations").value_or(Sizes(un, 1));
  Sizes outpad = c.attr_ints("output_padding").value_or(Sizes(un, 0));
  Sizes pads = c.attr_ints("pads").value_or(Sizes(2 * un, 0));
  std::string ap = c.attr_s("auto_pad", "NOTSET");
  std::optional<Sizes> out_shape = c.attr_ints("output_shape");
  if (stride.size() != un || dil.size() != un || outpad.size() != un || pads.size() != 2 * un)
    c.fail("window attributes differ in rank");
  if (ap != "NOTSET" && ap != "SAME_UPPER" && ap != "SAME_LOWER" && ap != "VALID") c.unsupported("auto_pad '" + ap + "'");
  Sizes full(un), begin(un), end(un);
  for (size_t i = 0; i < un; ++i) {
    int64_t in = x.shape()[int(i) + 2];
    full[i] = (in - 1) * stride[i] + (kernel[i] - 1) * dil[i] + 1;
    if (out_shape || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      if (out_shape && out_shape->size() < un) c.fail("output_shape has too few values");
      int64_t target = out_shape ? (*out_shape)[out_shape->size() - un + i] : in * stride[i];
      int64_t total = full[i] + outpad[i] - target;
      if (total < 0) {  // the output is larger: zeros (and the bias) at the end
        begin[i] = 0;
        end[i] = total;
      } else if (ap == "SAME_UPPER") {
        begin[i] = total / 2;
        end[i] = total - total / 2;
      } else {
        begin[i] = total - total / 2;
        end[i] = total / 2;
      }
    } else if (ap == "VALID") {
      begin[i] = 0;
      end[i] = 0;
    } else {
      begin[i] = pads[i];
      end[i] = pads[i + un];
    }
  }
  ConvOptions o;
  o.stride = stride;
  o.dilation = dil;
  o.padding = Sizes(un, 0);
  o.output_padding = Sizes(un, 0);
  o.groups = c.attr_i("group", 1);
  DynTensor y = conv_nd(x, wt, std::nullopt, o, n, true, c);
  // output_padding adds zeros at the end; pads crop.
  std::vector<Slice> ranges(2);
  Sizes extra;
  for (size_t k = 0; k < un; ++k) {
    size_t i = un - 1 - k;
    extra.push_back(0);
    extra.push_back(outpad[i]);
  }
  for (size_t k = 0; k < un; ++k) extra[2 * k + 1] += std::max<int64_t>(0, -end[un - 1 - k]);
  y = pad(y, extra);
  for (size_t i = 0; i < un; ++i) {
    int64_t len = full[i] + outpad[i] + std::max<int64_t>(0, -end[i]);
    ranges.push_back(Slice{begin[i], len - std::max<int64_t>(0, end[i]), 1});
  }
  y = slice(y, ranges);
  if (c.has(2)) y = add(y, per_channel(c.in(2), y.rank()));
  return {y};
}

// N-d pooling on the host (3-d and up, which the tensor ops lack): explicit pads, floor mode.
DynTensor pool_host(const OpContext& c, const DynTensor& x, const Window& w, bool is_max, bool include_pad) {
  size_t n = w.kernel.size();
  std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end()), out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t span = (w.kernel[i] - 1) * w.dilation[i] + 1;
    out[i] = (in[i] + w.pad_begin[i] + w.pad_end[i] - span) / w.stride[i] + 1;
    if (out[i] <= 0) c.fail("the kernel does not fit the padded input");
  }
  int64_t planes = x.shape()[0] * x.shape()[1], in_n = 1, out_n = 1, k_n = 1;
  for (size_t i = 0; i < n; ++i) in_n *= in[i], out_n *= out[i], k_n *= w.kernel[i];
  std::vector<double> v = x.into_data().to_doubles(), y(size_t(planes * out_n));
  std::vector<int64_t> o(n), k(n);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oi = 0; oi < out_n; ++oi) {
      for (int64_t r = oi, i = int64_t(n) - 1; i >= 0; --i) o[size_t(i)] = r % out[size_t(i)], r /= out[size_t(i)];
      double acc = is_max ? -std::numeric_limits<double>::infinity() : 0;
      int64_t count = 0;
      for (int64_t ki = 0; ki < k_n; ++ki) {
        for (int64_t r = ki, i = int64_t(n) - 1; i >= 0; --i) k[size_t(i)] = r % w.kernel[size_t(i)], r /= w.kernel[size_t(i)];
        int64_t off = 0;
        bool inside = true;
        for (size_t i = 0; i < n; ++i) {
          int64_t pos = o[i] * w.stride[i] - w.pad_begin[i] + k[i] * w.dilation[i];
          if (pos < 0 || pos >= in[i]) inside = false;
          off = off * in[i] + pos;
        }
        if (!inside) {
          if (include_pad) ++count;
          continue;
        }
        double e = v[size_t(p * in_n + off)];
        acc = is_max ? std::max(acc, e) : acc + e;
        ++count;
      }
      y[size_t(p * out_n + oi)] = is_max ? acc : acc / double(count);
    }
  std::vector<int64_t> shape{x.shape()[0], x.shape()[1]};
  shape.insert(shape.end(), out.begin(), out.end());
  return DynTensor::from_data(TensorData::from_doubles(y, Shape(shape), x.dtype()), c.device);
}

OpResult pool_op(OpContext& c, bool is_max) {
  DynTensor x = c.in(0);
  // A max of bytes (the quantized models' MaxPool): on the bytes themselves where the pads are
  // symmetric (max commutes with the monotonic map to reals, and the pooling op never picks a pad);
  // else, or where the backend has no integer max_pool, in f32 padded with -inf.
  const bool bytes = is_max && (x.dtype() == DType::u8 || x.dtype() == DType::i8) && !c.wants_output(1);
  auto through_f32 = [&] {
    c.inputs[0] = cast(x, DType::f32);
    OpResult r = pool_op(c, true);
    r[0] = cast(r[0].tensor(), x.dtype());
    return r;
  };
  if (!bytes) need_float(c, x);
  int n = x.rank() - 2;
  if (n < 1) c.unsupported(std::to_string(n) + "-d pooling");
  auto k = c.attr_ints("kernel_shape");
  if (!k) c.fail("kernel_shape is required");
  Window w = window_of(c, x, *k);
  bool ceil_mode = c.attr_i("ceil_mode", 0) != 0;
  bool include_pad = c.attr_i("count_include_pad", 0) != 0;
  bool column_major = c.attr_i("storage_order", 0) != 0;
  if (bytes && n > 2) return through_f32();
  if (n > 2) {
    if (ceil_mode || c.wants_output(1)) c.unsupported("ceil_mode or Indices of " + std::to_string(n) + "-d pooling");
    return {pool_host(c, x, w, is_max, include_pad)};
  }
  PoolOptions o;
  o.kernel_size = *k;
  o.stride = w.stride;
  o.dilation = w.dilation;
  o.ceil_mode = ceil_mode;
  o.count_include_pad = include_pad;
  bool fits = symmetric(w);
  for (size_t i = 0; i < k->size(); ++i)
    if (w.pad_begin[i] * 2 > (*k)[i]) fits = false;
  if (!is_max && w.dilation != Sizes(k->size(), 1)) c.unsupported("dilated average pooling");
  auto run = [&](DynTensor v) {
    if (is_max) return n == 1 ? max_pool1d(v, o) : max_pool2d(v, o);
    return n == 1 ? avg_pool1d(v, o) : avg_pool2d(v, o);
  };
  if (bytes) {
    if (!fits) return through_f32();
    o.padding = w.pad_begin;
    try {
      return {run(x)};
    } catch (const NotImplemented&) {
      return through_f32();
    }
  }
  if (fits) {
    o.padding = w.pad_begin;
    if (is_max && c.wants_output(1)) {
      if (n != 2) c.unsupported("Indices of 1-d pooling");
      auto [y, idx] = max_pool2d_with_indices(x, o);
      int64_t hw = x.shape()[2] * x.shape()[3];
      int64_t nc = x.shape()[0] * x.shape()[1];
      DynTensor base = reshape(mul(DynTensor::arange(int64_t(0), nc, int64_t(1), DType::i64, c.device), hw),
                               {x.shape()[0], x.shape()[1], 1, 1});
      DynTensor local = cast(idx, DType::i64);
      if (column_major) {  // h * W + w -> w * H + h
        DynTensor col = remainder(local, x.shape()[3]);
        DynTensor row = cast(div(sub(local, col), x.shape()[3]), DType::i64);
        local = add(mul(col, x.shape()[2]), row);
      }
      return {y, add(local, base)};
    }
    return {run(x)};
  }
  if (ceil_mode) c.unsupported("ceil_mode with asymmetric pads");
  if (is_max && c.wants_output(1)) c.unsupported("Indices with asymmetric pads");
  o.padding = Sizes(k->size(), 0);
  if (is_max) return {run(pad_spatial(x, w.pad_begin, w.pad_end, -std::numeric_limits<double>::infinity()))};
  DynTensor xs = pad_spatial(x, w.pad_begin, w.pad_end, 0);
  if (include_pad) return {run(xs)};
  DynTensor ones = pad_spatial(DynTensor::ones(x.shape(), x.dtype(), c.device), w.pad_begin, w.pad_end, 0);
  return {div(run(xs), run(ones))};
}

Dims spatial_dims(int r) {
  Dims d;
  for (int i = 2; i < r; ++i) d.push_back(i);
  return d;
}

}  // namespace

// x - zero_point in f64 (exact for 8-bit data); a zero point with several values applies along
// `dim` of x.
DynTensor minus_zero_point(const DynTensor& x, const OpContext& c, size_t zp_input, int dim) {
  DynTensor v = cast(x, DType::f64);
  if (!c.has(zp_input)) return v;
  DynTensor zp = cast(c.in(zp_input), DType::f64);
  if (zp.numel() == 1) return sub(v, reshape(zp, {}));
  Sizes s(size_t(x.rank()), 1);
  s[size_t(dim < 0 ? dim + x.rank() : dim)] = zp.numel();
  return sub(v, reshape(zp, s));
}

// Requantization: saturate(round(v * scale) + zero_point) in the zero point's dtype (u8 without one).
DynTensor requantize(DynTensor v, const OpContext& c, size_t zp_input) {
  DType out = c.has(zp_input) ? c.in(zp_input).dtype() : DType::u8;
  double lo = out == DType::u8 ? 0 : out == DType::i8 ? -128 : 0, hi = out == DType::u8 ? 255 : out == DType::i8 ? 127 : 0;
  if (out != DType::u8 && out != DType::i8) c.unsupported("quantized dtype " + std::string(dtype_name(out)));
  v = round(v);
  if (c.has(zp_input)) v = add(v, reshape(cast(c.in(zp_input), DType::f64), {}));
  return cast(clamp(v, Scalar(lo), Scalar(hi)), out);
}

DynTensor scale_of(const OpContext& c, size_t i) { return cast(c.in(i), DType::f64); }

namespace {

// sum_k (a - a_zp)(b - b_zp) of MatMulInteger / QLinearMatMul as the matmul_integer op, where the
// operands are u8 / i8 and each zero point holds one value or one per row of a / column of b
// (ONNX's 1-D forms); 1-D operands as numpy's matmul treats them. Empty when it does not apply.
std::optional<DynTensor> integer_product(const OpContext& c, size_t a_in, size_t a_zp, size_t b_in, size_t b_zp) {
  DynTensor a = c.in(a_in), b = c.in(b_in);
  auto byte = [](const DynTensor& t) { return t.dtype() == DType::u8 || t.dtype() == DType::i8; };
  if (!byte(a) || !byte(b) || a.rank() < 1 || b.rank() < 1) return std::nullopt;
  const bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
  if (a_vec) a = unsqueeze(a, 0);
  if (b_vec) b = unsqueeze(b, -1);
  auto zero_point = [&](size_t i, const DynTensor& x, int64_t per) -> std::optional<std::optional<DynTensor>> {
    if (!c.has(i)) return std::optional<DynTensor>();
    const DynTensor& z = c.in(i);
    if (z.dtype() != x.dtype()) return std::nullopt;
    if (z.numel() == 1) return std::optional<DynTensor>(reshape(z, {}));
    if (z.rank() == 1 && z.numel() == per) return std::optional<DynTensor>(z);
    return std::nullopt;
  };
  auto za = zero_point(a_zp, a, a.shape()[-2]);
  auto zb = zero_point(b_zp, b, b.shape()[-1]);
  if (!za || !zb) return std::nullopt;
  DynTensor y = matmul_integer(a, b, *za, *zb);
  if (b_vec) y = squeeze(y, -1);
  if (a_vec) y = squeeze(y, b_vec ? -1 : -2);
  return y;
}

// The operands of ConvInteger / QLinearConv where the int8 conv ops take them: x and w u8 / i8, x's
// zero point one value and w's one value or one per output channel, each of its operand's dtype,
// and the conv 1-d to 3-d. Empty when it does not apply.
struct IntegerConvArgs {
  DynTensor x, w;
  std::optional<DynTensor> zx, zw;
  ConvOptions o;
};
std::optional<IntegerConvArgs> integer_conv_args(const OpContext& c, size_t x_in, size_t x_zp, size_t w_in,
                                                 size_t w_zp) {
  const DynTensor &x = c.in(x_in), &wt = c.in(w_in);
  auto byte = [](const DynTensor& t) { return t.dtype() == DType::u8 || t.dtype() == DType::i8; };
  if (!byte(x) || !byte(wt) || x.rank() < 3 || x.rank() > 5 || wt.rank() != x.rank()) return std::nullopt;
  IntegerConvArgs a{x, wt, std::nullopt, std::nullopt, {}};
  if (c.has(x_zp)) {
    if (c.in(x_zp).dtype() != x.dtype() || c.in(x_zp).numel() != 1) return std::nullopt;
    a.zx = reshape(c.in(x_zp), {});
  }
  if (c.has(w_zp)) {
    const DynTensor& z = c.in(w_zp);
    if (z.dtype() != wt.dtype()) return std::nullopt;
    if (z.numel() == 1) a.zw = reshape(z, {});
    else if (z.rank() == 1 && z.numel() == wt.shape()[0]) a.zw = z;
    else return std::nullopt;
  }
  Window w = window_of(c, x, c.attr_ints("kernel_shape").value_or(Sizes(wt.shape().begin() + 2, wt.shape().end())));
  a.o.stride = w.stride;
  a.o.dilation = w.dilation;
  a.o.padding = w.pad_begin;
  a.o.padding.insert(a.o.padding.end(), w.pad_end.begin(), w.pad_end.end());
  a.o.groups = c.attr_i("group", 1);
  return a;
}

// sum over each window of (x - x_zp)(w - w_zp) of ConvInteger as the conv_integer op.
std::optional<DynTensor> integer_conv(const OpContext& c, size_t x_in, size_t x_zp, size_t w_in, size_t w_zp) {
  auto a = integer_conv_args(c, x_in, x_zp, w_in, w_zp);
  if (!a) return std::nullopt;
  return conv_integer(a->x, a->w, a->zx, a->zw, a->o);
}

// Whether QLinearConv / QLinearMatMul's scales and output zero point (inputs xs, ws, ys, yz) are
// what the requantizing ops take: f32 scales of one value (w's: or `channels` values), y's zero
// point one u8 / i8 value.
bool qlinear_scales_fit(const OpContext& c, size_t xs, size_t ws, size_t ys, size_t yz, int64_t channels) {
  auto one_f32 = [&](size_t i) { return c.in(i).dtype() == DType::f32 && c.in(i).numel() == 1; };
  const DynTensor& w = c.in(ws);
  if (!one_f32(xs) || !one_f32(ys) || w.dtype() != DType::f32) return false;
  if (w.numel() != 1 && !(w.rank() == 1 && w.numel() == channels)) return false;
  if (!c.has(yz)) return true;
  const DynTensor& z = c.in(yz);
  return (z.dtype() == DType::u8 || z.dtype() == DType::i8) && z.numel() == 1;
}

// QLinearConv as the qlinear_conv op (requantized in the kernel's epilogue). Empty when it does
// not apply.
std::optional<DynTensor> qlinear_conv_node(const OpContext& c) {
  auto a = integer_conv_args(c, 0, 2, 3, 5);
  if (!a || !qlinear_scales_fit(c, 1, 4, 6, 7, a->w.shape()[0])) return std::nullopt;
  std::optional<DynTensor> bias, yz;
  if (c.has(8)) {
    if (c.in(8).dtype() != DType::i32 || c.in(8).numel() != a->w.shape()[0]) return std::nullopt;
    bias = reshape(c.in(8), {-1});
  }
  if (c.has(7)) yz = reshape(c.in(7), {});
  auto one = [&](size_t i) { return reshape(c.in(i), {}); };
  DynTensor ws = c.in(4).numel() == 1 ? one(4) : reshape(c.in(4), {-1});
  return qlinear_conv(a->x, one(1), a->zx, a->w, ws, a->zw, one(6), yz, bias, a->o);
}

// QLinearMatMul as the qlinear_matmul op where b is 2-d and a has rank 2 or more, a's zero point
// one value and b's one value or one per column. Empty when it does not apply.
std::optional<DynTensor> qlinear_matmul_node(const OpContext& c) {
  const DynTensor &a = c.in(0), &b = c.in(3);
  auto byte = [](const DynTensor& t) { return t.dtype() == DType::u8 || t.dtype() == DType::i8; };
  if (!byte(a) || !byte(b) || a.rank() < 2 || b.rank() != 2) return std::nullopt;
  const int64_t n = b.shape()[1];
  if (!qlinear_scales_fit(c, 1, 4, 6, 7, n)) return std::nullopt;
  std::optional<DynTensor> za, zb, yz;
  if (c.has(2)) {
    if (c.in(2).dtype() != a.dtype() || c.in(2).numel() != 1) return std::nullopt;
    za = reshape(c.in(2), {});
  }
  if (c.has(5)) {
    const DynTensor& z = c.in(5);
    if (z.dtype() != b.dtype()) return std::nullopt;
    if (z.numel() == 1) zb = reshape(z, {});
    else if (z.rank() == 1 && z.numel() == n) zb = z;
    else return std::nullopt;
  }
  if (c.has(7)) yz = reshape(c.in(7), {});
  auto one = [&](size_t i) { return reshape(c.in(i), {}); };
  DynTensor bs = c.in(4).numel() == 1 ? one(4) : reshape(c.in(4), {-1});
  return qlinear_matmul(a, one(1), za, b, bs, zb, one(6), yz);
}

}  // namespace

void register_nn_ops(OpTable& t) {
  t["MatMulInteger"] = [](OpContext& c) -> OpResult {
    if (auto y = integer_product(c, 0, 2, 1, 3)) return {*y};
    DynTensor a = minus_zero_point(c.in(0), c, 2, -2), b = minus_zero_point(c.in(1), c, 3, -1);
    if (c.has(2) && c.in(2).numel() > 1) a = cast(c.in(0), DType::f64), a = sub(a, unsqueeze(cast(c.in(2), DType::f64), -1));
    return {cast(matmul(a, b), DType::i32)};
  };
  t["QLinearMatMul"] = [](OpContext& c) -> OpResult {
    if (auto y = qlinear_matmul_node(c)) return {*y};
    if (c.in(1).numel() != 1 || c.in(4).numel() != 1 || c.in(6).numel() != 1) c.unsupported("per-axis scales");
    DynTensor ab;
    if (auto y = integer_product(c, 0, 2, 3, 5)) {
      ab = cast(*y, DType::f64);
    } else {
      ab = matmul(minus_zero_point(c.in(0), c, 2, -2), minus_zero_point(c.in(3), c, 5, -1));
    }
    DynTensor y = mul(ab, div(mul(scale_of(c, 1), scale_of(c, 4)), scale_of(c, 6)));
    return {requantize(y, c, 7)};
  };
  t["ConvInteger"] = [](OpContext& c) -> OpResult {
    if (auto y = integer_conv(c, 0, 2, 1, 3)) return {*y};
    OpContext inner{c.node, c.opset, c.device, c.base_dir,
                    {minus_zero_point(c.in(0), c, 2, 1), minus_zero_point(c.in(1), c, 3, 0)}};
    inner.inputs[0] = cast(inner.in(0), DType::f64);
    return {cast(conv_op(inner)[0].tensor(), DType::i32)};
  };
  t["QLinearConv"] = [](OpContext& c) -> OpResult {
    if (auto yq = qlinear_conv_node(c)) return {*yq};
    DynTensor y;
    if (auto yi = integer_conv(c, 0, 2, 3, 5)) {  // the bias joins in i32, as ONNX defines
      if (c.has(8)) *yi = add(*yi, per_channel(cast(c.in(8), DType::i32), yi->rank()));
      y = cast(*yi, DType::f64);
    } else {
      OpContext inner{c.node, c.opset, c.device, c.base_dir,
                      {minus_zero_point(c.in(0), c, 2, 1), minus_zero_point(c.in(3), c, 5, 0)}};
      y = conv_op(inner)[0].tensor();
      if (c.has(8)) y = add(y, per_channel(cast(c.in(8), DType::f64), y.rank()));
    }
    DynTensor ws = scale_of(c, 4);
    if (ws.numel() > 1) ws = per_channel(ws, y.rank());
    else ws = reshape(ws, {});
    y = mul(y, div(mul(ws, reshape(scale_of(c, 1), {})), reshape(scale_of(c, 6), {})));
    return {requantize(y, c, 7)};
  };
  t["MaxUnpool"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    int n = x.rank() - 2;
    auto k = c.attr_ints("kernel_shape");
    if (!k || int(k->size()) != n) c.fail("kernel_shape is required");
    Sizes stride = c.attr_ints("strides").value_or(Sizes(size_t(n), 1));
    Sizes pads = c.attr_ints("pads").value_or(Sizes(size_t(2 * n), 0));
    // The indices refer to the default output shape; a larger output_shape adds zeros at the end.
    Sizes shape{x.shape()[0], x.shape()[1]};
    for (int i = 0; i < n; ++i)
      shape.push_back((x.shape()[i + 2] - 1) * stride[size_t(i)] + (*k)[size_t(i)] - pads[size_t(i)] - pads[size_t(i + n)]);
    int64_t total = Shape(shape).numel();
    DynTensor flat = DynTensor::zeros(Shape{total}, x.dtype(), c.device);
    DynTensor idx = reshape(cast(c.in(1), DType::i64), {x.numel()});
    DynTensor y = reshape(scatter(flat, 0, idx, reshape(x, {x.numel()})), shape);
    if (c.has(2)) {
      Sizes want = c.required_ints(2);
      if (want.size() != shape.size() || want[0] != shape[0] || want[1] != shape[1]) c.fail("output_shape does not fit");
      Sizes begin(size_t(n), 0), end(size_t(n), 0);
      for (int i = 0; i < n; ++i) {
        end[size_t(i)] = want[size_t(i + 2)] - shape[size_t(i + 2)];
        if (end[size_t(i)] < 0) c.unsupported("output_shape smaller than the default");
      }
      y = pad_spatial(y, begin, end, 0);
    }
    return {y};
  };
  t["MatMul"] = [](OpContext& c) -> OpResult {
    need_float(c, c.in(0));
    return {matmul(c.in(0), c.in(1))};
  };
  t["Gemm"] = [](OpContext& c) -> OpResult {
    DynTensor a = c.in(0), b = c.in(1);
    need_float(c, a);
    if (c.attr_i("transA", 0)) a = transpose(a, 0, 1);
    if (c.attr_i("transB", 0)) b = transpose(b, 0, 1);
    double alpha = c.attr_f("alpha", 1.0f), beta = c.attr_f("beta", 1.0f);
    DynTensor y = matmul(a, b);
    if (alpha != 1.0) y = mul(y, alpha);
    if (c.has(2)) y = add(y, beta == 1.0 ? c.in(2) : mul(c.in(2), beta));
    return {y};
  };
  t["Conv"] = conv_op;
  // com.microsoft's FusedConv: Y = activation(Conv(X, W, B) + Z). Relu and Clip (and Z) run in
  // the conv's kernel; the other activations ONNX Runtime fuses run after it.
  t["com.microsoft::FusedConv"] = [](OpContext& c) -> OpResult {
    const std::string act = c.attr_s("activation", "");
    const std::vector<float> par = c.attr_floats("activation_params").value_or(std::vector<float>{});
    auto param = [&](size_t i, float def) { return i < par.size() ? double(par[i]) : double(def); };
    ConvEpilogue e;
    if (c.has(3)) e.residual = c.in(3);
    if (act == "Relu") {
      e.min = 0.0;
    } else if (act == "Clip") {
      if (par.size() != 2) c.fail("activation Clip needs activation_params [min, max]");
      e.min = param(0, 0), e.max = param(1, 0);
    } else if (!act.empty() && act != "Sigmoid" && act != "Tanh" && act != "LeakyRelu" && act != "HardSigmoid") {
      c.unsupported("activation '" + act + "'");
    }
    DynTensor y = conv_with(c, e)[0].tensor();
    if (act == "Sigmoid") y = sigmoid(y);
    if (act == "Tanh") y = tanh(y);
    if (act == "LeakyRelu") y = leaky_relu(y, param(0, 0.01f));
    if (act == "HardSigmoid") y = clamp(add(mul(y, param(0, 0.2f)), param(1, 0.5f)), 0.0, 1.0);
    return {y};
  };
  t["ConvTranspose"] = conv_transpose_op;
  t["MaxPool"] = [](OpContext& c) { return pool_op(c, true); };
  t["AveragePool"] = [](OpContext& c) { return pool_op(c, false); };
  t["GlobalAveragePool"] = [](OpContext& c) -> OpResult {
    need_float(c, c.in(0));
    return {mean(c.in(0), spatial_dims(c.in(0).rank()), true)};
  };
  t["GlobalMaxPool"] = [](OpContext& c) -> OpResult {
    need_float(c, c.in(0));
    return {max(c.in(0), spatial_dims(c.in(0).rank()), true)};
  };
  t["BatchNormalization"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    if (c.opset < 9 && c.attr_i("spatial", 1) == 0) c.unsupported("spatial=0");
    double eps = c.attr_f("epsilon", 1e-5f);
    int r = x.rank();
    if (c.attr_i("training_mode", 0) != 0) {  // batch statistics; running ones updated with momentum
      double momentum = c.attr_f("momentum", 0.9f);
      Dims d{0};
      for (int i = 2; i < r; ++i) d.push_back(i);
      DynTensor m = mean(x, d), xc = sub(x, per_channel(m, r));
      DynTensor var = mean(mul(xc, xc), d);
      DynTensor y = mul(xc, mul(rsqrt(add(per_channel(var, r), eps)), per_channel(c.in(1), r)));
      return {add(y, per_channel(c.in(2), r)), add(mul(c.in(3), momentum), mul(m, 1 - momentum)),
              add(mul(c.in(4), momentum), mul(var, 1 - momentum))};
    }
    DynTensor inv = rsqrt(add(per_channel(c.in(4), r), eps));
    DynTensor y = mul(sub(x, per_channel(c.in(3), r)), mul(inv, per_channel(c.in(1), r)));
    return {add(y, per_channel(c.in(2), r))};
  };
  t["InstanceNormalization"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    double eps = c.attr_f("epsilon", 1e-5f);
    Dims d = spatial_dims(x.rank());
    DynTensor m = mean(x, d, true);
    DynTensor xc = sub(x, m);
    DynTensor var = mean(mul(xc, xc), d, true);
    DynTensor y = mul(xc, rsqrt(add(var, eps)));
    return {add(mul(y, per_channel(c.in(1), x.rank())), per_channel(c.in(2), x.rank()))};
  };
  t["LayerNormalization"] = [](OpContext& c) -> OpResult {
    const DynTensor& x0 = c.in(0);
    need_float(c, x0);
    int axis = normalize_axis(c.attr_i("axis", -1), x0.rank(), c);
    double eps = c.attr_f("epsilon", 1e-5f);
    DynTensor x = x0.dtype() == DType::f64 ? x0 : cast(x0, DType::f32);
    Dims d;
    for (int i = axis; i < x.rank(); ++i) d.push_back(i);
    DynTensor m = mean(x, d, true);
    DynTensor xc = sub(x, m);
    DynTensor inv = rsqrt(add(mean(mul(xc, xc), d, true), eps));
    DynTensor y = mul(mul(xc, inv), c.in(1));
    if (c.has(2)) y = add(y, c.in(2));
    return {cast(y, x0.dtype()), m, inv};
  };
  t["MeanVarianceNormalization"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    Sizes axes = c.attr_ints("axes").value_or(Sizes{0, 2, 3});
    Dims d;
    for (int64_t a : axes) d.push_back(normalize_axis(a, x.rank(), c));
    DynTensor m = mean(x, d, true);
    DynTensor var = sub(mean(mul(x, x), d, true), mul(m, m));
    return {div(sub(x, m), add(sqrt(var), 1e-9))};
  };
  t["Dropout"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    bool training = false;
    if (c.opset >= 12 && c.has(2)) training = scalar_of(c.in(2)).value != 0;
    double ratio = c.opset >= 12 ? (c.has(1) ? scalar_of(c.in(1)).value : 0.5) : c.attr_f("ratio", 0.5f);
    if (c.opset < 7 && c.attr_i("is_test", 0) == 0) training = true;
    if (training && ratio != 0) c.unsupported("training_mode with a nonzero ratio (random)");
    OpResult r{x};
    if (c.wants_output(1)) r.push_back(DynTensor::ones(x.shape(), DType::boolean, c.device));
    return r;
  };
  t["LRN"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    need_float(c, x);
    if (x.rank() != 4) c.unsupported("rank other than 4");
    double alpha = c.attr_f("alpha", 1e-4f), beta = c.attr_f("beta", 0.75f), bias = c.attr_f("bias", 1.0f);
    int64_t size = c.attr_i("size", 1);
    int64_t before = (size - 1) / 2, after = size - 1 - before;
    DynTensor sq = mul(x, x);
    DynTensor p = pad(sq, {0, 0, 0, 0, before, after});
    int64_t ch = x.shape()[1];
    DynTensor s = narrow(p, 1, 0, ch);
    for (int64_t i = 1; i < size; ++i) s = add(s, narrow(p, 1, i, ch));
    return {div(x, pow(add(mul(s, alpha / double(size)), bias), beta))};
  };
  auto nll = [](OpContext& c, DynTensor logp, const DynTensor& target) -> DynTensor {
    std::string red = c.attr_s("reduction", "mean");
    int64_t ch = logp.shape()[1];
    DynTensor tgt = cast(target, DType::i64);
    DynTensor valid = DynTensor::ones(tgt.shape(), DType::boolean, c.device);
    if (const AttributeProto* ii = c.attr("ignore_index")) {
      valid = not_equal(tgt, ii->i);
      tgt = where(valid, tgt, DynTensor::zeros(tgt.shape(), DType::i64, c.device));
    }
    DynTensor picked = squeeze(gather(logp, 1, unsqueeze(tgt, 1)), 1);
    DynTensor w = cast(valid, logp.dtype());
    if (c.has(2)) w = mul(w, reshape(index_select(c.in(2), 0, reshape(tgt, {tgt.numel()})), tgt.shape().dims()));
    (void)ch;
    DynTensor loss = neg(mul(picked, w));
    if (red == "none") return loss;
    if (red == "sum") return sum(loss);
    if (red == "mean") return div(sum(loss), sum(w));
    c.unsupported("reduction '" + red + "'");
  };
  t["NegativeLogLikelihoodLoss"] = [nll](OpContext& c) -> OpResult {
    need_float(c, c.in(0));
    return {nll(c, c.in(0), c.in(1))};
  };
  t["SoftmaxCrossEntropyLoss"] = [nll](OpContext& c) -> OpResult {
    need_float(c, c.in(0));
    DynTensor lp = log_softmax(c.in(0), 1);
    return {nll(c, lp, c.in(1)), lp};
  };
}

}  // namespace ember::onnx::detail
