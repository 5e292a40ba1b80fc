// The CUDA backend: executes IR ops through a table of kernels, one entry per OpKind, on one
// stream per device. Kernel families register themselves (one file each, like the CPU
// backend). Everything is asynchronous; read() and sync() are the only waits.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "allocator.hpp"
#include "cuda_tensor.hpp"
#include "ember/core/backend.hpp"
#include "jit.hpp"
#include "runtime.hpp"

namespace ember::cuda {

class CudaBackend;
using Kernel = std::vector<PrimitivePtr> (*)(CudaBackend&, Op&);
using KernelTable = std::array<Kernel, kNumOps>;

void register_copy_kernels(KernelTable& t);         // copy.cpp: contiguous, cast, views
void register_elementwise_kernels(KernelTable& t);  // elementwise.cpp
void register_creation_kernels(KernelTable& t);     // creation.cpp: full, arange, ..., random_*
void register_layout_kernels(KernelTable& t);       // layout.cpp: flip, roll, cat, pad, tril, triu, slice_assign
void register_reduce_kernels(KernelTable& t);       // reduce.cpp
void register_softmax_kernels(KernelTable& t);      // softmax.cpp: softmax, log_softmax, cross_entropy
void register_norm_kernels(KernelTable& t);         // norm.cpp: layer_norm, batch_norm
void register_scan_kernels(KernelTable& t);         // scan.cpp: cumsum, cumprod, cummax, cummin
void register_sort_kernels(KernelTable& t);         // sort.cpp: sort, topk
void register_index_kernels(KernelTable& t);        // index.cpp: gather ... masked_select
void register_pool_kernels(KernelTable& t);         // pool.cpp: avg_pool, max_pool, adaptive_avg_pool
void register_interpolate_kernels(KernelTable& t);  // interpolate.cpp
void register_matmul_kernels(KernelTable& t);       // matmul.cpp (cuBLASLt)
void register_conv_kernels(KernelTable& t);         // conv.cpp (cuDNN): conv, conv_transpose
void register_attention_kernels(KernelTable& t);    // attention.cpp
void register_optim_kernels(KernelTable& t);        // optim.cpp: adam_step
void register_custom_kernels(KernelTable& t);       // custom.cpp: user-defined ops
bool custom_supported(const Op& op);               // custom.cpp: the definition has a CUDA kernel

// The fused elementwise groups of the fusion decorator (fused.cpp).
std::unique_ptr<FusedKernels> make_fused_kernels(CudaBackend& be);

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int index);
  ~CudaBackend() override;
  std::string name() const override { return "cuda:" + std::to_string(index_); }
  std::vector<PrimitivePtr> execute(Op op) override;
  TensorData read(const PrimitivePtr& p) override;
  std::optional<MemoryView> memory_view(const PrimitivePtr& p) override;
  PrimitivePtr write(const TensorData& data) override;
  PrimitivePtr write_bytes(const TensorMeta& meta, std::span<const std::byte> bytes) override;
  PrimitivePtr wrap_device_memory(const TensorMeta& meta, void* data, std::span<const int64_t> strides,
                                  std::shared_ptr<const void> owner) override;
  bool supports(const Op& op) const override {
    return kernels_[size_t(op.kind)] != nullptr && (op.kind != OpKind::custom || custom_supported(op));
  }
  void sync() override;
  void seed(uint64_t s) override;
  MemoryStats memory_stats() const override { return allocator_.stats(); }
  void reset_peak_memory() override { allocator_.reset_peak(); }
  void memory_cleanup() override;
  FusedKernels* fused_kernels() override { return fused_.get(); }
  std::unique_ptr<CapturedWork> capture(const std::function<void()>& region) override;  // graph.cpp
  bool overwrite(const PrimitivePtr& dst, const TensorData& src) override;               // graph.cpp
  bool copy_into(const PrimitivePtr& dst, const PrimitivePtr& src) override;             // graph.cpp
  void* cuda_stream() override { return stream_; }
  std::optional<MemoryView> cuda_memory(const PrimitivePtr& p) override;

  // ---- CUDA graphs (graph.cpp) ----
  // Throws an Error naming `what` when the calling thread is capturing a graph on this device:
  // what waits for the device (a read, sync) or would be baked into the graph wrongly.
  void refuse_in_capture(const char* what) const;
  // Records the buffers of a captured op's inputs (their liveness is checked at each replay).
  void note_captured_inputs(const std::vector<PrimitivePtr>& inputs);

  // ---- for kernels ----
  int index() const { return index_; }
  cudaStream_t stream() const { return stream_; }
  const cudaDeviceProp& props() const { return props_; }
  int sm_count() const { return props_.multiProcessorCount; }
  // How many blocks of `f` (`threads` threads, `smem` dynamic shared bytes) fit on the device
  // at once: the grid of a persistent kernel; 0 when not even one fits. Asked of the driver once
  // per (f, threads, smem), which is also when f opts in to more than 48 KB of shared memory.
  int resident_blocks(CUfunction f, int threads, size_t smem);
  Jit& jit() { return *jit_; }
  CachingAllocator& allocator() { return allocator_; }
  cublasLtHandle_t cublaslt();
  cudnnHandle_t cudnn();
  // A scratch buffer of at least `bytes` for library calls on the stream (grows, never shrinks
  // until memory_cleanup). Valid until the next call.
  void* workspace(size_t bytes);
  // `n` 32-bit counters that are zero whenever no kernel runs: a kernel that counts in them
  // (the blocks of a split reduction, to find the last one) sets them back to zero before it
  // ends. Null when n exceeds kCounters (the caller takes a path without counters).
  static constexpr size_t kCounters = 65536;
  unsigned* zeroed_counters(size_t n);

  // Launches `f` on the stream with the given arguments (each passed by value: pointers as
  // void*/T*, scalars, ShapeArg/StridesArg structs). Checks the launch.
  template <class... A>
  void launch(CUfunction f, dim3 grid, dim3 block, unsigned smem, A... args) {
    void* params[] = {static_cast<void*>(&args)..., nullptr};
    launch_raw(f, grid, block, smem, params);
  }
  void launch_raw(CUfunction f, dim3 grid, dim3 block, unsigned smem, void** params);

  // Philox random streams, as on the CPU backend: a key and a fresh range of `n` 128-bit
  // counter blocks per call, so the same seed gives the same numbers on both backends.
  struct RandomStream {
    uint64_t key;
    uint64_t counter;
  };
  RandomStream next_random(uint64_t n);

 private:
  void copy_to_device(void* dst, const void* src, size_t bytes);
  PrimitivePtr constant(Op& op);
  void make_current() const;
  int index_;
  cudaDeviceProp props_{};
  cudaStream_t stream_ = nullptr;
  CachingAllocator allocator_;
  std::unique_ptr<Jit> jit_;
  KernelTable kernels_{};
  std::unique_ptr<FusedKernels> fused_;
  std::map<std::tuple<CUfunction, int, size_t>, int> resident_;
  std::recursive_mutex mu_;  // one op at a time per device
  cublasLtHandle_t lt_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  void* counters_ = nullptr;
  // pinned staging buffers for host-device copies, each with the event of its last copy
  struct Staging {
    void* host = nullptr;
    cudaEvent_t done = nullptr;
  };
  static constexpr size_t kStagingBytes = size_t(8) << 20;
  std::array<Staging, 2> staging_{};
  int next_staging_ = 0;
  std::map<std::pair<int, uint64_t>, std::shared_ptr<Buffer>> constants_;  // shared 1-element fills
  friend class CudaGraph;
  struct Capture;                    // the capture in progress (graph.cpp)
  Capture* capture_ = nullptr;       // set while one thread captures, under mu_
  int graphs_alive_ = 0;             // graphs not destroyed: the workspace is not freed meanwhile
  std::vector<void*> retired_workspaces_;  // workspaces replaced while graphs may use them
  std::mutex rng_mu_;
  uint64_t seed_ = 0x853c49e6748fea9bULL;
  uint64_t counter_ = 0;
};

// ceil(a / b) for a >= 0, b > 0
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Grid size for `n` independent items handled `per_thread` at a time by `threads`-wide blocks,
// capped at a few waves (kernels loop grid-stride over the rest).
unsigned grid_for(const CudaBackend& be, int64_t n, int threads, int per_thread = 1);

// n elements of `bytes` (1, 2, 4 or 8) bytes at p set to the bit pattern `bits`, on the stream
// (creation.cpp).
void fill_bits(CudaBackend& be, void* p, int64_t n, size_t bytes, uint64_t bits);

// Raises the error of a bad index that an index kernel recorded since the last check
// (index.cpp); read() and sync() call it after they synchronise.
void check_index_errors(CudaBackend& be);

// The same records for kernels outside index.cpp that read indices (cross_entropy's targets):
// index_error_code() is the device side (struct ErrArg, index_ok(i, size), index_fail(err, i,
// size)). The op calls begin_index_checks() before launching (it raises what earlier kernels
// recorded), passes its IndexErrArg to the kernel, and calls end_index_checks() after (with
// EMBER_CUDA_SYNC_INDEX_CHECKS=1 it waits and raises at once).
struct IndexErrArg {  // the device's ErrArg
  void* rec;
  int64_t seq;
  int32_t dim;
  int32_t op;
};
const char* index_error_code();
IndexErrArg begin_index_checks(CudaBackend& be, const Op& op, int dim);
void end_index_checks(CudaBackend& be);

// Whether kernels may time candidates once per shape (ember::cuda::set_autotune).
bool autotune_enabled();
// The process is exiting (atexit has run): objects destroyed now leave device state to the
// operating system (see cuda_backend.cpp).
bool process_exiting();
// The calling thread is capturing a CUDA graph (graph.cpp).
bool capturing_on_this_thread();
void set_autotune_enabled(bool on);

}  // namespace ember::cuda
