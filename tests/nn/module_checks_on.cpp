// Linked into every nn test program: the module checks (nn::set_module_checks) are on in these tests
// whatever the build type, so a module, built-in or a test's own, that leaves a Param out of its
// EMBER_MODULE list fails the first visit. Other suites switch them on with EMBER_CHECK_MODULES=1.
#include "ember/nn/module.hpp"

namespace {
const bool kModuleChecksOn = (ember::nn::set_module_checks(true), true);
}  // namespace
