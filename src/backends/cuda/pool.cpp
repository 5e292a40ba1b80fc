#include "cuda_backend.hpp"

namespace ember::cuda {

void register_pool_kernels(KernelTable&) {}

}  // namespace ember::cuda
