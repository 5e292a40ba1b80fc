// TensorMap: named tensors in a fixed order — what model files hold and what state dicts are.
//
//   # DynTensor w = randn({2, 3}), b = DynTensor::zeros({2}), rm = DynTensor::zeros({2});
//   store::TensorMap m{{"weight", w}, {"bias", b}};
//   m.insert("running_mean", rm);                 // throws on a duplicate name
//   const DynTensor& w2 = m.at("weight");         // throws an Error naming the missing key
//   if (const DynTensor* b2 = m.find("bias")) std::cout << *b2;   // nullptr when absent
//   for (const auto& [name, t] : m) std::cout << name;      // insertion order
//   # run
//
// Lookups by name are O(1) (a hash index beside the ordered entries). Loaders fill a map in the
// file's order: safetensors files by name, PyTorch checkpoints in pickle order.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember::store {

// Named tensors in insertion order, with O(1) lookup by name (a state dict); names are unique.
class TensorMap {
 public:
  using Entry = std::pair<std::string, DynTensor>;  // a name and its tensor

  TensorMap() = default;
  TensorMap(std::initializer_list<Entry> entries);  // throws on a duplicate name

  // Adds a tensor; throws an Error when `name` is already present.
  void insert(std::string name, DynTensor tensor);
  // Adds a tensor or replaces the one of that name (keeping its position).
  void insert_or_assign(std::string name, DynTensor tensor);
  // Removes `name`; returns whether it was present.
  bool erase(std::string_view name);

  const DynTensor& at(std::string_view name) const;    // throws an Error naming the key
  const DynTensor* find(std::string_view name) const;  // nullptr when absent
  bool contains(std::string_view name) const { return find(name) != nullptr; }  // whether `name` is present

  size_t size() const { return entries_.size(); }  // number of tensors
  bool empty() const { return entries_.empty(); }  // true when there are no tensors
  auto begin() const { return entries_.begin(); }  // the entries in insertion order
  auto end() const { return entries_.end(); }  // end of the entries
  const std::vector<Entry>& entries() const { return entries_; }  // (name, tensor) pairs in insertion order
  std::vector<std::string> names() const;  // the names in insertion order

  // Renames every key that starts with `from` so that it starts with `to` instead (e.g.
  // "module." -> "" for DataParallel checkpoints). Throws when two keys would collide.
  void rename_prefix(std::string_view from, std::string_view to);

 private:
  void rebuild_index();
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace ember::store
