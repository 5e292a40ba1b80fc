// The type-erased machinery of DataLoader: batch plans, splits and the worker pipeline.
#include "ember/data/dataloader.hpp"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

namespace ember::data::detail {

void check_loader(size_t dataset_size, const LoaderOptions& o) {
  EMBER_CHECK(dataset_size > 0, "DataLoader: the dataset is empty (it needs at least one item)");
  EMBER_CHECK(o.batch_size > 0, "DataLoader: the batch size must be positive");
  EMBER_CHECK(!o.drop_last || dataset_size >= o.batch_size, "DataLoader: drop_last with batch size ", o.batch_size,
              " leaves no batch from a dataset of ", dataset_size, " items");
}

size_t count_batches(size_t n, const LoaderOptions& o) {
  return o.drop_last ? n / o.batch_size : (n + o.batch_size - 1) / o.batch_size;
}

std::vector<std::vector<size_t>> plan_batches(size_t n, const LoaderOptions& o, uint64_t epoch) {
  std::vector<size_t> order;
  if (o.shuffle_seed) {
    order = permutation(n, *o.shuffle_seed + epoch);
  } else {
    order.resize(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
  }
  const size_t batches = count_batches(n, o);
  std::vector<std::vector<size_t>> plan(batches);
  for (size_t k = 0; k < batches; ++k) {
    const size_t begin = k * o.batch_size, end = std::min(n, begin + o.batch_size);
    plan[k].assign(order.begin() + static_cast<std::ptrdiff_t>(begin),
                   order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return plan;
}

std::vector<size_t> part_batches(size_t num_batches, size_t part, size_t parts, SplitMode mode) {
  std::vector<size_t> out;
  if (mode == SplitMode::strided) {
    for (size_t k = part; k < num_batches; k += parts) out.push_back(k);
  } else {
    // Consecutive runs whose lengths differ by at most one (the first ones longer).
    const size_t base = num_batches / parts, extra = num_batches % parts;
    const size_t begin = part * base + std::min(part, extra);
    const size_t len = base + (part < extra ? 1 : 0);
    for (size_t k = begin; k < begin + len; ++k) out.push_back(k);
  }
  return out;
}

struct EpochRun::State {
  size_t num_batches, prefetch;
  Produce produce;
  std::shared_ptr<EpochStats> stats;

  std::mutex mu;
  std::condition_variable work_cv;   // workers wait for room to build
  std::condition_variable ready_cv;  // the consumer waits for its next batch
  struct Slot {
    std::shared_ptr<const void> value;
    std::exception_ptr error;
  };
  std::map<size_t, Slot> ready;
  size_t next_build = 0;    // the next batch a worker takes
  size_t next_consume = 0;  // the next batch the consumer takes
  bool stopped = false;
  std::vector<std::thread> workers;

  void work() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      work_cv.wait(lock, [&] { return stopped || next_build >= num_batches || next_build < next_consume + prefetch; });
      if (stopped || next_build >= num_batches) return;
      const size_t k = next_build++;
      lock.unlock();
      Slot slot;
      try {
        slot.value = produce(k);
      } catch (...) {
        slot.error = std::current_exception();
      }
      lock.lock();
      ready.emplace(k, std::move(slot));
      ready_cv.notify_all();
    }
  }
};

EpochRun::EpochRun(size_t num_batches, size_t num_workers, size_t prefetch, Produce produce,
                   std::shared_ptr<EpochStats> stats)
    : s_(std::make_unique<State>()) {
  s_->num_batches = num_batches;
  s_->prefetch = std::max<size_t>(prefetch, 1);
  s_->produce = std::move(produce);
  s_->stats = std::move(stats);
  const size_t n = std::min(num_workers, num_batches);
  try {
    for (size_t i = 0; i < n; ++i) s_->workers.emplace_back([state = s_.get()] { state->work(); });
  } catch (...) {
    stop();
    throw;
  }
}

EpochRun::~EpochRun() { stop(); }

void EpochRun::stop() {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->stopped = true;
  }
  s_->work_cv.notify_all();
  s_->ready_cv.notify_all();
  for (std::thread& t : s_->workers)
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
  s_->workers.clear();
}

std::shared_ptr<const void> EpochRun::next() {
  using Clock = std::chrono::steady_clock;
  State& s = *s_;
  if (s.workers.empty()) {
    // No workers (or already stopped): build the batch on this thread.
    size_t k;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (s.stopped || s.next_consume >= s.num_batches) return nullptr;
      k = s.next_consume++;
    }
    const auto t0 = Clock::now();
    try {
      auto value = s.produce(k);
      s.stats->wait_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
      return value;
    } catch (...) {
      s.stats->wait_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(s.mu);
      s.stopped = true;
      throw;
    }
  }
  State::Slot slot;
  {
    std::unique_lock<std::mutex> lock(s.mu);
    if (s.stopped || s.next_consume >= s.num_batches) return nullptr;
    const auto t0 = Clock::now();
    s.ready_cv.wait(lock, [&] { return s.stopped || s.ready.count(s.next_consume) > 0; });
    s.stats->wait_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    if (s.stopped) return nullptr;
    auto it = s.ready.find(s.next_consume);
    slot = std::move(it->second);
    s.ready.erase(it);
    ++s.next_consume;
  }
  s.work_cv.notify_all();
  if (slot.error) {
    stop();  // the epoch ends at the failing batch
    std::rethrow_exception(slot.error);
  }
  return slot.value;
}

}  // namespace ember::data::detail
