// GradientsParams: per-parameter gradients, accumulation and clipping (PyTorch's clip_grad_* semantics).
#include "ember/optim/gradients.hpp"

#include <cmath>
#include <limits>

#include "ember/core/error.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::optim {

GradientsParams GradientsParams::from_params(const std::vector<const nn::Param*>& params, const Gradients& grads) {
  GradientsParams out;
  for (const nn::Param* p : params) {
    if (p->frozen()) continue;
    if (auto g = p->grad(grads)) out.grads_[p->id()] = g->detach();
  }
  return out;
}

std::optional<DynTensor> GradientsParams::get(uint64_t param_id) const {
  auto it = grads_.find(param_id);
  if (it == grads_.end()) return std::nullopt;
  return it->second;
}

void GradientsParams::set(uint64_t param_id, DynTensor grad) {
  EMBER_CHECK(grad.defined(), "GradientsParams::set: undefined gradient for parameter ", param_id);
  grads_[param_id] = grad.detach();
}

bool GradientsParams::remove(uint64_t param_id) { return grads_.erase(param_id) != 0; }

GradientsParams& GradientsParams::accumulate(const GradientsParams& other) {
  NoGradGuard no_grad;
  for (const auto& [id, g] : other.grads_) {
    auto it = grads_.find(id);
    if (it == grads_.end()) {
      grads_[id] = g;
      continue;
    }
    EMBER_CHECK(it->second.shape() == g.shape(), "GradientsParams::accumulate: parameter ", id,
                " has gradients of shape ", it->second.shape(), " and ", g.shape());
    it->second = it->second + g;
  }
  return *this;
}

GradientsParams& GradientsParams::scale(double s) {
  NoGradGuard no_grad;
  for (auto& [id, g] : grads_) g = g * s;
  return *this;
}

GradientsParams& GradientsParams::clip_by_value(double clip_value) {
  EMBER_CHECK(clip_value >= 0, "GradientsParams::clip_by_value: clip_value must be >= 0, got ", clip_value);
  NoGradGuard no_grad;
  for (auto& [id, g] : grads_) g = clamp(g, -clip_value, clip_value);
  return *this;
}

double GradientsParams::clip_by_norm(double max_norm, double p) {
  DynTensor total = clip_by_norm_tensor(max_norm, p);
  return total.defined() ? total.item() : 0;
}

DynTensor GradientsParams::clip_by_norm_tensor(double max_norm, double p) {
  EMBER_CHECK(!std::isnan(p) && p > 0, "GradientsParams::clip_by_norm: norm type must be > 0, got ", p);
  if (grads_.empty()) return {};
  NoGradGuard no_grad;
  // As clip_grad_norm_: one norm per gradient, then the norm of those norms, all in tensor ops
  // (no host round trip before the multiplication). Mixed dtypes are promoted.
  const Device device = grads_.begin()->second.device();
  DType dtype = grads_.begin()->second.dtype();
  for (const auto& [id, g] : grads_) dtype = promote_types(dtype, g.dtype());
  const bool inf = std::isinf(p);
  std::vector<DynTensor> norms;
  norms.reserve(grads_.size());
  for (const auto& [id, g] : grads_) {
    DynTensor n = inf ? max(abs(g)) : norm(g, p);
    norms.push_back(n.cast(dtype).to(device));
  }
  DynTensor total = norms.size() == 1 ? norms[0] : (inf ? max(stack(norms)) : norm(stack(norms), p));
  DynTensor coef = clamp_max(max_norm / (total + 1e-6), 1.0);
  for (auto& [id, g] : grads_) g = g * coef.cast(g.dtype()).to(g.device());
  return total;
}

}  // namespace ember::optim
