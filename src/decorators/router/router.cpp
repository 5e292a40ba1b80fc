// The router decorator: every primitive above it is a RoutedTensor, which knows the backend its
// value lives on (its home) and keeps the copies other backends were given, so that an input is
// moved once, not once per op that reads it elsewhere. A tensor written from the host is held
// there until the first op that reads it picks a backend.
#include "ember/decorators/router.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>

#include "ember/core/error.hpp"

namespace ember::router {

namespace {

// Host values not yet placed on a backend: either owned values, or borrowed bytes (wrap_bytes).
struct HostValue {
  std::shared_ptr<const TensorData> data;  // owned values (write, write_bytes)
  std::span<const std::byte> bytes;        // else borrowed ones, kept alive by owner
  std::shared_ptr<const void> owner;
};

class RoutedTensor final : public Primitive {
 public:
  RoutedTensor(TensorMeta meta, int h, PrimitivePtr v) : Primitive(std::move(meta)), home(h) {
    copies.resize(size_t(h) + 1);
    copies[size_t(h)] = std::move(v);
  }
  RoutedTensor(TensorMeta meta, HostValue hv) : Primitive(std::move(meta)), host(std::move(hv)) {}
  // Guarded by the router's mutex:
  int home = -1;                      // the backend the value was computed on (or placed on); -1: host
  std::vector<PrimitivePtr> copies;   // per backend index: its copy of the value, or null
  HostValue host;                     // while home == -1
};

RoutedTensor& rt(const PrimitivePtr& p) { return static_cast<RoutedTensor&>(*p); }

int64_t dense_bytes(const TensorMeta& m) {
  for (int64_t d : m.shape.dims())
    if (d < 0) return 0;
  return m.shape.numel() * int64_t(dtype_size(m.dtype));
}

// EMBER_LOG lists the topics to print ("router", "fusion,router"). Read at each transfer, not
// cached, so that a test can turn it on after the first op.
bool log_router() {
  const char* e = std::getenv("EMBER_LOG");
  return e && std::string(e).find("router") != std::string::npos;
}

class RouterBackend final : public Backend {
 public:
  RouterBackend(std::vector<std::shared_ptr<Backend>> backends, Policy policy)
      : backends_(std::move(backends)), policy_(std::move(policy)) {
    EMBER_CHECK(!backends_.empty(), "Device::router: no devices given; pass at least one (e.g. {Device::cpu()})");
    for (size_t i = 0; i < backends_.size(); ++i) {
      EMBER_CHECK(backends_[i] != nullptr, "Device::router: device ", i, " is null");
      for (size_t j = 0; j < i; ++j)
        EMBER_CHECK(backends_[j] != backends_[i], "Device::router: device ", i, " (", backends_[i]->name(),
                    ") is device ", j, " again; a second CPU backend is Device(cpu::make_backend())");
      std::string n = backends_[i]->name();
      bool repeated = false;
      for (size_t j = 0; j < backends_.size(); ++j) repeated |= j != i && backends_[j]->name() == n;
      names_.push_back(repeated ? n + "#" + std::to_string(i) : n);
    }
    std::string all;
    for (const auto& n : names_) all += (all.empty() ? "" : ", ") + n;
    name_ = "router(" + all + ")";
    stats_.ops_per_backend.assign(backends_.size(), 0);
  }

  std::string name() const override { return name_; }

  std::vector<PrimitivePtr> execute(Op op) override {
    const size_t target = choose(op);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& p : op.inputs)
        if (p) p = value_on(p, target, op);
      ++stats_.ops_per_backend[target];
    }
    std::vector<PrimitivePtr> outs = backends_[target]->execute(std::move(op));
    for (auto& o : outs)
      if (o) o = std::make_shared<RoutedTensor>(o->meta(), int(target), std::move(o));
    return outs;
  }

  TensorData read(const PrimitivePtr& p) override {
    auto [backend, value, host] = where(p);
    if (!backend) return host.data ? *host.data : TensorData(p->shape(), p->dtype(), {host.bytes.begin(), host.bytes.end()});
    return backend->read(value);
  }
  PrimitivePtr write(const TensorData& data) override {
    return std::make_shared<RoutedTensor>(TensorMeta{data.shape(), data.dtype()},
                                          HostValue{std::make_shared<const TensorData>(data), {}, nullptr});
  }
  PrimitivePtr write_bytes(const TensorMeta& meta, std::span<const std::byte> bytes) override {
    return write(TensorData(meta.shape, meta.dtype, std::vector<std::byte>(bytes.begin(), bytes.end())));
  }
  PrimitivePtr wrap_bytes(const TensorMeta& meta, std::span<const std::byte> bytes,
                          std::shared_ptr<const void> owner) override {
    return std::make_shared<RoutedTensor>(meta, HostValue{nullptr, bytes, std::move(owner)});
  }
  std::optional<MemoryView> memory_view(const PrimitivePtr& p) override {
    auto [backend, value, host] = where(p);
    return backend ? backend->memory_view(value) : std::nullopt;
  }
  bool supports(const Op& op) const override {
    for (const auto& b : backends_)
      if (b->supports(op)) return true;
    return false;
  }
  void sync() override {
    for (const auto& b : backends_) b->sync();
  }
  void seed(uint64_t s) override {
    for (const auto& b : backends_) b->seed(s);
  }
  // The sum over the routed devices, each device once: backends of one device name (two CPU
  // backends, "cpu" and "cpu+fusion") share that device's pool (the CPU's is the process's).
  MemoryStats memory_stats() const override {
    MemoryStats m;
    std::vector<std::string> counted;
    for (const auto& b : backends_) {
      std::string device = b->name();
      device = device.substr(0, device.find('+'));
      if (std::find(counted.begin(), counted.end(), device) != counted.end()) continue;
      counted.push_back(device);
      MemoryStats s = b->memory_stats();
      m.in_use += s.in_use;
      m.reserved += s.reserved;
      m.peak += s.peak;
    }
    return m;
  }
  void reset_peak_memory() override {
    for (const auto& b : backends_) b->reset_peak_memory();
  }
  void memory_cleanup() override {
    for (const auto& b : backends_) b->memory_cleanup();
  }
  // The value is written where it lives; the copies other backends were given are dropped.
  bool overwrite(const PrimitivePtr& dst, const TensorData& src) override {
    std::lock_guard<std::mutex> lock(mu_);
    RoutedTensor& t = rt(dst);
    if (t.home < 0 || !backends_[size_t(t.home)]->overwrite(t.copies[size_t(t.home)], src)) return false;
    for (size_t i = 0; i < t.copies.size(); ++i)
      if (int(i) != t.home) t.copies[i] = nullptr;
    return true;
  }
  // fused_kernels, capture, wrap_device_memory and copy_into keep Backend's defaults (none): a
  // service of one routed backend would be handed tensors of the others.

  int location(const PrimitivePtr& p) {
    std::lock_guard<std::mutex> lock(mu_);
    return rt(p).home;
  }
  std::vector<std::shared_ptr<Backend>> backends() const { return backends_; }
  Stats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_stats() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_ = Stats{};
    stats_.ops_per_backend.assign(backends_.size(), 0);
  }

 private:
  // The backend `op` runs on: the policy's pick, or the first that supports it.
  size_t choose(const Op& op) {
    if (policy_)
      if (std::optional<size_t> pick = ask_policy(op)) return *pick;
    for (size_t i = 0; i < backends_.size(); ++i)
      if (backends_[i]->supports(op)) return i;
    EMBER_NOT_IMPLEMENTED(op.name(), ": not supported on any backend of ", name_, " (", describe(op), ")");
  }

  // The policy's pick for `op`, checked (in range, supporting the op), or nullopt for the default.
  std::optional<size_t> ask_policy(const Op& op) {
    std::vector<Candidate> candidates;
    candidates.reserve(backends_.size());
    for (size_t i = 0; i < backends_.size(); ++i)
      candidates.push_back({names_[i], backends_[i].get(), backends_[i]->supports(op)});
    std::vector<int> homes;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& p : op.inputs) homes.push_back(p ? rt(p).home : -1);
    }
    std::optional<size_t> pick = policy_(Route{op, homes, candidates});
    if (!pick) return std::nullopt;
    EMBER_CHECK(*pick < backends_.size(), op.name(), ": the router's policy chose backend ", *pick, ", but ", name_,
                " has ", backends_.size());
    EMBER_CHECK(candidates[*pick].supports, op.name(), ": the router's policy chose ", names_[*pick],
                ", which does not support it (", describe(op), "); choose a backend whose supports() accepts it");
    return pick;
  }

  static std::string describe(const Op& op) {
    std::ostringstream os;
    os << "inputs";
    for (const auto& p : op.inputs) {
      if (p) os << " " << dtype_name(p->dtype()) << " " << p->shape();
      else os << " none";
    }
    return os.str();
  }

  // p's value on backend `target`, moved or placed there when it has none yet (mu_ held).
  PrimitivePtr value_on(PrimitivePtr& p, size_t target, const Op& op) {
    RoutedTensor& t = rt(p);
    if (t.home < 0) {  // first use of a host-held tensor: write it where it is needed
      t.copies.resize(backends_.size());
      const HostValue& h = t.host;
      t.copies[target] = h.data ? backends_[target]->write(*h.data)
                                : backends_[target]->wrap_bytes(t.meta(), h.bytes, h.owner);
      t.home = int(target);
      t.host = {};
      ++stats_.placements;
    }
    if (t.copies.size() < backends_.size()) t.copies.resize(backends_.size());
    if (!t.copies[target]) {
      const size_t from = size_t(t.home);
      TensorData data = backends_[from]->read(t.copies[from]);
      t.copies[target] = backends_[target]->write(data);
      ++stats_.transfers;
      stats_.bytes_transferred += dense_bytes(t.meta());
      if (log_router()) {
        std::ostringstream os;
        os << "[ember router] " << op.name() << ": " << dtype_name(t.dtype()) << " " << t.shape() << " ("
           << dense_bytes(t.meta()) << " bytes) " << names_[from] << " -> " << names_[target] << "\n";
        std::fputs(os.str().c_str(), stderr);
      }
    }
    // The op holding the only handle may have the value's buffer (Backend's reuse contract).
    if (p.use_count() == 1) return std::move(t.copies[target]);
    return t.copies[target];
  }

  struct Where {
    Backend* backend;  // null while the tensor is held on the host
    PrimitivePtr value;
    HostValue host;
  };
  Where where(const PrimitivePtr& p) {
    std::lock_guard<std::mutex> lock(mu_);
    const RoutedTensor& t = rt(p);
    if (t.home < 0) return {nullptr, nullptr, t.host};
    return {backends_[size_t(t.home)].get(), t.copies[size_t(t.home)], {}};
  }

  std::vector<std::shared_ptr<Backend>> backends_;
  std::vector<std::string> names_;  // per backend, unique
  std::string name_;
  Policy policy_;
  std::mutex mu_;  // the RoutedTensors' placement state and stats_
  Stats stats_;
};

RouterBackend& as_router(const Backend& b, const char* what) {
  EMBER_CHECK(is_router(b), what, ": ", b.name(), " is not a router (Device::router)");
  return const_cast<RouterBackend&>(static_cast<const RouterBackend&>(b));
}

}  // namespace

int64_t Route::input_bytes() const {
  int64_t n = 0;
  for (const auto& p : op.inputs)
    if (p) n += dense_bytes(p->meta());
  return n;
}

int64_t Route::output_bytes() const {
  int64_t n = 0;
  for (const auto& m : op.outputs) n += dense_bytes(m);
  return n;
}

std::shared_ptr<Backend> wrap(std::vector<std::shared_ptr<Backend>> backends, Policy policy) {
  return std::make_shared<RouterBackend>(std::move(backends), std::move(policy));
}

bool is_router(const Backend& b) { return dynamic_cast<const RouterBackend*>(&b) != nullptr; }

std::vector<std::shared_ptr<Backend>> backends_of(const Backend& b) { return as_router(b, "router::backends_of").backends(); }

int location(const Backend& b, const PrimitivePtr& p) {
  EMBER_CHECK(p != nullptr, "router::location: undefined tensor");
  return as_router(b, "router::location").location(p);
}

Stats stats(const Backend& b) { return as_router(b, "router::stats").stats(); }

void reset_stats(const Backend& b) { as_router(b, "router::reset_stats").reset_stats(); }

}  // namespace ember::router
