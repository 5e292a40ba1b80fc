// The Optimizer base: parameter groups, clipping, the per-parameter step loop and state (de)serialisation.
#include "ember/optim/optimizer.hpp"

#include <cmath>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "ember/core/error.hpp"

namespace ember::optim {

void GradientClipping::apply(GradientsParams& grads) const {
  if (kind == Kind::value) {
    grads.clip_by_value(threshold);
  } else {
    grads.clip_by_norm_tensor(threshold, norm_type);  // (not read: a step need not wait for the device)
  }
}

struct Optimizer::CompiledGroups {
  std::vector<std::pair<std::regex, ParamGroup>> groups;
};

Optimizer::Optimizer(std::vector<ParamGroup> groups, std::optional<GradientClipping> clipping, double weight_decay)
    : clipping_(clipping), weight_decay_(weight_decay) {
  EMBER_CHECK(weight_decay >= 0, "optimizer: weight_decay must be >= 0, got ", weight_decay);
  auto compiled = std::make_shared<CompiledGroups>();
  for (auto& g : groups) {
    EMBER_CHECK(g.lr_scale >= 0, "optimizer: parameter group '", g.pattern, "': lr_scale must be >= 0, got ",
                g.lr_scale);
    EMBER_CHECK(!g.weight_decay || *g.weight_decay >= 0, "optimizer: parameter group '", g.pattern,
                "': weight_decay must be >= 0, got ", *g.weight_decay);
    try {
      compiled->groups.emplace_back(std::regex(g.pattern), std::move(g));
    } catch (const std::regex_error& e) {
      EMBER_FAIL("optimizer: parameter group pattern '", g.pattern, "' is not a valid regex: ", e.what());
    }
  }
  groups_ = std::move(compiled);
  if (clipping_) {
    EMBER_CHECK(clipping_->threshold >= 0, "optimizer: clipping threshold must be >= 0, got ", clipping_->threshold);
    EMBER_CHECK(clipping_->kind == GradientClipping::Kind::value || clipping_->norm_type > 0,
                "optimizer: clipping norm_type must be > 0, got ", clipping_->norm_type);
  }
}

Optimizer::Hyper Optimizer::resolve(const std::string& path, double lr) const {
  for (const auto& [re, g] : groups_->groups) {
    if (std::regex_search(path, re)) return {lr * g.lr_scale, g.weight_decay.value_or(weight_decay_), g.lr_scale};
  }
  return {lr, weight_decay_, 1};
}

namespace {
DynTensor on(const DynTensor& t, const DynTensor& like) {
  DynTensor r = t;
  if (r.dtype() != like.dtype()) r = r.cast(like.dtype());
  if (!(r.device() == like.device())) r = r.to(like.device());
  return r;
}
}  // namespace

void Optimizer::step_params(const Slots& params, GradientsParams grads, double lr, const DynTensor& lr_tensor) {
  if (lr_tensor.defined()) {
    EMBER_CHECK(capturable(), name(), ".step: a learning rate tensor is read on the device, which needs a capturable "
                "optimizer (Adam or AdamW with capturable = true); pass a double");
    EMBER_CHECK(lr_tensor.shape().rank() == 0 && is_float(lr_tensor.dtype()), name(),
                ".step: the learning rate tensor must be a floating 0-d tensor, got ", lr_tensor.dtype(), " ",
                lr_tensor.shape());
  } else {
    EMBER_CHECK(std::isfinite(lr) && lr >= 0, name(), ".step: lr must be finite and >= 0, got ", lr);
  }
  NoGradGuard no_grad;
  // capturable: the learning rate as an f32 0-d tensor on each parameter's device (made once a
  // step from a double; recorded in a graph as the capture's value)
  std::vector<std::pair<Device, DynTensor>> lr_on;
  auto lr_for = [&](const Device& d) {
    for (auto& [dev, t] : lr_on)
      if (dev == d) return t;
    DynTensor t = lr_tensor.defined() ? lr_tensor.detach() : DynTensor::full(Shape{}, Scalar(lr), DType::f32, d);
    if (t.dtype() != DType::f32) t = t.cast(DType::f32);
    if (!(t.device() == d)) t = t.to(d);
    lr_on.emplace_back(d, t);
    return t;
  };
  // Only the module's trainable parameters take part (clipping included).
  GradientsParams used;
  for (const auto& [path, p] : params) {
    if (p->frozen()) continue;
    auto g = grads.get(p->id());
    if (!g) continue;
    EMBER_CHECK(g->shape() == p->shape(), name(), ".step: the gradient of '", path, "' has shape ", g->shape(),
                ", the parameter ", p->shape());
    used.set(p->id(), *g);
  }
  if (clipping_) clipping_->apply(used);

  // Compute every new value and state first, then commit: an Error leaves the state as it was.
  // Each parameter's tensor is moved into its update, so the new value can take its memory when
  // the module was moved into step() (nothing else holds it); a module passed as a copy shares
  // its tensors with the caller's, whose values stay. After an Error the module given to step()
  // is discarded with the stack, so its emptied parameters are never seen.
  //
  // In place: a parameter that nothing else holds also gives its state to the update (moved out
  // of state_), so the new state can take the old one's memory. An Error after that drops the
  // state of the parameters reached (the module they belonged to was moved in and is gone).
  std::vector<Item> items;
  std::vector<nn::Param*> owners;
  std::vector<uint64_t> moved;  // the ids whose state was moved out of state_
  try {
    for (const auto& [path, p] : params) {
      if (p->frozen()) continue;
      auto g = used.get(p->id());
      if (!g) continue;
      auto it = state_.find(p->id());
      const bool in_place = p->value().defined() && p->value().primitive().use_count() == 1;
      ParamState st;
      if (it == state_.end()) {
        st = init_state(p->value());
      } else if (in_place) {
        st = std::move(it->second);
        moved.push_back(p->id());
      } else {
        st = it->second;
      }
      for (auto& [k, t] : st.tensors) t = on(t, p->value());
      st.step += 1;
      DynTensor grad = on(*g, p->value());
      Hyper hyper = resolve(path, lr);
      if (capturable()) hyper.lr_tensor = lr_for(p->value().device());
      items.push_back({p->take(), std::move(grad), std::move(st), std::move(hyper)});
      owners.push_back(p);
    }
    update_all(items);
  } catch (...) {
    for (uint64_t id : moved) state_.erase(id);
    throw;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    owners[i]->set(std::move(items[i].next));
    state_[owners[i]->id()] = std::move(items[i].state);
  }
}

void Optimizer::update_all(std::vector<Item>& items) const {
  for (Item& it : items) it.next = update(std::move(it.param), std::move(it.grad), it.state, it.hyper);
}

nn::NamedTensors Optimizer::save_state(const Slots& params) const {
  nn::NamedTensors out;
  for (const auto& [path, p] : params) {
    auto it = state_.find(p->id());
    if (it == state_.end()) continue;
    const ParamState& st = it->second;
    // a capturable optimizer's count is the device's (graph replays advance it, not the host)
    const int64_t step = st.device_step.defined() ? int64_t(std::llround(st.device_step.item())) : st.step;
    out.emplace_back(path + ".step", DynTensor::full(Shape{}, Scalar(step), DType::i64, p->value().device()));
    for (const auto& [k, t] : st.tensors) out.emplace_back(path + "." + k, t);
  }
  return out;
}

void Optimizer::load_state(const Slots& params, const nn::NamedTensors& state) {
  std::map<std::string, const DynTensor*> source;
  std::vector<std::string> duplicated;
  for (const auto& [k, t] : state) {
    if (!source.emplace(k, &t).second) duplicated.push_back(k);
  }
  const std::vector<std::string> names = state_names();
  std::vector<std::string> missing, mismatched;
  std::vector<std::pair<uint64_t, std::optional<ParamState>>> plan;
  for (const auto& [path, p] : params) {
    const std::string prefix = path + ".";
    // This parameter's keys are "<path>.<name>" with no '.' in <name>.
    std::vector<std::map<std::string, const DynTensor*>::iterator> mine;
    for (auto it = source.lower_bound(prefix); it != source.end() && it->first.compare(0, prefix.size(), prefix) == 0;
         ++it) {
      if (it->first.find('.', prefix.size()) == std::string::npos) mine.push_back(it);
    }
    if (mine.empty()) {
      plan.emplace_back(p->id(), std::nullopt);
      continue;
    }
    ParamState st;
    bool ok = true;
    auto step_it = source.find(prefix + "step");
    if (step_it == source.end()) {
      missing.push_back(prefix + "step");
      ok = false;
    } else {
      const DynTensor& s = *step_it->second;
      if (s.numel() != 1) {
        mismatched.push_back(prefix + "step: expected one element, got shape " + s.shape().str());
        ok = false;
      } else {
        double v = s.item();
        if (!(v >= 0 && v == std::floor(v))) {
          mismatched.push_back(prefix + "step: expected a count >= 0, got " + std::to_string(v));
          ok = false;
        }
        st.step = static_cast<int64_t>(v);
      }
    }
    for (const auto& n : names) {
      auto it = source.find(prefix + n);
      if (it == source.end()) {
        missing.push_back(prefix + n);
        ok = false;
        continue;
      }
      const DynTensor& t = *it->second;
      if (t.shape() != p->shape()) {
        mismatched.push_back(prefix + n + ": state " + t.shape().str() + " vs parameter " + p->shape().str());
        ok = false;
        continue;
      }
      st.tensors[n] = on(t.detach(), p->value());
    }
    std::set<std::string> expected(names.begin(), names.end());
    expected.insert("step");
    for (auto it : mine) {
      if (expected.count(it->first.substr(prefix.size()))) source.erase(it);
    }
    if (ok) plan.emplace_back(p->id(), std::move(st));
  }
  if (!source.empty() || !missing.empty() || !mismatched.empty() || !duplicated.empty()) {
    std::ostringstream os;
    os << name() << ".load_state_dict: the state does not match the module and optimizer";
    auto list = [&](const char* what, const std::vector<std::string>& keys) {
      if (keys.empty()) return;
      os << "\n" << what << " (" << keys.size() << "):";
      for (const auto& k : keys) os << "\n  " << k;
    };
    std::vector<std::string> unexpected;
    for (const auto& [k, t] : source) unexpected.push_back(k);
    list("unexpected keys", unexpected);
    list("missing keys", missing);
    list("mismatched", mismatched);
    list("duplicated keys", duplicated);
    EMBER_FAIL(os.str());
  }
  for (auto& [id, st] : plan) {
    if (st) {
      state_[id] = std::move(*st);
    } else {
      state_.erase(id);
    }
  }
}

}  // namespace ember::optim
