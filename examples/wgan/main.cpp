// A Wasserstein GAN with gradient penalty (Gulrajani et al. 2017, "Improved Training of Wasserstein
// GANs") on UCI's 8x8 handwritten digits (Debian's python3-sklearn; examples/common/digits.hpp).
//
//   ./build/examples/wgan [--epochs N] [--batch-size N] [--lr X] [--critic-steps N] [--out DIR] [--seed N]
//
// The critic D scores images; it is trained to maximise E[D(real)] - E[D(fake)], the Wasserstein-1
// estimate, while the penalty lambda * E[(|grad_x D(x^)| - 1)^2] on points x^ between real and fake
// images keeps it 1-Lipschitz. The penalty is a function of a gradient, so its own gradient with
// respect to the critic's weights is a second-order gradient: the first backward runs with
// create_graph, which records it as ops that the second backward differentiates again.
// The generator G maps 16 normal numbers to 64 pixels and is trained to raise E[D(G(z))].
//
// Every epoch writes DIR/epoch-NNN.png, a grid of 64 samples from the same fixed noise. At the
// end a digit classifier, trained here on the real training digits, scores 1,000 generated
// samples: "digit score" is exp(E_x KL(p(y|x) || p(y))), the Inception Score with this classifier.
// It is near 1 when the samples look like no digit, or like one and the same digit (mode
// collapse), and near 10 for confident, evenly spread digits. The last line is "digit score: X"
// (examples/wgan/README.md).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "../common/args.hpp"
#include "../common/digits.hpp"

using namespace ember;

constexpr int64_t kNoise = 16;

struct Args {
  std::string out = "runs/wgan", data = digits::kPath;
  int64_t epochs = 200, batch_size = 64, critic_steps = 5, seed = 1;
  double lr = 1e-3, penalty = 10;
};

Args parse(int argc, char** argv) {
  Args a;
  examples::ArgReader r("wgan", argc, argv);
  while (r.next()) {
    if (r.is("--epochs"))
      a.epochs = r.count();
    else if (r.is("--batch-size"))
      a.batch_size = r.count();
    else if (r.is("--critic-steps"))
      a.critic_steps = r.count();
    else if (r.is("--lr"))
      a.lr = r.number();
    else if (r.is("--penalty"))
      a.penalty = r.number();
    else if (r.is("--seed"))
      a.seed = r.count();
    else if (r.is("--out"))
      a.out = r.value();
    else if (r.is("--data"))
      a.data = r.value();
    else
      r.unknown("--epochs, --batch-size, --critic-steps, --lr, --penalty, --seed, --out, --data");
  }
  return a;
}

// Three linear layers; `hidden` is the activation between them.
struct Mlp3 {
  nn::Linear fc1, fc2, fc3;
  EMBER_MODULE(fc1, fc2, fc3)

  static Mlp3 make(int64_t in, int64_t hidden, int64_t out, const Device& d) {
    return {nn::LinearConfig{in, hidden}.init(d), nn::LinearConfig{hidden, hidden}.init(d),
            nn::LinearConfig{hidden, out}.init(d)};
  }
};

struct Generator {  // noise [N, 16] -> pixels [N, 64] in (0, 1)
  Mlp3 net;
  EMBER_MODULE(net)
  DynTensor forward(const DynTensor& z) const {
    DynTensor h = relu(net.fc2.forward(relu(net.fc1.forward(z))));
    return sigmoid(net.fc3.forward(h));
  }
};

struct Critic {  // pixels [N, 64] -> one unbounded score per image [N, 1]
  Mlp3 net;
  EMBER_MODULE(net)
  DynTensor forward(const DynTensor& x) const {
    DynTensor h = leaky_relu(net.fc2.forward(leaky_relu(net.fc1.forward(x), 0.2)), 0.2);
    return net.fc3.forward(h);
  }
};

// 64 images of 8x8 pixels in [0, 1] as one PNG: an 8x8 grid, each pixel 4x4, a dark gap between.
void write_grid(const std::string& path, const std::vector<float>& pixels) {
  constexpr int64_t kScale = 4, kCell = digits::kSide * kScale + 2, kCols = 8;
  const int64_t n = int64_t(pixels.size()) / digits::kPixels, rows = (n + kCols - 1) / kCols;
  const int64_t height = rows * kCell, width = kCols * kCell;
  std::vector<uint8_t> image(size_t(height * width), 40);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < digits::kSide * kScale; ++y)
      for (int64_t x = 0; x < digits::kSide * kScale; ++x) {
        const float v = pixels[size_t(i * digits::kPixels + (y / kScale) * digits::kSide + x / kScale)];
        const int64_t py = (i / kCols) * kCell + 1 + y, px = (i % kCols) * kCell + 1 + x;
        image[size_t(py * width + px)] = uint8_t(std::lround(255.0 * std::clamp(v, 0.0f, 1.0f)));
      }
  data::write_png(path, TensorData::from_vector(image, Shape{1, height, width}));
}

// A digit classifier for the score: Mlp3 64 -> 64 -> 10 with ReLU, full-batch Adam on the real
// training digits.
struct Classifier {
  Mlp3 net;
  EMBER_MODULE(net)
  DynTensor forward(const DynTensor& x) const {
    return net.fc3.forward(relu(net.fc2.forward(relu(net.fc1.forward(x)))));
  }
};

Classifier train_classifier(const DynTensor& images, const DynTensor& labels, const Device& device) {
  Classifier c{Mlp3::make(digits::kPixels, 64, digits::kClasses, device)};
  optim::Adam opt;
  for (int step = 0; step < 300; ++step) {
    Gradients g = nn::cross_entropy(c.forward(images), labels).backward();
    c = opt.step(std::move(c), g, 1e-2);
  }
  return c;
}

// exp(mean over samples of KL(p(y|x) || p(y))), p(y) the mean of p(y|x) over the samples.
double digit_score(const Classifier& c, const DynTensor& images) {
  NoGradGuard no_grad;
  DynTensor p = softmax(c.forward(images), 1);                            // [N, 10]
  DynTensor marginal = mean(p, {0}, /*keepdim=*/true);                    // [1, 10]
  DynTensor kl = sum(p * (log(p + 1e-12) - log(marginal + 1e-12)), {1});  // [N]
  return std::exp(mean(kl).item());
}

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  std::filesystem::create_directories(args.out);
  Device device = Device::cpu().autodiff();
  device.seed(uint64_t(args.seed));

  auto [train_rows, test_rows] = digits::split(digits::read(args.data));
  const size_t n_train = train_rows.size();
  auto loader = data::DataLoaderBuilder(data::batch_images)
                    .batch_size(size_t(args.batch_size))
                    .shuffle(uint64_t(args.seed))
                    .drop_last(true)
                    .device(device)
                    .build(data::in_memory(train_rows));
  auto whole = [&](std::vector<data::ImageItem> rows) { return data::batch_images(std::move(rows), device); };

  Generator generator{Mlp3::make(kNoise, 128, digits::kPixels, device)};
  Critic critic{Mlp3::make(digits::kPixels, 128, 1, device)};
  optim::Adam opt_g({.betas = {0.5, 0.9}}), opt_c({.betas = {0.5, 0.9}});  // the paper's betas
  const DynTensor fixed_noise = DynTensor::normal({64, kNoise}, 0, 1, DType::f32, device);
  const BackwardOptions create_graph{.create_graph = true};

  std::printf("training a WGAN-GP on %zu digits, %lld epochs of %zu critic steps, a generator step every %lld\n",
              n_train, static_cast<long long>(args.epochs), loader->num_batches(),
              static_cast<long long>(args.critic_steps));
  int64_t step = 0;
  for (int64_t epoch = 1; epoch <= args.epochs; ++epoch) {
    double w_sum = 0, gp_sum = 0, gnorm_sum = 0;
    int64_t batches = 0;
    for (const data::ImageBatch& b : *loader) {
      const int64_t n = b.images.shape()[0];
      DynTensor real = flatten(b.images, 1);  // [n, 64]
      DynTensor fake = no_grad([&] {
        return generator.forward(DynTensor::normal({n, kNoise}, 0, 1, DType::f32, device));
      });

      // The critic: the gradient of D at random points between real and fake images, kept in the
      // graph (create_graph), so that the penalty on its norm can be differentiated again.
      DynTensor eps = DynTensor::uniform({n, 1}, 0, 1, DType::f32, device);
      DynTensor between = (eps * real + (1.0 - eps) * fake).require_grad();
      DynTensor grad_x = *between.grad(sum(critic.forward(between)).backward(create_graph));  // [n, 64]
      DynTensor grad_norm = norm(grad_x, 2, {1});
      DynTensor penalty = mean(square(grad_norm - 1.0));
      DynTensor wasserstein = mean(critic.forward(real)) - mean(critic.forward(fake));
      DynTensor critic_loss = -wasserstein + args.penalty * penalty;
      critic = opt_c.step(std::move(critic), critic_loss.backward(), args.lr);  // through grad_x: second order

      w_sum += wasserstein.item();
      gp_sum += penalty.item();
      gnorm_sum += mean(grad_norm).item();
      ++batches;

      // The generator, every critic_steps critic steps: raise the critic's score of its samples.
      if (++step % args.critic_steps == 0) {
        DynTensor samples = generator.forward(DynTensor::normal({n, kNoise}, 0, 1, DType::f32, device));
        DynTensor generator_loss = -mean(critic.forward(samples));
        generator = opt_g.step(std::move(generator), generator_loss.backward(), args.lr);
      }
    }
    char name[32];
    std::snprintf(name, sizeof name, "/epoch-%03lld.png", static_cast<long long>(epoch));
    const std::string png = args.out + name;
    write_grid(png, no_grad([&] { return generator.forward(fixed_noise); }).to_vector<float>());
    if (epoch == 1 || epoch % 10 == 0 || epoch == args.epochs)
      std::printf("epoch %3lld  wasserstein %7.4f  penalty %.4f  |grad_x D| %.3f  -> %s\n",
                  static_cast<long long>(epoch), w_sum / double(batches), gp_sum / double(batches),
                  gnorm_sum / double(batches), png.c_str());
  }

  // The score: a classifier of real digits looks at 1,000 generated ones.
  const data::ImageBatch train_set = whole(train_rows), test_set = whole(test_rows);
  Classifier classifier = train_classifier(flatten(train_set.images, 1), train_set.labels, device);
  nn::set_training(classifier, false);
  const double test_accuracy =
      no_grad([&] {
        return sum(equal(argmax(classifier.forward(flatten(test_set.images, 1)), 1), test_set.labels)).item();
      }) /
      double(test_rows.size());
  DynTensor generated = no_grad([&] {
    return generator.forward(DynTensor::normal({1000, kNoise}, 0, 1, DType::f32, device));
  });
  Generator untrained{Mlp3::make(kNoise, 128, digits::kPixels, device)};
  DynTensor untrained_samples = no_grad([&] {
    return untrained.forward(DynTensor::normal({1000, kNoise}, 0, 1, DType::f32, device));
  });
  std::printf("classifier: test accuracy %.4f on real digits\n", test_accuracy);
  std::printf("pixel mean/std: generated %.3f/%.3f, real %.3f/%.3f\n", mean(generated).item(),
              std::sqrt(var(generated).item()), mean(train_set.images).item(), std::sqrt(var(train_set.images).item()));
  std::printf("digit score of real test digits %.2f, of an untrained generator %.2f\n",
              digit_score(classifier, flatten(test_set.images, 1)), digit_score(classifier, untrained_samples));
  std::printf("digit score: %.2f\n", digit_score(classifier, generated));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
