#include "ember/core/trace.hpp"

#include "ember/core/atomic_write.hpp"
#include "ember/core/json_escape.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ember/core/error.hpp"

namespace ember::trace {

namespace detail {
std::atomic<int> g_state{0};
}  // namespace detail

namespace {

struct Event {
  const char* category;
  std::string name, args;
  double start_us;
  double dur_us;  // < 0: still open
};

// One thread's events. The owning thread appends; the session's writer takes them. The mutex is
// uncontended except while a file is written.
struct ThreadBuffer {
  std::mutex mu;
  uint64_t session = 0;  // the session its events belong to; stale events are dropped on reuse
  std::vector<Event> events;
  int tid = 0;
  std::string name;
};

struct Track {  // a named track of explicitly timed events (a GPU stream)
  int tid = 0;
  std::vector<Event> events;
};

std::atomic<uint64_t> g_session{0};  // the recording session's id, 0 when none

// Shared state, never destroyed: the EMBER_TRACE session is written from atexit, after static
// destructors may have run.
struct State {
  std::mutex mu;  // guards everything below
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::map<std::string, Track, std::less<>> tracks;
  std::vector<std::function<void()>> hooks;
  std::string path;
  bool from_env = false;
  uint64_t last_session = 0;
  int next_tid = 0;
  int next_track = 0;
};

State& state() {
  static State* s = new State;
  return *s;
}

thread_local std::shared_ptr<ThreadBuffer> t_buffer;

ThreadBuffer& my_buffer() {
  if (!t_buffer) [[unlikely]] {
    auto b = std::make_shared<ThreadBuffer>();
    State& st = state();
    std::lock_guard<std::mutex> lock(st.mu);
    b->tid = st.next_tid++;
    st.buffers.push_back(b);
    t_buffer = std::move(b);
  }
  return *t_buffer;
}

uint64_t start_session(const std::string& path, bool from_env) {
  EMBER_CHECK(!path.empty(), "trace::Session: empty file path");
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  EMBER_CHECK(parent.empty() || std::filesystem::is_directory(parent), "trace::Session(\"", path,
              "\"): the directory ", parent.string(), " does not exist");
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  EMBER_CHECK(g_session.load() == 0, "trace::Session(\"", path, "\"): a trace session is already recording to ",
              st.path, st.from_env ? " (started by EMBER_TRACE)" : "",
              "; one session runs at a time: end the other one first");
  st.path = path;
  st.from_env = from_env;
  st.tracks.clear();
  st.next_track = 0;
  // buffers of threads that have exited and hold nothing are forgotten
  std::erase_if(st.buffers, [](const std::shared_ptr<ThreadBuffer>& b) { return b.use_count() == 1; });
  g_session.store(++st.last_session, std::memory_order_release);
  detail::g_state.store(2, std::memory_order_relaxed);
  return st.last_session;
}

void append_escaped(std::string& out, std::string_view s) {
  out += '"';
  append_json_escaped(out, s);
  out += '"';
}

void append_number(std::string& out, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  out += buf;
}

void append_metadata(std::string& out, int pid, int tid, const char* what, std::string_view value) {
  out += "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"name\":\"";
  out += what;
  out += "\",\"args\":{\"name\":";
  append_escaped(out, value);
  out += "}},\n";
}

void append_events(std::string& out, int pid, int tid, std::vector<Event>& events) {
  // parents before their children: by start, the longer first
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.start_us != b.start_us ? a.start_us < b.start_us : a.dur_us > b.dur_us;
  });
  for (const Event& e : events) {
    out += "{\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"cat\":";
    append_escaped(out, e.category);
    out += ",\"name\":";
    append_escaped(out, e.name);
    out += ",\"ts\":";
    append_number(out, e.start_us);
    out += ",\"dur\":";
    append_number(out, std::max(e.dur_us, 0.0));
    if (!e.args.empty()) {
      out += ",\"args\":{\"detail\":";
      append_escaped(out, e.args);
      out += '}';
    }
    out += "},\n";
  }
}

constexpr int kHostPid = 1, kDevicePid = 2;

// Ends session `id` and writes its file (temporary file + rename). Returns the number of events
// written.
size_t finish_session(uint64_t id) {
  State& st = state();
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    hooks = st.hooks;
  }
  for (auto& h : hooks) h();  // pending device events join while the session still records

  std::string path;
  std::vector<std::pair<std::string, std::vector<Event>>> host;  // thread name, events (by tid)
  std::vector<int> host_tids;
  std::map<std::string, Track, std::less<>> tracks;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    const uint64_t sid = g_session.load();
    if (sid == 0 || sid != id) return 0;
    detail::g_state.store(1, std::memory_order_relaxed);
    g_session.store(0, std::memory_order_release);
    const double end = now_us();
    for (auto& b : st.buffers) {
      std::lock_guard<std::mutex> block(b->mu);
      if (b->session == sid && !b->events.empty()) {
        for (Event& e : b->events)
          if (e.dur_us < 0) e.dur_us = end - e.start_us;  // still open: ends with the session
        host.emplace_back(b->name.empty() ? "CPU thread " + std::to_string(b->tid) : b->name, std::move(b->events));
        host_tids.push_back(b->tid);
      }
      b->events.clear();
      b->session = 0;
    }
    tracks.swap(st.tracks);
    path = st.path;
    st.path.clear();
    st.from_env = false;
  }

  std::string out = "{\"traceEvents\":[\n";
  size_t count = 0;
  append_metadata(out, kHostPid, 0, "process_name", "ember host");
  if (!tracks.empty()) append_metadata(out, kDevicePid, 0, "process_name", "ember devices");
  for (size_t i = 0; i < host.size(); ++i) {
    append_metadata(out, kHostPid, host_tids[i], "thread_name", host[i].first);
    append_events(out, kHostPid, host_tids[i], host[i].second);
    count += host[i].second.size();
  }
  for (auto& [name, track] : tracks) {
    append_metadata(out, kDevicePid, track.tid, "thread_name", name);
    append_events(out, kDevicePid, track.tid, track.events);
    count += track.events.size();
  }
  out.resize(out.size() - 2);  // the last ",\n" (there is at least one metadata event)
  out += "\n],\"displayTimeUnit\":\"ms\"}\n";

  if (!write_file_atomically(path, out)) EMBER_FAIL("trace: cannot write ", path);
  return count;
}

void finish_env_session() {
  State& st = state();
  std::string path;
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (!st.from_env) return;
    path = st.path;
    id = g_session.load();
  }
  try {
    const size_t n = finish_session(id);
    std::fprintf(stderr, "ember: trace of %zu events written to %s (EMBER_TRACE)\n", n, path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember: EMBER_TRACE: %s\n", e.what());
  }
}

}  // namespace

bool detail::enabled_slow() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* path = std::getenv("EMBER_TRACE");
    if (path && *path) {
      try {
        start_session(path, true);
        std::atexit(finish_env_session);
        return;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "ember: EMBER_TRACE=%s: %s; not tracing\n", path, e.what());
      }
    }
    int unknown = 0;
    g_state.compare_exchange_strong(unknown, 1);
  });
  return g_state.load(std::memory_order_relaxed) == 2;
}

double now_us() {
  static const auto epoch = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - epoch).count();
}

uint64_t session_id() { return g_session.load(std::memory_order_acquire); }

Session::Session(std::string path) : path_(std::move(path)) {
  (void)enabled();  // EMBER_TRACE's session, if any, starts first (and makes this one an error)
  id_ = start_session(path_, false);
}

Session::~Session() {
  try {
    stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember: trace::Session: %s\n", e.what());
  }
}

void Session::stop() {
  if (stopped_) return;
  stopped_ = true;
  finish_session(id_);
}

void Scope::begin(const char* category, std::string_view name, std::string args) {
  const uint64_t sid = g_session.load(std::memory_order_acquire);
  if (sid == 0) return;
  ThreadBuffer& b = my_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  if (b.session != sid) {
    b.events.clear();
    b.session = sid;
  }
  slot_ = int64_t(b.events.size());
  session_ = sid;
  b.events.push_back({category, std::string(name), std::move(args), 0.0, -1.0});
  b.events.back().start_us = now_us();  // taken last: the bookkeeping is not part of the event
}

void Scope::end() {
  const double t = now_us();
  ThreadBuffer& b = my_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  if (b.session == session_ && size_t(slot_) < b.events.size()) {
    Event& e = b.events[size_t(slot_)];
    e.dur_us = t - e.start_us;
  }
  slot_ = -1;
}

void add_complete(std::string_view track, const char* category, std::string_view name, double start_us,
                  double dur_us, std::string args) {
  if (g_session.load(std::memory_order_acquire) == 0) return;
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (g_session.load() == 0) return;
  auto it = st.tracks.find(track);
  if (it == st.tracks.end()) {
    it = st.tracks.emplace(std::string(track), Track{}).first;
    it->second.tid = st.next_track++;
  }
  it->second.events.push_back({category, std::string(name), std::move(args), start_us, dur_us});
}

void set_thread_name(std::string name) {
  ThreadBuffer& b = my_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  b.name = std::move(name);
}

void on_flush(std::function<void()> hook) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.hooks.push_back(std::move(hook));
}

}  // namespace ember::trace
