// adam_step: one Adam / AdamW update (torch.optim's _single_tensor_adam(w) order, as the CPU
// backend's src/backends/cpu/optim.cpp), of one parameter with its learning rate and step on the
// device, or of k parameters with the host's.
//
//   g = maximize ? -g : g;  AdamW: p *= 1 - lr wd;  Adam: g += wd p
//   m = m b1 + g (1 - b1);  v = v b2 + (1 - b2) g g;  p = p - (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps)
//
// Computed in f32 for f32/f16/bf16 and f64 for f64, without fused multiply-adds. The ten
// scalars are made once per op: on the host (bias corrections 1 - b^t in double, as the CPU
// backend) and uploaded, or, in the device-scalar form, by a one-invocation kernel from the lr and
// step tensors (-expm1(t log b)), which also writes the new step; the host never waits. The
// update writes into copies of p, m and v.
#include <cmath>
#include <cstring>

#include "copy.hpp"
#include "glsl.hpp"
#include "ember/core/adam_inputs.hpp"

namespace ember::vulkan {

namespace {

bool adam_dtypes(const VulkanBackend& be, const Op& op) {
  // (the device-scalar form computes its scalars with double arithmetic)
  return is_float(op.in(0).dtype) && be.has_dtype(op.in(0).dtype) &&
         (op.inputs.size() != 6 || be.has_dtype(DType::f64));
}

struct AdamParams {
  uint32_t n = 0;
  int32_t off_g = 0, decoupled = 0, maximize = 0;
  uint32_t lr[2] = {}, wd[2] = {}, b1[2] = {}, b2[2] = {}, eps[2] = {}, log_b1[2] = {}, log_b2[2] = {};
  int32_t off_lr = 0, off_step = 0;
};
static_assert(sizeof(AdamParams) == 80);

const char* kAdamParams = R"GLSL(
struct AdamParams {
  uint n; int off_g; int decoupled; int maximize;
  uvec2 lr; uvec2 wd; uvec2 b1; uvec2 b2; uvec2 eps; uvec2 log_b1; uvec2 log_b2; int off_lr; int off_step;
};
layout(std430, binding = 6) readonly buffer AdamParamsBuf { AdamParams r; };
)GLSL";

void put(uint32_t* dst, double v) { std::memcpy(dst, &v, 8); }

// The device-scalar form's scalars from lr and step (f32 0-d): s[0..9] in C, and step + 1.
std::string scalars_source(DType c) {
  const bool dbl = c == DType::f64;
  std::string s = glsl::header({c, DType::f64}, false);
  s += kAdamParams;
  s += "#define C " + std::string(dbl ? "double" : "float") + "\n";
  s += glsl::buffer(0, c, "s_", false);
  s += glsl::buffer(1, DType::f32, "lr_", true);
  s += glsl::buffer(2, DType::f32, "step_", true);
  s += glsl::buffer(3, DType::f32, "t_", false);
  s += R"GLSL(
void main() {
  if (gl_GlobalInvocationID.x != 0u) return;
  precise C lr = C(packDouble2x32(r.lr) * double(lr_[r.off_lr]));
  precise float tf = step_[r.off_step] + 1.0;
  precise C t = C(tf);
  precise C bc1 = -ember_expm1(t * C(packDouble2x32(r.log_b1)));
  precise C bc2 = -ember_expm1(t * C(packDouble2x32(r.log_b2)));
  C wd = C(packDouble2x32(r.wd));
  precise C lr_wd = lr * wd;
  precise C one_minus_lr_wd = C(1) - lr * wd;
  s_[0] = lr_wd;
  s_[1] = one_minus_lr_wd;
  s_[2] = wd;
  s_[3] = C(packDouble2x32(r.b1));
  s_[4] = C(1.0LF - packDouble2x32(r.b1));
  s_[5] = C(packDouble2x32(r.b2));
  s_[6] = C(1.0LF - packDouble2x32(r.b2));
  s_[7] = lr / bc1;
  s_[8] = sqrt(bc2);
  s_[9] = C(packDouble2x32(r.eps));
  t_[0] = tf;
}
)GLSL";
  return s;
}

std::string update_source(DType dt) {
  const DType c = dt == DType::f64 ? DType::f64 : DType::f32;
  std::string s = glsl::header({dt, c}, false);
  s += kAdamParams;
  s += "#define C " + glsl::compute_type(dt) + "\n";
  s += glsl::buffer(0, dt, "p_", false);
  s += glsl::buffer(1, dt, "g_", true);
  s += glsl::buffer(2, dt, "m_", false);
  s += glsl::buffer(3, dt, "v_", false);
  s += glsl::buffer(4, c, "s_", true);
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  C one_minus_lr_wd = s_[1], wd = s_[2], b1 = s_[3], omb1 = s_[4], b2 = s_[5], omb2 = s_[6];\n"
       "  C step_size = s_[7], bc2_sqrt = s_[8], eps = s_[9];\n"
       "  for (uint i = gl_GlobalInvocationID.x; i < r.n; i += step) {\n"
       "    precise C p = " +
       glsl::load(dt, "p_[i]") +
       ";\n"
       "    precise C g = " +
       glsl::load(dt, "g_[r.off_g + int(i)]") +
       ";\n"
       "    precise C m = " +
       glsl::load(dt, "m_[i]") +
       ";\n"
       "    precise C v = " +
       glsl::load(dt, "v_[i]") +
       ";\n"
       "    if (r.maximize != 0) g = -g;\n"
       "    if (r.decoupled != 0) p = p * one_minus_lr_wd;\n"
       "    else if (wd != C(0)) g = g + p * wd;\n"
       "    m = m * b1 + g * omb1;\n"
       "    v = v * b2 + (g * omb2) * g;\n"
       "    precise C denom = sqrt(v) / bc2_sqrt + eps;\n"
       "    p = p + (m * -step_size) / denom;\n"
       "    p_[i] = " +
       glsl::store(dt, "p") + ";\n    m_[i] = " + glsl::store(dt, "m") +
       ";\n"
       "    v_[i] = " +
       glsl::store(dt, "v") + ";\n  }\n}\n";
  return s;
}

// The host form's scalars, as the CPU backend's AdamScalars::host.
template <class C>
TensorData host_scalars(const AdamAttrs& a, DType c) {
  const double t = double(a.step), lr = a.lr;
  const double bc1 = 1 - std::pow(a.beta1, t), bc2 = 1 - std::pow(a.beta2, t);
  std::vector<double> v = {double(C(lr * a.weight_decay)), double(C(1 - lr * a.weight_decay)),
                           double(C(a.weight_decay)),      double(C(a.beta1)),
                           double(C(1 - a.beta1)),         double(C(a.beta2)),
                           double(C(1 - a.beta2)),         double(C(lr / bc1)),
                           double(C(std::sqrt(bc2))),      double(C(a.eps))};
  return TensorData::from_doubles(v, Shape{10}, c);
}

std::vector<PrimitivePtr> adam_step_kernel(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<AdamAttrs>();
  const AdamInputs form = adam_inputs(op.inputs.size(), a);
  const bool device_scalars = form.device_scalars;
  const size_t k = form.params;
  const DType dt = op.in(0).dtype;
  const DType c = dt == DType::f64 ? DType::f64 : DType::f32;
  AdamParams p;
  p.decoupled = a.decoupled ? 1 : 0;
  p.maximize = a.maximize ? 1 : 0;
  put(p.lr, a.lr);
  put(p.wd, a.weight_decay);
  put(p.b1, a.beta1);
  put(p.b2, a.beta2);
  put(p.eps, a.eps);
  put(p.log_b1, double(float(std::log(a.beta1))));
  put(p.log_b2, double(float(std::log(a.beta2))));
  if (c == DType::f64) put(p.log_b1, std::log(a.beta1)), put(p.log_b2, std::log(a.beta2));
  // the scalars: one set from the attributes (host form), or one per parameter from the lr and
  // its step (device-scalar form), which also writes the parameter's new step
  VkPipeline sp = nullptr;
  VulkanTensorPtr lr;
  if (device_scalars) {
    lr = be.contiguous(op.inputs[form.lr()]);
    p.off_lr = int32_t(lr->offset);
    sp = be.shaders().get("adam_step", "adam_step/scalars/" + std::string(dtype_name(c)),
                          [c] { return scalars_source(c); });
  }
  VulkanTensorPtr scalars;
  if (!device_scalars) scalars = as_vk_ptr(be.write(c == DType::f64 ? host_scalars<double>(a, c) : host_scalars<float>(a, c)));
  std::vector<PrimitivePtr> new_steps;
  VkPipeline up =
      be.shaders().get("adam_step", "adam_step/" + std::string(dtype_name(dt)), [dt] { return update_source(dt); });
  std::vector<PrimitivePtr> results;
  for (size_t q = 0; q < k; ++q) {
    if (device_scalars) {
      VulkanTensorPtr st = be.contiguous(op.inputs[form.step(q)]);
      p.off_step = int32_t(st->offset);
      scalars = be.alloc(TensorMeta{Shape{10}, c});
      VulkanTensorPtr new_step = be.alloc(op.outputs[3 * k + q]);
      be.dispatch(sp, {scalars->buffer, lr->buffer, st->buffer, new_step->buffer, nullptr, nullptr}, &p, sizeof p, 1);
      new_steps.push_back(new_step);
    }
    VulkanTensorPtr outs[3];
    const size_t src[3] = {4 * q, 4 * q + 2, 4 * q + 3};
    for (size_t o = 0; o < 3; ++o) {
      outs[o] = be.alloc(op.outputs[3 * q + o]);
      copy_strided(be, operand_of(*outs[o]), operand_of(as_vk(op.inputs[src[o]])), outs[o]->shape());
    }
    VulkanTensorPtr g = be.contiguous(op.inputs[4 * q + 1]);
    const int64_t n = outs[0]->numel();
    EMBER_CHECK(n <= INT32_MAX, "adam_step: too many elements for 32-bit indexing");
    if (n > 0) {
      p.n = uint32_t(n);
      p.off_g = int32_t(g->offset);
      be.dispatch(up, {outs[0]->buffer, g->buffer, outs[1]->buffer, outs[2]->buffer, scalars->buffer, nullptr}, &p,
                  sizeof p, be.groups_for(n));
    }
    results.insert(results.end(), {outs[0], outs[1], outs[2]});
  }
  results.insert(results.end(), new_steps.begin(), new_steps.end());
  return results;
}

}  // namespace

void register_optim_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::adam_step)] = adam_step_kernel;
  d[size_t(OpKind::adam_step)] = adam_dtypes;
}

}  // namespace ember::vulkan
