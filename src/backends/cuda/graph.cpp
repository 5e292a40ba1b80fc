// CUDA graphs: Backend::capture records the kernels, library calls and copies a region launches on
// the backend's stream (stream capture, relaxed mode) into a graph, runs it once and keeps it for
// replay with one cudaGraphLaunch (docs/cuda-graphs.md; the user's side is ember/tensor/graph.hpp).
//
// What makes a replay redo the same work on the same memory:
// - the allocator routes the region's allocations to a private pool (allocator.hpp): the buffers
//   of the region's tensors are the graph's until it is destroyed, and a buffer from outside that
//   the region frees is kept out of the shared cache as well;
// - the buffers the region reads from outside (parameters, inputs, constants) are recorded; a
//   replay after one of them was freed throws instead of reading memory someone else may own;
// - the cuBLASLt workspace is not freed while a graph lives;
// - what cannot be recorded, or would be recorded wrongly, throws an Error naming it during the
//   capture: a read or sync (the host would wait for work that has not run), host-to-device
//   writes, random ops (a replay would repeat the numbers) and adam_step (its step count and
//   learning rate are kernel arguments). Autotuning is off while capturing (nothing is timed).
#include <algorithm>
#include <thread>

#include "cuda_backend.hpp"
#include "ember/core/error.hpp"

namespace ember::cuda {

struct CudaBackend::Capture {
  std::thread::id thread;
  int pool = -1;
  std::vector<std::weak_ptr<Buffer>> inputs;  // buffers from outside the region it reads
  std::vector<std::shared_ptr<Buffer>> keep;  // the shared scalar constants it reads
  std::vector<const Buffer*> seen;            // (to record each once)
};

namespace {
thread_local int t_capturing = 0;  // the calling thread captures (autotuning is off meanwhile)
}  // namespace

bool capturing_on_this_thread() { return t_capturing > 0; }

class CudaGraph final : public CapturedWork {
 public:
  CudaGraph(CudaBackend& be, cudaGraph_t graph, cudaGraphExec_t exec, int pool, CudaBackend::Capture& cap,
            int64_t nodes)
      : be_(be), graph_(graph), exec_(exec), pool_(pool), inputs_(std::move(cap.inputs)), keep_(std::move(cap.keep)),
        nodes_(nodes) {}
  ~CudaGraph() override {
    if (process_exiting()) return;  // (a graph in a static: the backend may be gone; as the backend does)
    std::lock_guard<std::recursive_mutex> lock(be_.mu_);
    set_device_nothrow(be_.index_);
    (void)cudaStreamSynchronize(be_.stream_);  // a replay may still run
    if (exec_) (void)cudaGraphExecDestroy(exec_);
    if (graph_) (void)cudaGraphDestroy(graph_);
    be_.allocator_.release_pool(pool_);
    --be_.graphs_alive_;
  }

  void replay() override {
    std::lock_guard<std::recursive_mutex> lock(be_.mu_);
    EMBER_CHECK(!be_.capture_, "cuda graph replay: ", be_.name(), " is capturing another graph");
    for (const auto& w : inputs_)
      EMBER_CHECK(!w.expired(), "cuda graph replay: a tensor the captured work reads was freed after the capture "
                  "(a parameter replaced instead of updated in place, or an input not kept alive): keep every "
                  "tensor the region reads alive, and change inputs with ember::graph::overwrite");
    set_device(be_.index_);
    EMBER_CUDA_CHECK(cudaGraphLaunch(exec_, be_.stream_));
  }

  int64_t kernels() const override { return nodes_; }

 private:
  CudaBackend& be_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  int pool_;
  std::vector<std::weak_ptr<Buffer>> inputs_;
  std::vector<std::shared_ptr<Buffer>> keep_;
  int64_t nodes_;
};

void CudaBackend::refuse_in_capture(const char* what) const {
  if (capture_ && capture_->thread == std::this_thread::get_id())
    throw Error(name() + ": " + what + " cannot be part of a captured CUDA graph (docs/cuda-graphs.md)");
}

void CudaBackend::note_captured_inputs(const std::vector<PrimitivePtr>& inputs) {
  if (!capture_) return;
  for (const auto& p : inputs) {
    if (!p) continue;
    const auto& buf = as_cuda(p).buffer;
    if (!buf || std::find(capture_->seen.begin(), capture_->seen.end(), buf.get()) != capture_->seen.end()) continue;
    capture_->seen.push_back(buf.get());
    if (allocator_.in_pool(buf->ptr, capture_->pool)) continue;  // the region's own
    bool constant = false;  // shared scalars are never written in place: the graph keeps them
    for (const auto& [key, c] : constants_) constant = constant || c == buf;
    if (constant) capture_->keep.push_back(buf);
    else capture_->inputs.push_back(buf);
  }
}

std::unique_ptr<CapturedWork> CudaBackend::capture(const std::function<void()>& region) {
  std::lock_guard<std::recursive_mutex> lock(mu_);  // other threads wait: one stream, one capture
  EMBER_CHECK(!capture_, name(), ": a CUDA graph is already being captured");
  set_device(index_);
  Capture cap;
  cap.thread = std::this_thread::get_id();
  cap.pool = allocator_.begin_pool();
  auto end_capture = [&] {
    capture_ = nullptr;
    --t_capturing;
    allocator_.end_pool();
  };
  // on a failure nothing recorded has run: the pool goes back at once
  auto give_up = [&](cudaGraph_t graph) {
    if (graph) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    allocator_.release_pool(cap.pool);
  };
  capture_ = &cap;
  ++t_capturing;
  cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) {
    end_capture();
    give_up(nullptr);
    fail(e, "cudaStreamBeginCapture");
  }
  cudaGraph_t graph = nullptr;
  try {
    region();
  } catch (...) {
    (void)cudaStreamEndCapture(stream_, &graph);
    end_capture();
    give_up(graph);
    throw;
  }
  e = cudaStreamEndCapture(stream_, &graph);
  end_capture();
  if (e != cudaSuccess || !graph) {
    give_up(graph);
    throw Error(name() + ": capturing a CUDA graph failed (" + cudaGetErrorString(e) +
                "): a call in the region waited for the device or is not allowed while capturing");
  }
  size_t nodes = 0;
  (void)cudaGraphGetNodes(graph, nullptr, &nodes);
  cudaGraphExec_t exec = nullptr;
  e = cudaGraphInstantiate(&exec, graph, 0);
  if (e != cudaSuccess) {
    give_up(graph);
    fail(e, "cudaGraphInstantiate");
  }
  ++graphs_alive_;
  auto g = std::make_unique<CudaGraph>(*this, graph, exec, cap.pool, cap, int64_t(nodes));
  g->replay();  // the region's work, as recorded, runs once now
  return g;
}

bool CudaBackend::overwrite(const PrimitivePtr& dst, const TensorData& src) {
  EMBER_CHECK(dst != nullptr, "overwrite: null tensor");
  std::lock_guard<std::recursive_mutex> lock(mu_);
  refuse_in_capture("overwrite");
  const CudaTensor& t = as_cuda(dst);
  EMBER_CHECK(t.dtype() == src.dtype() && t.shape() == src.shape(), "overwrite: ", src.dtype(), " values of shape ",
              src.shape(), " into a ", t.dtype(), " tensor of shape ", t.shape());
  EMBER_CHECK(t.is_contiguous(), "overwrite: the destination must be contiguous");
  EMBER_CHECK(t.buffer->pool != nullptr, "overwrite: the destination is memory imported by from_dlpack, which ember never writes");
  set_device(index_);
  if (!src.bytes().empty()) copy_to_device(t.raw(), src.bytes().data(), src.bytes().size());
  return true;
}

bool CudaBackend::copy_into(const PrimitivePtr& dst, const PrimitivePtr& src) {
  EMBER_CHECK(dst != nullptr && src != nullptr, "copy_into: null tensor");
  std::lock_guard<std::recursive_mutex> lock(mu_);
  refuse_in_capture("copy_into");
  const CudaTensor& t = as_cuda(dst);
  const CudaTensor& s = as_cuda(src);
  EMBER_CHECK(t.dtype() == s.dtype() && t.shape() == s.shape(), "copy_into: ", s.dtype(), " values of shape ",
              s.shape(), " into a ", t.dtype(), " tensor of shape ", t.shape());
  EMBER_CHECK(t.is_contiguous(), "copy_into: the destination must be contiguous");
  EMBER_CHECK(t.buffer->pool != nullptr, "copy_into: the destination is memory imported by from_dlpack, which ember never writes");
  if (dst == src) return true;
  set_device(index_);
  copy_view(*this, view_of(t), view_of(s));
  return true;
}

}  // namespace ember::cuda
