#include "cuda_backend.hpp"

namespace ember::cuda {

void register_layout_kernels(KernelTable&) {}

}  // namespace ember::cuda
