// ember::amp: mixed precision (docs/amp.md). Autocast scopes apply a per-op cast policy over
// ordinary ops; GradScaler scales f16 losses dynamically.
//
//   amp::GradScaler scaler;                       // f16; with bf16 autocast no scaler is needed
//   { amp::Autocast guard(DType::f16); grads = scaler.scale(loss(model)).backward(); }
//   model = scaler.step(opt, std::move(model), grads, lr);
//   scaler.update();
#pragma once

#include "ember/amp/autocast.hpp"
#include "ember/amp/grad_scaler.hpp"
