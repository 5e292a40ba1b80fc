#include "op_registry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "ember/backends/cpu.hpp"
#include "ember/backends/vulkan.hpp"
#if EMBER_HAS_REMOTE
#include "ember/decorators/remote.hpp"
#endif

namespace ember::conformance {

namespace {

using V = std::vector<DynTensor>;

double num(const Json& j) {
  if (j.is_string()) {
    auto s = j.get<std::string>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    throw Error("conformance: bad number " + s);
  }
  if (j.is_boolean()) return j.get<bool>() ? 1 : 0;
  return j.get<double>();
}
Scalar scalar(const Json& j) {
  if (j.is_number_integer()) return Scalar(j.get<int64_t>());
  if (j.is_boolean()) return Scalar(j.get<bool>());
  return Scalar(num(j));
}
int64_t i64(const Json& j) { return j.get<int64_t>(); }
Sizes sizes(const Json& j) {
  if (j.is_number()) return {j.get<int64_t>()};
  return j.get<Sizes>();
}
Dims dims(const Json& a, const char* key) {
  if (!a.contains(key) || a[key].is_null()) return {};
  if (a[key].is_number()) return {a[key].get<int>()};
  return a[key].get<Dims>();
}
bool flag(const Json& a, const char* key, bool dflt) { return a.contains(key) && !a[key].is_null() ? a[key].get<bool>() : dflt; }
DType dtype(const Json& a) { return dtype_from_name(a["dtype"].get<std::string>()); }
std::optional<DynTensor> opt(V& in, size_t i) {
  if (i < in.size()) return in[i];
  return std::nullopt;
}
ConvOptions conv_opts(const Json& a) {
  ConvOptions o;
  o.stride = sizes(a["stride"]);
  o.padding = sizes(a["padding"]);
  o.dilation = sizes(a["dilation"]);
  if (a.contains("output_padding")) o.output_padding = sizes(a["output_padding"]);
  o.groups = i64(a["groups"]);
  return o;
}
// The inputs of a qlinear_conv / qlinear_matmul case (cases/quant.json), absent ones skipped.
struct QLinearIn {
  DynTensor x, xs, w, ws;
  std::optional<DynTensor> xz, wz, ys, yz, bias;
  std::optional<double> min, max;
};
QLinearIn qlinear_in(V& in, const Json& a) {
  QLinearIn q;
  size_t i = 0;
  auto next_if = [&](const char* key) { return flag(a, key, false) ? std::optional<DynTensor>(in[i++]) : std::nullopt; };
  q.x = in[i++];
  q.xs = in[i++];
  q.xz = next_if("x_zero_point");
  q.w = in[i++];
  q.ws = in[i++];
  q.wz = next_if("w_zero_point");
  q.ys = next_if("y_scale");
  q.yz = next_if("y_zero_point");
  q.bias = next_if("bias");
  if (a.contains("min")) q.min = a["min"].get<double>();
  if (a.contains("max")) q.max = a["max"].get<double>();
  return q;
}
PoolOptions pool_opts(const Json& a) {
  PoolOptions o;
  o.kernel_size = sizes(a["kernel_size"]);
  if (a.contains("stride") && !a["stride"].is_null()) o.stride = sizes(a["stride"]);
  o.padding = sizes(a["padding"]);
  if (a.contains("dilation")) o.dilation = sizes(a["dilation"]);
  o.ceil_mode = flag(a, "ceil_mode", false);
  o.count_include_pad = flag(a, "count_include_pad", true);
  return o;
}
std::vector<Slice> slices(const Json& a) {
  std::vector<Slice> r;
  for (const auto& s : a["ranges"]) {
    Slice x;
    if (!s[0].is_null()) x.start = s[0].get<int64_t>();
    if (!s[1].is_null()) x.end = s[1].get<int64_t>();
    if (s.size() > 2 && !s[2].is_null()) x.step = s[2].get<int64_t>();
    r.push_back(x);
  }
  return r;
}
V pair(TensorPair p) { return {std::move(p.first), std::move(p.second)}; }

// The IR op `kind` executed straight on the inputs' backend: for the fused ops that the autodiff
// rules, losses and optimizers emit and no tensor-level function exposes whole (family "ir").
// attrs["null_inputs"] lists the op's input positions that are absent (null); the case's inputs
// fill the other positions in order.
V run_ir(OpKind kind, V& in, const Json& a, OpAttrs attrs) {
  std::vector<size_t> nulls;
  if (a.contains("null_inputs")) nulls = a["null_inputs"].get<std::vector<size_t>>();
  auto is_null = [&](size_t i) { return std::find(nulls.begin(), nulls.end(), i) != nulls.end(); };
  std::vector<PrimitivePtr> prims;
  for (size_t i = 0, next = 0; next < in.size() || is_null(i); ++i)
    prims.push_back(is_null(i) ? nullptr : in[next++].primitive());
  Device dev = in.at(0).device();
  V out;
  for (auto& p : dev.backend().execute(make_op(kind, std::move(prims), std::move(attrs))))
    out.emplace_back(std::move(p), dev);
  return out;
}
#define IR(name, attrs_of) \
  {#name, [](V& in, const Json& a, const Device&) { return run_ir(OpKind::name, in, a, attrs_of(a)); }}
OpAttrs no_attrs(const Json&) { return NoAttrs{}; }
OpAttrs norm_attrs(const Json& a) { return NormAttrs{a["axes"].get<int>(), num(a["eps"])}; }
OpAttrs attention_attrs(const Json& a) {
  AttentionAttrs r;
  r.causal = flag(a, "is_causal", false);
  if (a.contains("scale") && !a["scale"].is_null()) r.scale = num(a["scale"]);
  return r;
}
OpAttrs cross_entropy_attrs(const Json& a) { return DimAttrs{1, false, a.value("ignore_index", int64_t(-100))}; }
OpAttrs norm_multi_attrs(const Json& a) { return ScalarAttrs{num(a["p"]), 0}; }
OpAttrs adam_attrs(const Json& a) {
  AdamAttrs r;
  r.lr = num(a["lr"]);
  r.beta1 = num(a["betas"][0]);
  r.beta2 = num(a["betas"][1]);
  r.eps = num(a["eps"]);
  r.weight_decay = num(a["weight_decay"]);
  r.step = i64(a["step"]);
  r.decoupled = flag(a, "decoupled", false);
  r.maximize = flag(a, "maximize", false);
  return r;
}

#define U(name) {#name, [](V& in, const Json&, const Device&) { return V{name(in[0])}; }}
#define B(name)                                                                                   \
  {#name, [](V& in, const Json&, const Device&) { return V{name(in[0], in[1])}; }},               \
  {#name "_scalar", [](V& in, const Json& a, const Device&) { return V{name(in[0], scalar(a["other"]))}; }}

}  // namespace

TensorData parse_tensor(const Json& j) {
  DType dt = dtype_from_name(j["dtype"].get<std::string>());
  Shape shape(j["shape"].get<std::vector<int64_t>>());
  if (j["data"].is_null()) return TensorData(shape, dt);
  // integers beyond 2^53 do not occur in the cases except as i64, which is read exactly
  if (dt == DType::i64) {
    std::vector<int64_t> iv;
    iv.reserve(j["data"].size());
    for (const auto& x : j["data"]) iv.push_back(x.get<int64_t>());
    return TensorData::from_vector(iv, shape);
  }
  std::vector<double> v;
  v.reserve(j["data"].size());
  for (const auto& x : j["data"]) v.push_back(num(x));
  return TensorData::from_doubles(v, shape, dt);  // doubles convert exactly to every dtype
}

std::string test_name(std::string name) {
  for (char& ch : name)
    if (!isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '/') ch = '_';
  return name;
}

const std::map<std::string, OpFn>& op_registry() {
  static const std::map<std::string, OpFn> table = {
      // creation
      {"zeros", [](V&, const Json& a, const Device& d) { return V{DynTensor::zeros(Shape(sizes(a["size"])), dtype(a), d)}; }},
      {"ones", [](V&, const Json& a, const Device& d) { return V{DynTensor::ones(Shape(sizes(a["size"])), dtype(a), d)}; }},
      {"empty", [](V&, const Json& a, const Device& d) { return V{DynTensor::empty(Shape(sizes(a["size"])), dtype(a), d)}; }},
      {"full", [](V&, const Json& a, const Device& d) {
         return V{DynTensor::full(Shape(sizes(a["size"])), scalar(a["fill_value"]), dtype(a), d)}; }},
      {"arange", [](V&, const Json& a, const Device& d) {
         return V{DynTensor::arange(scalar(a["start"]), scalar(a["end"]), scalar(a["step"]), dtype(a), d)}; }},
      {"linspace", [](V&, const Json& a, const Device& d) {
         return V{DynTensor::linspace(num(a["start"]), num(a["end"]), i64(a["steps"]), dtype(a), d)}; }},
      {"eye", [](V&, const Json& a, const Device& d) { return V{DynTensor::eye(i64(a["n"]), i64(a["m"]), dtype(a), d)}; }},
      // unary
      U(neg), U(abs), U(sign), U(exp), U(exp2), U(log), U(log2), U(log10), U(log1p), U(expm1), U(sqrt), U(rsqrt),
      U(square), U(reciprocal), U(sin), U(cos), U(tan), U(asin), U(acos), U(atan), U(sinh), U(cosh), U(tanh),
      U(asinh), U(acosh), U(atanh), U(erf), U(sigmoid), U(floor), U(ceil), U(round), U(trunc), U(is_nan), U(is_inf),
      U(is_finite), U(relu), U(gelu), U(gelu_tanh), U(silu), U(hard_sigmoid), U(log_sigmoid), U(bool_not),
      U(bitwise_not), U(contiguous), U(nonzero), U(argwhere),
      // binary
      {"add", [](V& in, const Json& a, const Device&) {
         if (a.contains("alpha") && num(a["alpha"]) != 1) return V{add(in[0], mul(in[1], scalar(a["alpha"])))};
         return V{add(in[0], in[1])}; }},
      {"sub", [](V& in, const Json& a, const Device&) {
         if (a.contains("alpha") && num(a["alpha"]) != 1) return V{sub(in[0], mul(in[1], scalar(a["alpha"])))};
         return V{sub(in[0], in[1])}; }},
      {"add_scalar", [](V& in, const Json& a, const Device&) { return V{add(in[0], scalar(a["other"]))}; }},
      {"sub_scalar", [](V& in, const Json& a, const Device&) { return V{sub(in[0], scalar(a["other"]))}; }},
      B(mul), B(div), B(fmod), B(remainder), B(equal), B(not_equal), B(greater), B(greater_equal), B(lower),
      B(lower_equal), B(shift_left), B(shift_right),
      {"pow", [](V& in, const Json&, const Device&) { return V{pow(in[0], in[1])}; }},
      {"pow_scalar", [](V& in, const Json& a, const Device&) { return V{pow(in[0], scalar(a["exponent"]))}; }},
      {"atan2", [](V& in, const Json&, const Device&) { return V{atan2(in[0], in[1])}; }},
      {"minimum", [](V& in, const Json&, const Device&) { return V{minimum(in[0], in[1])}; }},
      {"maximum", [](V& in, const Json&, const Device&) { return V{maximum(in[0], in[1])}; }},
      {"hypot", [](V& in, const Json&, const Device&) { return V{hypot(in[0], in[1])}; }},
      {"bool_and", [](V& in, const Json&, const Device&) { return V{bool_and(in[0], in[1])}; }},
      {"bool_or", [](V& in, const Json&, const Device&) { return V{bool_or(in[0], in[1])}; }},
      {"bool_xor", [](V& in, const Json&, const Device&) { return V{bool_xor(in[0], in[1])}; }},
      {"bitwise_and", [](V& in, const Json&, const Device&) { return V{bitwise_and(in[0], in[1])}; }},
      {"bitwise_or", [](V& in, const Json&, const Device&) { return V{bitwise_or(in[0], in[1])}; }},
      {"bitwise_xor", [](V& in, const Json&, const Device&) { return V{bitwise_xor(in[0], in[1])}; }},
      {"lerp", [](V& in, const Json&, const Device&) { return V{lerp(in[0], in[1], in[2])}; }},
      {"lerp_scalar", [](V& in, const Json& a, const Device&) { return V{lerp(in[0], in[1], scalar(a["weight"]))}; }},
      {"clamp", [](V& in, const Json& a, const Device&) {
         std::optional<Scalar> lo, hi;
         if (a.contains("min") && !a["min"].is_null()) lo = scalar(a["min"]);
         if (a.contains("max") && !a["max"].is_null()) hi = scalar(a["max"]);
         return V{clamp(in[0], lo, hi)}; }},
      {"clamp_min", [](V& in, const Json& a, const Device&) { return V{clamp_min(in[0], scalar(a["min"]))}; }},
      {"clamp_max", [](V& in, const Json& a, const Device&) { return V{clamp_max(in[0], scalar(a["max"]))}; }},
      {"where", [](V& in, const Json&, const Device&) { return V{where(in[0], in[1], in[2])}; }},
      {"mask_fill", [](V& in, const Json& a, const Device&) { return V{mask_fill(in[0], in[1], scalar(a["value"]))}; }},
      {"mask_where", [](V& in, const Json&, const Device&) { return V{mask_where(in[0], in[1], in[2])}; }},
      // activations
      {"leaky_relu", [](V& in, const Json& a, const Device&) { return V{leaky_relu(in[0], num(a["negative_slope"]))}; }},
      {"softplus", [](V& in, const Json& a, const Device&) { return V{softplus(in[0], num(a["beta"]), num(a["threshold"]))}; }},
      {"prelu", [](V& in, const Json&, const Device&) { return V{prelu(in[0], in[1])}; }},
      {"softmax", [](V& in, const Json& a, const Device&) { return V{softmax(in[0], a["dim"].get<int>())}; }},
      {"log_softmax", [](V& in, const Json& a, const Device&) { return V{log_softmax(in[0], a["dim"].get<int>())}; }},
      // reductions
      {"sum", [](V& in, const Json& a, const Device&) { return V{sum(in[0], dims(a, "dim"), flag(a, "keepdim", false))}; }},
      {"mean", [](V& in, const Json& a, const Device&) { return V{mean(in[0], dims(a, "dim"), flag(a, "keepdim", false))}; }},
      {"prod", [](V& in, const Json& a, const Device&) { return V{prod(in[0], dims(a, "dim"), flag(a, "keepdim", false))}; }},
      {"max", [](V& in, const Json& a, const Device&) { return V{max(in[0], dims(a, "dim"), flag(a, "keepdim", false))}; }},
      {"min", [](V& in, const Json& a, const Device&) { return V{min(in[0], dims(a, "dim"), flag(a, "keepdim", false))}; }},
      {"any", [](V& in, const Json& a, const Device&) { return V{any(in[0], dims(a, "dim"), flag(a, "keepdim", false))}; }},
      {"all", [](V& in, const Json& a, const Device&) { return V{all(in[0], dims(a, "dim"), flag(a, "keepdim", false))}; }},
      {"argmax", [](V& in, const Json& a, const Device&) {
         auto d = dims(a, "dim");
         return V{argmax(in[0], d.empty() ? std::nullopt : std::optional<int>(d[0]), flag(a, "keepdim", false))}; }},
      {"argmin", [](V& in, const Json& a, const Device&) {
         auto d = dims(a, "dim");
         return V{argmin(in[0], d.empty() ? std::nullopt : std::optional<int>(d[0]), flag(a, "keepdim", false))}; }},
      {"max_dim", [](V& in, const Json& a, const Device&) { return pair(max_dim(in[0], a["dim"].get<int>(), flag(a, "keepdim", false))); }},
      {"min_dim", [](V& in, const Json& a, const Device&) { return pair(min_dim(in[0], a["dim"].get<int>(), flag(a, "keepdim", false))); }},
      {"var", [](V& in, const Json& a, const Device&) {
         return V{var(in[0], dims(a, "dim"), a.value("correction", int64_t(1)), flag(a, "keepdim", false))}; }},
      {"std", [](V& in, const Json& a, const Device&) {
         return V{stddev(in[0], dims(a, "dim"), a.value("correction", int64_t(1)), flag(a, "keepdim", false))}; }},
      {"norm", [](V& in, const Json& a, const Device&) {
         return V{norm(in[0], a.contains("ord") ? num(a["ord"]) : 2.0, dims(a, "dim"), flag(a, "keepdim", false))}; }},
      {"logsumexp", [](V& in, const Json& a, const Device&) { return V{logsumexp(in[0], dims(a, "dim"), flag(a, "keepdim", false))}; }},
      // scans and sorting
      {"cumsum", [](V& in, const Json& a, const Device&) { return V{cumsum(in[0], a["dim"].get<int>())}; }},
      {"cumprod", [](V& in, const Json& a, const Device&) { return V{cumprod(in[0], a["dim"].get<int>())}; }},
      {"cummax", [](V& in, const Json& a, const Device&) { return pair(cummax(in[0], a["dim"].get<int>())); }},
      {"cummin", [](V& in, const Json& a, const Device&) { return pair(cummin(in[0], a["dim"].get<int>())); }},
      {"sort", [](V& in, const Json& a, const Device&) { return pair(sort(in[0], a.value("dim", -1), flag(a, "descending", false))); }},
      {"argsort", [](V& in, const Json& a, const Device&) { return V{argsort(in[0], a.value("dim", -1), flag(a, "descending", false))}; }},
      {"topk", [](V& in, const Json& a, const Device&) {
         return pair(topk(in[0], i64(a["k"]), a.value("dim", -1), flag(a, "largest", true))); }},
      // linear algebra
      {"matmul", [](V& in, const Json&, const Device&) { return V{matmul(in[0], in[1])}; }},
      {"dot", [](V& in, const Json&, const Device&) { return V{dot(in[0], in[1])}; }},
      {"outer", [](V& in, const Json&, const Device&) { return V{outer(in[0], in[1])}; }},
      {"linear", [](V& in, const Json&, const Device&) { return V{matmul(in[0], transpose(in[1], 0, 1), in[2])}; }},
      // shape
      {"reshape", [](V& in, const Json& a, const Device&) { return V{reshape(in[0], sizes(a["shape"]))}; }},
      {"flatten", [](V& in, const Json& a, const Device&) { return V{flatten(in[0], a.value("start_dim", 0), a.value("end_dim", -1))}; }},
      {"unsqueeze", [](V& in, const Json& a, const Device&) { return V{unsqueeze(in[0], a["dim"].get<int>())}; }},
      {"squeeze", [](V& in, const Json& a, const Device&) {
         return V{a.contains("dim") && !a["dim"].is_null() ? squeeze(in[0], a["dim"].get<int>()) : squeeze(in[0])}; }},
      {"permute", [](V& in, const Json& a, const Device&) { return V{permute(in[0], dims(a, "dims"))}; }},
      {"transpose", [](V& in, const Json& a, const Device&) { return V{transpose(in[0], a["dim0"].get<int>(), a["dim1"].get<int>())}; }},
      {"swap_dims", [](V& in, const Json& a, const Device&) { return V{swap_dims(in[0], a["dim0"].get<int>(), a["dim1"].get<int>())}; }},
      {"movedim", [](V& in, const Json& a, const Device&) { return V{movedim(in[0], dims(a, "source"), dims(a, "destination"))}; }},
      {"flip", [](V& in, const Json& a, const Device&) { return V{flip(in[0], dims(a, "dims"))}; }},
      {"roll", [](V& in, const Json& a, const Device&) { return V{roll(in[0], sizes(a["shifts"]), dims(a, "dims"))}; }},
      {"expand", [](V& in, const Json& a, const Device&) { return V{expand(in[0], sizes(a["size"]))}; }},
      {"repeat", [](V& in, const Json& a, const Device&) { return V{repeat(in[0], sizes(a["repeats"]))}; }},
      {"tile", [](V& in, const Json& a, const Device&) { return V{tile(in[0], sizes(a["dims"]))}; }},
      {"narrow", [](V& in, const Json& a, const Device&) {
         return V{narrow(in[0], a["dim"].get<int>(), i64(a["start"]), i64(a["length"]))}; }},
      {"slice", [](V& in, const Json& a, const Device&) { return V{slice(in[0], slices(a))}; }},
      {"slice_assign", [](V& in, const Json& a, const Device&) { return V{slice_assign(in[0], slices(a), in[1])}; }},
      {"chunk", [](V& in, const Json& a, const Device&) { return chunk(in[0], i64(a["chunks"]), a.value("dim", 0)); }},
      {"split", [](V& in, const Json& a, const Device&) {
         const auto& s = a["split_size_or_sections"];
         return s.is_number() ? split(in[0], s.get<int64_t>(), a.value("dim", 0)) : split(in[0], sizes(s), a.value("dim", 0)); }},
      {"cat", [](V& in, const Json& a, const Device&) { return V{cat(in, a.value("dim", 0))}; }},
      {"stack", [](V& in, const Json& a, const Device&) { return V{stack(in, a.value("dim", 0))}; }},
      {"pad", [](V& in, const Json& a, const Device&) {
         auto m = a.value("mode", std::string("constant"));
         PadMode mode = m == "reflect" ? PadMode::reflect : m == "replicate" ? PadMode::replicate : PadMode::constant;
         return V{pad(in[0], sizes(a["pad"]), mode, a.contains("value") && !a["value"].is_null() ? num(a["value"]) : 0.0)}; }},
      {"tril", [](V& in, const Json& a, const Device&) { return V{tril(in[0], a.value("diagonal", int64_t(0)))}; }},
      {"triu", [](V& in, const Json& a, const Device&) { return V{triu(in[0], a.value("diagonal", int64_t(0)))}; }},
      {"one_hot", [](V& in, const Json& a, const Device&) { return V{one_hot(in[0], a.value("num_classes", int64_t(-1)))}; }},
      // indexing
      {"gather", [](V& in, const Json& a, const Device&) { return V{gather(in[0], a["dim"].get<int>(), in[1])}; }},
      {"scatter", [](V& in, const Json& a, const Device&) { return V{scatter(in[0], a["dim"].get<int>(), in[1], in[2])}; }},
      {"scatter_add", [](V& in, const Json& a, const Device&) { return V{scatter_add(in[0], a["dim"].get<int>(), in[1], in[2])}; }},
      {"select", [](V& in, const Json& a, const Device&) { return V{select(in[0], a["dim"].get<int>(), i64(a["index"]))}; }},
      {"select_assign", [](V& in, const Json& a, const Device&) { return V{select_assign(in[0], a["dim"].get<int>(), in[1], in[2])}; }},
      {"select_add", [](V& in, const Json& a, const Device&) { return V{select_add(in[0], a["dim"].get<int>(), in[1], in[2])}; }},
      {"index_select", [](V& in, const Json& a, const Device&) { return V{index_select(in[0], a["dim"].get<int>(), in[1])}; }},
      {"take", [](V& in, const Json&, const Device&) { return V{take(in[0], in[1])}; }},
      {"masked_select", [](V& in, const Json&, const Device&) { return V{masked_select(in[0], in[1])}; }},
      {"cast", [](V& in, const Json& a, const Device&) { return V{cast(in[0], dtype(a))}; }},
      // nn
      {"conv1d", [](V& in, const Json& a, const Device&) { return V{conv1d(in[0], in[1], opt(in, 2), conv_opts(a))}; }},
      {"conv2d", [](V& in, const Json& a, const Device&) { return V{conv2d(in[0], in[1], opt(in, 2), conv_opts(a))}; }},
      {"conv3d", [](V& in, const Json& a, const Device&) { return V{conv3d(in[0], in[1], opt(in, 2), conv_opts(a))}; }},
      {"conv_fused", [](V& in, const Json& a, const Device&) {
         size_t i = 2;
         std::optional<DynTensor> b;
         ConvEpilogue e;
         if (flag(a, "bias", false)) b = in[i++];
         if (flag(a, "residual", false)) e.residual = in[i++];
         if (a.contains("min") && !a["min"].is_null()) e.min = a["min"].get<double>();
         if (a.contains("max") && !a["max"].is_null()) e.max = a["max"].get<double>();
         return V{conv_fused(in[0], in[1], b, conv_opts(a), e)};
       }},
      {"conv_transpose1d", [](V& in, const Json& a, const Device&) { return V{conv_transpose1d(in[0], in[1], opt(in, 2), conv_opts(a))}; }},
      {"conv_transpose2d", [](V& in, const Json& a, const Device&) { return V{conv_transpose2d(in[0], in[1], opt(in, 2), conv_opts(a))}; }},
      {"conv_transpose3d", [](V& in, const Json& a, const Device&) { return V{conv_transpose3d(in[0], in[1], opt(in, 2), conv_opts(a))}; }},
      {"avg_pool1d", [](V& in, const Json& a, const Device&) { return V{avg_pool1d(in[0], pool_opts(a))}; }},
      {"avg_pool2d", [](V& in, const Json& a, const Device&) { return V{avg_pool2d(in[0], pool_opts(a))}; }},
      // the values from the values-only op (PoolAttrs::indices false: its kernels and, under
      // autodiff, its gradient), the indices from the indexed one
      {"max_pool1d", [](V& in, const Json& a, const Device&) {
         return V{max_pool1d(in[0], pool_opts(a)), max_pool1d_with_indices(in[0], pool_opts(a)).second}; }},
      {"max_pool2d", [](V& in, const Json& a, const Device&) {
         return V{max_pool2d(in[0], pool_opts(a)), max_pool2d_with_indices(in[0], pool_opts(a)).second}; }},
      {"adaptive_avg_pool1d", [](V& in, const Json& a, const Device&) { return V{adaptive_avg_pool1d(in[0], sizes(a["output_size"])[0])}; }},
      {"adaptive_avg_pool2d", [](V& in, const Json& a, const Device&) { return V{adaptive_avg_pool2d(in[0], sizes(a["output_size"]))}; }},
      {"interpolate", [](V& in, const Json& a, const Device&) {
         auto m = a["mode"].get<std::string>();
         InterpMode mode = m == "nearest" ? InterpMode::nearest : (m == "bicubic" ? InterpMode::cubic : InterpMode::linear);
         return V{interpolate(in[0], sizes(a["size"]), mode, flag(a, "align_corners", false))}; }},
      {"embedding", [](V& in, const Json&, const Device&) { return V{embedding(in[0], in[1])}; }},
      {"layer_norm", [](V& in, const Json& a, const Device&) {
         return V{layer_norm(in[0], sizes(a["normalized_shape"]), opt(in, 1), opt(in, 2), num(a["eps"]))}; }},
      {"batch_norm", [](V& in, const Json& a, const Device&) {
         return V{batch_norm(in[0], in[1], in[2], opt(in, 3), opt(in, 4), num(a["eps"]))}; }},
      {"scaled_dot_product_attention", [](V& in, const Json& a, const Device&) {
         std::optional<double> scale;
         if (a.contains("scale") && !a["scale"].is_null()) scale = num(a["scale"]);
         return V{scaled_dot_product_attention(in[0], in[1], in[2], opt(in, 3), flag(a, "is_causal", false), scale)}; }},
      // quantized products (cases/quant.json): the zero points given follow a and b in order
      {"matmul_integer", [](V& in, const Json& a, const Device&) {
         size_t i = 2;
         std::optional<DynTensor> za, zb;
         if (flag(a, "a_zero_point", false)) za = in[i++];
         if (flag(a, "b_zero_point", false)) zb = in[i++];
         return V{matmul_integer(in[0], in[1], za, zb)}; }},
      {"conv_integer", [](V& in, const Json& a, const Device&) {
         size_t i = 2;
         std::optional<DynTensor> zx, zw;
         if (flag(a, "x_zero_point", false)) zx = in[i++];
         if (flag(a, "w_zero_point", false)) zw = in[i++];
         return V{conv_integer(in[0], in[1], zx, zw, conv_opts(a))}; }},
      // qlinear_conv / qlinear_matmul: x, x_scale[, x_zero_point], w, w_scale[, w_zero_point][, y_scale
      // [, y_zero_point]][, bias] (the flags say which are given); without y_scale the f32 form,
      // clamped to [min, max] where given
      {"qlinear_conv", [](V& in, const Json& a, const Device&) {
         const QLinearIn q = qlinear_in(in, a);
         if (q.ys) return V{qlinear_conv(q.x, q.xs, q.xz, q.w, q.ws, q.wz, *q.ys, q.yz, q.bias, conv_opts(a))};
         return V{qlinear_conv_f32(q.x, q.xs, q.xz, q.w, q.ws, q.wz, q.bias, conv_opts(a), q.min, q.max)}; }},
      {"qlinear_matmul", [](V& in, const Json& a, const Device&) {
         const QLinearIn q = qlinear_in(in, a);
         if (q.ys) return V{qlinear_matmul(q.x, q.xs, q.xz, q.w, q.ws, q.wz, *q.ys, q.yz, q.bias)};
         return V{qlinear_matmul_f32(q.x, q.xs, q.xz, q.w, q.ws, q.wz, q.bias, q.min, q.max)}; }},
      // qlinear_add: a, a_scale[, a_zero_point], b, b_scale[, b_zero_point], c_scale[, c_zero_point]
      {"qlinear_add", [](V& in, const Json& a, const Device&) {
         size_t i = 0;
         auto next_if = [&](const char* key) { return flag(a, key, false) ? std::optional<DynTensor>(in[i++]) : std::nullopt; };
         const DynTensor x = in[i++], xs = in[i++];
         const auto xz = next_if("a_zero_point");
         const DynTensor y = in[i++], ys = in[i++];
         const auto yz = next_if("b_zero_point");
         const DynTensor zs = in[i++];
         return V{qlinear_add(x, xs, xz, y, ys, yz, zs, next_if("c_zero_point"))}; }},
      {"matmul_wq", [](V& in, const Json& a, const Device&) {
         return V{matmul_wq(in[0], in[1], in[2], opt(in, 3), WeightQuant{a["bits"].get<int>(), i64(a["block"]), flag(a, "quantize_x", false)})}; }},
      // ir: fused IR ops run directly (see run_ir)
      IR(gelu_backward, no_attrs), IR(gelu_tanh_backward, no_attrs), IR(silu_backward, no_attrs),
      IR(layer_norm_backward, norm_attrs), IR(attention_backward, attention_attrs),
      IR(cross_entropy, cross_entropy_attrs), IR(cross_entropy_backward, cross_entropy_attrs), IR(adam_step, adam_attrs),
      IR(norm_multi, norm_multi_attrs), IR(mul_multi, no_attrs),
  };
  return table;
}

Device router_cpu_cpu() {
  static const Device d = Device::router(
      {Device::cpu(), Device(cpu::make_backend())}, [](const router::Route& r) -> std::optional<size_t> {
        uint32_t h = 2166136261u;  // FNV-1a of the op's name
        for (char c : r.op.name()) h = (h ^ uint8_t(c)) * 16777619u;
        if (h % 2 == 1) return 1;
        return std::nullopt;  // the first backend
      });
  return d;
}

#if EMBER_HAS_REMOTE
// A remote stack: a server in this process on a loopback port, serving `served`, and a session
// to it (the wire, the server's validation and its tensor table are what it tests).
Device remote_to(const Device& served) {
  remote::ServerOptions o;
  o.port = 0;
  o.device = served;
  o.token = "conformance";
  o.log = [](const std::string&) {};
  auto* s = new remote::Server(o);  // lives as long as the process
  s->start();
  return remote::connect("ws://127.0.0.1:" + std::to_string(s->port()), {.token = "conformance"});
}
Device remote_cpu() {
  static const Device d = remote_to(Device::cpu());
  return d;
}
#endif

const std::vector<TestStack>& test_stacks() {
  static const std::vector<TestStack> stacks = [] {
    std::vector<TestStack> all = {{"cpu", Device::cpu(), true, false},
                                  {"autodiff-cpu", Device::cpu().autodiff(), true, true},
                                  {"autodiff-balanced-cpu", Device::cpu().autodiff(Checkpointing::balanced), false, true},
                                  {"fusion-cpu", Device::cpu().fusion(), true, false},
                                  {"autodiff-fusion-cpu", Device::cpu().fusion().autodiff(), true, true},
                                  {"router-cpu-cpu", router_cpu_cpu(), true, false},
                                  {"autodiff-router-cpu-cpu", router_cpu_cpu().autodiff(), true, true}};
#if EMBER_HAS_REMOTE
    all.push_back({"remote-cpu", remote_cpu(), true, false});
    all.push_back({"autodiff-remote-cpu", remote_cpu().autodiff(), false, true});
#endif
    if (cuda::available()) {
      const Device router = Device::router({Device::cuda(0), Device::cpu()});
      all.push_back({"cuda", Device::cuda(0), true, false});
      all.push_back({"autodiff-cuda", Device::cuda(0).autodiff(), true, true});
      all.push_back({"autodiff-balanced-cuda", Device::cuda(0).autodiff(Checkpointing::balanced), false, true});
      all.push_back({"fusion-cuda", Device::cuda(0).fusion(), true, false});
      all.push_back({"autodiff-fusion-cuda", Device::cuda(0).fusion().autodiff(), true, true});
      all.push_back({"router-cuda-cpu", router, true, false});
      all.push_back({"autodiff-router-cuda-cpu", router.autodiff(), false, true});
#if EMBER_HAS_REMOTE
      const Device remote = remote_to(Device::cuda(0));
      all.push_back({"remote-cuda", remote, true, false});
      all.push_back({"autodiff-remote-cuda", remote.autodiff(), false, true});
#endif
    }
    if (vulkan::available()) {
      all.push_back({"vulkan", Device::vulkan(0), true, false});
      all.push_back({"autodiff-vulkan", Device::vulkan(0).autodiff(), true, true});
      all.push_back({"fusion-vulkan", Device::vulkan(0).fusion(), true, false});
      all.push_back({"autodiff-fusion-vulkan", Device::vulkan(0).fusion().autodiff(), true, true});
    }
    return all;
  }();
  return stacks;
}

std::optional<std::string> unsupported_on(const std::exception& e, const Device& dev) {
  // (decorators may rethrow it as a plain Error, so the message decides)
  const std::string what = e.what(), marker = ": not supported on ";
  const size_t at = what.find(marker);
  if (at == std::string::npos) return std::nullopt;
  const size_t from = at + marker.size();
  const std::string backend = what.substr(from, what.find_first_of(" \n", from) - from);  // "vulkan:0"
  // the stack's own backend (a decorator's name wraps it: "autodiff(vulkan:0)")
  if (backend.empty() || dev.backend().name().find(backend) == std::string::npos) return std::nullopt;
  // The CPU and CUDA backends run every composite whose ops they support (their stacks pass with
  // no such skip): there the error fails the case, so that a regression cannot hide as a skip.
  if (backend == "cpu" || backend.rfind("cuda", 0) == 0) return std::nullopt;
  return what;
}

bool stack_selected(const std::string& name) {
  const char* env = std::getenv("EMBER_STACKS");
  if (!env || !*env) return true;
  std::string list = std::string(",") + env + ",";
  return list.find("," + name + ",") != std::string::npos;
}

}  // namespace ember::conformance
