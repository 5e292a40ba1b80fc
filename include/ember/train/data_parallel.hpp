// The Learner under data-parallel training: one call wires a distributed::DataParallel into a
// LearnerBuilder (header-only; a program that uses it links ember::distributed).
//
//   # Model model = given<Model>(); auto train_step = &classify_train; auto valid_step = &classify_valid;
//   # std::vector<Batch> train_shard_loader, valid_loader;   // loaders over distributed::sharded views
//   auto pg = distributed::init_process_group();       // under ember-run --nproc N
//   distributed::DataParallel dp(pg);
//   model = dp.broadcast_parameters(model);
//   auto builder = train::LearnerBuilder(model, train_step, valid_step);
//   builder.lr(1e-3);
//   train::use_data_parallel(builder, dp);            // dp must outlive the Learner
//   auto learner = builder.build();
//   learner.fit(train_shard_loader, valid_loader);
//
// Each optimizer step's gradients are averaged over the ranks (after the step's backward: the
// Learner's train step runs its own backward; DataParallel::backward overlaps the reduction with
// it in a loop of your own). Logs, checkpoints and the dashboard run on rank 0.
#pragma once

#include "ember/distributed/data_parallel.hpp"
#include "ember/train/learner.hpp"

namespace ember::train {

// Configures `builder` for data-parallel training over dp's process group: rank and world size, gradient
// averaging over the ranks after each step, and the timing hooks; returns `builder`. `dp` must outlive the
// Learner it builds.
template <class M, class B>
LearnerBuilder<M, B>& use_data_parallel(LearnerBuilder<M, B>& builder, distributed::DataParallel& dp) {
  LearnerConfig& c = builder.config();
  c.rank = dp.group().rank();
  c.world_size = dp.group().size();
  c.reduce_gradients = [&dp](const std::vector<const nn::Param*>& params, optim::GradientsParams& grads) {
    dp.all_reduce_gradients(params, grads);
  };
  c.communication_seconds = [&dp] { return std::chrono::duration<double>(dp.group().communication_time()).count(); };
  c.gather_values = [&dp](const std::vector<double>& mine) {
    auto t = DynTensor::from_vector(mine, Shape({static_cast<int64_t>(mine.size())}), Device::cpu());
    return dp.group().all_gather(t).wait().to_vector<double>();
  };
  return builder;
}

}  // namespace ember::train
