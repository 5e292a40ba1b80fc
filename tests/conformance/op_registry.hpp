// Maps each conformance op name (tests/conformance/README.md) to a call of ember's public API.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/ember.hpp"

namespace ember::conformance {

using Json = nlohmann::json;
using OpFn = std::function<std::vector<DynTensor>(std::vector<DynTensor>& in, const Json& attrs, const Device& dev)>;

const std::map<std::string, OpFn>& op_registry();

}  // namespace ember::conformance
