// NumPy .npy files (ember/store/npy.hpp) and the ember-onnx command-line tool.
//
// The .npy fixtures come from numpy itself (gen_npy_fixtures.py, values listed there); the
// tool is run as the built binary (EMBER_ONNX_CLI) on fixtures/runtime_mlp.onnx and on a
// crafted model whose output names are not file names.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <ember/core/error.hpp>
#include <ember/core/tensor_data.hpp>
#include <ember/store/npy.hpp>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "onnx_test_util.hpp"

namespace {

using namespace ember;
using namespace onnx_test;

const std::vector<double> kInts = {0, 1, -2, 3, -4, 5};
const std::vector<double> kUints = {0, 1, 2, 3, 4, 255};
const std::vector<double> kBools = {1, 0, 1, 1, 0, 0};
const std::vector<double> kFloats = {0.5, -1.25, 2.0, 3.75, -4.5, 1000.0};

std::string npy_fixture(const std::string& name) { return fixture("npy/" + name); }

std::string to_string(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// ---- round trips --------------------------------------------------------------------------

TEST(Npy, RoundTripEveryDtypeAndRank) {
  TempDir dir;
  const DType dtypes[] = {DType::f64, DType::f32, DType::f16, DType::i64,    DType::i32,
                          DType::i16, DType::i8,  DType::u8,  DType::boolean};
  const Shape shapes[] = {Shape{}, Shape{5}, Shape{2, 3}, Shape{2, 1, 3}, Shape{0, 4}, Shape{3, 0}};
  for (DType dt : dtypes) {
    for (const Shape& s : shapes) {
      std::vector<double> v(static_cast<size_t>(s.numel()));
      for (size_t i = 0; i < v.size(); ++i) v[i] = is_bool(dt) ? double(i % 3 == 0) : double(int(i) * 3 % 7) - 2.0;
      if (dt == DType::u8)
        for (double& x : v) x = std::abs(x);
      TensorData d = TensorData::from_doubles(v, s, dt);
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + s.str());
      // memory
      TensorData m = store::read_npy_from_memory(store::write_npy_to_memory(d));
      EXPECT_EQ(m.dtype(), dt);
      EXPECT_EQ(m.shape(), s);
      EXPECT_EQ(m.to_doubles(), v);
      // file
      std::string path = dir.file(std::string(dtype_name(dt)) + ".npy");
      store::write_npy(path, d);
      TensorData f = store::read_npy(path);
      EXPECT_EQ(f.dtype(), dt);
      EXPECT_EQ(f.shape(), s);
      EXPECT_EQ(f.to_doubles(), v);
      // np.save's layout: the data starts at a multiple of 64 bytes.
      EXPECT_EQ((fs::file_size(path) - uint64_t(s.numel()) * dtype_size(dt)) % 64, 0u);
    }
  }
}

TEST(Npy, SpecialFloatsSurvive) {
  std::vector<float> v = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, 3.4e38f};
  TensorData d = TensorData::from_vector<float>(v, Shape{7});
  TensorData r = store::read_npy_from_memory(store::write_npy_to_memory(d));
  ASSERT_EQ(r.bytes().size(), d.bytes().size());
  EXPECT_EQ(std::memcmp(r.bytes().data(), d.bytes().data(), d.bytes().size()), 0);
}

TEST(Npy, Bf16IsWrittenAsFloat32) {
  TensorData d = TensorData::from_doubles({1.5, -2.0, 0.25}, Shape{3}, DType::bf16);
  EXPECT_EQ(store::npy_stored_dtype(DType::bf16), DType::f32);
  EXPECT_EQ(store::npy_stored_dtype(DType::i8), DType::i8);
  EXPECT_EQ(store::npy_dtype_name(DType::f32), "float32");
  EXPECT_EQ(store::npy_dtype_name(DType::boolean), "bool");
  TempDir dir;
  store::write_npy(dir.file("b.npy"), d);
  TensorData r = store::read_npy(dir.file("b.npy"));
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_EQ(r.to_doubles(), (std::vector<double>{1.5, -2.0, 0.25}));
  EXPECT_NE(to_string(store::write_npy_to_memory(d)).find("'descr': '<f4'"), std::string::npos);
}

TEST(Npy, HeaderLooksLikeNumpys) {
  std::string b =
      to_string(store::write_npy_to_memory(TensorData::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3})));
  EXPECT_EQ(b.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_NE(b.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), std::string::npos);
  EXPECT_EQ(b.size(), 128u + 24u);
  EXPECT_EQ(b[127], '\n');
  std::string one = to_string(store::write_npy_to_memory(TensorData::from_vector<int64_t>({7}, Shape{1})));
  EXPECT_NE(one.find("'shape': (1,), }"), std::string::npos);
  std::string zero = to_string(store::write_npy_to_memory(TensorData::from_vector<int64_t>({7}, Shape{})));
  EXPECT_NE(zero.find("'shape': (), }"), std::string::npos);
}

TEST(Npy, WriteIsAtomicAndReplaces) {
  TempDir dir;
  std::string path = dir.file("x.npy");
  store::write_npy(path, TensorData::from_vector<int32_t>({1, 2}, Shape{2}));
  store::write_npy(path, TensorData::from_vector<int32_t>({3, 4, 5}, Shape{3}));
  EXPECT_EQ(store::read_npy(path).to_vector<int32_t>(), (std::vector<int32_t>{3, 4, 5}));
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1u);  // no temporary left behind
  // A directory that does not exist: an Error, nothing written.
  expect_error(
      [&] { store::write_npy(dir.file("no/such/dir/x.npy"), TensorData::from_vector<int32_t>({1}, Shape{1})); },
      {"no/such/dir"});
}

// ---- files written by numpy ----------------------------------------------------------------

void expect_fixture(const std::string& name, DType dt, Shape shape, const std::vector<double>& values) {
  SCOPED_TRACE(name);
  TensorData d = store::read_npy(npy_fixture(name));
  EXPECT_EQ(d.dtype(), dt);
  EXPECT_EQ(d.shape(), shape);
  EXPECT_EQ(d.to_doubles(), values);
}

TEST(Npy, ReadsNumpyFiles) {
  expect_fixture("f2.npy", DType::f16, {2, 3}, kFloats);
  expect_fixture("f4.npy", DType::f32, {2, 3}, kFloats);
  expect_fixture("f8.npy", DType::f64, {2, 3}, kFloats);
  expect_fixture("i1.npy", DType::i8, {2, 3}, kInts);
  expect_fixture("i2.npy", DType::i16, {2, 3}, kInts);
  expect_fixture("i4.npy", DType::i32, {2, 3}, kInts);
  expect_fixture("i8.npy", DType::i64, {2, 3}, kInts);
  expect_fixture("u1.npy", DType::u8, {2, 3}, kUints);
  expect_fixture("b1.npy", DType::boolean, {2, 3}, kBools);
  expect_fixture("v2_f4.npy", DType::f32, {2, 3}, kFloats);
  expect_fixture("v3_f4.npy", DType::f32, {2, 3}, kFloats);
  expect_fixture("vector_i4.npy", DType::i32, {6}, kInts);
  expect_fixture("scalar_f4.npy", DType::f32, {}, {3.5});
  expect_fixture("scalar_i8.npy", DType::i64, {}, {-7});
  expect_fixture("empty_f4.npy", DType::f32, {0, 3}, {});
  std::vector<double> iota(24);
  for (int i = 0; i < 24; ++i) iota[i] = i;
  expect_fixture("cube_i2.npy", DType::i16, {2, 3, 4}, iota);
}

TEST(Npy, BigEndianIsByteSwapped) {
  expect_fixture("f4_be.npy", DType::f32, {2, 3}, kFloats);
  expect_fixture("f8_be.npy", DType::f64, {2, 3}, kFloats);
  expect_fixture("f2_be.npy", DType::f16, {2, 3}, kFloats);
  expect_fixture("i8_be.npy", DType::i64, {2, 3}, kInts);
}

TEST(Npy, FortranOrderIsTransposedToRowMajor) {
  std::vector<double> iota(24);
  for (int i = 0; i < 24; ++i) iota[i] = i;
  expect_fixture("fortran_i2.npy", DType::i16, {2, 3, 4}, iota);
}

TEST(Npy, WriterMatchesNumpyByteForByte) {
  for (const char* name : {"f2.npy", "f4.npy", "f8.npy", "i1.npy", "i2.npy", "i4.npy", "i8.npy", "u1.npy", "b1.npy",
                           "scalar_f4.npy", "scalar_i8.npy", "vector_i4.npy", "empty_f4.npy", "cube_i2.npy"}) {
    SCOPED_TRACE(name);
    std::vector<std::byte> numpy = read_bytes(npy_fixture(name));
    EXPECT_EQ(to_string(store::write_npy_to_memory(store::read_npy(npy_fixture(name)))), to_string(numpy));
  }
}

TEST(Npy, DtypesWithoutEmberDtypeAreRefused) {
  expect_error([] { store::read_npy(npy_fixture("u2.npy")); }, {"u2.npy", "'<u2'", "uint16", "not supported"});
  expect_error([] { store::read_npy(npy_fixture("c8.npy")); }, {"c8.npy", "unsupported dtype descr '<c8'"});
  expect_error([] { store::read_npy(npy_fixture("structured.npy")); }, {"structured.npy", "structured dtypes"});
}

// ---- hostile input ---------------------------------------------------------------------------

// A file with the given header dict (padded like np.save) followed by `data_bytes` zero bytes.
std::string npy_with_header(const std::string& dict, size_t data_bytes, int major = 1) {
  std::string h = dict;
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out = std::string("\x93NUMPY", 6) + char(major) + char(0);
  uint32_t len = static_cast<uint32_t>(h.size());
  for (size_t i = 0; i < prefix - 8; ++i) out += char((len >> (8 * i)) & 0xff);
  return out + h + std::string(data_bytes, '\0');
}

TensorData read_str(const std::string& s) { return store::read_npy_from_memory(as_bytes(s), "hostile.npy"); }

TEST(NpyHostile, EveryTruncationIsAnError) {
  std::vector<std::byte> good = read_bytes(npy_fixture("f4.npy"));
  std::string s = to_string(good);
  for (size_t n = 0; n < s.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_THROW(read_str(s.substr(0, n)), Error);
  }
  expect_error([&] { read_str(s.substr(0, s.size() - 1)); }, {"hostile.npy", "size mismatch", "truncated"});
  expect_error([&] { read_str(s + "x"); }, {"size mismatch", "needs 24 data bytes but the file has 25"});
  EXPECT_NO_THROW(read_str(s));
}

TEST(NpyHostile, BadPreamble) {
  expect_error([] { read_str("hello world, not numpy"); }, {"hostile.npy", "bad magic"});
  expect_error([] { read_str(""); }, {"bad magic"});
  std::string v4 = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4);
  v4[6] = 4;
  expect_error([&] { read_str(v4); }, {"format version 4.0"});
  std::string minor = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4);
  minor[7] = 1;
  expect_error([&] { read_str(minor); }, {"format version 1.1"});
  // Header length past the end, and an absurd one (v2: 4 bytes).
  std::string past = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4);
  past[8] = char(0xff);
  past[9] = char(0x7f);
  expect_error([&] { read_str(past); }, {"truncated", "header of"});
  std::string huge = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4, 2);
  huge[8] = huge[9] = huge[10] = huge[11] = char(0xff);
  expect_error([&] { read_str(huge); }, {"exceeds the limit"});
  expect_error([] { read_str(std::string("\x93NUMPY\x02\x00\x01", 9)); }, {"truncated"});
}

TEST(NpyHostile, MalformedHeaders) {
  struct Case {
    std::string dict;
    std::string fragment;
  };
  const Case cases[] = {
      {"", "dict literal"},
      {"not a dict", "dict literal"},
      {"{'descr': '<f4', 'fortran_order': False}", "lacks 'shape'"},
      {"{'fortran_order': False, 'shape': ()}", "lacks 'descr'"},
      {"{'descr': '<f4', 'shape': ()}", "lacks 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (), 'extra': 1}", "unexpected header key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", "'descr' twice"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': ()}", "True or False"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': ()}", "malformed header"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': ()}", "expected ':'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3}", "expected ',' or ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", "must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "negative dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}", "expected ',' or ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296)}", "too many elements"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775807,)}", "too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000)}", "size mismatch"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ()} trailing", "unexpected text after the dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ()", "expected ',' or '}'"},
      {"{'descr': '<f4", "unterminated string"},
      {"{'descr': '<U3', 'fortran_order': False, 'shape': ()}", "unsupported dtype descr '<U3'"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': ()}", "unsupported dtype descr '|O'"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': ()}", "uint64"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': ()}", "uint32"},
      {"{'descr': '', 'fortran_order': False, 'shape': ()}", "unsupported dtype descr ''"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dict);
    expect_error([&] { read_str(npy_with_header(c.dict, 4)); }, {"hostile.npy", c.fragment});
  }
  std::string rank65 = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 65; ++i) rank65 += "1,";
  rank65 += ")}";
  expect_error([&] { read_str(npy_with_header(rank65, 4)); }, {"more than 64 dimensions"});
  // Still accepted: double quotes, Python 2 longs, no trailing comma, odd spacing, '=' and '?'.
  EXPECT_EQ(read_str(npy_with_header("{\"descr\":\"=i4\",\"fortran_order\":False,\"shape\":(2L,)}", 8)).shape(),
            (Shape{2}));
  EXPECT_EQ(read_str(npy_with_header("{ 'shape' : ( 3 , ) , 'descr' : '?' , 'fortran_order' : True }", 3)).dtype(),
            DType::boolean);
}

TEST(NpyHostile, BoolBytesNormalise) {
  std::string s =
      npy_with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 0) + std::string("\x00\x07\xff", 3);
  TensorData d = read_str(s);
  EXPECT_EQ(d.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 1}));
  EXPECT_EQ(static_cast<int>(d.bytes()[2]), 1);
}

TEST(NpyHostile, RandomMutationsNeverCrash) {
  std::string good = to_string(read_bytes(npy_fixture("cube_i2.npy")));
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  int ok = 0, errors = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string s = good;
    int flips = 1 + next() % 4;
    for (int k = 0; k < flips; ++k) s[next() % 128] = static_cast<char>(next() & 0xff);  // the preamble and header
    if (next() % 4 == 0) s.resize(next() % s.size());
    try {
      TensorData d = read_str(s);
      EXPECT_EQ(d.bytes().size(), static_cast<size_t>(d.numel()) * dtype_size(d.dtype()));
      ++ok;
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_EQ(ok + errors, 4000);
}

TEST(NpyHostile, FilesThatAreNotFiles) {
  expect_error([] { store::read_npy("/nonexistent/dir/x.npy"); }, {"/nonexistent/dir/x.npy", "cannot open"});
  TempDir dir;
  expect_error([&] { store::read_npy(dir.path()); }, {"not a regular file"});
  write_file(dir.file("empty.npy"), "");
  expect_error([&] { store::read_npy(dir.file("empty.npy")); }, {"empty.npy", "bad magic"});
}

// ---- the ember-onnx tool --------------------------------------------------------------------

struct CliResult {
  int status = -1;
  std::string output;  // stdout and stderr together
};

CliResult cli(const std::string& args) {
  std::string cmd = std::string("'") + EMBER_ONNX_CLI + "' " + args + " 2>&1";
  CliResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return r;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string q(const std::string& s) { return "'" + s + "'"; }

void expect_contains(const std::string& text, std::initializer_list<std::string> fragments) {
  for (const auto& f : fragments) EXPECT_NE(text.find(f), std::string::npos) << "missing '" << f << "' in:\n" << text;
}

TEST(EmberOnnxCli, Info) {
  CliResult r = cli("info " + q(fixture("runtime_mlp.onnx")));
  EXPECT_EQ(r.status, 0) << r.output;
  expect_contains(r.output,
                  {"ir_version: 8", "opsets: ai.onnx 13", "inputs (1):", "  x: FLOAT [batch, 3]",
                   "outputs (2):", "  y: FLOAT [batch, 2]", "  xshape: INT64 [2]", "initializers: 4 (96 bytes)",
                   "ops: 7 nodes, 7 op types", "  MatMul", "  Softmax", "all ops supported"});
  CliResult u = cli("info " + q(fixture("runtime_unsupported.onnx")));
  EXPECT_EQ(u.status, 0) << u.output;
  expect_contains(u.output, {"unsupported ops (1): FancyOp"});
  CliResult n = cli("info " + q(fixture("if_nested.onnx")));
  EXPECT_EQ(n.status, 0) << n.output;
  expect_contains(n.output, {"in subgraphs", "  If   2"});
}

TEST(EmberOnnxCli, RunWritesNpyOutputs) {
  const json& e = expected()["runtime_mlp"];
  TempDir dir;
  std::vector<double> x = e["x"].get<std::vector<double>>();
  store::write_npy(dir.file("x.npy"), TensorData::from_doubles(x, Shape{2, 3}, DType::f32));
  std::string out = dir.file("out");
  CliResult r = cli("run " + q(fixture("runtime_mlp.onnx")) + " --input " + q("x=" + dir.file("x.npy")) +
                    " --output-dir " + q(out) + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.output;
  expect_contains(r.output, {"y: shape (2, 2) float32", "xshape: shape (2,) int64", out + "/y.npy"});
  TensorData y = store::read_npy(out + "/y.npy");
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  TensorData want = TensorData::from_doubles(e["y"].get<std::vector<double>>(), Shape{2, 2}, DType::f32);
  if (auto msg = y.approx_equal(want, 1e-5, 1e-6)) ADD_FAILURE() << *msg;
  TensorData xs = store::read_npy(out + "/xshape.npy");
  EXPECT_EQ(xs.dtype(), DType::i64);
  EXPECT_EQ(xs.to_vector<int64_t>(), (std::vector<int64_t>{2, 3}));

  // Over a router of two CPU backends (ember/decorators/router.hpp): the same outputs.
  CliResult rr = cli("run " + q(fixture("runtime_mlp.onnx")) + " --input " + q("x=" + dir.file("x.npy")) +
                     " --output-dir " + q(dir.file("out_router")) + " --device cpu,cpu");
  ASSERT_EQ(rr.status, 0) << rr.output;
  EXPECT_FALSE(store::read_npy(dir.file("out_router/y.npy")).approx_equal(want, 1e-5, 1e-6).has_value());
  EXPECT_EQ(cli("run " + q(fixture("runtime_mlp.onnx")) + " --output-dir " + q(dir.path()) + " --device cpu,tpu").status, 2);

  // A float64 input (NumPy's default) is converted to the declared float32, with a note.
  store::write_npy(dir.file("x64.npy"), TensorData::from_doubles(x, Shape{2, 3}, DType::f64));
  CliResult r64 = cli("run " + q(fixture("runtime_mlp.onnx")) + " --input=" + q("x=" + dir.file("x64.npy")) +
                      " --output-dir=" + q(dir.file("out64")));
  ASSERT_EQ(r64.status, 0) << r64.output;
  expect_contains(r64.output, {"converting float64 to float32"});
  EXPECT_FALSE(store::read_npy(dir.file("out64/y.npy")).approx_equal(want, 1e-5, 1e-6).has_value());
}

TEST(EmberOnnxCli, OutputNamesAreSanitised) {
  // x -> Relu -> "../evil/y", Neg -> "sub/y", Identity -> "sub_y" (clashes after sanitising), Abs -> "..".
  Writer g;
  g.message(1, node("Relu", {"x"}, {"../evil/y"}, "relu"))
      .message(1, node("Neg", {"x"}, {"sub/y"}, "neg"))
      .message(1, node("Identity", {"x"}, {"sub_y"}, "id"))
      .message(1, node("Abs", {"x"}, {".."}, "abs"))
      .bytes(2, "names")
      .message(11, value_info("x"))
      .message(12, value_info("../evil/y"))
      .message(12, value_info("sub/y"))
      .message(12, value_info("sub_y"))
      .message(12, value_info(".."));
  TempDir dir;
  write_file(dir.file("names.onnx"), model(g));
  store::write_npy(dir.file("x.npy"), TensorData::from_vector<float>({-1, 2}, Shape{2}));
  fs::create_directories(dir.file("a/b"));
  CliResult r = cli("run " + q(dir.file("names.onnx")) + " --input " + q("x=" + dir.file("x.npy")) + " --output-dir " +
                    q(dir.file("a/b")));
  ASSERT_EQ(r.status, 0) << r.output;
  std::set<std::string> files;
  for (const auto& ent : fs::directory_iterator(dir.file("a/b"))) files.insert(ent.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"_._evil_y.npy", "sub_y.npy", "sub_y_2.npy", "_..npy"}));
  EXPECT_FALSE(fs::exists(dir.file("a/evil")));
  EXPECT_FALSE(fs::exists(dir.file("a/b/evil")));
  EXPECT_EQ(store::read_npy(dir.file("a/b/_._evil_y.npy")).to_vector<float>(), (std::vector<float>{0, 2}));
  EXPECT_EQ(store::read_npy(dir.file("a/b/sub_y.npy")).to_vector<float>(), (std::vector<float>{1, -2}));
  EXPECT_EQ(store::read_npy(dir.file("a/b/sub_y_2.npy")).to_vector<float>(), (std::vector<float>{-1, 2}));
  EXPECT_EQ(store::read_npy(dir.file("a/b/_..npy")).to_vector<float>(), (std::vector<float>{1, 2}));
  expect_contains(r.output, {"../evil/y: shape (2,) float32"});
}

TEST(EmberOnnxCli, Bf16OutputIsWrittenAsFloat32) {
  // A BFLOAT16 initializer w = [1.5, -3] -> Identity -> yb; no inputs.
  Writer w;
  w.varint(1, 2).varint(2, 16).bytes(8, "w").bytes(9, std::string("\xc0\x3f\x40\xc0", 4));
  Writer g;
  g.message(1, node("Identity", {"w"}, {"yb"}, "id")).bytes(2, "bf16").message(5, w).message(12, value_info("yb"));
  TempDir dir;
  write_file(dir.file("bf16.onnx"), model(g));
  CliResult r = cli("run " + q(dir.file("bf16.onnx")) + " --output-dir " + q(dir.file("out")));
  ASSERT_EQ(r.status, 0) << r.output;
  expect_contains(r.output, {"yb: shape (2,) float32 (bfloat16 written as float32: NumPy has no bfloat16)"});
  TensorData y = store::read_npy(dir.file("out/yb.npy"));
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1.5f, -3.0f}));
}

TEST(EmberOnnxCli, ErrorsAndUsage) {
  TempDir dir;
  CliResult gen = cli("generate " + q(fixture("runtime_mlp.onnx")));
  EXPECT_EQ(gen.status, 2);
  expect_contains(gen.output, {"generate needs --out DIR"});
  CliResult none = cli("");
  EXPECT_EQ(none.status, 2);
  expect_contains(none.output, {"usage:"});
  CliResult help = cli("--help");
  EXPECT_EQ(help.status, 0);
  expect_contains(help.output, {"ember-onnx run MODEL.onnx"});
  CliResult unknown = cli("frobnicate");
  EXPECT_EQ(unknown.status, 2);
  expect_contains(unknown.output, {"unknown command 'frobnicate'"});
  const std::string mlp = q(fixture("runtime_mlp.onnx"));
  EXPECT_EQ(cli("run " + mlp + " --input x=a.npy").status, 2);                          // no --output-dir
  EXPECT_EQ(cli("run " + mlp + " --input x --output-dir " + q(dir.path())).status, 2);  // no '='
  EXPECT_EQ(cli("run " + mlp + " --output-dir " + q(dir.path()) + " --device tpu").status, 2);
  EXPECT_EQ(cli("run " + mlp + " --output-dir " + q(dir.path()) + " --bogus").status, 2);
  EXPECT_EQ(cli("info").status, 2);
  // Errors from the library: exit 1 with the message.
  CliResult missing =
      cli("run " + mlp + " --input " + q("x=" + dir.file("nope.npy")) + " --output-dir " + q(dir.path()));
  EXPECT_EQ(missing.status, 1);
  expect_contains(missing.output, {"ember-onnx: error:", "nope.npy"});
  write_file(dir.file("bad.npy"), "\x93NUMPY garbage");
  CliResult bad = cli("run " + mlp + " --input " + q("x=" + dir.file("bad.npy")) + " --output-dir " + q(dir.path()));
  EXPECT_EQ(bad.status, 1);
  expect_contains(bad.output, {"bad.npy"});
  CliResult noinput = cli("run " + mlp + " --output-dir " + q(dir.path()));
  EXPECT_EQ(noinput.status, 1);
  expect_contains(noinput.output, {"missing input 'x'"});
  CliResult notmodel = cli("info " + q(dir.file("bad.npy")));
  EXPECT_EQ(notmodel.status, 1);
  expect_contains(notmodel.output, {"ember-onnx: error:"});
}

}  // namespace
