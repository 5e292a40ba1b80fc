#include "allocator.hpp"

#include <bit>

#include "runtime.hpp"

namespace ember::cuda {

CachingAllocator::~CachingAllocator() {
  // At process exit the driver may already be shutting down: ignore errors here.
  for (auto& [size, blocks] : free_)
    for (void* p : blocks) (void)cudaFree(p);
  for (auto& [id, pool] : pools_) {
    for (auto& [size, blocks] : pool.free)
      for (void* p : blocks) (void)cudaFree(p);
    for (auto [p, size] : pool.retained) (void)cudaFree(p);
  }
}

void CachingAllocator::abandon_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  free_.clear();
  pools_.clear();
}

size_t CachingAllocator::size_class(size_t bytes) {
  if (bytes == 0) return 0;
  constexpr size_t kSmall = 1 << 20;
  if (bytes <= kSmall) return (bytes + 511) & ~size_t(511);
  // four classes per power of two: at most 25% rounding
  size_t p = std::bit_floor(bytes);
  size_t step = p / 4;
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  size_t sz = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  void* p = nullptr;
  // a graph's pool takes its own free blocks first, then the shared cache's (work queued before
  // the capture is ahead of every replay on the stream), and keeps what it takes
  auto take = [&](std::map<size_t, std::vector<void*>>& cache) {
    auto it = cache.find(sz);
    if (it == cache.end() || it->second.empty()) return false;
    p = it->second.back();
    it->second.pop_back();
    return true;
  };
  if (active_ >= 0 && (take(pools_[active_].free) || take(free_))) {
    owner_[p] = active_;
  } else if (active_ < 0 && take(free_)) {
  } else {
    set_device(device_);
    cudaError_t e = cudaMalloc(&p, sz);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      release_cached_locked();
      e = cudaMalloc(&p, sz);
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // the device stays usable
      size_t free_b = 0, total_b = 0;
      (void)cudaMemGetInfo(&free_b, &total_b);
      throw Error("cuda:" + std::to_string(device_) + ": out of device memory: requested " + std::to_string(bytes) +
                  " bytes, " + std::to_string(free_b) + " of " + std::to_string(total_b) +
                  " bytes free (ember holds " + std::to_string(stats_.in_use) + " bytes in tensors)");
    }
    stats_.reserved += int64_t(sz);
    if (active_ >= 0) owner_[p] = active_;
  }
  stats_.in_use += int64_t(sz);
  if (stats_.in_use > stats_.peak) stats_.peak = stats_.in_use;
  return p;
}

void CachingAllocator::deallocate(void* p, size_t bytes) {
  if (!p) return;
  size_t sz = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_use -= int64_t(sz);
  if (auto o = owner_.empty() ? owner_.end() : owner_.find(p); o != owner_.end()) {  // (no graph: no lookup)
    auto pool = pools_.find(o->second);
    if (pool != pools_.end()) {
      pool->second.free[sz].push_back(p);
      return;
    }
    owner_.erase(o);  // its graph is gone
  } else if (active_ >= 0) {
    pools_[active_].retained.emplace_back(p, sz);  // captured work may use it: not reused until the graph is gone
    return;
  }
  free_[sz].push_back(p);
}

int CachingAllocator::begin_pool() {
  std::lock_guard<std::mutex> lock(mu_);
  active_ = next_pool_++;
  pools_[active_];
  return active_;
}

bool CachingAllocator::in_pool(void* p, int pool) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto o = owner_.find(p);
  return o != owner_.end() && o->second == pool;
}

void CachingAllocator::end_pool() {
  std::lock_guard<std::mutex> lock(mu_);
  active_ = -1;
}

void CachingAllocator::release_pool(int pool) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pools_.find(pool);
  if (it == pools_.end()) return;
  for (auto& [size, blocks] : it->second.free)
    for (void* p : blocks) {
      owner_.erase(p);
      free_[size].push_back(p);
    }
  for (auto [p, size] : it->second.retained) free_[size].push_back(p);
  if (active_ == pool) active_ = -1;
  pools_.erase(it);
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak = stats_.in_use;
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  set_device_nothrow(device_);
  (void)cudaDeviceSynchronize();  // cached blocks may still be read by queued work
  for (auto& [size, blocks] : free_) {
    for (void* p : blocks) {
      (void)cudaFree(p);
      stats_.reserved -= int64_t(size);
    }
  }
  free_.clear();
}

}  // namespace ember::cuda
