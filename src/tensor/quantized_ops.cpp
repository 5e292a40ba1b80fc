// The quantized matrix products of the tensor API (ember/tensor/quantized_ops.hpp): thin
// wrappers that build the matmul_integer / conv_integer / qlinear_conv / qlinear_matmul / matmul_wq IR ops.
#include "ember/tensor/quantized_ops.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "dispatch.hpp"

namespace ember {

using namespace detail;

DynTensor matmul_integer(DynTensor a, DynTensor b, std::optional<DynTensor> a_zero_point,
                         std::optional<DynTensor> b_zero_point) {
  std::vector<DynTensor> in{std::move(a), std::move(b)};
  in.push_back(a_zero_point ? std::move(*a_zero_point) : DynTensor());
  in.push_back(b_zero_point ? std::move(*b_zero_point) : DynTensor());
  return run1(OpKind::matmul_integer, std::move(in));
}

namespace {

// conv_integer's / qlinear_conv's ConvAttrs from ConvOptions (x of rank nd + 2).
ConvAttrs integer_conv_attrs(const char* op, const DynTensor& x, const ConvOptions& o) {
  const int nd = x.rank() - 2;
  EMBER_CHECK(nd >= 1 && nd <= 3, op, ": argument 'x' must have shape [N, C, *spatial] with 1 to 3 spatial dims, got ",
              x.shape());
  auto per_dim = [&](const Sizes& v, const char* what, bool begin_end) {
    if (v.size() == 1) return Sizes(size_t(nd), v[0]);
    EMBER_CHECK(int(v.size()) == nd || (begin_end && int(v.size()) == 2 * nd), op, ": ", what, " needs 1",
                nd > 1 ? " or " + std::to_string(nd) : std::string(), begin_end ? " or " + std::to_string(2 * nd) : "",
                " values, got ", v.size());
    return v;
  };
  EMBER_CHECK(std::all_of(o.output_padding.begin(), o.output_padding.end(), [](int64_t v) { return v == 0; }), op,
              ": has no output_padding (a transposed convolution's)");
  return ConvAttrs{per_dim(o.stride, "stride", false), per_dim(o.padding, "padding", true),
                   per_dim(o.dilation, "dilation", false), Sizes(size_t(nd), 0), o.groups};
}

DynTensor or_none(std::optional<DynTensor> t) { return t ? std::move(*t) : DynTensor(); }

// A scale as f32 (f64 / f16 / bf16 scales converted; other dtypes left for the op to reject).
DynTensor f32_scale(DynTensor s) {
  return is_float(s.dtype()) && s.dtype() != DType::f32 ? s.cast(DType::f32) : s;
}

// The inputs of qlinear_conv / qlinear_matmul in the op's order (ops.def).
std::vector<DynTensor> qlinear_inputs(DynTensor x, DynTensor x_scale, std::optional<DynTensor> x_zero_point,
                                      DynTensor w, DynTensor w_scale, std::optional<DynTensor> w_zero_point,
                                      std::optional<DynTensor> y_scale, std::optional<DynTensor> y_zero_point,
                                      std::optional<DynTensor> bias) {
  std::vector<DynTensor> in;
  in.push_back(std::move(x));
  in.push_back(f32_scale(std::move(x_scale)));
  in.push_back(or_none(std::move(x_zero_point)));
  in.push_back(std::move(w));
  in.push_back(f32_scale(std::move(w_scale)));
  in.push_back(or_none(std::move(w_zero_point)));
  in.push_back(y_scale ? f32_scale(std::move(*y_scale)) : DynTensor());
  in.push_back(or_none(std::move(y_zero_point)));
  in.push_back(or_none(std::move(bias)));
  return in;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// qlinear_matmul with a's leading dims flattened into its rows (b is 2-d).
DynTensor qlinear_matmul_rows(std::vector<DynTensor> in, ScalarAttrs clamp) {
  const DynTensor& a = in[0];
  EMBER_CHECK(a.rank() >= 2, "qlinear_matmul: argument 'a' must have shape [.., M, K], got ", a.shape());
  if (a.rank() == 2) return run1(OpKind::qlinear_matmul, std::move(in), clamp);
  Sizes out(a.shape().begin(), a.shape().end() - 1);
  in[0] = reshape(a, {-1, a.shape()[-1]});
  DynTensor y = run1(OpKind::qlinear_matmul, std::move(in), clamp);
  out.push_back(y.shape()[-1]);
  return reshape(y, out);
}

}  // namespace

DynTensor conv_integer(DynTensor x, DynTensor w, std::optional<DynTensor> x_zero_point,
                       std::optional<DynTensor> w_zero_point, ConvOptions o) {
  ConvAttrs a = integer_conv_attrs("conv_integer", x, o);
  std::vector<DynTensor> in{std::move(x), std::move(w)};
  in.push_back(or_none(std::move(x_zero_point)));
  in.push_back(or_none(std::move(w_zero_point)));
  return run1(OpKind::conv_integer, std::move(in), std::move(a));
}

DynTensor qlinear_conv(DynTensor x, DynTensor x_scale, std::optional<DynTensor> x_zero_point, DynTensor w,
                       DynTensor w_scale, std::optional<DynTensor> w_zero_point, DynTensor y_scale,
                       std::optional<DynTensor> y_zero_point, std::optional<DynTensor> bias, ConvOptions o) {
  ConvAttrs a = integer_conv_attrs("qlinear_conv", x, o);
  return run1(OpKind::qlinear_conv,
              qlinear_inputs(std::move(x), std::move(x_scale), std::move(x_zero_point), std::move(w), std::move(w_scale),
                             std::move(w_zero_point), std::move(y_scale), std::move(y_zero_point), std::move(bias)),
              std::move(a));
}

DynTensor qlinear_conv_f32(DynTensor x, DynTensor x_scale, std::optional<DynTensor> x_zero_point, DynTensor w,
                           DynTensor w_scale, std::optional<DynTensor> w_zero_point, std::optional<DynTensor> bias,
                           ConvOptions o, std::optional<double> min, std::optional<double> max) {
  ConvAttrs a = integer_conv_attrs("qlinear_conv", x, o);
  a.act_min = min.value_or(-kInf);
  a.act_max = max.value_or(kInf);
  return run1(OpKind::qlinear_conv,
              qlinear_inputs(std::move(x), std::move(x_scale), std::move(x_zero_point), std::move(w), std::move(w_scale),
                             std::move(w_zero_point), std::nullopt, std::nullopt, std::move(bias)),
              std::move(a));
}

DynTensor qlinear_add(DynTensor a, DynTensor a_scale, std::optional<DynTensor> a_zero_point, DynTensor b,
                      DynTensor b_scale, std::optional<DynTensor> b_zero_point, DynTensor c_scale,
                      std::optional<DynTensor> c_zero_point) {
  if (a.shape() != b.shape()) {  // numpy broadcasting, as the ONNX op: both read as expanded views
    const Shape s = broadcast_shapes(a.shape(), b.shape(), "qlinear_add");
    a = a.expand(s);
    b = b.expand(s);
  }
  // the inputs in qlinear_matmul's order, which qlinear_add shares, less the bias
  std::vector<DynTensor> in = qlinear_inputs(std::move(a), std::move(a_scale), std::move(a_zero_point), std::move(b),
                                             std::move(b_scale), std::move(b_zero_point), std::move(c_scale),
                                             std::move(c_zero_point), std::nullopt);
  in.pop_back();
  return run1(OpKind::qlinear_add, std::move(in));
}

DynTensor qlinear_matmul(DynTensor a, DynTensor a_scale, std::optional<DynTensor> a_zero_point, DynTensor b,
                         DynTensor b_scale, std::optional<DynTensor> b_zero_point, DynTensor y_scale,
                         std::optional<DynTensor> y_zero_point, std::optional<DynTensor> bias) {
  return qlinear_matmul_rows(qlinear_inputs(std::move(a), std::move(a_scale), std::move(a_zero_point), std::move(b),
                                            std::move(b_scale), std::move(b_zero_point), std::move(y_scale),
                                            std::move(y_zero_point), std::move(bias)),
                             ScalarAttrs{-kInf, kInf});
}

DynTensor qlinear_matmul_f32(DynTensor a, DynTensor a_scale, std::optional<DynTensor> a_zero_point, DynTensor b,
                             DynTensor b_scale, std::optional<DynTensor> b_zero_point, std::optional<DynTensor> bias,
                             std::optional<double> min, std::optional<double> max) {
  return qlinear_matmul_rows(qlinear_inputs(std::move(a), std::move(a_scale), std::move(a_zero_point), std::move(b),
                                            std::move(b_scale), std::move(b_zero_point), std::nullopt, std::nullopt,
                                            std::move(bias)),
                             ScalarAttrs{min.value_or(-kInf), max.value_or(kInf)});
}

DynTensor matmul_wq(DynTensor x, DynTensor data, DynTensor scales, std::optional<DynTensor> zero_point,
                    WeightQuant quant) {
  if (x.dtype() == DType::f16 || x.dtype() == DType::bf16) x = x.cast(DType::f32);
  std::vector<DynTensor> in{std::move(x), std::move(data), std::move(scales)};
  if (zero_point) in.push_back(std::move(*zero_point));
  return run1(OpKind::matmul_wq, std::move(in), WeightQuantAttrs{quant.bits, quant.block, quant.quantize_x});
}

}  // namespace ember
