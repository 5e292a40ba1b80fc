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

// A tensor's metadata without its storage: what inference produces and a Primitive carries.
struct TensorMeta {
  Shape shape;               // dims; an unknown (data-dependent) dim is -1 in inferred outputs
  DType dtype = DType::f32;  // element type
  bool operator==(const TensorMeta&) const = default;  // same shape and dtype
};

// A backend's tensor: a buffer, a view, or a lazy value. Its meta is fixed at creation.
class Primitive {
 public:
  // Backends construct their primitives with the metadata inference gave the op's output.
  explicit Primitive(TensorMeta meta) : meta_(std::move(meta)) {}
  virtual ~Primitive() = default;
  const TensorMeta& meta() const { return meta_; }  // shape and dtype, fixed for the primitive's life
  const Shape& shape() const { return meta_.shape; }  // the meta's shape
  DType dtype() const { return meta_.dtype; }  // the meta's dtype

 private:
  TensorMeta meta_;
};
// Shared ownership of a primitive: tensors, ops and backends hold these (null = an absent optional input).
using PrimitivePtr = std::shared_ptr<Primitive>;

// ---- attributes, one struct per shape of argument list ----
// The attributes of ops that take none (elementwise arithmetic, matmul, contiguous, nonzero, ...).
struct NoAttrs {
  bool operator==(const NoAttrs&) const = default;  // always equal
};
// Two scalar arguments: clamp (a = min, b = max; either may be +-inf for no bound),
// leaky_relu (a = negative slope), softplus (a = beta, b = threshold).
struct ScalarAttrs {
  // first scalar: clamp's min, leaky_relu's slope, softplus's beta
  double a = 0, b = 0;  // second scalar: clamp's max, softplus's threshold (unused by leaky_relu)
  bool operator==(const ScalarAttrs&) const = default;  // field-wise equality
};
// The creation ops (no inputs): full (a = value), arange (a = start, b = end (exclusive), c = step),
// linspace (a = start, b = end, shape[0] = steps), eye (shape [n, m]), random_uniform (a = low,
// b = high), random_normal (a = mean, b = std), random_bernoulli (a = p), random_randint (a = low,
// b = high, exclusive).
struct CreateAttrs {
  Shape shape;               // the output's shape (dims must be >= 0)
  DType dtype = DType::f32;  // the output's dtype (random_uniform and random_normal need a floating one)
  // first scalar: the value, start, low, mean or p (see the struct)
  double a = 0, b = 0, c = 0;  // third scalar: arange's step (b, the second, is end, high or std)
  // full of one value that may share a read-only buffer with equal constants: the scalar
  // operands that `x * 0.5` creates, which no user holds (a backend may then make each value
  // once). A tensor a user creates never shares: graph::overwrite may write into it.
  bool shared = false;
  bool operator==(const CreateAttrs&) const = default;  // field-wise equality
};
// The reductions (sum, mean, prod, max, min, any, all, var, std, norm, logsumexp, argmax, argmin,
// max_dim, min_dim). make_op normalises negative dims and throws an Error on a repeated one.
struct ReduceAttrs {
  std::vector<int> dims;  // normalised, sorted, unique; empty = every dim
  bool keepdim = false;   // keep each reduced dim as size 1 (PyTorch's keepdim)
  double p = 2;            // norm
  int64_t correction = 1;  // var, std
  bool operator==(const ReduceAttrs&) const = default;  // field-wise equality
};
// One dim plus a flag and an integer: softmax, log_softmax, cumsum, cumprod, cummax, cummin,
// sort (flag = descending), topk (k, flag = largest), cat, gather, scatter, scatter_add,
// index_select, index_add, index_copy, cross_entropy (dim = 1, k = ignore_index) and tril/triu
// (k = the diagonal; dim unused).
struct DimAttrs {
  int dim = 0;        // the dim the op works along; make_op normalises a negative one (not for tril/triu)
  bool flag = false;  // sort: descending; topk: largest (else smallest); unused elsewhere
  int64_t k = 0;      // topk: count; tril/triu: diagonal offset; cross_entropy: ignore_index
  bool operator==(const DimAttrs&) const = default;  // field-wise equality
};
// A list of dims: permute (a permutation of every dim), flip (the dims to reverse).
struct DimsAttrs {
  std::vector<int> dims;  // normalised by make_op (negative = from the end)
  bool operator==(const DimsAttrs&) const = default;  // field-wise equality
};
// A target shape: reshape, expand (fully resolved target), adaptive_avg_pool (output spatial size).
struct ShapeAttrs {
  Shape shape;  // the target shape (no -1 placeholders) or, for adaptive_avg_pool, the output's spatial dims
  bool operator==(const ShapeAttrs&) const = default;  // field-wise equality
};
// One dim's range of a slice, like Python's start:end:step; normalised: 0 <= start <= end <= size, step >= 1.
struct SliceRange {
  // first index taken
  int64_t start = 0, end = 0, step = 1;  // distance between taken indices, >= 1 (end is exclusive)
  int64_t length() const { return end > start ? (end - start + step - 1) / step : 0; }  // indices taken
  bool operator==(const SliceRange&) const = default;  // field-wise equality
};
// slice and slice_assign: a strided box of the input.
struct SliceAttrs {
  std::vector<SliceRange> ranges;  // one range per dim of the input, first to last
  bool operator==(const SliceAttrs&) const = default;  // field-wise equality
};
// roll (torch.roll): shifts elements along dims, wrapping around.
struct RollAttrs {
  std::vector<int64_t> shifts;  // one shift per entry of dims; a single shift with no dims rolls the flattened tensor
  std::vector<int> dims;        // the dims to roll (normalised by make_op); may be empty, see shifts
  bool operator==(const RollAttrs&) const = default;  // field-wise equality
};
// How pad fills the new border (torch.nn.functional.pad's modes).
enum class PadMode : uint8_t { constant, reflect, replicate };
// pad: pads[2*i], pads[2*i+1] = before/after for dim i (every dim, first to last).
struct PadAttrs {
  std::vector<int64_t> pads;  // two entries per dim; a negative entry crops (constant mode only)
  PadMode mode = PadMode::constant;  // constant fill, mirror without the edge, or repeat the edge
  double value = 0;  // the fill value of constant mode
  bool operator==(const PadAttrs&) const = default;  // field-wise equality
};
// cast: the target element type (values convert as convert_scalar does).
struct CastAttrs {
  DType dtype = DType::f32;  // the output's dtype
  bool operator==(const CastAttrs&) const = default;  // field-wise equality
};
// conv and conv_transpose (PyTorch's convNd / conv_transposeNd, N = 1 to 3): one entry per spatial dim
// in each vector; all four vectors must have the same length N.
struct ConvAttrs {
  // stride (>= 1); then padding (zeros added on both sides, >= 0) and dilation (>= 1)
  std::vector<int64_t> stride, padding, dilation, output_padding;  // conv_transpose: size added to one side
  int64_t groups = 1;  // channel groups; both channel counts must be divisible by it
  // conv only, an epilogue in the same kernel (ONNX Runtime's FusedConv): a 4th input, the
  // residual (the output's shape and dtype), is added after the bias, then the result is clamped to
  // [act_min, act_max] (ReLU: [0, inf], ReLU6: [0, 6]; NaN stays NaN; +-inf: no bound).
  double act_min = -std::numeric_limits<double>::infinity();  // the clamp's lower bound (-inf: none)
  double act_max = std::numeric_limits<double>::infinity();   // the clamp's upper bound (inf: none)
  bool has_activation() const {  // whether the epilogue clamps (either bound finite)
    return act_min > -std::numeric_limits<double>::infinity() || act_max < std::numeric_limits<double>::infinity();
  }
  bool operator==(const ConvAttrs&) const = default;  // field-wise equality
};
// avg_pool and max_pool (PyTorch's avg_poolNd / max_poolNd): one entry per spatial dim in each vector.
struct PoolAttrs {
  // window size (>= 1); then stride (>= 1) and padding (implicit, each side, at most half the window)
  std::vector<int64_t> kernel, stride, padding, dilation;  // spacing of the window's taps (>= 1)
  // round the output size up instead of down (a last window must still start inside the input)
  bool ceil_mode = false, count_include_pad = true;  // avg_pool: the padding counts in the divisor
  // max_pool: also return the i64 argmax indices (output 1, what autodiff's backward reads); false
  // returns the values alone and the kernels skip the argmax (inference). avg_pool requires true.
  bool indices = true;
  bool operator==(const PoolAttrs&) const = default;  // field-wise equality
};
// interpolate's sampling: nearest, linear (linear/bilinear) or cubic (bicubic); linear and cubic allow 1 or 2
// spatial dims.
enum class InterpMode : uint8_t { nearest, linear, cubic };
// interpolate (torch.nn.functional.interpolate with an output size).
struct InterpolateAttrs {
  std::vector<int64_t> size;  // output spatial size
  InterpMode mode = InterpMode::nearest;  // the sampling
  bool align_corners = false;  // linear/cubic: corner pixels of input and output align (PyTorch's flag)
  bool operator==(const InterpolateAttrs&) const = default;  // field-wise equality
};
// layer_norm, layer_norm_backward and batch_norm.
struct NormAttrs {
  int axes = 1;  // layer_norm: number of trailing dims normalised
  double eps = 1e-5;  // added to the variance before its square root
  bool operator==(const NormAttrs&) const = default;  // field-wise equality
};
// attention and attention_backward (torch's scaled_dot_product_attention).
struct AttentionAttrs {
  bool causal = false;  // query i sees keys j <= i only (PyTorch's is_causal)
  double scale = std::numeric_limits<double>::quiet_NaN();  // NaN: 1/sqrt(E)
  // Field-wise equality, with a NaN scale equal to a NaN scale.
  bool operator==(const AttentionAttrs& o) const {
    return causal == o.causal && (scale == o.scale || (std::isnan(scale) && std::isnan(o.scale)));
  }
};

// One Adam / AdamW update (torch.optim.Adam, amsgrad off): `step` is the update's number
// (from 1), which fixes the bias corrections; decoupled = AdamW's weight decay.
struct AdamAttrs {
  // learning rate (scales the lr input instead when the op is given one); then beta1, beta2 and eps
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;  // decay: L2 (Adam) or decoupled (AdamW)
  int64_t step = 1;  // the update's number, >= 1 (ignored when the op is given a step input)
  bool decoupled = false;  // AdamW: decay the parameter by lr * weight_decay instead of adding to the grad
  bool maximize = false;  // ascend: the update uses -grad
  bool operator==(const AdamAttrs&) const = default;  // field-wise equality
};

// matmul_wq: how the weight is quantized (ggml's Q8_0 / Q4_0 blocks in spirit).
struct WeightQuantAttrs {
  int bits = 4;        // bits per weight: 4 (two per byte) or 8
  int64_t block = 32;  // weights per scale along K: 32, 64 or 128 (K must be a multiple)
  // x is first rounded to int8 per block of 32 along K (scale max|x| / 127, round half to even:
  // ggml's Q8_0), so that the products run on int8 dot products (AVX-512 VNNI)
  bool quantize_x = false;
  bool operator==(const WeightQuantAttrs&) const = default;  // field-wise equality
};

struct CustomOpImpl;
// A user-defined op (ember/core/custom_op.hpp): which one. Two ops are the same op when they
// point at the same definition.
struct CustomAttrs {
  std::shared_ptr<const CustomOpImpl> impl;  // the definition (never null in a built op)
  bool operator==(const CustomAttrs&) const = default;  // same definition object
};

// Any op's attributes; ops.def fixes which alternative each OpKind takes (make_op checks it).
using OpAttrs = std::variant<NoAttrs, ScalarAttrs, CreateAttrs, ReduceAttrs, DimAttrs, DimsAttrs, ShapeAttrs,
                             SliceAttrs, RollAttrs, PadAttrs, CastAttrs, ConvAttrs, PoolAttrs, InterpolateAttrs,
                             NormAttrs, AttentionAttrs, AdamAttrs, WeightQuantAttrs, CustomAttrs>;

// ---- the table-derived enums ----
// Every op of ops.def, in table order; op_name gives its name and op_kind_from_name the inverse.
enum class OpKind : uint16_t {
#define EMBER_OP(name, family, attrs, nout) name,
#include "ember/core/ops.def"
#undef EMBER_OP
};
// The number of ops in ops.def (and of OpKind values).
inline constexpr int kNumOps = 0
#define EMBER_OP(name, family, attrs, nout) +1
#include "ember/core/ops.def"
#undef EMBER_OP
    ;

// How an op computes, which drives inference and fusion (see ops.def for each family's dtype rule).
enum class OpFamily : uint8_t {
  Creation, Unary, FloatUnary, Predicate, BitwiseUnary, Binary, FloatBinary, Compare, Bitwise, Where, Ternary,
  Reduce, View, Cast, DataDependent, Opaque
};

// An op's row of ops.def.
struct OpInfo {
  std::string_view name;  // the op's name in ops.def ("add", "conv", ...)
  OpFamily family;        // its family
  int num_outputs;        // number of outputs; -1 when it varies (adam_step, custom, max_pool)
  size_t attrs_index;  // index into OpAttrs
};

namespace detail {
template <class T, class V> struct variant_index;
template <class T, class... Ts>
struct variant_index<T, std::variant<Ts...>> {
  static constexpr size_t value = [] {
    size_t i = 0;
    (void)((std::is_same_v<T, Ts> ? false : (++i, true)) && ...);
    return i;
  }();
};
}  // namespace detail

// The table itself, indexed by OpKind.
inline constexpr std::array<OpInfo, kNumOps> kOpInfo = {{
#define EMBER_OP(name, family, attrs, nout) \
  {#name, OpFamily::family, nout, detail::variant_index<attrs, OpAttrs>::value},
#include "ember/core/ops.def"
#undef EMBER_OP
}};

constexpr const OpInfo& op_info(OpKind k) { return kOpInfo[static_cast<size_t>(k)]; }  // k's row of the table
constexpr std::string_view op_name(OpKind k) { return op_info(k).name; }  // k's name in ops.def
OpKind op_kind_from_name(std::string_view name);  // throws Error on unknown names

// Fusion view of the families: true for the families computed element by element (with
// broadcasting), which a fusing backend may merge into one kernel.
constexpr bool is_elementwise(OpFamily f) {
  return f == OpFamily::Unary || f == OpFamily::FloatUnary || f == OpFamily::Predicate ||
         f == OpFamily::BitwiseUnary || f == OpFamily::Binary || f == OpFamily::FloatBinary ||
         f == OpFamily::Compare || f == OpFamily::Bitwise || f == OpFamily::Where || f == OpFamily::Ternary ||
         f == OpFamily::Cast;
}

// ---- the node ----
// One op application, built by make_op (which validated it) and consumed by Backend::execute.
struct Op {
  OpKind kind;  // which op
  std::vector<PrimitivePtr> inputs;  // optional inputs (bias, mask, ...) may be null
  OpAttrs attrs;  // the attributes, of the alternative ops.def names for kind
  std::vector<TensorMeta> outputs;   // inferred; a DataDependent op leaves unknown dims as -1

  const OpInfo& info() const { return op_info(kind); }  // the op's row of ops.def
  std::string_view name() const { return op_info(kind).name; }  // the op's name
  // The attributes as their type A (std::bad_variant_access if A is not the op's attribute type).
  template <class A>
  const A& attr() const { return std::get<A>(attrs); }
  const TensorMeta& in(size_t i) const { return inputs[i]->meta(); }  // input i's meta; the input must not be null
};

// Validates inputs and attributes and infers the output metadata; every error is an Error
// naming the op, the argument and the shapes. The only way ops are built.
Op make_op(OpKind kind, std::vector<PrimitivePtr> inputs, OpAttrs attrs = NoAttrs{});
// Inference alone (used by make_op and by decorators that need metadata without primitives).
// Unlike make_op it does not normalise negative dims in attrs; throws an Error like make_op.
std::vector<TensorMeta> infer_outputs(OpKind kind, std::span<const TensorMeta* const> inputs, const OpAttrs& attrs);
// The same, for metadata gathered in a vector (null entries = absent optional inputs).
inline std::vector<TensorMeta> infer_outputs(OpKind kind, const std::vector<const TensorMeta*>& inputs,
                                             const OpAttrs& attrs) {
  return infer_outputs(kind, std::span<const TensorMeta* const>(inputs), attrs);
}

}  // namespace ember
