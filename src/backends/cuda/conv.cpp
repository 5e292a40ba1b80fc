#include "cuda_backend.hpp"

namespace ember::cuda {

void register_conv_kernels(KernelTable&) {}

}  // namespace ember::cuda
