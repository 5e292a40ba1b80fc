// Helpers shared by the onnx reader's sources (internal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ember/onnx/model.hpp"

namespace ember::onnx::detail {

// The whole file; errors name the path.
std::vector<std::byte> read_whole_file(const std::string& path);
// The directory part of a path ("." when it has none).
std::string directory_of(const std::string& path);
// Why an external data location is unsafe or malformed (absolute, "..", empty, NUL), or ""
// when it is acceptable.
std::string external_location_problem(std::string_view location);
// Checks dims (rank, signs, element count within int64); `what` prefixes errors.
void check_dims(const std::vector<int64_t>& dims, const std::string& what);

// For the code generators (codegen.cpp defines them; codegen_cortex_m*.cpp use them too):
// checks that `name` is a C++ identifier (`what` prefixes errors), and
void check_identifier(const std::string& name, std::string_view what);
// text for a comment: printable ASCII, no line breaks or comment terminators.
std::string comment_text(std::string_view s);

}  // namespace ember::onnx::detail
