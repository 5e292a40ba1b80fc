#include "cuda_backend.hpp"

namespace ember::cuda {

void register_sort_kernels(KernelTable&) {}

}  // namespace ember::cuda
