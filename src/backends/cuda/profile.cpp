#include "profile.hpp"

#include "cuda_tensor.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "ember/core/trace.hpp"

namespace ember::cuda {

namespace {

thread_local int t_depth = 0;  // ops in progress on this thread (only the outermost is timed)

OpProfiler* g_profiler = nullptr;  // set once by OpProfiler::get()

}  // namespace

std::string profile_key(const Op& op) {
  std::ostringstream os;
  os << op.name();
  bool first = true;
  for (const auto& p : op.inputs) {
    if (!p) continue;
    const auto& t = static_cast<const CudaTensor&>(*p);
    os << (first ? " " : ", ");
    if (first) os << dtype_name(t.dtype()) << ' ';
    first = false;
    os << t.shape();
    if (!t.is_contiguous()) os << "(strided)";
  }
  os << " ->";
  for (const auto& m : op.outputs) os << ' ' << m.shape;
  return os.str();
}

struct OpProfiler::Impl {
  struct Stat {
    int64_t calls = 0;
    double ms = 0;
    double first_ms = 0;  // the first call alone (JIT compilation, library plans, autotuning)
  };
  struct Pending {
    cudaEvent_t start, end;
    int key, device;
    uint64_t session;    // the trace session the interval goes to; 0: none
    std::string detail;  // the trace event's detail when not the key
  };
  // A device's clock reference for the trace: an event the GPU passed at host time host_us.
  struct Reference {
    cudaEvent_t event = nullptr;
    double host_us = 0;
    uint64_t session = 0;  // the trace session it was taken for
  };
  bool table = false;  // EMBER_CUDA_PROFILE=1: the table at exit
  std::mutex mu;
  std::unordered_map<std::string, int> index;
  std::vector<std::string> keys;
  std::vector<std::string> names;  // per key: the trace event's name
  std::vector<Stat> stats;
  std::vector<Pending> pending;
  std::unordered_map<cudaEvent_t, std::string> details;  // start event -> detail, while in flight
  std::map<int, std::vector<cudaEvent_t>> pool;         // free events per device
  std::map<int, Reference> references;

  cudaEvent_t event(int device) {
    auto& free = pool[device];
    if (!free.empty()) {
      cudaEvent_t e = free.back();
      free.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    if (cudaEventCreate(&e) != cudaSuccess) return nullptr;
    return e;
  }
  // Takes `device`'s clock reference for trace session `session` once (mu held): the one wait
  // of a session, for the work already queued on `stream`.
  bool reference(int device, uint64_t session, cudaStream_t stream) {
    Reference& r = references[device];
    if (r.session == session) return true;
    if (!r.event && cudaEventCreate(&r.event) != cudaSuccess) return (r.event = nullptr), false;
    if (cudaEventRecord(r.event, stream) != cudaSuccess || cudaEventSynchronize(r.event) != cudaSuccess) return false;
    r.host_us = trace::now_us();
    r.session = session;
    return true;
  }
  // Waits for the recorded events and adds their times to the table and the trace (mu held).
  void drain() {
    const uint64_t session = pending.empty() ? 0 : trace::session_id();
    for (Pending& p : pending) {
      float ms = 0;
      if (cudaEventSynchronize(p.end) == cudaSuccess && cudaEventElapsedTime(&ms, p.start, p.end) == cudaSuccess) {
        if (table) {
          Stat& st = stats[size_t(p.key)];
          if (st.calls++ == 0) st.first_ms = ms;
          st.ms += ms;
        }
        const Reference& r = references[p.device];
        float offset_ms = 0;
        if (p.session != 0 && p.session == session && r.session == session &&
            cudaEventElapsedTime(&offset_ms, r.event, p.start) == cudaSuccess) {
          trace::add_complete("cuda:" + std::to_string(p.device) + " stream", "gpu", names[size_t(p.key)],
                              r.host_us + double(offset_ms) * 1e3, double(ms) * 1e3,
                              p.detail.empty() ? keys[size_t(p.key)] : std::move(p.detail));
        }
      }
      pool[p.device].push_back(p.start);
      pool[p.device].push_back(p.end);
    }
    pending.clear();
  }
  void report() {
    std::lock_guard<std::mutex> lock(mu);
    drain();
    std::vector<int> order(stats.size());
    double total = 0;
    for (size_t i = 0; i < stats.size(); ++i) order[i] = int(i), total += stats[i].ms;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return stats[size_t(a)].ms > stats[size_t(b)].ms; });
    std::fprintf(stderr, "\nember CUDA op profile (EMBER_CUDA_PROFILE=1): %.3f ms of GPU time in %zu signatures\n",
                 total, stats.size());
    std::fprintf(stderr,
                 "(sorted by total; 'first' is the first call alone, which pays for JIT compilation, library\n"
                 " plans and autotuning; 'us / call' is the mean of the other calls)\n");
    std::fprintf(stderr, "%12s %8s %11s %11s %6s  %s\n", "total ms", "calls", "first us", "us / call", "share",
                 "op, input shapes -> output shapes");
    for (size_t r = 0; r < order.size() && r < 60; ++r) {
      const Stat& s = stats[size_t(order[r])];
      if (s.calls == 0) continue;  // timed for the trace only
      const double rest = s.calls > 1 ? (s.ms - s.first_ms) * 1e3 / double(s.calls - 1) : 0.0;
      std::fprintf(stderr, "%12.3f %8lld %11.1f %11.2f %5.1f%%  %s\n", s.ms, static_cast<long long>(s.calls),
                   s.first_ms * 1e3, rest, total > 0 ? 100 * s.ms / total : 0.0, keys[size_t(order[r])].c_str());
    }
  }
};

OpProfiler* OpProfiler::get() {
  static const bool table = [] {
    const char* e = std::getenv("EMBER_CUDA_PROFILE");
    return e && std::string(e) == "1";
  }();
  if (!table && !trace::enabled()) [[likely]]
    return nullptr;
  static OpProfiler* p = [] {
    auto* prof = new OpProfiler();  // (lives until exit: the report and the trace's flush use it)
    prof->impl_ = new Impl();
    prof->impl_->table = table;
    g_profiler = prof;
    // First at exit (registered after the CUDA runtime started): the pending intervals go to an
    // EMBER_TRACE session, and the table is printed, while the runtime can still read events.
    std::atexit([] { g_profiler->flush(); });
    if (table) std::atexit([] { g_profiler->impl_->report(); });
    trace::on_flush([] { g_profiler->flush(); });
    return prof;
  }();
  return p;
}

void OpProfiler::flush() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->drain();
}

OpProfiler::Mark OpProfiler::begin(const Op& op, cudaStream_t stream) {
  if (t_depth > 0) {  // nested: no signature needed
    ++t_depth;
    return {};
  }
  return begin(Label{std::string(op.name()), profile_key(op), {}}, stream);
}

OpProfiler::Mark OpProfiler::begin(Label label, cudaStream_t stream) {
  Mark m;
  if (t_depth++ > 0) return m;
  const uint64_t session = trace::session_id();
  if (!impl_->table && session == 0) return m;  // the trace session ended in between
  (void)cudaGetDevice(&m.device);
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (session != 0 && impl_->reference(m.device, session, stream)) m.session = session;
  auto [it, fresh] = impl_->index.try_emplace(std::move(label.key), int(impl_->keys.size()));
  if (fresh) {
    impl_->keys.push_back(it->first);
    impl_->names.push_back(std::move(label.name));
    impl_->stats.emplace_back();
  }
  m.key = it->second;
  m.start = impl_->event(m.device);
  if (!m.start) return m;
  (void)cudaEventRecord(m.start, stream);
  if (m.session != 0 && !label.detail.empty()) impl_->details[m.start] = std::move(label.detail);
  return m;
}

void OpProfiler::end(const Mark& m, cudaStream_t stream) {
  --t_depth;
  if (m.key < 0 || !m.start) return;
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::string detail;
  if (auto it = impl_->details.find(m.start); it != impl_->details.end()) {
    detail = std::move(it->second);
    impl_->details.erase(it);
  }
  cudaEvent_t e = impl_->event(m.device);
  if (!e) {
    impl_->pool[m.device].push_back(m.start);
    return;
  }
  (void)cudaEventRecord(e, stream);
  impl_->pending.push_back({m.start, e, m.key, m.device, m.session, std::move(detail)});
  if (impl_->pending.size() >= 4096) impl_->drain();
}

}  // namespace ember::cuda
