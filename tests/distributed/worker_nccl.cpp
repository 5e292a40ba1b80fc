// Worker case "nccl-timeout" (EMBER_TEST_NCCL=1, a world of 2 or more GPUs): the last rank joins
// the group, takes part in one all_reduce, then issues nothing for a while. NCCL itself would
// wait forever; the group's watchdog must fail rank 0's next all_reduce at its timeout (3 s)
// with an ember::Error naming the collective, the rank and the timeout, and every later
// collective with the first failure.
#include <cstdio>
#include <thread>

#include "worker.hpp"

namespace ember::distributed::test {

int run_nccl_timeout(const Args&) {
  auto pg = init_process_group(group_options());
  const int W = pg->size(), R = pg->rank();
  EMBER_CHECK(W >= 2, "nccl-timeout needs a world of 2 or more");
  DynTensor x = DynTensor::ones({1024}, DType::f32, worker_device());
  double first = pg->all_reduce(x).wait().sum().item();
  EMBER_CHECK(first == 1024.0 * W, "nccl-timeout: the first all_reduce gave ", first);
  if (R == W - 1) {
    std::this_thread::sleep_for(std::chrono::seconds(10));  // silent: never issues the next one
    std::printf("rank %d: nccl-timeout: ok (stayed silent)\n", R);
    return 0;
  }
  if (R != 0) return 0;  // ranks in between issue nothing either
  const auto limit = std::chrono::milliseconds(3000);
  auto t0 = std::chrono::steady_clock::now();
  std::string error;
  try {
    pg->all_reduce(x, ReduceOp::sum, {.timeout = limit}).wait();
  } catch (const Error& e) {
    error = e.what();
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bool ok = !error.empty() && error.find("all_reduce (rank 0 of ") != std::string::npos &&
            error.find("timed out") != std::string::npos && error.find("timeout 3000 ms") != std::string::npos &&
            s >= 2.9 && s < 6.0;
  std::string later;
  try {
    pg->barrier().wait();
  } catch (const Error& e) {
    later = e.what();
  }
  ok = ok && later.find("failed earlier") != std::string::npos;
  std::printf("rank 0: nccl-timeout: %s after %.1f s: %s | then: %s\n", ok ? "ok" : "WRONG", s, error.c_str(),
              later.c_str());
  return ok ? 0 : 1;
}

}  // namespace ember::distributed::test
