// Trains the digit recogniser's CNN (model.hpp) on UCI's 8x8 digits (Debian's python3-sklearn) and
// saves it for the page: OUT/digits_cnn.safetensors, metadata {"model": "digits_cnn"}, the name
// web/models.cpp registers. Trains on the first 1,437 images, each epoch shifted by up to a pixel
// (a digit drawn on the page's canvas is rarely centred as UCI's are), and tests on the other 360.
//
//   ./build/web/digits_web_train [--out DIR] [--epochs N] [--seed N] [--lr X] [--batch-size N] [--data FILE]
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

#include "../../../examples/common/digits.hpp"
#include "../../../examples/common/digits_training.hpp"
#include "model.hpp"

using namespace ember;

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

int main(int argc, char** argv) try {
  const digits::TrainArgs args =
      digits::parse_train_args("digits_web_train", argc, argv, {.out = "build/web-models", .epochs = 40, .lr = 3e-3});
  const auto start = std::chrono::steady_clock::now();
  const auto [train, test] = digits::split(digits::read(args.data));

  // Each epoch's images: each shifted by -1, 0 or 1 pixel in x and y, in a new order. Saved in
  // eval mode, as the page loads it.
  digits_demo::Cnn trained =
      digits::train_model(args, int64_t(train.size()), digits_demo::make_model, [&](std::mt19937& rng) {
        std::vector<data::ImageItem> items;
        items.reserve(train.size());
        std::uniform_int_distribution<int> shift(-1, 1);
        for (const data::ImageItem& it : train) {
          const int dx = shift(rng), dy = shift(rng);
          items.push_back(shifted(it, dx, dy));
        }
        std::shuffle(items.begin(), items.end(), rng);
        return items;
      });
  nn::set_training(trained, false);
  std::filesystem::create_directories(args.out);
  const std::string path = args.out + "/digits_cnn.safetensors";
  nn::save(trained, path, {{"model", "digits_cnn"}});

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("saved %s (%lld parameters) in %.1f s\n", path.c_str(), static_cast<long long>(nn::num_params(trained)),
              seconds);
  std::printf("train accuracy: %.4f\n", digits::accuracy(trained, train));
  std::printf("test accuracy: %.4f\n", digits::accuracy(trained, test));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
