// A tiny classification problem for the Learner tests: three separable Gaussian blobs in 2-D, a
// linear classifier, and an in-memory loader that reshuffles with (seed, epoch) like the data
// layer's DataLoader (set_epoch, num_batches, wait_seconds).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "ember/nn/linear.hpp"
#include "ember/nn/loss.hpp"
#include "ember/train/learner.hpp"

namespace tiny {

using namespace ember;

struct Batch {
  DynTensor x;  // [n, 2] f32
  DynTensor y;  // [n] i64
};

struct Samples {
  std::vector<float> x;  // [n, 2]
  std::vector<int64_t> y;
  size_t size() const { return y.size(); }
};

// Class k is centred at 3 * (cos 2πk/3, sin 2πk/3) with unit-ish spread: separable in practice.
inline Samples blobs(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.f, 0.5f);
  Samples s;
  for (size_t i = 0; i < n; ++i) {
    int64_t k = int64_t(i % 3);
    float a = float(2 * 3.14159265358979 * double(k) / 3);
    s.x.push_back(3 * std::cos(a) + noise(rng));
    s.x.push_back(3 * std::sin(a) + noise(rng));
    s.y.push_back(k);
  }
  return s;
}

class Loader {
 public:
  Loader(Samples s, size_t batch_size, uint64_t seed, Device device)
      : s_(std::move(s)), bs_(batch_size), seed_(seed), device_(std::move(device)) {}
  size_t num_batches() const { return (s_.size() + bs_ - 1) / bs_; }
  void set_epoch(size_t e) { epoch_ = e; }
  double wait_seconds() const { return 0; }
  std::vector<Batch>::const_iterator begin() {
    std::vector<size_t> order(s_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::mt19937_64 rng(seed_ * 1000003 + epoch_);
    std::shuffle(order.begin(), order.end(), rng);
    batches_.clear();
    for (size_t b = 0; b < order.size(); b += bs_) {
      std::vector<float> x;
      std::vector<int64_t> y;
      for (size_t i = b; i < std::min(order.size(), b + bs_); ++i) {
        x.push_back(s_.x[2 * order[i]]);
        x.push_back(s_.x[2 * order[i] + 1]);
        y.push_back(s_.y[order[i]]);
      }
      int64_t n = int64_t(y.size());
      batches_.push_back({DynTensor::from_vector(x, Shape{n, 2}, device_), DynTensor::from_vector(y, Shape{n}, device_)});
    }
    ++epoch_;  // a loader without set_epoch calls would move on by itself
    return batches_.cbegin();
  }
  std::vector<Batch>::const_iterator end() const { return batches_.cend(); }

 private:
  Samples s_;
  size_t bs_;
  uint64_t seed_;
  Device device_;
  size_t epoch_ = 0;
  std::vector<Batch> batches_;
};

struct Model {
  nn::Linear fc;
  EMBER_MODULE(fc)
  DynTensor forward(const DynTensor& x) const { return fc.forward(x); }
};

inline Device device() { return Device::cpu().autodiff(); }

inline Model make_model(uint64_t seed) {
  Device d = device();
  d.seed(seed);
  return Model{nn::LinearConfig{2, 3}.init(d)};
}

// Steps; `delay_s` slows training down (for the dashboard test).
inline train::TrainStepFn<Model, Batch> train_step(double delay_s = 0) {
  return [delay_s](Model& m, const Batch& b) {
    if (delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
    DynTensor logits = m.forward(b.x);
    DynTensor loss = nn::cross_entropy(logits, b.y);
    return train::TrainStepResult{{loss, logits, b.y}, loss.backward()};
  };
}

inline train::ValidStepFn<Model, Batch> valid_step() {
  return [](const Model& m, const Batch& b) {
    DynTensor logits = m.forward(b.x);
    return train::ClassificationOutput{nn::cross_entropy(logits, b.y), logits, b.y};
  };
}

}  // namespace tiny
