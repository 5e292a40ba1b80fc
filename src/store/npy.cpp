// NumPy .npy reading and writing (see include/ember/store/npy.hpp for the format).
#include "ember/store/npy.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "ember/core/error.hpp"
#include "file_io.hpp"

namespace ember::store {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kArrayAlign = 64;
constexpr size_t kMaxRank = 64;

// A tiny reader of the Python literals np.save writes into the header.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view where) : s_(text), where_(where) {}

  struct Result {
    std::string descr;
    bool fortran_order = false;
    std::vector<int64_t> shape;
  };

  Result parse() {
    Result r;
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_ws();
    expect('{', "the header must be a dict literal starting with '{'");
    skip_ws();
    while (peek() != '}') {
      std::string key = string_literal("a dict key");
      skip_ws();
      expect(':', "expected ':' after key '" + key + "'");
      skip_ws();
      if (key == "descr") {
        EMBER_CHECK(!have_descr, where_, ": header has 'descr' twice");
        have_descr = true;
        if (peek() == '[') {
          EMBER_FAIL(where_, ": structured dtypes (a list as 'descr') are not supported");
        }
        r.descr = string_literal("the 'descr' value");
      } else if (key == "fortran_order") {
        EMBER_CHECK(!have_fortran, where_, ": header has 'fortran_order' twice");
        have_fortran = true;
        r.fortran_order = boolean_literal();
      } else if (key == "shape") {
        EMBER_CHECK(!have_shape, where_, ": header has 'shape' twice");
        have_shape = true;
        r.shape = int_tuple();
      } else {
        EMBER_FAIL(where_, ": unexpected header key '", key, "' (expected 'descr', 'fortran_order', 'shape')");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else {
        EMBER_CHECK(peek() == '}', where_, ": malformed header: expected ',' or '}' at byte ", pos_, " of the header");
      }
    }
    ++pos_;  // '}'
    skip_ws();
    EMBER_CHECK(pos_ == s_.size(), where_, ": malformed header: unexpected text after the dict at byte ", pos_);
    EMBER_CHECK(have_descr && have_fortran && have_shape, where_, ": header lacks ",
                !have_descr     ? "'descr'"
                : !have_fortran ? "'fortran_order'"
                                : "'shape'");
    return r;
  }

 private:
  int peek() const { return pos_ < s_.size() ? static_cast<unsigned char>(s_[pos_]) : -1; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c, const std::string& what) {
    EMBER_CHECK(peek() == static_cast<unsigned char>(c), where_, ": malformed header: ", what, " (at byte ", pos_,
                " of the header)");
    ++pos_;
  }
  std::string string_literal(std::string_view what) {
    int q = peek();
    EMBER_CHECK(q == '\'' || q == '"', where_, ": malformed header: expected a string as ", what, " at byte ", pos_);
    ++pos_;
    std::string out;
    while (true) {
      EMBER_CHECK(pos_ < s_.size() && s_[pos_] != '\n', where_, ": malformed header: unterminated string");
      char c = s_[pos_++];
      if (static_cast<unsigned char>(c) == q) break;
      EMBER_CHECK(c != '\\', where_, ": malformed header: escapes in strings are not supported");
      out.push_back(c);
      EMBER_CHECK(out.size() <= 256, where_, ": malformed header: string too long");
    }
    return out;
  }
  bool boolean_literal() {
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    EMBER_FAIL(where_, ": malformed header: 'fortran_order' must be True or False");
  }
  std::vector<int64_t> int_tuple() {
    expect('(', "'shape' must be a tuple");
    std::vector<int64_t> dims;
    skip_ws();
    while (peek() != ')') {
      EMBER_CHECK(peek() != '-', where_, ": negative dimension in 'shape'");
      EMBER_CHECK(peek() >= '0' && peek() <= '9', where_,
                  ": malformed header: expected a dimension in 'shape' at byte ", pos_);
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        int d = peek() - '0';
        EMBER_CHECK(v <= (std::numeric_limits<int64_t>::max() - d) / 10, where_, ": dimension in 'shape' too large");
        v = v * 10 + d;
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2 longs
      dims.push_back(v);
      EMBER_CHECK(dims.size() <= kMaxRank, where_, ": 'shape' has more than ", kMaxRank, " dimensions");
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else {
        EMBER_CHECK(peek() == ')', where_, ": malformed header: expected ',' or ')' in 'shape' at byte ", pos_);
      }
    }
    ++pos_;
    return dims;
  }

  std::string_view s_;
  std::string where_;
  size_t pos_ = 0;
};

struct Descr {
  DType dtype;
  bool big_endian;
};

Descr parse_descr(const std::string& d, std::string_view where) {
  EMBER_CHECK(!d.empty(), where, ": unsupported dtype descr ''");
  char order = d[0];
  std::string_view code = std::string_view(d).substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    // A bare code such as '?' or 'b1' (native order).
    code = d;
    order = '=';
  }
  bool big = order == '>';
  struct Known {
    std::string_view code;
    DType dtype;
  };
  static constexpr Known kKnown[] = {
      {"f2", DType::f16}, {"f4", DType::f32}, {"f8", DType::f64}, {"i1", DType::i8},      {"i2", DType::i16},
      {"i4", DType::i32}, {"i8", DType::i64}, {"u1", DType::u8},  {"b1", DType::boolean}, {"?", DType::boolean}};
  for (const Known& k : kKnown)
    if (code == k.code) return {k.dtype, big};
  if (code == "u2" || code == "u4" || code == "u8")
    EMBER_FAIL(where, ": dtype '", d, "' (uint",
               code == "u2"   ? "16"
               : code == "u4" ? "32"
                              : "64",
               ") is not supported: ember has no unsigned integer dtype wider than 8 bits (convert it, e.g. to int64)");
  EMBER_FAIL(where, ": unsupported dtype descr '", d,
             "' (supported: f2 f4 f8 i1 i2 i4 i8 u1 b1, little- or big-endian)");
}

uint32_t read_le(std::span<const std::byte> b, size_t offset, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(b[offset + i]) << (8 * i);
  return v;
}

// Row-major copy of Fortran-ordered data (column-major: the first index varies fastest).
std::vector<std::byte> fortran_to_c(std::span<const std::byte> src, const std::vector<int64_t>& dims, size_t esize) {
  const size_t rank = dims.size();
  std::vector<int64_t> fstride(rank);
  int64_t acc = 1;
  for (size_t k = 0; k < rank; ++k) {
    fstride[k] = acc;
    acc *= dims[k];
  }
  const size_t n = src.size() / esize;
  std::vector<std::byte> out(src.size());
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(out.data() + i * esize, src.data() + static_cast<size_t>(off) * esize, esize);
    for (size_t k = rank; k-- > 0;) {  // advance the C-order counter: last index fastest
      if (++idx[k] < dims[k]) {
        off += fstride[k];
        break;
      }
      off -= fstride[k] * (dims[k] - 1);
      idx[k] = 0;
    }
  }
  return out;
}

std::string descr_of(DType dt) {
  switch (dt) {
    case DType::f64:
      return "<f8";
    case DType::f32:
      return "<f4";
    case DType::f16:
      return "<f2";
    case DType::i64:
      return "<i8";
    case DType::i32:
      return "<i4";
    case DType::i16:
      return "<i2";
    case DType::i8:
      return "|i1";
    case DType::u8:
      return "|u1";
    case DType::boolean:
      return "|b1";
    case DType::bf16:
      break;
  }
  EMBER_FAIL("write_npy: no NumPy dtype for ", dtype_name(dt));
}

// The preamble (magic, version, header length, header) of an array of `dtype` and `shape`.
std::vector<std::byte> npy_preamble(DType dtype, const Shape& shape) {
  std::string dict = "{'descr': '" + descr_of(dtype) + "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < shape.rank(); ++i) {
    if (i) dict += ", ";
    dict += std::to_string(shape[i]);
  }
  if (shape.rank() == 1) dict += ",";
  dict += "), }";
  size_t prefix = kMagicLen + 2 + 2;
  size_t total = prefix + dict.size() + 1;
  if (total + (kArrayAlign - total % kArrayAlign) % kArrayAlign - prefix > 0xffff) prefix = kMagicLen + 2 + 4;
  total = prefix + dict.size() + 1;
  size_t pad = (kArrayAlign - total % kArrayAlign) % kArrayAlign;
  dict.append(pad, ' ');
  dict.push_back('\n');
  std::vector<std::byte> out(prefix + dict.size());
  std::memcpy(out.data(), kMagic, kMagicLen);
  const bool v2 = prefix == kMagicLen + 2 + 4;
  out[6] = std::byte(v2 ? 2 : 1);
  out[7] = std::byte(0);
  const uint64_t len = dict.size();
  for (size_t i = 0; i < prefix - 8; ++i) out[8 + i] = std::byte((len >> (8 * i)) & 0xff);
  std::memcpy(out.data() + prefix, dict.data(), dict.size());
  return out;
}

}  // namespace

DType npy_stored_dtype(DType dtype) { return dtype == DType::bf16 ? DType::f32 : dtype; }

std::string_view npy_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return "float64";
    case DType::f32:
      return "float32";
    case DType::f16:
      return "float16";
    case DType::bf16:
      return "bfloat16";
    case DType::i64:
      return "int64";
    case DType::i32:
      return "int32";
    case DType::i16:
      return "int16";
    case DType::i8:
      return "int8";
    case DType::u8:
      return "uint8";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

TensorData read_npy_from_memory(std::span<const std::byte> bytes, std::string_view source) {
  const std::string where = "read_npy: " + std::string(source);
  EMBER_CHECK(bytes.size() >= kMagicLen + 2 && std::memcmp(bytes.data(), kMagic, kMagicLen) == 0, where,
              ": not a NumPy .npy file (bad magic)");
  const int major = static_cast<int>(bytes[6]), minor = static_cast<int>(bytes[7]);
  EMBER_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, where, ": unsupported .npy format version ",
              major, ".", minor, " (supported: 1.0, 2.0, 3.0)");
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t prefix = kMagicLen + 2 + len_bytes;
  EMBER_CHECK(bytes.size() >= prefix, where, ": truncated: the file ends inside the header length");
  const uint64_t header_len = read_le(bytes, kMagicLen + 2, len_bytes);
  EMBER_CHECK(header_len <= kMaxNpyHeaderBytes, where, ": header length ", header_len, " exceeds the limit of ",
              kMaxNpyHeaderBytes, " bytes");
  EMBER_CHECK(header_len <= bytes.size() - prefix, where, ": truncated: header of ", header_len,
              " bytes but the file has ", bytes.size() - prefix, " bytes after the preamble");
  std::string_view header(reinterpret_cast<const char*>(bytes.data() + prefix), static_cast<size_t>(header_len));
  HeaderParser::Result h = HeaderParser(header, where).parse();
  Descr descr = parse_descr(h.descr, where);

  const size_t esize = dtype_size(descr.dtype);
  uint64_t numel = 1;
  bool zero = std::find(h.shape.begin(), h.shape.end(), 0) != h.shape.end();
  if (zero) {
    numel = 0;
  } else {
    for (int64_t d : h.shape) {
      EMBER_CHECK(numel <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(d), where,
                  ": shape ", Shape(h.shape), " has too many elements");
      numel *= static_cast<uint64_t>(d);
    }
  }
  EMBER_CHECK(numel <= std::numeric_limits<uint64_t>::max() / esize, where, ": shape ", Shape(h.shape),
              " is too large");
  const uint64_t data_bytes = numel * esize;
  const uint64_t avail = bytes.size() - prefix - header_len;
  EMBER_CHECK(data_bytes == avail, where, ": size mismatch: shape ", Shape(h.shape), " of ", h.descr, " needs ",
              data_bytes, " data bytes but the file has ", avail, avail < data_bytes ? " (truncated)" : "");

  std::span<const std::byte> data = bytes.subspan(prefix + static_cast<size_t>(header_len));
  std::vector<std::byte> out;
  if (h.fortran_order && h.shape.size() > 1) {
    out = fortran_to_c(data, h.shape, esize);
  } else {
    out.assign(data.begin(), data.end());
  }
  if (descr.big_endian && esize > 1) {
    for (size_t i = 0; i < out.size(); i += esize) std::reverse(out.begin() + i, out.begin() + i + esize);
  }
  if (descr.dtype == DType::boolean) {
    for (std::byte& b : out) b = std::byte(b != std::byte(0) ? 1 : 0);
  }
  return TensorData(Shape(h.shape), descr.dtype, std::move(out));
}

TensorData read_npy(const std::string& path) {
  detail::MappedFile file(path);
  return read_npy_from_memory(file.bytes(), path);
}

std::vector<std::byte> write_npy_to_memory(const TensorData& data) {
  if (data.dtype() == DType::bf16) return write_npy_to_memory(data.convert(DType::f32));
  std::vector<std::byte> out = npy_preamble(data.dtype(), data.shape());
  out.insert(out.end(), data.bytes().begin(), data.bytes().end());
  return out;
}

void write_npy(const std::string& path, const TensorData& data) {
  if (data.dtype() == DType::bf16) {
    write_npy(path, data.convert(DType::f32));
    return;
  }
  std::vector<std::byte> preamble = npy_preamble(data.dtype(), data.shape());
  detail::AtomicFileWriter file(path);
  file.write(preamble);
  file.write(data.bytes());
  file.commit();
}

}  // namespace ember::store
