// Loss functions with torch.nn.functional semantics and defaults. Each is built from the public
// tensor ops (ops.hpp), so autodiff differentiates it like any other expression.
//
//   using namespace ember;
//   # Device dev = Device::cpu().autodiff();
//   # DynTensor logits = randn({4, 10}, DType::f32, dev).require_grad(), labels = DynTensor::zeros({4}, DType::i64, dev);
//   # DynTensor prediction = randn({4}, DType::f32, dev).require_grad(), target = randn({4}, DType::f32, dev);
//   DynTensor loss = nn::cross_entropy(logits, labels);                       // mean over the batch
//   loss = nn::cross_entropy(logits, labels, {.ignore_index = 0, .label_smoothing = 0.1});
//   loss = nn::mse_loss(prediction, target, nn::Reduction::sum);
//   Gradients g = loss.backward();
//   # run
//
// Class-index targets are i64 tensors; float targets of cross_entropy are class probabilities.
#pragma once

#include <optional>
#include <vector>

#include "ember/tensor/ops.hpp"

namespace ember::nn {

// How the per-element losses are combined (PyTorch's reduction): none keeps them, mean averages (see
// each loss for its divisor), sum adds them.
enum class Reduction { none, mean, sum };

// ---- classification ----
// The options of cross_entropy (torch.nn.functional.cross_entropy's keyword arguments).
struct CrossEntropyOptions {
  std::optional<DynTensor> weight{};  // [C], a rescaling weight per class
  int64_t ignore_index = -100;      // class-index targets equal to it contribute nothing
  double label_smoothing = 0;       // in [0, 1]
  Reduction reduction = Reduction::mean;  // mean: see cross_entropy
};
// logits [N, C] / [N, C, d...] / [C]; target: class indices (i64, [N] / [N, d...] / []) or class
// probabilities (floating, the shape of logits). With class indices, mean divides by the summed
// weight of the non-ignored targets; with probabilities, by the number of samples.
DynTensor cross_entropy(DynTensor logits, DynTensor target, const CrossEntropyOptions& o = {});

// Options of nll_loss (torch.nn.functional.nll_loss's arguments).
struct NllLossOptions {
  std::optional<DynTensor> weight;  // [C], a rescaling weight per class
  int64_t ignore_index = -100;      // targets equal to it contribute nothing
  Reduction reduction = Reduction::mean;  // mean divides by the summed weight of the non-ignored targets
};
// log_probs [N, C] / [N, C, d...] / [C], target i64 [N] / [N, d...] / [].
DynTensor nll_loss(DynTensor log_probs, DynTensor target, const NllLossOptions& o = {});

// probs in [0, 1]; the logs are clamped at -100 (as PyTorch), so the loss stays finite.
DynTensor binary_cross_entropy(DynTensor probs, DynTensor target, std::optional<DynTensor> weight = {},
                               Reduction reduction = Reduction::mean);
// The numerically stable form of binary_cross_entropy(sigmoid(logits), target); pos_weight
// broadcasts along the last (class) dim.
struct BceWithLogitsOptions {
  std::optional<DynTensor> weight;      // a rescaling weight per element; must broadcast to the logits
  std::optional<DynTensor> pos_weight;  // the positive targets' weight, e.g. [C]; must broadcast to the logits
  Reduction reduction = Reduction::mean;  // mean over all elements
};
// logits and target of one shape (target in [0, 1]); floating logits. Throws ember::Error on a shape
// mismatch or a weight that does not broadcast.
DynTensor binary_cross_entropy_with_logits(DynTensor logits, DynTensor target, const BceWithLogitsOptions& o = {});

// input [N, C], target i64 [N]: sum_{j != y} max(0, margin - x_y + x_j)^p * weight_y / C.
DynTensor multi_margin_loss(DynTensor input, DynTensor target, int p = 1, double margin = 1.0,
                            std::optional<DynTensor> weight = {}, Reduction reduction = Reduction::mean);
// input, target [N, C] (target in {0, 1}): mean over classes of the per-class logistic loss.
DynTensor multilabel_soft_margin_loss(DynTensor input, DynTensor target, std::optional<DynTensor> weight = {},
                                      Reduction reduction = Reduction::mean);
// log(1 + exp(-y x)), y in {1, -1}.
DynTensor soft_margin_loss(DynTensor input, DynTensor target, Reduction reduction = Reduction::mean);

// ---- regression ----
// (input - target)^2 (torch.nn.functional.mse_loss); input and target of one shape.
DynTensor mse_loss(DynTensor input, DynTensor target, Reduction reduction = Reduction::mean);
// |input - target|; input and target of one shape.
DynTensor l1_loss(DynTensor input, DynTensor target, Reduction reduction = Reduction::mean);
// 0.5 d^2 where |d| < delta, else delta * (|d| - 0.5 delta), d = input - target; delta must be positive.
DynTensor huber_loss(DynTensor input, DynTensor target, Reduction reduction = Reduction::mean, double delta = 1.0);
// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, d = input - target; beta 0 is l1_loss, beta < 0 throws.
DynTensor smooth_l1_loss(DynTensor input, DynTensor target, Reduction reduction = Reduction::mean, double beta = 1.0);
// Options of poisson_nll_loss (torch.nn.functional.poisson_nll_loss's arguments).
struct PoissonNllOptions {
  bool log_input = true;  // input is log(rate): exp(input) - target * input
  bool full = false;      // add the Stirling approximation of log(target!) (for target > 1)
  double eps = 1e-8;      // rate - target * log(rate + eps) when !log_input
  Reduction reduction = Reduction::mean;  // mean over all elements
};
// The negative log-likelihood of target under Poisson(rate), rate given by input (see the options);
// floating input and target of one shape.
DynTensor poisson_nll_loss(DynTensor input, DynTensor target, const PoissonNllOptions& o = {});
// 0.5 * (log(var) + (input - target)^2 / var) (+ 0.5 log(2 pi) when full); var is clamped at eps
// for the value only (its gradient passes through, as PyTorch). var has input's shape, or input's
// shape without its last dim, or with a last dim of 1 (one variance shared along that dim).
DynTensor gaussian_nll_loss(DynTensor input, DynTensor target, DynTensor var, bool full = false, double eps = 1e-6,
                            Reduction reduction = Reduction::mean);

// ---- distributions ----
// input holds log-probabilities; target probabilities (or log-probabilities when log_target).
// batchmean divides the sum by input's first dim: the mathematically correct KL mean.
enum class KlReduction { none, mean, sum, batchmean };
// torch.nn.functional.kl_div: target * (log(target) - input) elementwise (0 where target is 0; with
// log_target, exp(target) * (target - input)), then reduced; input and target of one shape. mean
// divides by the element count (PyTorch's default, not the KL mean: use batchmean).
DynTensor kl_div(DynTensor input, DynTensor target, KlReduction reduction = KlReduction::mean, bool log_target = false);

// ---- embeddings and ranking (y in {1, -1}) ----
// x1, x2 [N, D] (or [D]); y [N]: 1 - cos for y = 1, max(0, cos - margin) for y = -1.
DynTensor cosine_embedding_loss(DynTensor x1, DynTensor x2, DynTensor y, double margin = 0,
                                Reduction reduction = Reduction::mean);
// max(0, -y (x1 - x2) + margin).
DynTensor margin_ranking_loss(DynTensor x1, DynTensor x2, DynTensor y, double margin = 0,
                              Reduction reduction = Reduction::mean);
// x for y = 1, max(0, margin - x) for y = -1.
DynTensor hinge_embedding_loss(DynTensor input, DynTensor y, double margin = 1.0,
                               Reduction reduction = Reduction::mean);
// Options of triplet_margin_loss (torch.nn.functional.triplet_margin_loss's arguments).
struct TripletMarginOptions {
  double margin = 1.0;  // the required gap between the distances; must be positive
  double p = 2.0;  // norm of the pairwise distance ||a - b + eps||_p
  double eps = 1e-6;  // added to the difference before the norm
  bool swap = false;  // use min(d(a, n), d(p, n)) as the negative distance
  Reduction reduction = Reduction::mean;  // mean over the triplets
};
// max(0, d(anchor, positive) - d(anchor, negative) + margin) per triplet; the three inputs share one
// shape, [N, D] or [D], floating.
DynTensor triplet_margin_loss(DynTensor anchor, DynTensor positive, DynTensor negative,
                              const TripletMarginOptions& o = {});

// ---- sequences ----
// The options of ctc_loss (torch.nn.functional.ctc_loss's keyword arguments).
struct CtcLossOptions {
  int64_t blank = 0;  // the blank label's class index, in [0, C)
  Reduction reduction = Reduction::mean;  // mean: each loss divided by its target length, then averaged
  bool zero_infinity = false;             // infeasible alignments give 0 (and no gradient), not inf
};
// Connectionist temporal classification. log_probs [T, N, C] (or [T, C]) holds log-softmax
// outputs; targets are padded [N, S] or the N target sequences concatenated (1-d); lengths are
// i64 [N]. The forward (alpha) recursion runs in log space over T, vectorised over the batch and
// the extended label positions, so the loss is differentiable by autodiff. Like PyTorch's, it
// treats log_probs as normalised: pass log_softmax output.
DynTensor ctc_loss(DynTensor log_probs, DynTensor targets, DynTensor input_lengths, DynTensor target_lengths,
                   const CtcLossOptions& o = {});
// The same with the lengths given as vectors of N values.
DynTensor ctc_loss(DynTensor log_probs, DynTensor targets, const std::vector<int64_t>& input_lengths,
                   const std::vector<int64_t>& target_lengths, const CtcLossOptions& o = {});

}  // namespace ember::nn
