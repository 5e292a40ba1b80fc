// A strict little JSON reader for the trace tests (RFC 8259 syntax: no trailing commas, no
// comments, escaped control characters), and the trace file's events read from it. Test-only.
#pragma once

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ember::test {

struct Json {
  enum Type { null, boolean, number, string, array, object } type = null;
  double num = 0;
  std::string str;
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  const Json& operator[](const std::string& key) const {
    auto it = fields.find(key);
    if (it == fields.end()) throw std::runtime_error("json: no field " + key);
    return it->second;
  }
  bool has(const std::string& key) const { return fields.count(key) != 0; }
};

class JsonReader {
 public:
  explicit JsonReader(std::string text) : s_(std::move(text)) {}
  Json parse() {
    Json v = value();
    space();
    if (i_ != s_.size()) fail("text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("json: " + what + " at offset " + std::to_string(i_));
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  Json value() {
    space();
    if (i_ >= s_.size()) fail("unexpected end");
    Json v;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.type = Json::object;
      if (eat('}')) return v;
      do {
        space();
        std::string key = string_body();
        expect(':');
        v.fields[key] = value();
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.type = Json::array;
      if (eat(']')) return v;
      do v.items.push_back(value());
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.type = Json::string;
      v.str = string_body();
    } else if (s_.compare(i_, 4, "true") == 0 || s_.compare(i_, 5, "false") == 0) {
      v.type = Json::boolean;
      v.num = s_[i_] == 't';
      i_ += s_[i_] == 't' ? 4 : 5;
    } else if (s_.compare(i_, 4, "null") == 0) {
      i_ += 4;
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      const char* begin = s_.c_str() + i_;
      char* end = nullptr;
      v.type = Json::number;
      v.num = std::strtod(begin, &end);
      i_ += size_t(end - begin);
    } else {
      fail(std::string("unexpected '") + c + "'");
    }
    return v;
  }
  std::string string_body() {
    if (i_ >= s_.size() || s_[i_] != '"') fail("expected a string");
    ++i_;
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("short \\u escape");
          const unsigned long code = std::stoul(s_.substr(i_, 4), nullptr, 16);
          i_ += 4;
          if (code >= 0x80) fail("non-ASCII \\u escape (not produced by the writer)");
          out += char(code);
          break;
        }
        default: fail(std::string("bad escape \\") + e);
      }
    }
  }
  std::string s_;
  size_t i_ = 0;
};

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

// One "X" (complete) event of a trace file, with its track's name from the "M" events.
struct TraceEvent {
  std::string category, name, detail, track;
  int pid = 0, tid = 0;
  double ts = 0, dur = 0;
};

// Parses a trace file (throws on malformed JSON or a missing field) and returns its complete
// events.
inline std::vector<TraceEvent> read_trace(const std::string& path) {
  const Json root = JsonReader(read_text(path)).parse();
  if (root["displayTimeUnit"].str != "ms") throw std::runtime_error("trace: displayTimeUnit is not \"ms\"");
  std::map<std::pair<int, int>, std::string> names;
  std::vector<TraceEvent> out;
  for (const Json& e : root["traceEvents"].items) {
    const std::string& ph = e["ph"].str;
    const int pid = int(e["pid"].num), tid = int(e["tid"].num);
    if (ph == "M") {
      if (e["name"].str == "thread_name") names[{pid, tid}] = e["args"]["name"].str;
    } else if (ph == "X") {
      TraceEvent t;
      t.category = e["cat"].str;
      t.name = e["name"].str;
      if (e.has("args")) t.detail = e["args"]["detail"].str;
      t.pid = pid;
      t.tid = tid;
      t.ts = e["ts"].num;
      t.dur = e["dur"].num;
      out.push_back(std::move(t));
    } else {
      throw std::runtime_error("trace: unexpected phase " + ph);
    }
  }
  for (TraceEvent& t : out) t.track = names.at({t.pid, t.tid});
  return out;
}

}  // namespace ember::test
