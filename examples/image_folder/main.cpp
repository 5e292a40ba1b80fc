// A custom image dataset laid out as one folder per class, like torchvision's ImageFolder. The
// example first makes such a folder from a real source: Fashion-MNIST (Debian's
// dataset-fashion-mnist) written out as PNG files,
//
//   image_folder_data/train/ankle_boot/00000.png ... image_folder_data/train/trouser/00299.png
//   image_folder_data/test/ankle_boot/00000.png  ...
//
// then reads the folders back with data::ImageFolderDataset (classes are the sorted folder names),
// trains a small CNN on them with the Learner and random augmentation (a padded random crop and a
// horizontal flip per image, fresh every epoch), and scores it on the test folder.
//
//   ./build/examples/image_folder [--root DIR] [--train-per-class N] [--test-per-class N]
//                                 [--epochs N] [--batch-size N] [--lr X] [--source DIR] [--verbose]
//
// The last line is "test accuracy: X" (examples/image_folder/README.md).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <ember/train/learner.hpp>
#include <ember/train/metrics.hpp>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "../common/args.hpp"

using namespace ember;
namespace fs = std::filesystem;

struct Args {
  std::string root = "image_folder_data", source = data::kFashionMnistDir;
  int64_t train_per_class = 300, test_per_class = 100, epochs = 4, batch_size = 32;
  double lr = 3e-3;
  bool verbose = false;
};

Args parse(int argc, char** argv) {
  Args a;
  examples::ArgReader r("image_folder", argc, argv);
  while (r.next()) {
    if (r.is("--root"))
      a.root = r.value();
    else if (r.is("--source"))
      a.source = r.value();
    else if (r.is("--train-per-class"))
      a.train_per_class = r.count();
    else if (r.is("--test-per-class"))
      a.test_per_class = r.count();
    else if (r.is("--epochs"))
      a.epochs = r.count();
    else if (r.is("--batch-size"))
      a.batch_size = r.count();
    else if (r.is("--lr"))
      a.lr = r.number();
    else if (r.is("--verbose"))
      a.verbose = true;
    else
      r.unknown("--root, --train-per-class, --test-per-class, --epochs, --batch-size, --lr, --source, --verbose");
  }
  return a;
}

// A class name as a folder name: "T-shirt/top" -> "t-shirt_top", "Ankle boot" -> "ankle_boot".
std::string folder_name(std::string name) {
  for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? char(std::tolower(c)) : '_';
  return name;
}

// Writes the first `per_class` images of each class of an MNIST-style set as root/CLASS/NNNNN.png.
void write_folder(const data::IdxDataset& images, const std::string& root, int64_t per_class) {
  fs::remove_all(root);
  std::vector<int64_t> written(data::FashionMnist::kClassNames.size(), 0);
  for (const auto* name : data::FashionMnist::kClassNames) fs::create_directories(root + "/" + folder_name(name));
  for (size_t i = 0; i < images.size(); ++i) {
    const data::MnistItem item = *images.get(i);
    int64_t& count = written.at(item.label);
    if (count >= per_class) continue;
    char file[32];
    std::snprintf(file, sizeof file, "/%05lld.png", static_cast<long long>(count++));
    data::write_png(root + "/" + folder_name(data::FashionMnist::kClassNames[item.label]) + file,
                    data::to_image_item(item).image);  // u8 [1, 28, 28]
  }
}

// conv 3x3 (1 -> 16) - relu - maxpool 2 - conv 3x3 (16 -> 32) - relu - maxpool 2
// - linear (1568 -> 64) - relu - dropout - linear (64 -> classes); about 0.1 M parameters.
struct SmallCnn {
  nn::Conv2d conv1, conv2;
  nn::MaxPool2d pool;
  nn::Linear fc1, fc2;
  nn::Dropout dropout;
  EMBER_MODULE(conv1, conv2, fc1, fc2, dropout)

  DynTensor forward(DynTensor x) const {  // x: [N, 1, 28, 28], normalised -> logits [N, classes]
    x = pool.forward(relu(conv1.forward(std::move(x))));
    x = pool.forward(relu(conv2.forward(std::move(x))));
    x = relu(fc1.forward(flatten(std::move(x), 1)));
    return fc2.forward(dropout.forward(std::move(x)));
  }
};

SmallCnn make_cnn(int64_t classes, const Device& device) {
  return SmallCnn{
      nn::Conv2dConfig{.in_channels = 1, .out_channels = 16, .kernel_size = {3}, .padding = {1}}.init(device),
      nn::Conv2dConfig{.in_channels = 16, .out_channels = 32, .kernel_size = {3}, .padding = {1}}.init(device),
      nn::MaxPool2d{.kernel_size = {2}},
      nn::LinearConfig{.in_features = 32 * 7 * 7, .out_features = 64}.init(device),
      nn::LinearConfig{.in_features = 64, .out_features = classes}.init(device),
      nn::Dropout{.p = 0.25},
  };
}

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);

  // 1. The folders, written from Fashion-MNIST's training and test images.
  const auto start = std::chrono::steady_clock::now();
  write_folder(*data::FashionMnist::train(args.source), args.root + "/train", args.train_per_class);
  write_folder(*data::FashionMnist::test(args.source), args.root + "/test", args.test_per_class);
  const double write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // 2. The folders as datasets: grey 28x28 images, labels from the sorted folder names. Decoding
  // happens once (materialize); augmentation happens per item and epoch, on the loader's workers.
  const data::ImageFolderOptions options{.channels = 1, .expected_size = {{28, 28}}};
  auto train_folder = std::make_shared<data::ImageFolderDataset>(args.root + "/train", options);
  auto test_folder = std::make_shared<data::ImageFolderDataset>(args.root + "/test", options);
  EMBER_CHECK(train_folder->class_names() == test_folder->class_names(),
              "image_folder: the train and test folders hold different classes");
  const std::vector<std::string>& classes = train_folder->class_names();
  const std::vector<float> mean = {0.2860f}, std = {0.3530f};  // Fashion-MNIST's pixel statistics
  auto train_set = data::augmented(data::materialize(data::DatasetPtr<data::ImageItem>(train_folder)), /*seed=*/1,
                                   [=](data::ImageItem it, data::Rng& rng) {
                                     it = data::random_crop(std::move(it), 28, 28, /*padding=*/2, rng);
                                     it = data::random_horizontal_flip(std::move(it), 0.5, rng);
                                     return data::normalize(std::move(it), mean, std);
                                   });
  auto test_set = data::map(data::materialize(data::DatasetPtr<data::ImageItem>(test_folder)),
                            [=](data::ImageItem it) { return data::normalize(std::move(it), mean, std); });
  std::printf("%s: %zu classes (", args.root.c_str(), classes.size());
  for (size_t c = 0; c < classes.size(); ++c) std::printf("%s%s", c ? ", " : "", classes[c].c_str());
  std::printf("), %zu training and %zu test images (written in %.1f s)\n", train_folder->size(), test_folder->size(),
              write_s);

  Device device = Device::cpu().autodiff();
  auto train_loader = data::DataLoaderBuilder(data::batch_images)
                          .batch_size(size_t(args.batch_size))
                          .shuffle(42)
                          .num_workers(2)
                          .device(device)
                          .build(train_set);
  auto test_loader = data::DataLoaderBuilder(data::batch_images).batch_size(250).device(device).build(test_set);

  // 3. Training with the Learner; the test folder is scored after every epoch.
  auto train_step = [](SmallCnn& m, const data::ImageBatch& b) {
    DynTensor logits = m.forward(b.images);
    DynTensor loss = nn::cross_entropy(logits, b.labels);
    return train::TrainStepResult{{loss, logits, b.labels}, loss.backward()};
  };
  auto valid_step = [](const SmallCnn& m, const data::ImageBatch& b) {
    DynTensor logits = m.forward(b.images);
    return train::ClassificationOutput{nn::cross_entropy(logits, b.labels), logits, b.labels};
  };
  device.seed(1);
  auto learner = train::LearnerBuilder(make_cnn(int64_t(classes.size()), device), train_step, valid_step)
                     .optimizer(optim::AdamW({.weight_decay = 1e-4}))
                     .scheduler(std::make_unique<optim::OneCycleLR>(optim::OneCycleLRConfig{
                         .max_lr = args.lr, .total_steps = args.epochs * int64_t(train_loader->num_batches())}))
                     .epochs(args.epochs)
                     .metrics({train::accuracy_metric()})
                     .verbosity(args.verbose ? 1 : 0)
                     .seed(42)
                     .build();
  learner.fit(train_loader, test_loader);

  // 4. Accuracy per class, by hand, in eval mode without gradients.
  SmallCnn model = learner.model();
  nn::set_training(model, false);
  NoGradGuard no_grad;
  std::vector<int64_t> correct(classes.size(), 0), seen(classes.size(), 0);
  for (const data::ImageBatch& b : *test_loader) {
    const std::vector<int64_t> predicted = argmax(model.forward(b.images), 1).to_vector<int64_t>();
    const std::vector<int64_t> labels = b.labels.to_vector<int64_t>();
    for (size_t i = 0; i < labels.size(); ++i) {
      seen[size_t(labels[i])] += 1;
      correct[size_t(labels[i])] += predicted[i] == labels[i];
    }
  }
  int64_t total_correct = 0, total = 0;
  for (size_t c = 0; c < classes.size(); ++c) {
    std::printf("  %-12s %.2f\n", classes[c].c_str(), double(correct[c]) / double(std::max<int64_t>(seen[c], 1)));
    total_correct += correct[c];
    total += seen[c];
  }
  std::printf("test accuracy: %.4f\n", double(total_correct) / double(total));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
