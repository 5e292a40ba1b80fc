#include "allocator.hpp"

#include <bit>

#include "runtime.hpp"

namespace ember::cuda {

CachingAllocator::~CachingAllocator() {
  // At process exit the driver may already be shutting down: ignore errors here.
  for (auto& [size, blocks] : free_)
    for (void* p : blocks) (void)cudaFree(p);
}

void CachingAllocator::abandon_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  free_.clear();
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
  auto it = free_.find(sz);
  if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
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
  }
  stats_.in_use += int64_t(sz);
  if (stats_.in_use > stats_.peak) stats_.peak = stats_.in_use;
  return p;
}

void CachingAllocator::deallocate(void* p, size_t bytes) {
  if (!p) return;
  size_t sz = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  free_[sz].push_back(p);
  stats_.in_use -= int64_t(sz);
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
