#include "cuda_backend.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "autotune.hpp"
#include "ember/core/adam_inputs.hpp"
#include "profile.hpp"

namespace ember::cuda {

namespace {
// EMBER_AUTOTUNE=off (or 0, false; the older EMBER_CUDA_AUTOTUNE=0 too) starts with autotuning
// off: each library's first choice, nothing timed, no saved winner read (autotune.hpp;
// set_autotune changes it at run time)
std::atomic<bool> g_autotune{autotune_setting(std::getenv("EMBER_AUTOTUNE"), std::getenv("EMBER_CUDA_AUTOTUNE"))};

// Set once the process is exiting. The backends live in Device::cuda's static map, which is
// destroyed after the statics that cuDNN, cuBLASLt and the CUDA runtime create lazily on first
// use; destroying their handles then touches freed state (a test process aborted in teardown
// once in about 100 runs, after its tests had passed). So, like PyTorch, a backend destroyed at
// exit leaves its handles, streams and memory to the operating system.
std::atomic<bool> g_exiting{false};
void mark_exit_on_teardown() {
  static const bool registered = [] { return std::atexit([] { g_exiting = true; }) == 0; }();
  (void)registered;
}
}  // namespace
void set_autotune_enabled(bool on) { g_autotune = on; }
bool process_exiting() { return g_exiting; }
bool autotune_enabled() { return g_autotune && !capturing_on_this_thread(); }  // (nothing is timed in a capture)

CudaBackend::CudaBackend(int index) : index_(index), allocator_(index) {
  mark_exit_on_teardown();  // after Device::cuda's map exists, so it runs before the map is destroyed
  int n = visible_devices();
  EMBER_CHECK(index >= 0 && index < n, "Device::cuda(", index, "): no such GPU; devices: ", describe_visible_devices());
  set_device(index);
  EMBER_CUDA_CHECK(cudaGetDeviceProperties(&props_, index));
  EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  for (auto& s : staging_) {
    EMBER_CUDA_CHECK(cudaHostAlloc(&s.host, kStagingBytes, cudaHostAllocDefault));
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
  }
  jit_ = std::make_unique<Jit>(index, props_.major * 10 + props_.minor);
  register_copy_kernels(kernels_);
  register_elementwise_kernels(kernels_);
  fused_ = make_fused_kernels(*this);
  register_creation_kernels(kernels_);
  register_layout_kernels(kernels_);
  register_reduce_kernels(kernels_);
  register_softmax_kernels(kernels_);
  register_norm_kernels(kernels_);
  register_scan_kernels(kernels_);
  register_sort_kernels(kernels_);
  register_index_kernels(kernels_);
  register_pool_kernels(kernels_);
  register_interpolate_kernels(kernels_);
  register_matmul_kernels(kernels_);
  register_conv_kernels(kernels_);
  register_attention_kernels(kernels_);
  register_optim_kernels(kernels_);
  register_custom_kernels(kernels_);
}

CudaBackend::~CudaBackend() {
  if (g_exiting) {  // (the JIT's modules and the allocator's cache go with the process as well)
    (void)jit_.release();
    allocator_.abandon_cached();
    return;
  }
  set_device_nothrow(index_);
  (void)cudaStreamSynchronize(stream_);
  if (lt_) cublasLtDestroy(lt_);
  if (cudnn_) cudnnDestroy(cudnn_);
  if (workspace_) (void)cudaFree(workspace_);
  for (void* w : retired_workspaces_) (void)cudaFree(w);
  if (counters_) (void)cudaFree(counters_);
  for (auto& s : staging_) {
    if (s.host) (void)cudaFreeHost(s.host);
    if (s.done) (void)cudaEventDestroy(s.done);
  }
  jit_.reset();
  allocator_.release_cached();
  if (stream_) (void)cudaStreamDestroy(stream_);
}

std::vector<PrimitivePtr> CudaBackend::execute(Op op) {
  Kernel k = kernels_[size_t(op.kind)];
  if (k == nullptr) EMBER_NOT_IMPLEMENTED(op.name(), ": not supported on ", name());
  std::lock_guard<std::recursive_mutex> lock(mu_);
  make_current();
  if (capture_) {
    if (op.kind == OpKind::adam_step && !adam_inputs(op.inputs.size(), op.attr<AdamAttrs>()).device_scalars)
      refuse_in_capture("adam_step (its step count and learning rate are host values a replay would repeat; "
                        "run the optimizer outside the captured region, or make it capturable)");
    note_captured_inputs(op.inputs);
  }
  if (op.kind == OpKind::full && op.attr<CreateAttrs>().shared && op.outputs[0].shape.numel() == 1)
    return {constant(op)};
  OpProfiler::Scope timed(op, stream_);  // EMBER_CUDA_PROFILE=1 (profile.hpp)
  return k(*this, op);
}

// Scalar operands (the 0-d operands of `x * 0.9`, CreateAttrs::shared) are made once per
// (dtype, value) and shared: no user holds them, and a shared buffer is never reused in place
// (its use count is above one), so a training loop launches no fill kernel for its constants.
// A `full` the user asks for is never shared: graph::overwrite writes into such tensors (a
// learning rate read by a captured step, graph::Step's copies of its inputs), and writing into a
// shared zero would change every `+ 0` in the process. The table is small and cleared
// when full: values that change every step (Adam's bias corrections) then cycle through the
// same few pool blocks, so the pool's reserved bytes stay flat over a long loop.
PrimitivePtr CudaBackend::constant(Op& op) {
  const TensorMeta& meta = op.outputs[0];
  double v = op.attr<CreateAttrs>().a;
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  auto key = std::make_pair(int(meta.dtype), bits);
  auto it = constants_.find(key);
  if (it == constants_.end()) {
    if (constants_.size() >= 64) constants_.clear();
    Op one = op;
    auto t = as_cuda_ptr(kernels_[size_t(OpKind::full)](*this, one)[0]);
    it = constants_.emplace(key, t->buffer).first;
  }
  return std::make_shared<CudaTensor>(meta, it->second, contiguous_strides(meta.shape), 0);
}

// The calling thread's current device (set_device calls cudaSetDevice only when it changes; it
// keeps the one record of the thread's device, which every switch goes through).
void CudaBackend::make_current() const { set_device(index_); }

void CudaBackend::launch_raw(CUfunction f, dim3 grid, dim3 block, unsigned smem, void** params) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
  // EMBER_CUDA_SKIP_LAUNCH=1 (diagnostics only; results are garbage): everything but the driver
  // call, to split the host cost of an op between ember and cuLaunchKernel.
  static const bool skip = [] {
    const char* e = std::getenv("EMBER_CUDA_SKIP_LAUNCH");
    return e && *e == '1';
  }();
  if (skip) return;
  EMBER_CU_CHECK(driver().cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, smem,
                                         reinterpret_cast<CUstream>(stream_), params, nullptr));
}

int CudaBackend::resident_blocks(CUfunction f, int threads, size_t smem) {
  auto key = std::make_tuple(f, threads, smem);
  auto it = resident_.find(key);
  if (it != resident_.end()) return it->second;
  if (smem > size_t(props_.sharedMemPerBlockOptin)) return 0;
  if (smem > 48 * 1024)  // above the default limit, a kernel must opt in
    EMBER_CU_CHECK(driver().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(smem)));
  int per_sm = 0;
  EMBER_CU_CHECK(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, threads, smem));
  const int n = per_sm * sm_count();
  resident_.emplace(key, n);
  return n;
}

unsigned grid_for(const CudaBackend& be, int64_t n, int threads, int per_thread) {
  int64_t blocks = (n + int64_t(threads) * per_thread - 1) / (int64_t(threads) * per_thread);
  int64_t cap = int64_t(be.sm_count()) * 32;
  return unsigned(std::max<int64_t>(1, std::min(blocks, cap)));
}

std::optional<MemoryView> CudaBackend::memory_view(const PrimitivePtr& p) {
  EMBER_CHECK(p != nullptr, "memory_view: null tensor");
  std::lock_guard<std::recursive_mutex> lock(mu_);
  refuse_in_capture("memory_view (it waits for the device)");
  set_device(index_);
  CudaTensorPtr c = contiguous(*this, p);
  // the consumer reads on its own stream: every kernel that writes these values has finished
  sync();
  void* data = c->raw();
  return MemoryView{data, std::move(c), index_};
}

std::optional<MemoryView> CudaBackend::cuda_memory(const PrimitivePtr& p) {
  EMBER_CHECK(p != nullptr, "cuda_memory: null tensor");
  // a decorator's wrapper is not ours: the caller unwraps it or falls back on memory_view
  if (!dynamic_cast<const CudaTensor*>(p.get())) return std::nullopt;
  std::lock_guard<std::recursive_mutex> lock(mu_);
  set_device(index_);
  CudaTensorPtr c = contiguous(*this, p);  // queued on stream_ when p is a strided view
  void* data = c->raw();
  return MemoryView{data, std::move(c), index_};
}

TensorData CudaBackend::read(const PrimitivePtr& p) {
  EMBER_CHECK(p != nullptr, "read: null tensor");
  std::lock_guard<std::recursive_mutex> lock(mu_);
  refuse_in_capture("reading a tensor to the host");
  set_device(index_);
  auto c = contiguous(*this, p);
  TensorData d(c->shape(), c->dtype());
  size_t total = d.bytes().size();
  auto* dst = reinterpret_cast<char*>(d.bytes().data());
  const char* src = static_cast<const char*>(c->raw());
  // through the pinned buffers: copy chunk i+1 on the device while the host copies chunk i out
  size_t done = 0;
  int slot = 0;
  size_t pending = 0, pending_at = 0;
  while (done < total || pending) {
    size_t n = std::min(kStagingBytes, total - done);
    if (n) {
      Staging& s = staging_[slot];
      EMBER_CUDA_CHECK(cudaEventSynchronize(s.done));  // a previous upload may still read it
      EMBER_CUDA_CHECK(cudaMemcpyAsync(s.host, src + done, n, cudaMemcpyDeviceToHost, stream_));
      EMBER_CUDA_CHECK(cudaEventRecord(s.done, stream_));
    }
    if (pending) {
      Staging& prev = staging_[slot ^ 1];
      EMBER_CUDA_CHECK(cudaEventSynchronize(prev.done));
      std::memcpy(dst + pending_at, prev.host, pending);
    }
    pending = n;
    pending_at = done;
    done += n;
    slot ^= 1;
  }
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_));
  check_index_errors(*this);
  return d;
}

void CudaBackend::copy_to_device(void* dst, const void* src, size_t bytes) {
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  for (size_t done = 0; done < bytes;) {
    size_t n = std::min(kStagingBytes, bytes - done);
    Staging& st = staging_[next_staging_];
    next_staging_ ^= 1;
    EMBER_CUDA_CHECK(cudaEventSynchronize(st.done));  // its previous copy has left the buffer
    std::memcpy(st.host, s + done, n);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(d + done, st.host, n, cudaMemcpyHostToDevice, stream_));
    EMBER_CUDA_CHECK(cudaEventRecord(st.done, stream_));
    done += n;
  }
}

PrimitivePtr CudaBackend::write_bytes(const TensorMeta& meta, std::span<const std::byte> bytes) {
  EMBER_CHECK(bytes.size() == size_t(meta.shape.numel()) * dtype_size(meta.dtype), name(), " write: ",
              bytes.size(), " bytes for a ", meta.dtype, " tensor of shape ", meta.shape);
  std::lock_guard<std::recursive_mutex> lock(mu_);
  refuse_in_capture("writing host values to the device (make the tensor before the region)");
  set_device(index_);
  auto t = alloc(*this, meta);
  if (!bytes.empty()) copy_to_device(t->raw(), bytes.data(), bytes.size());
  return t;
}

PrimitivePtr CudaBackend::wrap_device_memory(const TensorMeta& meta, void* data, std::span<const int64_t> strides,
                                             std::shared_ptr<const void> owner) {
  EMBER_CHECK(int(strides.size()) == meta.shape.rank(), name(), " wrap_device_memory: ", strides.size(),
              " strides for a tensor of rank ", meta.shape.rank());
  std::lock_guard<std::recursive_mutex> lock(mu_);
  refuse_in_capture("importing device memory (from_dlpack)");
  set_device(index_);
  const int64_t elem = int64_t(dtype_size(meta.dtype));
  // the extent the view reaches: [lo, hi) elements from element 0 (strides may be negative)
  int64_t lo = 0, hi = 1;
  for (int d = 0; d < meta.shape.rank(); ++d) {
    if (meta.shape[d] == 0) lo = 0, hi = 0;
    const int64_t reach = (meta.shape[d] - 1) * strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  if (meta.shape.numel() == 0) lo = 0, hi = 0;
  char* base = static_cast<char*>(data) + lo * elem;
  if (hi > lo) {
    cudaPointerAttributes attr{};
    const cudaError_t e = cudaPointerGetAttributes(&attr, base);
    if (e != cudaSuccess) (void)cudaGetLastError();
    EMBER_CHECK(e == cudaSuccess && (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged),
                name(), " from_dlpack: the memory at ", data, " is not CUDA device memory");
    EMBER_CHECK(attr.device == index_, name(), " from_dlpack: the memory at ", data, " is on CUDA device ",
                attr.device, ", not ", index_);
    // DLPack's capsules carry no stream: the producer's writes must be done before ember reads
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  }
  // Released only after ember's stream has finished with the memory (not while a graph is being
  // captured on it: nothing captured has run yet).
  cudaStream_t stream = stream_;
  std::shared_ptr<const void> keep(owner.get(), [stream, owner](const void*) mutable {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) == cudaSuccess && status == cudaStreamCaptureStatusNone)
      (void)cudaStreamSynchronize(stream);
    (void)cudaGetLastError();
    owner.reset();
  });
  auto buf = std::make_shared<Buffer>(base, size_t(hi - lo) * size_t(elem), std::move(keep));
  return std::make_shared<CudaTensor>(meta, std::move(buf), ShapeDims(strides.begin(), strides.end()), -lo);
}

PrimitivePtr CudaBackend::write(const TensorData& data) {
  return write_bytes({data.shape(), data.dtype()}, std::span<const std::byte>(data.bytes().data(), data.bytes().size()));
}

void CudaBackend::sync() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  refuse_in_capture("sync");
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_));
  check_index_errors(*this);
}

void CudaBackend::seed(uint64_t s) {
  std::lock_guard<std::mutex> lock(rng_mu_);
  seed_ = s;
  counter_ = 0;
}

CudaBackend::RandomStream CudaBackend::next_random(uint64_t n) {
  refuse_in_capture("a random op (a replay would draw the same numbers again)");
  std::lock_guard<std::mutex> lock(rng_mu_);
  RandomStream r{seed_, counter_};
  counter_ += n;
  return r;
}

void CudaBackend::memory_cleanup() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  refuse_in_capture("memory_cleanup");
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_));
  if (workspace_ && graphs_alive_ == 0) {  // (a graph's cuBLASLt calls use it)
    EMBER_CUDA_CHECK(cudaFree(workspace_));
    workspace_ = nullptr;
    workspace_bytes_ = 0;
  }
  allocator_.release_cached();
}

cublasLtHandle_t CudaBackend::cublaslt() {
  if (!lt_) {
    cublasStatus_t s = cublasLtCreate(&lt_);
    EMBER_CHECK(s == CUBLAS_STATUS_SUCCESS, name(), ": cublasLtCreate failed (status ", int(s), ")");
  }
  return lt_;
}

cudnnHandle_t CudaBackend::cudnn() {
  if (!cudnn_) {
    cudnnStatus_t s = cudnnCreate(&cudnn_);
    EMBER_CHECK(s == CUDNN_STATUS_SUCCESS, name(), ": cudnnCreate failed: ", cudnnGetErrorString(s));
    cudnnSetStream(cudnn_, stream_);
  }
  return cudnn_;
}

void* CudaBackend::workspace(size_t bytes) {
  if (bytes > workspace_bytes_) {
    if (workspace_ && (capture_ || graphs_alive_ > 0)) {
      retired_workspaces_.push_back(workspace_);  // a graph's work may use it: freed with the backend
      workspace_ = nullptr;
    } else if (workspace_) {
      EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_));  // queued work may still use the old one
      EMBER_CUDA_CHECK(cudaFree(workspace_));
      workspace_ = nullptr;
    }
    size_t n = std::max(bytes, size_t(32) << 20);
    cudaError_t e = cudaMalloc(&workspace_, n);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      allocator_.release_cached();
      EMBER_CUDA_CHECK(cudaMalloc(&workspace_, n));
    }
    workspace_bytes_ = n;
  }
  return workspace_;
}

unsigned* CudaBackend::zeroed_counters(size_t n) {
  if (n > kCounters) return nullptr;
  if (!counters_) {
    if (cudaMalloc(&counters_, kCounters * sizeof(unsigned)) != cudaSuccess) {
      (void)cudaGetLastError();
      allocator_.release_cached();
      if (cudaMalloc(&counters_, kCounters * sizeof(unsigned)) != cudaSuccess) {
        (void)cudaGetLastError();
        counters_ = nullptr;
        return nullptr;  // (out of memory: the caller's path without counters reports it)
      }
    }
    EMBER_CUDA_CHECK(cudaMemsetAsync(counters_, 0, kCounters * sizeof(unsigned), stream_));
  }
  return static_cast<unsigned*>(counters_);
}

}  // namespace ember::cuda
