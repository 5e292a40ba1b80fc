// Row kernels: softmax, log_softmax (along any dim) and layer_norm (over the trailing dims).
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

#include "glsl.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {

namespace {

struct RowParams {
  uint32_t rows = 0, n = 0;
  int32_t inner = 1, flags = 0;  // flags: bit 0 weight, bit 1 bias (layer_norm)
  float eps = 0;
  int32_t off_x = 0;  // element offsets of the (contiguous) input, weight and bias
  uint32_t eps_d[2] = {};
  int32_t off_w = 0, off_b = 0, pad[2] = {};
};
static_assert(sizeof(RowParams) == 48);

const char* kRowParams = R"GLSL(
struct RowParams { uint rows; uint n; int inner; int flags; float eps; int off_x; uvec2 eps_d; int off_w; int off_b; int pad0; int pad1; };
layout(std430, binding = 6) readonly buffer RowParamsBuf { RowParams r; };
)GLSL";

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

std::string softmax_source(const VulkanBackend& be, DType dt, bool log) {
  const bool dacc = be.physical().float64;
  std::vector<DType> dts = {dt};
  if (dacc) dts.push_back(DType::f64);
  std::string s = glsl::header(dts, false);
  s += kRowParams;
  s += std::string("#define AT ") + (dacc ? "double" : "float") + "\n#define C " + glsl::compute_type(dt) + "\n";
  const std::string inf = dt == DType::f64 ? "ember_inf_d()" : "ember_inf()", nan = dt == DType::f64 ? "ember_nan_d()" : "ember_nan()";
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  const std::string W = std::to_string(glsl::kLocalSize);
  s += "shared C s_max[" + W + "];\nshared int s_nan[" + W + "];\nshared AT s_sum[" + W + "];\n";
  const std::string ld = glsl::load(dt, "a_[base + int(j) * r.inner]");
  s += "void main() {\n  uint t = gl_LocalInvocationID.x;\n"
       "  for (uint row = gl_WorkGroupID.x; row < r.rows; row += gl_NumWorkGroups.x) {\n"
       "    int outer = int(row) / r.inner, in_row = int(row) - outer * r.inner;\n"
       "    int obase = outer * int(r.n) * r.inner + in_row, base = r.off_x + obase;\n"
       "    C m = -" + inf + ";\n    int nan = 0;\n"
       "    for (uint j = t; j < r.n; j += " + W + "u) {\n      C v = " + ld + ";\n"
       "      m = v > m ? v : m;\n      if (ember_isnan(v)) nan = 1;\n    }\n"
       "    s_max[t] = m;\n    s_nan[t] = nan;\n" +
       tree("{ s_max[t] = max(s_max[t], s_max[t + h]); s_nan[t] |= s_nan[t + h]; }") +
       "    m = s_nan[0] != 0 ? " + nan + " : s_max[0];\n"
       "    AT sum = AT(0);\n"
       "    for (uint j = t; j < r.n; j += " + W + "u) sum += AT(ember_exp(C(" + ld + ") - m));\n"
       "    s_sum[t] = sum;\n" + tree("s_sum[t] += s_sum[t + h];");
  if (log)
    s += "    C ls = C(ember_log(s_sum[0]));\n"
         "    for (uint j = t; j < r.n; j += " + W + "u) o_[obase + int(j) * r.inner] = " +
         glsl::store(dt, "(" + ld + " - m) - ls") + ";\n";
  else
    s += "    C inv = C(AT(1) / s_sum[0]);\n"
         "    for (uint j = t; j < r.n; j += " + W + "u) o_[obase + int(j) * r.inner] = " +
         glsl::store(dt, "ember_exp(" + ld + " - m) * inv") + ";\n";
  s += "    barrier();\n  }\n}\n";
  return s;
}

std::string layer_norm_source(DType dt) {
  const std::string C = glsl::compute_type(dt);
  std::string s = glsl::header({dt}, false);
  s += kRowParams;
  s += "#define C " + C + "\n";
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  s += glsl::buffer(2, dt, "w_", true);
  s += glsl::buffer(3, dt, "b_", true);
  const std::string W = std::to_string(glsl::kLocalSize);
  s += "shared C s_sum[" + W + "];\n";
  const std::string ld = glsl::load(dt, "a_[base + int(j)]");
  const std::string eps = dt == DType::f64 ? "packDouble2x32(r.eps_d)" : "r.eps";
  s += "void main() {\n  uint t = gl_LocalInvocationID.x;\n"
       "  for (uint row = gl_WorkGroupID.x; row < r.rows; row += gl_NumWorkGroups.x) {\n"
       "    int obase = int(row) * int(r.n), base = r.off_x + obase;\n    C acc = C(0);\n"
       "    for (uint j = t; j < r.n; j += " + W + "u) acc += " + ld + ";\n"
       "    s_sum[t] = acc;\n" + tree("s_sum[t] += s_sum[t + h];") +
       "    C mean = s_sum[0] / C(r.n);\n    barrier();\n    acc = C(0);\n"
       "    for (uint j = t; j < r.n; j += " + W + "u) { C d = " + ld + " - mean; acc += d * d; }\n"
       "    s_sum[t] = acc;\n" + tree("s_sum[t] += s_sum[t + h];") +
       "    C var = s_sum[0] / C(r.n);\n"
       "    C rstd = C(1) / sqrt(max(var, C(0)) + C(" + eps + "));\n    C shift = -rstd * mean;\n"
       "    for (uint j = t; j < r.n; j += " + W + "u) {\n"
       "      C y = " + ld + " * rstd + shift;\n"
       "      if ((r.flags & 1) != 0) y = y * " + glsl::load(dt, "w_[r.off_w + int(j)]") + ";\n"
       "      if ((r.flags & 2) != 0) y = y + " + glsl::load(dt, "b_[r.off_b + int(j)]") + ";\n"
       "      o_[obase + int(j)] = " + glsl::store(dt, "y") + ";\n    }\n"
       "    barrier();\n  }\n}\n";
  return s;
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
  EMBER_CHECK(s.numel() <= INT32_MAX, op.name(), ": ", s.numel(), " elements exceed the Vulkan backend's 32-bit indexing");
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
  EMBER_CHECK(s.numel() <= INT32_MAX, op.name(), ": ", s.numel(), " elements exceed the Vulkan backend's 32-bit indexing");
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
  d[size_t(OpKind::softmax)] = softmax_dtypes;
  d[size_t(OpKind::log_softmax)] = softmax_dtypes;
  d[size_t(OpKind::layer_norm)] = layer_norm_dtypes;
}

}  // namespace ember::vulkan
