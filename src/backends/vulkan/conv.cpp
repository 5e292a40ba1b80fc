// conv and conv_transpose over 1 to 3 spatial dims, with groups, stride, padding, dilation, the
// bias and conv's fused epilogue (a residual, then a clamp; ONNX Runtime's FusedConv).
//
// A direct kernel: one invocation per output element sums over its input channels and kernel
// taps (spatial dims lifted to 3 as in pool.cpp), in the compute type (float for f16/bf16),
// then adds the bias and the residual and clamps (NaN stays NaN), as the CPU backend's epilogue.
// The residual is copied into the output first and read back by the element's own invocation
// (the shared layout has four operand bindings). One shader per (op, dtype). An implicit GEMM
// with shared-memory tiles is for later: this is correct, not fast.
#include "conv.hpp"

#include <cmath>
#include <cstring>

#include "copy.hpp"
#include "glsl.hpp"

namespace ember::vulkan {

namespace {

struct ConvParams {
  uint32_t n = 0;
  int32_t cin = 0, cout = 0, groups = 1;
  int32_t off_x = 0, off_w = 0, off_b = 0, flags = 0;  // flags: 1 bias, 2 residual (in the output), 4 clamp
  float lo = 0, hi = 0;
  uint32_t lo_d[2] = {}, hi_d[2] = {};
  int32_t pad[2] = {};
  int32_t in[4] = {}, out[4] = {}, k[4] = {}, s[4] = {}, p[4] = {}, d[4] = {};
};
static_assert(sizeof(ConvParams) == 160);

const char* kConvParams = R"GLSL(
struct ConvParams {
  uint n; int cin; int cout; int groups; int off_x; int off_w; int off_b; int flags;
  float lo; float hi; uvec2 lo_d; uvec2 hi_d; int pad0; int pad1;
  ivec4 in_; ivec4 out_; ivec4 k; ivec4 s; ivec4 p; ivec4 d;
};
layout(std430, binding = 6) readonly buffer ConvParamsBuf { ConvParams r; };
)GLSL";

bool conv_dtypes(const VulkanBackend& be, const Op& op) {
  const DType dt = op.in(0).dtype;
  const size_t nd = op.attr<ConvAttrs>().stride.size();
  return is_float(dt) && be.has_dtype(dt) && nd >= 1 && nd <= 3;
}

std::string conv_source(OpKind k, DType dt) {
  const bool tr = k == OpKind::conv_transpose;
  std::string s = glsl::header({dt}, false);
  s += kConvParams;
  const std::string C = glsl::compute_type(dt);
  s += "#define C " + C + "\n";
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "x_", true);
  s += glsl::buffer(2, dt, "w_", true);
  s += glsl::buffer(3, dt, "b_", true);
  const std::string xl = glsl::load(dt, "x_[xb + (i0 * r.in_[1] + i1) * r.in_[2] + i2]");
  const std::string wl = glsl::load(dt, "w_[wb + (t0 * r.k[1] + t1) * r.k[2] + t2]");
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  int cin_g = r.cin / r.groups, cout_g = r.cout / r.groups;\n"
       "  int in_sp = r.in_[0] * r.in_[1] * r.in_[2], k_sp = r.k[0] * r.k[1] * r.k[2];\n"
       "  for (uint e = gl_GlobalInvocationID.x; e < r.n; e += step) {\n"
       "    int q = int(e);\n    int o2 = q % r.out_[2]; q /= r.out_[2];\n    int o1 = q % r.out_[1]; q /= r.out_[1];\n"
       "    int o0 = q % r.out_[0]; q /= r.out_[0];\n    int oc = q % r.cout, b = q / r.cout;\n"
       "    int g = oc / cout_g;\n    C acc = C(0);\n"
       "    for (int c = 0; c < cin_g; ++c) {\n      int ic = g * cin_g + c;\n"
       "      int xb = r.off_x + (b * r.cin + ic) * in_sp;\n";
  if (!tr) {
    s += "      int wb = r.off_w + (oc * cin_g + c) * k_sp;\n"
         "      for (int t0 = 0; t0 < r.k[0]; ++t0) {\n"
         "        int i0 = o0 * r.s[0] - r.p[0] + t0 * r.d[0];\n        if (i0 < 0 || i0 >= r.in_[0]) continue;\n"
         "        for (int t1 = 0; t1 < r.k[1]; ++t1) {\n"
         "          int i1 = o1 * r.s[1] - r.p[1] + t1 * r.d[1];\n          if (i1 < 0 || i1 >= r.in_[1]) continue;\n"
         "          for (int t2 = 0; t2 < r.k[2]; ++t2) {\n"
         "            int i2 = o2 * r.s[2] - r.p[2] + t2 * r.d[2];\n            if (i2 < 0 || i2 >= r.in_[2]) "
         "continue;\n";
  } else {
    // weight [Cin, Cout / groups, *k]: output y takes input i where i * s = y + p - t * d
    s += "      int wb = r.off_w + (ic * cout_g + (oc - g * cout_g)) * k_sp;\n"
         "      for (int t0 = 0; t0 < r.k[0]; ++t0) {\n"
         "        int y0 = o0 + r.p[0] - t0 * r.d[0];\n        if (y0 < 0 || y0 % r.s[0] != 0) continue;\n"
         "        int i0 = y0 / r.s[0];\n        if (i0 >= r.in_[0]) continue;\n"
         "        for (int t1 = 0; t1 < r.k[1]; ++t1) {\n"
         "          int y1 = o1 + r.p[1] - t1 * r.d[1];\n          if (y1 < 0 || y1 % r.s[1] != 0) continue;\n"
         "          int i1 = y1 / r.s[1];\n          if (i1 >= r.in_[1]) continue;\n"
         "          for (int t2 = 0; t2 < r.k[2]; ++t2) {\n"
         "            int y2 = o2 + r.p[2] - t2 * r.d[2];\n            if (y2 < 0 || y2 % r.s[2] != 0) continue;\n"
         "            int i2 = y2 / r.s[2];\n            if (i2 >= r.in_[2]) continue;\n";
  }
  s += "            acc += " + xl + " * " + wl + ";\n          }\n        }\n      }\n    }\n";
  const bool dbl = dt == DType::f64;
  s += "    if ((r.flags & 1) != 0) acc += " + glsl::load(dt, "b_[r.off_b + oc]") + ";\n";
  s += "    if ((r.flags & 2) != 0) acc += " + glsl::load(dt, "o_[int(e)]") + ";\n";
  s += "    if ((r.flags & 4) != 0) {\n";
  s += std::string("      C lo = ") + (dbl ? "packDouble2x32(r.lo_d)" : "r.lo") +
       ", hi = " + (dbl ? "packDouble2x32(r.hi_d)" : "r.hi") + ";\n";
  s += "      acc = acc < lo ? lo : acc;\n      acc = acc > hi ? hi : acc;\n    }\n";
  s += "    o_[int(e)] = " + glsl::store(dt, "acc") + ";\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> conv_kernel(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<ConvAttrs>();
  const bool tr = op.kind == OpKind::conv_transpose;
  auto [x, w, out, p] = conv_launch<ConvParams>(be, op);
  const Shape& os = out->shape();
  const int64_t n = os.numel();
  if (n == 0) return {out};
  BufferPtr bias;
  if (op.inputs.size() > 2 && op.inputs[2]) {
    VulkanTensorPtr b = be.contiguous(op.inputs[2]);
    bias = b->buffer;
    p.off_b = int32_t(b->offset);
    p.flags |= 1;
  }
  if (!tr && op.inputs.size() > 3 && op.inputs[3]) {  // the residual, read back from the output
    copy_strided(be, operand_of(*out), operand_of(as_vk(op.inputs[3])), os);
    p.flags |= 2;
  }
  if (!tr && a.has_activation()) {
    p.flags |= 4;
    p.lo = float(a.act_min);
    p.hi = float(a.act_max);
    std::memcpy(p.lo_d, &a.act_min, 8);
    std::memcpy(p.hi_d, &a.act_max, 8);
  }
  const DType dt = x->dtype();
  const std::string key = std::string(op.name()) + "/" + std::string(dtype_name(dt));
  VkPipeline pipe = be.shaders().get(op.name(), key, [&] { return conv_source(op.kind, dt); });
  be.dispatch(pipe, {out->buffer, x->buffer, w->buffer, bias}, &p, sizeof p, be.groups_for(n));
  return {out};
}

}  // namespace

void register_conv_kernels(KernelTable& t, DTypeTable& d) {
  for (OpKind k : {OpKind::conv, OpKind::conv_transpose}) {
    t[size_t(k)] = conv_kernel;
    d[size_t(k)] = conv_dtypes;
  }
}

}  // namespace ember::vulkan
