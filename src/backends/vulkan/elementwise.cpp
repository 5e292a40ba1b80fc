// Elementwise kernels: the Unary, FloatUnary, Predicate, BitwiseUnary, Binary, FloatBinary,
// Compare, Bitwise, Where and Ternary families, with broadcasting by strides.
//
// One generated shader per (op, dtype), key "add/f32": the op is a GLSL function ember_op(x, y,
// z) in the compute type (float for f32/f16/bf16, rounded once on store; int for the integer
// types narrower than 64 bits, wrapped on store), around the generic strided loop. Semantics
// follow the CPU backend, as the CUDA backend's do (src/backends/cuda/elementwise.cpp): integer
// arithmetic wraps, shifts take the count modulo the promoted width, round is half to even,
// sign(NaN) = 0, relu(NaN) = NaN, minimum/maximum propagate NaN, gelu goes through erfc,
// sigmoid/silu/gelu_tanh through the stable sigmoid, softplus with its threshold, pow with torch's
// scalar-exponent fast paths, fmod exact.
//
// f64 computes in double with the double versions of the same functions (glsl.cpp). Like CUDA,
// integer fmod/remainder by zero give 0 instead of raising.
#include "elementwise.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <regex>

#include "glsl.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {

int ew_arity(OpKind k) {
  switch (op_info(k).family) {
    case OpFamily::Binary:
    case OpFamily::FloatBinary:
    case OpFamily::Compare:
    case OpFamily::Bitwise:
      return 2;
    case OpFamily::Where:
    case OpFamily::Ternary:
      return 3;
    default:
      return 1;
  }
}

bool ew_returns_bool(OpKind k) {
  OpFamily f = op_info(k).family;
  return f == OpFamily::Predicate || f == OpFamily::Compare;
}

// The ops of the families above and the dtypes their kernels take (the CPU backend's
// restrictions, as the CUDA backend's elementwise_dtypes).
bool ew_allows(OpKind k, DType dt) {
  switch (op_info(k).family) {
    case OpFamily::Unary:
      return !is_bool(dt);
    case OpFamily::FloatUnary:
    case OpFamily::FloatBinary:
    case OpFamily::Ternary:
      return is_float(dt);
    case OpFamily::Predicate:
    case OpFamily::Compare:
    case OpFamily::Where:
      return true;
    case OpFamily::BitwiseUnary:
      return !is_float(dt);
    case OpFamily::Binary:
      if (k == OpKind::div) return is_float(dt);
      if (k == OpKind::add || k == OpKind::mul || k == OpKind::minimum || k == OpKind::maximum) return true;
      return !is_bool(dt);
    case OpFamily::Bitwise:
      return (k == OpKind::shift_left || k == OpKind::shift_right) ? is_int(dt) : !is_float(dt);
    default:
      return false;
  }
}

namespace {

DType value_dtype(const Op& op) { return op.in(op.kind == OpKind::where ? 1 : 0).dtype; }

bool ew_dtypes(const VulkanBackend& be, const Op& op) {
  const DType dt = value_dtype(op);
  if (!ew_allows(op.kind, dt) || !be.has_dtype(dt)) return false;
  if (ew_returns_bool(op.kind) || op.kind == OpKind::where) {
    if (!be.has_dtype(DType::boolean)) return false;
  }
  return true;
}

// The body of ember_op for (k, dt): x, y, z in the compute type C, A and B the attributes.
std::string body(OpKind k, DType dt) {
  const bool flt = is_float(dt), dbl = dt == DType::f64, boolean = is_bool(dt), unsig = dt == DType::u8;
  const bool wide = dt == DType::i64;
  const std::string nan = dbl ? "ember_nan_d()" : "ember_nan()";
  switch (k) {
    case OpKind::neg:
      return "return -x;";
    case OpKind::abs:
      if (flt) return "return abs(x);";
      return unsig ? "return x;" : "return x < C(0) ? -x : x;";
    case OpKind::sign:
      return "return x > C(0) ? C(1) : (x < C(0) ? C(-1) : C(0));";
    case OpKind::square:
      return "return x * x;";
    case OpKind::clamp:
      if (flt)
        return "C v = x < A ? A : x;\n  v = v > B ? B : v;\n  return (ember_isnan(A) || ember_isnan(B)) ? " + nan +
               " : v;";
      return "C v = x < A ? A : x;\n  return v > B ? B : v;";
    case OpKind::exp:
      return "return ember_exp(x);";
    case OpKind::exp2:
      return "return ember_exp2(x);";
    case OpKind::expm1:
      return "return ember_expm1(x);";
    case OpKind::log:
      return "return ember_log(x);";
    case OpKind::log2:
      return "return ember_log2(x);";
    case OpKind::log10:
      return "return ember_log(x) * 0.434294481903251828;";
    case OpKind::log1p:
      return "return ember_log1p(x);";
    case OpKind::sqrt:
      return "return x < C(0) ? " + nan + " : sqrt(x);";
    case OpKind::rsqrt:
      return "return x < C(0) ? " + nan + " : C(1) / sqrt(x);";
    case OpKind::reciprocal:
      return "return C(1) / x;";
    case OpKind::sin:
      return "return ember_sincos(x, false);";
    case OpKind::cos:
      return "return ember_sincos(x, true);";
    case OpKind::tan:
      return "return ember_sincos(x, false) / ember_sincos(x, true);";
    case OpKind::asin:
      return "return ember_asin(x);";
    case OpKind::acos:
      return "return ember_acos(x);";
    case OpKind::atan:
      return "return ember_atan(x);";
    case OpKind::sinh:
      return "return ember_sinh(x);";
    case OpKind::cosh:
      return "return ember_cosh(x);";
    case OpKind::tanh:
      return "return ember_tanh(x);";
    case OpKind::asinh:
      return "return ember_asinh(x);";
    case OpKind::acosh:
      return "return ember_acosh(x);";
    case OpKind::atanh:
      return "return ember_atanh(x);";
    case OpKind::erf:
      return "return ember_erf(x);";
    case OpKind::sigmoid:
      return "return ember_sigmoid(x);";
    case OpKind::log_sigmoid:
      return "return ember_isnan(x) ? x : min(x, 0.0) - ember_log1p(ember_exp(-abs(x)));";
    case OpKind::hard_sigmoid:
      return "C v = x + C(3);\n  v = v < C(0) ? C(0) : v;\n  v = v > C(6) ? C(6) : v;\n  return v / C(6);";
    case OpKind::relu:
      return "return x < C(0) ? C(0) : x;";
    case OpKind::gelu:
      return "return x == 0.0 ? 0.0 : 0.5 * x * ember_erfc(-x * 0.70710678118654752440);";
    case OpKind::gelu_tanh:
      return "if (ember_isinf(x)) return x > 0.0 ? x : ember_nan();\n"
             "  float u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);\n  return x * ember_sigmoid(2.0 * u);";
    case OpKind::silu:
      return "return x * ember_sigmoid(x);";
    case OpKind::floor:
      return "return floor(x);";
    case OpKind::ceil:
      return "return ceil(x);";
    case OpKind::round:
      return "return roundEven(x);";
    case OpKind::trunc:
      return "return trunc(x);";
    case OpKind::leaky_relu:
      return "return x > C(0) ? x : x * A;";
    case OpKind::softplus:
      return "C xb = x * A;\n  return xb > B ? x : ember_log1p(ember_exp(xb)) / A;";
    case OpKind::is_nan:
      return flt ? "return ember_isnan(x);" : "return false;";
    case OpKind::is_inf:
      return flt ? "return ember_isinf(x);" : "return false;";
    case OpKind::is_finite:
      return flt ? "return !ember_isnan(x) && !ember_isinf(x);" : "return true;";
    case OpKind::bool_not:
      return "return x == C(0);";
    case OpKind::bitwise_not:
      return boolean ? "return 1 - x;" : "return ~x;";
    case OpKind::add:
      return boolean ? "return x | y;" : "return x + y;";
    case OpKind::sub:
      return "return x - y;";
    case OpKind::mul:
      return boolean ? "return x & y;" : "return x * y;";
    case OpKind::div:
      return "return x / y;";
    case OpKind::fmod:
      if (flt) return "return ember_fmod(x, y);";
      if (unsig) return "return y == C(0) ? C(0) : x - (x / y) * y;";
      return "if (y == C(0) || y == C(-1)) return C(0);\n  return x - (x / y) * y;";
    case OpKind::remainder:  // the sign of the divisor
      if (flt) return "C m = ember_fmod(x, y);\n  return (m != C(0) && ((m < C(0)) != (y < C(0)))) ? m + y : m;";
      if (unsig) return "return y == C(0) ? C(0) : x - (x / y) * y;";
      return "if (y == C(0) || y == C(-1)) return C(0);\n  C m = x - (x / y) * y;\n"
             "  return (m != C(0) && ((m < C(0)) != (y < C(0)))) ? m + y : m;";
    case OpKind::pow:
      if (flt)  // p.flag: the exponent is one broadcast value (torch's tensor ** scalar fast paths)
        return "if (EMBER_SCALAR_EXPONENT) {\n"
               "    if (y == 2.0) return x * x;\n    if (y == 3.0) return x * x * x;\n"
               "    if (y == 0.5) return x < 0.0 ? ember_nan() : sqrt(x);\n"
               "    if (y == -0.5) return x < 0.0 ? ember_nan() : 1.0 / sqrt(x);\n"
               "    if (y == -1.0) return 1.0 / x;\n    if (y == -2.0) return 1.0 / (x * x);\n"
               "  }\n  return ember_pow(x, y);";
      return std::string(unsig ? ""
                               : "if (y < C(0)) {  // torch: 1 -> 1, -1 -> +-1, others -> 0\n"
                                 "    if (x == C(1)) return C(1);\n"
                                 "    if (x == C(-1)) return ((y & C(1)) != C(0)) ? C(-1) : C(1);\n"
                                 "    return C(0);\n  }\n  ") +
             "C r = C(1), base = x;\n  " +
             (wide ? "uint64_t e = uint64_t(y);\n  while (e != 0ul) {\n    if ((e & 1ul) != 0ul) r *= base;\n"
                   : "uint e = uint(y);\n  while (e != 0u) {\n    if ((e & 1u) != 0u) r *= base;\n") +
             "    base *= base;\n    e >>= 1;\n  }\n  return r;";
    case OpKind::minimum:
      if (flt) return "return (ember_isnan(x) || ember_isnan(y)) ? x + y : (x < y ? x : y);";
      return "return y < x ? y : x;";
    case OpKind::maximum:
      if (flt) return "return (ember_isnan(x) || ember_isnan(y)) ? x + y : (x > y ? x : y);";
      return "return x < y ? y : x;";
    case OpKind::atan2:
      return "return ember_atan2(x, y);";
    case OpKind::hypot:
      return "return ember_hypot(x, y);";
    case OpKind::gelu_backward:
      return "float cdf = 0.5 * ember_erfc(-x * 0.70710678118654752440);\n"
             "  float pdf = ember_exp(-0.5 * x * x) * 0.39894228040143267794;\n  return y * (cdf + x * pdf);";
    case OpKind::gelu_tanh_backward:
      return "float kb = 0.79788456080286535588, kk = 0.044715, x2 = x * x;\n"
             "  float th = ember_tanh(kb * (x + kk * x2 * x));\n"
             "  return y * (0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * kb * (1.0 + 3.0 * kk * x2));";
    case OpKind::silu_backward:
      return "float s = ember_sigmoid(x);\n  return y * s * (1.0 + x * (1.0 - s));";
    case OpKind::equal:
      return "return x == y;";
    case OpKind::not_equal:
      return "return x != y;";
    case OpKind::greater:
      return "return x > y;";
    case OpKind::greater_equal:
      return "return x >= y;";
    case OpKind::lower:
      return "return x < y;";
    case OpKind::lower_equal:
      return "return x <= y;";
    case OpKind::bool_and:
      return "return (x != C(0)) && (y != C(0));";
    case OpKind::bool_or:
      return "return (x != C(0)) || (y != C(0));";
    case OpKind::bool_xor:
      return "return (x != C(0)) != (y != C(0));";
    case OpKind::bitwise_and:
      return "return x & y;";
    case OpKind::bitwise_or:
      return "return x | y;";
    case OpKind::bitwise_xor:
      return "return x ^ y;";
    // as torch 1.13 on x86: in int (int64 for i64), the count modulo that width
    case OpKind::shift_left:
      return wide ? "return x << (y & 63l);" : "return int(uint(x) << (uint(y) & 31u));";
    case OpKind::shift_right:
      return wide ? "return x >> (y & 63l);" : "return x >> (y & 31);";
    case OpKind::lerp:  // torch's two-branch formula, without a fused multiply-add
      return "C d = y - x;\n  bool low = abs(z) < C(0.5);\n  C base = low ? x : y;\n  C w = low ? z : z - C(1);\n"
             "  precise C r = base + w * d;\n  return r;";
    default:
      break;
  }
  EMBER_FAIL(op_name(k), ": no Vulkan elementwise kernel");
}

// The body for f64: double literals, the double NaN and infinity, C for float.
std::string double_body(std::string b) {
  static const std::regex literal(R"((\b[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?)(?![0-9A-Za-z.]))");
  b = std::regex_replace(b, literal, "$1LF");
  for (auto [from, to] : {std::pair<const char*, const char*>{"ember_nan()", "ember_nan_d()"},
                          {"ember_inf()", "ember_inf_d()"},
                          {"float ", "C "}}) {
    for (size_t at = b.find(from); at != std::string::npos; at = b.find(from, at + std::strlen(to)))
      b.replace(at, std::strlen(from), to);
  }
  return b;
}

std::string ew_source(OpKind k, DType dt) {
  const int n = ew_arity(k);
  const bool where = k == OpKind::where;
  const DType out = ew_returns_bool(k) ? DType::boolean : dt;
  std::vector<DType> dts = {dt, out};
  if (where) dts.push_back(DType::boolean);
  std::string s = glsl::header(dts);
  s += glsl::buffer(0, out, "o_", false);
  s += glsl::buffer(1, where ? DType::boolean : dt, "a_", true);
  if (n > 1) s += glsl::buffer(2, dt, "b_", true);
  if (n > 2) s += glsl::buffer(3, dt, "c_", true);
  if (!where) s += ew_function("ember_op", k, dt, ew_param_attrs(dt));
  s += "#define C " + glsl::compute_type(dt) + "\n";
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += step) {\n";
  if (where) {
    s += "    bool c = a_[ember_index(i, 1)] != uint8_t(0);\n";
    s += "    o_[ember_index(i, 0)] = c ? b_[ember_index(i, 2)] : c_[ember_index(i, 3)];\n  }\n}\n";
    return s;
  }
  s += "    C x = " + glsl::load(dt, "a_[ember_index(i, 1)]") + ";\n";
  s += n > 1 ? "    C y = " + glsl::load(dt, "b_[ember_index(i, 2)]") + ";\n" : "    C y = C(0);\n";
  s += n > 2 ? "    C z = " + glsl::load(dt, "c_[ember_index(i, 3)]") + ";\n" : "    C z = C(0);\n";
  const std::string r = ew_returns_bool(k) ? "(ember_op(x, y, z) ? 1 : 0)" : "ember_op(x, y, z)";
  s += "    o_[ember_index(i, 0)] = " + glsl::store(out, r) + ";\n  }\n}\n";
  return s;
}

// An integer clamp bound: +-inf and out-of-range values saturate to the dtype's range, NaN is 0
// (as the CPU backend's Clamp::bound).
int64_t clamp_bound(DType dt, double v) {
  int64_t r = 0;
  visit_dtype(dt, [&]<class T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      using L = std::numeric_limits<T>;
      if (v != v)
        r = 0;
      else if (v <= double(L::lowest()))
        r = int64_t(L::lowest());
      else if (v >= double(L::max()))
        r = int64_t(L::max());
      else
        r = int64_t(T(v));
    }
  });
  return r;
}

// The attribute values every kernel of op k on dt computes with (the eager kernel's parameters
// and the fused kernel's constants are made from these).
struct AttrValues {
  double a = 0, b = 0;     // as given: float kernels round them to float, f64 ones keep them
  int64_t ia = 0, ib = 0;  // integer kernels: saturated to the dtype
};
AttrValues attr_values(const OpAttrs& attrs, DType dt) {
  AttrValues v;
  if (const auto* s = std::get_if<ScalarAttrs>(&attrs)) v.a = s->a, v.b = s->b;
  if (is_int(dt)) v.ia = clamp_bound(dt, v.a), v.ib = clamp_bound(dt, v.b);
  return v;
}

void set_attrs(KernelParams& p, const Op& op, DType dt) {
  const AttrValues v = attr_values(op.attrs, dt);
  p.fa = float(v.a);
  p.fb = float(v.b);
  std::memcpy(p.da, &v.a, 8);
  std::memcpy(p.db, &v.b, 8);
  p.ia[0] = int32_t(uint32_t(uint64_t(v.ia))), p.ia[1] = int32_t(uint32_t(uint64_t(v.ia) >> 32));
  p.ib[0] = int32_t(uint32_t(uint64_t(v.ib))), p.ib[1] = int32_t(uint32_t(uint64_t(v.ib) >> 32));
  if (op.kind == OpKind::pow)
    p.flag = op.in(1).shape.numel() == 1 && op.in(1).shape.rank() <= op.in(0).shape.rank() ? 1u : 0u;
}

// GLSL literals with exactly these bits
std::string float_literal(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return "uintBitsToFloat(" + std::to_string(u) + "u)";
}
std::string double_literal(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return "packDouble2x32(uvec2(" + std::to_string(uint32_t(u)) + "u, " + std::to_string(uint32_t(u >> 32)) + "u))";
}
std::string int_literal(int64_t v, bool wide) {
  const uint64_t u = uint64_t(v);
  if (wide)
    return "packInt2x32(ivec2(int(" + std::to_string(uint32_t(u)) + "u), int(" + std::to_string(uint32_t(u >> 32)) +
           "u)))";
  return "int(" + std::to_string(uint32_t(u)) + "u)";
}

std::vector<PrimitivePtr> elementwise_kernel(VulkanBackend& be, Op& op) {
  const DType dt = value_dtype(op);
  auto out = be.alloc(op.outputs[0]);
  const int64_t n = out->numel();
  if (n == 0) return {out};
  const Shape& shape = out->shape();
  std::vector<Operand> ops = {operand_of(*out)};
  for (const auto& in : op.inputs) ops.push_back(broadcast_operand(as_vk(in), shape));
  KernelParams p = make_params(op.name(), shape, ops);
  set_attrs(p, op, dt);
  const std::string key = std::string(op.name()) + "/" + std::string(dtype_name(dt));
  VkPipeline pipe = be.shaders().get(op.name(), key, [&] { return ew_source(op.kind, dt); });
  std::array<BufferPtr, kMaxOperands> bind{};
  for (size_t i = 0; i < ops.size(); ++i) bind[i] = ops[i].buffer;
  be.dispatch(pipe, bind, &p, sizeof p, be.groups_for(n));
  return {out};
}

// prelu(v) = v * (v > 0 ? 1 : w[channel]) with the test on the bit pattern, as the CPU backend:
// a positive NaN stays, -0 and negative values are scaled by their channel's weight. x is made
// contiguous and seen as [N, C, inner] (C = 1 when the weight has one element).
std::string prelu_source(DType dt) {
  std::string s = glsl::header({dt});
  s += "#define C " + glsl::compute_type(dt) + "\n";
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  s += glsl::buffer(2, dt, "w_", true);
  const std::string pos =
      dt == DType::f64
          ? "(int(unpackDouble2x32(v).y) > 0 || (unpackDouble2x32(v).y == 0u && unpackDouble2x32(v).x != 0u))"
          : "(floatBitsToInt(v) > 0)";
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  int inner = p.ia.x, channels = p.ia.y;\n"
       "  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += step) {\n"
       "    C v = " +
       glsl::load(dt, "a_[p.off[1] + int(i)]") +
       ";\n"
       "    C w = " +
       glsl::load(dt, "w_[p.off[2] + (int(i) / inner) % channels]") +
       ";\n"
       "    o_[int(i)] = " +
       glsl::store(dt, "v * (" + pos + " ? C(1) : w)") + ";\n  }\n}\n";
  return s;
}

bool prelu_dtypes(const VulkanBackend& be, const Op& op) {
  return is_float(op.in(0).dtype) && be.has_dtype(op.in(0).dtype);
}

std::vector<PrimitivePtr> prelu_kernel(VulkanBackend& be, Op& op) {
  VulkanTensorPtr x = be.contiguous(op.inputs[0]);
  VulkanTensorPtr w = be.contiguous(op.inputs[1]);
  auto out = be.alloc(op.outputs[0]);
  const Shape& s = x->shape();
  const int64_t n = s.numel();
  if (n == 0) return {out};
  const int64_t channels = w->numel() == 1 ? 1 : (s.rank() > 1 ? s[1] : 1);
  int64_t inner = 1;
  for (int d = 2; d < s.rank(); ++d) inner *= s[d];
  if (channels == 1) inner = 1;
  KernelParams p = make_params("prelu", Shape{n}, {Operand{out->buffer, out->dtype(), {1}, 0}});
  p.off[1] = int32_t(x->offset);
  p.off[2] = int32_t(w->offset);
  p.ia[0] = int32_t(inner);
  p.ia[1] = int32_t(channels);
  const DType dt = x->dtype();
  VkPipeline pipe =
      be.shaders().get("prelu", "prelu/" + std::string(dtype_name(dt)), [dt] { return prelu_source(dt); });
  be.dispatch(pipe, {out->buffer, x->buffer, w->buffer, nullptr}, &p, sizeof p, be.groups_for(n));
  return {out};
}

}  // namespace

EwAttrs ew_param_attrs(DType dt) {
  if (dt == DType::f64) return {"packDouble2x32(p.da)", "packDouble2x32(p.db)", "(p.flag != 0u)"};
  if (is_float(dt)) return {"p.fa", "p.fb", "(p.flag != 0u)"};
  if (dt == DType::i64) return {"packInt2x32(p.ia)", "packInt2x32(p.ib)", "(p.flag != 0u)"};
  return {"p.ia.x", "p.ib.x", "(p.flag != 0u)"};
}

EwAttrs ew_literal_attrs(OpKind, DType dt, const OpAttrs& attrs, bool scalar_exponent) {
  const AttrValues v = attr_values(attrs, dt);
  const std::string flag = scalar_exponent ? "true" : "false";
  if (dt == DType::f64) return {double_literal(v.a), double_literal(v.b), flag};
  if (is_float(dt)) return {float_literal(float(v.a)), float_literal(float(v.b)), flag};
  return {int_literal(v.ia, dt == DType::i64), int_literal(v.ib, dt == DType::i64), flag};
}

std::string ew_function(const std::string& name, OpKind k, DType dt, const EwAttrs& attrs) {
  std::string s = "// " + std::string(op_name(k)) + " on " + std::string(dtype_name(dt)) + "\n";
  s += "#define C " + glsl::compute_type(dt) + "\n#define A (" + attrs.a + ")\n#define B (" + attrs.b +
       ")\n#define EMBER_SCALAR_EXPONENT " + attrs.scalar_exponent + "\n";
  s += std::string(ew_returns_bool(k) ? "bool " : "C ") + name + "(C x, C y, C z) {\n  " +
       (dt == DType::f64 ? double_body(body(k, dt)) : body(k, dt)) + "\n}\n";
  s += "#undef C\n#undef A\n#undef B\n#undef EMBER_SCALAR_EXPONENT\n";
  return s;
}

void register_elementwise_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::prelu)] = prelu_kernel;
  d[size_t(OpKind::prelu)] = prelu_dtypes;
  for (int i = 0; i < kNumOps; ++i) {
    const OpKind k = OpKind(i);
    const OpFamily f = op_info(k).family;
    if (is_elementwise(f) && f != OpFamily::Cast) {
      t[size_t(i)] = elementwise_kernel;
      d[size_t(i)] = ew_dtypes;
    }
  }
}

}  // namespace ember::vulkan
