// Convolutions through cuDNN: conv (a forward convolution) and conv_transpose (a backward-data
// convolution: the transposed conv of x with weight [C, O/g, k...] is the data gradient of the
// conv that maps an [N, O, out...] tensor to x's shape with that weight).
//
// Layouts are PyTorch's (NC*, weights [O, C/g, k...] / [C, O/g, k...]); operands are made
// contiguous and described as packed NCHW / NCDHW tensors. 1-d convs run as 2-d ones with a
// unit height. f32 runs in exact fp32 (CUDNN_FMA_MATH) unless set_allow_tf32(true); f16 and
// bf16 use tensor cores with fp32 accumulation; f64 computes in double.
//
// Two kinds of candidates run a problem (dtype, shapes, attributes, math, bias or not):
// - execution plans of cuDNN's graph API: an operation graph of the convolution (for a forward
//   conv with a bias, also one of the convolution followed by the bias's addition, which then
//   happens in the same kernel), and the engine configurations cuDNN's heuristics rank first for
//   it (kMaxGraphCandidates of those that keep the dtype's precision). A finalized plan is cheap
//   to launch: 5-9 us of host time a call on an H200 host, where the legacy call costs 20-120 us
//   (it plans again on every call); at batch 1 its engines were also faster on the GPU
//   (ResNet-18's 3x3 convs in exact f32: 19-57 us against 35-77 us);
// - the legacy algorithms (cudnnConvolutionForward / BackwardData), which cover what the graph
//   API has no engine for and, at some shapes, still run fastest (Winograd non-fused).
// With autotuning on (the default) every usable candidate is timed as the wall-clock time of a
// call (with its bias) in a loop of back-to-back calls, so that host cost counts where it
// exceeds the GPU's, and the winner is kept in memory and in <cache_dir>/autotune-cudnn.txt
// (autotune.hpp: keyed by GPU model, driver, CUDA, cuDNN and ember versions, one line per
// problem), so later processes skip the search. With
// autotuning off, the graph API's first plan runs (else the legacy heuristics' first algorithm).
// Where the chosen plan does not add the bias, a small generated kernel does. Batches whose
// tensors exceed cuDNN's 32-bit element counts are split into chunks of images.
#include <cudnn.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "attention_sources.hpp"
#include "autotune.hpp"
#include "cuda_backend.hpp"
#include "cudnn_graph.hpp"
#include "matmul.hpp"

namespace ember::cuda {

namespace {

constexpr size_t kFindWorkspaceCap = size_t(1) << 30;  // largest workspace an algorithm may use
constexpr int kMaxGraphCandidates = 12;                 // engine configurations timed per problem
constexpr size_t kGraphAlignment = 16;                  // byte alignment the graph plans assume

// The problem of one cuDNN call (one chunk of images).
struct ConvProblem {
  std::string op;  // "conv2d", "conv_transpose1d", ... for messages
  bool transpose = false;
  DType dtype = DType::f32;
  int nd = 2;                 // spatial dims given to cuDNN (2 or 3)
  std::vector<int> x, w, y;   // x: conv input / transposed-conv input (dy), y: the other side
  std::vector<int> pad, stride, dilation;
  int groups = 1;
  bool tf32 = false;
  bool bias = false;  // a forward conv whose bias [K] (contiguous) a graph plan may add in the same kernel
  // Built on every call (the plan lookup), so with appends rather than a stream.
  std::string key() const {
    std::string k = transpose ? "bwd_data " : "fwd ";
    k += dtype_name(dtype);
    auto dims = [&k](const char* tag, const std::vector<int>& v) {
      k += tag;
      for (int e : v) (k += ':') += std::to_string(e);
    };
    dims(" x", x);
    dims(" w", w);
    dims(" y", y);
    dims(" p", pad);
    dims(" s", stride);
    dims(" d", dilation);
    k += " g" + std::to_string(groups);
    if (tf32) k += " tf32";
    if (bias) k += " bias";
    return k;
  }
  std::string describe() const {
    std::ostringstream os;
    auto dims = [&](const std::vector<int>& v) {
      os << '[';
      for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
      os << ']';
    };
    os << "input ";
    dims(x);
    os << ", weight ";
    dims(w);
    os << ", output ";
    dims(y);
    os << ", " << dtype_name(dtype) << ", groups " << groups;
    return os.str();
  }
};

void check(cudnnStatus_t s, const ConvProblem& p, const char* what) {
  EMBER_CHECK(s == CUDNN_STATUS_SUCCESS, p.op, ": cuDNN ", what, " failed: ", cudnnGetErrorString(s), " (",
              p.describe(), ")");
}

cudnnDataType_t cudnn_type(DType dt) {
  switch (dt) {
    case DType::f64: return CUDNN_DATA_DOUBLE;
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

// The 1 and 0 that scale a cuDNN call's result (alpha, beta), in its scalar type: double for
// f64, float otherwise.
const void* unit_scalar(const ConvProblem& p, bool one) {
  static const float f[2] = {0.0f, 1.0f};
  static const double d[2] = {0.0, 1.0};
  return p.dtype == DType::f64 ? static_cast<const void*>(&d[one]) : static_cast<const void*>(&f[one]);
}

// The math type the problem asks for.
cudnnMathType_t wanted_math(const ConvProblem& p) {
  if (p.dtype == DType::f16 || p.dtype == DType::bf16) return CUDNN_TENSOR_OP_MATH;
  if (p.dtype == DType::f32) return p.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  return CUDNN_DEFAULT_MATH;
}
// Whether the problem's kernel is larger than 3 in some spatial dimension: Winograd transforms
// over such kernels lose precision (legacy Winograd non-fused on a 5x5 "kernel", a grouped
// conv's weight gradient, came out 7e-4 off in f32).
bool large_kernel(const ConvProblem& p) {
  return std::any_of(p.w.begin() + 2, p.w.end(), [](int k) { return k > 3; });
}
// Whether an (algorithm, math type) pair keeps the problem's precision: exact f32 must not use
// TF32 tensor cores, and exact f32 and f64 take no FFT algorithm (their rounding error grows
// with the transform) and no Winograd one over a kernel larger than 3.
bool algo_ok(const ConvProblem& p, int algo, cudnnMathType_t m) {
  const bool exact = (p.dtype == DType::f32 && !p.tf32) || p.dtype == DType::f64;
  if (p.dtype == DType::f32 && !p.tf32 && m != CUDNN_FMA_MATH) return false;
  if (!exact) return true;
  if (p.transpose)
    return algo != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT && algo != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
           !(large_kernel(p) && (algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD ||
                                 algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED));
  return algo != CUDNN_CONVOLUTION_FWD_ALGO_FFT && algo != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
         !(large_kernel(p) &&
           (algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED));
}

// Descriptors of one problem plus the chosen candidate (cached; never destroyed): a graph-API
// execution plan (`exec`), else the legacy algorithm `algo` under `math`.
struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  bool chosen = false;
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  cudnnBackendDescriptor_t exec = nullptr;
  bool fused = false;  // exec adds the bias
  size_t ws = 0;
};

std::vector<int> packed_strides(const std::vector<int>& dims) {
  std::vector<int> s(dims.size(), 1);
  for (int i = int(dims.size()) - 2; i >= 0; --i) s[size_t(i)] = s[size_t(i + 1)] * dims[size_t(i + 1)];
  return s;
}

ConvPlan* make_plan(const ConvProblem& p) {
  auto* plan = new ConvPlan();
  const cudnnDataType_t t = cudnn_type(p.dtype);
  const int rank = p.nd + 2;
  check(cudnnCreateTensorDescriptor(&plan->x), p, "cudnnCreateTensorDescriptor");
  check(cudnnCreateTensorDescriptor(&plan->y), p, "cudnnCreateTensorDescriptor");
  check(cudnnCreateFilterDescriptor(&plan->w), p, "cudnnCreateFilterDescriptor");
  check(cudnnCreateConvolutionDescriptor(&plan->conv), p, "cudnnCreateConvolutionDescriptor");
  auto sx = packed_strides(p.x), sy = packed_strides(p.y);
  check(cudnnSetTensorNdDescriptor(plan->x, t, rank, p.x.data(), sx.data()), p, "cudnnSetTensorNdDescriptor (input)");
  check(cudnnSetTensorNdDescriptor(plan->y, t, rank, p.y.data(), sy.data()), p, "cudnnSetTensorNdDescriptor (output)");
  check(cudnnSetFilterNdDescriptor(plan->w, t, CUDNN_TENSOR_NCHW, rank, p.w.data()), p, "cudnnSetFilterNdDescriptor");
  const cudnnDataType_t compute = p.dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  check(cudnnSetConvolutionNdDescriptor(plan->conv, p.nd, p.pad.data(), p.stride.data(), p.dilation.data(),
                                        CUDNN_CROSS_CORRELATION, compute),
        p, "cudnnSetConvolutionNdDescriptor");
  check(cudnnSetConvolutionGroupCount(plan->conv, p.groups), p, "cudnnSetConvolutionGroupCount");
  check(cudnnSetConvolutionMathType(plan->conv, wanted_math(p)), p, "cudnnSetConvolutionMathType");
  return plan;
}

// ---- cuDNN's graph API (cudnn_graph.hpp): the problem as an operation graph, its engines ----

using cudnn_graph::Desc;
using cudnn_graph::GraphBuilder;

// Unique ids of the tensors in a graph and its variant packs (kUidConv: the conv's output before
// the bias, which stays inside the kernel).
enum : int64_t { kUidX = 1, kUidW = 2, kUidY = 3, kUidBias = 4, kUidConv = 5 };

// A packed tensor of the problem's dtype.
Desc graph_tensor(GraphBuilder& g, int64_t uid, const std::vector<int>& dims, const ConvProblem& p,
                  bool is_virtual = false) {
  cudnn_graph::Dims dim(dims.begin(), dims.end()), stride(dims.size(), 1);
  for (int i = int(dims.size()) - 2; i >= 0; --i) stride[size_t(i)] = stride[size_t(i + 1)] * dim[size_t(i + 1)];
  return g.tensor(uid, dim, stride, cudnn_type(p.dtype), is_virtual, false, int64_t(kGraphAlignment));
}

// The operation graph of the problem's convolution, followed with `fused` by the bias's addition
// (g.ok() false where cuDNN has no graph for it).
void conv_graph(GraphBuilder& g, const ConvProblem& p, bool fused) {
  Desc x = graph_tensor(g, kUidX, p.x, p), w = graph_tensor(g, kUidW, p.w, p), y = graph_tensor(g, kUidY, p.y, p);
  Desc conv_out = fused ? graph_tensor(g, kUidConv, p.y, p, true) : y;
  Desc conv = g.make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = p.dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t nd = p.nd;
  const std::vector<int64_t> pad(p.pad.begin(), p.pad.end()), stride(p.stride.begin(), p.stride.end()),
      dilation(p.dilation.begin(), p.dilation.end());
  g.set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  g.set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  g.set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nd);
  g.set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, nd, dilation.data());
  g.set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, nd, stride.data());
  g.set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, nd, pad.data());
  g.set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, nd, pad.data());
  g.finalize(conv, "convolution descriptor");
  // conv: y = conv(x, w). conv_transpose: the backward data of a conv, dx = y from dy = x.
  struct OpAttrs {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t in, w, out, conv, alpha, beta;
  };
  const OpAttrs at =
      p.transpose
          ? OpAttrs{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA}
          : OpAttrs{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  const cudnnBackendAttributeType_t scalar = p.dtype == DType::f64 ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
  Desc op = g.make(at.type);
  g.set(op, at.in, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  g.set(op, at.w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
  g.set(op, at.out, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv_out);
  g.set(op, at.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
  g.set(op, at.alpha, scalar, 1, unit_scalar(p, true));
  g.set(op, at.beta, scalar, 1, unit_scalar(p, false));
  g.add_op(op, "convolution");
  if (fused) {  // y = conv_out + bias, the bias a [1, K, 1, ...] tensor broadcast over the rest
    std::vector<int> bias_dims(p.y.size(), 1);
    bias_dims[1] = p.y[1];
    g.pointwise(CUDNN_POINTWISE_ADD, conv_out, graph_tensor(g, kUidBias, bias_dims, p), y, nullptr, compute);
  }
}

// Whether an engine keeps the problem's precision (as algo_ok: exact f32 takes no TF32 tensor
// cores, and neither exact f32 nor f64 a reduced-precision reduction, an FFT or a Winograd
// transform over a kernel larger than 3; no f32 or f64 input is converted down) and compiles
// nothing at run time (that takes seconds a plan).
bool engine_ok(const ConvProblem& p, Desc cfg) {
  Desc engine = nullptr;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) != CUDNN_STATUS_SUCCESS) return false;
  int64_t n = 0;
  bool ok = cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                     &engine) == CUDNN_STATUS_SUCCESS;
  if (ok) {
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                 CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes) != CUDNN_STATUS_SUCCESS)
      n = 0;
    const bool exact = (p.dtype == DType::f32 && !p.tf32) || p.dtype == DType::f64;
    const bool wide = p.dtype == DType::f32 || p.dtype == DType::f64;
    for (int64_t i = 0; i < n; ++i) {
      const cudnnBackendNumericalNote_t note = notes[i];
      if (wide && note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) ok = false;
      if (exact && (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || note == CUDNN_NUMERICAL_NOTE_FFT ||
                    note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION))
        ok = false;
      if (exact && large_kernel(p) &&
          (note == CUDNN_NUMERICAL_NOTE_WINOGRAD || note == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4 ||
           note == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6 || note == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13))
        ok = false;
    }
    cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                 CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, behavior) != CUDNN_STATUS_SUCCESS)
      n = 0;
    for (int64_t i = 0; i < n; ++i)
      if (behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) ok = false;
  }
  cudnnBackendDestroyDescriptor(engine);
  return ok;
}

// One call of a plan: x, w, y and (for a fused plan) the bias bound to the graph's tensors in a
// variant pack.
cudnnStatus_t run_graph(CudaBackend& be, Desc plan, const void* x, const void* w, void* y, const void* bias,
                        void* ws) {
  const int64_t uids[4] = {kUidX, kUidW, kUidY, kUidBias};
  void* const ptrs[4] = {const_cast<void*>(x), const_cast<void*>(w), y, const_cast<void*>(bias)};
  const size_t n = bias ? 4 : 3;
  return cudnn_graph::execute(be.cudnn(), plan, {uids, n}, {ptrs, n}, ws);
}

bool graph_aligned(const void* x, const void* w, const void* y, const void* bias) {
  auto ok = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % kGraphAlignment == 0; };
  return ok(x) && ok(w) && ok(y) && ok(bias);
}

// ---- the persistent choice cache (autotune.hpp's "cudnn" store): "<problem key>" ->
// "<algo> <math>"; a negative algo -1-i names the i-th graph-API candidate ----

std::mutex g_mu;
std::map<std::string, ConvPlan*>& plans() {
  static auto* m = new std::map<std::string, ConvPlan*>();
  return *m;
}

AutotuneStore& saved_algos(CudaBackend& be) {
  return autotune_store("cudnn", autotune_environment(be.props(), "cuDNN " + std::to_string(cudnnGetVersion())));
}

std::optional<std::pair<int, int>> saved_algo(CudaBackend& be, const std::string& key) {
  const std::optional<std::string> v = saved_algos(be).get(key);
  if (!v) return std::nullopt;
  std::istringstream in(*v);
  int algo = 0, math = 0;
  if (!(in >> algo >> math)) return std::nullopt;
  return std::pair{algo, math};
}

void save_algo(CudaBackend& be, const std::string& key, int algo, int math) {
  saved_algos(be).put(key, std::to_string(algo) + ' ' + std::to_string(math));
  autotune_note("cudnn", "timed", key);
}

// Workspace of `algo` under `math` (false when cuDNN does not support it for the problem). The
// size depends on the math type, so the plan's descriptor is given `math` first.
bool workspace_of(CudaBackend& be, const ConvProblem& p, const ConvPlan& plan, int algo, cudnnMathType_t math,
                  size_t& bytes) {
  check(cudnnSetConvolutionMathType(plan.conv, math), p, "cudnnSetConvolutionMathType");
  cudnnStatus_t s;
  if (p.transpose)
    s = cudnnGetConvolutionBackwardDataWorkspaceSize(be.cudnn(), plan.w, plan.x, plan.conv, plan.y,
                                                     cudnnConvolutionBwdDataAlgo_t(algo), &bytes);
  else
    s = cudnnGetConvolutionForwardWorkspaceSize(be.cudnn(), plan.x, plan.w, plan.conv, plan.y,
                                                cudnnConvolutionFwdAlgo_t(algo), &bytes);
  return s == CUDNN_STATUS_SUCCESS;
}

// One legacy call of the plan with `algo` (under the math type the plan's descriptor holds), into
// y with the given workspace.
cudnnStatus_t run_legacy(CudaBackend& be, const ConvProblem& p, const ConvPlan& plan, int algo, const void* x,
                         const void* w, void* y, void* ws, size_t ws_bytes) {
  const void* one = unit_scalar(p, true);
  const void* zero = unit_scalar(p, false);
  if (p.transpose)
    return cudnnConvolutionBackwardData(be.cudnn(), one, plan.w, w, plan.x, x, plan.conv,
                                        cudnnConvolutionBwdDataAlgo_t(algo), ws, ws_bytes, zero, plan.y, y);
  return cudnnConvolutionForward(be.cudnn(), one, plan.x, x, plan.w, w, plan.conv, cudnnConvolutionFwdAlgo_t(algo),
                                 ws, ws_bytes, zero, plan.y, y);
}

// A way to run the problem: a graph-API execution plan (`exec`, the `graph_index`-th of
// graph_candidates(fused)), else the legacy algorithm `algo` under `math`.
struct Candidate {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  Desc exec = nullptr;
  int graph_index = -1;
  bool fused = false;
  size_t ws = 0;
};

void add_bias(CudaBackend& be, CudaTensor& y, const CudaTensor& bias);

// The operands of one call. With p.bias, `out` and `bias_t` are the whole output and the bias
// [K] (contiguous, at `bias`), which add_bias adds after a call whose plan does not.
struct ConvArgs {
  const void* x;
  const void* w;
  void* y;
  const void* bias;
  CudaTensor* out;
  const CudaTensor* bias_t;
};

cudnnStatus_t run_candidate(CudaBackend& be, const ConvProblem& p, const ConvPlan& plan, const Candidate& c,
                            const ConvArgs& a, void* ws) {
  cudnnStatus_t s = c.exec ? run_graph(be, c.exec, a.x, a.w, a.y, c.fused ? a.bias : nullptr, ws)
                           : run_legacy(be, p, plan, c.algo, a.x, a.w, a.y, ws, c.ws);
  if (s == CUDNN_STATUS_SUCCESS && p.bias && !c.fused) add_bias(be, *a.out, *a.bias_t);
  return s;
}

// The fastest of `cands` (cudnn_graph::fastest: the wall-clock time of a call with its bias in
// loops of back-to-back calls, so GPU time where the GPU is the slower side, host time where the
// host is: a small conv's legacy call plans again on the host every time). A candidate whose
// call fails is passed over: cudnnFind reports some (algorithm, math type) pairs that the plain
// call then rejects (bf16 backward data: CUDNN_STATUS_BAD_PARAM).
std::optional<Candidate> fastest(CudaBackend& be, const ConvProblem& p, const ConvPlan& plan,
                                 const std::vector<Candidate>& cands, const ConvArgs& a, void* ws) {
  auto best = cudnn_graph::fastest(be.stream(), cands.size(), [&](size_t i) {
    const Candidate& c = cands[i];
    if (!c.exec) check(cudnnSetConvolutionMathType(plan.conv, c.math), p, "cudnnSetConvolutionMathType");
    return run_candidate(be, p, plan, c, a, ws) == CUDNN_STATUS_SUCCESS;
  });
  if (!best) return std::nullopt;
  return cands[*best];
}

// Picks the plan's way to run (once per problem): saved winner, autotuned, or heuristic.
// `aligned`: the operands meet the graph plans' alignment (else only legacy algorithms run).
void choose_algo(CudaBackend& be, const ConvProblem& p, ConvPlan& plan, const ConvArgs& args, bool aligned) {
  const std::string saved_key = p.key() + (aligned ? "" : " unaligned");
  // Graph-API plans, of the conv alone and (with a bias) of the conv and its bias; the ones not
  // chosen are destroyed once the choice is made.
  std::vector<Candidate> graph;
  // (the engine configurations cuDNN's heuristics rank first, kMaxGraphCandidates of those that
  // keep the problem's precision, in the heuristics' order: graph_index)
  for (bool fused : {false, true}) {
    if (!aligned || (fused && !p.bias)) continue;
    GraphBuilder g(be.cudnn());
    conv_graph(g, p, fused);
    int index = 0;
    for (Desc cfg : g.configs()) {
      if (index == kMaxGraphCandidates) break;
      if (!engine_ok(p, cfg)) continue;
      Candidate c;
      c.graph_index = index++;
      c.fused = fused;
      if (auto plan_i = g.plan(cfg)) {
        c.exec = plan_i->plan;
        c.ws = size_t(plan_i->workspace);
        if (c.ws <= kFindWorkspaceCap) graph.push_back(c);
        else cudnnBackendDestroyDescriptor(c.exec);
      }
    }
  }
  auto take = [&](const Candidate& c) {
    plan.exec = c.exec;
    plan.fused = c.fused;
    plan.ws = c.ws;
    plan.chosen = true;
    for (const Candidate& g : graph)
      if (g.exec != c.exec) cudnnBackendDestroyDescriptor(g.exec);
  };
  auto use = [&](int algo, cudnnMathType_t math) {
    size_t ws = 0;
    if (!algo_ok(p, algo, math) || !workspace_of(be, p, plan, algo, math, ws)) return false;  // (sets math)
    plan.algo = algo;
    plan.math = math;
    take(Candidate{algo, math, nullptr, -1, false, ws});
    return true;
  };
  if (autotune_enabled()) {
    if (const auto saved = saved_algo(be, saved_key)) {
      const auto [algo, second] = *saved;
      if (algo < 0) {  // a graph-API plan: its place among the candidates, and whether it is fused
        for (const Candidate& c : graph)
          if (c.graph_index == -1 - algo && int(c.fused) == second) {
            autotune_note("cudnn", "saved", saved_key);
            return take(c);
          }
      } else if (use(algo, cudnnMathType_t(second))) {
        autotune_note("cudnn", "saved", saved_key);
        return;
      }
    }
    // The legacy candidates, from cudnnFind (which times each once), with a workspace as large as
    // the hungriest supported one needs (capped); then every candidate is timed again.
    size_t ws_max = 0;
    const int count = p.transpose ? int(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT) : int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    for (int a = 0; a < count; ++a) {
      size_t b = 0;
      if (workspace_of(be, p, plan, a, wanted_math(p), b) && b <= kFindWorkspaceCap) ws_max = std::max(ws_max, b);
    }
    const size_t legacy_ws = ws_max;
    for (const Candidate& c : graph) ws_max = std::max(ws_max, c.ws);
    Buffer scratch(be.allocator(), std::max<size_t>(ws_max, 256));
    std::vector<Candidate> cands = graph;
    int n = 0;
    std::vector<std::pair<int, cudnnMathType_t>> found;  // in cudnnFind's order (fastest first)
    if (p.transpose) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      check(cudnnFindConvolutionBackwardDataAlgorithmEx(be.cudnn(), plan.w, args.w, plan.x, args.x, plan.conv, plan.y,
                                                         args.y, count, &n, perf, scratch.ptr, legacy_ws),
            p, "cudnnFindConvolutionBackwardDataAlgorithmEx");
      for (int i = 0; i < n; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= legacy_ws)
          found.emplace_back(int(perf[i].algo), perf[i].mathType);
    } else {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      check(cudnnFindConvolutionForwardAlgorithmEx(be.cudnn(), plan.x, args.x, plan.w, args.w, plan.conv, plan.y,
                                                    args.y, count, &n, perf, scratch.ptr, legacy_ws),
            p, "cudnnFindConvolutionForwardAlgorithmEx");
      for (int i = 0; i < n; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= legacy_ws)
          found.emplace_back(int(perf[i].algo), perf[i].mathType);
    }
    for (const auto& [algo, math] : found) {
      size_t ws = 0;
      if (algo_ok(p, algo, math) && workspace_of(be, p, plan, algo, math, ws) && ws <= legacy_ws)
        cands.push_back(Candidate{algo, math, nullptr, -1, false, ws});
    }
    if (const std::optional<Candidate> best = fastest(be, p, plan, cands, args, scratch.ptr)) {
      if (best->exec) {
        take(*best);
        save_algo(be, saved_key, -1 - best->graph_index, int(best->fused));
        return;
      }
      if (use(best->algo, best->math)) {
        save_algo(be, saved_key, plan.algo, int(plan.math));
        return;
      }
    }
    // (nothing usable was timed: fall through to the heuristics)
  }
  for (bool fused : {true, false})  // the heuristics' first plan, fused where there is one
    for (const Candidate& c : graph)
      if (c.fused == fused) return take(c);
  int n = 0;
  if (p.transpose) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    check(cudnnGetConvolutionBackwardDataAlgorithm_v7(be.cudnn(), plan.w, plan.x, plan.conv, plan.y,
                                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf),
          p, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    for (int i = 0; i < n; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && use(int(perf[i].algo), perf[i].mathType)) return;
  } else {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    check(cudnnGetConvolutionForwardAlgorithm_v7(be.cudnn(), plan.x, plan.w, plan.conv, plan.y,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf),
          p, "cudnnGetConvolutionForwardAlgorithm_v7");
    for (int i = 0; i < n; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && use(int(perf[i].algo), perf[i].mathType)) return;
  }
  // Last resort: the implicit GEMM algorithms, which support every configuration.
  if (use(0, wanted_math(p))) return;
  EMBER_FAIL(p.op, ": cuDNN has no algorithm for ", p.describe());
}

// Runs one conv (y = conv(x, w) (+ bias), x = input) or transposed conv (y = conv_transpose(x, w))
// through the problem's chosen plan, and adds the bias where that plan does not. Plans are chosen
// per problem and per alignment class: the graph plans assume 16-byte aligned operands, which an
// offset view need not be.
void run_conv(CudaBackend& be, const ConvProblem& p, const ConvArgs& args) {
  ConvPlan* plan = nullptr;
  const bool aligned = graph_aligned(args.x, args.w, args.y, args.bias);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    std::string key = std::to_string(be.index()) + (aligned ? " a " : " u ") + p.key();
    auto it = plans().find(key);
    if (it == plans().end()) it = plans().emplace(key, make_plan(p)).first;
    plan = it->second;
    if (!plan->chosen) choose_algo(be, p, *plan, args, aligned);
  }
  void* ws = plan->ws ? be.workspace(plan->ws) : nullptr;
  if (plan->exec) {
    check(run_graph(be, plan->exec, args.x, args.w, args.y, plan->fused ? args.bias : nullptr, ws), p,
          "cudnnBackendExecute");
  } else {
    check(run_legacy(be, p, *plan, plan->algo, args.x, args.w, args.y, ws, plan->ws), p,
          p.transpose ? "cudnnConvolutionBackwardData" : "cudnnConvolutionForward");
  }
  if (p.bias && !plan->fused) add_bias(be, *args.out, *args.bias_t);
}

// y[n, c, ...] += bias[c] over a contiguous [N, C, P] output.
void add_bias(CudaBackend& be, CudaTensor& y, const CudaTensor& bias) {
  const Shape& s = y.shape();
  const int64_t channels = s[1], rows = s[0] * s[1], plane = s.numel() / std::max<int64_t>(rows, 1);
  if (rows == 0 || plane == 0) return;
  const std::string key = "conv_bias/" + std::string(dtype_name(y.dtype()));
  CUfunction f = be.jit().get(key, "conv_bias", [&] { return conv_bias_source(y.dtype()); });
  constexpr int kThreads = 256;
  const int64_t per_row = std::min<int64_t>((plane + kThreads * 4 - 1) / (kThreads * 4), 1024);
  const int64_t rows_grid = std::min<int64_t>(rows, std::max<int64_t>(1, int64_t(be.sm_count()) * 64 / per_row));
  dim3 grid(unsigned(per_row), unsigned(std::min<int64_t>(rows_grid, 65535)));
  be.launch(f, grid, dim3(kThreads), 0, y.raw(), bias.raw(), bias.strides[0], rows, plane, channels);
}

std::vector<PrimitivePtr> conv_kernel(CudaBackend& be, Op& op) {
  const bool transpose = op.kind == OpKind::conv_transpose;
  const auto& a = op.attr<ConvAttrs>();
  const int sd = int(a.stride.size());
  const std::string name = std::string(op.name()) + std::to_string(sd) + "d";
  const TensorMeta& om = op.outputs[0];
  auto y = alloc(be, om);
  if (om.shape.numel() == 0) return {y};
  auto x = contiguous(be, op.inputs[0]);
  auto w = contiguous(be, op.inputs[1]);
  CudaTensorPtr bias = op.inputs.size() > 2 && op.inputs[2] ? as_cuda_ptr(op.inputs[2]) : nullptr;
  const size_t esz = dtype_size(om.dtype);
  bool bias_added = false;

  if (x->numel() == 0 || w->numel() == 0) {  // empty sums: zeros (+ bias)
    EMBER_CUDA_CHECK(cudaMemsetAsync(y->raw(), 0, size_t(om.shape.numel()) * esz, be.stream()));
  } else {
    ConvProblem p;
    p.op = name;
    p.transpose = transpose;
    p.dtype = om.dtype;
    p.groups = int(a.groups);
    p.tf32 = om.dtype == DType::f32 && tf32_allowed();
    p.nd = std::max(sd, 2);
    const int lead = p.nd - sd;  // 1 for 1-d convs: a unit height in front
    auto dims = [&](const Shape& s) {
      std::vector<int> v = {int(s[0]), int(s[1])};
      for (int i = 0; i < lead; ++i) v.push_back(1);
      for (int i = 2; i < s.rank(); ++i) v.push_back(int(s[i]));
      return v;
    };
    auto params = [&](const std::vector<int64_t>& v, int fill) {
      std::vector<int> r(size_t(lead), fill);
      for (int64_t e : v) r.push_back(int(e));
      return r;
    };
    p.pad = params(a.padding, 0);
    p.stride = params(a.stride, 1);
    p.dilation = params(a.dilation, 1);
    p.w = dims(w->shape());
    for (int64_t v : w->shape()) EMBER_CHECK(v < (int64_t(1) << 31), name, ": weight ", w->shape(), " is too large");
    EMBER_CHECK(w->numel() < (int64_t(1) << 31), name, ": weight ", w->shape(), " is too large for cuDNN");
    // Chunks of images small enough for cuDNN's 32-bit element counts.
    const int64_t N = x->shape()[0];
    const int64_t per_image = std::max(x->numel() / N, om.shape.numel() / N);
    const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(N, ((int64_t(1) << 31) - 1) / per_image));
    EMBER_CHECK(per_image < (int64_t(1) << 31), name, ": one image of input ", x->shape(), " / output ", om.shape,
                " exceeds cuDNN's 2^31 elements");
    const int64_t x_img = x->numel() / N, y_img = om.shape.numel() / N;
    // The bias goes with the conv call (which may add it in its own kernel) when one call makes
    // the whole output and the bias is contiguous.
    p.bias = bias && !transpose && chunk >= N && (bias->shape()[0] <= 1 || bias->strides[0] == 1);
    bias_added = p.bias;
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t n = std::min(chunk, N - n0);
      Shape xs = x->shape(), ys = om.shape;
      xs[0] = n;
      ys[0] = n;
      p.x = dims(xs);
      p.y = dims(ys);
      const ConvArgs args{static_cast<const char*>(x->raw()) + n0 * x_img * int64_t(esz), w->raw(),
                          static_cast<char*>(y->raw()) + n0 * y_img * int64_t(esz), p.bias ? bias->raw() : nullptr,
                          y.get(), bias.get()};
      run_conv(be, p, args);
    }
  }
  if (bias && !bias_added) add_bias(be, *y, *bias);
  // conv_fused's epilogue: the residual add, then the clamp, as their own kernels (each in place)
  PrimitivePtr out = std::move(y);
  if (op.inputs.size() > 3 && op.inputs[3]) out = be.execute(make_op(OpKind::add, {std::move(out), op.inputs[3]}))[0];
  if (a.has_activation())
    out = be.execute(make_op(OpKind::clamp, {std::move(out)}, ScalarAttrs{a.act_min, a.act_max}))[0];
  return {out};
}

}  // namespace

std::string conv_bias_source(DType dt) {
  std::string s = "typedef " + std::string(device_type(dt)) + " T;\ntypedef " + compute_type(dt) + " C;\n";
  s += R"CUDA(
// y is a contiguous [rows = N * channels, plane] matrix; row r gets bias[r % channels].
extern "C" __global__ void conv_bias(T* __restrict__ y, const T* __restrict__ bias, int64_t bias_stride, int64_t rows,
                                     int64_t plane, int64_t channels) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const C b = C(bias[(r % channels) * bias_stride]);
    T* p = y + r * plane;
    for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < plane; j += int64_t(gridDim.x) * blockDim.x)
      p[j] = T(C(p[j]) + b);
  }
}
)CUDA";
  return s;
}

void register_conv_kernels(KernelTable& t) {
  t[size_t(OpKind::conv)] = conv_kernel;
  t[size_t(OpKind::conv_transpose)] = conv_kernel;
}

}  // namespace ember::cuda
