#include "cuda_backend.hpp"

namespace ember::cuda {

void register_scan_kernels(KernelTable&) {}

}  // namespace ember::cuda
