// The layer modules (src/nn/{linear,embedding,conv,pool,norm,dropout,sequential,resample,activation}.cpp):
// state_dict keys and shapes equal to PyTorch's, output shapes, default initialisation (by the
// torch.nn formulas), train/eval behaviour, and the module-level behaviour the ops do not cover
// (running statistics, padding modes, padding_idx, ...) against cases/layers.json, written by
// gen_layers_ref.py from torch 1.13. Full numeric conformance of every layer is tests/nn/conformance.
#include "ember/nn/layers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ember::nn {
namespace {

using Json = nlohmann::json;

const Json& refs() {
  static const Json j = [] {
    std::ifstream in(std::string(EMBER_NN_TEST_DIR) + "/cases/layers.json");
    EMBER_CHECK(in.good(), "layers_test: cannot open cases/layers.json (run gen_layers_ref.py)");
    return Json::parse(in);
  }();
  return j;
}

DynTensor tensor(const Json& t, const Device& d = Device::cpu()) {
  Shape shape(t["shape"].get<std::vector<int64_t>>());
  return DynTensor::from_vector(t["data"].get<std::vector<float>>(), shape, d);
}
DynTensor int_tensor(const Json& t, const Device& d = Device::cpu()) {
  Shape shape(t["shape"].get<std::vector<int64_t>>());
  return DynTensor::from_vector(t["data"].get<std::vector<int64_t>>(), shape, d);
}

void expect_close(const DynTensor& got, const Json& want, double tol = 1e-5) {
  const Shape shape(want["shape"].get<std::vector<int64_t>>());
  ASSERT_EQ(got.shape(), shape);
  const std::vector<double> g = got.cast(DType::f64).to_vector<double>();
  const std::vector<double> w = want["data"].get<std::vector<double>>();
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
}

// (key, shape) pairs of a module's state_dict.
using Keys = std::vector<std::pair<std::string, std::vector<int64_t>>>;
template <class M>
Keys keys_of(const M& m) {
  Keys out;
  for (const auto& [k, v] : state_dict(m)) out.emplace_back(k, v.shape().dims());
  return out;
}

// ---- state_dict keys and shapes: PyTorch's ----
// Expected lists from /usr/bin/python3 -c "import torch; m = torch.nn.Conv2d(3, 8, 3);
//   print([(k, list(v.shape)) for k, v in m.state_dict().items()])" (torch 1.13), one per layer.

TEST(LayerKeys, DenseAndEmbedding) {
  EXPECT_EQ(keys_of(LinearConfig{4, 3}.init()), (Keys{{"weight", {3, 4}}, {"bias", {3}}}));  // Linear(4, 3)
  EXPECT_EQ(keys_of(LinearConfig{4, 3, false}.init()), (Keys{{"weight", {3, 4}}}));          // bias=False
  EXPECT_EQ(keys_of(BilinearConfig{2, 3, 4}.init()),
            (Keys{{"weight", {4, 2, 3}}, {"bias", {4}}}));                            // Bilinear(2, 3, 4)
  EXPECT_EQ(keys_of(EmbeddingConfig{10, 4, 0}.init()), (Keys{{"weight", {10, 4}}}));  // Embedding(10, 4, 0)
  EXPECT_EQ(keys_of(PReluConfig{3}.init()), (Keys{{"weight", {3}}}));                 // PReLU(3)
  EXPECT_TRUE(keys_of(Identity{}).empty());
  EXPECT_TRUE(keys_of(Flatten{}).empty());
  EXPECT_TRUE(keys_of(Dropout{}).empty());
  EXPECT_TRUE(keys_of(Relu{}).empty());
}

TEST(LayerKeys, Conv) {
  EXPECT_EQ(keys_of(Conv1dConfig{2, 4, {3}}.init()), (Keys{{"weight", {4, 2, 3}}, {"bias", {4}}}));  // Conv1d(2, 4, 3)
  EXPECT_EQ(keys_of(Conv2dConfig{3, 8, {3}}.init()),
            (Keys{{"weight", {8, 3, 3, 3}}, {"bias", {8}}}));  // Conv2d(3, 8, 3)
  EXPECT_EQ(keys_of(Conv3dConfig{.in_channels = 2, .out_channels = 4, .kernel_size = {3}, .groups = 2}.init()),
            (Keys{{"weight", {4, 1, 3, 3, 3}}, {"bias", {4}}}));  // Conv3d(2, 4, 3, groups=2)
  EXPECT_EQ(keys_of(ConvTranspose2dConfig{.in_channels = 4, .out_channels = 6, .kernel_size = {3}, .groups = 2}.init()),
            (Keys{{"weight", {4, 3, 3, 3}}, {"bias", {6}}}));  // ConvTranspose2d(4, 6, 3, groups=2)
  EXPECT_EQ(keys_of(Conv2dConfig{.in_channels = 3, .out_channels = 8, .kernel_size = {2, 5}, .bias = false}.init()),
            (Keys{{"weight", {8, 3, 2, 5}}}));  // Conv2d(3, 8, (2, 5), bias=False)
}

TEST(LayerKeys, Norms) {
  const Keys bn{
      {"weight", {3}}, {"bias", {3}}, {"running_mean", {3}}, {"running_var", {3}}, {"num_batches_tracked", {}}};
  EXPECT_EQ(keys_of(BatchNorm1dConfig{3}.init()), bn);  // BatchNorm1d(3)
  EXPECT_EQ(keys_of(BatchNorm2dConfig{.num_features = 3, .affine = false}.init()),
            (Keys{{"running_mean", {3}}, {"running_var", {3}}, {"num_batches_tracked", {}}}));  // affine=False
  EXPECT_EQ(keys_of(BatchNorm2dConfig{.num_features = 3, .track_running_stats = false}.init()),
            (Keys{{"weight", {3}}, {"bias", {3}}}));             // track_running_stats=False
  EXPECT_TRUE(keys_of(InstanceNorm2dConfig{3}.init()).empty());  // InstanceNorm2d(3)
  EXPECT_EQ(keys_of(InstanceNorm2dConfig{.num_features = 3, .affine = true, .track_running_stats = true}.init()),
            bn);  // InstanceNorm2d(3, affine=True, track_running_stats=True)
  EXPECT_EQ(keys_of(LayerNormConfig{{3, 4}}.init()),
            (Keys{{"weight", {3, 4}}, {"bias", {3, 4}}}));                                   // LayerNorm([3, 4])
  EXPECT_EQ(keys_of(GroupNormConfig{2, 4}.init()), (Keys{{"weight", {4}}, {"bias", {4}}}));  // GroupNorm(2, 4)
  EXPECT_EQ(keys_of(RmsNormConfig{{8}}.init()), (Keys{{"weight", {8}}}));  // RMSNorm(8) (torch >= 2.4)

  auto sd = state_dict(BatchNorm2dConfig{3}.init());
  EXPECT_EQ(sd.back().second.dtype(), DType::i64);  // num_batches_tracked: int64 scalar, as PyTorch
  EXPECT_EQ(sd.back().second.rank(), 0);
}

TEST(LayerKeys, Sequential) {
  // nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.BatchNorm1d(3))
  Sequential s(LinearConfig{2, 3}.init(), Relu{}, BatchNorm1dConfig{3}.init());
  EXPECT_EQ(keys_of(s), (Keys{{"0.weight", {3, 2}},
                              {"0.bias", {3}},
                              {"2.weight", {3}},
                              {"2.bias", {3}},
                              {"2.running_mean", {3}},
                              {"2.running_var", {3}},
                              {"2.num_batches_tracked", {}}}));
  // nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 1)))
  Sequential nested;
  nested.push(LinearConfig{2, 2}.init()).push(Sequential(LinearConfig{2, 1}.init(), Identity{}));
  EXPECT_EQ(keys_of(nested), (Keys{{"0.weight", {2, 2}}, {"0.bias", {2}}, {"1.0.weight", {1, 2}}, {"1.0.bias", {1}}}));
  // Parameter counts as sum(p.numel() for p in m.parameters())
  EXPECT_EQ(num_params(s), 6 + 3 + 3 + 3);
  EXPECT_EQ(num_params(Conv2dConfig{3, 8, {3}}.init()), 224);
}

// ---- output shapes ----

TEST(LayerShapes, DenseAndShape) {
  auto x = DynTensor::normal({2, 5, 4});
  EXPECT_EQ((LinearConfig{4, 3}.init().forward(x).shape()), Shape({2, 5, 3}));
  EXPECT_EQ((BilinearConfig{4, 2, 6}.init().forward(x, DynTensor::normal({2, 5, 2})).shape()), Shape({2, 5, 6}));
  EXPECT_EQ(Flatten{}.forward(x).shape(), Shape({2, 20}));
  EXPECT_EQ((Flatten{0, 1}.forward(x).shape()), Shape({10, 4}));
  EXPECT_EQ((Unflatten{2, {2, 2}}.forward(x).shape()), Shape({2, 5, 2, 2}));
  EXPECT_EQ(Identity{}.forward(x).shape(), x.shape());
  auto idx = DynTensor::from_vector<int32_t>({1, 2, 3, 0, 0, 9}, {2, 3});
  EXPECT_EQ((EmbeddingConfig{10, 7}.init().forward(idx).shape()), Shape({2, 3, 7}));
}

TEST(LayerShapes, ConvAndPool) {
  auto x = DynTensor::normal({2, 3, 9, 8});
  EXPECT_EQ((Conv2dConfig{3, 6, {3}, {2}, {1}}.init().forward(x).shape()), Shape({2, 6, 5, 4}));
  EXPECT_EQ((Conv2dConfig{.in_channels = 3, .out_channels = 4, .kernel_size = {4, 3}, .padding_same = true}
                 .init()
                 .forward(x)
                 .shape()),
            Shape({2, 4, 9, 8}));
  EXPECT_EQ((Conv2dConfig{3, 4, {3}}.init().forward(DynTensor::normal({3, 9, 8})).shape()),
            Shape({4, 7, 6}));  // unbatched
  EXPECT_EQ((Conv1dConfig{3, 2, {2}}.init().forward(DynTensor::normal({2, 3, 5})).shape()), Shape({2, 2, 4}));
  EXPECT_EQ((Conv3dConfig{1, 2, {2}}.init().forward(DynTensor::normal({1, 1, 3, 4, 5})).shape()),
            Shape({1, 2, 2, 3, 4}));
  // ConvTranspose: (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
  auto up =
      ConvTranspose2dConfig{.in_channels = 3, .out_channels = 2, .kernel_size = {4}, .stride = {2}, .padding = {1}}
          .init();
  EXPECT_EQ(up.forward(x).shape(), Shape({2, 2, 18, 16}));
  EXPECT_EQ((up.forward(x, {19, 17}).shape()), Shape({2, 2, 19, 17}));
  EXPECT_THROW((up.forward(x, {21, 16})), Error);
  EXPECT_EQ((ConvTranspose1dConfig{3, 1, {3}, {3}, {0}, {2}}.init().forward(DynTensor::normal({1, 3, 4})).shape()),
            Shape({1, 1, 14}));
  EXPECT_EQ((ConvTranspose3dConfig{1, 1, {2}, {2}}.init().forward(DynTensor::normal({1, 1, 2, 2, 2})).shape()),
            Shape({1, 1, 4, 4, 4}));

  EXPECT_EQ(MaxPool2d{{2}}.forward(x).shape(), Shape({2, 3, 4, 4}));
  EXPECT_EQ((MaxPool2d{{3}, {2}, {1}, {1}, true}.forward(x).shape()), Shape({2, 3, 5, 5}));
  auto [v, i] = MaxPool1d{{2}}.forward_with_indices(DynTensor::normal({2, 3, 7}));
  EXPECT_EQ(v.shape(), Shape({2, 3, 3}));
  EXPECT_EQ(i.dtype(), DType::i64);
  EXPECT_EQ((AvgPool2d{{3}, {1}}.forward(x).shape()), Shape({2, 3, 7, 6}));
  EXPECT_EQ((AvgPool1d{{2}}.forward(DynTensor::normal({3, 6})).shape()), Shape({3, 3}));  // unbatched
  EXPECT_EQ(AdaptiveAvgPool2d{}.forward(x).shape(), Shape({2, 3, 1, 1}));
  EXPECT_EQ((AdaptiveAvgPool2d{{4, -1}}.forward(x).shape()), Shape({2, 3, 4, 8}));
  EXPECT_EQ((AdaptiveAvgPool1d{3}.forward(DynTensor::normal({2, 4, 10})).shape()), Shape({2, 4, 3}));
}

TEST(LayerShapes, ResampleAndActivations) {
  auto x = DynTensor::normal({2, 8, 3, 5});
  EXPECT_EQ(PixelShuffle{2}.forward(x).shape(), Shape({2, 2, 6, 10}));
  EXPECT_EQ(PixelUnshuffle{2}.forward(PixelShuffle{2}.forward(x)).shape(), x.shape());
  EXPECT_EQ((Upsample{.size = {4, 6}}.forward(x).shape()), Shape({2, 8, 4, 6}));
  EXPECT_EQ((Upsample{.scale_factor = {2, 1.5}, .mode = UpsampleMode::bilinear}.forward(x).shape()),
            Shape({2, 8, 6, 7}));
  EXPECT_THROW((Upsample{.size = {4}, .mode = UpsampleMode::linear}.forward(x)), Error);  // linear needs 3-d input
  EXPECT_THROW((Upsample{.size = {4}, .align_corners = true}.forward(x)), Error);         // nearest + align_corners
  EXPECT_THROW(Upsample{}.forward(x), Error);                                             // neither size nor scale

  auto h = DynTensor::normal({4, 6});
  EXPECT_EQ(Glu{}.forward(h).shape(), Shape({4, 3}));
  EXPECT_EQ(SwiGlu{0}.forward(h).shape(), Shape({2, 6}));
  for (DynTensor y : {Relu{}.forward(h),
                      Relu6{}.forward(h),
                      LeakyRelu{}.forward(h),
                      Gelu{}.forward(h),
                      Gelu{GeluApproximation::tanh}.forward(h),
                      Silu{}.forward(h),
                      Mish{}.forward(h),
                      Elu{}.forward(h),
                      Selu{}.forward(h),
                      Celu{}.forward(h),
                      Softplus{}.forward(h),
                      Softsign{}.forward(h),
                      Tanh{}.forward(h),
                      Sigmoid{}.forward(h),
                      LogSigmoid{}.forward(h),
                      HardSigmoid{}.forward(h),
                      HardSwish{}.forward(h),
                      HardTanh{}.forward(h),
                      TanhShrink{}.forward(h),
                      SoftShrink{}.forward(h),
                      HardShrink{}.forward(h),
                      Softmax{}.forward(h),
                      LogSoftmax{}.forward(h),
                      PReluConfig{}.init().forward(h)})
    EXPECT_EQ(y.shape(), h.shape());
}

// ---- default initialisation: the torch.nn formulas ----

struct Stats {
  double min, max, mean, std;
};
Stats stats_of(const DynTensor& t) {
  auto v = t.cast(DType::f64).to_vector<double>();
  Stats s{v[0], v[0], 0, 0};
  for (double x : v) {
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    s.mean += x;
  }
  s.mean /= double(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / double(v.size()));
  return s;
}

TEST(LayerInit, TorchDefaults) {
  Device::cpu().seed(7);
  // Linear(256, 64): weight and bias U(-1/sqrt(256), 1/sqrt(256)); the uniform std is bound / sqrt(3).
  auto lin = LinearConfig{256, 64}.init();
  for (const DynTensor& p : {lin.weight.value(), lin.bias->value()}) {
    Stats s = stats_of(p);
    EXPECT_GE(s.min, -1.0 / 16);
    EXPECT_LE(s.max, 1.0 / 16);
  }
  EXPECT_NEAR(stats_of(lin.weight).std, 1.0 / 16 / std::sqrt(3.0), 0.002);
  // Conv2d(8, 32, 3, groups=2): fan_in = 8 / 2 * 9 = 36, bound 1/6 for weight and bias.
  auto conv = Conv2dConfig{.in_channels = 8, .out_channels = 32, .kernel_size = {3}, .groups = 2}.init();
  Stats w = stats_of(conv.weight), b = stats_of(*conv.bias);
  EXPECT_LE(std::max(-w.min, w.max), 1.0 / 6);
  EXPECT_GT(std::max(-w.min, w.max), 0.9 / 6);
  EXPECT_LE(std::max(-b.min, b.max), 1.0 / 6);
  EXPECT_NEAR(w.std, 1.0 / 6 / std::sqrt(3.0), 0.01);
  // ConvTranspose2d(4, 16, 3): weight [4, 16, 3, 3], fan_in = 16 * 9 = 144, bound 1/12.
  auto ct = ConvTranspose2dConfig{4, 16, {3}}.init();
  EXPECT_LE(std::max(-stats_of(ct.weight).min, stats_of(ct.weight).max), 1.0 / 12);
  EXPECT_LE(std::max(-stats_of(*ct.bias).min, stats_of(*ct.bias).max), 1.0 / 12);
  // Bilinear(20, 5, 8): U(-1/sqrt(20), 1/sqrt(20)) for weight and bias.
  auto bil = BilinearConfig{20, 5, 8}.init();
  EXPECT_LE(std::max(-stats_of(bil.weight).min, stats_of(bil.weight).max), 1.0 / std::sqrt(20.0));
  EXPECT_GT(std::max(-stats_of(bil.weight).min, stats_of(bil.weight).max), 0.9 / std::sqrt(20.0));
  // Embedding: N(0, 1), the padding row zero.
  auto emb = EmbeddingConfig{.num_embeddings = 500, .embedding_dim = 40, .padding_idx = -1}.init();
  Stats e = stats_of(emb.weight);
  EXPECT_NEAR(e.mean, 0, 0.03);
  EXPECT_NEAR(e.std, 1, 0.03);
  EXPECT_EQ(*emb.padding_idx, 499);
  EXPECT_EQ(stats_of(select(emb.weight, 0, 499)).max, 0);
  EXPECT_EQ(stats_of(select(emb.weight, 0, 499)).min, 0);
  // Norms: weight ones, bias zeros, running_var ones.
  auto bn = BatchNorm2dConfig{5}.init();
  EXPECT_EQ(stats_of(*bn.weight).min, 1);
  EXPECT_EQ(stats_of(*bn.bias).max, 0);
  EXPECT_EQ(stats_of(*bn.running_mean).max, 0);
  EXPECT_EQ(stats_of(*bn.running_var).min, 1);
  EXPECT_EQ(stats_of(*LayerNormConfig{{6}}.init().weight).min, 1);
  EXPECT_EQ(stats_of(*GroupNormConfig{2, 6}.init().bias).max, 0);
  EXPECT_EQ(stats_of(PReluConfig{4}.init().weight).max, 0.25);
  // A custom initializer applies to the weight only.
  auto z = LinearConfig{.in_features = 3, .out_features = 2, .initializer = Initializer::zeros()}.init();
  EXPECT_EQ(stats_of(z.weight).max, 0);
}

// ---- BatchNorm / InstanceNorm against torch ----

TEST(NormLayers, BatchNormRunningStatsMatchTorch) {
  const Json& c = refs()["batch_norm2d"];
  auto bn = BatchNorm2dConfig{3}.init();
  bn.weight->set(tensor(c["weight"]));
  bn.bias->set(tensor(c["bias"]));
  for (const Json& step : c["steps"]) {
    // The pure form leaves the module alone and returns the updated one.
    auto [y_pure, next] = bn.forward_train(tensor(step["x"]));
    expect_close(y_pure, step["y"]);
    expect_close(next.running_mean->value, step["running_mean"]);
    // The non-const forward updates in place, with the same result.
    DynTensor before = bn.running_mean->value;
    DynTensor y = bn.forward(tensor(step["x"]));
    expect_close(y, step["y"]);
    expect_close(bn.running_mean->value, step["running_mean"]);
    expect_close(bn.running_var->value, step["running_var"]);
    EXPECT_EQ(int64_t(bn.num_batches_tracked->value.item()), step["num_batches_tracked"].get<int64_t>());
    EXPECT_NE(before.primitive(), bn.running_mean->value.primitive());
  }
  // A const training-mode forward cannot update, and says so.
  EXPECT_THROW(std::as_const(bn).forward(tensor(c["eval_x"])), Error);
  set_training(bn, false);
  expect_close(std::as_const(bn).forward(tensor(c["eval_x"])), c["eval_y"]);
  DynTensor rm = bn.running_mean->value;
  expect_close(bn.forward(tensor(c["eval_x"])), c["eval_y"]);
  EXPECT_EQ(rm.primitive(), bn.running_mean->value.primitive());  // eval: no update
}

TEST(NormLayers, BatchNormCumulativeMomentum) {
  const Json& c = refs()["batch_norm1d_cumulative"];
  auto bn = BatchNorm1dConfig{.num_features = 3, .momentum = std::nullopt}.init();
  for (const Json& step : c["steps"]) {
    expect_close(bn.forward(tensor(step["x"])), step["y"]);
    expect_close(bn.running_mean->value, step["running_mean"]);
    expect_close(bn.running_var->value, step["running_var"]);
    EXPECT_EQ(int64_t(bn.num_batches_tracked->value.item()), step["num_batches_tracked"].get<int64_t>());
  }
}

TEST(NormLayers, BatchNormWithoutRunningStatsUsesBatchStatsInEval) {
  auto bn = BatchNorm1dConfig{.num_features = 2, .track_running_stats = false}.init();
  set_training(bn, false);
  auto x = DynTensor::from_vector<float>({1, 10, 3, 20}, {2, 2});
  auto y = std::as_const(bn).forward(x).to_vector<float>();  // const is fine: nothing to update
  EXPECT_NEAR(y[0], -1, 1e-4);
  EXPECT_NEAR(y[2], 1, 1e-4);
  EXPECT_THROW((bn.forward(DynTensor::normal({2, 3}))), Error);  // wrong channel count
  EXPECT_THROW(BatchNorm2dConfig{2}.init().forward(x), Error);   // 2-d input for BatchNorm2d
}

TEST(NormLayers, InstanceNormRunningStatsMatchTorch) {
  const Json& c = refs()["instance_norm1d"];
  auto in =
      InstanceNorm1dConfig{.num_features = 3, .momentum = 0.2, .affine = true, .track_running_stats = true}.init();
  in.weight->set(tensor(c["weight"]));
  in.bias->set(tensor(c["bias"]));
  for (const Json& step : c["steps"]) {
    expect_close(in.forward(tensor(step["x"])), step["y"]);
    expect_close(in.running_mean->value, step["running_mean"]);
    expect_close(in.running_var->value, step["running_var"]);
  }
  EXPECT_EQ(in.num_batches_tracked->value.item(), 0);  // PyTorch's InstanceNorm does not count batches
  set_training(in, false);
  expect_close(std::as_const(in).forward(tensor(c["eval_x"])), c["eval_y"]);
  // Unbatched input [C, L] gives the batched result's row.
  auto x = tensor(c["eval_x"]);
  expect_close(in.forward(select(x, 0, 0)),
               Json{{"shape", {3, 5}}, {"data", select(tensor(c["eval_y"]), 0, 0).to_vector<float>()}});
}

TEST(NormLayers, OtherNormsNormalise) {
  auto x = DynTensor::normal({4, 6, 5}) * 3.0 + 2.0;
  auto ln = LayerNormConfig{{5}}.init().forward(x);
  EXPECT_NEAR(stats_of(mean(ln, {-1})).max, 0, 1e-5);
  auto gn = GroupNormConfig{3, 6}.init().forward(x);
  EXPECT_NEAR(stats_of(mean(reshape(gn, {4, 3, 10}), {-1})).max, 0, 1e-5);
  auto rn = RmsNormConfig{{5}}.init().forward(x);
  EXPECT_NEAR(stats_of(mean(square(rn), {-1})).min, 1, 1e-4);
  auto inorm = InstanceNorm1dConfig{6}.init().forward(x);  // const forward: no running stats
  EXPECT_NEAR(stats_of(mean(inorm, {-1})).max, 0, 1e-5);
}

// ---- conv padding variants, ConvTranspose output_size ----

template <class M>
void load_conv(M& m, const Json& c) {
  m.weight.set(tensor(c["weight"]));
  if (!c["bias"].is_null()) m.bias->set(tensor(c["bias"]));
}

TEST(LayerConv, PaddingModesMatchTorch) {
  {
    const Json& c = refs()["conv1d_same_even_kernel"];
    auto m = Conv1dConfig{.in_channels = 2, .out_channels = 3, .kernel_size = {4}, .padding_same = true}.init();
    load_conv(m, c);
    expect_close(m.forward(tensor(c["x"])), c["y"]);
  }
  {
    const Json& c = refs()["conv2d_same_dilated"];
    auto m =
        Conv2dConfig{
            .in_channels = 2, .out_channels = 2, .kernel_size = {3, 2}, .dilation = {2, 3}, .padding_same = true}
            .init();
    load_conv(m, c);
    expect_close(m.forward(tensor(c["x"])), c["y"]);
  }
  {
    const Json& c = refs()["conv2d_reflect"];
    auto m = Conv2dConfig{.in_channels = 2,
                          .out_channels = 3,
                          .kernel_size = {3},
                          .padding = {1},
                          .padding_mode = ConvPaddingMode::reflect}
                 .init();
    load_conv(m, c);
    expect_close(m.forward(tensor(c["x"])), c["y"]);
  }
  {
    const Json& c = refs()["conv2d_replicate"];
    auto m = Conv2dConfig{.in_channels = 1,
                          .out_channels = 2,
                          .kernel_size = {3},
                          .padding = {2, 1},
                          .padding_mode = ConvPaddingMode::replicate}
                 .init();
    load_conv(m, c);
    expect_close(m.forward(tensor(c["x"])), c["y"]);
  }
  {
    const Json& c = refs()["conv1d_circular"];
    auto m = Conv1dConfig{.in_channels = 2,
                          .out_channels = 2,
                          .kernel_size = {3},
                          .padding = {2},
                          .padding_mode = ConvPaddingMode::circular}
                 .init();
    load_conv(m, c);
    expect_close(m.forward(tensor(c["x"])), c["y"]);
  }
  EXPECT_THROW(
      (Conv1dConfig{.in_channels = 1, .out_channels = 1, .kernel_size = {3}, .stride = {2}, .padding_same = true}
           .init()),
      Error);  // PyTorch: padding='same' is not supported for strided convolutions
  EXPECT_THROW((Conv2dConfig{3, 4, {3}, {1}, {0}, {1}, 2}.init()), Error);  // 3 channels, 2 groups
}

// forward(x, epilogue) against PyTorch's conv output: clamp(y_torch + r, 0, 0.5), batched and
// unbatched, with symmetric padding (conv_fused) and a padding mode (an explicit pad first).
TEST(LayerConv, EpilogueClampsTheSumWithTorchsOutput) {
  for (const char* key : {"conv2d_same_dilated", "conv2d_reflect"}) {
    const Json& c = refs()[key];
    auto m = std::string(key) == "conv2d_reflect"
                 ? Conv2dConfig{.in_channels = 2, .out_channels = 3, .kernel_size = {3}, .padding = {1},
                                .padding_mode = ConvPaddingMode::reflect}
                       .init()
                 : Conv2dConfig{.in_channels = 2, .out_channels = 2, .kernel_size = {3, 2}, .dilation = {2, 3},
                                .padding_same = true}
                       .init();
    load_conv(m, c);
    const DynTensor y = tensor(c["y"]), x = tensor(c["x"]);
    const DynTensor r = DynTensor::normal(y.shape()) * 0.5;
    const std::vector<float> yv = y.to_vector<float>(), rv = r.to_vector<float>();
    std::vector<float> want(yv.size());
    for (size_t i = 0; i < yv.size(); ++i) want[i] = std::min(std::max(yv[i] + rv[i], 0.0f), 0.5f);
    const std::vector<float> got = m.forward(x, {.residual = r, .min = 0.0, .max = 0.5}).to_vector<float>();
    ASSERT_EQ(got.size(), want.size()) << key;
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << key << " element " << i;
    const int64_t per = int64_t(want.size()) / y.shape()[0];  // the first image, unbatched
    const std::vector<float> one = m.forward(select(x, 0, 0), {.residual = select(r, 0, 0), .min = 0.0, .max = 0.5})
                                       .to_vector<float>();
    ASSERT_EQ(int64_t(one.size()), per) << key;
    for (int64_t i = 0; i < per; ++i) ASSERT_NEAR(one[size_t(i)], want[size_t(i)], 1e-5) << key << " unbatched " << i;
  }
}

TEST(LayerConv, TransposeOutputSizeMatchesTorch) {
  const Json& c = refs()["conv_transpose2d_output_size"];
  auto m =
      ConvTranspose2dConfig{
          .in_channels = 4, .out_channels = 6, .kernel_size = {3}, .stride = {2}, .padding = {1}, .groups = 2}
          .init();
  load_conv(m, c);
  expect_close(m.forward(tensor(c["x"]), c["output_size"].get<Sizes>()), c["y"]);
}

// ---- Embedding: padding_idx and max_norm, values and gradient ----

TEST(LayerEmbedding, PaddingIdxAndMaxNormMatchTorch) {
  const Json& c = refs()["embedding"];
  const Device dev = Device::cpu().autodiff();
  auto emb = Embedding::from_pretrained(tensor(c["weight"], dev), /*freeze=*/false, 1, 1.5);
  DynTensor y = emb.forward(int_tensor(c["indices"], dev));
  expect_close(y, c["y"]);
  Gradients g = sum(y * tensor(c["upstream"], dev)).backward();
  expect_close(*emb.weight.grad(g), c["grad"]);  // no gradient for the padding row
  EXPECT_THROW((emb.forward(DynTensor::from_vector<float>({1.0f}, {1}, dev))), Error);  // float indices
}

// ---- Upsample, PRelu ----

TEST(LayerResample, UpsampleMatchesTorch) {
  const Json& c = refs()["upsample"];
  DynTensor x = tensor(c["x"]);
  expect_close(Upsample{.scale_factor = {2}}.forward(x), c["nearest_scale2"]);
  expect_close(Upsample{.size = {5, 7}, .mode = UpsampleMode::bilinear, .align_corners = true}.forward(x),
               c["bilinear_size_align"]);
  expect_close(Upsample{.scale_factor = {2}, .mode = UpsampleMode::bicubic}.forward(x), c["bicubic_scale2"], 1e-4);
  const Json& l = refs()["upsample_linear"];
  expect_close(Upsample{.scale_factor = {3}, .mode = UpsampleMode::linear}.forward(tensor(l["x"])), l["y"]);
}

TEST(LayerActivation, PReluPerChannelMatchesTorch) {
  const Json& c = refs()["prelu"];
  auto pr = PReluConfig{3}.init();
  pr.weight.set(tensor(c["weight"]));
  expect_close(pr.forward(tensor(c["x"])), c["y"]);
}

// ---- train/eval ----

TEST(LayerMode, DropoutTrainAndEval) {
  Device::cpu().seed(3);
  auto x = DynTensor::ones({100, 100});
  Dropout drop{0.25};
  auto v = drop.forward(x).to_vector<float>();
  int zeros = 0;
  for (float f : v) {
    if (f == 0)
      ++zeros;
    else
      EXPECT_NEAR(f, 1 / 0.75, 1e-6);
  }
  EXPECT_NEAR(zeros / 10000.0, 0.25, 0.02);
  set_training(drop, false);
  EXPECT_EQ(drop.forward(x).primitive(), x.primitive());  // eval: the input itself
}

TEST(LayerMode, SetTrainingReachesLayersInsideSequential) {
  Sequential s(LinearConfig{3, 3}.init(), Dropout{0.5}, BatchNorm1dConfig{3}.init());
  set_training(s, false);
  EXPECT_FALSE(s.at<Dropout>(1).mode.training);
  EXPECT_FALSE(s.at<BatchNorm1d>(2).mode.training);
  auto x = DynTensor::normal({4, 3});
  EXPECT_EQ(s.forward(x).to_vector<float>(), std::as_const(s).forward(x).to_vector<float>());
  EXPECT_THROW(s.at<Linear>(1), Error);
  EXPECT_THROW(s.at<Linear>(3), Error);
}

// ---- Sequential ----

TEST(LayerSequential, ForwardChainsAndUpdatesBatchNorm) {
  auto lin = LinearConfig{3, 4}.init();
  Sequential s;
  s.push(lin).push(Relu{}).push(BatchNorm1dConfig{4}.init());
  auto x = DynTensor::normal({8, 3});
  DynTensor want = BatchNorm1dConfig{4}.init().forward(relu(lin.forward(x)));
  EXPECT_EQ(s.forward(x).to_vector<float>(), want.to_vector<float>());
  EXPECT_EQ(s.at<BatchNorm1d>(2).num_batches_tracked->value.item(), 1);
  EXPECT_THROW(std::as_const(s).forward(x), Error);  // training BatchNorm inside a const Sequential
  // Copies are deep: updating the copy leaves the original alone.
  Sequential copy = s;
  copy.forward(x);
  EXPECT_EQ(copy.at<BatchNorm1d>(2).num_batches_tracked->value.item(), 2);
  EXPECT_EQ(s.at<BatchNorm1d>(2).num_batches_tracked->value.item(), 1);
  // A state_dict round trip restores the values.
  Sequential fresh(LinearConfig{3, 4}.init(), Relu{}, BatchNorm1dConfig{4}.init());
  EXPECT_TRUE(load_state_dict(fresh, state_dict(copy)).ok());
  set_training(fresh, false);
  set_training(copy, false);
  EXPECT_EQ(fresh.forward(x).to_vector<float>(), copy.forward(x).to_vector<float>());
  // Lambda layers.
  Sequential f(Lambda{[](DynTensor t) { return t * 2.0; }}, Flatten{0});
  EXPECT_EQ(f.forward(DynTensor::ones({2, 2})).to_vector<float>(), std::vector<float>(4, 2.0f));
}

TEST(LayerSequential, GradientsReachEveryParameter) {
  const Device dev = Device::cpu().autodiff();
  Sequential s(Conv2dConfig{2, 3, {3}, {1}, {1}}.init(dev), GroupNormConfig{1, 3}.init(dev), Gelu{},
               AdaptiveAvgPool2d{}, Flatten{}, LinearConfig{3, 2}.init(dev));
  Gradients g = sum(s.forward(DynTensor::normal({2, 2, 5, 5}, 0, 1, kDefaultFloat, dev))).backward();
  int n = 0;
  for_each_param(s, [&](const std::string& path, Param& p) {
    auto grad = p.grad(g);
    ASSERT_TRUE(grad.has_value()) << path;
    EXPECT_EQ(grad->shape(), p.shape()) << path;
    ++n;
  });
  EXPECT_EQ(n, 6);
}

// ---- an input whose dtype is not the layer's ----
// PyTorch 1.13 refuses each of these (f64 input, f32 parameters): Linear "expected scalar type
// Double but found Float", MultiheadAttention/RNNs "mat1 and mat2 must have the same dtype", the
// convs, LayerNorm, GroupNorm, BatchNorm, affine InstanceNorm and PReLU likewise; LayerNorm without
// affine parameters and Embedding (integer indices) accept it.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(LayerDtype, AnInputOfAnotherDtypeIsRefused) {
  auto f64 = [](Sizes s) { return DynTensor::ones(Shape(std::move(s)), DType::f64); };
  auto expect_refused = [&](const std::string& layer, const std::function<void()>& f,
                            const std::string& what = "input is f64, weight is f32") {
    const std::string msg = error_of(f);
    EXPECT_EQ(msg.rfind(layer + ": " + what, 0), 0u) << msg;
  };
  expect_refused("Linear", [&] { LinearConfig{3, 2}.init().forward(f64({4, 3})); });
  expect_refused("Linear", [&] { LinearConfig{3, 2, false}.init().forward(f64({4, 3})); });
  expect_refused(
      "Linear",
      [&] {
        LinearConfig{3, 2}.init().forward(DynTensor::ones({4, 3}, DType::i64));
      },
      "input is i64, weight is f32");
  expect_refused(
      "Bilinear",
      [&] {
        BilinearConfig{3, 3, 2}.init().forward(f64({4, 3}), f64({4, 3}));
      },
      "input1 is f64, weight is f32");
  expect_refused("Conv2d", [&] {
    Conv2dConfig{.in_channels = 2, .out_channels = 3, .kernel_size = {3}}.init().forward(f64({1, 2, 5, 5}));
  });
  expect_refused("Conv1d", [&] {
    Conv1dConfig{.in_channels = 2, .out_channels = 3, .kernel_size = {3}, .bias = false}.init().forward(f64({1, 2, 5}));
  });
  expect_refused("ConvTranspose2d", [&] {
    ConvTranspose2dConfig{.in_channels = 2, .out_channels = 3, .kernel_size = {3}}.init().forward(f64({1, 2, 5, 5}));
  });
  expect_refused("LayerNorm", [&] { LayerNormConfig{.normalized_shape = {5}}.init().forward(f64({2, 5})); });
  expect_refused("GroupNorm", [&] {
    GroupNormConfig{.num_groups = 1, .num_channels = 2}.init().forward(f64({3, 2, 4}));
  });
  expect_refused("RmsNorm", [&] { RmsNormConfig{.normalized_shape = {5}}.init().forward(f64({2, 5})); });
  expect_refused("BatchNorm2d", [&] { BatchNorm2dConfig{.num_features = 2}.init().forward(f64({3, 2, 2, 2})); });
  expect_refused("BatchNorm2d", [&] {  // eval mode: the const forward with running statistics
    auto bn = BatchNorm2dConfig{.num_features = 2}.init();
    set_training(bn, false);
    std::as_const(bn).forward(f64({3, 2, 2, 2}));
  });
  expect_refused("InstanceNorm2d", [&] {
    InstanceNorm2dConfig{.num_features = 2, .affine = true}.init().forward(f64({3, 2, 2, 2}));
  });
  expect_refused("PRelu", [&] { PReluConfig{.num_parameters = 2}.init().forward(f64({3, 2})); });

  // The same layers take an input of their own dtype; f64 parameters take an f64 input.
  Linear lin64;
  lin64.weight = Param(f64({2, 3}));
  const auto y = lin64.forward(DynTensor::from_vector(std::vector<double>{1, 2, 3}, Shape{1, 3}));
  EXPECT_EQ(y.dtype(), DType::f64);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{6, 6}));  // 1 + 2 + 3 per output
  EXPECT_EQ((LinearConfig{3, 2}.init().forward(DynTensor::ones({4, 3})).dtype()), DType::f32);
  // Where PyTorch accepts it: no affine parameters, and integer indices of any integer dtype.
  const auto plain_ln = LayerNormConfig{.normalized_shape = {5}, .elementwise_affine = false}.init();
  EXPECT_EQ(plain_ln.forward(f64({2, 5})).dtype(), DType::f64);
  const auto plain_in = InstanceNorm2dConfig{.num_features = 2}.init();
  EXPECT_EQ(plain_in.forward(f64({3, 2, 2, 2})).dtype(), DType::f64);
  const auto emb = EmbeddingConfig{.num_embeddings = 4, .embedding_dim = 2}.init();
  EXPECT_EQ(emb.forward(DynTensor::zeros({3}, DType::i32)).dtype(), DType::f32);
}

}  // namespace
}  // namespace ember::nn
