// Modules are plain structs; one macro makes their fields visitable.
//
//   # Device dev = Device::cpu(); Device other = Device::cpu();
//   struct Mlp {
//     nn::Linear fc1, fc2;
//     nn::Dropout drop;
//     EMBER_MODULE(fc1, fc2, drop)                      // parameters, buffers, submodules, modes
//     DynTensor forward(DynTensor x) const { return fc2.forward(drop.forward(relu(fc1.forward(x)))); }
//   };
//   Mlp m{nn::LinearConfig{784, 128}.init(dev), nn::LinearConfig{128, 10}.init(dev), {}};
//   nn::num_params(m);  nn::state_dict(m);  m = nn::to_device(m, other);  nn::set_training(m, false);
//   # run
//
// Visitable field types: Param (trainable tensor), Buffer (state saved with the module, e.g. running
// statistics), Mode (train/eval flag), any module (a type with EMBER_MODULE), std::optional and
// std::vector of those. Paths join field names with '.', vector elements by index, so they match
// PyTorch's state_dict keys when fields are named like PyTorch's (a trailing '_' is dropped).
// EMBER_MODULE also adds one field (the module's path, for error messages), so place it after the
// data fields: aggregate initialisation `Mlp{fc1, fc2, drop}` then stays as it was.
//
// Module checks (set_module_checks, on by default in debug builds, or EMBER_CHECK_MODULES=1): a
// visit of a module fails when the module holds a Param, directly or inside a field that is not
// visitable, that its EMBER_MODULE list does not reach, since such a parameter is never trained,
// saved or moved. Params inside a std::vector or other heap memory are not seen by this check.
//
// Errors inside a built-in layer's forward name the layer by its path from the last visit of the
// enclosing model: "fc1 (Linear): matmul: ..." (see detail::in_module).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/tensor/autodiff.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::nn {

// (path, tensor) pairs in order: what named_parameters() and state_dict() return and load_state_dict() reads.
using NamedTensors = std::vector<std::pair<std::string, DynTensor>>;

// A trainable tensor. Its id survives optimizer updates (set()), so optimizer state follows it.
// On an autodiff device a trainable (not frozen) parameter requires grad.
class Param {
 public:
  Param() { track_address(); }
  // Holds `value` detached, under a new id; unless frozen, a float value on an autodiff device requires grad.
  explicit Param(DynTensor value, bool frozen = false);
  // Copies and moves are member-wise; while module checks are on, each Param's address is recorded.
  Param(const Param& o) : value_(o.value_), id_(o.id_), frozen_(o.frozen_) { track_address(); }
  // Takes the value, id and frozen flag of `o`.
  Param(Param&& o) noexcept : value_(std::move(o.value_)), id_(o.id_), frozen_(o.frozen_) { track_address(); }
  Param& operator=(const Param&) = default;  // copies value, id and frozen flag
  Param& operator=(Param&&) noexcept = default;  // moves value, id and frozen flag
  ~Param() { untrack_address(); }
  const DynTensor& value() const { return value_; }  // the tensor (undefined after take())
  operator const DynTensor&() const { return value_; }  // NOLINT: use a parameter like a tensor
  // Unique per parameter and kept by copies and set(): optimizers key their state by it.
  uint64_t id() const { return id_; }
  bool frozen() const { return frozen_; }  // a frozen parameter gets no gradient; optimizers skip it
  // False for a default-constructed Param and after take(); visits skip undefined parameters.
  bool defined() const { return value_.defined(); }
  const Shape& shape() const { return value_.shape(); }  // the value's shape
  // The same parameter (same id) holding `v`. After take() of a value nothing else held, `v` also
  // keeps the old value's autodiff leaf (the key of its gradients), as a PyTorch parameter
  // updated in place stays the same tensor: gradients computed before the update (the ones a
  // replayed CUDA graph keeps writing) still belong to it.
  void set(DynTensor v);
  // Moves the value out, leaving the parameter undefined until set() (optimizers: so an update
  // can write the new value into the old one's memory).
  DynTensor take();
  // Freezes (true) or unfreezes (false); an unfrozen float value on an autodiff device requires grad again.
  void set_frozen(bool f);
  // Its gradient in `g`; nullopt when the value does not require grad (frozen, not float, not autodiff) or
  // `g` holds none for it.
  std::optional<DynTensor> grad(const Gradients& g) const;

 private:
  void track_address();
  void untrack_address() noexcept;

  DynTensor value_;
  uint64_t id_ = 0;
  bool frozen_ = false;
  std::shared_ptr<const void> taken_leaf_;  // take() to set(): the leaf the new value keeps
};

// Module checks (see the top of this file): on by default where the library is built without
// NDEBUG; the environment variable EMBER_CHECK_MODULES=1 (or 0) overrides that default. Switch them
// on before the modules are built: Params made while they were off are not checked.
void set_module_checks(bool on);
bool module_checks();  // whether module checks are on now

// Non-trainable module state saved with the module (running statistics, counters).
struct Buffer {
  DynTensor value;  // the state tensor; an undefined value is skipped by visits
  operator const DynTensor&() const { return value; }  // NOLINT
};

// Train/eval flag of modules whose forward depends on it (Dropout, BatchNorm).
struct Mode {
  bool training = true;  // true: training mode (the default); false: eval mode, set by set_training()
};

// What a module's visit() calls for each field it reaches (EMBER_MODULE); override the hooks you need.
// The hooks do nothing by default.
class Visitor {
 public:
  virtual ~Visitor() = default;
  // Called for each defined Param, with its dotted path ("fc1.weight").
  virtual void param(const std::string& /*path*/, Param& /*p*/) {}
  // Called for each Buffer with a defined value, with its dotted path.
  virtual void buffer(const std::string& /*path*/, Buffer& /*b*/) {}
  // Called for each Mode flag (it has no path).
  virtual void mode(Mode& /*m*/) {}
  // Called for each module (a type with EMBER_MODULE) before its fields, with its dotted path
  // ("" for the outermost), its type and its address (see for_each_module).
  virtual void module(const std::string& /*path*/, const std::type_info& /*type*/, void* /*self*/) {}
};

namespace detail {
std::vector<std::string> split_names(std::string_view list);
inline std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}
template <class T>
concept Visitable = requires(T& t, Visitor& v, const std::string& s) { t.visit(v, s); };
template <class T> struct is_vector : std::false_type {};
template <class T, class A> struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};
}  // namespace detail

// Visits one EMBER_MODULE field at `path`: a Param, Buffer or Mode goes to `v`, an optional when set, a
// vector element-wise (paths "path.0", "path.1", ...), a module through its visit(). Other types do not compile.
template <class T>
void visit_field(Visitor& v, const std::string& path, T& field) {
  if constexpr (std::is_same_v<T, Param>) {
    if (field.defined()) v.param(path, field);
  } else if constexpr (std::is_same_v<T, Buffer>) {
    if (field.value.defined()) v.buffer(path, field);
  } else if constexpr (std::is_same_v<T, Mode>) {
    v.mode(field);
  } else if constexpr (detail::is_optional<T>::value) {
    if (field) visit_field(v, path, *field);
  } else if constexpr (detail::is_vector<T>::value) {
    for (size_t i = 0; i < field.size(); ++i) visit_field(v, detail::join(path, std::to_string(i)), field[i]);
  } else {
    static_assert(detail::Visitable<T>, "EMBER_MODULE field must be a Param, Buffer, Mode, module, optional or vector");
    field.visit(v, path);
  }
}

namespace detail {
template <class Tuple, size_t... I>
void visit_tuple(Visitor& v, const std::string& prefix, const std::vector<std::string>& names, Tuple&& t,
                 std::index_sequence<I...>) {
  (visit_field(v, join(prefix, names[I]), std::get<I>(t)), ...);
}

const std::string* intern_path(const std::string& path);

// The field EMBER_MODULE adds: the path at which the module was last visited inside a larger one
// ("encoder.layers.0.self_attn"), so that its forward can name it in an error. A visit as the
// top-level module (empty path) keeps an earlier name; copies keep it too.
class ModuleInfo {
 public:
  ModuleInfo() = default;
  ModuleInfo(const ModuleInfo& o) noexcept : path_(o.path_.load(std::memory_order_relaxed)) {}
  ModuleInfo& operator=(const ModuleInfo& o) noexcept {
    path_.store(o.path_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }
  ~ModuleInfo() = default;
  void set_path(const std::string& path) {
    if (path.empty()) return;
    const std::string* cur = path_.load(std::memory_order_relaxed);
    if (cur == nullptr || *cur != path) path_.store(intern_path(path), std::memory_order_relaxed);
  }
  const std::string* path() const { return path_.load(std::memory_order_relaxed); }

 private:
  std::atomic<const std::string*> path_{nullptr};
};

// Runs one module's visit under the module checks: while they are on, the outermost visit wraps
// the visitor to record the Params it reaches and every EMBER_MODULE visit inside records its
// memory range; at the end, a registered Param inside a visited module's range that was not
// reached is an error. While the checks are off it does nothing.
class ModuleCheck {
 public:
  ModuleCheck(Visitor& v, const void* self, size_t size, const std::type_info& type, const char* fields,
              const ModuleInfo& info)
      : visitor_(&v) {
    if (module_checks()) [[unlikely]]
      begin(self, size, type, fields, info);
  }
  ModuleCheck(const ModuleCheck&) = delete;
  ModuleCheck& operator=(const ModuleCheck&) = delete;
  ~ModuleCheck() {
    if (root_) end(false);
  }
  Visitor& visitor() { return *visitor_; }
  // After the fields were visited: runs the check (the outermost visit only); throws on a miss.
  void finish() {
    if (root_) end(true);
  }

 private:
  void begin(const void* self, size_t size, const std::type_info& type, const char* fields, const ModuleInfo& info);
  void end(bool check);
  Visitor* visitor_;
  void* root_ = nullptr;  // the check's state, held by the outermost visit
};

// A layer's forward body, run so that an ember::Error raised inside names the layer: the message
// gains the prefix "<path> (<type>): " (or "<type>: " when the layer was never visited inside a
// model), once, by the innermost layer. Costs nothing unless an error is thrown.
[[noreturn]] void rethrow_in_module(const ModuleInfo& info, const char* type);
template <class F>
decltype(auto) in_module(const ModuleInfo& info, const char* type, F&& body) {
  try {
    return std::forward<F>(body)();
  } catch (const Error&) {
    rethrow_in_module(info, type);
  }
}
}  // namespace detail

#define EMBER_MODULE(...)                                                                                     \
  mutable ::ember::nn::detail::ModuleInfo ember_module_{};                                                    \
  void visit(::ember::nn::Visitor& ember_v_, const std::string& ember_prefix_ = {}) {                         \
    static const std::vector<std::string> ember_names_ = ::ember::nn::detail::split_names(#__VA_ARGS__);      \
    ember_module_.set_path(ember_prefix_);                                                                    \
    ::ember::nn::detail::ModuleCheck ember_check_(ember_v_, this, sizeof(*this), typeid(*this), #__VA_ARGS__, \
                                                  ember_module_);                                             \
    ember_check_.visitor().module(ember_prefix_, typeid(*this), this);                                        \
    auto ember_fields_ = std::tie(__VA_ARGS__);                                                               \
    ::ember::nn::detail::visit_tuple(ember_check_.visitor(), ember_prefix_, ember_names_, ember_fields_,      \
                                     std::make_index_sequence<std::tuple_size_v<decltype(ember_fields_)>>{}); \
    ember_check_.finish();                                                                                    \
  }

// ---- generic module operations (any visitable type) ----
// Calls `f(path, layer)` for each module of type Layer inside `m` (m itself included), outermost
// first: `nn::for_each_module<nn::Linear>(model, [](const std::string& p, nn::Linear& l) { ... })`.
template <class Layer, class M, class F>
void for_each_module(M& m, F&& f) {
  struct V : Visitor {
    F& f;
    explicit V(F& fn) : f(fn) {}
    void module(const std::string& p, const std::type_info& type, void* self) override {
      if (type == typeid(Layer)) f(p, *static_cast<Layer*>(self));
    }
  } v{f};
  m.visit(v);
}

// Calls `f(path, param)` for each defined parameter of `m`, in declaration order.
template <class M>
void for_each_param(M& m, const std::function<void(const std::string&, Param&)>& f) {
  struct V : Visitor {
    const std::function<void(const std::string&, Param&)>& f;
    explicit V(const std::function<void(const std::string&, Param&)>& fn) : f(fn) {}
    void param(const std::string& p, Param& x) override { f(p, x); }
  } v(f);
  m.visit(v);
}
// Calls `f(path, buffer)` for each buffer of `m` with a defined value, in declaration order.
template <class M>
void for_each_buffer(M& m, const std::function<void(const std::string&, Buffer&)>& f) {
  struct V : Visitor {
    const std::function<void(const std::string&, Buffer&)>& f;
    explicit V(const std::function<void(const std::string&, Buffer&)>& fn) : f(fn) {}
    void buffer(const std::string& p, Buffer& x) override { f(p, x); }
  } v(f);
  m.visit(v);
}

// (path, parameter) in declaration order.
template <class M>
NamedTensors named_parameters(const M& m) {
  NamedTensors out;
  for_each_param(const_cast<M&>(m), [&](const std::string& p, Param& x) { out.emplace_back(p, x.value()); });
  return out;
}
// Parameters and buffers: what a checkpoint holds (PyTorch's state_dict).
template <class M>
NamedTensors state_dict(const M& m) {
  struct V : Visitor {
    NamedTensors out;
    void param(const std::string& p, Param& x) override { out.emplace_back(p, x.value()); }
    void buffer(const std::string& p, Buffer& x) override { out.emplace_back(p, x.value); }
  } v;
  const_cast<M&>(m).visit(v);
  return std::move(v.out);
}
// The number of parameter elements; with trainable_only, frozen parameters are not counted.
template <class M>
int64_t num_params(const M& m, bool trainable_only = false) {
  int64_t n = 0;
  for_each_param(const_cast<M&>(m), [&](const std::string&, Param& p) {
    if (!trainable_only || !p.frozen()) n += p.value().numel();
  });
  return n;
}
// A copy of the module on `device` (parameters keep their ids).
template <class M>
M to_device(M m, const Device& device) {
  for_each_param(m, [&](const std::string&, Param& p) { p.set(p.value().detach().to(device)); });
  for_each_buffer(m, [&](const std::string&, Buffer& b) { b.value = b.value.detach().to(device); });
  return m;
}
// Frozen parameters get no gradient and are skipped by optimizers.
template <class M>
M freeze(M m, bool frozen = true) {
  for_each_param(m, [&](const std::string&, Param& p) { p.set_frozen(frozen); });
  return m;
}
// Sets every Mode flag of `m`: true for training mode, false for eval mode (PyTorch's train() and eval()).
template <class M>
void set_training(M& m, bool training) {
  struct V : Visitor {
    bool t;
    explicit V(bool x) : t(x) {}
    void mode(Mode& md) override { md.training = t; }
  } v(training);
  m.visit(v);
}
// A table: name, shape, parameter count (frozen ones marked), plus the total.
std::string summary_table(const std::vector<std::tuple<std::string, Shape, int64_t, bool>>& rows);
// summary_table() of the module's parameters, by path in declaration order.
template <class M>
std::string summary(const M& m) {
  std::vector<std::tuple<std::string, Shape, int64_t, bool>> rows;
  for_each_param(const_cast<M&>(m), [&](const std::string& p, Param& x) {
    rows.emplace_back(p, x.shape(), x.value().numel(), x.frozen());
  });
  return summary_table(rows);
}

// ---- loading named tensors into a module ----
struct KeyRemap {  // std::regex pattern -> replacement (ECMAScript, $1 groups), applied in order
  // The regex searched for in each source key, and what replaces each match.
  std::string pattern, replacement;  // replacement: the substitution text
};
// Options of load_state_dict().
struct LoadOptions {
  std::vector<KeyRemap> remap{};  // source-key rewrites, applied before matching to module paths
  bool strict = true;      // throw when anything is missing, unexpected or mismatched
  bool cast_dtype = true;  // convert to the parameter's dtype
  // Adapts a source tensor to ember's layout for a key (e.g. a transposed weight); may be empty.
  std::function<DynTensor(const std::string& key, DynTensor t, const Shape& target)> adapt{};
};
// What load_state_dict() could not match; every list is empty on a full load.
struct LoadReport {
  std::vector<std::string> missing;      // in the module, not in the source
  std::vector<std::string> unexpected;   // in the source, not in the module
  std::vector<std::string> mismatched;   // "key: source [..] vs module [..]"
  // True when nothing is missing, unexpected or mismatched.
  bool ok() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
  std::string str() const;  // the three lists, one key a line, for messages
};
namespace detail {
LoadReport load_into(const std::vector<std::tuple<std::string, Param*, Buffer*>>& slots, NamedTensors source,
                     const LoadOptions& o);
}
// Loads `source` into the module's parameters and buffers (by path); returns what did not match.
// With strict (default) any problem throws an Error listing every key.
template <class M>
LoadReport load_state_dict(M& m, NamedTensors source, const LoadOptions& o = {}) {
  struct V : Visitor {
    std::vector<std::tuple<std::string, Param*, Buffer*>> slots;
    void param(const std::string& p, Param& x) override { slots.emplace_back(p, &x, nullptr); }
    void buffer(const std::string& p, Buffer& x) override { slots.emplace_back(p, nullptr, &x); }
  } v;
  m.visit(v);
  return detail::load_into(v.slots, std::move(source), o);
}

}  // namespace ember::nn
