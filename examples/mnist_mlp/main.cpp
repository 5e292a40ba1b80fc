// An MLP on handwritten digits, trained with the Learner: accuracy and macro F1 on a validation
// part every epoch, checkpoints (the last two and the best by validation accuracy), logs and plots
// in a run folder; then the best checkpoint is reloaded into a fresh model and scored on the test
// images. The digits are UCI's 8x8 ones that Debian's python3-sklearn ships (examples/common/digits.hpp).
//
//   ./build/examples/mnist_mlp [--epochs N] [--batch-size N] [--lr X] [--out DIR] [--data FILE] [--verbose]
//
// The last line is "test accuracy: X" (examples/mnist_mlp/README.md).
#include <cstdio>
#include <cstdlib>
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <ember/train/learner.hpp>
#include <ember/train/metrics.hpp>
#include <iostream>
#include <string>

#include "../common/args.hpp"
#include "../common/digits.hpp"

using namespace ember;
using Batch = data::ImageBatch;

struct Args {
  std::string out = "runs/mnist_mlp", data = digits::kPath;
  int64_t epochs = 30, batch_size = 32;
  double lr = 5e-3;
  bool verbose = false;
};

Args parse(int argc, char** argv) {
  Args a;
  examples::ArgReader r("mnist_mlp", argc, argv);
  while (r.next()) {
    if (r.is("--epochs"))
      a.epochs = r.count();
    else if (r.is("--batch-size"))
      a.batch_size = r.count();
    else if (r.is("--lr"))
      a.lr = r.number();
    else if (r.is("--out"))
      a.out = r.value();
    else if (r.is("--data"))
      a.data = r.value();
    else if (r.is("--verbose"))
      a.verbose = true;
    else
      r.unknown("--epochs, --batch-size, --lr, --out, --data, --verbose");
  }
  return a;
}

// 64 pixels -> 128 -> 64 -> 10 logits, with dropout between the hidden layers.
struct Mlp {
  nn::Linear fc1, fc2, fc3;
  nn::Dropout dropout;
  EMBER_MODULE(fc1, fc2, fc3, dropout)

  DynTensor forward(const DynTensor& images) const {  // [N, 1, 8, 8] in [0, 1] -> [N, 10]
    DynTensor x = relu(fc1.forward(flatten(images, 1)));
    x = relu(fc2.forward(dropout.forward(std::move(x))));
    return fc3.forward(dropout.forward(std::move(x)));
  }
};

Mlp make_mlp(const Device& device) {
  return Mlp{nn::LinearConfig{digits::kPixels, 128}.init(device), nn::LinearConfig{128, 64}.init(device),
             nn::LinearConfig{64, digits::kClasses}.init(device), nn::Dropout{.p = 0.2}};
}

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  Device device = Device::cpu().autodiff();

  // 1,437 training images (1,257 to train on, 180 to validate) and 360 test images.
  auto [train_rows, test_rows] = digits::split(digits::read(args.data));
  auto parts = data::split(data::shuffled(data::in_memory(std::move(train_rows)), 7), {0.875, 0.125});
  auto loader = [&](auto ds, bool shuffle, const Device& d) {
    auto b = data::DataLoaderBuilder(data::batch_images);
    b.batch_size(size_t(args.batch_size)).device(d);
    if (shuffle) b.shuffle(42);
    return b.build(ds);
  };
  auto train_loader = loader(parts[0], true, device);
  auto valid_loader = loader(parts[1], false, device);
  auto test_loader = loader(data::in_memory(test_rows), false, device);

  auto train_step = [](Mlp& m, const Batch& b) {
    DynTensor logits = m.forward(b.images);
    DynTensor loss = nn::cross_entropy(logits, b.labels);
    return train::TrainStepResult{{loss, logits, b.labels}, loss.backward()};
  };
  auto valid_step = [](const Mlp& m, const Batch& b) {
    DynTensor logits = m.forward(b.images);
    return train::ClassificationOutput{nn::cross_entropy(logits, b.labels), logits, b.labels};
  };

  device.seed(1);
  auto learner =
      train::LearnerBuilder(make_mlp(device), train_step, valid_step)
          .optimizer(optim::AdamW({.weight_decay = 1e-4}))
          .scheduler(std::make_unique<optim::CosineAnnealingLR>(
              args.lr, optim::CosineAnnealingLRConfig{.t_max = args.epochs * int64_t(train_loader->num_batches())}))
          .epochs(args.epochs)
          .metrics({train::accuracy_metric(), train::f1_metric()})
          .run_dir(args.out)  // epochs.jsonl, steps.jsonl, plots/, summary.txt, checkpoints/
          .checkpoints({.keep_last = 2, .best_metric = "valid/accuracy"})
          .verbosity(args.verbose ? 1 : 0)
          .seed(42)
          .build();
  learner.fit(train_loader, valid_loader);
  const train::FitSummary& summary = learner.summary();  // fit() has printed it
  std::printf("last epoch's model on the test images: %s\n", learner.evaluate(test_loader).str().c_str());

  // The best checkpoint, reloaded into a fresh model, in eval mode (dropout off) and without autodiff.
  EMBER_CHECK(!summary.best_checkpoint.empty(), "mnist_mlp: no best checkpoint was written");
  Mlp best = make_mlp(Device::cpu());
  nn::load(best, summary.best_checkpoint + "/model.safetensors");
  nn::set_training(best, false);
  auto cpu_test_loader = loader(data::in_memory(test_rows), false, Device::cpu());
  int64_t correct = 0;
  for (const Batch& b : *cpu_test_loader) {
    DynTensor predicted = argmax(best.forward(b.images), 1);
    correct += static_cast<int64_t>(sum(equal(predicted, b.labels)).item());
  }
  std::printf("best checkpoint: %s (epoch %lld, valid accuracy %.4f)\n", summary.best_checkpoint.c_str(),
              static_cast<long long>(summary.best_epoch + 1), summary.best_value.value_or(0.0));
  std::printf("test accuracy: %.4f\n", double(correct) / double(test_rows.size()));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
