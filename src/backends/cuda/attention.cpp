#include "cuda_backend.hpp"

namespace ember::cuda {

void register_attention_kernels(KernelTable&) {}

}  // namespace ember::cuda
