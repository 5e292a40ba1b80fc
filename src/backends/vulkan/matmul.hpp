// The batched-matmul parameters that matmul.cpp and quant.cpp's matmul_integer share.
#pragma once

#include <string_view>

#include "vulkan_backend.hpp"

namespace ember::vulkan {

// The parameters of out[..., rows, cols] = a[..., rows, K] b[..., K, cols], iterating over the
// batch (out's leading dims, a and b broadcast over them): ia = {rows, K}, ib = {cols, a's row
// stride}, da = {a's K stride, b's K stride}, db[0] = b's column stride. Throws an Error naming
// `op` where a dim exceeds 32 bits.
KernelParams matmul_params(std::string_view op, const VulkanTensor& out, const VulkanTensor& a, const VulkanTensor& b);

}  // namespace ember::vulkan
