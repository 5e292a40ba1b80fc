// Writes the first N Fashion-MNIST test images (Debian's dataset-fashion-mnist) as JSON, for the
// Fashion demo page to show and classify, and for the browser tests to run through
// ember_web_reference (it reads this file as its INPUTS.json):
//
//   ./build/web/ember_web_fashion_samples [--out DIR] [--count N] [--data DIR]
//
// writes DIR/fashion_samples.json (DIR defaults to build/web-models, N to 16):
//
//   {"shape": [1, 1, 28, 28], "classes": ["T-shirt/top", ...], "labels": [9, 2, ...],
//    "inputs": [[784 pixels in [0, 1], row by row], ...]}
//
// The pixels are scaled as data::batch_mnist scales them for training (u8 / 255, as f32), and
// written with enough digits to read back the same f32.
#include <cstdio>
#include <ember/core/json_escape.hpp>
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "../../examples/common/args.hpp"

using namespace ember;

int main(int argc, char** argv) try {
  std::string out = "build/web-models", dir = data::kFashionMnistDir;
  int64_t count = 16;
  examples::ArgReader r("ember_web_fashion_samples", argc, argv);
  while (r.next()) {
    if (r.is("--out"))
      out = r.value();
    else if (r.is("--count"))
      count = r.count();
    else if (r.is("--data"))
      dir = r.value();
    else
      r.unknown("--out, --count, --data");
  }
  const auto test = data::FashionMnist::test(dir);
  EMBER_CHECK(size_t(count) <= test->size(), "ember_web_fashion_samples: --count ", count, " is more than the ",
              test->size(), " test images");

  std::string classes, labels, inputs;
  for (size_t c = 0; c < data::FashionMnist::kClassNames.size(); ++c) {
    classes += c ? ",\"" : "\"";
    append_json_escaped(classes, data::FashionMnist::kClassNames[c]);
    classes += "\"";
  }
  for (size_t i = 0; i < size_t(count); ++i) {
    const data::MnistItem item = *test->get(i);
    if (i) labels += ",";
    labels += std::to_string(int(item.label));
    inputs += i ? ",\n[" : "\n[";
    for (size_t p = 0; p < item.image.size(); ++p) {
      char buf[24];
      std::snprintf(buf, sizeof buf, "%s%.9g", p ? "," : "", double(float(item.image[p]) / 255.0f));
      inputs += buf;
    }
    inputs += "]";
  }
  std::filesystem::create_directories(out);
  const std::string path = out + "/fashion_samples.json";
  std::ofstream f(path);
  f << "{\"shape\":[1,1," << test->rows() << "," << test->cols() << "],\n\"classes\":[" << classes << "],\n\"labels\":["
    << labels << "],\n\"inputs\":[" << inputs << "]}\n";
  EMBER_CHECK(f.flush().good(), "ember_web_fashion_samples: cannot write ", path);
  std::printf("wrote %s (%lld test images)\n", path.c_str(), static_cast<long long>(count));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
