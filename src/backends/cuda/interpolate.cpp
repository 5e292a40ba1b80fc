#include "cuda_backend.hpp"

namespace ember::cuda {

void register_interpolate_kernels(KernelTable&) {}

}  // namespace ember::cuda
