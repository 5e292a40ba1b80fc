// The pooled memory of one Vulkan device. Every block is a VkBuffer with its own memory,
// rounded up to a size class (256-byte steps up to 64 KiB, then four classes per power of two),
// and kept in a per-class free list when released. A block is released only after the last
// submission that uses it has completed (the backend keeps it alive until then), so a cached
// block is idle and may serve the next allocation at once. A failed allocation frees the cache
// and tries again, then throws an Error with the requested size.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ember/core/backend.hpp"

namespace ember::vulkan {

// One VkBuffer over its own VkDeviceMemory (mapped when the memory is host-visible).
struct Block {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  size_t size = 0;         // the size class
  void* mapped = nullptr;  // host address of byte 0, or null
};

class Pool {
 public:
  // Blocks of memory type `type` (host_visible: mapped persistently) with buffer `usage`;
  // `name` ("vulkan:0") goes into error messages.
  Pool(VkDevice device, uint32_t type, bool host_visible, VkBufferUsageFlags usage, std::string name);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  static size_t size_class(size_t bytes);
  Block* allocate(size_t bytes);  // never null; throws an Error when the device is out of memory
  void release(Block* b);         // back to the cache (the caller guarantees the device is done with it)
  void release_cached();          // destroys the cached blocks
  MemoryStats stats() const;
  void reset_peak();
  bool host_visible() const { return host_visible_; }

 private:
  Block* create(size_t size);
  void destroy(Block* b);
  VkDevice device_;
  uint32_t type_;
  bool host_visible_;
  VkBufferUsageFlags usage_;
  std::string name_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<Block*>> free_;
  MemoryStats stats_;
};

}  // namespace ember::vulkan
