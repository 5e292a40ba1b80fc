// Autocast: the per-op cast policy, the per-scope cast cache, and the hook that applies them
// (installed in the tensor layer's op-input seam, ember/tensor/op_hook.hpp, while a scope is on).
#include "ember/amp/autocast.hpp"

#include <map>
#include <memory>
#include <tuple>

#include "ember/core/error.hpp"
#include "ember/tensor/autodiff.hpp"
#include "ember/tensor/op_hook.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::amp {

// PyTorch's autocast lists (torch.amp docs: "CUDA Ops that can autocast to float16" / "to
// float32", and the CPU bfloat16 list) restricted to the ops ember has. The float32 class follows
// the CUDA list for both dtypes (issue 26): PyTorch 1.13's CPU autocast lets softmax, sum, exp...
// fall through in bf16 instead; tests/amp/gen_amp_cases.py records both.
CastPolicy op_policy(OpKind kind) {
  switch (kind) {
    case OpKind::matmul:          // mm, bmm, matmul, linear, addmm
    case OpKind::conv:            // conv1d/2d/3d
    case OpKind::conv_transpose:  // conv_transpose1d/2d/3d
    case OpKind::attention:       // scaled_dot_product_attention
    case OpKind::prelu:
      return CastPolicy::lower_precision;
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::prod:
    case OpKind::var:
    case OpKind::std:
    case OpKind::norm:
    case OpKind::logsumexp:
    case OpKind::cumsum:
    case OpKind::cumprod:
    case OpKind::softmax:
    case OpKind::log_softmax:
    case OpKind::layer_norm:
    case OpKind::batch_norm:
    case OpKind::exp:
    case OpKind::exp2:
    case OpKind::expm1:
    case OpKind::log:
    case OpKind::log2:
    case OpKind::log10:
    case OpKind::log1p:
    case OpKind::pow:
    case OpKind::rsqrt:
    case OpKind::reciprocal:
    case OpKind::sinh:
    case OpKind::cosh:
    case OpKind::tan:
    case OpKind::asin:
    case OpKind::acos:
    case OpKind::softplus:
      return CastPolicy::f32;
    default:
      return CastPolicy::keep;
  }
}

namespace {

// A low-precision cast made in the current scope, valid while its source primitive lives. The key
// holds the source's address; the weak pointer tells a live source from a new one at a reused
// address. Casts made with gradient recording off are kept apart: they are not tracked.
struct CacheKey {
  const Primitive* source;
  DType dtype;
  bool grad;
  auto operator<=>(const CacheKey&) const = default;
};
struct CacheEntry {
  std::weak_ptr<Primitive> source;
  DynTensor cast;
};

class AutocastHook final : public OpInputHook {
 public:
  DType dtype = DType::bf16;
  AutocastStats stats;
  std::map<CacheKey, CacheEntry> cache;
  size_t prune_at = 64;

  void before_op(OpKind kind, std::span<DynTensor> inputs) override {
    switch (op_policy(kind)) {
      case CastPolicy::keep:
        return;
      case CastPolicy::lower_precision:
        for (DynTensor& t : inputs)
          if (t.defined() && is_float(t.dtype()) && t.dtype() != dtype && t.dtype() != DType::f64)
            t = cast_cached(std::move(t));
        return;
      case CastPolicy::f32:
        for (DynTensor& t : inputs)
          if (t.defined() && (t.dtype() == DType::f16 || t.dtype() == DType::bf16)) {
            ++stats.upcasts;
            t = cast(std::move(t), DType::f32);
          }
        return;
    }
  }
  bool casts_inputs(OpKind kind) const override { return op_policy(kind) == CastPolicy::lower_precision; }

  DynTensor cast_cached(DynTensor t) {
    const PrimitivePtr& src = t.primitive();
    CacheKey key{src.get(), dtype, grad_enabled()};
    auto it = cache.find(key);
    if (it != cache.end()) {
      if (it->second.source.lock() == src) {
        ++stats.cache_hits;
        return it->second.cast;
      }
      cache.erase(it);  // a dead source whose address was reused
    }
    std::weak_ptr<Primitive> weak = src;
    DynTensor c = cast(std::move(t), dtype);
    ++stats.lower_casts;
    if (!weak.expired()) {  // a source the caller gave up is not used again: nothing to cache
      cache[key] = CacheEntry{std::move(weak), c};
      if (cache.size() >= prune_at) prune();
    }
    return c;
  }

  // Drops the casts of sources that died (activations), so the cache holds about what is live.
  void prune() {
    std::erase_if(cache, [](const auto& kv) { return kv.second.source.expired(); });
    prune_at = std::max<size_t>(64, 2 * cache.size());
  }
};

struct State {
  AutocastHook hook;
  bool enabled = false;
  int depth = 0;  // Autocast scopes open on this thread
};
State& state() {
  thread_local State s;
  return s;
}

void check_dtype(DType dtype) {
  EMBER_CHECK(dtype == DType::bf16 || dtype == DType::f16 || dtype == DType::f32, "amp::Autocast: cannot autocast to ",
              dtype, ": autocast computes matmul, conv and attention in a low-precision floating dtype (bf16 or f16; "
              "f32 or enabled = false turns autocast off in the scope)");
}

// Turns autocast on or off on this thread. Entering a scope refuses to displace another hook;
// restoring (from a destructor) does not check, and so cannot throw.
void apply(bool enabled, DType dtype, bool entering) {
  State& s = state();
  OpInputHook* current = op_input_hook();
  if (enabled && entering)
    EMBER_CHECK(current == nullptr || current == &s.hook,
                "amp::Autocast: another op-input hook is installed on this thread");
  s.enabled = enabled;
  s.hook.dtype = dtype;
  if (enabled)
    set_op_input_hook(&s.hook);
  else if (current == &s.hook)
    set_op_input_hook(nullptr);
}

}  // namespace

Autocast::Autocast(DType dtype, bool enabled) {
  check_dtype(dtype);
  State& s = state();
  prev_enabled_ = s.enabled;
  prev_dtype_ = s.hook.dtype;
  bool on = enabled && dtype != DType::f32;
  apply(on, on ? dtype : prev_dtype_, /*entering=*/true);
  ++s.depth;
}

Autocast::~Autocast() {
  State& s = state();
  apply(prev_enabled_, prev_dtype_, /*entering=*/false);
  if (--s.depth == 0) {
    s.hook.cache.clear();
    s.hook.prune_at = 64;
  }
}

bool autocast_enabled() { return state().enabled; }
std::optional<DType> autocast_dtype() {
  const State& s = state();
  return s.enabled ? std::optional<DType>(s.hook.dtype) : std::nullopt;
}
AutocastStats autocast_stats() {
  AutocastStats s = state().hook.stats;
  s.cache_entries = static_cast<int64_t>(state().hook.cache.size());
  return s;
}
void reset_autocast_stats() { state().hook.stats = {}; }

}  // namespace ember::amp
