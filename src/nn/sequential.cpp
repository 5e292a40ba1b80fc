// Sequential: deep copies, forward chains, visiting with index prefixes.
#include "ember/nn/sequential.hpp"

namespace ember::nn {

Sequential::Sequential(const Sequential& other) {
  layers_.reserve(other.layers_.size());
  for (const auto& l : other.layers_) layers_.push_back(l->clone());
}

Sequential& Sequential::operator=(const Sequential& other) {
  if (this != &other) {
    Sequential copy(other);
    layers_ = std::move(copy.layers_);
  }
  return *this;
}

DynTensor Sequential::forward(DynTensor x) {
  for (auto& l : layers_) x = l->forward(std::move(x));
  return x;
}

DynTensor Sequential::forward(DynTensor x) const {
  for (size_t i = 0; i < layers_.size(); ++i) x = layers_[i]->forward_const(std::move(x), i);
  return x;
}

const std::type_info& Sequential::type_at(size_t i) const {
  EMBER_CHECK(i < layers_.size(), "Sequential: layer ", i, " is out of range (", layers_.size(), " layers)");
  return layers_[i]->type();
}

void* Sequential::checked(size_t i, const std::type_info& t) {
  EMBER_CHECK(i < layers_.size(), "Sequential: layer ", i, " is out of range (", layers_.size(), " layers)");
  EMBER_CHECK(layers_[i]->type() == t, "Sequential: layer ", i, " is a ", layers_[i]->type().name(), ", not a ",
              t.name());
  return layers_[i]->get();
}

void Sequential::visit(Visitor& v, const std::string& prefix) {
  for (size_t i = 0; i < layers_.size(); ++i) layers_[i]->visit(v, detail::join(prefix, std::to_string(i)));
}

}  // namespace ember::nn
