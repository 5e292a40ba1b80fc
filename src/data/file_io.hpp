// Internal helpers of the data layer: whole-file reads with errors that name the file.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/error.hpp"

namespace ember::data::detail {

// The whole file as bytes; a missing or unreadable file throws "<who>: cannot open '<path>': <reason>".
inline std::string read_file(const std::string& path, std::string_view who) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) EMBER_FAIL(who, ": cannot open '", path, "': ", std::strerror(errno));
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) EMBER_FAIL(who, ": error reading '", path, "' after ", bytes.size(), " bytes: ", std::strerror(err));
  return bytes;
}

}  // namespace ember::data::detail
