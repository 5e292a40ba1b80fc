// Step outputs read back to the host (see include/ember/train/output.hpp).
#include "ember/train/output.hpp"

#include <cmath>

#include "ember/core/error.hpp"

namespace ember::train {
namespace {

double loss_of(const DynTensor& loss) {
  EMBER_CHECK(loss.defined(), "Learner: the step returned no loss");
  EMBER_CHECK(loss.numel() == 1, "Learner: the step's loss must have one element, got shape ", loss.shape());
  return loss.detach().item();
}

std::vector<double> as_f64(const DynTensor& t) { return t.detach().cast(DType::f64).to_vector<double>(); }

}  // namespace

BatchOutputs to_host(const ClassificationOutput& out) {
  BatchOutputs b;
  b.loss = loss_of(out.loss);
  b.batch_size = 1;
  if (!out.output.defined() || !out.targets.defined()) return b;
  DynTensor logits = out.output.detach();
  EMBER_CHECK(logits.rank() == 1 || logits.rank() == 2,
              "Learner: the step's output must be logits [N, C], [N, 1] or [N], got ", logits.shape());
  int64_t n = logits.size(0);
  int64_t c = logits.rank() == 2 ? logits.size(1) : 1;
  EMBER_CHECK(out.targets.numel() == n, "Learner: ", n, " output rows but targets of shape ", out.targets.shape());
  if (is_float(out.targets.dtype())) {
    // Float targets are class indices only when they are whole numbers in range; anything else is
    // a regression that should say so.
    for (double t : as_f64(out.targets))
      EMBER_CHECK(t == std::floor(t) && t < double(c == 1 ? 2 : c), "Learner: a ClassificationOutput with ", c,
                  " logit column", c == 1 ? "" : "s", " got the float target ", t,
                  "; for a regression return train::RegressionOutput{loss, "
                  "predictions, targets} (train::TrainResult<train::RegressionOutput> from a train step)");
  }
  b.kind = OutputKind::classification;
  b.batch_size = n;
  b.num_classes = c;
  b.logits = logits.cast(DType::f32).to_vector<float>();
  b.targets = out.targets.detach().cast(DType::i64).to_vector<int64_t>();
  return b;
}

BatchOutputs to_host(const RegressionOutput& out) {
  BatchOutputs b;
  b.loss = loss_of(out.loss);
  b.batch_size = 1;
  if (!out.predictions.defined() || !out.targets.defined()) return b;
  const DynTensor& p = out.predictions;
  EMBER_CHECK(p.rank() == 1 || p.rank() == 2, "Learner: regression predictions must be [N] or [N, K], got ", p.shape());
  EMBER_CHECK(out.targets.numel() == p.numel(), "Learner: regression predictions of shape ", p.shape(),
              " but targets of shape ", out.targets.shape());
  b.kind = OutputKind::regression;
  b.batch_size = p.size(0);
  b.num_outputs = p.rank() == 2 ? p.size(1) : 1;
  b.predictions = as_f64(p);
  b.values = as_f64(out.targets);
  return b;
}

BatchOutputs to_host(const MultiLabelOutput& out) {
  BatchOutputs b;
  b.loss = loss_of(out.loss);
  b.batch_size = 1;
  if (!out.logits.defined() || !out.targets.defined()) return b;
  const DynTensor& l = out.logits;
  EMBER_CHECK(l.rank() == 2, "Learner: multi-label logits must be [N, L], got ", l.shape());
  EMBER_CHECK(out.targets.numel() == l.numel(), "Learner: multi-label logits of shape ", l.shape(),
              " but targets of shape ", out.targets.shape());
  b.kind = OutputKind::multilabel;
  b.batch_size = l.size(0);
  b.num_labels = l.size(1);
  b.predictions = as_f64(l);
  b.values = as_f64(out.targets);
  return b;
}

}  // namespace ember::train
