// Fused optimizer updates: adam_step, one Adam / AdamW update per element in one pass, and the
// multi-tensor ops of gradient clipping, norm_multi and mul_multi (at the end). adam_step runs
// in the order of torch.optim's _single_tensor_adam(w) (PyTorch 1.13):
//
//   g = maximize ? -grad : grad;  AdamW: p *= 1 - lr wd;  Adam: g += wd p
//   m = m b1 + g (1 - b1);  v = v b2 + (1 - b2) g g
//   p = p - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//
// Computed in f32 for f32 / f16 / bf16 (the scalars rounded to f32, as PyTorch does for float
// tensors), in f64 for f64. The outputs reuse the inputs' buffers when the op holds them alone.
// The device-scalar form (inputs lr and step, f32 0-d) takes lr = a.lr * lr and t = step + 1
// from them, computes the scalars from those in the compute type, and returns t as well. Its
// bias corrections are -expm1(t log b): 1 - b^t in f32 loses digits to cancellation (beta2 =
// 0.999 at t = 1: 1.3e-5 relative, which torch's capturable path has), this form does not.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_backend.hpp"
#include "ember/core/adam_inputs.hpp"
#include "ember/core/half.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

namespace {

template <class C>
struct AdamScalars {
  C lr_wd, one_minus_lr_wd, wd, b1, one_minus_b1, b2, one_minus_b2, step_size, bc2_sqrt, eps;
  bool decoupled, maximize;

  // The host form: a.lr and a.step, in double, with the bias corrections 1 - b^t (as torch.optim).
  static AdamScalars host(const AdamAttrs& a) {
    const double t = double(a.step);
    return AdamScalars(a, a.lr, 1 - std::pow(a.beta1, t), 1 - std::pow(a.beta2, t));
  }
  // The device-scalar form: the learning rate and step read from tensors, in C, with the bias
  // corrections -expm1(t log b).
  static AdamScalars device(const AdamAttrs& a, C lr, C t) {
    return AdamScalars(a, lr, C(-std::expm1(t * C(std::log(a.beta1)))), C(-std::expm1(t * C(std::log(a.beta2)))));
  }

  // One element: p, m, v updated in place from g.
  void update(C& p, C g, C& m, C& v) const {
    if (maximize) g = -g;
    if (decoupled) p = p * one_minus_lr_wd;
    else if (wd != C(0)) g = g + p * wd;
    m = m * b1 + g * one_minus_b1;
    v = v * b2 + (g * one_minus_b2) * g;
    C denom = std::sqrt(v) / bc2_sqrt + eps;
    p = p + (m * -step_size) / denom;
  }

 private:
  // `lr` and the bias corrections bc1, bc2 in S (double, or C for the device-scalar form)
  template <class S>
  AdamScalars(const AdamAttrs& a, S lr, S bc1, S bc2) {
    lr_wd = C(lr * S(a.weight_decay));
    one_minus_lr_wd = C(S(1) - lr * S(a.weight_decay));
    wd = C(a.weight_decay);
    b1 = C(a.beta1);
    one_minus_b1 = C(1 - a.beta1);
    b2 = C(a.beta2);
    one_minus_b2 = C(1 - a.beta2);
    step_size = C(lr / bc1);
    bc2_sqrt = C(std::sqrt(bc2));
    eps = C(a.eps);
    decoupled = a.decoupled;
    maximize = a.maximize;
  }
};

// One update, or one of each of the k parameters of a multi-tensor op (inputs 4q..4q+3 ->
// outputs 3q..3q+2); the host form's parameters share the scalars, the device-scalar form's
// share the learning rate and each reads its own step (AdamInputs, core/op.hpp).
std::vector<PrimitivePtr> adam_step_kernel(CpuBackend&, Op& op) {
  const auto& a = op.attr<AdamAttrs>();
  const AdamInputs form = adam_inputs(op.inputs.size(), a);
  const size_t k = form.params;
  double lr_dev = 0;  // the device-scalar form's learning rate and steps
  std::vector<float> t_dev(form.device_scalars ? k : 0);
  if (form.device_scalars) {
    lr_dev = a.lr * double(contiguous(op.inputs[form.lr()])->data<float>()[0]);
    for (size_t q = 0; q < k; ++q) t_dev[q] = contiguous(op.inputs[form.step(q)])->data<float>()[0] + 1;
  }
  std::vector<PrimitivePtr> results;
  for (size_t q = 0; q < k; ++q) {
    CpuTensorPtr grad = contiguous(op.inputs[4 * q + 1]);
    // Outputs (param, exp_avg, exp_avg_sq) come from inputs 0, 2, 3 of the quadruple, whose
    // buffers they take over when the op holds the only reference (no handle is kept here for
    // that reason).
    const size_t src[3] = {4 * q, 4 * q + 2, 4 * q + 3};
    const void* in[3];
    CpuTensorPtr out[3];
    for (size_t o = 0; o < 3; ++o) {
      op.inputs[src[o]] = contiguous(op.inputs[src[o]]);
      in[o] = as_cpu(op.inputs[src[o]]).raw();
      out[o] = output_reusing(op, src[o], op.outputs[3 * q + o]);
    }
    const int64_t n = op.outputs[3 * q].shape.numel();
    visit_float_dtype(op.outputs[3 * q].dtype, op.name(), [&]<class T>() {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const AdamScalars<C> s =
          form.device_scalars ? AdamScalars<C>::device(a, C(lr_dev), C(t_dev[q])) : AdamScalars<C>::host(a);
      const T *p = static_cast<const T*>(in[0]), *g = grad->data<T>(), *m = static_cast<const T*>(in[1]),
              *v = static_cast<const T*>(in[2]);
      T *po = out[0]->data<T>(), *mo = out[1]->data<T>(), *vo = out[2]->data<T>();
      parallel_for(0, n, 16384, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          C pi = C(p[i]), mi = C(m[i]), vi = C(v[i]);
          s.update(pi, C(g[i]), mi, vi);
          po[i] = T(pi);
          mo[i] = T(mi);
          vo[i] = T(vi);
        }
      });
    });
    results.insert(results.end(), {out[0], out[1], out[2]});
  }
  for (size_t q = 0; q < t_dev.size(); ++q) {
    CpuTensorPtr step = output_reusing(op, form.step(q), op.outputs[3 * k + q]);
    step->data<float>()[0] = t_dev[q];
    results.push_back(step);
  }
  return results;
}

// norm_multi: each tensor's p-norm, from partial sums over chunks of 16384 elements added in
// chunk order (the same result for any number of threads).
std::vector<PrimitivePtr> norm_multi_kernel(CpuBackend&, Op& op) {
  const double p = op.attr<ScalarAttrs>().a;
  const size_t k = op.inputs.size();
  CpuTensorPtr out = alloc(op.outputs[0]);
  visit_float_dtype(op.outputs[0].dtype, op.name(), [&]<class T>() {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    constexpr int64_t kChunk = 16384;
    for (size_t q = 0; q < k; ++q) {
      CpuTensorPtr x = contiguous(op.inputs[q]);
      const T* xs = x->data<T>();
      const int64_t n = x->numel(), chunks = (n + kChunk - 1) / kChunk;
      std::vector<C> part(size_t(chunks), C(0));
      parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          C acc = 0;
          for (int64_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) {
            const C v = std::abs(C(xs[i]));
            if (std::isinf(p)) acc = (std::isnan(v) || v > acc) ? v : acc;
            else acc += p == 2 ? v * v : (p == 1 ? v : std::pow(v, C(p)));
          }
          part[size_t(c)] = acc;
        }
      });
      C total = 0;
      for (C v : part) total = std::isinf(p) ? ((std::isnan(v) || v > total) ? v : total) : total + v;
      if (!std::isinf(p) && p != 1) total = p == 2 ? std::sqrt(total) : std::pow(total, C(1 / p));
      out->data<T>()[q] = T(total);
    }
  });
  return {out};
}

// mul_multi: x_i * s, each output in its input's buffer where the op holds it alone.
std::vector<PrimitivePtr> mul_multi_kernel(CpuBackend&, Op& op) {
  const size_t k = op.inputs.size() - 1;
  CpuTensorPtr s = contiguous(op.inputs[k]);
  std::vector<PrimitivePtr> results;
  for (size_t q = 0; q < k; ++q) {
    op.inputs[q] = contiguous(op.inputs[q]);
    const void* in = as_cpu(op.inputs[q]).raw();
    CpuTensorPtr out = output_reusing(op, q, op.outputs[q]);
    const int64_t n = op.outputs[q].shape.numel();
    visit_float_dtype(op.outputs[q].dtype, op.name(), [&]<class T>() {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const C sv = C(s->data<T>()[0]);
      const T* x = static_cast<const T*>(in);
      T* y = out->data<T>();
      parallel_for(0, n, 32768, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = T(C(x[i]) * sv);
      });
    });
    results.push_back(std::move(out));
  }
  return results;
}

}  // namespace

void register_optim_kernels(KernelTable& t) {
  t[size_t(OpKind::adam_step)] = adam_step_kernel;
  t[size_t(OpKind::norm_multi)] = norm_multi_kernel;
  t[size_t(OpKind::mul_multi)] = mul_multi_kernel;
}

}  // namespace ember::cpu
