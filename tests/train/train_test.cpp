// The Learner on a tiny problem: convergence, logs and plots, renderers (built in and user-defined),
// reproducibility, gradient accumulation, schedulers, early stopping, checkpoints (keep last N and
// the best, atomic writes under SIGKILL), resume after SIGINT, and the dashboard driven under tmux.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "ember/data/dataloader.hpp"
#include "ember/nn/file.hpp"
#include "ember/train/plot.hpp"
#include "tiny_problem.hpp"

using namespace ember;
using tiny::Batch;
using tiny::Model;
namespace fs = std::filesystem;

extern char** environ;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("ember_train_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

size_t count_lines(const fs::path& p) {
  std::ifstream f(p);
  size_t n = 0;
  for (std::string line; std::getline(f, line);) n += !line.empty();
  return n;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

struct Data {
  Device dev = tiny::device();
  tiny::Loader train{tiny::blobs(300, 1), 32, 7, dev};  // 10 batches per epoch
  tiny::Loader valid{tiny::blobs(90, 2), 30, 8, dev};
};

train::LearnerBuilder<Model, Batch> builder(uint64_t init_seed = 3) {
  train::LearnerBuilder<Model, Batch> b(tiny::make_model(init_seed), tiny::train_step(), tiny::valid_step());
  b.optimizer(optim::Adam()).lr(0.05).renderer(train::RendererKind::none).handle_sigint(true);
  return b;
}

std::vector<float> weights(const Model& m) { return m.fc.weight.value().to_vector<float>(); }

// A metric whose value in the k-th epoch is script[k] (for early stopping and best checkpoints).
class ScriptedMetric final : public train::Metric {
 public:
  explicit ScriptedMetric(std::vector<double> script) : script_(std::move(script)) {}
  std::string name() const override { return "scripted"; }
  bool higher_is_better() const override { return true; }
  void reset() override { ++epoch_; }
  std::optional<double> update(const train::BatchOutputs&) override { return std::nullopt; }
  double value() const override { return script_[size_t(std::clamp<int64_t>(epoch_ - 1, 0, int64_t(script_.size()) - 1))]; }
  train::MetricState state() const override { return {{"epoch", {double(epoch_)}}}; }
  void load_state(const train::MetricState& s) override { epoch_ = int64_t(s.at("epoch")[0]); }
  std::unique_ptr<train::Metric> clone() const override { return std::make_unique<ScriptedMetric>(script_); }

 private:
  std::vector<double> script_;
  int64_t epoch_ = 0;
};

// A renderer of one's own: what the Renderer interface hands over (the example users copy).
struct RecordingRenderer : train::Renderer {
  int starts = 0, finishes = 0, train_updates = 0, valid_updates = 0, epoch_ends = 0;
  std::vector<std::string> messages;
  std::vector<double> train_loss;  // running epoch loss as it goes
  void start(const train::FitInfo& info, const train::MetricHistory&) override {
    ++starts;
    EXPECT_EQ(info.metrics.front(), "loss");
  }
  void update(const train::ProgressView& p) override {
    (p.split == train::Split::train ? train_updates : valid_updates)++;
    for (const auto& [name, v] : p.running)
      if (name == "loss" && p.split == train::Split::train) train_loss.push_back(v);
  }
  void epoch_end(const train::EpochView&) override { ++epoch_ends; }
  void message(const std::string& text) override { messages.push_back(text); }
  void finish(const train::FitSummary&) override { ++finishes; }
};

}  // namespace

TEST(Learner, ConvergesWritesLogsAndPlots) {
  Data d;
  fs::path run = fresh_dir("converge");
  auto learner = builder()
                     .epochs(6)
                     .metrics({train::accuracy_metric(), train::top_k_accuracy_metric(2), train::f1_metric(),
                               train::auroc_metric()})
                     .run_dir(run.string())
                     .build();
  Model m = learner.fit(d.train, d.valid);
  const auto& h = learner.history();
  ASSERT_EQ(h.epochs().size(), 6u);
  double first = *h.epoch_value(0, train::Split::train, "loss");
  double last = *h.epoch_value(5, train::Split::train, "loss");
  EXPECT_LT(last, first / 3);
  EXPECT_GE(*h.epoch_value(5, train::Split::valid, "accuracy"), 0.97);
  EXPECT_GE(*h.epoch_value(5, train::Split::valid, "auroc"), 0.99);
  EXPECT_DOUBLE_EQ(*h.epoch_value(5, train::Split::valid, "top2_accuracy"), 1.0);
  for (const char* n : {"lr", "iter_per_s", "data_wait", "cpu_percent", "memory_mb", "time_s"})
    EXPECT_TRUE(h.epoch_value(5, train::Split::train, n).has_value()) << n;
  EXPECT_FALSE(h.epoch_value(5, train::Split::train, "gpu_memory_mb").has_value());  // CPU only
  EXPECT_EQ(h.num_steps(), 60u);

  const auto& s = learner.summary();
  EXPECT_EQ(s.stop_reason, "completed");
  EXPECT_EQ(s.epochs_completed, 6);
  EXPECT_EQ(s.global_step, 60);
  ASSERT_TRUE(s.valid_confusion.has_value());
  EXPECT_EQ(s.valid_confusion->total(), 90);
  EXPECT_NE(s.str().find("confusion matrix"), std::string::npos);

  EXPECT_EQ(count_lines(run / "steps.jsonl"), 60u);
  EXPECT_EQ(count_lines(run / "epochs.jsonl"), 6u);
  auto step0 = nlohmann::json::parse(slurp(run / "steps.jsonl").substr(0, slurp(run / "steps.jsonl").find('\n')));
  EXPECT_EQ(step0["iteration"], 0);
  EXPECT_TRUE(step0.contains("loss") && step0.contains("accuracy") && step0.contains("lr"));
  auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
  EXPECT_EQ(summary["stop_reason"], "completed");
  for (const char* n : {"loss", "accuracy", "f1_macro", "auroc", "lr", "iter_per_s", "memory_mb"}) {
    fs::path svg = run / "plots" / (std::string(n) + ".svg");
    ASSERT_TRUE(fs::exists(svg)) << svg;
    std::string text = slurp(svg);
    EXPECT_EQ(text.rfind("<svg", 0), 0u);
    EXPECT_NE(text.find("<polyline"), std::string::npos);
  }
  EXPECT_NE(slurp(run / "plots" / "accuracy.svg").find("valid (epoch)"), std::string::npos);
  fs::remove_all(run);

  // evaluate() measures the final model on a loader, outside of the history.
  train::EvalResult ev = learner.evaluate(d.valid);
  EXPECT_EQ(ev.samples, 90);
  EXPECT_EQ(ev.confusion.total(), 90);
  EXPECT_DOUBLE_EQ(ev.value("accuracy"), ev.confusion.accuracy());
  EXPECT_NEAR(ev.value("loss"), *h.epoch_value(5, train::Split::valid, "loss"), 1e-6);
  EXPECT_TRUE(std::isnan(ev.value("nothing")));
  EXPECT_NE(ev.str().find("auroc"), std::string::npos);
  EXPECT_EQ(h.epochs().size(), 6u);
}

TEST(Learner, UserRendererAndPlainRenderer) {
  Data d;
  auto rec = std::make_shared<RecordingRenderer>();
  auto learner = builder().epochs(2).renderer(rec).build();
  learner.fit(d.train, d.valid);
  EXPECT_EQ(rec->starts, 1);
  EXPECT_EQ(rec->finishes, 1);
  EXPECT_EQ(rec->train_updates, 20);
  EXPECT_EQ(rec->valid_updates, 6);
  EXPECT_EQ(rec->epoch_ends, 4);
  EXPECT_EQ(rec->train_loss.size(), 20u);

  std::ostringstream out;
  auto plain = train::make_plain_renderer(out, {.verbosity = 1, .interval_steps = 5});
  auto learner2 = builder().epochs(2).renderer(plain).build();
  learner2.fit(d.train, d.valid);
  std::string text = out.str();
  EXPECT_NE(text.find("epoch 1/2 train 5/10 (50%)"), std::string::npos) << text;
  EXPECT_NE(text.find("epoch 2/2 valid done"), std::string::npos) << text;
  EXPECT_NE(text.find("training completed: 2/2 epochs"), std::string::npos) << text;
  EXPECT_EQ(train::parse_renderer_kind("plain"), train::RendererKind::plain);
  // Resuming from a folder without checkpoints: an error, unless not required.
  fs::path empty = fresh_dir("no_checkpoints");
  auto must = builder().resume_from(empty.string()).build();
  EXPECT_THROW(must.fit(d.train, d.valid), Error);
  auto may = builder().resume_from(empty.string(), /*required=*/false).build();
  may.fit(d.train, d.valid);
  EXPECT_EQ(may.summary().stop_reason, "completed");
  fs::remove_all(empty);
  EXPECT_THROW(train::parse_renderer_kind("fancy"), Error);
}

TEST(Learner, SeededRunsAreReproducible) {
  auto run = [](uint64_t seed) {
    Data d;
    auto learner = builder(3).epochs(1).seed(seed).build();
    learner.fit(d.train, d.valid);
    return learner.history();
  };
  train::MetricHistory a = run(11), b = run(11);
  double la = *a.epoch_value(0, train::Split::train, "loss"), lb = *b.epoch_value(0, train::Split::train, "loss");
  EXPECT_EQ(la, lb);
  EXPECT_EQ(a.step_series("loss"), b.step_series("loss"));
  EXPECT_EQ(*a.epoch_value(0, train::Split::valid, "loss"), *b.epoch_value(0, train::Split::valid, "loss"));
}

TEST(Learner, GradientAccumulationMatchesLargerBatches) {
  Device dev = tiny::device();
  auto run = [&](size_t batch, int64_t k) {
    tiny::Loader train(tiny::blobs(300, 1), batch, 7, dev);
    train::LearnerBuilder<Model, Batch> b(tiny::make_model(3), tiny::train_step(), tiny::valid_step());
    auto learner = b.optimizer(optim::Sgd()).lr(0.1).epochs(2).grad_accumulation(k).renderer(train::RendererKind::none).build();
    Model m = learner.fit(train);
    EXPECT_EQ(learner.summary().global_step, 20);
    EXPECT_EQ(learner.summary().iterations, int64_t(2 * train.num_batches()));
    return weights(m);
  };
  // 300 samples: 32 per batch gives 9 x 32 + 12; 16 per batch accumulated by 2 gives the same
  // groups (the last one a single batch of 12), so the averaged gradients are the same.
  std::vector<float> big = run(32, 1), small = run(16, 2);
  ASSERT_EQ(big.size(), small.size());
  for (size_t i = 0; i < big.size(); ++i) EXPECT_NEAR(big[i], small[i], 1e-5) << i;
}

TEST(Learner, SchedulerStepsPerOptimizerStepOrPerEpoch) {
  Data d;
  auto learner = builder()
                     .epochs(2)
                     .scheduler(std::make_unique<optim::StepLR>(0.1, optim::StepLRConfig{3, 0.5}))
                     .build();
  learner.fit(d.train, d.valid);
  std::vector<double> lr = learner.history().step_series("lr");
  ASSERT_EQ(lr.size(), 20u);
  for (size_t i = 0; i < lr.size(); ++i) EXPECT_NEAR(lr[i], 0.1 * std::pow(0.5, double(i / 3)), 1e-15) << i;

  auto per_epoch = builder()
                       .epochs(3)
                       .scheduler(std::make_unique<optim::StepLR>(0.1, optim::StepLRConfig{1, 0.5}),
                                  train::SchedulerInterval::epoch)
                       .build();
  per_epoch.fit(d.train, d.valid);
  lr = per_epoch.history().step_series("lr");
  for (size_t i = 0; i < lr.size(); ++i) EXPECT_NEAR(lr[i], 0.1 * std::pow(0.5, double(i / 10)), 1e-15) << i;
}

TEST(Learner, EarlyStoppingAfterPatience) {
  Data d;
  auto learner = builder()
                     .epochs(20)
                     .metrics({std::make_shared<ScriptedMetric>(std::vector<double>{0.5, 0.6, 0.6, 0.55, 0.9})})
                     .early_stopping({.metric = "valid/scripted", .patience = 2, .min_delta = 0.05})
                     .build();
  learner.fit(d.train, d.valid);
  const auto& s = learner.summary();
  EXPECT_TRUE(s.early_stopped);
  EXPECT_EQ(s.epochs_completed, 4);  // 0.5, 0.6 (better), 0.6 and 0.55 (not better by 0.05)
  EXPECT_EQ(s.best_epoch, 1);
  EXPECT_DOUBLE_EQ(*s.best_value, 0.6);
  EXPECT_NE(s.stop_reason.find("valid/scripted did not improve for 2 epochs"), std::string::npos) << s.stop_reason;
}

TEST(Checkpoints, KeepLastNAndTheBest) {
  Data d;
  fs::path dir = fresh_dir("keep");
  auto learner = builder()
                     .epochs(5)
                     .metrics({train::accuracy_metric(),
                               std::make_shared<ScriptedMetric>(std::vector<double>{0.3, 0.9, 0.1, 0.2, 0.4})})
                     .checkpoints({.dir = dir.string(), .keep_last = 2, .best_metric = "valid/scripted"})
                     .build();
  Model trained = learner.fit(d.train, d.valid);
  auto all = train::list_checkpoints(dir.string());
  std::vector<int64_t> steps;
  for (const auto& c : all) steps.push_back(c.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{20, 40, 50}));  // best (epoch 2), then the last two
  train::Checkpointer ck(dir.string(), 2, true, true);
  ASSERT_TRUE(ck.best());
  EXPECT_EQ(ck.best()->step, 20);
  EXPECT_DOUBLE_EQ(*ck.best()->score, 0.9);
  EXPECT_EQ(learner.summary().best_checkpoint, ck.best()->path);
  for (const char* f : {"model.safetensors", "optimizer.safetensors", "metrics.safetensors", "learner.json"})
    EXPECT_TRUE(fs::exists(fs::path(all.back().path) / f)) << f;
  // The last checkpoint holds the trained model and loads into a fresh one.
  Model fresh = tiny::make_model(99);
  nn::load(fresh, all.back().path + "/model.safetensors");
  EXPECT_EQ(weights(fresh), weights(trained));
  optim::Adam opt;
  opt.load_state_dict(fresh, nn::read_tensors(all.back().path + "/optimizer.safetensors"));
  fs::remove_all(dir);
}

TEST(Checkpoints, AtomicFoldersAndCleanup) {
  fs::path dir = fresh_dir("atomic");
  auto write = [](int v) {
    return [v](const std::string& tmp) {
      nn::write_tensors(tmp + "/model.safetensors", {{"w", DynTensor::full(Shape{4}, double(v), DType::f32)}});
    };
  };
  {
    train::Checkpointer ck(dir.string(), 3);
    ck.save(5, std::nullopt, write(1));
    ck.save(5, std::nullopt, write(2));  // the same step replaces the folder
    EXPECT_THROW(ck.save(6, std::nullopt, [](const std::string&) { throw Error("disk full"); }), Error);
  }
  auto all = train::list_checkpoints(dir.string());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].step, 5);
  EXPECT_EQ(nn::read_tensors(all[0].path + "/model.safetensors")[0].second.to_vector<float>()[0], 2.f);
  // Leftovers of a killed writer, and a folder with a checkpoint name but no marker.
  fs::create_directories(dir / ".tmp-checkpoint-0000000007-123-0");
  fs::create_directories(dir / "checkpoint-0000000009");
  EXPECT_EQ(train::list_checkpoints(dir.string()).size(), 1u);
  train::Checkpointer again(dir.string(), 3);
  EXPECT_FALSE(fs::exists(dir / ".tmp-checkpoint-0000000007-123-0"));
  EXPECT_EQ(train::resolve_checkpoint(dir.string()).step, 5);
  EXPECT_THROW(train::resolve_checkpoint((dir / "nothing").string()), Error);
  for (int i = 6; i <= 9; ++i) again.save(i, std::nullopt, write(i));
  all = train::list_checkpoints(dir.string());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all.front().step, 7);
  fs::remove_all(dir);
}

namespace {

train::LearnerBuilder<Model, Batch> resumable(uint64_t init_seed) {
  auto b = builder(init_seed);
  b.epochs(3).seed(21).metrics({train::accuracy_metric(), train::auroc_metric()});
  return b;
}

void expect_same_history(const train::MetricHistory& a, const train::MetricHistory& b) {
  EXPECT_EQ(a.step_iterations(), b.step_iterations());
  EXPECT_EQ(a.step_positions(), b.step_positions());
  for (const char* n : {"loss", "accuracy", "lr"}) EXPECT_EQ(a.step_series(n), b.step_series(n)) << n;
  ASSERT_EQ(a.epochs().size(), b.epochs().size());
  for (train::Split sp : {train::Split::train, train::Split::valid})
    for (const char* n : {"loss", "accuracy", "auroc"})
      EXPECT_EQ(a.epoch_series(sp, n), b.epoch_series(sp, n)) << n << " " << train::split_name(sp);
}

}  // namespace

TEST(Resume, SigintMidEpochLeavesACheckpointAndResumingContinues) {
  Data d;
  auto full = resumable(3).build();
  Model reference = full.fit(d.train, d.valid);

  fs::path run = fresh_dir("sigint");
  Data d2;
  auto interrupted = resumable(3)
                         .run_dir(run.string())
                         .checkpoints({.keep_last = 5})
                         .on_step([](const train::StepInfo& s) {
                           if (s.iteration == 14) ::raise(SIGINT);  // mid-epoch 2 (10 batches per epoch)
                         })
                         .build();
  Model stopped = interrupted.fit(d2.train, d2.valid);
  const auto& s = interrupted.summary();
  EXPECT_TRUE(s.interrupted);
  EXPECT_NE(s.stop_reason.find("SIGINT"), std::string::npos);
  EXPECT_EQ(s.global_step, 14);
  auto last = train::latest_checkpoint((run / "checkpoints").string());
  ASSERT_TRUE(last);
  EXPECT_EQ(last->step, 14);
  EXPECT_EQ(last->path, s.last_checkpoint);
  auto state = nlohmann::json::parse(slurp(fs::path(last->path) / "learner.json"));
  EXPECT_EQ(state["epoch"], 1);
  EXPECT_EQ(state["batches_done"], 4);
  EXPECT_EQ(state["metrics_in_progress"], true);
  Model loaded = tiny::make_model(77);
  nn::load(loaded, last->path + "/model.safetensors");
  EXPECT_EQ(weights(loaded), weights(stopped));

  // Resume from the run's checkpoint folder (its latest), with a differently initialised model.
  Data d3;
  auto resumed = resumable(55).run_dir(run.string()).checkpoints({.keep_last = 5}).resume_from((run / "checkpoints").string()).build();
  Model finished = resumed.fit(d3.train, d3.valid);
  EXPECT_EQ(resumed.summary().stop_reason, "completed");
  EXPECT_EQ(resumed.summary().global_step, 30);
  EXPECT_EQ(resumed.history().step_iterations().front(), 0);
  expect_same_history(full.history(), resumed.history());
  EXPECT_EQ(weights(finished), weights(reference));
  EXPECT_EQ(count_lines(run / "steps.jsonl"), 30u);
  EXPECT_EQ(count_lines(run / "epochs.jsonl"), 3u);
  fs::remove_all(run);
}

TEST(Resume, SigintDuringValidationRedoesTheValidation) {
  Data d;
  auto full = resumable(3).build();
  full.fit(d.train, d.valid);

  fs::path dir = fresh_dir("sigint_valid");
  int valid_calls = 0;
  auto valid_step = tiny::valid_step();
  train::LearnerBuilder<Model, Batch> b(tiny::make_model(3), tiny::train_step(), [&](const Model& m, const Batch& x) {
    if (++valid_calls == 5) ::raise(SIGINT);  // the second batch of epoch 2's validation
    return valid_step(m, x);
  });
  b.optimizer(optim::Adam()).lr(0.05).renderer(train::RendererKind::none).epochs(3).seed(21);
  b.metrics({train::accuracy_metric(), train::auroc_metric()}).checkpoints({.dir = dir.string()});
  auto interrupted = b.build();
  Data d2;
  interrupted.fit(d2.train, d2.valid);
  EXPECT_TRUE(interrupted.summary().interrupted);
  auto state = nlohmann::json::parse(slurp(fs::path(train::latest_checkpoint(dir.string())->path) / "learner.json"));
  EXPECT_EQ(state["epoch"], 1);
  EXPECT_EQ(state["train_done"], true);

  Data d3;
  auto resumed = resumable(3).checkpoints({.dir = dir.string()}).resume_from(dir.string()).build();
  resumed.fit(d3.train, d3.valid);
  expect_same_history(full.history(), resumed.history());
  fs::remove_all(dir);
}

TEST(Resume, SigkillDuringCheckpointWriteKeepsThePreviousOne) {
  fs::path dir = fresh_dir("sigkill");
  std::mt19937 rng(42);
  int killed_mid_write = 0;
  for (int attempt = 0; attempt < 40 && killed_mid_write < 3; ++attempt) {
    // An empty directory each time, so that "two checkpoints written" below means two written by
    // this process (with the last attempt's left in place, a loaded machine could kill the new
    // process before its first write, every time).
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string app = EMBER_TRAIN_TEST_APP;
    std::string mode = "checkpoint-loop";
    std::string target = dir.string();
    char* argv[] = {app.data(), mode.data(), target.data(), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, app.c_str(), nullptr, nullptr, argv, environ), 0) << app;
    // Let it write a few checkpoints, then kill it at a random moment.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (train::list_checkpoints(dir.string()).size() < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 40000)(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    bool tmp_left = false;
    for (const auto& e : fs::directory_iterator(dir)) tmp_left |= e.path().filename().string().rfind(".tmp-", 0) == 0;
    killed_mid_write += tmp_left;

    // Whatever the moment, the latest complete checkpoint is whole and consistent.
    auto last = train::latest_checkpoint(dir.string());
    ASSERT_TRUE(last);
    auto tensors = nn::read_tensors(last->path + "/model.safetensors");
    ASSERT_EQ(tensors.size(), 1u);
    std::vector<float> v = tensors[0].second.to_vector<float>();
    ASSERT_EQ(v.size(), size_t(1) << 20);
    EXPECT_EQ(v.front(), float(last->step));
    EXPECT_EQ(v.back(), float(last->step));
    auto side = nlohmann::json::parse(slurp(fs::path(last->path) / "learner.json"));
    EXPECT_EQ(side["i"], last->step);
    for (const auto& c : train::list_checkpoints(dir.string()))
      EXPECT_TRUE(fs::exists(fs::path(c.path) / "model.safetensors")) << c.path;
  }
  EXPECT_GE(killed_mid_write, 1) << "no kill landed during a checkpoint write";
  train::Checkpointer reopened(dir.string(), 3);  // removes the interrupted write
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_NE(e.path().filename().string().rfind(".tmp-", 0), 0u);
  fs::remove_all(dir);
}

// The data layer's DataLoader (worker threads, shared_ptr, set_epoch), interrupted and resumed.
TEST(Learner, WithTheDataLoaderInterruptedAndResumed) {
  struct Point {
    float x, y;
    int64_t label;
  };
  auto to_points = [](const tiny::Samples& s) {
    std::vector<Point> out;
    for (size_t i = 0; i < s.size(); ++i) out.push_back({s.x[2 * i], s.x[2 * i + 1], s.y[i]});
    return data::in_memory(std::move(out));
  };
  data::Batcher<Point, Batch> batcher = [](std::vector<Point> items, const Device& dev) {
    std::vector<float> x;
    std::vector<int64_t> y;
    for (const Point& p : items) x.push_back(p.x), x.push_back(p.y), y.push_back(p.label);
    int64_t n = int64_t(items.size());
    return Batch{DynTensor::from_vector(x, Shape{n, 2}, dev), DynTensor::from_vector(y, Shape{n}, dev)};
  };
  auto train_ds = to_points(tiny::blobs(300, 1));
  auto valid_ds = to_points(tiny::blobs(90, 2));
  auto loaders = [&] {
    data::DataLoaderBuilder<Point, Batch> b(batcher);
    b.batch_size(32).shuffle(7).num_workers(2).device(tiny::device());
    data::DataLoaderBuilder<Point, Batch> v(batcher);
    v.batch_size(45).device(tiny::device());
    return std::make_pair(b.build(train_ds), v.build(valid_ds));
  };
  auto [train_a, valid_a] = loaders();
  auto full = resumable(3).build();
  full.fit(train_a, valid_a);
  EXPECT_GE(*full.history().epoch_value(2, train::Split::valid, "accuracy"), 0.97);
  EXPECT_LT(*full.history().epoch_value(2, train::Split::train, "data_wait"), 1.0);

  fs::path dir = fresh_dir("dataloader");
  auto [train_b, valid_b] = loaders();
  auto stopped = resumable(3)
                     .checkpoints({.dir = dir.string()})
                     .on_step([](const train::StepInfo& s) {
                       if (s.iteration == 17) ::raise(SIGINT);
                     })
                     .build();
  stopped.fit(train_b, valid_b);
  ASSERT_TRUE(stopped.summary().interrupted);
  auto [train_c, valid_c] = loaders();  // a new process would start its loaders at epoch 0
  auto resumed = resumable(3).checkpoints({.dir = dir.string()}).resume_from(dir.string()).build();
  resumed.fit(train_c, valid_c);
  expect_same_history(full.history(), resumed.history());
  fs::remove_all(dir);
}

TEST(History, JsonRoundTripAndPlots) {
  train::MetricHistory h;
  h.add_step(0, 0.5, {{"loss", 1.0}, {"lr", 0.1}});
  h.add_step(1, 1.0, {{"loss", 0.5}, {"accuracy", 0.75}});
  h.add_epoch(0, train::Split::train, {{"loss", 0.75}});
  h.add_epoch(0, train::Split::valid, {{"loss", 0.7}, {"accuracy", std::nan("")}});
  train::MetricHistory back = train::MetricHistory::from_json(h.to_json());
  EXPECT_TRUE(back == h);
  EXPECT_TRUE(std::isnan(back.step_series("accuracy")[0]));
  EXPECT_EQ(back.all_names().front(), "loss");
  EXPECT_THROW(train::MetricHistory::from_json("{\"steps\": 3}"), Error);
  std::string svg = train::svg_plot(h, "loss");
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("valid (epoch)"), std::string::npos);
  EXPECT_EQ(train::svg_plot(h, "nothing"), "");
  EXPECT_EQ(train::MetricRef::parse("train/loss").split, train::Split::train);
  EXPECT_EQ(train::MetricRef::parse("accuracy").str(), "valid/accuracy");
  EXPECT_THROW(train::MetricRef::parse("test/loss"), Error);
}

// ---- the dashboard, driven under tmux ----
namespace {

std::string run_capture(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    std::array<char, 4096> buf;
    while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
    ::pclose(p);
  }
  return out;
}

}  // namespace

// Mixed precision (f16 with a GradScaler): the dashboard's resource line shows the loss scale.
TEST(Dashboard, ShowsTheLossScaleUnderTmux) {
  if (std::system("tmux -V >/dev/null 2>&1") != 0) GTEST_SKIP() << "tmux is not installed: dashboard test skipped";
  fs::path run = fresh_dir("dashboard_amp");
  std::string tmux = "tmux -S '" + (run / "tmux.sock").string() + "' ";
  struct KillServer {
    std::string cmd;
    ~KillServer() { (void)!std::system(cmd.c_str()); }
  } kill_server{tmux + "kill-server >/dev/null 2>&1"};
  std::string inner = "env LANG=C.UTF-8 LC_ALL=C.UTF-8 '" + std::string(EMBER_TRAIN_TEST_APP) + "' dashboard '" +
                      run.string() + "' dashboard 1000 f16; echo APP-DONE; sleep 120";
  ASSERT_EQ(std::system((tmux + "new-session -d -x 120 -y 40 -s dash \"" + inner + "\"").c_str()), 0);
  auto wait_for = [&](const std::string& text, int seconds = 60) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    std::string s;
    while (std::chrono::steady_clock::now() < deadline) {
      s = run_capture(tmux + "capture-pane -p -t dash");
      if (s.find(text) != std::string::npos) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "the screen never showed '" << text << "':\n" << s;
    return s;
  };
  wait_for("loss scale 65536");
  EXPECT_EQ(std::system((tmux + "send-keys -t dash q").c_str()), 0);
  std::string s = wait_for("APP-DONE", 90);
  EXPECT_NE(s.find("APP EXIT stopped by the renderer (quit)"), std::string::npos) << s;
  EXPECT_EQ(std::system(kill_server.cmd.c_str()), 0);
  auto last = train::latest_checkpoint((run / "checkpoints").string());
  ASSERT_TRUE(last);
  EXPECT_TRUE(fs::exists(last->path + "/grad_scaler.safetensors"));
  fs::remove_all(run);
}

TEST(Dashboard, DrivenUnderTmux) {
  if (std::system("tmux -V >/dev/null 2>&1") != 0) GTEST_SKIP() << "tmux is not installed: dashboard test skipped";
  fs::path run = fresh_dir("dashboard");
  // A private server on a socket inside the run folder; killed however the test ends.
  std::string tmux = "tmux -S '" + (run / "tmux.sock").string() + "' ";
  struct KillServer {
    std::string cmd;
    ~KillServer() { (void)!std::system(cmd.c_str()); }
  } kill_server{tmux + "kill-server >/dev/null 2>&1"};
  std::string app = EMBER_TRAIN_TEST_APP;
  std::string inner = "env LANG=C.UTF-8 LC_ALL=C.UTF-8 '" + app + "' dashboard '" + run.string() +
                      "'; echo APP-DONE; sleep 120";
  ASSERT_EQ(std::system((tmux + "new-session -d -x 120 -y 40 -s dash \"" + inner + "\"").c_str()), 0);
  auto screen = [&] { return run_capture(tmux + "capture-pane -p -t dash"); };
  auto wait_for = [&](const std::string& text, int seconds = 60) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    std::string s;
    while (std::chrono::steady_clock::now() < deadline) {
      s = screen();
      if (s.find(text) != std::string::npos) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "the screen never showed '" << text << "':\n" << s;
    return s;
  };
  auto keys = [&](const std::string& k) { EXPECT_EQ(std::system((tmux + "send-keys -t dash " + k).c_str()), 0); };

  std::string s = wait_for("metric: loss");
  wait_for("train  [");
  s = wait_for("accuracy");
  EXPECT_NE(s.find("recent history"), std::string::npos) << s;
  EXPECT_NE(s.find("epoch"), std::string::npos) << s;
  EXPECT_NE(s.find("ETA"), std::string::npos) << s;
  EXPECT_NE(s.find("it/s"), std::string::npos) << s;
  keys("Right");
  wait_for("metric: accuracy");
  keys("Right");
  wait_for("metric: f1_macro");
  keys("Left");
  wait_for("metric: accuracy");
  keys("Down");
  wait_for("full history");
  keys("Up");
  wait_for("recent history");
  wait_for("valid");  // a validation pass has run (the plot legend and the table)
  keys("q");
  s = wait_for("APP-DONE", 90);
  EXPECT_NE(s.find("APP EXIT stopped by the renderer (quit)"), std::string::npos) << s;
  EXPECT_NE(s.find("training stopped by the renderer"), std::string::npos) << s;  // the summary
  EXPECT_EQ(std::system(kill_server.cmd.c_str()), 0);
  auto last = train::latest_checkpoint((run / "checkpoints").string());
  ASSERT_TRUE(last) << "quitting wrote no checkpoint";
  fs::remove_all(run);
}
