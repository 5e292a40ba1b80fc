// The real models through codegen (issue 7): each model of the manifest that
// run_codegen_models.sh turned into C++ with `ember-onnx generate` is loaded from its weights
// file, run on the exported input and compared with PyTorch's output, within 1e-4 relative
// error (||out - ref|| / ||ref||, as models_test.cpp).
//
//   ember_onnx_codegen_models MODELS_DIR GEN_DIR
//
// Prints one line per model, "onnx codegen models: N passed, M failed" and gtest's summary lines
// (for test.sh); exit status 1 when a model failed or the manifest lists a model that was not
// generated.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "codegen_models.hpp"
#include "ember/core/error.hpp"
#include "ember/store/npy.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace ember;

namespace {

constexpr double kTolerance = 1e-4;

double relative_error(const std::vector<double>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// The worst relative error over the model's outputs (throws on a shape or count mismatch).
double run_model(const CodegenModel& model, const json& entry, const fs::path& models_dir, const fs::path& gen_dir) {
  std::vector<DynTensor> inputs;
  for (const json& in : entry["inputs"])
    inputs.push_back(
        DynTensor::from_data(store::read_npy((models_dir / in["file"].get<std::string>()).string()), Device::cpu()));
  const std::vector<DynTensor> outputs = model.run((gen_dir / (model.name + ".safetensors")).string(), inputs);
  EMBER_CHECK(outputs.size() == entry["outputs"].size(), model.name, ": ", outputs.size(),
              " outputs, the manifest lists ", entry["outputs"].size());
  double worst = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorData ref = store::read_npy((models_dir / entry["outputs"][i]["file"].get<std::string>()).string());
    const TensorData got = outputs[i].into_data();
    EMBER_CHECK(got.shape() == ref.shape(), model.name, ": output ", i, " has shape ", got.shape(), ", PyTorch's ",
                ref.shape());
    worst = std::max(worst, relative_error(got.to_doubles(), ref.to_doubles()));
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODELS_DIR GEN_DIR\n", argv[0]);
    return 2;
  }
  const fs::path models_dir = argv[1], gen_dir = argv[2];
  std::map<std::string, CodegenModel> models;
  std::vector<CodegenModel> registered;
  register_codegen_models(registered);
  for (CodegenModel& m : registered) models.emplace(m.name, std::move(m));

  std::ifstream f(models_dir / "manifest.json");
  if (!f.good()) {
    std::fprintf(stderr, "no %s\n", (models_dir / "manifest.json").c_str());
    return 2;
  }
  const json manifest = json::parse(f);
  int passed = 0, failed = 0;
  for (const json& entry : manifest["models"]) {
    const std::string name = entry["name"].get<std::string>();
    auto it = models.find(name);
    if (it == models.end()) {
      std::printf("%-28s FAILED: not generated\n", name.c_str());
      ++failed;
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const double err = run_model(it->second, entry, models_dir, gen_dir);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const bool ok = err <= kTolerance;
      std::printf("%-28s %s: worst relative error %.3g (load + run %.0f ms)\n", name.c_str(), ok ? "passed" : "FAILED",
                  err, ms);
      ++(ok ? passed : failed);
    } catch (const std::exception& e) {
      std::printf("%-28s FAILED: %s\n", name.c_str(), e.what());
      ++failed;
    }
  }
  std::printf("onnx codegen models: %d passed, %d failed\n", passed, failed);
  // gtest's summary lines, for test.sh.
  std::printf("[  PASSED  ] %d tests.\n", passed);
  if (failed) std::printf("[  FAILED  ] %d tests, listed above.\n", failed);
  return failed ? 1 : 0;
}
