// Convolutions through cuDNN's legacy API: conv (cudnnConvolutionForward) and conv_transpose
// (cudnnConvolutionBackwardData: the transposed conv of x with weight [C, O/g, k...] is the
// data gradient of the conv that maps an [N, O, out...] tensor to x's shape with that weight).
//
// Layouts are PyTorch's (NC*, weights [O, C/g, k...] / [C, O/g, k...]); operands are made
// contiguous and described as packed NCHW / NCDHW tensors. 1-d convs run as 2-d ones with a
// unit height. f32 runs in exact fp32 (CUDNN_FMA_MATH) unless set_allow_tf32(true); f16 and
// bf16 use tensor cores with fp32 accumulation; f64 computes in double.
//
// Algorithms: with autotuning on (the default), cudnnFind*AlgorithmEx times the candidates once
// per problem (dtype, shapes, attributes, math), every usable one is timed again (the median of
// 5 runs each), and the winner is kept in memory and in
// <cache_dir>/cudnn_algos.txt (one line per device name and problem), so later processes skip
// the search; with autotuning off, cuDNN's heuristics (cudnnGet*Algorithm_v7) pick. The bias is
// added afterwards by a small generated kernel. Batches whose tensors exceed cuDNN's 32-bit
// element counts are split into chunks of images.
#include <cudnn.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "attention_sources.hpp"
#include "cuda_backend.hpp"
#include "matmul.hpp"

namespace ember::cuda {

namespace {

constexpr size_t kFindWorkspaceCap = size_t(1) << 30;  // largest workspace an algorithm may use

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
  std::string key() const {
    std::ostringstream os;
    os << (transpose ? "bwd_data" : "fwd") << ' ' << dtype_name(dtype) << " x";
    for (int v : x) os << ':' << v;
    os << " w";
    for (int v : w) os << ':' << v;
    os << " y";
    for (int v : y) os << ':' << v;
    os << " p";
    for (int v : pad) os << ':' << v;
    os << " s";
    for (int v : stride) os << ':' << v;
    os << " d";
    for (int v : dilation) os << ':' << v;
    os << " g" << groups << (tf32 ? " tf32" : "");
    return os.str();
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

// The math type the problem asks for.
cudnnMathType_t wanted_math(const ConvProblem& p) {
  if (p.dtype == DType::f16 || p.dtype == DType::bf16) return CUDNN_TENSOR_OP_MATH;
  if (p.dtype == DType::f32) return p.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  return CUDNN_DEFAULT_MATH;
}
// Whether an (algorithm, math type) pair keeps the problem's precision: exact f32 must not use
// TF32 tensor cores, and exact f32 and f64 take no FFT algorithm (their rounding error grows
// with the transform: a weight gradient through a 5x5 "kernel" came out 7e-4 off in f32).
bool algo_ok(const ConvProblem& p, int algo, cudnnMathType_t m) {
  const bool exact = (p.dtype == DType::f32 && !p.tf32) || p.dtype == DType::f64;
  if (p.dtype == DType::f32 && !p.tf32 && m != CUDNN_FMA_MATH) return false;
  if (!exact) return true;
  if (p.transpose)
    return algo != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT && algo != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING;
  return algo != CUDNN_CONVOLUTION_FWD_ALGO_FFT && algo != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING;
}

// Descriptors of one problem plus the chosen algorithm (cached; never destroyed).
struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  bool chosen = false;
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
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

// ---- the persistent algorithm cache: "<device name>\t<problem key>\t<algo> <math>" lines ----

std::mutex g_mu;
std::map<std::string, ConvPlan*>& plans() {
  static auto* m = new std::map<std::string, ConvPlan*>();
  return *m;
}

std::map<std::string, std::pair<int, int>>& saved_algos() {
  static auto* m = [] {
    auto* r = new std::map<std::string, std::pair<int, int>>();
    std::string dir = cache_dir();
    if (dir.empty()) return r;
    std::ifstream f(dir + "/cudnn_algos.txt");
    for (std::string line; std::getline(f, line);) {
      size_t a = line.find('\t'), b = a == std::string::npos ? a : line.find('\t', a + 1);
      if (b == std::string::npos) continue;
      std::istringstream rest(line.substr(b + 1));
      int algo = 0, math = 0;
      if (rest >> algo >> math) (*r)[line.substr(0, b)] = {algo, math};
    }
    return r;
  }();
  return *m;
}

void save_algo(const std::string& key, int algo, int math) {
  saved_algos()[key] = {algo, math};
  std::string dir = cache_dir();
  if (dir.empty()) return;
  std::ofstream f(dir + "/cudnn_algos.txt", std::ios::app);
  if (f) f << key << '\t' << algo << ' ' << math << '\n';
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

// One cuDNN call of the plan with `algo` (under the math type the plan's descriptor holds), into
// y with the given workspace.
cudnnStatus_t run_conv(CudaBackend& be, const ConvProblem& p, const ConvPlan& plan, int algo, const void* x,
                       const void* w, void* y, void* ws, size_t ws_bytes) {
  float one_f = 1.0f, zero_f = 0.0f;
  double one_d = 1.0, zero_d = 0.0;
  const void* one = p.dtype == DType::f64 ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* zero = p.dtype == DType::f64 ? static_cast<const void*>(&zero_d) : static_cast<const void*>(&zero_f);
  if (p.transpose)
    return cudnnConvolutionBackwardData(be.cudnn(), one, plan.w, w, plan.x, x, plan.conv,
                                        cudnnConvolutionBwdDataAlgo_t(algo), ws, ws_bytes, zero, plan.y, y);
  return cudnnConvolutionForward(be.cudnn(), one, plan.x, x, plan.w, w, plan.conv, cudnnConvolutionFwdAlgo_t(algo),
                                 ws, ws_bytes, zero, plan.y, y);
}
void call_conv(CudaBackend& be, const ConvProblem& p, const ConvPlan& plan, int algo, const void* x, const void* w,
               void* y, void* ws, size_t ws_bytes) {
  check(run_conv(be, p, plan, algo, x, w, y, ws, ws_bytes), p,
        p.transpose ? "cudnnConvolutionBackwardData" : "cudnnConvolutionForward");
}

struct Candidate {
  int algo;
  cudnnMathType_t math;
};

// The fastest of `cands` by the median of 5 timed calls each (after one warm-up call). A
// candidate whose warm-up call fails is passed over: cudnnFind reports some (algorithm, math
// type) pairs that the plain call then rejects (bf16 backward data: CUDNN_STATUS_BAD_PARAM).
std::optional<Candidate> fastest(CudaBackend& be, const ConvProblem& p, const ConvPlan& plan, const std::vector<Candidate>& cands,
                  const void* x, const void* w, void* y, void* ws, size_t ws_bytes) {
  struct Events {
    cudaEvent_t a = nullptr, b = nullptr;
    ~Events() {
      if (a) cudaEventDestroy(a);
      if (b) cudaEventDestroy(b);
    }
  } ev;
  EMBER_CUDA_CHECK(cudaEventCreate(&ev.a));
  EMBER_CUDA_CHECK(cudaEventCreate(&ev.b));
  std::optional<Candidate> best;
  float best_ms = 0;
  for (const Candidate& c : cands) {
    check(cudnnSetConvolutionMathType(plan.conv, c.math), p, "cudnnSetConvolutionMathType");
    if (run_conv(be, p, plan, c.algo, x, w, y, ws, ws_bytes) != CUDNN_STATUS_SUCCESS) continue;
    float t[5];
    for (float& ti : t) {
      EMBER_CUDA_CHECK(cudaEventRecord(ev.a, be.stream()));
      call_conv(be, p, plan, c.algo, x, w, y, ws, ws_bytes);
      EMBER_CUDA_CHECK(cudaEventRecord(ev.b, be.stream()));
      EMBER_CUDA_CHECK(cudaEventSynchronize(ev.b));
      EMBER_CUDA_CHECK(cudaEventElapsedTime(&ti, ev.a, ev.b));
    }
    std::sort(t, t + 5);
    if (!best || t[2] < best_ms) {
      best = c;
      best_ms = t[2];
    }
  }
  return best;
}

// Picks the plan's algorithm (once per problem): saved winner, autotuned, or heuristic.
void choose_algo(CudaBackend& be, const ConvProblem& p, ConvPlan& plan, const void* x, const void* w, void* y) {
  const std::string saved_key = std::string(be.props().name) + '\t' + p.key();
  auto use = [&](int algo, cudnnMathType_t math) {
    size_t ws = 0;
    if (!algo_ok(p, algo, math) || !workspace_of(be, p, plan, algo, math, ws)) return false;  // (sets math)
    plan.algo = algo;
    plan.math = math;
    plan.ws = ws;
    plan.chosen = true;
    return true;
  };
  if (autotune_enabled()) {
    auto it = saved_algos().find(saved_key);
    if (it != saved_algos().end() && use(it->second.first, cudnnMathType_t(it->second.second))) return;
    // A workspace as large as the hungriest supported candidate needs (capped).
    size_t ws_max = 0;
    const int count = p.transpose ? int(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT) : int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    for (int a = 0; a < count; ++a) {
      size_t b = 0;
      if (workspace_of(be, p, plan, a, wanted_math(p), b) && b <= kFindWorkspaceCap) ws_max = std::max(ws_max, b);
    }
    Buffer scratch(be.allocator(), std::max<size_t>(ws_max, 256));
    std::vector<Candidate> cands;  // in cudnnFind's order (fastest first)
    int n = 0;
    if (p.transpose) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      check(cudnnFindConvolutionBackwardDataAlgorithmEx(be.cudnn(), plan.w, w, plan.x, x, plan.conv, plan.y, y,
                                                         count, &n, perf, scratch.ptr, ws_max),
            p, "cudnnFindConvolutionBackwardDataAlgorithmEx");
      for (int i = 0; i < n; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ws_max)
          cands.push_back({int(perf[i].algo), perf[i].mathType});
    } else {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      check(cudnnFindConvolutionForwardAlgorithmEx(be.cudnn(), plan.x, x, plan.w, w, plan.conv, plan.y, y, count,
                                                    &n, perf, scratch.ptr, ws_max),
            p, "cudnnFindConvolutionForwardAlgorithmEx");
      for (int i = 0; i < n; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ws_max)
          cands.push_back({int(perf[i].algo), perf[i].mathType});
    }
    // cudnnFind times each candidate once, and that picked, in some runs, an algorithm 2.2x
    // slower than the best (the conv2d benchmark: 177 us against 79 us). Every usable candidate
    // is timed again: the median of 5 runs each, after a warm-up.
    cands.erase(std::remove_if(cands.begin(), cands.end(),
                               [&](const Candidate& c) {
                                 size_t ws = 0;
                                 return !algo_ok(p, c.algo, c.math) || !workspace_of(be, p, plan, c.algo, c.math, ws) ||
                                        ws > ws_max;
                               }),
                cands.end());
    if (!cands.empty()) {
      const std::optional<Candidate> best = fastest(be, p, plan, cands, x, w, y, scratch.ptr, ws_max);
      if (best) cands.assign(1, *best);
      else cands.clear();
    }
    if (!cands.empty() && use(cands[0].algo, cands[0].math)) {
      save_algo(saved_key, plan.algo, int(plan.math));
      return;
    }
    // (nothing usable was timed: fall through to the heuristics)
  }
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

// Runs one cuDNN call: y = conv(x, w) (x = input), or y = conv_transpose(x, w).
void run_conv(CudaBackend& be, const ConvProblem& p, const void* x, const void* w, void* y) {
  ConvPlan* plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    std::string key = std::to_string(be.index()) + ' ' + p.key();
    auto it = plans().find(key);
    if (it == plans().end()) it = plans().emplace(key, make_plan(p)).first;
    plan = it->second;
    if (!plan->chosen) choose_algo(be, p, *plan, x, w, y);
  }
  void* ws = plan->ws ? be.workspace(plan->ws) : nullptr;
  call_conv(be, p, *plan, plan->algo, x, w, y, ws, plan->ws);
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
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t n = std::min(chunk, N - n0);
      Shape xs = x->shape(), ys = om.shape;
      xs[0] = n;
      ys[0] = n;
      p.x = dims(xs);
      p.y = dims(ys);
      run_conv(be, p, static_cast<const char*>(x->raw()) + n0 * x_img * int64_t(esz), w->raw(),
               static_cast<char*>(y->raw()) + n0 * y_img * int64_t(esz));
    }
  }
  if (bias) add_bias(be, *y, *bias);
  return {y};
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
