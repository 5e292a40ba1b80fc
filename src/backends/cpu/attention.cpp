#include "cpu_backend.hpp"

namespace ember::cpu {

void register_attention_kernels(KernelTable&) {}

}  // namespace ember::cpu
