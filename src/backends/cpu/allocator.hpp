// The CPU backend's caching allocator: 64-byte aligned blocks in size classes, kept in free
// lists for reuse, with in-use / reserved / peak statistics.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "ember/core/backend.hpp"

namespace ember::cpu {

class Allocator {
 public:
  static Allocator& global();
  void* allocate(size_t bytes);  // returns a block of at least `bytes`; never null
  void deallocate(void* p, size_t bytes);
  MemoryStats stats() const;
  void reset_peak();
  void release_cached();  // returns every cached block to the OS
  static size_t size_class(size_t bytes);

 private:
  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  MemoryStats stats_;
  int64_t cached_ = 0;
};

}  // namespace ember::cpu
