#include "ember/core/backend_registry.hpp"

#include <map>
#include <mutex>

namespace ember {

namespace {
struct Registry {
  std::mutex mu;
  // unique_ptr: a found provider keeps its address while other names are added
  std::map<std::string, std::unique_ptr<BackendProvider>, std::less<>> providers;
};
// A function-local static: backends register from static initializers in other translation
// units, which may run before this file's namespace-scope statics would have.
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

bool register_backend(std::string name, BackendProvider provider) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.providers[std::move(name)] = std::make_unique<BackendProvider>(std::move(provider));
  return true;
}

const BackendProvider* find_backend(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.providers.find(name);
  return it == r.providers.end() ? nullptr : it->second.get();
}

std::vector<std::string> registered_backends() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, provider] : r.providers) names.push_back(name);
  return names;
}

}  // namespace ember
