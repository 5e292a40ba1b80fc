// Scaled dot-product attention.
//
//   out = softmax(q k^T * scale + mask, over S) v        (causal: key j > query i masked)
//
// Per batch-head, the queries are processed in blocks of rows: the block's scores
// [rows, S'] come from one gemm (S' = S, or the first i1 keys when causal), each row gets its
// mask and a softmax, and a second gemm multiplies by v. Memory stays O(block * S) per
// thread whatever the sequence lengths. Blocks of all batch-heads are spread over the thread
// pool (the gemms then run single-threaded inside a chunk); when there are too few blocks,
// they run one after the other and the gemm parallelises internally.
//
// Fully masked rows give NaN, like PyTorch. f16/bf16 are computed in f32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "gemm.hpp"
#include "thread_pool.hpp"
#include "vec/vec_math.hpp"

namespace ember::cpu {

namespace {

// ---------------------------------------------------------------------------------------
// Row softmax of x[0, n) in place, x[n, total) set to 0 (the causally masked tail). A row
// whose max is -inf (every key masked) becomes NaN, like PyTorch.

void softmax_row(float* x, int64_t n, int64_t total) {
  vec::softmax_row_f32(x, x, n);  // NaN when the max is -inf or any score is NaN
  std::fill(x + n, x + total, 0.0f);
}

void softmax_row(double* x, int64_t n, int64_t total) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  if (n == 0 || m == -std::numeric_limits<double>::infinity()) {
    std::fill(x, x + total, std::numeric_limits<double>::quiet_NaN());
    return;
  }
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    s += x[i];
  }
  double inv = 1.0 / s;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
  std::fill(x + n, x + total, 0.0);
}

void gemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t rsa, int64_t csa, const float* B,
          int64_t rsb, int64_t csb, float* C, int64_t rsc) {
  gemm_f32(M, N, K, alpha, A, rsa, csa, B, rsb, csb, 0.0f, C, rsc, 1);
}
void gemm(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t rsa, int64_t csa, const double* B,
          int64_t rsb, int64_t csb, double* C, int64_t rsc) {
  gemm_f64(M, N, K, alpha, A, rsa, csa, B, rsb, csb, 0.0, C, rsc, 1);
}

// ---------------------------------------------------------------------------------------

// One matrix operand: base pointer, per-batch offsets (elements), row and column strides.
template <class C>
struct Mat {
  const C* base = nullptr;
  std::vector<int64_t> off;
  int64_t rs = 0, cs = 0;
};

template <class C>
struct AttnProblem {
  int64_t B = 1, L = 0, S = 0, E = 0, Ev = 0;
  Mat<C> q, k, v;
  C* out = nullptr;  // contiguous [B, L, Ev]
  // mask (optional): elements of dtype mdt, per-batch offsets, row (L) and column (S) strides
  const char* mask = nullptr;
  DType mdt = DType::boolean;
  std::vector<int64_t> moff;
  int64_t mrs = 0, mcs = 0;
  bool causal = false;
  C scale = 1;
};

// Adds the mask of query row i to the scores row x[0, n).
template <class C>
void apply_mask(const AttnProblem<C>& P, int64_t b, int64_t i, C* x, int64_t n) {
  int64_t base = P.moff[size_t(b)] + i * P.mrs, cs = P.mcs;
  C ninf = -std::numeric_limits<C>::infinity();
  if (P.mdt == DType::boolean) {
    const bool* m = reinterpret_cast<const bool*>(P.mask) + base;
    for (int64_t j = 0; j < n; ++j) x[j] = m[j * cs] ? x[j] : ninf;
    return;
  }
  visit_float_dtype(P.mdt, "attention", [&]<class M>() {
    const M* m = reinterpret_cast<const M*>(P.mask) + base;
    if (cs == 1) {
      for (int64_t j = 0; j < n; ++j) x[j] += convert_scalar<C>(m[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) x[j] += convert_scalar<C>(m[j * cs]);
    }
  });
}

template <class C>
void attention_run(const AttnProblem<C>& P) {
  if (P.B == 0 || P.L == 0 || P.Ev == 0) return;
  if (P.S == 0) {  // softmax over nothing: the output is an empty sum
    std::fill(P.out, P.out + P.B * P.L * P.Ev, C(0));
    return;
  }
  int nthreads = ThreadPool::global().size();
  // Row block: at most 64 query rows, fewer when that is needed to occupy every thread.
  int64_t Lb = std::min<int64_t>(P.L, 64);
  while (Lb > 8 && P.B * ((P.L + Lb - 1) / Lb) < 2 * nthreads) Lb = (Lb + 1) / 2;
  int64_t nblk = (P.L + Lb - 1) / Lb;
  int64_t tasks = P.B * nblk;
  double flops = double(P.B) * double(P.L) * double(P.S) * double(P.E + P.Ev + 8);
  bool outer_parallel = tasks >= nthreads && flops > 131072.0 && nthreads > 1;

  auto run = [&](int64_t t0, int64_t t1) {
    std::vector<C> buf;
    for (int64_t t = t0; t < t1; ++t) {
      int64_t b = t / nblk, blk = t % nblk;
      int64_t i0 = blk * Lb, i1 = std::min(P.L, i0 + Lb), nb = i1 - i0;
      int64_t Se = P.causal ? std::min(P.S, i1) : P.S;
      buf.resize(size_t(nb * Se));
      C* sc = buf.data();
      const C* qb = P.q.base + P.q.off[size_t(b)] + i0 * P.q.rs;
      const C* kb = P.k.base + P.k.off[size_t(b)];
      const C* vb = P.v.base + P.v.off[size_t(b)];
      C* ob = P.out + (b * P.L + i0) * P.Ev;
      // scores = scale * q k^T: B operand element (e, j) = k[j, e]
      gemm(nb, Se, P.E, P.scale, qb, P.q.rs, P.q.cs, kb, P.k.cs, P.k.rs, sc, Se);
      if (P.E == 0) std::fill(sc, sc + nb * Se, C(0) * P.scale);  // empty dot products (NaN if scale is inf)
      for (int64_t r = 0; r < nb; ++r) {
        int64_t i = i0 + r;
        C* row = sc + r * Se;
        int64_t n = P.causal ? std::min(Se, i + 1) : Se;
        if (P.mask) apply_mask(P, b, i, row, n);
        softmax_row(row, n, Se);
      }
      gemm(nb, P.Ev, Se, C(1), sc, Se, 1, vb, P.v.rs, P.v.cs, ob, P.Ev);
    }
  };
  if (outer_parallel) parallel_for(0, tasks, 1, run);
  else run(0, tasks);
}

// Per-batch element offsets of a tensor whose first `nb` dims are the batch dims.
std::vector<int64_t> batch_offsets(const Shape& batch, const std::vector<int64_t>& strides) {
  std::vector<int64_t> off(size_t(batch.numel()), 0);
  int nb = batch.rank();
  for_each_index(batch, [&](std::span<const int64_t> idx, int64_t lin) {
    int64_t o = 0;
    for (int d = 0; d < nb; ++d) o += idx[size_t(d)] * strides[size_t(d)];
    off[size_t(lin)] = o;
  });
  return off;
}

// A contiguous f32 copy of a half tensor.
template <class T>
CpuTensorPtr to_f32(const CpuTensor& x) {
  auto out = alloc({x.shape(), DType::f32});
  strided_loop(x.shape(),
               {{static_cast<char*>(out->raw()), 4, out->strides},
                {static_cast<char*>(x.raw()), int64_t(sizeof(T)), x.strides}},
               [](char** p, const int64_t* s, int64_t n) {
                 if (s[0] == 4 && s[1] == 2) {
                   auto* dst = reinterpret_cast<float*>(p[0]);
                   auto* src = reinterpret_cast<const uint16_t*>(p[1]);
                   if constexpr (std::is_same_v<T, f16>) vec::f16_to_f32(src, dst, n);
                   else vec::bf16_to_f32(src, dst, n);
                   return;
                 }
                 for (int64_t i = 0; i < n; ++i)
                   *reinterpret_cast<float*>(p[0] + i * s[0]) = float(*reinterpret_cast<const T*>(p[1] + i * s[1]));
               });
  return out;
}

template <class C>
Mat<C> make_mat(const CpuTensor& t, const Shape& batch) {
  Mat<C> m;
  m.base = t.data<C>();
  int r = t.shape().rank();
  m.off = batch_offsets(batch, t.strides);
  m.rs = t.strides[size_t(r - 2)];
  m.cs = t.strides[size_t(r - 1)];
  return m;
}

std::vector<PrimitivePtr> attention_kernel(CpuBackend&, Op& op) {
  const auto& a = op.attr<AttentionAttrs>();
  auto q = as_cpu_ptr(op.inputs[0]), k = as_cpu_ptr(op.inputs[1]), v = as_cpu_ptr(op.inputs[2]);
  CpuTensorPtr mask = op.inputs.size() > 3 && op.inputs[3] ? as_cpu_ptr(op.inputs[3]) : nullptr;
  auto y = alloc(op.outputs[0]);
  const Shape& qs = q->shape();
  int r = qs.rank();
  Shape batch(qs.begin(), qs.end() - 2);
  int64_t L = qs[r - 2], E = qs[r - 1], S = k->shape()[r - 2], Ev = v->shape()[r - 1];
  if (y->numel() == 0) return {y};
  double scale = std::isnan(a.scale) ? 1.0 / std::sqrt(double(E)) : a.scale;

  auto setup = [&]<class C>(AttnProblem<C>& P, const CpuTensor& qc, const CpuTensor& kc, const CpuTensor& vc, C* out) {
    P.B = batch.numel();
    P.L = L;
    P.S = S;
    P.E = E;
    P.Ev = Ev;
    P.q = make_mat<C>(qc, batch);
    P.k = make_mat<C>(kc, batch);
    P.v = make_mat<C>(vc, batch);
    P.out = out;
    P.causal = a.causal;
    P.scale = C(scale);
    if (mask) {
      Shape ss = qs;
      ss[r - 1] = S;
      auto ms = broadcast_strides(*mask, ss);
      P.mask = static_cast<const char*>(mask->raw());
      P.mdt = mask->dtype();
      P.moff = batch_offsets(batch, ms);
      P.mrs = ms[size_t(r - 2)];
      P.mcs = ms[size_t(r - 1)];
    }
  };

  visit_float_dtype(q->dtype(), op.name(), [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      AttnProblem<T> P;
      setup(P, *q, *k, *v, y->data<T>());
      attention_run(P);
    } else {
      auto qf = to_f32<T>(*q), kf = to_f32<T>(*k), vf = to_f32<T>(*v);
      auto of = alloc({y->shape(), DType::f32});
      AttnProblem<float> P;
      setup(P, *qf, *kf, *vf, of->data<float>());
      attention_run(P);
      auto* dst = reinterpret_cast<uint16_t*>(y->raw());
      if constexpr (std::is_same_v<T, f16>) vec::f32_to_f16(of->data<float>(), dst, y->numel());
      else vec::f32_to_bf16(of->data<float>(), dst, y->numel());
    }
  });
  return {y};
}

}  // namespace

void register_attention_kernels(KernelTable& t) { t[size_t(OpKind::attention)] = attention_kernel; }

}  // namespace ember::cpu
