#include "cpu_backend.hpp"

namespace ember::cpu {

void register_index_kernels(KernelTable&) {}

}  // namespace ember::cpu
