// User-defined ops: a kernel of your own (CPU, CUDA or both) that runs like a built-in op on
// any device stack, with a backward rule written with tensor ops. PyTorch's
// torch.library.custom_op + register_autograd, for C++.
//
//   #include <cmath>
//   # run
//   # DynTensor x = DynTensor::normal({4, 8});
//   CustomOp swish_op({
//       .name = "my::swish",
//       .infer = [](std::span<const TensorMeta> in) {          // check inputs, give outputs
//         EMBER_CHECK(in.size() == 1 && in[0].dtype == DType::f32, "my::swish: one f32 input");
//         return std::vector<TensorMeta>{in[0]};
//       },
//       .cpu = [](const CustomCpuArgs& a) {                     // contiguous buffers
//         const float* x = a.in<float>(0);
//         float* y = a.out<float>(0);
//         for (int64_t i = 0; i < a.output_meta[0].shape.numel(); ++i) y[i] = x[i] / (1 + std::exp(-x[i]));
//       },
//       .cuda_source = R"(extern "C" __global__ void swish(float* y, const float* x, long long n) {
//         for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
//           y[i] = x[i] / (1.f + expf(-x[i]));
//       })",
//       .cuda_entry = "swish",
//       .backward = [](const auto& in, const auto& out, const auto& g) {   // tensor ops
//         DynTensor s = sigmoid(in[0]);
//         return std::vector<DynTensor>{g[0] * (s + out[0] * (1 - s))};
//       },
//   });
//   DynTensor y = swish_op(x);                                    // cpu, cuda, .autodiff(), .fusion()
//
// How it runs:
// - Inputs reach a kernel contiguous (views are copied first); outputs are new buffers that the
//   kernel must write whole. `infer` runs when the op is built, on every device, and its errors
//   (ember::Error) reach the caller before any kernel runs.
// - CUDA: the source is compiled once by NVRTC (and kept in the kernel cache with ember's own,
//   keyed by the name and the source), then launched with one thread per element of output 0,
//   256 per block, its parameters being the outputs, then the inputs, as device pointers, then
//   the element count of output 0 as a 64-bit integer. A grid-stride loop, as above, is safe
//   for any count.
// - A device whose kernel the definition lacks fails with "<name>: not supported on <device>",
//   and Backend::supports() says so in advance.
// - Autodiff: `backward` gets the inputs, the outputs and the outputs' gradients (undefined
//   where an output got none) and returns one gradient per input (an undefined DynTensor for
//   none). It runs with differentiable ops when the backward is recorded (create_graph), so
//   second-order gradients work when it is written with tensor ops. No backward: the op is not
//   differentiable, and a backward through it throws naming the op.
// - Fusion treats the op as opaque: the queue before it is flushed and the op runs as written.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ember/core/custom_op.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

// A user-defined op made from a Def (see above), called like a built-in op; copies share the definition.
class CustomOp {
 public:
  // A backward rule: from the inputs, the outputs and the outputs' gradients, one gradient per input
  // (an undefined DynTensor for none).
  using Backward = std::function<std::vector<DynTensor>(
      const std::vector<DynTensor>& inputs, const std::vector<DynTensor>& outputs, const std::vector<DynTensor>& grads)>;
  // What defines an op: `name`, `infer` and a kernel (`cpu`, or `cuda_source` with `cuda_entry`) are required.
  struct Def {
    // (every field has a default, so a definition names only what it has: {.name = ..., .cpu = ...})
    std::string name{};  // in messages and in the kernel cache's keys; "namespace::op" by convention
    // The outputs' shapes and dtypes from the inputs'; throws ember::Error for inputs the op does not take.
    std::function<std::vector<TensorMeta>(std::span<const TensorMeta>)> infer{};
    std::function<void(const CustomCpuArgs&)> cpu{};  // the CPU kernel, on contiguous buffers
    std::string cuda_source{};  // CUDA C++ source, compiled by NVRTC
    std::string cuda_entry{};  // the name of cuda_source's kernel
    Backward backward{};  // none: the op is not differentiable
  };

  // Makes the op of `def`; throws ember::Error when the name, infer or every kernel is missing, or when only
  // one of cuda_source and cuda_entry is given.
  explicit CustomOp(Def def);

  // Every output. The inputs must share one device.
  std::vector<DynTensor> run(std::vector<DynTensor> inputs) const;
  // Output 0.
  template <class... T>
  DynTensor operator()(T&&... inputs) const {
    return std::move(run(std::vector<DynTensor>{DynTensor(std::forward<T>(inputs))...})[0]);
  }

  const std::string& name() const;  // the definition's name
  // The IR's definition (CustomAttrs{op.impl()} builds the op with make_op).
  const std::shared_ptr<const CustomOpImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<const CustomOpImpl> impl_;
};

}  // namespace ember
