// The trace profiler (ember/core/trace.hpp): the file is valid JSON in Chrome's trace format,
// written atomically, with every thread's events on its own track; nothing is recorded outside
// a session; sessions do not overlap.
#include "ember/core/trace.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ember/core/error.hpp"
#include "trace_json.hpp"

namespace ember {
namespace {

using test::read_trace;
using test::TraceEvent;

// A fresh, empty directory for one test's files.
std::string fresh_dir(const std::string& name) {
  const std::string dir = testing::TempDir() + "ember_trace_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<TraceEvent> named(const std::vector<TraceEvent>& events, const std::string& name) {
  std::vector<TraceEvent> out;
  for (const auto& e : events)
    if (e.name == name) out.push_back(e);
  return out;
}

TEST(Trace, SessionWritesChromeTraceJson) {
  const std::string path = fresh_dir("basic") + "/trace.json";
  {
    trace::Session session(path);
    EXPECT_TRUE(trace::enabled());
    EXPECT_NE(trace::session_id(), 0u);
    trace::Scope outer("op", "outer", "f32 [2, 3]");
    { trace::Scope lazy("fused", [] { return std::pair<std::string, std::string>("lazy_name", "t0 = exp(x0)"); }); }
    {
      trace::Scope inner("kernel", "inner");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    const double t = trace::now_us();
    trace::add_complete("gpu:0 stream", "gpu", "device_kernel", t, 5.5, "k [4]");
  }  // `outer` is still open when the session ends: it ends with the session
  EXPECT_FALSE(trace::enabled());
  EXPECT_EQ(trace::session_id(), 0u);
  const std::string text = test::read_text(path);
  EXPECT_EQ(text.rfind("{\"traceEvents\":[", 0), 0u);
  const auto events = read_trace(path);
  ASSERT_EQ(events.size(), 4u);
  const auto lazy = named(events, "lazy_name");
  ASSERT_EQ(lazy.size(), 1u);
  EXPECT_EQ(lazy[0].category, "fused");
  EXPECT_EQ(lazy[0].detail, "t0 = exp(x0)");
  const auto outer = named(events, "outer"), inner = named(events, "inner"), dev = named(events, "device_kernel");
  ASSERT_EQ(outer.size(), 1u);
  ASSERT_EQ(inner.size(), 1u);
  ASSERT_EQ(dev.size(), 1u);
  EXPECT_EQ(outer[0].category, "op");
  EXPECT_EQ(outer[0].detail, "f32 [2, 3]");
  EXPECT_EQ(inner[0].category, "kernel");
  EXPECT_GE(inner[0].dur, 2000.0);
  // the inner scope lies within the outer one, on the same thread's track
  EXPECT_EQ(inner[0].tid, outer[0].tid);
  EXPECT_LE(outer[0].ts, inner[0].ts);
  EXPECT_GE(outer[0].ts + outer[0].dur, inner[0].ts + inner[0].dur);
  EXPECT_EQ(outer[0].track.rfind("CPU thread ", 0), 0u) << outer[0].track;
  EXPECT_EQ(dev[0].track, "gpu:0 stream");
  EXPECT_NE(dev[0].pid, outer[0].pid);
  EXPECT_DOUBLE_EQ(dev[0].dur, 5.5);
  EXPECT_EQ(dev[0].detail, "k [4]");
}

TEST(Trace, NothingIsRecordedOutsideASession) {
  EXPECT_FALSE(trace::enabled());
  { trace::Scope before("op", "before_session"); }
  trace::add_complete("gpu:0 stream", "gpu", "before_session_gpu", 0, 1);
  bool args_built = false;
  {
    trace::Scope lazy("op", "lazy", [&] {
      args_built = true;
      return std::string("shapes");
    });
  }
  {
    trace::Scope lazy("fused", [&] {
      args_built = true;
      return std::pair<std::string, std::string>("name", "args");
    });
  }
  EXPECT_FALSE(args_built);  // a disabled scope does not build its name or arguments
  const std::string path = fresh_dir("disabled") + "/trace.json";
  auto straddling = std::make_unique<trace::Scope>("op", "straddling");  // begun before the session
  {
    trace::Session session(path);
    straddling.reset();
    trace::Scope during("op", "during");
  }
  { trace::Scope after("op", "after_session"); }
  const auto events = read_trace(path);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "during");
}

TEST(Trace, OneSessionAtATime) {
  const std::string dir = fresh_dir("second");
  {
    trace::Session first(dir + "/a.json");
    try {
      trace::Session second(dir + "/b.json");
      FAIL() << "a second session started while one records";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("already recording to " + dir + "/a.json"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(trace::enabled());  // the first one records on
    trace::Scope s("op", "in_first");
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/b.json"));
  EXPECT_EQ(read_trace(dir + "/a.json").size(), 1u);
  {
    trace::Session third(dir + "/c.json");  // after the first has ended
    trace::Scope s("op", "in_third");
  }
  const auto events = read_trace(dir + "/c.json");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "in_third");
}

TEST(Trace, FileIsWrittenAtomically) {
  const std::string dir = fresh_dir("atomic");
  {
    trace::Session session(dir + "/trace.json");
    trace::Scope s("op", "x");
    EXPECT_FALSE(std::filesystem::exists(dir + "/trace.json"));  // written at the end only
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path().filename().string());
  EXPECT_EQ(files, std::vector<std::string>{"trace.json"});  // no temporary file left behind
  // an older file at the path is replaced whole
  {
    trace::Session session(dir + "/trace.json");
    trace::Scope s("op", "y");
  }
  const auto events = read_trace(dir + "/trace.json");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "y");
  // a directory that does not exist is an error at the start, not a lost trace at the end
  EXPECT_THROW(trace::Session(dir + "/missing/trace.json"), Error);
  EXPECT_FALSE(trace::enabled());
}

TEST(Trace, EveryThreadHasItsTrack) {
  const std::string path = fresh_dir("threads") + "/trace.json";
  constexpr int kThreads = 4, kScopes = 200;
  {
    trace::Session session(path);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([t] {
        if (t == 0) trace::set_thread_name("loader");
        for (int i = 0; i < kScopes; ++i) {
          trace::Scope outer("op", "thread" + std::to_string(t));
          trace::Scope inner("kernel", "work");
        }
      });
    for (auto& th : threads) th.join();  // the threads are gone before the file is written
  }
  const auto events = read_trace(path);
  ASSERT_EQ(events.size(), size_t(2 * kThreads * kScopes));
  std::set<int> tids;
  for (int t = 0; t < kThreads; ++t) {
    const auto mine = named(events, "thread" + std::to_string(t));
    ASSERT_EQ(mine.size(), size_t(kScopes)) << "thread " << t;
    std::set<int> own;
    for (const auto& e : mine) own.insert(e.tid);
    EXPECT_EQ(own.size(), 1u) << "thread " << t << " spread over several tracks";
    tids.insert(*own.begin());
    if (t == 0) {
      EXPECT_EQ(mine[0].track, "loader");
    }
  }
  EXPECT_EQ(tids.size(), size_t(kThreads));
  EXPECT_EQ(named(events, "work").size(), size_t(kThreads * kScopes));
}

TEST(Trace, NamesAreEscaped) {
  const std::string path = fresh_dir("escape") + "/trace.json";
  const std::string odd = "say \"hi\"\\ \n\t\x01 end /";
  {
    trace::Session session(path);
    trace::Scope s("op", odd, odd);
    trace::add_complete(odd, "gpu", odd, 0, 1);
  }
  const auto events = read_trace(path);  // throws on malformed JSON
  ASSERT_EQ(events.size(), 2u);
  for (const auto& e : events) EXPECT_EQ(e.name, odd);
  EXPECT_EQ(named(events, odd)[0].detail + named(events, odd)[1].detail, odd);
}

TEST(Trace, FlushHooksRunBeforeTheFileIsWritten) {
  static std::atomic<bool> armed{false};
  trace::on_flush([] {
    if (armed) trace::add_complete("late track", "gpu", "resolved_at_flush", 1, 2);
  });
  armed = true;
  const std::string path = fresh_dir("flush") + "/trace.json";
  { trace::Session session(path); }
  armed = false;
  const auto events = read_trace(path);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "resolved_at_flush");
  EXPECT_EQ(events[0].track, "late track");
}

}  // namespace
}  // namespace ember
