// The quantized matrix products of the tensor API (ember/tensor/quantized_ops.hpp): thin
// wrappers that build the matmul_integer / matmul_wq IR ops.
#include "ember/tensor/quantized_ops.hpp"

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

DynTensor matmul_wq(DynTensor x, DynTensor data, DynTensor scales, std::optional<DynTensor> zero_point,
                    WeightQuant quant) {
  if (x.dtype() == DType::f16 || x.dtype() == DType::bf16) x = x.cast(DType::f32);
  std::vector<DynTensor> in{std::move(x), std::move(data), std::move(scales)};
  if (zero_point) in.push_back(std::move(*zero_point));
  return run1(OpKind::matmul_wq, std::move(in), WeightQuantAttrs{quant.bits, quant.block, quant.quantize_x});
}

}  // namespace ember
