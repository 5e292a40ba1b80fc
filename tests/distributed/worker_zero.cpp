// Worker case "zero": Adam through ZeroOptimizer (ZeRO-1) against one process running Adam on
// the global batch.
//   --until N        train steps [start, N) (default 20) and compare with the reference there
//   --save PREFIX    then write PREFIX.model.safetensors and PREFIX.optim.safetensors (rank 0)
//   --resume PREFIX  start from those files at step 10 (possibly written at another world size)
#include "ember/distributed/zero.hpp"
#include "ember/nn/file.hpp"
#include "worker_model.hpp"

namespace ember::distributed::test {

int run_zero(const Args& args) {
  int until = 20, start = 0;
  std::string save, resume;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--until")
      until = std::stoi(args.at(++i));
    else if (args[i] == "--save")
      save = args.at(++i);
    else if (args[i] == "--resume")
      resume = args.at(++i), start = 10;
  }
  auto pg = init_process_group(group_options());
  const int W = pg->size(), R = pg->rank();
  const Device dev = worker_device().autodiff();
  const double lr = 0.01;

  SmallCnn reference = make_cnn(dev, 1000);
  SmallCnn initial = reference;
  optim::Adam ref_opt;
  for (int step = 0; step < until; ++step) {
    auto [x, y] = global_batch(step, dev);
    reference = ref_opt.step(reference, nn::cross_entropy(reference.forward(x), y).backward(), lr);
  }

  SmallCnn model = make_cnn(dev, 1000);
  ZeroOptimizer zero(pg, std::make_shared<optim::Adam>());
  if (!resume.empty()) {
    nn::load(model, resume + ".model.safetensors");
    zero.load_state_dict(model, nn::read_tensors(resume + ".optim.safetensors", dev.inner()));
  }
  const int64_t rows = kGlobalBatch / W;
  for (int step = start; step < until; ++step) {
    auto [x, y] = global_batch(step, dev);
    DynTensor loss = nn::cross_entropy(model.forward(narrow(x, 0, R * rows, rows)), narrow(y, 0, R * rows, rows));
    model = zero.step(model, optim::GradientsParams::from(model, loss.backward()), lr);
  }
  // This rank keeps the moments of its own parameters only; the gathered state has them all.
  size_t local = zero.optimizer().state_dict(model).size();
  nn::NamedTensors full = zero.state_dict(model);
  size_t expected_full = ref_opt.state_dict(reference).size();
  bool sharded = full.size() == expected_full && (W == 1 ? local == full.size() : local < full.size());
  if (!save.empty()) {
    if (R == 0) {
      nn::save(model, save + ".model.safetensors");
      nn::write_tensors(save + ".optim.safetensors", full);
    }
    pg->barrier().wait();
  }
  double diff = max_rel_diff(model, reference);
  double moved = max_abs_change(initial, reference);
  bool ok = diff < 2e-5 && moved > 1e-2 && sharded;
  std::printf(
      "rank %d: zero world %d steps %d..%d: diff %g (weights moved %g), state entries %zu here, %zu gathered "
      "(%zu expected): %s\n",
      R, W, start, until, diff, moved, local, full.size(), expected_full, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace ember::distributed::test
