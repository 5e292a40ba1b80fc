// GradientsParams: per-parameter gradients, accumulation and clipping (PyTorch's clip_grad_* semantics).
#include "ember/optim/gradients.hpp"

#include <algorithm>
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
  // As clip_grad_norm_ with foreach: the gradients' norms by one norm_multi per device and
  // dtype, the norm of those norms, then every gradient times min(1, max_norm / (total + 1e-6))
  // by one mul_multi per device and dtype, all on the device (no host read). Mixed dtypes are
  // promoted for the total. The gradients are moved into mul_multi, so that each result takes its
  // gradient's buffer (after an Error there, out of memory, that group's gradients are gone).
  struct Group {
    Device device;
    DType dtype;
    std::vector<DynTensor*> grads;
  };
  std::vector<Group> groups;
  DType dtype = grads_.begin()->second.dtype();
  for (auto& entry : grads_) {
    DynTensor& g = entry.second;  // (not a structured binding: clang 14, the wasm build's, cannot capture one)
    dtype = promote_types(dtype, g.dtype());
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& q) { return q.device == g.device() && q.dtype == g.dtype(); });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{g.device(), g.dtype(), {}});
    it->grads.push_back(&g);
  }
  const Device device = groups[0].device;
  std::vector<DynTensor> norms;
  for (const Group& q : groups) {
    std::vector<DynTensor> xs;
    for (DynTensor* g : q.grads) xs.push_back(*g);
    norms.push_back(norm_multi(std::move(xs), p).cast(dtype).to(device));
  }
  DynTensor all = norms.size() == 1 ? norms[0] : cat(norms, 0);
  DynTensor total = std::isinf(p) ? max(all) : norm(all, p);
  DynTensor coef = clamp_max(max_norm / (total + 1e-6), 1.0);
  for (const Group& q : groups) {
    std::vector<DynTensor> xs;
    for (DynTensor* g : q.grads) xs.push_back(std::move(*g));
    std::vector<DynTensor> ys = mul_multi(std::move(xs), coef.cast(q.dtype).to(q.device));
    for (size_t i = 0; i < ys.size(); ++i) *q.grads[i] = std::move(ys[i]);
  }
  return total;
}

}  // namespace ember::optim
