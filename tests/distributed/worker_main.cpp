#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "worker.hpp"

namespace ember::distributed::test {
int env_rank() {
  const char* r = std::getenv("RANK");
  return r ? std::atoi(r) : -1;
}
bool nccl_mode() {
  const char* v = std::getenv("EMBER_TEST_NCCL");
  return v && std::string(v) == "1";
}
ProcessGroupOptions group_options() {
  ProcessGroupOptions o;
  if (nccl_mode()) o.backend = "nccl";
  return o;
}
Device worker_device() {
  const char* local = std::getenv("LOCAL_RANK");
  return nccl_mode() ? Device::cuda(local ? std::atoi(local) : 0) : Device::cpu();
}
}  // namespace ember::distributed::test

int main(int argc, char** argv) {
  using namespace ember::distributed::test;
  if (argc < 2) {
    std::fprintf(stderr, "usage: ember_distributed_worker CASE [ARGS...]\n");
    return 2;
  }
  std::string which = argv[1];
  Args args(argv + 2, argv + argc);
  auto t0 = std::chrono::steady_clock::now();
  try {
    if (which == "collectives") return run_collectives(args);
    if (which == "data_parallel") return run_data_parallel(args);
    if (which == "zero") return run_zero(args);
    if (which == "nccl-timeout") return run_nccl_timeout(args);
    if (which.rfind("fault-", 0) == 0) return run_faults(which, args);
    std::fprintf(stderr, "unknown case %s\n", which.c_str());
    return 2;
  } catch (const ember::Error& e) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "rank %d: ember::Error after %.1f s: %s\n", env_rank(), s, e.what());
    return 3;
  }
}
