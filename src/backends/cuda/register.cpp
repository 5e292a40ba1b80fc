// Registers the CUDA backend under "cuda" (ember/core/backend_registry.hpp), so that
// Device::cuda() and the functions of ember/backends/cuda.hpp find it when, and only when, this
// library is linked into the program.
//
// In a static libember_cuda.a the linker copies this object only if something references a
// symbol defined here, and nothing in ember does. So the ember::cuda target, ember-cuda.pc and
// the README's g++ line pass `-Wl,-u,ember_cuda_backend_anchor`: the symbol below is then
// undefined from the start of the link, the linker takes this object to define it, and the
// registrar comes with it (docs/architecture.md, "Backend registry").
#include <memory>

#include "cuda_backend.hpp"
#include "ember/core/backend_registry.hpp"
#include "matmul.hpp"
#include "runtime.hpp"

extern "C" {
// Only its presence matters: the -u option above names it.
[[gnu::visibility("default")]] int ember_cuda_backend_anchor = 0;
}

namespace ember::cuda {
namespace {

[[maybe_unused]] const bool registered = register_backend(
    "cuda", BackendProvider{
                .make = [](int index) -> std::shared_ptr<Backend> { return std::make_shared<CudaBackend>(index); },
                .device_count = [] { return visible_devices(); },
                .describe_devices = [] { return describe_visible_devices(); },
                .set_flag =
                    [](std::string_view setting, bool on) {
                      if (setting == "autotune") set_autotune_enabled(on);
                      else if (setting == "allow_tf32") set_tf32_allowed(on);
                    },
            });

}  // namespace
}  // namespace ember::cuda
