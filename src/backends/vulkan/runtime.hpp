// The Vulkan runtime shared by every VulkanBackend of the process: the instance, the physical
// devices that have a compute queue (in the loader's order), and the error checks. Everything
// here is internal to ember::vulkan; vulkan/vulkan.h never reaches include/ember.
#pragma once

#include <vulkan/vulkan.h>

#include <string>
#include <string_view>
#include <vector>

namespace ember::vulkan {

// A physical device with at least one compute queue, and what ember enables on it.
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props{};
  uint32_t queue_family = 0;  // the first family with VK_QUEUE_COMPUTE_BIT
  // The features the device has (and the logical device enables): they decide the dtypes.
  bool float64 = false, int64 = false, int16 = false, int8 = false, float16 = false;
  bool storage8 = false, storage16 = false;
  // Subgroup arithmetic in compute shaders (Vulkan 1.1 subgroup properties), and its width.
  bool subgroup_arithmetic = false;
  uint32_t subgroup_size = 0;
  std::string describe(int index) const;  // "0: llvmpipe (LLVM 15.0.6, 256 bits) (cpu, Vulkan 1.3)"
};

// The process's instance and devices, made on first use. An empty list when there is no loader,
// no driver, or vkCreateInstance fails (the backend then reports no devices, never throws).
const std::vector<PhysicalDevice>& physical_devices();
VkInstance instance();  // VK_NULL_HANDLE when physical_devices() is empty

int visible_devices();                   // physical_devices().size()
std::string describe_visible_devices();  // one line per device, or why there is none

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" for r.
const char* result_name(VkResult r);
// Throws an Error "<what>: <call> failed: <VkResult> (<device>)" unless r is VK_SUCCESS.
void check(VkResult r, std::string_view what, std::string_view call, std::string_view device);

}  // namespace ember::vulkan
