// JSON string escaping for the few places that write JSON by hand (the trace writer, the
// benchmark reports): quotes, backslashes and control characters escaped, UTF-8 passed through.
//
//   std::string out;
//   ember::append_json_escaped(out, "a \"b\"\n");  // a \"b\"\n  (no surrounding quotes)
//   # run
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace ember {

// Appends `s` to `out` as the inside of a JSON string (no quotes added); control characters
// become \n, \t, \r or \u00XX escapes.
inline void append_json_escaped(std::string& out, std::string_view s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
}

}  // namespace ember
