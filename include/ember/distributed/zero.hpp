// ZeRO stage 1: each rank keeps the optimizer state (Adam's moments, SGD's momentum) of a
// 1/N share of the parameters, as PyTorch's ZeroRedundancyOptimizer does.
//
//   # auto pg = distributed::init_process_group(); Model model = given<Model>();
//   # DynTensor loss = given<DynTensor>(); double lr = 1e-3;
//   distributed::ZeroOptimizer zero(pg, std::make_shared<optim::AdamW>(optim::AdamWConfig{}.init()));
//   optim::GradientsParams local = optim::GradientsParams::from(model, loss.backward());  // not reduced
//   model = zero.step(model, std::move(local), lr);
//   nn::NamedTensors full = zero.state_dict(model);    // every rank's share, on every rank
//   zero.load_state_dict(model, full);                 // keeps this rank's share; any world size
//
// A step: the local gradients are laid out as one flat buffer ordered by owner and padded to
// equal shares, reduce-scattered (mean over ranks) so each rank receives its own parameters'
// gradients, the wrapped optimizer updates those parameters only (it leaves parameters without
// a gradient untouched), and the updated shares are all-gathered into every rank's module.
// Parameters are assigned to ranks greedily by size (largest first, to the least loaded rank),
// the same on every rank. Every trainable parameter must have one dtype. The wrapped optimizer's
// gradient clipping, if configured, sees only the local share (not the global norm).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/distributed/process_group.hpp"
#include "ember/optim/optimizer.hpp"

namespace ember::distributed {

// ZeRO stage 1 over a process group (torch.distributed.optim.ZeroRedundancyOptimizer): wraps an optimizer so that
// each rank keeps the state of its share of the parameters only.
class ZeroOptimizer {
 public:
  // Shares ownership of `optimizer`, which is then stepped through this object only. Throws ember::Error when
  // `group` or `optimizer` is null.
  ZeroOptimizer(ProcessGroupPtr group, std::shared_ptr<optim::Optimizer> optimizer);

  // Averages the local gradients over the ranks, updates this rank's parameters with the wrapped optimizer and
  // all-gathers the new values into every rank's module. A collective: every rank must call it.
  template <class M>
  M step(M module, optim::GradientsParams local_grads, double lr) {
    Params ps = params_of(module);
    reduce_scatter_grads(ps, local_grads);  // local_grads now holds this rank's reduced share only
    module = opt_->step(std::move(module), std::move(local_grads), lr);
    all_gather_params(params_of(module));
    return module;
  }

  // The full optimizer state, gathered from every rank (the same NamedTensors on every rank, as
  // the wrapped optimizer's state_dict would give on one process).
  template <class M>
  nn::NamedTensors state_dict(const M& module) const {
    return gather_state(opt_->state_dict(module));
  }
  // Keeps the entries of this rank's parameters (under the current world size's assignment).
  template <class M>
  void load_state_dict(const M& module, const nn::NamedTensors& full) {
    opt_->load_state_dict(module, own_entries(params_of(const_cast<M&>(module)), full));
  }

  // The rank that owns each trainable parameter, in parameter order.
  template <class M>
  std::vector<int> owners(const M& module) const {
    return assign(params_of(const_cast<M&>(module)));
  }
  // The wrapped optimizer, holding this rank's share of the state.
  optim::Optimizer& optimizer() const { return *opt_; }

 private:
  using Params = std::vector<std::pair<std::string, nn::Param*>>;
  template <class M>
  static Params params_of(M& module) {
    Params out;
    nn::for_each_param(module, [&](const std::string& path, nn::Param& p) {
      if (!p.frozen()) out.emplace_back(path, &p);
    });
    return out;
  }
  std::vector<int> assign(const Params& ps) const;
  // Replaces `grads` by this rank's share of the reduced gradients.
  void reduce_scatter_grads(const Params& ps, optim::GradientsParams& grads);
  void all_gather_params(const Params& ps);
  nn::NamedTensors gather_state(const nn::NamedTensors& mine) const;
  nn::NamedTensors own_entries(const Params& ps, const nn::NamedTensors& full) const;

  ProcessGroupPtr group_;
  std::shared_ptr<optim::Optimizer> opt_;
};

}  // namespace ember::distributed
