#include "allocator.hpp"

#include <bit>
#include <cstdlib>
#include <new>

#include "ember/core/error.hpp"

namespace ember::cpu {

namespace {
constexpr size_t kAlign = 64;
constexpr int64_t kMaxCached = int64_t(2) << 30;  // never cache more than 2 GiB of free blocks
}  // namespace

Allocator& Allocator::global() {
  static Allocator* a = new Allocator();  // leaked on purpose: tensors may outlive static destruction
  return *a;
}

size_t Allocator::size_class(size_t bytes) {
  if (bytes <= 256) return 256;
  // four classes per power of two: at most 25% waste
  size_t p = std::bit_floor(bytes);
  size_t quarter = std::max<size_t>(p / 4, kAlign);
  return (bytes + quarter - 1) / quarter * quarter;
}

void* Allocator::allocate(size_t bytes) {
  size_t sz = size_class(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(sz);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_ -= int64_t(sz);
      stats_.in_use += int64_t(sz);
      stats_.peak = std::max(stats_.peak, stats_.in_use);
      return p;
    }
  }
  void* p = std::aligned_alloc(kAlign, sz);
  if (!p) {
    release_cached();
    p = std::aligned_alloc(kAlign, sz);
  }
  EMBER_CHECK(p != nullptr, "cpu: out of memory allocating ", bytes, " bytes");
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_use += int64_t(sz);
  stats_.reserved += int64_t(sz);
  stats_.peak = std::max(stats_.peak, stats_.in_use);
  return p;
}

void Allocator::deallocate(void* p, size_t bytes) {
  if (!p) return;
  size_t sz = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_use -= int64_t(sz);
  if (cached_ + int64_t(sz) > kMaxCached) {
    stats_.reserved -= int64_t(sz);
    std::free(p);
    return;
  }
  free_[sz].push_back(p);
  cached_ += int64_t(sz);
}

MemoryStats Allocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Allocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak = stats_.in_use;
}

void Allocator::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [sz, blocks] : free_) {
    for (void* p : blocks) std::free(p);
    stats_.reserved -= int64_t(sz) * int64_t(blocks.size());
    blocks.clear();
  }
  free_.clear();
  cached_ = 0;
}

}  // namespace ember::cpu
