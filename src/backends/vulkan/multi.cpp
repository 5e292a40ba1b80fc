// The multi-tensor ops of gradient clipping (norm_multi, mul_multi) and batch_norm (inference).
//
// norm_multi and mul_multi run the backend's own kernels once per tensor (the norm reduction,
// then a copy into the result; mul by the 0-d scalar), so they add no shader: the per-tensor
// norms accumulate in double where the device has it (the CPU backend sums in the dtype's
// compute type, in chunks). batch_norm is the CPU backend's per-channel affine map: alpha = w /
// sqrt(var + eps), beta = b - mean alpha, y = x alpha + beta, in the compute type.
#include <cstring>

#include "copy.hpp"
#include "glsl.hpp"

namespace ember::vulkan {

namespace {

bool float_inputs(const VulkanBackend& be, const Op& op) {
  for (const auto& in : op.inputs)
    if (in && (!is_float(in->dtype()) || !be.has_dtype(in->dtype()))) return false;
  return true;
}

std::vector<PrimitivePtr> mul_multi_kernel(VulkanBackend& be, Op& op) {
  const size_t k = op.inputs.size() - 1;
  std::vector<PrimitivePtr> out;
  for (size_t q = 0; q < k; ++q) out.push_back(be.execute(make_op(OpKind::mul, {op.inputs[q], op.inputs[k]}))[0]);
  return out;
}

std::vector<PrimitivePtr> norm_multi_kernel(VulkanBackend& be, Op& op) {
  const double p = op.attr<ScalarAttrs>().a;
  auto out = be.alloc(op.outputs[0]);
  for (size_t q = 0; q < op.inputs.size(); ++q) {
    ReduceAttrs r;
    r.p = p;
    auto v = as_vk_ptr(be.execute(make_op(OpKind::norm, {op.inputs[q]}, r))[0]);
    copy_strided(be, Operand{out->buffer, out->dtype(), {}, int64_t(q)}, operand_of(*v), Shape{});
  }
  return {out};
}

struct BatchNormParams {
  uint32_t n = 0;
  int32_t channels = 1, inner = 1, flags = 0;  // flags: 1 weight, 2 bias
  float eps = 0;
  int32_t pad0 = 0;
  uint32_t eps_d[2] = {};
  int32_t off[6] = {};  // y, x, mean, var, weight, bias
  int32_t pad1[2] = {};
};
static_assert(sizeof(BatchNormParams) == 64);

std::string batch_norm_source(DType dt) {
  std::string s = glsl::header({dt}, false);
  s += R"GLSL(
struct BatchNormParams { uint n; int channels; int inner; int flags; float eps; int pad0; uvec2 eps_d; int off[6]; int pad1; int pad2; };
layout(std430, binding = 6) readonly buffer BatchNormParamsBuf { BatchNormParams r; };
)GLSL";
  s += "#define C " + glsl::compute_type(dt) + "\n";
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "x_", true);
  s += glsl::buffer(2, dt, "m_", true);
  s += glsl::buffer(3, dt, "v_", true);
  s += glsl::buffer(4, dt, "w_", true);
  s += glsl::buffer(5, dt, "b_", true);
  const std::string eps = dt == DType::f64 ? "packDouble2x32(r.eps_d)" : "r.eps";
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  for (uint i = gl_GlobalInvocationID.x; i < r.n; i += step) {\n"
       "    int c = (int(i) / r.inner) % r.channels;\n"
       "    C invstd = C(1) / sqrt(" +
       glsl::load(dt, "v_[r.off[3] + c]") + " + C(" + eps +
       "));\n"
       "    C al = (r.flags & 1) != 0 ? invstd * " +
       glsl::load(dt, "w_[r.off[4] + c]") +
       " : invstd;\n"
       "    C be = ((r.flags & 2) != 0 ? " +
       glsl::load(dt, "b_[r.off[5] + c]") + " : C(0)) - " + glsl::load(dt, "m_[r.off[2] + c]") +
       " * al;\n"
       "    o_[int(i)] = " +
       glsl::store(dt, glsl::load(dt, "x_[r.off[1] + int(i)]") + " * al + be") + ";\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> batch_norm_kernel(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<NormAttrs>();
  VulkanTensorPtr x = be.contiguous(op.inputs[0]);
  auto out = be.alloc(op.outputs[0]);
  const Shape& s = x->shape();
  const int64_t n = s.numel();
  if (n == 0) return {out};
  EMBER_CHECK(n <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  BatchNormParams p;
  p.n = uint32_t(n);
  p.channels = int32_t(s.rank() >= 2 ? s[1] : 1);
  int64_t inner = 1;
  for (int d = 2; d < s.rank(); ++d) inner *= s[d];
  p.inner = int32_t(inner);
  p.eps = float(a.eps);
  std::memcpy(p.eps_d, &a.eps, 8);
  p.off[1] = int32_t(x->offset);
  std::array<BufferPtr, kMaxOperands> bind{out->buffer, x->buffer, nullptr, nullptr, nullptr, nullptr};
  for (size_t i = 1; i <= 4; ++i) {
    if (op.inputs.size() <= i || !op.inputs[i]) continue;
    VulkanTensorPtr t = be.contiguous(op.inputs[i]);
    bind[i + 1] = t->buffer;
    p.off[i + 1] = int32_t(t->offset);
    if (i == 3) p.flags |= 1;
    if (i == 4) p.flags |= 2;
  }
  const DType dt = x->dtype();
  VkPipeline pipe =
      be.shaders().get(op.name(), "batch_norm/" + std::string(dtype_name(dt)), [dt] { return batch_norm_source(dt); });
  be.dispatch(pipe, bind, &p, sizeof p, be.groups_for(n));
  return {out};
}

}  // namespace

void register_multi_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::mul_multi)] = mul_multi_kernel;
  t[size_t(OpKind::norm_multi)] = norm_multi_kernel;
  t[size_t(OpKind::batch_norm)] = batch_norm_kernel;
  for (OpKind k : {OpKind::mul_multi, OpKind::norm_multi, OpKind::batch_norm}) d[size_t(k)] = float_inputs;
}

}  // namespace ember::vulkan
