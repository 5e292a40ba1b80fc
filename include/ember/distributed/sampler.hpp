// A dataset view that gives each rank its share of a dataset: PyTorch's DistributedSampler as
// an ember dataset view (data/views.hpp), so a DataLoader batches a rank's shard as usual.
//
//   # auto pg = distributed::init_process_group(); auto train_set = data::FashionMnist::train();
//   # auto batcher = [](std::vector<data::MnistItem> items, const Device& d) { return data::batch_mnist(std::move(items), d); };
//   auto shard = distributed::sharded(train_set, pg->rank(), pg->size(), {.seed = 7});
//   auto loader = data::DataLoaderBuilder(batcher).batch_size(32).build(shard);
//
// Each epoch (data::current_epoch(), which the DataLoader sets) the dataset is permuted with
// seed + epoch, the same permutation on every rank, and rank r takes items r, r + W, r + 2W, ...
// of it. Without drop_last the permutation is padded with its own first items up to a multiple
// of the world size, so every rank has ceil(n / W) items (as PyTorch does); with drop_last
// every rank has floor(n / W). Header-only: a program that uses it links ember::data.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ember/data/dataset.hpp"
#include "ember/data/rng.hpp"

namespace ember::distributed {

// Options of sharded() (torch.utils.data.DistributedSampler's shuffle, seed and drop_last).
struct ShardOptions {
  bool shuffle = true;     // permute with seed + epoch each epoch; false keeps the order
  uint64_t seed = 0;       // the same on every rank
  bool drop_last = false;  // drop the tail rather than pad: floor(n / W) items each
};

// Rank `rank`'s share of a dataset of items I (see the file comment); made by sharded().
template <class I>
class ShardedDataset final : public data::Dataset<I> {
 public:
  // Throws ember::Error when `inner` is null, `rank` is not in [0, world), or drop_last would leave every rank empty.
  ShardedDataset(data::DatasetPtr<I> inner, int rank, int world, ShardOptions o)
      : inner_(std::move(inner)), rank_(rank), world_(world), o_(o) {
    EMBER_CHECK(inner_, "sharded: the dataset is null");
    EMBER_CHECK(world >= 1 && rank >= 0 && rank < world, "sharded: rank ", rank, " is out of range for world size ",
                world);
    EMBER_CHECK(!o.drop_last || inner_->size() >= static_cast<size_t>(world), "sharded: drop_last with ",
                inner_->size(), " items and world size ", world, " leaves every rank empty");
  }
  std::optional<I> get(size_t index) const override {
    if (index >= size()) return std::nullopt;
    size_t n = inner_->size();
    size_t k = static_cast<size_t>(rank_) + index * static_cast<size_t>(world_);
    return inner_->get((*order(data::current_epoch()))[k % n]);
  }
  // ceil(n / world) items, or floor(n / world) with drop_last.
  size_t size() const override {
    size_t n = inner_->size(), w = static_cast<size_t>(world_);
    return o_.drop_last ? n / w : (n + w - 1) / w;
  }

 private:
  // The epoch's permutation, made once per epoch (get runs on several loader threads).
  std::shared_ptr<const std::vector<size_t>> order(uint64_t epoch) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = orders_.find(epoch);
    if (it != orders_.end()) return it->second;
    if (orders_.size() > 4) orders_.erase(orders_.begin());  // loaders run at most an epoch ahead
    std::vector<size_t> p;
    if (o_.shuffle) {
      p = data::permutation(inner_->size(), o_.seed + epoch);
    } else {
      p.resize(inner_->size());
      for (size_t i = 0; i < p.size(); ++i) p[i] = i;
    }
    auto shared = std::make_shared<const std::vector<size_t>>(std::move(p));
    orders_.emplace(epoch, shared);
    return shared;
  }

  data::DatasetPtr<I> inner_;
  int rank_, world_;
  ShardOptions o_;
  mutable std::mutex mu_;
  mutable std::map<uint64_t, std::shared_ptr<const std::vector<size_t>>> orders_;
};

// Rank `rank`'s share of `ds` among `world` ranks, as a dataset of the same item type; throws as ShardedDataset's
// constructor does.
template <class D>
auto sharded(std::shared_ptr<D> ds, int rank, int world, ShardOptions o = {}) {
  using I = typename std::remove_cv_t<D>::Item;
  return data::DatasetPtr<I>(std::make_shared<ShardedDataset<I>>(data::DatasetPtr<I>(std::move(ds)), rank, world, o));
}

}  // namespace ember::distributed
