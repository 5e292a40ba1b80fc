// Maps each conformance op name (tests/conformance/README.md) to a call of ember's public API,
// and reads the case file tensors. Shared by the forward (conformance_test.cpp) and the
// gradient (tests/autodiff/autodiff_conformance_test.cpp) runners.
#pragma once

#include <functional>
#include <map>
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

}  // namespace ember::conformance
