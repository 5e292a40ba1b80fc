// A renderer of your own: the Learner hands every renderer the same progress views; this one
// prints a compact line every 50 batches and a table row per epoch. It trains a linear
// classifier on 2-d synthetic blobs so that it runs in a second.
//
//   ./build/examples/custom_renderer
#include <cstdio>

#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <ember/train/learner.hpp>
#include <ember/train/metrics.hpp>
#include <ember/train/renderer.hpp>

using namespace ember;

struct Batch {
  DynTensor x, y;
};

struct Classifier {
  nn::Linear fc;
  EMBER_MODULE(fc)
  DynTensor forward(DynTensor x) const { return fc.forward(std::move(x)); }
};

// The renderer: override update() (every batch) and, optionally, start/epoch_end/message/finish.
struct CompactRenderer : train::Renderer {
  void update(const train::ProgressView& p) override {
    if (p.split != train::Split::train || p.batch % 50 != 0) return;
    std::printf("  epoch %lld batch %lld/%lld", (long long)p.epoch + 1, (long long)p.batch, (long long)p.num_batches);
    for (const auto& [name, value] : p.running)
      if (name == "loss" || name == "accuracy") std::printf("  %s %.4f", name.c_str(), value);
    std::printf("\n");
  }
  void epoch_end(const train::EpochView& e) override {
    std::printf("epoch %lld %s:", (long long)e.epoch + 1, e.split == train::Split::train ? "train" : "valid");
    for (const auto& [name, value] : e.values)
      if (name == "loss" || name == "accuracy") std::printf("  %s %.4f", name.c_str(), value);
    std::printf("\n");
  }
};

int main() {
  Device dev = Device::cpu().autodiff();
  dev.seed(3);
  // Four Gaussian blobs, one per class, 200 batches of 32 points.
  std::vector<Batch> batches;
  for (int i = 0; i < 200; ++i) {
    DynTensor y = DynTensor::randint({32}, 0, 4, DType::i64, dev);
    DynTensor centers = DynTensor::from_vector<float>({2, 2, -2, 2, -2, -2, 2, -2}, {4, 2}, dev);
    DynTensor x = index_select(centers, 0, y) + DynTensor::normal({32, 2}, 0, 0.7, DType::f32, dev);
    batches.push_back({x.detach(), y});
  }
  auto step = [](Classifier& m, const Batch& b) {
    DynTensor logits = m.forward(b.x);
    DynTensor loss = nn::cross_entropy(logits, b.y);
    return train::TrainStepResult{{loss, logits, b.y}, loss.backward()};
  };
  auto learner = train::LearnerBuilder<Classifier, Batch>(Classifier{nn::LinearConfig{2, 4}.init(dev)}, step)
                     .optimizer(optim::AdamConfig{}.init())
                     .lr(0.05)
                     .epochs(2)
                     .metrics({train::accuracy_metric()})
                     .renderer(std::make_shared<CompactRenderer>())
                     .build();
  learner.fit(batches);
  return 0;
}
