#include "cuda_backend.hpp"

namespace ember::cuda {

void register_reduce_kernels(KernelTable&) {}

}  // namespace ember::cuda
