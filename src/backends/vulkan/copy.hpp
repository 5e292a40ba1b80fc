// The copy and the fill every layout-changing kernel builds on (copy.cpp, creation.cpp).
#pragma once

#include "vulkan_backend.hpp"

namespace ember::vulkan {

// dst[i] = convert(src[i]) for every index of `shape`, both operands seen over `shape` (src's
// strides may be 0 or negative; dtypes may differ: the CPU backend's conversion rules).
void copy_strided(VulkanBackend& be, const Operand& dst, const Operand& src, const Shape& shape);
// Every element of the contiguous `out` set to the bit pattern `bits` (creation.cpp).
void fill_bits(VulkanBackend& be, const VulkanTensor& out, uint64_t bits);

}  // namespace ember::vulkan
