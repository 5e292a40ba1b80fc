#include "cpu_backend.hpp"

namespace ember::cpu {

void register_pool_kernels(KernelTable&) {}

}  // namespace ember::cpu
