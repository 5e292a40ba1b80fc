// Fused optimizer updates on the GPU (and clipping's multi-tensor norm_multi and mul_multi, below
// MultiTensors): adam_step, one Adam / AdamW update of a parameter in one
// kernel, or of many (a multi-tensor op) in one launch per 32 tensors (adam_multi) (the CPU backend's src/backends/cpu/optim.cpp has the formula and its order; the
// arithmetic here is the same, in f32 for f32 / f16 / bf16 and f64 for f64). The per-step
// scalars are kernel arguments, so one compiled kernel per dtype serves every step. The
// device-scalar form (lr and step inputs: torch's capturable=True) runs adam_step_dev, which
// reads them from device memory and computes the scalars in C (bias corrections as
// -expm1(t log b), free of the cancellation of 1 - b^t in f32), and then adam_count, which
// writes step + 1 (after the update in stream order, so it may overwrite the step it read).
#include <algorithm>
#include <cmath>

#include "cuda_backend.hpp"
#include "ember/core/adam_inputs.hpp"
#include "ember/core/error.hpp"
#include "jit.hpp"
#include "optim_sources.hpp"
#include "reduce_sources.hpp"

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
  float* so[32];                                                                                 \
  const float* si[32];                                                                           \
  int32_t count;
struct AdamTensors {
  EMBER_ADAM_TENSORS(void*, const void*)
};
#define EMBER_STRINGIZE2(...) #__VA_ARGS__
#define EMBER_STRINGIZE(...) EMBER_STRINGIZE2(__VA_ARGS__)
const char* kAdamTensors = "struct AdamTensors { " EMBER_STRINGIZE(EMBER_ADAM_TENSORS(T*, const T*)) " };\n";

// The tensors of one norm_multi or mul_multi launch (y: mul_multi's outputs), from one field list
// as AdamTensors; `base` is the index of the launch's first tensor in the op.
constexpr int kMulti = 64;
#define EMBER_MULTI_TENSORS(P, CP)                                                                 \
  CP x[64];                                                                                      \
  P y[64];                                                                                       \
  int64_t n[64];                                                                                 \
  int64_t first[65];                                                                             \
  int32_t count;                                                                                 \
  int32_t base;
struct MultiTensors {
  EMBER_MULTI_TENSORS(void*, const void*)
};
const char* kMultiTensors = "struct MultiTensors { " EMBER_STRINGIZE(EMBER_MULTI_TENSORS(T*, const T*)) " };\n";

// norm_multi in two launches per 64 tensors: norm_part writes one partial (sum of |x|^p, or max
// |x|) per block, norm_final merges each tensor's partials in block order (deterministic) and
// takes the root. mode: 0 p = 2, 1 p = 1, 2 any other p, 3 p = inf. mul_multi: y = x s. Both read
// 16 bytes at a time where a tensor is 16-byte aligned.
const char* kMultiKernels = R"CUDA(
union VecT { uint4 u; T v[VW]; };
__device__ __forceinline__ int tensor_of(const MultiTensors& t) {
  int k = 0;
  while (k + 1 < t.count && t.first[k + 1] <= (int64_t)blockIdx.x) ++k;
  return k;
}
// f(i, v) for each of this thread's 16-byte vectors i of x (i0, i0 + stride, ... below nv), with
// four loads in flight per thread.
template <class F>
__device__ __forceinline__ void each_vector(const T* x, int64_t nv, int64_t i0, int64_t stride, F f) {
  for (int64_t i = i0; i < nv; i += 4 * stride) {
    VecT v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (i + u * stride < nv) v[u].u = ((const uint4*)x)[i + u * stride];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (i + u * stride < nv) f(i + u * stride, v[u]);
  }
}
__device__ __forceinline__ C norm_term(C acc, C v, C p, int mode) {
  v = m_abs(v);
  if (mode == 3) return m_nanmax(acc, v);
  return acc + (mode == 0 ? v * v : mode == 1 ? v : m_pow(v, p));
}
extern "C" __global__ void norm_part(MultiTensors t, C p, int32_t mode, C* __restrict__ part) {
  const int k = tensor_of(t);
  const int64_t b = (int64_t)blockIdx.x - t.first[k], nb = t.first[k + 1] - t.first[k];
  const T* x = t.x[k];
  const int64_t n = t.n[k], i0 = b * blockDim.x + threadIdx.x, stride = nb * blockDim.x;
  C acc = C(0);
  int64_t done = 0;
  if (((unsigned long long)x & 15) == 0) {
    done = n / VW * VW;
    each_vector(x, n / VW, i0, stride, [&](int64_t, VecT& v) {
#pragma unroll
      for (int j = 0; j < VW; ++j) acc = norm_term(acc, C(v.v[j]), p, mode);
    });
  }
  for (int64_t i = done + i0; i < n; i += stride) acc = norm_term(acc, C(x[i]), p, mode);
  __shared__ C red[32];
  acc = mode == 3 ? group_max(acc, blockDim.x, red) : group_sum(acc, blockDim.x, red);
  if (threadIdx.x == 0) part[blockIdx.x] = acc;
}
extern "C" __global__ void norm_final(MultiTensors t, C p, int32_t mode, const C* __restrict__ part,
                                      T* __restrict__ out) {
  const int k = blockIdx.x;
  C acc = C(0);
  for (int64_t i = t.first[k] + threadIdx.x; i < t.first[k + 1]; i += blockDim.x)
    acc = mode == 3 ? m_nanmax(acc, part[i]) : acc + part[i];
  __shared__ C red[32];
  acc = mode == 3 ? group_max(acc, blockDim.x, red) : group_sum(acc, blockDim.x, red);
  if (threadIdx.x == 0) out[t.base + k] = T(mode == 0 ? m_sqrt(acc) : mode == 2 ? m_pow(acc, C(1) / p) : acc);
}
extern "C" __global__ void mul_multi(MultiTensors t, const T* s) {
  const int k = tensor_of(t);
  const int64_t b = (int64_t)blockIdx.x - t.first[k], nb = t.first[k + 1] - t.first[k];
  const T* x = t.x[k];
  T* y = t.y[k];
  const C sv = C(s[0]);
  const int64_t n = t.n[k], i0 = b * blockDim.x + threadIdx.x, stride = nb * blockDim.x;
  int64_t done = 0;
  if ((((unsigned long long)x | (unsigned long long)y) & 15) == 0) {
    done = n / VW * VW;
    each_vector(x, n / VW, i0, stride, [&](int64_t i, VecT& v) {
#pragma unroll
      for (int j = 0; j < VW; ++j) v.v[j] = T(C(v.v[j]) * sv);
      ((uint4*)y)[i] = v.u;
    });
  }
  for (int64_t i = done + i0; i < n; i += stride) y[i] = T(C(x[i]) * sv);
}
)CUDA";

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

// The device-scalar form of up to 32 tensors in one launch (adam_multi's blocks), each reading
// its own step si[k]; adam_count_multi then writes their new steps so[k] (a thread each).
extern "C" __global__ void adam_multi_dev(AdamTensors t, const float* __restrict__ lr_in, C lr_scale, C wd, C b1,
                                          C one_minus_b1, C b2, C one_minus_b2, C ln_b1, C ln_b2, C eps,
                                          int32_t decoupled, int32_t maximize) {
  int k = 0;
  while (k + 1 < t.count && t.first[k + 1] <= (int64_t)blockIdx.x) ++k;
  const int64_t b = (int64_t)blockIdx.x - t.first[k], nb = t.first[k + 1] - t.first[k];
  const C lr = lr_scale * C(lr_in[0]), tk = C(t.si[k][0]) + C(1);
  const C step_size = lr / -expm1(tk * ln_b1);
  const C bc2_sqrt = sqrt(-expm1(tk * ln_b2));
  adam_update(t.po[k], t.mo[k], t.vo[k], t.p[k], t.g[k], t.m[k], t.v[k], t.n[k], C(1) - lr * wd, wd, b1,
              one_minus_b1, b2, one_minus_b2, step_size, bc2_sqrt, eps, decoupled, maximize,
              b * blockDim.x + threadIdx.x, nb * blockDim.x);
}

extern "C" __global__ void adam_count_multi(AdamTensors t) {
  if ((int)threadIdx.x < t.count) t.so[threadIdx.x][0] = t.si[threadIdx.x][0] + 1.0f;
}
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

// The device-scalar form of k tensors: per kAdamMulti of them, one adam_multi_dev launch (the
// blocks a single update of each would have; none for empty tensors) and, after it in stream
// order, one adam_count_multi, so that a new step may take the buffer of the step it read.
template <class C>
void launch_adam_multi_dev(CudaBackend& be, CUfunction update, CUfunction count, const AdamAttrs& a,
                           const std::vector<void*>& out, const std::vector<const void*>& in,
                           const std::vector<int64_t>& n, const void* lr, const std::vector<const void*>& steps_in,
                           const std::vector<void*>& steps_out) {
  constexpr int kThreads = 256;
  for (size_t q0 = 0; q0 < n.size(); q0 += kAdamMulti) {
    AdamTensors t{};
    int64_t blocks = 0;
    for (size_t q = q0; q < n.size() && q < q0 + kAdamMulti; ++q) {
      const int c = t.count++;
      t.po[c] = out[3 * q], t.mo[c] = out[3 * q + 1], t.vo[c] = out[3 * q + 2];
      t.p[c] = in[4 * q], t.g[c] = in[4 * q + 1], t.m[c] = in[4 * q + 2], t.v[c] = in[4 * q + 3];
      t.n[c] = n[q];
      t.si[c] = static_cast<const float*>(steps_in[q]);
      t.so[c] = static_cast<float*>(steps_out[q]);
      t.first[c] = blocks;
      if (n[q] > 0) blocks += grid_for(be, n[q], kThreads, 4);
      t.first[c + 1] = blocks;
    }
    if (blocks > 0)
      be.launch(update, unsigned(blocks), kThreads, 0, t, lr, C(a.lr), C(a.weight_decay), C(a.beta1), C(1 - a.beta1),
                C(a.beta2), C(1 - a.beta2), C(std::log(a.beta1)), C(std::log(a.beta2)), C(a.eps),
                int32_t(a.decoupled), int32_t(a.maximize));
    be.launch(count, 1, kAdamMulti, 0, t);
  }
}

std::vector<PrimitivePtr> adam_step_kernel(CudaBackend& be, Op& op) {
  const auto& a = op.attr<AdamAttrs>();
  const DType dt = op.outputs[0].dtype;
  // Outputs (param, exp_avg, exp_avg_sq) take over the buffers of inputs 0, 2, 3 (of each
  // quadruple) when the op holds them alone; the grad is only read. No handle is kept here, so
  // reuse can happen.
  const AdamInputs form = adam_inputs(op.inputs.size(), a);
  const bool device_scalars = form.device_scalars;
  const size_t k = form.params;
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
  if (k > 1 || op.inputs.size() != 6) {  // several parameters (or one in the general layout)
    std::vector<const void*> steps_in;
    std::vector<void*> steps_out;
    std::vector<CudaTensorPtr> steps;
    for (size_t q = 0; q < k; ++q) {
      steps_in.push_back(in[form.step(q)]);
      steps.push_back(output_reusing(be, op, form.step(q), op.outputs[3 * k + q]));
      steps_out.push_back(steps.back()->raw());
    }
    CUfunction update = be.jit().get(adam_key(dt), "adam_multi_dev", source);
    CUfunction count = be.jit().get(adam_key(dt), "adam_count_multi", source);
    if (dt == DType::f64)
      launch_adam_multi_dev<double>(be, update, count, a, outp, in, n, in[form.lr()], steps_in, steps_out);
    else
      launch_adam_multi_dev<float>(be, update, count, a, outp, in, n, in[form.lr()], steps_in, steps_out);
    results.insert(results.end(), steps.begin(), steps.end());
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

std::string multi_key(DType dt) { return "multi_tensor/" + std::string(dtype_name(dt)); }

// The tensors of one launch, from tensor q0 on (at most kMulti), each with `blocks(n)` blocks
// (at least one, so that an empty tensor's norm is written too); q is advanced past them.
template <class Blocks>
MultiTensors multi_table(const std::vector<const void*>& x, const std::vector<void*>& y,
                         const std::vector<int64_t>& n, size_t& q, Blocks blocks) {
  MultiTensors t{};
  t.base = int32_t(q);
  for (; q < n.size() && t.count < kMulti; ++q) {
    const int c = t.count++;
    t.x[c] = x[q];
    t.y[c] = y.empty() ? nullptr : y[q];
    t.n[c] = n[q];
    t.first[c + 1] = t.first[c] + std::max<int64_t>(1, blocks(n[q]));
  }
  return t;
}

std::vector<PrimitivePtr> norm_multi_kernel(CudaBackend& be, Op& op) {
  const double p = op.attr<ScalarAttrs>().a;
  const DType dt = op.outputs[0].dtype;
  const int32_t mode = std::isinf(p) ? 3 : p == 2 ? 0 : p == 1 ? 1 : 2;
  std::vector<const void*> x;
  std::vector<int64_t> n;
  for (auto& in : op.inputs) {
    in = contiguous(be, in);
    x.push_back(static_cast<const CudaTensor&>(*in).raw());
    n.push_back(in->meta().shape.numel());
  }
  CudaTensorPtr out = alloc(be, op.outputs[0]);
  auto source = [&] { return multi_source(dt); };
  CUfunction part_fn = be.jit().get(multi_key(dt), "norm_part", source);
  CUfunction final_fn = be.jit().get(multi_key(dt), "norm_final", source);
  constexpr int kThreads = 256;
  const int64_t vw = 16 / int64_t(dtype_size(dt));
  const size_t acc = dt == DType::f64 ? 8 : 4;
  for (size_t q = 0; q < n.size();) {
    MultiTensors t = multi_table(x, {}, n, q, [&](int64_t m) {
      return std::min<int64_t>((m + kThreads * vw * 4 - 1) / (kThreads * vw * 4), 1024);
    });
    Buffer part(be.allocator(), size_t(t.first[t.count]) * acc);
    const auto run = [&]<class C>(C) {
      be.launch(part_fn, unsigned(t.first[t.count]), kThreads, 0, t, C(p), mode, part.ptr);
      be.launch(final_fn, unsigned(t.count), kThreads, 0, t, C(p), mode, part.ptr, out->raw());
    };
    if (dt == DType::f64) run(double{});
    else run(float{});
  }
  return {out};
}

std::vector<PrimitivePtr> mul_multi_kernel(CudaBackend& be, Op& op) {
  const size_t k = op.inputs.size() - 1;
  const DType dt = op.outputs[0].dtype;
  std::vector<const void*> x;
  std::vector<void*> y;
  std::vector<int64_t> n;
  std::vector<PrimitivePtr> results;
  op.inputs[k] = contiguous(be, op.inputs[k]);
  const void* s = static_cast<const CudaTensor&>(*op.inputs[k]).raw();
  for (size_t q = 0; q < k; ++q) {
    op.inputs[q] = contiguous(be, op.inputs[q]);
    x.push_back(static_cast<const CudaTensor&>(*op.inputs[q]).raw());
    CudaTensorPtr t = output_reusing(be, op, q, op.outputs[q]);
    y.push_back(t->raw());
    n.push_back(op.outputs[q].shape.numel());
    results.push_back(std::move(t));
  }
  CUfunction f = be.jit().get(multi_key(dt), "mul_multi", [&] { return multi_source(dt); });
  constexpr int kThreads = 256;
  const int64_t vw = 16 / int64_t(dtype_size(dt));
  for (size_t q = 0; q < k;) {
    MultiTensors t = multi_table(x, y, n, q, [&](int64_t m) { return int64_t(grid_for(be, (m + vw - 1) / vw, kThreads, 4)); });
    be.launch(f, unsigned(t.first[t.count]), kThreads, 0, t, s);
  }
  return results;
}

}  // namespace

std::string multi_source(DType dt) {
  EMBER_CHECK(is_float(dt), "norm_multi / mul_multi: ", dt, " is not a floating dtype");
  return reduce_family_helpers() + "typedef " + std::string(device_type(dt)) + " T;\ntypedef " + compute_type(dt) +
         " C;\n#define VW " + std::to_string(16 / dtype_size(dt)) + "\n" + kMultiTensors + kMultiKernels;
}

std::string adam_source(DType dt) {
  EMBER_CHECK(is_float(dt), "adam_step: ", dt, " is not a floating dtype");
  return "typedef " + std::string(device_type(dt)) + " T;\ntypedef " + compute_type(dt) + " C;\n" + kAdamUpdate +
         kAdamTensors + kAdamKernel;
}

std::vector<std::pair<std::string, std::string>> optim_variants() {
  std::vector<std::pair<std::string, std::string>> v;
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    v.emplace_back(adam_key(dt), adam_source(dt));
    v.emplace_back(multi_key(dt), multi_source(dt));
  }
  return v;
}

void register_optim_kernels(KernelTable& t) {
  t[size_t(OpKind::adam_step)] = adam_step_kernel;
  t[size_t(OpKind::norm_multi)] = norm_multi_kernel;
  t[size_t(OpKind::mul_multi)] = mul_multi_kernel;
}

}  // namespace ember::cuda
