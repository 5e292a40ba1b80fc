// Learning-rate schedulers against PyTorch 1.13: every sequence in cases/schedulers.json (made by
// gen_scheduler_cases.py) must match to 1e-9 relative (CosineAnnealingLR to 1e-10), and so must the
// continuation after a state() -> JSON text -> load_state() round trip and after clone(), taken
// mid-sequence. Writes <reports>/nn-schedulers.json: {"schedulers", "cases", "failed", ...}.
#include "ember/optim/scheduler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "ember/core/error.hpp"

namespace ember::optim {
namespace {

using nlohmann::json;

struct Case {
  std::string name;
  std::string scheduler;
  double base_lr = 0;
  json config;
  std::vector<double> lrs;      // after construction, then after each step
  std::vector<double> metrics;  // ReduceLROnPlateau only
};

// gtest prints a parameter with this instead of its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> load_cases() {
  std::ifstream in(std::string(EMBER_OPTIM_TEST_DIR) + "/cases/schedulers.json");
  if (!in) return {};
  json doc = json::parse(in);
  std::vector<Case> out;
  for (const auto& c : doc.at("cases")) {
    Case k;
    k.name = c.at("name");
    k.scheduler = c.at("scheduler");
    k.base_lr = c.at("base_lr");
    k.config = c.at("config");
    k.lrs = c.at("lrs").get<std::vector<double>>();
    if (c.contains("metrics")) k.metrics = c.at("metrics").get<std::vector<double>>();
    out.push_back(std::move(k));
  }
  return out;
}

// Builds the ember scheduler for a {"scheduler", "config"} spec (the generator's spec format).
std::unique_ptr<LrScheduler> build(const std::string& kind, const json& c, double base_lr) {
  if (kind == "FixedLR") return std::make_unique<FixedLR>(base_lr);
  if (kind == "LambdaLR") {
    const std::string fn = c.at("lambda");
    if (fn == "pow_0.95")
      return std::make_unique<LambdaLR>(base_lr, [](int64_t e) { return std::pow(0.95, static_cast<double>(e)); });
    if (fn == "inv_sqrt_1p")
      return std::make_unique<LambdaLR>(base_lr,
                                        [](int64_t e) { return 1.0 / std::sqrt(1.0 + static_cast<double>(e)); });
    ADD_FAILURE() << "unknown lambda " << fn;
    return nullptr;
  }
  if (kind == "ConstantLR")
    return std::make_unique<ConstantLR>(base_lr, ConstantLRConfig{c.at("factor"), c.at("total_iters")});
  if (kind == "StepLR") return std::make_unique<StepLR>(base_lr, StepLRConfig{c.at("step_size"), c.at("gamma")});
  if (kind == "MultiStepLR")
    return std::make_unique<MultiStepLR>(
        base_lr, MultiStepLRConfig{c.at("milestones").get<std::vector<int64_t>>(), c.at("gamma")});
  if (kind == "ExponentialLR") return std::make_unique<ExponentialLR>(base_lr, ExponentialLRConfig{c.at("gamma")});
  if (kind == "LinearLR")
    return std::make_unique<LinearLR>(base_lr,
                                      LinearLRConfig{c.at("start_factor"), c.at("end_factor"), c.at("total_iters")});
  if (kind == "PolynomialLR")
    return std::make_unique<PolynomialLR>(base_lr, PolynomialLRConfig{c.at("total_iters"), c.at("power")});
  if (kind == "CosineAnnealingLR")
    return std::make_unique<CosineAnnealingLR>(base_lr, CosineAnnealingLRConfig{c.at("t_max"), c.at("eta_min")});
  if (kind == "CosineAnnealingWarmRestarts")
    return std::make_unique<CosineAnnealingWarmRestarts>(
        base_lr, CosineAnnealingWarmRestartsConfig{c.at("t_0"), c.at("t_mult"), c.at("eta_min")});
  if (kind == "OneCycleLR") {
    OneCycleLRConfig cfg;
    cfg.max_lr = c.at("max_lr");
    cfg.total_steps = c.at("total_steps");
    cfg.pct_start = c.at("pct_start");
    cfg.anneal_strategy = c.at("anneal_strategy") == "cos" ? AnnealStrategy::cos : AnnealStrategy::linear;
    cfg.div_factor = c.at("div_factor");
    cfg.final_div_factor = c.at("final_div_factor");
    cfg.three_phase = c.at("three_phase");
    return std::make_unique<OneCycleLR>(cfg);
  }
  if (kind == "NoamLR") return std::make_unique<NoamLR>(base_lr, NoamLRConfig{c.at("d_model"), c.at("warmup_steps")});
  if (kind == "WarmupLinearLR")
    return std::make_unique<WarmupLinearLR>(base_lr, WarmupLinearLRConfig{c.at("warmup_steps"), c.at("total_steps")});
  if (kind == "ReduceLROnPlateau") {
    ReduceLROnPlateauConfig cfg;
    cfg.mode = c.at("mode") == "min" ? PlateauMode::min : PlateauMode::max;
    cfg.factor = c.at("factor");
    cfg.patience = c.at("patience");
    cfg.threshold = c.at("threshold");
    cfg.threshold_mode = c.at("threshold_mode") == "rel" ? ThresholdMode::rel : ThresholdMode::abs;
    cfg.cooldown = c.at("cooldown");
    cfg.min_lr = c.at("min_lr");
    cfg.eps = c.at("eps");
    return std::make_unique<ReduceLROnPlateau>(base_lr, cfg);
  }
  if (kind == "ChainedScheduler" || kind == "SequentialLR") {
    std::vector<std::unique_ptr<LrScheduler>> children;
    for (const auto& s : c.at("schedulers")) children.push_back(build(s.at("scheduler"), s.at("config"), base_lr));
    if (kind == "ChainedScheduler") return std::make_unique<ChainedScheduler>(std::move(children));
    return std::make_unique<SequentialLR>(std::move(children), c.at("milestones").get<std::vector<int64_t>>());
  }
  ADD_FAILURE() << "unknown scheduler " << kind;
  return nullptr;
}

// Takes step i (0-based) of a case.
double advance(LrScheduler& s, const Case& c, size_t i) {
  if (auto* plateau = dynamic_cast<ReduceLROnPlateau*>(&s)) return plateau->step(c.metrics.at(i));
  return s.step();
}

double tolerance(const Case& c) { return c.scheduler == "CosineAnnealingLR" ? 1e-10 : 1e-9; }

struct Tally {
  std::set<std::string> schedulers;
  int cases = 0;
  int failed = 0;
  double max_rel_error = 0;
} tally;

void expect_lr(double got, double want, double tol, const std::string& what) {
  const double err = std::abs(got - want);
  if (want != 0) tally.max_rel_error = std::max(tally.max_rel_error, err / std::abs(want));
  EXPECT_LE(err, tol * std::abs(want) + 1e-300) << what << ": got " << got << ", torch " << want;
}

SchedulerState through_json(const SchedulerState& st) {
  const std::string text = json(st).dump();
  return json::parse(text).get<SchedulerState>();
}

class TorchSequence : public ::testing::TestWithParam<Case> {};

TEST_P(TorchSequence, MatchesAndResumes) {
  const Case& c = GetParam();
  SCOPED_TRACE(c.name);
  const size_t steps = c.lrs.size() - 1;
  const double tol = tolerance(c);
  tally.schedulers.insert(c.scheduler);

  auto sched = build(c.scheduler, c.config, c.base_lr);
  ASSERT_NE(sched, nullptr);
  EXPECT_EQ(sched->name(), c.scheduler);
  expect_lr(sched->lr(), c.lrs[0], tol, "lr after construction");
  for (size_t i = 0; i < steps; ++i) {
    const double ret = advance(*sched, c, i);
    EXPECT_EQ(ret, sched->lr()) << "step " << i + 1 << " returned a value other than lr()";
    expect_lr(sched->lr(), c.lrs[i + 1], tol, "lr after step " + std::to_string(i + 1));
    EXPECT_EQ(sched->last_epoch(), static_cast<int64_t>(i + 1));
  }

  // Stop mid-sequence; continue from a saved-and-loaded state (through JSON text) in a freshly
  // built scheduler, and from a clone. Both must continue the torch sequence.
  for (size_t k : {size_t{1}, size_t{37}, size_t{73}}) {
    auto first = build(c.scheduler, c.config, c.base_lr);
    for (size_t i = 0; i < k; ++i) advance(*first, c, i);
    auto resumed = build(c.scheduler, c.config, c.base_lr);
    resumed->load_state(through_json(first->state()));
    EXPECT_EQ(resumed->lr(), first->lr()) << "lr after load_state at step " << k;
    auto cloned = first->clone();
    for (size_t i = k; i < steps; ++i) {
      advance(*resumed, c, i);
      advance(*cloned, c, i);
      expect_lr(resumed->lr(), c.lrs[i + 1], tol,
                "resumed at " + std::to_string(k) + ", step " + std::to_string(i + 1));
      expect_lr(cloned->lr(), c.lrs[i + 1], tol, "cloned at " + std::to_string(k) + ", step " + std::to_string(i + 1));
    }
    EXPECT_EQ(first->last_epoch(), static_cast<int64_t>(k)) << "stepping the clone moved the original";
  }

  ++tally.cases;
  if (HasFailure()) ++tally.failed;
}

std::string case_label(const ::testing::TestParamInfo<Case>& info) {
  return "c" + std::to_string(info.index) + "_" + info.param.scheduler;
}

INSTANTIATE_TEST_SUITE_P(Torch, TorchSequence, ::testing::ValuesIn(load_cases()), case_label);

TEST(Schedulers, CaseFileHasEveryScheduler) {
  std::set<std::string> kinds;
  for (const auto& c : load_cases()) kinds.insert(c.scheduler);
  EXPECT_GE(kinds.size(), 16u) << "cases/schedulers.json missing or incomplete; run gen_scheduler_cases.py";
}

TEST(Schedulers, OneCycleStopsAfterTotalSteps) {
  OneCycleLR s({.max_lr = 0.1, .total_steps = 3});
  for (int i = 0; i < 3; ++i) s.step();
  const double last = s.lr();
  EXPECT_THROW(s.step(), Error);
  EXPECT_EQ(s.last_epoch(), 3);  // a refused step leaves the state as it was
  EXPECT_EQ(s.lr(), last);
}

TEST(Schedulers, PlateauNeedsMetricAndCannotCompose) {
  ReduceLROnPlateau p(0.1);
  EXPECT_THROW(p.step(), Error);
  EXPECT_EQ(p.step(1.0), 0.1);
  std::vector<std::unique_ptr<LrScheduler>> v;
  v.push_back(std::make_unique<ReduceLROnPlateau>(0.1));
  EXPECT_THROW(ChainedScheduler{std::move(v)}, Error);
}

TEST(Schedulers, PlateauStateIsFiniteBeforeAnyImprovement) {
  ReduceLROnPlateau p(0.1, {.mode = PlateauMode::max});
  for (const auto& [key, value] : p.state()) EXPECT_TRUE(std::isfinite(value)) << key;
  p.step(std::numeric_limits<double>::quiet_NaN());  // not an improvement: best stays -inf
  ReduceLROnPlateau q(0.1, {.mode = PlateauMode::max});
  q.load_state(p.state());
  EXPECT_EQ(q.state(), p.state());
}

TEST(Schedulers, RejectsBadConfigs) {
  EXPECT_THROW(StepLR(0.1, {.step_size = 0}), Error);
  EXPECT_THROW(ConstantLR(0.1, {.factor = 0.0}), Error);
  EXPECT_THROW(ConstantLR(0.1, {.factor = 1.5}), Error);
  EXPECT_THROW(LinearLR(0.1, {.start_factor = 0.0}), Error);
  EXPECT_THROW(CosineAnnealingLR(0.1, {.t_max = 0}), Error);
  EXPECT_THROW(CosineAnnealingWarmRestarts(0.1, {.t_0 = 0}), Error);
  EXPECT_THROW(OneCycleLR({.total_steps = 10, .pct_start = 0.1}), Error);  // an empty warm-up phase
  EXPECT_THROW(NoamLR(1.0, {.d_model = 512, .warmup_steps = 0}), Error);
  EXPECT_THROW(WarmupLinearLR(0.1, {.warmup_steps = 10, .total_steps = 5}), Error);
  EXPECT_THROW(ReduceLROnPlateau(0.1, {.factor = 1.0}), Error);
  std::vector<std::unique_ptr<LrScheduler>> two;
  two.push_back(std::make_unique<FixedLR>(0.1));
  two.push_back(std::make_unique<FixedLR>(0.1));
  EXPECT_THROW(SequentialLR(std::move(two), {}), Error);
  EXPECT_THROW(ChainedScheduler({}), Error);
}

TEST(Schedulers, LoadStateNamesTheMissingKey) {
  StepLR s(0.1, {.step_size = 2});
  try {
    s.load_state({{"lr", 0.1}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("last_epoch"), std::string::npos) << e.what();
  }
  std::vector<std::unique_ptr<LrScheduler>> v;
  v.push_back(std::make_unique<ExponentialLR>(1.0, ExponentialLRConfig{0.5}));
  ChainedScheduler chain(std::move(v));
  SchedulerState st = chain.state();
  EXPECT_TRUE(st.contains("schedulers.0.last_epoch"));
  st.erase("schedulers.0.lr");
  EXPECT_THROW(chain.load_state(st), Error);
}

TEST(Schedulers, CloneIsIndependent) {
  std::vector<std::unique_ptr<LrScheduler>> v;
  v.push_back(std::make_unique<LinearLR>(1.0, LinearLRConfig{.start_factor = 0.5, .total_iters = 4}));
  v.push_back(std::make_unique<ExponentialLR>(1.0, ExponentialLRConfig{0.5}));
  SequentialLR seq(std::move(v), {4});
  auto copy = seq.clone();
  for (int i = 0; i < 6; ++i) copy->step();
  EXPECT_EQ(seq.last_epoch(), 0);
  EXPECT_EQ(seq.lr(), 0.5);
  EXPECT_EQ(copy->lr(), 0.25);  // restarted ExponentialLR at step 4: 1, then 0.5, 0.25
}

}  // namespace
}  // namespace ember::optim

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::filesystem::path reports = EMBER_REPORTS_DIR;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reports") reports = argv[i + 1];
  const int rc = RUN_ALL_TESTS();
  const auto& t = ember::optim::tally;
  std::filesystem::create_directories(reports);
  std::ofstream(reports / "nn-schedulers.json") << nlohmann::json{{"schedulers", t.schedulers.size()},
                                                                  {"cases", t.cases},
                                                                  {"failed", t.failed},
                                                                  {"max_rel_error", t.max_rel_error}}
                                                       .dump(1)
                                                << "\n";
  return rc;
}
