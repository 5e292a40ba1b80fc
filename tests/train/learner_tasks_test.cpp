// The Learner beyond classification: regression with RMSE, MAE and R², multi-label outputs, a
// step output of the user's own type, per-sample averages over uneven batches, samples/s that
// counts samples, the plain renderer's one line per epoch and its measured cpu%, type deduction
// of LearnerBuilder and DataLoaderBuilder, and learner.hpp's header example.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <type_traits>

#include "ember/data/dataloader.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/loss.hpp"
#include "ember/train/learner.hpp"
#include "ember/train/system_stats.hpp"
#include "tiny_problem.hpp"

using namespace ember;
namespace fs = std::filesystem;

namespace {

// y = 2 x0 - x1 + 0.5 over 10 points: batches of 4, 4 and 2.
struct RBatch {
  DynTensor x;  // [n, 2]
  DynTensor y;  // [n, 1]
};
struct RModel {
  nn::Linear fc;
  EMBER_MODULE(fc)
};

std::vector<float> xs() { return {0, 1, 1, 0, 2, 1, -1, 3, 0.5f, 0.5f, 3, -2, -2, -1, 1, 1, 4, 0, -3, 2}; }
float truth(float a, float b) { return 2 * a - b + 0.5f; }

std::vector<RBatch> regression_batches(const std::vector<size_t>& sizes = {4, 4, 2}) {
  Device d = tiny::device();
  std::vector<float> x = xs();
  std::vector<RBatch> out;
  size_t at = 0;
  for (size_t n : sizes) {
    std::vector<float> bx(x.begin() + long(2 * at), x.begin() + long(2 * (at + n))), by;
    for (size_t i = 0; i < n; ++i) by.push_back(truth(bx[2 * i], bx[2 * i + 1]));
    out.push_back(
        {DynTensor::from_vector(bx, Shape{int64_t(n), 2}, d), DynTensor::from_vector(by, Shape{int64_t(n), 1}, d)});
    at += n;
  }
  return out;
}

RModel make_rmodel() {
  Device d = tiny::device();
  d.seed(5);
  return RModel{nn::LinearConfig{2, 1}.init(d)};
}

auto regression_valid() {
  return [](const RModel& m, const RBatch& b) {
    DynTensor p = m.fc.forward(b.x);
    return train::RegressionOutput{nn::mse_loss(p, b.y), p, b.y};
  };
}
auto regression_train() {
  return [](RModel& m, const RBatch& b) {
    DynTensor p = m.fc.forward(b.x);
    DynTensor loss = nn::mse_loss(p, b.y);
    return train::TrainResult<train::RegressionOutput>{{loss, p, b.y}, loss.backward()};
  };
}

// Keeps every epoch view.
struct Recorder : train::Renderer {
  std::vector<train::EpochView> epochs;
  void update(const train::ProgressView&) override {}
  void epoch_end(const train::EpochView& e) override { epochs.push_back(e); }
};

double value_of(const train::NamedValues& v, const std::string& name) {
  for (const auto& [k, x] : v)
    if (k == name) return x;
  return std::nan("");
}

}  // namespace

TEST(LearnerTasks, RegressionTrainsWithRmseMaeR2) {
  auto batches = regression_batches();
  auto rec = std::make_shared<Recorder>();
  auto learner = train::LearnerBuilder(make_rmodel(), regression_train(), regression_valid())
                     .optimizer(optim::Adam())
                     .lr(0.1)
                     .epochs(60)
                     .renderer(rec)
                     .handle_sigint(false)
                     .build();
  RModel m = learner.fit(batches, batches);  // used to fail: "ConfusionMatrix::add: target 2 out of range"
  train::EvalResult r = learner.evaluate(batches);
  // By hand from the trained model's predictions, over all 10 samples.
  double sse = 0, sae = 0, sy = 0, syy = 0, n = 0;
  for (const auto& b : batches) {
    auto p = m.fc.forward(b.x).to_vector<float>(), y = b.y.to_vector<float>();
    for (size_t i = 0; i < y.size(); ++i) {
      sse += (p[i] - y[i]) * (p[i] - y[i]), sae += std::fabs(p[i] - y[i]), sy += y[i], syy += double(y[i]) * y[i];
      ++n;
    }
  }
  double ss_tot = syy - sy * sy / n;
  EXPECT_NEAR(r.value("rmse"), std::sqrt(sse / n), 1e-5);
  EXPECT_NEAR(r.value("mae"), sae / n, 1e-5);
  EXPECT_NEAR(r.value("r2"), 1 - sse / ss_tot, 1e-5);
  EXPECT_NEAR(r.value("loss"), sse / n, 1e-5);  // batch means weighted by batch size
  EXPECT_GT(r.value("r2"), 0.95);
  EXPECT_TRUE(std::isnan(r.value("accuracy")));  // no classification metric unless asked
  EXPECT_EQ(r.samples, 10);
  EXPECT_EQ(r.confusion.num_classes(), 0);
  ASSERT_FALSE(rec->epochs.empty());
  const auto& last = rec->epochs.back();
  EXPECT_EQ(last.split, train::Split::valid);
  EXPECT_NEAR(value_of(last.values, "rmse"), r.value("rmse"), 1e-6);  // the valid epoch is the same pass
}

TEST(LearnerTasks, LossIsAveragedPerSampleOverUnevenBatches) {
  // The "loss" of a batch is the mean of its targets: per sample, the epoch's loss is the mean of
  // all 10 targets; a mean of the 3 batch means would differ (batches of 4, 4 and 2).
  auto batches = regression_batches();
  auto loss_only = [](const RModel&, const RBatch& b) { return train::RegressionOutput{mean(b.y), b.y, b.y}; };
  double all = 0, batch_means = 0;
  for (const auto& b : batches) {
    auto y = b.y.to_vector<float>();
    double s = 0;
    for (float v : y) s += v, all += v;
    batch_means += s / double(y.size()) / 3;
  }
  all /= 10;
  ASSERT_GT(std::fabs(all - batch_means), 0.05);  // 0.0917
  auto learner = train::LearnerBuilder(make_rmodel(), regression_train(), loss_only).lr(0.1).build();
  EXPECT_NEAR(learner.evaluate(batches).value("loss"), all, 1e-5);
}

TEST(LearnerTasks, SamplesPerSecondCountsSamples) {
  auto batches = regression_batches();  // 10 samples in 3 batches
  auto rec = std::make_shared<Recorder>();
  auto learner = train::LearnerBuilder(make_rmodel(), regression_train()).lr(0.01).epochs(2).renderer(rec).build();
  learner.fit(batches);
  ASSERT_EQ(rec->epochs.size(), 2u);
  double it = value_of(rec->epochs[0].values, "iter_per_s"), sps = value_of(rec->epochs[0].values, "samples_per_s");
  EXPECT_NEAR(sps / it, 10.0 / 3.0, 1e-6);
  // The per-step value too: the last step's batch has 2 samples, so its rate is samples, not batches.
  auto series = learner.history().step_series("samples_per_s");
  auto iters = learner.history().step_series("iter_per_s");
  ASSERT_FALSE(series.empty());
  EXPECT_GT(series.front() / iters.front(), 1.5);
}

TEST(LearnerTasks, PlainRendererPrintsOneLinePerEpoch) {
  tiny::Loader train{tiny::blobs(300, 1), 32, 7, tiny::device()}, valid{tiny::blobs(90, 2), 30, 8, tiny::device()};
  auto count = [&](int verbosity) {
    std::ostringstream out;
    train::PlainRendererOptions o;
    o.verbosity = verbosity;
    o.print_summary = false;
    o.interval_steps = 2;
    auto learner = train::LearnerBuilder(tiny::make_model(3), tiny::train_step(), tiny::valid_step())
                       .lr(0.05)
                       .epochs(3)
                       .renderer(train::make_plain_renderer(out, o))
                       .build();
    learner.fit(train, valid);
    std::istringstream in(out.str());
    int lines = 0, epoch_lines = 0;
    for (std::string line; std::getline(in, line);) {
      ++lines;
      if (line.rfind("epoch ", 0) == 0) {
        ++epoch_lines;
        if (verbosity == 0) {
          EXPECT_NE(line.find("train loss"), std::string::npos) << line;
          EXPECT_NE(line.find("valid loss"), std::string::npos) << line;
          EXPECT_NE(line.find("accuracy"), std::string::npos) << line;  // classification keeps its default
        }
      }
    }
    return std::pair{lines, epoch_lines};
  };
  auto [quiet_lines, quiet_epochs] = count(0);
  EXPECT_EQ(quiet_epochs, 3);
  EXPECT_EQ(quiet_lines, 1 + 3);  // "training 3 epochs on ..." and one line per epoch
  // The default options are the quiet ones.
  {
    std::ostringstream out;
    auto learner = train::LearnerBuilder(tiny::make_model(3), tiny::train_step(), tiny::valid_step())
                       .lr(0.05)
                       .epochs(2)
                       .renderer(train::make_plain_renderer(out))
                       .build();
    learner.fit(train, valid);
    std::istringstream in(out.str());
    int epoch_lines = 0;
    for (std::string line; std::getline(in, line);) epoch_lines += line.rfind("epoch ", 0) == 0;
    EXPECT_EQ(epoch_lines, 2) << out.str();
  }
  auto [loud_lines, loud_epochs] = count(1);
  EXPECT_GT(loud_epochs, 6);  // progress lines and a line per split
  EXPECT_GT(loud_lines, quiet_lines);
}

TEST(LearnerTasks, CpuPercentIsMeasuredUnderLoad) {
  auto batches = regression_batches();
  auto busy = [](RModel& m, const RBatch& b) {
    // Busy for 30 ms of wall time per batch.
    auto start = std::chrono::steady_clock::now();
    volatile double x = 0;
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(30))
      for (int i = 0; i < 1000; ++i) x = x + std::sqrt(double(i));
    DynTensor p = m.fc.forward(b.x);
    DynTensor loss = nn::mse_loss(p, b.y);
    return train::TrainResult<train::RegressionOutput>{{loss, p, b.y}, loss.backward()};
  };
  std::ostringstream out;
  train::PlainRendererOptions o;
  o.print_summary = false;
  auto learner = train::LearnerBuilder(make_rmodel(), busy)
                     .lr(0.01)
                     .epochs(2)
                     .renderer(train::make_plain_renderer(out, o))
                     .build();
  learner.fit(batches);
  for (int64_t e = 0; e < 2; ++e) {
    double cpu = learner.history().epoch_value(e, train::Split::train, "cpu_percent").value_or(0);
    EXPECT_GT(cpu, 10) << "epoch " << e;  // ~100 alone; about 50 on 2 cores shared with other builds
    EXPECT_LT(cpu, 100.0 * double(sysconf(_SC_NPROCESSORS_ONLN)) + 20);
  }
  EXPECT_NE(out.str().find("cpu "), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("cpu 0%"), std::string::npos) << out.str();
  for (double v : learner.history().step_series("cpu_percent")) EXPECT_GT(v, 5);  // each step's too
}

TEST(LearnerTasks, MultiLabelOutputs) {
  // Two labels: x0 > 0 and x1 > 0.
  Device d = tiny::device();
  std::vector<float> x = xs(), t;
  for (size_t i = 0; i < x.size(); ++i) t.push_back(x[i] > 0 ? 1.f : 0.f);
  std::vector<RBatch> batches = {
      {DynTensor::from_vector(x, Shape{10, 2}, d), DynTensor::from_vector(t, Shape{10, 2}, d)}};
  auto step = [](RModel& m, const RBatch& b) {
    DynTensor logits = m.fc.forward(b.x);
    DynTensor loss = nn::binary_cross_entropy_with_logits(logits, b.y);
    return train::TrainResult<train::MultiLabelOutput>{{loss, logits, b.y}, loss.backward()};
  };
  d.seed(1);
  auto learner = train::LearnerBuilder(RModel{nn::LinearConfig{2, 2}.init(d)}, step)
                     .optimizer(optim::Adam())
                     .lr(0.1)
                     .epochs(80)
                     .build();
  learner.fit(batches);
  auto last = [&](const std::string& name) {
    return learner.history().epoch_value(79, train::Split::train, name).value_or(-1);
  };
  EXPECT_GE(last("label_accuracy"), 0.95);
  EXPECT_GE(last("label_f1_macro"), 0.9);
}

// A step output of the user's own type: to_host by ADL, its own default metrics, an extra array.
namespace user {
struct Output {
  DynTensor loss;
  DynTensor residuals;  // [n]
  static std::vector<train::MetricPtr> default_metrics();
};
train::BatchOutputs to_host(const Output& o) {
  train::BatchOutputs b;
  b.loss = o.loss.item();
  b.kind = train::OutputKind::custom;
  b.extra["residuals"] = o.residuals.cast(DType::f64).to_vector<double>();
  b.batch_size = int64_t(b.extra["residuals"].size());
  return b;
}
// The largest absolute residual of the epoch.
class MaxResidual final : public train::Metric {
 public:
  std::string name() const override { return "max_residual"; }
  bool higher_is_better() const override { return false; }
  void reset() override { v_ = 0; }
  std::optional<double> update(const train::BatchOutputs& b) override {
    auto it = b.extra.find("residuals");
    if (it == b.extra.end()) return std::nullopt;
    for (double r : it->second) v_ = std::max(v_, std::fabs(r));
    return std::nullopt;
  }
  double value() const override { return v_; }
  train::MetricState state() const override { return {{"v", {v_}}}; }
  void load_state(const train::MetricState& s) override { v_ = s.at("v")[0]; }
  std::unique_ptr<train::Metric> clone() const override { return std::make_unique<MaxResidual>(); }

 private:
  double v_ = 0;
};
std::vector<train::MetricPtr> Output::default_metrics() { return {std::make_shared<MaxResidual>()}; }
}  // namespace user

static_assert(train::StepOutput<user::Output>);
static_assert(train::StepOutput<train::RegressionOutput>);
static_assert(!train::StepOutput<int>);

TEST(LearnerTasks, UserDefinedStepOutput) {
  auto batches = regression_batches();
  auto valid = [](const RModel& m, const RBatch& b) {
    DynTensor r = m.fc.forward(b.x) - b.y;
    return user::Output{mean(r * r), reshape(r, {r.numel()})};
  };
  auto step = [valid](RModel& m, const RBatch& b) {
    user::Output o = valid(m, b);
    Gradients g = o.loss.backward();
    return train::TrainResult<user::Output>{o, std::move(g)};
  };
  auto learner = train::LearnerBuilder(make_rmodel(), step, valid).lr(0.01).build();
  RModel m = learner.fit(batches);
  double expected = 0;
  for (const auto& b : batches) {
    auto p = m.fc.forward(b.x).to_vector<float>(), y = b.y.to_vector<float>();
    for (size_t i = 0; i < y.size(); ++i) expected = std::max(expected, std::fabs(double(p[i]) - y[i]));
  }
  EXPECT_NEAR(learner.evaluate(batches).value("max_residual"), expected, 1e-5);
}

// ---- type deduction ----
namespace {
struct Point {
  float x;
};
struct PBatch {
  DynTensor x;
};
PBatch batch_points(std::vector<Point> items, const Device& d) {
  std::vector<float> v;
  for (const Point& p : items) v.push_back(p.x);
  return {DynTensor::from_vector(v, Shape{int64_t(v.size())}, d)};
}
}  // namespace

TEST(LearnerTasks, BuildersDeduceTheirTypes) {
  auto by_value = [](std::vector<Point> items, const Device& d) { return batch_points(std::move(items), d); };
  auto by_ref = [](const std::vector<Point>& items, const Device& d) { return batch_points(items, d); };
  std::function<PBatch(std::vector<Point>, const Device&)> fn = batch_points;
  static_assert(std::is_same_v<decltype(data::DataLoaderBuilder(by_value)), data::DataLoaderBuilder<Point, PBatch>>);
  static_assert(std::is_same_v<decltype(data::DataLoaderBuilder(by_ref)), data::DataLoaderBuilder<Point, PBatch>>);
  static_assert(std::is_same_v<decltype(data::DataLoaderBuilder(fn)), data::DataLoaderBuilder<Point, PBatch>>);
  static_assert(
      std::is_same_v<decltype(data::DataLoaderBuilder(batch_points)), data::DataLoaderBuilder<Point, PBatch>>);
  auto loader = data::DataLoaderBuilder(by_ref).batch_size(2).build(data::in_memory(std::vector<Point>{{1}, {2}, {3}}));
  EXPECT_EQ(loader->num_batches(), 2u);

  using tiny::Batch;
  using tiny::Model;
  auto step = [](Model& m, const Batch& b) {
    DynTensor logits = m.forward(b.x);
    DynTensor loss = nn::cross_entropy(logits, b.y);
    return train::TrainStepResult{{loss, logits, b.y}, loss.backward()};
  };
  static_assert(
      std::is_same_v<decltype(train::LearnerBuilder(tiny::make_model(1), step)), train::LearnerBuilder<Model, Batch>>);
  static_assert(
      std::is_same_v<decltype(train::LearnerBuilder(tiny::make_model(1), tiny::train_step(), tiny::valid_step())),
                     train::LearnerBuilder<Model, Batch>>);
  static_assert(std::is_same_v<decltype(train::LearnerBuilder(make_rmodel(), regression_train(), regression_valid())),
                               train::LearnerBuilder<RModel, RBatch>>);
  // The explicit forms still compile, with a generic lambda too.
  auto generic = [](auto& m, const auto& b) {
    DynTensor logits = m.forward(b.x);
    DynTensor loss = nn::cross_entropy(logits, b.y);
    return train::TrainStepResult{{loss, logits, b.y}, loss.backward()};
  };
  train::LearnerBuilder<Model, Batch> explicit_form(tiny::make_model(1), generic);
  data::DataLoaderBuilder<Point, PBatch> explicit_loader(batch_points);
  SUCCEED();
}

// learner.hpp's header example, as written there (with a model, steps and loaders to run it on).
TEST(LearnerTasks, HeaderExampleCompilesAndRuns) {
  using Model = tiny::Model;
  Model model = tiny::make_model(2);
  auto train_step = tiny::train_step();
  auto valid_step = tiny::valid_step();
  Device dev = tiny::device();
  tiny::Loader train_loader{tiny::blobs(90, 1), 30, 7, dev}, valid_loader{tiny::blobs(30, 2), 30, 8, dev},
      test_loader{tiny::blobs(30, 3), 30, 9, dev};
  fs::path dir = fs::temp_directory_path() / ("ember_header_example_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::current_path(dir);
  // ---- from include/ember/train/learner.hpp ----
  auto learner =
      train::LearnerBuilder(model, train_step, valid_step)  // Model, Batch deduced
          .optimizer(optim::AdamW({.weight_decay = 1e-4}))
          .scheduler(std::make_unique<optim::CosineAnnealingLR>(1e-3, optim::CosineAnnealingLRConfig{.t_max = 5 * 938}))
          .epochs(5)
          .metrics({train::accuracy_metric(), train::f1_metric()})
          .run_dir("runs/fashion")  // logs, plots, summary, checkpoints/
          .checkpoints({.keep_last = 2, .best_metric = "valid/accuracy"})
          .early_stopping({.metric = "valid/loss", .patience = 3})
          .seed(42)
          .build();
  Model trained = learner.fit(train_loader, valid_loader);  // loaders: DataLoader, shared_ptr, any range
  std::cout << learner.summary().str();
  train::EvalResult test = learner.evaluate(test_loader);  // test.value("accuracy")
  // ----
  EXPECT_FALSE(std::isnan(test.value("accuracy")));
  EXPECT_TRUE(fs::exists(dir / "runs/fashion/summary.json"));
  // The copy above is the header's: every line of the header's example is in this file.
  auto slurp = [](const fs::path& p) {
    std::ifstream f(p);
    std::ostringstream os;
    os << f.rdbuf();
    return os.str();
  };
  std::string header = slurp(fs::path(EMBER_TRAIN_TEST_DIR) / "../../include/ember/train/learner.hpp");
  std::string self = slurp(fs::path(EMBER_TRAIN_TEST_DIR) / "learner_tasks_test.cpp");
  auto squash = [](std::string t) {  // compared without whitespace (clang-format moves comments)
    std::erase_if(t, [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
    return t;
  };
  self = squash(self);
  size_t from = header.find("//   auto learner = train::LearnerBuilder("),
         to = header.find("//   train::EvalResult test");
  ASSERT_TRUE(from != std::string::npos && to != std::string::npos);
  std::istringstream example(header.substr(from, header.find('\n', to) - from));
  int lines = 0;
  for (std::string line; std::getline(example, line); ++lines) {
    std::string code = line.substr(line.find_first_not_of("/ "));
    EXPECT_NE(self.find(squash(code)), std::string::npos) << "learner.hpp's example line not in this test: " << code;
  }
  EXPECT_EQ(lines, 14);
  (void)trained;
  fs::current_path(fs::temp_directory_path());
  fs::remove_all(dir);
}

// A regression run stopped after its second batch and resumed ends with the same epoch metrics as
// one that ran through (the RMSE, MAE and R² sums of the interrupted epoch are in the checkpoint).
TEST(LearnerTasks, RegressionResumesMidEpochWithTheSameMetrics) {
  struct StopAfter : train::Renderer {
    int left;
    explicit StopAfter(int n) : left(n) {}
    void update(const train::ProgressView&) override { --left; }
    bool stop_requested() override { return left <= 0; }
  };
  auto batches = regression_batches();
  fs::path dir = fs::temp_directory_path() / ("ember_regression_resume_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto build = [&](std::shared_ptr<train::Renderer> r, bool resume) {
    auto b = train::LearnerBuilder(make_rmodel(), regression_train(), regression_valid());
    b.optimizer(optim::Adam()).lr(0.05).epochs(2).seed(1).renderer(r).handle_sigint(false);
    b.checkpoints({.dir = dir.string(), .every_epochs = 1});
    if (resume) b.resume_from(dir.string());
    return b.build();
  };
  auto whole = train::LearnerBuilder(make_rmodel(), regression_train(), regression_valid())
                   .optimizer(optim::Adam())
                   .lr(0.05)
                   .epochs(2)
                   .seed(1)
                   .renderer(train::RendererKind::none)
                   .build();
  whole.fit(batches, batches);
  auto first = build(std::make_shared<StopAfter>(2), false);
  first.fit(batches, batches);
  ASSERT_TRUE(first.summary().interrupted);
  auto second = build(std::make_shared<Recorder>(), true);
  second.fit(batches, batches);
  for (const char* name : {"loss", "rmse", "mae", "r2"})
    for (auto split : {train::Split::train, train::Split::valid})
      EXPECT_NEAR(second.history().epoch_value(1, split, name).value_or(-1),
                  whole.history().epoch_value(1, split, name).value_or(-2), 1e-6)
          << name;
  EXPECT_NEAR(second.history().epoch_value(0, train::Split::train, "rmse").value_or(-1),
              whole.history().epoch_value(0, train::Split::train, "rmse").value_or(-2), 1e-6);
  fs::remove_all(dir);
}
