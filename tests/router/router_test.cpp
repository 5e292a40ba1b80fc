// The router decorator over two distinct CPU backends (Device::cpu() and a second instance of
// the CPU backend), each seen through a counting test double, so that where an op really ran is
// observed from outside the router. Expected values are analytic (std::exp, hand-derived
// gradients), never the router's own output.
#include "ember/decorators/router.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "ember/backends/cpu.hpp"
#include "ember/decorators/fusion.hpp"
#include "ember/ember.hpp"
#include "ember/onnx/runtime.hpp"

namespace ember {
namespace {

// A backend's ops, counted by name as they reach it; `refused` is an op it claims not to support
// (and throws on, as a backend must), to test the fallback.
class CountingBackend final : public ForwardingBackend {
 public:
  CountingBackend(std::shared_ptr<Backend> inner, std::string refused = "")
      : ForwardingBackend(std::move(inner)), refused_(std::move(refused)) {}
  std::vector<PrimitivePtr> execute(Op op) override {
    std::string n(op.name());
    EMBER_CHECK(n != refused_, n, ": not supported on ", name());
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++ran_[n];
      ++total_;
    }
    return inner_->execute(std::move(op));
  }
  bool supports(const Op& op) const override { return op.name() != refused_ && inner_->supports(op); }
  int ran(const std::string& op) {
    std::lock_guard<std::mutex> lock(mu_);
    return ran_[op];
  }
  int total() {
    std::lock_guard<std::mutex> lock(mu_);
    return total_;
  }

 private:
  std::string refused_;
  std::mutex mu_;
  std::map<std::string, int> ran_;
  int total_ = 0;
};

struct Pair {
  std::shared_ptr<CountingBackend> first, second;
  Device router;
};

// backend 0: the process's CPU backend; backend 1: a CPU backend of its own (another instance).
Pair make_router(RouterPolicy policy = {}, std::string first_refuses = "") {
  auto a = std::make_shared<CountingBackend>(Device::cpu().backend_ptr(), first_refuses);
  auto b = std::make_shared<CountingBackend>(cpu::make_backend());
  return {a, b, Device::router({Device(a), Device(b)}, std::move(policy))};
}

// sends the ops named `op` to backend 1, the rest to the default
RouterPolicy op_on_second(std::string op) {
  return [op](const router::Route& r) -> std::optional<size_t> {
    if (r.op.name() == op) return 1;
    return std::nullopt;
  };
}

// f() throws an ember::Error whose message holds every fragment
template <class F>
void expect_error(F f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    for (const auto& frag : fragments) EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
  }
}

int where(const Device& d, const DynTensor& t) { return router::location(d.backend(), t.primitive()); }

std::vector<float> expected_exp_plus(const std::vector<float>& x, float c) {
  std::vector<float> out;
  for (float v : x) out.push_back(std::exp(v + c));
  return out;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i]))) << "at " << i;
}

TEST(Router, DeviceFactory) {
  Pair p = make_router();
  EXPECT_TRUE(p.router.is_router());
  EXPECT_TRUE(p.router.autodiff().is_router());
  EXPECT_FALSE(Device::cpu().is_router());
  EXPECT_EQ(p.router.name(), "router(cpu#0, cpu#1)");
  EXPECT_EQ(router::backends_of(p.router.backend()).size(), 2u);
  EXPECT_THROW(Device::router({}), Error);
  EXPECT_THROW(Device::router({Device::cpu(), Device::cpu()}), Error);  // one backend listed twice
  expect_error([] { Device::router({Device::cpu().autodiff()}); }, {"autodiff", "on top"});
  EXPECT_THROW(router::stats(Device::cpu().backend()), Error);
}

TEST(Router, MemoryStatsCountEachDeviceOnce) {
  // the two CPU backends share the process's allocator: the router reports it once
  Pair p = make_router();
  auto x = DynTensor::from_vector(std::vector<float>(1024, 1.f), {1024}, p.router) + 1.0f;
  MemoryStats cpu = Device::cpu().memory_stats(), routed = p.router.memory_stats();
  EXPECT_GE(cpu.in_use, 4096);
  EXPECT_EQ(routed.in_use, cpu.in_use);
  EXPECT_EQ(routed.reserved, cpu.reserved);
}

TEST(Router, ResultsStayWhereComputed) {
  Pair p = make_router(op_on_second("exp"));
  const std::vector<float> xs = {0.5f, -1.f, 2.f, 0.f};
  auto x = DynTensor::from_vector(xs, {2, 2}, p.router);
  EXPECT_EQ(where(p.router, x), -1);  // held on the host until an op needs it
  auto y = x + 1.0f;                  // add: the default, backend 0
  EXPECT_EQ(where(p.router, y), 0);
  EXPECT_EQ(where(p.router, x), 0);  // placed by its first op
  auto z = exp(y);                   // the policy: backend 1; y moves there
  EXPECT_EQ(where(p.router, z), 1);
  EXPECT_EQ(where(p.router, y), 0);  // y's home is still backend 0 (it has a copy on 1 now)
  EXPECT_EQ(p.first->ran("add"), 1);
  EXPECT_EQ(p.first->ran("exp"), 0);
  EXPECT_EQ(p.second->ran("exp"), 1);
  EXPECT_EQ(p.second->ran("add"), 0);
  router::Stats s = router::stats(p.router.backend());
  EXPECT_EQ(s.transfers, 1);
  EXPECT_EQ(s.bytes_transferred, 16);
  EXPECT_EQ(s.placements, 1);
  // a read works from wherever the tensor lives, and moves nothing
  expect_near(z.to_vector<float>(), expected_exp_plus(xs, 1));
  expect_near(y.to_vector<float>(), {1.5f, 0.f, 3.f, 1.f});
  EXPECT_EQ(router::stats(p.router.backend()).transfers, 1);
  // a host-held tensor reads back its values without being placed
  auto h = DynTensor::from_vector(xs, {4}, p.router);
  expect_near(h.to_vector<float>(), xs);
  EXPECT_EQ(where(p.router, h), -1);
}

TEST(Router, InputMovedOnceNotPerOp) {
  Pair p = make_router(op_on_second("mul"));
  auto x = DynTensor::from_vector({1.f, 2.f, 3.f}, {3}, p.router);
  auto a = x + 1.0f;  // backend 0
  ASSERT_EQ(where(p.router, a), 0);
  router::reset_stats(p.router.backend());
  auto b = a * a;  // backend 1: a moves
  auto c = a * b;  // backend 1 again: a's copy there is reused
  auto d = b * c;  // both already on 1
  EXPECT_EQ(router::stats(p.router.backend()).transfers, 1);
  EXPECT_EQ(p.second->ran("mul"), 3);
  EXPECT_EQ(where(p.router, d), 1);
  expect_near(d.to_vector<float>(), {32.f, 243.f, 1024.f});  // a^5, a = {2, 3, 4}
  auto e = a - a;  // back on 0, where a lives: nothing moves
  EXPECT_EQ(where(p.router, e), 0);
  EXPECT_EQ(router::stats(p.router.backend()).transfers, 1);
  auto f = d + a;  // d lives on 1 and add runs on 0: d moves
  EXPECT_EQ(router::stats(p.router.backend()).transfers, 2);
  expect_near(f.to_vector<float>(), {34.f, 246.f, 1028.f});
}

TEST(Router, PolicyBySize) {
  // "small tensors stay on backend 1": ops whose inputs total under 64 bytes
  Pair p = make_router([](const router::Route& r) -> std::optional<size_t> {
    if (r.input_bytes() < 64) return 1;
    return std::nullopt;
  });
  auto small = DynTensor::from_vector(std::vector<float>(4, 1.f), {4}, p.router);   // 16 bytes
  auto big = DynTensor::from_vector(std::vector<float>(64, 2.f), {64}, p.router);  // 256 bytes
  auto s2 = exp(small);
  auto b2 = exp(big);
  EXPECT_EQ(where(p.router, s2), 1);
  EXPECT_EQ(where(p.router, b2), 0);
  EXPECT_EQ(p.second->ran("exp"), 1);
  EXPECT_EQ(p.first->ran("exp"), 1);
  expect_near(s2.to_vector<float>(), std::vector<float>(4, std::exp(1.f)));
  expect_near(b2.to_vector<float>(), std::vector<float>(64, std::exp(2.f)));
  EXPECT_EQ(router::stats(p.router.backend()).transfers, 0);  // each placed where it was first used
}

TEST(Router, PolicySeesOpAndPlacement) {
  std::vector<std::string> seen;
  std::vector<int> homes;
  std::vector<bool> supported;
  Pair p = make_router(
      [&](const router::Route& r) -> std::optional<size_t> {
        seen.emplace_back(r.op.name());
        homes.assign(r.input_homes.begin(), r.input_homes.end());
        supported.clear();
        for (const auto& c : r.candidates) supported.push_back(c.supports);
        return std::nullopt;
      },
      "exp");
  auto x = DynTensor::from_vector({1.f, 2.f}, {2}, p.router);
  auto y = x * 3.0f;
  auto z = exp(y);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), "exp");  // the last op the policy saw (the scalar 3 is made by an op too)
  EXPECT_EQ(homes, std::vector<int>({0}));  // y was computed on backend 0
  EXPECT_EQ(supported, std::vector<bool>({false, true}));
  expect_near(z.to_vector<float>(), {std::exp(3.f), std::exp(6.f)});
}

TEST(Router, UnsupportedOpFallsBack) {
  Pair p = make_router({}, "exp");  // backend 0 refuses exp
  const std::vector<float> xs = {0.25f, -0.5f, 1.5f};
  auto x = DynTensor::from_vector(xs, {3}, p.router);
  auto y = exp(x + 2.0f) + 1.0f;
  EXPECT_EQ(p.first->ran("exp"), 0);
  EXPECT_EQ(p.second->ran("exp"), 1);
  EXPECT_EQ(p.first->ran("add"), 2);  // both adds on the first backend, which takes them
  EXPECT_EQ(where(p.router, y), 0);
  EXPECT_EQ(router::stats(p.router.backend()).transfers, 2);  // x + 2 to backend 1, exp's result back
  std::vector<float> want;
  for (float v : xs) want.push_back(std::exp(v + 2) + 1);
  expect_near(y.to_vector<float>(), want);
}

TEST(Router, PolicyChoosingUnsupportingBackendIsAnError) {
  Pair p = make_router([](const router::Route&) -> std::optional<size_t> { return 0; }, "exp");
  auto x = DynTensor::from_vector({1.f}, {1}, p.router);
  expect_error([&] { (void)exp(x); }, {"exp: the router's policy chose cpu#0, which does not support it"});
  Pair q = make_router([](const router::Route&) -> std::optional<size_t> { return 7; });
  expect_error([&] { (void)exp(DynTensor::from_vector({1.f}, {1}, q.router)); },
               {"exp: the router's policy chose backend 7, but router(cpu#0, cpu#1) has 2"});
  // no backend supports it at all
  auto a = std::make_shared<CountingBackend>(Device::cpu().backend_ptr(), "exp");
  Device only(Device::router({Device(a)}));
  expect_error([&] { (void)exp(DynTensor::from_vector({1.f}, {1}, only)); },
               {"exp: not supported on any backend of router(cpu)"});
}

TEST(Router, AutodiffOnTopMatchesAnalyticGradients) {
  // exp, mul and sum on backend 1, everything else on 0: forward and backward bounce between them
  Pair p = make_router([](const router::Route& r) -> std::optional<size_t> {
    std::string_view n = r.op.name();
    if (n == "exp" || n == "mul" || n == "sum") return 1;
    return std::nullopt;
  });
  Device dev = p.router.autodiff();
  const std::vector<float> xs = {0.1f, -0.4f, 0.7f}, ws = {1.5f, 0.5f, -1.f};
  auto x = DynTensor::from_vector(xs, {3}, dev).require_grad();
  auto w = DynTensor::from_vector(ws, {3}, dev).require_grad();
  // loss = sum(exp(x * w) + x)  =>  dx = w exp(xw) + 1, dw = x exp(xw)
  auto loss = sum(exp(x * w) + x);
  Gradients g = loss.backward();
  std::vector<float> want_dx, want_dw;
  float want_loss = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    want_dx.push_back(ws[i] * std::exp(xs[i] * ws[i]) + 1);
    want_dw.push_back(xs[i] * std::exp(xs[i] * ws[i]));
    want_loss += std::exp(xs[i] * ws[i]) + xs[i];
  }
  EXPECT_NEAR(loss.item(), want_loss, 1e-5);
  expect_near(x.grad(g)->to_vector<float>(), want_dx);
  expect_near(w.grad(g)->to_vector<float>(), want_dw);
  EXPECT_GT(router::stats(p.router.backend()).transfers, 0);
  EXPECT_GT(p.first->total(), 0);
  EXPECT_GT(p.second->ran("mul"), 1);  // the forward mul and the backward ones
}

TEST(Router, OverFusionStacks) {
  auto b = std::make_shared<CountingBackend>(cpu::make_backend());
  Device dev = Device::router({Device::cpu().fusion(), Device(b)}, op_on_second("exp"));
  const std::vector<float> xs = {0.5f, 1.f, -2.f, 3.f};
  auto x = DynTensor::from_vector(xs, {4}, dev);
  auto y = exp((x + 1.0f) * 0.5f) - 2.0f;
  std::vector<float> want;
  for (float v : xs) want.push_back(std::exp((v + 1) * 0.5f) - 2);
  expect_near(y.to_vector<float>(), want);
  EXPECT_EQ(b->ran("exp"), 1);
  EXPECT_EQ(router::stats(dev.backend()).transfers, 2);
}

TEST(Router, LogPrintsEachTransfer) {
  Pair p = make_router(op_on_second("exp"));
  auto x = DynTensor::from_vector(std::vector<float>(6, 1.f), {2, 3}, p.router);
  auto y = x + 1.0f;
  const char* old = std::getenv("EMBER_LOG");
  std::string saved = old ? old : "";
  setenv("EMBER_LOG", "router", 1);
  testing::internal::CaptureStderr();
  auto z = exp(y);
  auto w = exp(z);  // z already on backend 1: no line
  std::string out = testing::internal::GetCapturedStderr();
  if (old) setenv("EMBER_LOG", saved.c_str(), 1);
  else unsetenv("EMBER_LOG");
  EXPECT_EQ(out, "[ember router] exp: f32 [2, 3] (24 bytes) cpu#0 -> cpu#1\n");
  EXPECT_NEAR(w.to_vector<float>()[0], std::exp(std::exp(2.f)), 1e-3);
  testing::internal::CaptureStderr();
  (void)exp(y + 1.0f);  // a transfer with the log off prints nothing
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(Router, DataDependentAndMultiOutputOps) {
  Pair p = make_router(op_on_second("nonzero"));
  auto x = DynTensor::from_vector({0.f, 3.f, 0.f, 5.f}, {4}, p.router);
  auto m = x * 1.0f;  // on backend 0
  auto nz = nonzero(m);
  EXPECT_EQ(nz.shape(), Shape({2, 1}));
  EXPECT_EQ(nz.to_vector<int64_t>(), std::vector<int64_t>({1, 3}));
  EXPECT_EQ(where(p.router, nz), 1);
}

// Threads share one router and its tensors: a shared input is moved to the second backend by
// whichever thread needs it first, once, and every thread's results are right.
TEST(Router, ThreadsShareTensors) {
  Pair p = make_router(op_on_second("exp"));
  auto a = DynTensor::from_vector(std::vector<float>(256, 0.5f), {256}, p.router) + 0.0f;  // on backend 0
  router::reset_stats(p.router.backend());
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto y = exp(a) + float(t);  // exp on backend 1 (a moves once), the add back on 0
        for (float v : y.to_vector<float>())
          if (std::fabs(v - (std::exp(0.5f) + float(t))) > 1e-5f) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(p.second->ran("exp"), 200);
  // a once, then each exp's result back to backend 0 for its add
  EXPECT_EQ(router::stats(p.router.backend()).transfers, 1 + 200);
}

// ONNX models run through the router, falling back per op: the first backend lacks softmax, so
// that node runs on the second and the rest on the first. Expected values: the fixture's NumPy
// reference (tests/onnx/gen_fixtures.py).
TEST(Router, OnnxModelFallsBackPerOp) {
  std::ifstream f(std::string(EMBER_ONNX_FIXTURES) + "/expected.json");
  ASSERT_TRUE(f) << "tests/onnx/fixtures/expected.json";
  const nlohmann::json e = nlohmann::json::parse(f)["runtime_mlp"];
  Pair p = make_router({}, "softmax");
  onnx::Model m = onnx::Model::load(std::string(EMBER_ONNX_FIXTURES) + "/runtime_mlp.onnx", p.router);
  auto x = DynTensor::from_vector(e["x"].get<std::vector<float>>(), {2, 3}, p.router);
  auto out = m.run({{"x", x}});
  expect_near(out.at("y").to_vector<float>(), e["y"].get<std::vector<float>>());
  EXPECT_EQ(p.first->ran("softmax"), 0);
  EXPECT_EQ(p.second->ran("softmax"), 1);
  EXPECT_GT(p.first->ran("matmul"), 0);
  EXPECT_GT(router::stats(p.router.backend()).transfers, 0);
}

// The router decides from supports() alone, before running, so a CPU backend that says yes must
// run the op: for every elementwise op without attributes and every dtype that make_op accepts,
// supports() and execute() agree.
TEST(Router, CpuSupportsIsExactForElementwiseDtypes) {
  std::shared_ptr<Backend> cpu = cpu::make_backend();
  const std::vector<DType> dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64,
                                     DType::i32, DType::i16, DType::i8,  DType::u8,   DType::boolean};
  int checked = 0;
  for (size_t k = 0; k < kNumOps; ++k) {
    const OpInfo& info = op_info(OpKind(k));
    int arity = 0;
    switch (info.family) {
      case OpFamily::Unary: case OpFamily::FloatUnary: case OpFamily::Predicate: case OpFamily::BitwiseUnary:
        arity = 1;
        break;
      case OpFamily::Binary: case OpFamily::FloatBinary: case OpFamily::Compare: case OpFamily::Bitwise:
        arity = 2;
        break;
      default:
        continue;
    }
    if (info.attrs_index != 0) continue;  // NoAttrs only
    for (DType dt : dtypes) {
      std::vector<PrimitivePtr> in;
      for (int i = 0; i < arity; ++i) in.push_back(cpu->write(TensorData::from_doubles({1, 2, 3}, Shape{3}, dt)));
      std::optional<Op> op;
      try {
        op = make_op(OpKind(k), in);
      } catch (const Error&) {
        continue;  // refused before any backend sees it
      }
      if (!cpu->supports(*op)) continue;
      ++checked;
      try {
        cpu->execute(std::move(*op));
      } catch (const Error& e) {
        ADD_FAILURE() << info.name << " " << dtype_name(dt) << ": supports() says yes, execute says " << e.what();
      }
    }
  }
  EXPECT_GT(checked, 300);
}

}  // namespace
}  // namespace ember
