// Attention through cuDNN's fused attention engines (f16 / bf16, no mask, causal or not), where
// cuDNN has one for the device: the forward and the backward are each one operation graph of
// cuDNN's graph API, which cuDNN matches as a whole to its flash-attention kernels (on Hopper,
// with cuDNN 9.x, warp-specialised kernels on wgmma and TMA that ember's mma.sync kernels do not
// reach). The graphs are the ones cuDNN documents for "scaled dot product attention" and its
// frontend library emits (matmul, pointwise and reduction nodes; the frontend is not a Debian
// package, so they are built here on the backend API):
//
//   forward:  S = q k^T * scale, causal: S = (row >= col) ? S : -inf,
//             M = max_j S, E = exp(S - M), Z = sum_j E, lse = M + log Z, P = E / Z (bf16),
//             out = P v
//   backward: D = rowsum(dout * out), P = exp(q k^T * scale - lse) (causal as above),
//             dv = P^T dout, dS = P (dout v^T - D) * scale, dk = dS^T q, dq = dS k
//
// lse is the op's second output in ember's own convention (natural log, f32, one per query row),
// so a forward on either path pairs with a backward on either. Each problem (dims, strides,
// dtype, causal) gets its plans once: cuDNN's heuristics (mode A) rank the engines, the first
// 4 whose plans finalize are timed on the problem's first call and the fastest is kept (with
// cuda::set_autotune(false), the first is). Where cuDNN has no engine (another GPU, another cuDNN, a layout
// it refuses), the problem is remembered as declined and ember's own kernels run it.
// EMBER_CUDA_ATTN_CUDNN=0 turns the path off; EMBER_CUDNN_DEBUG=1 prints why a graph was declined.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "attention_internal.hpp"
#include "cudnn_graph.hpp"

namespace ember::cuda {

namespace {

using cudnn_graph::Desc;
using cudnn_graph::Dims;
using cudnn_graph::GraphBuilder;
using cudnn_graph::Plan;

bool debug() {
  static const bool on = [] {
    const char* e = std::getenv("EMBER_CUDNN_DEBUG");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

// The uids of the graphs' tensors in memory (the variant packs'); intermediates count from 100.
enum : int64_t { kQ = 1, kK, kV, kO, kLse, kDout, kDq, kDk, kDv, kScale, kNegInf, kOne, kRowDot, kDqAcc };

// An operand of the graphs: dims [B, H, rows, cols] and strides (cols stride 1).
struct Operand {
  Dims dims, strides;
  // the last two dims swapped (k^T, v^T)
  Operand t() const { return {{dims[0], dims[1], dims[3], dims[2]}, {strides[0], strides[1], strides[3], strides[2]}}; }
};

// One problem's shape as the graphs see it: the batch dims collapsed to [B, H].
struct Problem {
  int64_t B = 1, H = 1, L = 0, S = 0, E = 0;
  cudnnDataType_t io = CUDNN_DATA_BFLOAT16;
  bool causal = false;
  Operand q, k, v, o, dout;  // o and dout: only for the backward (the forward's o is dense)
  bool dense_dout = false;   // dout is to be copied to dense strides first
  std::string key;
};

Dims dense_strides(int64_t H, int64_t rows, int64_t cols) { return {H * rows * cols, rows * cols, cols, 1}; }

// [B, H, rows, cols] strides of `t` from the collapsed batch strides `bs` (nullopt where cuDNN
// cannot take them: a broadcast or reversed batch or row, an unaligned row or base).
std::optional<Operand> operand(const CudaTensor& t, const StridesArg& bs, const Collapsed& cb, int64_t rows,
                               int64_t cols) {
  const int r = t.shape().rank();
  const int64_t rs = t.strides[size_t(r - 2)], cs = t.strides[size_t(r - 1)];
  if (cs != 1 || (rows > 1 && (rs < cols || rs % 8 != 0)) || reinterpret_cast<uintptr_t>(t.raw()) % 16 != 0)
    return std::nullopt;
  Operand o;
  o.dims = {1, 1, rows, cols};
  o.strides = {rows * rs, rows * rs, rs, 1};
  for (int d = 0; d < cb.shape.rank; ++d) {
    const int64_t s = bs.v[d];
    if (s <= 0 || s % 8 != 0) return std::nullopt;
    const size_t at = size_t(2 - cb.shape.rank + d);  // rank 1 -> H; rank 2 -> B, H
    o.dims[at] = cb.shape.size[d];
    o.strides[at] = s;
  }
  if (cb.shape.rank == 1) o.strides[0] = o.dims[1] * o.strides[1];
  return o;
}

std::string dims_key(const Operand& o) {
  std::string s;
  for (int64_t v : o.dims) s += std::to_string(v) + ",";
  for (int64_t v : o.strides) s += std::to_string(v) + ",";
  return s;
}

// The problem of an attention op with q, k, v (and for the backward out, dout), or nullopt where
// the cuDNN path does not apply.
std::optional<Problem> problem(std::string_view name, const AttnInputs& in, const CudaTensor* out,
                               const CudaTensor* dout) {
  const DType dt = in.q->dtype();
  if (dt != DType::f16 && dt != DType::bf16) return std::nullopt;
  if (in.mask || in.E != in.Ev || in.E % 8 != 0 || in.E > 256 || in.L == 0 || in.S == 0) return std::nullopt;
  const int r = in.q->shape().rank(), nb = r - 2;
  std::vector<std::vector<int64_t>> bst = {lead_strides(in.q->strides, nb), lead_strides(in.k->strides, nb),
                                           lead_strides(in.v->strides, nb)};
  if (out) bst.push_back(lead_strides(out->strides, nb));
  if (dout) bst.push_back(lead_strides(dout->strides, nb));
  Collapsed cb = collapse(name, in.batch, bst);
  if (cb.shape.rank > 2) return std::nullopt;
  Problem p;
  p.io = dt == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
  p.L = in.L, p.S = in.S, p.E = in.E, p.causal = in.causal;
  auto q = operand(*in.q, cb.strides[0], cb, in.L, in.E), k = operand(*in.k, cb.strides[1], cb, in.S, in.E),
       v = operand(*in.v, cb.strides[2], cb, in.S, in.E);
  if (!q || !k || !v) return std::nullopt;
  p.q = *q, p.k = *k, p.v = *v;
  p.B = p.q.dims[0], p.H = p.q.dims[1];
  if (out) {
    auto o = operand(*out, cb.strides[3], cb, in.L, in.E), d = operand(*dout, cb.strides[4], cb, in.L, in.E);
    if (!o) return std::nullopt;
    p.o = *o;
    // a dout cuDNN cannot read (the broadcast gradient of a sum) is copied dense first
    p.dense_dout = !d;
    p.dout = d ? *d : Operand{{p.B, p.H, in.L, in.E}, dense_strides(p.H, in.L, in.E)};
  }
  p.key = std::string(dt == DType::f16 ? "f16" : "bf16") + (in.causal ? "/causal/" : "/full/") + dims_key(p.q) +
          dims_key(p.k) + dims_key(p.v) + dims_key(p.o) + dims_key(p.dout);
  return p;
}

bool enabled() {
  const char* e = std::getenv("EMBER_CUDA_ATTN_CUDNN");
  return !(e && std::string(e) == "0");
}

// A problem's plans: the candidates until the first call times them (autotuning), then the
// fastest alone; none where cuDNN declined the problem.
struct Plans {
  std::vector<Plan> cands;
  bool chosen = false;
};
// (On an H200 with cuDNN 9.14 the heuristics' first 4 hold the fastest configuration: timing every
// value of the engines' one knob, CUDNN_KNOB_TYPE_KERNEL_CFG (0..36), found no faster one for
// [8, 12, 1024, 64] causal bf16: forward 48.1 us at best, the heuristics' first 51.3 us; backward
// 156.7 us, the heuristics' first.)
constexpr size_t kMaxCandidates = 4;
std::atomic<int64_t> g_runs{0};  // calls that ran on cuDNN (not counting autotuning's)

std::mutex g_mu;
std::map<std::string, Plans>& plans() {
  static auto* m = new std::map<std::string, Plans>();
  return *m;
}

// The plan of `key` to run now: `build` makes the candidates on first use (declined problems are
// remembered too); the first call that finds several keeps the fastest (cudnn_graph::fastest,
// timing each with `run`, which executes one candidate with the call's operands). Null: declined.
template <class Build, class Run>
const Plan* plan_of(CudaBackend& be, const std::string& key, Build build, Run run);

// Runs the call on the plan of `key` (plan_of) and counts it; false where cuDNN declined.
template <class Build, class Run>
bool run_planned(CudaBackend& be, const std::string& key, Build build, Run run) {
  const Plan* plan = plan_of(be, key, build, run);
  if (!plan) return false;
  run(*plan);
  ++g_runs;
  return true;
}

template <class Build, class Run>
const Plan* plan_of(CudaBackend& be, const std::string& key, Build build, Run run) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto [it, fresh] = plans().try_emplace(key);
  Plans& e = it->second;
  if (fresh) {
    GraphBuilder g(be.cudnn());
    build(g);
    e.cands = g.plans(autotune_enabled() ? kMaxCandidates : 1);
    if (e.cands.empty() && debug())
      std::fprintf(stderr, "ember: cuDNN attention declined %s: %s\n", key.c_str(), g.error().c_str());
  }
  if (e.cands.empty()) return nullptr;
  if (!e.chosen && e.cands.size() > 1) {
    auto best = cudnn_graph::fastest(
        be.stream(), e.cands.size(),
        [&](size_t i) {
          try {
            run(e.cands[i]);
            return true;
          } catch (const Error&) {  // (an engine that finalizes but fails on the operands: passed over)
            return false;
          }
        },
        [&](size_t i, double ms) {
          if (debug()) std::fprintf(stderr, "ember: cuDNN attention %s candidate %zu: %.4f ms\n", key.c_str(), i, ms);
        });
    const Plan kept = e.cands[best.value_or(0)];
    for (const Plan& c : e.cands)
      if (c.plan != kept.plan) cudnnBackendDestroyDescriptor(c.plan);
    e.cands = {kept};
  }
  if (!e.chosen && debug())
    std::fprintf(stderr, "ember: cuDNN %zu attention plan for %s (workspace %lld bytes)\n", cudnnGetVersion(),
                 key.c_str(), static_cast<long long>(e.cands[0].workspace));
  e.chosen = true;
  return &e.cands[0];
}

// The causal block: s2 = (row >= col) ? s : -inf over [B, H, L, S].
Desc causal_mask(GraphBuilder& g, const Problem& p, Desc s, Desc neg_inf) {
  const Dims dims = {p.B, p.H, p.L, p.S}, st = dense_strides(p.H, p.L, p.S);
  Desc row = g.inner(dims, st, CUDNN_DATA_INT32), col = g.inner(dims, st, CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, row, nullptr, CUDNN_DATA_FLOAT, 2);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, col, nullptr, CUDNN_DATA_FLOAT, 3);
  Desc keep = g.inner(dims, st, CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, row, col, keep, nullptr, CUDNN_DATA_BOOLEAN);
  Desc out = g.inner(dims, st);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, neg_inf, out, keep);
  return out;
}

void forward_graph(GraphBuilder& g, const Problem& p) {
  const Dims sdims = {p.B, p.H, p.L, p.S}, sst = dense_strides(p.H, p.L, p.S);
  const Dims rdims = {p.B, p.H, p.L, 1}, rst = dense_strides(p.H, p.L, 1);
  const Operand kt = p.k.t();
  Desc q = g.tensor(kQ, p.q.dims, p.q.strides, p.io, false);
  Desc k = g.tensor(kK, kt.dims, kt.strides, p.io, false);
  Desc v = g.tensor(kV, p.v.dims, p.v.strides, p.io, false);
  Desc o = g.tensor(kO, {p.B, p.H, p.L, p.E}, dense_strides(p.H, p.L, p.E), p.io, false);
  Desc lse = g.tensor(kLse, rdims, rst, CUDNN_DATA_FLOAT, false);
  Desc scale = g.scalar(kScale);
  Desc s1 = g.inner(sdims, sst), s2 = g.inner(sdims, sst);
  g.matmul(q, k, s1);
  g.pointwise(CUDNN_POINTWISE_MUL, s1, scale, s2);
  Desc s3 = p.causal ? causal_mask(g, p, s2, g.scalar(kNegInf)) : s2;
  Desc m = g.inner(rdims, rst), s4 = g.inner(sdims, sst), e = g.inner(sdims, sst);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, s3, m);
  g.pointwise(CUDNN_POINTWISE_SUB, s3, m, s4);
  g.pointwise(CUDNN_POINTWISE_EXP, s4, nullptr, e);
  Desc z = g.inner(rdims, rst), logz = g.inner(rdims, rst);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, z);
  g.pointwise(CUDNN_POINTWISE_LOG, z, nullptr, logz);
  g.pointwise(CUDNN_POINTWISE_ADD, m, logz, lse);
  Desc prob = g.inner(sdims, sst, p.io);  // the second product takes P in the input type
  g.pointwise(CUDNN_POINTWISE_DIV, e, z, prob);
  g.matmul(prob, v, o);
}

// The part of the backward's workspace the graph's own memory tensors take: dq's f32 accumulator
// and the row dot products rowsum(dout * out), each rounded up to 256 bytes.
int64_t round256(int64_t n) { return (n + 255) / 256 * 256; }
int64_t dq_acc_bytes(const Problem& p) { return round256(p.B * p.H * p.L * p.E * 4); }
int64_t own_bytes(const Problem& p) { return dq_acc_bytes(p) + round256(p.B * p.H * p.L * 4); }

void backward_graph(GraphBuilder& g, const Problem& p) {
  const Dims sdims = {p.B, p.H, p.L, p.S}, sst = dense_strides(p.H, p.L, p.S);
  const Dims tdims = {p.B, p.H, p.S, p.L}, tst = {p.H * p.L * p.S, p.L * p.S, 1, p.S};  // [S, L] views of S
  const Dims rdims = {p.B, p.H, p.L, 1}, rst = dense_strides(p.H, p.L, 1);
  const Dims qdims = {p.B, p.H, p.L, p.E}, kdims = {p.B, p.H, p.S, p.E};
  const Operand kt = p.k.t(), vt = p.v.t();
  Desc q = g.tensor(kQ, p.q.dims, p.q.strides, p.io, false);
  Desc k = g.tensor(kK, kt.dims, kt.strides, p.io, false);
  Desc v = g.tensor(kV, vt.dims, vt.strides, p.io, false);
  Desc o = g.tensor(kO, p.o.dims, p.o.strides, p.io, false);
  Desc dout = g.tensor(kDout, p.dout.dims, p.dout.strides, p.io, false);
  Desc lse = g.tensor(kLse, rdims, rst, CUDNN_DATA_FLOAT, false);
  Desc dq = g.tensor(kDq, qdims, dense_strides(p.H, p.L, p.E), p.io, false);
  Desc dk = g.tensor(kDk, kdims, dense_strides(p.H, p.S, p.E), p.io, false);
  Desc dv = g.tensor(kDv, kdims, dense_strides(p.H, p.S, p.E), p.io, false);
  Desc scale = g.scalar(kScale), one = g.scalar(kOne);
  // D = rowsum(dout * out)
  Desc prod = g.inner(qdims, dense_strides(p.H, p.L, p.E)), rowsum = g.inner(rdims, rst);
  g.pointwise(CUDNN_POINTWISE_MUL, dout, o, prod);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, prod, rowsum);
  Desc rowdot = g.tensor(kRowDot, rdims, rst, CUDNN_DATA_FLOAT, false);
  g.pointwise(CUDNN_POINTWISE_MUL, rowsum, one, rowdot);
  // P = exp(q k^T * scale - lse), masked
  Desc s = g.inner(sdims, sst), s1 = g.inner(sdims, sst), s2 = g.inner(sdims, sst);
  g.matmul(q, k, s);
  g.pointwise(CUDNN_POINTWISE_MUL, s, scale, s1);
  g.pointwise(CUDNN_POINTWISE_SUB, s1, lse, s2);
  Desc s3 = p.causal ? causal_mask(g, p, s2, g.scalar(kNegInf)) : s2;
  Desc prob = g.inner(sdims, sst);
  g.pointwise(CUDNN_POINTWISE_EXP, s3, nullptr, prob);
  // dv = P^T dout
  Desc prob_t = g.inner(tdims, tst, p.io);
  g.reshape(prob, prob_t);
  g.matmul(prob_t, dout, dv);
  // dS = P (dout v^T - D) * scale
  Desc dp = g.inner(sdims, sst), t1 = g.inner(sdims, sst), t2 = g.inner(sdims, sst), ds = g.inner(sdims, sst);
  g.matmul(dout, v, dp);
  g.pointwise(CUDNN_POINTWISE_SUB, dp, rowdot, t1);
  g.pointwise(CUDNN_POINTWISE_MUL, t1, prob, t2);
  g.pointwise(CUDNN_POINTWISE_MUL, t2, scale, ds);
  // dk = dS^T q
  Desc ds_t = g.inner(tdims, tst, p.io);
  g.reshape(ds, ds_t);
  g.matmul(ds_t, q, dk);
  // dq = dS k, accumulated in f32 and converted
  Desc k_rows = g.inner(p.k.dims, p.k.strides);
  g.reshape(k, k_rows);
  Desc dq_acc = g.tensor(kDqAcc, qdims, dense_strides(p.H, p.L, p.E), CUDNN_DATA_FLOAT, false);
  g.matmul(ds, k_rows, dq_acc);
  g.pointwise(CUDNN_POINTWISE_IDENTITY, dq_acc, nullptr, dq);
}


void execute(CudaBackend& be, const Plan& plan, const std::vector<int64_t>& uids, const std::vector<void*>& ptrs,
             void* ws, const char* what) {
  const cudnnStatus_t s = cudnn_graph::execute(be.cudnn(), plan.plan, uids, ptrs, ws);
  EMBER_CHECK(s == CUDNN_STATUS_SUCCESS, what, ": cuDNN's attention failed: ", cudnnGetErrorString(s));
}

}  // namespace

int64_t cudnn_attention_runs() { return g_runs.load(); }

bool cudnn_attention(CudaBackend& be, const Op& op, const AttnInputs& in, CudaTensor& out, CudaTensor& lse) {
  if (!enabled() || std::getenv("EMBER_CUDA_ATTN_FWD") || !lse.is_contiguous()) return false;  // (FWD: own kernel)
  auto p = problem(op.name(), in, nullptr, nullptr);
  if (!p) return false;
  float scale = float(in.scale), neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<int64_t> uids = {kQ, kK, kV, kO, kLse, kScale};
  std::vector<void*> ptrs = {in.q->raw(), in.k->raw(), in.v->raw(), out.raw(), lse.raw(), &scale};
  if (p->causal) uids.push_back(kNegInf), ptrs.push_back(&neg_inf);
  auto run = [&](const Plan& plan) {
    void* ws = plan.workspace > 0 ? be.workspace(size_t(plan.workspace)) : nullptr;
    execute(be, plan, uids, ptrs, ws, "scaled_dot_product_attention");
  };
  return run_planned(
      be, std::to_string(be.index()) + "/fwd/" + p->key, [&](GraphBuilder& g) { forward_graph(g, *p); }, run);
}

bool cudnn_attention_backward(CudaBackend& be, const Op& op, const AttnInputs& in, const CudaTensor& out,
                              const CudaTensorPtr& dout_t, const CudaTensor& lse, CudaTensor& dq, CudaTensor& dk,
                              CudaTensor& dv) {
  if (!enabled() || std::getenv("EMBER_CUDA_ATTN_BWD") || !lse.is_contiguous()) return false;
  auto p = problem(op.name(), in, &out, dout_t.get());
  // (a single score has no engine; cuDNN 9.14 / 9.15 need key counts in whole 128s, which the
  // frontend pads with a mask this graph does not add)
  if (!p || (p->L == 1 && p->S == 1) || (cudnnGetVersion() < 91600 && p->S % 128 != 0)) return false;
  CudaTensorPtr dout = dout_t;
  float scale = float(in.scale), one = 1.0f, neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<int64_t> uids = {kQ, kK, kV, kO, kDout, kLse, kDq, kDk, kDv, kScale, kOne, kRowDot, kDqAcc};
  if (p->causal) uids.push_back(kNegInf);
  auto run = [&](const Plan& plan) {
    if (p->dense_dout && dout == dout_t) {  // (once, when a plan runs)
      dout = alloc(be, {dout_t->shape(), dout_t->dtype()});
      copy_view(be, view_of(*dout), view_of(*dout_t));
    }
    auto* base = static_cast<char*>(be.workspace(size_t(own_bytes(*p) + plan.workspace)));
    void* dq_acc = base;
    void* rowdot = base + dq_acc_bytes(*p);
    if (const char* e = std::getenv("EMBER_CUDNN_POISON"); e && *e == '1')                // (tests: the graph must not
      EMBER_CUDA_CHECK(cudaMemsetAsync(base, 0xff, size_t(own_bytes(*p)), be.stream()));  // read them first)
    std::vector<void*> ptrs = {in.q->raw(), in.k->raw(), in.v->raw(), out.raw(), dout->raw(), lse.raw(), dq.raw(),
                               dk.raw(),    dv.raw(),    &scale,      &one,      rowdot,      dq_acc};
    if (p->causal) ptrs.push_back(&neg_inf);
    execute(be, plan, uids, ptrs, base + own_bytes(*p), "attention_backward");
  };
  return run_planned(
      be, std::to_string(be.index()) + "/bwd/" + p->key, [&](GraphBuilder& g) { backward_graph(g, *p); }, run);
}

}  // namespace ember::cuda
