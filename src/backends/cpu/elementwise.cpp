#include "cpu_backend.hpp"

namespace ember::cpu {

void register_elementwise_kernels(KernelTable&) {}

}  // namespace ember::cpu
