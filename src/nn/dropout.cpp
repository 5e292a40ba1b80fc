// Dropout.
#include "ember/nn/dropout.hpp"

#include "ember/nn/functional.hpp"

namespace ember::nn {

DynTensor Dropout::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "Dropout", [&] { return dropout(std::move(x), p, mode.training); });
}

}  // namespace ember::nn
