// Neural-network kernels are split by topic; this file only registers them.
#include "cpu_backend.hpp"

namespace ember::cpu {

void register_nn_kernels(KernelTable& t) {
  register_conv_kernels(t);       // conv.cpp
  register_pool_kernels(t);       // pool.cpp (pools, adaptive pools, interpolate)
  register_norm_kernels(t);       // norm.cpp (layer_norm, batch_norm, prelu)
  register_attention_kernels(t);  // attention.cpp
}

}  // namespace ember::cpu
