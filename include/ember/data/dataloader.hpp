// DataLoader: batches of a dataset, built by a batcher on worker threads, in a deterministic
// order.
//
//   # auto train_step = [](const DynTensor& images, const DynTensor& labels) {};
//   auto loader = data::DataLoaderBuilder(data::batch_mnist)   // types deduced (lambdas too)
//                     .batch_size(128).shuffle(/*seed=*/42).num_workers(2)
//                     .build(data::FashionMnist::train());
//   for (int epoch = 0; epoch < 3; ++epoch)
//     for (const data::ImageBatch& b : *loader) train_step(b.images, b.labels);
//   double blocked = loader->wait_seconds();   // time the loop above waited for data, last epoch
//
// Epochs: each call of begin() starts a new epoch; epoch e (counted from 0, or from set_epoch)
// visits the items in permutation(size, seed + e) order when shuffling, else in index order,
// cut into batches of batch_size (the last one smaller, or dropped with drop_last). The same
// seed gives the same batches in every run, whatever the number of workers.
// Workers: with num_workers = 0 the consumer's thread builds each batch when it is needed.
// With N > 0 workers, N threads build batches ahead, at most `prefetch` (default 2 * N) beyond
// the one the consumer holds; batches are handed out in epoch order. current_epoch() (rng.hpp)
// returns the epoch on the thread building a batch, which seeds `augmented` views.
// wait_seconds(): the time the consumer spent inside begin() and ++ waiting for batches in the
// current (or last) epoch; with 0 workers that is the whole time spent building batches.
// Errors: an exception thrown while building a batch (by the dataset or the batcher) is
// rethrown to the consumer when it reaches that batch, and the epoch ends there. Starting a
// new epoch ends the previous one; destroying the loader or the last iterator of an epoch
// stops and joins its workers (workers finish the batch they are building first).
// split(n): n loaders for n devices. SplitMode::strided (the default) gives part j the batches
// j, j + n, j + 2n, ... of each epoch (the parts' counts differ by at most one); contiguous
// gives part j the j-th of n consecutive runs of batches. Parts share the dataset and seed,
// each runs its own workers, and each must run every epoch to stay in step with the others.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "ember/core/callable_traits.hpp"
#include "ember/core/device.hpp"
#include "ember/data/dataset.hpp"
#include "ember/data/rng.hpp"

namespace ember::data {

// A batcher turns items into a batch on a device.
template <class I, class B>
using Batcher = std::function<B(std::vector<I>, const Device&)>;

// How DataLoader::split divides an epoch's batches among parts: strided gives part j the batches j, j + n,
// j + 2n, ...; contiguous gives part j the j-th of n consecutive runs of batches.
enum class SplitMode { strided, contiguous };

// Settings of a DataLoader (set them through DataLoaderBuilder); the fields mirror torch.utils.data.DataLoader's.
struct LoaderOptions {
  size_t batch_size = 1;  // items per batch (must be positive); the last batch may be smaller unless drop_last
  std::optional<uint64_t> shuffle_seed;  // none: index order
  bool drop_last = false;                // drop the last, smaller batch of an epoch (torch's drop_last)
  size_t num_workers = 0;                // threads building batches ahead; 0: the consumer's thread builds each batch
  size_t prefetch = 0;                   // batches built ahead; 0: 2 * num_workers
  Device device = Device::default_device();  // the device batches are built on (passed to the batcher)
};

namespace detail {

// Dataset indices of each batch of epoch `epoch`.
std::vector<std::vector<size_t>> plan_batches(size_t dataset_size, const LoaderOptions& options, uint64_t epoch);
size_t count_batches(size_t dataset_size, const LoaderOptions& options);
// The batch positions (into an epoch of `num_batches`) that part `part` of `parts` gets.
std::vector<size_t> part_batches(size_t num_batches, size_t part, size_t parts, SplitMode mode);
void check_loader(size_t dataset_size, const LoaderOptions& options);

struct EpochStats;
// One epoch's production of batches (type-erased; see src/data/dataloader.cpp).
class EpochRun {
 public:
  using Produce = std::function<std::shared_ptr<const void>(size_t batch)>;
  EpochRun(size_t num_batches, size_t num_workers, size_t prefetch, Produce produce, std::shared_ptr<EpochStats> stats);
  ~EpochRun();
  EpochRun(const EpochRun&) = delete;
  EpochRun& operator=(const EpochRun&) = delete;
  // The next batch in order; nullptr when the epoch is over or stopped. Rethrows errors.
  std::shared_ptr<const void> next();
  void stop();  // ends the epoch and joins the workers

 private:
  struct State;
  std::unique_ptr<State> s_;
};

struct EpochStats {
  double wait_seconds = 0;  // written by the consumer's thread only
};

}  // namespace detail

// Iterates over a dataset in batches of type B, one epoch per begin(), built on worker threads in a
// deterministic order (like torch.utils.data.DataLoader; see the header comment). Iterate a loader from one
// thread at a time; usually made by DataLoaderBuilder::build.
template <class B>
class DataLoader {
 public:
  // Builds the batch of the given dataset indices on a device (the dataset and the batcher,
  // type-erased).
  using MakeBatch = std::function<B(const std::vector<size_t>& indices, const Device& device)>;

  struct Sentinel {};  // end() of an epoch's range
  // Input iterator over the batches of one epoch; reaching a batch whose building threw rethrows that error.
  class Iterator {
   public:
    using value_type = B;                    // the batch type
    using difference_type = std::ptrdiff_t;  // signed distance type (required by std::input_iterator)
    Iterator() = default;
    const B& operator*() const { return *batch_; }        // The current batch (valid until the iterator advances).
    const B* operator->() const { return batch_.get(); }  // Pointer to the current batch.
    // Moves to the next batch, waiting for it if it is not built yet; rethrows an error from building it.
    Iterator& operator++() {
      advance();
      return *this;
    }
    void operator++(int) { advance(); }  // Moves to the next batch (as the prefix form).
    // True once the epoch is over.
    friend bool operator==(const Iterator& it, Sentinel) { return it.batch_ == nullptr; }

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<detail::EpochRun> run) : run_(std::move(run)) { advance(); }
    void advance() {
      batch_.reset();  // an exception below leaves the iterator at the end
      batch_ = std::static_pointer_cast<const B>(run_->next());
      if (!batch_) run_.reset();
    }
    std::shared_ptr<detail::EpochRun> run_;
    std::shared_ptr<const B> batch_;
  };

  // A loader over a dataset of `dataset_size` items whose batches `make` builds. Throws ember::Error for an
  // empty dataset, a zero batch size, or drop_last leaving no batch.
  DataLoader(MakeBatch make, size_t dataset_size, LoaderOptions options)
      : src_(std::make_shared<const Source>(Source{std::move(make), dataset_size, std::move(options)})),
        device_(src_->options.device) {
    detail::check_loader(dataset_size, src_->options);
  }
  // Copies share the dataset and options but not a running epoch.
  DataLoader(const DataLoader& o)
      : src_(o.src_),
        device_(o.device_),
        part_(o.part_),
        parts_(o.parts_),
        mode_(o.mode_),
        next_epoch_(o.next_epoch_) {}
  // Shares the dataset and options of `o`, not its running epoch.
  DataLoader& operator=(const DataLoader& o) {
    if (this != &o) *this = DataLoader(o);
    return *this;
  }
  DataLoader(DataLoader&&) noexcept = default;  // Takes over the running epoch, if any.
  // Takes over the other loader's dataset, options, epoch counter and running epoch.
  DataLoader& operator=(DataLoader&&) noexcept = default;
  ~DataLoader() {
    if (auto run = run_.lock()) run->stop();
  }

  // Starts the next epoch (ending the previous one) and returns its first batch.
  Iterator begin() {
    if (auto run = run_.lock()) run->stop();
    const uint64_t epoch = next_epoch_++;
    auto plan = std::make_shared<const std::vector<std::vector<size_t>>>(my_batches(epoch));
    stats_ = std::make_shared<detail::EpochStats>();
    const LoaderOptions& o = src_->options;
    size_t prefetch = o.prefetch > 0 ? o.prefetch : 2 * o.num_workers;
    auto run = std::make_shared<detail::EpochRun>(
        plan->size(), o.num_workers, prefetch,
        [src = src_, plan, device = device_, epoch](size_t k) -> std::shared_ptr<const void> {
          EpochScope scope(epoch);
          return std::make_shared<const B>(src->make((*plan)[k], device));
        },
        stats_);
    run_ = run;
    return Iterator(std::move(run));
  }
  Sentinel end() const { return {}; }  // The end of the range begin() starts.

  // Batches per epoch in this loader (its own part after split()).
  size_t num_batches() const { return detail::part_batches(total_batches(), part_, parts_, mode_).size(); }
  // Items per epoch in this loader's batches.
  size_t num_items() const {
    const LoaderOptions& o = src_->options;
    size_t total = total_batches(), n = 0;
    for (size_t k : detail::part_batches(total, part_, parts_, mode_))
      n += (k + 1 < total || src_->dataset_size % o.batch_size == 0 || o.drop_last) ? o.batch_size
                                                                                    : src_->dataset_size % o.batch_size;
    return n;
  }
  size_t batch_size() const { return src_->options.batch_size; }  // Items per batch (LoaderOptions::batch_size).
  const Device& device() const { return device_; }                // The device this loader builds its batches on.
  const LoaderOptions& options() const { return src_->options; }  // The options the loader was built with.

  // The epoch the next begin() starts (for resuming a run).
  uint64_t epoch() const { return next_epoch_; }
  // Sets the epoch the next begin() starts (seeds the shuffle order and current_epoch()).
  void set_epoch(uint64_t epoch) { next_epoch_ = epoch; }

  // Seconds the consumer spent blocked waiting for batches in the current or last epoch.
  double wait_seconds() const { return stats_ ? stats_->wait_seconds : 0.0; }

  // n loaders for n devices (see the header comment); all on this loader's device.
  std::vector<DataLoader<B>> split(size_t n, SplitMode mode = SplitMode::strided) const {
    return split(std::vector<Device>(n, device_), mode);
  }
  // One loader per device, each building its batches on its device.
  std::vector<DataLoader<B>> split(const std::vector<Device>& devices, SplitMode mode = SplitMode::strided) const {
    EMBER_CHECK(!devices.empty(), "DataLoader::split: needs at least one part");
    EMBER_CHECK(parts_ == 1, "DataLoader::split: this loader is already a part of a split");
    EMBER_CHECK(devices.size() <= total_batches(), "DataLoader::split: ", devices.size(), " parts but only ",
                total_batches(), " batches per epoch");
    std::vector<DataLoader<B>> out;
    for (size_t j = 0; j < devices.size(); ++j) {
      DataLoader<B> part(*this);
      part.device_ = devices[j];
      part.part_ = j;
      part.parts_ = devices.size();
      part.mode_ = mode;
      out.push_back(std::move(part));
    }
    return out;
  }

 private:
  struct Source {
    MakeBatch make;
    size_t dataset_size;
    LoaderOptions options;
  };
  size_t total_batches() const { return detail::count_batches(src_->dataset_size, src_->options); }
  std::vector<std::vector<size_t>> my_batches(uint64_t epoch) const {
    auto all = detail::plan_batches(src_->dataset_size, src_->options, epoch);
    if (parts_ == 1) return all;
    std::vector<std::vector<size_t>> mine;
    for (size_t k : detail::part_batches(all.size(), part_, parts_, mode_)) mine.push_back(std::move(all[k]));
    return mine;
  }

  std::shared_ptr<const Source> src_;
  Device device_;
  size_t part_ = 0, parts_ = 1;
  SplitMode mode_ = SplitMode::strided;
  uint64_t next_epoch_ = 0;
  std::weak_ptr<detail::EpochRun> run_;
  std::shared_ptr<detail::EpochStats> stats_;
};

// Fluent construction of a DataLoader over a Dataset<I>.
template <class I, class B>
class DataLoaderBuilder {
 public:
  // Batches are built by `batcher` from a vector of items and the target device.
  explicit DataLoaderBuilder(Batcher<I, B> batcher) : batcher_(std::move(batcher)) {}
  // Items per batch (default 1), like torch's batch_size.
  DataLoaderBuilder& batch_size(size_t n) {
    options_.batch_size = n;
    return *this;
  }
  // Shuffles each epoch: epoch e visits the items in permutation(size, seed + e) order (default: index order).
  DataLoaderBuilder& shuffle(uint64_t seed) {
    options_.shuffle_seed = seed;
    return *this;
  }
  // Drops the last batch of an epoch when it is smaller than batch_size (default off), like torch's drop_last.
  DataLoaderBuilder& drop_last(bool on = true) {
    options_.drop_last = on;
    return *this;
  }
  // Threads building batches ahead (default 0: built on the consumer's thread), like torch's num_workers.
  DataLoaderBuilder& num_workers(size_t n) {
    options_.num_workers = n;
    return *this;
  }
  // Batches built ahead of the one the consumer holds (default 0, meaning 2 * num_workers).
  DataLoaderBuilder& prefetch(size_t batches) {
    options_.prefetch = batches;
    return *this;
  }
  // The device batches are built on (default Device::default_device()).
  DataLoaderBuilder& device(Device d) {
    options_.device = std::move(d);
    return *this;
  }
  const LoaderOptions& options() const { return options_; }  // The options set so far.

  // Throws ember::Error for a null or empty dataset, a zero batch size, or drop_last leaving
  // no batch.
  std::shared_ptr<DataLoader<B>> build(DatasetPtr<I> dataset) const {
    EMBER_CHECK(dataset != nullptr, "DataLoader: the dataset is null");
    EMBER_CHECK(batcher_ != nullptr, "DataLoader: the batcher is empty");
    const size_t n = dataset->size();
    auto make = [dataset = std::move(dataset), batcher = batcher_](const std::vector<size_t>& indices,
                                                                   const Device& device) {
      std::vector<I> items;
      items.reserve(indices.size());
      for (size_t i : indices) items.push_back(item_at(*dataset, i, "DataLoader"));
      return batcher(std::move(items), device);
    };
    return std::make_shared<DataLoader<B>>(std::move(make), n, options_);
  }

 private:
  Batcher<I, B> batcher_;
  LoaderOptions options_;
};

// Deduces the item and batch types from a batcher function pointer.
template <class I, class B>
DataLoaderBuilder(B (*)(std::vector<I>, const Device&)) -> DataLoaderBuilder<I, B>;
// A lambda or std::function batcher: the item type from its first parameter (std::vector<I>, by
// value or reference), the batch type from its result.
template <class F>
  requires(!std::is_pointer_v<F>)
DataLoaderBuilder(F) -> DataLoaderBuilder<typename std::remove_cvref_t<callable_arg_t<F, 0>>::value_type,
                                          std::remove_cvref_t<callable_result_t<F>>>;

}  // namespace ember::data
