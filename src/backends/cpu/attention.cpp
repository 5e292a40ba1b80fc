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
// The forward's second output is each row's log-sum-exp (what a flash backward needs to rebuild
// P without a second softmax pass); here it comes from the row's max m and its probability:
// lse = m - log p_m.
//
// The backward (attention_backward: q, k, v, out, dout, mask[, lse] -> dq, dk, dv) walks the same
// blocks, recomputes each block's probabilities P exactly as the forward does, and with
// dP = dout v^T, dS = P * (dP - rowsum(P * dP)):
//   dv += P^T dout,  dq = scale dS k,  dk += scale dS^T q.
// dk and dv sum over every query block of a batch entry; see attention_backward_run for how
// that is split over threads without races.
//
// Fully masked rows give NaN, like PyTorch. f16/bf16 are computed in f32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
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

// C = alpha A B + beta C with a row-major C (beta == 0: C is not read).
void gemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t rsa, int64_t csa, const float* B,
          int64_t rsb, int64_t csb, float* C, int64_t rsc, float beta = 0) {
  gemm_f32(M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc, 1);
}
void gemm(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t rsa, int64_t csa, const double* B,
          int64_t rsb, int64_t csb, double* C, int64_t rsc, double beta = 0) {
  gemm_f64(M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc, 1);
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
  float* lse = nullptr;  // forward: the log-sum-exp of each score row, contiguous [B, L] (optional)
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

// The probabilities of query rows [i0, i0 + nb) of batch entry b over the first Se keys:
// P [nb, Se] = softmax(scale q k^T + mask), causally masked entries 0.
template <class C>
void block_probs(const AttnProblem<C>& P, int64_t b, int64_t i0, int64_t nb, int64_t Se, C* sc) {
  const C* qb = P.q.base + P.q.off[size_t(b)] + i0 * P.q.rs;
  const C* kb = P.k.base + P.k.off[size_t(b)];
  // scores = scale * q k^T: B operand element (e, j) = k[j, e]
  gemm(nb, Se, P.E, P.scale, qb, P.q.rs, P.q.cs, kb, P.k.cs, P.k.rs, sc, Se);
  if (P.E == 0) std::fill(sc, sc + nb * Se, C(0) * P.scale);  // empty dot products (NaN if scale is inf)
  for (int64_t r = 0; r < nb; ++r) {
    int64_t i = i0 + r;
    C* row = sc + r * Se;
    int64_t n = P.causal ? std::min(Se, i + 1) : Se;
    if (P.mask) apply_mask(P, b, i, row, n);
    if (!P.lse) {
      softmax_row(row, n, Se);
      continue;
    }
    // lse = m - log p_m at the row's max m (p_m >= 1 / n: well conditioned); -inf for a row
    // with nothing kept, NaN with the probabilities
    int64_t jm = 0;
    for (int64_t j = 1; j < n; ++j) jm = row[j] > row[jm] ? j : jm;
    const C m = n ? row[jm] : -std::numeric_limits<C>::infinity();
    softmax_row(row, n, Se);
    P.lse[b * P.L + i] = m == -std::numeric_limits<C>::infinity() ? -std::numeric_limits<float>::infinity()
                                                                    : float(m - std::log(row[jm]));
  }
}

template <class C>
void attention_run(const AttnProblem<C>& P) {
  if (P.B == 0 || P.L == 0) return;
  if (P.S == 0) {  // softmax over nothing: the output is an empty sum, its log -inf
    std::fill(P.out, P.out + P.B * P.L * P.Ev, C(0));
    if (P.lse) std::fill(P.lse, P.lse + P.B * P.L, -std::numeric_limits<float>::infinity());
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
      const C* vb = P.v.base + P.v.off[size_t(b)];
      C* ob = P.out + (b * P.L + i0) * P.Ev;
      block_probs(P, b, i0, nb, Se, sc);
      if (P.Ev > 0) gemm(nb, P.Ev, Se, C(1), sc, Se, 1, vb, P.v.rs, P.v.cs, ob, P.Ev);
    }
  };
  if (outer_parallel) parallel_for(0, tasks, 1, run);
  else run(0, tasks);
}

// Operands of the backward beyond the forward's: dout (strided like q), and the gradients,
// contiguous [B, L, E], [B, S, E], [B, S, Ev].
template <class C>
struct AttnGrads {
  Mat<C> dout;
  C *dq = nullptr, *dk = nullptr, *dv = nullptr;
};

// One query block [i0, i0 + nb) of batch entry b: writes its dq rows and adds to dk, dv
// (acc_dk [S, E], acc_dv [S, Ev]). p and ds are scratch of nb * Se elements.
template <class C>
void attention_backward_block(const AttnProblem<C>& P, const AttnGrads<C>& G, int64_t b, int64_t i0, int64_t nb,
                              C* acc_dk, C* acc_dv, std::vector<C>& p_buf, std::vector<C>& ds_buf) {
  int64_t Se = P.causal ? std::min(P.S, i0 + nb) : P.S;
  p_buf.resize(size_t(nb * Se));
  ds_buf.resize(size_t(nb * Se));
  C *p = p_buf.data(), *ds = ds_buf.data();
  const C* qb = P.q.base + P.q.off[size_t(b)] + i0 * P.q.rs;
  const C* kb = P.k.base + P.k.off[size_t(b)];
  const C* vb = P.v.base + P.v.off[size_t(b)];
  const C* gb = G.dout.base + G.dout.off[size_t(b)] + i0 * G.dout.rs;
  block_probs(P, b, i0, nb, Se, p);
  // dP = dout v^T: B operand element (e, j) = v[j, e]
  gemm(nb, Se, P.Ev, C(1), gb, G.dout.rs, G.dout.cs, vb, P.v.cs, P.v.rs, ds, Se);
  // dS = P * (dP - D), D = rowsum(P * dP): the composed rule's form, and accurate for f16 too,
  // where D = rowsum(dout * out) would see the forward's rounded output. A NaN row (every key masked, or NaN inputs)
  // makes every key's gradient NaN, as the composed rule does: P's row is NaN over all keys.
  bool nan_row = false;
  for (int64_t r = 0; r < nb; ++r) {
    C *pr = p + r * Se, *dr = ds + r * Se;
    if (std::isnan(pr[0])) std::fill(pr, pr + Se, std::numeric_limits<C>::quiet_NaN());
    C d = 0;
    for (int64_t j = 0; j < Se; ++j) d += pr[j] * dr[j];
    for (int64_t j = 0; j < Se; ++j) dr[j] = pr[j] * (dr[j] - d);
    nan_row = nan_row || std::isnan(d);
  }
  // dv[:Se] += P^T dout;  dq rows = scale dS k;  dk[:Se] += scale dS^T q
  gemm(Se, P.Ev, nb, C(1), p, 1, Se, gb, G.dout.rs, G.dout.cs, acc_dv, P.Ev, C(1));
  gemm(nb, P.E, Se, P.scale, ds, Se, 1, kb, P.k.rs, P.k.cs, G.dq + (b * P.L + i0) * P.E, P.E);
  gemm(Se, P.E, nb, P.scale, ds, 1, Se, qb, P.q.rs, P.q.cs, acc_dk, P.E, C(1));
  if (nan_row && Se < P.S) {  // the causally unseen keys, which the gemms did not reach
    std::fill(acc_dk + Se * P.E, acc_dk + P.S * P.E, std::numeric_limits<C>::quiet_NaN());
    std::fill(acc_dv + Se * P.Ev, acc_dv + P.S * P.Ev, std::numeric_limits<C>::quiet_NaN());
  }
}

// dk and dv of a batch entry sum over all its query blocks. The blocks of each batch entry are
// dealt round-robin (balancing the causal case) into G groups; a task is one (entry, group)
// and accumulates into its own dk/dv slice (group 0 straight into the output, the others into
// scratch), and the slices are summed afterwards in a fixed order, so the result does not
// depend on scheduling. G = 1 when there are enough batch entries to occupy the threads.
template <class C>
void attention_backward_run(const AttnProblem<C>& P, const AttnGrads<C>& G) {
  int64_t B = P.B, L = P.L, S = P.S, E = P.E, Ev = P.Ev;
  if (B == 0) return;
  if (L == 0 || S == 0) {  // nothing attends: every gradient is an empty sum
    std::fill(G.dq, G.dq + B * L * E, C(0));
    std::fill(G.dk, G.dk + B * S * E, C(0));
    std::fill(G.dv, G.dv + B * S * Ev, C(0));
    return;
  }
  int nthreads = ThreadPool::global().size();
  int64_t Lb = std::min<int64_t>(L, 64);
  while (Lb > 8 && B * ((L + Lb - 1) / Lb) < 2 * nthreads) Lb = (Lb + 1) / 2;
  int64_t nblk = (L + Lb - 1) / Lb;
  double flops = double(B) * double(L) * double(S) * double(2 * E + 2 * Ev + 8);
  // Groups per entry: enough for B * G to be a multiple of the thread count, capped so that the
  // scratch stays within about 4 * threads dk/dv slices.
  int64_t groups = 1;
  if (B < 4 * nthreads)
    groups =
        std::min({nblk, int64_t(nthreads) / std::gcd(B, int64_t(nthreads)), std::max<int64_t>(1, 4 * nthreads / B)});
  bool outer_parallel = B * groups >= nthreads && flops > 131072.0 && nthreads > 1;
  if (!outer_parallel) groups = 1;  // one task at a time; the gemms parallelise inside
  int64_t tasks = B * groups;
  std::vector<C> part_dk(size_t(B * (groups - 1) * S * E)), part_dv(size_t(B * (groups - 1) * S * Ev));

  auto run = [&](int64_t t0, int64_t t1) {
    std::vector<C> p_buf, ds_buf;
    for (int64_t t = t0; t < t1; ++t) {
      int64_t b = t / groups, g = t % groups;
      C* acc_dk = g == 0 ? G.dk + b * S * E : part_dk.data() + (b * (groups - 1) + g - 1) * S * E;
      C* acc_dv = g == 0 ? G.dv + b * S * Ev : part_dv.data() + (b * (groups - 1) + g - 1) * S * Ev;
      std::fill(acc_dk, acc_dk + S * E, C(0));
      std::fill(acc_dv, acc_dv + S * Ev, C(0));
      for (int64_t blk = g; blk < nblk; blk += groups) {
        int64_t i0 = blk * Lb;
        attention_backward_block(P, G, b, i0, std::min(Lb, L - i0), acc_dk, acc_dv, p_buf, ds_buf);
      }
    }
  };
  if (outer_parallel) parallel_for(0, tasks, 1, run);
  else run(0, tasks);
  if (groups == 1) return;

  // out[b] += the scratch slices of groups 1..G-1 of entry b, in group order.
  auto add_groups = [&](C* out, const std::vector<C>& part, int64_t slice) {
    parallel_for(0, B * slice, 4096, [&](int64_t e0, int64_t e1) {
      for (int64_t e = e0; e < e1; ++e) {
        const C* src = part.data() + (e / slice) * (groups - 1) * slice + e % slice;
        C s = out[e];
        for (int64_t g = 0; g < groups - 1; ++g) s += src[g * slice];
        out[e] = s;
      }
    });
  };
  add_groups(G.dk, part_dk, S * E);
  add_groups(G.dv, part_dv, S * Ev);
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

// The problem over q, k, v of dtype C (the f32 copies for f16/bf16) and the optional mask;
// qs is the shape of q, S the key count.
template <class C>
AttnProblem<C> make_problem(const CpuTensor& q, const CpuTensor& k, const CpuTensor& v, const CpuTensor* mask,
                            const AttentionAttrs& a) {
  const Shape& qs = q.shape();
  int r = qs.rank();
  Shape batch(qs.begin(), qs.end() - 2);
  AttnProblem<C> P;
  P.B = batch.numel();
  P.L = qs[r - 2];
  P.S = k.shape()[r - 2];
  P.E = qs[r - 1];
  P.Ev = v.shape()[r - 1];
  P.q = make_mat<C>(q, batch);
  P.k = make_mat<C>(k, batch);
  P.v = make_mat<C>(v, batch);
  P.causal = a.causal;
  P.scale = C(std::isnan(a.scale) ? 1.0 / std::sqrt(double(P.E)) : a.scale);
  if (mask) {
    Shape ss = qs;
    ss[r - 1] = P.S;
    auto ms = broadcast_strides(*mask, ss);
    P.mask = static_cast<const char*>(mask->raw());
    P.mdt = mask->dtype();
    P.moff = batch_offsets(batch, ms);
    P.mrs = ms[size_t(r - 2)];
    P.mcs = ms[size_t(r - 1)];
  }
  return P;
}

// Writes the f32 values of `from` into the f16/bf16 tensor `to` (both contiguous).
template <class T>
void from_f32(const CpuTensor& from, CpuTensor& to) {
  auto* dst = reinterpret_cast<uint16_t*>(to.raw());
  if constexpr (std::is_same_v<T, f16>) vec::f32_to_f16(from.data<float>(), dst, to.numel());
  else vec::f32_to_bf16(from.data<float>(), dst, to.numel());
}

std::vector<PrimitivePtr> attention_kernel(CpuBackend&, Op& op) {
  const auto& a = op.attr<AttentionAttrs>();
  auto q = as_cpu_ptr(op.inputs[0]), k = as_cpu_ptr(op.inputs[1]), v = as_cpu_ptr(op.inputs[2]);
  CpuTensorPtr mask = op.inputs.size() > 3 && op.inputs[3] ? as_cpu_ptr(op.inputs[3]) : nullptr;
  auto y = alloc(op.outputs[0]), lse = alloc(op.outputs[1]);
  if (lse->numel() == 0) return {y, lse};

  visit_float_dtype(q->dtype(), op.name(), [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      AttnProblem<T> P = make_problem<T>(*q, *k, *v, mask.get(), a);
      P.out = y->data<T>();
      P.lse = lse->data<float>();
      attention_run(P);
    } else {
      auto qf = to_f32<T>(*q), kf = to_f32<T>(*k), vf = to_f32<T>(*v);
      auto of = alloc({y->shape(), DType::f32});
      AttnProblem<float> P = make_problem<float>(*qf, *kf, *vf, mask.get(), a);
      P.out = of->data<float>();
      P.lse = lse->data<float>();
      attention_run(P);
      from_f32<T>(*of, *y);
    }
  });
  return {y, lse};
}

// Inputs q, k, v, out (unused: D is recomputed from P and dP), dout, mask or null, lse (unused:
// the probabilities are recomputed block by block anyway).
std::vector<PrimitivePtr> attention_backward_kernel(CpuBackend&, Op& op) {
  const auto& a = op.attr<AttentionAttrs>();
  auto q = as_cpu_ptr(op.inputs[0]), k = as_cpu_ptr(op.inputs[1]), v = as_cpu_ptr(op.inputs[2]);
  auto dout = as_cpu_ptr(op.inputs[4]);
  CpuTensorPtr mask = op.inputs.size() > 5 && op.inputs[5] ? as_cpu_ptr(op.inputs[5]) : nullptr;
  auto dq = alloc(op.outputs[0]), dk = alloc(op.outputs[1]), dv = alloc(op.outputs[2]);
  Shape batch(q->shape().begin(), q->shape().end() - 2);

  visit_float_dtype(q->dtype(), op.name(), [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      AttnProblem<T> P = make_problem<T>(*q, *k, *v, mask.get(), a);
      AttnGrads<T> G{make_mat<T>(*dout, batch), dq->data<T>(), dk->data<T>(), dv->data<T>()};
      attention_backward_run(P, G);
    } else {
      auto qf = to_f32<T>(*q), kf = to_f32<T>(*k), vf = to_f32<T>(*v), gf = to_f32<T>(*dout);
      auto dqf = alloc({dq->shape(), DType::f32}), dkf = alloc({dk->shape(), DType::f32}),
           dvf = alloc({dv->shape(), DType::f32});
      AttnProblem<float> P = make_problem<float>(*qf, *kf, *vf, mask.get(), a);
      AttnGrads<float> G{make_mat<float>(*gf, batch), dqf->data<float>(), dkf->data<float>(), dvf->data<float>()};
      attention_backward_run(P, G);
      from_f32<T>(*dqf, *dq);
      from_f32<T>(*dkf, *dk);
      from_f32<T>(*dvf, *dv);
    }
  });
  return {dq, dk, dv};
}

}  // namespace

void register_attention_kernels(KernelTable& t) {
  t[size_t(OpKind::attention)] = attention_kernel;
  t[size_t(OpKind::attention_backward)] = attention_backward_kernel;
}

}  // namespace ember::cpu
