// Process groups and collectives (DESIGN section 6, issue 28): one interface in front of the
// collective engines, as PyTorch's c10d puts ProcessGroup in front of Gloo and NCCL.
//
//   # DynTensor grad = given<DynTensor>();
//   auto pg = distributed::init_process_group();            // RANK, WORLD_SIZE, MASTER_ADDR, ...
//   distributed::Work w = pg->all_reduce(grad, distributed::ReduceOp::avg);
//   // ... other work here overlaps the reduction ...
//   DynTensor mean = w.wait();                             // throws ember::Error on failure/timeout
//
// Tensors are immutable, so a collective returns its result through its Work handle:
// all_reduce and broadcast give a tensor of the input's shape, all_gather one of shape
// [world, ...input], reduce_scatter takes [world * k, ...] and gives this rank's [k, ...] part,
// barrier gives an undefined tensor. Every rank must issue the same collectives in the same
// order, with the same shapes and dtypes (as in every collective library). A collective that
// does not finish within its timeout fails with an ember::Error naming the collective, the rank
// and the cause; after any failure the group is broken and every later collective fails too.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember::distributed {

// avg is sum divided by the world size; it needs a floating dtype. On bool, sum and max are
// a logical or.
enum class ReduceOp { sum, avg, max };
// "sum", "avg" or "max".
const char* reduce_op_name(ReduceOp op);

// Per-call options of a collective.
struct CollectiveOptions {
  // The group's timeout (ProcessGroupOptions::timeout) when unset.
  std::optional<std::chrono::milliseconds> timeout{};
};

// The handle of a collective that runs in the background. Copies share the same collective.
class Work {
 public:
  struct State;  // defined by the implementation
  Work() = default;
  // A handle on a collective's state (made by process group implementations).
  explicit Work(std::shared_ptr<State> s) : state_(std::move(s)) {}
  // Blocks until the collective finished and returns its result (undefined for barrier). Throws
  // the collective's ember::Error. May be called again: it returns the same result.
  DynTensor wait();
  // Whether the collective has finished (successfully or not), without blocking; false for a default-made handle.
  bool completed() const;

 private:
  std::shared_ptr<State> state_;
};

// A group of ranks that run collectives together (torch.distributed's ProcessGroup), made by
// init_process_group(). Each collective is asynchronous: it returns a Work to wait on.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  // This process's rank, in [0, size()).
  int rank() const { return rank_; }
  // The number of ranks (the world size).
  int size() const { return size_; }
  // "gloo" or "nccl".
  virtual std::string backend() const = 0;

  // Reduces `t` elementwise over the ranks; every rank receives the result (avg needs a floating dtype).
  virtual Work all_reduce(const DynTensor& t, ReduceOp op = ReduceOp::sum, CollectiveOptions o = {}) = 0;
  // Every rank receives rank `root`'s `t` (same shape and dtype on every rank).
  virtual Work broadcast(const DynTensor& t, int root = 0, CollectiveOptions o = {}) = 0;
  // Every rank receives all ranks' `t` stacked in rank order: shape [world, ...t's shape].
  virtual Work all_gather(const DynTensor& t, CollectiveOptions o = {}) = 0;
  // Reduces `t` (first dim a multiple of the world size) over the ranks; this rank receives its 1/world slice of
  // the first dim.
  virtual Work reduce_scatter(const DynTensor& t, ReduceOp op = ReduceOp::sum, CollectiveOptions o = {}) = 0;
  // Completes once every rank has called it; its result is an undefined tensor.
  virtual Work barrier(CollectiveOptions o = {}) = 0;

  // The time this rank spent inside collectives (waiting included) since the group was made,
  // for the per-rank communication time the Learner reports.
  virtual std::chrono::nanoseconds communication_time() const = 0;

 protected:
  // For implementations: `rank` in [0, size).
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}

 private:
  int rank_;
  int size_;
};

// Shared ownership of a process group (what init_process_group() returns).
using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

}  // namespace ember::distributed
