// The backend registry (include/ember/core/backend_registry.hpp). ember_core_tests links core
// only, so no real backend is registered here: "cuda" must be absent, and a stub provider
// registered by the test must be found with its functions.
#include "ember/core/backend_registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace ember {
namespace {

BackendProvider counting(int devices) {
  BackendProvider p;
  p.device_count = [devices] { return devices; };
  return p;
}

TEST(BackendRegistry, ABackendThatIsNotLinkedIsNotFound) {
  EXPECT_EQ(find_backend("cuda"), nullptr);
  EXPECT_EQ(find_backend(""), nullptr);
}

TEST(BackendRegistry, FindsARegisteredProviderAndCallsIt) {
  int flag_calls = 0;
  ASSERT_TRUE(register_backend("stub-for-test", BackendProvider{
                                                    .make = [](int) -> std::shared_ptr<Backend> { return nullptr; },
                                                    .device_count = [] { return 3; },
                                                    .describe_devices = [] { return std::string("0: stub"); },
                                                    .set_flag = [&](std::string_view, bool) { ++flag_calls; },
                                                }));
  const BackendProvider* p = find_backend("stub-for-test");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->device_count(), 3);
  EXPECT_EQ(p->describe_devices(), "0: stub");
  EXPECT_EQ(p->make(0), nullptr);
  p->set_flag("anything", true);
  EXPECT_EQ(flag_calls, 1);
  auto names = registered_backends();
  EXPECT_TRUE(std::find(names.begin(), names.end(), "stub-for-test") != names.end());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));

  // a second registration under the same name replaces the first; other names keep their address
  ASSERT_TRUE(register_backend("stub-other", counting(1)));
  EXPECT_EQ(find_backend("stub-for-test"), p);
  register_backend("stub-for-test", counting(5));
  EXPECT_EQ(find_backend("stub-for-test")->device_count(), 5);
}

}  // namespace
}  // namespace ember
