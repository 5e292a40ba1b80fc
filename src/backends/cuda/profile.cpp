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

namespace ember::cuda {

namespace {

thread_local int t_depth = 0;  // ops in progress on this thread (only the outermost is timed)

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
  };
  std::mutex mu;
  std::unordered_map<std::string, int> index;
  std::vector<std::string> keys;
  std::vector<Stat> stats;
  std::vector<Pending> pending;
  std::map<int, std::vector<cudaEvent_t>> pool;  // free events per device

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
  // Waits for the recorded events and adds their times (mu held).
  void drain() {
    for (const Pending& p : pending) {
      float ms = 0;
      if (cudaEventSynchronize(p.end) == cudaSuccess && cudaEventElapsedTime(&ms, p.start, p.end) == cudaSuccess) {
        Stat& st = stats[size_t(p.key)];
        if (st.calls++ == 0) st.first_ms = ms;
        st.ms += ms;
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
      const double rest = s.calls > 1 ? (s.ms - s.first_ms) * 1e3 / double(s.calls - 1) : 0.0;
      std::fprintf(stderr, "%12.3f %8lld %11.1f %11.2f %5.1f%%  %s\n", s.ms, static_cast<long long>(s.calls),
                   s.first_ms * 1e3, rest, total > 0 ? 100 * s.ms / total : 0.0, keys[size_t(order[r])].c_str());
    }
  }
};

OpProfiler* OpProfiler::get() {
  static OpProfiler* p = [] () -> OpProfiler* {
    const char* e = std::getenv("EMBER_CUDA_PROFILE");
    if (!e || std::string(e) != "1") return nullptr;
    auto* prof = new OpProfiler();  // (lives until exit: the report runs from atexit)
    prof->impl_ = new Impl();
    std::atexit([] { get()->impl_->report(); });
    return prof;
  }();
  return p;
}

OpProfiler::Scope::Scope(const Op& op, cudaStream_t stream) : prof_(get()), stream_(stream) {
  if (prof_) mark_ = prof_->begin(op, stream);
}

OpProfiler::Scope::~Scope() {
  if (prof_) prof_->end(mark_, stream_);
}

OpProfiler::Mark OpProfiler::begin(const Op& op, cudaStream_t stream) {
  Mark m;
  if (t_depth++ > 0) return m;
  int device = 0;
  (void)cudaGetDevice(&device);
  std::string key = profile_key(op);
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto [it, fresh] = impl_->index.try_emplace(std::move(key), int(impl_->keys.size()));
  if (fresh) {
    impl_->keys.push_back(it->first);
    impl_->stats.emplace_back();
  }
  m.key = it->second;
  m.start = impl_->event(device);
  if (m.start) (void)cudaEventRecord(m.start, stream);
  return m;
}

void OpProfiler::end(const Mark& m, cudaStream_t stream) {
  --t_depth;
  if (m.key < 0 || !m.start) return;
  int device = 0;
  (void)cudaGetDevice(&device);
  std::lock_guard<std::mutex> lock(impl_->mu);
  cudaEvent_t e = impl_->event(device);
  if (!e) return;
  (void)cudaEventRecord(e, stream);
  impl_->pending.push_back({m.start, e, m.key, device});
  if (impl_->pending.size() >= 4096) impl_->drain();
}

}  // namespace ember::cuda
