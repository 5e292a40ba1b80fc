#include "runtime.hpp"

#include <cstring>
#include <mutex>
#include <sstream>

#include "ember/core/error.hpp"

namespace ember::vulkan {

namespace {

bool has_extension(const std::vector<VkExtensionProperties>& list, const char* name) {
  for (const auto& e : list)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    default:
      return "other";
  }
}

struct Runtime {
  VkInstance instance = VK_NULL_HANDLE;
  std::vector<PhysicalDevice> devices;
  std::string why_none;  // when devices is empty
};

// The features of `pd`, queried through the 1.2 structures (or their KHR extensions on 1.1).
void query_features(PhysicalDevice& d) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(d.handle, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(d.handle, nullptr, &n, exts.data());
  const bool v12 = d.props.apiVersion >= VK_API_VERSION_1_2;

  VkPhysicalDeviceShaderFloat16Int8Features f16i8{};
  f16i8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  VkPhysicalDevice8BitStorageFeatures s8{};
  s8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
  VkPhysicalDevice16BitStorageFeatures s16{};
  s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  VkPhysicalDeviceFeatures2 f2{};
  f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  void** tail = &f2.pNext;
  auto chain = [&](auto& s) {
    *tail = &s;
    tail = &s.pNext;
  };
  chain(s16);
  if (v12 || has_extension(exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME)) chain(f16i8);
  if (v12 || has_extension(exts, VK_KHR_8BIT_STORAGE_EXTENSION_NAME)) chain(s8);
  vkGetPhysicalDeviceFeatures2(d.handle, &f2);
  d.float64 = f2.features.shaderFloat64;
  d.int64 = f2.features.shaderInt64;
  d.int16 = f2.features.shaderInt16;
  d.int8 = f16i8.shaderInt8;
  d.float16 = f16i8.shaderFloat16;
  d.storage8 = s8.storageBuffer8BitAccess;
  d.storage16 = s16.storageBuffer16BitAccess;

  VkPhysicalDeviceSubgroupProperties sg{};
  sg.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceProperties2 p2{};
  p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  p2.pNext = &sg;
  vkGetPhysicalDeviceProperties2(d.handle, &p2);
  d.subgroup_size = sg.subgroupSize;
  d.subgroup_arithmetic = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
}

Runtime make_runtime() {
  Runtime rt;
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "ember";
  app.pEngineName = "ember";
  app.apiVersion = VK_API_VERSION_1_1;  // subgroup properties, features2 and 16-bit storage in core
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  VkResult r = vkCreateInstance(&ci, nullptr, &rt.instance);
  if (r != VK_SUCCESS) {
    rt.instance = VK_NULL_HANDLE;
    rt.why_none = std::string("none: vkCreateInstance failed: ") + result_name(r) +
                  " (no Vulkan driver; on Debian: apt-get install mesa-vulkan-drivers for lavapipe)";
    return rt;
  }
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(rt.instance, &n, nullptr);
  std::vector<VkPhysicalDevice> all(n);
  if (n) vkEnumeratePhysicalDevices(rt.instance, &n, all.data());
  for (VkPhysicalDevice pd : all) {
    PhysicalDevice d;
    d.handle = pd;
    vkGetPhysicalDeviceProperties(pd, &d.props);
    if (d.props.apiVersion < VK_API_VERSION_1_1) continue;
    uint32_t qn = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, nullptr);
    std::vector<VkQueueFamilyProperties> qf(qn);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, qf.data());
    bool found = false;
    for (uint32_t q = 0; q < qn && !found; ++q)
      if (qf[q].queueFlags & VK_QUEUE_COMPUTE_BIT) d.queue_family = q, found = true;
    if (!found) continue;
    query_features(d);
    rt.devices.push_back(d);
  }
  if (rt.devices.empty()) rt.why_none = "none: the Vulkan loader found no device with a compute queue (Vulkan 1.1+)";
  return rt;
}

const Runtime& runtime() {
  // made once and kept for the life of the process (devices outlive every backend)
  static const Runtime* rt = new Runtime(make_runtime());
  return *rt;
}

}  // namespace

std::string PhysicalDevice::describe(int index) const {
  std::ostringstream s;
  s << index << ": " << props.deviceName << " (" << type_name(props.deviceType) << ", Vulkan "
    << VK_API_VERSION_MAJOR(props.apiVersion) << "." << VK_API_VERSION_MINOR(props.apiVersion) << ")";
  return s.str();
}

const std::vector<PhysicalDevice>& physical_devices() { return runtime().devices; }
VkInstance instance() { return runtime().instance; }
int visible_devices() { return int(runtime().devices.size()); }

std::string describe_visible_devices() {
  const Runtime& rt = runtime();
  if (rt.devices.empty()) return rt.why_none;
  std::string out;
  for (size_t i = 0; i < rt.devices.size(); ++i) {
    if (i) out += "\n";
    out += rt.devices[i].describe(int(i));
  }
  return out;
}

const char* result_name(VkResult r) {
  switch (r) {
#define EMBER_VK_NAME(x) \
  case x:                \
    return #x;
    EMBER_VK_NAME(VK_SUCCESS)
    EMBER_VK_NAME(VK_NOT_READY)
    EMBER_VK_NAME(VK_TIMEOUT)
    EMBER_VK_NAME(VK_INCOMPLETE)
    EMBER_VK_NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
    EMBER_VK_NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    EMBER_VK_NAME(VK_ERROR_INITIALIZATION_FAILED)
    EMBER_VK_NAME(VK_ERROR_DEVICE_LOST)
    EMBER_VK_NAME(VK_ERROR_MEMORY_MAP_FAILED)
    EMBER_VK_NAME(VK_ERROR_LAYER_NOT_PRESENT)
    EMBER_VK_NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
    EMBER_VK_NAME(VK_ERROR_FEATURE_NOT_PRESENT)
    EMBER_VK_NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
    EMBER_VK_NAME(VK_ERROR_TOO_MANY_OBJECTS)
    EMBER_VK_NAME(VK_ERROR_FORMAT_NOT_SUPPORTED)
    EMBER_VK_NAME(VK_ERROR_FRAGMENTED_POOL)
    EMBER_VK_NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
    EMBER_VK_NAME(VK_ERROR_INVALID_SHADER_NV)
#undef EMBER_VK_NAME
    default:
      return "VK_ERROR_UNKNOWN";
  }
}

void check(VkResult r, std::string_view what, std::string_view call, std::string_view device) {
  if (r == VK_SUCCESS) [[likely]]
    return;
  EMBER_FAIL(what, ": ", call, " failed: ", result_name(r), " (", device, ")");
}

}  // namespace ember::vulkan
