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
const char* reduce_op_name(ReduceOp op);

struct CollectiveOptions {
  // The group's timeout (ProcessGroupOptions::timeout) when unset.
  std::optional<std::chrono::milliseconds> timeout{};
};

// The handle of a collective that runs in the background. Copies share the same collective.
class Work {
 public:
  struct State;  // defined by the implementation
  Work() = default;
  explicit Work(std::shared_ptr<State> s) : state_(std::move(s)) {}
  // Blocks until the collective finished and returns its result (undefined for barrier). Throws
  // the collective's ember::Error. May be called again: it returns the same result.
  DynTensor wait();
  bool completed() const;

 private:
  std::shared_ptr<State> state_;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // "gloo" or "nccl".
  virtual std::string backend() const = 0;

  virtual Work all_reduce(const DynTensor& t, ReduceOp op = ReduceOp::sum, CollectiveOptions o = {}) = 0;
  virtual Work broadcast(const DynTensor& t, int root = 0, CollectiveOptions o = {}) = 0;
  virtual Work all_gather(const DynTensor& t, CollectiveOptions o = {}) = 0;
  virtual Work reduce_scatter(const DynTensor& t, ReduceOp op = ReduceOp::sum, CollectiveOptions o = {}) = 0;
  virtual Work barrier(CollectiveOptions o = {}) = 0;

  // The time this rank spent inside collectives (waiting included) since the group was made,
  // for the per-rank communication time the Learner reports.
  virtual std::chrono::nanoseconds communication_time() const = 0;

 protected:
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}

 private:
  int rank_;
  int size_;
};

using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

}  // namespace ember::distributed
