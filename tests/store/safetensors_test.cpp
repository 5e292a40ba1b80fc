// safetensors: round trips of every dtype, a file from an independent writer (values from
// PyTorch), atomic writes, and one test per category of hostile input.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "store_test_util.hpp"

using namespace ember;
using namespace ember::store;
using namespace store_test;

namespace {

const DType kAllDTypes[] = {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64,
                            DType::i32, DType::i16, DType::i8,  DType::u8,   DType::boolean};

// Values that exercise each dtype's range, special values included.
TensorData sample(DType dt) {
  std::vector<double> v;
  if (is_float(dt)) {
    const double inf = std::numeric_limits<double>::infinity();
    v = {0.0, -0.0, 1.5, -2.25, 1e-3, 65504.0, -inf, inf, std::nan(""), 3.0, -7.5, 0.1};
  } else if (dt == DType::boolean) {
    v = {1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1};
  } else if (dt == DType::u8) {
    v = {0, 1, 2, 127, 128, 255, 3, 4, 5, 6, 7, 8};
  } else {
    v = {-1, 0, 1, 2, -3, 100, -100, 42, 7, 8, 9, 10};
  }
  TensorData d = TensorData::from_doubles(v, Shape{3, 4}, dt);
  if (dt == DType::i64) {  // the extremes do not survive a trip through double
    auto s = d.as<int64_t>();
    s[0] = std::numeric_limits<int64_t>::min();
    s[1] = std::numeric_limits<int64_t>::max();
  }
  return d;
}

bool same_bytes(const TensorData& a, const TensorData& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end());
}

// A safetensors file from a header text and a data buffer; `length` overrides the header length.
std::string st_file(const std::string& header, const std::string& data, std::optional<uint64_t> length = {}) {
  std::string out;
  put64(out, length.value_or(header.size()));
  return out + header + data;
}

void expect_load_error(const std::string& file_bytes, std::initializer_list<std::string> fragments) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  write_file(path, file_bytes);
  std::vector<std::string> with_path(fragments);
  with_path.push_back(path);
  try {
    load_safetensors(path);
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& frag : with_path) EXPECT_NE(msg.find(frag), std::string::npos) << "message: " << msg;
  }
  // The in-memory loader and the header reader refuse the same bytes.
  EXPECT_THROW(load_safetensors_from_memory(as_bytes(file_bytes)), Error);
}

}  // namespace

TEST(Safetensors, RoundTripEveryDtype) {
  TempDir dir;
  TensorMap m;
  for (DType dt : kAllDTypes)
    m.insert(std::string("t_") + std::string(dtype_name(dt)), DynTensor::from_data(sample(dt)));
  m.insert("scalar", DynTensor::from_vector<float>({4.5f}, Shape{}));
  m.insert("empty", DynTensor::zeros(Shape{0, 3}, DType::i16));
  const std::string path = dir.file("all.safetensors");
  save_safetensors(path, m, {{"epoch", "3"}, {"note", "h\u00e9llo"}});

  TensorMap back = load_safetensors(path);
  ASSERT_EQ(back.size(), m.size());
  for (const auto& [name, t] : m) {
    ASSERT_TRUE(back.contains(name)) << name;
    EXPECT_TRUE(same_bytes(back.at(name).into_data(), t.into_data())) << name;
  }
  // Loaded in name order, as the file lays them out.
  std::vector<std::string> names = back.names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));

  SafetensorsHeader h = read_safetensors_header(path);
  EXPECT_EQ(h.metadata, (std::map<std::string, std::string>{{"epoch", "3"}, {"note", "h\u00e9llo"}}));
  EXPECT_EQ(h.data_offset % 8, 0u);  // header padded to 8 bytes
  ASSERT_EQ(h.tensors.size(), m.size());
  for (const auto& info : h.tensors) {
    EXPECT_EQ(info.dtype, m.at(info.name).dtype()) << info.name;
    EXPECT_EQ(info.shape, m.at(info.name).shape()) << info.name;
  }
  // Every tensor is aligned to its element size in the file; the header lists them by name.
  const std::string file = read_file(path);
  size_t last = 0;
  for (const auto& info : h.tensors) {
    EXPECT_EQ((h.data_offset + info.data_begin) % dtype_size(info.dtype), 0u) << info.name;
    const size_t pos = file.find("\"" + info.name + "\"");
    EXPECT_GT(pos, last) << info.name;
    last = pos;
  }
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"all.safetensors"});  // no temporary left
}

TEST(Safetensors, RoundTripInMemoryMatchesFile) {
  TempDir dir;
  TensorMap m{{"b", DynTensor::from_data(sample(DType::bf16))}, {"a", DynTensor::from_data(sample(DType::i8))}};
  save_safetensors(dir.file("x.safetensors"), m);
  std::vector<std::byte> mem = save_safetensors_to_memory(m);
  const std::string file = read_file(dir.file("x.safetensors"));
  ASSERT_EQ(mem.size(), file.size());
  EXPECT_EQ(std::memcmp(mem.data(), file.data(), file.size()), 0);
  TensorMap back = load_safetensors_from_memory(mem);
  EXPECT_TRUE(same_bytes(back.at("b").into_data(), sample(DType::bf16)));
  EXPECT_EQ(back.names(), (std::vector<std::string>{"a", "b"}));
}

TEST(Safetensors, SavesComputedAndNonContiguousTensors) {
  TempDir dir;
  auto x = DynTensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  auto xt = transpose(x, 0, 1);  // a view: saved row-major as [3, 2]
  save_safetensors(dir.file("v.safetensors"), {{"xt", xt}, {"y", exp(x) + 1.0}});
  TensorMap back = load_safetensors(dir.file("v.safetensors"));
  EXPECT_EQ(back.at("xt").shape(), (Shape{3, 2}));
  EXPECT_EQ(back.at("xt").to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(back.at("y").to_vector<float>(), (exp(x) + 1.0).to_vector<float>());
}

TEST(Safetensors, EmptyMapAndDevice) {
  TempDir dir;
  save_safetensors(dir.file("e.safetensors"), {});
  EXPECT_TRUE(load_safetensors(dir.file("e.safetensors")).empty());
  Device ad = Device::cpu().autodiff();
  save_safetensors(dir.file("w.safetensors"), {{"w", DynTensor::ones(Shape{2})}});
  TensorMap back = load_safetensors(dir.file("w.safetensors"), ad);
  EXPECT_EQ(back.at("w").device(), ad);
}

TEST(Safetensors, ReadsAnIndependentWriter) {
  // Written by make_reference.py's own writer: header keys unsorted, data in reverse name order.
  const std::string path = data_path("reference.safetensors");
  TensorMap m = load_safetensors(path);
  expect_tensors(m, expected("reference.safetensors").at("tensors"));
  SafetensorsHeader h = read_safetensors_header(path);
  EXPECT_EQ(json(h.metadata), expected("reference.safetensors").at("metadata"));
}

TEST(Safetensors, DtypeNames) {
  for (DType dt : kAllDTypes) EXPECT_EQ(dtype_from_safetensors_name(safetensors_dtype_name(dt)), dt);
  EXPECT_EQ(safetensors_dtype_name(DType::bf16), "BF16");
  EXPECT_EQ(safetensors_dtype_name(DType::boolean), "BOOL");
  expect_error([] { dtype_from_safetensors_name("F8_E4M3"); }, {"F8_E4M3"});
}

// ---- atomic writes ----

TEST(SafetensorsAtomicWrite, MissingDirectoryLeavesNothing) {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/m.safetensors");
  expect_error([&] { save_safetensors(path, {{"w", DynTensor::ones(Shape{2})}}); }, {path, "temporary"});
  EXPECT_TRUE(dir.listing().empty());
}

TEST(SafetensorsAtomicWrite, ReadOnlyDirectoryKeepsPreviousFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  save_safetensors(path, {{"w", DynTensor::ones(Shape{2})}});
  fs::permissions(dir.path(), fs::perms::owner_read | fs::perms::owner_exec);
  expect_error([&] { save_safetensors(path, {{"w", DynTensor::zeros(Shape{2})}}); }, {path});
  fs::permissions(dir.path(), fs::perms::owner_all);
  EXPECT_EQ(load_safetensors(path).at("w").to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(SafetensorsAtomicWrite, FailedRenameRemovesTemporary) {
  TempDir dir;
  const std::string path = dir.file("taken");
  fs::create_directory(path);  // rename(file, non-empty directory) fails
  write_file(path + "/keep", "x");
  expect_error([&] { save_safetensors(path, {{"w", DynTensor::ones(Shape{4})}}); }, {path, "rename"});
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"taken"});
  EXPECT_TRUE(fs::is_directory(path));
}

TEST(SafetensorsAtomicWrite, WriteFailingHalfwayKeepsPreviousFile) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  save_safetensors(path, {{"w", DynTensor::full(Shape{3}, 7.0, DType::f32)}});
  const std::string before = read_file(path);

  // Files may not grow past 64 KiB for a moment: the 4 MB tensor fails in the middle.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGXFSZ, &ignore, &old);
  rlimit saved{};
  ::getrlimit(RLIMIT_FSIZE, &saved);
  rlimit small = saved;
  small.rlim_cur = 64 << 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  std::string message;
  try {
    save_safetensors(path, {{"w", DynTensor::zeros(Shape{1 << 20})}});
  } catch (const Error& e) {
    threw = true;
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::sigaction(SIGXFSZ, &old, nullptr);

  EXPECT_TRUE(threw);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("write failed"), std::string::npos) << message;
  EXPECT_EQ(read_file(path), before);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"m.safetensors"});
  EXPECT_EQ(load_safetensors(path).at("w").to_vector<float>(), (std::vector<float>{7, 7, 7}));
}

TEST(SafetensorsAtomicWrite, InvalidTensorThrowsBeforeWriting) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  save_safetensors(path, {{"w", DynTensor::ones(Shape{2})}});
  const std::string before = read_file(path);
  expect_error(
      [&] {
        save_safetensors(path, {{"a", DynTensor::ones(Shape{2})}, {"b", DynTensor()}});
      },
      {path, "'b'", "undefined"});
  expect_error([&] { save_safetensors(path, {{"__metadata__", DynTensor::ones(Shape{2})}}); }, {"reserved"});
  expect_error([&] { save_safetensors(path, {{"bad\xff", DynTensor::ones(Shape{2})}}); }, {"UTF-8"});
  EXPECT_EQ(read_file(path), before);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"m.safetensors"});
}

// ---- hostile input, one test per category ----

TEST(SafetensorsHostile, Truncated) {
  expect_load_error("", {"truncated"});
  expect_load_error("\x10\x00\x00", {"truncated"});
  const std::string good = read_file(data_path("reference.safetensors"));
  expect_load_error(good.substr(0, 20), {"header length", "past the end"});
  expect_load_error(good.substr(0, good.size() - 1), {"data_offsets", "past the data buffer"});
}

TEST(SafetensorsHostile, HugeHeaderLength) {
  expect_load_error(st_file("{}", "", uint64_t(1) << 60), {"exceeds the limit"});
  expect_load_error(st_file("{}", "", ~uint64_t(0)), {"exceeds the limit"});
}

TEST(SafetensorsHostile, InvalidJson) {
  expect_load_error(st_file("{\"a\": ", ""), {"invalid JSON"});
  expect_load_error(st_file("[1, 2]  ", ""), {"does not start with '{'"});
  expect_load_error(st_file("{\"a\": 1}", ""), {"tensor 'a'", "must be an object"});
  expect_load_error(st_file(std::string("{\"a\":\"\xff\"}"), ""), {"invalid JSON"});
  expect_load_error(st_file("{\"x\": " + std::string(100, '[') + std::string(100, ']') + "}", ""), {"nests deeper"});
}

TEST(SafetensorsHostile, UnknownDtype) {
  expect_load_error(st_file(R"({"w": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}})", "ab"),
                    {"tensor 'w'", "unsupported dtype 'F8_E4M3'"});
  expect_load_error(st_file(R"({"w": {"dtype": 3, "shape": [2], "data_offsets": [0, 2]}})", "ab"), {"\"dtype\""});
}

TEST(SafetensorsHostile, DtypeDoesNotMatchByteRange) {
  // F32 [2, 2] needs 16 bytes; the range holds 8 (an F16 tensor's worth).
  expect_load_error(st_file(R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}})", "12345678"),
                    {"tensor 'w'", "needs 16 bytes", "hold 8"});
}

TEST(SafetensorsHostile, HugeShapes) {
  // 2^32 * 2^32 * 16 elements: the product overflows; must not wrap to a small size.
  expect_load_error(st_file(R"({"w": {"dtype": "U8", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", ""),
                    {"tensor 'w'", "more elements than can be addressed"});
  expect_load_error(st_file(R"({"w": {"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 0]}})", ""),
                    {"tensor 'w'", "more elements"});
  expect_load_error(st_file(R"({"w": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 0]}})", ""),
                    {"tensor 'w'", "non-negative integer"});
  expect_load_error(st_file(R"({"w": {"dtype": "U8", "shape": [1.5], "data_offsets": [0, 0]}})", ""),
                    {"tensor 'w'", "non-negative integer"});
  expect_load_error(st_file(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [18446744073709551615, 0]}})", ""),
                    {"tensor 'w'"});
}

TEST(SafetensorsHostile, OffsetsOutsideTheBuffer) {
  expect_load_error(st_file(R"({"w": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}})", "1234"),
                    {"tensor 'w'", "past the data buffer"});
  expect_load_error(st_file(R"({"w": {"dtype": "U8", "shape": [0], "data_offsets": [3, 2]}})", "1234"),
                    {"tensor 'w'", "reversed"});
  expect_load_error(st_file(R"({"w": {"dtype": "U8", "shape": [2], "data_offsets": [0]}})", "12"),
                    {"tensor 'w'", "[begin, end]"});
}

TEST(SafetensorsHostile, OverlappingGapsAndTrailingBytes) {
  expect_load_error(st_file(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                              "b": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}})",
                            "1234"),
                    {"tensor 'b'", "overlap tensor 'a'"});
  expect_load_error(st_file(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                              "b": {"dtype": "U8", "shape": [2], "data_offsets": [3, 5]}})",
                            "12345"),
                    {"tensor 'b'", "gap"});
  expect_load_error(st_file(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})", "1234"),
                    {"cover 2 bytes", "has 4"});
}

TEST(SafetensorsHostile, DuplicateNames) {
  expect_load_error(st_file(R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                              "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})",
                            "12"),
                    {"duplicate key 'a'"});
  expect_load_error(st_file(R"({"a": {"dtype": "U8", "dtype": "I8", "shape": [1], "data_offsets": [0, 1]}})", "1"),
                    {"duplicate key 'dtype'"});
}

TEST(SafetensorsHostile, BadMetadata) {
  expect_load_error(st_file(R"({"__metadata__": {"epoch": 3}})", ""), {"__metadata__", "epoch", "must be a string"});
  expect_load_error(st_file(R"({"__metadata__": [1]})", ""), {"__metadata__"});
}

TEST(SafetensorsHostile, BoolBytesReadAsTrue) {
  // Any non-zero byte is true (never an invalid C++ bool).
  TensorMap m = load_safetensors_from_memory(as_bytes(
      st_file(R"({"b": {"dtype": "BOOL", "shape": [4], "data_offsets": [0, 4]}})", std::string("\0\1\2\xff", 4))));
  EXPECT_EQ(m.at("b").to_vector<bool>(), (std::vector<bool>{false, true, true, true}));
}

TEST(SafetensorsHostile, HeaderReaderValidatesToo) {
  TempDir dir;
  write_file(dir.file("h.safetensors"),
             st_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", "1234"));
  expect_error([&] { read_safetensors_header(dir.file("h.safetensors")); }, {"h.safetensors", "tensor 'w'"});
  expect_error([&] { read_safetensors_header(dir.file("missing.safetensors")); },
               {"missing.safetensors", "cannot open"});
}

// ---- load time (the lead's bench/bench_cpu.cpp has the real benchmark) ----

TEST(Safetensors, LoadTime) {
  TempDir dir;
  const std::string path = dir.file("big.safetensors");
  TensorMap m;
  for (int i = 0; i < 8; ++i) m.insert("layer" + std::to_string(i), DynTensor::uniform(Shape{1024, 1024}));  // 32 MiB
  save_safetensors(path, m);
  auto start = std::chrono::steady_clock::now();
  TensorMap back = load_safetensors(path);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(back.size(), 8u);
  RecordProperty("load_32MiB_ms", std::to_string(ms));
  std::printf("load_safetensors: 32 MiB in %.1f ms (%.2f GB/s)\n", ms, 32.0 * 1.048576 / ms);
}
