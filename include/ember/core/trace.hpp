// The trace profiler: host scopes (ops, kernels, fused groups) and device intervals (CUDA kernel
// times) recorded into one Chrome trace file, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open. docs/profiling.md shows it in use.
//
//   # DynTensor x = DynTensor::zeros({4});
//   {
//     ember::trace::Session session("trace.json");   // records until the end of the block
//     auto y = (x + 1).exp();                          // "op" and "kernel" events per op
//   }                                                  // trace.json written here (atomically)
// The same for the whole process, from its start to its end:
//   EMBER_TRACE=trace.json ./my_program
//
// Nothing is recorded while no session is running, and a Scope then costs one relaxed atomic
// load and a branch. Recording is thread-safe: each thread appends to its own buffer (its own
// track in the trace), and the buffers are merged when the file is written.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ember::trace {

namespace detail {
// 0: EMBER_TRACE not looked at yet; 1: not recording; 2: recording.
extern std::atomic<int> g_state;
bool enabled_slow();  // reads EMBER_TRACE once (starting its session) and answers enabled()
}  // namespace detail

// Whether a session is recording. The first call reads EMBER_TRACE.
inline bool enabled() {
  const int s = detail::g_state.load(std::memory_order_relaxed);
  return s == 2 || (s == 0 && detail::enabled_slow());
}

// Microseconds on the trace's clock (steady_clock; zero at the first use of the profiler).
double now_us();

// The running session's number (1, 2, ... in order of start); 0 when none runs. A recorder that
// keeps per-session state (a clock reference) compares it to see a new session.
uint64_t session_id();

// Records a trace while it lives and writes it to `path` when destroyed (or at stop()): written
// to a temporary file beside it and renamed, so a reader never sees half a file. One session at
// a time per process: a second one while another records (EMBER_TRACE's included) throws
// ember::Error.
class Session {
 public:
  // Starts recording, to be written to `path`; throws ember::Error when a session already runs.
  explicit Session(std::string path);
  ~Session();  // stop(), reporting a failed write to stderr (a destructor does not throw)
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Ends recording and writes the file; throws ember::Error when it cannot be written.
  void stop();
  const std::string& path() const { return path_; }  // the file the trace goes to

 private:
  std::string path_;
  uint64_t id_ = 0;
  bool stopped_ = false;
};

// A host event on the calling thread's track: from construction to destruction, a Chrome
// "complete" event. `category` must outlive the program (a string literal: "op", "kernel",
// "fused", "user"); `args` is free text shown in the event's details (shapes, dtypes).
// Scopes on one thread nest as the blocks do.
//
//   trace::Scope s("user", "load batch");
//   trace::Scope s("op", "add", [&] { return describe(inputs); });  // args built only when on
//   trace::Scope s("fused", [&] { return std::pair(kernel_name(p), p.describe()); });  // both
class Scope {
 public:
  // An event `name` with no args.
  Scope(const char* category, std::string_view name) {
    if (enabled()) [[unlikely]]
      begin(category, name, {});
  }
  // An event `name` with `args` (built by the caller even when nothing records).
  Scope(const char* category, std::string_view name, std::string args) {
    if (enabled()) [[unlikely]]
      begin(category, name, std::move(args));
  }
  // An event `name` whose args make_args() builds only while a session records.
  template <class MakeArgs>
    requires std::is_invocable_r_v<std::string, MakeArgs>
  Scope(const char* category, std::string_view name, MakeArgs&& make_args) {
    if (enabled()) [[unlikely]]
      begin(category, name, std::forward<MakeArgs>(make_args)());
  }
  // name and args both built only when on: make_event() returns {name, args}
  template <class MakeEvent>
    requires std::is_invocable_r_v<std::pair<std::string, std::string>, MakeEvent>
  Scope(const char* category, MakeEvent&& make_event) {
    if (enabled()) [[unlikely]] {
      auto [name, args] = std::forward<MakeEvent>(make_event)();
      begin(category, name, std::move(args));
    }
  }
  ~Scope() {
    if (slot_ >= 0) [[unlikely]]
      end();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void begin(const char* category, std::string_view name, std::string args);
  void end();
  int64_t slot_ = -1;     // the open event's index in this thread's buffer
  uint64_t session_ = 0;  // the session it belongs to
};

// Adds a finished event with explicit times (now_us() clock) on a named track, e.g. a kernel's
// GPU interval measured with CUDA events on "cuda:0 stream". Dropped when no session records.
void add_complete(std::string_view track, const char* category, std::string_view name, double start_us,
                  double dur_us, std::string args = {});

// Names the calling thread's track ("CPU thread N" by default, N in order of first event).
void set_thread_name(std::string name);

// Registers a function that moves pending events (measured asynchronously, such as GPU event
// pairs) into the trace with add_complete(); every session calls the hooks before it writes.
// Hooks live until the process ends.
void on_flush(std::function<void()> hook);

}  // namespace ember::trace
