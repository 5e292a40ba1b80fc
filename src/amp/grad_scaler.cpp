// GradScaler: dynamic loss scaling (torch.cuda.amp.GradScaler), and amp's warnings.
#include "ember/amp/grad_scaler.hpp"

#include <cmath>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>

#include "ember/amp/autocast.hpp"
#include "ember/core/error.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::amp {

namespace {

std::mutex& warning_mu() {
  static std::mutex m;
  return m;
}
WarningHandler& warning_slot() {
  static WarningHandler h;
  return h;
}
void warn(std::string_view message) {
  std::lock_guard<std::mutex> lock(warning_mu());
  if (warning_slot())
    warning_slot()(message);
  else
    std::cerr << "ember warning: " << message << '\n';
}

// As PyTorch does: a GradScaler over bf16 warns (once per process) and passes through.
void warn_bf16_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    warn("amp::GradScaler: used with bf16, which has f32's exponent range and needs no loss scaling; the scaler "
         "passes through (scale() returns the loss, step() always steps)");
  });
}

thread_local const GradScaler* t_active = nullptr;

}  // namespace

WarningHandler set_warning_handler(WarningHandler handler) {
  std::lock_guard<std::mutex> lock(warning_mu());
  WarningHandler prev = std::move(warning_slot());
  warning_slot() = std::move(handler);
  return prev;
}

GradScaler::GradScaler(GradScalerConfig config) : config_(config), enabled_(config.enabled), scale_(config.init_scale) {
  EMBER_CHECK(config.init_scale > 0 && std::isfinite(config.init_scale),
              "amp::GradScaler: init_scale must be positive and finite, got ", config.init_scale);
  EMBER_CHECK(config.growth_factor > 1, "amp::GradScaler: growth_factor must be > 1, got ", config.growth_factor);
  EMBER_CHECK(config.backoff_factor > 0 && config.backoff_factor < 1,
              "amp::GradScaler: backoff_factor must be in (0, 1), got ", config.backoff_factor);
  EMBER_CHECK(config.growth_interval >= 1, "amp::GradScaler: growth_interval must be >= 1, got ",
              config.growth_interval);
  EMBER_CHECK(is_float(config.dtype), "amp::GradScaler: dtype must be f16 or bf16, got ", config.dtype);
  if (enabled_ && config.dtype == DType::bf16) {
    warn_bf16_once();
    enabled_ = false;
  }
}

DynTensor GradScaler::scale(DynTensor loss) const {
  if (!enabled_) return loss;
  if (autocast_dtype() == DType::bf16) {  // a scaler made for f16 used under bf16 autocast
    warn_bf16_once();
    bf16_step_ = true;
    return loss;
  }
  EMBER_CHECK(is_float(loss.dtype()), "amp::GradScaler::scale: the loss must be floating, got ", loss.dtype());
  // in f32, as PyTorch multiplies by an f32 scale: an f16 loss times 2^16 would overflow
  const DType dt = loss.dtype() == DType::f64 ? DType::f64 : DType::f32;
  return cast(std::move(loss), dt) * scale_;
}

void GradScaler::unscale_(optim::GradientsParams& grads) {
  if (!enabled_ || bf16_step_) return;
  EMBER_CHECK(!unscaled_, "amp::GradScaler::unscale_: already called since the last update()");
  NoGradGuard no_grad;
  // Two ops per gradient: u = g * (1/scale), and sum(u), which is inf or NaN exactly when an
  // element of u is (IEEE sums propagate both; inf + -inf is NaN), short of finite values whose
  // sum leaves f32's range, which counts as an overflow too. The sums are stacked and read once,
  // so the check costs one host read per step. Eager, that is two passes over each gradient; under
  // the fusion decorator the multiply is the prologue of the sum's row program: one kernel, one
  // pass. There is no one-op unscale-and-check in the IR yet.
  if (grads.empty()) {
    found_inf_ = false;
    unscaled_ = true;
    return;
  }
  const DynTensor& first = grads.items().begin()->second;
  // (a 0-d operand: f16 or bf16 gradients stay in their dtype, as with a Python scalar)
  const DynTensor inv = DynTensor::full({}, 1.0 / scale_, DType::f32, first.device());
  std::vector<DynTensor> sums;
  std::vector<std::pair<uint64_t, DynTensor>> unscaled;
  sums.reserve(grads.size());
  unscaled.reserve(grads.size());
  for (const auto& [id, g] : grads.items()) {
    // A large gradient is viewed as rows of a power-of-two length (up to 8192), which the fusion
    // decorator's row programs take whole: the multiply, the row sums and the output in one pass.
    const int64_t n = g.numel();
    int64_t cols = 1;
    while (cols < 8192 && n % (2 * cols) == 0) cols *= 2;
    const bool rows = n > 8192 && cols >= 64;
    DynTensor in = rows ? reshape(g, {n / cols, cols}) : g;
    DynTensor u = in.device() == inv.device() ? in * inv : in * (1.0 / scale_);
    sums.push_back(cast(rows ? sum(sum(u, {1})) : sum(u), DType::f64));
    unscaled.emplace_back(id, rows ? reshape(std::move(u), g.shape().dims()) : std::move(u));
  }
  for (auto& [id, u] : unscaled) grads.set(id, std::move(u));
  const double total = sums.size() == 1 ? sums[0].item() : sum(stack(std::move(sums))).item();
  found_inf_ = !std::isfinite(total);
  unscaled_ = true;
}

void GradScaler::update() {
  if (!enabled_) return;
  if (bf16_step_) {  // a pass-through step: nothing was scaled
    bf16_step_ = false;
    return;
  }
  EMBER_CHECK(unscaled_, "amp::GradScaler::update: no inf/NaN check since the last update; call step() or "
              "unscale_() first");
  if (found_inf_) {
    scale_ *= config_.backoff_factor;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == config_.growth_interval) {
    const double grown = scale_ * config_.growth_factor;
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  }
  unscaled_ = false;
}

void GradScaler::update(double new_scale) {
  if (!enabled_) return;
  EMBER_CHECK(new_scale > 0 && std::isfinite(new_scale), "amp::GradScaler::update: new scale must be positive and "
              "finite, got ", new_scale);
  scale_ = new_scale;
  growth_tracker_ = 0;
  unscaled_ = false;
}

nn::NamedTensors GradScaler::state_dict() const {
  if (!enabled_) return {};
  const Device cpu = Device::cpu();
  return {{"scale", DynTensor::full({}, scale_, DType::f64, cpu)},
          {"growth_factor", DynTensor::full({}, config_.growth_factor, DType::f64, cpu)},
          {"backoff_factor", DynTensor::full({}, config_.backoff_factor, DType::f64, cpu)},
          {"growth_interval", DynTensor::full({}, config_.growth_interval, DType::i64, cpu)},
          {"_growth_tracker", DynTensor::full({}, growth_tracker_, DType::i64, cpu)}};
}

void GradScaler::load_state_dict(const nn::NamedTensors& state) {
  if (!enabled_) return;
  auto value = [&](const char* key) {
    for (const auto& [name, t] : state)
      if (name == key) {
        EMBER_CHECK(t.numel() == 1, "amp::GradScaler::load_state_dict: key '", key, "' must hold one value, got shape ",
                    t.shape());
        return t.item();
      }
    EMBER_FAIL("amp::GradScaler::load_state_dict: missing key '", key, "' (a GradScaler state has scale, "
               "growth_factor, backoff_factor, growth_interval and _growth_tracker)");
  };
  const double scale = value("scale"), growth = value("growth_factor"), backoff = value("backoff_factor");
  const double interval = value("growth_interval"), tracker = value("_growth_tracker");
  EMBER_CHECK(scale > 0 && std::isfinite(scale), "amp::GradScaler::load_state_dict: 'scale' must be positive, got ",
              scale);
  scale_ = scale;
  config_.growth_factor = growth;
  config_.backoff_factor = backoff;
  config_.growth_interval = static_cast<int64_t>(interval);
  growth_tracker_ = static_cast<int64_t>(tracker);
  unscaled_ = false;
}

DynTensor scale_loss(DynTensor loss) { return t_active ? t_active->scale(std::move(loss)) : loss; }

ActiveScaler::ActiveScaler(const GradScaler* scaler) : prev_(t_active) { t_active = scaler; }
ActiveScaler::~ActiveScaler() { t_active = prev_; }

}  // namespace ember::amp
