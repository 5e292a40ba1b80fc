#include "allocator.hpp"

#include <algorithm>
#include <bit>

#include "ember/core/error.hpp"
#include "runtime.hpp"

namespace ember::vulkan {

Pool::Pool(VkDevice device, uint32_t type, bool host_visible, VkBufferUsageFlags usage, std::string name)
    : device_(device), type_(type), host_visible_(host_visible), usage_(usage), name_(std::move(name)) {}

Pool::~Pool() { release_cached(); }

size_t Pool::size_class(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  if (bytes <= (size_t(64) << 10)) return (bytes + 255) / 256 * 256;
  // four classes per power of two: at most 25% rounding
  const size_t step = std::bit_floor(bytes) / 4;
  return (bytes + step - 1) / step * step;
}

Block* Pool::create(size_t size) {
  auto* b = new Block;
  b->size = size;
  VkBufferCreateInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = size;
  bi.usage = usage_;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = vkCreateBuffer(device_, &bi, nullptr, &b->buffer);
  if (r != VK_SUCCESS) {
    delete b;
    check(r, "allocate", "vkCreateBuffer", name_);
  }
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, b->buffer, &req);
  VkMemoryAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type_;
  r = vkAllocateMemory(device_, &ai, nullptr, &b->memory);
  if (r == VK_SUCCESS) r = vkBindBufferMemory(device_, b->buffer, b->memory, 0);
  if (r == VK_SUCCESS && host_visible_) r = vkMapMemory(device_, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
  if (r != VK_SUCCESS) {
    destroy(b);
    return nullptr;
  }
  return b;
}

void Pool::destroy(Block* b) {
  if (b->mapped) vkUnmapMemory(device_, b->memory);
  if (b->buffer) vkDestroyBuffer(device_, b->buffer, nullptr);
  if (b->memory) vkFreeMemory(device_, b->memory, nullptr);
  delete b;
}

Block* Pool::allocate(size_t bytes) {
  const size_t size = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  Block* b = nullptr;
  auto it = free_.find(size);
  if (it != free_.end() && !it->second.empty()) {
    b = it->second.back();
    it->second.pop_back();
  } else {
    b = create(size);
    if (!b) {  // out of memory: give the cache back to the driver and try once more
      for (auto& [s, list] : free_)
        for (Block* c : list) stats_.reserved -= int64_t(c->size), destroy(c);
      free_.clear();
      b = create(size);
      EMBER_CHECK(b != nullptr, name_, ": out of device memory allocating ", bytes, " bytes (", stats_.in_use,
                  " bytes in use)");
    }
    stats_.reserved += int64_t(size);
  }
  stats_.in_use += int64_t(size);
  stats_.peak = std::max(stats_.peak, stats_.in_use);
  return b;
}

void Pool::release(Block* b) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_use -= int64_t(b->size);
  free_[b->size].push_back(b);
}

void Pool::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [s, list] : free_)
    for (Block* b : list) {
      stats_.reserved -= int64_t(b->size);
      destroy(b);
    }
  free_.clear();
}

MemoryStats Pool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Pool::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak = stats_.in_use;
}

}  // namespace ember::vulkan
