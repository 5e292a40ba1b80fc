// The demo's CNN (examples/fashion_mnist/model.hpp) on Fashion-MNIST, trained by a loop written
// out by hand instead of the Learner: the DataLoader, forward, loss, backward, the optimizer step,
// an LR scheduler, and evaluation in eval mode without gradients. Each line has its PyTorch twin
// in the comment beside it.
//
//   ./build/examples/custom_training_loop [--device cpu|cuda] [--epochs N] [--batch-size N] [--lr X]
//                                         [--train-images N] [--test-images N]
//
// The last line is "test accuracy: X" (examples/custom_training_loop/README.md).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <iostream>
#include <string>

#include "../common/args.hpp"
#include "../fashion_mnist/model.hpp"

using namespace ember;

struct Args {
  std::string device = "cpu";
  int64_t epochs = 2, batch_size = 64, train_images = 60000, test_images = 10000;
  double lr = 3e-3;
};

Args parse(int argc, char** argv) {
  Args a;
  examples::ArgReader r("custom_training_loop", argc, argv);
  while (r.next()) {
    if (r.is("--device"))
      a.device = r.value();
    else if (r.is("--epochs"))
      a.epochs = r.count();
    else if (r.is("--batch-size"))
      a.batch_size = r.count();
    else if (r.is("--lr"))
      a.lr = r.number();
    else if (r.is("--train-images"))
      a.train_images = r.count();
    else if (r.is("--test-images"))
      a.test_images = r.count();
    else
      r.unknown("--device, --epochs, --batch-size, --lr, --train-images, --test-images");
  }
  return a;
}

// Mean loss and accuracy of the model over a loader, with gradient recording off.
struct Evaluation {
  double loss = 0, accuracy = 0;
};
Evaluation evaluate(fashion::Cnn& model, data::DataLoader<data::ImageBatch>& loader) {
  nn::set_training(model, false);  // model.eval(): dropout off
  NoGradGuard no_grad;             // with torch.no_grad():
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  for (const data::ImageBatch& b : loader) {
    DynTensor logits = model.forward(b.images);
    const int64_t n = b.labels.numel();
    loss_sum += nn::cross_entropy(logits, b.labels).item() * double(n);
    correct += static_cast<int64_t>(sum(equal(argmax(logits, 1), b.labels)).item());
    seen += n;
  }
  nn::set_training(model, true);  // model.train()
  return {loss_sum / double(seen), double(correct) / double(seen)};
}

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  Device device = (args.device == "cpu" ? Device::cpu() : Device::cuda(0)).autodiff();  // records for backward

  // Data: a shuffled subset of the 60,000 training images (all by default) and of the test images.
  auto train_set = data::FashionMnist::train();  // Debian's dataset-fashion-mnist
  auto test_set = data::FashionMnist::test();
  auto train_part =
      data::partial(data::shuffled(train_set, 1), 0, std::min(size_t(args.train_images), train_set->size()));
  auto test_part = data::partial(test_set, 0, std::min(size_t(args.test_images), test_set->size()));
  auto train_loader = data::DataLoaderBuilder(data::batch_mnist)  // DataLoader(train, batch_size=64, shuffle=True)
                          .batch_size(size_t(args.batch_size))
                          .shuffle(42)
                          .num_workers(2)
                          .device(device)
                          .build(train_part);
  auto test_loader = data::DataLoaderBuilder(data::batch_mnist).batch_size(500).device(device).build(test_part);

  // The model, the optimizer and the scheduler: one cycle, warming up to lr, then annealing to ~0.
  device.seed(42);                                 // torch.manual_seed(42)
  fashion::Cnn model = fashion::make_cnn(device);  // model = Cnn()
  optim::Adam optimizer;                           // optim.Adam(model.parameters())
  const int64_t total_steps = args.epochs * int64_t(train_loader->num_batches());
  optim::OneCycleLR scheduler({.max_lr = args.lr, .total_steps = total_steps});  // OneCycleLR(opt, lr, total)
  std::printf("training on %zu images, %lld steps of %lld, testing on %zu images, on %s\n", train_part->size(),
              static_cast<long long>(total_steps), static_cast<long long>(args.batch_size), test_part->size(),
              device.name().c_str());

  Evaluation test;
  for (int64_t epoch = 1; epoch <= args.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    for (const data::ImageBatch& b : *train_loader) {                   // for images, labels in loader:
      DynTensor logits = model.forward(b.images);                       //   logits = model(images)
      DynTensor loss = nn::cross_entropy(logits, b.labels);             //   loss = F.cross_entropy(...)
      Gradients grads = loss.backward();                                //   loss.backward()
      model = optimizer.step(std::move(model), grads, scheduler.lr());  //   opt.step(); opt.zero_grad()
      scheduler.step();                                                 //   scheduler.step()

      const int64_t n = b.labels.numel();  // running train metrics, from the values already computed
      loss_sum += loss.item() * double(n);
      correct += static_cast<int64_t>(sum(equal(argmax(logits.detach(), 1), b.labels)).item());
      seen += n;
    }
    test = evaluate(model, *test_loader);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "epoch %lld/%lld  train loss %.4f  accuracy %.4f  |  test loss %.4f  accuracy %.4f  |  lr %.2e  %.1f s\n",
        static_cast<long long>(epoch), static_cast<long long>(args.epochs), loss_sum / double(seen),
        double(correct) / double(seen), test.loss, test.accuracy, scheduler.lr(), seconds);
  }
  std::printf("test accuracy: %.4f\n", test.accuracy);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
