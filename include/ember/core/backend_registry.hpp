// The backend registry: optional backends (CUDA today) register a factory under a name when
// their library is linked into the program, and Device::cuda() looks the name up. The tensor
// layer therefore references no backend but the CPU one, and a program that never links
// ember::cuda links none of the CUDA libraries (docs/architecture.md, "Backend registry").
//
//   # std::function<std::shared_ptr<Backend>(int)> make = [](int) { return cpu::make_backend(); };
//   # std::function<int()> count = [] { return 1; };
//   # std::function<std::string()> describe = [] { return std::string("cpu"); };
//   // in a backend library, at namespace scope of one .cpp file:
//   static const bool registered = ember::register_backend("cuda", {make, count, describe, /*set_flag=*/{}});
//   // anywhere:
//   if (const ember::BackendProvider* p = ember::find_backend("cuda")) p->device_count();
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/backend.hpp"

namespace ember {

// What an optional backend registers: functions that open, count and describe its devices.
struct BackendProvider {
  // A new backend for device `index`; throws an Error when there is no such device.
  std::function<std::shared_ptr<Backend>(int index)> make;
  // Devices that make() can open (0 without a driver or hardware).
  std::function<int()> device_count;
  // One line per device, or the reason there is none.
  std::function<std::string()> describe_devices;
  // A process-wide switch by name (the CUDA backend knows "autotune" and "allow_tf32"); may be
  // empty, and a provider ignores names it does not know.
  std::function<void(std::string_view setting, bool on)> set_flag;
};

// Registers `provider` under `name` (a second registration under one name replaces the first).
// Returns true, so that a backend can register from a static initializer.
bool register_backend(std::string name, BackendProvider provider);
// The provider registered under `name`, or nullptr when that backend is not linked in. The
// pointer stays valid until the same name is registered again.
const BackendProvider* find_backend(std::string_view name);
// The registered names, sorted.
std::vector<std::string> registered_backends();

}  // namespace ember
