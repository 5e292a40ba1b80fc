// The backend-agnostic conformance suite: every case of tests/conformance/cases/*.json
// (expected values produced by PyTorch, see gen_cases.py) runs on every backend stack, once
// per input layout (Layout below): contiguous, and the same values behind views with real
// gaps and repeats (a transpose, a step-2 slice, an offset inside a larger buffer, an expand).
// Writes <reports>/conformance.json: {"ops", "cases", "failed", "backends", "per_backend",
// "variants", "stride0_inputs", "expand_cases"}.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "coverage.hpp"
#include "op_registry.hpp"

namespace ember::conformance {
namespace {

struct BackendStack {
  std::string name;
  Device device;
};

// The forward stacks of test_stacks() (op_registry.hpp); EMBER_STACKS=cuda,autodiff-cuda (a
// comma-separated list) runs only the named ones.
std::vector<BackendStack> backend_stacks() {
  static const std::vector<BackendStack> stacks = [] {
    std::vector<BackendStack> chosen;
    for (const auto& s : test_stacks())
      if (s.forward && stack_selected(s.name)) chosen.push_back({s.name, counted(s.name, s.device)});  // coverage.hpp
    return chosen;
  }();
  return stacks;
}

// Same values, non-contiguous strides: materialise the transposed tensor and transpose back.
DynTensor strided_view(const DynTensor& t) {
  if (t.rank() < 2 || t.numel() < 2) return t;
  return transpose(contiguous(transpose(t, 0, -1)), 0, -1);
}

// The input layouts each case runs with. Every one but `contiguous` hands the op the same
// values through a view, built with ember's public view ops so that it is a real strided view
// on every backend:
//   strided: the transpose of a materialised transpose (rank >= 2; permuted but dense);
//   step2:   a step-2 slice of the last dim, garbage at the skipped positions (rank >= 1);
//   offset:  a block starting at [1, 1, ...] inside a larger garbage-filled buffer, so the
//            offset is nonzero and rows have gaps (rank >= 1);
//   expand:  each dim whose slices are all equal is narrowed to its first slice and expanded
//            back (stride 0). Registered only for cases with such an input, or with a derived
//            input (derive_repeated_case).
enum class Layout { contiguous, strided, step2, offset, expand };
constexpr Layout kLayouts[] = {Layout::contiguous, Layout::strided, Layout::step2, Layout::offset, Layout::expand};
constexpr const char* kLayoutNames[] = {"contiguous", "strided", "step2", "offset", "expand"};
const char* layout_name(Layout l) { return kLayoutNames[int(l)]; }

// One element that a kernel must never read: NaN for floats (it propagates), a large value for
// integers (an out-of-range index, a sum far off), true for bool.
TensorData garbage_element(DType dt) {
  double g = dt == DType::boolean ? 1
             : dt == DType::u8    ? 201
             : dt == DType::i8    ? 101
             : dt == DType::i16   ? 30001
             : dt == DType::i32   ? 1000000007
             : dt == DType::i64   ? 1000000000000007.0
                                  : std::nan("");
  return TensorData::from_doubles({g}, Shape{1}, dt);
}

// t's values at positions start + i * step (per dim) of a garbage-filled buffer of shape `outer`.
TensorData embed(const TensorData& t, const Shape& outer, const std::vector<int64_t>& start,
                 const std::vector<int64_t>& step) {
  const size_t es = dtype_size(t.dtype());
  TensorData g = garbage_element(t.dtype());
  std::vector<std::byte> bytes(size_t(outer.numel()) * es);
  for (size_t i = 0; i < bytes.size(); i += es) std::memcpy(&bytes[i], g.bytes().data(), es);
  const int r = t.shape().rank();
  std::vector<int64_t> ostride(r, 1), idx(r, 0);
  for (int d = r - 2; d >= 0; --d) ostride[d] = ostride[d + 1] * outer[d + 1];
  for (int64_t k = 0; k < t.numel(); ++k) {
    int64_t o = 0;
    for (int d = 0; d < r; ++d) o += (start[d] + idx[d] * step[d]) * ostride[d];
    std::memcpy(&bytes[size_t(o) * es], &t.bytes()[size_t(k) * es], es);
    for (int d = r - 1; d >= 0 && ++idx[d] == t.shape()[d]; --d) idx[d] = 0;
  }
  return TensorData(outer, t.dtype(), std::move(bytes));
}

// Whether every slice of t along `dim` (of size > 1) equals the first, bit for bit.
bool repeated_along(const TensorData& t, int dim) {
  const Shape& s = t.shape();
  if (s[dim] < 2) return false;
  int64_t outer = 1, inner = int64_t(dtype_size(t.dtype()));
  for (int d = 0; d < dim; ++d) outer *= s[d];
  for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  if (inner == 0) return false;
  const std::byte* p = t.bytes().data();
  for (int64_t o = 0; o < outer; ++o) {
    const std::byte* first = p + o * s[dim] * inner;
    for (int64_t i = 1; i < s[dim]; ++i)
      if (std::memcmp(first + i * inner, first, size_t(inner)) != 0) return false;
  }
  return true;
}
bool has_repeated_dim(const TensorData& t) {
  for (int d = 0; d < t.shape().rank(); ++d)
    if (repeated_along(t, d)) return true;
  return false;
}

// t on `dev`, behind the view that `layout` describes (rank-0 tensors stay as they are).
DynTensor layout_view(const TensorData& t, Layout layout, const Device& dev, int64_t& stride0_inputs) {
  const int r = t.shape().rank();
  if (layout == Layout::contiguous || r == 0) return DynTensor::from_data(t, dev);
  if (layout == Layout::strided) return strided_view(DynTensor::from_data(t, dev));
  if (layout == Layout::expand) {
    DynTensor x = DynTensor::from_data(t, dev);
    bool any = false;
    for (int d = 0; d < r; ++d)
      if (repeated_along(t, d)) {
        x = narrow(x, d, 0, 1);
        any = true;
      }
    if (!any) return x;
    ++stride0_inputs;
    return expand(x, Sizes(t.shape().dims().begin(), t.shape().dims().end()));
  }
  Shape outer = t.shape();
  std::vector<int64_t> start(r, 0), step(r, 1);
  if (layout == Layout::step2) {
    outer[r - 1] *= 2;
    step[r - 1] = 2;
  } else {  // offset
    for (int d = 0; d < r; ++d) {
      outer[d] += d == r - 1 ? 3 : 1;
      start[d] = 1;
    }
  }
  std::vector<Slice> ranges;
  for (int d = 0; d < r; ++d) ranges.push_back(Slice{start[d], start[d] + t.shape()[d] * step[d], step[d]});
  return slice(DynTensor::from_data(embed(t, outer, start, step), dev), std::move(ranges));
}

// For an elementwise op with one input (each output element depends only on the input element
// at the same position), a case whose input and expected output are both their first slice
// along dim 0, repeated: still PyTorch's values, now with a repeated dim for Layout::expand.
std::optional<Json> derive_repeated_case(const Json& c, const std::string& family) {
  if (family != "unary" && family != "activation") return std::nullopt;
  if (c["inputs"].size() != 1 || c["outputs"].size() != 1 || c["attrs"].contains("dim")) return std::nullopt;
  const Json &in = c["inputs"][0], &out = c["outputs"][0];
  if (in["shape"] != out["shape"] || in["data"].is_null() || out["data"].is_null()) return std::nullopt;
  const auto shape = in["shape"].get<std::vector<int64_t>>();
  if (shape.empty() || shape[0] < 2) return std::nullopt;
  const size_t n = in["data"].size(), k = n / size_t(shape[0]);
  if (k == 0) return std::nullopt;
  Json d = c;
  for (Json* data : {&d["inputs"][0]["data"], &d["outputs"][0]["data"]}) {
    Json rep = Json::array();
    for (size_t i = 0; i < n; ++i) rep.push_back((*data)[i % k]);
    *data = std::move(rep);
  }
  return d;
}

struct Stats {
  std::set<std::string> ops;
  int64_t cases = 0, failed = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> per_backend;  // name -> (cases, failed)
  int64_t stride0_inputs = 0;                       // inputs that Layout::expand turned into a stride-0 view
  int64_t expand_repeated = 0, expand_derived = 0;  // Layout::expand cases registered, by origin
} g_stats;

class CaseTest : public testing::Test {
 public:
  CaseTest(Json c, std::string stack, Device d, Layout layout)
      : case_(std::move(c)), stack_(std::move(stack)), device_(std::move(d)), layout_(layout) {}
  void TestBody() override {
    const std::string op = case_["op"].get<std::string>();
    if (std::optional<std::string> why = unsupported(op)) GTEST_SKIP() << *why;
    bool ok = run(op);
    if (skipped_) GTEST_SKIP() << *skipped_;
    g_stats.ops.insert(op);
    ++g_stats.cases;
    auto& mine = g_stats.per_backend[stack_];
    ++mine.first;
    if (!ok) {
      ++g_stats.failed;
      ++mine.second;
    }
  }

 private:
  bool run(const std::string& op) {
    auto it = op_registry().find(op);
    if (it == op_registry().end()) {
      ADD_FAILURE() << "no registry entry for op '" << op << "'";
      return false;
    }
    std::vector<DynTensor> inputs;
    std::vector<DynTensor> out;
    try {
      for (const auto& j : case_["inputs"])
        inputs.push_back(layout_view(parse_tensor(j), layout_, device_, g_stats.stride0_inputs));
      out = it->second(inputs, case_["attrs"], device_);
    } catch (const std::exception& e) {
      // a composite that reaches an op (or dtype) the backend reports unsupported is skipped
      if ((skipped_ = unsupported_on(e, device_))) return true;
      ADD_FAILURE() << op << " threw: " << e.what();
      return false;
    }
    const auto& expected = case_["outputs"];
    if (out.size() != expected.size()) {
      ADD_FAILURE() << op << ": " << out.size() << " outputs, expected " << expected.size();
      return false;
    }
    double rtol = case_.value("rtol", 0.0), atol = case_.value("atol", 0.0);
    // cuDNN's Winograd algorithms, the fastest for many 3x3 f32 convolutions (PyTorch's
    // cudnn.benchmark picks them too), round differently from a direct sum: 2.9e-5 off at 0.5
    // over 72 products, where the case allows 2.2e-5. On CUDA, f32 convolutions get 4x the
    // case's atol.
    if (stack_.find("cuda") != std::string::npos && op.rfind("conv", 0) == 0 && case_.contains("inputs") &&
        case_["inputs"][0].value("dtype", "") == "f32")
      atol *= 4;
    bool ok = true;
    for (size_t i = 0; i < out.size(); ++i) {
      TensorData want = parse_tensor(expected[i]);
      TensorData got = out[i].into_data();
      if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
        ADD_FAILURE() << op << " output " << i << ": got " << got.dtype() << " " << got.shape() << ", expected "
                      << want.dtype() << " " << want.shape();
        ok = false;
        continue;
      }
      if (expected[i]["data"].is_null()) continue;  // empty(): only shape and dtype are defined
      bool exact = !is_float(want.dtype());
      if (auto msg = got.approx_equal(want, exact ? 0 : rtol, exact ? 0 : atol)) {
        ADD_FAILURE() << op << " output " << i << ": " << *msg;
        ok = false;
      }
    }
    return ok;
  }
  // An op of ops.def that the stack's backend lacks (supports() says so by kind: the quantized
  // products on CUDA) is skipped, after checking that running it fails with the backend's
  // "not supported on <backend>" Error rather than anything else.
  std::optional<std::string> unsupported(const std::string& op) {
    const auto* info = std::find_if(kOpInfo.begin(), kOpInfo.end(), [&](const OpInfo& i) { return i.name == op; });
    if (info == kOpInfo.end()) return std::nullopt;
    const OpKind kind = OpKind(info - kOpInfo.begin());
    if (device_.backend().supports(Op{kind, {}, NoAttrs{}, {}})) return std::nullopt;
    std::string error;
    try {
      std::vector<DynTensor> inputs;
      for (const auto& j : case_["inputs"]) inputs.push_back(DynTensor::from_data(parse_tensor(j), device_));
      op_registry().at(op)(inputs, case_["attrs"], device_);
      device_.backend().sync();
    } catch (const Error& e) {
      error = e.what();
    }
    if (error.empty()) return std::nullopt;  // the API needed no such op here (cat of one tensor): run the case
    EXPECT_NE(error.find("not supported on"), std::string::npos)
        << op << " on " << stack_ << ": the backend does not support it, yet running it gave "
        << (error.empty() ? "no error" : error);
    return op + " is not supported on " + stack_;
  }
  Json case_;
  std::string stack_;
  Device device_;
  Layout layout_;
  std::optional<std::string> skipped_;  // run() met an op the backend does not support
};

void register_cases(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& stack : backend_stacks()) {
    for (const auto& f : files) {
      std::ifstream in(f);
      Json doc = Json::parse(in);
      std::string family = doc["family"].get<std::string>();
      for (const auto& case_json : doc["cases"]) {
        for (Layout layout : kLayouts) {
          Json c = case_json;
          if (layout == Layout::expand) {  // only where some input can be a stride-0 view
            bool repeated = false;
            for (const auto& j : c["inputs"]) repeated = repeated || has_repeated_dim(parse_tensor(j));
            if (!repeated) {
              auto derived = derive_repeated_case(c, family);
              if (!derived) continue;
              c = std::move(*derived);
            }
            ++(repeated ? g_stats.expand_repeated : g_stats.expand_derived);
          }
          std::string name = c["name"].get<std::string>();
          if (layout != Layout::contiguous) name += std::string("/") + layout_name(layout);
          name = test_name(name);
          Device dev = stack.device;
          std::string sname = stack.name;
          testing::RegisterTest(
              ("conformance_" + test_name(stack.name) + "_" + family).c_str(), name.c_str(), nullptr, nullptr, __FILE__,
              __LINE__, [c, sname, dev, layout]() -> testing::Test* { return new CaseTest(c, sname, dev, layout); });
        }
      }
    }
  }
}

// After the cases: the router-cpu-cpu stacks must have run ops on both of their backends and
// moved tensors between them, else they tested nothing a plain CPU stack doesn't.
void register_router_check() {
  bool routed = false;
  for (const auto& s : backend_stacks()) routed |= s.name.find("router-cpu-cpu") != std::string::npos;
  if (!routed) return;
  testing::RegisterTest("conformance_router", "cpu_cpu_transfers", nullptr, nullptr, __FILE__, __LINE__,
                        []() -> testing::Test* {
                          struct Check : testing::Test {
                            void TestBody() override {
                              router::Stats st = router::stats(router_cpu_cpu().backend());
                              if (st.ops_per_backend[0] + st.ops_per_backend[1] == 0) GTEST_SKIP() << "no case ran";
                              std::printf("router-cpu-cpu: %lld ops on the first backend, %lld on the second, "
                                          "%lld tensors moved (%lld bytes)\n",
                                          (long long)st.ops_per_backend[0], (long long)st.ops_per_backend[1],
                                          (long long)st.transfers, (long long)st.bytes_transferred);
                              EXPECT_GT(st.ops_per_backend[0], 0) << "no op ran on the first backend";
                              EXPECT_GT(st.ops_per_backend[1], 0) << "no op ran on the second backend";
                              EXPECT_GT(st.transfers, 0) << "no tensor moved between the backends";
                            }
                          };
                          return new Check;
                        });
}

void write_report(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  Json j;
  j["ops"] = g_stats.ops.size();
  j["cases"] = g_stats.cases;
  j["failed"] = g_stats.failed;
  Json backends = Json::array();
  for (const auto& s : backend_stacks()) backends.push_back(s.name);
  j["backends"] = backends;
  Json per = Json::object();
  for (const auto& [name, cf] : g_stats.per_backend) per[name] = {{"cases", cf.first}, {"failed", cf.second}};
  j["per_backend"] = per;
  Json variants = Json::array();
  for (Layout l : kLayouts) variants.push_back(layout_name(l));
  j["variants"] = variants;
  j["stride0_inputs"] = g_stats.stride0_inputs;
  j["expand_cases"] = {{"repeated_input", g_stats.expand_repeated}, {"derived", g_stats.expand_derived}};
  add_coverage_report(j);
  auto tmp = dir / "conformance.json.tmp";
  std::ofstream(tmp) << j.dump(2) << "\n";
  std::filesystem::rename(tmp, dir / "conformance.json");
}

}  // namespace
}  // namespace ember::conformance

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  std::filesystem::path reports = "build/reports";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reports") reports = argv[i + 1];
  ember::conformance::register_cases(EMBER_CONFORMANCE_DIR "/cases");
  ember::conformance::register_router_check();
  ember::conformance::register_coverage_tests();  // after the cases, so it runs last
  int rc = RUN_ALL_TESTS();
  ember::conformance::write_report(reports);
  return rc;
}
