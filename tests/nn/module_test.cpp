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
#include "ember/nn/rnn.hpp"
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

// ---- module checks: a Param that EMBER_MODULE does not list ----
// (The nn test programs switch the checks on: module_checks_on.cpp.)

struct Forgetful {
  nn::Linear fc;
  nn::Param scale;  // not listed below: never trained, saved or moved
  EMBER_MODULE(fc)
};
struct HoldsForgetful {
  Forgetful inner;
  EMBER_MODULE(inner)
};
struct ForgetsALayer {
  nn::Linear a, b;  // b is not listed
  EMBER_MODULE(a)
};

std::string visit_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

ptrdiff_t offset_in(const void* base, const void* field) {
  return static_cast<const char*>(field) - static_cast<const char*>(base);
}

TEST(ModuleChecks, AParamMissingFromEmberModuleIsNamed) {
  ASSERT_TRUE(nn::module_checks());
  Forgetful m{nn::LinearConfig{2, 3}.init(), nn::Param(DynTensor::ones({1}))};
  const std::string where = "byte offset " + std::to_string(offset_in(&m, &m.scale));
  for (const auto& visit : std::vector<std::function<void()>>{[&] { nn::num_params(m); }, [&] { nn::state_dict(m); },
                                                              [&] { m = nn::to_device(m, Device::cpu()); },
                                                              [&] { nn::set_training(m, false); }}) {
    const std::string msg = visit_error(visit);
    EXPECT_NE(msg.find("module ember::(anonymous namespace)::Forgetful: the Param at " + where), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("is not listed in EMBER_MODULE(fc)"), std::string::npos) << msg;
  }
  // Nested: the innermost module holding it is named, with its path.
  HoldsForgetful outer{m};
  const std::string msg = visit_error([&] { nn::num_params(outer); });
  EXPECT_NE(msg.find("Forgetful (at inner): the Param at " + where), std::string::npos) << msg;
  // A whole layer left out: its weight, and one more (its bias).
  ForgetsALayer f{nn::LinearConfig{2, 3}.init(), nn::LinearConfig{2, 3}.init()};
  const std::string layer = visit_error([&] { nn::named_parameters(f); });
  EXPECT_NE(layer.find("ForgetsALayer: the Param at byte offset " + std::to_string(offset_in(&f, &f.b.weight))),
            std::string::npos)
      << layer;
  EXPECT_NE(layer.find("1 more"), std::string::npos) << layer;
  // An undefined Param holds nothing to lose; with the checks off nothing is checked.
  Forgetful empty{nn::LinearConfig{2, 3}.init(), nn::Param()};
  EXPECT_EQ(nn::num_params(empty), 9);
  nn::set_module_checks(false);
  EXPECT_EQ(nn::num_params(m), 9);
  nn::set_module_checks(true);
}

// Every built-in layer lists all of its Params (the suites also run every layer they build with
// the checks on); a visitor that visits another module inside its callback is checked separately.
TEST(ModuleChecks, BuiltInLayersPass) {
  struct Everything {
    nn::Linear linear;
    nn::Bilinear bilinear;
    nn::Conv2d conv;
    nn::ConvTranspose1d deconv;
    nn::BatchNorm2d bn;
    nn::InstanceNorm1d in;
    nn::LayerNorm ln;
    nn::GroupNorm gn;
    nn::RmsNorm rms;
    nn::Embedding emb;
    nn::PRelu prelu;
    nn::MultiHeadAttention mha;
    nn::TransformerEncoder enc;
    nn::TransformerDecoder dec;
    nn::Lstm lstm;
    nn::Sequential seq;
    EMBER_MODULE(linear, bilinear, conv, deconv, bn, in, ln, gn, rms, emb, prelu, mha, enc, dec, lstm, seq)
  };
  nn::TransformerEncoderLayerConfig el{.d_model = 4, .nhead = 2, .dim_feedforward = 8};
  nn::TransformerDecoderLayerConfig dl{.d_model = 4, .nhead = 2, .dim_feedforward = 8};
  Everything e{nn::LinearConfig{2, 3}.init(),
               nn::BilinearConfig{2, 2, 3}.init(),
               nn::Conv2dConfig{.in_channels = 1, .out_channels = 2, .kernel_size = {3}}.init(),
               nn::ConvTranspose1dConfig{.in_channels = 1, .out_channels = 2, .kernel_size = {3}}.init(),
               nn::BatchNorm2dConfig{.num_features = 2}.init(),
               nn::InstanceNorm1dConfig{.num_features = 2, .affine = true}.init(),
               nn::LayerNormConfig{.normalized_shape = {4}}.init(),
               nn::GroupNormConfig{.num_groups = 1, .num_channels = 2}.init(),
               nn::RmsNormConfig{.normalized_shape = {4}}.init(),
               nn::EmbeddingConfig{.num_embeddings = 5, .embedding_dim = 2}.init(),
               nn::PReluConfig{}.init(),
               nn::MultiHeadAttentionConfig{.embed_dim = 4, .num_heads = 2}.init(),
               nn::TransformerEncoderConfig{.layer = el, .num_layers = 2, .final_norm = true}.init(),
               nn::TransformerDecoderConfig{.layer = dl, .num_layers = 1}.init(),
               nn::LstmConfig{.input_size = 2, .hidden_size = 3, .num_layers = 2, .bidirectional = true}.init(),
               nn::Sequential(nn::LinearConfig{2, 2}.init(), nn::Relu{}, nn::LinearConfig{2, 1}.init())};
  ASSERT_TRUE(nn::module_checks());
  EXPECT_NO_THROW(nn::num_params(e));
  // A visitor callback that visits another (forgetful) module: that visit is checked on its own.
  Forgetful bad{nn::LinearConfig{2, 3}.init(), nn::Param(DynTensor::ones({1}))};
  int inner_errors = 0;
  nn::for_each_param(e.linear, [&](const std::string&, nn::Param&) {
    inner_errors += visit_error([&] { nn::num_params(bad); }).find("Forgetful") != std::string::npos;
    EXPECT_GT(nn::num_params(e.ln), 0);  // and a good one passes inside a callback
  });
  EXPECT_EQ(inner_errors, 2);
}

// ---- errors inside a layer's forward name the layer by its path ----

struct TwoLayers {
  nn::Linear fc1, fc2;
  EMBER_MODULE(fc1, fc2)
  DynTensor forward(const DynTensor& x) const { return fc2.forward(relu(fc1.forward(x))); }
};

TEST(LayerErrors, NameTheFailingLayerByItsPath) {
  const Device ad = Device::cpu().autodiff();
  // The case: the model moved to an autodiff device (a visit: it learns its layers' names),
  // an input left on the plain CPU device.
  TwoLayers m = nn::to_device(TwoLayers{nn::LinearConfig{4, 3}.init(), nn::LinearConfig{3, 2}.init()}, ad);
  const auto plain = DynTensor::ones({2, 4});
  std::string msg = visit_error([&] { m.forward(plain); });
  EXPECT_EQ(msg.rfind("fc1 (Linear): ", 0), 0u) << msg;
  std::string op_msg;  // the op's own message follows, unchanged
  try {
    nn::linear(plain, m.fc1.weight, m.fc1.bias->value());
  } catch (const Error& e) {
    op_msg = e.what();
  }
  ASSERT_FALSE(op_msg.empty());
  EXPECT_EQ(msg, "fc1 (Linear): " + op_msg);
  // The second layer: a feature count error from the matmul, named once.
  msg = visit_error([&] { m.fc2.forward(DynTensor::ones({2, 4}, DType::f32, ad)); });
  EXPECT_EQ(msg.rfind("fc2 (Linear): ", 0), 0u) << msg;
  EXPECT_EQ(msg.find("(Linear)", 5), std::string::npos) << msg;
  // The layer's own check keeps one name: "fc1 (Linear): input is f64, ...".
  msg = visit_error([&] { m.forward(DynTensor::ones({2, 4}, DType::f64, ad)); });
  EXPECT_EQ(msg, "fc1 (Linear): input is f64, weight is f32; cast the input or the layer's parameters to one dtype");
  // A layer that was never visited inside a model names its type only.
  nn::Linear alone = nn::LinearConfig{4, 3}.init();
  msg = visit_error([&] { alone.forward(DynTensor::ones({2, 5})); });
  EXPECT_EQ(msg.rfind("Linear: ", 0), 0u) << msg;
  EXPECT_EQ(msg.rfind("Linear: Linear", 0), std::string::npos) << msg;
}

TEST(LayerErrors, NestedLayersGiveTheDottedPathOfTheInnermost) {
  Model m = make_model(Device::cpu());
  nn::num_params(m);  // any visit names the layers
  const std::string msg = visit_error([&] { m.forward(DynTensor::ones({1, 3, 5})); });
  EXPECT_EQ(msg.rfind("encoder.layers.0.self_attn (MultiHeadAttention): ", 0), 0u) << msg;
  EXPECT_NE(msg.find("[1, 3, 5]"), std::string::npos) << msg;  // the attention's own message
  // Inside a Sequential the path is the index; the exception keeps its type.
  struct Holder {
    nn::Sequential body;
    EMBER_MODULE(body)
  } h{nn::Sequential(nn::Relu{}, nn::Lambda{[](DynTensor) -> DynTensor { EMBER_NOT_IMPLEMENTED("op: not here"); }})};
  nn::set_training(h, false);
  try {
    h.body.forward(DynTensor::ones({2}));
    ADD_FAILURE() << "no error";
  } catch (const NotImplemented& e) {
    EXPECT_STREQ(e.what(), "body.1 (Lambda): op: not here");
  }
}

}  // namespace
}  // namespace ember
