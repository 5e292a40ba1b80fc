// ember: one include for the whole user API.
//
//   #include <ember/ember.hpp>
//   using namespace ember;
//   Device dev = Device::cpu().autodiff();              // or Device::cuda(0).autodiff()
//   auto x = Tensor<2>::randn({64, 784}, dev);          // Tensor<2>::normal({64, 784}, mean, std, dev)
//   auto w = Tensor<2>::zeros({784, 10}, dev).require_grad();
//   auto loss = gelu(x.matmul(w)).mean();
//   Gradients grads = loss.backward();
//   Tensor<2> dw = *w.grad(grads);
//   std::cout << dw << "\n";
//   # run
// (tests/docs compiles and runs this example, as every example marked `# run`; docs/pytorch.md is
// the PyTorch -> ember cheat sheet.)
#pragma once

#include "ember/backends/cuda.hpp"
#include "ember/core/device.hpp"
#include "ember/core/dtype.hpp"
#include "ember/core/error.hpp"
#include "ember/core/shape.hpp"
#include "ember/core/tensor_data.hpp"
#include "ember/decorators/router.hpp"
#include "ember/quant.hpp"
#include "ember/tensor/autodiff.hpp"
#include "ember/tensor/custom_op.hpp"
#include "ember/tensor/dyn_tensor.hpp"
#include "ember/tensor/ops.hpp"
#include "ember/tensor/quantized_ops.hpp"
#include "ember/tensor/tensor.hpp"
#include "ember/version.hpp"
