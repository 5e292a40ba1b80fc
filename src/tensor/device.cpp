// Device factories. Core declares Device; this layer links the backends and defines them.
#include <mutex>

#include "ember/backends/cpu.hpp"
#include "ember/core/device.hpp"

namespace ember {

namespace {
std::mutex& default_mu() {
  static std::mutex m;
  return m;
}
Device& default_slot() {
  static Device d = Device::cpu();
  return d;
}
}  // namespace

Device Device::cpu() {
  static Device d(cpu::make_backend());
  return d;
}

Device Device::default_device() {
  std::lock_guard<std::mutex> lock(default_mu());
  return default_slot();
}

void Device::set_default_device(Device d) {
  std::lock_guard<std::mutex> lock(default_mu());
  default_slot() = std::move(d);
}

}  // namespace ember
