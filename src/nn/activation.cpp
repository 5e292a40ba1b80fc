// Activation layers: each forwards to the tensor op or nn functional of the same name.
#include "ember/nn/activation.hpp"

#include "ember/core/error.hpp"

namespace ember::nn {

DynTensor Relu::forward(DynTensor x) const { return ember::relu(std::move(x)); }
DynTensor Relu6::forward(DynTensor x) const { return nn::relu6(std::move(x)); }
DynTensor LeakyRelu::forward(DynTensor x) const { return ember::leaky_relu(std::move(x), negative_slope); }
DynTensor Gelu::forward(DynTensor x) const { return nn::gelu(std::move(x), approximate); }
DynTensor Silu::forward(DynTensor x) const { return ember::silu(std::move(x)); }
DynTensor Mish::forward(DynTensor x) const { return nn::mish(std::move(x)); }
DynTensor Elu::forward(DynTensor x) const { return nn::elu(std::move(x), alpha); }
DynTensor Selu::forward(DynTensor x) const { return nn::selu(std::move(x)); }
DynTensor Celu::forward(DynTensor x) const { return nn::celu(std::move(x), alpha); }
DynTensor Softplus::forward(DynTensor x) const { return ember::softplus(std::move(x), beta, threshold); }
DynTensor Softsign::forward(DynTensor x) const { return nn::softsign(std::move(x)); }
DynTensor Tanh::forward(DynTensor x) const { return ember::tanh(std::move(x)); }
DynTensor Sigmoid::forward(DynTensor x) const { return ember::sigmoid(std::move(x)); }
DynTensor LogSigmoid::forward(DynTensor x) const { return ember::log_sigmoid(std::move(x)); }
DynTensor HardSigmoid::forward(DynTensor x) const { return nn::hard_sigmoid(std::move(x)); }
DynTensor HardSwish::forward(DynTensor x) const { return nn::hard_swish(std::move(x)); }
DynTensor HardTanh::forward(DynTensor x) const { return nn::hard_tanh(std::move(x), min_val, max_val); }
DynTensor TanhShrink::forward(DynTensor x) const { return nn::tanh_shrink(std::move(x)); }
DynTensor SoftShrink::forward(DynTensor x) const { return nn::soft_shrink(std::move(x), lambd); }
DynTensor HardShrink::forward(DynTensor x) const { return nn::hard_shrink(std::move(x), lambd); }
DynTensor Glu::forward(DynTensor x) const { return nn::glu(std::move(x), dim); }
DynTensor SwiGlu::forward(DynTensor x) const { return nn::swiglu(std::move(x), dim); }
DynTensor Softmax::forward(DynTensor x) const { return ember::softmax(std::move(x), dim); }
DynTensor LogSoftmax::forward(DynTensor x) const { return ember::log_softmax(std::move(x), dim); }

PRelu PReluConfig::init(const Device& device) const {
  EMBER_CHECK(num_parameters > 0, "PRelu: num_parameters must be positive, got ", num_parameters);
  PRelu m;
  m.weight = Param(DynTensor::full({num_parameters}, init_value, kDefaultFloat, device));
  return m;
}

DynTensor PRelu::forward(DynTensor x) const {
  DynTensor w = weight.value().dtype() == x.dtype() ? weight.value() : cast(weight.value(), x.dtype());
  return ember::prelu(std::move(x), std::move(w));
}

}  // namespace ember::nn
