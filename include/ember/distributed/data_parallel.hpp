// DataParallel: PyTorch's DistributedDataParallel for ember's value-type modules.
//
//   # Model model = given<Model>(); optim::Adam opt; double lr = 1e-3; std::vector<Batch> my_shard;
//   # DynTensor loss_1 = given<DynTensor>(), loss_2 = given<DynTensor>();
//   auto pg = distributed::init_process_group();
//   distributed::DataParallel dp(pg);                  // {.bucket_mb = 25}
//   model = dp.broadcast_parameters(model);            // checks shapes, then rank 0's values everywhere
//   for (auto& batch : my_shard) {
//     DynTensor loss = nn::cross_entropy(model.forward(batch.x), batch.y);
//     optim::GradientsParams grads = dp.backward(model, loss);   // the mean over ranks
//     model = opt.step(model, std::move(grads), lr);
//   }
//   // gradient accumulation: the micro-batches but the last run without communication
//   { auto pause = dp.no_sync(); dp.backward(model, loss_1); }
//   auto grads = dp.backward(model, loss_2);              // mean over ranks of loss_1's + loss_2's gradients
//
// Gradients are reduced in buckets of about `bucket_mb` MiB, filled in reverse parameter order
// (the order in which backward produces them). A bucket's all-reduce starts from inside the
// backward, through the autodiff decorator's leaf-gradient hook, as soon as its last gradient is
// final, so communication overlaps the rest of the backward; buckets start in index order on
// every rank, which keeps the collectives' order identical everywhere. Parameters that are frozen
// take no part. A trainable parameter that the backward does not reach gets a zero gradient
// (every rank must reduce every bucket); PyTorch raises instead unless find_unused_parameters.
// The bucketing uses tensor ops (cat, narrow), so it is the same for any ProcessGroup.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/distributed/process_group.hpp"
#include "ember/nn/module.hpp"
#include "ember/optim/gradients.hpp"

namespace ember::distributed {

// Options of DataParallel.
struct DataParallelOptions {
  double bucket_mb = 25;  // bucket capacity in MiB (PyTorch's bucket_cap_mb)
};

// What the last backward() did, for tests and the Learner's per-rank timings.
struct DataParallelStats {
  int buckets = 0;                       // buckets the gradients were reduced in
  int started_during_backward = 0;       // buckets whose all-reduce began while backward still had gradients to make
  std::chrono::nanoseconds backward{0};  // the autodiff backward, hook work included
  std::chrono::nanoseconds communication_wait{0};  // blocked on the buckets after backward
};

// Data-parallel training over a process group (torch.nn.parallel.DistributedDataParallel): the same parameters on
// every rank, gradients averaged over ranks (see the file comment). Movable, not copyable.
class DataParallel {
 public:
  // Throws ember::Error when `group` is null or bucket_mb is not positive.
  explicit DataParallel(ProcessGroupPtr group, DataParallelOptions options = {});
  ~DataParallel();
  // Takes over the group, buckets and state; the moved-from object must not be used again.
  DataParallel(DataParallel&&) noexcept;
  // Takes over the group, buckets and state; the moved-from object must not be used again.
  DataParallel& operator=(DataParallel&&) noexcept;

  // Checks that every rank has the same parameters and buffers (paths, shapes, dtypes), then
  // gives every rank rank 0's values. Throws an Error naming the first parameter that differs.
  template <class M>
  M broadcast_parameters(M module) {
    std::vector<Entry> entries;
    nn::for_each_param(module, [&](const std::string& path, nn::Param& p) { entries.push_back({path, &p, nullptr}); });
    nn::for_each_buffer(module, [&](const std::string& path, nn::Buffer& b) {
      entries.push_back({path, nullptr, &b});
    });
    broadcast_entries(entries);
    return module;
  }

  // The backward of `loss` (a scalar computed from `module`'s parameters on an autodiff device)
  // and the mean over ranks of the trainable parameters' gradients. Inside a no_sync() scope:
  // the local gradients, kept and added to the next synchronised backward's.
  template <class M>
  optim::GradientsParams backward(const M& module, const DynTensor& loss) {
    std::vector<std::pair<std::string, const nn::Param*>> params;
    nn::for_each_param(const_cast<M&>(module), [&](const std::string& path, nn::Param& p) {
      if (!p.frozen()) params.emplace_back(path, &p);
    });
    return backward_params(params, loss);
  }

  // The mean over ranks of gradients computed elsewhere (loops that run their own backward, such
  // as the Learner's, through train/data_parallel.hpp): the same buckets, reduced after the
  // backward instead of during it. `params` in module order, the same on every rank.
  void all_reduce_gradients(const std::vector<const nn::Param*>& params, optim::GradientsParams& grads);

  // While the returned object lives, backward() does not communicate (gradient accumulation).
  class NoSync {
   public:
    // Pauses the communication of `dp`; destruction restores the previous setting (nestable).
    explicit NoSync(DataParallel& dp);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DataParallel* dp_;
    bool prev_;
  };
  // A guard during whose lifetime backward() does not communicate (torch's no_sync()).
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  // Counters and timings of the last backward().
  const DataParallelStats& last_stats() const;
  // The process group it reduces over.
  ProcessGroup& group() const;

 private:
  struct Entry {
    std::string path;
    nn::Param* param;
    nn::Buffer* buffer;
  };
  struct Reducer;
  void broadcast_entries(const std::vector<Entry>& entries);
  optim::GradientsParams backward_params(const std::vector<std::pair<std::string, const nn::Param*>>& params,
                                         const DynTensor& loss);
  std::unique_ptr<Reducer> r_;
};

}  // namespace ember::distributed
