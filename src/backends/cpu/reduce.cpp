#include "cpu_backend.hpp"

namespace ember::cpu {

void register_reduce_kernels(KernelTable&) {}

}  // namespace ember::cpu
