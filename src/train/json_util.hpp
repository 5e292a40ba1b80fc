// Internal JSON helpers of the train layer (nlohmann::json stays out of the public headers).
#pragma once

#include <cmath>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ember/core/error.hpp"
#include "ember/train/history.hpp"

namespace ember::train::detail {

using Json = nlohmann::json;

// NaN and infinities have no JSON form: they are written as null and read back as NaN.
inline Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
inline double to_double(const Json& j) {
  return j.is_number() ? j.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

Json history_to_json(const MetricHistory& h);
MetricHistory history_from_json(const Json& j, std::string_view source);

inline Json parse_json(std::string_view text, std::string_view source) {
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    EMBER_FAIL(source, ": invalid JSON: ", e.what());
  }
}

}  // namespace ember::train::detail
