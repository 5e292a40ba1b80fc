#include "ember/store/tensor_map.hpp"

#include <algorithm>

namespace ember::store {

TensorMap::TensorMap(std::initializer_list<Entry> entries) {
  for (const auto& [name, tensor] : entries) insert(name, tensor);
}

void TensorMap::insert(std::string name, DynTensor tensor) {
  EMBER_CHECK(!index_.contains(name), "TensorMap::insert: duplicate tensor name '", name, "'");
  index_.emplace(name, entries_.size());
  entries_.emplace_back(std::move(name), std::move(tensor));
}

void TensorMap::insert_or_assign(std::string name, DynTensor tensor) {
  auto it = index_.find(name);
  if (it != index_.end()) {
    entries_[it->second].second = std::move(tensor);
    return;
  }
  insert(std::move(name), std::move(tensor));
}

bool TensorMap::erase(std::string_view name) {
  auto it = index_.find(std::string(name));
  if (it == index_.end()) return false;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
  rebuild_index();
  return true;
}

const DynTensor* TensorMap::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

const DynTensor& TensorMap::at(std::string_view name) const {
  if (const DynTensor* t = find(name)) return *t;
  std::string known;
  for (size_t i = 0; i < entries_.size() && i < 8; ++i) known += (i ? ", '" : "'") + entries_[i].first + "'";
  if (entries_.size() > 8) known += ", ...";
  EMBER_FAIL("TensorMap::at: no tensor named '", name, "' (", entries_.size(), " tensors", entries_.empty() ? "" : ": ",
             known, ")");
}

std::vector<std::string> TensorMap::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(e.first);
  return out;
}

void TensorMap::rename_prefix(std::string_view from, std::string_view to) {
  std::vector<Entry> renamed = entries_;
  for (auto& [name, tensor] : renamed)
    if (name.starts_with(from)) name = std::string(to) + name.substr(from.size());
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < renamed.size(); ++i)
    EMBER_CHECK(index.emplace(renamed[i].first, i).second, "TensorMap::rename_prefix: renaming '", from, "' to '", to,
                "' makes two tensors named '", renamed[i].first, "'");
  entries_ = std::move(renamed);
  index_ = std::move(index);
}

void TensorMap::rebuild_index() {
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
}

}  // namespace ember::store
