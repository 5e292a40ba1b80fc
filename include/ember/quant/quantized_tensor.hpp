// Quantized tensors: integer values plus the scales and zero points that map them back to real
// numbers, real = scale * (q - zero_point), with one (scale, zero point) pair per tensor, per
// channel of one axis, or per block of `block_size` consecutive elements along one axis.
//
//   # DynTensor w = randn({16, 64});
//   using namespace ember::quant;
//   QuantizedTensor q = quantize(w, QScheme::per_block(1, 32, QType::int4));   // scales [16, 2]
//   DynTensor w2 = dequantize(q);                                               // f32 [16, 64]
//   QuantizedTensor a = quantize(w, QScheme::per_tensor(QType::uint8, /*symmetric=*/false));
//   QuantizedTensor c = quantize(w, QScheme::per_channel(0), a.scale().expand({16}).contiguous(),
//                                DynTensor::zeros({16}, DType::i8));           // given parameters
//   WeightOnlyOperands wo = q.weight_only();   // data u8 [16, 32], scales f32 [16, 2]: matmul_wq's operands
//   DynTensor y = matmul_wq(randn({1, 64}), wo.data, wo.scales, wo.zero_point, {.bits = wo.bits, .block = wo.block_size});
//   # run
//
// Layout (docs/quantization.md):
// - data: 8-bit types hold one value per element, i8 for int8 and u8 for uint8, in the logical
//   shape. 4-bit types pack two values per byte along the LAST dim (u8, last dim ceil(n / 2)):
//   element 2j in the low nibble, 2j + 1 in the high nibble, int4 as two's-complement nibbles,
//   a zero nibble padding an odd last dim (ONNX's int4 packing, per row).
// - scale: f32, the shape of the granularity: [] per tensor, [C] per channel (C = size of the
//   axis), and per block the logical shape with the blocked dim divided by the block size.
// - zero_point: the scale's shape, one value per element in the type's range: i8 for int8 and
//   int4, u8 for uint8 and uint4 (not packed). Symmetric schemes have zero points 0 for signed
//   types and the midpoint (128, 8) for unsigned ones.
// Quantizing computes q = saturate(round_half_even(x / scale) + zero_point) in f32 (ONNX
// QuantizeLinear's formula; PyTorch's up to its x * (1 / scale)); scales from min/max follow
// PyTorch's MinMaxObserver for affine schemes (0 always in range, scale at least f32 epsilon) and
// max|x| / qmax for symmetric ones (ONNX Runtime's and ggml's choice: int8 uses [-127, 127]).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember::quant {

// The integer type quantized values are stored in.
enum class QType : uint8_t { int8, uint8, int4, uint4 };

int bits(QType t);  // 8 or 4
bool is_signed(QType t);  // int8 and int4
int64_t qmin(QType t);  // the smallest value: -128, 0, -8, 0
int64_t qmax(QType t);  // the largest value: 127, 255, 7, 15
DType zero_point_dtype(QType t);  // i8 for int8 and int4, u8 for uint8 and uint4
DType data_dtype(QType t);  // the data tensor's dtype: i8 for int8, u8 otherwise (4-bit packed in u8)
std::string_view qtype_name(QType t);  // "int8", "uint8", "int4", "uint4"
QType qtype_from_name(std::string_view name);  // the inverse; throws an Error for other names

// How many (scale, zero point) pairs a tensor gets.
enum class Granularity : uint8_t { per_tensor, per_channel, per_block };
std::string_view granularity_name(Granularity g);  // "per_tensor", "per_channel", "per_block"
Granularity granularity_from_name(std::string_view name);  // the inverse; throws an Error for other names

// A quantization scheme: granularity, axis and block size, symmetric or affine, storage type.
struct QScheme {
  Granularity granularity = Granularity::per_tensor;  // one pair per tensor, per channel or per block
  int axis = 0;  // per_channel / per_block: the channel or blocked dim (negative counts from the end)
  int64_t block_size = 0;  // per_block: elements per block along `axis` (must divide its size)
  bool symmetric = true;  // zero point fixed (0, or the midpoint for unsigned types); scale from max|x|
  QType dtype = QType::int8;  // the storage type

  // One scale for the whole tensor.
  static QScheme per_tensor(QType dtype = QType::int8, bool symmetric = true);
  // One scale per index of dim `axis` (PyTorch's per_channel schemes; ONNX's axis attribute).
  static QScheme per_channel(int axis, QType dtype = QType::int8, bool symmetric = true);
  // One scale per `block_size` consecutive elements along `axis` (ggml's Q8_0 / Q4_0 blocks of 32
  // along a weight's rows with axis 1; ONNX's block_size attribute).
  static QScheme per_block(int axis, int64_t block_size, QType dtype = QType::int8, bool symmetric = true);

  // The shape of the scales and zero points for a tensor of `shape`. Throws an Error naming `where`
  // for an axis out of range or a block size that does not divide its dim.
  Shape params_shape(const Shape& shape, std::string_view where = "quant::QScheme") const;
  // The axis as a dim index of a tensor of `rank` (per_channel / per_block; 0 per tensor).
  int normalized_axis(int rank, std::string_view where = "quant::QScheme") const;
  // For messages: "per_block(axis=1, block=32, int4, symmetric)".
  std::string str() const;
  bool operator==(const QScheme&) const = default;  // same fields
};

// Scales (f32) and zero points (zero_point_dtype) of the shape QScheme::params_shape gives.
struct QParams {
  DynTensor scale;  // f32, positive and finite
  DynTensor zero_point;  // in the storage type's range
};

// What the weight-only GEMM `matmul_wq` (tensor/quantized_ops.hpp) consumes for W [N, K]
// quantized per block along K (axis 1): int8 (symmetric): data i8 [N, K]; int4 (symmetric): data
// u8 [N, K / 2] packed as above; uint8 / uint4: the same with unsigned values and zero points
// u8 [N, K / block_size]; scales f32 [N, K / block_size].
struct WeightOnlyOperands {
  DynTensor data;  // i8 [N, K], u8 [N, K] or packed u8 [N, K / 2]
  DynTensor scales;  // f32 [N, K / block_size]
  std::optional<DynTensor> zero_point;  // u8 [N, K / block_size] for uint8 / uint4; none for int8 / int4
  int bits = 8;  // 8 or 4
  int64_t block_size = 0;  // elements of K per scale
};

// Integer data, scales, zero points, the logical shape and the scheme (layout above). A cheap
// value: its tensors are shared handles.
class QuantizedTensor {
 public:
  QuantizedTensor() = default;  // undefined (defined() is false)
  // Assembles a quantized tensor from its parts, checking them against each other: data's dtype
  // and shape against `shape` and the scheme, the parameters' dtypes and shapes, every scale
  // positive and finite, every zero point in range (an Error naming `where` and the part).
  QuantizedTensor(DynTensor data, DynTensor scale, DynTensor zero_point, Shape shape, QScheme scheme,
                  std::string_view where = "quant::QuantizedTensor");

  bool defined() const { return data_.defined(); }  // false for a default-constructed one
  const DynTensor& data() const { return data_; }  // the stored integers (4-bit: packed u8)
  const DynTensor& scale() const { return scale_; }  // f32 scales
  const DynTensor& zero_point() const { return zero_point_; }  // zero points (i8 or u8)
  const Shape& shape() const { return shape_; }  // the logical shape (of the real tensor)
  const QScheme& scheme() const { return scheme_; }  // how it was quantized
  QType dtype() const { return scheme_.dtype; }  // the storage type
  const Device& device() const { return data_.device(); }  // where the data lives
  int64_t numel() const { return shape_.numel(); }  // elements of the logical shape
  int64_t nbytes() const;  // bytes of data, scales and zero points together

  // The integer values in the logical shape, unpacked: i8 for signed types, u8 for unsigned ones.
  DynTensor values() const;
  // The real values, f32: scale * (q - zero_point).
  DynTensor dequantize() const;
  // The same quantized tensor on `device`.
  QuantizedTensor to(const Device& device) const;
  // The operands of matmul_wq (see WeightOnlyOperands). Throws unless the tensor is 2-d and
  // quantized per block along dim 1, symmetric for int8 / int4 (signed types have no zero point
  // there), with an even K for 4-bit types.
  WeightOnlyOperands weight_only() const;

 private:
  friend QuantizedTensor quantize(const DynTensor&, const QScheme&, const DynTensor&, const DynTensor&);
  struct Trusted {};
  QuantizedTensor(Trusted, DynTensor data, DynTensor scale, DynTensor zero_point, Shape shape, QScheme scheme)
      : data_(std::move(data)), scale_(std::move(scale)), zero_point_(std::move(zero_point)),
        shape_(std::move(shape)), scheme_(scheme) {}
  DynTensor data_, scale_, zero_point_;
  Shape shape_;
  QScheme scheme_;
};

// Quantizes a floating tensor with scales and zero points from its min / max (per tensor, channel
// or block; see the top of this file). Throws an Error for an integer or bool tensor, a tensor
// with NaN or infinite values, an axis out of range, or a block size that does not divide its dim.
QuantizedTensor quantize(const DynTensor& x, const QScheme& scheme);
// Quantizes with given parameters of the scheme's params_shape (scale: any floating dtype,
// used as f32; zero_point: any integer dtype). Throws an Error for a scale that is zero,
// negative, NaN or infinite, or a zero point outside the type's range, naming the index.
QuantizedTensor quantize(const DynTensor& x, const QScheme& scheme, const DynTensor& scale,
                         const DynTensor& zero_point);
// quantize(x, scheme, params.scale, params.zero_point).
QuantizedTensor quantize(const DynTensor& x, const QScheme& scheme, const QParams& params);
// The real values of `q`, f32 (q.dequantize()).
DynTensor dequantize(const QuantizedTensor& q);

// Scales and zero points for the ranges [min, max] (f32 tensors of the scheme's params shape,
// or 0-d per tensor), as quantize(x, scheme) computes them: affine, PyTorch's MinMaxObserver
// (min' = min(min, 0), max' = max(max, 0), scale = max((max' - min') / (qmax - qmin), eps),
// zero_point = clamp(qmin - round(min' / scale), qmin, qmax)); symmetric,
// scale = max(max(|min|, |max|) / (qmax - zero_point), eps). Throws for NaN / infinite ranges
// or min > max.
QParams choose_params(const DynTensor& min, const DynTensor& max, const QScheme& scheme);

// 4-bit packing along the last dim: integer values in [-8, 7] or [0, 15] (any integer dtype) to
// u8 bytes [..., ceil(n / 2)], element 2j in the low nibble (two's complement for negatives).
DynTensor pack_int4(const DynTensor& values);
// The inverse: `n` values along the last dim, i8 in [-8, 7] when `is_signed`, else u8 in [0, 15].
DynTensor unpack_int4(const DynTensor& packed, int64_t n, bool is_signed);

}  // namespace ember::quant
