// Matrix products: matmul ([..., n, k] x [..., k, m] -> [..., n, m], batch dims broadcast).
//
// Floating dtypes go through cuBLASLt. ember's matrices are row-major, cuBLASLt's are
// column-major: a row-major M x N matrix with leading dimension ld is the column-major N x M
// matrix with the same ld, so C = A B is computed as C^T = B^T A^T with the operands swapped
// and no data moved. An operand whose last two dims are a transposed matrix (strides [1, ld])
// is passed with the transpose op instead of being copied; anything else that is not a plain
// strided matrix (negative, zero or overlapping strides) is made contiguous first.
//
// The batch dims of both operands and the (contiguous) output are collapsed as on the CPU
// backend: the innermost collapsed dim becomes cuBLASLt's strided batch (stride 0 for an
// operand shared by the batch), the remaining outer dims are a loop of launches (rare). When
// the rhs is shared by every batch entry and the lhs rows continue across the batch (a linear
// layer), the whole product is one tall GEMM.
//
// Compute types: f32 in exact fp32 (CUBLAS_COMPUTE_32F) unless set_allow_tf32(true); f16 and
// bf16 accumulate in fp32 and round once; f64 in fp64. The descriptors and the algorithm are
// cached per problem (dtype, sizes, leading dims, batch strides, transposes, pointer
// alignments), so a repeated product pays only for its launch. The algorithm is the fastest of
// cuBLASLt's heuristic's first kLtCandidates, timed on the first call of a problem of at least
// kTuneFlops (autotuning: on an H200, the GPT-2-small-shaped TF32 training step of
// bench_cuda.cpp ran 1.5% faster than on the heuristic's first choices). The winner's configuration
// (algo_identity) persists in <cache_dir>/autotune-cublaslt.txt (autotune.hpp); a later process takes a saved
// winner that is among its heuristic's candidates without timing them, and ignores any other.
//
// Integer dtypes use a generated tiled kernel that accumulates with wrap-around in 32 bits
// (64 for i64) — the same values modulo 2^bits as the CPU's kernel.
#include "matmul.hpp"

#include "attention_sources.hpp"
#include "autotune.hpp"
#include "cudnn_graph.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace ember::cuda {

namespace {

std::atomic<bool> g_allow_tf32{false};

constexpr size_t kWorkspaceBytes = size_t(32) << 20;
constexpr int kLtCandidates = 8;
constexpr double kTuneFlops = 1e9;  // smaller products keep the heuristic's first choice

// ---------------------------------------------------------------------------------------
// cuBLASLt plans

struct LtKey {
  int device = 0;
  DType dtype = DType::f32;
  bool tf32 = false, ta = false, tb = false;
  int epilogue = 0;
  int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0, sa = 0, sb = 0, sc = 0, batch = 1;
  uint32_t align_a = 0, align_b = 0, align_c = 0, align_bias = 0;
  uint32_t align_addend = 0;  // 0: no addend (beta 0)
  bool operator==(const LtKey&) const = default;
};

struct LtKeyHash {
  size_t operator()(const LtKey& k) const {
    uint64_t h = 0xcbf29ce484222325ULL;
    auto mix = [&](uint64_t v) {
      h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    };
    mix(uint64_t(k.device));
    mix(uint64_t(k.dtype));
    mix(uint64_t(k.tf32) | uint64_t(k.ta) << 1 | uint64_t(k.tb) << 2 | uint64_t(k.epilogue) << 3);
    for (int64_t v : {k.M, k.N, k.K, k.lda, k.ldb, k.ldc, k.sa, k.sb, k.sc, k.batch}) mix(uint64_t(v));
    mix(uint64_t(k.align_a) | uint64_t(k.align_b) << 16 | uint64_t(k.align_c) << 32 | uint64_t(k.align_bias) << 48);
    mix(uint64_t(k.align_addend));
    return size_t(h);
  }
};

// Descriptors and algorithm of one problem. Never destroyed (they are small host objects,
// kept for the life of the process like the JIT's modules).
struct LtPlan {
  bool ok = false;  // cuBLASLt found an algorithm
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A (our B), B (our A), C = D
  cublasLtMatmulAlgo_t algo{};
  std::vector<cublasLtMatmulAlgo_t> candidates;  // until the first call times them
  bool scale_double = false;
};

std::mutex g_plans_mu;
std::unordered_map<LtKey, LtPlan*, LtKeyHash>& plans() {
  static auto* m = new std::unordered_map<LtKey, LtPlan*, LtKeyHash>();
  return *m;
}

// The problem's key in the "cublaslt" autotune store (not the device index: the store's
// environment names the GPU model).
std::string lt_store_key(const LtKey& k) {
  std::string s(dtype_name(k.dtype));
  if (k.tf32) s += " tf32";
  s += k.ta ? " ta" : "";
  s += k.tb ? " tb" : "";
  s += " e" + std::to_string(k.epilogue);
  for (int64_t v : {k.M, k.N, k.K, k.lda, k.ldb, k.ldc, k.sa, k.sb, k.sc, k.batch}) s += ' ' + std::to_string(v);
  for (uint32_t v : {k.align_a, k.align_b, k.align_c, k.align_bias}) s += " a" + std::to_string(v);
  if (k.align_addend) s += " c" + std::to_string(k.align_addend);  // (keys without one are unchanged)
  return s;
}

AutotuneStore& lt_store(CudaBackend& be) {
  return autotune_store("cublaslt", autotune_environment(be.props(), "cuBLASLt " + std::to_string(cublasLtGetVersion())));
}

// What identifies an algorithm across processes: its configuration attributes (the algorithm id,
// tile, split-K, reduction scheme, swizzle, custom option, stages, inner and cluster shapes), not
// the bytes of the opaque cublasLtMatmulAlgo_t, which need not be the same for the same choice.
// Empty when an attribute cannot be read.
std::string algo_identity(const cublasLtMatmulAlgo_t& algo) {
  static constexpr cublasLtMatmulAlgoConfigAttributes_t kAttrs[] = {
      CUBLASLT_ALGO_CONFIG_ID,            CUBLASLT_ALGO_CONFIG_TILE_ID,       CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
      CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION,
      CUBLASLT_ALGO_CONFIG_STAGES_ID,     CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID};
  std::string id = "cfg";
  for (cublasLtMatmulAlgoConfigAttributes_t a : kAttrs) {
    size_t size = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, a, nullptr, 0, &size) != CUBLAS_STATUS_SUCCESS || size == 0 ||
        size > sizeof(uint64_t))
      return {};
    uint64_t v = 0;  // (little-endian: a narrower attribute fills the low bytes)
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, a, &v, size, &size) != CUBLAS_STATUS_SUCCESS) return {};
    id += ':';
    id += std::to_string(v);
  }
  return id;
}

// Largest power of two (<= 256) that divides the address and, in a batch, the batch stride.
uint32_t alignment_of(const void* p, int64_t batch_stride_bytes) {
  uint64_t v = reinterpret_cast<uint64_t>(p) | 256u;
  if (batch_stride_bytes != 0) v |= uint64_t(batch_stride_bytes);
  return uint32_t(v & (~v + 1));
}

void lt_check(cublasStatus_t s, std::string_view op, const char* what, const GemmArgs& g) {
  EMBER_CHECK(s == CUBLAS_STATUS_SUCCESS, op, ": cuBLASLt ", what, " failed (status ", int(s), ") for a ",
              g.dtype, " product of ", g.M, "x", g.K, " and ", g.K, "x", g.N, " (batch ", g.batch, ")");
}

cudaDataType_t cuda_type(DType dt) {
  switch (dt) {
    case DType::f64: return CUDA_R_64F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

// A column-major layout of `rows` x `cols` with leading dimension ld, batched.
cublasLtMatrixLayout_t make_layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                   int64_t stride, std::string_view op, const GemmArgs& g) {
  cublasLtMatrixLayout_t l = nullptr;
  lt_check(cublasLtMatrixLayoutCreate(&l, t, uint64_t(rows), uint64_t(cols), ld), op, "layout", g);
  if (batch > 1) {
    int32_t n = int32_t(batch);
    lt_check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &n, sizeof n), op, "layout",
             g);
    lt_check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
             op, "layout", g);
  }
  return l;
}

LtPlan* make_plan(CudaBackend& be, const LtKey& k, const GemmArgs& g, std::string_view op) {
  auto* p = new LtPlan();
  const cudaDataType_t t = cuda_type(k.dtype);
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  if (k.dtype == DType::f64) {
    compute = CUBLAS_COMPUTE_64F;
    scale = CUDA_R_64F;
    p->scale_double = true;
  } else if (k.dtype == DType::f32 && k.tf32) {
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  lt_check(cublasLtMatmulDescCreate(&p->desc, compute, scale), op, "descriptor", g);
  // cuBLASLt computes D (N x M, column-major) = op(B-memory) * op(A-memory).
  cublasOperation_t opa = k.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opb = k.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  lt_check(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa), op, "descriptor",
           g);
  lt_check(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb), op, "descriptor",
           g);
  if (k.epilogue != 0) {
    cublasLtEpilogue_t e = k.epilogue == int(Epilogue::bias)        ? CUBLASLT_EPILOGUE_BIAS
                           : k.epilogue == int(Epilogue::relu_bias) ? CUBLASLT_EPILOGUE_RELU_BIAS
                                                                    : CUBLASLT_EPILOGUE_GELU_BIAS;
    lt_check(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e), op, "descriptor",
             g);
    lt_check(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &t, sizeof t), op,
             "descriptor", g);
  }
  p->a = k.tb ? make_layout(t, k.K, k.N, k.ldb, k.batch, k.sb, op, g) : make_layout(t, k.N, k.K, k.ldb, k.batch, k.sb, op, g);
  p->b = k.ta ? make_layout(t, k.M, k.K, k.lda, k.batch, k.sa, op, g) : make_layout(t, k.K, k.M, k.lda, k.batch, k.sa, op, g);
  p->c = make_layout(t, k.N, k.M, k.ldc, k.batch, k.sc, op, g);

  cublasLtMatmulPreference_t pref = nullptr;
  lt_check(cublasLtMatmulPreferenceCreate(&pref), op, "preference", g);
  uint64_t ws = kWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  // cuBLASLt's A is our B and vice versa.
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &k.align_b, sizeof k.align_b);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &k.align_a, sizeof k.align_a);
  const uint32_t align_c_in = k.align_addend ? std::min(k.align_c, k.align_addend) : k.align_c;  // C is read from the addend
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c_in, sizeof align_c_in);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &k.align_c, sizeof k.align_c);
  cublasLtMatmulHeuristicResult_t results[kLtCandidates] = {};
  int count = 0;
  const double flops = 2.0 * double(k.M) * double(k.N) * double(k.K) * double(k.batch);
  const int want = autotune_enabled() && flops >= kTuneFlops ? kLtCandidates : 1;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(be.cublaslt(), p->desc, p->a, p->b, p->c, p->c, pref, want,
                                                    results, &count);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS) return p;
  for (int i = 0; i < count; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS) p->candidates.push_back(results[i].algo);
  if (!p->candidates.empty()) {
    p->ok = true;
    p->algo = p->candidates[0];
  }
  if (p->candidates.size() < 2) {
    p->candidates.clear();
  } else if (const std::optional<std::string> saved = lt_store(be).get(lt_store_key(k))) {
    // a winner an earlier process timed, by its configuration: used only when this heuristic
    // offers it too
    for (const cublasLtMatmulAlgo_t& c : p->candidates)
      if (algo_identity(c) == *saved) {
        p->algo = c;
        p->candidates.clear();
        autotune_note("cublaslt", "saved", lt_store_key(k));
        break;
      }
  }
  return p;
}

// ---------------------------------------------------------------------------------------
// matmul

// How a rows x cols operand with strides (rs, cs) is passed to cuBLASLt: as stored (ld = row
// stride) or transposed (ld = column stride), or not at all (false: copy it first).
bool matrix_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool& trans, int64_t& ld) {
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= std::max<int64_t>(cols, 1))) {
    trans = false;
    ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    return true;
  }
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= std::max<int64_t>(rows, 1))) {
    trans = true;
    ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
    return true;
  }
  return false;
}

// Batch strides of `t` (rank >= 2) over the output's batch dims (0 on broadcast dims).
std::vector<int64_t> batch_strides(const CudaTensor& t, int nb) {
  const Shape& s = t.shape();
  int tb = s.rank() - 2;
  std::vector<int64_t> st(size_t(nb), 0);
  for (int d = 0; d < tb; ++d)
    if (s[d] != 1) st[size_t(nb - tb + d)] = t.strides[size_t(d)];
  return st;
}

// Element offsets of the outer (all but the innermost) collapsed batch entry `o`.
void outer_offsets(const Collapsed& c, int64_t o, int64_t& oa, int64_t& ob, int64_t& oc) {
  oa = ob = oc = 0;
  for (int d = c.shape.rank - 2; d >= 0; --d) {
    int64_t i = o % c.shape.size[d];
    o /= c.shape.size[d];
    oa += i * c.strides[0].v[d];
    ob += i * c.strides[1].v[d];
    oc += i * c.strides[2].v[d];
  }
}

// A contiguous copy of `t` expanded to batch dims `batch` (+ its matrix dims).
CudaTensorPtr materialize(CudaBackend& be, const CudaTensor& t, const Shape& batch) {
  Shape full = batch;
  full.dims().push_back(t.shape()[-2]);
  full.dims().push_back(t.shape()[-1]);
  auto out = alloc(be, {full, t.dtype()});
  copy_view(be, view_of(*out), View{t.raw(), t.dtype(), full, broadcast_strides(t, full)});
  return out;
}

// bias: null, or [N] added to every row through cuBLASLt's bias epilogue. Returns false (the
// caller adds the bias) when cuBLASLt has no algorithm with that epilogue for the problem.
// addend: null, or a contiguous tensor of out's shape added to the product (GemmArgs::addend).
bool matmul_float(CudaBackend& be, Op& op, CudaTensorPtr a, CudaTensorPtr b, const CudaTensor* bias,
                  CudaTensor& out, const CudaTensor* addend = nullptr) {
  const Shape& os = out.shape();
  const int nb = os.rank() - 2;
  const int64_t M = a->shape()[-2], K = a->shape()[-1], N = b->shape()[-1];
  const size_t esz = dtype_size(out.dtype());
  Shape batch(os.begin(), os.end() - 2);

  GemmArgs g;
  g.dtype = out.dtype();
  g.M = M;
  g.N = N;
  g.K = K;
  if (bias) {
    g.epilogue = Epilogue::bias;
    g.bias = bias->raw();
  }
  auto set_a = [&](const CudaTensor& t) {
    const int r = t.shape().rank();
    return matrix_layout(M, K, t.strides[size_t(r - 2)], t.strides[size_t(r - 1)], g.ta, g.lda);
  };
  auto set_b = [&](const CudaTensor& t) {
    const int r = t.shape().rank();
    return matrix_layout(K, N, t.strides[size_t(r - 2)], t.strides[size_t(r - 1)], g.tb, g.ldb);
  };
  if (!set_a(*a)) {
    a = contiguous(be, a);
    set_a(*a);
  }
  if (!set_b(*b)) {
    b = contiguous(be, b);
    set_b(*b);
  }
  g.ldc = N;

  std::vector<int64_t> sc(static_cast<size_t>(nb));
  for (int d = 0; d < nb; ++d) sc[size_t(d)] = out.strides[size_t(d)];
  Collapsed c = collapse(op.name(), batch, {batch_strides(*a, nb), batch_strides(*b, nb), sc});
  const int r = c.shape.rank;
  int64_t outer = 1;
  for (int d = 0; d + 1 < r; ++d) outer *= c.shape.size[d];
  if (r > 0) {
    g.batch = c.shape.size[r - 1];
    g.stride_a = c.strides[0].v[r - 1];
    g.stride_b = c.strides[1].v[r - 1];
    g.stride_c = c.strides[2].v[r - 1];
  }
  // A shared rhs and lhs rows that continue across the batch: one tall GEMM.
  if (r == 1 && g.stride_b == 0 && !g.ta && g.stride_a > 0 && (g.stride_a == M * g.lda || (M == 1 && g.stride_a >= K))) {
    if (M == 1) g.lda = g.stride_a;
    g.M = M * g.batch;
    g.batch = 1;
    g.stride_a = g.stride_c = 0;
  }
  // cuBLASLt takes non-negative batch strides; the batch count is 32-bit.
  const bool batch_ok = g.stride_a >= 0 && g.stride_b >= 0 && g.batch < (int64_t(1) << 31);
  auto run_all = [&](const GemmArgs& base) {
    for (int64_t o = 0; o < outer; ++o) {
      int64_t oa = 0, ob = 0, oc = 0;
      if (r > 1) outer_offsets(c, o, oa, ob, oc);
      GemmArgs e = base;
      e.A = static_cast<const char*>(a->raw()) + oa * int64_t(esz);
      e.B = static_cast<const char*>(b->raw()) + ob * int64_t(esz);
      e.C = static_cast<char*>(out.raw()) + oc * int64_t(esz);
      if (addend) e.addend = static_cast<const char*>(addend->raw()) + oc * int64_t(esz);  // (laid out as out)
      if (!try_gemm_lt(be, e, op.name())) return false;
    }
    return true;
  };
  // (The first launch is the only one that can fail: every entry has the same plan.)
  if (batch_ok && run_all(g)) return true;

  // Fallback: both operands materialised as contiguous [batch..., rows, cols], one batch.
  auto af = materialize(be, *a, batch), bf = materialize(be, *b, batch);
  GemmArgs f;
  f.dtype = out.dtype();
  f.M = M;
  f.N = N;
  f.K = K;
  f.A = af->raw();
  f.lda = K;
  f.stride_a = M * K;
  f.B = bf->raw();
  f.ldb = N;
  f.stride_b = K * N;
  f.C = out.raw();
  f.ldc = N;
  f.stride_c = M * N;
  f.batch = batch.numel();
  f.epilogue = g.epilogue;
  f.bias = g.bias;
  f.addend = addend ? addend->raw() : nullptr;
  if (bias || addend) return try_gemm_lt(be, f, op.name());
  gemm_lt(be, f, op.name());
  return true;
}

// ---------------------------------------------------------------------------------------
// Integer matmul: 64x64 output tiles, 16-deep K slices staged in shared memory, 4x4 outputs per
// thread. Batch entries are blockIdx.z (grid-stride); the batch dims are collapsed on the host
// and each operand's batch offset comes from offset_of.

void matmul_int(CudaBackend& be, Op& op, const CudaTensor& a, const CudaTensor& b, CudaTensor& out) {
  const Shape& os = out.shape();
  const int nb = os.rank() - 2;
  const int64_t M = a.shape()[-2], K = a.shape()[-1], N = b.shape()[-1];
  Shape batch(os.begin(), os.end() - 2);
  std::vector<int64_t> sc(static_cast<size_t>(nb));
  for (int d = 0; d < nb; ++d) sc[size_t(d)] = out.strides[size_t(d)];
  Collapsed c = collapse(op.name(), batch, {batch_strides(a, nb), batch_strides(b, nb), sc});
  const int64_t nbatch = batch.numel();
  const int ra = a.shape().rank(), rb = b.shape().rank();
  std::string key = "matmul_int/" + std::string(dtype_name(out.dtype()));
  CUfunction f = be.jit().get(key, "matmul_int", [&] { return int_matmul_source(out.dtype()); });
  const int64_t tiles_m = (M + 63) / 64, tiles_n = (N + 63) / 64;
  dim3 grid(unsigned(std::min<int64_t>(tiles_n, 65535)), unsigned(std::min<int64_t>(tiles_m, 65535)),
            unsigned(std::min<int64_t>(nbatch, 65535)));
  be.launch(f, grid, dim3(256), 0, out.raw(), a.raw(), b.raw(), M, N, K, a.strides[size_t(ra - 2)],
            a.strides[size_t(ra - 1)], b.strides[size_t(rb - 2)], b.strides[size_t(rb - 1)], nbatch, c.shape,
            c.strides[0], c.strides[1]);
}

std::vector<PrimitivePtr> matmul_kernel(CudaBackend& be, Op& op) {
  const TensorMeta& om = op.outputs[0];
  auto out = alloc(be, om);
  const int64_t total = om.shape.numel();
  if (total == 0) return {out};
  auto a = as_cuda_ptr(op.inputs[0]), b = as_cuda_ptr(op.inputs[1]);
  EMBER_CHECK(om.dtype != DType::boolean, op.name(), ": bool tensors are not supported");
  // (inference admits a bias for floating dtypes only)
  CudaTensorPtr bias = op.inputs.size() > 2 && op.inputs[2] ? contiguous(be, op.inputs[2]) : nullptr;
  if (a->shape()[-1] == 0) {  // empty sums: zeros, or the bias in every row
    if (bias)
      copy_view(be, view_of(*out), View{bias->raw(), om.dtype, om.shape, broadcast_strides(*bias, om.shape)});
    else
      EMBER_CUDA_CHECK(cudaMemsetAsync(out->raw(), 0, size_t(total) * dtype_size(om.dtype), be.stream()));
    return {out};
  }
  if (is_float(om.dtype)) {
    if (!matmul_float(be, op, a, b, bias.get(), *out)) {  // no epilogue for this problem: a separate add
      matmul_float(be, op, a, b, nullptr, *out);
      return be.execute(make_op(OpKind::add, {out, bias}));
    }
  } else {
    matmul_int(be, op, *a, *b, *out);
  }
  return {out};
}

}  // namespace

PrimitivePtr matmul_plus(CudaBackend& be, Op& op, const CudaTensor& addend) {
  const TensorMeta& om = op.outputs[0];
  if (!is_float(om.dtype) || addend.dtype() != om.dtype || addend.shape() != om.shape || !addend.is_contiguous() ||
      om.shape.numel() == 0 || op.inputs[0]->shape()[-1] == 0)
    return nullptr;
  auto out = alloc(be, om);
  CudaTensorPtr bias = op.inputs.size() > 2 && op.inputs[2] ? contiguous(be, op.inputs[2]) : nullptr;
  if (!matmul_float(be, op, as_cuda_ptr(op.inputs[0]), as_cuda_ptr(op.inputs[1]), bias.get(), *out, &addend))
    return nullptr;
  return out;
}

void set_tf32_allowed(bool on) { g_allow_tf32.store(on); }
bool tf32_allowed() { return g_allow_tf32.load(); }

namespace {

// The product as given: one cuBLASLt call on the plan of its exact layout.
bool gemm_lt_as_given(CudaBackend& be, const GemmArgs& g, std::string_view op) {
  const int64_t esz = int64_t(dtype_size(g.dtype));
  LtKey k;
  k.device = be.index();
  k.dtype = g.dtype;
  k.tf32 = g.dtype == DType::f32 && tf32_allowed();
  k.ta = g.ta;
  k.tb = g.tb;
  k.epilogue = int(g.epilogue);
  k.M = g.M;
  k.N = g.N;
  k.K = g.K;
  // leading dims must cover the stored rows (and be >= 1 even for an empty dim)
  k.lda = std::max<int64_t>({g.lda, g.ta ? g.M : g.K, 1});
  k.ldb = std::max<int64_t>({g.ldb, g.tb ? g.K : g.N, 1});
  k.ldc = std::max<int64_t>({g.ldc, g.N, 1});
  k.batch = std::max<int64_t>(g.batch, 1);
  if (k.batch > 1) {
    k.sa = g.stride_a;
    k.sb = g.stride_b;
    k.sc = g.stride_c;
  }
  k.align_a = alignment_of(g.A, k.sa * esz);
  k.align_b = alignment_of(g.B, k.sb * esz);
  k.align_c = alignment_of(g.C, k.sc * esz);
  if (g.epilogue != Epilogue::none) {
    EMBER_CHECK(g.bias != nullptr, op, ": a bias epilogue needs a bias vector");
    k.align_bias = alignment_of(g.bias, 0);
  }
  if (g.addend) k.align_addend = alignment_of(g.addend, k.sc * esz);
  std::lock_guard<std::mutex> lock(g_plans_mu);  // (held while a first call tunes its plan)
  auto it = plans().find(k);
  if (it == plans().end()) it = plans().emplace(k, make_plan(be, k, g, op)).first;
  LtPlan* p = it->second;
  if (!p->ok) return false;
  if (g.epilogue != Epilogue::none)
    lt_check(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias), op,
             "descriptor", g);
  void* ws = be.workspace(kWorkspaceBytes);
  float alpha_f = float(g.alpha), beta_f = g.addend ? 1.0f : 0.0f;
  double alpha_d = g.alpha, beta_d = g.addend ? 1.0 : 0.0;
  const void* alpha = p->scale_double ? static_cast<const void*>(&alpha_d) : static_cast<const void*>(&alpha_f);
  const void* beta = p->scale_double ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);
  auto run = [&](const cublasLtMatmulAlgo_t& algo) {
    // K == 0: cuBLASLt writes beta * C = 0 (plus the epilogue), as wanted.
    return cublasLtMatmul(be.cublaslt(), p->desc, alpha, g.B, p->a, g.A, p->b, beta, g.addend ? g.addend : g.C, p->c,
                          g.C, p->c, &algo, ws, kWorkspaceBytes, be.stream());
  };
  if (!p->candidates.empty()) {  // first call: keep the fastest (the output is written each time)
    auto best = cudnn_graph::fastest(be.stream(), p->candidates.size(),
                                     [&](size_t i) { return run(p->candidates[i]) == CUBLAS_STATUS_SUCCESS; });
    p->algo = p->candidates[best.value_or(0)];
    p->candidates.clear();
    if (best) {
      if (const std::string id = algo_identity(p->algo); !id.empty()) lt_store(be).put(lt_store_key(k), id);
      autotune_note("cublaslt", "timed", lt_store_key(k));
    }
  }
  lt_check(run(p->algo), op, "matmul", g);
  return true;
}

// A stored rows x cols matrix at `ptr` with leading dimension ld (elements).
struct Stored {
  int64_t rows = 0, cols = 0, ld = 0;
  const void* ptr = nullptr;
};

// Whether cuBLASLt would run on its unaligned ("align1") kernels for `m`: its rows do not all
// start on 16-byte boundaries.
bool unaligned(const Stored& m, int64_t esz) {
  return m.rows > 1 && ((m.ld * esz) % 16 != 0 || reinterpret_cast<uintptr_t>(m.ptr) % 16 != 0);
}

// dst (rows x width, pitch dp) = src where src has the element (r < srows, c < swidth), else 0:
// a matrix copied into a larger zero-padded one, or a padded one cut back to its width. Lanes
// take consecutive elements (the unaligned side is coalesced too), eight loads in flight each.
std::string repitch_source(size_t esz) {
  std::string s = esz == 2 ? "typedef unsigned short T;\n" : "typedef unsigned int T;\n";
  s += R"CUDA(
extern "C" __global__ void __launch_bounds__(256) repitch(T* __restrict__ dst, const T* __restrict__ src,
    long long rows, long long width, long long dp, long long srows, long long swidth, long long sp) {
  for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
    const long long c0 = (long long)blockIdx.x * 2048 + threadIdx.x;
    T v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const long long c = c0 + k * 256;
      v[k] = r < srows && c < swidth && c < width ? src[r * sp + c] : T(0);
    }
#pragma unroll
    for (int k = 0; k < 8; ++k)
      if (c0 + k * 256 < width) dst[r * dp + c0 + k * 256] = v[k];
  }
}
)CUDA";
  return s;
}

void repitch(CudaBackend& be, size_t esz, void* dst, int64_t rows, int64_t width, int64_t dp, const Stored& src) {
  CUfunction f = be.jit().get("matmul/repitch/" + std::to_string(esz), "repitch", [&] { return repitch_source(esz); });
  dim3 grid(unsigned((width + 2047) / 2048), unsigned(std::min<int64_t>(rows, 65535)));
  be.launch(f, grid, dim3(256), 0, dst, src.ptr, rows, width, dp, src.rows, src.cols, src.ld);
}

// `m` copied into a new contiguous rows x cols matrix (rows >= m.rows, cols >= m.cols), zeros
// where m has no element.
CudaTensorPtr padded_copy(CudaBackend& be, DType dt, const Stored& m, int64_t rows, int64_t cols) {
  auto t = alloc(be, {Shape{rows, cols}, dt});
  repitch(be, dtype_size(dt), t->raw(), rows, cols, cols, m);
  return t;
}

// cuBLASLt runs a product whose rows are not 16-byte aligned (a leading dim or a row length
// that is not a multiple of 16 bytes) on its "align1" kernels, 4-6x slower than the aligned
// ones. GPT-2's vocabulary of 50257 put the head's three bf16 products at 14.6 ms of a 43 ms
// training step on an H100 (forward 6.2 ms; 0.96 ms with 50264 columns, as PyTorch's own cuBLAS
// call takes). Aligning the leading dim alone does not help: the row length must be a multiple
// of 16 bytes as well. So above kPadFlops, each of M, N, K that is an operand's row length and
// not a multiple of 16 bytes is rounded up, as torch.compile's padding of matmuls does: the
// operands holding it are copied into zero-padded ones (zeros in the extra K add nothing; extra
// rows and columns of C are dropped), and C is computed at the padded size and cut back. A copy
// moves rows x cols elements where the product does rows x cols x (its third dim, at least
// kPadMinDim) multiply-adds.
constexpr double kPadFlops = 2e9;
constexpr int64_t kPadMinDim = 256;

}  // namespace

bool try_gemm_lt(CudaBackend& be, const GemmArgs& g, std::string_view op) {
  EMBER_CHECK(is_float(g.dtype), op, ": cuBLASLt products take floating dtypes, got ", g.dtype);
  if (g.M == 0 || g.N == 0 || g.batch == 0) return true;
  EMBER_CHECK(g.K > 0, op, ": gemm_lt needs K > 0 (the caller fills empty sums)");
  const int64_t esz = int64_t(dtype_size(g.dtype));
  if ((esz != 2 && esz != 4) || g.batch > 1 || g.addend || 2.0 * double(g.M) * double(g.N) * double(g.K) < kPadFlops)
    return gemm_lt_as_given(be, g, op);
  const int64_t per = 16 / esz;
  auto round_up = [&](int64_t v, bool inner) { return inner && v % per != 0 ? (v + per - 1) / per * per : v; };
  // padded dims: K is A's row length unless ta, and B's when tb; M is A's when ta; N is C's
  const int64_t Mp = round_up(g.M, g.ta), Np = round_up(g.N, true), Kp = round_up(g.K, !g.ta || g.tb);
  const Stored a{g.ta ? g.K : g.M, g.ta ? g.M : g.K, std::max<int64_t>(g.lda, g.ta ? g.M : g.K), g.A};
  const Stored b{g.tb ? g.N : g.K, g.tb ? g.K : g.N, std::max<int64_t>(g.ldb, g.tb ? g.K : g.N), g.B};
  const Stored c{g.M, g.N, std::max<int64_t>(g.ldc, g.N), g.C};
  const int64_t ar = g.ta ? Kp : Mp, ac = g.ta ? Mp : Kp, br = g.tb ? Np : Kp, bc = g.tb ? Kp : Np;
  const bool pad_a = ar != a.rows || ac != a.cols || unaligned(a, esz);
  const bool pad_b = br != b.rows || bc != b.cols || unaligned(b, esz);
  const bool pad_c = Mp != g.M || Np != g.N || unaligned(c, esz);
  if ((!pad_a && !pad_b && !pad_c) || (pad_a && g.N < kPadMinDim) || (pad_b && g.M < kPadMinDim) ||
      (pad_c && g.K < kPadMinDim))
    return gemm_lt_as_given(be, g, op);
  GemmArgs p = g;
  p.M = Mp;
  p.N = Np;
  p.K = Kp;
  CudaTensorPtr pa, pb, pc, pbias;  // (held until the product is queued; the pool is stream-ordered)
  if (pad_a) {
    pa = padded_copy(be, g.dtype, a, ar, ac);
    p.A = pa->raw();
    p.lda = ac;
  }
  if (pad_b) {
    pb = padded_copy(be, g.dtype, b, br, bc);
    p.B = pb->raw();
    p.ldb = bc;
  }
  if (pad_c) {
    pc = alloc(be, {Shape{Mp, Np}, g.dtype});
    p.C = pc->raw();
    p.ldc = Np;
  }
  if (g.epilogue != Epilogue::none && Np != g.N) {
    pbias = padded_copy(be, g.dtype, Stored{1, g.N, g.N, g.bias}, 1, Np);
    p.bias = pbias->raw();
  }
  if (!gemm_lt_as_given(be, p, op)) return false;
  if (pad_c) repitch(be, size_t(esz), g.C, g.M, g.N, c.ld, Stored{Mp, Np, Np, pc->raw()});
  return true;
}

void gemm_lt(CudaBackend& be, const GemmArgs& g, std::string_view op) {
  EMBER_CHECK(try_gemm_lt(be, g, op), op, ": cuBLASLt has no algorithm for a ", g.dtype, " product of ", g.M, "x",
              g.K, (g.ta ? " (transposed)" : ""), " and ", g.K, "x", g.N, (g.tb ? " (transposed)" : ""), ", batch ",
              g.batch, " (strides ", g.stride_a, ", ", g.stride_b, ", ", g.stride_c, ")");
}

std::string int_matmul_source(DType dt) {
  std::string s = "typedef " + std::string(device_type(dt)) + " T;\n";
  // Wrap-around accumulation: unsigned arithmetic (no overflow UB) in 32 bits, 64 for i64.
  s += dtype_size(dt) == 8 ? "typedef uint64_t Acc;\n" : "typedef uint32_t Acc;\n";
  s += R"CUDA(
#define TM 64
#define TN 64
#define TK 16
extern "C" __global__ void __launch_bounds__(256) matmul_int(T* __restrict__ C, const T* __restrict__ A,
    const T* __restrict__ B, int64_t M, int64_t N, int64_t K, int64_t rsa, int64_t csa, int64_t rsb, int64_t csb,
    int64_t nbatch, EMBER_GC Shape bsh, EMBER_GC Strides bsa, EMBER_GC Strides bsb) {
  __shared__ Acc As[TK][TM + 1];
  __shared__ Acc Bs[TK][TN + 1];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int64_t tiles_m = (M + TM - 1) / TM, tiles_n = (N + TN - 1) / TN;
  for (int64_t bz = blockIdx.z; bz < nbatch; bz += gridDim.z) {
    const T* a = A + offset_of(bz, bsh, bsa);
    const T* b = B + offset_of(bz, bsh, bsb);
    T* c = C + bz * M * N;
    for (int64_t tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
      for (int64_t tn = blockIdx.x; tn < tiles_n; tn += gridDim.x) {
        const int64_t m0 = tm * TM, n0 = tn * TN;
        Acc acc[4][4];
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) acc[i][j] = 0;
        for (int64_t k0 = 0; k0 < K; k0 += TK) {
          // stage A[m0:m0+64, k0:k0+16] (transposed: As[k][m]) and B[k0:k0+16, n0:n0+64]
          for (int e = tid; e < TM * TK; e += 256) {
            int mi = e / TK, ki = e % TK;
            int64_t m = m0 + mi, k = k0 + ki;
            As[ki][mi] = (m < M && k < K) ? Acc(a[m * rsa + k * csa]) : Acc(0);
          }
          for (int e = tid; e < TK * TN; e += 256) {
            int ki = e / TN, ni = e % TN;
            int64_t k = k0 + ki, n = n0 + ni;
            Bs[ki][ni] = (k < K && n < N) ? Acc(b[k * rsb + n * csb]) : Acc(0);
          }
          __syncthreads();
          for (int ki = 0; ki < TK; ++ki) {
            Acc av[4], bv[4];
            for (int i = 0; i < 4; ++i) av[i] = As[ki][ty + 16 * i];
            for (int j = 0; j < 4; ++j) bv[j] = Bs[ki][tx + 16 * j];
            for (int i = 0; i < 4; ++i)
              for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
          }
          __syncthreads();
        }
        for (int i = 0; i < 4; ++i) {
          int64_t m = m0 + ty + 16 * i;
          if (m >= M) continue;
          for (int j = 0; j < 4; ++j) {
            int64_t n = n0 + tx + 16 * j;
            if (n < N) c[m * N + n] = T(acc[i][j]);
          }
        }
      }
    }
  }
}
)CUDA";
  return s;
}

void register_matmul_kernels(KernelTable& t) { t[size_t(OpKind::matmul)] = matmul_kernel; }

}  // namespace ember::cuda
