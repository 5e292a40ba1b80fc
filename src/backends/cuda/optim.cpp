// Fused optimizer updates on the GPU: adam_step, one Adam / AdamW update of a parameter in one
// kernel (the CPU backend's src/backends/cpu/optim.cpp has the formula and its order; the
// arithmetic here is the same, in f32 for f32 / f16 / bf16 and f64 for f64). The per-step
// scalars are kernel arguments, so one compiled kernel per dtype serves every step. The
// device-scalar form (lr and step inputs: torch's capturable=True) runs adam_step_dev, which
// reads them from device memory and computes the scalars in C (bias corrections as
// -expm1(t log b), free of the cancellation of 1 - b^t in f32), and then adam_count, which
// writes step + 1 (after the update in stream order, so it may overwrite the step it read).
#include <cmath>

#include "cuda_backend.hpp"
#include "ember/core/error.hpp"
#include "jit.hpp"
#include "optim_sources.hpp"

namespace ember::cuda {

namespace {

const char* kAdamKernel = R"CUDA(
extern "C" __global__ void adam_step(T* __restrict__ po, T* __restrict__ mo, T* __restrict__ vo,
                                     const T* __restrict__ p, const T* __restrict__ g, const T* __restrict__ m,
                                     const T* __restrict__ v, int64_t n, C one_minus_lr_wd, C wd, C b1,
                                     C one_minus_b1, C b2, C one_minus_b2, C step_size, C bc2_sqrt, C eps,
                                     int32_t decoupled, int32_t maximize) {
  adam_update(po, mo, vo, p, g, m, v, n, one_minus_lr_wd, wd, b1, one_minus_b1, b2, one_minus_b2, step_size, bc2_sqrt,
              eps, decoupled, maximize);
}

extern "C" __global__ void adam_step_dev(T* __restrict__ po, T* __restrict__ mo, T* __restrict__ vo,
                                         const T* __restrict__ p, const T* __restrict__ g, const T* __restrict__ m,
                                         const T* __restrict__ v, int64_t n, const float* __restrict__ lr_in,
                                         const float* __restrict__ step_in, C lr_scale, C wd, C b1, C one_minus_b1,
                                         C b2, C one_minus_b2, C ln_b1, C ln_b2, C eps, int32_t decoupled,
                                         int32_t maximize) {
  const C lr = lr_scale * C(lr_in[0]), t = C(step_in[0]) + C(1);
  const C step_size = lr / -expm1(t * ln_b1);
  const C bc2_sqrt = sqrt(-expm1(t * ln_b2));
  adam_update(po, mo, vo, p, g, m, v, n, C(1) - lr * wd, wd, b1, one_minus_b1, b2, one_minus_b2, step_size, bc2_sqrt,
              eps, decoupled, maximize);
}

extern "C" __global__ void adam_count(float* step_out, const float* step_in) { step_out[0] = step_in[0] + 1.0f; }
)CUDA";

const char* kAdamUpdate = R"CUDA(
__device__ __forceinline__ void adam_update(T* __restrict__ po, T* __restrict__ mo, T* __restrict__ vo,
                                            const T* __restrict__ p, const T* __restrict__ g, const T* __restrict__ m,
                                            const T* __restrict__ v, int64_t n, C one_minus_lr_wd, C wd, C b1,
                                            C one_minus_b1, C b2, C one_minus_b2, C step_size, C bc2_sqrt, C eps,
                                            int32_t decoupled, int32_t maximize) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    C pi = (C)p[i], gi = (C)g[i], mi = (C)m[i], vi = (C)v[i];
    if (maximize) gi = -gi;
    if (decoupled) pi = pi * one_minus_lr_wd;
    else if (wd != (C)0) gi = gi + pi * wd;
    mi = mi * b1 + gi * one_minus_b1;
    vi = vi * b2 + (gi * one_minus_b2) * gi;
    C denom = sqrt(vi) / bc2_sqrt + eps;
    pi = pi + (mi * -step_size) / denom;
    po[i] = T(pi);
    mo[i] = T(mi);
    vo[i] = T(vi);
  }
}
)CUDA";

std::string adam_key(DType dt) { return "adam_step/" + std::string(dtype_name(dt)); }

template <class C>
void launch_adam(CudaBackend& be, CUfunction f, const AdamAttrs& a, void* const* out, const void* const* in,
                 int64_t n) {
  const double t = double(a.step);
  const double step_size = a.lr / (1 - std::pow(a.beta1, t));
  const double bc2_sqrt = std::sqrt(1 - std::pow(a.beta2, t));
  constexpr int kThreads = 256;
  be.launch(f, grid_for(be, n, kThreads, 4), kThreads, 0, out[0], out[1], out[2], in[0], in[1], in[2], in[3], n,
            C(1 - a.lr * a.weight_decay), C(a.weight_decay), C(a.beta1), C(1 - a.beta1), C(a.beta2),
            C(1 - a.beta2), C(step_size), C(bc2_sqrt), C(a.eps), int32_t(a.decoupled), int32_t(a.maximize));
}

template <class C>
void launch_adam_dev(CudaBackend& be, CUfunction f, const AdamAttrs& a, void* const* out, const void* const* in,
                     int64_t n) {
  constexpr int kThreads = 256;
  be.launch(f, grid_for(be, n, kThreads, 4), kThreads, 0, out[0], out[1], out[2], in[0], in[1], in[2], in[3], n,
            in[4], in[5], C(a.lr), C(a.weight_decay), C(a.beta1), C(1 - a.beta1), C(a.beta2), C(1 - a.beta2),
            C(std::log(a.beta1)), C(std::log(a.beta2)), C(a.eps), int32_t(a.decoupled), int32_t(a.maximize));
}

std::vector<PrimitivePtr> adam_step_kernel(CudaBackend& be, Op& op) {
  const auto& a = op.attr<AdamAttrs>();
  const DType dt = op.outputs[0].dtype;
  // Outputs (param, exp_avg, exp_avg_sq) take over the buffers of inputs 0, 2, 3 when the op
  // holds them alone; the grad is only read. No handle is kept here, so reuse can happen.
  const bool device_scalars = op.inputs.size() == 6;
  const void* in[6];
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    op.inputs[i] = contiguous(be, op.inputs[i]);
    in[i] = static_cast<const CudaTensor&>(*op.inputs[i]).raw();
  }
  const size_t src[3] = {0, 2, 3};
  CudaTensorPtr out[3];
  void* outp[3];
  for (size_t o = 0; o < 3; ++o) {
    out[o] = output_reusing(be, op, src[o], op.outputs[o]);
    outp[o] = out[o]->raw();
  }
  const int64_t n = op.outputs[0].shape.numel();
  auto source = [&] { return adam_source(dt); };
  if (!device_scalars) {
    if (n > 0) {
      CUfunction f = be.jit().get(adam_key(dt), "adam_step", source);
      if (dt == DType::f64) launch_adam<double>(be, f, a, outp, in, n);
      else launch_adam<float>(be, f, a, outp, in, n);
    }
    return {out[0], out[1], out[2]};
  }
  if (n > 0) {
    CUfunction f = be.jit().get(adam_key(dt), "adam_step_dev", source);
    if (dt == DType::f64) launch_adam_dev<double>(be, f, a, outp, in, n);
    else launch_adam_dev<float>(be, f, a, outp, in, n);
  }
  // the new step after the update, so that it may take the buffer of the step the update read
  CudaTensorPtr step = output_reusing(be, op, 5, op.outputs[3]);
  be.launch(be.jit().get(adam_key(dt), "adam_count", source), 1, 1, 0, step->raw(), in[5]);
  return {out[0], out[1], out[2], step};
}

}  // namespace

std::string adam_source(DType dt) {
  EMBER_CHECK(is_float(dt), "adam_step: ", dt, " is not a floating dtype");
  return "typedef " + std::string(device_type(dt)) + " T;\ntypedef " + compute_type(dt) + " C;\n" + kAdamUpdate +
         kAdamKernel;
}

std::vector<std::pair<std::string, std::string>> optim_variants() {
  std::vector<std::pair<std::string, std::string>> v;
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16}) v.emplace_back(adam_key(dt), adam_source(dt));
  return v;
}

void register_optim_kernels(KernelTable& t) { t[size_t(OpKind::adam_step)] = adam_step_kernel; }

}  // namespace ember::cuda
