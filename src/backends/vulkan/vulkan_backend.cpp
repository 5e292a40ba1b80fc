#include "vulkan_backend.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "ember/core/error.hpp"

namespace ember::vulkan {

namespace {

constexpr int kCommandsPerBatch = 256;    // dispatches and copies recorded before a batch is submitted
constexpr size_t kMaxInFlight = 16;       // submitted batches before the host waits for the oldest
constexpr uint32_t kSetsPerPool = 256;    // descriptor sets per descriptor pool
constexpr size_t kParamChunk = 64 << 10;  // bytes of one kernel-parameter arena

// At exit, backends still alive leave their device objects to the operating system: tensors in
// static storage may outlive them, and the driver may already be unloading.
std::atomic<bool> g_exiting{false};

uint32_t find_memory_type(VkPhysicalDevice pd, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid = 0) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(pd, &mp);
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
    if ((f & want) == want && (f & avoid) == 0) return i;
  }
  return UINT32_MAX;
}

VkMemoryPropertyFlags memory_flags(VkPhysicalDevice pd, uint32_t type) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(pd, &mp);
  return mp.memoryTypes[type].propertyFlags;
}

}  // namespace

// A command buffer being recorded or in flight, with everything its commands use: descriptor
// sets, the parameter arena and the buffers they read and write (kept alive until its fence).
struct VulkanBackend::Batch {
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> pools;
  uint32_t sets_in_last_pool = 0;
  std::vector<BufferPtr> params;  // parameter arenas (host-visible)
  size_t params_used = 0;         // bytes used in params.back()
  std::vector<BufferPtr> keep;
  int commands = 0;
};

bool VulkanTensor::is_contiguous() const {
  const Shape& s = shape();
  int64_t expect = 1;
  for (int d = s.rank() - 1; d >= 0; --d) {
    if (s[d] == 1) continue;
    if (strides[d] != expect) return false;
    expect *= s[d];
  }
  return true;
}

VulkanBackend::VulkanBackend(int index) : index_(index) {
  const auto& devs = physical_devices();
  EMBER_CHECK(index >= 0 && index < int(devs.size()), "Device::vulkan(", index,
              "): no such device; devices: ", describe_visible_devices());
  static const bool registered_exit = [] { return std::atexit([] { g_exiting = true; }) == 0; }();
  (void)registered_exit;
  phys_ = &devs[size_t(index)];
  const PhysicalDevice& pd = *phys_;

  // every feature that widens the dtypes, where the device has it
  VkPhysicalDeviceShaderFloat16Int8Features f16i8{};
  f16i8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  f16i8.shaderFloat16 = pd.float16;
  f16i8.shaderInt8 = pd.int8;
  VkPhysicalDevice8BitStorageFeatures s8{};
  s8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
  s8.storageBuffer8BitAccess = pd.storage8;
  VkPhysicalDevice16BitStorageFeatures s16{};
  s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  s16.storageBuffer16BitAccess = pd.storage16;
  VkPhysicalDeviceFeatures2 f2{};
  f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f2.features.shaderFloat64 = pd.float64;
  f2.features.shaderInt64 = pd.int64;
  f2.features.shaderInt16 = pd.int16;
  f2.pNext = &s16;
  std::vector<const char*> exts;
  const bool v12 = pd.props.apiVersion >= VK_API_VERSION_1_2;
  if (pd.int8 || pd.float16) {
    s16.pNext = &f16i8;
    if (!v12) exts.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  }
  if (pd.storage8) {
    s8.pNext = s16.pNext;
    s16.pNext = &s8;
    if (!v12) exts.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  }
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{};
  qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qi.queueFamilyIndex = pd.queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{};
  di.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  di.pNext = &f2;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = uint32_t(exts.size());
  di.ppEnabledExtensionNames = exts.data();
  const std::string where = "Device::vulkan(" + std::to_string(index) + ")";
  check(vkCreateDevice(pd.handle, &di, nullptr, &device_), where, "vkCreateDevice", name());
  vkGetDeviceQueue(device_, pd.queue_family, 0, &queue_);
  VkCommandPoolCreateInfo cp{};
  cp.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = pd.queue_family;
  check(vkCreateCommandPool(device_, &cp, nullptr, &command_pool_), where, "vkCreateCommandPool", name());

  const VkBufferUsageFlags usage =
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  uint32_t local = find_memory_type(pd.handle, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  const uint32_t host =
      find_memory_type(pd.handle, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  EMBER_CHECK(host != UINT32_MAX, where, ": the device has no host-visible coherent memory");
  if (local == UINT32_MAX) local = host;
  const VkMemoryPropertyFlags lf = memory_flags(pd.handle, local);
  // EMBER_VULKAN_STAGING=1 copies through staging buffers even where the device's memory is
  // host-visible (lavapipe, integrated GPUs), as on a discrete GPU (tests use it)
  const char* force = std::getenv("EMBER_VULKAN_STAGING");
  direct_ = (lf & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (lf & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) &&
            !(force && *force == '1');
  pool_ = std::make_unique<Pool>(device_, local, direct_, usage, name());
  staging_ = std::make_unique<Pool>(device_, host, true, usage, name());
  shaders_ = std::make_unique<Shaders>(device_, pd, name());
  dummy_ = std::make_shared<Buffer>(*staging_, 256);
  errors_ = std::make_shared<Buffer>(*staging_, 256);
  std::memset(errors_->block->mapped, 0, 256);

  register_copy_kernels(kernels_, dtypes_);
  register_creation_kernels(kernels_, dtypes_);
  register_elementwise_kernels(kernels_, dtypes_);
  register_reduce_kernels(kernels_, dtypes_);
  register_layout_kernels(kernels_, dtypes_);
  register_row_kernels(kernels_, dtypes_);
  register_matmul_kernels(kernels_, dtypes_);
  register_index_kernels(kernels_, dtypes_);
  register_scan_kernels(kernels_, dtypes_);
  register_sort_kernels(kernels_, dtypes_);
  register_pool_kernels(kernels_, dtypes_);
  register_conv_kernels(kernels_, dtypes_);
  register_multi_kernels(kernels_, dtypes_);
  register_attention_kernels(kernels_, dtypes_);
  register_select_kernels(kernels_, dtypes_);
  register_optim_kernels(kernels_, dtypes_);
  register_interpolate_kernels(kernels_, dtypes_);
  register_quant_kernels(kernels_, dtypes_);
  register_random_kernels(kernels_, dtypes_);
  fused_ = make_fused_kernels(*this);
}

VulkanBackend::~VulkanBackend() {
  if (g_exiting) {  // (see g_exiting) keep the compiled pipelines for the next run, leave the rest
    if (shaders_) shaders_->save_pipeline_cache();
    (void)shaders_.release();
    (void)pool_.release();
    (void)staging_.release();
    (void)recording_.release();
    for (auto& b : in_flight_) (void)b.release();
    for (auto& b : spare_) (void)b.release();
    (void)new BufferPtr(std::move(dummy_));
    (void)new BufferPtr(std::move(errors_));
    for (auto& [k, c] : constants_) (void)new BufferPtr(std::move(c));
    return;
  }
  try {
    sync();
  } catch (...) {  // (a lost device: free what can be freed)
  }
  vkDeviceWaitIdle(device_);
  auto free_batch = [&](std::unique_ptr<Batch>& b) {
    if (!b) return;
    for (VkDescriptorPool p : b->pools) vkDestroyDescriptorPool(device_, p, nullptr);
    if (b->fence) vkDestroyFence(device_, b->fence, nullptr);
    b.reset();
  };
  free_batch(recording_);
  for (auto& b : in_flight_) free_batch(b);
  for (auto& b : spare_) free_batch(b);
  constants_.clear();
  dummy_.reset();
  errors_.reset();
  shaders_.reset();
  pool_.reset();
  staging_.reset();
  if (command_pool_) vkDestroyCommandPool(device_, command_pool_, nullptr);
  vkDestroyDevice(device_, nullptr);
}

bool VulkanBackend::has_dtype(DType dt) const {
  const PhysicalDevice& p = *phys_;
  switch (dt) {
    case DType::f32:
    case DType::i32:
      return true;
    case DType::f64:
      return p.float64;
    case DType::i64:
      return p.int64;
    case DType::f16:
      return p.float16 && p.storage16;
    case DType::bf16:
    case DType::i16:
      return p.int16 && p.storage16;
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      return p.int8 && p.storage8;
  }
  return false;
}

bool VulkanBackend::supports(const Op& op) const {
  const size_t k = size_t(op.kind);
  if (kernels_[k] == nullptr) return false;
  if (op.inputs.empty() && op.outputs.empty()) return true;  // asked by kind alone
  return dtypes_[k] == nullptr || dtypes_[k](*this, op);
}

std::vector<PrimitivePtr> VulkanBackend::execute(Op op) {
  Kernel k = kernels_[size_t(op.kind)];
  if (k == nullptr) EMBER_NOT_IMPLEMENTED(op.name(), ": not supported on ", name());
  if (dtypes_[size_t(op.kind)] && !dtypes_[size_t(op.kind)](*this, op)) {
    std::string dts;
    for (const auto& in : op.inputs)
      if (in) dts += (dts.empty() ? "" : ", ") + std::string(dtype_name(in->dtype()));
    if (dts.empty()) dts = std::string(dtype_name(op.outputs[0].dtype));
    EMBER_NOT_IMPLEMENTED(op.name(), ": not supported on ", name(), " for these arguments (", dts, " tensors)");
  }
  std::lock_guard<std::recursive_mutex> lock(mu_);
  current_op_ = std::string(op.name());
  if (op.kind == OpKind::full && op.attr<CreateAttrs>().shared && op.outputs[0].shape.numel() == 1)
    return {constant(op)};
  return k(*this, op);
}

// Scalar operands (CreateAttrs::shared) are made once per (dtype, value) and shared, as on CUDA.
PrimitivePtr VulkanBackend::constant(Op& op) {
  const TensorMeta& meta = op.outputs[0];
  double v = op.attr<CreateAttrs>().a;
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  auto key = std::make_pair(int(meta.dtype), bits);
  auto it = constants_.find(key);
  if (it == constants_.end()) {
    if (constants_.size() >= 64) constants_.clear();
    Op one = op;
    auto t = as_vk_ptr(kernels_[size_t(OpKind::full)](*this, one)[0]);
    it = constants_.emplace(key, t->buffer).first;
  }
  return std::make_shared<VulkanTensor>(meta, it->second, contiguous_strides(meta.shape), 0);
}

VulkanTensorPtr VulkanBackend::alloc(const TensorMeta& meta) {
  const size_t bytes = size_t(meta.shape.numel()) * dtype_size(meta.dtype);
  auto buf = std::make_shared<Buffer>(*pool_, bytes);
  return std::make_shared<VulkanTensor>(meta, std::move(buf), contiguous_strides(meta.shape), 0);
}

uint32_t VulkanBackend::groups_for(int64_t n, int64_t per_group) const {
  const int64_t cap = std::min<int64_t>(phys_->props.limits.maxComputeWorkGroupCount[0], 65535);
  return uint32_t(std::clamp<int64_t>(ceil_div(n, per_group), 1, cap));
}

VulkanBackend::Batch& VulkanBackend::recording() {
  if (recording_) return *recording_;
  if (!spare_.empty()) {
    recording_ = std::move(spare_.back());
    spare_.pop_back();
  } else {
    recording_ = std::make_unique<Batch>();
    VkCommandBufferAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ai.commandPool = command_pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check_vk(vkAllocateCommandBuffers(device_, &ai, &recording_->cmd), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi{};
    fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    check_vk(vkCreateFence(device_, &fi, nullptr, &recording_->fence), "vkCreateFence");
  }
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check_vk(vkBeginCommandBuffer(recording_->cmd, &bi), "vkBeginCommandBuffer");
  return *recording_;
}

void VulkanBackend::barrier(VkCommandBuffer cmd) {
  // one global barrier after every command: kernels run in recording order, each seeing what the
  // ones before it wrote (simple, and cheap next to a kernel on lavapipe; finer tracking later)
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void VulkanBackend::dispatch(VkPipeline pipeline, const std::array<BufferPtr, kMaxOperands>& bindings,
                             const void* params, size_t param_bytes, uint32_t groups) {
  record_dispatch(pipeline, false, bindings.data(), bindings.size(), params, param_bytes, groups);
}

void VulkanBackend::dispatch_wide(VkPipeline pipeline, const std::vector<BufferPtr>& operands, const void* params,
                                  size_t param_bytes, uint32_t groups) {
  EMBER_CHECK(operands.size() <= size_t(kMaxOperands + shaders_->wide_operands()), current_op_, ": ", operands.size(),
              " operands exceed the ", kMaxOperands + shaders_->wide_operands(), " bindings of a wide pipeline on ",
              name(), " (an ember bug)");
  record_dispatch(pipeline, true, operands.data(), operands.size(), params, param_bytes, groups);
}

void VulkanBackend::record_dispatch(VkPipeline pipeline, bool wide, const BufferPtr* operands, size_t count,
                                    const void* params, size_t param_bytes, uint32_t groups) {
  Batch& b = recording();
  // the parameters, in the batch's arena
  const size_t align = std::max<size_t>(phys_->props.limits.minStorageBufferOffsetAlignment, 16);
  size_t at = (b.params_used + align - 1) / align * align;
  if (b.params.empty() || at + param_bytes > kParamChunk) {
    b.params.push_back(std::make_shared<Buffer>(*staging_, kParamChunk));
    at = 0;
  }
  std::memcpy(static_cast<char*>(b.params.back()->block->mapped) + at, params, param_bytes);
  b.params_used = at + param_bytes;
  // a descriptor set for the bindings (a pool holds enough descriptors for its sets to be wide)
  if (b.pools.empty() || b.sets_in_last_pool == kSetsPerPool) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              kSetsPerPool * uint32_t(kMaxOperands + 2 + shaders_->wide_operands())};
    VkDescriptorPoolCreateInfo pi{};
    pi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    pi.maxSets = kSetsPerPool;
    pi.poolSizeCount = 1;
    pi.pPoolSizes = &size;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    check_vk(vkCreateDescriptorPool(device_, &pi, nullptr, &pool), "vkCreateDescriptorPool");
    b.pools.push_back(pool);
    b.sets_in_last_pool = 0;
  }
  VkDescriptorSetAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  ai.descriptorPool = b.pools.back();
  ai.descriptorSetCount = 1;
  VkDescriptorSetLayout sl = shaders_->set_layout(wide);
  ai.pSetLayouts = &sl;
  VkDescriptorSet set = VK_NULL_HANDLE;
  check_vk(vkAllocateDescriptorSets(device_, &ai, &set), "vkAllocateDescriptorSets");
  ++b.sets_in_last_pool;
  const VkDeviceSize range_limit = phys_->props.limits.maxStorageBufferRange;
  // bindings 0-5: operands 0-5; 6 the parameters; 7 the error record; 8 on: operands 6 on
  const int n_writes = kMaxOperands + 2 + (wide ? shaders_->wide_operands() : 0);
  std::vector<VkDescriptorBufferInfo> infos(static_cast<size_t>(n_writes));
  std::vector<VkWriteDescriptorSet> writes(static_cast<size_t>(n_writes));
  for (int i = 0; i < n_writes; ++i) {
    const bool operand = i < kMaxOperands || i >= kMaxOperands + 2;
    const size_t k = size_t(i < kMaxOperands ? i : i - 2);  // the operand at binding i
    const Buffer* buf = operand             ? (k < count && operands[k] ? operands[k].get() : dummy_.get())
                        : i == kMaxOperands ? b.params.back().get()
                                            : errors_.get();
    if (i == kMaxOperands + 1) {
      infos[size_t(i)] = {buf->block->buffer, 0, 256};
    } else if (operand) {
      EMBER_CHECK(buf->bytes <= range_limit, current_op_, ": a tensor of ", buf->bytes,
                  " bytes exceeds the largest buffer a shader can address on ", name(), " (maxStorageBufferRange ",
                  range_limit, " bytes)");
      infos[size_t(i)] = {buf->block->buffer, 0, std::min<VkDeviceSize>(buf->block->size, range_limit)};
    } else {
      infos[size_t(i)] = {buf->block->buffer, at, param_bytes};
    }
    writes[size_t(i)] = {};
    writes[size_t(i)].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[size_t(i)].dstSet = set;
    writes[size_t(i)].dstBinding = uint32_t(i);
    writes[size_t(i)].descriptorCount = 1;
    writes[size_t(i)].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[size_t(i)].pBufferInfo = &infos[size_t(i)];
  }
  vkUpdateDescriptorSets(device_, uint32_t(n_writes), writes.data(), 0, nullptr);
  vkCmdBindPipeline(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vkCmdBindDescriptorSets(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, shaders_->layout(wide), 0, 1, &set, 0, nullptr);
  vkCmdDispatch(b.cmd, groups, 1, 1);
  barrier(b.cmd);
  for (size_t k = 0; k < count; ++k)
    if (operands[k]) b.keep.push_back(operands[k]);
  if (++b.commands >= kCommandsPerBatch) submit();
}

void VulkanBackend::copy_buffer(const BufferPtr& src, size_t src_offset, const BufferPtr& dst, size_t dst_offset,
                                size_t bytes) {
  if (bytes == 0) return;
  Batch& b = recording();
  VkBufferCopy region{src_offset, dst_offset, bytes};
  vkCmdCopyBuffer(b.cmd, src->block->buffer, dst->block->buffer, 1, &region);
  barrier(b.cmd);
  b.keep.push_back(src);
  b.keep.push_back(dst);
  if (++b.commands >= kCommandsPerBatch) submit();
}

void VulkanBackend::submit() {
  if (!recording_) return;
  Batch& b = *recording_;
  // the host reads what the batch wrote (read(), mapped memory) after its fence
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(b.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  check_vk(vkEndCommandBuffer(b.cmd), "vkEndCommandBuffer");
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &b.cmd;
  check_vk(vkQueueSubmit(queue_, 1, &si, b.fence), "vkQueueSubmit");
  in_flight_.push_back(std::move(recording_));
  retire(false);
  while (in_flight_.size() > kMaxInFlight) {  // bound the work (and memory) queued ahead of the device
    check_vk(vkWaitForFences(device_, 1, &in_flight_.front()->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    retire(false);
  }
}

void VulkanBackend::retire(bool wait_all) {
  while (!in_flight_.empty()) {
    Batch& b = *in_flight_.front();
    if (wait_all) {
      check_vk(vkWaitForFences(device_, 1, &b.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    } else {
      VkResult r = vkGetFenceStatus(device_, b.fence);
      if (r == VK_NOT_READY) break;
      check_vk(r, "vkGetFenceStatus");
    }
    check_vk(vkResetFences(device_, 1, &b.fence), "vkResetFences");
    check_vk(vkResetCommandBuffer(b.cmd, 0), "vkResetCommandBuffer");
    for (VkDescriptorPool p : b.pools) vkResetDescriptorPool(device_, p, 0);
    b.sets_in_last_pool = 0;
    if (b.pools.size() > 1) {  // keep one pool per batch
      for (size_t i = 1; i < b.pools.size(); ++i) vkDestroyDescriptorPool(device_, b.pools[i], nullptr);
      b.pools.resize(1);
    }
    if (b.params.size() > 1) b.params.resize(1);
    b.params_used = 0;
    b.keep.clear();  // the buffers go back to the pool: the device is done with them
    b.commands = 0;
    spare_.push_back(std::move(in_flight_.front()));
    in_flight_.pop_front();
  }
}

void VulkanBackend::sync() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  submit();
  retire(true);
  raise_recorded_errors();
}

void VulkanBackend::raise_recorded_errors() {
  auto* rec = static_cast<int32_t*>(errors_->block->mapped);
  if (rec[0] == 0) return;
  int64_t index = 0, size = 0;
  std::memcpy(&index, rec + 4, 8);
  std::memcpy(&size, rec + 6, 8);
  const OpKind op = OpKind(rec[1]);
  const int dim = rec[2];
  std::memset(rec, 0, 32);
  EMBER_FAIL(op_name(op), ": index ", index, " is out of bounds for dim ", dim, " with size ", size);
}

void VulkanBackend::seed(uint64_t s) {
  std::lock_guard<std::mutex> lock(rng_mu_);
  seed_ = s;
  counter_ = 0;
}

VulkanBackend::RandomStream VulkanBackend::next_random(uint64_t n) {
  std::lock_guard<std::mutex> lock(rng_mu_);
  RandomStream r{seed_, counter_};
  counter_ += n;
  return r;
}

void VulkanBackend::memory_cleanup() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  submit();
  retire(true);
  constants_.clear();
  pool_->release_cached();
  staging_->release_cached();
}

void VulkanBackend::upload(const BufferPtr& dst, const std::byte* src, size_t bytes) {
  if (bytes == 0) return;
  if (direct_) {  // a new buffer: no queued command uses it
    std::memcpy(dst->block->mapped, src, bytes);
    return;
  }
  auto stage = std::make_shared<Buffer>(*staging_, bytes);
  std::memcpy(stage->block->mapped, src, bytes);
  copy_buffer(stage, 0, dst, 0, bytes);
}

void VulkanBackend::download(const BufferPtr& src, size_t offset, std::byte* dst, size_t bytes) {
  submit();
  retire(true);
  raise_recorded_errors();
  if (bytes == 0) return;
  if (direct_) {
    std::memcpy(dst, static_cast<const char*>(src->block->mapped) + offset, bytes);
    return;
  }
  auto stage = std::make_shared<Buffer>(*staging_, bytes);
  copy_buffer(src, offset, stage, 0, bytes);
  submit();
  retire(true);
  std::memcpy(dst, stage->block->mapped, bytes);
}

TensorData VulkanBackend::read(const PrimitivePtr& p) {
  EMBER_CHECK(p != nullptr, "read: null tensor");
  std::lock_guard<std::recursive_mutex> lock(mu_);
  current_op_ = "read";
  VulkanTensorPtr c = contiguous(p);
  TensorData d(c->shape(), c->dtype());
  download(c->buffer, size_t(c->offset) * dtype_size(c->dtype()), d.bytes().data(), d.bytes().size());
  return d;
}

PrimitivePtr VulkanBackend::write_bytes(const TensorMeta& meta, std::span<const std::byte> bytes) {
  EMBER_CHECK(bytes.size() == size_t(meta.shape.numel()) * dtype_size(meta.dtype), name(), " write: ", bytes.size(),
              " bytes for a ", meta.dtype, " tensor of shape ", meta.shape);
  std::lock_guard<std::recursive_mutex> lock(mu_);
  current_op_ = "write";
  auto t = alloc(meta);
  upload(t->buffer, bytes.data(), bytes.size());
  return t;
}

PrimitivePtr VulkanBackend::write(const TensorData& data) {
  return write_bytes({data.shape(), data.dtype()},
                     std::span<const std::byte>(data.bytes().data(), data.bytes().size()));
}

// ---------------------------------------------------------------------------- operands

Operand operand_of(const VulkanTensor& t) {
  return Operand{t.buffer, t.dtype(), std::vector<int64_t>(t.strides.begin(), t.strides.end()), t.offset};
}

Operand broadcast_operand(const VulkanTensor& t, const Shape& out_shape) {
  const Shape& s = t.shape();
  const int r = out_shape.rank(), lead = r - s.rank();
  std::vector<int64_t> st(size_t(r), 0);
  for (int d = 0; d < s.rank(); ++d) st[size_t(lead + d)] = s[d] == 1 ? 0 : t.strides[d];
  return Operand{t.buffer, t.dtype(), std::move(st), t.offset};
}

ValueIndexOutputs alloc_value_index_outputs(VulkanBackend& be, const Op& op, const BufferPtr& input) {
  ValueIndexOutputs r;
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    VulkanTensorPtr t = be.alloc(op.outputs[i]);
    r.bind[i == 0 ? 0 : 2] = t->buffer;
    r.outs.push_back(std::move(t));
  }
  r.bind[1] = input;
  return r;
}

MergedDims merge_dims(std::string_view op, const Shape& shape, const std::vector<Operand>& ops) {
  const size_t n_ops = ops.size();
  MergedDims m;
  std::vector<int64_t>& sizes = m.sizes;
  std::vector<std::vector<int64_t>>& st = m.strides;
  st.resize(n_ops);
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !sizes.empty();
    for (size_t o = 0; o < n_ops && merge; ++o) merge = st[o].back() == ops[o].strides[size_t(d)] * shape[d];
    if (merge) {
      sizes.back() *= shape[d];
      for (size_t o = 0; o < n_ops; ++o) st[o].back() = ops[o].strides[size_t(d)];
    } else {
      sizes.push_back(shape[d]);
      for (size_t o = 0; o < n_ops; ++o) st[o].push_back(ops[o].strides[size_t(d)]);
    }
  }
  EMBER_CHECK(sizes.size() <= size_t(kMaxRank), op, ": ", sizes.size(),
              " non-mergeable dims exceed the Vulkan backend's limit of ", kMaxRank);
  constexpr int64_t kMax = INT32_MAX;
  EMBER_CHECK(shape.numel() <= kMax, op, ": ", shape.numel(), " elements exceed the Vulkan backend's 32-bit indexing");
  for (size_t o = 0; o < n_ops; ++o) {
    EMBER_CHECK(ops[o].offset <= kMax, op, ": an offset beyond the Vulkan backend's 32-bit indexing");
    for (int64_t s : st[o])
      EMBER_CHECK(s >= -kMax && s <= kMax, op, ": a stride beyond the Vulkan backend's 32-bit indexing");
  }
  return m;
}

KernelParams make_params(std::string_view op, const Shape& shape, const std::vector<Operand>& ops) {
  const size_t n_ops = ops.size();
  EMBER_CHECK(n_ops <= size_t(kParamOperands), op, ": too many operands for a Vulkan kernel");
  const MergedDims m = merge_dims(op, shape, ops);
  const std::vector<int64_t>& sizes = m.sizes;
  const std::vector<std::vector<int64_t>>& st = m.strides;
  const int64_t n = shape.numel();
  KernelParams p;
  p.n = uint32_t(n);
  p.rank = int32_t(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) p.size[d] = int32_t(sizes[d]);
  for (size_t o = 0; o < n_ops; ++o) {
    p.off[o] = int32_t(ops[o].offset);
    int64_t expect = 1;
    bool contig = true;
    for (int d = int(sizes.size()) - 1; d >= 0; --d) {
      const int64_t s = st[o][size_t(d)];
      p.stride[o][d] = int32_t(s);
      if (s != expect) contig = false;
      expect *= sizes[size_t(d)];
    }
    if (contig) p.contig |= 1u << o;
  }
  return p;
}

}  // namespace ember::vulkan
