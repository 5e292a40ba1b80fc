#include "coverage.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <string_view>

namespace ember::conformance {

namespace {

// IR ops whose conformance test lives outside this runner, with where. Their values cannot be
// compared bit for bit with PyTorch's (another generator), so they have no case here.
const std::map<std::string_view, std::string_view> kCoveredElsewhere = {
    {"random_uniform", "tests/tensor/random_test.cpp (distribution, bounds, per-seed reproducibility)"},
    {"random_normal", "tests/tensor/random_test.cpp (distribution, bounds, per-seed reproducibility)"},
    {"random_bernoulli", "tests/tensor/random_test.cpp (distribution, bounds, per-seed reproducibility)"},
    {"random_randint", "tests/tensor/random_test.cpp (distribution, bounds, per-seed reproducibility)"},
    {"custom", "tests/tensor/custom_op_test.cpp (user-defined ops on every CPU stack against their composition), "
               "tests/backends/cuda/custom_op_test.cpp"},
};

// A decorator that forwards everything to `inner` and counts the kinds of the executed ops.
class CountingBackend final : public ForwardingBackend {
 public:
  explicit CountingBackend(std::shared_ptr<Backend> inner) : ForwardingBackend(std::move(inner)) {
    for (auto& c : counts_) c = 0;
  }
  std::vector<PrimitivePtr> execute(Op op) override {
    counts_[static_cast<size_t>(op.kind)].fetch_add(1, std::memory_order_relaxed);
    return inner_->execute(std::move(op));
  }

  int64_t count(OpKind k) const { return counts_[static_cast<size_t>(k)].load(std::memory_order_relaxed); }
  // Whether the backend runs ops of kind `k` (the backends decide by kind alone).
  bool supports_kind(OpKind k) const { return inner_->supports(Op{k, {}, NoAttrs{}, {}}); }

 private:
  std::array<std::atomic<int64_t>, kNumOps> counts_;
};

// The counters, by stack name, in the order the stacks were counted.
std::vector<std::pair<std::string, std::shared_ptr<CountingBackend>>>& counters() {
  static std::vector<std::pair<std::string, std::shared_ptr<CountingBackend>>> c;
  return c;
}

// Whether every conformance case of `stack` (the suites conformance_<stack>_<family>) runs under
// the current gtest filter.
bool all_cases_run(const std::string& stack) {
  const std::string prefix = "conformance_" + test_name(stack) + "_";
  const testing::UnitTest& ut = *testing::UnitTest::GetInstance();
  int suites = 0;
  for (int i = 0; i < ut.total_test_suite_count(); ++i) {
    const testing::TestSuite& s = *ut.GetTestSuite(i);
    if (std::string_view(s.name()).substr(0, prefix.size()) != prefix) continue;
    ++suites;
    for (int j = 0; j < s.total_test_count(); ++j)
      if (!s.GetTestInfo(j)->should_run()) return false;
  }
  return suites > 0;
}

struct Missing {
  std::string stack, op;
};
struct Coverage {
  std::vector<std::string> checked;  // stacks whose cases all ran
  std::vector<Missing> missing;      // supported, not executed, not covered elsewhere
  int covered = 0;                   // ops not missing on any checked stack
};

Coverage coverage() {
  Coverage c;
  std::array<bool, kNumOps> missing_somewhere{};
  for (const auto& [stack, counter] : counters()) {
    if (!all_cases_run(stack)) continue;
    c.checked.push_back(stack);
    for (int i = 0; i < kNumOps; ++i) {
      const OpKind k = static_cast<OpKind>(i);
      if (counter->count(k) > 0 || kCoveredElsewhere.contains(op_name(k)) || !counter->supports_kind(k)) continue;
      c.missing.push_back({stack, std::string(op_name(k))});
      missing_somewhere[size_t(i)] = true;
    }
  }
  for (bool m : missing_somewhere) c.covered += m ? 0 : 1;
  return c;
}

class CoverageTest : public testing::Test {
 public:
  explicit CoverageTest(std::string stack) : stack_(std::move(stack)) {}
  void TestBody() override {
    if (GTEST_FLAG_GET(shuffle)) GTEST_SKIP() << "the coverage check needs the cases to run first (no --gtest_shuffle)";
    if (!all_cases_run(stack_))
      GTEST_SKIP() << "not every conformance case of " << stack_ << " runs under this filter: coverage not checked";
    for (const auto& m : coverage().missing)
      if (m.stack == stack_)
        ADD_FAILURE() << "IR op '" << m.op << "' (ops.def) is supported by " << stack_
                      << " but no conformance case executed it: add a case (gen_ir_cases.py) or list it in "
                         "kCoveredElsewhere (coverage.cpp) with the test that covers it";
  }

 private:
  std::string stack_;
};

}  // namespace

Device counted(const std::string& stack, const Device& device) {
  const bool autodiff = device.is_autodiff();
  auto counter = std::make_shared<CountingBackend>((autodiff ? device.inner() : device).backend_ptr());
  counters().emplace_back(stack, counter);
  Device d(counter);
  return autodiff ? d.autodiff() : d;
}

void register_coverage_tests() {
  for (const auto& [stack, counter] : counters()) {
    std::string s = stack;
    testing::RegisterTest("conformance_coverage", test_name(stack).c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [s]() -> testing::Test* { return new CoverageTest(s); });
  }
}

void add_coverage_report(Json& report) {
  Coverage c = coverage();
  report["ir_ops"] = kNumOps;
  if (c.checked.empty())
    report["ir_ops_covered"] = nullptr;  // no stack ran all its cases
  else
    report["ir_ops_covered"] = c.covered;
  Json missing = Json::array();
  for (const auto& m : c.missing) missing.push_back({{"stack", m.stack}, {"op", m.op}});
  report["ops_without_case"] = missing;
  report["coverage_checked"] = c.checked;
  Json elsewhere = Json::object();
  for (const auto& [op, where] : kCoveredElsewhere) elsewhere[std::string(op)] = where;
  report["ops_covered_elsewhere"] = elsewhere;
}

}  // namespace ember::conformance
