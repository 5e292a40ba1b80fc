// Registers the Vulkan backend under "vulkan" (ember/core/backend_registry.hpp), so that
// Device::vulkan() and the functions of ember/backends/vulkan.hpp find it when, and only when,
// this library is linked into the program. As for CUDA (src/backends/cuda/register.cpp), the
// ember::vulkan target and ember-vulkan.pc pass `-Wl,-u,ember_vulkan_backend_anchor` so that a
// static link keeps this object.
#include <memory>

#include "ember/core/backend_registry.hpp"
#include "runtime.hpp"
#include "vulkan_backend.hpp"

extern "C" {
// Only its presence matters: the -u option above names it.
[[gnu::visibility("default")]] int ember_vulkan_backend_anchor = 0;
}

namespace ember::vulkan {
namespace {

[[maybe_unused]] const bool registered = register_backend(
    "vulkan", BackendProvider{
                  .make = [](int index) -> std::shared_ptr<Backend> { return std::make_shared<VulkanBackend>(index); },
                  .device_count = [] { return visible_devices(); },
                  .describe_devices = [] { return describe_visible_devices(); },
                  .set_flag = {},
              });

}  // namespace
}  // namespace ember::vulkan
