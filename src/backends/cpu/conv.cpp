#include "cpu_backend.hpp"

namespace ember::cpu {

void register_conv_kernels(KernelTable&) {}

}  // namespace ember::cpu
