// Joining a process group: the rank, the world size and the master's address come from the
// environment that torchrun (and ember-run, tools/ember-run) sets, or from the options.
//
//   auto pg = distributed::init_process_group();   // RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//   auto solo = distributed::init_process_group({.rank = 0, .world_size = 1});   // no environment
//   auto patient = distributed::init_process_group({.timeout = std::chrono::seconds(5)});
//
// Rank 0 serves a small key-value store on MASTER_ADDR:MASTER_PORT (the rendezvous); every rank
// posts its transport address there and then connects to every other rank directly. Under
// mpirun (OpenMPI), where torchrun's variables are absent, RANK and WORLD_SIZE are taken from
// OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE (and LOCAL_RANK from OMPI_COMM_WORLD_LOCAL_RANK);
// MASTER_ADDR and MASTER_PORT must still be exported (docs/distributed.md).
//
// Errors (ember::Error, within the timeout): a missing or malformed variable, a master that
// cannot be reached, a rank whose WORLD_SIZE differs from rank 0's, a rank out of range or
// twice, ranks that do not join in time, a backend this build lacks.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "ember/distributed/process_group.hpp"

namespace ember::distributed {

// Settings for init_process_group() that override the environment; an unset field comes from the variable named.
struct ProcessGroupOptions {
  std::optional<int> rank{};         // default: $RANK
  std::optional<int> world_size{};   // default: $WORLD_SIZE
  std::optional<int> local_rank{};   // default: $LOCAL_RANK, else rank
  std::string master_addr{};         // default: $MASTER_ADDR
  std::optional<int> master_port{};  // default: $MASTER_PORT
  // For the rendezvous and for every collective; $EMBER_DIST_TIMEOUT (seconds) overrides the
  // default of 300 s when unset here.
  std::optional<std::chrono::milliseconds> timeout{};
  // "gloo" (cpu tensors; cuda ones through host copies), "nccl" (cuda tensors; needs a build
  // with NCCL), or "auto": nccl where the build has it and the machine CUDA device LOCAL_RANK,
  // else gloo.
  std::string backend = "gloo";
};

// What the environment and the options resolve to (without joining anything).
struct ProcessGroupConfig {
  int rank = 0;                               // this process's rank, in [0, world_size)
  int world_size = 1;                         // the number of ranks, >= 1
  int local_rank = 0;                         // rank among the processes on this host (e.g. to pick a GPU)
  std::string master_addr;                    // the rendezvous host; may be empty when world_size is 1
  int master_port = 0;                        // the rendezvous port; may be 0 when world_size is 1
  std::chrono::milliseconds timeout{300000};  // for the rendezvous and each collective
  std::string backend = "gloo";               // "gloo", "nccl" or "auto"
};
// The settings `o` and the environment give. Throws ember::Error when the rank or world size is missing or out of
// range, when world_size > 1 and MASTER_ADDR or MASTER_PORT is missing or invalid, or when EMBER_DIST_TIMEOUT is
// not a positive number of seconds.
ProcessGroupConfig resolve_config(const ProcessGroupOptions& o = {});

// Joins the group; blocks until every rank joined or the timeout passed.
ProcessGroupPtr init_process_group(const ProcessGroupOptions& o = {});

// True when the environment describes a distributed run (WORLD_SIZE or OMPI_COMM_WORLD_SIZE set).
bool launched_distributed();

}  // namespace ember::distributed
