// The small CNN and the synthetic data of the equivalence cases: every rank can build the
// global batch of any step, so each rank also trains the single-process reference itself.
#pragma once

#include <cmath>
#include <cstdio>

#include "ember/nn/conv.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/loss.hpp"
#include "worker.hpp"

namespace ember::distributed::test {

struct SmallCnn {
  nn::Conv<2> c1, c2;
  nn::Linear fc;
  EMBER_MODULE(c1, c2, fc)
  DynTensor forward(DynTensor x) const {
    x = max_pool2d(relu(c1.forward(std::move(x))), {.kernel_size = {2, 2}});
    x = relu(c2.forward(std::move(x)));
    return fc.forward(flatten(std::move(x), 1));
  }
};

// Input [N, 1, 10, 10]: conv 3x3 -> 8x8, pool -> 4x4, conv 3x3 -> 2x2, linear 32 -> classes.
inline SmallCnn make_cnn(const Device& dev, uint64_t seed, int64_t classes = 5) {
  dev.seed(seed);
  return SmallCnn{nn::ConvConfig<2>{.in_channels = 1, .out_channels = 4, .kernel_size = {3, 3}}.init(dev),
                  nn::ConvConfig<2>{.in_channels = 4, .out_channels = 8, .kernel_size = {3, 3}}.init(dev),
                  nn::LinearConfig{32, classes}.init(dev)};
}

constexpr int64_t kGlobalBatch = 12;

// The global batch of `step`: smooth images and labels that depend on the image.
inline std::pair<DynTensor, DynTensor> global_batch(int step, const Device& dev) {
  std::vector<float> x(static_cast<size_t>(kGlobalBatch * 100));
  std::vector<int64_t> y(static_cast<size_t>(kGlobalBatch));
  for (int64_t n = 0; n < kGlobalBatch; ++n) {
    for (int64_t p = 0; p < 100; ++p)
      x[static_cast<size_t>(n * 100 + p)] = float(std::sin(0.37 * double(p) * double(n % 5 + 1) + 0.11 * step + n));
    y[static_cast<size_t>(n)] = (n * 7 + step) % 5;
  }
  return {DynTensor::from_vector(x, Shape({kGlobalBatch, 1, 10, 10}), dev),
          DynTensor::from_vector(y, Shape({kGlobalBatch}), dev)};
}

// The largest |a - b| / (1 + |b|) over every parameter of two models.
inline double max_rel_diff(SmallCnn& a, SmallCnn& b) {
  std::vector<std::vector<double>> va, vb;
  nn::for_each_param(a, [&](const std::string&, nn::Param& p) { va.push_back(p.value().to_vector<double>()); });
  nn::for_each_param(b, [&](const std::string&, nn::Param& p) { vb.push_back(p.value().to_vector<double>()); });
  double worst = va.size() == vb.size() ? 0 : 1e30;
  for (size_t i = 0; i < std::min(va.size(), vb.size()); ++i)
    for (size_t j = 0; j < va[i].size(); ++j)
      worst = std::max(worst, std::abs(va[i][j] - vb[i][j]) / (1 + std::abs(vb[i][j])));
  return worst;
}

// Has the training moved the weights at all (so that equality is not trivial)?
inline double max_abs_change(SmallCnn& before, SmallCnn& after) { return max_rel_diff(after, before); }

}  // namespace ember::distributed::test
