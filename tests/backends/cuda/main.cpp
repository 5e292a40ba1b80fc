// ember_cuda_tests [--has-gpu] [gtest options]
// --has-gpu: print the devices and exit 0 when there is a GPU, 1 when there is none (test.sh
// uses it to name the CUDA suites as skipped on machines without one).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <iostream>

#include "ember/backends/cuda.hpp"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--has-gpu") == 0) {
      std::cout << "cuda devices: " << ember::cuda::describe_devices() << "\n";
      return ember::cuda::available() ? 0 : 1;
    }
  }
  // cuDNN's attention backward gets its f32 scratch tensors filled with NaN bytes before each call,
  // so a graph that read them before writing would fail the gradient tests
  setenv("EMBER_CUDNN_POISON", "1", 0);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
