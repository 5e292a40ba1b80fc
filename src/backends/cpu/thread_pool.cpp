#include "thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ember::cpu {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Set for pool workers permanently and for a caller while it runs its share of a job.
thread_local bool t_in_parallel = false;

struct ParallelGuard {
  bool saved;
  ParallelGuard() : saved(t_in_parallel) { t_in_parallel = true; }
  ~ParallelGuard() { t_in_parallel = saved; }
};

int env_int(const char* name, int fallback) {
  if (const char* s = std::getenv(name)) {
    char* end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (end != s && v > 0 && v < (1 << 20)) return static_cast<int>(v);
  }
  return fallback;
}

// The job state word: generation (32 bits) | number of chunks (16 bits) | next chunk (16 bits).
constexpr uint64_t kMaxChunks = 0xFFFF;
inline uint32_t st_gen(uint64_t s) { return static_cast<uint32_t>(s >> 32); }
inline uint32_t st_nchunks(uint64_t s) { return static_cast<uint32_t>((s >> 16) & 0xFFFF); }
inline uint32_t st_next(uint64_t s) { return static_cast<uint32_t>(s & 0xFFFF); }

}  // namespace

struct ThreadPool::Impl {
  // ---- job descriptor: written by the dispatching thread before publishing `state`;
  // read by a worker only after it successfully claimed a chunk of that generation.
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t begin = 0, base = 0, rem = 0;

  alignas(64) std::atomic<uint64_t> state{0};
  alignas(64) std::atomic<uint32_t> done{0};
  alignas(64) std::atomic<int> sleepers{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> has_error{false};

  std::mutex err_mu;
  std::exception_ptr err;

  std::mutex sleep_mu;
  std::condition_variable sleep_cv;

  std::mutex dispatch_mu;  // one dispatcher at a time; also guards resizing
  std::vector<std::thread> workers;
  std::atomic<int> nthreads{1};
  int spin_us = 1000;

  uint32_t gen = 0;  // last published generation (dispatcher only)

  void run_chunk(uint32_t idx) {
    const int64_t b = begin + static_cast<int64_t>(idx) * base + std::min<int64_t>(idx, rem);
    const int64_t e = b + base + (static_cast<int64_t>(idx) < rem ? 1 : 0);
    try {
      (*fn)(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lk(err_mu);
      if (!err) err = std::current_exception();
      has_error.store(true, std::memory_order_relaxed);
    }
    done.fetch_add(1, std::memory_order_acq_rel);
  }

  // Claims and runs chunks of generation g until none is left.
  void work_on(uint32_t g) {
    uint64_t s = state.load(std::memory_order_acquire);
    for (;;) {
      if (st_gen(s) != g || st_next(s) >= st_nchunks(s)) return;
      if (state.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        run_chunk(st_next(s));
        s = state.load(std::memory_order_acquire);
      }
    }
  }

  void worker_main() {
    t_in_parallel = true;
    uint32_t seen = st_gen(state.load(std::memory_order_acquire));
    for (;;) {
      // Spin for a while, then sleep.
      bool got = false;
      auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
      for (uint32_t it = 0;; ++it) {
        if (st_gen(state.load(std::memory_order_acquire)) != seen ||
            stop.load(std::memory_order_relaxed)) {
          got = true;
          break;
        }
        cpu_relax();
        if ((it & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
      }
      if (!got) {
        sleepers.fetch_add(1, std::memory_order_seq_cst);
        {
          std::unique_lock<std::mutex> lk(sleep_mu);
          sleep_cv.wait(lk, [&] {
            return st_gen(state.load(std::memory_order_seq_cst)) != seen ||
                   stop.load(std::memory_order_seq_cst);
          });
        }
        sleepers.fetch_sub(1, std::memory_order_relaxed);
      }
      if (stop.load(std::memory_order_acquire)) return;
      seen = st_gen(state.load(std::memory_order_acquire));
      work_on(seen);
    }
  }

  void start(int n) {
    n = std::max(1, std::min(n, 4096));
    stop.store(false);
    workers.reserve(static_cast<size_t>(n - 1));
    for (int i = 0; i < n - 1; ++i) workers.emplace_back([this] { worker_main(); });
    nthreads.store(n, std::memory_order_release);
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lk(sleep_mu);
      stop.store(true, std::memory_order_seq_cst);
    }
    sleep_cv.notify_all();
    for (auto& t : workers) t.join();
    workers.clear();
    nthreads.store(1, std::memory_order_release);
  }
};

ThreadPool::ThreadPool(int num_threads) : impl_(std::make_unique<Impl>()) {
  impl_->spin_us = env_int("EMBER_POOL_SPIN_US", 1000);
  impl_->start(num_threads);
}

ThreadPool::~ThreadPool() {
  std::lock_guard<std::mutex> lk(impl_->dispatch_mu);
  impl_->shutdown();
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool([] {
    int hw = static_cast<int>(std::thread::hardware_concurrency());
    return env_int("EMBER_NUM_THREADS", hw > 0 ? hw : 1);
  }());
  return pool;
}

int ThreadPool::size() const { return impl_->nthreads.load(std::memory_order_acquire); }

bool ThreadPool::in_parallel_region() { return t_in_parallel; }

void ThreadPool::set_num_threads(int n) {
  if (t_in_parallel)
    throw std::logic_error("ThreadPool::set_num_threads called from inside a parallel region");
  n = std::max(1, n);
  std::lock_guard<std::mutex> lk(impl_->dispatch_mu);
  if (n == size()) return;
  impl_->shutdown();
  impl_->start(n);
}

void ThreadPool::parallel_for(int64_t begin, int64_t end, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (end <= begin) return;
  const int64_t range = end - begin;
  grain = std::max<int64_t>(grain, 1);
  const int nth = size();
  int64_t nchunks = std::min<int64_t>({static_cast<int64_t>(nth), range / grain,
                                       static_cast<int64_t>(kMaxChunks)});
  if (nchunks <= 1 || t_in_parallel) {
    ParallelGuard g;
    fn(begin, end);
    return;
  }
  Impl& d = *impl_;
  std::unique_lock<std::mutex> lk(d.dispatch_mu, std::try_to_lock);
  if (!lk.owns_lock() || d.workers.empty()) {
    // Another thread is dispatching on this pool: do the work ourselves.
    ParallelGuard g;
    fn(begin, end);
    return;
  }
  nchunks = std::min<int64_t>(nchunks, static_cast<int64_t>(d.workers.size()) + 1);

  d.fn = &fn;
  d.begin = begin;
  d.base = range / nchunks;
  d.rem = range % nchunks;
  d.err = nullptr;
  d.has_error.store(false, std::memory_order_relaxed);
  d.done.store(0, std::memory_order_relaxed);
  const uint32_t g = ++d.gen;
  d.state.store((static_cast<uint64_t>(g) << 32) | (static_cast<uint64_t>(nchunks) << 16),
                std::memory_order_seq_cst);
  if (d.sleepers.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> sl(d.sleep_mu); }
    d.sleep_cv.notify_all();
  }
  {
    ParallelGuard pg;
    d.work_on(g);
  }
  const uint32_t target = static_cast<uint32_t>(nchunks);
  for (uint32_t it = 0; d.done.load(std::memory_order_acquire) < target; ++it) {
    if (it < 20000)
      cpu_relax();
    else
      std::this_thread::yield();
  }
  if (d.has_error.load(std::memory_order_relaxed)) {
    std::exception_ptr e;
    {
      std::lock_guard<std::mutex> el(d.err_mu);
      e = d.err;
      d.err = nullptr;
    }
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace ember::cpu
