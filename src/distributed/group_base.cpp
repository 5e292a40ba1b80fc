#include "group_base.hpp"

#include <sstream>

#include "ember/core/error.hpp"
#include "tcp_store.hpp"

namespace ember::distributed::detail {

std::string GroupBase::describe(const char* op, const DynTensor* t) const {
  std::ostringstream os;
  os << op << " (" << rank_of(config_);
  if (t) os << ", " << t->dtype() << " " << t->shape();
  os << ")";
  return os.str();
}

std::string GroupBase::checked(const char* name, const DynTensor& t) const {
  EMBER_CHECK(t.defined(), describe(name, nullptr), ": the tensor is undefined");
  return describe(name, &t);
}

std::string GroupBase::checked_reduction(const char* name, const DynTensor& t, ReduceOp op) const {
  std::string what = checked(name, t) + " " + reduce_op_name(op);
  if (std::string(name) == "reduce_scatter")
    EMBER_CHECK(t.shape().rank() >= 1 && t.shape()[0] % size() == 0, what,
                ": the first dim must be a multiple of the world size ", size());
  EMBER_CHECK(op != ReduceOp::avg || is_float(t.dtype()), what, ": avg needs a floating dtype; use sum and divide");
  return what;
}

std::string GroupBase::checked_broadcast(const DynTensor& t, int root) const {
  std::string what = checked("broadcast", t) + " from rank " + std::to_string(root);
  EMBER_CHECK(root >= 0 && root < size(), what, ": root must be in [0, ", size(), ")");
  return what;
}

Shape GroupBase::gathered_shape(const DynTensor& t) const {
  std::vector<int64_t> dims{size()};
  for (int64_t d : t.shape().dims()) dims.push_back(d);
  return Shape(dims);
}

std::shared_ptr<Work::State> GroupBase::new_state(std::string what, Ms timeout,
                                                  std::function<DynTensor()> finish) const {
  EMBER_CHECK(timeout.count() > 0, what, ": the timeout must be positive, got ", timeout.count(), " ms");
  auto st = std::make_shared<Work::State>();
  st->what = std::move(what);
  st->timeout = timeout;
  st->finish = std::move(finish);
  return st;
}

std::string GroupBase::failure(const Work::State& s, Clock::time_point t0, const std::string& cause) {
  return s.what + ": failed after " + std::to_string(std::chrono::duration_cast<Ms>(Clock::now() - t0).count()) +
         " ms (timeout " + std::to_string(s.timeout.count()) + " ms): " + cause;
}

std::exception_ptr GroupBase::break_group(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(broken_mu_);
    if (broken_.empty()) broken_ = message;
  }
  return std::make_exception_ptr(Error(message));
}

std::exception_ptr GroupBase::broken_error(const Work::State& s) const {
  std::lock_guard<std::mutex> lock(broken_mu_);
  if (broken_.empty()) return nullptr;
  return std::make_exception_ptr(Error(s.what + ": the process group failed earlier: " + broken_));
}

bool GroupBase::is_broken() const {
  std::lock_guard<std::mutex> lock(broken_mu_);
  return !broken_.empty();
}

}  // namespace ember::distributed::detail
