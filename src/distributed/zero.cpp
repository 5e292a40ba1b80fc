// ZeroOptimizer: the owner assignment, the flat reduce-scatter and all-gather, and the
// gathering of the sharded state (zero.hpp says what and why).
#include "ember/distributed/zero.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "ember/store/safetensors.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::distributed {

ZeroOptimizer::ZeroOptimizer(ProcessGroupPtr group, std::shared_ptr<optim::Optimizer> optimizer)
    : group_(std::move(group)), opt_(std::move(optimizer)) {
  EMBER_CHECK(group_, "ZeroOptimizer: the process group is null (call init_process_group first)");
  EMBER_CHECK(opt_, "ZeroOptimizer: the optimizer is null");
}

std::vector<int> ZeroOptimizer::assign(const Params& ps) const {
  const int W = group_->size();
  std::vector<size_t> order(ps.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Largest first, ties by position: the same on every rank.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ps[a].second->value().numel() > ps[b].second->value().numel(); });
  std::vector<int64_t> load(static_cast<size_t>(W), 0);
  std::vector<int> owner(ps.size(), 0);
  for (size_t k : order) {
    int r = int(std::min_element(load.begin(), load.end()) - load.begin());
    owner[k] = r;
    load[static_cast<size_t>(r)] += ps[k].second->value().numel();
  }
  return owner;
}

namespace {

struct Layout {
  std::vector<int> owner;
  std::vector<std::vector<size_t>> owned;  // per rank, parameter indices in order
  int64_t share = 0;                       // elements per rank, padded to the largest share
  DType dtype = DType::f32;
  Device device = Device::cpu();
};

template <class P>
Layout layout_of(const P& ps, std::vector<int> owner, int world, const char* who) {
  Layout l;
  l.owner = std::move(owner);
  l.owned.resize(static_cast<size_t>(world));
  EMBER_CHECK(!ps.empty(), who, ": the module has no trainable parameters");
  l.dtype = ps[0].second->value().dtype();
  l.device = ps[0].second->value().device();
  std::vector<int64_t> sizes(static_cast<size_t>(world), 0);
  for (size_t k = 0; k < ps.size(); ++k) {
    const DynTensor& v = ps[k].second->value();
    EMBER_CHECK(v.dtype() == l.dtype, who, ": every trainable parameter must have one dtype; '", ps[k].first, "' is ",
                v.dtype(), ", '", ps[0].first, "' is ", l.dtype);
    l.owned[static_cast<size_t>(l.owner[k])].push_back(k);
    sizes[static_cast<size_t>(l.owner[k])] += v.numel();
  }
  l.share = *std::max_element(sizes.begin(), sizes.end());
  return l;
}

// The flat [share] buffer of rank r's parameters, taking each one's tensor from `get`.
template <class P, class F>
DynTensor flat_share(const P& ps, const Layout& l, size_t r, F get) {
  std::vector<DynTensor> parts;
  int64_t used = 0;
  for (size_t k : l.owned[r]) {
    parts.push_back(reshape(get(k), Sizes{-1}));
    used += ps[k].second->value().numel();
  }
  if (used < l.share) parts.push_back(DynTensor::zeros(Shape({l.share - used}), l.dtype, l.device));
  return parts.size() == 1 ? parts[0] : cat(parts, 0);
}

Sizes sizes_of(const DynTensor& v) { return Sizes(v.shape().dims().begin(), v.shape().dims().end()); }

}  // namespace

void ZeroOptimizer::reduce_scatter_grads(const Params& ps, optim::GradientsParams& grads) {
  const int W = group_->size();
  const size_t me = static_cast<size_t>(group_->rank());
  Layout l = layout_of(ps, assign(ps), W, "ZeroOptimizer::step");
  NoGradGuard off;
  std::vector<DynTensor> all;
  for (size_t r = 0; r < static_cast<size_t>(W); ++r)
    all.push_back(flat_share(ps, l, r, [&](size_t k) {
      const nn::Param& p = *ps[k].second;
      auto g = grads.get(p);  // a parameter the backward did not reach: a zero gradient
      return g ? *g : DynTensor::zeros(p.shape(), l.dtype, l.device);
    }));
  DynTensor mine = group_->reduce_scatter(cat(all, 0), ReduceOp::avg).wait();
  grads = optim::GradientsParams();
  int64_t offset = 0;
  for (size_t k : l.owned[me]) {
    const nn::Param& p = *ps[k].second;
    grads.set(p, reshape(narrow(mine, 0, offset, p.value().numel()), sizes_of(p.value())));
    offset += p.value().numel();
  }
}

void ZeroOptimizer::all_gather_params(const Params& ps) {
  const int W = group_->size();
  const size_t me = static_cast<size_t>(group_->rank());
  Layout l = layout_of(ps, assign(ps), W, "ZeroOptimizer::step");
  NoGradGuard off;
  DynTensor mine = flat_share(ps, l, me, [&](size_t k) { return ps[k].second->value().detach(); });
  DynTensor all = group_->all_gather(mine).wait();  // [W, share]
  for (size_t r = 0; r < static_cast<size_t>(W); ++r) {
    if (r == me) continue;  // this rank's own values are already in place
    int64_t offset = 0;
    for (size_t k : l.owned[r]) {
      nn::Param& p = *ps[k].second;
      DynTensor row = narrow(all, 0, int64_t(r), 1);
      p.set(reshape(narrow(reshape(row, Sizes{-1}), 0, offset, p.value().numel()), sizes_of(p.value())));
      offset += p.value().numel();
    }
  }
}

// Each rank's entries as one safetensors buffer, all-gathered (sizes first, then the bytes
// padded to the largest), and decoded on every rank.
nn::NamedTensors ZeroOptimizer::gather_state(const nn::NamedTensors& mine) const {
  store::TensorMap map;
  for (const auto& [name, t] : mine) map.insert(name, t.detach());
  std::vector<std::byte> bytes = store::save_safetensors_to_memory(map);
  const int W = group_->size();
  DynTensor len = DynTensor::from_vector(std::vector<int64_t>{int64_t(bytes.size())}, Shape({1}), Device::cpu());
  std::vector<int64_t> lens = group_->all_gather(len).wait().to_vector<int64_t>();
  int64_t longest = *std::max_element(lens.begin(), lens.end());
  std::vector<uint8_t> padded(static_cast<size_t>(longest), 0);
  std::memcpy(padded.data(), bytes.data(), bytes.size());
  DynTensor all = group_->all_gather(DynTensor::from_vector(padded, Shape({longest}), Device::cpu())).wait();
  std::vector<uint8_t> flat = all.to_vector<uint8_t>();
  const Device device = mine.empty() ? Device::cpu() : mine.front().second.device();
  nn::NamedTensors out;
  for (int r = 0; r < W; ++r) {
    std::span<const std::byte> part(reinterpret_cast<const std::byte*>(flat.data()) + r * longest,
                                    static_cast<size_t>(lens[static_cast<size_t>(r)]));
    store::TensorMap m = store::load_safetensors_from_memory(part, "ZeroOptimizer state of rank " + std::to_string(r));
    for (const auto& [name, t] : m.entries()) out.emplace_back(name, DynTensor::from_data(t.into_data(), device));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

nn::NamedTensors ZeroOptimizer::own_entries(const Params& ps, const nn::NamedTensors& full) const {
  std::vector<int> owner = assign(ps);
  std::map<std::string, bool> mine;  // parameter path -> owned here
  for (size_t k = 0; k < ps.size(); ++k) mine[ps[k].first] = owner[k] == group_->rank();
  nn::NamedTensors out;
  for (const auto& [key, t] : full) {
    auto dot = key.rfind('.');
    EMBER_CHECK(dot != std::string::npos, "ZeroOptimizer::load_state_dict: key '", key,
                "' is not '<parameter path>.<state name>'");
    auto it = mine.find(key.substr(0, dot));
    // Keys of unknown parameters go to the owner of nothing: the wrapped optimizer on rank 0
    // reports them as unexpected.
    if (it == mine.end() ? group_->rank() == 0 : it->second) out.emplace_back(key, t);
  }
  return out;
}

}  // namespace ember::distributed
