// The stream-ordered caching allocator of one GPU. Blocks are rounded to size classes (512-byte
// steps up to 1 MiB, then four classes per power of two) and kept in per-class free lists when
// released. Every kernel of a backend runs on its one stream, so a released block can serve the
// next allocation at once: stream order guarantees that the old work on it finishes first.
// A failed cudaMalloc releases the cache and tries again; then it throws an Error with the
// requested and free bytes, and the device stays usable.
// A CUDA graph (graph.cpp) gets a private pool: while it is captured, allocations come from the
// pool and blocks the captured work used that are freed meanwhile stay out of the shared cache;
// until the graph is gone, the pool's blocks serve only it (a replay writes them again).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ember/core/backend.hpp"

namespace ember::cuda {

class CachingAllocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // `bytes` rounded up to its size class (what allocate() takes from the device or the cache).
  static size_t size_class(size_t bytes);
  void* allocate(size_t bytes);                 // never null for bytes > 0
  void deallocate(void* p, size_t bytes);       // bytes as passed to allocate
  MemoryStats stats() const;
  void reset_peak();
  void release_cached();                        // synchronises the device, frees the cache
  void abandon_cached();                        // forgets the cache unfreed (process exit)

  // Graph pools: begin_pool() routes this allocator's allocations to a new pool (until
  // end_pool()); release_pool() gives its blocks to the shared cache once the graph is gone
  // (the stream synchronised), and its blocks still in tensors go there when they are freed.
  int begin_pool();
  void end_pool();
  void release_pool(int pool);
  bool in_pool(void* p, int pool) const;  // p was allocated from `pool`

 private:
  struct Pool {
    std::map<size_t, std::vector<void*>> free;
    std::vector<std::pair<void*, size_t>> retained;  // blocks from outside freed during capture
  };
  void release_cached_locked();
  std::map<int, Pool> pools_;
  std::unordered_map<void*, int> owner_;  // block -> its pool (pool blocks only)
  int active_ = -1, next_pool_ = 0;
  int device_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;   // size class -> cached blocks
  MemoryStats stats_;
};

}  // namespace ember::cuda
