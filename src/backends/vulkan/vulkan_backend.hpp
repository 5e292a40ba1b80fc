// The Vulkan backend: executes IR ops through a table of kernels, one entry per OpKind, like the
// CUDA backend. Kernel families register themselves (one file each). Work is recorded into a
// command buffer and submitted in batches; read() and sync() are the only waits.
//
// Every kernel is a compute shader generated as GLSL (glsl.hpp), compiled to SPIR-V by shaderc
// and cached in memory and on disk (shaders.hpp). All pipelines share one layout: storage
// buffers at bindings 0-5 (the operands), 6 (the kernel's parameters: shapes, strides, offsets
// and scalar attributes, written into a host-visible arena per batch) and 7 (the error record
// of index kernels), so a kernel is specialised by op and dtype only, never by shape.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "allocator.hpp"
#include "ember/core/backend.hpp"
#include "ember/core/fused.hpp"
#include "runtime.hpp"
#include "shaders.hpp"

namespace ember::vulkan {

class VulkanBackend;
using Kernel = std::vector<PrimitivePtr> (*)(VulkanBackend&, Op&);
using KernelTable = std::array<Kernel, kNumOps>;
// Whether the kernel of an op runs its dtypes on this device (null: every dtype the op allows).
using DTypeCheck = bool (*)(const VulkanBackend&, const Op&);
using DTypeTable = std::array<DTypeCheck, kNumOps>;

void register_copy_kernels(KernelTable& t, DTypeTable& d);         // copy.cpp: contiguous, cast, views
void register_creation_kernels(KernelTable& t, DTypeTable& d);     // creation.cpp: full, arange, linspace, eye
void register_elementwise_kernels(KernelTable& t, DTypeTable& d);  // elementwise.cpp
void register_reduce_kernels(KernelTable& t, DTypeTable& d);       // reduce.cpp
void register_row_kernels(
    KernelTable& t, DTypeTable& d);  // rows.cpp: softmax, log_softmax, layer_norm(_backward), cross_entropy(_backward)
void register_matmul_kernels(KernelTable& t, DTypeTable& d);       // matmul.cpp
void register_index_kernels(KernelTable& t, DTypeTable& d);        // index.cpp: gather ... index_add
void register_scan_kernels(KernelTable& t, DTypeTable& d);         // scan.cpp: cumsum, cumprod, cummax, cummin
void register_sort_kernels(KernelTable& t, DTypeTable& d);         // sort.cpp: sort, topk
void register_pool_kernels(KernelTable& t, DTypeTable& d);         // pool.cpp: avg_pool, max_pool, adaptive_avg_pool
void register_conv_kernels(KernelTable& t, DTypeTable& d);         // conv.cpp: conv, conv_transpose
void register_multi_kernels(KernelTable& t, DTypeTable& d);        // multi.cpp: norm_multi, mul_multi, batch_norm
void register_attention_kernels(KernelTable& t, DTypeTable& d);    // attention.cpp (composed)
void register_select_kernels(KernelTable& t, DTypeTable& d);       // select.cpp: nonzero, masked_select
void register_optim_kernels(KernelTable& t, DTypeTable& d);        // optim.cpp: adam_step
void register_interpolate_kernels(KernelTable& t, DTypeTable& d);  // interpolate.cpp
void register_quant_kernels(KernelTable& t, DTypeTable& d);   // quant.cpp: matmul_integer, conv_integer, qlinear_add
void register_random_kernels(KernelTable& t, DTypeTable& d);  // random.cpp: random_uniform, _bernoulli, _randint
void register_layout_kernels(KernelTable& t,
                             DTypeTable& d);  // layout.cpp: flip, roll, cat, pad, tril, triu, slice_assign

// Device memory of a tensor: a block of the backend's pool, returned to it when the last
// tensor and the last submission that use it are gone.
struct Buffer {
  Pool* pool = nullptr;
  Block* block = nullptr;
  size_t bytes = 0;  // as requested
  Buffer(Pool& p, size_t n) : pool(&p), block(p.allocate(n)), bytes(n) {}
  ~Buffer() { pool->release(block); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};
using BufferPtr = std::shared_ptr<Buffer>;

// The backend's primitive: a buffer viewed with strides and an offset (in elements), so that
// the view ops are free, as on the CPU and CUDA backends.
class VulkanTensor : public Primitive {
 public:
  VulkanTensor(TensorMeta meta, BufferPtr buffer, ShapeDims strides, int64_t offset)
      : Primitive(std::move(meta)), buffer(std::move(buffer)), strides(std::move(strides)), offset(offset) {}
  BufferPtr buffer;
  ShapeDims strides;   // in elements; 0 on broadcast dims; may be negative
  int64_t offset = 0;  // in elements
  int64_t numel() const { return shape().numel(); }
  bool is_contiguous() const;  // row-major over the shape (size-1 dims ignored)
};
using VulkanTensorPtr = std::shared_ptr<VulkanTensor>;
inline VulkanTensor& as_vk(const PrimitivePtr& p) { return static_cast<VulkanTensor&>(*p); }
inline VulkanTensorPtr as_vk_ptr(const PrimitivePtr& p) { return std::static_pointer_cast<VulkanTensor>(p); }

// The parameters every generic kernel reads at binding 6 (std430; the GLSL twin is in glsl.cpp):
// an iteration space of n elements over `rank` collapsed dims, and per operand (0 = output) an
// element offset and strides. Bit k of `contig`: operand k walks its elements in order from its
// offset. fa/fb, ia/ib, da/db: the op's scalar attributes as float, int64 (low, high words) and
// double bits.
inline constexpr int kMaxRank = 8;
inline constexpr int kMaxOperands = 6;    // operand bindings 0-5 of every pipeline
inline constexpr int kParamOperands = 4;  // operands a KernelParams describes
struct KernelParams {
  uint32_t n = 0;
  int32_t rank = 0;
  uint32_t contig = 0;
  uint32_t flag = 0;
  float fa = 0, fb = 0;
  int32_t ia[2] = {}, ib[2] = {};
  uint32_t da[2] = {}, db[2] = {};
  int32_t pad[2] = {};
  int32_t off[kParamOperands] = {};
  int32_t size[kMaxRank] = {};
  int32_t stride[kParamOperands][kMaxRank] = {};
};
static_assert(sizeof(KernelParams) == 240);

// One operand of a generic kernel: a window on a buffer.
struct Operand {
  BufferPtr buffer;
  DType dtype = DType::f32;
  std::vector<int64_t> strides;  // over the iteration space, in elements
  int64_t offset = 0;
};
Operand operand_of(const VulkanTensor& t);                                 // its own strides
Operand broadcast_operand(const VulkanTensor& t, const Shape& out_shape);  // seen from out_shape
// The parameters of an iteration over `shape` for `ops` (output first): dims merged where every
// operand walks them contiguously, size-1 dims dropped. Throws an Error naming `op` when more
// than kMaxRank dims remain or an index exceeds 32 bits.
KernelParams make_params(std::string_view op, const Shape& shape, const std::vector<Operand>& ops);
// The iteration space make_params describes, for any number of operands: the merged sizes and,
// per operand, its strides over them (same checks and errors).
struct MergedDims {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
};
MergedDims merge_dims(std::string_view op, const Shape& shape, const std::vector<Operand>& ops);

// The fusion decorator's kernels on this backend (fused.cpp).
std::unique_ptr<FusedKernels> make_fused_kernels(VulkanBackend& be);

class VulkanBackend final : public Backend {
 public:
  explicit VulkanBackend(int index);
  ~VulkanBackend() override;
  std::string name() const override { return "vulkan:" + std::to_string(index_); }
  std::vector<PrimitivePtr> execute(Op op) override;
  TensorData read(const PrimitivePtr& p) override;
  PrimitivePtr write(const TensorData& data) override;
  PrimitivePtr write_bytes(const TensorMeta& meta, std::span<const std::byte> bytes) override;
  bool supports(const Op& op) const override;
  void sync() override;
  void seed(uint64_t s) override;  // restarts the Philox stream (the CPU backend's state)
  MemoryStats memory_stats() const override { return pool_->stats(); }
  void reset_peak_memory() override { pool_->reset_peak(); }
  void memory_cleanup() override;
  FusedKernels* fused_kernels() override { return fused_.get(); }

  // ---- for kernels ----
  const PhysicalDevice& physical() const { return *phys_; }
  // Whether shaders can hold values of dtype `dt` on this device (features present).
  bool has_dtype(DType dt) const;
  VkDevice device() const { return device_; }
  Shaders& shaders() { return *shaders_; }
  // A new contiguous, uninitialised tensor.
  VulkanTensorPtr alloc(const TensorMeta& meta);
  // p itself when contiguous, else a contiguous copy (copy.cpp).
  VulkanTensorPtr contiguous(const PrimitivePtr& p);
  // Records a dispatch of `pipeline` over `groups` workgroups with the operands at bindings 0..5
  // (null: unused) and `params` at binding 6. The buffers stay alive until it has run.
  void dispatch(VkPipeline pipeline, const std::array<BufferPtr, kMaxOperands>& bindings, const void* params,
                size_t param_bytes, uint32_t groups);
  // The same for a wide pipeline (Shaders::get(..., wide)): operands 0-5 at bindings 0-5, the
  // rest from binding 8 on (at most kMaxOperands + shaders().wide_operands()).
  void dispatch_wide(VkPipeline pipeline, const std::vector<BufferPtr>& operands, const void* params,
                     size_t param_bytes, uint32_t groups);
  // Records a copy of `bytes` bytes between buffers.
  void copy_buffer(const BufferPtr& src, size_t src_offset, const BufferPtr& dst, size_t dst_offset, size_t bytes);
  // Workgroups for n items at `per_group` items per workgroup (capped; kernels loop over the rest).
  uint32_t groups_for(int64_t n, int64_t per_group = 128) const;
  // A Philox key and a fresh range of `n` counter blocks, as the CPU backend's next_random: the
  // same seed gives the same numbers on both backends.
  struct RandomStream {
    uint64_t key;
    uint64_t counter;
  };
  RandomStream next_random(uint64_t n);
  // Holds the backend's lock (one op at a time) and names `op` in errors until the lock goes:
  // for work that does not come through execute() (the fused kernels).
  std::unique_lock<std::recursive_mutex> lock_for(std::string_view op) {
    std::unique_lock<std::recursive_mutex> lock(mu_);
    current_op_ = std::string(op);
    return lock;
  }
  // The op being executed, for error messages.
  const std::string& current_op() const { return current_op_; }
  void check_vk(VkResult r, std::string_view call) const { check(r, current_op_, call, name()); }

 private:
  struct Batch;
  Batch& recording();                 // the batch being recorded (begun on first use)
  void submit();                      // submits the recording batch, if any
  void retire(bool wait_all);         // recycles finished batches (all: waits for each)
  void barrier(VkCommandBuffer cmd);  // orders every command after the ones before it
  void record_dispatch(VkPipeline pipeline, bool wide, const BufferPtr* operands, size_t count, const void* params,
                       size_t param_bytes, uint32_t groups);
  void upload(const BufferPtr& dst, const std::byte* src, size_t bytes);
  void download(const BufferPtr& src, size_t offset, std::byte* dst, size_t bytes);
  PrimitivePtr constant(Op& op);

  int index_;
  const PhysicalDevice* phys_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  std::unique_ptr<Pool> pool_;     // tensors
  std::unique_ptr<Pool> staging_;  // host-visible: uploads, downloads, kernel parameters
  bool direct_ = false;            // tensor memory is host-visible and coherent: no staging copies
  std::unique_ptr<Shaders> shaders_;
  BufferPtr dummy_;              // bound to the unused bindings
  BufferPtr errors_;             // the error record of index kernels (binding 7, host-visible)
  void raise_recorded_errors();  // after a wait: throws the first bad index a kernel met
  KernelTable kernels_{};
  DTypeTable dtypes_{};
  std::unique_ptr<FusedKernels> fused_;  // fused.cpp
  std::unique_ptr<Batch> recording_;
  std::deque<std::unique_ptr<Batch>> in_flight_;
  std::vector<std::unique_ptr<Batch>> spare_;                // finished batches, for reuse
  std::map<std::pair<int, uint64_t>, BufferPtr> constants_;  // shared 1-element fills
  std::recursive_mutex mu_;                                  // one op at a time
  std::string current_op_ = "vulkan";
  std::mutex rng_mu_;
  uint64_t seed_ = 0x853c49e6748fea9bULL;  // the CPU backend's initial seed
  uint64_t counter_ = 0;
};

// The outputs of a values-and-indices kernel (reduce.cpp, pool.cpp, scan.cpp), allocated, and its
// bindings: output 0 (the values) at 0, `input` at 1 and output 1 (the indices, where the op has
// them) at 2.
struct ValueIndexOutputs {
  std::vector<PrimitivePtr> outs;
  std::array<BufferPtr, kMaxOperands> bind{};
};
ValueIndexOutputs alloc_value_index_outputs(VulkanBackend& be, const Op& op, const BufferPtr& input);

// ceil(a / b) for a >= 0, b > 0
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace ember::vulkan
