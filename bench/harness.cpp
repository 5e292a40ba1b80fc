#include "harness.hpp"

#include "ember/core/json_escape.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace bench {

// ---------------------------------------------------------------- helpers

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

std::string format_num(double v, int sig) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  const double a = std::fabs(v);
  // Fixed notation with `sig` significant digits for the usual range, no exponent.
  int decimals = 0;
  if (a > 0) decimals = std::max(0, sig - 1 - static_cast<int>(std::floor(std::log10(a))));
  decimals = std::min(decimals, 6);
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string format_ms(double ms) {
  if (!std::isfinite(ms)) return "-";
  if (ms < 1.0) return format_num(ms * 1000.0) + " us";
  if (ms < 1000.0) return format_num(ms) + " ms";
  return format_num(ms / 1000.0) + " s";
}

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  ember::append_json_escaped(out, s);
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) {
        auto s = line.substr(p + 1);
        s.erase(0, s.find_first_not_of(" \t"));
        return s;
      }
    }
  }
  return "unknown";
}

// ---------------------------------------------------------------- checks

Check compare_values(const float* got, const float* ref, int64_t n, Tolerance tol) {
  Check c;
  double max_ref = 0;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(ref[i])) max_ref = std::max(max_ref, std::fabs(double(ref[i])));
  const double atol = tol.atol + tol.atol_of_max * max_ref;
  c.ok = true;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double g = got[i], r = ref[i];
    bool fine;
    if (std::isnan(r) || std::isnan(g)) {
      fine = std::isnan(r) && std::isnan(g);
    } else if (std::isinf(r) || std::isinf(g)) {
      fine = g == r;
    } else {
      const double d = std::fabs(g - r);
      c.max_abs_diff = std::max(c.max_abs_diff, d);
      fine = d <= atol + tol.rtol * std::fabs(r);
    }
    if (!fine) {
      if (bad == 0) {
        std::ostringstream os;
        os.precision(9);
        os << "element " << i << ": ember " << g << " vs peer " << r << " (atol " << atol << ", rtol " << tol.rtol
           << ")";
        c.detail = os.str();
      }
      ++bad;
      c.ok = false;
    }
  }
  if (bad > 1) c.detail += " and " + std::to_string(bad - 1) + " more of " + std::to_string(n);
  return c;
}

// ---------------------------------------------------------------- entries

std::optional<double> Entry::ratio() const {
  if (!ember_ms || !peer_ms || *ember_ms <= 0) return std::nullopt;
  return *peer_ms / *ember_ms;
}

void Entry::set(const std::string& key, JsonValue v) {
  for (auto& [k, val] : extra)
    if (k == key) {
      val = std::move(v);
      return;
    }
  extra.emplace_back(key, std::move(v));
}

const JsonValue* Entry::get(const std::string& key) const {
  for (auto& [k, val] : extra)
    if (k == key) return &val;
  return nullptr;
}

std::optional<double> Entry::number(const std::string& key) const {
  const JsonValue* v = get(key);
  if (v && std::holds_alternative<double>(*v)) return std::get<double>(*v);
  return std::nullopt;
}

// ---------------------------------------------------------------- runner

namespace {

std::string what_of(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

// Runs fn `reps` times (then sync once) and returns the elapsed milliseconds.
double timed_loop(const Runner::Fn& fn, const Runner::Fn& sync, int64_t reps) {
  const double t0 = now_ms();
  for (int64_t i = 0; i < reps; ++i) fn();
  if (sync) sync();
  return now_ms() - t0;
}

// Per-call time estimate from loops grown until one lasts about `target_ms`.
double calibrate(const Runner::Fn& fn, const Runner::Fn& sync, double target_ms) {
  int64_t n = 1;
  for (;;) {
    const double t = timed_loop(fn, sync, n);
    if (t >= 0.5 * target_ms || n >= (int64_t(1) << 30)) return t / double(n);
    const double grow = std::clamp(target_ms / std::max(t, 1e-4), 2.0, 100.0);
    n = static_cast<int64_t>(std::ceil(double(n) * grow));
  }
}

std::string first_line(const std::string& s, size_t max_len = 160) {
  std::string out = s.substr(0, s.find('\n'));
  if (out.size() > max_len) out = out.substr(0, max_len - 3) + "...";
  return out;
}

}  // namespace

bool Runner::selected(const std::string& name) const {
  if (opt_.filter.empty()) return true;
  std::stringstream ss(opt_.filter);
  for (std::string part; std::getline(ss, part, ',');)
    if (!part.empty() && name.find(part) != std::string::npos) return true;
  return false;
}

Entry& Runner::add(Entry e) {
  entries_.push_back(std::move(e));
  return entries_.back();
}

Entry& Runner::fail(const std::string& name, const std::string& peer, const std::string& error) {
  Entry e;
  e.name = name;
  e.peer = peer;
  e.error = first_line(error, 400);
  if (opt_.verbose) std::cerr << "  " << name << ": setup failed: " << *e.error << "\n";
  return add(std::move(e));
}

Entry& Runner::compare(const std::string& name, const std::string& peer, const Fn& ember_fn, const Fn& peer_fn,
                       const CheckFn& check, const Fn& ember_sync, const Fn& peer_sync) {
  Entry e;
  e.name = name;
  e.peer = peer;
  if (opt_.verbose) std::cerr << "  " << name << " ..." << std::flush;

  // Warm-up (first calls pay for allocator growth, page faults, lazy initialisation), one call
  // each; a side that throws here is reported and not timed.
  bool ember_ok = true, peer_ok = true;
  try {
    ember_fn();
    if (ember_sync) ember_sync();
  } catch (...) {
    ember_ok = false;
    e.error = first_line(what_of(std::current_exception()), 400);
  }
  try {
    peer_fn();
    if (peer_sync) peer_sync();
  } catch (...) {
    peer_ok = false;
    e.peer_error = first_line(what_of(std::current_exception()), 400);
  }

  // Numeric agreement, once.
  if (check && ember_ok && peer_ok) {
    try {
      Check c = check();
      e.check = c.ok ? "ok" : "mismatch";
      e.set("max_abs_diff", c.max_abs_diff);
      if (!c.ok) e.set("check_detail", first_line(c.detail, 400));
    } catch (...) {
      e.check = "error";
      e.set("check_detail", first_line(what_of(std::current_exception()), 400));
    }
  }

  // Calibration: calls per sample so that one sample lasts >= min_sample_ms.
  double per_e = 0, per_p = 0;
  int64_t reps_e = 0, reps_p = 0;
  auto reps_for = [&](double per_call) {
    return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(opt_.min_sample_ms / std::max(per_call, 1e-7))));
  };
  if (ember_ok) {
    try {
      per_e = calibrate(ember_fn, ember_sync, opt_.min_sample_ms);
      reps_e = reps_for(per_e);
    } catch (...) {
      ember_ok = false;
      e.error = first_line(what_of(std::current_exception()), 400);
    }
  }
  if (peer_ok) {
    try {
      per_p = calibrate(peer_fn, peer_sync, opt_.min_sample_ms);
      reps_p = reps_for(per_p);
    } catch (...) {
      peer_ok = false;
      e.peer_error = first_line(what_of(std::current_exception()), 400);
    }
  }

  // Interleaved samples: E P | P E | E P | ... within the time budget.
  const double round_ms = (ember_ok ? double(reps_e) * per_e : 0) + (peer_ok ? double(reps_p) * per_p : 0);
  int samples = opt_.min_samples;
  if (round_ms > 0)
    samples = static_cast<int>(std::clamp(opt_.budget_s * 1000.0 / round_ms, double(opt_.min_samples),
                                          double(opt_.max_samples)));
  std::vector<double> te, tp;
  for (int s = 0; s < samples && (ember_ok || peer_ok); ++s) {
    for (int k = 0; k < 2; ++k) {
      const bool ember_turn = (s % 2 == 0) == (k == 0);
      try {
        if (ember_turn && ember_ok) te.push_back(timed_loop(ember_fn, ember_sync, reps_e) / double(reps_e));
        if (!ember_turn && peer_ok) tp.push_back(timed_loop(peer_fn, peer_sync, reps_p) / double(reps_p));
      } catch (...) {
        (ember_turn ? ember_ok : peer_ok) = false;
        (ember_turn ? e.error : e.peer_error) = first_line(what_of(std::current_exception()), 400);
      }
    }
  }
  if (ember_ok && !te.empty()) e.ember_ms = median(te);
  if (peer_ok && !tp.empty()) e.peer_ms = median(tp);
  e.set("samples", double(samples));

  if (opt_.verbose) {
    std::cerr << " ember " << (e.ember_ms ? format_ms(*e.ember_ms) : "error") << ", " << peer << " "
              << (e.peer_ms ? format_ms(*e.peer_ms) : "error");
    if (auto r = e.ratio()) std::cerr << ", ratio " << format_num(*r) << "x";
    if (!e.check.empty()) std::cerr << " [" << e.check << "]";
    std::cerr << "\n";
    if (e.error) std::cerr << "    ember error: " << *e.error << "\n";
    if (e.peer_error) std::cerr << "    " << peer << " error: " << *e.peer_error << "\n";
    if (const JsonValue* d = e.get("check_detail")) std::cerr << "    check: " << std::get<std::string>(*d) << "\n";
  }
  return add(std::move(e));
}

// ---------------------------------------------------------------- output

namespace {

void write_json_value(std::ostream& os, const JsonValue& v) {
  if (std::holds_alternative<std::nullptr_t>(v)) {
    os << "null";
  } else if (auto* b = std::get_if<bool>(&v)) {
    os << (*b ? "true" : "false");
  } else if (auto* d = std::get_if<double>(&v)) {
    if (!std::isfinite(*d)) {
      os << "null";
    } else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.6g", *d);
      os << buf;
    }
  } else {
    os << '"' << json_escape(std::get<std::string>(v)) << '"';
  }
}

JsonValue opt_num(const std::optional<double>& v) {
  if (v) return *v;
  return nullptr;
}

}  // namespace

void Runner::write_json(const std::string& path) const {
  std::ofstream os(path);
  if (!os) throw std::runtime_error("cannot write " + path);
  os << "[\n";
  bool first_entry = true;
  for (const Entry& e : entries_) {
    os << (first_entry ? "  {" : ",\n  {");
    first_entry = false;
    std::vector<std::pair<std::string, JsonValue>> fields = {
        {"name", e.name}, {"ember_ms", opt_num(e.ember_ms)}, {"peer", e.peer},
        {"peer_ms", opt_num(e.peer_ms)}, {"ratio", opt_num(e.ratio())}};
    if (!e.check.empty()) fields.emplace_back("check", e.check);
    for (auto& f : e.extra) fields.push_back(f);
    if (e.error) fields.emplace_back("error", *e.error);
    if (e.peer_error) fields.emplace_back("peer_error", *e.peer_error);
    bool first = true;
    for (auto& [k, v] : fields) {
      os << (first ? "" : ", ") << '"' << json_escape(k) << "\": ";
      first = false;
      write_json_value(os, v);
    }
    os << "}";
  }
  os << "\n]\n";
  if (!os) throw std::runtime_error("error writing " + path);
}

void Runner::print_table(std::ostream& os, const std::function<std::string(const Entry&)>& extra_column) const {
  const std::string peer = entries_.empty() ? std::string("peer") : entries_.front().peer;
  os << "| benchmark | ember | " << peer << " | ratio | notes | check |\n";
  os << "|---|---:|---:|---:|---|---|\n";
  for (const Entry& e : entries_) {
    std::string notes = extra_column ? extra_column(e) : std::string();
    auto add_note = [&](const std::string& s) { notes += (notes.empty() ? "" : "; ") + s; };
    if (e.error) add_note("ember error: " + first_line(*e.error, 80));
    if (e.peer_error) add_note(e.peer + " error: " + first_line(*e.peer_error, 80));
    std::string ratio = "-";
    if (auto r = e.ratio()) ratio = format_num(*r) + "x";
    // '|' inside a cell would break the table.
    std::replace(notes.begin(), notes.end(), '|', '/');
    os << "| " << e.name << " | " << (e.ember_ms ? format_ms(*e.ember_ms) : (e.error ? "error" : "-")) << " | "
       << (e.peer_ms ? format_ms(*e.peer_ms) : (e.peer_error ? "error" : "-")) << " | " << ratio << " | " << notes
       << " | " << (e.check.empty() ? "-" : e.check) << " |\n";
  }
}

}  // namespace bench
