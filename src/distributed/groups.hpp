// The engines' process groups, made by init_process_group (init.cpp). Each exists where its
// engine was found at build time (EMBER_HAS_GLOO, EMBER_HAS_NCCL); the factory says so otherwise.
#pragma once

#include "ember/distributed/init.hpp"

namespace ember::distributed::detail {

ProcessGroupPtr make_gloo_group(const ProcessGroupConfig& c);  // gloo_group.cpp
ProcessGroupPtr make_nccl_group(const ProcessGroupConfig& c);  // nccl_group.cpp
// Whether this process can run the NCCL group: built with NCCL and a CUDA device present.
bool nccl_usable();  // nccl_group.cpp

}  // namespace ember::distributed::detail
