// Work::State: the shared completion state behind a Work handle. The engine's thread marks it
// done (or failed); the result tensor is made on the thread that waits, so backends are only
// touched by the threads that own the tensors.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "ember/distributed/process_group.hpp"

namespace ember::distributed {

struct Work::State {
  std::string what;                      // "all_reduce (rank 1 of 2, f32 [1000])", for errors
  std::chrono::milliseconds timeout{0};  // the collective's own; wait() allows a margin over it
  std::function<DynTensor()> finish;     // builds the result from the engine's host buffer

  void complete(std::exception_ptr e = nullptr);

 private:
  friend class Work;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  std::optional<DynTensor> result;
};

}  // namespace ember::distributed
