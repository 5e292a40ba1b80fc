// A CNN trained in PyTorch, run in ember: train_pytorch.py (Debian's python3-torch) trains it on
// UCI's 8x8 digits and saves its state_dict with torch.save; this program declares the same layers
// as an ember module, loads the .pt file into it (nn::load reads torch.save's zip format without
// PyTorch), classifies the 360 test digits and compares its logits with the ones PyTorch wrote.
//
//   /usr/bin/python3 examples/pytorch_import/train_pytorch.py pytorch_digits
//   ./build/examples/pytorch_import [--dir pytorch_digits] [--tolerance X] [--data FILE]
//
// The last line is "agreement: K/360 predictions, max logit difference D"; the exit status is
// non-zero unless every prediction agrees and D <= tolerance (examples/pytorch_import/README.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <ember/store/npy.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "../common/args.hpp"
#include "../common/digits.hpp"

using namespace ember;

struct Args {
  std::string dir = "pytorch_digits", data = digits::kPath;
  double tolerance = 1e-4;
};

Args parse(int argc, char** argv) {
  Args a;
  examples::ArgReader r("pytorch_import", argc, argv);
  while (r.next()) {
    if (r.is("--dir"))
      a.dir = r.value();
    else if (r.is("--data"))
      a.data = r.value();
    else if (r.is("--tolerance"))
      a.tolerance = r.number();
    else
      r.unknown("--dir, --tolerance, --data");
  }
  return a;
}

// train_pytorch.py's Cnn, layer for layer; the member names are the state_dict's keys
// ("conv1.weight", "fc2.bias", ...), and Conv2d and Linear keep PyTorch's weight layouts.
struct CnnForDigits {
  nn::Conv2d conv1, conv2;
  nn::MaxPool2d pool;
  nn::Linear fc1, fc2;
  EMBER_MODULE(conv1, conv2, fc1, fc2)

  DynTensor forward(DynTensor x) const {  // [N, 1, 8, 8] in [0, 1] -> [N, 10]
    x = relu(conv1.forward(std::move(x)));
    x = pool.forward(relu(conv2.forward(std::move(x))));
    x = relu(fc1.forward(flatten(std::move(x), 1)));
    return fc2.forward(std::move(x));
  }
};

CnnForDigits make_cnn(const Device& device) {
  return CnnForDigits{
      nn::Conv2dConfig{.in_channels = 1, .out_channels = 16, .kernel_size = {3}, .padding = {1}}.init(device),
      nn::Conv2dConfig{.in_channels = 16, .out_channels = 32, .kernel_size = {3}, .padding = {1}}.init(device),
      nn::MaxPool2d{.kernel_size = {2}},
      nn::LinearConfig{.in_features = 32 * 4 * 4, .out_features = 64}.init(device),
      nn::LinearConfig{.in_features = 64, .out_features = 10}.init(device),
  };
}

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  const std::string pt = args.dir + "/digits_cnn.pt", npy = args.dir + "/test_logits.npy";

  // The model: built with random weights, then every parameter replaced from the .pt file
  // (strict: a missing, unexpected or mis-shaped tensor is an error naming it).
  CnnForDigits model = make_cnn(Device::cpu());
  nn::load(model, pt);
  nn::set_training(model, false);
  std::printf("loaded %s: %lld parameters\n", pt.c_str(), static_cast<long long>(nn::num_params(model)));

  // The 360 test digits through ember, and PyTorch's logits for the same images.
  auto [train_rows, test_rows] = digits::split(digits::read(args.data));
  data::ImageBatch test = data::batch_images(test_rows, Device::cpu());
  const std::vector<float> ours = model.forward(test.images).to_vector<float>();
  const TensorData theirs_data = store::read_npy(npy);
  const int64_t n = int64_t(test_rows.size()), classes = digits::kClasses;
  EMBER_CHECK(theirs_data.shape() == Shape({n, classes}), "pytorch_import: ", npy, " has shape ", theirs_data.shape(),
              ", expected [", n, ", ", classes, "]");
  const std::vector<float> theirs = theirs_data.to_vector<float>();

  auto predicted = [&](const std::vector<float>& logits, int64_t i) {
    auto row = logits.begin() + i * classes;
    return int64_t(std::max_element(row, row + classes) - row);
  };
  int64_t agree = 0, ours_correct = 0, theirs_correct = 0;
  double max_diff = 0;
  std::printf("  image  digit  ember  pytorch\n");
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = test_rows[size_t(i)].label, a = predicted(ours, i), b = predicted(theirs, i);
    if (i < 12)
      std::printf("  %5lld  %5lld  %5lld  %7lld\n", static_cast<long long>(i), static_cast<long long>(label),
                  static_cast<long long>(a), static_cast<long long>(b));
    agree += a == b;
    ours_correct += a == label;
    theirs_correct += b == label;
    for (int64_t c = 0; c < classes; ++c)
      max_diff = std::max(max_diff, double(std::fabs(ours[size_t(i * classes + c)] - theirs[size_t(i * classes + c)])));
  }
  std::printf("test accuracy: ember %.4f, pytorch %.4f\n", double(ours_correct) / double(n),
              double(theirs_correct) / double(n));
  std::printf("agreement: %lld/%lld predictions, max logit difference %.2e\n", static_cast<long long>(agree),
              static_cast<long long>(n), max_diff);
  return agree == n && max_diff <= args.tolerance ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
