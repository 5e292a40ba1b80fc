#include "ember/core/error.hpp"
#include "work_state.hpp"

namespace ember::distributed {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::avg:
      return "avg";
    case ReduceOp::max:
      return "max";
  }
  return "?";
}

void Work::State::complete(std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    error = std::move(e);
  }
  cv.notify_all();
}

DynTensor Work::wait() {
  EMBER_CHECK(state_, "Work::wait: this handle belongs to no collective");
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  // The engine enforces the timeout itself; the margin only guards against an engine that
  // does not, so that nothing waits forever.
  auto limit = s.timeout + std::chrono::seconds(5);
  bool ok = s.cv.wait_for(lock, limit, [&] { return s.done; });
  EMBER_CHECK(ok, s.what, ": did not finish within ", limit.count(), " ms (timeout ", s.timeout.count(), " ms)");
  if (s.error) std::rethrow_exception(s.error);
  if (!s.result) s.result = s.finish ? s.finish() : DynTensor();
  return *s.result;
}

bool Work::completed() const {
  if (!state_) return false;
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->done;
}

}  // namespace ember::distributed
