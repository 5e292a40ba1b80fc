// The architectures of the demos, compiled into the wasm module (ember/web.hpp): the same
// headers the native programs train them with.
#include <ember/web.hpp>

#include "../examples/fashion_mnist/model.hpp"
#include "demos/digits/model.hpp"

EMBER_WEB_MODEL("fashion_mnist_cnn", fashion::make_cnn);
EMBER_WEB_MODEL("digits_cnn", digits_demo::make_model);
