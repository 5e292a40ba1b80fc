// Remote training: the demo's Fashion-MNIST CNN trained with the Learner on a device that lives
// in an ember-server (docs/remote.md). The program is the one a local run would be; only the
// device differs. The graph stays here (autodiff on top of the remote device), and every op,
// backward and optimizer step included, runs on the server.
//
//   ./build/examples/remote_training --server ws://gpu-host:7878 --token-file token
//   ./build/examples/remote_training                  # a server in this process, on loopback
//
// Options: --epochs N (1), --train-images N (10000), --batch-size N (64). On the server side:
//   ember-server --listen 0.0.0.0:7878 --device cuda:0 --token-file token
// Prints the test accuracy on 2,000 test images last ("test accuracy: X").
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include <ember/data.hpp>
#include <ember/decorators/remote.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <ember/optim/optimizer.hpp>
#include <ember/train/learner.hpp>
#include <ember/train/metrics.hpp>

#include "../fashion_mnist/model.hpp"

using namespace ember;
using Batch = data::ImageBatch;

int main(int argc, char** argv) try {
  std::string url, token_file;
  int64_t epochs = 1, train_images = 10000, batch_size = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    EMBER_CHECK(i + 1 < argc, "remote_training: ", k, " needs a value");
    const std::string v = argv[++i];
    if (k == "--server") url = v;
    else if (k == "--token-file") token_file = v;
    else if (k == "--epochs") epochs = std::stoll(v);
    else if (k == "--train-images") train_images = std::stoll(v);
    else if (k == "--batch-size") batch_size = std::stoll(v);
    else EMBER_FAIL("remote_training: unknown argument ", k);
  }

  // The server: the given one, or one in this process serving the CPU on a loopback port.
  std::unique_ptr<remote::Server> here;
  std::string token;
  if (url.empty()) {
    token = "example-token";
    here = std::make_unique<remote::Server>(remote::ServerOptions{.port = 0, .token = token});
    here->start();
    url = "ws://127.0.0.1:" + std::to_string(here->port());
  } else {
    EMBER_CHECK(!token_file.empty(), "remote_training: --server needs --token-file");
    std::ifstream f(token_file);
    std::getline(f, token);
  }
  const Device device = Device::remote(url, {.token = token});
  const Device train_device = device.autodiff();
  std::cout << "training on " << device.name() << "\n";

  // The data: batches are uploaded to the server as the loader makes them.
  auto all_train = data::FashionMnist::train();
  auto train_set = data::partial(all_train, 0, size_t(train_images));
  auto test_set = data::partial(data::FashionMnist::test(), 0, 2000);
  auto loader = [&](auto ds, int64_t batch, bool shuffle, const Device& d) {
    auto b = data::DataLoaderBuilder(data::batch_mnist);
    b.batch_size(size_t(batch)).num_workers(2).device(d);
    if (shuffle) b.shuffle(42);
    return b.build(ds);
  };
  auto train_loader = loader(train_set, batch_size, true, train_device);
  auto valid_loader = loader(test_set, 500, false, train_device);

  auto train_step = [](fashion::Cnn& m, const Batch& b) {
    DynTensor logits = m.forward(b.images);
    DynTensor loss = nn::cross_entropy(logits, b.labels);
    return train::TrainStepResult{{loss, logits, b.labels}, loss.backward()};
  };
  auto valid_step = [](const fashion::Cnn& m, const Batch& b) {
    DynTensor logits = m.forward(b.images);
    return train::ClassificationOutput{nn::cross_entropy(logits, b.labels), logits, b.labels};
  };
  train_device.seed(42);
  auto learner = train::LearnerBuilder<fashion::Cnn, Batch>(fashion::make_cnn(train_device), train_step, valid_step)
                     .optimizer(optim::AdamConfig{}.init())
                     .lr(1e-3)
                     .epochs(epochs)
                     .metrics({train::accuracy_metric()})
                     .run_dir("build/remote_training")
                     .seed(42)
                     .build();
  fashion::Cnn model = learner.fit(train_loader, valid_loader);

  // Test accuracy, on the server too.
  nn::set_training(model, false);
  auto test_loader = loader(test_set, 500, false, train_device);
  int64_t correct = 0, total = 0;
  for (const Batch& b : *test_loader) {
    correct += static_cast<int64_t>(sum(equal(argmax(model.forward(b.images), 1), b.labels)).item());
    total += b.labels.numel();
  }
  here.reset();  // the in-process server, if any, stops (and logs) before the result is printed
  std::cout << "test accuracy: " << double(correct) / double(total) << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
