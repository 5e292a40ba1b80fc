// The trace profiler's hooks in the op path: each op run through the tensor layer is an "op"
// event with its inputs' dtypes and shapes, and the CPU backend's kernel for it a "kernel" event
// inside it, on the calling thread's track.
#include <gtest/gtest.h>

#include <ember/core/trace.hpp>
#include <ember/ember.hpp>
#include <filesystem>

#include "../core/trace_json.hpp"

namespace ember {
namespace {

std::vector<test::TraceEvent> with(const std::vector<test::TraceEvent>& events, const std::string& category,
                                   const std::string& name) {
  std::vector<test::TraceEvent> out;
  for (const auto& e : events)
    if (e.category == category && e.name == name) out.push_back(e);
  return out;
}

TEST(TraceHooks, CpuOpsAndKernelsAreTraced) {
  const std::string dir = testing::TempDir() + "ember_trace_hooks_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/trace.json";
  auto x = DynTensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, Device::cpu());
  auto b = DynTensor::from_vector<float>({1, 2, 3}, {3}, Device::cpu());
  std::vector<float> result;
  {
    trace::Session session(path);
    auto y = exp(x + b);
    result = y.to_vector<float>();
  }
  ASSERT_EQ(result.size(), 6u);
  EXPECT_FLOAT_EQ(result[0], std::exp(2.0f));
  const auto events = test::read_trace(path);
  const auto add_op = with(events, "op", "add"), exp_op = with(events, "op", "exp");
  ASSERT_EQ(add_op.size(), 1u);
  ASSERT_EQ(exp_op.size(), 1u);
  EXPECT_EQ(add_op[0].detail, "f32 [2, 3], f32 [3]");
  EXPECT_EQ(exp_op[0].detail, "f32 [2, 3]");
  EXPECT_LE(add_op[0].ts + add_op[0].dur, exp_op[0].ts);  // in program order
  for (const auto& op : {add_op[0], exp_op[0]}) {
    const auto kernels = with(events, "kernel", op.name);
    ASSERT_EQ(kernels.size(), 1u) << op.name;
    const auto& k = kernels[0];
    EXPECT_EQ(k.tid, op.tid);  // the same thread's track, nested in the op
    EXPECT_GE(k.ts, op.ts);
    EXPECT_LE(k.ts + k.dur, op.ts + op.dur + 1e-3);
    EXPECT_GE(k.dur, 0.0);
  }
  // outside the session, nothing more is recorded and the file stays as written
  auto z = exp(x);
  EXPECT_EQ(test::read_trace(path).size(), events.size());
}

}  // namespace
}  // namespace ember
