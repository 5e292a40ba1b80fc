// Device::router() factory: the router decorator over the backends of the given devices.
#include "ember/decorators/router.hpp"

#include "ember/core/device.hpp"
#include "ember/core/error.hpp"

namespace ember {

Device Device::router(std::vector<Device> devices, RouterPolicy policy) {
  std::vector<std::shared_ptr<Backend>> backends;
  for (size_t i = 0; i < devices.size(); ++i) {
    EMBER_CHECK(!devices[i].is_autodiff(), "Device::router: device ", i, " (", devices[i].name(),
                ") has the autodiff decorator; route plain devices and put autodiff on top: "
                "Device::router({...}).autodiff()");
    backends.push_back(devices[i].backend_ptr());
  }
  return Device(router::wrap(std::move(backends), std::move(policy)));
}

bool Device::is_router() const { return router::is_router(inner().backend()); }

}  // namespace ember
