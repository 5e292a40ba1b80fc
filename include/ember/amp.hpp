// ember::amp: mixed precision (docs/amp.md). Autocast scopes apply a per-op cast policy over
// ordinary ops; GradScaler scales f16 losses dynamically.
//
//   # Device dev = Device::cpu().autodiff();
//   # nn::Linear model = nn::LinearConfig{4, 1}.init(dev);
//   # auto loss = [&](const nn::Linear& m) { return m.forward(DynTensor::ones({2, 4}, DType::f32, dev)).mean(); };
//   # optim::AdamW opt = optim::AdamWConfig{}.init();
//   # double lr = 1e-3;
//   Gradients grads;
//   amp::GradScaler scaler;                       // f16; with bf16 autocast no scaler is needed
//   { amp::Autocast guard(DType::f16); grads = scaler.scale(loss(model)).backward(); }
//   model = scaler.step(opt, std::move(model), grads, lr);
//   scaler.update();
//   # run
#pragma once

#include "ember/amp/autocast.hpp"
#include "ember/amp/grad_scaler.hpp"
