// Every nn layer module: one include for models.
//
//   #include "ember/nn/layers.hpp"
//   # Device dev = Device::cpu();
//   nn::Sequential net(nn::Conv2dConfig{1, 8, {3}}.init(dev), nn::Relu{}, nn::Flatten{});
//   # run
#pragma once

#include "ember/nn/activation.hpp"
#include "ember/nn/conv.hpp"
#include "ember/nn/dropout.hpp"
#include "ember/nn/embedding.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/norm.hpp"
#include "ember/nn/pool.hpp"
#include "ember/nn/resample.hpp"
#include "ember/nn/sequential.hpp"
