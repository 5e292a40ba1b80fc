// The layers above the tensor API in one include: modules and layers, losses, functional ops,
// initializers, model files, optimizers and schedulers.
//
//   #include <ember/nn.hpp>
//   # Device dev = Device::cpu();
//   auto fc = ember::nn::LinearConfig{784, 10}.init(dev);
//   ember::optim::Adam opt = ember::optim::AdamConfig{}.init();
//   # run
#pragma once

#include "ember/nn/attention.hpp"
#include "ember/nn/file.hpp"
#include "ember/nn/functional.hpp"
#include "ember/nn/init.hpp"
#include "ember/nn/layers.hpp"
#include "ember/nn/loss.hpp"
#include "ember/nn/module.hpp"
#include "ember/nn/positional.hpp"
#include "ember/nn/quantize.hpp"
#include "ember/nn/rnn.hpp"
#include "ember/nn/transformer.hpp"
#include "ember/optim/gradients.hpp"
#include "ember/optim/optimizer.hpp"
#include "ember/optim/scheduler.hpp"
