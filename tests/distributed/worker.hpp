// The worker processes of the distributed tests: one executable, started by ember-run as every
// rank of a job, that runs one case (its first argument) and exits 0 when every check passed.
// An ember::Error ends a rank with status 3 after printing "rank R: ember::Error: ..." to
// stderr, which the fault tests look for (distributed_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "ember/distributed.hpp"
#include "ember/ember.hpp"

namespace ember::distributed::test {

using Args = std::vector<std::string>;

int run_collectives(const Args& args);
int run_faults(const std::string& which, const Args& args);
int run_data_parallel(const Args& args);
int run_zero(const Args& args);
int run_nccl_timeout(const Args& args);

// With EMBER_TEST_NCCL=1 (the NCCL jobs of nccl_test.cpp) the cases run on the NCCL group with
// cuda tensors on device LOCAL_RANK; otherwise on the Gloo group with cpu tensors.
bool nccl_mode();
// The options of the worker's group (the backend) and the device of its tensors.
ProcessGroupOptions group_options();
Device worker_device();

// RANK from the environment (before a group exists), -1 when unset.
int env_rank();

}  // namespace ember::distributed::test
