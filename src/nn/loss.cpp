#include "ember/nn/loss.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "ember/tensor/op_hook.hpp"

namespace ember::nn {
namespace {

// Losses compute in f32 under autocast (PyTorch's autocast float32 list): each loss passes its
// floating inputs through the op-input hook as a log_softmax's input would be (an op of that
// list), which upcasts f16/bf16 there (and changes nothing without a hook). The fused
// cross-entropy is the exception: it computes in f32 from f16/bf16 logits itself.
template <class... T>
void loss_inputs(T&... xs) {
  ((xs = hook_operand(OpKind::log_softmax, std::move(xs))), ...);
}

DynTensor reduce(DynTensor loss, Reduction r) {
  switch (r) {
    case Reduction::none:
      return loss;
    case Reduction::sum:
      return sum(std::move(loss));
    case Reduction::mean:
      return mean(std::move(loss));
  }
  return loss;
}

// Element-wise losses take input and target of one shape. Broadcasting them would silently
// compute something else (an [N, 1] prediction against an [N] target gives an [N, N] loss), so
// unlike PyTorch, which warns and broadcasts for some losses, a difference is refused.
void check_same_shape(const DynTensor& a, const DynTensor& b, std::string_view op, std::string_view a_name = "input",
                      std::string_view b_name = "target") {
  EMBER_CHECK(a.shape() == b.shape(), op, ": ", a_name, " ", a.shape(), " and ", b_name, " ", b.shape(),
              " must have one shape (a loss does not broadcast them; reshape one of them)");
}

// An optional element weight broadcasts to the input's shape and may not enlarge it.
void check_weight_fits(const std::optional<DynTensor>& w, const DynTensor& input, std::string_view op,
                       std::string_view name = "weight") {
  if (!w) return;
  bool fits = w->rank() <= input.rank();
  for (int i = 1; fits && i <= w->rank(); ++i) fits = w->size(-i) == 1 || w->size(-i) == input.size(-i);
  EMBER_CHECK(fits, op, ": ", name, " ", w->shape(), " does not broadcast to input ", input.shape());
}

void check_float(const DynTensor& x, std::string_view op, std::string_view what) {
  EMBER_CHECK(is_float(x.dtype()), op, ": ", what, " must be floating, got ", x.dtype());
}

// A per-class vector [C] shaped to broadcast along dim 1 of an input of `rank` dims.
DynTensor class_weight(const DynTensor& w, int64_t classes, int rank, std::string_view op) {
  EMBER_CHECK(w.rank() == 1 && w.size(0) == classes, op, ": weight must be [", classes, "], got ", w.shape());
  Sizes s(static_cast<size_t>(rank), 1);
  s[1] = classes;
  return reshape(w, std::move(s));
}

// Checks that class-index targets lie in [0, classes).
void check_classes(const DynTensor& target, int64_t classes, std::string_view op,
                   std::optional<int64_t> ignore_index = std::nullopt) {
  EMBER_CHECK(target.dtype() == DType::i64, op, ": class-index targets must be i64, got ", target.dtype());
  if (target.numel() == 0) return;
  // On a GPU this check would stop the host until the device caught up (a read), every step.
  // There the gather that uses the targets checks them instead, asynchronously (like PyTorch's
  // device-side asserts): a bad target raises an Error at the next read or sync.
  if (target.device().inner().name().rfind("cuda", 0) == 0) return;
  const bool bad = any(bool_or(lower(target, Scalar(int64_t{0})), greater_equal(target, Scalar(classes)))).item() != 0;
  EMBER_CHECK(!bad, op, ": a target is outside [0, ", classes, ")",
              ignore_index ? " and is not ignore_index " + std::to_string(*ignore_index) : std::string());
}

// Class-index targets: the mask of ignored entries and the targets with those set to 0.
std::pair<DynTensor, DynTensor> class_targets(const DynTensor& target, int64_t classes, int64_t ignore_index,
                                              std::string_view op) {
  EMBER_CHECK(target.dtype() == DType::i64, op, ": class-index targets must be i64, got ", target.dtype());
  DynTensor ignored = equal(target, Scalar(ignore_index));
  DynTensor safe = mask_fill(target, ignored, Scalar(int64_t{0}));
  check_classes(safe, classes, op, ignore_index);
  return {std::move(ignored), std::move(safe)};
}

// [C] inputs with [] targets are one sample: add the batch dim (and drop it again from the result).
struct Unbatched {
  bool active = false;
  DynTensor restore(DynTensor loss, Reduction r) const {
    return active && r == Reduction::none ? squeeze(std::move(loss), 0) : loss;
  }
};

// nll_loss, with errors naming `op` (cross_entropy calls it too).
DynTensor nll(DynTensor log_probs, DynTensor target, const NllLossOptions& o, std::string_view op) {
  check_float(log_probs, op, "input");
  Unbatched unbatched;
  if (log_probs.rank() == 1) {
    unbatched.active = true;
    log_probs = unsqueeze(std::move(log_probs), 0);
    target = unsqueeze(std::move(target), 0);
  }
  EMBER_CHECK(log_probs.rank() >= 2, op, ": input must be [N, C, d...] or [C], got ", log_probs.shape());
  Sizes expect = log_probs.shape().dims();
  expect.erase(expect.begin() + 1);
  EMBER_CHECK(target.shape().dims() == expect, op, ": input ", log_probs.shape(), " needs a target of shape ",
              Shape(expect), ", got ", target.shape());
  const int64_t classes = log_probs.size(1);
  auto [ignored, safe] = class_targets(target, classes, o.ignore_index, op);
  DynTensor picked = squeeze(gather(log_probs, 1, unsqueeze(safe, 1)), 1);
  DynTensor w;
  if (o.weight) {
    EMBER_CHECK(o.weight->rank() == 1 && o.weight->size(0) == classes, op, ": weight must be [", classes, "], got ",
                o.weight->shape());
    w = reshape(index_select(cast(*o.weight, log_probs.dtype()), 0, flatten(safe)), target.shape().dims());
    w = mask_fill(w, ignored, 0.0);
  } else {
    w = cast(bool_not(ignored), log_probs.dtype());
  }
  DynTensor loss = mask_fill(-picked * w, ignored, 0.0);
  if (o.reduction == Reduction::mean) return sum(std::move(loss)) / sum(std::move(w));
  return unbatched.restore(reduce(std::move(loss), o.reduction), o.reduction);
}

}  // namespace

// ---- classification ----
DynTensor nll_loss(DynTensor log_probs, DynTensor target, const NllLossOptions& o) {
  loss_inputs(log_probs);
  return nll(std::move(log_probs), std::move(target), o, "nll_loss");
}

DynTensor cross_entropy(DynTensor logits, DynTensor target, const CrossEntropyOptions& o) {
  // The fused op (class-index targets of [N, C] logits, no class weights or smoothing: one op,
  // and one for its backward, instead of log_softmax, nll's gather and masks, and their
  // backwards) reads f16/bf16 logits as they are and computes in f32, so autocast leaves them
  // alone (no f32 copy of a [tokens, vocab] matrix) and its f32 loss is the result; without
  // autocast the loss comes back in the logits' dtype, as PyTorch's does.
  if (target.dtype() == DType::i64 && o.label_smoothing == 0 && !o.weight && logits.rank() == 2 &&
      is_float(logits.dtype()) && target.shape() == Shape{logits.size(0)}) {
    const DType dt = logits.dtype();
    auto [loss, valid] = cross_entropy_rows(std::move(logits), std::move(target), o.ignore_index);
    DynTensor r = o.reduction == Reduction::mean ? sum(std::move(loss)) / sum(std::move(valid))
                                                 : reduce(std::move(loss), o.reduction);
    return op_input_hook() ? r : cast(std::move(r), dt);
  }
  loss_inputs(logits, target);
  check_float(logits, "cross_entropy", "logits");
  EMBER_CHECK(o.label_smoothing >= 0 && o.label_smoothing <= 1,
              "cross_entropy: label_smoothing must be in [0, 1], got ", o.label_smoothing);
  Unbatched unbatched;
  if (logits.rank() == 1) {
    unbatched.active = true;
    logits = unsqueeze(std::move(logits), 0);
    target = unsqueeze(std::move(target), 0);
  }
  EMBER_CHECK(logits.rank() >= 2, "cross_entropy: logits must be [N, C, d...] or [C], got ", logits.shape());
  const int64_t classes = logits.size(1);
  const double eps = o.label_smoothing;
  std::optional<DynTensor> w_b;
  if (o.weight) w_b = class_weight(cast(*o.weight, logits.dtype()), classes, logits.rank(), "cross_entropy");
  DynTensor lp = log_softmax(std::move(logits), 1);

  if (is_float(target.dtype())) {  // class probabilities
    EMBER_CHECK(target.shape() == lp.shape(), "cross_entropy: probability targets ", target.shape(),
                " must have the logits' shape ", lp.shape());
    if (eps > 0) target = target * (1 - eps) + eps / static_cast<double>(classes);
    DynTensor terms = lp * target;
    if (w_b) terms = terms * *w_b;
    DynTensor loss = -sum(std::move(terms), {1});
    if (o.reduction == Reduction::mean) {
      const int64_t samples = lp.numel() / std::max<int64_t>(classes, 1);
      return sum(std::move(loss)) / static_cast<double>(samples);
    }
    return unbatched.restore(reduce(std::move(loss), o.reduction), o.reduction);
  }

  DynTensor nll = nn::nll(lp, target, {o.weight, o.ignore_index, o.reduction}, "cross_entropy");
  if (eps == 0) return unbatched.restore(std::move(nll), o.reduction);
  // Smoothing: the uniform part, -sum_c w_c lp_c / C per sample, normalised like nll_loss.
  auto [ignored, safe] = class_targets(target, classes, o.ignore_index, "cross_entropy");
  DynTensor smooth = -sum(w_b ? lp * *w_b : lp, {1});
  smooth = mask_fill(std::move(smooth), ignored, 0.0);
  DynTensor uniform;
  if (o.reduction == Reduction::mean) {
    DynTensor denom;
    if (o.weight) {
      denom = reshape(index_select(cast(*o.weight, lp.dtype()), 0, flatten(safe)), target.shape().dims());
      denom = sum(mask_fill(std::move(denom), ignored, 0.0));
    } else {
      denom = sum(cast(bool_not(ignored), lp.dtype()));
    }
    uniform = sum(std::move(smooth)) / std::move(denom);
  } else {
    uniform = reduce(std::move(smooth), o.reduction);
  }
  DynTensor loss = nll * (1 - eps) + uniform * (eps / static_cast<double>(classes));
  return unbatched.restore(std::move(loss), o.reduction);
}

DynTensor binary_cross_entropy(DynTensor probs, DynTensor target, std::optional<DynTensor> weight,
                               Reduction reduction) {
  loss_inputs(probs, target);
  check_float(probs, "binary_cross_entropy", "input");
  check_same_shape(probs, target, "binary_cross_entropy");
  check_weight_fits(weight, probs, "binary_cross_entropy");
  // log clamped at -100; where the probability is 0, log sees 1 instead, so that the gradient
  // there is 0 rather than 0 / 0.
  auto clamped_log = [](const DynTensor& p) {
    DynTensor zero = lower_equal(p, 0.0);
    return mask_fill(clamp_min(log(mask_fill(p, zero, 1.0)), -100.0), zero, -100.0);
  };
  DynTensor log_p = clamped_log(probs);
  DynTensor log_q = clamped_log(1.0 - probs);
  DynTensor loss = -(target * log_p + (1.0 - target) * log_q);
  if (weight) loss = loss * *weight;
  return reduce(std::move(loss), reduction);
}

DynTensor binary_cross_entropy_with_logits(DynTensor logits, DynTensor target, const BceWithLogitsOptions& o) {
  loss_inputs(logits, target);
  check_float(logits, "binary_cross_entropy_with_logits", "input");
  check_same_shape(logits, target, "binary_cross_entropy_with_logits");
  check_weight_fits(o.weight, logits, "binary_cross_entropy_with_logits");
  check_weight_fits(o.pos_weight, logits, "binary_cross_entropy_with_logits", "pos_weight");
  // (1 - t) x + lw * softplus(-x), with softplus(-x) = -log_sigmoid(x) and lw = 1 + (pos_weight - 1) t.
  DynTensor softplus_neg = -log_sigmoid(logits);
  if (o.pos_weight) softplus_neg = softplus_neg * ((*o.pos_weight - 1.0) * target + 1.0);
  DynTensor loss = (1.0 - target) * logits + softplus_neg;
  if (o.weight) loss = loss * *o.weight;
  return reduce(std::move(loss), o.reduction);
}

DynTensor multi_margin_loss(DynTensor input, DynTensor target, int p, double margin, std::optional<DynTensor> weight,
                            Reduction reduction) {
  loss_inputs(input);
  check_float(input, "multi_margin_loss", "input");
  EMBER_CHECK(p == 1 || p == 2, "multi_margin_loss: p must be 1 or 2, got ", p);
  Unbatched unbatched;
  if (input.rank() == 1) {
    unbatched.active = true;
    input = unsqueeze(std::move(input), 0);
    target = reshape(std::move(target), {1});
  }
  EMBER_CHECK(input.rank() == 2 && target.rank() == 1 && target.size(0) == input.size(0),
              "multi_margin_loss: input must be [N, C] with target [N], got ", input.shape(), " and ", target.shape());
  const int64_t classes = input.size(1);
  check_classes(target, classes, "multi_margin_loss");
  DynTensor col = unsqueeze(target, 1);
  DynTensor z = clamp_min(input - gather(input, 1, col) + margin, 0.0);
  if (p == 2) z = square(z);
  if (weight) {
    EMBER_CHECK(weight->rank() == 1 && weight->size(0) == classes, "multi_margin_loss: weight must be [", classes,
                "], got ", weight->shape());
    z = z * unsqueeze(index_select(*weight, 0, target), 1);
  }
  DynTensor is_target = equal(DynTensor::arange(0, classes, 1, DType::i64, input.device()), col);
  DynTensor loss = sum(mask_fill(std::move(z), is_target, 0.0), {1}) / static_cast<double>(classes);
  return unbatched.restore(reduce(std::move(loss), reduction), reduction);
}

DynTensor multilabel_soft_margin_loss(DynTensor input, DynTensor target, std::optional<DynTensor> weight,
                                      Reduction reduction) {
  loss_inputs(input, target);
  check_float(input, "multilabel_soft_margin_loss", "input");
  check_same_shape(input, target, "multilabel_soft_margin_loss");
  check_weight_fits(weight, input, "multilabel_soft_margin_loss");
  DynTensor loss = -(target * log_sigmoid(input) + (1.0 - target) * log_sigmoid(-input));
  if (weight) loss = loss * *weight;
  const int class_dim = input.rank() - 1;
  loss = sum(std::move(loss), {class_dim}) / static_cast<double>(input.size(class_dim));
  return reduce(std::move(loss), reduction);
}

DynTensor soft_margin_loss(DynTensor input, DynTensor target, Reduction reduction) {
  loss_inputs(input, target);
  check_float(input, "soft_margin_loss", "input");
  check_same_shape(input, target, "soft_margin_loss");
  return reduce(softplus(-(input * target)), reduction);
}

// ---- regression ----
DynTensor mse_loss(DynTensor input, DynTensor target, Reduction reduction) {
  loss_inputs(input, target);
  check_same_shape(input, target, "mse_loss");
  return reduce(square(input - target), reduction);
}

DynTensor l1_loss(DynTensor input, DynTensor target, Reduction reduction) {
  loss_inputs(input, target);
  check_same_shape(input, target, "l1_loss");
  return reduce(abs(input - target), reduction);
}

DynTensor huber_loss(DynTensor input, DynTensor target, Reduction reduction, double delta) {
  loss_inputs(input, target);
  EMBER_CHECK(delta > 0, "huber_loss: delta must be positive, got ", delta);
  check_same_shape(input, target, "huber_loss");
  DynTensor d = input - target;
  DynTensor a = abs(d);
  DynTensor loss = where(lower(a, delta), square(d) * 0.5, (a - 0.5 * delta) * delta);
  return reduce(std::move(loss), reduction);
}

DynTensor smooth_l1_loss(DynTensor input, DynTensor target, Reduction reduction, double beta) {
  loss_inputs(input, target);
  EMBER_CHECK(beta >= 0, "smooth_l1_loss: beta must be >= 0, got ", beta);
  check_same_shape(input, target, "smooth_l1_loss");
  if (beta == 0) return l1_loss(std::move(input), std::move(target), reduction);
  DynTensor d = input - target;
  DynTensor a = abs(d);
  DynTensor loss = where(lower(a, beta), square(d) * (0.5 / beta), a - 0.5 * beta);
  return reduce(std::move(loss), reduction);
}

DynTensor poisson_nll_loss(DynTensor input, DynTensor target, const PoissonNllOptions& o) {
  loss_inputs(input, target);
  check_float(input, "poisson_nll_loss", "input");
  check_same_shape(input, target, "poisson_nll_loss");
  DynTensor loss = o.log_input ? exp(input) - target * input : input - target * log(input + o.eps);
  if (o.full) {
    // Stirling's log(t!) ~ t log t - t + log(2 pi t) / 2, only where t > 1 (t <= 1 gives 0; the
    // masked entries are evaluated at t = 2 so that no log(0) reaches the graph).
    DynTensor small = lower_equal(target, 1.0);
    DynTensor t = mask_fill(cast(target, input.dtype()), small, 2.0);
    DynTensor stirling = t * log(t) - t + log(t * (2 * std::numbers::pi)) * 0.5;
    loss = loss + mask_fill(std::move(stirling), small, 0.0);
  }
  return reduce(std::move(loss), o.reduction);
}

DynTensor gaussian_nll_loss(DynTensor input, DynTensor target, DynTensor var, bool full, double eps,
                            Reduction reduction) {
  loss_inputs(input, target, var);
  check_float(input, "gaussian_nll_loss", "input");
  // PyTorch's documented target: input's shape, or input's shape with one dim of 1.
  if (target.shape() != input.shape()) {
    int differ = 0;
    if (target.rank() == input.rank())
      for (int i = 0; i < input.rank(); ++i)
        differ += target.size(i) != input.size(i) ? (target.size(i) == 1 ? 1 : 2) : 0;
    EMBER_CHECK(target.rank() == input.rank() && differ == 1, "gaussian_nll_loss: input ", input.shape(),
                " and target ", target.shape(), " must have one shape, or target one dim of 1 where input has more");
  }
  if (var.shape() != input.shape()) {
    Sizes lead(input.shape().begin(), input.shape().end() - (input.rank() > 0 ? 1 : 0));
    if (var.shape().dims() == lead) {
      var = unsqueeze(std::move(var), -1);
    } else {
      EMBER_CHECK(var.rank() == input.rank() && var.rank() > 0 && var.size(-1) == 1 &&
                      Sizes(var.shape().begin(), var.shape().end() - 1) == lead,
                  "gaussian_nll_loss: var ", var.shape(), " does not fit input ", input.shape());
    }
  }
  EMBER_CHECK(var.numel() == 0 || !any(lower(var, 0.0)).item(), "gaussian_nll_loss: var has negative entries");
  // Clamp the value only: the gradient passes to var unchanged, as PyTorch's no_grad clamp.
  var = var + (clamp_min(var, eps) - var).detach();
  DynTensor loss = (log(var) + square(input - target) / var) * 0.5;
  if (full) loss = loss + 0.5 * std::log(2 * std::numbers::pi);
  return reduce(std::move(loss), reduction);
}

// ---- distributions ----
DynTensor kl_div(DynTensor input, DynTensor target, KlReduction reduction, bool log_target) {
  loss_inputs(input, target);
  check_float(input, "kl_div", "input");
  check_same_shape(input, target, "kl_div");
  DynTensor loss;
  if (log_target) {
    loss = exp(target) * (target - input);
  } else {
    // xlogy(t, t) - t * input, with 0 log 0 = 0 (log sees 1 there, so no NaN reaches a gradient).
    DynTensor zero = equal(target, 0.0);
    loss = target * (log(mask_fill(target, zero, 1.0)) - input);
  }
  switch (reduction) {
    case KlReduction::none:
      return loss;
    case KlReduction::sum:
      return sum(std::move(loss));
    case KlReduction::mean:
      return mean(std::move(loss));
    case KlReduction::batchmean:
      return input.rank() == 0 ? sum(std::move(loss)) : sum(std::move(loss)) / static_cast<double>(input.size(0));
  }
  return loss;
}

// ---- embeddings and ranking ----
DynTensor cosine_embedding_loss(DynTensor x1, DynTensor x2, DynTensor y, double margin, Reduction reduction) {
  loss_inputs(x1, x2);
  check_float(x1, "cosine_embedding_loss", "input1");
  EMBER_CHECK(x1.shape() == x2.shape() && (x1.rank() == 1 || x1.rank() == 2), "cosine_embedding_loss: inputs ",
              x1.shape(), " and ", x2.shape(), " must both be [N, D] or [D]");
  EMBER_CHECK(y.shape() == (x1.rank() == 2 ? Shape{x1.size(0)} : Shape{}), "cosine_embedding_loss: inputs ", x1.shape(),
              " need a target of shape ", x1.rank() == 2 ? Shape{x1.size(0)} : Shape{}, ", got ", y.shape());
  constexpr double kEps = 1e-12;
  const int dim = x1.rank() - 1;
  DynTensor dot_product = sum(x1 * x2, {dim});
  DynTensor mag1 = sum(square(x1), {dim}) + kEps;
  DynTensor mag2 = sum(square(x2), {dim}) + kEps;
  DynTensor cos = dot_product / sqrt(mag1 * mag2);
  DynTensor zeros = cos * 0.0;
  DynTensor pos = where(equal(y, 1), 1.0 - cos, zeros);
  DynTensor neg = where(equal(y, -1), clamp_min(cos - margin, 0.0), zeros);
  return reduce(pos + neg, reduction);
}

DynTensor margin_ranking_loss(DynTensor x1, DynTensor x2, DynTensor y, double margin, Reduction reduction) {
  loss_inputs(x1, x2);
  check_float(x1, "margin_ranking_loss", "input1");
  check_same_shape(x1, x2, "margin_ranking_loss", "input1", "input2");
  check_same_shape(x1, y, "margin_ranking_loss", "input1", "target");
  return reduce(clamp_min(-y * (x1 - x2) + margin, 0.0), reduction);
}

DynTensor hinge_embedding_loss(DynTensor input, DynTensor y, double margin, Reduction reduction) {
  loss_inputs(input);
  check_float(input, "hinge_embedding_loss", "input");
  check_same_shape(input, y, "hinge_embedding_loss");
  DynTensor zeros = input * 0.0;
  DynTensor margin_part = where(not_equal(y, 1), clamp_min(margin - input, 0.0), zeros);
  DynTensor self_part = where(not_equal(y, -1), input, zeros);
  return reduce(margin_part + self_part, reduction);
}

namespace {
DynTensor pairwise_distance(const DynTensor& a, const DynTensor& b, double p, double eps) {
  const int dim = std::max(a.rank(), b.rank()) - 1;
  return norm(a - b + eps, p, {dim});
}
}  // namespace

DynTensor triplet_margin_loss(DynTensor anchor, DynTensor positive, DynTensor negative, const TripletMarginOptions& o) {
  loss_inputs(anchor, positive, negative);
  check_float(anchor, "triplet_margin_loss", "anchor");
  EMBER_CHECK(o.margin > 0, "triplet_margin_loss: margin must be positive, got ", o.margin);
  EMBER_CHECK(anchor.shape() == positive.shape() && anchor.shape() == negative.shape() &&
                  (anchor.rank() == 1 || anchor.rank() == 2),
              "triplet_margin_loss: anchor ", anchor.shape(), ", positive ", positive.shape(), " and negative ",
              negative.shape(), " must have one shape, [N, D] or [D] (a loss does not broadcast them)");
  DynTensor d_pos = pairwise_distance(anchor, positive, o.p, o.eps);
  DynTensor d_neg = pairwise_distance(anchor, negative, o.p, o.eps);
  if (o.swap) d_neg = minimum(d_neg, pairwise_distance(positive, negative, o.p, o.eps));
  return reduce(clamp_min(d_pos - d_neg + o.margin, 0.0), o.reduction);
}

// ---- sequences ----
DynTensor ctc_loss(DynTensor log_probs, DynTensor targets, DynTensor input_lengths, DynTensor target_lengths,
                   const CtcLossOptions& o) {
  EMBER_CHECK(is_int(input_lengths.dtype()) && is_int(target_lengths.dtype()),
              "ctc_loss: lengths must be integer tensors, got ", input_lengths.dtype(), " and ",
              target_lengths.dtype());
  return ctc_loss(std::move(log_probs), std::move(targets),
                  cast(flatten(input_lengths), DType::i64).to_vector<int64_t>(),
                  cast(flatten(target_lengths), DType::i64).to_vector<int64_t>(), o);
}

// The extended label sequence of sample n is l' = (blank, l_1, blank, l_2, ..., l_S, blank);
// alpha_t(s) = e_t(l'_s) + logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2) if
// l'_s != blank and l'_s != l'_{s-2}). Impossible states hold a large finite negative number
// instead of -inf so that logsumexp's gradient never sees inf - inf.
DynTensor ctc_loss(DynTensor log_probs, DynTensor targets, const std::vector<int64_t>& input_lengths,
                   const std::vector<int64_t>& target_lengths, const CtcLossOptions& o) {
  check_float(log_probs, "ctc_loss", "log_probs");
  const bool unbatched = log_probs.rank() == 2;
  if (unbatched) {
    log_probs = unsqueeze(std::move(log_probs), 1);
    if (targets.rank() == 1) targets = unsqueeze(std::move(targets), 0);
  }
  EMBER_CHECK(log_probs.rank() == 3, "ctc_loss: log_probs must be [T, N, C] or [T, C], got ", log_probs.shape());
  const DType out_dtype = log_probs.dtype();
  if (out_dtype != DType::f64) log_probs = cast(std::move(log_probs), DType::f32);
  const int64_t steps = log_probs.size(0), batch = log_probs.size(1), classes = log_probs.size(2);
  EMBER_CHECK(steps > 0, "ctc_loss: log_probs has no time steps");
  EMBER_CHECK(
      static_cast<int64_t>(input_lengths.size()) == batch && static_cast<int64_t>(target_lengths.size()) == batch,
      "ctc_loss: expected ", batch, " input and target lengths, got ", input_lengths.size(), " and ",
      target_lengths.size());
  EMBER_CHECK(o.blank >= 0 && o.blank < classes, "ctc_loss: blank ", o.blank, " is outside [0, ", classes, ")");
  EMBER_CHECK(is_int(targets.dtype()), "ctc_loss: targets must be integer, got ", targets.dtype());
  const std::vector<int64_t> flat = cast(targets, DType::i64).to_vector<int64_t>();

  // Host side: each sample's labels, the extended sequences and the allowed skips.
  int64_t max_len = 0;
  for (int64_t n = 0; n < batch; ++n) {
    const auto i = static_cast<size_t>(n);
    EMBER_CHECK(input_lengths[i] >= 1 && input_lengths[i] <= steps, "ctc_loss: input length ", input_lengths[i],
                " of sample ", n, " is outside [1, ", steps, "]");
    EMBER_CHECK(target_lengths[i] >= 0, "ctc_loss: negative target length ", target_lengths[i]);
    max_len = std::max(max_len, target_lengths[i]);
  }
  std::vector<std::vector<int64_t>> labels(static_cast<size_t>(batch));
  if (targets.rank() == 2) {
    EMBER_CHECK(targets.size(0) == batch && targets.size(1) >= max_len, "ctc_loss: padded targets ", targets.shape(),
                " do not hold ", batch, " sequences of up to ", max_len, " labels");
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t s = 0; s < target_lengths[static_cast<size_t>(n)]; ++s)
        labels[static_cast<size_t>(n)].push_back(flat[static_cast<size_t>(n * targets.size(1) + s)]);
  } else {
    EMBER_CHECK(targets.rank() == 1, "ctc_loss: targets must be [N, S] or 1-d concatenated, got ", targets.shape());
    size_t pos = 0;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t s = 0; s < target_lengths[static_cast<size_t>(n)]; ++s) {
        EMBER_CHECK(pos < flat.size(), "ctc_loss: concatenated targets hold ", flat.size(),
                    " labels, fewer than the target lengths' sum");
        labels[static_cast<size_t>(n)].push_back(flat[pos++]);
      }
  }
  const int64_t ext_len = 2 * max_len + 1;
  const double kImpossible = -1e30;
  std::vector<int64_t> ext(static_cast<size_t>(batch * ext_len), o.blank);
  std::vector<double> skip(static_cast<size_t>(batch * ext_len), kImpossible);
  std::vector<double> init(static_cast<size_t>(batch * ext_len), kImpossible);
  std::vector<int64_t> last(static_cast<size_t>(batch * 2));
  std::vector<double> last_mask(static_cast<size_t>(batch * 2), 0);
  for (int64_t n = 0; n < batch; ++n) {
    const auto& l = labels[static_cast<size_t>(n)];
    const auto len = static_cast<int64_t>(l.size());
    for (int64_t s = 0; s < len; ++s) {
      const int64_t c = l[static_cast<size_t>(s)];
      EMBER_CHECK(c >= 0 && c < classes, "ctc_loss: label ", c, " of sample ", n, " is outside [0, ", classes, ")");
      ext[static_cast<size_t>(n * ext_len + 2 * s + 1)] = c;
      if (s > 0 && c != l[static_cast<size_t>(s - 1)]) skip[static_cast<size_t>(n * ext_len + 2 * s + 1)] = 0;
    }
    init[static_cast<size_t>(n * ext_len)] = 0;
    if (len > 0) init[static_cast<size_t>(n * ext_len + 1)] = 0;
    last[static_cast<size_t>(2 * n)] = 2 * len;
    last[static_cast<size_t>(2 * n + 1)] = std::max<int64_t>(2 * len - 1, 0);
    if (len == 0) last_mask[static_cast<size_t>(2 * n + 1)] = kImpossible;
  }

  const Device& dev = log_probs.device();
  const DType dt = log_probs.dtype();
  auto host = [&](const std::vector<double>& v, Sizes shape) {
    return cast(DynTensor::from_vector(v, Shape(std::move(shape)), dev), dt);
  };
  DynTensor ext_index = DynTensor::from_vector(ext, Shape{batch, ext_len}, dev);
  // Emissions of every extended label at every step: [T, N, L'].
  DynTensor emit = gather(log_probs, 2, expand(unsqueeze(ext_index, 0), {steps, batch, ext_len}));
  emit = clamp_min(std::move(emit), kImpossible);
  DynTensor skip_add = host(skip, {batch, ext_len});
  DynTensor impossible_col = DynTensor::full({batch, 1}, kImpossible, dt, dev);

  DynTensor alpha = select(emit, 0, 0) + host(init, {batch, ext_len});
  for (int64_t t = 1; t < steps; ++t) {
    std::vector<DynTensor> paths{alpha};
    if (ext_len >= 2) paths.push_back(cat({impossible_col, narrow(alpha, 1, 0, ext_len - 1)}, 1));
    if (ext_len >= 3)
      paths.push_back(cat({impossible_col, impossible_col, narrow(alpha, 1, 0, ext_len - 2)}, 1) + skip_add);
    DynTensor next = select(emit, 0, t) + logsumexp(stack(paths, 0), {0});
    std::vector<bool> active(static_cast<size_t>(batch));
    for (int64_t n = 0; n < batch; ++n) active[static_cast<size_t>(n)] = t < input_lengths[static_cast<size_t>(n)];
    if (std::find(active.begin(), active.end(), false) == active.end()) {
      alpha = std::move(next);
    } else {  // sequences that have ended keep their alpha
      alpha = where(DynTensor::from_vector(active, Shape{batch, 1}, dev), std::move(next), alpha);
    }
  }
  DynTensor ends = gather(alpha, 1, DynTensor::from_vector(last, Shape{batch, 2}, dev)) + host(last_mask, {batch, 2});
  DynTensor loss = -logsumexp(std::move(ends), {1});  // [N]
  // Every alignment of an infeasible sample (too few steps, or only zero-probability paths)
  // passes an impossible state, so its loss is near -kImpossible: make it inf (or 0).
  DynTensor infeasible = greater(loss, -kImpossible / 2);
  loss = mask_fill(std::move(loss), infeasible, o.zero_infinity ? 0.0 : std::numeric_limits<double>::infinity());
  if (out_dtype != dt) loss = cast(std::move(loss), out_dtype);
  switch (o.reduction) {
    case Reduction::none:
      return unbatched ? squeeze(std::move(loss), 0) : loss;
    case Reduction::sum:
      return sum(std::move(loss));
    case Reduction::mean: {
      std::vector<double> lengths(target_lengths.begin(), target_lengths.end());
      for (double& l : lengths) l = std::max(l, 1.0);
      return mean(loss / cast(DynTensor::from_vector(lengths, Shape{batch}, dev), loss.dtype()));
    }
  }
  return loss;
}

}  // namespace ember::nn
