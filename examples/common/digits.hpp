// UCI's handwritten digits as scikit-learn ships them (Debian's python3-sklearn): 1,797 images
// of 8x8 pixels with 17 grey levels (0..16) and their digit 0..9 (UCI's optdigits test set, 13
// writers). Used by the examples mnist_mlp, wgan and pytorch_import.
//
//   std::vector<data::ImageItem> all = digits::read();     // f32 [1, 8, 8] in [0, 1], label 0..9
//   auto [train, test] = digits::split(all);               // rows 0..1436 and 1437..1796
//   auto loader = data::DataLoaderBuilder(data::batch_images).batch_size(64).build(data::in_memory(train));
//
// digits.csv.gz holds one image a line: 64 comma-separated pixel values, row by row, then the
// label. The split is by row position, so the Python side of pytorch_import gets the same one.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <ember/data.hpp>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace digits {

inline constexpr const char* kPath = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
inline constexpr int64_t kSide = 8, kPixels = 64, kClasses = 10, kTrainRows = 1437;

// Every image of the file, pixels scaled to [0, 1].
inline std::vector<ember::data::ImageItem> read(const std::string& path = kPath) {
  using namespace ember;
  EMBER_CHECK(std::filesystem::exists(path), "digits: ", path,
              " not found; it ships with the Debian package python3-sklearn (apt-get install python3-sklearn, "
              "or scripts/install-deps.sh)");
  gzFile f = gzopen(path.c_str(), "rb");
  EMBER_CHECK(f != nullptr, "digits: cannot open ", path);
  std::string text;
  char buf[1 << 14];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  gzclose(f);

  std::vector<data::ImageItem> items;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::vector<float> pixels;
    int64_t label = -1;
    for (std::string v; std::getline(fields, v, ',');) {
      if (int64_t(pixels.size()) < kPixels)
        pixels.push_back(std::stof(v) / 16.0f);
      else
        label = std::stoll(v);
    }
    EMBER_CHECK(int64_t(pixels.size()) == kPixels && label >= 0 && label < kClasses, "digits: ", path, " line ",
                items.size() + 1, " is not 64 pixels and a digit");
    items.push_back({TensorData::from_vector(pixels, Shape{1, kSide, kSide}), label});
  }
  EMBER_CHECK(int64_t(items.size()) > kTrainRows, "digits: ", path, " has only ", items.size(), " images");
  return items;
}

// The fixed split: the first kTrainRows images to train on, the other 360 to test.
inline std::pair<std::vector<ember::data::ImageItem>, std::vector<ember::data::ImageItem>> split(
    std::vector<ember::data::ImageItem> all) {
  std::vector<ember::data::ImageItem> test(all.begin() + kTrainRows, all.end());
  all.resize(size_t(kTrainRows));
  return {std::move(all), std::move(test)};
}

}  // namespace digits
