// ember::distributed: process groups, collectives and data-parallel training (docs/distributed.md).
//
//   # Model model = given<Model>(); optim::Adam optimizer; DynTensor loss = given<DynTensor>(); double lr = 1e-3;
//   auto pg = distributed::init_process_group();          // under ember-run / torchrun / mpirun
//   distributed::DataParallel dp(pg);
//   model = dp.broadcast_parameters(model);               // rank 0's values everywhere
//   auto grads = dp.backward(model, loss);                // averaged over ranks, overlapped
//   model = optimizer.step(model, std::move(grads), lr);
#pragma once

#include "ember/distributed/data_parallel.hpp"
#include "ember/distributed/init.hpp"
#include "ember/distributed/process_group.hpp"
#include "ember/distributed/zero.hpp"
