// Param, the module visitor's helpers, the summary table and state-dict loading.
#include "ember/nn/module.hpp"

#include "ember/decorators/autodiff.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

namespace ember::nn {

namespace {
std::atomic<uint64_t> g_next_param{1};

// ---- module checks ----
bool checks_default() {
  if (const char* env = std::getenv("EMBER_CHECK_MODULES"); env != nullptr && *env != '\0')
    return std::string_view(env) != "0";
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

struct ChecksFlags {
  std::atomic<bool> on{checks_default()};
  std::atomic<bool> track{on.load()};  // stays on once the checks were on, so that no address goes stale
};
ChecksFlags& flags() {
  static ChecksFlags f;
  return f;
}

// The addresses of the live Params (while tracking).
struct ParamRegistry {
  std::mutex mutex;
  std::set<const Param*> live;
};
ParamRegistry& registry() {
  static auto* r = new ParamRegistry;  // never destroyed: Params of static modules die after it
  return *r;
}

std::string demangle(const std::type_info& t) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(t.name());
}

// The state of one outermost visit under the module checks.
struct CheckState;
thread_local CheckState* g_check = nullptr;

struct ModuleRange {
  const char* base;
  size_t size;
  const std::type_info* type;
  const char* fields;
  const detail::ModuleInfo* info;
};

struct CheckState final : Visitor {
  Visitor* inner = nullptr;
  std::vector<ModuleRange> modules;
  std::vector<const Param*> reached;

  // The user's visitor may itself visit other modules: those get a check of their own.
  struct Suspend {
    CheckState* saved = g_check;
    Suspend() { g_check = nullptr; }
    ~Suspend() { g_check = saved; }
    Suspend(const Suspend&) = delete;
    Suspend& operator=(const Suspend&) = delete;
  };
  void param(const std::string& path, Param& p) override {
    reached.push_back(&p);
    Suspend s;
    inner->param(path, p);
  }
  void buffer(const std::string& path, Buffer& b) override {
    Suspend s;
    inner->buffer(path, b);
  }
  void mode(Mode& m) override {
    Suspend s;
    inner->mode(m);
  }
  void module(const std::string& path, const std::type_info& type, void* self) override {
    Suspend s;
    inner->module(path, type, self);
  }

  // Throws when a registered, defined Param inside a visited module's memory was not reached.
  void check() const {
    std::vector<const Param*> reached_sorted = reached;
    std::sort(reached_sorted.begin(), reached_sorted.end());
    struct Miss {
      const Param* p;
      const ModuleRange* owner;
    };
    std::vector<Miss> misses;
    std::set<const Param*> seen;
    {
      ParamRegistry& r = registry();
      std::lock_guard lock(r.mutex);
      for (const ModuleRange& m : modules) {
        for (auto it = r.live.lower_bound(reinterpret_cast<const Param*>(m.base));
             it != r.live.end() && reinterpret_cast<const char*>(*it) < m.base + m.size; ++it) {
          const Param* p = *it;
          if (!p->defined() || std::binary_search(reached_sorted.begin(), reached_sorted.end(), p)) continue;
          if (!seen.insert(p).second) continue;
          misses.push_back({p, nullptr});
        }
      }
    }
    if (misses.empty()) return;
    auto inside = [](const ModuleRange& m, const void* p) {
      const char* c = static_cast<const char*>(p);
      return c >= m.base && c < m.base + m.size;
    };
    for (Miss& miss : misses)  // the innermost visited module holding it
      for (const ModuleRange& m : modules)
        if (inside(m, miss.p) && (miss.owner == nullptr || m.size < miss.owner->size)) miss.owner = &m;
    std::sort(misses.begin(), misses.end(), [](const Miss& a, const Miss& b) { return a.p < b.p; });
    const Miss& first = misses.front();
    const ModuleRange& m = *first.owner;
    std::ostringstream os;
    os << "module " << demangle(*m.type);
    if (const std::string* path = m.info->path()) os << " (at " << *path << ")";
    os << ": the Param at byte offset " << (reinterpret_cast<const char*>(first.p) - m.base)
       << " is not listed in EMBER_MODULE(" << m.fields
       << ") (nor inside a listed field), so it is never trained, saved or moved; add its field to the list";
    if (misses.size() > 1) os << " (and " << misses.size() - 1 << " more unlisted Param(s) in this visit)";
    throw Error(os.str());
  }
};

DynTensor track(DynTensor v, bool frozen, const autodiff::LeafIdentity& leaf = nullptr) {
  v = v.detach();
  if (!frozen && v.device().is_autodiff() && is_float(v.dtype()))
    v = leaf ? DynTensor(autodiff::require_grad_as(v.device().backend(), v.primitive(), leaf), v.device())
             : v.require_grad();
  return v;
}
}  // namespace

Param::Param(DynTensor value, bool frozen)
    : value_(track(std::move(value), frozen)), id_(g_next_param.fetch_add(1)), frozen_(frozen) {
  track_address();
}

void Param::track_address() {
  if (!flags().track.load(std::memory_order_relaxed)) return;
  ParamRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  r.live.insert(this);
}

void Param::untrack_address() noexcept {
  if (!flags().track.load(std::memory_order_relaxed)) return;
  ParamRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  r.live.erase(this);
}

void set_module_checks(bool on) {
  if (on) flags().track.store(true);
  flags().on.store(on);
}

bool module_checks() { return flags().on.load(std::memory_order_relaxed); }

void Param::set(DynTensor v) { value_ = track(std::move(v), frozen_, std::exchange(taken_leaf_, nullptr)); }

DynTensor Param::take() {
  // a value that a copy of the module still holds stays a leaf of its own
  taken_leaf_ = value_.defined() && value_.primitive().use_count() == 1 ? autodiff::leaf_identity(value_.primitive())
                                                                         : nullptr;
  return std::move(value_);
}

void Param::set_frozen(bool f) {
  frozen_ = f;
  value_ = track(value_, f);
}

std::optional<DynTensor> Param::grad(const Gradients& g) const {
  if (!value_.is_require_grad()) return std::nullopt;
  return value_.grad(g);
}

namespace detail {
void ModuleCheck::begin(const void* self, size_t size, const std::type_info& type, const char* fields,
                        const ModuleInfo& info) {
  if (g_check == nullptr) {  // the outermost visit: wrap the visitor
    auto* state = new CheckState;
    state->inner = visitor_;
    g_check = state;
    visitor_ = state;
    root_ = state;
  }
  g_check->modules.push_back({static_cast<const char*>(self), size, &type, fields, &info});
}

void ModuleCheck::end(bool check) {
  std::unique_ptr<CheckState> state(static_cast<CheckState*>(root_));
  root_ = nullptr;
  g_check = nullptr;
  if (check) state->check();
}

const std::string* intern_path(const std::string& path) {
  static std::mutex mutex;
  static auto* paths = new std::set<std::string>;  // a few per model; kept for the program's life
  std::lock_guard lock(mutex);
  return &*paths->insert(path).first;
}

[[noreturn]] void rethrow_in_module(const ModuleInfo& info, const char* type) {
  // The innermost layer names itself; the layers around it let the error pass unchanged.
  thread_local std::exception_ptr attributed;
  std::exception_ptr current = std::current_exception();
  if (current == attributed) std::rethrow_exception(current);
  bool not_implemented = false;
  std::string message;
  try {
    std::rethrow_exception(current);
  } catch (const NotImplemented& e) {
    not_implemented = true;
    message = e.what();
  } catch (const Error& e) {
    message = e.what();
  }
  const std::string own = std::string(type) + ": ";
  const bool named_by_layer = message.rfind(own, 0) == 0;  // the layer's own check: "Linear: ..."
  const std::string* path = info.path();
  if (path == nullptr && named_by_layer) {
    attributed = current;
    std::rethrow_exception(current);
  }
  if (named_by_layer) message.erase(0, own.size());
  message = (path != nullptr ? *path + " (" + type + "): " : own) + message;
  attributed =
      not_implemented ? std::make_exception_ptr(NotImplemented(message)) : std::make_exception_ptr(Error(message));
  std::rethrow_exception(attributed);
}

std::vector<std::string> split_names(std::string_view list) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    size_t b = cur.find_first_not_of(" \t\n"), e = cur.find_last_not_of(" \t\n");
    std::string name = b == std::string::npos ? "" : cur.substr(b, e - b + 1);
    if (!name.empty() && name.back() == '_') name.pop_back();
    out.push_back(name);
    cur.clear();
  };
  for (char c : list) {
    if (c == ',') flush();
    else cur += c;
  }
  flush();
  return out;
}
}  // namespace detail

std::string summary_table(const std::vector<std::tuple<std::string, Shape, int64_t, bool>>& rows) {
  size_t wn = 4, ws = 5;
  for (const auto& [n, s, c, f] : rows) {
    wn = std::max(wn, n.size() + (f ? 9 : 0));
    ws = std::max(ws, s.str().size());
  }
  std::ostringstream os;
  auto line = [&](const std::string& a, const std::string& b, const std::string& c) {
    os << a << std::string(wn - a.size() + 2, ' ') << b << std::string(ws - b.size() + 2, ' ') << c << "\n";
  };
  line("name", "shape", "params");
  line(std::string(wn, '-'), std::string(ws, '-'), "------");
  int64_t total = 0, trainable = 0;
  for (const auto& [n, s, c, f] : rows) {
    line(n + (f ? " (frozen)" : ""), s.str(), std::to_string(c));
    total += c;
    if (!f) trainable += c;
  }
  os << "total: " << total << " parameters (" << trainable << " trainable)\n";
  return os.str();
}

std::string LoadReport::str() const {
  std::ostringstream os;
  auto list = [&](const char* what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    os << what << " (" << v.size() << "):";
    for (const auto& k : v) os << "\n  " << k;
    os << "\n";
  };
  list("missing keys", missing);
  list("unexpected keys", unexpected);
  list("mismatched shapes", mismatched);
  return os.str();
}

namespace detail {
LoadReport load_into(const std::vector<std::tuple<std::string, Param*, Buffer*>>& slots, NamedTensors source,
                     const LoadOptions& o) {
  std::vector<std::pair<std::regex, std::string>> rules;
  for (const auto& r : o.remap) {
    try {
      rules.emplace_back(std::regex(r.pattern), r.replacement);
    } catch (const std::regex_error& e) {
      EMBER_FAIL("load_state_dict: bad remap pattern '", r.pattern, "': ", e.what());
    }
  }
  std::map<std::string, DynTensor> src;
  for (auto& [k, t] : source) {
    std::string key = k;
    for (const auto& [re, rep] : rules) key = std::regex_replace(key, re, rep);
    src[key] = std::move(t);
  }
  LoadReport rep;
  std::vector<std::tuple<Param*, Buffer*, DynTensor>> plan;  // applied only when everything checks out
  for (const auto& [path, p, b] : slots) {
    auto it = src.find(path);
    if (it == src.end()) {
      rep.missing.push_back(path);
      continue;
    }
    const DynTensor& cur = p ? p->value() : b->value;
    DynTensor t = it->second;
    src.erase(it);
    if (o.adapt) t = o.adapt(path, std::move(t), cur.shape());
    if (t.shape() != cur.shape()) {
      rep.mismatched.push_back(path + ": source " + t.shape().str() + " vs module " + cur.shape().str());
      continue;
    }
    if (t.dtype() != cur.dtype()) {
      if (!o.cast_dtype) {
        rep.mismatched.push_back(path + ": source dtype " + std::string(dtype_name(t.dtype())) + " vs module " +
                                 std::string(dtype_name(cur.dtype())));
        continue;
      }
      t = t.cast(cur.dtype());
    }
    if (!(t.device() == cur.device())) t = t.to(cur.device());
    plan.emplace_back(p, b, std::move(t));
  }
  for (const auto& [k, t] : src) rep.unexpected.push_back(k);
  if (o.strict && !rep.ok()) EMBER_FAIL("load_state_dict: the source does not match the module\n", rep.str());
  for (auto& [p, b, t] : plan) {
    if (p) p->set(std::move(t));
    else b->value = std::move(t);
  }
  return rep;
}
}  // namespace detail

}  // namespace ember::nn
