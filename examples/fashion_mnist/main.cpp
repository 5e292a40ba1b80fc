// Fashion-MNIST: train a small CNN with the Learner (live dashboard on a terminal), evaluate it on
// the 10,000 test images, save it as safetensors, reload it and classify a few images.
//
//   ./build/examples/fashion_mnist [--device cpu|cuda] [--fusion] [--epochs N] [--batch-size N]
//       [--train-images N] [--out DIR] [--model FILE] [--quantize int8] [--calibration minmax|percentile|entropy]
//       [--qat-epochs N]
//
// --model FILE skips training and evaluates a model saved by an earlier run (DIR/fashion_cnn.safetensors).
// --quantize int8 then also quantizes it statically (nn::quantize: calibrated on 1,000 training
// images, int8 weights per channel, u8 activations), saves and reloads the int8 model and prints
// its test accuracy beside the f32 one. --qat-epochs N fine-tunes the model with quantization-aware
// training (nn::prepare_qat) for N epochs, converts it to int8 (nn::convert) and prints its accuracy.
//
// Data-parallel on the CPU (Gloo), one process per rank, each on its shard of the training set
// (docs/distributed.md); rank 0 writes the logs, checkpoints and the model, and evaluates:
//   ./build/tools/ember-run/ember-run --nproc 2 ./build/examples/fashion_mnist --epochs 1
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <ember/nn/quantize.hpp>
#include <ember/train/learner.hpp>
#include <ember/train/metrics.hpp>
#if EMBER_HAS_DISTRIBUTED
#include <ember/distributed.hpp>
#include <ember/distributed/sampler.hpp>
#include <ember/train/data_parallel.hpp>
#endif

#include "model.hpp"

using namespace ember;
using fashion::Cnn;
using Batch = data::ImageBatch;

struct Args {
  std::string device = "cpu", out = "build/fashion_mnist";
  bool fusion = false;
  int64_t epochs = 5, batch_size = 64;
  int64_t train_images = 55000;  // fewer for a quick run
  std::string model;  // a saved model to evaluate instead of training one
  std::string quantize;  // "int8": also evaluate the statically quantized model
  nn::Calibration calibration = nn::Calibration::min_max;
  int64_t qat_epochs = 0;  // > 0: also fine-tune with quantization-aware training, then convert to int8
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&] {
      EMBER_CHECK(i + 1 < argc, "fashion_mnist: ", k, " needs a value");
      return std::string(argv[++i]);
    };
    auto count = [&] {  // a positive whole number, the whole value
      const std::string v = value();
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      EMBER_CHECK(!v.empty() && *end == 0 && n > 0, "fashion_mnist: ", k, " takes a positive whole number, not '", v,
                  "'");
      return int64_t(n);
    };
    if (k == "--device") a.device = value();
    else if (k == "--fusion") a.fusion = true;
    else if (k == "--epochs") a.epochs = count();
    else if (k == "--batch-size") a.batch_size = count();
    else if (k == "--out") a.out = value();
    else if (k == "--train-images") a.train_images = std::min<int64_t>(count(), 55000);
    else if (k == "--model") a.model = value();
    else if (k == "--qat-epochs") a.qat_epochs = count();
    else if (k == "--quantize") {
      a.quantize = value();
      EMBER_CHECK(a.quantize == "int8", "fashion_mnist: --quantize takes int8, not '", a.quantize, "'");
    } else if (k == "--calibration") {
      const std::string c = value();
      if (c == "minmax") a.calibration = nn::Calibration::min_max;
      else if (c == "percentile") a.calibration = nn::Calibration::percentile;
      else if (c == "entropy") a.calibration = nn::Calibration::entropy;
      else EMBER_FAIL("fashion_mnist: --calibration takes minmax, percentile or entropy, not '", c, "'");
    } else EMBER_FAIL("fashion_mnist: unknown argument ", k,
                    " (use --device, --fusion, --epochs, --batch-size, --train-images, --out, --model, --quantize,"
                    " --calibration, --qat-epochs)");
  }
  return a;
}

Device pick_device(const std::string& name) {
  if (name == "cpu") return Device::cpu();
  if (name == "cuda") return Device::cuda(0);
  if (name.rfind("cuda:", 0) == 0) {
    char* end = nullptr;
    const long i = std::strtol(name.c_str() + 5, &end, 10);
    if (name.size() > 5 && *end == 0 && i >= 0 && i <= 1024) return Device::cuda(int(i));
  }
  EMBER_FAIL("fashion_mnist: unknown device '", name, "'; use --device cpu, cuda or cuda:N");
}

// Accuracy of `model` (inference device, eval mode) over a loader.
double accuracy(const Cnn& model, data::DataLoader<Batch>& loader) {
  int64_t correct = 0, total = 0;
  for (const Batch& b : loader) {
    DynTensor pred = argmax(model.forward(b.images), 1);
    correct += static_cast<int64_t>(sum(equal(pred, b.labels)).item());
    total += b.labels.numel();
  }
  return double(correct) / double(total);
}

int main(int argc, char** argv) try {
  Args args = parse(argc, argv);
  Device device = pick_device(args.device);
  if (args.fusion) device = device.fusion();  // elementwise chains run as fused kernels
  Device train_device = device.autodiff();

  // Data: 55,000 training images, 5,000 for validation, the 10,000 test images.
  auto all_train = data::FashionMnist::train();
  auto parts = data::split(all_train, {55.0 / 60.0, 5.0 / 60.0});
  auto loader = [&](auto ds, int64_t batch, bool shuffle, const Device& d) {
    auto b = data::DataLoaderBuilder(data::batch_mnist);
    b.batch_size(size_t(batch)).num_workers(2).device(d);
    if (shuffle) b.shuffle(42);
    return b.build(ds);
  };
  // Training (skipped with --model) from `initial` (a fresh model when none) for `epochs` with the
  // learning rate decaying from `lr` to 0: the trained model on rank 0, nothing on the other ranks.
  auto train = [&](std::optional<Cnn> start, int64_t epochs, double lr, const std::string& run) -> std::optional<Cnn> {
    auto train_set = data::partial(parts[0], 0, size_t(args.train_images));
    int rank = 0;
#if EMBER_HAS_DISTRIBUTED
    // Under ember-run (or torchrun, mpirun): one rank of a data-parallel job on its shard, which
    // reshuffles each epoch by itself.
    std::optional<distributed::DataParallel> dp;
    if (distributed::launched_distributed()) {
      dp.emplace(distributed::init_process_group());
      rank = dp->group().rank();
      train_set = distributed::sharded(train_set, rank, dp->group().size(), {.seed = 42});
    }
    auto train_loader = loader(train_set, args.batch_size, !dp, train_device);
#else
    auto train_loader = loader(train_set, args.batch_size, true, train_device);
#endif
    auto valid_loader = loader(parts[1], 500, false, train_device);

    // The train and validation steps: logits, cross-entropy, gradients.
    auto train_step = [](Cnn& m, const Batch& b) {
      DynTensor logits = m.forward(b.images);
      DynTensor loss = nn::cross_entropy(logits, b.labels);
      return train::TrainStepResult{{loss, logits, b.labels}, loss.backward()};
    };
    auto valid_step = [](const Cnn& m, const Batch& b) {
      DynTensor logits = m.forward(b.images);
      return train::ClassificationOutput{nn::cross_entropy(logits, b.labels), logits, b.labels};
    };

    train_device.seed(42);
    Cnn initial = start ? *start : fashion::make_cnn(train_device);
#if EMBER_HAS_DISTRIBUTED
    if (dp) initial = dp->broadcast_parameters(initial);
#endif
    auto builder = train::LearnerBuilder<Cnn, Batch>(initial, train_step, valid_step);
    builder.optimizer(optim::AdamConfig{}.init())
        .scheduler(std::make_unique<optim::CosineAnnealingLR>(  // 1e-3 decaying to 0
            lr, optim::CosineAnnealingLRConfig{.t_max = epochs * int64_t(train_loader->num_batches())}))
        .epochs(epochs)
        .metrics({train::accuracy_metric()})
        .run_dir(args.out + "/" + run)
        .checkpoints({.keep_last = 2, .best_metric = "valid/accuracy"})
        .seed(42);
#if EMBER_HAS_DISTRIBUTED
    if (dp) train::use_data_parallel(builder, *dp);
#endif
    auto learner = builder.build();
    Cnn trained = learner.fit(train_loader, valid_loader);
    if (rank != 0) return std::nullopt;  // rank 0 evaluates and saves the (identical) trained model
    return trained;
  };
  std::optional<Cnn> trained;
  if (args.model.empty()) {
    trained = train(std::nullopt, args.epochs, 1e-3, "run");
    if (!trained) return 0;
  } else {
    trained = fashion::make_cnn(device);
    nn::load(*trained, args.model);
    std::cout << "loaded " << args.model << "\n";
  }

  std::filesystem::create_directories(args.out);
  // Evaluate on the test set, without autodiff, in eval mode.
  Cnn model = nn::to_device(*trained, device);
  nn::set_training(model, false);
  auto test_loader = loader(data::FashionMnist::test(), 500, false, device);

  // Save, reload into a fresh model, and use the reloaded one from here on.
  const std::string path = args.out + "/fashion_cnn.safetensors";
  nn::save(model, path, {{"model", "fashion_mnist_cnn"}});
  Cnn reloaded = fashion::make_cnn(device);
  nn::load(reloaded, path);
  nn::set_training(reloaded, false);
  std::cout << "saved " << path << " (" << nn::num_params(reloaded) << " parameters)\n";

  auto test = data::FashionMnist::test();
  std::vector<data::MnistItem> few;
  for (size_t i = 0; i < 8; ++i) few.push_back(*test->get(i));
  Batch b = data::batch_mnist(few, device);
  std::vector<int64_t> pred = argmax(reloaded.forward(b.images), 1).to_vector<int64_t>();
  std::cout << "a few test images, classified by the reloaded model:\n";
  for (size_t i = 0; i < few.size(); ++i)
    std::printf("  #%zu  %-12s (true: %s)\n", i, data::FashionMnist::kClassNames[pred[i]],
                data::FashionMnist::kClassNames[few[i].label]);

  auto seconds_since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const auto t_f32 = std::chrono::steady_clock::now();
  const double acc = accuracy(reloaded, *test_loader);
  const double f32_seconds = seconds_since(t_f32);
  if (args.quantize == "int8") {
    // Static int8 quantization: calibrate on 1,000 training images, convert, save, reload, evaluate.
    auto calibration = loader(data::partial(parts[0], 0, 1000), 100, false, device);
    nn::QuantizeReport report;
    Cnn q = nn::quantize(reloaded, *calibration, {.calibration = args.calibration}, &report);
    const std::string qpath = args.out + "/fashion_cnn_int8.safetensors";
    nn::save_quantized(qpath, q, {{"model", "fashion_mnist_cnn_int8"}});
    Cnn qreloaded = fashion::make_cnn(device);
    nn::load_quantized(qreloaded, qpath, device);
    nn::set_training(qreloaded, false);
    std::cout << "int8: quantized " << report.quantized.size() << " layers, " << report.skipped.size()
              << " left float; saved and reloaded " << qpath << "\n";
    const auto t_int8 = std::chrono::steady_clock::now();
    const double qacc = accuracy(qreloaded, *test_loader);
    const double int8_seconds = seconds_since(t_int8);
    std::printf("f32 test accuracy: %.4f, int8 test accuracy: %.4f (%+.2f points)\n", acc, qacc,
                100.0 * (qacc - acc));
    std::printf("test-set pass (10,000 images, batches of 500, data loading included): f32 %.2f s, int8 %.2f s\n",
                f32_seconds, int8_seconds);
  }
  if (args.qat_epochs > 0) {
    // Quantization-aware fine-tuning: fake-quantized layers trained for --qat-epochs at a tenth of
    // the learning rate, then converted to the same int8 layers.
#if EMBER_HAS_DISTRIBUTED
    EMBER_CHECK(!distributed::launched_distributed(), "fashion_mnist: --qat-epochs runs in one process, not under ember-run");
#endif
    Cnn qat = nn::prepare_qat(nn::to_device(reloaded, train_device));
    nn::set_training(qat, true);
    std::optional<Cnn> tuned = train(qat, args.qat_epochs, 1e-4, "qat");
    if (!tuned) return 0;
    Cnn q = nn::convert(nn::to_device(*tuned, device));
    nn::set_training(q, false);
    const double qacc = accuracy(q, *test_loader);
    std::printf("f32 test accuracy: %.4f, int8 after %lld QAT epochs: %.4f (%+.2f points)\n", acc,
                static_cast<long long>(args.qat_epochs), qacc, 100.0 * (qacc - acc));
  }
  std::printf("test accuracy: %.4f\n", acc);
  return 0;
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
