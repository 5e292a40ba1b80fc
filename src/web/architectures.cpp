// The registry of model architectures that the web API loads from safetensors (ember/web.hpp).
#include <algorithm>
#include <map>

#include "ember/core/error.hpp"
#include "ember/web.hpp"

namespace ember::web {
namespace {
std::map<std::string, Loader>& registry() {
  static std::map<std::string, Loader> r;
  return r;
}
}  // namespace

void register_architecture(const std::string& name, Loader loader) {
  EMBER_CHECK(!name.empty(), "web::register_architecture: empty name");
  EMBER_CHECK(registry().emplace(name, std::move(loader)).second, "web::register_architecture: '", name,
              "' is registered twice");
}

std::vector<std::string> architectures() {
  std::vector<std::string> names;
  for (const auto& [name, loader] : registry()) names.push_back(name);
  return names;
}

const Loader& architecture(const std::string& name) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& [n, loader] : registry()) known += (known.empty() ? "" : ", ") + n;
    EMBER_FAIL("ember.js: no model architecture '", name, "' in this build (it has: ", known.empty() ? "none" : known,
               "); register it with EMBER_WEB_MODEL");
  }
  return it->second;
}

}  // namespace ember::web
