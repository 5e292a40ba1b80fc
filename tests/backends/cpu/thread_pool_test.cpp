#include "backends/cpu/thread_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace ember::cpu {
namespace {

using Chunks = std::vector<std::pair<int64_t, int64_t>>;

Chunks collect(ThreadPool& pool, int64_t b, int64_t e, int64_t grain) {
  Chunks chunks;
  std::mutex mu;
  pool.parallel_for(b, e, grain, [&](int64_t cb, int64_t ce) {
    std::lock_guard<std::mutex> lk(mu);
    chunks.emplace_back(cb, ce);
  });
  std::sort(chunks.begin(), chunks.end());
  return chunks;
}

void expect_cover(const Chunks& c, int64_t b, int64_t e) {
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front().first, b);
  EXPECT_EQ(c.back().second, e);
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_LT(c[i].first, c[i].second);
    if (i) {
      EXPECT_EQ(c[i - 1].second, c[i].first);
    }
  }
}

TEST(ThreadPool, SizeAndResize) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  pool.set_num_threads(1);
  EXPECT_EQ(pool.size(), 1);
  pool.set_num_threads(4);
  EXPECT_EQ(pool.size(), 4);
  pool.set_num_threads(0);  // clamped
  EXPECT_EQ(pool.size(), 1);
  EXPECT_GE(ThreadPool::global().size(), 1);
}

TEST(ThreadPool, ChunksCoverRangeAndRespectGrain) {
  for (int nt : {1, 2, 3, 8}) {
    ThreadPool pool(nt);
    for (int64_t n : {1, 2, 7, 100, 1001, 100000}) {
      for (int64_t grain : {1, 3, 64, 1000, 200000}) {
        for (int64_t b : {0, -5, 17}) {
          Chunks c = collect(pool, b, b + n, grain);
          expect_cover(c, b, b + n);
          EXPECT_LE(c.size(), static_cast<size_t>(nt));
          if (n > grain) {
            for (auto& ch : c) EXPECT_GE(ch.second - ch.first, grain) << n << " " << grain;
          } else {
            EXPECT_EQ(c.size(), 1u);  // range <= grain runs as one chunk
          }
        }
      }
    }
  }
}

TEST(ThreadPool, EmptyRangeDoesNothing) {
  ThreadPool pool(2);
  int calls = 0;
  pool.parallel_for(5, 5, 1, [&](int64_t, int64_t) { ++calls; });
  pool.parallel_for(5, 3, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ThreadPool, UsesSeveralThreads) {
  ThreadPool pool(2);
  std::set<std::thread::id> ids;
  std::mutex mu;
  // Chunks that take a while so the worker certainly joins in.
  for (int rep = 0; rep < 20 && ids.size() < 2; ++rep) {
    pool.parallel_for(0, 2, 1, [&](int64_t, int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::lock_guard<std::mutex> lk(mu);
      ids.insert(std::this_thread::get_id());
    });
  }
  EXPECT_EQ(ids.size(), 2u);
}

TEST(ThreadPool, SumIsCorrectManyTimes) {
  ThreadPool pool(3);
  std::vector<int64_t> v(10007);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
  for (int rep = 0; rep < 2000; ++rep) {
    std::atomic<int64_t> sum{0};
    pool.parallel_for(0, static_cast<int64_t>(v.size()), 16, [&](int64_t b, int64_t e) {
      int64_t s = 0;
      for (int64_t i = b; i < e; ++i) s += v[static_cast<size_t>(i)];
      sum += s;
    });
    ASSERT_EQ(sum.load(), int64_t(10006) * 10007 / 2);
  }
}

TEST(ThreadPool, ExceptionIsRethrownAfterAllChunks) {
  ThreadPool pool(4);
  std::atomic<int> finished{0};
  EXPECT_THROW(pool.parallel_for(0, 4, 1,
                                 [&](int64_t b, int64_t) {
                                   if (b == 1) throw std::runtime_error("boom");
                                   std::this_thread::sleep_for(std::chrono::milliseconds(2));
                                   ++finished;
                                 }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 3);
  // The pool still works afterwards.
  Chunks c = collect(pool, 0, 100, 1);
  expect_cover(c, 0, 100);
  // Exception from an inline (single chunk) run.
  EXPECT_THROW(pool.parallel_for(0, 1, 1, [](int64_t, int64_t) { throw std::logic_error("x"); }),
               std::logic_error);
  // Every chunk throws: one exception comes out.
  EXPECT_THROW(pool.parallel_for(0, 100, 1, [](int64_t, int64_t) { throw 42; }), int);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  std::atomic<bool> nested_was_inline{true};
  pool.parallel_for(0, 4, 1, [&](int64_t b, int64_t e) {
    EXPECT_TRUE(ThreadPool::in_parallel_region());
    for (int64_t i = b; i < e; ++i) {
      const auto self = std::this_thread::get_id();
      pool.parallel_for(0, 1000, 1, [&](int64_t ib, int64_t ie) {
        if (std::this_thread::get_id() != self) nested_was_inline = false;
        total += ie - ib;
      });
    }
  });
  EXPECT_EQ(total.load(), 4000);
  EXPECT_TRUE(nested_was_inline.load());
  EXPECT_FALSE(ThreadPool::in_parallel_region());
}

TEST(ThreadPool, NestedAcrossPoolsAndGlobal) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.parallel_for(0, 2, 1, [&](int64_t, int64_t) {
    parallel_for(0, 100, 1, [&](int64_t b, int64_t e) { total += e - b; });
  });
  EXPECT_EQ(total.load(), 200);
}

TEST(ThreadPool, SetNumThreadsInsideRegionThrows) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(0, 2, 1, [&](int64_t, int64_t) { pool.set_num_threads(1); }),
               std::logic_error);
  EXPECT_EQ(pool.size(), 2);
}

TEST(ThreadPool, ConcurrentCallersFromSeveralThreads) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 300; ++rep)
        pool.parallel_for(0, 1000, 10, [&](int64_t b, int64_t e) { total += e - b; });
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), int64_t(4) * 300 * 1000);
}

TEST(ThreadPool, WorkersWakeAfterSleeping) {
  ThreadPool pool(2);
  for (int rep = 0; rep < 3; ++rep) {
    // Longer than the spin window: workers go to sleep and must be woken.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    Chunks c = collect(pool, 0, 10, 1);
    expect_cover(c, 0, 10);
    EXPECT_EQ(c.size(), 2u);
  }
}

TEST(ThreadPool, ManyTinyJobsAreFast) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  const auto t0 = std::chrono::steady_clock::now();
  constexpr int kJobs = 20000;
  for (int i = 0; i < kJobs; ++i)
    pool.parallel_for(0, 2, 1, [&](int64_t b, int64_t e) { total += e - b; });
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(total.load(), 2 * kJobs);
  // Generous bound (shared CI machines); typically ~1 us per dispatch.
  EXPECT_LT(us / kJobs, 200.0);
  RecordProperty("us_per_dispatch", std::to_string(us / kJobs));
}

}  // namespace
}  // namespace ember::cpu
