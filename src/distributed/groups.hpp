// The engines' process groups, made by init_process_group (init.cpp). A NCCL group (cuda
// tensors) goes beside the Gloo one as make_nccl_group, guarded by EMBER_HAS_CUDA.
#pragma once

#include "ember/distributed/init.hpp"

namespace ember::distributed::detail {

ProcessGroupPtr make_gloo_group(const ProcessGroupConfig& c);

}  // namespace ember::distributed::detail
