// DataParallel's reducer: the parameter check and broadcast, the buckets, and the backward with
// the leaf-gradient hook that starts each bucket's all-reduce (data_parallel.hpp says what).
#include "ember/distributed/data_parallel.hpp"

#include "ember/core/bit.hpp"
#include <map>
#include <sstream>
#include <unordered_map>

#include "ember/core/hash.hpp"
#include "ember/decorators/autodiff.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::distributed {

using Clock = std::chrono::steady_clock;

struct DataParallel::Reducer {
  ProcessGroupPtr group;
  DataParallelOptions options;
  bool no_sync = false;
  std::map<uint64_t, DynTensor> accumulated;  // by parameter id: gradients of no_sync backwards
  DataParallelStats stats;

  // The buckets of the last layout: parameter indices (into backward's list) in reverse order.
  std::vector<std::vector<size_t>> buckets;
  std::vector<std::pair<Shape, DType>> layout;
  void build_buckets(const std::vector<std::pair<std::string, const nn::Param*>>& params);
};

DataParallel::DataParallel(ProcessGroupPtr group, DataParallelOptions options) : r_(std::make_unique<Reducer>()) {
  EMBER_CHECK(group, "DataParallel: the process group is null (call init_process_group first)");
  EMBER_CHECK(options.bucket_mb > 0, "DataParallel: bucket_mb must be positive, got ", options.bucket_mb);
  r_->group = std::move(group);
  r_->options = options;
}
DataParallel::~DataParallel() = default;
DataParallel::DataParallel(DataParallel&&) noexcept = default;
DataParallel& DataParallel::operator=(DataParallel&&) noexcept = default;

const DataParallelStats& DataParallel::last_stats() const { return r_->stats; }
ProcessGroup& DataParallel::group() const { return *r_->group; }

DataParallel::NoSync::NoSync(DataParallel& dp) : dp_(&dp), prev_(dp.r_->no_sync) { dp.r_->no_sync = true; }
DataParallel::NoSync::~NoSync() { dp_->r_->no_sync = prev_; }

namespace {
std::string describe(const DynTensor& t) {
  std::ostringstream os;
  os << t.dtype() << " " << t.shape();
  return os.str();
}
DynTensor i64_tensor(const std::vector<int64_t>& v) {
  return DynTensor::from_vector(v, Shape({static_cast<int64_t>(v.size())}), Device::cpu());
}
}  // namespace

void DataParallel::broadcast_entries(const std::vector<Entry>& entries) {
  ProcessGroup& pg = *r_->group;
  // Like PyTorch's _verify_param_shape_across_processes: the count first, then one hash per
  // entry of (path, dtype, shape), so that the error can name the entry that differs.
  std::vector<int64_t> hashes;
  for (const Entry& e : entries) {
    const DynTensor& v = e.param ? e.param->value() : e.buffer->value;
    hashes.push_back(ember::bit_cast<int64_t>(fnv1a(e.path + " " + describe(v))));
  }
  const int64_t n = static_cast<int64_t>(entries.size());
  std::vector<int64_t> counts = pg.all_gather(i64_tensor({n})).wait().to_vector<int64_t>();
  for (int r = 0; r < pg.size(); ++r)
    EMBER_CHECK(counts[static_cast<size_t>(r)] == n, "DataParallel: rank ", pg.rank(), " has ", n,
                " parameters and buffers but rank ", r, " has ", counts[static_cast<size_t>(r)],
                " (every rank must build the same model)");
  std::vector<int64_t> all = pg.all_gather(i64_tensor(hashes)).wait().to_vector<int64_t>();
  for (int r = 0; r < pg.size(); ++r)
    for (int64_t i = 0; i < n; ++i)
      if (all[static_cast<size_t>(r * n + i)] != hashes[static_cast<size_t>(i)]) {
        const Entry& e = entries[static_cast<size_t>(i)];
        EMBER_FAIL("DataParallel: ", e.param ? "parameter" : "buffer", " '", e.path, "' differs between ranks: rank ",
                   pg.rank(), " has ", describe(e.param ? e.param->value() : e.buffer->value), ", rank ", r,
                   " has another shape or dtype (every rank must build the same model)");
      }
  // Then rank 0's values: every broadcast issued before the first wait.
  std::vector<Work> works;
  for (const Entry& e : entries)
    works.push_back(pg.broadcast(e.param ? e.param->value().detach() : e.buffer->value, 0));
  for (size_t i = 0; i < entries.size(); ++i) {
    DynTensor v = works[i].wait();
    if (entries[i].param)
      entries[i].param->set(std::move(v));
    else
      entries[i].buffer->value = std::move(v);
  }
}

void DataParallel::Reducer::build_buckets(const std::vector<std::pair<std::string, const nn::Param*>>& params) {
  std::vector<std::pair<Shape, DType>> now;
  for (const auto& [path, p] : params) now.emplace_back(p->shape(), p->value().dtype());
  if (now == layout && !buckets.empty()) return;
  layout = std::move(now);
  buckets.clear();
  const double cap = options.bucket_mb * 1024 * 1024;
  double bytes = 0;
  for (size_t k = params.size(); k-- > 0;) {
    const DynTensor& v = params[k].second->value();
    double b = double(v.numel()) * double(dtype_size(v.dtype()));
    // One dtype per bucket (a bucket is one flat tensor); a new bucket when this one is full.
    bool fresh =
        buckets.empty() || bytes + b > cap || params[buckets.back().front()].second->value().dtype() != v.dtype();
    if (fresh) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(k);
    bytes += b;
  }
}

void DataParallel::all_reduce_gradients(const std::vector<const nn::Param*>& params, optim::GradientsParams& grads) {
  Reducer& r = *r_;
  std::vector<std::pair<std::string, const nn::Param*>> ps;
  for (const nn::Param* p : params)
    if (!p->frozen()) ps.emplace_back(std::string(), p);
  r.build_buckets(ps);
  NoGradGuard off;
  std::vector<Work> works;
  for (const auto& bucket : r.buckets) {
    std::vector<DynTensor> flat;
    for (size_t k : bucket) {
      const DynTensor& v = ps[k].second->value();
      auto g = grads.get(*ps[k].second);
      flat.push_back(g ? reshape(*g, Sizes{-1}) : DynTensor::zeros(Shape({v.numel()}), v.dtype(), v.device()));
    }
    works.push_back(r.group->all_reduce(flat.size() == 1 ? flat[0] : cat(flat, 0), ReduceOp::avg));
  }
  for (size_t b = 0; b < works.size(); ++b) {
    DynTensor reduced = works[b].wait();
    int64_t offset = 0;
    for (size_t k : r.buckets[b]) {
      const DynTensor& v = ps[k].second->value();
      grads.set(*ps[k].second, reshape(narrow(reduced, 0, offset, v.numel()),
                                       Sizes(v.shape().dims().begin(), v.shape().dims().end())));
      offset += v.numel();
    }
  }
}

optim::GradientsParams DataParallel::backward_params(
    const std::vector<std::pair<std::string, const nn::Param*>>& params, const DynTensor& loss) {
  Reducer& r = *r_;
  EMBER_CHECK(loss.defined() && loss.device().is_autodiff(),
              "DataParallel::backward: the loss must be a tensor on an "
              "autodiff device (e.g. Device::cpu().autodiff())");
  const Device device = loss.device();
  const auto t0 = Clock::now();
  r.stats = {};

  if (r.no_sync) {  // local gradients only, added to those of earlier no_sync steps
    Gradients g = loss.backward();
    std::vector<const nn::Param*> ps;
    for (const auto& [path, p] : params) ps.push_back(p);
    optim::GradientsParams local = optim::GradientsParams::from_params(ps, g);
    NoGradGuard off;
    for (const auto& [id, grad] : local.items()) {
      auto it = r.accumulated.find(id);
      r.accumulated[id] = it == r.accumulated.end() ? grad : it->second + grad;
    }
    optim::GradientsParams out;
    for (const auto& [id, grad] : r.accumulated) out.set(id, grad);
    r.stats.backward = Clock::now() - t0;
    return out;
  }

  r.build_buckets(params);
  const size_t nb = r.buckets.size();
  std::unordered_map<uint64_t, size_t> param_of_leaf;  // leaf key -> index into params
  std::vector<size_t> bucket_of(params.size()), slot_of(params.size());
  for (size_t b = 0; b < nb; ++b)
    for (size_t s = 0; s < r.buckets[b].size(); ++s) {
      size_t k = r.buckets[b][s];
      bucket_of[k] = b;
      slot_of[k] = s;
    }
  for (size_t k = 0; k < params.size(); ++k)
    if (auto key = autodiff::leaf_key(params[k].second->value().primitive())) param_of_leaf[*key] = k;

  std::vector<std::vector<DynTensor>> flat(nb);  // each bucket's gradients, flattened
  std::vector<size_t> missing(nb);
  size_t outstanding = 0;  // gradients the backward has still to produce
  for (size_t b = 0; b < nb; ++b) {
    flat[b].resize(r.buckets[b].size());
    missing[b] = r.buckets[b].size();
    outstanding += missing[b];
  }
  std::vector<Work> works(nb);
  size_t next = 0;  // buckets start in index order on every rank
  bool in_backward = true;
  auto start_ready = [&](bool all) {
    NoGradGuard off;
    while (next < nb && (missing[next] == 0 || all)) {
      for (size_t s = 0; s < flat[next].size(); ++s)
        if (!flat[next][s].defined()) {  // not reached by this backward: what no_sync kept, or zeros
          const nn::Param& p = *params[r.buckets[next][s]].second;
          auto acc = r.accumulated.find(p.id());
          flat[next][s] = acc != r.accumulated.end()
                              ? reshape(acc->second, Sizes{-1})
                              : DynTensor::zeros(Shape({p.value().numel()}), p.value().dtype(), device);
        }
      DynTensor bucket = flat[next].size() == 1 ? flat[next][0] : cat(flat[next], 0);
      works[next] = r.group->all_reduce(bucket, ReduceOp::avg);
      if (in_backward && outstanding > 0) ++r.stats.started_during_backward;
      ++next;
    }
  };
  autodiff::BackwardOptions opts;
  opts.on_leaf_gradient = [&](uint64_t key, const PrimitivePtr& g) {
    auto it = param_of_leaf.find(key);
    if (it == param_of_leaf.end()) return;  // a leaf that is not one of the module's parameters
    size_t k = it->second;
    NoGradGuard off;
    DynTensor grad(g, device);
    const nn::Param* p = params[k].second;
    if (auto acc = r.accumulated.find(p->id()); acc != r.accumulated.end()) grad = grad + acc->second;
    size_t b = bucket_of[k];
    flat[b][slot_of[k]] = reshape(grad, Sizes{-1});
    --missing[b];
    --outstanding;
    start_ready(false);
  };
  // The returned map is not needed: every gradient went through the hook.
  autodiff::backward(device.backend(), loss.primitive(), nullptr, opts);
  in_backward = false;
  start_ready(true);
  r.accumulated.clear();
  const auto t1 = Clock::now();
  r.stats.backward = t1 - t0;
  r.stats.buckets = static_cast<int>(nb);

  optim::GradientsParams out;
  for (size_t b = 0; b < nb; ++b) {
    DynTensor reduced = works[b].wait();
    int64_t offset = 0;
    for (size_t k : r.buckets[b]) {
      const DynTensor& v = params[k].second->value();
      DynTensor part = narrow(reduced, 0, offset, v.numel());
      out.set(params[k].second->id(), reshape(part, Sizes(v.shape().dims().begin(), v.shape().dims().end())));
      offset += v.numel();
    }
  }
  r.stats.communication_wait = Clock::now() - t1;
  return out;
}

}  // namespace ember::distributed
