// The module system: visitable structs, PyTorch state_dict paths, parameter counts, freezing,
// device moves, train/eval, summaries, and loading files (a PyTorch checkpoint made by
// gen_module_ref.py, safetensors round trips) with remapping and mismatch reports.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/ember.hpp"
#include "ember/nn/file.hpp"
#include "ember/nn/layers.hpp"
#include "ember/nn/transformer.hpp"

namespace ember {
namespace {

struct Model {  // the same structure as gen_module_ref.py's torch model
  nn::TransformerEncoder encoder;
  nn::Linear head;
  EMBER_MODULE(encoder, head)
  DynTensor forward(const DynTensor& x) const { return head.forward(encoder.forward(x)); }
};

Model make_model(const Device& d) {
  nn::TransformerEncoderLayerConfig layer{.d_model = 8, .nhead = 2, .dim_feedforward = 16, .dropout = 0.0,
                                          .batch_first = true};
  return Model{nn::TransformerEncoderConfig{.layer = layer, .num_layers = 2}.init(d),
               nn::LinearConfig{.in_features = 8, .out_features = 3}.init(d)};
}

struct Block {
  nn::Linear fc;
  std::optional<nn::Linear> extra;
  nn::Dropout drop;
  EMBER_MODULE(fc, extra, drop)
};
struct Net {
  std::vector<Block> blocks;
  nn::Param scale_;  // trailing underscore is dropped from the key
  nn::Buffer steps;
  EMBER_MODULE(blocks, scale_, steps)
};

Net make_net(const Device& d) {
  Net n;
  n.blocks.push_back({nn::LinearConfig{4, 3}.init(d), std::nullopt, {}});
  n.blocks.push_back({nn::LinearConfig{3, 2, false}.init(d), nn::LinearConfig{2, 2}.init(d), {}});
  n.scale_ = nn::Param(DynTensor::ones({1}, DType::f32, d));
  n.steps = nn::Buffer{DynTensor::zeros({}, DType::i64, d)};
  return n;
}

std::vector<std::string> keys(const nn::NamedTensors& v) {
  std::vector<std::string> k;
  for (const auto& [n, t] : v) k.push_back(n);
  return k;
}

TEST(Module, PathsCountsAndSummary) {
  Net n = make_net(Device::cpu());
  EXPECT_EQ(keys(nn::named_parameters(n)),
            (std::vector<std::string>{"blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.1.fc.weight",
                                      "blocks.1.extra.weight", "blocks.1.extra.bias", "scale"}));
  EXPECT_EQ(keys(nn::state_dict(n)).back(), "steps");
  EXPECT_EQ(nn::num_params(n), 12 + 3 + 6 + 4 + 2 + 1);
  std::string s = nn::summary(n);
  EXPECT_NE(s.find("blocks.1.extra.weight"), std::string::npos) << s;
  EXPECT_NE(s.find("total: 28 parameters"), std::string::npos) << s;
}

TEST(Module, TorchStateDictKeysOfNestedModules) {
  Model m = make_model(Device::cpu());
  std::ifstream in(EMBER_NN_TEST_DIR "/cases/module_ref.json");
  auto ref = nlohmann::json::parse(in);
  EXPECT_EQ(keys(nn::state_dict(m)), ref["keys"].get<std::vector<std::string>>());
}

TEST(Module, FreezeTrainEvalAndDeviceMoves) {
  Device ad = Device::cpu().autodiff();
  Net n = make_net(ad);
  EXPECT_TRUE(n.blocks[0].fc.weight.value().is_require_grad());
  const uint64_t id = n.blocks[0].fc.weight.id();
  Net frozen = nn::freeze(n);
  EXPECT_FALSE(frozen.blocks[0].fc.weight.value().is_require_grad());
  EXPECT_EQ(nn::num_params(frozen, /*trainable_only=*/true), 0);
  EXPECT_EQ(frozen.blocks[0].fc.weight.id(), id);  // same parameter identity
  EXPECT_TRUE(n.blocks[0].fc.weight.value().is_require_grad());  // the original is untouched (values)
  nn::set_training(n, false);
  EXPECT_FALSE(n.blocks[1].drop.mode.training);
  Net plain = nn::to_device(n, Device::cpu());
  EXPECT_EQ(plain.blocks[0].fc.weight.value().device(), Device::cpu());
  EXPECT_FALSE(plain.blocks[0].fc.weight.value().is_require_grad());
  Net back = nn::to_device(plain, ad);
  EXPECT_TRUE(back.blocks[0].fc.weight.value().is_require_grad());
}

TEST(Module, LoadsAPyTorchCheckpointWithKeyRemapping) {
  Model m = make_model(Device::cpu().autodiff());
  nn::set_training(m, false);
  const std::string path = EMBER_NN_TEST_DIR "/cases/module_ref.pt";
  // Without remapping every key is both missing and unexpected: a clear report, nothing loaded.
  try {
    nn::load(m, path);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("module.encoder.layers.0.linear1.weight"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("missing keys"), std::string::npos);
  }
  nn::LoadReport r = nn::load(m, path, {.remap = {{"^module\\.", ""}}});
  EXPECT_TRUE(r.ok()) << r.str();
  std::ifstream in(EMBER_NN_TEST_DIR "/cases/module_ref.json");
  auto ref = nlohmann::json::parse(in);
  auto x = DynTensor::from_vector(ref["x"].get<std::vector<float>>(), Shape(ref["x_shape"].get<std::vector<int64_t>>()));
  auto y = m.forward(x.to(Device::cpu().autodiff())).to_vector<float>();
  auto want = ref["y"].get<std::vector<float>>();
  ASSERT_EQ(y.size(), want.size());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 2e-5) << i;
}

TEST(Module, PartialLoadingReportsMissingUnexpectedAndMismatched) {
  Net n = make_net(Device::cpu());
  nn::NamedTensors src = nn::state_dict(n);
  src.erase(src.begin());                                            // blocks.0.fc.weight missing
  src.emplace_back("blocks.9.fc.weight", DynTensor::zeros({1}));     // unexpected
  src[1].second = DynTensor::zeros({7, 7});                          // blocks.1.fc.weight mismatched
  src[0].second = DynTensor::full({3}, 2.0, DType::f64);             // blocks.0.fc.bias: f64 -> cast to f32
  nn::LoadReport r = nn::load_state_dict(n, src, {.strict = false});
  EXPECT_EQ(r.missing, std::vector<std::string>{"blocks.0.fc.weight"});
  EXPECT_EQ(r.unexpected, std::vector<std::string>{"blocks.9.fc.weight"});
  ASSERT_EQ(r.mismatched.size(), 1u);
  EXPECT_NE(r.mismatched[0].find("[7, 7]"), std::string::npos);
  EXPECT_EQ(n.blocks[0].fc.bias->value().dtype(), DType::f32);
  EXPECT_EQ(n.blocks[0].fc.bias->value().to_vector<float>(), (std::vector<float>{2, 2, 2}));
  // strict: an error, and the module is unchanged
  Net m = make_net(Device::cpu());
  auto before = m.blocks[0].fc.bias->value().to_vector<float>();
  EXPECT_THROW(nn::load_state_dict(m, src), Error);
  EXPECT_EQ(m.blocks[0].fc.bias->value().to_vector<float>(), before);
}

TEST(Module, SafetensorsRoundTripAndShapeMismatchIntoAnotherModel) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("ember-module-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "net.safetensors").string();
  Net a = make_net(Device::cpu());
  nn::save(a, path, {{"format", "ember"}});
  Net b = make_net(Device::cpu());
  EXPECT_TRUE(nn::load(b, path).ok());
  auto sa = nn::state_dict(a), sb = nn::state_dict(b);
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].first, sb[i].first);
    TensorData da = sa[i].second.into_data(), db = sb[i].second.into_data();
    EXPECT_TRUE(std::equal(da.bytes().begin(), da.bytes().end(), db.bytes().begin(), db.bytes().end())) << sa[i].first;
  }
  // loading into a model of another shape: an Error that lists the mismatch
  Model other = make_model(Device::cpu());
  try {
    nn::load(other, path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.0.fc.weight"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(Module, TensorsLoadedInPlaceFromAMappedFileAreNeverWrittenTo) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("ember-mmap-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "t.safetensors").string();
  nn::write_tensors(path, {{"a", DynTensor::full({64, 64}, 2.0, DType::f32)}, {"b", DynTensor::full({8}, 3.0, DType::f64)}});
  for (const Device& d : {Device::cpu(), Device::cpu().autodiff()}) {
    nn::NamedTensors t = nn::read_tensors(path, d);
    DynTensor a = t[0].second, b = t[1].second;
    t.clear();
    // We hold the only handles and move them in: a backend would normally reuse the buffer in
    // place, but these buffers are the read-only mapping, so new ones are made.
    DynTensor ea = exp(std::move(a));
    DynTensor bb = add(std::move(b), 1.0);
    EXPECT_FLOAT_EQ(ea.to_vector<float>()[0], std::exp(2.0f));
    EXPECT_EQ(bb.to_vector<double>()[7], 4.0);
    nn::NamedTensors again = nn::read_tensors(path);
    EXPECT_EQ(again[0].second.to_vector<float>()[4095], 2.0f);
    EXPECT_EQ(again[1].second.to_vector<double>()[0], 3.0);
  }
  fs::remove_all(dir);
}

TEST(Module, GradientsReachEveryParameterOfANestedModule) {
  Device ad = Device::cpu().autodiff();
  Model m = make_model(ad);
  auto x = DynTensor::normal({2, 5, 8}, 0, 1, DType::f32, ad);
  Gradients g = sum(square(m.forward(x))).backward();
  nn::for_each_param(m, [&](const std::string& path, nn::Param& p) {
    EXPECT_TRUE(p.grad(g).has_value()) << path;
  });
}

}  // namespace
}  // namespace ember
