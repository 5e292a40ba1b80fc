#include "cpu_backend.hpp"

namespace ember::cpu {

void register_nn_kernels(KernelTable&) {}

}  // namespace ember::cpu
