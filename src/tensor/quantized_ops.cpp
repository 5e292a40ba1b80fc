// The quantized matrix products of the tensor API (ember/tensor/quantized_ops.hpp): thin
// wrappers that build the matmul_integer / conv_integer / matmul_wq IR ops.
#include "ember/tensor/quantized_ops.hpp"

#include <algorithm>
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

DynTensor conv_integer(DynTensor x, DynTensor w, std::optional<DynTensor> x_zero_point,
                       std::optional<DynTensor> w_zero_point, ConvOptions o) {
  const int nd = x.rank() - 2;
  EMBER_CHECK(nd >= 1 && nd <= 3, "conv_integer: argument 'x' must have shape [N, C, *spatial] with 1 to 3 spatial dims, got ",
              x.shape());
  auto per_dim = [&](const Sizes& v, const char* what, bool begin_end) {
    if (v.size() == 1) return Sizes(size_t(nd), v[0]);
    EMBER_CHECK(int(v.size()) == nd || (begin_end && int(v.size()) == 2 * nd), "conv_integer: ", what, " needs 1",
                nd > 1 ? " or " + std::to_string(nd) : std::string(), begin_end ? " or " + std::to_string(2 * nd) : "",
                " values, got ", v.size());
    return v;
  };
  EMBER_CHECK(std::all_of(o.output_padding.begin(), o.output_padding.end(), [](int64_t v) { return v == 0; }),
              "conv_integer: has no output_padding (a transposed convolution's)");
  ConvAttrs a{per_dim(o.stride, "stride", false), per_dim(o.padding, "padding", true),
              per_dim(o.dilation, "dilation", false), Sizes(size_t(nd), 0), o.groups};
  std::vector<DynTensor> in{std::move(x), std::move(w)};
  in.push_back(x_zero_point ? std::move(*x_zero_point) : DynTensor());
  in.push_back(w_zero_point ? std::move(*w_zero_point) : DynTensor());
  return run1(OpKind::conv_integer, std::move(in), std::move(a));
}

DynTensor matmul_wq(DynTensor x, DynTensor data, DynTensor scales, std::optional<DynTensor> zero_point,
                    WeightQuant quant) {
  if (x.dtype() == DType::f16 || x.dtype() == DType::bf16) x = x.cast(DType::f32);
  std::vector<DynTensor> in{std::move(x), std::move(data), std::move(scales)};
  if (zero_point) in.push_back(std::move(*zero_point));
  return run1(OpKind::matmul_wq, std::move(in), WeightQuantAttrs{quant.bits, quant.block, quant.quantize_x});
}

}  // namespace ember
