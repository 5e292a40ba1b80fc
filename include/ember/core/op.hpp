// The op IR: one node = OpKind + inputs + attributes + inferred output metadata.
//
//   # Backend& backend = given<Backend>();
//   # PrimitivePtr a = given<PrimitivePtr>(), b = a;
//   Op op = make_op(OpKind::add, {a, b});          // validates, infers outputs, or throws Error
//   std::vector<PrimitivePtr> out = backend.execute(std::move(op));
//
// Ops are declared once, in ops.def; this header derives the enum, the names, the families
// and the attribute types from it. Shape/dtype inference lives in src/core/infer.cpp.
#pragma once

#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "ember/core/dtype.hpp"
#include "ember/core/shape.hpp"

namespace ember {

struct TensorMeta {
  Shape shape;
  DType dtype = DType::f32;
  bool operator==(const TensorMeta&) const = default;
};

// A backend's tensor: a buffer, a view, or a lazy value. Its meta is fixed at creation.
class Primitive {
 public:
  explicit Primitive(TensorMeta meta) : meta_(std::move(meta)) {}
  virtual ~Primitive() = default;
  const TensorMeta& meta() const { return meta_; }
  const Shape& shape() const { return meta_.shape; }
  DType dtype() const { return meta_.dtype; }

 private:
  TensorMeta meta_;
};
using PrimitivePtr = std::shared_ptr<Primitive>;

// ---- attributes, one struct per shape of argument list ----
struct NoAttrs {
  bool operator==(const NoAttrs&) const = default;
};
struct ScalarAttrs {  // clamp (min, max), leaky_relu (slope), softplus (beta, threshold)
  double a = 0, b = 0;
  bool operator==(const ScalarAttrs&) const = default;
};
struct CreateAttrs {  // full (a=value), arange (a=start, b=end, c=step), linspace (a, b; shape[0] steps),
                      // eye (shape [n, m]), random_* (a, b: low/high, mean/std, p)
  Shape shape;
  DType dtype = DType::f32;
  double a = 0, b = 0, c = 0;
  // full of one value that may share a read-only buffer with equal constants: the scalar
  // operands that `x * 0.5` creates, which no user holds (a backend may then make each value
  // once). A tensor a user creates never shares: graph::overwrite may write into it.
  bool shared = false;
  bool operator==(const CreateAttrs&) const = default;
};
struct ReduceAttrs {
  std::vector<int> dims;  // normalised, sorted, unique; empty = every dim
  bool keepdim = false;
  double p = 2;            // norm
  int64_t correction = 1;  // var, std
  bool operator==(const ReduceAttrs&) const = default;
};
struct DimAttrs {  // softmax, scans, sort (flag=descending), topk (k, flag=largest), cat, gather..., tril (k)
  int dim = 0;
  bool flag = false;
  int64_t k = 0;
  bool operator==(const DimAttrs&) const = default;
};
struct DimsAttrs {  // permute (a permutation), flip (dims to flip)
  std::vector<int> dims;
  bool operator==(const DimsAttrs&) const = default;
};
struct ShapeAttrs {  // reshape, expand (fully resolved target), adaptive pools (output spatial size)
  Shape shape;
  bool operator==(const ShapeAttrs&) const = default;
};
struct SliceRange {  // normalised: 0 <= start <= end <= size, step >= 1
  int64_t start = 0, end = 0, step = 1;
  int64_t length() const { return end > start ? (end - start + step - 1) / step : 0; }
  bool operator==(const SliceRange&) const = default;
};
struct SliceAttrs {  // one range per dim
  std::vector<SliceRange> ranges;
  bool operator==(const SliceAttrs&) const = default;
};
struct RollAttrs {
  std::vector<int64_t> shifts;
  std::vector<int> dims;
  bool operator==(const RollAttrs&) const = default;
};
enum class PadMode : uint8_t { constant, reflect, replicate };
struct PadAttrs {  // pads[2*i], pads[2*i+1] = before/after for dim i (every dim, first to last)
  std::vector<int64_t> pads;
  PadMode mode = PadMode::constant;
  double value = 0;
  bool operator==(const PadAttrs&) const = default;
};
struct CastAttrs {
  DType dtype = DType::f32;
  bool operator==(const CastAttrs&) const = default;
};
struct ConvAttrs {  // one entry per spatial dim
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
  bool operator==(const ConvAttrs&) const = default;
};
struct PoolAttrs {
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceil_mode = false, count_include_pad = true;
  bool operator==(const PoolAttrs&) const = default;
};
enum class InterpMode : uint8_t { nearest, linear, cubic };
struct InterpolateAttrs {
  std::vector<int64_t> size;  // output spatial size
  InterpMode mode = InterpMode::nearest;
  bool align_corners = false;
  bool operator==(const InterpolateAttrs&) const = default;
};
struct NormAttrs {
  int axes = 1;  // layer_norm: number of trailing dims normalised
  double eps = 1e-5;
  bool operator==(const NormAttrs&) const = default;
};
struct AttentionAttrs {
  bool causal = false;
  double scale = std::numeric_limits<double>::quiet_NaN();  // NaN: 1/sqrt(E)
  bool operator==(const AttentionAttrs& o) const {
    return causal == o.causal && (scale == o.scale || (std::isnan(scale) && std::isnan(o.scale)));
  }
};

// One Adam / AdamW update (torch.optim.Adam, amsgrad off): `step` is the update's number
// (from 1), which fixes the bias corrections; decoupled = AdamW's weight decay.
struct AdamAttrs {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  int64_t step = 1;
  bool decoupled = false;
  bool maximize = false;
  bool operator==(const AdamAttrs&) const = default;
};

// A user-defined op (ember/core/custom_op.hpp): which one. Two ops are the same op when they
// point at the same definition.
struct CustomOpImpl;
struct CustomAttrs {
  std::shared_ptr<const CustomOpImpl> impl;
  bool operator==(const CustomAttrs&) const = default;
};

using OpAttrs = std::variant<NoAttrs, ScalarAttrs, CreateAttrs, ReduceAttrs, DimAttrs, DimsAttrs, ShapeAttrs,
                             SliceAttrs, RollAttrs, PadAttrs, CastAttrs, ConvAttrs, PoolAttrs, InterpolateAttrs,
                             NormAttrs, AttentionAttrs, AdamAttrs, CustomAttrs>;

// ---- the table-derived enums ----
enum class OpKind : uint16_t {
#define EMBER_OP(name, family, attrs, nout) name,
#include "ember/core/ops.def"
#undef EMBER_OP
};
inline constexpr int kNumOps = 0
#define EMBER_OP(name, family, attrs, nout) +1
#include "ember/core/ops.def"
#undef EMBER_OP
    ;

enum class OpFamily : uint8_t {
  Creation, Unary, FloatUnary, Predicate, BitwiseUnary, Binary, FloatBinary, Compare, Bitwise, Where, Ternary,
  Reduce, View, Cast, DataDependent, Opaque
};

struct OpInfo {
  std::string_view name;
  OpFamily family;
  int num_outputs;
  size_t attrs_index;  // index into OpAttrs
};

namespace detail {
template <class T, class V> struct variant_index;
template <class T, class... Ts>
struct variant_index<T, std::variant<Ts...>> {
  static constexpr size_t value = [] {
    size_t i = 0;
    ((std::is_same_v<T, Ts> ? false : (++i, true)) && ...);
    return i;
  }();
};
}  // namespace detail

inline constexpr std::array<OpInfo, kNumOps> kOpInfo = {{
#define EMBER_OP(name, family, attrs, nout) \
  {#name, OpFamily::family, nout, detail::variant_index<attrs, OpAttrs>::value},
#include "ember/core/ops.def"
#undef EMBER_OP
}};

constexpr const OpInfo& op_info(OpKind k) { return kOpInfo[static_cast<size_t>(k)]; }
constexpr std::string_view op_name(OpKind k) { return op_info(k).name; }
OpKind op_kind_from_name(std::string_view name);  // throws Error on unknown names

// Fusion view of the families.
constexpr bool is_elementwise(OpFamily f) {
  return f == OpFamily::Unary || f == OpFamily::FloatUnary || f == OpFamily::Predicate ||
         f == OpFamily::BitwiseUnary || f == OpFamily::Binary || f == OpFamily::FloatBinary ||
         f == OpFamily::Compare || f == OpFamily::Bitwise || f == OpFamily::Where || f == OpFamily::Ternary ||
         f == OpFamily::Cast;
}

// ---- the node ----
struct Op {
  OpKind kind;
  std::vector<PrimitivePtr> inputs;  // optional inputs (bias, mask, ...) may be null
  OpAttrs attrs;
  std::vector<TensorMeta> outputs;   // inferred; a DataDependent op leaves unknown dims as -1

  const OpInfo& info() const { return op_info(kind); }
  std::string_view name() const { return op_info(kind).name; }
  template <class A>
  const A& attr() const { return std::get<A>(attrs); }
  const TensorMeta& in(size_t i) const { return inputs[i]->meta(); }
};

// Validates inputs and attributes and infers the output metadata; every error is an Error
// naming the op, the argument and the shapes. The only way ops are built.
Op make_op(OpKind kind, std::vector<PrimitivePtr> inputs, OpAttrs attrs = NoAttrs{});
// Inference alone (used by make_op and by decorators that need metadata without primitives).
std::vector<TensorMeta> infer_outputs(OpKind kind, std::span<const TensorMeta* const> inputs, const OpAttrs& attrs);
inline std::vector<TensorMeta> infer_outputs(OpKind kind, const std::vector<const TensorMeta*>& inputs,
                                             const OpAttrs& attrs) {
  return infer_outputs(kind, std::span<const TensorMeta* const>(inputs), attrs);
}

}  // namespace ember
