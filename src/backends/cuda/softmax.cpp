#include "cuda_backend.hpp"

namespace ember::cuda {

void register_softmax_kernels(KernelTable&) {}

}  // namespace ember::cuda
