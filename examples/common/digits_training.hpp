// Training a small classifier on the digits (digits.hpp), as examples/cortex_m and the web demo's
// trainer (web/demos/digits/train.cpp) both do: the same options, the same loop (Adam under a
// one-cycle schedule, mini-batches of the epoch's images) and the same accuracy.
//
//   digits::TrainArgs args = digits::parse_train_args("cortex_m", argc, argv, {.out = "build/cortex_m"});
//   auto [train, test] = digits::split(digits::read(args.data));
//   Cnn trained = digits::train_model(args, int64_t(train.size()), make_model, [&](std::mt19937& rng) {
//     std::shuffle(train.begin(), train.end(), rng);
//     return train;
//   });
//   std::printf("test accuracy: %.4f\n", digits::accuracy(trained, test));
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "args.hpp"
#include "digits.hpp"

namespace digits {

struct TrainArgs {
  std::string out, data = kPath;
  int64_t epochs = 30, batch_size = 32, seed = 1;
  double lr = 5e-3;
};

// `defaults` with the options of the command line over them: --out, --epochs, --seed, --lr,
// --batch-size, --data.
inline TrainArgs parse_train_args(const char* program, int argc, char** argv, TrainArgs defaults) {
  TrainArgs a = std::move(defaults);
  examples::ArgReader r(program, argc, argv);
  while (r.next()) {
    if (r.is("--out"))
      a.out = r.value();
    else if (r.is("--epochs"))
      a.epochs = r.count();
    else if (r.is("--seed"))
      a.seed = r.count();
    else if (r.is("--lr"))
      a.lr = r.number();
    else if (r.is("--batch-size"))
      a.batch_size = r.count();
    else if (r.is("--data"))
      a.data = r.value();
    else
      r.unknown("--out, --epochs, --seed, --lr, --batch-size, --data");
  }
  return a;
}

// Trains the model that make_model(device) builds on an autodiff CPU device seeded with
// args.seed: Adam with a one-cycle learning rate peaking at args.lr, over args.epochs epochs of
// `items_per_epoch` images, which epoch_items(rng) gives in their order (rng is seeded with
// args.seed too). Prints the mean training loss every tenth epoch and after the last; returns the
// model on the CPU without autodiff. The same seed gives the same model.
template <class MakeModel, class EpochItems>
auto train_model(const TrainArgs& args, int64_t items_per_epoch, MakeModel make_model, EpochItems epoch_items) {
  using namespace ember;
  Device device = Device::cpu().autodiff();
  device.seed(uint64_t(args.seed));       // the initial weights and dropout
  std::mt19937 rng(uint32_t(args.seed));  // the epochs' images
  auto model = make_model(device);
  optim::Adam optimizer;
  const int64_t steps_per_epoch = (items_per_epoch + args.batch_size - 1) / args.batch_size;
  optim::OneCycleLR scheduler({.max_lr = args.lr, .total_steps = args.epochs * steps_per_epoch});
  for (int64_t epoch = 1; epoch <= args.epochs; ++epoch) {
    const std::vector<data::ImageItem> items = epoch_items(rng);
    double loss_sum = 0;
    for (size_t i = 0; i < items.size(); i += size_t(args.batch_size)) {
      const size_t end = std::min(items.size(), i + size_t(args.batch_size));
      const data::ImageBatch b = data::batch_images({items.begin() + long(i), items.begin() + long(end)}, device);
      DynTensor loss = nn::cross_entropy(model.forward(b.images), b.labels);
      Gradients grads = loss.backward();
      model = optimizer.step(std::move(model), grads, scheduler.lr());
      scheduler.step();
      loss_sum += loss.item() * double(end - i);
    }
    if (epoch == args.epochs || epoch % 10 == 0)
      std::printf("epoch %lld/%lld  train loss %.4f\n", static_cast<long long>(epoch),
                  static_cast<long long>(args.epochs), loss_sum / double(items.size()));
  }
  return nn::to_device(model, Device::cpu());
}

// The fraction of the images that the model (on the CPU) classifies right.
template <class Model>
double accuracy(const Model& model, const std::vector<ember::data::ImageItem>& items) {
  using namespace ember;
  const data::ImageBatch b = data::batch_images(items, Device::cpu());
  return sum(equal(argmax(model.forward(b.images), 1), b.labels)).item() / double(items.size());
}

}  // namespace digits
