// Device factories. Core declares Device; this layer links the backends and defines them.
#include <map>
#include <mutex>

#include "ember/backends/cpu.hpp"
#include "ember/backends/cuda.hpp"
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

Device Device::cuda(int index) {
  static std::mutex mu;
  static std::map<int, Device> devices;
  std::lock_guard<std::mutex> lock(mu);
  auto it = devices.find(index);
  if (it == devices.end()) it = devices.emplace(index, Device(cuda::make_backend(index))).first;
  return it->second;
}

Device Device::default_device() {
  std::lock_guard<std::mutex> lock(default_mu());
  return default_slot();
}

void Device::set_default_device(Device d) {
  std::lock_guard<std::mutex> lock(default_mu());
  default_slot() = std::move(d);
}

#if !EMBER_HAS_CUDA
// A build without the CUDA backend (EMBER_CUDA=OFF, or no toolkit): the same API, no devices.
namespace cuda {
bool available() { return false; }
int device_count() { return 0; }
std::string describe_devices() { return "none: this build has no CUDA backend (configure with EMBER_CUDA=ON)"; }
std::shared_ptr<Backend> make_backend(int index) {
  throw Error("Device::cuda(" + std::to_string(index) +
              "): this build has no CUDA backend (configure with -DEMBER_CUDA=ON where the CUDA toolkit is installed)");
}
void set_autotune(bool) {}
void set_allow_tf32(bool) {}
}  // namespace cuda
#endif

}  // namespace ember
