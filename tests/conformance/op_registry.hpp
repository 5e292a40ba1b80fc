// Maps each conformance op name (tests/conformance/README.md) to a call of ember's public API,
// and reads the case file tensors. Shared by the forward (conformance_test.cpp) and the
// gradient (tests/autodiff/autodiff_conformance_test.cpp) runners.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/backends/cuda.hpp"
#include "ember/ember.hpp"

namespace ember::conformance {

using Json = nlohmann::json;
using OpFn = std::function<std::vector<DynTensor>(std::vector<DynTensor>& in, const Json& attrs, const Device& dev)>;

const std::map<std::string, OpFn>& op_registry();

// A tensor of a case file: {"dtype", "shape", "data"} ("nan"/"inf"/"-inf" strings, null data
// gives zeros).
TensorData parse_tensor(const Json& j);

// A case name made safe for a gtest test name ([A-Za-z0-9_/], anything else becomes '_').
std::string test_name(std::string name);
// Whether the backend stack `name` runs: every stack unless $EMBER_STACKS (a comma-separated
// list of names, e.g. "cuda,autodiff-cuda") names others.
bool stack_selected(const std::string& name);

// Why a case is skipped on `dev` when running it threw `e`: the backend's own error
// "<op>: not supported on <backend>" (an op, or an op on these dtypes, that its supports() reports
// unsupported, reached through a composite of the registry: linear -> matmul, argsort -> sort);
// nullopt for any other error, which fails the case, and always on the cpu and cuda backends.
std::optional<std::string> unsupported_on(const std::exception& e, const Device& dev);

// A backend or decorator stack the suites run on: the one list of them, for the forward suite
// (tests/conformance) and the gradient suite (tests/autodiff), which run the stacks marked
// `forward` and `gradient` respectively.
struct TestStack {
  std::string name;
  Device device;
  bool forward;   // the forward conformance suite runs it
  bool gradient;  // the gradient suite runs it (an autodiff stack)
};
// Every stack, EMBER_STACKS not applied: the CPU ones always, the CUDA ones where a GPU is
// present. Made once per process (the router stacks keep their statistics).
const std::vector<TestStack>& test_stacks();

// The router of the router-cpu-cpu stacks: Device::cpu() and a second CPU backend of its own,
// where a test policy sends each op whose name hashes odd to the second, so that chains of ops
// bounce between the two and their tensors really move.
Device router_cpu_cpu();

}  // namespace ember::conformance
