// What a model's train and validation steps hand to the Learner: a step output (one of the three
// below, or a struct of your own) and, for training, the backward's gradients.
//
//   auto train_step = [](Model& m, const Batch& b) {              // classification
//     DynTensor logits = m.forward(b.images);
//     DynTensor loss = nn::cross_entropy(logits, b.targets);
//     return train::TrainStepResult{{loss, logits, b.targets}, loss.backward()};
//   };
//   auto valid_step = [](const Model& m, const Batch& b) {
//     DynTensor logits = m.forward(b.images);
//     return train::ClassificationOutput{nn::cross_entropy(logits, b.targets), logits, b.targets};
//   };
//   auto regression_step = [](Model& m, const Batch& b) {         // float targets
//     DynTensor pred = m.forward(b.x);
//     DynTensor loss = nn::mse_loss(pred, b.y);
//     return train::TrainResult<train::RegressionOutput>{{loss, pred, b.y}, loss.backward()};
//   };
//
// - ClassificationOutput: logits [N, C] (or [N] / [N, 1] for a binary classifier) and class
//   indices [N]. `output` and `targets` may be left undefined: only the loss is then measured.
// - RegressionOutput: predictions and float targets of the same shape ([N] or [N, K]).
// - MultiLabelOutput: logits [N, L] and 0/1 targets [N, L] (any dtype); metrics threshold the
//   sigmoid of the logits.
// - Your own struct: anything with a `to_host(const T&) -> train::BatchOutputs` found by
//   argument-dependent lookup (the StepOutput concept). Fill `loss`, `batch_size` and whichever
//   fields your metrics read (`extra` holds named arrays for metrics of your own); give the
//   struct a `static std::vector<train::MetricPtr> default_metrics()` to choose its defaults.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/tensor/autodiff.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::train {

// A classification step's output (the loss of e.g. nn::cross_entropy, the logits and the class targets).
struct ClassificationOutput {
  DynTensor loss;     // a one-element tensor: the batch's mean loss
  DynTensor output;   // logits [N, C] (or [N] / [N, 1] for a binary classifier)
  DynTensor targets;  // class indices [N] (integer dtype); negative ones are ignored by the metrics
};

// A regression step's output; default metrics RMSE, MAE and R².
struct RegressionOutput {
  DynTensor loss;         // a one-element tensor: the batch's mean loss
  DynTensor predictions;  // [N] or [N, K]
  DynTensor targets;      // the same number of elements, any float dtype
};

// A multi-label step's output: per-label logits and 0/1 targets; default metrics label accuracy and macro F1.
struct MultiLabelOutput {
  DynTensor loss;     // a one-element tensor: the batch's mean loss
  DynTensor logits;   // [N, L]
  DynTensor targets;  // [N, L] of 0 and 1 (any dtype)
};

// A train step's result: its output and the gradients of the loss it backpropagated.
template <class Output>
struct TrainResult {
  Output out;       // what the step measured (loss, outputs, targets)
  Gradients grads;  // the backward of out.loss (or of any loss the step chose)
};
// The result type of a classification train step.
using TrainStepResult = TrainResult<ClassificationOutput>;

// What a BatchOutputs holds, and so which metrics read it; custom is for to_host overloads of your own.
enum class OutputKind { loss_only, classification, regression, multilabel, custom };

// One batch of step outputs, read back to the host: what metrics consume.
struct BatchOutputs {
  double loss = std::numeric_limits<double>::quiet_NaN();  // the batch's mean loss
  int64_t batch_size = 0;                                  // samples (rows of the outputs; 1 for a loss-only output)
  OutputKind kind = OutputKind::loss_only;                 // which fields are filled
  // classification
  int64_t num_classes = 0;       // columns of logits (0 unless classification)
  std::vector<float> logits;     // [batch_size, num_classes] row-major
  std::vector<int64_t> targets;  // [batch_size] class indices; negative ones are ignored
  // regression: predictions and targets [batch_size, num_outputs]; multi-label: logits and
  // 0/1 targets [batch_size, num_labels]
  int64_t num_outputs = 0;
  int64_t num_labels = 0;           // labels per sample (0 unless multi-label)
  std::vector<double> predictions;  // regression predictions, or multi-label logits
  std::vector<double> values;       // regression targets, or multi-label 0/1 targets
  // A custom output's own arrays, by name.
  std::map<std::string, std::vector<double>> extra;
};

// Read a step output back to the host (loss.item(), outputs as f32/f64, targets).
BatchOutputs to_host(const ClassificationOutput& out);
// Regression outputs read back as doubles. Throws ember::Error unless predictions are [N] or [N, K] with as
// many target elements.
BatchOutputs to_host(const RegressionOutput& out);
// Multi-label outputs read back as doubles. Throws ember::Error unless logits are [N, L] with as many
// target elements.
BatchOutputs to_host(const MultiLabelOutput& out);

// A type a step may return: to_host(out) yields the BatchOutputs metrics consume.
template <class T>
concept StepOutput = requires(const T& out) {
  { to_host(out) } -> std::same_as<BatchOutputs>;
};

}  // namespace ember::train
