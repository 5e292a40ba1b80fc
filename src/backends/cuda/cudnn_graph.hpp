// cuDNN's graph (backend) API as the CUDA backend's ops use it: an operation graph built node by
// node, the engine configurations cuDNN's heuristics rank for it, finalized execution plans, and
// one call of a plan with its operands. convolution (conv.cpp) and fused attention
// (attention_cudnn.cpp) build their graphs here; what differs between them (which engines keep a
// problem's precision, how many candidates are timed) stays with the op.
//
// A GraphBuilder records the first call that fails and turns every later one into a no-op, so a
// graph is written as straight-line code and checked once (ok() / error()). Its descriptors are
// never destroyed: a plan is kept for the process, and cuDNN does not promise that a plan
// outlives the graph it was made from. Plans not kept are destroyed by their owner.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

namespace ember::cuda::cudnn_graph {

using Desc = cudnnBackendDescriptor_t;
using Dims = std::vector<int64_t>;

// A finalized execution plan and the workspace bytes it needs.
struct Plan {
  Desc plan = nullptr;
  int64_t workspace = 0;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(cudnnHandle_t h) : handle_(h) {}
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  // A tensor of the graph: `uid` names it in variant packs; a virtual one stays inside the
  // kernels; a by-value one is a host scalar.
  Desc tensor(int64_t uid, const Dims& dims, const Dims& strides, cudnnDataType_t type, bool is_virtual,
              bool by_value = false, int64_t alignment = 16);
  // An intermediate the graph keeps inside its kernels (a fresh uid).
  Desc inner(const Dims& dims, const Dims& strides, cudnnDataType_t type = CUDNN_DATA_FLOAT);
  // A float scalar passed by value (a host pointer in the variant pack).
  Desc scalar(int64_t uid);

  // y = mode(x[, b][, t]) computed in `prec` (axis: GEN_INDEX's dimension)
  void pointwise(cudnnPointwiseMode_t mode, Desc x, Desc b, Desc y, Desc t = nullptr,
                 cudnnDataType_t prec = CUDNN_DATA_FLOAT, int64_t axis = -1);
  // c[..., m, n] = sum_k a[..., m, k] b[..., k, n] in f32
  void matmul(Desc a, Desc b, Desc c);
  // y = x reduced over the dims where y has size 1
  void reduction(cudnnReduceTensorOp_t mode, Desc x, Desc y);
  // y: the same memory as x under other dims / strides (a transpose)
  void reshape(Desc x, Desc y);

  // The raw API, for nodes the helpers above do not cover: a new descriptor, one attribute, a
  // finalize (each a no-op once something failed), and a finalized node added to the graph.
  Desc make(cudnnBackendDescriptorType_t type);
  void set(Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
           const void* values);
  void finalize(Desc d, const std::string& what);
  void add_op(Desc op, const std::string& what);
  // A node of `type` whose attributes are all descriptors, added to the graph.
  void node(cudnnBackendDescriptorType_t type,
            std::initializer_list<std::pair<cudnnBackendAttributeName_t, Desc>> attrs, const std::string& what);

  // The engine configurations cuDNN's heuristics (mode A) rank for the graph, best first (empty,
  // with error() set, where there are none).
  std::vector<Desc> configs();
  // The finalized execution plan of `cfg` (nullopt where the engine rejects the graph; that does
  // not set error()). The status of the last rejection: last_rejection().
  std::optional<Plan> plan(Desc cfg);
  cudnnStatus_t last_rejection() const { return rejected_; }
  // The plans of the first `max` configurations whose plans finalize, in the heuristics' order
  // (empty, with error() set, where none does).
  std::vector<Plan> plans(size_t max);

 private:
  void fail(const std::string& why);
  cudnnHandle_t handle_;
  std::vector<Desc> ops_;
  Desc graph_ = nullptr;
  std::string error_;
  cudnnStatus_t rejected_ = CUDNN_STATUS_SUCCESS;
  int64_t next_uid_ = 100;
};

// One call of `plan` with the variant pack (uids[i] bound to ptrs[i]) and workspace `ws`.
cudnnStatus_t execute(cudnnHandle_t h, Desc plan, std::span<const int64_t> uids, std::span<void* const> ptrs,
                      void* ws);

// Autotuning: the index of the fastest of `n` candidates by the wall-clock time of a call in a
// loop of 4 back-to-back calls ended by a synchronisation of `stream` (the median of 3 loops,
// after one warm-up call), so that host cost counts where it exceeds the GPU's. `run(i)` makes
// one call of candidate i and returns false where it fails; a candidate that fails is passed
// over. `on_time(i, ms)`, when given, sees each time. nullopt: no candidate ran.
std::optional<size_t> fastest(cudaStream_t stream, size_t n, const std::function<bool(size_t)>& run,
                              const std::function<void(size_t, double)>& on_time = {});

}  // namespace ember::cuda::cudnn_graph
