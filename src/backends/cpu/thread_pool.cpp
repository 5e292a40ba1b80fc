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

#if defined(__linux__)
#include <sched.h>
#endif

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

int env_int(const char* name, int fallback, int min_value) {
  if (const char* s = std::getenv(name)) {
    char* end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (end != s && v >= min_value && v < (1 << 24)) return static_cast<int>(v);
  }
  return fallback;
}

// The job state word: generation (48 bits, never wraps in practice) | number of chunks (16 bits).
constexpr uint64_t kMaxChunks = 0xFFFF;
inline uint64_t st_gen(uint64_t s) { return s >> 16; }
inline uint32_t st_nchunks(uint64_t s) { return static_cast<uint32_t>(s & 0xFFFF); }

int default_threads() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
#endif
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  return hw > 0 ? hw : 1;
}

}  // namespace

struct ThreadPool::Impl {
  // ---- The job: `state` and the descriptor share one cache line, so a worker picks up a
  // new job with a single line transfer. The descriptor is written by the dispatching thread
  // before publishing `state` and read by a thread only after it claimed a chunk of that
  // generation (the job cannot finish, and the descriptor cannot change, before that chunk).
  alignas(64) std::atomic<uint64_t> state{0};
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t begin = 0, base = 0, rem = 0;

  alignas(64) std::atomic<int> sleepers{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> has_error{false};

  // claimed[i].gen: the generation chunk i was last claimed for; .finished: the generation
  // it was last completed for. Thread i (the caller is 0) first claims chunk i, so repeated
  // jobs over the same data keep their cache affinity; then it steals any chunk still
  // unclaimed (e.g. whose owner is asleep). One line per chunk, written by its runner only.
  struct alignas(64) Claim {
    std::atomic<uint64_t> gen{0};
    std::atomic<uint64_t> finished{0};
  };
  std::unique_ptr<Claim[]> claimed;

  std::mutex err_mu;
  std::exception_ptr err;

  std::mutex sleep_mu;
  std::condition_variable sleep_cv;

  std::mutex dispatch_mu;  // one dispatcher at a time; also guards resizing
  std::vector<std::thread> workers;
  std::atomic<int> nthreads{1};
  int spin_us = 1000;

  uint64_t gen = 0;  // last published generation (dispatcher only)

  bool claim(uint32_t i, uint64_t g) {
    std::atomic<uint64_t>& c = claimed[i].gen;
    uint64_t v = c.load(std::memory_order_relaxed);
    while (v < g)
      if (c.compare_exchange_weak(v, g, std::memory_order_acq_rel, std::memory_order_relaxed))
        return true;
    return false;
  }

  void run_chunk(uint32_t idx, uint64_t g) {
    const int64_t b = begin + static_cast<int64_t>(idx) * base + std::min<int64_t>(idx, rem);
    const int64_t e = b + base + (static_cast<int64_t>(idx) < rem ? 1 : 0);
    try {
      (*fn)(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lk(err_mu);
      if (!err) err = std::current_exception();
      has_error.store(true, std::memory_order_relaxed);
    }
    claimed[idx].finished.store(g, std::memory_order_release);
  }

  // Runs chunk `self` (if it exists and is unclaimed) and then any unclaimed chunk of the
  // job with state word s.
  void work_on(uint64_t s, uint32_t self) {
    const uint64_t g = st_gen(s);
    const uint32_t n = st_nchunks(s);
    if (self < n && claim(self, g)) run_chunk(self, g);
    for (uint32_t i = 0; i < n; ++i) {
      if (i == self) continue;
      if (st_gen(state.load(std::memory_order_acquire)) != g) return;
      if (claim(i, g)) run_chunk(i, g);
    }
  }

  void worker_main(uint32_t self) {
    t_in_parallel = true;
    uint64_t seen = st_gen(state.load(std::memory_order_acquire));
    for (;;) {
      // Spin for a while, then sleep.
      uint64_t s = 0;
      bool got = false;
      auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
      for (uint32_t it = 0;; ++it) {
        s = state.load(std::memory_order_acquire);
        if (st_gen(s) != seen || stop.load(std::memory_order_relaxed)) {
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
        s = state.load(std::memory_order_acquire);
      }
      if (stop.load(std::memory_order_acquire)) return;
      seen = st_gen(s);
      work_on(s, self);
    }
  }

  void start(int n) {
    n = std::max(1, std::min(n, 4096));
    stop.store(false);
    workers.reserve(static_cast<size_t>(n - 1));
    claimed.reset(new Claim[static_cast<size_t>(n)]);
    for (int i = 0; i < n; ++i) {
      claimed[i].gen.store(gen, std::memory_order_relaxed);
      claimed[i].finished.store(gen, std::memory_order_relaxed);
    }
    for (int i = 0; i < n - 1; ++i)
      workers.emplace_back([this, i] { worker_main(static_cast<uint32_t>(i + 1)); });
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
  impl_->spin_us = env_int("EMBER_POOL_SPIN_US", 1000, 0);
  impl_->start(num_threads);
}

ThreadPool::~ThreadPool() {
  std::lock_guard<std::mutex> lk(impl_->dispatch_mu);
  impl_->shutdown();
}

ThreadPool& ThreadPool::global() {
  // Intentionally leaked: stays usable from other static destructors during exit.
  static ThreadPool* pool = new ThreadPool([] {
    return env_int("EMBER_NUM_THREADS", default_threads(), 1);
  }());
  return *pool;
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
  const uint64_t s = (++d.gen << 16) | static_cast<uint64_t>(nchunks);
  d.state.store(s, std::memory_order_seq_cst);
  if (d.sleepers.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> sl(d.sleep_mu); }
    d.sleep_cv.notify_all();
  }
  {
    ParallelGuard pg;
    d.work_on(s, 0);
  }
  const uint64_t g = st_gen(s);
  uint32_t it = 0;
  for (int64_t i = 0; i < nchunks; ++i) {  // chunk 0 too: a worker may have taken it
    while (d.claimed[i].finished.load(std::memory_order_acquire) < g) {
      if (++it < 20000)
        cpu_relax();
      else
        std::this_thread::yield();
    }
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
