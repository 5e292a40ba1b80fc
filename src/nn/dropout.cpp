// Dropout.
#include "ember/nn/dropout.hpp"

#include "ember/nn/functional.hpp"

namespace ember::nn {

DynTensor Dropout::forward(DynTensor x) const { return dropout(std::move(x), p, mode.training); }

}  // namespace ember::nn
