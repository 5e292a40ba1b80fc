// Helpers shared by the store tests: temporary directories, file bytes, the reference data of
// make_reference.py, and tiny independent writers (ZIP, pickle) for crafting hostile inputs.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <ember/ember.hpp>
#include <ember/store/pytorch.hpp>
#include <ember/store/safetensors.hpp>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace store_test {

using json = nlohmann::json;
namespace fs = std::filesystem;

inline std::string data_path(const std::string& name) { return std::string(EMBER_STORE_TEST_DIR) + "/data/" + name; }

// Runs f, expects an ember::Error whose message contains every fragment.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const ember::Error& e) {
    std::string msg = e.what();
    for (const auto& frag : fragments) EXPECT_NE(msg.find(frag), std::string::npos) << "message: " << msg;
  }
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ember_store_test_XXXXXX";
    const char* p = ::mkdtemp(tmpl);
    EXPECT_NE(p, nullptr);
    path_ = p ? p : "/tmp";
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, ec);
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
inline void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
inline std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

inline const json& expected(const std::string& file) {
  static const json all = json::parse(read_file(data_path("expected.json")));
  return all.at(file);
}

// Compares a tensor with {"dtype", "shape", "values"} of expected.json (exactly: the values are
// what torch holds, widened to double; integers compare as int64).
inline void expect_tensor(const ember::DynTensor& t, const json& e, const std::string& name) {
  EXPECT_EQ(std::string(ember::dtype_name(t.dtype())), e.at("dtype").get<std::string>()) << name;
  EXPECT_EQ(t.shape().dims(), e.at("shape").get<std::vector<int64_t>>()) << name;
  if (ember::is_int(t.dtype())) {
    EXPECT_EQ(t.to_vector<int64_t>(), e.at("values").get<std::vector<int64_t>>()) << name;
  } else {
    EXPECT_EQ(t.to_vector<double>(), e.at("values").get<std::vector<double>>()) << name;
  }
}

inline void expect_tensors(const ember::store::TensorMap& m, const json& e) {
  EXPECT_EQ(m.size(), e.size());
  for (const auto& [name, want] : e.items()) {
    const ember::DynTensor* t = m.find(name);
    if (!t) {
      ADD_FAILURE() << "missing tensor '" << name << "'";
      continue;
    }
    expect_tensor(*t, want, name);
  }
}

// ---- independent writers for crafted inputs ----

inline void put16(std::string& s, uint16_t v) {
  s.push_back(char(v & 0xff));
  s.push_back(char(v >> 8));
}
inline void put32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(char((v >> (8 * i)) & 0xff));
}
inline void put64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(char((v >> (8 * i)) & 0xff));
}

// Bitwise CRC-32 (ISO-HDLC), written from the definition.
inline uint32_t reference_crc32(std::string_view s) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// A ZIP archive of stored entries (no ZIP64), following APPNOTE.TXT.
inline std::string zip_archive(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out, central;
  for (const auto& [name, data] : entries) {
    const auto offset = static_cast<uint32_t>(out.size());
    const uint32_t crc = reference_crc32(data);
    put32(out, 0x04034b50);
    put16(out, 20);
    put16(out, 0);  // flags
    put16(out, 0);  // stored
    put32(out, 0);  // time, date
    put32(out, crc);
    put32(out, uint32_t(data.size()));
    put32(out, uint32_t(data.size()));
    put16(out, uint16_t(name.size()));
    put16(out, 0);
    out += name;
    out += data;
    put32(central, 0x02014b50);
    put16(central, 20);
    put16(central, 20);
    put16(central, 0);
    put16(central, 0);
    put32(central, 0);
    put32(central, crc);
    put32(central, uint32_t(data.size()));
    put32(central, uint32_t(data.size()));
    put16(central, uint16_t(name.size()));
    put16(central, 0);  // extra
    put16(central, 0);  // comment
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, 0);  // external attributes
    put32(central, offset);
    central += name;
  }
  const auto dir_offset = static_cast<uint32_t>(out.size());
  out += central;
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, uint16_t(entries.size()));
  put16(out, uint16_t(entries.size()));
  put32(out, uint32_t(central.size()));
  put32(out, dir_offset);
  put16(out, 0);
  return out;
}

// Pickle programs written opcode by opcode (names from Python's pickletools).
class PickleWriter {
 public:
  PickleWriter() { b_ = "\x80\x02"; }  // PROTO 2
  PickleWriter& op(char c) {
    b_ += c;
    return *this;
  }
  PickleWriter& raw(std::string_view s) {
    b_ += s;
    return *this;
  }
  PickleWriter& str(std::string_view s) {  // BINUNICODE
    b_ += 'X';
    put32(b_, uint32_t(s.size()));
    b_ += s;
    return *this;
  }
  PickleWriter& integer(int32_t v) {  // BININT
    b_ += 'J';
    put32(b_, uint32_t(v));
    return *this;
  }
  PickleWriter& long1(int64_t v) {  // LONG1, 8 bytes
    b_ += '\x8a';
    b_ += '\x08';
    put64(b_, uint64_t(v));
    return *this;
  }
  PickleWriter& global(std::string_view module, std::string_view name) {  // GLOBAL
    b_ += 'c';
    b_ += module;
    b_ += '\n';
    b_ += name;
    b_ += '\n';
    return *this;
  }
  PickleWriter& int_tuple(const std::vector<int64_t>& v) {  // MARK ... TUPLE
    op('(');
    for (int64_t x : v) long1(x);
    return op('t');
  }
  std::string done() { return b_ + "."; }  // STOP
  const std::string& bytes() const { return b_; }

 private:
  std::string b_;
};

// What one crafted tensor is made of; every field can be made wrong on purpose.
struct TensorSpec {
  std::string storage_type = "FloatStorage";
  std::string key = "0";
  int64_t numel = 6;
  int64_t offset = 0;
  std::string offset_pickle;  // when set: raw pickle bytes pushed instead of the offset
  std::vector<int64_t> sizes = {2, 3};
  std::vector<int64_t> strides = {3, 1};
  int nargs = 6;
};

// {"t": torch._utils._rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, size,
// stride, False, OrderedDict())}
inline std::string tensor_pickle(const TensorSpec& s) {
  PickleWriter p;
  p.op('}').str("t").global("torch._utils", "_rebuild_tensor_v2").op('(');
  p.op('(').str("storage").global("torch", s.storage_type).str(s.key).str("cpu").long1(s.numel).op('t').op('Q');
  if (s.offset_pickle.empty())
    p.long1(s.offset);
  else
    p.raw(s.offset_pickle);
  p.int_tuple(s.sizes).int_tuple(s.strides).op('\x89');
  p.global("collections", "OrderedDict").op(')').op('R');
  for (int i = 6; i < s.nargs; ++i) p.op('N');
  if (s.nargs < 6) p.raw(std::string(size_t(6 - s.nargs), '0'));  // POP the extra arguments
  p.op('t').op('R').op('s');
  return p.done();
}

// A string literal with its embedded NULs: bin("q\x00h\x00").
template <size_t N>
std::string bin(const char (&s)[N]) {
  return std::string(s, N - 1);
}

inline std::string f32_bytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

inline std::string torch_archive(const std::string& pickle, const std::string& storage) {
  return zip_archive({{"archive/data.pkl", pickle}, {"archive/data/0", storage}, {"archive/version", "3\n"}});
}

}  // namespace store_test
