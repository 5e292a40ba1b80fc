// Activation layers: each forwards to the tensor op or nn functional of the same name.
#include "ember/nn/activation.hpp"

#include "ember/core/error.hpp"
#include "layer_util.hpp"

namespace ember::nn {

// Each forward names its layer in an error (detail::in_module).
#define EMBER_ACTIVATION_FORWARD(Name, expr)                              \
  DynTensor Name::forward(DynTensor x) const {                            \
    return detail::in_module(ember_module_, #Name, [&] { return expr; }); \
  }

EMBER_ACTIVATION_FORWARD(Relu, ember::relu(std::move(x)))
EMBER_ACTIVATION_FORWARD(Relu6, nn::relu6(std::move(x)))
EMBER_ACTIVATION_FORWARD(LeakyRelu, ember::leaky_relu(std::move(x), negative_slope))
EMBER_ACTIVATION_FORWARD(Gelu, nn::gelu(std::move(x), approximate))
EMBER_ACTIVATION_FORWARD(Silu, ember::silu(std::move(x)))
EMBER_ACTIVATION_FORWARD(Mish, nn::mish(std::move(x)))
EMBER_ACTIVATION_FORWARD(Elu, nn::elu(std::move(x), alpha))
EMBER_ACTIVATION_FORWARD(Selu, nn::selu(std::move(x)))
EMBER_ACTIVATION_FORWARD(Celu, nn::celu(std::move(x), alpha))
EMBER_ACTIVATION_FORWARD(Softplus, ember::softplus(std::move(x), beta, threshold))
EMBER_ACTIVATION_FORWARD(Softsign, nn::softsign(std::move(x)))
EMBER_ACTIVATION_FORWARD(Tanh, ember::tanh(std::move(x)))
EMBER_ACTIVATION_FORWARD(Sigmoid, ember::sigmoid(std::move(x)))
EMBER_ACTIVATION_FORWARD(LogSigmoid, ember::log_sigmoid(std::move(x)))
EMBER_ACTIVATION_FORWARD(HardSigmoid, nn::hard_sigmoid(std::move(x)))
EMBER_ACTIVATION_FORWARD(HardSwish, nn::hard_swish(std::move(x)))
EMBER_ACTIVATION_FORWARD(HardTanh, nn::hard_tanh(std::move(x), min_val, max_val))
EMBER_ACTIVATION_FORWARD(TanhShrink, nn::tanh_shrink(std::move(x)))
EMBER_ACTIVATION_FORWARD(SoftShrink, nn::soft_shrink(std::move(x), lambd))
EMBER_ACTIVATION_FORWARD(HardShrink, nn::hard_shrink(std::move(x), lambd))
EMBER_ACTIVATION_FORWARD(Glu, nn::glu(std::move(x), dim))
EMBER_ACTIVATION_FORWARD(SwiGlu, nn::swiglu(std::move(x), dim))
EMBER_ACTIVATION_FORWARD(Softmax, ember::softmax(std::move(x), dim))
EMBER_ACTIVATION_FORWARD(LogSoftmax, ember::log_softmax(std::move(x), dim))

PRelu PReluConfig::init(const Device& device) const {
  EMBER_CHECK(num_parameters > 0, "PRelu: num_parameters must be positive, got ", num_parameters);
  PRelu m;
  m.weight = Param(DynTensor::full({num_parameters}, init_value, kDefaultFloat, device));
  return m;
}

DynTensor PRelu::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "PRelu", [&] {
    internal::check_dtype("PRelu", x, weight);
    return ember::prelu(std::move(x), weight);
  });
}

#undef EMBER_ACTIVATION_FORWARD

}  // namespace ember::nn
