// ember: one include for the whole user API.
//
//   #include <ember/ember.hpp>
//   using namespace ember;
//   auto x = Tensor<2>::random({64, 784}, Distribution::normal(0.f, 1.f));
#pragma once

#include "ember/backends/cuda.hpp"
#include "ember/core/device.hpp"
#include "ember/core/dtype.hpp"
#include "ember/core/error.hpp"
#include "ember/core/shape.hpp"
#include "ember/core/tensor_data.hpp"
#include "ember/tensor/autodiff.hpp"
#include "ember/tensor/dyn_tensor.hpp"
#include "ember/tensor/ops.hpp"
#include "ember/tensor/tensor.hpp"
