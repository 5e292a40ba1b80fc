// The Vulkan compute backend: one backend for any vendor's GPU (AMD, Intel, NVIDIA, Apple
// through MoltenVK, phones) and for software rasterisers such as Mesa's lavapipe. Compute
// shaders are generated as GLSL, compiled at run time to SPIR-V with shaderc, and cached in
// memory and on disk; memory comes from a pooled allocator; the host waits only on a read.
// Users reach it through Device::vulkan(i); this header is for programs that must ask first
// whether a Vulkan device is there. These functions work in every program: the backend is found
// through the registry (ember/core/backend_registry.hpp) when the program links ember::vulkan,
// and otherwise there are no devices (docs/vulkan.md).
//
//   if (ember::vulkan::available()) { Device gpu = Device::vulkan(0); /* ... */ }
#pragma once

#include <memory>
#include <string>

#include "ember/core/backend.hpp"

namespace ember::vulkan {

// True when the program links the Vulkan backend (ember::vulkan) and the loader finds at least
// one device with a compute queue.
bool available();
// Vulkan devices with a compute queue (0 without a loader, a driver, or the backend linked in).
int device_count();
// "0: llvmpipe (LLVM 15.0.7, 256 bits) (cpu, Vulkan 1.3)" lines, or the reason there is none.
std::string describe_devices();
// A new backend for device `index` (Device::vulkan(i) keeps one per index). Throws an Error that
// lists the devices when the index is not one of them, or says how to link the backend.
std::shared_ptr<Backend> make_backend(int index);

}  // namespace ember::vulkan
