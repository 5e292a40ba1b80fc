// A program outside ember's tree, built against an installed ember by test.sh (tests/consumers/
// check.sh): with find_package, with pkg-config and with the README's g++ line. Built plainly it
// is a CPU-only program, which must link no CUDA library; with -DEMBER_CONSUMER_CUDA it is
// linked with the CUDA backend, which must then be registered, and where a GPU is present a
// product must run on it (scripts/cuda-check.sh consumers). Prints "consumer ok" last.
#include <ember/core/backend_registry.hpp>
#include <ember/ember.hpp>
#include <ember/train/renderer.hpp>
#include <ember/version.hpp>
#include <iostream>
#include <string>

using namespace ember;

int main(int argc, char**) {
  // tensor ops on the CPU
  auto x = DynTensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  float s = sum(matmul(x, x)).item();  // [[7, 10], [15, 22]]
  if (s != 54) {
    std::cerr << "consumer: sum(x @ x) = " << s << ", expected 54\n";
    return 1;
  }
#ifndef EMBER_CONSUMER_NO_TRAIN
  // the train layer: its dashboard needs ncursesw, which ember's link interface must bring
  auto renderer = train::make_renderer(train::RendererKind::none);
  if (argc > 99) renderer = train::make_dashboard_renderer();  // (never runs; linked all the same)
#else
  (void)argc;  // (a package built without the data and train layers: a GPU machine without ncurses)
#endif

  bool registered = find_backend("cuda") != nullptr;
  std::string devices = cuda::describe_devices();
#ifdef EMBER_CONSUMER_CUDA
  if (!registered) {
    std::cerr << "consumer: linked with the CUDA backend, but it is not registered: " << devices << "\n";
    return 1;
  }
  if (cuda::available()) {  // on a GPU machine (scripts/cuda-check.sh's consumers stage): the same product there
    Device gpu = Device::cuda(0);
    auto xg = x.to(gpu);
    const float sg = sum(matmul(xg, xg)).item();
    if (sg != 54) {
      std::cerr << "consumer: sum(x @ x) on " << devices << " = " << sg << ", expected 54\n";
      return 1;
    }
    std::cout << "cuda: sum(x @ x) = 54 on the GPU\n";
  }
#else
  if (registered) {
    std::cerr << "consumer: the CUDA backend is registered in a CPU-only program\n";
    return 1;
  }
  try {
    Device::cuda(0);
    std::cerr << "consumer: Device::cuda(0) worked without the CUDA backend\n";
    return 1;
  } catch (const Error& e) {
    if (std::string(e.what()).find("not linked") == std::string::npos) {
      std::cerr << "consumer: unexpected error: " << e.what() << "\n";
      return 1;
    }
  }
#endif
  // the headers and the library are one version
  if (std::string(ember::version()) != EMBER_VERSION_STRING) {
    std::cerr << "consumer: library version " << ember::version() << ", headers " << EMBER_VERSION_STRING << "\n";
    return 1;
  }
  std::cout << "ember version " << ember::version() << "\ncuda devices: " << devices << "\nconsumer ok\n";
  return 0;
}
