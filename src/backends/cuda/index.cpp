#include "cuda_backend.hpp"

namespace ember::cuda {

void register_index_kernels(KernelTable&) {}

}  // namespace ember::cuda
