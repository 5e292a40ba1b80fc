#include "cpu_backend.hpp"

namespace ember::cpu {

void register_linalg_kernels(KernelTable&) {}

}  // namespace ember::cpu
