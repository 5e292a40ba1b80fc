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

// ---- regression and multi-label (expected values from scikit-learn 1.2.1, the expression beside
// each; p and y below are the arrays in the same order) ----
namespace {

const std::vector<double> kPred = {5.0, 0.0, 2.1, 7.8, -1.2, 3.3, 4.4};
const std::vector<double> kTarget = {3.0, -0.5, 2.0, 7.0, -1.0, 3.0, 5.0};

BatchOutputs regression_batch(size_t from, size_t to, int64_t outputs = 1, const std::vector<double>& p = kPred,
                              const std::vector<double>& y = kTarget) {
  BatchOutputs b;
  b.kind = OutputKind::regression;
  b.num_outputs = outputs;
  b.predictions.assign(p.begin() + long(from), p.begin() + long(to));
  b.values.assign(y.begin() + long(from), y.begin() + long(to));
  b.batch_size = int64_t(to - from) / outputs;
  return b;
}

double epoch_value(const MetricPtr& proto, const std::vector<BatchOutputs>& batches) {
  auto m = proto->clone();
  m->reset();
  for (const auto& b : batches) m->update(b);
  return m->value();
}

}  // namespace

TEST(Metrics, RegressionFunctionsMatchScikitLearn) {
  EXPECT_NEAR(mean_squared_error(kPred, kTarget), 0.7699999999999998, 1e-12);   // mean_squared_error(y, p)
  EXPECT_NEAR(mean_absolute_error(kPred, kTarget), 0.6428571428571427, 1e-12);  // mean_absolute_error(y, p)
  EXPECT_NEAR(r2_score(kPred, kTarget), 0.8885376661742984, 1e-12);             // r2_score(y, p)
}

TEST(Metrics, RegressionMetricsAreOverTheEpochNotMeansOfBatches) {
  // Uneven batches of 1, 3 and 3 samples.
  std::vector<BatchOutputs> batches = {regression_batch(0, 1), regression_batch(1, 4), regression_batch(4, 7)};
  EXPECT_NEAR(epoch_value(mse_metric(), batches), 0.7699999999999998, 1e-12);  // mean_squared_error(y, p)
  // np.sqrt(mean_squared_error(y, p)); the mean of the three batch RMSEs would be 0.98396.
  EXPECT_NEAR(epoch_value(rmse_metric(), batches), 0.8774964387392121, 1e-12);
  EXPECT_NEAR(epoch_value(mae_metric(), batches), 0.6428571428571427, 1e-12);  // mean_absolute_error(y, p)
  // r2_score(y, p) with SS_tot about the epoch's mean (batch R²s average 0.97145).
  EXPECT_NEAR(epoch_value(r2_metric(), batches), 0.8885376661742984, 1e-12);
  // The loss, per sample: batch MSEs 4.0, 0.3, 0.1633 weighted 1:3:3 (unweighted: 1.4878).
  auto loss = loss_metric()->clone();
  for (auto b : batches) {
    b.loss = mean_squared_error(b.predictions, b.values);
    loss->update(b);
  }
  EXPECT_NEAR(loss->value(), 0.7699999999999998, 1e-12);
  // Classification metrics ignore regression batches (no "target out of range").
  EXPECT_TRUE(std::isnan(epoch_value(accuracy_metric(), batches)));
  EXPECT_TRUE(std::isnan(epoch_value(f1_metric(), batches)));
}

TEST(Metrics, MultiOutputRegressionMatchesScikitLearn) {
  // P = [[0.5, 1], [2, -1], [3.5, 0], [7, 2.5]], Y = [[1, 0.5], [2.5, -1], [3, 0.5], [8, 2]]
  std::vector<double> p = {0.5, 1.0, 2.0, -1.0, 3.5, 0.0, 7.0, 2.5}, y = {1.0, 0.5, 2.5, -1.0, 3.0, 0.5, 8.0, 2.0};
  std::vector<BatchOutputs> batches = {regression_batch(0, 2, 2, p, y), regression_batch(2, 8, 2, p, y)};
  EXPECT_NEAR(epoch_value(r2_metric(), batches), 0.885063957863055, 1e-12);  // r2_score(Y, P) (uniform_average)
  EXPECT_NEAR(epoch_value(mse_metric(), batches), 0.3125, 1e-12);            // mean_squared_error(Y, P)
  EXPECT_NEAR(epoch_value(mae_metric(), batches), 0.5, 1e-12);               // mean_absolute_error(Y, P)
  EXPECT_NEAR(r2_score(p, y, 2), 0.885063957863055, 1e-12);
}

TEST(Metrics, MultiLabelMatchesScikitLearn) {
  // Logits L [5, 3] and targets T; predictions sigmoid(L) > threshold. Label 2 is never a target
  // nor predicted (its F1 counts 0, as zero_division=0).
  std::vector<double> logits = {2.0, -1.0, -3.0, 0.5, 0.3, -2.0, -1.0, 1.5, -0.1, -0.2, -0.4, -1.0, 1.0, 2.0, -5.0};
  std::vector<double> targets = {1, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0};
  auto batch = [&](size_t from, size_t to) {
    BatchOutputs b;
    b.kind = OutputKind::multilabel;
    b.num_labels = 3;
    b.predictions.assign(logits.begin() + long(3 * from), logits.begin() + long(3 * to));
    b.values.assign(targets.begin() + long(3 * from), targets.begin() + long(3 * to));
    b.batch_size = int64_t(to - from);
    return b;
  };
  std::vector<BatchOutputs> batches = {batch(0, 2), batch(2, 5)};
  EXPECT_NEAR(epoch_value(multilabel_accuracy_metric(), batches), 0.8666666666666667, 1e-12);  // 1 - hamming_loss(T, pred)
  EXPECT_NEAR(epoch_value(multilabel_f1_metric(Average::macro), batches), 0.5555555555555555,
              1e-12);  // f1_score(T, pred, average='macro', zero_division=0)
  EXPECT_NEAR(epoch_value(multilabel_f1_metric(Average::micro), batches), 0.8333333333333334,
              1e-12);  // f1_score(T, pred, average='micro')
  EXPECT_NEAR(epoch_value(multilabel_f1_metric(Average::macro, 0.7), batches), 0.5333333333333333,
              1e-12);  // the same with sigmoid(L) > 0.7
  EXPECT_EQ(multilabel_f1_metric()->name(), "label_f1_macro");
  EXPECT_TRUE(std::isnan(epoch_value(accuracy_metric(), batches)));
}

TEST(Metrics, RegressionStateRoundTrips) {
  for (const auto& proto : {rmse_metric(), r2_metric(), mae_metric()}) {
    auto m = proto->clone();
    m->reset();
    m->update(regression_batch(0, 4));
    auto copy = m->clone();
    copy->load_state(m->state());
    copy->update(regression_batch(4, 7));
    m->update(regression_batch(4, 7));
    EXPECT_EQ(copy->value(), m->value()) << m->name();
  }
}

TEST(Metrics, ToHostReadsRegressionAndMultiLabelOutputs) {
  RegressionOutput r{DynTensor::full(Shape{}, 0.25, DType::f32), DynTensor::from_vector<float>({1, 2, 3}, {3, 1}),
                     DynTensor::from_vector<float>({1.5f, 2, 151}, {3})};
  BatchOutputs b = to_host(r);
  EXPECT_EQ(b.kind, OutputKind::regression);
  EXPECT_EQ(b.batch_size, 3);
  EXPECT_EQ(b.num_outputs, 1);
  EXPECT_EQ(b.values, (std::vector<double>{1.5, 2, 151}));
  MultiLabelOutput ml{DynTensor::full(Shape{}, 0.5, DType::f32), DynTensor::from_vector<float>({1, -1, 2, 0}, {2, 2}),
                      DynTensor::from_vector<int64_t>({1, 0, 1, 1}, {2, 2})};
  b = to_host(ml);
  EXPECT_EQ(b.kind, OutputKind::multilabel);
  EXPECT_EQ(b.num_labels, 2);
  EXPECT_EQ(b.batch_size, 2);
  // A regression returned as a ClassificationOutput says what to return instead.
  ClassificationOutput wrong{r.loss, r.predictions, DynTensor::from_vector<float>({151, 75, 141}, {3})};
  try {
    to_host(wrong);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RegressionOutput"), std::string::npos) << e.what();
  }
}
