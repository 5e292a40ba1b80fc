// Worker case "data_parallel": 20 SGD-with-momentum steps of a small CNN with DataParallel
// against one process on the global batch (trained here too, from rank 0's initial weights).
//   --accum K       K micro-batches per step, the first K-1 under no_sync()
//   --bucket-mb X   bucket capacity (small: one bucket per parameter, to see the overlap)
//   --shape-mismatch  the last rank builds a wider output layer (a fault case)
//   --kill-step S   the last rank SIGKILLs itself in the middle of step S, after its forward pass
//                   (a fault case: the others are then inside that step's bucket all-reduces)
#include <csignal>

#include "ember/distributed/data_parallel.hpp"
#include "ember/optim/optimizer.hpp"
#include "worker_model.hpp"

namespace ember::distributed::test {

int run_data_parallel(const Args& args) {
  int accum = 1;
  double bucket_mb = 25;
  bool mismatch = false;
  int kill_step = -1;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--accum")
      accum = std::stoi(args.at(++i));
    else if (args[i] == "--bucket-mb")
      bucket_mb = std::stod(args.at(++i));
    else if (args[i] == "--shape-mismatch")
      mismatch = true;
    else if (args[i] == "--kill-step")
      kill_step = std::stoi(args.at(++i));
  }
  auto pg = init_process_group(group_options());
  const int W = pg->size(), R = pg->rank();
  const Device dev = worker_device().autodiff();
  const int steps = 20;
  const double lr = 0.05;

  // Every rank starts from different weights: the broadcast must make them rank 0's.
  SmallCnn model = make_cnn(dev, 1000 + uint64_t(R), mismatch && R == W - 1 ? 6 : 5);
  DataParallel dp(pg, {.bucket_mb = bucket_mb});
  model = dp.broadcast_parameters(model);
  SmallCnn reference = make_cnn(dev, 1000);
  SmallCnn initial = reference;
  double start_diff = max_rel_diff(model, reference);

  optim::Sgd opt({.momentum = 0.9});
  optim::Sgd ref_opt({.momentum = 0.9});
  EMBER_CHECK(kGlobalBatch % (W * accum) == 0, "worker: the global batch does not split over ", W, " x ", accum);
  const int64_t micro = kGlobalBatch / (W * accum);
  int buckets = 0, overlapped = 0;
  for (int step = 0; step < steps; ++step) {
    auto [x, y] = global_batch(step, dev);
    // The reference: one process, the whole batch, the mean loss.
    optim::GradientsParams ref_grads =
        optim::GradientsParams::from(reference, nn::cross_entropy(reference.forward(x), y).backward());
    reference = ref_opt.step(reference, std::move(ref_grads), lr);
    // Data-parallel: this rank's rows, in `accum` micro-batches; the mean of micro-batch means
    // over ranks is accum times the global mean, hence the scale.
    optim::GradientsParams grads;
    for (int m = 0; m < accum; ++m) {
      int64_t start = (int64_t(R) * accum + m) * micro;
      DynTensor loss = nn::cross_entropy(model.forward(narrow(x, 0, start, micro)), narrow(y, 0, start, micro));
      if (step == kill_step && R == W - 1) raise(SIGKILL);
      if (m + 1 < accum) {
        auto pause = dp.no_sync();
        dp.backward(model, loss);
      } else {
        grads = dp.backward(model, loss);
      }
    }
    grads.scale(1.0 / accum);
    model = opt.step(model, std::move(grads), lr);
    buckets = dp.last_stats().buckets;
    overlapped = dp.last_stats().started_during_backward;
  }
  double diff = max_rel_diff(model, reference);
  double moved = max_abs_change(initial, reference);
  bool ok = start_diff == 0 && diff < 2e-5 && moved > 1e-2;
  // One bucket per parameter when the capacity is tiny: then all but the last bucket must start
  // while the backward is still running.
  if (bucket_mb < 1e-3) ok = ok && buckets == 6 && overlapped >= 4;
  std::printf(
      "rank %d: data_parallel world %d accum %d: start diff %g, final diff %g (weights moved %g), "
      "buckets %d, started during backward %d: %s\n",
      R, W, accum, start_diff, diff, moved, buckets, overlapped, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace ember::distributed::test
