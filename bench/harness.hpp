// The benchmark harness shared by the ember-vs-peer benchmark programs (bench_cpu.cpp, later
// bench_cuda.cpp): interleaved adaptive timing, numeric checks, the JSON report and the
// markdown table. It knows nothing about ember or the peer library: a benchmark hands it two
// callables that each run the operation once.
//
//   bench::Runner run(opts);
//   bench::Entry& e = run.compare("matmul_f32_1024", "libtorch",
//       [&] { bench::keep(ember::matmul(a, b)); },
//       [&] { bench::keep(at::matmul(ta, tb)); },
//       [&] { return check_close(ember::matmul(a, b), at::matmul(ta, tb), {.rtol = 1e-4}); });
//   if (e.ember_ms) e.set("gflops_ember", flop / *e.ember_ms * 1e-6);
//   run.write_json("build/reports/bench-cpu.json");
//   run.print_table(std::cout);
//
// Methodology (docs/benchmarks.md): each side is warmed up, then calibrated so that one sample
// (a loop of `reps` calls) lasts at least `min_sample_ms`; samples of the two sides alternate
// (ember, peer, peer, ember, ...) so that machine noise hits both alike; the reported time is
// the median over samples of (sample time / reps).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace bench {

// Keeps a value (and whatever computed it) from being optimised away.
template <class T>
inline void keep(const T& value) {
  asm volatile("" : : "g"(&value) : "memory");
}

// A JSON scalar: null, bool, number or string.
using JsonValue = std::variant<std::nullptr_t, bool, double, std::string>;

// Outcome of comparing the two sides' results once.
struct Check {
  bool ok = false;
  double max_abs_diff = 0;  // over all elements
  std::string detail;       // the first mismatch, or why the check could not run
};

// Elementwise tolerance: |got - ref| <= atol + atol_of_max * max|ref| + rtol * |ref|.
// NaN must meet NaN; infinities must match exactly.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
  double atol_of_max = 0;
};
Check compare_values(const float* got, const float* ref, int64_t n, Tolerance tol);

// One benchmark's result: an ordered list of JSON fields. The first five are always
// name, ember_ms, peer, peer_ms, ratio (ratio = peer_ms / ember_ms; > 1 means ember is faster).
struct Entry {
  std::string name;
  std::string peer;
  std::optional<double> ember_ms, peer_ms;
  std::string check;                  // "ok", "mismatch", or "" (not checked)
  std::optional<std::string> error;   // the ember side threw
  std::optional<std::string> peer_error;
  std::vector<std::pair<std::string, JsonValue>> extra;  // in insertion order

  std::optional<double> ratio() const;
  void set(const std::string& key, JsonValue v);  // adds or replaces an extra field
  const JsonValue* get(const std::string& key) const;
  std::optional<double> number(const std::string& key) const;
};

struct Options {
  double min_sample_ms = 20;     // one sample (a loop of reps calls) lasts at least this long
  double budget_s = 2.5;         // target timing time per benchmark (both sides together)
  int min_samples = 3;           // per side, whatever the budget
  int max_samples = 25;          // per side
  std::string filter;            // run only benchmarks whose name contains one of these
                                 // comma-separated substrings (empty: all)
  bool verbose = true;           // progress lines on stderr
};

class Runner {
 public:
  using Fn = std::function<void()>;
  using CheckFn = std::function<Check()>;

  explicit Runner(Options o) : opt_(std::move(o)) {}

  // Whether `name` passes the filter (benchmarks call this before an expensive setup).
  bool selected(const std::string& name) const;

  // Checks once, then times `ember_fn` against `peer_fn`. `ember_sync` / `peer_sync` (optional)
  // are called at the end of every timed sample, inside the timed region, so asynchronous
  // backends are measured to completion. Exceptions from either side are recorded in the
  // entry (error / peer_error) and that side is not timed; the run continues.
  Entry& compare(const std::string& name, const std::string& peer, const Fn& ember_fn, const Fn& peer_fn,
                 const CheckFn& check = {}, const Fn& ember_sync = {}, const Fn& peer_sync = {});

  // Adds an entry computed by the caller (e.g. a machine measurement).
  Entry& add(Entry e);
  // Records a benchmark whose setup failed before compare() could run.
  Entry& fail(const std::string& name, const std::string& peer, const std::string& error);

  // Stable references: entries are never moved once added.
  const std::deque<Entry>& entries() const { return entries_; }
  const Options& options() const { return opt_; }

  void write_json(const std::string& path) const;
  // The markdown table. `extra_column(e)` returns the text of the "notes" column.
  void print_table(std::ostream& os, const std::function<std::string(const Entry&)>& extra_column = {}) const;

 private:
  Options opt_;
  std::deque<Entry> entries_;
};

// ---- helpers ----
double now_ms();                      // steady clock, milliseconds
std::string format_ms(double ms);     // "412 us", "3.21 ms", "1.20 s"
std::string format_num(double v, int sig = 3);
std::string json_escape(const std::string& s);
double median(std::vector<double> v);
std::string cpu_model_name();         // from /proc/cpuinfo, or "unknown"

}  // namespace bench
