#include "cuda_backend.hpp"

namespace ember::cuda {

void register_creation_kernels(KernelTable&) {}

}  // namespace ember::cuda
