// Row kernels: softmax, log_softmax (along any dim), layer_norm (over the trailing dims) and its
// backward, and the fused softmax cross-entropy and its backward.
//
// The input is made contiguous; a row is the n elements along the op's dim (stride `inner`),
// and a workgroup handles one row at a time (grid-stride over the rows), combining its
// invocations' partials in shared memory between passes, as the reductions do. Semantics of the
// CPU backend (src/backends/cpu/softmax.cpp, norm.cpp): softmax = exp(x - max) * (1 / sum) with
// the sum in double where the device has it, log_softmax = (x - max) - log(sum), a NaN anywhere
// in a row makes the row NaN; layer_norm = (x rstd - rstd mean) w + b with the mean and the
// variance in the compute type, rstd = 1 / sqrt(max(var, 0) + eps). f16/bf16 compute in float.
#include <cmath>
#include <cstring>

// GCC 12 at -O3 warns about overlapping memcpy inside std::string concatenations of this file
// (a false positive: GCC bug 105651)
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include "copy.hpp"
#include "glsl.hpp"

namespace ember::vulkan {

namespace {

struct RowParams {
  uint32_t rows = 0, n = 0;
  int32_t inner = 1, flags = 0;  // flags: bit 0 weight, bit 1 bias (layer_norm)
  float eps = 0;
  int32_t off_x = 0;  // element offsets of the (contiguous) input, weight and bias
  uint32_t eps_d[2] = {};
  int32_t off_w = 0, off_b = 0;  // layer_norm: weight, bias; cross_entropy: target, -
  int32_t ignore[2] = {};        // cross_entropy's ignore_index (int64 words)
};
static_assert(sizeof(RowParams) == 48);

const char* kRowParams = R"GLSL(
struct RowParams { uint rows; uint n; int inner; int flags; float eps; int off_x; uvec2 eps_d; int off_w; int off_b; ivec2 ignore; };
layout(std430, binding = 6) readonly buffer RowParamsBuf { RowParams r; };
)GLSL";

// The start of every row shader: the header for `dts`, the parameters and C, the compute type of
// `dt`.
std::string row_shader(const std::vector<DType>& dts, DType dt) {
  return glsl::header(dts, false) + kRowParams + "#define C " + glsl::compute_type(dt) + "\n";
}

bool softmax_dtypes(const VulkanBackend& be, const Op& op) {
  const DType dt = op.in(0).dtype;
  return is_float(dt) && be.has_dtype(dt);
}
bool layer_norm_dtypes(const VulkanBackend& be, const Op& op) {
  const DType dt = op.in(0).dtype;
  return is_float(dt) && be.has_dtype(dt);
}

std::string tree(const std::string& op) {
  return "    barrier();\n    for (uint h = " + std::to_string(glsl::kLocalSize / 2) +
         "u; h > 0u; h >>= 1u) {\n      if (t < h) " + op + "\n      barrier();\n    }\n";
}

// The shared arrays and the first two passes of a softmax over a row whose j-th element is `ld`
// (a workgroup per row, invocation t): after them m is the row's max (NaN where any element is) and
// s_sum[0] the sum of exp(x - m), in AT. Used by softmax and cross_entropy.
std::string softmax_shared() {
  const std::string W = std::to_string(glsl::kLocalSize);
  return "shared C s_max[" + W + "];\nshared int s_nan[" + W + "];\nshared AT s_sum[" + W + "];\n";
}

std::string softmax_max_and_sum(DType dt, const std::string& ld) {
  const std::string W = std::to_string(glsl::kLocalSize);
  const std::string inf = dt == DType::f64 ? "ember_inf_d()" : "ember_inf()",
                    nan = dt == DType::f64 ? "ember_nan_d()" : "ember_nan()";
  return "    C m = -" + inf +
         ";\n    int nan = 0;\n"
         "    for (uint j = t; j < r.n; j += " +
         W + "u) {\n      C v = " + ld +
         ";\n"
         "      m = v > m ? v : m;\n      if (ember_isnan(v)) nan = 1;\n    }\n"
         "    s_max[t] = m;\n    s_nan[t] = nan;\n" +
         tree("{ s_max[t] = max(s_max[t], s_max[t + h]); s_nan[t] |= s_nan[t + h]; }") + "    m = s_nan[0] != 0 ? " +
         nan +
         " : s_max[0];\n"
         "    AT sum = AT(0);\n"
         "    for (uint j = t; j < r.n; j += " +
         W + "u) sum += AT(ember_exp(C(" + ld +
         ") - m));\n"
         "    s_sum[t] = sum;\n" +
         tree("s_sum[t] += s_sum[t + h];");
}

std::string softmax_source(const VulkanBackend& be, DType dt, bool log) {
  const bool dacc = be.physical().float64;
  std::vector<DType> dts = {dt};
  if (dacc) dts.push_back(DType::f64);
  std::string s = row_shader(dts, dt);
  s += std::string("#define AT ") + (dacc ? "double" : "float") + "\n";
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  const std::string W = std::to_string(glsl::kLocalSize);
  s += softmax_shared();
  const std::string ld = glsl::load(dt, "a_[base + int(j) * r.inner]");
  s += "void main() {\n  uint t = gl_LocalInvocationID.x;\n"
       "  for (uint row = gl_WorkGroupID.x; row < r.rows; row += gl_NumWorkGroups.x) {\n"
       "    int outer = int(row) / r.inner, in_row = int(row) - outer * r.inner;\n"
       "    int obase = outer * int(r.n) * r.inner + in_row, base = r.off_x + obase;\n" +
       softmax_max_and_sum(dt, ld);
  if (log)
    s += "    C ls = C(ember_log(s_sum[0]));\n"
         "    for (uint j = t; j < r.n; j += " +
         W + "u) o_[obase + int(j) * r.inner] = " + glsl::store(dt, "(" + ld + " - m) - ls") + ";\n";
  else
    s += "    C inv = C(AT(1) / s_sum[0]);\n"
         "    for (uint j = t; j < r.n; j += " +
         W + "u) o_[obase + int(j) * r.inner] = " + glsl::store(dt, "ember_exp(" + ld + " - m) * inv") + ";\n";
  s += "    barrier();\n  }\n}\n";
  return s;
}

// The first two passes of layer_norm and its backward over a row whose j-th element is `ld`
// (a workgroup per row, invocation t, the shared array `sh`): the row's mean and rstd =
// 1 / sqrt(max(var, 0) + eps).
std::string layer_norm_mean_rstd(DType dt, const std::string& ld, const std::string& sh) {
  const std::string W = std::to_string(glsl::kLocalSize);
  const std::string eps = dt == DType::f64 ? "packDouble2x32(r.eps_d)" : "r.eps";
  const std::string reduce = tree(sh + "[t] += " + sh + "[t + h];");
  return "    C acc = C(0);\n"
         "    for (uint j = t; j < r.n; j += " +
         W + "u) acc += " + ld + ";\n    " + sh + "[t] = acc;\n" + reduce + "    C mean = " + sh +
         "[0] / C(r.n);\n    barrier();\n    acc = C(0);\n"
         "    for (uint j = t; j < r.n; j += " +
         W + "u) { C d = " + ld + " - mean; acc += d * d; }\n    " + sh + "[t] = acc;\n" + reduce +
         "    C rstd = C(1) / sqrt(max(" + sh + "[0] / C(r.n), C(0)) + C(" + eps + "));\n    barrier();\n";
}

std::string layer_norm_source(DType dt) {
  std::string s = row_shader({dt}, dt);
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  s += glsl::buffer(2, dt, "w_", true);
  s += glsl::buffer(3, dt, "b_", true);
  const std::string W = std::to_string(glsl::kLocalSize);
  s += "shared C s_sum[" + W + "];\n";
  const std::string ld = glsl::load(dt, "a_[base + int(j)]");
  s += "void main() {\n  uint t = gl_LocalInvocationID.x;\n"
       "  for (uint row = gl_WorkGroupID.x; row < r.rows; row += gl_NumWorkGroups.x) {\n"
       "    int obase = int(row) * int(r.n), base = r.off_x + obase;\n" +
       layer_norm_mean_rstd(dt, ld, "s_sum") +
       "    C shift = -rstd * mean;\n"
       "    for (uint j = t; j < r.n; j += " +
       W +
       "u) {\n"
       "      C y = " +
       ld +
       " * rstd + shift;\n"
       "      if ((r.flags & 1) != 0) y = y * " +
       glsl::load(dt, "w_[r.off_w + int(j)]") +
       ";\n"
       "      if ((r.flags & 2) != 0) y = y + " +
       glsl::load(dt, "b_[r.off_b + int(j)]") +
       ";\n"
       "      o_[obase + int(j)] = " +
       glsl::store(dt, "y") +
       ";\n    }\n"
       "    barrier();\n  }\n}\n";
  return s;
}

// layer_norm_backward, pass 1 (a workgroup per row): dx = rstd (g w - mean(g w) - xh mean(g w xh)),
// xh = (x - mean) rstd, and the row's mean and rstd into `stats` for pass 2.
std::string layer_norm_backward_rows_source(DType dt) {
  const std::string C = glsl::compute_type(dt);
  std::string s = row_shader({dt}, dt);
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  s += glsl::buffer(2, dt, "w_", true);
  s += glsl::buffer(3, dt, "g_", true);
  s += "layout(std430, binding = 4) buffer B4 { " + C + " st_[]; };\n";
  const std::string W = std::to_string(glsl::kLocalSize);
  s += "shared C s_a[" + W + "];\nshared C s_b[" + W + "];\n";
  const std::string ld = glsl::load(dt, "a_[base + int(j)]");
  const std::string gw = "(" + glsl::load(dt, "g_[gbase + int(j)]") + " * ((r.flags & 1) != 0 ? " +
                         glsl::load(dt, "w_[r.off_w + int(j)]") + " : C(1)))";
  s += "void main() {\n  uint t = gl_LocalInvocationID.x;\n"
       "  for (uint row = gl_WorkGroupID.x; row < r.rows; row += gl_NumWorkGroups.x) {\n"
       "    int obase = int(row) * int(r.n), base = r.off_x + obase, gbase = r.off_b + obase;\n" +
       layer_norm_mean_rstd(dt, ld, "s_a") +
       "    C sg = C(0), sgx = C(0);\n"
       "    for (uint j = t; j < r.n; j += " +
       W + "u) { C gv = " + gw + "; sg += gv; sgx += gv * ((" + ld +
       " - mean) * rstd); }\n"
       "    s_a[t] = sg;\n    s_b[t] = sgx;\n" +
       tree("{ s_a[t] += s_a[t + h]; s_b[t] += s_b[t + h]; }") +
       "    C mg = s_a[0] / C(r.n), mgx = s_b[0] / C(r.n);\n"
       "    for (uint j = t; j < r.n; j += " +
       W +
       "u) {\n"
       "      C xh = (" +
       ld +
       " - mean) * rstd;\n"
       "      o_[obase + int(j)] = " +
       glsl::store(dt, "rstd * (" + gw + " - mg - xh * mgx)") +
       ";\n    }\n"
       "    if (t == 0u) { st_[2 * int(row)] = mean; st_[2 * int(row) + 1] = rstd; }\n"
       "    barrier();\n  }\n}\n";
  return s;
}

// layer_norm_backward, pass 2 (an invocation per column, the rows in order): dweight = sum g xh,
// dbias = sum g.
std::string layer_norm_backward_cols_source(DType dt) {
  const std::string C = glsl::compute_type(dt);
  std::string s = row_shader({dt}, dt);
  s += glsl::buffer(0, dt, "dw_", false);
  s += glsl::buffer(1, dt, "a_", true);
  s += glsl::buffer(3, dt, "g_", true);
  s += "layout(std430, binding = 4) readonly buffer B4 { " + C + " st_[]; };\n";
  s += glsl::buffer(5, dt, "db_", false);
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  for (uint c = gl_GlobalInvocationID.x; c < r.n; c += step) {\n"
       "    C sw = C(0), sb = C(0);\n"
       "    for (uint row = 0u; row < r.rows; ++row) {\n"
       "      int at = int(row) * int(r.n) + int(c);\n"
       "      C gv = " +
       glsl::load(dt, "g_[r.off_b + at]") +
       ";\n"
       "      sw += gv * ((" +
       glsl::load(dt, "a_[r.off_x + at]") +
       " - st_[2 * int(row)]) * st_[2 * int(row) + 1]);\n"
       "      sb += gv;\n    }\n"
       "    dw_[c] = " +
       glsl::store(dt, "sw") + ";\n    db_[c] = " + glsl::store(dt, "sb") + ";\n  }\n}\n";
  return s;
}

// cross_entropy: a workgroup per row of logits [N, C] with i64 targets: lse = max + log(sum
// exp(x - max)) (the sum in double where the device has it), loss = log(sum) - (x[t] - max), 0 with
// valid = 0 where t is ignore_index. A target outside [0, C) goes to the error record.
std::string cross_entropy_source(const VulkanBackend& be, DType dt) {
  const bool dacc = be.physical().float64;
  const DType acc_dt = dt == DType::f64 ? DType::f64 : DType::f32;
  std::vector<DType> dts = {dt, DType::i64, acc_dt};
  if (dacc) dts.push_back(DType::f64);
  std::string s = row_shader(dts, dt);
  s += glsl::kErrorRecord;
  s += std::string("#define AT ") + (dacc ? "double" : "float") + "\n";
  s += glsl::buffer(0, acc_dt, "loss_", false);
  s += glsl::buffer(1, dt, "a_", true);
  s += glsl::buffer(2, DType::i64, "t_", true);
  s += glsl::buffer(3, acc_dt, "lse_", false);
  s += glsl::buffer(4, acc_dt, "valid_", false);
  s += softmax_shared();
  const std::string ld = glsl::load(dt, "a_[base + int(j)]");
  s += "void main() {\n  uint t = gl_LocalInvocationID.x;\n  int64_t ignore = packInt2x32(r.ignore);\n"
       "  for (uint row = gl_WorkGroupID.x; row < r.rows; row += gl_NumWorkGroups.x) {\n"
       "    int base = r.off_x + int(row) * int(r.n);\n" +
       softmax_max_and_sum(dt, ld) +
       "    if (t == 0u) {\n"
       "      C ls = C(ember_log(s_sum[0]));\n"
       "      int64_t tg = t_[r.off_w + int(row)];\n"
       "      bool counts = tg != ignore;\n"
       "      if (counts && (tg < 0l || tg >= int64_t(r.n))) { ember_record_error(uint(r.flags), 1, tg, int64_t(r.n)); "
       "counts = false; }\n"
       "      lse_[row] = m + ls;\n      valid_[row] = counts ? C(1) : C(0);\n"
       "      loss_[row] = counts ? ls - (" +
       glsl::load(dt, "a_[base + int(tg)]") +
       " - m) : C(0);\n"
       "    }\n    barrier();\n  }\n}\n";
  return s;
}

// cross_entropy_backward: per element, g[n] (exp(x - lse[n]) - onehot(t[n])), 0 in ignored rows.
std::string cross_entropy_backward_source(DType dt) {
  const DType acc_dt = dt == DType::f64 ? DType::f64 : DType::f32;
  std::string s = row_shader({dt, DType::i64, acc_dt}, dt);
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  s += glsl::buffer(2, DType::i64, "t_", true);
  s += glsl::buffer(3, acc_dt, "lse_", true);
  s += glsl::buffer(4, acc_dt, "g_", true);
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n  int64_t ignore = "
       "packInt2x32(r.ignore);\n"
       "  for (uint e = gl_GlobalInvocationID.x; e < r.rows * r.n; e += step) {\n"
       "    int row = int(e / r.n), i = int(e % r.n);\n"
       "    int64_t tg = t_[r.off_w + row];\n"
       "    C v = C(0);\n"
       "    if (tg != ignore) v = C(g_[r.inner + row]) * (ember_exp(C(" +
       glsl::load(dt, "a_[r.off_x + int(e)]") +
       ") - C(lse_[r.off_b + row])) - (int64_t(i) == tg ? C(1) : C(0)));\n"
       "    o_[int(e)] = " +
       glsl::store(dt, "v") + ";\n  }\n}\n";
  return s;
}

bool float_input(const VulkanBackend& be, const Op& op) {
  const DType dt = op.in(0).dtype;
  return is_float(dt) && be.has_dtype(dt) && be.has_dtype(DType::i64);
}

std::vector<PrimitivePtr> layer_norm_backward_kernel(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<NormAttrs>();
  VulkanTensorPtr x = be.contiguous(op.inputs[0]);
  VulkanTensorPtr g = be.contiguous(op.inputs[2]);
  auto dx = be.alloc(op.outputs[0]), dw = be.alloc(op.outputs[1]), db = be.alloc(op.outputs[2]);
  const int64_t n = op.outputs[1].shape.numel(), total = x->numel();
  const DType dt = x->dtype();
  if (total == 0) {  // no rows: dweight and dbias are sums of nothing
    fill_bits(be, *dw, 0);
    fill_bits(be, *db, 0);
    return {dx, dw, db};
  }
  EMBER_CHECK(total <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  RowParams p;
  p.rows = uint32_t(total / n);
  p.n = uint32_t(n);
  p.eps = float(a.eps);
  std::memcpy(p.eps_d, &a.eps, 8);
  p.off_x = int32_t(x->offset);
  p.off_b = int32_t(g->offset);  // (the gradient of the output)
  BufferPtr wbuf;
  if (op.inputs[1]) {
    VulkanTensorPtr w = be.contiguous(op.inputs[1]);
    wbuf = w->buffer;
    p.off_w = int32_t(w->offset);
    p.flags = 1;
  }
  auto stats = be.alloc(TensorMeta{Shape{int64_t(p.rows) * 2}, dt == DType::f64 ? DType::f64 : DType::f32});
  const std::string name(dtype_name(dt));
  VkPipeline rows = be.shaders().get(op.name(), "layer_norm_backward/rows/" + name,
                                     [dt] { return layer_norm_backward_rows_source(dt); });
  be.dispatch(rows, {dx->buffer, x->buffer, wbuf, g->buffer, stats->buffer, nullptr}, &p, sizeof p,
              be.groups_for(p.rows, 1));
  VkPipeline cols = be.shaders().get(op.name(), "layer_norm_backward/cols/" + name,
                                     [dt] { return layer_norm_backward_cols_source(dt); });
  be.dispatch(cols, {dw->buffer, x->buffer, nullptr, g->buffer, stats->buffer, db->buffer}, &p, sizeof p,
              be.groups_for(n));
  return {dx, dw, db};
}

std::vector<PrimitivePtr> cross_entropy_kernel(VulkanBackend& be, Op& op) {
  const bool backward = op.kind == OpKind::cross_entropy_backward;
  VulkanTensorPtr x = be.contiguous(op.inputs[0]);
  VulkanTensorPtr t = be.contiguous(op.inputs[1]);
  std::vector<PrimitivePtr> outs;
  for (const TensorMeta& m : op.outputs) outs.push_back(be.alloc(m));
  const Shape& s = x->shape();
  if (s[0] == 0) return outs;
  EMBER_CHECK(s.numel() <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  RowParams p;
  p.rows = uint32_t(s[0]);
  p.n = uint32_t(s[1]);
  p.off_x = int32_t(x->offset);
  p.off_w = int32_t(t->offset);
  const int64_t ignore = op.attr<DimAttrs>().k;
  p.ignore[0] = int32_t(uint32_t(uint64_t(ignore)));
  p.ignore[1] = int32_t(uint32_t(uint64_t(ignore) >> 32));
  p.flags = int32_t(op.kind);  // (for the error record)
  const DType dt = x->dtype();
  const std::string name(dtype_name(dt));
  if (!backward) {
    VkPipeline pipe =
        be.shaders().get(op.name(), "cross_entropy/" + name, [&] { return cross_entropy_source(be, dt); });
    be.dispatch(pipe,
                {as_vk(outs[0]).buffer, x->buffer, t->buffer, as_vk(outs[1]).buffer, as_vk(outs[2]).buffer, nullptr},
                &p, sizeof p, be.groups_for(p.rows, 1));
    return outs;
  }
  VulkanTensorPtr lse = be.contiguous(op.inputs[2]);
  VulkanTensorPtr g = be.contiguous(op.inputs[3]);
  p.off_b = int32_t(lse->offset);
  p.inner = int32_t(g->offset);
  VkPipeline pipe =
      be.shaders().get(op.name(), "cross_entropy_backward/" + name, [dt] { return cross_entropy_backward_source(dt); });
  be.dispatch(pipe, {as_vk(outs[0]).buffer, x->buffer, t->buffer, lse->buffer, g->buffer, nullptr}, &p, sizeof p,
              be.groups_for(s.numel()));
  return outs;
}

std::vector<PrimitivePtr> softmax_kernel(VulkanBackend& be, Op& op) {
  const bool log = op.kind == OpKind::log_softmax;
  VulkanTensorPtr x = be.contiguous(op.inputs[0]);
  auto out = be.alloc(op.outputs[0]);
  const Shape& s = x->shape();
  if (s.numel() == 0) return {out};
  const int dim = s.rank() == 0 ? 0 : op.attr<DimAttrs>().dim;
  RowParams p;
  int64_t inner = 1;
  for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  const int64_t n = s.rank() == 0 ? 1 : s[dim];
  EMBER_CHECK(s.numel() <= INT32_MAX, op.name(), ": ", s.numel(),
              " elements exceed the Vulkan backend's 32-bit indexing");
  p.rows = uint32_t(s.numel() / n);
  p.n = uint32_t(n);
  p.inner = int32_t(inner);
  p.off_x = int32_t(x->offset);
  const DType dt = x->dtype();
  const std::string key = std::string(op.name()) + "/" + std::string(dtype_name(dt));
  VkPipeline pipe = be.shaders().get(op.name(), key, [&] { return softmax_source(be, dt, log); });
  be.dispatch(pipe, {out->buffer, x->buffer, nullptr, nullptr}, &p, sizeof p, be.groups_for(p.rows, 1));
  return {out};
}

std::vector<PrimitivePtr> layer_norm_kernel(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<NormAttrs>();
  VulkanTensorPtr x = be.contiguous(op.inputs[0]);
  auto out = be.alloc(op.outputs[0]);
  const Shape& s = x->shape();
  if (s.numel() == 0) return {out};
  int64_t n = 1;
  for (int d = s.rank() - a.axes; d < s.rank(); ++d) n *= s[d];
  EMBER_CHECK(s.numel() <= INT32_MAX, op.name(), ": ", s.numel(),
              " elements exceed the Vulkan backend's 32-bit indexing");
  RowParams p;
  p.rows = uint32_t(n == 0 ? 0 : s.numel() / n);
  p.n = uint32_t(n);
  p.eps = float(a.eps);
  p.off_x = int32_t(x->offset);
  std::memcpy(p.eps_d, &a.eps, 8);
  std::array<BufferPtr, kMaxOperands> bind{out->buffer, x->buffer, nullptr, nullptr};
  for (size_t i = 1; i <= 2; ++i)
    if (op.inputs.size() > i && op.inputs[i]) {
      VulkanTensorPtr t = be.contiguous(op.inputs[i]);
      bind[i + 1] = t->buffer;
      (i == 1 ? p.off_w : p.off_b) = int32_t(t->offset);
      p.flags |= int32_t(i);
    }
  const DType dt = x->dtype();
  const std::string key = "layer_norm/" + std::string(dtype_name(dt));
  VkPipeline pipe = be.shaders().get(op.name(), key, [&] { return layer_norm_source(dt); });
  be.dispatch(pipe, bind, &p, sizeof p, be.groups_for(p.rows, 1));
  return {out};
}

}  // namespace

void register_row_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::softmax)] = softmax_kernel;
  t[size_t(OpKind::log_softmax)] = softmax_kernel;
  t[size_t(OpKind::layer_norm)] = layer_norm_kernel;
  t[size_t(OpKind::layer_norm_backward)] = layer_norm_backward_kernel;
  t[size_t(OpKind::cross_entropy)] = cross_entropy_kernel;
  t[size_t(OpKind::cross_entropy_backward)] = cross_entropy_kernel;
  d[size_t(OpKind::layer_norm_backward)] = layer_norm_dtypes;
  d[size_t(OpKind::cross_entropy)] = float_input;
  d[size_t(OpKind::cross_entropy_backward)] = float_input;
  d[size_t(OpKind::softmax)] = softmax_dtypes;
  d[size_t(OpKind::log_softmax)] = softmax_dtypes;
  d[size_t(OpKind::layer_norm)] = layer_norm_dtypes;
}

}  // namespace ember::vulkan
