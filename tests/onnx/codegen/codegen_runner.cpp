// The codegen conformance runner: every ONNX node-test case that gen_codegen_tests.py turned
// into C++ (`ember-onnx generate`) runs through its generated struct on the case's inputs and
// is compared with the expected outputs, with node_runner.cpp's tolerances:
//
//   ember_onnx_codegen_node NODE_DIR CODEGEN_DIR [--filter SUBSTR] [-v]
//
// A case passes, is unsupported (ember::NotImplemented, as in the node runner: an op variant or
// dtype ember does not implement; or a broken reference, counted here with the unsupported) or
// fails (a wrong value, dtype or shape, or any other exception). Exit status 1 when a case failed. The last lines imitate gtest's
// summary, for test.sh.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen_case.hpp"
#include "ember/core/error.hpp"
#include "ember/onnx/model.hpp"

namespace fs = std::filesystem;
using namespace ember;

namespace {

std::vector<std::byte> read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  EMBER_CHECK(f.good(), "cannot open ", p.string());
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(s.size());
  std::transform(s.begin(), s.end(), out.begin(), [](char ch) { return std::byte(static_cast<unsigned char>(ch)); });
  return out;
}

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (int k = 0;; ++k) {
    fs::path p = dir / (prefix + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    out.push_back(p);
  }
  return out;
}

// The same broken references as node_runner.cpp (which still checks the BFLOAT16 casts, against
// the rounding of their input or with a repaired input; here they are only skipped).
const std::set<std::string> kBrokenReference = {
    "test_adam_multiple",
    "test_cast_FLOAT_to_BFLOAT16",
    "test_castlike_FLOAT_to_BFLOAT16",
    "test_castlike_FLOAT_to_BFLOAT16_expanded",
    "test_castlike_BFLOAT16_to_FLOAT",
    "test_castlike_BFLOAT16_to_FLOAT_expanded"};

enum class Outcome { passed, unsupported, failed };

struct Result {
  Outcome outcome;
  std::string message;
};

Result run_case(const CodegenCase& c, const fs::path& dir, const fs::path& weights) {
  if (kBrokenReference.count(c.name)) return {Outcome::unsupported, "broken reference"};
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {Outcome::failed, "no test_data_set_*"};
  for (const fs::path& set : sets) {
    std::vector<fs::path> ins = numbered(set, "input_");
    if (ins.size() > c.input_names.size()) return {Outcome::failed, "more input files than graph inputs"};
    std::vector<DynTensor> inputs(c.input_names.size());
    for (size_t k = 0; k < ins.size(); ++k) {
      onnx::TensorProto t = onnx::parse_tensor_proto(read_file(ins[k]));
      if (!onnx::to_dtype(t.data_type)) return {Outcome::unsupported, "dtype " + onnx::data_type_name(t.data_type)};
      size_t slot = k;
      if (!t.name.empty()) {
        auto it = std::find(c.input_names.begin(), c.input_names.end(), t.name);
        if (it != c.input_names.end()) slot = size_t(it - c.input_names.begin());
      }
      inputs[slot] = DynTensor::from_data(onnx::to_tensor_data(t), Device::cpu());
    }
    std::vector<DynTensor> got = c.run(weights.string(), inputs);
    std::vector<fs::path> outs = numbered(set, "output_");
    for (size_t k = 0; k < outs.size(); ++k) {
      onnx::TensorProto t = onnx::parse_tensor_proto(read_file(outs[k]));
      if (!onnx::to_dtype(t.data_type)) return {Outcome::unsupported, "dtype " + onnx::data_type_name(t.data_type)};
      if (k >= got.size()) return {Outcome::failed, "output " + std::to_string(k) + " missing"};
      TensorData want = onnx::to_tensor_data(t);
      TensorData have = got[k].into_data();
      std::ostringstream why;
      if (have.dtype() != want.dtype()) why << "output " << k << ": dtype " << have.dtype() << ", expected " << want.dtype();
      else if (!(have.shape() == want.shape()))
        why << "output " << k << ": shape " << have.shape() << ", expected " << want.shape();
      else if (auto m = is_float(want.dtype()) ? have.approx_equal(want, 1e-3, 1e-5) : have.approx_equal(want, 0, 0))
        why << "output " << k << ": " << *m;
      if (!why.str().empty()) return {Outcome::failed, set.filename().string() + ": " + why.str()};
    }
  }
  return {Outcome::passed, ""};
}

}  // namespace

int main(int argc, char** argv) {
  std::string node_dir = "build/onnx-node", codegen_dir = "build/onnx-codegen", filter;
  bool verbose = false;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "-v") verbose = true;
    else positional.push_back(a);
  }
  if (positional.size() > 0) node_dir = positional[0];
  if (positional.size() > 1) codegen_dir = positional[1];
  std::vector<CodegenCase> cases;
  register_codegen_cases(cases);
  std::sort(cases.begin(), cases.end(), [](const CodegenCase& a, const CodegenCase& b) { return a.name < b.name; });
  int passed = 0, unsupported = 0, failed = 0, total = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (const CodegenCase& c : cases) {
    if (c.name.find(filter) == std::string::npos) continue;
    ++total;
    Result r;
    try {
      r = run_case(c, fs::path(node_dir) / "node" / c.name, fs::path(codegen_dir) / "gen" / (c.name + ".safetensors"));
    } catch (const NotImplemented& e) {
      r = {Outcome::unsupported, e.what()};
    } catch (const std::exception& e) {
      r = {Outcome::failed, e.what()};
    }
    switch (r.outcome) {
      case Outcome::passed: ++passed; break;
      case Outcome::unsupported: ++unsupported; break;
      case Outcome::failed:
        ++failed;
        std::cout << "FAILED " << c.name << ": " << r.message << "\n";
        break;
    }
    if (verbose && r.outcome != Outcome::failed)
      std::cout << (r.outcome == Outcome::passed ? "passed " : "unsupported ") << c.name
                << (r.message.empty() ? "" : ": ") << r.message << "\n";
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "onnx codegen node tests: " << total << " generated and compiled, " << passed << " passed, "
            << unsupported << " unsupported, " << failed << " failed (" << secs << " s)\n";
  std::cout << "[  PASSED  ] " << passed << " tests.\n";
  if (failed) std::cout << "[  FAILED  ] " << failed << " tests, listed above.\n";
  return failed ? 1 : 0;
}
