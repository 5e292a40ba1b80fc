// Device factories. Core declares Device; this layer defines them: the CPU backend directly,
// the CUDA backend through the backend registry, where libember_cuda registers itself when it
// is linked in (ember/core/backend_registry.hpp). The functions of ember/backends/cuda.hpp are
// defined here too, so that a program without the CUDA backend can still ask for it.
#include <map>
#include <mutex>

#include "ember/backends/cpu.hpp"
#include "ember/backends/cuda.hpp"
#include "ember/backends/vulkan.hpp"
#include "ember/core/backend_registry.hpp"
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

Device Device::vulkan(int index) {
  static std::mutex mu;
  static std::map<int, Device> devices;
  std::lock_guard<std::mutex> lock(mu);
  auto it = devices.find(index);
  if (it == devices.end()) it = devices.emplace(index, Device(vulkan::make_backend(index))).first;
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

namespace cuda {
namespace {
constexpr const char* kNotLinked =
    "the CUDA backend is not linked into this program: link ember::cuda / find_package(ember COMPONENTS cuda) "
    "(pkg-config: ember-cuda; an ember configured without the CUDA toolkit has none: -DEMBER_CUDA=ON)";
}  // namespace

bool available() { return device_count() > 0; }

int device_count() {
  const BackendProvider* p = find_backend("cuda");
  return p ? p->device_count() : 0;
}

std::string describe_devices() {
  const BackendProvider* p = find_backend("cuda");
  return p ? p->describe_devices() : std::string("none: ") + kNotLinked;
}

std::shared_ptr<Backend> make_backend(int index) {
  const BackendProvider* p = find_backend("cuda");
  if (!p) throw Error("Device::cuda(" + std::to_string(index) + "): " + kNotLinked);
  return p->make(index);
}

void set_autotune(bool on) {
  if (const BackendProvider* p = find_backend("cuda"); p && p->set_flag) p->set_flag("autotune", on);
}

void set_allow_tf32(bool on) {
  if (const BackendProvider* p = find_backend("cuda"); p && p->set_flag) p->set_flag("allow_tf32", on);
}
}  // namespace cuda

namespace vulkan {
namespace {
constexpr const char* kNotLinked =
    "the Vulkan backend is not linked into this program: link ember::vulkan / find_package(ember COMPONENTS vulkan) "
    "(pkg-config: ember-vulkan; an ember configured without libvulkan-dev and libshaderc-dev has none: "
    "-DEMBER_VULKAN=ON)";
}  // namespace

bool available() { return device_count() > 0; }

int device_count() {
  const BackendProvider* p = find_backend("vulkan");
  return p ? p->device_count() : 0;
}

std::string describe_devices() {
  const BackendProvider* p = find_backend("vulkan");
  return p ? p->describe_devices() : std::string("none: ") + kNotLinked;
}

std::shared_ptr<Backend> make_backend(int index) {
  const BackendProvider* p = find_backend("vulkan");
  if (!p) throw Error("Device::vulkan(" + std::to_string(index) + "): " + kNotLinked);
  return p->make(index);
}
}  // namespace vulkan

}  // namespace ember
