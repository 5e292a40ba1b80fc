// Device::fusion() factory (one decorated backend per backend, so that two calls give equal
// devices).
#include <map>
#include <mutex>

#include "ember/core/device.hpp"
#include "ember/core/error.hpp"
#include "ember/decorators/fusion.hpp"

namespace ember {

Device Device::fusion() const {
  if (fusion::is_fusion(*backend_)) return *this;
  EMBER_CHECK(!is_autodiff(), "fusion(): ", name(),
              " has the autodiff decorator; put fusion under it: .fusion().autodiff() (e.g. "
              "Device::cpu().fusion().autodiff()), so that the backward pass fuses too");
  static std::mutex mu;
  // kept for the process, like the backends they wrap (their plan caches and statistics live on)
  static std::map<const Backend*, std::shared_ptr<Backend>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[backend_.get()];
  if (!slot) slot = fusion::wrap(backend_);
  return Device(slot);
}

bool Device::is_fusion() const { return fusion::is_fusion(inner().backend()); }

}  // namespace ember
