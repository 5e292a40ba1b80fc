// Layer conformance against PyTorch: every case of cases/layers.json (see gen_layer_cases.py)
// builds the ember layer from the case's config on an autodiff CPU device, loads the torch
// checkpoint cases/<case>.pt (store::load_pytorch + strict nn::load_state_dict), runs forward,
// and compares the outputs, the input gradients and every parameter gradient (by state_dict
// path) of sum_i(sum(outputs[i] * upstream[i])) with torch's float64 reference.
//
// Writes <reports>/nn.json: {"layers", "losses", "optimizers", "schedulers", "cases", "failed"},
// merging the counts of nn-losses.json, nn-optimizers.json and nn-schedulers.json (written by
// the loss and optimizer suites, which run first) when they exist.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "ember/store/pytorch.hpp"
#include "layer_registry.hpp"
#include "op_registry.hpp"

namespace ember::nn_conformance {
namespace {

using conformance::parse_tensor;
using conformance::test_name;

struct LayerStats {
  int64_t cases = 0, failed = 0;
};
std::map<std::string, LayerStats> g_layers;

std::string shape_of(const Json& t) { return Shape(t["shape"].get<std::vector<int64_t>>()).str(); }

class LayerCaseTest : public testing::Test {
 public:
  explicit LayerCaseTest(Json c) : case_(std::move(c)) {}
  void TestBody() override {
    const std::string layer = case_["layer"].get<std::string>();
    LayerStats& s = g_layers[layer];
    ++s.cases;
    if (!run(layer)) ++s.failed;
  }

 private:
  // Compares `got` with the case's tensor `want`; names the value in the failure.
  static bool check(const std::string& what, const DynTensor& got, const Json& want, double rtol, double atol) {
    TensorData w = parse_tensor(want);
    TensorData g = got.detach().into_data();
    if (g.shape() != w.shape()) {
      ADD_FAILURE() << what << ": shape " << g.shape() << ", expected " << w.shape();
      return false;
    }
    if (auto msg = g.approx_equal(w, rtol, atol)) {
      ADD_FAILURE() << what << ": " << *msg;
      return false;
    }
    return true;
  }

  static bool all_zero(const Json& t) {
    for (const auto& v : t["data"])
      if (v.get<double>() != 0.0) return false;
    return true;
  }

  bool run(const std::string& layer) {
    const Device dev = Device::cpu().autodiff();
    const auto& reg = layer_registry();
    auto it = reg.find(layer);
    if (it == reg.end()) {
      ADD_FAILURE() << "no registry entry for layer '" << layer << "'";
      return false;
    }
    BuiltLayer m;
    try {
      m = it->second(case_["config"], case_.value("call", Json::object()), dev);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "building " << layer << " from " << case_["config"].dump() << " threw: " << e.what();
      return false;
    }
    nn::NamedTensors source;
    if (!case_["checkpoint"].is_null()) {
      std::filesystem::path ckpt =
          std::filesystem::path(EMBER_NN_CONFORMANCE_DIR) / "cases" / case_["checkpoint"].get<std::string>();
      try {
        for (const auto& [k, t] : store::load_pytorch(ckpt.string(), dev)) source.emplace_back(k, t);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "store::load_pytorch(" << ckpt << ") threw: " << e.what();
        return false;
      }
    }
    // "load": false checks the layer's own derived state (e.g. a positional table) instead
    if (case_.value("load", true)) {
      try {
        m.load_strict(source);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "load_state_dict (strict) threw: " << e.what();
        return false;
      }
    }
    m.set_training(case_["training"].get<bool>());

    Tensors inputs;
    for (size_t i = 0; i < case_["inputs"].size(); ++i) {
      DynTensor x = DynTensor::from_data(parse_tensor(case_["inputs"][i]), dev);
      if (!case_["input_grads"][i].is_null()) x = x.require_grad();
      inputs.push_back(x);
    }
    Tensors out;
    try {
      out = m.forward(inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "forward threw: " << e.what();
      return false;
    }
    const Json& expected = case_["outputs"];
    if (out.size() != expected.size()) {
      ADD_FAILURE() << "forward gave " << out.size() << " outputs, expected " << expected.size();
      return false;
    }
    bool ok = true;
    const double rtol = case_["rtol"].get<double>();
    for (size_t i = 0; i < out.size(); ++i)
      ok &= check("output " + std::to_string(i), out[i], expected[i], rtol, case_["atol"][i].get<double>());
    // training mode: running statistics after the forward
    if (case_.contains("buffers_after")) {
      const Json& want = case_["buffers_after"];
      std::set<std::string> seen;
      for (const auto& [path, t] : m.buffers()) {
        seen.insert(path);
        if (!want.contains(path)) {
          ADD_FAILURE() << "buffer '" << path << "': torch has no buffer of that name";
          ok = false;
          continue;
        }
        double atol = 1e-5;
        for (const auto& v : want[path]["data"]) atol = std::max(atol, 1e-5 * std::fabs(v.get<double>()));
        ok &= check("buffer '" + path + "' after forward", t.cast(is_float(t.dtype()) ? DType::f32 : DType::i64),
                    want[path], rtol, atol);
      }
      for (const auto& [path, t] : want.items())
        if (!seen.count(path)) {
          ADD_FAILURE() << "torch buffer '" << path << "' is not a buffer of the ember layer";
          ok = false;
        }
    }
    if (!ok) return false;  // gradients of a wrong forward say nothing new

    Gradients grads;
    try {
      DynTensor loss;
      for (size_t i = 0; i < out.size(); ++i) {
        if (case_["upstream"][i].is_null()) continue;  // an integer output (indices)
        DynTensor term = sum(out[i] * DynTensor::from_data(parse_tensor(case_["upstream"][i]), dev));
        loss = loss.defined() ? loss + term : term;
      }
      grads = loss.backward();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "backward threw: " << e.what();
      return false;
    }
    const double grtol = case_["grad_rtol"].get<double>();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Json& want = case_["input_grads"][i];
      if (want.is_null()) continue;
      std::optional<DynTensor> g = inputs[i].grad(grads);
      std::string what = "gradient of input " + std::to_string(i);
      if (!g) {
        if (!all_zero(want)) {
          ADD_FAILURE() << what << ": none computed";
          ok = false;
        }
        continue;
      }
      ok &= check(what, *g, want, grtol, case_["input_grad_atol"][i].get<double>());
    }
    const Json& pgrads = case_["param_grads"];
    std::set<std::string> seen;
    for (const auto& [path, p] : m.params()) {
      seen.insert(path);
      std::string what = "gradient of parameter '" + path + "'";
      if (!pgrads.contains(path)) {
        ADD_FAILURE() << what << ": torch has no parameter of that name";
        ok = false;
        continue;
      }
      std::optional<DynTensor> g = p.grad(grads);
      if (!g) {
        if (!all_zero(pgrads[path])) {
          ADD_FAILURE() << what << ": none computed (expected shape " << shape_of(pgrads[path]) << ")";
          ok = false;
        }
        continue;
      }
      ok &= check(what, *g, pgrads[path], grtol, case_["param_grad_atol"][path].get<double>());
    }
    for (const auto& [path, g] : pgrads.items())
      if (!seen.count(path)) {
        ADD_FAILURE() << "torch parameter '" << path << "' is not a parameter of the ember layer";
        ok = false;
      }
    return ok;
  }

  Json case_;
};

void register_cases() {
  std::ifstream in(std::filesystem::path(EMBER_NN_CONFORMANCE_DIR) / "cases" / "layers.json");
  Json doc = Json::parse(in);
  for (const auto& c : doc["cases"]) {
    std::string suite = "nn_layer_" + test_name(c["layer"].get<std::string>());
    std::string name = test_name(c["name"].get<std::string>());
    testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [c]() -> testing::Test* { return new LayerCaseTest(c); });
  }
}

Json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) return Json::object();
  try {
    return Json::parse(in);
  } catch (const std::exception&) {
    return Json::object();
  }
}

void write_report(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  int64_t cases = 0, failed = 0;
  for (const auto& [layer, s] : g_layers) {
    cases += s.cases;
    failed += s.failed;
  }
  Json j;
  j["layers"] = g_layers.size();
  const std::pair<const char*, const char*> others[] = {
      {"losses", "nn-losses.json"}, {"optimizers", "nn-optimizers.json"}, {"schedulers", "nn-schedulers.json"}};
  for (const auto& [key, file] : others) {
    Json o = read_json(dir / file);
    j[key] = o.value(key, int64_t{0});
    cases += o.value("cases", int64_t{0});
    failed += o.value("failed", int64_t{0});
  }
  j["cases"] = cases;
  j["failed"] = failed;
  auto tmp = dir / "nn.json.tmp";
  std::ofstream(tmp) << j.dump(2) << "\n";
  std::filesystem::rename(tmp, dir / "nn.json");
}

}  // namespace
}  // namespace ember::nn_conformance

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  std::filesystem::path reports = "build/reports";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reports") reports = argv[i + 1];
  ember::nn_conformance::register_cases();
  int rc = RUN_ALL_TESTS();
  ember::nn_conformance::write_report(reports);
  return rc;
}
