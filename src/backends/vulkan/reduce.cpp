// Reductions along dims: sum mean prod max min any all var std norm logsumexp argmax argmin
// max_dim min_dim.
//
// One generated shader per (op, dtype), key "sum/f32". The input's dims split into kept dims
// (the output, row-major) and reduced dims, each list merged where the strides allow; a
// workgroup reduces one output element at a time (grid-stride over the outputs): each
// invocation folds every 128th element of the row, then the workgroup combines the partials:
// float sums with subgroupAdd where the device has subgroup arithmetic, everything else (and
// every sum elsewhere) in a shared-memory tree. var/std and logsumexp take a second pass over the row (the deviations
// from the mean, the exponentials shifted by the maximum) in the same workgroup. Semantics follow the CPU backend
// (src/backends/cpu/reduce.cpp): floats accumulate in double where the device has shaderFloat64, integer sums and
// products wrap in int64, max/min and the arg reductions propagate NaN (the first NaN wins), argmax/argmin take the
// first occurrence, var divides by max(n - correction, 0).
//
// f64 inputs accumulate in double (the double maths of glsl.cpp for logsumexp and p-norms).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "glsl.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {

namespace {

// The parameters of a reduction kernel (the GLSL twin: kRParams).
struct ReduceParams {
  uint32_t n_out = 0, n_red = 0;
  int32_t rank_out = 0, rank_red = 0;
  int32_t off_in = 0, correction = 0;
  uint32_t flag = 0;  // norm: 0 count, 1 sum |x|, 2 sqrt sum x^2, 3 max |x|, 4 min |x|, 5 (sum |x|^p)^(1/p)
  float pf = 0;       // norm's p
  int32_t pad[4] = {};
  int32_t size_out[kMaxRank] = {}, st_out[kMaxRank] = {}, size_red[kMaxRank] = {}, st_red[kMaxRank] = {};
};
static_assert(sizeof(ReduceParams) == 176);

const char* kRParams = R"GLSL(
struct RParams {
  uint n_out; uint n_red; int rank_out; int rank_red; int off_in; int correction; uint flag; float pf;
  int pad0; int pad1; int pad2; int pad3;
  int size_out[8]; int st_out[8]; int size_red[8]; int st_red[8];
};
layout(std430, binding = 6) readonly buffer RParamsBuf { RParams r; };
int out_offset(uint o) {
  int q = int(o), off = 0;
  for (int d = r.rank_out - 1; d >= 0; --d) { int s = r.size_out[d]; int k = q / s; off += (q - k * s) * r.st_out[d]; q = k; }
  return off;
}
int red_offset(uint j) {
  int q = int(j), off = 0;
  for (int d = r.rank_red - 1; d >= 0; --d) { int s = r.size_red[d]; int k = q / s; off += (q - k * s) * r.st_red[d]; q = k; }
  return off;
}
)GLSL";

bool is_arg(OpKind k) {
  return k == OpKind::argmax || k == OpKind::argmin || k == OpKind::max_dim || k == OpKind::min_dim;
}
bool is_max_like(OpKind k) { return k == OpKind::max || k == OpKind::argmax || k == OpKind::max_dim; }

int norm_kind(double p) {
  if (p == 0) return 0;
  if (p == 1) return 1;
  if (p == 2) return 2;
  if (std::isinf(p)) return p > 0 ? 3 : 4;
  return 5;
}

bool reduce_dtypes(const VulkanBackend& be, const Op& op) {
  const DType dt = op.in(0).dtype;
  if (!be.has_dtype(dt)) return false;
  for (const auto& o : op.outputs)
    if (!be.has_dtype(o.dtype)) return false;
  return true;
}

// The accumulator of (k, dt): double for floats where the device has it, int64 for integer sums
// and products, else the compute type.
std::string acc_type(const VulkanBackend& be, OpKind k, DType dt) {
  const bool sum_like = k == OpKind::sum || k == OpKind::mean || k == OpKind::prod || k == OpKind::var ||
                        k == OpKind::std || k == OpKind::norm || k == OpKind::logsumexp;
  if (sum_like) {
    if (is_float(dt)) return be.physical().float64 ? "double" : "float";
    return "int64_t";
  }
  if (k == OpKind::any || k == OpKind::all) return "int";
  return glsl::compute_type(dt);
}

std::string reduce_source(const VulkanBackend& be, OpKind k, DType dt, const std::vector<TensorMeta>& outs) {
  const std::string C = glsl::compute_type(dt), AT = acc_type(be, k, dt);
  const bool flt = is_float(dt), dacc = AT == "double";
  std::vector<DType> dts = {dt};
  for (const auto& o : outs) dts.push_back(o.dtype);
  if (dacc) dts.push_back(DType::f64);
  std::string s = glsl::header(dts, false);
  s += kRParams;
  s += "#define C " + C + "\n#define AT " + AT + "\n";
  const DType out0 = outs[0].dtype;
  s += glsl::buffer(0, out0, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  if (outs.size() > 1) s += glsl::buffer(2, DType::i64, "i_", false);
  s += "shared AT s_acc[" + std::to_string(glsl::kLocalSize) + "];\n";
  const bool arg = is_arg(k), mx = is_max_like(k);
  if (arg) s += "shared int s_idx[" + std::to_string(glsl::kLocalSize) + "];\n";
  const std::string nanp = flt ? "ember_isnan" : "false && bool";
  // the pieces: init, step (x: the element, j: its index), combine (s_acc[t] with s_acc[t + h])
  std::string init, step, combine, store, init2, step2;
  bool two_pass = false;
  const std::string inf = dacc ? "ember_inf_d()" : (AT == "float" ? "ember_inf()" : "");
  // a running max (better ">") or min ("<") in AT where the first NaN wins (max, min, logsumexp)
  auto nan_extreme = [&](const std::string& better) {
    step = "if (ember_isnan(AT(x)) || AT(x) " + better + " acc) acc = AT(x);";
    combine = "{ AT b = s_acc[t + h]; if (ember_isnan(b) || b " + better + " s_acc[t]) s_acc[t] = b; }";
  };
  switch (k) {
    case OpKind::sum:
    case OpKind::mean:
      init = "AT(0)";
      step = "acc += AT(x);";
      combine = "s_acc[t] += s_acc[t + h];";
      store = k == OpKind::sum ? "AT v = s_acc[0];" : "AT v = s_acc[0] / AT(r.n_red);";
      break;
    case OpKind::prod:
      init = "AT(1)";
      step = "acc *= AT(x);";
      combine = "s_acc[t] *= s_acc[t + h];";
      store = "AT v = s_acc[0];";
      break;
    case OpKind::max:
    case OpKind::min: {
      const std::string better = mx ? ">" : "<";
      if (flt) {
        init = std::string(mx ? "-" : "") + (dt == DType::f64 ? "ember_inf_d()" : "ember_inf()");
        nan_extreme(better);
      } else {
        init = dt == DType::i64 ? (mx ? "int64_t(0x8000000000000000ul)" : "int64_t(0x7ffffffffffffffful)")
                                : (mx ? "int(0x80000000u)" : "0x7fffffff");
        step = "if (x " + better + " acc) acc = x;";
        combine = "{ AT b = s_acc[t + h]; if (b " + better + " s_acc[t]) s_acc[t] = b; }";
      }
      store = "AT v = s_acc[0];";
      break;
    }
    case OpKind::any:
    case OpKind::all: {
      const std::string nz = flt ? "((ember_isnan(x) || x != C(0)) ? 1 : 0)" : "(x != C(0) ? 1 : 0)";
      init = k == OpKind::any ? "0" : "1";
      step = std::string("acc ") + (k == OpKind::any ? "|" : "&") + "= " + nz + ";";
      combine = std::string("s_acc[t] ") + (k == OpKind::any ? "|" : "&") + "= s_acc[t + h];";
      store = "AT v = s_acc[0];";
      break;
    }
    case OpKind::var:
    case OpKind::std:
      two_pass = true;
      init = "AT(0)";
      step = "acc += AT(x);";
      combine = "s_acc[t] += s_acc[t + h];";
      init2 = "AT(0)";
      step2 = "{ AT d = AT(x) - first / AT(r.n_red); acc += d * d; }";
      store = "AT v = s_acc[0] / AT(max(float(r.n_red) - float(r.correction), 0.0));\n";
      if (k == OpKind::std) store += "      v = sqrt(v);";
      break;
    case OpKind::norm:
      init = "(r.flag == 4u ? " + inf + " : AT(0))";
      step =
          "{ AT a = abs(AT(x));\n"
          "        if (r.flag == 0u) acc += (a != AT(0) ? AT(1) : AT(0));\n"
          "        else if (r.flag == 1u) acc += a;\n"
          "        else if (r.flag == 2u) acc += a * a;\n"
          "        else if (r.flag == 3u) { if (ember_isnan(a) || a > acc) acc = a; }\n"
          "        else if (r.flag == 4u) { if (ember_isnan(a) || a < acc) acc = a; }\n"
          "        else acc += ember_pow(a, AT(r.pf)); }";
      combine =
          "{ AT b = s_acc[t + h];\n"
          "        if (r.flag == 3u) { if (ember_isnan(b) || b > s_acc[t]) s_acc[t] = b; }\n"
          "        else if (r.flag == 4u) { if (ember_isnan(b) || b < s_acc[t]) s_acc[t] = b; }\n"
          "        else s_acc[t] += b; }";
      store =
          "AT v = s_acc[0];\n      if (r.flag == 2u) v = sqrt(v);\n"
          "      else if (r.flag == 5u) v = ember_pow(v, AT(1) / AT(r.pf));";
      break;
    case OpKind::logsumexp:
      two_pass = true;
      init = "-" + inf;
      nan_extreme(">");  // the max first
      init2 = "AT(0)";
      // all -inf: log(0) = -inf; any +inf: inf (the CPU backend's shift)
      step2 = "acc += ember_exp(AT(x) - (ember_isinf(first) ? AT(0) : first));";
      store = "AT sh = ember_isinf(first) ? AT(0) : first;\n      AT v = ember_log(s_acc[0]) + sh;";
      break;
    case OpKind::argmax:
    case OpKind::argmin:
    case OpKind::max_dim:
    case OpKind::min_dim: {
      const std::string better = mx ? ">" : "<";
      // v at vi beats c at ci: the first NaN wins, then the extreme, then the first index
      s += "bool ember_better(C v, int vi, C c, int ci) {\n";
      if (flt)
        s += "  if (" + nanp + "(c) && " + nanp + "(v)) return vi < ci;\n  if (" + nanp + "(c)) return false;\n  if (" +
             nanp + "(v)) return true;\n";
      s += "  return v " + better + " c || (v == c && vi < ci);\n}\n";
      init = "C(0)";
      step = "if (idx < 0 || ember_better(x, int(j), acc, idx)) { acc = x; idx = int(j); }";
      combine =
          "if (s_idx[t + h] >= 0 && (s_idx[t] < 0 || ember_better(s_acc[t + h], s_idx[t + h], s_acc[t], s_idx[t]))) {\n"
          "        s_acc[t] = s_acc[t + h]; s_idx[t] = s_idx[t + h]; }";
      store = "AT v = s_acc[0];";
      break;
    }
    default:
      EMBER_FAIL(op_name(k), ": no Vulkan reduction kernel");
  }
  const std::string W = std::to_string(glsl::kLocalSize);
  auto tree = [&](const std::string& comb) {
    return "    for (uint h = " + std::to_string(glsl::kLocalSize / 2) + "u; h > 0u; h >>= 1u) {\n      if (t < h) " +
           comb + "\n      barrier();\n    }\n";
  };
  // A sum of floats across the workgroup: with subgroup arithmetic, subgroupAdd within each
  // subgroup and one invocation adding the subgroups' sums (in order); else the shared tree.
  const bool subgroups = be.physical().subgroup_arithmetic && (AT == "float" || AT == "double");
  if (subgroups)
    s.insert(s.find('\n') + 1,
             "#extension GL_KHR_shader_subgroup_basic : require\n"
             "#extension GL_KHR_shader_subgroup_arithmetic : require\n");
  // (after s_acc[t] = acc and a barrier) s_acc[0] = the sum of every s_acc[t]
  auto sum_tree = [&]() -> std::string {
    if (!subgroups) return tree("s_acc[t] += s_acc[t + h];");
    return "    { AT sg = subgroupAdd(s_acc[t]);\n      barrier();\n      if (subgroupElect()) s_acc[gl_SubgroupID] = "
           "sg;\n"
           "      barrier();\n      if (t == 0u) { AT tot = s_acc[0]; for (uint g = 1u; g < gl_NumSubgroups; ++g) tot "
           "+= s_acc[g]; s_acc[0] = tot; }\n"
           "      barrier(); }\n";
  };
  const bool plain_sum = k == OpKind::sum || k == OpKind::mean || k == OpKind::var || k == OpKind::std;
  const std::string ld = glsl::load(dt, "a_[base + red_offset(j)]");
  s += "void main() {\n  uint t = gl_LocalInvocationID.x;\n"
       "  for (uint o = gl_WorkGroupID.x; o < r.n_out; o += gl_NumWorkGroups.x) {\n"
       "    int base = r.off_in + out_offset(o);\n    AT acc = " +
       init +
       ";\n    int idx = -1;\n"
       "    for (uint j = t; j < r.n_red; j += " +
       W + "u) {\n      C x = " + ld + ";\n      " + step +
       "\n    }\n"
       "    s_acc[t] = acc;\n" +
       (arg ? "    s_idx[t] = idx;\n" : "") + "    barrier();\n" + (plain_sum ? sum_tree() : tree(combine));
  if (two_pass) {
    s += "    AT first = s_acc[0];\n    barrier();\n    acc = " + init2 +
         ";\n"
         "    for (uint j = t; j < r.n_red; j += " +
         W + "u) {\n      C x = " + ld + ";\n      " + step2 +
         "\n    }\n"
         "    s_acc[t] = acc;\n    barrier();\n" +
         sum_tree();
  }
  // the stored value in the output's compute type
  const std::string out_c = glsl::compute_type(out0);
  std::string value = arg && !outs.empty() && outs.size() == 1 ? "int64_t(max(s_idx[0], 0))" : out_c + "(v)";
  s += "    if (t == 0u) {\n      " + store + "\n";
  s += "      o_[o] = " + glsl::store(out0, value) + ";\n";
  if (outs.size() > 1) s += "      i_[o] = int64_t(max(s_idx[0], 0));\n";
  s += "    }\n    barrier();\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> reduce_kernel(VulkanBackend& be, Op& op) {
  const auto& x = as_vk(op.inputs[0]);
  const auto& a = op.attr<ReduceAttrs>();
  auto [outs, bind] = alloc_value_index_outputs(be, op, x.buffer);
  const Shape& s = x.shape();
  ReduceParams p;
  std::vector<std::pair<int64_t, int64_t>> kept, red;  // (size, stride), merged
  auto push = [](std::vector<std::pair<int64_t, int64_t>>& v, int64_t size, int64_t stride) {
    if (size == 1) return;
    if (!v.empty() && v.back().second == stride * size) {
      v.back().first *= size;
      v.back().second = stride;
    } else {
      v.emplace_back(size, stride);
    }
  };
  int64_t n_out = 1, n_red = 1;
  for (int d = 0; d < s.rank(); ++d) {
    const bool reduced = a.dims.empty() || std::find(a.dims.begin(), a.dims.end(), d) != a.dims.end();
    push(reduced ? red : kept, s[d], x.strides[size_t(d)]);
    (reduced ? n_red : n_out) *= s[d];
  }
  if (n_out == 0) return outs;
  EMBER_CHECK(kept.size() <= size_t(kMaxRank) && red.size() <= size_t(kMaxRank), op.name(),
              ": too many non-mergeable dims for the Vulkan backend (", kMaxRank, " kept and ", kMaxRank, " reduced)");
  EMBER_CHECK(x.numel() <= INT32_MAX && x.offset <= INT32_MAX, op.name(), ": ", x.numel(),
              " elements exceed the Vulkan backend's 32-bit indexing");
  p.n_out = uint32_t(n_out);
  p.n_red = uint32_t(n_red);
  p.rank_out = int32_t(kept.size());
  p.rank_red = int32_t(red.size());
  for (size_t d = 0; d < kept.size(); ++d)
    p.size_out[d] = int32_t(kept[d].first), p.st_out[d] = int32_t(kept[d].second);
  for (size_t d = 0; d < red.size(); ++d) p.size_red[d] = int32_t(red[d].first), p.st_red[d] = int32_t(red[d].second);
  p.off_in = int32_t(x.offset);
  p.correction = int32_t(a.correction);
  p.flag = uint32_t(norm_kind(a.p));
  p.pf = float(a.p);
  const DType dt = x.dtype();
  const std::string key = std::string(op.name()) + "/" + std::string(dtype_name(dt));
  VkPipeline pipe = be.shaders().get(op.name(), key, [&] { return reduce_source(be, op.kind, dt, op.outputs); });
  be.dispatch(pipe, bind, &p, sizeof p, be.groups_for(n_out, 1));
  return outs;
}

}  // namespace

void register_reduce_kernels(KernelTable& t, DTypeTable& d) {
  for (int i = 0; i < kNumOps; ++i)
    if (op_info(OpKind(i)).family == OpFamily::Reduce) {
      t[size_t(i)] = reduce_kernel;
      d[size_t(i)] = reduce_dtypes;
    }
}

}  // namespace ember::vulkan
