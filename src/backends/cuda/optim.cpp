// Fused optimizer updates on the GPU: adam_step, one Adam / AdamW update of a parameter in one
// kernel, or of many (a multi-tensor op) in one launch per 32 tensors (adam_multi) (the CPU backend's src/backends/cpu/optim.cpp has the formula and its order; the
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

// The tensors of one adam_multi launch, laid out alike on the host (void pointers) and in the
// kernel's source (T pointers), from one field list.
constexpr int kAdamMulti = 32;
#define EMBER_ADAM_TENSORS(P, CP)                                                                  \
  P po[32];                                                                                      \
  P mo[32];                                                                                      \
  P vo[32];                                                                                      \
  CP p[32];                                                                                      \
  CP g[32];                                                                                      \
  CP m[32];                                                                                      \
  CP v[32];                                                                                      \
  int64_t n[32];                                                                                 \
  int64_t first[33];                                                                             \
  int32_t count;
struct AdamTensors {
  EMBER_ADAM_TENSORS(void*, const void*)
};
#define EMBER_STRINGIZE2(...) #__VA_ARGS__
#define EMBER_STRINGIZE(...) EMBER_STRINGIZE2(__VA_ARGS__)
const char* kAdamTensors = "struct AdamTensors { " EMBER_STRINGIZE(EMBER_ADAM_TENSORS(T*, const T*)) " };\n";

const char* kAdamKernel = R"CUDA(
extern "C" __global__ void adam_step(T* __restrict__ po, T* __restrict__ mo, T* __restrict__ vo,
                                     const T* __restrict__ p, const T* __restrict__ g, const T* __restrict__ m,
                                     const T* __restrict__ v, int64_t n, C one_minus_lr_wd, C wd, C b1,
                                     C one_minus_b1, C b2, C one_minus_b2, C step_size, C bc2_sqrt, C eps,
                                     int32_t decoupled, int32_t maximize) {
  adam_update(po, mo, vo, p, g, m, v, n, one_minus_lr_wd, wd, b1, one_minus_b1, b2, one_minus_b2, step_size, bc2_sqrt,
              eps, decoupled, maximize, blockIdx.x * (int64_t)blockDim.x + threadIdx.x, (int64_t)gridDim.x * blockDim.x);
}

// Up to 32 tensors in one launch (AdamTensors, kAdamTensors): blocks [first[k], first[k + 1])
// update tensor k.
extern "C" __global__ void adam_multi(AdamTensors t, C one_minus_lr_wd, C wd, C b1, C one_minus_b1, C b2,
                                      C one_minus_b2, C step_size, C bc2_sqrt, C eps, int32_t decoupled,
                                      int32_t maximize) {
  int k = 0;
  while (k + 1 < t.count && t.first[k + 1] <= (int64_t)blockIdx.x) ++k;
  const int64_t b = (int64_t)blockIdx.x - t.first[k], nb = t.first[k + 1] - t.first[k];
  adam_update(t.po[k], t.mo[k], t.vo[k], t.p[k], t.g[k], t.m[k], t.v[k], t.n[k], one_minus_lr_wd, wd, b1,
              one_minus_b1, b2, one_minus_b2, step_size, bc2_sqrt, eps, decoupled, maximize,
              b * blockDim.x + threadIdx.x, nb * blockDim.x);
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
              eps, decoupled, maximize, blockIdx.x * (int64_t)blockDim.x + threadIdx.x, (int64_t)gridDim.x * blockDim.x);
}

extern "C" __global__ void adam_count(float* step_out, const float* step_in) { step_out[0] = step_in[0] + 1.0f; }
)CUDA";

const char* kAdamUpdate = R"CUDA(
__device__ __forceinline__ void adam_update(T* __restrict__ po, T* __restrict__ mo, T* __restrict__ vo,
                                            const T* __restrict__ p, const T* __restrict__ g, const T* __restrict__ m,
                                            const T* __restrict__ v, int64_t n, C one_minus_lr_wd, C wd, C b1,
                                            C one_minus_b1, C b2, C one_minus_b2, C step_size, C bc2_sqrt, C eps,
                                            int32_t decoupled, int32_t maximize, int64_t i0, int64_t stride) {
  for (int64_t i = i0; i < n; i += stride) {
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

// The host form's scalars (in the compute type C), as the kernels take them after the tensors.
template <class C>
struct HostScalars {
  C one_minus_lr_wd, wd, b1, one_minus_b1, b2, one_minus_b2, step_size, bc2_sqrt, eps;
  int32_t decoupled, maximize;
  explicit HostScalars(const AdamAttrs& a) {
    const double t = double(a.step);
    one_minus_lr_wd = C(1 - a.lr * a.weight_decay);
    wd = C(a.weight_decay);
    b1 = C(a.beta1);
    one_minus_b1 = C(1 - a.beta1);
    b2 = C(a.beta2);
    one_minus_b2 = C(1 - a.beta2);
    step_size = C(a.lr / (1 - std::pow(a.beta1, t)));
    bc2_sqrt = C(std::sqrt(1 - std::pow(a.beta2, t)));
    eps = C(a.eps);
    decoupled = int32_t(a.decoupled);
    maximize = int32_t(a.maximize);
  }
};

template <class C>
void launch_adam(CudaBackend& be, CUfunction f, const AdamAttrs& a, void* const* out, const void* const* in,
                 int64_t n) {
  const HostScalars<C> s(a);
  constexpr int kThreads = 256;
  be.launch(f, grid_for(be, n, kThreads, 4), kThreads, 0, out[0], out[1], out[2], in[0], in[1], in[2], in[3], n,
            s.one_minus_lr_wd, s.wd, s.b1, s.one_minus_b1, s.b2, s.one_minus_b2, s.step_size, s.bc2_sqrt, s.eps,
            s.decoupled, s.maximize);
}


// The k tensors of a multi-tensor op (in: 4 per tensor, out: 3 per tensor), kAdamMulti per
// launch, each with the blocks a single update of it would have.
template <class C>
void launch_adam_multi(CudaBackend& be, CUfunction f, const AdamAttrs& a, const std::vector<void*>& out,
                       const std::vector<const void*>& in, const std::vector<int64_t>& n) {
  const HostScalars<C> s(a);
  constexpr int kThreads = 256;
  for (size_t q0 = 0; q0 < n.size(); q0 += kAdamMulti) {
    AdamTensors t{};
    int64_t blocks = 0;
    for (size_t q = q0; q < n.size() && q < q0 + kAdamMulti; ++q) {
      if (n[q] == 0) continue;
      const int c = t.count++;
      t.po[c] = out[3 * q], t.mo[c] = out[3 * q + 1], t.vo[c] = out[3 * q + 2];
      t.p[c] = in[4 * q], t.g[c] = in[4 * q + 1], t.m[c] = in[4 * q + 2], t.v[c] = in[4 * q + 3];
      t.n[c] = n[q];
      t.first[c] = blocks;
      blocks += grid_for(be, n[q], kThreads, 4);
      t.first[c + 1] = blocks;
    }
    if (t.count == 0) continue;
    be.launch(f, unsigned(blocks), kThreads, 0, t, s.one_minus_lr_wd, s.wd, s.b1, s.one_minus_b1, s.b2,
              s.one_minus_b2, s.step_size, s.bc2_sqrt, s.eps, s.decoupled, s.maximize);
  }
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
  // Outputs (param, exp_avg, exp_avg_sq) take over the buffers of inputs 0, 2, 3 (of each
  // quadruple) when the op holds them alone; the grad is only read. No handle is kept here, so
  // reuse can happen.
  const bool device_scalars = op.inputs.size() == 6;
  const size_t k = device_scalars ? 1 : op.inputs.size() / 4;
  std::vector<const void*> in(op.inputs.size());
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    op.inputs[i] = contiguous(be, op.inputs[i]);
    in[i] = static_cast<const CudaTensor&>(*op.inputs[i]).raw();
  }
  std::vector<PrimitivePtr> results;
  std::vector<void*> outp;
  std::vector<int64_t> n;
  for (size_t q = 0; q < k; ++q) {
    const size_t src[3] = {4 * q, 4 * q + 2, 4 * q + 3};
    for (size_t o = 0; o < 3; ++o) {
      CudaTensorPtr t = output_reusing(be, op, src[o], op.outputs[3 * q + o]);
      outp.push_back(t->raw());
      results.push_back(std::move(t));
    }
    n.push_back(op.outputs[3 * q].shape.numel());
  }
  auto source = [&] { return adam_source(dt); };
  if (!device_scalars) {
    if (k == 1) {
      if (n[0] > 0) {
        CUfunction f = be.jit().get(adam_key(dt), "adam_step", source);
        if (dt == DType::f64) launch_adam<double>(be, f, a, outp.data(), in.data(), n[0]);
        else launch_adam<float>(be, f, a, outp.data(), in.data(), n[0]);
      }
    } else {
      CUfunction f = be.jit().get(adam_key(dt), "adam_multi", source);
      if (dt == DType::f64) launch_adam_multi<double>(be, f, a, outp, in, n);
      else launch_adam_multi<float>(be, f, a, outp, in, n);
    }
    return results;
  }
  if (n[0] > 0) {
    CUfunction f = be.jit().get(adam_key(dt), "adam_step_dev", source);
    if (dt == DType::f64) launch_adam_dev<double>(be, f, a, outp.data(), in.data(), n[0]);
    else launch_adam_dev<float>(be, f, a, outp.data(), in.data(), n[0]);
  }
  // the new step after the update, so that it may take the buffer of the step the update read
  CudaTensorPtr step = output_reusing(be, op, 5, op.outputs[3]);
  be.launch(be.jit().get(adam_key(dt), "adam_count", source), 1, 1, 0, step->raw(), in[5]);
  results.push_back(step);
  return results;
}

}  // namespace

std::string adam_source(DType dt) {
  EMBER_CHECK(is_float(dt), "adam_step: ", dt, " is not a floating dtype");
  return "typedef " + std::string(device_type(dt)) + " T;\ntypedef " + compute_type(dt) + " C;\n" + kAdamUpdate +
         kAdamTensors + kAdamKernel;
}

std::vector<std::pair<std::string, std::string>> optim_variants() {
  std::vector<std::pair<std::string, std::string>> v;
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16}) v.emplace_back(adam_key(dt), adam_source(dt));
  return v;
}

void register_optim_kernels(KernelTable& t) { t[size_t(OpKind::adam_step)] = adam_step_kernel; }

}  // namespace ember::cuda
