// Gradient conformance: every case of tests/conformance/cases/*.json that has a "grad" entry
// (gradients from torch autograd, see gen_cases.py and the README's "Gradient references") runs
// on every autodiff stack: the floating inputs require grad, the op runs through the shared
// registry, L = sum_j sum(out_j * upstream_j) is differentiated, and each input's gradient is
// compared with the expected one. A second test per case checks the same rules against central
// finite differences in f64 (no PyTorch involved): the directional derivative sum(grad . v) of L
// along a random direction v against (L(x + h v) - L(x - h v)) / 2h.
// Writes <reports>/autodiff.json: {"ops", "cases", "failed", "fd_cases", "stacks", ...}.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string_view>

#include "op_registry.hpp"

namespace ember::conformance {
namespace {

struct AutodiffStack {
  std::string name;
  Device device;
};

// The gradient stacks of test_stacks() (op_registry.hpp); EMBER_STACKS selects by name.
std::vector<AutodiffStack> autodiff_stacks() {
  static const std::vector<AutodiffStack> stacks = [] {
    std::vector<AutodiffStack> chosen;
    for (const auto& s : test_stacks())
      if (s.gradient && stack_selected(s.name)) chosen.push_back({s.name, s.device});
    return chosen;
  }();
  return stacks;
}

// Where a finite difference says nothing about the rule, the case's FD check is not run (its
// gradients are still compared with PyTorch's on every stack). Every entry was seen to fail
// without it. Kinks and ties are hit only by the dedicated cases that the generator names for
// them ("/ties", "/zeros", "/on_bounds", sort's "_ties"); the other cases of those ops keep
// their inputs away from kinks and ties. A central difference averages the two one-sided
// slopes, which is PyTorch's convention for abs at 0 and for two-way ties (maximum/minimum
// "/ties", max/min "/pair_ties"): those cases keep the FD check, which then checks the rule.
struct FdExemption {
  std::string_view op;
  std::string_view name_part;  // "" = every case of the op
  bool lowp_only;              // only cases with an f16/bf16 input
  std::string_view reason;
};
constexpr std::string_view kSteps = "piecewise constant; the inputs are multiples of 0.25, on its jumps";
constexpr std::string_view kKink = "at a kink/tie the one-sided slopes differ; PyTorch's convention defines the value";
const FdExemption kFdExemptions[] = {
    {"floor", "", false, kSteps},
    {"ceil", "", false, kSteps},
    {"round", "", false, kSteps},
    {"trunc", "", false, kSteps},
    {"cast", "", false, "rounds to the target dtype: L of nearby f64 inputs differs by rounding noise only"},
    {"sort", "_ties", false, "stability cases: equal values along the sorted dim, where L has a kink"},
    {"max", "/ties", false, kKink},
    {"min", "/ties", false, kKink},
    {"max_dim", "/ties", false, kKink},
    {"min_dim", "/ties", false, kKink},
    {"relu", "/zeros", false, kKink},
    {"leaky_relu", "/zeros", false, kKink},
    {"prelu", "/zeros", false, kKink},
    {"clamp", "/on_bounds", false, kKink},
    {"clamp_min", "/on_bounds", false, kKink},
    {"clamp_max", "/on_bounds", false, kKink},
    {"fmod", "/signs", false,
     "inputs are exact multiples of the divisor, where fmod jumps (signs_large: the quotients are so large that "
     "the step crosses jumps)"},
    {"remainder", "/signs", false,
     "inputs are exact multiples of the divisor, where remainder jumps (signs_large: the quotients are so large "
     "that the step crosses jumps)"},
    {"fmod", "", true, "f16/bf16 operands lie on a coarse grid that includes exact multiples of the divisor"},
    {"remainder", "", true, "f16/bf16 operands lie on a coarse grid that includes exact multiples of the divisor"},
};

bool has_lowp_input(const Json& c) {
  for (const auto& j : c["inputs"]) {
    auto dt = j["dtype"].get<std::string>();
    if (dt == "f16" || dt == "bf16") return true;
  }
  return false;
}

const FdExemption* fd_exemption(const Json& c) {
  const auto op = c["op"].get<std::string>();
  const auto name = c["name"].get<std::string>();
  for (const auto& e : kFdExemptions)
    if (e.op == op && (e.name_part.empty() || name.find(e.name_part) != std::string::npos) &&
        (!e.lowp_only || has_lowp_input(c)))
      return &e;
  return nullptr;
}

// The largest error / tolerance ratio seen, and where: how much headroom the passing cases have.
struct Worst {
  double ratio = 0;
  std::string case_name;
  void update(double r, const std::string& name) {
    if (r > ratio) ratio = r, case_name = name;
  }
  Json json() const { return {{"ratio", ratio}, {"case", case_name}}; }
};

struct Stats {
  std::set<std::string> ops;
  int64_t cases = 0, failed = 0, fd_cases = 0, fd_failed = 0;
  std::map<std::string, int64_t> fd_exempt;  // reason -> cases
  Worst grad_worst, fd_worst;
} g_stats;

// max |got - want| / (atol + rtol |want|) over the elements
double tolerance_ratio(const TensorData& got, const TensorData& want, double rtol, double atol) {
  auto a = got.to_doubles(), b = want.to_doubles();
  double worst = 0;
  for (size_t k = 0; k < a.size() && k < b.size(); ++k)
    if (a[k] != b[k]) worst = std::max(worst, std::abs(a[k] - b[k]) / (atol + rtol * std::abs(b[k])));
  return worst;
}

// The upstream gradient of each output (none for integer outputs), optionally in f64.
using Upstream = std::vector<std::optional<TensorData>>;
Upstream upstream_of(const Json& c, bool f64) {
  Upstream up;
  for (const auto& j : c["grad"]["upstream"]) {
    if (j.is_null()) {
      up.emplace_back();
    } else {
      TensorData d = parse_tensor(j);
      up.emplace_back(f64 ? d.convert(DType::f64) : d);
    }
  }
  return up;
}

// L = sum_j sum(out_j * upstream_j) over the outputs with an upstream gradient.
DynTensor loss_of(const std::vector<DynTensor>& out, const Upstream& up, const Device& dev) {
  std::vector<DynTensor> terms;
  for (size_t j = 0; j < out.size(); ++j)
    if (up[j]) terms.push_back(sum(out[j] * DynTensor::from_data(*up[j], dev)));
  EMBER_CHECK(!terms.empty(), "autodiff conformance: case without an upstream gradient");
  bool mixed =
      std::any_of(terms.begin(), terms.end(), [&](const DynTensor& t) { return t.dtype() != terms[0].dtype(); });
  DynTensor loss;
  for (auto& t : terms) {
    DynTensor v = mixed ? cast(t, DType::f64) : t;
    loss = loss.defined() ? loss + v : v;
  }
  return loss;
}

std::vector<DynTensor> run_op(const Json& c, std::vector<DynTensor> inputs, const Device& dev) {
  const auto op = c["op"].get<std::string>();
  auto it = op_registry().find(op);
  EMBER_CHECK(it != op_registry().end(), "no registry entry for op '", op, "'");
  auto out = it->second(inputs, c["attrs"], dev);
  EMBER_CHECK(out.size() == c["grad"]["upstream"].size(), op, ": ", out.size(), " outputs, expected ",
              c["grad"]["upstream"].size());
  return out;
}

// The absolute tolerance of input i's gradient: "atol" is a list with one entry per input
// (scaled by that input's largest expected |gradient|; null where there is none), or one number
// for every input.
double input_atol(const Json& grad, size_t i) {
  const Json& a = grad["atol"];
  if (!a.is_array()) return a.get<double>();
  EMBER_CHECK(i < a.size() && a[i].is_number(), "autodiff conformance: no atol for input ", i);
  return a[i].get<double>();
}

bool all_zero(const TensorData& d) {
  auto v = d.to_doubles();
  return std::all_of(v.begin(), v.end(), [](double x) { return x == 0; });
}

// ---- gradients against PyTorch ----
class GradCaseTest : public testing::Test {
 public:
  GradCaseTest(Json c, Device d) : case_(std::move(c)), device_(std::move(d)) {}
  void TestBody() override {
    bool ok = false;
    try {
      ok = run();
    } catch (const std::exception& e) {
      // the forward or backward pass reaches an op (or dtype) the stack's backend reports unsupported
      if (std::optional<std::string> why = unsupported_on(e, device_)) GTEST_SKIP() << *why;
      ADD_FAILURE() << case_["op"].get<std::string>() << " threw: " << e.what();
    }
    g_stats.ops.insert(case_["op"].get<std::string>());
    ++g_stats.cases;
    if (!ok) ++g_stats.failed;
  }

 private:
  bool run() {
    const auto op = case_["op"].get<std::string>();
    const Json& grad = case_["grad"];
    std::vector<DynTensor> inputs;
    for (const auto& j : case_["inputs"]) {
      DynTensor t = DynTensor::from_data(parse_tensor(j), device_);
      inputs.push_back(is_float(t.dtype()) ? t.require_grad() : t);
    }
    Gradients grads = loss_of(run_op(case_, inputs, device_), upstream_of(case_, false), device_).backward();
    const double rtol = grad["rtol"].get<double>();
    bool ok = true;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!is_float(inputs[i].dtype())) continue;
      const Json& want_j = grad["inputs"][i];
      std::optional<DynTensor> got = inputs[i].grad(grads);
      if (want_j.is_null()) {  // unused by PyTorch: no gradient or zeros
        if (got && !all_zero(got->into_data())) {
          ADD_FAILURE() << op << " input " << i << ": PyTorch gives no gradient, got a nonzero one";
          ok = false;
        }
        continue;
      }
      TensorData want = parse_tensor(want_j);
      if (!got) {
        ADD_FAILURE() << op << " input " << i << ": no gradient, expected " << want.dtype() << " " << want.shape();
        ok = false;
        continue;
      }
      const double atol = input_atol(grad, i);
      TensorData have = got->into_data();
      if (have.dtype() != want.dtype() || have.shape() != want.shape()) {
        ADD_FAILURE() << op << " input " << i << ": gradient is " << have.dtype() << " " << have.shape()
                      << ", expected " << want.dtype() << " " << want.shape();
        ok = false;
        continue;
      }
      if (auto msg = have.approx_equal(want, rtol, atol)) {
        ADD_FAILURE() << op << " input " << i << " gradient: " << *msg;
        ok = false;
      } else {
        g_stats.grad_worst.update(tolerance_ratio(have, want, rtol, atol), case_["name"].get<std::string>());
      }
    }
    return ok;
  }
  Json case_;
  Device device_;
};

// ---- gradients against central finite differences, in f64 ----
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

struct SplitMix {
  uint64_t s;
  double uniform() {  // in [-1, 1)
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return double(z >> 11) * 0x1.0p-52 - 1.0;
  }
};

class FdCaseTest : public testing::Test {
 public:
  explicit FdCaseTest(Json c) : case_(std::move(c)) {}
  void TestBody() override {
    ++g_stats.fd_cases;
    bool ok = false;
    try {
      ok = run();
    } catch (const std::exception& e) {
      ADD_FAILURE() << case_["op"].get<std::string>() << " threw: " << e.what();
    }
    if (!ok) ++g_stats.fd_failed;
  }

 private:
  // L and sum |out * upstream| of the op at `inputs`, outputs and products in f64 on the host.
  std::pair<double, double> loss_at(const std::vector<TensorData>& inputs, const Upstream& up) {
    std::vector<DynTensor> in;
    for (const auto& d : inputs) in.push_back(DynTensor::from_data(d, Device::cpu()));
    auto out = run_op(case_, in, Device::cpu());
    double loss = 0, magnitude = 0;
    for (size_t j = 0; j < out.size(); ++j) {
      if (!up[j]) continue;
      auto o = out[j].into_data().to_doubles();
      auto u = up[j]->to_doubles();
      EMBER_CHECK(o.size() == u.size(), "output ", j, " has ", o.size(), " elements, upstream ", u.size());
      for (size_t k = 0; k < o.size(); ++k) {
        loss += o[k] * u[k];
        magnitude += std::abs(o[k] * u[k]);
      }
    }
    return {loss, magnitude};
  }

  bool run() {
    const auto op = case_["op"].get<std::string>();
    std::vector<TensorData> x;
    for (const auto& j : case_["inputs"]) {
      TensorData d = parse_tensor(j);
      x.push_back(is_float(d.dtype()) ? d.convert(DType::f64) : d);
    }
    Upstream up = upstream_of(case_, true);

    // analytic gradients in f64 on the autodiff stack
    Device ad = Device::cpu().autodiff();
    std::vector<DynTensor> leaves;
    for (const auto& d : x) {
      DynTensor t = DynTensor::from_data(d, ad);
      leaves.push_back(is_float(d.dtype()) ? t.require_grad() : t);
    }
    Gradients grads = loss_of(run_op(case_, leaves, ad), up, ad).backward();

    // a random direction, scaled to each input's magnitude
    SplitMix rng{fnv1a(case_["name"].get<std::string>())};
    const double h = 1e-6;
    std::vector<TensorData> plus = x, minus = x;
    double directional = 0, abs_terms = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!is_float(x[i].dtype())) continue;
      auto xv = x[i].to_doubles();
      double scale = 1;
      for (double e : xv) scale = std::max(scale, std::abs(e));
      std::vector<double> g(xv.size(), 0.0);
      if (auto gi = leaves[i].grad(grads)) {
        TensorData gd = gi->into_data();
        EMBER_CHECK(gd.shape() == x[i].shape(), op, " input ", i, ": gradient shape ", gd.shape(), ", input ",
                    x[i].shape());
        g = gd.to_doubles();
      }
      std::vector<double> xp = xv, xm = xv;
      for (size_t k = 0; k < xv.size(); ++k) {
        double v = scale * rng.uniform();
        xp[k] += h * v;
        xm[k] -= h * v;
        directional += g[k] * v;
        abs_terms += std::abs(g[k] * v);
      }
      plus[i] = TensorData::from_doubles(xp, x[i].shape(), DType::f64);
      minus[i] = TensorData::from_doubles(xm, x[i].shape(), DType::f64);
    }
    auto [lp, sp] = loss_at(plus, up);
    auto [lm, sm] = loss_at(minus, up);
    double fd = (lp - lm) / (2 * h);
    // truncation O(h^2) and rounding of L (~1e-16 |terms| / h) are far below these bounds
    double tol = 1e-5 * abs_terms + 1e-8 * std::max(sp, sm);
    if (!(std::abs(fd - directional) <= tol)) {
      ADD_FAILURE() << op << ": directional derivative " << directional << " (from gradients), finite difference " << fd
                    << ", |diff| " << std::abs(fd - directional) << " > tolerance " << tol;
      return false;
    }
    if (tol > 0) g_stats.fd_worst.update(std::abs(fd - directional) / tol, case_["name"].get<std::string>());
    return true;
  }
  Json case_;
};

void register_cases(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<std::pair<std::string, Json>> cases;  // (family, case) with a "grad" entry
  for (const auto& f : files) {
    std::ifstream in(f);
    Json doc = Json::parse(in);
    std::string family = doc["family"].get<std::string>();
    for (auto& c : doc["cases"])
      if (c.contains("grad")) cases.emplace_back(family, std::move(c));
  }
  for (const auto& stack : autodiff_stacks()) {
    for (const auto& [family, c] : cases) {
      Device dev = stack.device;
      testing::RegisterTest(("autodiff_" + test_name(stack.name) + "_" + family).c_str(),
                            test_name(c["name"].get<std::string>()).c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [c = c, dev]() -> testing::Test* { return new GradCaseTest(c, dev); });
    }
  }
  for (const auto& [family, c] : cases) {
    if (!stack_selected("fd")) break;  // the finite-difference checks run on the CPU in f64
    if (const FdExemption* e = fd_exemption(c)) {
      ++g_stats.fd_exempt[c["op"].get<std::string>() + ": " + std::string(e->reason)];
      continue;
    }
    testing::RegisterTest(("autodiff_fd_" + family).c_str(), test_name(c["name"].get<std::string>()).c_str(), nullptr,
                          nullptr, __FILE__, __LINE__, [c = c]() -> testing::Test* { return new FdCaseTest(c); });
  }
}

void write_report(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  Json j;
  j["ops"] = g_stats.ops.size();
  j["cases"] = g_stats.cases;
  j["failed"] = g_stats.failed + g_stats.fd_failed;
  j["grad_failed"] = g_stats.failed;
  j["fd_cases"] = g_stats.fd_cases;
  j["fd_failed"] = g_stats.fd_failed;
  j["fd_exempt"] = g_stats.fd_exempt;
  j["grad_worst_passing"] = g_stats.grad_worst.json();
  j["fd_worst_passing"] = g_stats.fd_worst.json();
  Json stacks = Json::array();
  for (const auto& s : autodiff_stacks()) stacks.push_back(s.name);
  j["stacks"] = stacks;
  auto tmp = dir / "autodiff.json.tmp";
  std::ofstream(tmp) << j.dump(2) << "\n";
  std::filesystem::rename(tmp, dir / "autodiff.json");
}

}  // namespace
}  // namespace ember::conformance

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  std::filesystem::path reports = "build/reports";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reports") reports = argv[i + 1];
  ember::conformance::register_cases(EMBER_CONFORMANCE_DIR "/cases");
  int rc = RUN_ALL_TESTS();
  ember::conformance::write_report(reports);
  return rc;
}
