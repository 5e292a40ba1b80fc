// Thread pool for the cpu backend.
//
//   ember::cpu::parallel_for(0, n, /*grain=*/4096, [&](int64_t b, int64_t e) { ... });
//
// The calling thread always takes part in the work. Workers spin briefly after each job
// (so back-to-back small ops do not pay a futex wake-up) and then block on a condition
// variable. Nested parallel_for calls (from inside a chunk) run inline on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace ember::cpu {

class ThreadPool {
 public:
  // num_threads counts the caller: num_threads - 1 worker threads are started.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Process-wide pool, sized to the CPUs this process may run on (sched_getaffinity, else
  // std::thread::hardware_concurrency()) or env EMBER_NUM_THREADS. Workers spin for
  // EMBER_POOL_SPIN_US microseconds (default 1000) after a job before they block.
  static ThreadPool& global();

  // Number of threads including the caller (>= 1).
  int size() const;

  // Resize (joins / starts workers). Must not be called from inside a parallel_for chunk
  // (throws std::logic_error); waits for a running parallel_for to finish.
  void set_num_threads(int n);

  // Calls fn(b, e) over disjoint chunks covering [begin, end). Every chunk has >= grain
  // elements unless the whole range is smaller. At most size() chunks are made. Runs inline
  // when the range is <= grain, size() == 1, when called from inside a chunk (no nested
  // parallelism), or when another thread is currently dispatching on this pool.
  // An exception thrown by fn is rethrown on the caller after all chunks have finished
  // (the first one wins if several chunks throw).
  void parallel_for(int64_t begin, int64_t end, int64_t grain,
                    const std::function<void(int64_t, int64_t)>& fn);

  // True while the current thread is executing a parallel_for chunk (or is a pool worker).
  static bool in_parallel_region();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

inline void parallel_for(int64_t begin, int64_t end, int64_t grain,
                         const std::function<void(int64_t, int64_t)>& fn) {
  ThreadPool::global().parallel_for(begin, end, grain, fn);
}

}  // namespace ember::cpu
