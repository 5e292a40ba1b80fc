// The copy every layout-changing kernel builds on (copy.cpp).
#pragma once

#include "vulkan_backend.hpp"

namespace ember::vulkan {

// dst[i] = convert(src[i]) for every index of `shape`, both operands seen over `shape` (src's
// strides may be 0 or negative; dtypes may differ: the CPU backend's conversion rules).
void copy_strided(VulkanBackend& be, const Operand& dst, const Operand& src, const Shape& shape);

}  // namespace ember::vulkan
