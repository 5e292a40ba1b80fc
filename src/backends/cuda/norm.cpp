#include "cuda_backend.hpp"

namespace ember::cuda {

void register_norm_kernels(KernelTable&) {}

}  // namespace ember::cuda
