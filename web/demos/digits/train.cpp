// Trains the digit recogniser's CNN (model.hpp) on UCI's 8x8 digits (Debian's python3-sklearn) and
// saves it for the page: OUT/digits_cnn.safetensors, metadata {"model": "digits_cnn"}, the name
// web/models.cpp registers. Trains on the first 1,437 images, each epoch shifted by up to a pixel
// (a digit drawn on the page's canvas is rarely centred as UCI's are), and tests on the other 360.
//
//   ./build/web/digits_web_train [--out DIR] [--epochs N] [--seed N] [--lr X] [--data FILE]
//
// DIR defaults to build/web-models. The same seed gives the same model. It takes a few seconds on
// two cores; the last line is "test accuracy: X".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "../../../examples/common/args.hpp"
#include "../../../examples/common/digits.hpp"
#include "model.hpp"

using namespace ember;

struct Args {
  std::string out = "build/web-models", data = digits::kPath;
  int64_t epochs = 40, batch_size = 32, seed = 1;
  double lr = 3e-3;
};

Args parse(int argc, char** argv) {
  Args a;
  examples::ArgReader r("digits_web_train", argc, argv);
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

// The image moved by (dx, dy) pixels, the uncovered border left blank.
data::ImageItem shifted(const data::ImageItem& item, int dx, int dy) {
  const std::span<const float> src = item.image.as<float>();
  std::vector<float> dst(src.size(), 0.0f);
  const int side = int(digits::kSide);
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x) {
      const int sy = y - dy, sx = x - dx;
      if (sy >= 0 && sy < side && sx >= 0 && sx < side) dst[size_t(y * side + x)] = src[size_t(sy * side + sx)];
    }
  return {TensorData::from_vector(dst, item.image.shape()), item.label};
}

// Accuracy of the model (eval mode, no autodiff) on the images.
double accuracy(const digits_demo::Cnn& model, const std::vector<data::ImageItem>& items) {
  const data::ImageBatch b = data::batch_images(items, Device::cpu());
  const DynTensor predicted = argmax(model.forward(b.images), 1);
  return sum(equal(predicted, b.labels)).item() / double(items.size());
}

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  const auto start = std::chrono::steady_clock::now();
  auto [train, test] = digits::split(digits::read(args.data));

  Device device = Device::cpu().autodiff();
  device.seed(uint64_t(args.seed));       // the initial weights and dropout
  std::mt19937 rng(uint32_t(args.seed));  // the shifts and the order of the images
  digits_demo::Cnn model = digits_demo::make_model(device);
  optim::Adam optimizer;
  const int64_t steps_per_epoch = (int64_t(train.size()) + args.batch_size - 1) / args.batch_size;
  optim::OneCycleLR scheduler({.max_lr = args.lr, .total_steps = args.epochs * steps_per_epoch});

  for (int64_t epoch = 1; epoch <= args.epochs; ++epoch) {
    // This epoch's images: each shifted by -1, 0 or 1 pixel in x and y, in a new order.
    std::vector<data::ImageItem> items;
    items.reserve(train.size());
    std::uniform_int_distribution<int> shift(-1, 1);
    for (const data::ImageItem& it : train) {
      const int dx = shift(rng), dy = shift(rng);
      items.push_back(shifted(it, dx, dy));
    }
    std::shuffle(items.begin(), items.end(), rng);

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

  // Save in eval mode without autodiff, as the page loads it.
  digits_demo::Cnn trained = nn::to_device(model, Device::cpu());
  nn::set_training(trained, false);
  std::filesystem::create_directories(args.out);
  const std::string path = args.out + "/digits_cnn.safetensors";
  nn::save(trained, path, {{"model", "digits_cnn"}});

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("saved %s (%lld parameters) in %.1f s\n", path.c_str(), static_cast<long long>(nn::num_params(trained)),
              seconds);
  std::printf("train accuracy: %.4f\n", accuracy(trained, train));
  std::printf("test accuracy: %.4f\n", accuracy(trained, test));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
