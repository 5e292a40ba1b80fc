// Helpers shared by the onnx tests: fixture paths, expected values, errors, temporary
// directories, and a tiny protobuf writer for crafting hostile inputs byte by byte.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <ember/onnx/model.hpp>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace onnx_test {

using json = nlohmann::json;
namespace fs = std::filesystem;

inline std::string fixture(const std::string& name) { return std::string(EMBER_ONNX_TEST_DIR) + "/fixtures/" + name; }

inline std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(c.size());
  if (!c.empty()) std::memcpy(out.data(), c.data(), c.size());
  return out;
}

inline const json& expected() {
  static const json j = [] {
    std::ifstream f(fixture("expected.json"));
    return json::parse(f);
  }();
  return j;
}

// Runs f, expects an ember::Error whose message contains every fragment; `kind` also asks for
// an ember::NotImplemented (valid, but not implemented: the node-test runner counts the case as
// unsupported) or for a plain Error (a malformed or invalid model: the runner counts it as failed).
enum class ErrorKind { any, not_implemented, plain };
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> fragments, ErrorKind kind = ErrorKind::any) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const ember::Error& e) {
    const bool not_implemented = dynamic_cast<const ember::NotImplemented*>(&e) != nullptr;
    if (kind == ErrorKind::not_implemented && !not_implemented)
      ADD_FAILURE() << "a plain Error, expected a NotImplemented: " << e.what();
    if (kind == ErrorKind::plain && not_implemented)
      ADD_FAILURE() << "a NotImplemented, expected a plain Error: " << e.what();
    std::string msg = e.what();
    for (const auto& frag : fragments) EXPECT_NE(msg.find(frag), std::string::npos) << "message: " << msg;
  }
}
template <class F>
void expect_not_implemented(F&& f, std::initializer_list<std::string> fragments) {
  expect_error(std::forward<F>(f), fragments, ErrorKind::not_implemented);
}
template <class F>
void expect_plain_error(F&& f, std::initializer_list<std::string> fragments) {
  expect_error(std::forward<F>(f), fragments, ErrorKind::plain);
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ember_onnx_test_XXXXXX";
    const char* p = ::mkdtemp(tmpl);
    EXPECT_NE(p, nullptr);
    path_ = p ? p : "/tmp";
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Protobuf wire-format writer (for tests only): append fields, nest messages by value.
class Writer {
 public:
  Writer& varint(uint32_t field, uint64_t v) {
    tag(field, 0);
    raw_varint(v);
    return *this;
  }
  Writer& fixed32(uint32_t field, uint32_t v) {
    tag(field, 5);
    buf_.append(reinterpret_cast<const char*>(&v), 4);
    return *this;
  }
  Writer& float32(uint32_t field, float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return fixed32(field, bits);
  }
  Writer& fixed64(uint32_t field, uint64_t v) {
    tag(field, 1);
    buf_.append(reinterpret_cast<const char*>(&v), 8);
    return *this;
  }
  Writer& bytes(uint32_t field, const std::string& b) {
    tag(field, 2);
    raw_varint(b.size());
    buf_ += b;
    return *this;
  }
  Writer& message(uint32_t field, const Writer& m) { return bytes(field, m.str()); }
  Writer& tag(uint32_t field, uint32_t wire) {
    raw_varint((uint64_t(field) << 3) | wire);
    return *this;
  }
  Writer& raw_varint(uint64_t v) {
    while (v >= 0x80) {
      buf_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    buf_ += static_cast<char>(v);
    return *this;
  }
  Writer& raw(const std::string& b) {
    buf_ += b;
    return *this;
  }
  const std::string& str() const { return buf_; }

 private:
  std::string buf_;
};

// A value of a tensor type with fixed dims (a graph input), as a parsed ValueInfoProto.
inline ember::onnx::ValueInfoProto tensor_value(const std::string& name, ember::onnx::DataType type,
                                               const std::vector<int64_t>& dims) {
  ember::onnx::ValueInfoProto v;
  v.name = name;
  v.has_type = true;
  v.type.kind = ember::onnx::TypeProto::Kind::tensor;
  v.type.elem_type = int32_t(type);
  std::vector<ember::onnx::Dimension> d;
  for (int64_t x : dims) {
    ember::onnx::Dimension dim;
    dim.value = x;
    d.push_back(dim);
  }
  v.type.shape = d;
  return v;
}

// onnx.proto builders on top of Writer.
inline Writer value_info(const std::string& name) { return Writer().bytes(1, name); }
inline Writer node(const std::string& op, std::initializer_list<std::string> inputs,
                   std::initializer_list<std::string> outputs, const std::string& name = "") {
  Writer n;
  for (const auto& i : inputs) n.bytes(1, i);
  for (const auto& o : outputs) n.bytes(2, o);
  if (!name.empty()) n.bytes(3, name);
  n.bytes(4, op);
  return n;
}
// A model around a graph (field 7) with opset 13.
inline std::string model(const Writer& graph) {
  return Writer().varint(1, 8).message(7, graph).message(8, Writer().bytes(1, "").varint(2, 13)).str();
}

inline std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
inline ember::onnx::ModelProto parse(const std::string& s, const std::string& base_dir = "") {
  return ember::onnx::parse_model(as_bytes(s), base_dir);
}

}  // namespace onnx_test
