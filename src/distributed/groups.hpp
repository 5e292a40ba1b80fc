// The engines' process groups, made by init_process_group (init.cpp). Each exists where its
// engine was found at build time (EMBER_HAS_GLOO, EMBER_HAS_NCCL); the factory says so otherwise.
#pragma once

#include "ember/distributed/init.hpp"

namespace ember::distributed::detail {

ProcessGroupPtr make_gloo_group(const ProcessGroupConfig& c);  // gloo_group.cpp
ProcessGroupPtr make_nccl_group(const ProcessGroupConfig& c);  // nccl_group.cpp
// Whether this process can run the NCCL group: built with NCCL, and CUDA device `local_rank`
// (the one the group would run on) present.
bool nccl_usable(int local_rank);  // nccl_group.cpp

}  // namespace ember::distributed::detail
