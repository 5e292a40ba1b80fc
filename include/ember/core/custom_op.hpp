// A user-defined op, as the IR carries it (OpKind::custom; CustomAttrs points at one of these).
// Users define ops through ember/tensor/custom_op.hpp; this is the layer-neutral half that the
// backends (kernels), autodiff (the backward) and inference read.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ember/core/backend.hpp"
#include "ember/core/op.hpp"

namespace ember {

// What a CPU kernel of a custom op sees: contiguous, dense buffers (inputs read-only), with
// their shapes and dtypes. Outputs are freshly allocated and must be written whole.
struct CustomCpuArgs {
  std::span<const void* const> inputs;  // one buffer per input, in the op's input order
  std::span<void* const> outputs;       // one buffer per output, in the order infer gave them
  // the inputs' shapes and dtypes (parallel to inputs)
  std::span<const TensorMeta> input_meta, output_meta;  // the outputs' shapes and dtypes (parallel to outputs)

  // Input i's buffer as T (unchecked: T must match input_meta[i].dtype).
  template <class T>
  const T* in(size_t i) const { return static_cast<const T*>(inputs[i]); }
  // Output i's buffer as T (unchecked: T must match output_meta[i].dtype).
  template <class T>
  T* out(size_t i) const { return static_cast<T*>(outputs[i]); }
};

// The definition of a custom op: its name, inference, kernels and backward. Shared (immutable)
// by every op that CustomAttrs points at it; copies of the pointer compare as the same op.
struct CustomOpImpl {
  std::string name;  // the op's name, used in error messages
  // Checks the inputs (throws Error naming the op on bad input) and gives the outputs.
  std::function<std::vector<TensorMeta>(std::span<const TensorMeta>)> infer;
  // The CPU kernel (none: the op is not supported on the CPU).
  std::function<void(const CustomCpuArgs&)> cpu;
  // The CUDA kernel: CUDA C++ source compiled with NVRTC, `extern "C" __global__` entry
  // `cuda_entry`, launched with one thread per element of output 0 (grid-stride loops are the
  // kernel's business) and the parameters (outputs..., inputs..., int64_t n), every buffer
  // contiguous. Empty: not supported on CUDA.
  std::string cuda_source, cuda_entry;  // the __global__ function's name in cuda_source
  // The CUDA kernel's key in the JIT cache, made once with the definition: the name and the
  // source's hash, so that a redefinition under the same name is a new kernel.
  std::string cuda_key;
  // The gradients of the inputs from the inputs, the outputs and the outputs' gradients (an
  // undefined PrimitivePtr where an output gets none), computed with ops on `be` (so that they
  // are recorded again for second-order gradients). An undefined result: no gradient. Empty
  // function: the op is not differentiable (backward through it throws).
  std::function<std::vector<PrimitivePtr>(Backend& be, const std::vector<PrimitivePtr>& inputs,
                                          const std::vector<PrimitivePtr>& outputs,
                                          const std::vector<PrimitivePtr>& grads)>
      backward;
};

}  // namespace ember
