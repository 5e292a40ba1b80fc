// Views: datasets built from other datasets without copying their items. Each view holds
// DatasetPtr(s) to what it wraps and is itself a Dataset, so views compose freely.
//
//   auto ds = data::in_memory(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
//   auto sq = data::map(ds, [](int x) { return x * x; });          // 0, 1, 4, 9, ...
//   auto sh = data::shuffled(ds, /*seed=*/7);                        // a seeded permutation
//   auto mid = data::partial(ds, 2, 5);                              // items 2, 3, 4
//   auto parts = data::split(ds, {0.8, 0.2});                        // 8 items, 2 items
//   auto few = data::sampled(ds, 4, /*with_replacement=*/false, 1);  // 4 distinct items
//   auto all = data::concatenated<int>({ds, sq});                      // 20 items, end to end
//   auto win = data::windows(ds, 3);                                 // {0,1,2}, {1,2,3}, ... (8)
//   auto aug = data::augmented(ds, 42, [](int x, data::Rng& r) { return x + int(r.below(2)); });
//   # run
//
// Functions take any std::shared_ptr to a Dataset subclass and return DatasetPtr<Item>.
// Seeded views (shuffled, sampled) fix their order when built; `augmented` draws per item
// from Rng(seed, current_epoch(), index) (rng.hpp), so a DataLoader gets fresh random
// augmentations every epoch, identical across runs and worker counts.
// Views that need items (sampled, windows) throw a clear ember::Error on an empty dataset.
// The functions given to map and augmented run on DataLoader worker threads, several at a
// time: they must not modify shared state without synchronisation.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/data/dataset.hpp"
#include "ember/data/rng.hpp"

namespace ember::data {

// ---- index helpers (defined in src/data/views.cpp) ----
// [begin, end) ranges of `n` items cut by `fractions` (each > 0, summing to at most 1; when
// the sum is 1 the last range ends at n, otherwise the remainder is left out).
std::vector<std::pair<size_t, size_t>> split_ranges(size_t n, const std::vector<double>& fractions);
// `count` indices into [0, n): with replacement, independent uniform draws; without, the first
// `count` entries of permutation(n, seed). Throws when n == 0, or count > n without replacement.
std::vector<size_t> sample_indices(size_t n, size_t count, bool with_replacement, uint64_t seed);

// f(item) for each item.
template <class I, class O>
class MapDataset final : public Dataset<O> {
 public:
  // Wraps `inner`; `fn` runs on each get(), possibly on several threads at once.
  MapDataset(DatasetPtr<I> inner, std::function<O(I)> fn) : inner_(std::move(inner)), fn_(std::move(fn)) {}
  std::optional<O> get(size_t index) const override {
    std::optional<I> item = inner_->get(index);
    if (!item) return std::nullopt;
    return fn_(std::move(*item));
  }
  size_t size() const override { return inner_->size(); }

 private:
  DatasetPtr<I> inner_;
  std::function<O(I)> fn_;
};

// inner[indices[i]]: the shared form of shuffled and sampled views.
template <class I>
class IndexedDataset final : public Dataset<I> {
 public:
  // View of inner[indices[i]] for each i; indices are not checked here (get() returns std::nullopt for an
  // index past the end of inner).
  IndexedDataset(DatasetPtr<I> inner, std::vector<size_t> indices)
      : inner_(std::move(inner)), indices_(std::move(indices)) {}
  std::optional<I> get(size_t index) const override {
    if (index >= indices_.size()) return std::nullopt;
    return inner_->get(indices_[index]);
  }
  size_t size() const override { return indices_.size(); }
  // The indices into the wrapped dataset, in view order.
  const std::vector<size_t>& indices() const { return indices_; }

 private:
  DatasetPtr<I> inner_;
  std::vector<size_t> indices_;
};

// Items [begin, end) of inner.
template <class I>
class PartialDataset final : public Dataset<I> {
 public:
  // View of items [begin, end) of `inner`; throws ember::Error unless begin <= end <= inner->size().
  PartialDataset(DatasetPtr<I> inner, size_t begin, size_t end) : inner_(std::move(inner)), begin_(begin), end_(end) {
    EMBER_CHECK(begin <= end && end <= inner_->size(), "partial: range [", begin, ", ", end,
                ") does not fit a dataset of ", inner_->size(), " items");
  }
  std::optional<I> get(size_t index) const override {
    if (index >= end_ - begin_) return std::nullopt;
    return inner_->get(begin_ + index);
  }
  size_t size() const override { return end_ - begin_; }

 private:
  DatasetPtr<I> inner_;
  size_t begin_, end_;
};

// Several datasets end to end.
template <class I>
class ConcatDataset final : public Dataset<I> {
 public:
  // Joins `parts` in order; throws ember::Error if any part is null. Like torch.utils.data.ConcatDataset.
  explicit ConcatDataset(std::vector<DatasetPtr<I>> parts) : parts_(std::move(parts)) {
    size_t total = 0;
    for (size_t i = 0; i < parts_.size(); ++i) {
      EMBER_CHECK(parts_[i] != nullptr, "concatenated: dataset ", i, " is null");
      total += parts_[i]->size();
      ends_.push_back(total);
    }
  }
  std::optional<I> get(size_t index) const override {
    auto it = std::upper_bound(ends_.begin(), ends_.end(), index);
    if (it == ends_.end()) return std::nullopt;
    size_t part = static_cast<size_t>(it - ends_.begin());
    size_t begin = part == 0 ? 0 : ends_[part - 1];
    return parts_[part]->get(index - begin);
  }
  size_t size() const override { return ends_.empty() ? 0 : ends_.back(); }

 private:
  std::vector<DatasetPtr<I>> parts_;
  std::vector<size_t> ends_;  // cumulative sizes
};
// Another name for ConcatDataset.
template <class I>
using ComposedDataset = ConcatDataset<I>;

// Sliding windows of `k` consecutive items: item i is {inner[i], ..., inner[i + k - 1]}.
template <class I>
class WindowsDataset final : public Dataset<std::vector<I>> {
 public:
  // Windows of `k` items; throws ember::Error when k == 0 or inner has fewer than k items.
  WindowsDataset(DatasetPtr<I> inner, size_t k) : inner_(std::move(inner)), k_(k) {
    EMBER_CHECK(k > 0, "windows: the window size must be positive");
    EMBER_CHECK(inner_->size() >= k, "windows: a window of ", k, " items needs a dataset of at least ", k,
                " items; this one has ", inner_->size(), inner_->size() == 0 ? " (the dataset is empty)" : "");
  }
  std::optional<std::vector<I>> get(size_t index) const override {
    if (index >= size()) return std::nullopt;
    std::vector<I> window;
    window.reserve(k_);
    for (size_t j = 0; j < k_; ++j) {
      std::optional<I> item = inner_->get(index + j);
      if (!item) return std::nullopt;
      window.push_back(std::move(*item));
    }
    return window;
  }
  size_t size() const override { return inner_->size() - k_ + 1; }

 private:
  DatasetPtr<I> inner_;
  size_t k_;
};

// f(item, rng) with rng = Rng(seed, current_epoch(), index): random per-item transforms.
template <class I, class O>
class AugmentedDataset final : public Dataset<O> {
 public:
  // Applies `fn` to each item with Rng(seed, current_epoch(), index); `fn` may run on several threads at once.
  AugmentedDataset(DatasetPtr<I> inner, uint64_t seed, std::function<O(I, Rng&)> fn)
      : inner_(std::move(inner)), seed_(seed), fn_(std::move(fn)) {}
  std::optional<O> get(size_t index) const override {
    std::optional<I> item = inner_->get(index);
    if (!item) return std::nullopt;
    Rng rng(seed_, current_epoch(), index);
    return fn_(std::move(*item), rng);
  }
  size_t size() const override { return inner_->size(); }

 private:
  DatasetPtr<I> inner_;
  uint64_t seed_;
  std::function<O(I, Rng&)> fn_;
};

// ---- constructors of views ----
// The view f(item) of each item of `ds`; the item type is the result type of `fn`.
template <class D, class F>
auto map(std::shared_ptr<D> ds, F fn) {
  using I = ItemOf<std::shared_ptr<D>>;
  using O = std::remove_cvref_t<std::invoke_result_t<F&, I>>;
  return DatasetPtr<O>(std::make_shared<const MapDataset<I, O>>(std::move(ds), std::move(fn)));
}

// A view of `ds` in the order permutation(ds->size(), seed), fixed when the view is built.
template <class D>
auto shuffled(std::shared_ptr<D> ds, uint64_t seed) {
  using I = ItemOf<std::shared_ptr<D>>;
  std::vector<size_t> p = permutation(ds->size(), seed);
  return DatasetPtr<I>(std::make_shared<const IndexedDataset<I>>(std::move(ds), std::move(p)));
}

// Items [begin, end) of `ds`; throws ember::Error unless begin <= end <= ds->size().
template <class D>
auto partial(std::shared_ptr<D> ds, size_t begin, size_t end) {
  using I = ItemOf<std::shared_ptr<D>>;
  return DatasetPtr<I>(std::make_shared<const PartialDataset<I>>(std::move(ds), begin, end));
}

// Fractions must be positive and sum to at most 1 (else ember::Error); when they sum to 1 the last part ends
// at the last item, otherwise the remainder is left out. Like torch.utils.data.random_split without shuffling.
// Consecutive parts of `ds` by fractions, e.g. split(ds, {0.9, 0.1}) -> {train, valid}.
// Shuffle first (shuffled) for a random split.
template <class D>
auto split(std::shared_ptr<D> ds, const std::vector<double>& fractions) {
  using I = ItemOf<std::shared_ptr<D>>;
  std::vector<DatasetPtr<I>> parts;
  for (auto [b, e] : split_ranges(ds->size(), fractions)) parts.push_back(partial(ds, b, e));
  return parts;
}

// The indices come from sample_indices, which throws ember::Error for an empty `ds`, or n > ds->size()
// without replacement.
// `n` items drawn with or without replacement (seeded).
template <class D>
auto sampled(std::shared_ptr<D> ds, size_t n, bool with_replacement, uint64_t seed) {
  using I = ItemOf<std::shared_ptr<D>>;
  std::vector<size_t> idx = sample_indices(ds->size(), n, with_replacement, seed);
  return DatasetPtr<I>(std::make_shared<const IndexedDataset<I>>(std::move(ds), std::move(idx)));
}

// The datasets of `parts` end to end (a ConcatDataset); throws ember::Error if any part is null.
template <class I>
DatasetPtr<I> concatenated(std::vector<DatasetPtr<I>> parts) {
  return std::make_shared<const ConcatDataset<I>>(std::move(parts));
}
// Another name for concatenated().
template <class I>
DatasetPtr<I> composed(std::vector<DatasetPtr<I>> parts) {
  return concatenated(std::move(parts));
}

// Sliding windows of `k` consecutive items of `ds` (a WindowsDataset): ds->size() - k + 1 items.
template <class D>
auto windows(std::shared_ptr<D> ds, size_t k) {
  using I = ItemOf<std::shared_ptr<D>>;
  return DatasetPtr<std::vector<I>>(std::make_shared<const WindowsDataset<I>>(std::move(ds), k));
}

// The view fn(item, rng) of each item, with rng = Rng(seed, current_epoch(), index): fresh, reproducible
// random augmentations every DataLoader epoch. The item type is the result type of `fn`.
template <class D, class F>
auto augmented(std::shared_ptr<D> ds, uint64_t seed, F fn) {
  using I = ItemOf<std::shared_ptr<D>>;
  using O = std::remove_cvref_t<std::invoke_result_t<F&, I, Rng&>>;
  return DatasetPtr<O>(std::make_shared<const AugmentedDataset<I, O>>(std::move(ds), seed, std::move(fn)));
}

}  // namespace ember::data
