#include "cpu_backend.hpp"

namespace ember::cpu {

void register_layout_kernels(KernelTable&) {}

}  // namespace ember::cpu
