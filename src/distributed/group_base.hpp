// What the engines' process groups share: the description of a collective for its errors, the
// checks of the arguments every engine makes the same way, the Work states, the broken-group
// rule and the communication time. gloo_group.cpp and nccl_group.cpp derive from it.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "ember/distributed/init.hpp"
#include "work_state.hpp"

namespace ember::distributed::detail {

class GroupBase : public ProcessGroup {
 public:
  std::chrono::nanoseconds communication_time() const override { return std::chrono::nanoseconds(comm_ns_.load()); }

 protected:
  using Clock = std::chrono::steady_clock;
  using Ms = std::chrono::milliseconds;

  explicit GroupBase(const ProcessGroupConfig& c) : ProcessGroup(c.rank, c.world_size), config_(c) {}

  // "all_reduce (rank 0 of 2, f32 [10])"; without the tensor part when `t` is null.
  std::string describe(const char* op, const DynTensor* t) const;
  // The collective's timeout: its own, else the group's.
  Ms timeout_of(const CollectiveOptions& o) const { return o.timeout.value_or(config_.timeout); }
  // The description of collective `name` on `t`, after checking `t` is defined.
  std::string checked(const char* name, const DynTensor& t) const;
  // The same for a reduction (all_reduce, reduce_scatter): avg needs a floating dtype; for
  // reduce_scatter the first dim must be a multiple of the world size.
  std::string checked_reduction(const char* name, const DynTensor& t, ReduceOp op) const;
  // The same for broadcast: root in range.
  std::string checked_broadcast(const DynTensor& t, int root) const;
  // The shape all_gather gives: [world, ...t's shape].
  Shape gathered_shape(const DynTensor& t) const;
  // A new Work state (the timeout must be positive).
  std::shared_ptr<Work::State> new_state(std::string what, Ms timeout, std::function<DynTensor()> finish) const;

  // The message of a collective that failed after running since `t0`, with the engine's cause.
  static std::string failure(const Work::State& s, Clock::time_point t0, const std::string& cause);
  // Marks the group broken by `message` (the first failure wins) and returns the error.
  std::exception_ptr break_group(const std::string& message);
  // The error of a collective issued after the group broke; null while it is not broken.
  std::exception_ptr broken_error(const Work::State& s) const;
  bool is_broken() const;

  ProcessGroupConfig config_;
  std::atomic<int64_t> comm_ns_{0};

 private:
  mutable std::mutex broken_mu_;
  std::string broken_;  // the first failure: every later collective fails with it
};

}  // namespace ember::distributed::detail
