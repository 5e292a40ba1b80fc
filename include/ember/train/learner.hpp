// The Learner: train and validation loops around a model's own step functions, with metrics, an
// optimizer and lr scheduler, gradient accumulation, checkpoints, resume, early stopping, logs,
// plots and a live renderer.
//
//   # Model model = given<Model>(); auto train_step = &classify_train; auto valid_step = &classify_valid;
//   # std::vector<Batch> train_loader, valid_loader, test_loader;   // any range of batches
//   auto learner = train::LearnerBuilder(model, train_step, valid_step)  // Model, Batch deduced
//                      .optimizer(optim::AdamW({.weight_decay = 1e-4}))
//                      .scheduler(std::make_unique<optim::CosineAnnealingLR>(
//                          1e-3, optim::CosineAnnealingLRConfig{.t_max = 5 * 938}))
//                      .epochs(5)
//                      .metrics({train::accuracy_metric(), train::f1_metric()})
//                      .run_dir("runs/fashion")            // logs, plots, summary, checkpoints/
//                      .checkpoints({.keep_last = 2, .best_metric = "valid/accuracy"})
//                      .early_stopping({.metric = "valid/loss", .patience = 3})
//                      .seed(42)
//                      .build();
//   Model trained = learner.fit(train_loader, valid_loader);   // loaders: DataLoader, shared_ptr, any range
//   std::cout << learner.summary().str();
//   train::EvalResult test = learner.evaluate(test_loader);   // test.value("accuracy")
//
// The steps (see output.hpp): train_step(M&, const B&) -> TrainResult<O> (a step output O and the
// backward's Gradients; TrainStepResult is TrainResult<ClassificationOutput>); valid_step(const M&,
// const B&) -> a step output, run with gradient recording off and the model in eval mode
// (nn::set_training(model, false)). O is ClassificationOutput, RegressionOutput,
// MultiLabelOutput or a struct of your own (the StepOutput concept). The builder deduces M and B
// from the model and the train step's parameters (a generic lambda needs LearnerBuilder<M, B>).
//
// Metrics: without .metrics(...), the defaults follow the train step's output type: accuracy for
// ClassificationOutput, RMSE, MAE and R² for RegressionOutput, label accuracy and macro F1 for
// MultiLabelOutput, O::default_metrics() for a type that has it, else the loss alone. Losses and
// metrics of an epoch are over its samples: a batch's mean loss counts batch_size times.
//
// Loop semantics:
// - An optimizer step happens every `grad_accumulation` batches (and at the end of an epoch); the
//   accumulated gradients are averaged. A "step" in logs and checkpoints is an optimizer step; an
//   "iteration" is a train batch.
// - The scheduler steps after every optimizer step (SchedulerInterval::step, the default) or after
//   every epoch; a ReduceLROnPlateau scheduler steps once per epoch on `plateau_metric`.
// - With a seed, the model's device is reseeded from (seed, iteration) before every train batch,
//   so dropout masks and other device randomness are the same in a resumed run.
// - Ctrl-C (SIGINT), the dashboard's 'q' and Renderer::stop_requested end the run after the
//   current optimizer step (or validation batch): a complete checkpoint is written and fit()
//   returns the model with a summary. A second Ctrl-C ends the process.
// - Checkpoints (checkpoint.hpp) hold the model, the optimizer, the scheduler, the position
//   (epoch, batch, iteration, step), early stopping, the rng seed, the metric history and the
//   running metric accumulators of an interrupted epoch. resume_from() continues from the next
//   batch with the same history. For the same batches in a resumed epoch, the loader must
//   reshuffle as a function of the epoch: the Learner calls loader.set_epoch(e) before each epoch
//   when the loader has it, and skips the batches the checkpoint had already consumed.
// - In run_dir: steps.jsonl (one line per iteration), epochs.jsonl (one line per epoch),
//   plots/<metric>.svg (rewritten after every epoch), summary.json and summary.txt.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/amp.hpp"
#include "ember/core/callable_traits.hpp"
#include "ember/core/error.hpp"
#include "ember/nn/file.hpp"
#include "ember/nn/module.hpp"
#include "ember/optim/gradients.hpp"
#include "ember/optim/optimizer.hpp"
#include "ember/optim/scheduler.hpp"
#include "ember/train/checkpoint.hpp"
#include "ember/train/early_stopping.hpp"
#include "ember/train/history.hpp"
#include "ember/train/metrics.hpp"
#include "ember/train/output.hpp"
#include "ember/train/renderer.hpp"
#include "ember/train/summary.hpp"

namespace ember::train {

// When a non-plateau lr scheduler steps: after every optimizer step, or after every epoch (after validation).
enum class SchedulerInterval { step, epoch };

// What the on_step callback sees after every train batch.
struct StepInfo {
  int64_t epoch = 0;               // 0-based
  int64_t batch = 0;               // batches done in this epoch (1-based)
  int64_t iteration = 0;           // train batches done in the run
  int64_t global_step = 0;         // optimizer steps done in the run
  double loss = 0;                 // the batch's mean loss
  bool optimizer_stepped = false;  // true when this batch ended with an optimizer step
};

// What Learner::evaluate measured.
struct EvalResult {
  NamedValues values;                           // loss and the learner's metrics, over every sample
  ConfusionMatrix confusion;                    // empty without class outputs
  int64_t samples = 0;                          // samples evaluated
  double seconds = 0;                           // wall-clock time of the evaluation, in seconds
  double value(const std::string& name) const;  // NaN when absent
  std::string str() const;                      // "loss 0.3012  accuracy 0.9104 ..."
};

// Everything but the model, the steps, the optimizer and the scheduler.
struct LearnerConfig {
  int64_t num_epochs = 1;         // epochs to train (>= 1)
  int64_t grad_accumulation = 1;  // batches per optimizer step; their gradients are averaged (>= 1)
  // Reseeds the model's device from (seed, iteration) before every train batch; none: no reseeding
  std::optional<uint64_t> seed{};
  std::string run_dir{};                                           // empty: no logs, plots or summary files
  std::optional<CheckpointConfig> checkpoints{};                   // none: no checkpoints
  std::optional<EarlyStoppingConfig> early_stopping{};             // none: no early stopping
  SchedulerInterval scheduler_interval = SchedulerInterval::step;  // when a non-plateau scheduler steps
  std::string plateau_metric = "valid/loss";  // "split/metric" a ReduceLROnPlateau scheduler steps on, once per epoch
  std::vector<MetricPtr> metrics{};           // measured besides the loss (the builder fills in defaults)
  std::shared_ptr<Renderer> renderer{};       // a renderer of your own; null: one made from renderer_kind
  RendererKind renderer_kind = RendererKind::automatic;  // the renderer to make when `renderer` is null
  int verbosity = 0;            // the plain renderer: 0 one line per epoch, 1 progress lines and messages
  bool handle_sigint = true;    // a SIGINT handler ends the run cleanly (a second Ctrl-C ends the process)
  std::string resume_from{};    // a checkpoint folder, or a folder of checkpoints (its latest)
  bool resume_required = true;  // false: start afresh when resume_from holds no checkpoint yet
  bool system_metrics = true;  // record lr, iter_per_s, samples_per_s, data_wait, cpu_percent and memory (off: lr only)
  std::function<void(const StepInfo&)> on_step{};  // called on the training thread after every train batch
  // Mixed precision (docs/amp.md): the train and valid steps run inside an amp::Autocast scope of
  // this dtype; with a grad_scaler the optimizer step goes through an amp::GradScaler (its state is
  // saved in checkpoints, its scale shown as "loss_scale"), and the train step scales its loss
  // with amp::scale_loss(loss) before backward.
  std::optional<DType> mixed_precision{};
  std::optional<amp::GradScalerConfig> grad_scaler{};  // loss scaling for f16 (none: no scaler)
  // Data-parallel training (train/data_parallel.hpp fills these from a distributed::DataParallel):
  // logs, plots, checkpoints and the renderer run on rank 0 only; `reduce_gradients` averages each
  // optimizer step's gradients over the ranks (the module's parameters in order are its first
  // argument); every rank prints its own data-wait and communication time after each train
  // split, and `gather_values` (an all-gather of a few doubles) lets rank 0's epoch values show
  // "comm_s", "slowest_rank" and that rank's compute time. Metrics are each rank's own (rank 0
  // shows its shard's).
  int rank = 0;        // this process's rank (0 writes files and renders)
  int world_size = 1;  // number of data-parallel ranks
  // Averages a step's gradients over the ranks; empty for one process
  std::function<void(const std::vector<const nn::Param*>&, optim::GradientsParams&)> reduce_gradients{};
  std::function<double()> communication_seconds{};  // the communication time so far, in seconds; empty for one process
  // Gathers each rank's values on rank 0; empty for one process
  std::function<std::vector<double>(const std::vector<double>&)> gather_values{};
};

namespace detail {

// The loop bookkeeping that does not depend on the model type (learner.cpp).
class FitSession {
 public:
  // `write_model(dir)` saves the model and optimizer files of a checkpoint into dir;
  // `device` is the model's (reseeded per iteration when a seed is set).
  FitSession(const LearnerConfig& config, optim::LrScheduler& scheduler, Device device,
             std::function<void(const std::string&)> write_model);
  ~FitSession();
  FitSession(const FitSession&) = delete;
  FitSession& operator=(const FitSession&) = delete;

  // The checkpoint to resume from (config.resume_from resolved), and loading its learner state.
  std::optional<std::string> resume_checkpoint() const;
  void load_state(const std::string& checkpoint_dir);

  void begin(int64_t train_batches, int64_t valid_batches, bool has_valid);
  bool running() const;              // epochs remain and no stop
  int64_t epoch() const;
  bool train_done() const;           // the current epoch's training finished (valid pending)
  int64_t skip_batches() const;      // batches of the current epoch a resumed run already did
  int64_t grad_accumulation() const;

  void begin_split(Split split, int64_t num_batches);
  void before_step();  // the batch is here: data wait ends, device reseeded
  double lr() const;
  void set_loss_scale(double scale);  // shown with the step values as "loss_scale"
  void optimizer_stepped();
  // Records a batch; returns true when the run must stop now (checkpoint written by stop()).
  bool after_batch(Split split, const BatchOutputs& outputs, bool optimizer_stepped);
  void end_split(Split split, std::optional<double> loader_wait_s);
  // Epoch bookkeeping (early stopping, scheduler, checkpoint, plots); false: stop training.
  bool end_epoch();
  // An interrupted run: writes a checkpoint of the current position.
  void stop();
  FitSummary finish(const std::string& failure = {});
  const MetricHistory& history() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Metrics over a whole loader, outside of fit() (Learner::evaluate).
class Evaluator {
 public:
  explicit Evaluator(const std::vector<MetricPtr>& metrics);
  ~Evaluator();
  void add(const BatchOutputs& batch);
  EvalResult result() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

template <class L>
decltype(auto) deref_loader(L& l) {
  if constexpr (std::is_pointer_v<L>) return (*l);
  else if constexpr (requires { l.get(); *l; }) return (*l);  // shared_ptr, unique_ptr
  else return (l);
}
bool file_exists(const std::string& path);

template <class L>
int64_t loader_batches(L& l) {
  if constexpr (requires { l.num_batches(); }) return int64_t(l.num_batches());
  else if constexpr (requires { std::size(l); }) return int64_t(std::size(l));
  else return -1;
}
template <class L>
std::optional<double> loader_wait_seconds(L& l) {
  if constexpr (requires { l.wait_seconds(); }) return double(l.wait_seconds());
  else return std::nullopt;
}
template <class L>
void loader_set_epoch(L& l, int64_t epoch) {
  if constexpr (requires { l.set_epoch(size_t(epoch)); }) l.set_epoch(size_t(epoch));
}

}  // namespace detail

// The train step of a classification Learner (the type its first constructor takes).
template <class M, class B>
using TrainStepFn = std::function<TrainStepResult(M&, const B&)>;
// The valid step of a classification Learner (the type its first constructor takes).
template <class M, class B>
using ValidStepFn = std::function<ClassificationOutput(const M&, const B&)>;

namespace detail {

// A train step's result with its output already on the host.
struct HostTrainResult {
  BatchOutputs out;
  Gradients grads;
};
template <class M, class B>
using HostTrainFn = std::function<HostTrainResult(M&, const B&)>;
template <class M, class B>
using HostValidFn = std::function<BatchOutputs(const M&, const B&)>;

template <class R>
struct train_output {};
template <class O>
struct train_output<TrainResult<O>> {
  using type = O;
};
// The step output type O of a train step F(M&, const B&) -> TrainResult<O>.
template <class F, class M, class B>
using train_output_t = typename train_output<std::remove_cvref_t<std::invoke_result_t<F&, M&, const B&>>>::type;

// False for an empty std::function or a null function pointer (a lambda is always set).
template <class F>
bool callable_is_set(const F& f) {
  if constexpr (std::is_pointer_v<F>) return f != nullptr;
  else if constexpr (requires { typename F::result_type; static_cast<bool>(f); }) return static_cast<bool>(f);
  else return true;
}

template <class M, class B, class F>
HostTrainFn<M, B> host_train_step(F f) {
  using O = train_output_t<F, M, B>;
  static_assert(StepOutput<O>, "Learner: the train step's output type has no to_host(const O&) -> BatchOutputs");
  return [f = std::move(f)](M& m, const B& b) mutable {
    auto r = f(m, b);
    return HostTrainResult{to_host(r.out), std::move(r.grads)};
  };
}
template <class M, class B, class G>
HostValidFn<M, B> host_valid_step(G g) {
  if constexpr (std::is_null_pointer_v<G>) {
    return {};
  } else {
    if (!callable_is_set(g)) return {};
    using O = std::remove_cvref_t<std::invoke_result_t<G&, const M&, const B&>>;
    static_assert(StepOutput<O>, "Learner: the valid step's output type has no to_host(const O&) -> BatchOutputs");
    return [g = std::move(g)](const M& m, const B& b) mutable { return to_host(g(m, b)); };
  }
}

inline std::vector<MetricPtr> default_metrics(std::type_identity<ClassificationOutput>) { return {accuracy_metric()}; }
inline std::vector<MetricPtr> default_metrics(std::type_identity<RegressionOutput>) {
  return {rmse_metric(), mae_metric(), r2_metric()};
}
inline std::vector<MetricPtr> default_metrics(std::type_identity<MultiLabelOutput>) {
  return {multilabel_accuracy_metric(), multilabel_f1_metric()};
}
template <class O>
std::vector<MetricPtr> default_metrics(std::type_identity<O>) {
  if constexpr (requires { O::default_metrics(); }) return O::default_metrics();
  else return {};
}

// The batch type of a train step callable F(M&, const B&).
template <class F>
using step_batch_t = std::remove_cvref_t<callable_arg_t<F, 1>>;

}  // namespace detail

// Runs train and validation loops of a model M over batches B (see the header comment); built by
// LearnerBuilder. A Learner owns the model, the optimizer and the scheduler; use it from one thread.
template <class M, class B>
class Learner {
 public:
  // Classification steps (the metrics default to accuracy when empty).
  Learner(M model, TrainStepFn<M, B> train_step, ValidStepFn<M, B> valid_step,
          std::unique_ptr<optim::Optimizer> optimizer, std::unique_ptr<optim::LrScheduler> scheduler,
          LearnerConfig config)
      : Learner(std::move(model), detail::host_train_step<M, B>(std::move(train_step)),
                detail::host_valid_step<M, B>(std::move(valid_step)), std::move(optimizer), std::move(scheduler),
                with_default_metrics(std::move(config))) {}
  // Steps of any output type, already reading their outputs back (LearnerBuilder builds these).
  Learner(M model, detail::HostTrainFn<M, B> train_step, detail::HostValidFn<M, B> valid_step,
          std::unique_ptr<optim::Optimizer> optimizer, std::unique_ptr<optim::LrScheduler> scheduler,
          LearnerConfig config)
      : model_(std::move(model)),
        train_step_(std::move(train_step)),
        valid_step_(std::move(valid_step)),
        opt_(std::move(optimizer)),
        sched_(std::move(scheduler)),
        config_(std::move(config)) {
    if (config_.grad_scaler) scaler_.emplace(*config_.grad_scaler);
    // Each rank would stop on its own shard's metrics while the others wait in a collective.
    EMBER_CHECK(config_.world_size == 1 || !config_.early_stopping, "Learner: early stopping is not supported with "
                "data-parallel training yet (each rank would decide on its own shard's metrics)");
    if (config_.rank != 0) {  // one set of files and one dashboard for the whole job
      config_.run_dir.clear();
      config_.checkpoints.reset();
      config_.renderer = nullptr;
      config_.renderer_kind = RendererKind::none;
    }
    if (!valid_step_)
      valid_step_ = [](const M&, const B&) -> BatchOutputs {
        EMBER_FAIL("Learner: fit() got a validation loader but the builder no valid_step");
      };
  }

  // Trains for the configured epochs (or until stopped) and returns the trained model.
  template <class TrainLoader, class ValidLoader>
  M fit(TrainLoader&& train_loader, ValidLoader&& valid_loader) {
    return run(detail::deref_loader(train_loader), &detail::deref_loader(valid_loader));
  }
  // Trains without validation; early stopping and a best checkpoint must then monitor a "train/..." metric
  // (else ember::Error).
  template <class TrainLoader>
  M fit(TrainLoader&& train_loader) {
    return run(detail::deref_loader(train_loader), static_cast<std::vector<B>*>(nullptr));
  }

  // Runs valid_step over every batch of `loader` (model in eval mode, no gradients) and returns
  // the loss and metrics over all its samples, with the confusion matrix. Nothing is logged.
  template <class Loader>
  EvalResult evaluate(Loader&& loader) {
    auto& l = detail::deref_loader(loader);
    detail::Evaluator ev(config_.metrics);
    nn::set_training(model_, false);
    {
      NoGradGuard no_grad;
      for (auto it = l.begin(); it != l.end(); ++it) ev.add(run_valid_step(*it));
    }
    nn::set_training(model_, true);
    return ev.result();
  }

  const M& model() const { return model_; }               // The model as trained so far.
  const FitSummary& summary() const { return summary_; }  // The summary of the last fit().
  // The metric history of the last fit(), per step and per epoch.
  const MetricHistory& history() const { return history_; }
  optim::Optimizer& optimizer() { return *opt_; }      // The optimizer (its state persists across fit() calls).
  optim::LrScheduler& scheduler() { return *sched_; }  // The learning-rate scheduler.
  // The configuration the learner was built with (rank > 0 drops the files and the renderer).
  const LearnerConfig& config() const { return config_; }
  // The loss scaler of an f16 mixed-precision run (nullptr otherwise).
  const amp::GradScaler* grad_scaler() const { return scaler_ ? &*scaler_ : nullptr; }

 private:
  static Device model_device(const M& m) {
    auto sd = nn::state_dict(m);
    return sd.empty() ? Device::default_device() : sd.front().second.device();
  }

  template <class TL, class VL>
  M run(TL& train, VL* valid) {
    detail::FitSession s(config_, *sched_, model_device(model_), [this](const std::string& dir) {
      nn::save(model_, dir + "/model.safetensors");
      nn::write_tensors(dir + "/optimizer.safetensors", opt_->state_dict(model_));
      if (scaler_) nn::write_tensors(dir + "/grad_scaler.safetensors", scaler_->state_dict());
    });
    try {
      if (auto ck = s.resume_checkpoint()) {
        nn::load(model_, *ck + "/model.safetensors");
        opt_->load_state_dict(model_, nn::read_tensors(*ck + "/optimizer.safetensors", model_device(model_).inner()));
        // (a checkpoint of a run without a scaler leaves this one at its initial scale)
        if (scaler_ && detail::file_exists(*ck + "/grad_scaler.safetensors"))
          scaler_->load_state_dict(nn::read_tensors(*ck + "/grad_scaler.safetensors", Device::cpu()));
        s.load_state(*ck);
      }
      s.begin(detail::loader_batches(train), valid ? detail::loader_batches(*valid) : 0, valid != nullptr);
      while (s.running()) {
        if (!s.train_done() && !train_epoch(s, train)) break;
        if (valid && !valid_epoch(s, *valid)) break;
        if (!s.end_epoch()) break;
      }
      summary_ = s.finish();
    } catch (const std::exception& e) {
      try {
        summary_ = s.finish(e.what());  // restores the terminal, logs what was done
        history_ = s.history();
      } catch (...) {
      }
      throw;
    }
    history_ = s.history();
    return model_;
  }

  template <class TL>
  bool train_epoch(detail::FitSession& s, TL& loader) {
    detail::loader_set_epoch(loader, s.epoch());
    int64_t n = detail::loader_batches(loader);
    int64_t skip = s.skip_batches();
    int64_t k = s.grad_accumulation();
    nn::set_training(model_, true);
    s.begin_split(Split::train, n);
    optim::GradientsParams acc;
    int64_t pending = 0, index = 0;
    for (auto it = loader.begin(); it != loader.end(); ++it, ++index) {
      if (index < skip) continue;
      const auto& batch = *it;
      s.before_step();
      detail::HostTrainResult r = run_train_step(batch);
      optim::GradientsParams g = optim::GradientsParams::from(model_, r.grads);
      r.grads = Gradients();
      if (pending == 0) acc = std::move(g);
      else acc.accumulate(g);
      ++pending;
      bool stepped = pending == k || (n > 0 && index + 1 == n);
      if (stepped) apply(s, acc, pending);
      if (s.after_batch(Split::train, r.out, stepped)) {
        s.stop();
        return false;
      }
    }
    if (pending > 0) apply(s, acc, pending);  // a loader that did not announce its length
    s.end_split(Split::train, detail::loader_wait_seconds(loader));
    return true;
  }

  void apply(detail::FitSession& s, optim::GradientsParams& acc, int64_t& pending) {
    if (pending > 1) acc.scale(1.0 / double(pending));
    if (config_.reduce_gradients) {
      std::vector<const nn::Param*> params;
      nn::for_each_param(model_, [&](const std::string&, nn::Param& p) { params.push_back(&p); });
      config_.reduce_gradients(params, acc);
    }
    if (scaler_) {  // unscale (checking for inf/NaN), step unless found, adjust the scale
      model_ = scaler_->step(*opt_, std::move(model_), std::move(acc), s.lr());
      scaler_->update();
      s.set_loss_scale(scaler_->get_scale());
    } else {
      model_ = opt_->step(std::move(model_), std::move(acc), s.lr());
    }
    acc = optim::GradientsParams();
    pending = 0;
    s.optimizer_stepped();
  }

  template <class VL>
  bool valid_epoch(detail::FitSession& s, VL& loader) {
    detail::loader_set_epoch(loader, s.epoch());
    nn::set_training(model_, false);
    s.begin_split(Split::valid, detail::loader_batches(loader));
    bool stopped = false;
    {
      NoGradGuard no_grad;
      for (auto it = loader.begin(); it != loader.end(); ++it) {
        const auto& batch = *it;
        s.before_step();
        BatchOutputs out = run_valid_step(batch);
        if (s.after_batch(Split::valid, out, false)) {
          stopped = true;
          break;
        }
      }
    }
    nn::set_training(model_, true);
    if (stopped) {
      s.stop();
      return false;
    }
    s.end_split(Split::valid, detail::loader_wait_seconds(loader));
    return true;
  }

  // The steps, inside the mixed-precision scope when one is configured.
  detail::HostTrainResult run_train_step(const B& batch) {
    std::optional<amp::Autocast> autocast;
    if (config_.mixed_precision) autocast.emplace(*config_.mixed_precision);
    amp::ActiveScaler active(scaler_ ? &*scaler_ : nullptr);
    return train_step_(model_, batch);
  }
  BatchOutputs run_valid_step(const B& batch) {
    std::optional<amp::Autocast> autocast;
    if (config_.mixed_precision) autocast.emplace(*config_.mixed_precision);
    return valid_step_(std::as_const(model_), batch);
  }
  static LearnerConfig with_default_metrics(LearnerConfig c) {
    if (c.metrics.empty()) c.metrics = detail::default_metrics(std::type_identity<ClassificationOutput>{});
    return c;
  }
  M model_;
  detail::HostTrainFn<M, B> train_step_;
  detail::HostValidFn<M, B> valid_step_;
  std::unique_ptr<optim::Optimizer> opt_;
  std::unique_ptr<optim::LrScheduler> sched_;
  LearnerConfig config_;
  std::optional<amp::GradScaler> scaler_;
  FitSummary summary_;
  MetricHistory history_;
};

// Fluent construction of a Learner<M, B>; build() checks the settings and fills in the defaults.
template <class M, class B>
class LearnerBuilder {
 public:
  // train_step(M&, const B&) -> TrainResult<O>; valid_step(const M&, const B&) -> a step output
  // (optional). Lambdas, functions and std::function all work; M and B are deduced (see the
  // deduction guides below), or named: LearnerBuilder<Model, Batch>(...).
  template <class F, class G = std::nullptr_t>
    requires std::invocable<F&, M&, const B&>
  LearnerBuilder(M model, F train_step, G valid_step = nullptr)
      : model_(std::move(model)),
        has_train_step_(detail::callable_is_set(train_step)),
        train_step_(detail::host_train_step<M, B>(std::move(train_step))),
        valid_step_(detail::host_valid_step<M, B>(std::move(valid_step))),
        default_metrics_(detail::default_metrics(std::type_identity<detail::train_output_t<F, M, B>>{})) {}

  // The optimizer, by value (any optim::Optimizer subclass) or owned pointer. Default: SGD.
  template <class O>
    requires std::derived_from<O, optim::Optimizer>
  LearnerBuilder& optimizer(O opt) {
    opt_ = std::make_unique<O>(std::move(opt));
    return *this;
  }
  // An optimizer already made, owned by the learner.
  LearnerBuilder& optimizer(std::unique_ptr<optim::Optimizer> opt) {
    opt_ = std::move(opt);
    return *this;
  }
  // A constant learning rate (ignored when a scheduler is set).
  LearnerBuilder& lr(double lr) {
    lr_ = lr;
    return *this;
  }
  // The learning-rate scheduler, owned by the learner, and whether it steps per optimizer step (default) or per
  // epoch; a ReduceLROnPlateau steps per epoch on plateau_metric whatever `every` says.
  LearnerBuilder& scheduler(std::unique_ptr<optim::LrScheduler> s, SchedulerInterval every = SchedulerInterval::step) {
    sched_ = std::move(s);
    config_.scheduler_interval = every;
    return *this;
  }
  // The metric a ReduceLROnPlateau scheduler watches, as "split/name" (default "valid/loss").
  LearnerBuilder& plateau_metric(std::string ref) { return set(config_.plateau_metric, std::move(ref)); }
  LearnerBuilder& epochs(int64_t n) { return set(config_.num_epochs, n); }  // Epochs to train (default 1; >= 1).
  // Batches per optimizer step, gradients averaged (default 1; >= 1).
  LearnerBuilder& grad_accumulation(int64_t k) { return set(config_.grad_accumulation, k); }
  // Reseeds the device from (s, iteration) before every train batch, so resumed runs draw the same.
  LearnerBuilder& seed(uint64_t s) { return set(config_.seed, std::optional<uint64_t>(s)); }
  // The metrics besides the loss (replacing the defaults of the step's output type; {} for none).
  LearnerBuilder& metrics(std::vector<MetricPtr> m) {
    metrics_set_ = true;
    return set(config_.metrics, std::move(m));
  }
  // Adds one metric (the defaults of the step's output type are then dropped).
  LearnerBuilder& metric(MetricPtr m) {
    metrics_set_ = true;
    config_.metrics.push_back(std::move(m));
    return *this;
  }
  // The plain renderer's detail: 0 (default) one line per epoch, 1 progress lines every few
  // seconds, each split's epoch line, checkpoint messages.
  LearnerBuilder& verbosity(int level) { return set(config_.verbosity, level); }
  // Folder for steps.jsonl, epochs.jsonl, plots/, summary files and checkpoints (default: none).
  LearnerBuilder& run_dir(std::string dir) { return set(config_.run_dir, std::move(dir)); }
  // Turns checkpoints on; they need run_dir unless c.dir is set.
  LearnerBuilder& checkpoints(CheckpointConfig c = {}) { return set(config_.checkpoints, std::optional(std::move(c))); }
  // Stops when c.metric stops improving (see early_stopping.hpp).
  LearnerBuilder& early_stopping(EarlyStoppingConfig c) {
    return set(config_.early_stopping, std::optional(std::move(c)));
  }
  // Shows progress through your own renderer instead of a built-in one.
  LearnerBuilder& renderer(std::shared_ptr<Renderer> r) { return set(config_.renderer, std::move(r)); }
  // Picks a built-in renderer (default automatic).
  LearnerBuilder& renderer(RendererKind kind) { return set(config_.renderer_kind, kind); }
  // Whether the learner handles Ctrl-C to stop cleanly (default on).
  LearnerBuilder& handle_sigint(bool on) { return set(config_.handle_sigint, on); }
  // Continue a run from a checkpoint folder or a folder of checkpoints (its latest). With
  // required = false a folder without checkpoints starts a fresh run (one command line for the
  // first run and every resumption).
  LearnerBuilder& resume_from(std::string checkpoint, bool required = true) {
    config_.resume_required = required;
    return set(config_.resume_from, std::move(checkpoint));
  }
  // Whether to record system values: speed, data wait, cpu and memory (default on).
  LearnerBuilder& system_metrics(bool on) { return set(config_.system_metrics, on); }
  // Calls `f` after every train batch, on the training thread.
  LearnerBuilder& on_step(std::function<void(const StepInfo&)> f) { return set(config_.on_step, std::move(f)); }
  // Mixed precision: the steps run under amp::Autocast(dtype). bf16 needs no loss scaling; f16
  // gets an amp::GradScaler with PyTorch's defaults (the train step then backpropagates
  // amp::scale_loss(loss)); pass a config to change them.
  LearnerBuilder& mixed_precision(DType dtype) {
    return mixed_precision(dtype, dtype == DType::f16 ? std::optional<amp::GradScalerConfig>(amp::GradScalerConfig{})
                                                      : std::nullopt);
  }
  // Mixed precision with an explicit scaler config (std::nullopt: no loss scaling). Throws ember::Error unless
  // dtype is bf16 or f16.
  LearnerBuilder& mixed_precision(DType dtype, std::optional<amp::GradScalerConfig> scaler) {
    EMBER_CHECK(dtype == DType::bf16 || dtype == DType::f16, "LearnerBuilder::mixed_precision: cannot autocast to ",
                dtype, " (bf16 or f16)");
    if (scaler) scaler->dtype = dtype;
    config_.mixed_precision = dtype;
    config_.grad_scaler = scaler;
    return *this;
  }
  LearnerConfig& config() { return config_; }  // The configuration so far, for settings without a builder method.

  // The Learner. Throws ember::Error without a train step, without lr or scheduler, or for epochs or
  // grad_accumulation below 1. Defaults: SGD optimizer, the metrics of the step's output type.
  Learner<M, B> build() {
    EMBER_CHECK(has_train_step_, "LearnerBuilder: no train step");
    EMBER_CHECK(sched_ || lr_, "LearnerBuilder: set a learning rate (lr) or a scheduler");
    EMBER_CHECK(config_.num_epochs >= 1, "LearnerBuilder: epochs must be >= 1, got ", config_.num_epochs);
    EMBER_CHECK(config_.grad_accumulation >= 1, "LearnerBuilder: grad_accumulation must be >= 1, got ",
                config_.grad_accumulation);
    if (!opt_) opt_ = std::make_unique<optim::Sgd>();
    if (!sched_) sched_ = std::make_unique<optim::FixedLR>(*lr_);
    if (!metrics_set_) config_.metrics = default_metrics_;
    return Learner<M, B>(std::move(model_), std::move(train_step_), std::move(valid_step_), std::move(opt_),
                         std::move(sched_), std::move(config_));
  }

 private:
  template <class T, class V>
  LearnerBuilder& set(T& field, V&& value) {
    field = std::forward<V>(value);
    return *this;
  }
  M model_;
  bool has_train_step_;
  detail::HostTrainFn<M, B> train_step_;
  detail::HostValidFn<M, B> valid_step_;
  std::vector<MetricPtr> default_metrics_;
  bool metrics_set_ = false;
  std::unique_ptr<optim::Optimizer> opt_;
  std::unique_ptr<optim::LrScheduler> sched_;
  std::optional<double> lr_;
  LearnerConfig config_;
};

// Deduction: LearnerBuilder(model, train_step[, valid_step]) takes M from the model and B from
// the train step's second parameter.
template <class M, class F>
LearnerBuilder(M, F) -> LearnerBuilder<M, detail::step_batch_t<F>>;
// The same deduction with a valid step (its type does not take part).
template <class M, class F, class G>
LearnerBuilder(M, F, G) -> LearnerBuilder<M, detail::step_batch_t<F>>;

}  // namespace ember::train
