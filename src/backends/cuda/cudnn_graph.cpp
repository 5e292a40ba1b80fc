#include "cudnn_graph.hpp"

#include <algorithm>
#include <chrono>

#include "runtime.hpp"

namespace ember::cuda::cudnn_graph {

Desc GraphBuilder::make(cudnnBackendDescriptorType_t type) {
  Desc d = nullptr;
  if (ok() && cudnnBackendCreateDescriptor(type, &d) != CUDNN_STATUS_SUCCESS)
    fail("creating descriptor type " + std::to_string(int(type)));
  return d;
}

void GraphBuilder::set(Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                       const void* values) {
  if (!ok()) return;
  const cudnnStatus_t s = cudnnBackendSetAttribute(d, name, type, count, values);
  if (s != CUDNN_STATUS_SUCCESS) fail("setting attribute " + std::to_string(int(name)) + ": " + cudnnGetErrorString(s));
}

void GraphBuilder::finalize(Desc d, const std::string& what) {
  if (!ok()) return;
  const cudnnStatus_t s = cudnnBackendFinalize(d);
  if (s != CUDNN_STATUS_SUCCESS) fail("finalizing " + what + ": " + cudnnGetErrorString(s));
}

void GraphBuilder::add_op(Desc op, const std::string& what) {
  finalize(op, what + " (op " + std::to_string(ops_.size()) + ")");
  ops_.push_back(op);
}

void GraphBuilder::node(cudnnBackendDescriptorType_t type,
                        std::initializer_list<std::pair<cudnnBackendAttributeName_t, Desc>> attrs,
                        const std::string& what) {
  Desc op = make(type);
  for (const auto& [name, d] : attrs) set(op, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
  add_op(op, what);
}

void GraphBuilder::fail(const std::string& why) {
  if (error_.empty()) error_ = why;
}

Desc GraphBuilder::tensor(int64_t uid, const Dims& dims, const Dims& strides, cudnnDataType_t type, bool is_virtual,
                          bool by_value, int64_t alignment) {
  Desc d = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, int64_t(dims.size()), dims.data());
  set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, int64_t(strides.size()), strides.data());
  set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  if (is_virtual) set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  if (by_value) set(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
  finalize(d, "tensor " + std::to_string(uid));
  return d;
}

Desc GraphBuilder::inner(const Dims& dims, const Dims& strides, cudnnDataType_t type) {
  return tensor(next_uid_++, dims, strides, type, true);
}

Desc GraphBuilder::scalar(int64_t uid) { return tensor(uid, {1, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_FLOAT, false, true); }

void GraphBuilder::pointwise(cudnnPointwiseMode_t mode, Desc x, Desc b, Desc y, Desc t, cudnnDataType_t prec,
                             int64_t axis) {
  Desc pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  if (axis >= 0) set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
  finalize(pw, "pointwise descriptor");
  Desc op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  if (b) set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
  if (t) set(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  if (prec != CUDNN_DATA_DOUBLE) {  // (the default scales of a double graph stay: they are doubles)
    const float one = 1.0f;
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
  }
  add_op(op, "pointwise " + std::to_string(int(mode)));
}

void GraphBuilder::matmul(Desc a, Desc b, Desc c) {
  Desc mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  const double pad = 0.0;
  set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  set(mm, CUDNN_ATTR_MATMUL_PADDING_VALUE, CUDNN_TYPE_DOUBLE, 1, &pad);
  finalize(mm, "matmul descriptor");
  node(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_MATMUL_ADESC, a},
        {CUDNN_ATTR_OPERATION_MATMUL_BDESC, b},
        {CUDNN_ATTR_OPERATION_MATMUL_CDESC, c},
        {CUDNN_ATTR_OPERATION_MATMUL_DESC, mm}},
       "matmul");
}

void GraphBuilder::reduction(cudnnReduceTensorOp_t mode, Desc x, Desc y) {
  Desc red = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  const bool deterministic = false;
  set(red, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
  set(red, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  if (cudnnGetVersion() >= 91100)
    set(red, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &deterministic);
  finalize(red, "reduction descriptor");
  node(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x},
        {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y},
        {CUDNN_ATTR_OPERATION_REDUCTION_DESC, red}},
       "reduction");
}

void GraphBuilder::reshape(Desc x, Desc y) {
  node(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x}, {CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y}}, "reshape");
}

std::vector<Desc> GraphBuilder::configs() {
  if (!ok()) return {};
  if (!graph_) {
    graph_ = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(graph_, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops_.size()), ops_.data());
    set(graph_, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
    finalize(graph_, "operation graph");
  }
  Desc heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_);
  set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  finalize(heur, "engine heuristics");
  if (!ok()) return {};
  int64_t count = 0;
  if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count == 0) {
    fail("heuristics returned no engine");
    return {};
  }
  std::vector<Desc> cfgs(static_cast<size_t>(count));
  for (Desc& c : cfgs) c = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  int64_t got = 0;
  if (!ok() || cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                        &got, cfgs.data()) != CUDNN_STATUS_SUCCESS) {
    fail("reading the heuristics' engines");
    return {};
  }
  cfgs.resize(size_t(std::clamp<int64_t>(got, 0, count)));
  return cfgs;
}

std::optional<Plan> GraphBuilder::plan(Desc cfg) {
  Desc p = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
  set(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
  if (!ok()) return std::nullopt;
  rejected_ = cudnnBackendFinalize(p);
  int64_t n = 0, workspace = 0;
  if (rejected_ == CUDNN_STATUS_SUCCESS &&
      cudnnBackendGetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &workspace) ==
          CUDNN_STATUS_SUCCESS &&
      workspace >= 0)
    return Plan{p, workspace};
  if (rejected_ == CUDNN_STATUS_SUCCESS) rejected_ = CUDNN_STATUS_BAD_PARAM;
  cudnnBackendDestroyDescriptor(p);
  return std::nullopt;
}

std::vector<Plan> GraphBuilder::plans(size_t max) {
  std::vector<Plan> out;
  const std::vector<Desc> cfgs = configs();
  for (size_t i = 0; i < cfgs.size() && out.size() < max && ok(); ++i)
    if (auto p = plan(cfgs[i])) out.push_back(*p);
  if (out.empty() && ok())
    fail("no engine's plan finalized (" + std::to_string(cfgs.size()) + " tried; last: " +
         cudnnGetErrorString(rejected_) + ")");
  return out;
}

cudnnStatus_t execute(cudnnHandle_t h, Desc plan, std::span<const int64_t> uids, std::span<void* const> ptrs,
                      void* ws) {
  Desc pack = nullptr;
  cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
  if (s == CUDNN_STATUS_SUCCESS)
    s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()),
                                 uids.data());
  if (s == CUDNN_STATUS_SUCCESS)
    s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                 int64_t(ptrs.size()), ptrs.data());
  if (s == CUDNN_STATUS_SUCCESS)
    s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(pack);
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendExecute(h, plan, pack);
  if (pack) cudnnBackendDestroyDescriptor(pack);
  return s;
}

std::optional<size_t> fastest(cudaStream_t stream, size_t n, const std::function<bool(size_t)>& run,
                              const std::function<void(size_t, double)>& on_time) {
  constexpr int kLoop = 4;
  std::optional<size_t> best;
  double best_ms = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!run(i)) continue;
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
    double t[3];
    bool failed = false;
    for (double& ti : t) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < kLoop && !failed; ++k) failed = !run(i);
      EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
      ti = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / kLoop;
    }
    if (failed) continue;
    std::sort(t, t + 3);
    if (on_time) on_time(i, t[1]);
    if (!best || t[1] < best_ms) best = i, best_ms = t[1];
  }
  return best;
}

}  // namespace ember::cuda::cudnn_graph
