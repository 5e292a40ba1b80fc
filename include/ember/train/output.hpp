// What a model's train and validation steps hand to the Learner.
//
//   auto train_step = [](Model& m, const Batch& b) {
//     DynTensor logits = m.forward(b.images);
//     DynTensor loss = nn::cross_entropy(logits, b.targets);
//     return train::TrainStepResult{{loss, logits, b.targets}, loss.backward()};
//   };
//   auto valid_step = [](const Model& m, const Batch& b) {
//     DynTensor logits = m.forward(b.images);
//     return train::ClassificationOutput{nn::cross_entropy(logits, b.targets), logits, b.targets};
//   };
//
// `output` and `targets` may be left undefined (e.g. for a regression): only the loss is then
// measured. Binary classifiers may return logits [N] or [N, 1] (the positive class's logit).
#pragma once

#include "ember/tensor/autodiff.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::train {

struct ClassificationOutput {
  DynTensor loss;     // a one-element tensor: the batch's mean loss
  DynTensor output;   // logits [N, C] (or [N] / [N, 1] for a binary classifier)
  DynTensor targets;  // class indices [N] (integer dtype); negative ones are ignored by the metrics
};

struct TrainStepResult {
  ClassificationOutput out;
  Gradients grads;  // the backward of out.loss (or of any loss the step chose)
};

}  // namespace ember::train
