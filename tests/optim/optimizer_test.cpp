// Optimizers against PyTorch 1.13: every case of cases/optimizers.json (made by
// gen_optimizer_cases.py) trains the same 2-layer MLP for 20 steps on Device::cpu().autodiff()
// and must end with PyTorch's parameters (f64 to 1e-9 relative, f32 to 1e-4) and, in f64, with
// PyTorch's optimizer state. Each f64 case also saves the optimizer state after 10 steps, loads
// it into a fresh optimizer and a fresh module (new parameter ids) and must continue bit for bit.
// Plus clip_grad_norm_ checks, GradientsParams, frozen parameters and load_state_dict errors.
// Writes <reports>/nn-optimizers.json: {"optimizers", "cases", "failed"}.
#include "ember/optim/optimizer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "ember/core/error.hpp"

namespace ember::optim {
namespace {

using nlohmann::json;

// The generator's problem: out = fc2(tanh(fc1(x))), loss = mse (mean).
struct Dense {
  nn::Param weight, bias;
  EMBER_MODULE(weight, bias)
  DynTensor forward(const DynTensor& x) const { return matmul(x, transpose(weight.value(), 0, 1)) + bias.value(); }
};
struct Mlp {
  Dense fc1, fc2;
  EMBER_MODULE(fc1, fc2)
  DynTensor forward(const DynTensor& x) const { return fc2.forward(tanh(fc1.forward(x))); }
};

DynTensor mse(const DynTensor& out, const DynTensor& target) { return mean(square(out - target)); }

const json& doc() {
  static const json d = [] {
    std::ifstream in(std::string(EMBER_OPTIM_TEST_DIR) + "/cases/optimizers.json");
    return in ? json::parse(in) : json::object();
  }();
  return d;
}

Device dev() { return Device::cpu().autodiff(); }

DynTensor tensor_of(const json& data, const json& shape, DType dt) {
  std::vector<int64_t> dims = shape.get<std::vector<int64_t>>();
  return DynTensor::from_vector<double>(data.get<std::vector<double>>(), Shape(dims), dev()).cast(dt);
}

Mlp make_mlp(DType dt, const std::set<std::string>& frozen = {}) {
  const json& init = doc().at("init");
  auto param = [&](const std::string& name) {
    return nn::Param(tensor_of(init.at(name).at("data"), init.at(name).at("shape"), dt), frozen.count(name) != 0);
  };
  return Mlp{{param("fc1.weight"), param("fc1.bias")}, {param("fc2.weight"), param("fc2.bias")}};
}

// A fresh module holding `m`'s values (new parameter ids), as after loading a checkpoint.
Mlp copy_fresh(const Mlp& m) {
  auto fresh = [](const nn::Param& p) { return nn::Param(p.value().detach(), p.frozen()); };
  return Mlp{{fresh(m.fc1.weight), fresh(m.fc1.bias)}, {fresh(m.fc2.weight), fresh(m.fc2.bias)}};
}

std::vector<ParamGroup> groups_of(const json& c) {
  std::vector<ParamGroup> out;
  for (const auto& g : c.at("groups")) {
    ParamGroup pg{g.at("pattern").get<std::string>(), g.value("lr_scale", 1.0), std::nullopt};
    if (g.contains("weight_decay") && !g.at("weight_decay").is_null())
      pg.weight_decay = g.at("weight_decay").get<double>();
    out.push_back(pg);
  }
  return out;
}

std::optional<GradientClipping> clipping_of(const json& c) {
  const json& clip = c.at("clip");
  if (clip.is_null()) return std::nullopt;
  if (clip.at("kind") == "value") return GradientClipping::by_value(clip.at("threshold"));
  const json& nt = clip.at("norm_type");
  double p = nt.is_string() ? std::numeric_limits<double>::infinity() : nt.get<double>();
  return GradientClipping::by_norm(clip.at("threshold"), p);
}

std::pair<double, double> betas_of(const json& cfg, std::pair<double, double> dflt) {
  if (!cfg.contains("betas")) return dflt;
  return {cfg.at("betas").at(0).get<double>(), cfg.at("betas").at(1).get<double>()};
}

// The ember optimizer for a case spec (the generator's config keys are PyTorch's argument names).
// `capturable`: Adam and AdamW read the learning rate and step counts on the device.
std::unique_ptr<Optimizer> make_optimizer(const json& c, bool capturable = false) {
  const std::string kind = c.at("optimizer");
  const json& cfg = c.at("config");
  auto groups = groups_of(c);
  auto clipping = clipping_of(c);
  if (kind == "sgd") {
    SgdConfig s;
    s.momentum = cfg.value("momentum", s.momentum);
    s.dampening = cfg.value("dampening", s.dampening);
    s.weight_decay = cfg.value("weight_decay", s.weight_decay);
    s.nesterov = cfg.value("nesterov", s.nesterov);
    s.maximize = cfg.value("maximize", s.maximize);
    s.groups = groups;
    s.clipping = clipping;
    return std::make_unique<Sgd>(s);
  }
  if (kind == "adam") {
    AdamConfig a;
    a.betas = betas_of(cfg, a.betas);
    a.eps = cfg.value("eps", a.eps);
    a.weight_decay = cfg.value("weight_decay", a.weight_decay);
    a.amsgrad = cfg.value("amsgrad", a.amsgrad);
    a.maximize = cfg.value("maximize", a.maximize);
    a.capturable = capturable;
    a.groups = groups;
    a.clipping = clipping;
    return std::make_unique<Adam>(a);
  }
  if (kind == "adamw") {
    AdamWConfig a;
    a.betas = betas_of(cfg, a.betas);
    a.eps = cfg.value("eps", a.eps);
    a.weight_decay = cfg.value("weight_decay", a.weight_decay);
    a.amsgrad = cfg.value("amsgrad", a.amsgrad);
    a.maximize = cfg.value("maximize", a.maximize);
    a.capturable = capturable;
    a.groups = groups;
    a.clipping = clipping;
    return std::make_unique<AdamW>(a);
  }
  if (kind == "rmsprop") {
    RmsPropConfig r;
    r.alpha = cfg.value("alpha", r.alpha);
    r.eps = cfg.value("eps", r.eps);
    r.weight_decay = cfg.value("weight_decay", r.weight_decay);
    r.momentum = cfg.value("momentum", r.momentum);
    r.centered = cfg.value("centered", r.centered);
    r.maximize = cfg.value("maximize", r.maximize);
    r.groups = groups;
    r.clipping = clipping;
    return std::make_unique<RmsProp>(r);
  }
  if (kind == "adagrad") {
    AdaGradConfig a;
    a.lr_decay = cfg.value("lr_decay", a.lr_decay);
    a.weight_decay = cfg.value("weight_decay", a.weight_decay);
    a.initial_accumulator_value = cfg.value("initial_accumulator_value", a.initial_accumulator_value);
    a.eps = cfg.value("eps", a.eps);
    a.maximize = cfg.value("maximize", a.maximize);
    a.groups = groups;
    a.clipping = clipping;
    return std::make_unique<AdaGrad>(a);
  }
  if (kind == "lion") {
    LionConfig l;
    l.betas = betas_of(cfg, l.betas);
    l.weight_decay = cfg.value("weight_decay", l.weight_decay);
    l.groups = groups;
    l.clipping = clipping;
    return std::make_unique<Lion>(l);
  }
  if (kind == "lamb") {
    LambConfig l;
    l.betas = betas_of(cfg, l.betas);
    l.eps = cfg.value("eps", l.eps);
    l.weight_decay = cfg.value("weight_decay", l.weight_decay);
    l.groups = groups;
    l.clipping = clipping;
    return std::make_unique<Lamb>(l);
  }
  throw Error("optimizer_test: unknown optimizer " + kind);
}

struct Problem {
  DynTensor x, y;
};
Problem data(DType dt) {
  const json& d = doc().at("data");
  return {tensor_of(d.at("x"), d.at("x_shape"), dt), tensor_of(d.at("y"), d.at("y_shape"), dt)};
}

// `steps` optimizer steps of case `c` (one batch, or two micro-batches whose gradients are summed).
// `lr_tensor`: the learning rate goes in as an f32 0-d tensor (capturable optimizers), and the
// module is moved into each step (updated in place).
Mlp train(Mlp m, Optimizer& opt, const json& c, const Problem& p, int steps, bool lr_tensor = false) {
  const double lr = c.at("lr");
  const int micro = c.at("micro_batches");
  const DynTensor lr_t = DynTensor::full(Shape{}, Scalar(lr), DType::f32, p.x.device());
  for (int s = 0; s < steps; ++s) {
    if (micro == 1) {
      Gradients g = mse(m.forward(p.x), p.y).backward();
      m = lr_tensor ? opt.step(std::move(m), g, lr_t) : opt.step(m, g, lr);
      continue;
    }
    const int64_t half = p.x.size(0) / 2;
    auto part = [&](int64_t start) {
      DynTensor xb = narrow(p.x, 0, start, half), yb = narrow(p.y, 0, start, half);
      return GradientsParams::from(m, mse(m.forward(xb), yb).backward());
    };
    GradientsParams g = part(0);
    g.accumulate(part(half));
    m = lr_tensor ? opt.step(std::move(m), std::move(g), lr_t) : opt.step(m, std::move(g), lr);
  }
  return m;
}

std::vector<double> values(const DynTensor& t) { return t.cast(DType::f64).to_vector<double>(); }

// |a - b| <= rtol * (|b| + 1e-2): relative, with a floor for entries near zero.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double e = std::abs(got[i] - want[i]) / (std::abs(want[i]) + 1e-2);
    if (!(e <= worst)) worst = e, at = i;
  }
  EXPECT_LE(worst, rtol) << what << ": element " << at << " is " << got[at] << ", PyTorch " << want[at];
}

struct Tally {
  std::set<std::string> optimizers;
  int cases = 0, failed = 0;
};
Tally& tally() {
  static Tally t;
  return t;
}

struct Case {
  size_t index;
  std::string name;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> load_cases(bool f64_only = false) {
  std::vector<Case> out;
  if (!doc().contains("cases")) return out;
  for (size_t i = 0; i < doc().at("cases").size(); ++i) {
    const json& c = doc().at("cases").at(i);
    if (f64_only && c.at("dtype") != "f64") continue;
    out.push_back({i, c.at("name").get<std::string>() + "_" + c.at("dtype").get<std::string>()});
  }
  return out;
}

class Reference : public testing::TestWithParam<Case> {
 protected:
  const json& spec() const { return doc().at("cases").at(GetParam().index); }
  void TearDown() override {
    ++tally().cases;
    if (HasFailure()) ++tally().failed;
  }
};

// 20 steps from the shared start; parameters (and in f64 the state) must match PyTorch's.
TEST_P(Reference, TwentyStepsMatchPyTorch) {
  const json& c = spec();
  const bool f64 = c.at("dtype") == "f64";
  const DType dt = f64 ? DType::f64 : DType::f32;
  const double rtol = f64 ? 1e-9 : 1e-4;
  std::set<std::string> frozen;
  for (const auto& f : c.at("frozen")) frozen.insert(f.get<std::string>());
  tally().optimizers.insert(c.at("optimizer").get<std::string>());

  auto opt = make_optimizer(c);
  Mlp start = make_mlp(dt, frozen);
  Mlp m = train(start, *opt, c, data(dt), c.at("steps").get<int>());

  auto start_params = nn::named_parameters(start);
  auto params = nn::named_parameters(m);
  ASSERT_EQ(params.size(), 4u);
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [path, value] = params[i];
    EXPECT_EQ(value.dtype(), dt) << path;
    if (frozen.count(path)) {  // untouched, bit for bit
      EXPECT_EQ(values(value), values(start_params[i].second)) << path << " is frozen";
      continue;
    }
    expect_close(values(value), c.at("params").at(path).get<std::vector<double>>(), rtol,
                 c.at("name").get<std::string>() + " " + path);
  }
  // Parameter ids survive the updates.
  EXPECT_EQ(m.fc1.weight.id(), start.fc1.weight.id());
  EXPECT_EQ(m.fc2.bias.id(), start.fc2.bias.id());

  if (!f64) return;
  // The state, under PyTorch's names ("fc1.weight.exp_avg"); SGD has no step counter in PyTorch.
  std::map<std::string, DynTensor> state;
  for (auto& [k, t] : opt->state_dict(m)) state[k] = t;
  std::set<std::string> expected_keys;
  for (const auto& [path, entries] : c.at("state").items()) {
    for (const auto& [name, v] : entries.items()) {
      const std::string key = path + "." + name;
      expected_keys.insert(key);
      auto it = state.find(key);
      if (it == state.end()) {
        ADD_FAILURE() << "state_dict has no " << key;
        continue;
      }
      if (name == "step") {
        EXPECT_EQ(it->second.dtype(), DType::i64) << key;
        EXPECT_EQ(it->second.rank(), 0) << key;
        EXPECT_EQ(static_cast<int64_t>(it->second.item()), v.get<int64_t>()) << key;
      } else {
        expect_close(values(it->second), v.get<std::vector<double>>(), rtol, key);
      }
    }
  }
  for (const auto& [k, t] : state) {
    const bool is_step = k.size() > 5 && k.compare(k.size() - 5, 5, ".step") == 0;
    if (!expected_keys.count(k) && !(is_step && c.at("optimizer") == "sgd"))
      ADD_FAILURE() << "state_dict has " << k << ", PyTorch's state does not";
  }
}

class RoundTrip : public Reference {};

// Save after 10 steps, load into a fresh optimizer for a fresh module (new ids), continue 10:
// the same parameters as 20 uninterrupted steps, bit for bit.
TEST_P(RoundTrip, StateSavedMidRunContinuesIdentically) {
  const json& c = spec();
  std::set<std::string> frozen;
  for (const auto& f : c.at("frozen")) frozen.insert(f.get<std::string>());
  const Problem p = data(DType::f64);
  const int steps = c.at("steps");

  auto whole = make_optimizer(c);
  Mlp full = train(make_mlp(DType::f64, frozen), *whole, c, p, steps);

  auto first = make_optimizer(c);
  Mlp half = train(make_mlp(DType::f64, frozen), *first, c, p, steps / 2);
  nn::NamedTensors saved = first->state_dict(half);
  Mlp resumed = copy_fresh(half);
  auto second = make_optimizer(c);
  second->load_state_dict(resumed, saved);
  resumed = train(resumed, *second, c, p, steps - steps / 2);

  auto a = nn::named_parameters(full), b = nn::named_parameters(resumed);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(values(a[i].second), values(b[i].second)) << a[i].first;
  // The resumed optimizer also ends in the same state.
  auto sa = whole->state_dict(full), sb = second->state_dict(resumed);
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].first, sb[i].first);
    EXPECT_EQ(values(sa[i].second), values(sb[i].second)) << sa[i].first;
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, Reference, testing::ValuesIn(load_cases()),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });
INSTANTIATE_TEST_SUITE_P(Optimizers, RoundTrip, testing::ValuesIn(load_cases(/*f64_only=*/true)),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });

// Capturable Adam and AdamW (the learning rate and the step counts read on the device, the
// per-step scalars computed there) against PyTorch's 20 steps, and their state_dict. f64 within
// 1e-6: the learning rate is an f32 tensor (0.02 is 2e-8 off), which clipping's cases amplify to
// 4e-7. (1 - beta2^t in f32, as torch's capturable path has it, would be 1e-5 off at once.)
TEST(Optimizer, CapturableAdamMatchesPyTorch) {
  int ran = 0;
  for (const Case& k : load_cases()) {
    const json& c = doc().at("cases").at(k.index);
    const std::string kind = c.at("optimizer");
    if ((kind != "adam" && kind != "adamw") || c.at("config").value("amsgrad", false)) continue;
    SCOPED_TRACE(k.name);
    ++ran;
    const DType dt = c.at("dtype") == "f64" ? DType::f64 : DType::f32;
    std::set<std::string> frozen;
    for (const auto& f : c.at("frozen")) frozen.insert(f.get<std::string>());
    auto opt = make_optimizer(c, /*capturable=*/true);
    EXPECT_TRUE(opt->capturable());
    const int steps = c.at("steps");
    Mlp m = train(make_mlp(dt, frozen), *opt, c, data(dt), steps, /*lr_tensor=*/true);
    for (const auto& [path, value] : nn::named_parameters(m)) {
      if (frozen.count(path)) continue;
      expect_close(values(value), c.at("params").at(path).get<std::vector<double>>(), dt == DType::f64 ? 1e-6 : 1e-4,
                   k.name + " " + path);
    }
    for (const auto& [key, t] : opt->state_dict(m)) {
      if (key.size() > 5 && key.compare(key.size() - 5, 5, ".step") == 0) {
        EXPECT_EQ(int64_t(t.item()), steps) << key;
      }
    }
  }
  EXPECT_GE(ran, 4);
}

TEST(Optimizer, CapturableErrors) {
  Mlp m = make_mlp(DType::f64);
  const Problem p = data(DType::f64);
  Gradients g = mse(m.forward(p.x), p.y).backward();
  const DynTensor lr = DynTensor::full(Shape{}, Scalar(0.1), DType::f32, dev());
  EXPECT_THROW(Adam({.amsgrad = true, .capturable = true}), Error);
  Sgd sgd;
  EXPECT_FALSE(sgd.capturable());
  EXPECT_THROW(sgd.step(m, g, lr), Error);  // a tensor learning rate needs a capturable optimizer
  AdamW plain;
  EXPECT_THROW(plain.step(m, g, lr), Error);
  AdamW opt({.capturable = true});
  EXPECT_THROW(opt.step(m, g, DynTensor::full(Shape{1}, Scalar(0.1), DType::f32, dev())), Error);  // not 0-d
  EXPECT_THROW(opt.step(m, g, DynTensor::full(Shape{}, Scalar(1), DType::i64, dev())), Error);    // not floating
  EXPECT_NO_THROW(opt.step(m, g, 0.1));  // a double is recorded as a value
  EXPECT_NO_THROW(opt.step(m, g, DynTensor::full(Shape{}, Scalar(0.1), DType::f64, dev())));  // cast to f32
}

TEST(OptimizerCases, ReferenceFileIsPresent) {
  ASSERT_TRUE(doc().contains("cases")) << "missing " << EMBER_OPTIM_TEST_DIR << "/cases/optimizers.json";
  EXPECT_GE(doc().at("cases").size(), 14u);
}

// torch.nn.utils.clip_grad_norm_ on the gradients at the start: total norm and clipped gradients.
TEST(GradientsParams, ClipByNormMatchesPyTorch) {
  const Problem p = data(DType::f64);
  for (const auto& c : doc().at("clip_checks")) {
    ++tally().cases;
    const bool failed_before = HasFailure();
    Mlp m = make_mlp(DType::f64);
    GradientsParams g = GradientsParams::from(m, mse(m.forward(p.x), p.y).backward());
    ASSERT_EQ(g.size(), 4u);
    const json& nt = c.at("norm_type");
    const double norm_type = nt.is_string() ? std::numeric_limits<double>::infinity() : nt.get<double>();
    const double total = g.clip_by_norm(c.at("max_norm"), norm_type);
    EXPECT_NEAR(total, c.at("total_norm").get<double>(), 1e-12 * c.at("total_norm").get<double>()) << "p=" << nt;
    for (const auto& [path, value] : nn::named_parameters(m)) {
      nn::Param* param = nullptr;
      nn::for_each_param(m, [&](const std::string& q, nn::Param& x) {
        if (q == path) param = &x;
      });
      expect_close(values(*g.get(*param)), c.at("grads").at(path).get<std::vector<double>>(), 1e-11,
                   "p=" + nt.dump() + " " + path);
    }
    if (HasFailure() && !failed_before) ++tally().failed;
  }
}

// x rounded to the nearest bf16 (ties to even): 8 significant bits.
double round_to_bf16(double x) {
  int e = 0;
  std::frexp(x, &e);  // x = m 2^e, 0.5 <= |m| < 1
  return std::ldexp(std::nearbyint(std::ldexp(x, 8 - e)), e - 8);
}

// Gradients of three dtypes (three norm_multi / mul_multi groups), one of them empty: the total is
// the p-norm of every element, each gradient is scaled by min(1, max_norm / (total + 1e-6)), and
// each keeps its dtype. The expected values are the formula evaluated on the host in double.
TEST(GradientsParams, ClipByNormOverMixedDtypesIsTheFormula) {
  const std::vector<std::pair<Shape, DType>> specs = {{Shape{40, 3}, DType::f64}, {Shape{7}, DType::f32},
                                                      {Shape{0}, DType::f32},     {Shape{5, 2}, DType::f64},
                                                      {Shape{33}, DType::bf16},   {Shape{}, DType::f32}};
  for (double p : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
    GradientsParams g;
    std::vector<std::vector<double>> before;
    for (size_t i = 0; i < specs.size(); ++i) {
      std::vector<double> v(size_t(specs[i].first.numel()));
      for (size_t j = 0; j < v.size(); ++j) v[j] = std::sin(double(7 * i + 3 * j + 1)) * (i == 4 ? 4.0 : 1.0);
      DynTensor t = DynTensor::from_vector<double>(v, specs[i].first, Device::cpu()).cast(specs[i].second);
      before.push_back(values(t));  // as rounded to the dtype
      g.set(i, t);
    }
    // each gradient's norm in its dtype (as clip_grad_norm_: the bf16 one's is rounded to bf16),
    // then the norm of the norms
    double acc = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      double a = 0;
      for (double x : before[i]) a = std::isinf(p) ? std::max(a, std::abs(x)) : a + std::pow(std::abs(x), p);
      a = std::isinf(p) ? a : std::pow(a, 1 / p);
      if (specs[i].second == DType::bf16) a = round_to_bf16(a);
      acc = std::isinf(p) ? std::max(acc, a) : acc + std::pow(a, p);
    }
    const double total = std::isinf(p) ? acc : std::pow(acc, 1 / p);
    const double max_norm = total / 3;
    EXPECT_NEAR(g.clip_by_norm(max_norm, p), total, 1e-6 * total) << "p=" << p;
    const double coef = std::min(1.0, max_norm / (total + 1e-6));
    for (size_t i = 0; i < specs.size(); ++i) {
      const DynTensor t = *g.get(i);
      EXPECT_EQ(t.dtype(), specs[i].second);
      EXPECT_EQ(t.shape(), specs[i].first);
      std::vector<double> want = before[i];
      for (double& x : want) x *= coef;
      expect_close(values(t), want, specs[i].second == DType::bf16 ? 2e-2 : 1e-5, "p=" + std::to_string(p));
    }
  }
}

TEST(MultiTensorOps, BadInputIsAnError) {
  const Device d = Device::cpu();
  const DynTensor a = DynTensor::ones(Shape{3}, DType::f32, d), b = DynTensor::ones(Shape{2}, DType::f64, d);
  EXPECT_THROW(norm_multi({}), Error);
  EXPECT_THROW(norm_multi({a, b}), Error);  // two dtypes
  EXPECT_THROW(norm_multi({a}, 0), Error);  // p <= 0
  EXPECT_THROW(norm_multi({DynTensor::ones(Shape{3}, DType::i32, d)}), Error);
  EXPECT_THROW(mul_multi({}, DynTensor::ones(Shape{}, DType::f32, d)), Error);
  EXPECT_THROW(mul_multi({a}, DynTensor::ones(Shape{1}, DType::f32, d)), Error);  // not 0-d
  EXPECT_THROW(mul_multi({a, b}, DynTensor::ones(Shape{}, DType::f32, d)), Error);
  EXPECT_THROW(mul_multi({a}, DynTensor()), Error);
  try {
    norm_multi({a, b});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("norm_multi"), std::string::npos) << e.what();
  }
  // an input held only by the op gives its buffer to the result
  DynTensor x = DynTensor::from_vector<float>(std::vector<float>(1000, 2.0f), Shape{1000}, d);
  const void* where = d.backend().memory_view(x.primitive())->data;
  std::vector<DynTensor> xs;
  xs.push_back(std::move(x));  // (not a braced list: its elements are copies that live on)
  std::vector<DynTensor> y = mul_multi(std::move(xs), DynTensor::full(Shape{}, Scalar(0.5), DType::f64, d));
  EXPECT_EQ(d.backend().memory_view(y[0].primitive())->data, where);
  EXPECT_EQ(y[0].to_vector<float>()[999], 1.0f);
}

TEST(GradientsParams, GetSetRemoveAccumulateScaleClip) {
  Mlp m = make_mlp(DType::f64);
  const Problem p = data(DType::f64);
  GradientsParams g = GradientsParams::from(m, mse(m.forward(p.x), p.y).backward());
  EXPECT_EQ(g.size(), 4u);
  std::vector<double> w = values(*g.get(m.fc1.weight));
  GradientsParams sum = g;
  sum.accumulate(g).scale(0.5);
  EXPECT_EQ(values(*sum.get(m.fc1.weight)), w);  // (g + g) / 2 is exact
  sum.clip_by_value(1e-3);
  for (double v : values(*sum.get(m.fc2.weight))) EXPECT_LE(std::abs(v), 1e-3);
  EXPECT_TRUE(sum.remove(m.fc2.bias));
  EXPECT_FALSE(sum.remove(m.fc2.bias));
  EXPECT_FALSE(sum.get(m.fc2.bias).has_value());
  sum.set(m.fc2.bias, DynTensor::ones(Shape{3}, DType::f64, dev()));
  EXPECT_EQ(values(*sum.get(m.fc2.bias)), (std::vector<double>{1, 1, 1}));
  // accumulate adds ids it did not have
  GradientsParams only_bias;
  only_bias.set(m.fc2.bias, DynTensor::ones(Shape{3}, DType::f64, dev()));
  GradientsParams none;
  none.accumulate(only_bias);
  EXPECT_EQ(none.size(), 1u);
  EXPECT_DOUBLE_EQ(GradientsParams().clip_by_norm(1.0), 0.0);
  EXPECT_THROW(sum.clip_by_value(-1), Error);
}

TEST(Optimizer, FrozenParametersGetNoGradientAndStayUnchanged) {
  Mlp m = make_mlp(DType::f64);
  m.fc1 = nn::freeze(m.fc1);
  const Problem p = data(DType::f64);
  GradientsParams g = GradientsParams::from(m, mse(m.forward(p.x), p.y).backward());
  EXPECT_EQ(g.size(), 2u);
  EXPECT_FALSE(g.contains(m.fc1.weight.id()));
  Adam opt({.weight_decay = 0.1});
  Mlp before = m;
  // A gradient handed in for a frozen parameter is ignored too.
  g.set(m.fc1.weight, DynTensor::ones(Shape{6, 4}, DType::f64, dev()));
  Mlp after = opt.step(m, g, 0.1);
  EXPECT_EQ(values(after.fc1.weight), values(before.fc1.weight));
  EXPECT_EQ(values(after.fc1.bias), values(before.fc1.bias));
  EXPECT_NE(values(after.fc2.weight), values(before.fc2.weight));
  for (const auto& [k, t] : opt.state_dict(after)) EXPECT_EQ(k.rfind("fc1.", 0), std::string::npos) << k;
}

// Adam / AdamW write a moved-in module's new parameter values into the old ones' memory (what a
// CUDA graph that reads the parameters needs, docs/cuda-graphs.md); a module passed as a copy
// leaves the caller's values alone, and both give the same values.
TEST(Optimizer, AdamUpdatesAMovedModuleInPlace) {
  auto address = [](const nn::Param& p) { return p.value().device().backend().memory_view(p.value().primitive())->data; };
  for (bool decoupled : {false, true}) {
    SCOPED_TRACE(decoupled ? "AdamW" : "Adam");
    const Problem p = data(DType::f64);
    Mlp moved = make_mlp(DType::f64), copied = moved;
    std::unique_ptr<Optimizer> o1 = decoupled ? std::unique_ptr<Optimizer>(new AdamW({.weight_decay = 0.1}))
                                             : std::unique_ptr<Optimizer>(new Adam({.weight_decay = 0.1}));
    std::unique_ptr<Optimizer> o2 = decoupled ? std::unique_ptr<Optimizer>(new AdamW({.weight_decay = 0.1}))
                                             : std::unique_ptr<Optimizer>(new Adam({.weight_decay = 0.1}));
    void* w = nullptr;  // (the first step makes new tensors: `copied` shares the first ones)
    void* m1 = nullptr;  // exp_avg of fc1.weight: the state is updated in place too
    auto state_address = [&](const std::string& key) -> void* {
      for (const auto& [k, t] : o1->state_dict(moved))
        if (k == key) return t.device().backend().memory_view(t.primitive())->data;
      return nullptr;
    };
    for (int s = 0; s < 4; ++s) {
      auto g = mse(moved.forward(p.x), p.y).backward();
      moved = o1->step(std::move(moved), g, 0.05);
      if (s == 0) w = address(moved.fc1.weight);
      if (s == 0) m1 = state_address("fc1.weight.exp_avg");
      EXPECT_EQ(address(moved.fc1.weight), w) << "step " << s;
      EXPECT_EQ(state_address("fc1.weight.exp_avg"), m1) << "step " << s;
      const std::vector<double> before = values(copied.fc2.bias);
      Mlp next = o2->step(copied, mse(copied.forward(p.x), p.y).backward(), 0.05);
      EXPECT_EQ(values(copied.fc2.bias), before);  // the copy's caller keeps its values
      EXPECT_NE(address(next.fc1.weight), address(copied.fc1.weight));
      copied = next;
      EXPECT_EQ(values(moved.fc1.weight), values(copied.fc1.weight));
      EXPECT_EQ(values(moved.fc2.bias), values(copied.fc2.bias));
    }
  }
}

// A parameter updated in place stays the same autodiff leaf (as a PyTorch parameter does):
// gradients computed before the step still find it, which is what a replayed CUDA graph relies
// on (its backward keeps writing the gradients of the leaves it was captured with). A module
// passed as a copy gets new leaves: the caller's old ones are still alive.
TEST(Optimizer, AnUpdatedParameterKeepsItsGradientKey) {
  const Problem p = data(DType::f64);
  Mlp moved = make_mlp(DType::f64), copied = moved;
  Adam opt, opt2;
  auto g = mse(moved.forward(p.x), p.y).backward();
  copied = opt2.step(copied, g, 0.05);  // (a copy: `moved` still holds the first leaves)
  EXPECT_FALSE(copied.fc1.weight.grad(g).has_value());
  ASSERT_TRUE(moved.fc1.weight.grad(g).has_value());
  const std::vector<double> dw = values(*moved.fc1.weight.grad(g));
  for (int s = 0; s < 3; ++s) {
    moved = opt.step(std::move(moved), g, 0.05);  // the same gradients, every step
    ASSERT_TRUE(moved.fc1.weight.grad(g).has_value()) << "step " << s;
    EXPECT_EQ(values(*moved.fc1.weight.grad(g)), dw);
  }
  // and the eager loop is unchanged: fresh gradients each step give the values of the copy's loop
  Mlp a = make_mlp(DType::f64), b = a;
  Adam oa, ob;
  for (int s = 0; s < 3; ++s) {
    a = oa.step(std::move(a), mse(a.forward(p.x), p.y).backward(), 0.05);
    Mlp nb = ob.step(b, mse(b.forward(p.x), p.y).backward(), 0.05);
    b = nb;
  }
  EXPECT_EQ(values(a.fc1.weight), values(b.fc1.weight));
}

TEST(Optimizer, StateDictKeysAndLoadErrors) {
  const Problem p = data(DType::f64);
  Mlp m = make_mlp(DType::f64);
  Adam opt({.amsgrad = true});
  EXPECT_TRUE(opt.state_dict(m).empty());
  m = opt.step(m, mse(m.forward(p.x), p.y).backward(), 0.01);
  nn::NamedTensors s = opt.state_dict(m);
  std::vector<std::string> keys;
  for (const auto& [k, t] : s) keys.push_back(k);
  EXPECT_EQ(keys.size(), 16u);
  EXPECT_EQ(keys[0], "fc1.weight.step");
  EXPECT_NE(std::find(keys.begin(), keys.end(), "fc1.weight.exp_avg"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "fc2.bias.max_exp_avg_sq"), keys.end());

  auto expect_error = [&](nn::NamedTensors bad, const std::string& needle) {
    Adam other({.amsgrad = true});
    try {
      other.load_state_dict(m, bad);
      ADD_FAILURE() << "no Error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_TRUE(other.state_dict(m).empty()) << "a failed load must change nothing";
  };
  nn::NamedTensors missing = s;
  missing.erase(missing.begin() + 2);
  expect_error(missing, "missing keys (1):\n  " + s[2].first);
  nn::NamedTensors unexpected = s;
  unexpected.emplace_back("fc3.weight.exp_avg", DynTensor::zeros(Shape{2}, DType::f64));
  expect_error(unexpected, "fc3.weight.exp_avg");
  nn::NamedTensors mismatched = s;
  for (auto& [k, t] : mismatched)
    if (k == "fc1.bias.exp_avg") t = DynTensor::zeros(Shape{5}, DType::f64);
  expect_error(mismatched, "fc1.bias.exp_avg: state [5] vs parameter [6]");
  // Another optimizer's state is refused: Adam without amsgrad sees an unexpected key.
  Adam plain;
  EXPECT_THROW(plain.load_state_dict(m, s), Error);
  Sgd sgd({.momentum = 0.9});
  EXPECT_THROW(sgd.load_state_dict(m, s), Error);

  // A good load into f32 parameters casts the state.
  Mlp m32 = make_mlp(DType::f32);
  Adam opt32({.amsgrad = true});
  opt32.load_state_dict(m32, s);
  for (const auto& [k, t] : opt32.state_dict(m32))
    if (k.find(".step") == std::string::npos) {
      EXPECT_EQ(t.dtype(), DType::f32) << k;
    }
}

TEST(Optimizer, BadConfigsAndArguments) {
  EXPECT_THROW(Sgd({.nesterov = true}), Error);
  EXPECT_THROW(Sgd({.momentum = -1}), Error);
  EXPECT_THROW(Adam({.betas = {1.0, 0.999}}), Error);
  EXPECT_THROW(AdamW({.eps = -1}), Error);
  EXPECT_THROW(RmsProp({.alpha = -0.1}), Error);
  EXPECT_THROW(AdaGrad({.lr_decay = -1}), Error);
  EXPECT_THROW(Lamb({.weight_decay = -1}), Error);
  EXPECT_THROW(Lion({.groups = {{"[unclosed", 1, std::nullopt}}}), Error);
  Mlp m = make_mlp(DType::f64);
  const Problem p = data(DType::f64);
  Gradients g = mse(m.forward(p.x), p.y).backward();
  Lion lion;
  EXPECT_THROW(lion.step(m, g, -1.0), Error);
  GradientsParams wrong;
  wrong.set(m.fc1.bias, DynTensor::zeros(Shape{7}, DType::f64, dev()));
  EXPECT_THROW(lion.step(m, wrong, 0.1), Error);
}

// LAMB's trust ratio is 1 when the parameter or the update has norm 0 (by hand, from the paper's
// formula: at step 1, m_hat = g and v_hat = g^2, so u = g / (|g| + eps)).
TEST(Optimizer, LambTrustRatioIsOneWhenANormIsZero) {
  struct One {
    nn::Param w;
    EMBER_MODULE(w)
  };
  const Device cpu = Device::cpu();  // a plain device: updates need no autodiff
  One m{nn::Param(DynTensor::zeros(Shape{3}, DType::f64, cpu))};
  GradientsParams g;
  g.set(m.w, DynTensor::from_vector<double>({0.5, -2.0, 0.0}, Shape{3}, cpu));
  Lamb opt({.eps = 1e-6});
  One next = opt.step(m, g, 0.1);
  std::vector<double> got = values(next.w);
  const std::vector<double> want{-0.1 * 0.5 / (0.5 + 1e-6), 0.1 * 2.0 / (2.0 + 1e-6), 0.0};
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(got[i], want[i], 1e-15) << i;
  // A zero gradient on a fresh parameter: u = 0, so the parameter does not move.
  One n{nn::Param(DynTensor::from_vector<double>({1.0, 2.0}, Shape{2}, cpu))};
  GradientsParams zero;
  zero.set(n.w, DynTensor::zeros(Shape{2}, DType::f64, cpu));
  Lamb fresh;
  EXPECT_EQ(values(fresh.step(n, zero, 0.1).w), (std::vector<double>{1.0, 2.0}));
}

// adam_step_multi (what Adam and AdamW step with): each parameter's update equals the
// single-tensor adam_step's (itself checked against PyTorch above), bit for bit, in one op over
// tensors of different shapes; bad lists are Errors.
TEST(Optimizer, MultiTensorAdamStepEqualsSingleSteps) {
  const Device cpu = Device::cpu();
  AdamAttrs a;
  a.lr = 0.01;
  a.step = 3;
  a.weight_decay = 0.1;
  for (bool decoupled : {false, true}) {
    a.decoupled = decoupled;
    for (DType dt : {DType::f64, DType::f32, DType::bf16}) {
      std::vector<DynTensor> p, g, m, v;
      int seed = 0;
      for (Shape s : {Shape{3, 4}, Shape{5}, Shape{2, 2, 2}}) {
        cpu.seed(uint64_t(++seed));
        p.push_back(DynTensor::normal(s, 0, 1, DType::f32, cpu).cast(dt));
        g.push_back(DynTensor::normal(s, 0, 1, DType::f32, cpu).cast(dt));
        m.push_back(DynTensor::normal(s, 0, 0.1, DType::f32, cpu).cast(dt));
        v.push_back(abs(DynTensor::normal(s, 0, 0.1, DType::f32, cpu)).cast(dt));
      }
      std::vector<AdamUpdate> multi = adam_step_multi(p, g, m, v, a);
      ASSERT_EQ(multi.size(), 3u);
      for (size_t i = 0; i < 3; ++i) {
        AdamUpdate one = adam_step(p[i], g[i], m[i], v[i], a);
        EXPECT_EQ(values(multi[i].param), values(one.param)) << i << " " << dtype_name(dt);
        EXPECT_EQ(values(multi[i].exp_avg), values(one.exp_avg)) << i;
        EXPECT_EQ(values(multi[i].exp_avg_sq), values(one.exp_avg_sq)) << i;
        EXPECT_NE(values(multi[i].param), values(p[i])) << i;  // (it moved)
      }
      EXPECT_THROW((void)adam_step_multi(p, {g[0], g[1]}, m, v, a), Error);
    }
  }
  auto f32 = DynTensor::ones(Shape{2}, DType::f32, cpu), f64 = DynTensor::ones(Shape{2}, DType::f64, cpu);
  try {
    (void)adam_step_multi({f32, f64}, {f32, f64}, {f32, f64}, {f32, f64}, a);
    ADD_FAILURE() << "mixed dtypes in one update";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one dtype"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)adam_step_multi({}, {}, {}, {}, a), Error);
}

// The device-scalar multi-tensor form (what capturable Adam and AdamW step with): each parameter's
// update equals the single-tensor device-scalar adam_step's (checked against PyTorch through
// CapturableAdamMatchesPyTorch), bit for bit, each with its own step count (0, 3 and 7: bias
// corrections of steps 1, 4 and 8), an empty parameter among them; each new count is its step +
// 1, and a count the op holds alone gives its buffer to the new one. Bad lists are Errors.
TEST(Optimizer, MultiTensorDeviceScalarAdamStepEqualsSingleSteps) {
  const Device cpu = Device::cpu();
  AdamAttrs a;
  a.lr = 0.5;  // a group's lr_scale
  a.weight_decay = 0.1;
  const DynTensor lr = DynTensor::full(Shape{}, Scalar(0.02), DType::f32, cpu);
  for (bool decoupled : {false, true}) {
    a.decoupled = decoupled;
    a.maximize = !decoupled;
    for (DType dt : {DType::f64, DType::f32, DType::bf16}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + (decoupled ? " AdamW" : " Adam"));
      std::vector<DynTensor> p, g, m, v, steps;
      int seed = 0;
      const double counts[] = {0, 3, 7, 2};
      for (Shape s : {Shape{3, 4}, Shape{5}, Shape{2, 2, 2}, Shape{0, 3}}) {
        cpu.seed(uint64_t(++seed));
        p.push_back(DynTensor::normal(s, 0, 1, DType::f32, cpu).cast(dt));
        g.push_back(DynTensor::normal(s, 0, 1, DType::f32, cpu).cast(dt));
        m.push_back(DynTensor::normal(s, 0, 0.1, DType::f32, cpu).cast(dt));
        v.push_back(abs(DynTensor::normal(s, 0, 0.1, DType::f32, cpu)).cast(dt));
        steps.push_back(DynTensor::full(Shape{}, Scalar(counts[steps.size()]), DType::f32, cpu));
      }
      std::vector<AdamUpdate> multi = adam_step_multi(p, g, m, v, a, lr, steps);
      ASSERT_EQ(multi.size(), 4u);
      for (size_t i = 0; i < 4; ++i) {
        AdamUpdate one = adam_step(p[i], g[i], m[i], v[i], a, lr, steps[i]);
        ASSERT_EQ(multi[i].param.shape(), p[i].shape()) << i;
        EXPECT_EQ(values(multi[i].param), values(one.param)) << i;
        EXPECT_EQ(values(multi[i].exp_avg), values(one.exp_avg)) << i;
        EXPECT_EQ(values(multi[i].exp_avg_sq), values(one.exp_avg_sq)) << i;
        EXPECT_EQ(multi[i].step.item(), counts[i] + 1) << i;
        EXPECT_EQ(steps[i].item(), counts[i]) << i;  // (held here: not overwritten)
        if (i < 3 && dt != DType::bf16) {
          EXPECT_NE(values(multi[i].param), values(p[i])) << i;  // (it moved)
        }
      }
      // the step counts differ, so the updates do: parameter 1 at step 4 is not parameter 1 at step 1
      AdamUpdate first = adam_step(p[1], g[1], m[1], v[1], a, lr, steps[0]);
      EXPECT_NE(values(first.param), values(multi[1].param));
    }
  }
  // a count held by the op alone becomes the new count in place
  auto one = [&] { return DynTensor::ones(Shape{4}, DType::f32, cpu); };
  std::vector<DynTensor> step;
  step.push_back(DynTensor::from_vector<float>({5.0f}, Shape{}, cpu));
  const void* buffer = cpu.backend().memory_view(step[0].primitive())->data;
  std::vector<AdamUpdate> r = adam_step_multi({one()}, {one()}, {one()}, {one()}, a, lr, std::move(step));
  EXPECT_EQ(r[0].step.item(), 6.0);
  EXPECT_EQ(cpu.backend().memory_view(r[0].step.primitive())->data, buffer);
  auto s0 = DynTensor::zeros(Shape{}, DType::f32, cpu);
  EXPECT_THROW((void)adam_step_multi({one(), one()}, {one(), one()}, {one(), one()}, {one(), one()}, a, lr, {s0}),
               Error);  // one step for two parameters
  try {
    (void)adam_step_multi({one()}, {one()}, {one()}, {one()}, a, lr, {DynTensor::zeros(Shape{1}, DType::f32, cpu)});
    ADD_FAILURE() << "a step that is not 0-d";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step of param 0 must be an f32 0-d tensor"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)adam_step_multi({one()}, {one()}, {one()}, {one()}, a, lr, {s0.cast(DType::f64)}), Error);
  // the host form keeps refusing a step of 0 in its own layout (4 inputs a parameter)
  AdamAttrs h = a;
  h.step = 0;
  EXPECT_THROW((void)adam_step_multi({one()}, {one()}, {one()}, {one()}, h), Error);
}

// Parameters that skipped a step (no gradient) have a lower step count than the others, so one
// Adam step updates them with other bias corrections: the same values as single-tensor updates
// with each parameter's own count, as torch.optim keeps a count per parameter.
TEST(Optimizer, ParametersWithDifferentStepCountsUpdateApart) {
  const Problem pr = data(DType::f64);
  Mlp m = make_mlp(DType::f64);
  AdamW opt({.weight_decay = 0.1});
  // the reference: each parameter's own count and moments, single-tensor updates
  std::map<std::string, std::tuple<int64_t, DynTensor, DynTensor>> ref;
  Mlp r = m;
  AdamAttrs a;
  a.lr = 0.05;
  a.weight_decay = 0.1;
  a.decoupled = true;
  for (int s = 0; s < 4; ++s) {
    GradientsParams g = GradientsParams::from(m, mse(m.forward(pr.x), pr.y).backward());
    GradientsParams gr = GradientsParams::from(r, mse(r.forward(pr.x), pr.y).backward());
    if (s == 1) {  // fc2 gets no gradient in the second step
      g.remove(m.fc2.weight.id());
      g.remove(m.fc2.bias.id());
      gr.remove(r.fc2.weight.id());
      gr.remove(r.fc2.bias.id());
    }
    m = opt.step(std::move(m), g, 0.05);
    nn::for_each_param(r, [&](const std::string& path, nn::Param& p) {
      auto grad = gr.get(p.id());
      if (!grad) return;
      auto& [count, exp_avg, exp_avg_sq] = ref[path];
      if (!exp_avg.defined()) exp_avg = exp_avg_sq = DynTensor::zeros(p.shape(), DType::f64, p.value().device());
      a.step = ++count;
      NoGradGuard no_grad;
      AdamUpdate u = adam_step(p.value().detach(), grad->detach(), exp_avg, exp_avg_sq, a);
      exp_avg = u.exp_avg;
      exp_avg_sq = u.exp_avg_sq;
      p.set(u.param);
    });
    for (size_t i = 0; i < 4; ++i)
      EXPECT_EQ(values(nn::named_parameters(m)[i].second), values(nn::named_parameters(r)[i].second))
          << "step " << s << " " << nn::named_parameters(m)[i].first;
  }
  EXPECT_EQ(std::get<0>(ref["fc2.bias"]), 3);
  EXPECT_EQ(std::get<0>(ref["fc1.bias"]), 4);
}

}  // namespace
}  // namespace ember::optim

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  std::filesystem::path reports = EMBER_REPORTS_DIR;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reports") reports = argv[i + 1];
  auto& t = ember::optim::tally();
  std::filesystem::create_directories(reports);
  std::ofstream(reports / "nn-optimizers.json")
      << nlohmann::json{{"optimizers", t.optimizers.size()}, {"cases", t.cases}, {"failed", t.failed}}.dump(2) << "\n";
  return rc;
}
