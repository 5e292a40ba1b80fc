// A first look at ember: create tensors, run ops, read values back.
#include <ember/ember.hpp>
#include <iostream>

using namespace ember;

int main() {
  Device::cpu().seed(42);
  auto x = DynTensor::full({2, 3}, 1.5, DType::f32);
  std::cout << "x = " << x << "\n";
  return 0;
}
