// Dataset<I>: random access to items of type I — the interface every dataset and view
// implements. Datasets are immutable once built and shared through DatasetPtr<I>
// (std::shared_ptr<const Dataset<I>>), so views and DataLoader worker threads can hold them;
// get() must therefore be safe to call from several threads at once.
//
//   auto ds = data::in_memory(std::vector<int>{1, 2, 3});   // DatasetPtr<int>
//   ds->size();                                              // 3
//   std::optional<int> x = ds->get(1);                        // 2
//   ds->get(3);                                               // std::nullopt: out of range
//   int y = data::item_at(*ds, 1, "my loader");               // throws ember::Error when out of range
//   # run
//
// Views over datasets (map, shuffled, split, windows, ...) are in views.hpp; file formats in
// csv.hpp, idx.hpp, image_folder.hpp and sqlite.hpp; batching in dataloader.hpp.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ember/core/error.hpp"

namespace ember::data {

// Random-access collection of items of type I; the interface every dataset and view implements (like
// torch.utils.data.Dataset). Implementations must keep get() and size() safe to call from several threads.
template <class I>
class Dataset {
 public:
  using Item = I;  // The item type; ItemOf<P> reads it from a dataset pointer type.
  virtual ~Dataset() = default;
  // The item at `index`, or std::nullopt when index >= size(). Errors reading the item
  // (a corrupt file, a failing parser) throw ember::Error naming the source.
  virtual std::optional<I> get(size_t index) const = 0;
  // Number of items; valid indices are 0 .. size() - 1.
  virtual size_t size() const = 0;
  bool empty() const { return size() == 0; }  // True when size() == 0.
};

// Shared, immutable handle to a dataset: what views take and return, and what DataLoaderBuilder::build takes.
template <class I>
using DatasetPtr = std::shared_ptr<const Dataset<I>>;

// The item type of a dataset pointer: ItemOf<std::shared_ptr<CsvDataset>> is CsvRow.
template <class P>
using ItemOf = typename std::remove_cv_t<typename P::element_type>::Item;

// get(index) that throws (naming `who`) instead of returning nullopt.
template <class I>
I item_at(const Dataset<I>& ds, size_t index, std::string_view who) {
  std::optional<I> item = ds.get(index);
  EMBER_CHECK(item.has_value(), who, ": dataset item ", index, " is missing (dataset size ", ds.size(), ")");
  return std::move(*item);
}

// Throws a clear ember::Error when `ds` is empty, naming `who` (the view or loader that
// needs items).
template <class I>
void require_nonempty(const Dataset<I>& ds, std::string_view who) {
  EMBER_CHECK(ds.size() > 0, who, ": the dataset is empty (it needs at least one item)");
}

// Items held in memory.
template <class I>
class InMemoryDataset final : public Dataset<I> {
 public:
  InMemoryDataset() = default;
  explicit InMemoryDataset(std::vector<I> items) : items_(std::move(items)) {}  // Takes ownership of `items`.
  std::optional<I> get(size_t index) const override {
    if (index >= items_.size()) return std::nullopt;
    return items_[index];
  }
  size_t size() const override { return items_.size(); }
  const std::vector<I>& items() const { return items_; }  // The items, in index order.

 private:
  std::vector<I> items_;
};

// A DatasetPtr over `items` (moved into an InMemoryDataset).
template <class I>
DatasetPtr<I> in_memory(std::vector<I> items) {
  return std::make_shared<const InMemoryDataset<I>>(std::move(items));
}

// Every item of `ds` copied into memory (e.g. to decode a file-backed dataset once).
template <class I>
DatasetPtr<I> materialize(const DatasetPtr<I>& ds) {
  std::vector<I> items;
  items.reserve(ds->size());
  for (size_t i = 0; i < ds->size(); ++i) items.push_back(item_at(*ds, i, "materialize"));
  return in_memory(std::move(items));
}

}  // namespace ember::data
