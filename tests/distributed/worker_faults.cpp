// Worker cases "fault-*": each breaks one rank (the last) in one way; the other ranks must end
// with an ember::Error within the group's timeout ($EMBER_DIST_TIMEOUT, set by the test).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "worker.hpp"

namespace ember::distributed::test {

int run_faults(const std::string& which, const Args& args) {
  const int world = std::atoi(std::getenv("WORLD_SIZE"));
  const bool culprit = env_rank() == world - 1;
  if (which == "fault-never-joins" && culprit) {
    std::this_thread::sleep_for(std::chrono::seconds(60));  // ember-run ends it
    return 0;
  }
  if (which == "fault-world-size" && culprit) setenv("WORLD_SIZE", std::to_string(world + 1).c_str(), 1);
  if (which == "fault-master" && culprit) setenv("MASTER_PORT", "1", 1);  // nothing listens on port 1
  if (which == "fault-shape") return run_data_parallel({"--shape-mismatch"});
  if (which == "fault-kill-ddp") return run_data_parallel({"--kill-step", "3"});
  auto pg = init_process_group();
  // Training-like steps; the culprit of fault-kill dies in the middle of the third.
  auto x = DynTensor::ones({1000}, DType::f32, Device::cpu());
  for (int step = 0; step < 1000; ++step) {
    Work a = pg->all_reduce(x, ReduceOp::sum);
    if (which == "fault-kill" && culprit && step == 2) raise(SIGKILL);
    if (which == "fault-stall" && culprit && step == 2) std::this_thread::sleep_for(std::chrono::seconds(60));
    a.wait();
    pg->all_reduce(x, ReduceOp::avg).wait();
  }
  (void)args;
  std::fprintf(stderr, "rank %d: %s: no error was raised\n", pg->rank(), which.c_str());
  return 1;
}

}  // namespace ember::distributed::test
