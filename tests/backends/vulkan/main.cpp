// ember_vulkan_tests [--has-device] [gtest options]
// --has-device: print the devices and exit 0 when there is a Vulkan device, 1 when there is none
// (test.sh uses it to name the Vulkan suites as skipped on machines without a driver).
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>

#include "ember/backends/vulkan.hpp"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--has-device") == 0) {
      std::cout << "vulkan devices: " << ember::vulkan::describe_devices() << "\n";
      return ember::vulkan::available() ? 0 : 1;
    }
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
