#include "cuda_backend.hpp"

namespace ember::cuda {

void register_matmul_kernels(KernelTable&) {}

}  // namespace ember::cuda
