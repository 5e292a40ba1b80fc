#include "cuda_backend.hpp"

namespace ember::cuda {

void register_elementwise_kernels(KernelTable&) {}

}  // namespace ember::cuda
