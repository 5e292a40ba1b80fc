// init_process_group: the configuration from options and the environment, then the engine.
#include <csignal>
#include <cstdlib>
#include <string>

#include "ember/core/error.hpp"
#include "groups.hpp"

namespace ember::distributed {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// The first of `names` that is set, parsed as an integer; nullopt when none is set.
std::optional<int> env_int(std::initializer_list<const char*> names) {
  for (const char* n : names) {
    const char* v = env(n);
    if (!v) continue;
    char* end = nullptr;
    long x = std::strtol(v, &end, 10);
    EMBER_CHECK(end && *end == '\0' && x >= 0 && x <= 1 << 30, "init_process_group: the environment variable ", n, "='",
                v, "' is not a non-negative integer");
    return static_cast<int>(x);
  }
  return std::nullopt;
}

}  // namespace

#if !EMBER_HAS_NCCL
bool detail::nccl_usable(int) { return false; }
#endif

bool launched_distributed() { return env("WORLD_SIZE") || env("OMPI_COMM_WORLD_SIZE"); }

ProcessGroupConfig resolve_config(const ProcessGroupOptions& o) {
  ProcessGroupConfig c;
  auto world = o.world_size ? o.world_size : env_int({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"});
  auto rank = o.rank ? o.rank : env_int({"RANK", "OMPI_COMM_WORLD_RANK"});
  EMBER_CHECK(world,
              "init_process_group: no world size: set WORLD_SIZE (ember-run and torchrun do) or pass "
              "ProcessGroupOptions::world_size");
  EMBER_CHECK(rank,
              "init_process_group: no rank: set RANK (ember-run and torchrun do) or pass ProcessGroupOptions::rank");
  c.world_size = *world;
  c.rank = *rank;
  EMBER_CHECK(c.world_size >= 1, "init_process_group: WORLD_SIZE must be at least 1, got ", c.world_size);
  EMBER_CHECK(c.rank < c.world_size, "init_process_group: RANK=", c.rank,
              " is out of range for WORLD_SIZE=", c.world_size);
  auto local = o.local_rank ? o.local_rank : env_int({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"});
  c.local_rank = local.value_or(c.rank);
  c.master_addr = !o.master_addr.empty() ? o.master_addr : env("MASTER_ADDR") ? env("MASTER_ADDR") : "";
  auto port = o.master_port ? o.master_port : env_int({"MASTER_PORT"});
  if (c.world_size > 1) {
    EMBER_CHECK(!c.master_addr.empty(), "init_process_group: MASTER_ADDR is not set (rank ", c.rank, " of ",
                c.world_size, ")");
    EMBER_CHECK(port && *port > 0 && *port < 65536, "init_process_group: MASTER_PORT is not set or not a port (rank ",
                c.rank, " of ", c.world_size, ")");
  }
  c.master_port = port.value_or(0);
  if (o.timeout) {
    c.timeout = *o.timeout;
  } else if (const char* t = env("EMBER_DIST_TIMEOUT")) {
    char* end = nullptr;
    double s = std::strtod(t, &end);
    EMBER_CHECK(end && *end == '\0' && s > 0, "init_process_group: EMBER_DIST_TIMEOUT='", t,
                "' is not a positive number of seconds");
    c.timeout = std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
  }
  EMBER_CHECK(c.timeout.count() > 0, "init_process_group: the timeout must be positive");
  c.backend = o.backend;
  return c;
}

ProcessGroupPtr init_process_group(const ProcessGroupOptions& o) {
  ProcessGroupConfig c = resolve_config(o);
  // A peer that dies leaves sockets whose writes raise SIGPIPE, which would kill this rank
  // before it could report the failure as an Error.
  std::signal(SIGPIPE, SIG_IGN);
  std::string backend = c.backend;
  // PyTorch's choice: NCCL for cuda tensors, Gloo for cpu ones.
  if (backend == "auto") backend = detail::nccl_usable(c.local_rank) ? "nccl" : "gloo";
  if (backend == "gloo") {
#if EMBER_HAS_GLOO
    return detail::make_gloo_group(c);
#else
    EMBER_FAIL(
        "init_process_group: the gloo backend is not available: ember was built without Gloo "
        "(apt-get install libgloo-dev and rebuild)",
        EMBER_HAS_NCCL ? "; \"nccl\" is (cuda tensors)" : "");
#endif
  }
  if (backend == "nccl") {
#if EMBER_HAS_NCCL
    return detail::make_nccl_group(c);
#else
    EMBER_FAIL(
        "init_process_group: the nccl backend is not available: ember was built without NCCL (it needs the "
        "CUDA backend and the CUDA toolkit's nccl.h and libnccl, or NCCL_HOME); use \"gloo\" (cuda tensors go "
        "through host copies)");
#endif
  }
  EMBER_FAIL("init_process_group: unknown backend '", c.backend, "' (expected \"gloo\", \"nccl\" or \"auto\")");
}

}  // namespace ember::distributed
