// How adam_step's inputs are laid out (OpKind::adam_step, AdamAttrs in op.hpp), for every place
// that reads them: shape inference, the tensor API and the backends' kernels.
#pragma once

#include <cstddef>

#include "ember/core/op.hpp"

namespace ember {

// The host form: param, grad, exp_avg, exp_avg_sq of each of k parameters (4k inputs; the
// scalars in AdamAttrs). The device-scalar form (the learning rate and the step counts read on
// the device, torch's capturable=True): those 4k, then lr, then one step count per parameter
// (5k + 1 inputs); it is the form when AdamAttrs::step is 0 (which the host form refuses), or
// when there are 6 inputs (one parameter: the first callers' form, whatever `step`). Outputs:
// param, exp_avg, exp_avg_sq of each parameter, then (device-scalar form) each one's new step.
struct AdamInputs {
  bool device_scalars = false;                                // lr and step inputs (else the host form)
  size_t params = 0;                                          // k
  size_t lr() const { return 4 * params; }                    // (device-scalar form) the lr input
  size_t step(size_t q) const { return 4 * params + 1 + q; }  // (device-scalar form) parameter q's step
};

// The layout of an adam_step op with `inputs` inputs and attributes `a`.
inline AdamInputs adam_inputs(size_t inputs, const AdamAttrs& a) {
  if (inputs == 6 || a.step == 0) return {true, inputs >= 1 ? (inputs - 1) / 5 : 0};
  return {false, inputs / 4};
}

}  // namespace ember
