// ember::amp: the autocast policy against PyTorch's autocast (cases/autocast.json from
// gen_amp_cases.py), an MLP's loss and gradients under bf16 autocast against PyTorch's, cast-once
// per scope (counted by a backend decorator), master weights, the GradScaler's dynamic scale,
// step skipping and state, f16 training, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "ember/amp.hpp"
#include "ember/nn/file.hpp"
#include "ember/nn/functional.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/loss.hpp"
#include "ember/nn/module.hpp"
#include "ember/optim/optimizer.hpp"
#include "ember/tensor/tensor.hpp"

namespace ember {
namespace {

using Json = nlohmann::json;

const Json& cases() {
  static const Json j = [] {
    std::ifstream in(std::string(EMBER_AMP_TEST_DIR) + "/cases/autocast.json");
    EMBER_CHECK(in.good(), "amp_test: cannot open cases/autocast.json (run gen_amp_cases.py)");
    return Json::parse(in);
  }();
  return j;
}

std::string name_of(DType dt) { return std::string(ember::dtype_name(dt)); }

DynTensor randn_cast(Shape s, DType dt, const Device& d = Device::cpu()) {
  return cast(DynTensor::normal(std::move(s), 0, 1, DType::f32, d), dt);
}
DynTensor positive(Shape s, DType dt) {
  return cast(abs(DynTensor::normal(std::move(s), 0, 1, DType::f32, Device::cpu())) + 0.5, dt);
}

// ---- the policy, op class by op class ----

// The ember form of each op class of the fixture; `d` is the dtype of the activation inputs
// (parameters such as weights are f32, as in the fixture).
const std::map<std::string, std::function<DynTensor(DType)>>& op_classes() {
  static const std::map<std::string, std::function<DynTensor(DType)>> m = {
      {"matmul", [](DType d) { return matmul(randn_cast({4, 5}, d), randn_cast({5, 3}, d)); }},
      {"matmul_mixed", [](DType d) { return matmul(randn_cast({4, 5}, d), randn_cast({5, 3}, DType::f32)); }},
      {"bmm", [](DType d) { return matmul(randn_cast({2, 4, 5}, d), randn_cast({2, 5, 3}, d)); }},
      {"linear", [](DType d) { return nn::linear(randn_cast({4, 5}, d), randn_cast({3, 5}, DType::f32), randn_cast({3}, DType::f32)); }},
      {"conv1d", [](DType d) { return conv1d(randn_cast({1, 2, 8}, d), randn_cast({3, 2, 3}, DType::f32), randn_cast({3}, DType::f32)); }},
      {"conv2d",
       [](DType d) { return conv2d(randn_cast({1, 2, 5, 5}, d), randn_cast({3, 2, 3, 3}, DType::f32), randn_cast({3}, DType::f32)); }},
      {"conv_transpose2d", [](DType d) { return conv_transpose2d(randn_cast({1, 2, 4, 4}, d), randn_cast({2, 3, 3, 3}, DType::f32)); }},
      {"softmax", [](DType d) { return softmax(randn_cast({3, 4}, d), -1); }},
      {"log_softmax", [](DType d) { return log_softmax(randn_cast({3, 4}, d), -1); }},
      {"layer_norm",
       [](DType d) { return layer_norm(randn_cast({3, 4}, d), {4}, randn_cast({4}, DType::f32), randn_cast({4}, DType::f32)); }},
      {"sum", [](DType d) { return sum(randn_cast({3, 4}, d)); }},
      {"prod", [](DType d) { return prod(randn_cast({3, 4}, d)); }},
      {"norm", [](DType d) { return norm(randn_cast({3, 4}, d)); }},
      {"logsumexp", [](DType d) { return logsumexp(randn_cast({3, 4}, d), {1}); }},
      {"cumsum", [](DType d) { return cumsum(randn_cast({3, 4}, d), 1); }},
      {"exp", [](DType d) { return exp(randn_cast({3, 4}, d)); }},
      {"log", [](DType d) { return log(positive({3, 4}, d)); }},
      {"log1p", [](DType d) { return log1p(positive({3, 4}, d)); }},
      {"expm1", [](DType d) { return expm1(randn_cast({3, 4}, d)); }},
      {"rsqrt", [](DType d) { return rsqrt(positive({3, 4}, d)); }},
      {"reciprocal", [](DType d) { return reciprocal(positive({3, 4}, d)); }},
      {"pow", [](DType d) { return pow(randn_cast({3, 4}, d), 2.0); }},
      {"softplus", [](DType d) { return softplus(randn_cast({3, 4}, d)); }},
      {"mse_loss", [](DType d) { return nn::mse_loss(randn_cast({3, 4}, d), randn_cast({3, 4}, d)); }},
      {"l1_loss", [](DType d) { return nn::l1_loss(randn_cast({3, 4}, d), randn_cast({3, 4}, d)); }},
      {"cross_entropy",
       [](DType d) {
         return nn::cross_entropy(randn_cast({3, 4}, d), DynTensor::from_vector<int64_t>({0, 3, 1}, {3}));
       }},
      {"add_mixed", [](DType d) { return randn_cast({3, 4}, d) + randn_cast({3, 4}, DType::f32); }},
      {"mul_same", [](DType d) { return randn_cast({3, 4}, d) * randn_cast({3, 4}, d); }},
      {"cat_mixed", [](DType d) { return cat({randn_cast({3, 4}, d), randn_cast({3, 4}, DType::f32)}); }},
      {"relu", [](DType d) { return relu(randn_cast({3, 4}, d)); }},
      {"gelu", [](DType d) { return gelu(randn_cast({3, 4}, d)); }},
      {"tanh", [](DType d) { return tanh(randn_cast({3, 4}, d)); }},
      {"max", [](DType d) { return max(randn_cast({3, 4}, d)); }},
      {"reshape", [](DType d) { return reshape(randn_cast({3, 4}, d), {12}); }},
  };
  return m;
}

// What ember must give: PyTorch's CPU autocast, except where ember follows PyTorch's CUDA lists
// (the fixture marks those classes and checks that PyTorch has a CUDA autocast kernel for them).
std::string expected(const Json& c, bool bf16_input) {
  const std::string cls = c["class"];
  if (cls == "low_like_cuda") return "bf16";
  if (cls == "upcast_like_cuda" && bf16_input) return "f32";
  return c[bf16_input ? "torch_cpu_bf16_in" : "torch_cpu_f32_in"];
}

TEST(AutocastPolicy, OutputDtypesMatchPyTorch) {
  int checked = 0;
  for (const auto& [name, c] : cases()["policy"].items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(op_classes().count(name)) << "no ember form of op class " << name;
    const std::string cls = c["class"];
    if (cls == "upcast_like_cuda" || cls == "low_like_cuda") {
      EXPECT_TRUE(c["cuda_autocast_kernel"].get<bool>());
    }
    for (bool bf16_in : {false, true}) {
      std::string want = expected(c, bf16_in);
      if (want == "error") continue;
      amp::Autocast guard(DType::bf16);
      DynTensor out = op_classes().at(name)(bf16_in ? DType::bf16 : DType::f32);
      EXPECT_EQ(name_of(out.dtype()), want) << (bf16_in ? "bf16" : "f32") << " inputs";
      ++checked;
    }
  }
  EXPECT_GE(checked, 60);
}

TEST(AutocastPolicy, LossesOfBf16InputsComputeInF32LikePyTorch) {
  const Json& c = cases()["losses"];
  Shape shape(c["shape"].get<std::vector<int64_t>>());
  auto bf16_of = [&](const char* key) {
    return cast(DynTensor::from_vector(c[key].get<std::vector<float>>(), shape), DType::bf16);
  };
  DynTensor a = bf16_of("a"), b = bf16_of("b"), t = bf16_of("probs_target");
  amp::Autocast guard(DType::bf16);
  std::map<std::string, DynTensor> got = {
      {"mse_loss", nn::mse_loss(a, b)},
      {"l1_loss", nn::l1_loss(a, b)},
      {"smooth_l1_loss", nn::smooth_l1_loss(a, b)},
      {"huber_loss", nn::huber_loss(a, b, nn::Reduction::mean, 0.5)},
      {"binary_cross_entropy_with_logits", nn::binary_cross_entropy_with_logits(a, t)},
  };
  for (const auto& [name, want] : c["values"].items()) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_EQ(got.at(name).dtype(), DType::f32) << name;
    // f32 arithmetic on the bf16 values: bf16 arithmetic would be off by about 1e-3
    EXPECT_NEAR(got.at(name).item(), want.get<double>(), 2e-6 * std::fabs(want.get<double>())) << name;
  }
}

TEST(AutocastPolicy, OpTable) {
  EXPECT_EQ(amp::op_policy(OpKind::matmul), amp::CastPolicy::lower_precision);
  EXPECT_EQ(amp::op_policy(OpKind::attention), amp::CastPolicy::lower_precision);
  EXPECT_EQ(amp::op_policy(OpKind::softmax), amp::CastPolicy::f32);
  // the fused cross-entropy reads f16/bf16 logits as they are and computes in f32 itself
  EXPECT_EQ(amp::op_policy(OpKind::cross_entropy), amp::CastPolicy::keep);
  EXPECT_EQ(amp::op_policy(OpKind::add), amp::CastPolicy::keep);
  EXPECT_EQ(amp::op_policy(OpKind::cast), amp::CastPolicy::keep);  // the hook's own casts pass through
}

TEST(AutocastPolicy, AttentionRunsInLowPrecision) {
  amp::Autocast guard(DType::bf16);
  DynTensor q = randn_cast({1, 2, 4, 8}, DType::f32), k = randn_cast({1, 2, 4, 8}, DType::f32), v = randn_cast({1, 2, 4, 8}, DType::f32);
  EXPECT_EQ(scaled_dot_product_attention(q, k, v, std::nullopt, true).dtype(), DType::bf16);
}

TEST(AutocastPolicy, F16) {
  amp::Autocast guard(DType::f16);
  EXPECT_EQ(matmul(randn_cast({4, 5}, DType::f32), randn_cast({5, 3}, DType::f32)).dtype(), DType::f16);
  EXPECT_EQ(softmax(randn_cast({3, 4}, DType::f16), 1).dtype(), DType::f32);
  EXPECT_EQ(matmul(randn_cast({4, 5}, DType::f64), randn_cast({5, 3}, DType::f64)).dtype(), DType::f64);  // f64 is left alone
}

// The fused cross-entropy of bf16 logits under autocast reads them as they are: no f32 copy of the
// [tokens, vocab] matrix (no upcast), an f32 loss equal to the log-sum-exp formula over the bf16
// values (computed here in double), and a bf16 gradient equal to (softmax - onehot) / N.
TEST(AutocastPolicy, CrossEntropyOfLowPrecisionLogitsMakesNoF32Copy) {
  const int64_t N = 6, V = 1000;
  Device d = Device::cpu().autodiff();
  DynTensor logits = DynTensor::from_data((randn_cast({N, V}, DType::f32) * 3).cast(DType::bf16).into_data(), d).require_grad();
  std::vector<int64_t> t{0, 999, 17, 500, 3, 42};
  DynTensor target = DynTensor::from_vector(t, {N}, d);
  amp::reset_autocast_stats();
  DynTensor loss;
  Gradients g;
  {
    amp::Autocast guard(DType::bf16);
    loss = nn::cross_entropy(logits, target);
    g = loss.backward();
  }
  EXPECT_EQ(amp::autocast_stats().upcasts, 0);
  EXPECT_EQ(loss.dtype(), DType::f32);
  const std::vector<float> x = logits.cast(DType::f32).to_vector<float>();
  double want = 0;
  std::vector<double> dx(size_t(N * V));
  for (int64_t r = 0; r < N; ++r) {
    double m = -1e300, s = 0;
    for (int64_t i = 0; i < V; ++i) m = std::max(m, double(x[size_t(r * V + i)]));
    for (int64_t i = 0; i < V; ++i) s += std::exp(double(x[size_t(r * V + i)]) - m);
    const double lse = m + std::log(s);
    want += (lse - double(x[size_t(r * V + t[size_t(r)])])) / double(N);
    for (int64_t i = 0; i < V; ++i)
      dx[size_t(r * V + i)] = (std::exp(double(x[size_t(r * V + i)]) - lse) - (i == t[size_t(r)] ? 1.0 : 0.0)) / double(N);
  }
  EXPECT_NEAR(loss.item(), want, 1e-5 * want);
  DynTensor gx = g.get(logits).value();
  EXPECT_EQ(gx.dtype(), DType::bf16);
  const std::vector<float> got = gx.cast(DType::f32).to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], dx[i], 4e-3 * std::abs(dx[i]) + 1e-7) << i;  // a bf16 rounding
  // without autocast the loss comes back in the logits' dtype, as PyTorch's
  EXPECT_EQ(nn::cross_entropy(logits, target).dtype(), DType::bf16);
}

// ---- scopes ----

TEST(Autocast, NestsDisablesAndRestores) {
  DynTensor a = randn_cast({4, 5}, DType::f32), b = randn_cast({5, 3}, DType::f32);
  EXPECT_FALSE(amp::autocast_enabled());
  {
    amp::Autocast on(DType::bf16);
    EXPECT_EQ(matmul(a, b).dtype(), DType::bf16);
    {
      amp::Autocast off(DType::f32);
      EXPECT_FALSE(amp::autocast_enabled());
      EXPECT_EQ(matmul(a, b).dtype(), DType::f32);
    }
    {
      amp::Autocast off(DType::bf16, /*enabled=*/false);
      EXPECT_EQ(matmul(a, b).dtype(), DType::f32);
      amp::Autocast f16(DType::f16);
      EXPECT_EQ(matmul(a, b).dtype(), DType::f16);
    }
    EXPECT_EQ(amp::autocast_dtype(), DType::bf16);
    EXPECT_EQ(matmul(a, b).dtype(), DType::bf16);
  }
  EXPECT_FALSE(amp::autocast_enabled());
  EXPECT_EQ(matmul(a, b).dtype(), DType::f32);
}

TEST(Autocast, IsThreadLocal) {
  amp::Autocast on(DType::bf16);
  DType other = DType::boolean;
  std::thread t([&] { other = matmul(randn_cast({2, 2}, DType::f32), randn_cast({2, 2}, DType::f32)).dtype(); });
  t.join();
  EXPECT_EQ(other, DType::f32);
}

TEST(Autocast, IntegerDtypeIsAnErrorNamingIt) {
  for (DType dt : {DType::i64, DType::i32, DType::u8, DType::boolean, DType::f64}) {
    try {
      amp::Autocast guard(dt);
      FAIL() << "no error for " << dt;
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("amp::Autocast"), std::string::npos) << msg;
      EXPECT_NE(msg.find(name_of(dt)), std::string::npos) << msg;
    }
    EXPECT_FALSE(amp::autocast_enabled());
  }
}

// ---- values: an MLP under bf16 autocast against PyTorch's ----

struct Mlp {
  std::vector<DynTensor> weights, biases;
};

Mlp load_mlp(const Device& dev) {
  Mlp m;
  for (const auto& p : cases()["mlp"]["params"]) {
    int64_t in = p["in"], out = p["out"];
    m.weights.push_back(DynTensor::from_vector(p["weight"].get<std::vector<float>>(), {out, in}, dev).require_grad());
    m.biases.push_back(DynTensor::from_vector(p["bias"].get<std::vector<float>>(), {out}, dev).require_grad());
  }
  return m;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (float w : want) scale = std::max(scale, double(std::fabs(w)));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * std::max(scale, 1e-3)) << what << " [" << i << "]";
}

class AutocastStacks : public ::testing::TestWithParam<std::string> {
 protected:
  Device device() const {
    const std::string s = GetParam();
    if (s == "autodiff") return Device::cpu().autodiff();
    if (s == "checkpointing") return Device::cpu().autodiff(Checkpointing::balanced);
    return Device::cpu().fusion().autodiff();
  }
};

TEST_P(AutocastStacks, MlpMatchesPyTorchAutocast) {
  const Json& ref = cases()["mlp"];
  Device dev = device();
  Mlp m = load_mlp(dev);
  auto xs = ref["x_shape"].get<std::vector<int64_t>>();
  DynTensor x = DynTensor::from_vector(ref["x"].get<std::vector<float>>(), Shape(xs), dev);
  DynTensor target = DynTensor::from_vector(ref["target"].get<std::vector<int64_t>>(), {xs[0]}, dev);
  Gradients grads;
  DynTensor loss, logits;
  {
    amp::Autocast guard(DType::bf16);
    DynTensor h = gelu(nn::linear(x, m.weights[0], m.biases[0]));
    h = relu(nn::linear(h, m.weights[1], m.biases[1]));
    logits = nn::linear(h, m.weights[2], m.biases[2]);
    loss = nn::cross_entropy(logits, target);
    grads = loss.backward();
  }
  EXPECT_EQ(name_of(logits.dtype()), ref["logits_dtype"].get<std::string>());
  EXPECT_EQ(name_of(loss.dtype()), ref["loss_dtype"].get<std::string>());
  EXPECT_NEAR(loss.item(), ref["loss"].get<double>(), 2e-2 * std::fabs(ref["loss"].get<double>()));
  for (size_t i = 0; i < m.weights.size(); ++i) {
    const Json& p = ref["params"][i];
    auto gw = m.weights[i].grad(grads), gb = m.biases[i].grad(grads);
    ASSERT_TRUE(gw && gb);
    EXPECT_EQ(name_of(gw->dtype()), p["grad_dtype"].get<std::string>());
    EXPECT_EQ(name_of(gb->dtype()), p["grad_dtype"].get<std::string>());
    expect_close(gw->to_vector<float>(), p["grad_weight"].get<std::vector<float>>(), 3e-2, "grad weight " + std::to_string(i));
    expect_close(gb->to_vector<float>(), p["grad_bias"].get<std::vector<float>>(), 3e-2, "grad bias " + std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(Stacks, AutocastStacks, ::testing::Values("autodiff", "fusion_autodiff", "checkpointing"));

// ---- cast once per scope ----

// Counts the cast ops that reach the backend (a decorator under autodiff).
class CastCounter final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::vector<PrimitivePtr> execute(Op op) override {
    if (op.kind == OpKind::cast) ++casts;
    return inner()->execute(std::move(op));
  }
  std::atomic<int> casts{0};
};

TEST(AutocastCache, AWeightUsedTwiceIsCastOnce) {
  auto counter = std::make_shared<CastCounter>(Device::cpu().backend_ptr());
  Device dev = Device(counter).autodiff();
  DynTensor w = DynTensor::normal({5, 3}, 0, 1, DType::f32, dev).require_grad();
  DynTensor x1 = cast(DynTensor::normal({4, 5}, 0, 1, DType::f32, dev), DType::bf16);
  DynTensor x2 = cast(DynTensor::normal({4, 5}, 0, 1, DType::f32, dev), DType::bf16);
  Gradients g;
  counter->casts = 0;
  amp::reset_autocast_stats();
  {
    amp::Autocast guard(DType::bf16);
    DynTensor y = matmul(x1, w) + matmul(x2, w);
    EXPECT_EQ(y.dtype(), DType::bf16);
    EXPECT_EQ(counter->casts.load(), 1);
    EXPECT_EQ(amp::autocast_stats().lower_casts, 1);
    EXPECT_EQ(amp::autocast_stats().cache_hits, 1);
    g = sum(y).backward();  // sum runs in f32: one upcast of y
  }
  auto gw = w.grad(g);
  ASSERT_TRUE(gw);
  EXPECT_EQ(gw->dtype(), DType::f32);
  // the gradient of both uses reaches the f32 weight: (x1 + x2)^T 1
  auto want = matmul(transpose(cast(x1.detach(), DType::f32) + cast(x2.detach(), DType::f32), 0, 1),
                     DynTensor::ones({4, 3}, DType::f32, dev)).to_vector<float>();
  auto got = gw->to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 3e-2 * (1 + std::fabs(want[i])));
  // a new scope casts again
  counter->casts = 0;
  {
    amp::Autocast guard(DType::bf16);
    (void)matmul(x1, w);
    (void)matmul(x2, w);
  }
  EXPECT_EQ(counter->casts.load(), 1);
}

TEST(AutocastCache, LinearLayersCastTheirParametersOnce) {
  auto counter = std::make_shared<CastCounter>(Device::cpu().backend_ptr());
  Device dev = Device(counter).autodiff();
  nn::Linear fc = nn::LinearConfig{8, 8}.init(dev);
  DynTensor x = cast(DynTensor::normal({2, 8}, 0, 1, DType::f32, dev), DType::bf16);
  counter->casts = 0;
  amp::Autocast guard(DType::bf16);
  DynTensor y = fc.forward(fc.forward(fc.forward(x)));  // three uses of weight and bias
  EXPECT_EQ(y.dtype(), DType::bf16);
  EXPECT_EQ(counter->casts.load(), 2);  // the weight once, the bias once
}

TEST(AutocastCache, NoGradCastsAreKeptApart) {
  Device dev = Device::cpu().autodiff();
  DynTensor w = DynTensor::normal({3, 3}, 0, 1, DType::f32, dev).require_grad();
  DynTensor x = DynTensor::normal({2, 3}, 0, 1, DType::f32, dev);
  amp::Autocast guard(DType::bf16);
  {
    NoGradGuard off;
    (void)matmul(x, w);  // an untracked cast of w
  }
  DynTensor y = matmul(x, w);
  EXPECT_TRUE(y.is_require_grad());  // not the untracked cast from the no_grad block
  auto g = w.grad(sum(y).backward());
  ASSERT_TRUE(g);
  EXPECT_EQ(g->dtype(), DType::f32);
}

TEST(AutocastCache, StaysBoundedInALongScope) {
  // A whole training loop in one scope: each step's parameters are new tensors, and the casts of
  // the old ones must not pile up (nor keep the old parameters alive).
  Device dev = Device::cpu().autodiff();
  nn::Linear fc = nn::LinearConfig{4, 4}.init(dev);
  struct One {
    nn::Linear fc;
    EMBER_MODULE(fc)
  } m{fc};
  optim::Sgd opt = optim::SgdConfig{}.init();
  DynTensor x = DynTensor::normal({3, 4}, 0, 1, DType::f32, dev);
  amp::Autocast guard(DType::bf16);
  int64_t most = 0;
  for (int step = 0; step < 300; ++step) {
    Gradients g = sum(m.fc.forward(m.fc.forward(x))).backward();
    m = opt.step(std::move(m), g, 1e-3);
    most = std::max(most, amp::autocast_stats().cache_entries);
  }
  EXPECT_LE(most, 130);  // pruned: about 2 live entries, cleaned when 64 (then twice the live count) are held
}

// ---- master weights ----

struct TwoLayer {
  nn::Linear fc1, fc2;
  EMBER_MODULE(fc1, fc2)
};

TEST(MasterWeights, StepUnderAutocastKeepsF32ParamsAndGrads) {
  Device dev = Device::cpu().autodiff();
  dev.seed(3);
  TwoLayer m{nn::LinearConfig{6, 8}.init(dev), nn::LinearConfig{8, 2}.init(dev)};
  auto before = nn::state_dict(m);
  optim::AdamW opt = optim::AdamWConfig{}.init();
  DynTensor x = DynTensor::normal({5, 6}, 0, 1, DType::f32, dev);
  DynTensor y = DynTensor::from_vector<int64_t>({0, 1, 1, 0, 1}, {5}, dev);
  Gradients g;
  {
    amp::Autocast guard(DType::bf16);
    g = nn::cross_entropy(m.fc2.forward(relu(m.fc1.forward(x))), y).backward();
  }
  auto grads = optim::GradientsParams::from(m, g);
  EXPECT_EQ(grads.size(), 4u);
  for (const auto& [id, t] : grads.items()) EXPECT_EQ(t.dtype(), DType::f32);
  m = opt.step(std::move(m), grads, 1e-2);
  auto after = nn::state_dict(m);
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].second.dtype(), DType::f32) << after[i].first;
    EXPECT_NE(after[i].second.to_vector<float>(), before[i].second.to_vector<float>()) << after[i].first;
  }
  for (const auto& [name, t] : opt.state_dict(m)) {
    if (is_float(t.dtype())) {
      EXPECT_EQ(t.dtype(), DType::f32) << name;
    }
  }
}

// ---- GradScaler ----

struct OneLayer {
  nn::Linear fc;
  EMBER_MODULE(fc)
};

optim::Sgd& opt_sgd() {
  static optim::Sgd opt = optim::SgdConfig{}.init();
  return opt;
}

TEST(GradScaler, Defaults) {
  amp::GradScaler s;
  EXPECT_TRUE(s.is_enabled());
  EXPECT_EQ(s.get_scale(), 65536.0);
  EXPECT_EQ(s.config().growth_factor, 2.0);
  EXPECT_EQ(s.config().backoff_factor, 0.5);
  EXPECT_EQ(s.config().growth_interval, 2000);
  DynTensor loss = DynTensor::full({}, 1.5, DType::f32);
  EXPECT_EQ(s.scale(loss).item(), 1.5 * 65536.0);
}

TEST(GradScaler, UnscalesAndDetectsInfAndNan) {
  for (const Device& dev : {Device::cpu(), Device::cpu().fusion()}) {
    SCOPED_TRACE(dev.name());
    amp::GradScaler s({.init_scale = 4.0});
    optim::GradientsParams g;
    g.set(1, DynTensor::from_vector<float>({4, 8, -12}, {3}, dev));
    g.set(2, DynTensor::from_vector<float>({2, 6}, {2}, dev));
    s.unscale_(g);
    EXPECT_FALSE(s.found_inf());
    EXPECT_EQ(g.get(1)->to_vector<float>(), (std::vector<float>{1, 2, -3}));
    EXPECT_EQ(g.get(2)->to_vector<float>(), (std::vector<float>{0.5f, 1.5f}));
    EXPECT_THROW(s.unscale_(g), Error);  // once per step
    s.update();
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    // one bad element (or an inf and a -inf, whose sum is NaN) in the second of two gradients
    for (std::vector<float> bad : {std::vector<float>{3, inf}, {3, -inf}, {nan, 3}, {inf, -inf}}) {
      optim::GradientsParams h;
      h.set(1, DynTensor::from_vector<float>({1, 2}, {2}, dev));
      h.set(2, DynTensor::from_vector<float>(bad, {2}, dev));
      s.unscale_(h);
      EXPECT_TRUE(s.found_inf()) << bad[0] << " " << bad[1];
      s.update();
    }
    // large gradients (unscaled as rows), one with an inf, one with a NaN
    for (int64_t n : {100000, 3 * 8192, 40960}) {
      std::vector<float> big(size_t(n), 2.f);
      optim::GradientsParams h;
      h.set(1, DynTensor::from_vector<float>(big, {n / 2, 2}, dev));
      s.unscale_(h);
      EXPECT_FALSE(s.found_inf()) << n;
      std::vector<float> back = h.get(1)->to_vector<float>();
      EXPECT_EQ(h.get(1)->shape(), (Shape{n / 2, 2}));
      EXPECT_TRUE(std::all_of(back.begin(), back.end(), [&](float v) { return v == float(2.0 / s.get_scale()); }));
      s.update();
      for (float v : {inf, nan}) {
        big[size_t(n) - 7] = v;
        h.set(1, DynTensor::from_vector<float>(big, {n / 2, 2}, dev));
        s.unscale_(h);
        EXPECT_TRUE(s.found_inf()) << n << " " << v;
        s.update(4.0);
      }
    }
    EXPECT_EQ(s.get_scale(), 4.0);
  }
}

TEST(GradScaler, OverflowSkipsTheStepAndHalvesTheScale) {
  Device dev = Device::cpu().autodiff();
  OneLayer m{nn::LinearConfig{3, 2}.init(dev)};
  auto before = nn::state_dict(m);
  optim::Sgd opt = optim::SgdConfig{}.init();
  amp::GradScaler s;
  DynTensor x = DynTensor::normal({4, 3}, 0, 1, DType::f32, dev);
  Gradients g = s.scale(sum(m.fc.forward(x))).backward();
  auto grads = optim::GradientsParams::from(m, g);
  // force an overflow: an inf in the weight's gradient
  DynTensor gw = *grads.get(m.fc.weight);
  grads.set(m.fc.weight, gw + DynTensor::from_vector<float>({std::numeric_limits<float>::infinity(), 0, 0, 0, 0, 0},
                                                          {2, 3}, dev));
  m = s.step(opt, std::move(m), std::move(grads), 0.1);
  EXPECT_TRUE(s.last_step_skipped());
  auto after = nn::state_dict(m);
  for (size_t i = 0; i < after.size(); ++i)
    EXPECT_EQ(after[i].second.to_vector<float>(), before[i].second.to_vector<float>()) << after[i].first;
  s.update();
  EXPECT_EQ(s.get_scale(), 32768.0);
  EXPECT_EQ(s.growth_tracker(), 0);
  // a clean step then updates the parameters with the unscaled gradient
  g = s.scale(sum(m.fc.forward(x))).backward();
  OneLayer ref = m;
  m = s.step(opt, std::move(m), g, 0.1);
  EXPECT_FALSE(s.last_step_skipped());
  s.update();
  EXPECT_EQ(s.get_scale(), 32768.0);
  EXPECT_EQ(s.growth_tracker(), 1);
  // SGD with the true gradient of sum(x W^T + b) w.r.t. b: the batch size per output
  auto b = m.fc.bias->value().to_vector<float>(), b0 = ref.fc.bias->value().to_vector<float>();
  for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(b[i], b0[i] - 0.1f * 4, 1e-5);
}

TEST(GradScaler, GrowsAfterGrowthIntervalCleanSteps) {
  amp::GradScaler s({.init_scale = 8.0, .growth_interval = 3});
  auto clean_step = [&] {
    optim::GradientsParams g;
    g.set(1, DynTensor::from_vector<float>({1, 2}, {2}));
    s.unscale_(g);
    s.update();
  };
  clean_step();
  clean_step();
  EXPECT_EQ(s.get_scale(), 8.0);
  EXPECT_EQ(s.growth_tracker(), 2);
  clean_step();
  EXPECT_EQ(s.get_scale(), 16.0);
  EXPECT_EQ(s.growth_tracker(), 0);
  EXPECT_THROW(s.update(), Error);  // no inf check since the last update
}

TEST(GradScaler, StateRoundTripsThroughAFile) {
  amp::GradScaler s({.init_scale = 1024.0, .growth_interval = 10});
  for (int i = 0; i < 3; ++i) {
    optim::GradientsParams g;
    g.set(1, DynTensor::from_vector<float>({1}, {1}));
    s.unscale_(g);
    s.update();
  }
  const std::string path = (std::filesystem::temp_directory_path() / "ember_amp_scaler.safetensors").string();
  nn::write_tensors(path, s.state_dict());
  amp::GradScaler t;
  t.load_state_dict(nn::read_tensors(path, Device::cpu()));
  std::filesystem::remove(path);
  EXPECT_EQ(t.get_scale(), 1024.0);
  EXPECT_EQ(t.growth_tracker(), 3);
  EXPECT_EQ(t.config().growth_interval, 10);
  std::vector<std::string> keys;
  for (const auto& [k, v] : s.state_dict()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"scale", "growth_factor", "backoff_factor", "growth_interval",
                                            "_growth_tracker"}));
  nn::NamedTensors partial = s.state_dict();
  partial.pop_back();
  try {
    t.load_state_dict(partial);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("_growth_tracker"), std::string::npos) << e.what();
  }
}

TEST(GradScaler, Bf16WarnsOnceAndPassesThrough) {
  std::vector<std::string> warnings;
  auto prev = amp::set_warning_handler([&](std::string_view m) { warnings.emplace_back(m); });
  amp::GradScaler a({.dtype = DType::bf16});
  amp::GradScaler b({.dtype = DType::bf16});
  amp::set_warning_handler(prev);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("bf16"), std::string::npos);
  EXPECT_FALSE(a.is_enabled());
  DynTensor loss = DynTensor::full({}, 2.0, DType::f32);
  EXPECT_EQ(a.scale(loss).item(), 2.0);
  EXPECT_EQ(a.get_scale(), 1.0);
  a.update();  // nothing to do
  // an f16 scaler under bf16 autocast passes the loss, and then the step, through too
  amp::GradScaler f16;
  {
    amp::Autocast guard(DType::bf16);
    EXPECT_EQ(f16.scale(loss).item(), 2.0);
  }
  Device dev = Device::cpu().autodiff();
  OneLayer m{nn::LinearConfig{2, 1, false}.init(dev)};
  const float w0 = m.fc.weight.value().to_vector<float>()[0];
  optim::GradientsParams g;
  g.set(m.fc.weight, DynTensor::from_vector<float>({1, 1}, {1, 2}, dev));
  m = f16.step(opt_sgd(), std::move(m), g, 0.5);  // not divided by 65536
  EXPECT_FLOAT_EQ(m.fc.weight.value().to_vector<float>()[0], w0 - 0.5f);
  f16.update();
  EXPECT_EQ(f16.get_scale(), 65536.0);
  EXPECT_EQ(f16.scale(loss).item(), 2.0 * 65536.0);  // the next step outside bf16 scales again
}

TEST(GradScaler, F16TrainingDoesNotDiverge) {
  Device dev = Device::cpu().autodiff();
  dev.seed(7);
  TwoLayer m{nn::LinearConfig{4, 16}.init(dev), nn::LinearConfig{16, 1}.init(dev)};
  // y = sum of x's coordinates, scaled: a regression the model fits well
  DynTensor x = DynTensor::normal({64, 4}, 0, 1, DType::f32, dev);
  DynTensor y = sum(x, {1}, true) * 0.5;
  optim::Adam opt = optim::AdamConfig{}.init();
  amp::GradScaler s({.init_scale = 65536.0 * 65536.0, .growth_interval = 50});  // starts too high: must back off
  double first = 0, last = 0;
  int skipped = 0;
  for (int step = 0; step < 300; ++step) {
    Gradients g;
    DynTensor loss;
    {
      amp::Autocast guard(DType::f16);
      DynTensor pred = m.fc2.forward(tanh(m.fc1.forward(x)));
      loss = nn::mse_loss(pred, y);
      g = s.scale(loss).backward();
    }
    m = s.step(opt, std::move(m), g, 1e-2);
    skipped += s.last_step_skipped();
    s.update();
    double l = loss.item();
    ASSERT_TRUE(std::isfinite(l)) << "step " << step;
    if (step == 0) first = l;
    last = l;
  }
  EXPECT_GT(skipped, 0);             // the oversized initial scale overflowed f16 and was backed off
  EXPECT_LT(s.get_scale(), 65536.0 * 65536.0);
  EXPECT_LT(last, 0.1 * first);     // and training converged
  for (const auto& [name, t] : nn::state_dict(m)) EXPECT_EQ(t.dtype(), DType::f32) << name;
}

}  // namespace
}  // namespace ember
