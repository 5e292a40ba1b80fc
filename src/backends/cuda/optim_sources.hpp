// The generated CUDA sources of optim.cpp (fused optimizer updates), exposed so that the
// compile tests build every variant without a GPU.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ember/core/dtype.hpp"

namespace ember::cuda {

// Key "adam_step/<dt>", entry "adam_step"; dt floating.
std::string adam_source(DType dt);
// Key "multi_tensor/<dt>", entries norm_part, norm_final, mul_multi (norm_multi, mul_multi); dt floating.
std::string multi_source(DType dt);
// Every (key, source) pair optim.cpp can hand to Jit::get.
std::vector<std::pair<std::string, std::string>> optim_variants();

}  // namespace ember::cuda
