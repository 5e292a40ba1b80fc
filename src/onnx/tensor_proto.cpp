// TensorProto -> TensorData: element types, raw and typed data, external data files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>

#include "ember/onnx/model.hpp"
#include "onnx_internal.hpp"

namespace ember::onnx {

namespace {

struct TypeEntry {
  int32_t onnx;
  const char* name;
  std::optional<DType> dtype;
};
const TypeEntry kTypes[] = {
    {0, "UNDEFINED", std::nullopt},   {1, "FLOAT", DType::f32},          {2, "UINT8", DType::u8},
    {3, "INT8", DType::i8},           {4, "UINT16", std::nullopt},      {5, "INT16", DType::i16},
    {6, "INT32", DType::i32},         {7, "INT64", DType::i64},          {8, "STRING", std::nullopt},
    {9, "BOOL", DType::boolean},      {10, "FLOAT16", DType::f16},       {11, "DOUBLE", DType::f64},
    {12, "UINT32", std::nullopt},     {13, "UINT64", std::nullopt},     {14, "COMPLEX64", std::nullopt},
    {15, "COMPLEX128", std::nullopt}, {16, "BFLOAT16", DType::bf16},    {17, "FLOAT8E4M3FN", std::nullopt},
    {18, "FLOAT8E4M3FNUZ", std::nullopt}, {19, "FLOAT8E5M2", std::nullopt}, {20, "FLOAT8E5M2FNUZ", std::nullopt},
    {21, "UINT4", std::nullopt},      {22, "INT4", std::nullopt},
};

std::string errno_text(int err) { return std::strerror(err); }

// Opens a regular file for reading; returns the descriptor and sets `size`.
int open_regular(const std::string& path, uint64_t& size, const std::string& what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EMBER_CHECK(fd >= 0, what, path, ": cannot open for reading: ", errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    EMBER_FAIL(what, path, ": cannot stat: ", errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    EMBER_FAIL(what, path, ": not a regular file");
  }
  size = static_cast<uint64_t>(st.st_size);
  return fd;
}

void read_exact(int fd, uint64_t offset, std::byte* out, size_t n, const std::string& what) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const std::string why = got == 0 ? std::string("unexpected end of file") : errno_text(errno);
      ::close(fd);
      EMBER_FAIL(what, "read failed at offset ", offset + done, ": ", why);
    }
    done += static_cast<size_t>(got);
  }
}

uint64_t parse_u64(const std::string& text, const std::string& what, const char* key) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  EMBER_CHECK(!text.empty() && ec == std::errc() && p == end, what, ": external_data '", key, "' is '", text,
              "', not a non-negative integer");
  return v;
}

std::vector<std::byte> read_external(const TensorProto& t, const std::string& base_dir, uint64_t nbytes,
                                     const std::string& what) {
  auto location = t.external_value("location");
  EMBER_CHECK(location.has_value(), what, ": data_location is EXTERNAL but external_data has no 'location'");
  const std::string problem = detail::external_location_problem(*location);
  EMBER_CHECK(problem.empty(), what, ": external data location '", *location, "' ", problem);
  EMBER_CHECK(!base_dir.empty(), what, ": external data file '", *location,
              "' cannot be read: the model was parsed from memory without a base directory");
  const uint64_t offset = t.external_value("offset") ? parse_u64(*t.external_value("offset"), what, "offset") : 0;
  if (auto length = t.external_value("length")) {
    const uint64_t n = parse_u64(*length, what, "length");
    EMBER_CHECK(n == nbytes, what, ": external_data length ", n, " but dims ", Shape(t.dims), " of ",
                data_type_name(t.data_type), " need ", nbytes, " bytes");
  }
  // The file must lie inside base_dir even after symbolic links are followed.
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::path(base_dir), ec);
  EMBER_CHECK(!ec, what, ": cannot resolve the model directory '", base_dir, "': ", ec.message());
  const fs::path file = fs::weakly_canonical(base / *location, ec);
  EMBER_CHECK(!ec, what, ": cannot resolve external data file '", *location, "': ", ec.message());
  auto [b, f] = std::mismatch(base.begin(), base.end(), file.begin(), file.end());
  EMBER_CHECK(b == base.end(), what, ": external data file '", *location, "' resolves to ", file.string(),
              ", outside the model directory ", base.string());

  uint64_t size = 0;
  const std::string prefix = what + ": external data ";
  const int fd = open_regular(file.string(), size, prefix);
  if (offset > size || nbytes > size - offset) {
    ::close(fd);
    EMBER_FAIL(what, ": external data file ", file.string(), " has ", size, " bytes, too few for ", nbytes,
               " bytes at offset ", offset);
  }
  std::vector<std::byte> out(static_cast<size_t>(nbytes));
  read_exact(fd, offset, out.data(), out.size(), prefix + file.string() + ": ");
  ::close(fd);
  return out;
}

template <class T, class S>
std::vector<std::byte> to_bytes(const std::vector<S>& values, const std::string& what, const char* field, T lo,
                                T hi) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  for (size_t i = 0; i < values.size(); ++i) {
    const S v = values[i];
    T x;
    if constexpr (std::is_floating_point_v<S>) {
      x = static_cast<T>(v);
    } else {
      EMBER_CHECK(v >= static_cast<S>(lo) && v <= static_cast<S>(hi), what, ": ", field, "[", i, "] = ", v,
                  " is out of range");
      x = static_cast<T>(v);
    }
    std::memcpy(out.data() + i * sizeof(T), &x, sizeof(T));
  }
  return out;
}

}  // namespace

std::string data_type_name(int32_t data_type) {
  for (const auto& e : kTypes)
    if (e.onnx == data_type) return e.name;
  return "DataType(" + std::to_string(data_type) + ")";
}

std::optional<DType> to_dtype(int32_t data_type) {
  for (const auto& e : kTypes)
    if (e.onnx == data_type) return e.dtype;
  return std::nullopt;
}

int32_t from_dtype(DType dtype) {
  for (const auto& e : kTypes)
    if (e.dtype == dtype) return e.onnx;
  EMBER_FAIL("onnx: no element type for dtype ", dtype);
}

int64_t TensorProto::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::optional<std::string> TensorProto::external_value(std::string_view key) const {
  std::optional<std::string> v;
  for (const auto& e : external_data)
    if (e.key == key) v = e.value;
  return v;
}

namespace detail {

std::vector<std::byte> read_whole_file(const std::string& path) {
  uint64_t size = 0;
  const int fd = open_regular(path, size, "");
  if (size > uint64_t(std::numeric_limits<int32_t>::max())) {
    ::close(fd);
    EMBER_FAIL(path, ": ", size, " bytes: larger than protobuf's 2 GiB limit for a model "
               "(large weights belong in external data files)");
  }
  std::vector<std::byte> bytes(static_cast<size_t>(size));
  read_exact(fd, 0, bytes.data(), bytes.size(), path + ": ");
  ::close(fd);
  return bytes;
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string external_location_problem(std::string_view location) {
  if (location.empty()) return "is empty";
  if (location.find('\0') != std::string_view::npos) return "contains a NUL byte";
  if (location.front() == '/' || location.front() == '\\') return "is absolute (it must be relative to the model)";
  if (location.size() >= 2 && location[1] == ':') return "is absolute (it must be relative to the model)";
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find_first_of("/\\", start);
    if (end == std::string_view::npos) end = location.size();
    if (location.substr(start, end - start) == "..") return "leaves the model directory ('..')";
    start = end + 1;
  }
  return "";
}

void check_dims(const std::vector<int64_t>& dims, const std::string& what) {
  EMBER_CHECK(dims.size() <= kMaxTensorRank, what, ": rank ", dims.size(), " exceeds the limit of ", kMaxTensorRank);
  uint64_t product = 1;  // of the non-zero dims: Shape::numel() multiplies them all
  for (int64_t d : dims) {
    EMBER_CHECK(d >= 0, what, ": negative dimension ", d, " in dims ", Shape(dims));
    if (d == 0) continue;
    EMBER_CHECK(!__builtin_mul_overflow(product, static_cast<uint64_t>(d), &product) &&
                    product <= uint64_t(std::numeric_limits<int64_t>::max()),
                what, ": dims ", Shape(dims), " have more elements than can be addressed");
  }
}

}  // namespace detail

TensorData to_tensor_data(const TensorProto& t, const std::string& base_dir) {
  const std::string what = "onnx: tensor '" + t.name + "'";
  const std::optional<DType> maybe = to_dtype(t.data_type);
  if (!maybe)
    EMBER_NOT_IMPLEMENTED(what, ": unsupported dtype ", data_type_name(t.data_type),
                          " (ember reads FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT64, INT32, INT16, INT8, UINT8 and BOOL)");
  const DType dtype = *maybe;
  if (t.has_segment) EMBER_NOT_IMPLEMENTED(what, ": segmented tensors are not supported");
  detail::check_dims(t.dims, what);
  const uint64_t numel = static_cast<uint64_t>(t.numel());
  uint64_t nbytes = 0;
  EMBER_CHECK(!__builtin_mul_overflow(numel, uint64_t(dtype_size(dtype)), &nbytes) &&
                  nbytes <= uint64_t(std::numeric_limits<int64_t>::max()),
              what, ": dims ", Shape(t.dims), " of ", data_type_name(t.data_type), " need more bytes than can be addressed");

  struct Typed {
    const char* name;
    size_t size;
  };
  const Typed typed[] = {{"float_data", t.float_data.size()},   {"int32_data", t.int32_data.size()},
                         {"int64_data", t.int64_data.size()},   {"double_data", t.double_data.size()},
                         {"uint64_data", t.uint64_data.size()}, {"string_data", t.string_data.size()}};
  int sources = (t.raw_data ? 1 : 0) + (t.external ? 1 : 0);
  const Typed* used = nullptr;
  for (const auto& f : typed)
    if (f.size) {
      ++sources;
      used = &f;
    }
  EMBER_CHECK(sources <= 1, what, ": holds its data in more than one place (raw_data, external data, typed fields)");

  std::vector<std::byte> bytes;
  if (t.external) {
    bytes = read_external(t, base_dir, nbytes, what);
  } else if (t.raw_data) {
    EMBER_CHECK(t.raw_data->size() == nbytes, what, ": raw_data has ", t.raw_data->size(), " bytes but dims ",
                Shape(t.dims), " of ", data_type_name(t.data_type), " need ", nbytes);
    bytes = *t.raw_data;
  } else if (used == nullptr) {
    EMBER_CHECK(numel == 0, what, ": has no data (dims ", Shape(t.dims), " need ", numel, " values)");
  } else {
    // The typed field onnx.proto assigns to each element type.
    const char* expected = nullptr;
    switch (dtype) {
      case DType::f32: expected = "float_data"; break;
      case DType::f64: expected = "double_data"; break;
      case DType::i64: expected = "int64_data"; break;
      default: expected = "int32_data"; break;
    }
    EMBER_CHECK(std::string_view(used->name) == expected, what, ": ", data_type_name(t.data_type),
                " data must be in ", expected, ", not in ", used->name);
    EMBER_CHECK(used->size == numel, what, ": ", used->name, " has ", used->size, " values but dims ", Shape(t.dims),
                " need ", numel);
    switch (dtype) {
      case DType::f32: bytes = to_bytes<float>(t.float_data, what, "float_data", 0.f, 0.f); break;
      case DType::f64: bytes = to_bytes<double>(t.double_data, what, "double_data", 0., 0.); break;
      case DType::i64:
        bytes = to_bytes<int64_t>(t.int64_data, what, "int64_data", std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max());
        break;
      case DType::i32:
        bytes = to_bytes<int32_t>(t.int32_data, what, "int32_data", std::numeric_limits<int32_t>::min(),
                                  std::numeric_limits<int32_t>::max());
        break;
      case DType::i16: bytes = to_bytes<int16_t>(t.int32_data, what, "int32_data", int16_t(-32768), int16_t(32767)); break;
      case DType::i8: bytes = to_bytes<int8_t>(t.int32_data, what, "int32_data", int8_t(-128), int8_t(127)); break;
      case DType::u8: bytes = to_bytes<uint8_t>(t.int32_data, what, "int32_data", uint8_t(0), uint8_t(255)); break;
      case DType::boolean: bytes = to_bytes<uint8_t>(t.int32_data, what, "int32_data", uint8_t(0), uint8_t(1)); break;
      case DType::f16:
      case DType::bf16: {
        // 16-bit patterns, stored zero- (or sign-) extended.
        std::vector<int32_t> bits = t.int32_data;
        for (size_t i = 0; i < bits.size(); ++i) {
          EMBER_CHECK(bits[i] >= -32768 && bits[i] <= 65535, what, ": int32_data[", i, "] = ", bits[i],
                      " is not a 16-bit pattern");
          bits[i] &= 0xffff;
        }
        bytes = to_bytes<uint16_t>(bits, what, "int32_data", uint16_t(0), uint16_t(65535));
        break;
      }
    }
  }
  if (dtype == DType::boolean)
    for (std::byte& b : bytes)
      if (b != std::byte{0}) b = std::byte{1};
  return TensorData(Shape(t.dims), dtype, std::move(bytes));
}

}  // namespace ember::onnx
