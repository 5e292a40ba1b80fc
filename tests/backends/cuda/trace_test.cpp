// The trace profiler on the CUDA backend (profile.hpp): while a trace session records, each op's
// GPU interval is an event on the "cuda:N stream" track, on the host's clock, named by the op
// with its signature as detail; nothing is timed while neither the trace nor the table is on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "../../core/trace_json.hpp"
#include "ember/backends/cuda.hpp"
#include "ember/core/trace.hpp"
#include "ember/tensor/ops.hpp"
#include "profile.hpp"

namespace ember {
namespace {

#define REQUIRE_GPU() \
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices()

std::string fresh_path(const std::string& name) {
  const std::string dir = testing::TempDir() + "ember_cuda_trace_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir + "/trace.json";
}

std::vector<test::TraceEvent> on_track(const std::vector<test::TraceEvent>& events, const std::string& track) {
  std::vector<test::TraceEvent> out;
  for (const auto& e : events)
    if (e.track == track) out.push_back(e);
  return out;
}

TEST(CudaTrace, OpsHaveGpuIntervalsOnTheDeviceTrack) {
  REQUIRE_GPU();
  const char* table = std::getenv("EMBER_CUDA_PROFILE");
  if (!(table && std::string(table) == "1")) {
    EXPECT_EQ(cuda::OpProfiler::get(), nullptr);  // no session, no table: nothing is timed
  }
  Device gpu = Device::cuda(0);
  auto x = DynTensor::from_vector<float>(std::vector<float>(64 * 64, 0.5f), {64, 64}, gpu);
  (void)exp(x).to(Device::cpu());  // compiled and warm before the session
  const std::string path = fresh_path("ops");
  std::vector<float> got;
  {
    trace::Session session(path);
    EXPECT_NE(cuda::OpProfiler::get(), nullptr);
    auto y = matmul(exp(x + x), x);
    got = y.to(Device::cpu()).to_vector<float>();
  }
  ASSERT_EQ(got.size(), 64u * 64u);
  const auto events = test::read_trace(path);
  const auto gpu_events = on_track(events, "cuda:0 stream");
  ASSERT_FALSE(gpu_events.empty()) << "no event on the cuda:0 track";
  for (const char* name : {"add", "exp", "matmul"}) {
    const auto it = std::find_if(gpu_events.begin(), gpu_events.end(), [&](const auto& e) { return e.name == name; });
    ASSERT_NE(it, gpu_events.end()) << name << " has no GPU interval";
    EXPECT_EQ(it->category, "gpu");
    EXPECT_GE(it->dur, 0.0) << name;
    EXPECT_GE(it->ts, 0.0) << name;
    EXPECT_EQ(it->detail.rfind(std::string(name) + " f32 [64, 64]", 0), 0u) << it->detail;
    // the GPU runs an op after the host began it (the clocks agree to the reference's latency)
    const auto host = std::find_if(events.begin(), events.end(),
                                   [&](const auto& e) { return e.category == "op" && e.name == name; });
    ASSERT_NE(host, events.end()) << name << " has no host event";
    EXPECT_GE(it->ts, host->ts - 100.0) << name;
  }
  // one stream: the intervals do not overlap
  auto sorted = gpu_events;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
  for (size_t i = 1; i < sorted.size(); ++i) EXPECT_GE(sorted[i].ts, sorted[i - 1].ts + sorted[i - 1].dur - 2.0);
}

TEST(CudaTrace, LabelledScopesNameTheirInterval) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  auto x = DynTensor::from_vector<float>(std::vector<float>(1024, 1.0f), {1024}, gpu);
  (void)exp(x).to(Device::cpu());
  const std::string path = fresh_path("label");
  {
    trace::Session session(path);
    cuda::OpProfiler::Scope timed([] { return cuda::OpProfiler::Label{"my_fused_kernel", "fused my_fused_kernel [1024]", "t0 = exp(x0)"}; },
                                  nullptr);
    (void)exp(x);  // nested: part of the labelled interval, not an interval of its own
  }
  const auto gpu_events = on_track(test::read_trace(path), "cuda:0 stream");
  ASSERT_EQ(gpu_events.size(), 1u);
  EXPECT_EQ(gpu_events[0].name, "my_fused_kernel");
  EXPECT_EQ(gpu_events[0].detail, "t0 = exp(x0)");
  EXPECT_GE(gpu_events[0].dur, 0.0);
}

TEST(CudaTrace, NoDeviceEventsAfterTheSession) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  auto x = DynTensor::from_vector<float>(std::vector<float>(16, 1.0f), {16}, gpu);
  const std::string first = fresh_path("first"), second = fresh_path("second");
  { trace::Session session(first); (void)exp(x).to(Device::cpu()); }
  (void)(x + x).to(Device::cpu());  // outside any session
  { trace::Session session(second); (void)sqrt(x).to(Device::cpu()); }
  const auto events = on_track(test::read_trace(second), "cuda:0 stream");
  ASSERT_FALSE(events.empty());
  for (const auto& e : events) EXPECT_NE(e.name, "add") << "an op outside the session was traced";
  for (const auto& e : on_track(test::read_trace(first), "cuda:0 stream"))
    EXPECT_NE(e.name, "add") << "an op after the session went into its file";
}

}  // namespace
}  // namespace ember
