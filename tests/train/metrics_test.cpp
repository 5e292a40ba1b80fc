// Metric values against hand computations and cases/metrics.json (gen_metric_cases.py: numpy from
// the definitions), and the process statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/train/metrics.hpp"
#include "ember/train/system_stats.hpp"

using namespace ember;
using namespace ember::train;

TEST(Metrics, HandComputed) {
  // Three samples, three classes: predictions 0, 2, 1 for targets 0, 1, 1.
  std::vector<float> logits = {2, 1, 0, /**/ 0, 1, 2, /**/ 0, 3, 1};
  std::vector<int64_t> targets = {0, 1, 1};
  EXPECT_DOUBLE_EQ(accuracy(logits, targets, 3), 2.0 / 3);
  EXPECT_DOUBLE_EQ(top_k_accuracy(logits, targets, 3, 2), 1.0);  // sample 2: class 1 is second
  EXPECT_DOUBLE_EQ(top_k_accuracy(logits, targets, 3, 1), 2.0 / 3);
  ConfusionMatrix cm;
  cm.add(logits, targets, 3);
  EXPECT_EQ(cm.count(0, 0), 1);
  EXPECT_EQ(cm.count(1, 2), 1);
  EXPECT_EQ(cm.count(1, 1), 1);
  EXPECT_EQ(cm.total(), 3);
  // Per class: 0: P=1 R=1; 1: P=1 R=1/2; 2: P=0 R=0 (predicted once, never a target).
  EXPECT_DOUBLE_EQ(cm.precision(Average::macro), 2.0 / 3);
  EXPECT_DOUBLE_EQ(cm.recall(Average::macro), 0.5);
  EXPECT_DOUBLE_EQ(cm.f1(Average::macro), (1 + 2.0 / 3) / 3);
  EXPECT_DOUBLE_EQ(cm.f1(Average::micro), 2.0 / 3);
  // Ignored targets do not count.
  std::vector<int64_t> ignored = {0, -100, 1};
  EXPECT_DOUBLE_EQ(accuracy(logits, ignored, 3), 1.0);
}

TEST(Metrics, BinaryAurocByHand) {
  // Positives 0.9, 0.4; negatives 0.5, 0.4, 0.1: pairs won 3 + 0.5 (tie) + 1 of 6.
  std::vector<double> scores = {0.9, 0.5, 0.4, 0.4, 0.1};
  std::vector<uint8_t> labels = {1, 0, 1, 0, 0};
  EXPECT_DOUBLE_EQ(binary_auroc(scores, labels), (3 + 0.5 + 1) / 6);
  std::vector<uint8_t> all_pos = {1, 1, 1, 1, 1};
  EXPECT_TRUE(std::isnan(binary_auroc(scores, all_pos)));
}

TEST(Metrics, AgainstNumpyReference) {
  std::ifstream f(EMBER_TRAIN_TEST_DIR "/cases/metrics.json");
  ASSERT_TRUE(f) << "missing cases/metrics.json (run gen_metric_cases.py)";
  nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_FALSE(j["cases"].empty());
  for (const auto& c : j["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    int64_t nc = c["num_classes"];
    auto logits_d = c["logits"].get<std::vector<double>>();
    std::vector<float> logits(logits_d.begin(), logits_d.end());
    auto targets = c["targets"].get<std::vector<int64_t>>();
    EXPECT_NEAR(accuracy(logits, targets, nc), c["accuracy"].get<double>(), 1e-12);
    for (const auto& [k, v] : c["top_k"].items())
      EXPECT_NEAR(top_k_accuracy(logits, targets, nc, std::stoll(k)), v.get<double>(), 1e-12) << "k=" << k;
    ConfusionMatrix cm;
    cm.add(logits, targets, nc);
    auto expected_cm = c["confusion"].get<std::vector<int64_t>>();
    int64_t classes = int64_t(std::lround(std::sqrt(double(expected_cm.size()))));
    ASSERT_EQ(cm.num_classes(), classes);
    EXPECT_EQ(cm.counts(), expected_cm);
    EXPECT_NEAR(cm.precision(Average::macro), c["precision_macro"].get<double>(), 1e-12);
    EXPECT_NEAR(cm.recall(Average::macro), c["recall_macro"].get<double>(), 1e-12);
    EXPECT_NEAR(cm.f1(Average::macro), c["f1_macro"].get<double>(), 1e-12);
    EXPECT_NEAR(cm.precision(Average::micro), c["micro"].get<double>(), 1e-12);
    EXPECT_NEAR(cm.recall(Average::micro), c["micro"].get<double>(), 1e-12);
    EXPECT_NEAR(auroc(logits, targets, nc), c["auroc"].get<double>(), 1e-12);
  }
}

// The accumulators over several batches equal the functions over the concatenation.
TEST(Metrics, AccumulatorsMatchFunctions) {
  std::ifstream f(EMBER_TRAIN_TEST_DIR "/cases/metrics.json");
  nlohmann::json c = nlohmann::json::parse(f)["cases"][1];
  int64_t nc = c["num_classes"];
  auto logits_d = c["logits"].get<std::vector<double>>();
  std::vector<float> logits(logits_d.begin(), logits_d.end());
  auto targets = c["targets"].get<std::vector<int64_t>>();
  std::vector<MetricPtr> protos = {accuracy_metric(),      top_k_accuracy_metric(5), precision_metric(),
                                   recall_metric(),        f1_metric(Average::macro), f1_metric(Average::micro),
                                   auroc_metric()};
  std::vector<std::unique_ptr<Metric>> ms;
  for (auto& p : protos) ms.push_back(p->clone());
  for (size_t from = 0; from < targets.size(); from += 16) {
    size_t to = std::min(targets.size(), from + 16);
    BatchOutputs b;
    b.loss = 0;
    b.batch_size = int64_t(to - from);
    b.num_classes = nc;
    b.logits.assign(logits.begin() + long(from * size_t(nc)), logits.begin() + long(to * size_t(nc)));
    b.targets.assign(targets.begin() + long(from), targets.begin() + long(to));
    for (auto& m : ms) m->update(b);
  }
  EXPECT_NEAR(ms[0]->value(), c["accuracy"].get<double>(), 1e-12);
  EXPECT_NEAR(ms[1]->value(), c["top_k"]["5"].get<double>(), 1e-12);
  EXPECT_NEAR(ms[2]->value(), c["precision_macro"].get<double>(), 1e-12);
  EXPECT_NEAR(ms[3]->value(), c["recall_macro"].get<double>(), 1e-12);
  EXPECT_NEAR(ms[4]->value(), c["f1_macro"].get<double>(), 1e-12);
  EXPECT_NEAR(ms[5]->value(), c["micro"].get<double>(), 1e-12);
  EXPECT_NEAR(ms[6]->value(), c["auroc"].get<double>(), 1e-12);
  EXPECT_EQ(ms[1]->name(), "top5_accuracy");
  EXPECT_EQ(ms[4]->name(), "f1_macro");
  // State round trip.
  for (auto& m : ms) {
    auto copy = m->clone();
    copy->load_state(m->state());
    EXPECT_EQ(copy->value(), m->value()) << m->name();
  }
}

TEST(Metrics, LossIsSampleWeighted) {
  auto loss = loss_metric()->clone();
  BatchOutputs a, b;
  a.loss = 1.0, a.batch_size = 3;
  b.loss = 2.0, b.batch_size = 1;
  loss->update(a);
  loss->update(b);
  EXPECT_DOUBLE_EQ(loss->value(), (3 * 1.0 + 2.0) / 4);
}

TEST(Metrics, ToHostReadsStepOutputs) {
  ClassificationOutput out{DynTensor::full(Shape{}, 0.5, DType::f32), DynTensor::from_vector<float>({1, 2, 3, 4}, {2, 2}),
                           DynTensor::from_vector<int64_t>({1, 0}, {2})};
  BatchOutputs b = to_host(out);
  EXPECT_DOUBLE_EQ(b.loss, 0.5);
  EXPECT_EQ(b.batch_size, 2);
  EXPECT_EQ(b.num_classes, 2);
  EXPECT_EQ(b.targets, (std::vector<int64_t>{1, 0}));
  ClassificationOutput bad{DynTensor::from_vector<float>({1, 2}, {2}), {}, {}};
  EXPECT_THROW(to_host(bad), Error);
}

TEST(SystemStats, ProcReadings) {
  double cpu0 = process_cpu_seconds();
  ASSERT_TRUE(std::isfinite(cpu0));
  volatile double x = 0;
  for (int i = 0; i < 20000000; ++i) x = x + std::sqrt(double(i));
  EXPECT_GT(process_cpu_seconds(), cpu0);
  EXPECT_GT(process_rss_bytes(), 1 << 20);
  ProcessMonitor mon;
  for (int i = 0; i < 20000000; ++i) x = x + std::sqrt(double(i));
  ProcessSample s = mon.sample();
  EXPECT_GT(s.cpu_percent, 10);
  EXPECT_LT(s.cpu_percent, 100 * 64);
  EXPECT_FALSE(device_memory(Device::cpu()).has_value());  // CPU memory is the process's
}
