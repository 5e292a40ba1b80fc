#include "cpu_backend.hpp"

namespace ember::cpu {

void register_norm_kernels(KernelTable&) {}

}  // namespace ember::cpu
