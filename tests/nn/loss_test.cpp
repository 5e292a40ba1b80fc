// Losses (src/nn/loss.cpp) and functional ops (src/nn/functional.cpp) against PyTorch: every case
// of cases/losses.json (written by gen_loss_cases.py from torch 1.13 in float64) runs on
// Device::cpu().autodiff() in f64 and f32; the outputs are compared with torch's, then
// L = sum(outputs[0] * upstream) is differentiated and each listed input's gradient is compared
// with torch autograd's. Extra tests cover dropout (random, so checked by its properties) and
// argument errors. Writes <reports>/nn-losses.json: {"losses", "functional", "cases", "runs",
// "failed", "failures"}.
#include "ember/nn/loss.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "ember/ember.hpp"
#include "ember/nn/functional.hpp"

namespace ember::nn {
namespace {

using Json = nlohmann::json;
using Inputs = std::map<std::string, DynTensor>;
using Fn = std::function<std::vector<DynTensor>(const Inputs&, const Json&)>;

// ---- case file ----
const Json& case_file() {
  static const Json j = [] {
    std::ifstream in(std::string(EMBER_NN_TEST_DIR) + "/cases/losses.json");
    EMBER_CHECK(in.good(), "loss_test: cannot open cases/losses.json (run gen_loss_cases.py)");
    return Json::parse(in);
  }();
  return j;
}

double json_number(const Json& v) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::quiet_NaN();
  }
  return v.get<double>();
}

Shape json_shape(const Json& t) { return Shape(t["shape"].get<std::vector<int64_t>>()); }

std::vector<double> json_values(const Json& t) {
  std::vector<double> v;
  for (const auto& x : t["data"]) v.push_back(x.is_boolean() ? double(x.get<bool>()) : json_number(x));
  return v;
}

// A case tensor on `dev`; floating ones in `float_dtype`.
DynTensor make_tensor(const Json& t, DType float_dtype, const Device& dev) {
  const auto dt = t["dtype"].get<std::string>();
  if (dt == "i64") return DynTensor::from_vector(t["data"].get<std::vector<int64_t>>(), json_shape(t), dev);
  if (dt == "bool") return DynTensor::from_vector(t["data"].get<std::vector<bool>>(), json_shape(t), dev);
  return DynTensor::from_vector(json_values(t), json_shape(t), dev).cast(float_dtype);
}

// ---- attributes ----
Reduction reduction(const Json& a) {
  const auto r = a.value("reduction", std::string("mean"));
  return r == "none" ? Reduction::none : r == "sum" ? Reduction::sum : Reduction::mean;
}

std::optional<DynTensor> optional_input(const Inputs& in, const std::string& name) {
  auto it = in.find(name);
  return it == in.end() ? std::nullopt : std::optional<DynTensor>(it->second);
}

InterpMode interp_mode(const std::string& m) {
  if (m == "nearest") return InterpMode::nearest;
  if (m == "linear") return InterpMode::linear;
  return InterpMode::cubic;
}

std::vector<DynTensor> one(DynTensor t) { return {std::move(t)}; }

// ---- the functions under test, by the case files' "fn" names ----
const std::map<std::string, Fn>& registry() {
  static const std::map<std::string, Fn> r = {
      // losses
      {"cross_entropy",
       [](const Inputs& in, const Json& a) {
         return one(cross_entropy(in.at("input"), in.at("target"),
                                  {optional_input(in, "weight"), a.value("ignore_index", int64_t{-100}),
                                   a.value("label_smoothing", 0.0), reduction(a)}));
       }},
      {"nll_loss",
       [](const Inputs& in, const Json& a) {
         return one(nll_loss(in.at("input"), in.at("target"),
                             {optional_input(in, "weight"), a.value("ignore_index", int64_t{-100}), reduction(a)}));
       }},
      {"binary_cross_entropy",
       [](const Inputs& in, const Json& a) {
         return one(binary_cross_entropy(in.at("input"), in.at("target"), optional_input(in, "weight"), reduction(a)));
       }},
      {"binary_cross_entropy_with_logits",
       [](const Inputs& in, const Json& a) {
         return one(binary_cross_entropy_with_logits(
             in.at("input"), in.at("target"),
             {optional_input(in, "weight"), optional_input(in, "pos_weight"), reduction(a)}));
       }},
      {"multi_margin_loss",
       [](const Inputs& in, const Json& a) {
         return one(multi_margin_loss(in.at("input"), in.at("target"), a.value("p", 1), a.value("margin", 1.0),
                                      optional_input(in, "weight"), reduction(a)));
       }},
      {"multilabel_soft_margin_loss",
       [](const Inputs& in, const Json& a) {
         return one(
             multilabel_soft_margin_loss(in.at("input"), in.at("target"), optional_input(in, "weight"), reduction(a)));
       }},
      {"soft_margin_loss",
       [](const Inputs& in, const Json& a) {
         return one(soft_margin_loss(in.at("input"), in.at("target"), reduction(a)));
       }},
      {"mse_loss",
       [](const Inputs& in, const Json& a) { return one(mse_loss(in.at("input"), in.at("target"), reduction(a))); }},
      {"l1_loss",
       [](const Inputs& in, const Json& a) { return one(l1_loss(in.at("input"), in.at("target"), reduction(a))); }},
      {"huber_loss",
       [](const Inputs& in, const Json& a) {
         return one(huber_loss(in.at("input"), in.at("target"), reduction(a), a.value("delta", 1.0)));
       }},
      {"smooth_l1_loss",
       [](const Inputs& in, const Json& a) {
         return one(smooth_l1_loss(in.at("input"), in.at("target"), reduction(a), a.value("beta", 1.0)));
       }},
      {"poisson_nll_loss",
       [](const Inputs& in, const Json& a) {
         PoissonNllOptions o;
         o.log_input = a.value("log_input", true);
         o.full = a.value("full", false);
         o.reduction = reduction(a);
         return one(poisson_nll_loss(in.at("input"), in.at("target"), o));
       }},
      {"gaussian_nll_loss",
       [](const Inputs& in, const Json& a) {
         return one(gaussian_nll_loss(in.at("input"), in.at("target"), in.at("var"), a.value("full", false),
                                      a.value("eps", 1e-6), reduction(a)));
       }},
      {"kl_div",
       [](const Inputs& in, const Json& a) {
         const auto r = a.value("reduction", std::string("mean"));
         KlReduction k = r == "none"        ? KlReduction::none
                         : r == "sum"       ? KlReduction::sum
                         : r == "batchmean" ? KlReduction::batchmean
                                            : KlReduction::mean;
         return one(kl_div(in.at("input"), in.at("target"), k, a.value("log_target", false)));
       }},
      {"cosine_embedding_loss",
       [](const Inputs& in, const Json& a) {
         return one(cosine_embedding_loss(in.at("input1"), in.at("input2"), in.at("target"), a.value("margin", 0.0),
                                          reduction(a)));
       }},
      {"margin_ranking_loss",
       [](const Inputs& in, const Json& a) {
         return one(margin_ranking_loss(in.at("input1"), in.at("input2"), in.at("target"), a.value("margin", 0.0),
                                        reduction(a)));
       }},
      {"hinge_embedding_loss",
       [](const Inputs& in, const Json& a) {
         return one(hinge_embedding_loss(in.at("input"), in.at("target"), a.value("margin", 1.0), reduction(a)));
       }},
      {"triplet_margin_loss",
       [](const Inputs& in, const Json& a) {
         TripletMarginOptions o;
         o.margin = a.value("margin", 1.0);
         o.p = a.value("p", 2.0);
         o.eps = a.value("eps", 1e-6);
         o.swap = a.value("swap", false);
         o.reduction = reduction(a);
         return one(triplet_margin_loss(in.at("anchor"), in.at("positive"), in.at("negative"), o));
       }},
      {"ctc_loss",
       [](const Inputs& in, const Json& a) {
         CtcLossOptions o;
         o.blank = a.value("blank", int64_t{0});
         o.zero_infinity = a.value("zero_infinity", false);
         o.reduction = reduction(a);
         // the case input is logits (see gen_loss_cases.py)
         return one(ctc_loss(log_softmax(in.at("input"), -1), in.at("targets"), in.at("input_lengths"),
                             in.at("target_lengths"), o));
       }},
      // functional
      {"relu6", [](const Inputs& in, const Json&) { return one(relu6(in.at("x"))); }},
      {"elu", [](const Inputs& in, const Json& a) { return one(elu(in.at("x"), a.value("alpha", 1.0))); }},
      {"selu", [](const Inputs& in, const Json&) { return one(selu(in.at("x"))); }},
      {"celu", [](const Inputs& in, const Json& a) { return one(celu(in.at("x"), a.value("alpha", 1.0))); }},
      {"mish", [](const Inputs& in, const Json&) { return one(mish(in.at("x"))); }},
      {"softsign", [](const Inputs& in, const Json&) { return one(softsign(in.at("x"))); }},
      {"hard_swish", [](const Inputs& in, const Json&) { return one(hard_swish(in.at("x"))); }},
      {"hard_sigmoid", [](const Inputs& in, const Json&) { return one(hard_sigmoid(in.at("x"))); }},
      {"hard_tanh",
       [](const Inputs& in, const Json& a) {
         return one(hard_tanh(in.at("x"), a.value("min_val", -1.0), a.value("max_val", 1.0)));
       }},
      {"tanh_shrink", [](const Inputs& in, const Json&) { return one(tanh_shrink(in.at("x"))); }},
      {"soft_shrink",
       [](const Inputs& in, const Json& a) { return one(soft_shrink(in.at("x"), a.value("lambda", 0.5))); }},
      {"hard_shrink",
       [](const Inputs& in, const Json& a) { return one(hard_shrink(in.at("x"), a.value("lambda", 0.5))); }},
      {"gelu",
       [](const Inputs& in, const Json& a) {
         const bool tanh = a.value("approximate", std::string("none")) == "tanh";
         return one(gelu(in.at("x"), tanh ? GeluApproximation::tanh : GeluApproximation::none));
       }},
      {"glu", [](const Inputs& in, const Json& a) { return one(glu(in.at("x"), a.value("dim", -1))); }},
      {"swiglu", [](const Inputs& in, const Json& a) { return one(swiglu(in.at("x"), a.value("dim", -1))); }},
      {"group_norm",
       [](const Inputs& in, const Json& a) {
         return one(group_norm(in.at("x"), a.at("groups").get<int64_t>(), optional_input(in, "weight"),
                               optional_input(in, "bias"), a.value("eps", 1e-5)));
       }},
      {"instance_norm",
       [](const Inputs& in, const Json& a) {
         return one(
             instance_norm(in.at("x"), optional_input(in, "weight"), optional_input(in, "bias"), a.value("eps", 1e-5)));
       }},
      {"rms_norm",
       [](const Inputs& in, const Json& a) {
         std::optional<double> eps;
         if (a.contains("eps")) eps = a.at("eps").get<double>();
         return one(rms_norm(in.at("x"), a.at("normalized_shape").get<Sizes>(), optional_input(in, "weight"), eps));
       }},
      {"batch_norm_train",
       [](const Inputs& in, const Json& a) {
         auto r = batch_norm_train(in.at("x"), optional_input(in, "weight"), optional_input(in, "bias"),
                                   a.value("eps", 1e-5));
         return std::vector<DynTensor>{r.y, r.mean, r.var};
       }},
      {"pixel_shuffle",
       [](const Inputs& in, const Json& a) { return one(pixel_shuffle(in.at("x"), a.at("factor").get<int64_t>())); }},
      {"pixel_unshuffle",
       [](const Inputs& in, const Json& a) { return one(pixel_unshuffle(in.at("x"), a.at("factor").get<int64_t>())); }},
      {"upsample",
       [](const Inputs& in, const Json& a) {
         const InterpMode mode = interp_mode(a.at("mode").get<std::string>());
         const bool align = a.value("align_corners", false);
         if (a.contains("scale_factor"))
           return one(upsample(in.at("x"), a.at("scale_factor").get<double>(), mode, align));
         return one(upsample(in.at("x"), a.at("size").get<Sizes>(), mode, align));
       }},
      {"normalize", [](const Inputs& in,
                       const Json& a) { return one(normalize(in.at("x"), a.value("p", 2.0), a.value("dim", 1))); }},
      {"linear", [](const Inputs& in,
                    const Json&) { return one(linear(in.at("x"), in.at("weight"), optional_input(in, "bias"))); }},
      {"bilinear",
       [](const Inputs& in, const Json&) {
         return one(bilinear(in.at("x1"), in.at("x2"), in.at("weight"), optional_input(in, "bias")));
       }},
  };
  return r;
}

// ---- comparison ----
struct Tolerance {
  double atol, rtol;
};
Tolerance tolerance(DType dt) { return dt == DType::f64 ? Tolerance{1e-12, 1e-10} : Tolerance{1e-5, 1e-4}; }

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// The largest error / tolerance ratio seen per dtype, and where: the headroom of the passing cases.
struct Worst {
  double ratio = 0;
  std::string where;
  void update(double r, const std::string& w) {
    if (r > ratio) ratio = r, where = w;
  }
};
Worst& worst(DType dt) {
  static Worst f64, f32;
  return dt == DType::f64 ? f64 : f32;
}

// An empty string when `actual` matches the case tensor `expected`; else what differs.
std::string compare(const DynTensor& actual, const Json& expected, DType dt, const std::string& what,
                    const std::string& where) {
  if (actual.shape() != json_shape(expected))
    return what + ": shape " + actual.shape().str() + ", expected " + json_shape(expected).str();
  const auto got = actual.cast(DType::f64).to_vector<double>();
  const auto want = json_values(expected);
  double scale = 1;
  for (double w : want)
    if (std::isfinite(w)) scale = std::max(scale, std::abs(w));
  const Tolerance tol = tolerance(dt);
  for (size_t i = 0; i < want.size(); ++i) {
    const double a = got[i], b = want[i];
    const bool same_special = (std::isnan(a) && std::isnan(b)) || (std::isinf(b) && a == b);
    if (same_special) continue;
    worst(dt).update(std::abs(a - b) / (tol.atol * scale + tol.rtol * std::abs(b)), where);
    if (!std::isfinite(b) || !(std::abs(a - b) <= tol.atol * scale + tol.rtol * std::abs(b)))
      return what + "[" + std::to_string(i) + "]: " + fmt(a) + ", expected " + fmt(b);
  }
  return "";
}

// ---- per-case record for the report ----
struct Record {
  std::set<std::string> losses, functional;
  std::set<std::string> cases;
  int runs = 0;
  std::vector<std::string> failures;
};
Record& record() {
  static Record r;
  return r;
}

struct CaseParam {
  size_t index;
  DType dtype;
};

class NnCase : public ::testing::TestWithParam<CaseParam> {};

TEST_P(NnCase, MatchesTorch) {
  const Json& c = case_file()["cases"][GetParam().index];
  const DType dt = GetParam().dtype;
  const auto name = c["name"].get<std::string>();
  const auto fn = c["fn"].get<std::string>();
  Record& rec = record();
  rec.cases.insert(name);
  (c["kind"] == "loss" ? rec.losses : rec.functional).insert(fn);
  ++rec.runs;
  const Device dev = Device::cpu().autodiff();
  std::set<std::string> grad_names;
  for (const auto& g : c["grad"]) grad_names.insert(g.get<std::string>());

  std::vector<std::string> problems;
  try {
    Inputs in;
    for (const auto& [k, t] : c["inputs"].items()) {
      DynTensor x = make_tensor(t, dt, dev);
      in[k] = grad_names.count(k) ? x.require_grad() : x;
    }
    auto it = registry().find(fn);
    ASSERT_NE(it, registry().end()) << "no runner for " << fn;
    std::vector<DynTensor> outs = it->second(in, c["attrs"]);
    ASSERT_EQ(outs.size(), c["outputs"].size());
    for (size_t i = 0; i < outs.size(); ++i) {
      EXPECT_EQ(outs[i].dtype(), dt) << "output " << i;
      auto p = compare(outs[i], c["outputs"][i], dt, "output " + std::to_string(i), name);
      if (!p.empty()) problems.push_back(p);
    }
    if (!grad_names.empty()) {
      DynTensor upstream = make_tensor(c["upstream"], dt, dev);
      Gradients grads = sum(outs[0] * upstream).backward();
      for (const auto& g : grad_names) {
        auto got = in.at(g).grad(grads);
        if (!got) {
          problems.push_back("no gradient for " + g);
          continue;
        }
        auto p = compare(*got, c["grads"][g], dt, "grad " + g, name);
        if (!p.empty()) problems.push_back(p);
      }
    }
  } catch (const std::exception& e) {
    problems.push_back(std::string("threw: ") + e.what());
  }
  if (!problems.empty()) rec.failures.push_back(name + " [" + std::string(dtype_name(dt)) + "]");
  for (const auto& p : problems) ADD_FAILURE() << name << " (" << dtype_name(dt) << "): " << p;
}

std::vector<CaseParam> all_params() {
  std::vector<CaseParam> ps;
  const size_t n = case_file()["cases"].size();
  for (DType dt : {DType::f64, DType::f32})
    for (size_t i = 0; i < n; ++i) ps.push_back({i, dt});
  return ps;
}

std::string param_name(const ::testing::TestParamInfo<CaseParam>& info) {
  std::string s = case_file()["cases"][info.param.index]["name"].get<std::string>();
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s + "_" + std::string(dtype_name(info.param.dtype));
}

INSTANTIATE_TEST_SUITE_P(Torch, NnCase, ::testing::ValuesIn(all_params()), param_name);

// ---- dropout: random, so checked by its properties ----
TEST(Dropout, IdentityOutsideTrainingOrAtZero) {
  auto x = DynTensor::normal({4, 5}, 0, 1, DType::f32, Device::cpu());
  EXPECT_EQ(dropout(x, 0.5, false).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(dropout(x, 0.0, true).to_vector<float>(), x.to_vector<float>());
  for (float v : dropout(x, 1.0, true).to_vector<float>()) EXPECT_EQ(v, 0.0f);
  EXPECT_THROW(dropout(x, 1.5), Error);
}

TEST(Dropout, KeepsScaledElementsAndDifferentiates) {
  const Device dev = Device::cpu().autodiff();
  dev.seed(7);
  const double p = 0.3;
  auto x = (DynTensor::uniform({200, 50}, 1, 2, DType::f64, dev)).require_grad();
  DynTensor y = dropout(x, p, true);
  Gradients g = sum(y).backward();
  const auto xs = x.to_vector<double>(), ys = y.to_vector<double>(), gs = x.grad(g)->to_vector<double>();
  size_t kept = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (ys[i] == 0) {
      EXPECT_EQ(gs[i], 0);
    } else {
      ++kept;
      EXPECT_NEAR(ys[i], xs[i] / (1 - p), 1e-12);
      EXPECT_NEAR(gs[i], 1 / (1 - p), 1e-12);
    }
  }
  const double frac = double(kept) / double(xs.size());
  EXPECT_NEAR(frac, 1 - p, 0.03);  // 10000 Bernoulli draws: sd ~0.005
  // the same seed gives the same mask
  dev.seed(7);
  auto x2 = DynTensor::uniform({200, 50}, 1, 2, DType::f64, dev);
  EXPECT_EQ(dropout(x2, p, true).to_vector<double>(), ys);
  if (!HasFailure()) record().functional.insert("dropout");
}

// ---- argument errors name the function ----
void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(LossErrors, BadArguments) {
  auto logits = DynTensor::zeros({3, 4}, DType::f32);
  auto i64 = [](std::vector<int64_t> v) {
    const auto n = static_cast<int64_t>(v.size());
    return DynTensor::from_vector(v, Shape{n});
  };
  expect_error([&] { cross_entropy(logits, i64({0, 4, 1})); }, "cross_entropy");
  expect_error([&] { nll_loss(logits, i64({0, 1})); }, "nll_loss");
  expect_error([&] { cross_entropy(logits, i64({0, 1, 2}), {.weight = DynTensor::ones({3})}); }, "weight");
  expect_error([&] { cross_entropy(logits, DynTensor::zeros({3, 5})); }, "probability targets");
  expect_error([&] { mse_loss(logits, DynTensor::zeros({2, 4})); }, "mse_loss");
  expect_error([&] { binary_cross_entropy(logits, DynTensor::zeros({4, 3})); }, "binary_cross_entropy");
  expect_error([&] { gaussian_nll_loss(logits, logits, DynTensor::ones({3, 2})); }, "gaussian_nll_loss");
  expect_error([&] { gaussian_nll_loss(logits, logits, -DynTensor::ones({3, 4})); }, "negative");
  auto lp = DynTensor::zeros({5, 2, 4}, DType::f32);
  expect_error([&] { ctc_loss(lp, DynTensor::ones({2, 3}, DType::i64), {5, 6}, {3, 3}); }, "input length");
  expect_error([&] { ctc_loss(lp, DynTensor::ones({2, 3}, DType::i64), {5, 5}, {3, 4}); }, "padded targets");
  expect_error([&] { ctc_loss(lp, DynTensor::full({2, 3}, 7, DType::i64), {5, 5}, {3, 3}); }, "label 7");
  expect_error([&] { multi_margin_loss(logits, i64({0, 1, 9})); }, "multi_margin_loss");
}

// Element-wise losses refuse an input and a target whose shapes differ, even where they broadcast:
// PyTorch 1.13 warns and returns a [4, 4] loss for mse_loss([4, 1], [4]) with reduction none (and
// its mean), a silent wrong answer. Each loss names itself and both shapes.
TEST(LossErrors, ShapesThatOnlyBroadcastAreRefused) {
  using Loss = std::function<DynTensor(DynTensor, DynTensor, Reduction)>;
  const std::vector<std::pair<std::string, Loss>> losses = {
      {"mse_loss", [](DynTensor a, DynTensor b, Reduction r) { return mse_loss(a, b, r); }},
      {"l1_loss", [](DynTensor a, DynTensor b, Reduction r) { return l1_loss(a, b, r); }},
      {"huber_loss", [](DynTensor a, DynTensor b, Reduction r) { return huber_loss(a, b, r); }},
      {"smooth_l1_loss", [](DynTensor a, DynTensor b, Reduction r) { return smooth_l1_loss(a, b, r); }},
      {"binary_cross_entropy", [](DynTensor a, DynTensor b, Reduction r) { return binary_cross_entropy(a, b, {}, r); }},
      {"binary_cross_entropy_with_logits",
       [](DynTensor a, DynTensor b, Reduction r) {
         BceWithLogitsOptions o;
         o.reduction = r;
         return binary_cross_entropy_with_logits(a, b, o);
       }},
      {"soft_margin_loss", [](DynTensor a, DynTensor b, Reduction r) { return soft_margin_loss(a, b, r); }},
      {"multilabel_soft_margin_loss",
       [](DynTensor a, DynTensor b, Reduction r) { return multilabel_soft_margin_loss(a, b, {}, r); }},
      {"poisson_nll_loss",
       [](DynTensor a, DynTensor b, Reduction r) {
         PoissonNllOptions o;
         o.reduction = r;
         return poisson_nll_loss(a, b, o);
       }},
      {"gaussian_nll_loss",
       [](DynTensor a, DynTensor b, Reduction r) {
         return gaussian_nll_loss(a, b, DynTensor::ones(a.shape()), false, 1e-6, r);
       }},
      {"kl_div",
       [](DynTensor a, DynTensor b, Reduction r) {
         return kl_div(a, b, r == Reduction::none ? KlReduction::none : KlReduction::mean);
       }},
      {"hinge_embedding_loss",
       [](DynTensor a, DynTensor b, Reduction r) { return hinge_embedding_loss(a, b, 1.0, r); }},
      {"margin_ranking_loss (input2)",
       [](DynTensor a, DynTensor b, Reduction r) { return margin_ranking_loss(a, b, a, 0, r); }},
      {"margin_ranking_loss (target)",
       [](DynTensor a, DynTensor b, Reduction r) { return margin_ranking_loss(a, a, b, 0, r); }},
  };
  const auto column = DynTensor::full({4, 1}, 0.5, DType::f32);
  const auto row = DynTensor::full({4}, 0.5, DType::f32);
  for (const auto& [name, loss] : losses) {
    const std::string op = name.substr(0, name.find(' '));
    for (Reduction r : {Reduction::mean, Reduction::none}) {
      for (const auto& [a, b] : {std::pair{column, row}, std::pair{row, column}}) {
        try {
          const DynTensor l = loss(a, b, r);
          ADD_FAILURE() << name << ": " << a.shape() << " vs " << b.shape() << " gave a loss of shape " << l.shape();
        } catch (const Error& e) {
          const std::string m = e.what();
          EXPECT_EQ(m.rfind(op + ": ", 0), 0u) << m;
          EXPECT_NE(m.find(a.shape().str()), std::string::npos) << m;
          EXPECT_NE(m.find(b.shape().str()), std::string::npos) << m;
        }
      }
    }
    // The same shape still works, with the input's shape under Reduction::none.
    const Shape per_element = op == "multilabel_soft_margin_loss" ? Shape{4} : column.shape();  // mean over classes
    EXPECT_EQ(loss(column, column, Reduction::none).shape(), per_element) << name;
    EXPECT_EQ(loss(row, row, Reduction::mean).shape(), Shape{}) << name;
  }
  // Values of the same-shape case, from the formulas: d = 1 everywhere.
  const auto zeros = DynTensor::zeros({4, 1}, DType::f64), ones = DynTensor::ones({4, 1}, DType::f64);
  EXPECT_DOUBLE_EQ(mse_loss(zeros, ones).item(), 1.0);
  EXPECT_DOUBLE_EQ(l1_loss(zeros, ones, Reduction::sum).item(), 4.0);
  EXPECT_DOUBLE_EQ(huber_loss(zeros, ones * 2.0).item(), 1.5);        // |d| - delta / 2
  EXPECT_DOUBLE_EQ(smooth_l1_loss(zeros, ones * 0.5).item(), 0.125);  // d^2 / (2 beta)

  // Element weights broadcast to the input and may not enlarge it.
  expect_error([&] { binary_cross_entropy(row, row, DynTensor::ones({4, 1})); }, "weight [4, 1]");
  BceWithLogitsOptions pos;
  pos.pos_weight = DynTensor::ones({2, 4});
  expect_error([&] { binary_cross_entropy_with_logits(row, row, pos); }, "pos_weight [2, 4]");
  EXPECT_EQ(binary_cross_entropy(column, column, DynTensor::ones({1})).shape(), Shape{});
  // Targets of other shapes than PyTorch's rules allow.
  expect_error(
      [&] {
        cosine_embedding_loss(DynTensor::ones({4, 3}), DynTensor::ones({4, 3}), DynTensor::ones({1}));
      },
      "cosine_embedding_loss: inputs [4, 3] need a target of shape [4], got [1]");
  expect_error(
      [&] {
        triplet_margin_loss(DynTensor::ones({4, 3}), DynTensor::ones({1, 3}), DynTensor::ones({4, 3}));
      },
      "positive [1, 3]");
  expect_error([&] { gaussian_nll_loss(zeros, DynTensor::ones({4}), ones); }, "target [4]");
  EXPECT_EQ(gaussian_nll_loss(DynTensor::zeros({4, 3}), DynTensor::ones({4, 1}), DynTensor::ones({4, 3}), false, 1e-6,
                              Reduction::none)
                .shape(),
            (Shape{4, 3}));  // one dim of 1: allowed
  // Class-index targets: [N, C] logits take [N] targets.
  const auto logits = DynTensor::zeros({4, 3}, DType::f32);
  for (const auto& t : {DynTensor::zeros({3}, DType::i64), DynTensor::zeros({4, 1}, DType::i64)}) {
    expect_error([&] { cross_entropy(logits, t); },
                 "cross_entropy: input [4, 3] needs a target of shape [4], got " + t.shape().str());
    expect_error([&] { nll_loss(logits, t); }, "nll_loss: input [4, 3]");
  }
  expect_error([&] { cross_entropy(logits, DynTensor::zeros({1, 3})); }, "probability targets [1, 3]");
  CrossEntropyOptions per_sample;
  per_sample.reduction = Reduction::none;
  EXPECT_EQ(cross_entropy(logits, DynTensor::zeros({4}, DType::i64), per_sample).shape(), Shape{4});
}

TEST(FunctionalErrors, BadArguments) {
  auto x = DynTensor::zeros({2, 6, 3, 3}, DType::f32);
  expect_error([&] { glu(DynTensor::zeros({3, 5}), -1); }, "glu");
  expect_error([&] { group_norm(x, 4); }, "group_norm");
  expect_error([&] { pixel_shuffle(x, 2); }, "pixel_shuffle");
  expect_error([&] { pixel_unshuffle(x, 2); }, "pixel_unshuffle");
  expect_error([&] { linear(x, DynTensor::zeros({4, 5})); }, "linear");
  expect_error([&] { rms_norm(x, {4}); }, "rms_norm");
  expect_error([&] { batch_norm_train(DynTensor::zeros({1, 3})); }, "more than 1 value");
}

// Probabilities of exactly 0 and 1: the logs clamp at -100 and the gradient stays finite.
TEST(BinaryCrossEntropy, FiniteGradientAtZeroAndOne) {
  const Device dev = Device::cpu().autodiff();
  for (DType dt : {DType::f32, DType::f64}) {
    auto p = DynTensor::from_vector<double>({0, 1, 0, 1, 0.5}, Shape{5}, dev).cast(dt).require_grad();
    auto t = DynTensor::from_vector<double>({0, 1, 1, 0, 0.5}, Shape{5}, dev).cast(dt);
    DynTensor l = binary_cross_entropy(p, t, std::nullopt, Reduction::none);
    const auto v = l.cast(DType::f64).to_vector<double>();
    EXPECT_EQ(v[0], 0);
    EXPECT_EQ(v[1], 0);
    EXPECT_EQ(v[2], 100);
    EXPECT_EQ(v[3], 100);
    for (double g : p.grad(sum(l).backward())->cast(DType::f64).to_vector<double>()) EXPECT_TRUE(std::isfinite(g));
  }
}

// A label whose probability is 0 at every step (log-prob -inf) makes the sample infeasible: its
// loss is inf, or 0 with zero_infinity, and no NaN reaches the gradient.
TEST(Ctc, ZeroProbabilityLabel) {
  const Device dev = Device::cpu().autodiff();
  const double ninf = -std::numeric_limits<double>::infinity();
  // T = 3, N = 2, C = 3; class 2 is impossible for both samples; sample 0 needs it.
  std::vector<double> v;
  for (int i = 0; i < 6; ++i) v.insert(v.end(), {std::log(0.5), std::log(0.5), ninf});
  auto lp = DynTensor::from_vector(v, Shape{3, 2, 3}, dev).require_grad();
  auto targets = DynTensor::from_vector<int64_t>({2, 1}, Shape{2, 1}, dev);
  auto none =
      ctc_loss(lp, targets, std::vector<int64_t>{3, 3}, std::vector<int64_t>{1, 1}, {.reduction = Reduction::none});
  const auto l = none.to_vector<double>();
  EXPECT_TRUE(std::isinf(l[0]) && l[0] > 0);
  // sample 1: the alignments of "1" are the 6 of the 8 sequences over {blank, 1} (p = 1/2 each)
  // whose 1s are contiguous, so the loss is -log(6/8)
  EXPECT_NEAR(l[1], -std::log(6.0 / 8.0), 1e-12);
  auto zeroed = ctc_loss(lp, targets, std::vector<int64_t>{3, 3}, std::vector<int64_t>{1, 1},
                         {.reduction = Reduction::sum, .zero_infinity = true});
  EXPECT_NEAR(zeroed.item(), -std::log(6.0 / 8.0), 1e-12);
  for (double g : lp.grad(zeroed.backward())->to_vector<double>()) EXPECT_TRUE(std::isfinite(g));
}

// The same loss on a plain device (no autodiff) and with lengths given as std::vector.
TEST(Ctc, PlainDeviceAndVectorLengthsAgree) {
  const Device dev = Device::cpu();
  dev.seed(3);
  auto lp = log_softmax(DynTensor::normal({6, 2, 4}, 0, 1, DType::f64, dev), -1);
  auto targets = DynTensor::from_vector<int64_t>({1, 2, 3, 1, 0, 0}, Shape{2, 3}, dev);
  auto a = ctc_loss(lp, targets, DynTensor::from_vector<int64_t>({6, 5}, Shape{2}, dev),
                    DynTensor::from_vector<int64_t>({3, 1}, Shape{2}, dev), {.reduction = Reduction::none});
  auto b =
      ctc_loss(lp, targets, std::vector<int64_t>{6, 5}, std::vector<int64_t>{3, 1}, {.reduction = Reduction::none});
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
  // A one-label target over one step: -log p(label).
  auto single =
      ctc_loss(reshape(select(lp, 0, 0), {1, 2, 4}), DynTensor::from_vector<int64_t>({2, 1}, Shape{2, 1}, dev),
               std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, {.reduction = Reduction::none});
  const auto l = single.to_vector<double>();
  const auto p = lp.to_vector<double>();
  EXPECT_NEAR(l[0], -p[2], 1e-12);
  EXPECT_NEAR(l[1], -p[4 + 1], 1e-12);
}

}  // namespace
}  // namespace ember::nn

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string reports = EMBER_NN_REPORTS_DIR;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reports") reports = argv[i + 1];
  const int rc = RUN_ALL_TESTS();
  const auto& r = ember::nn::record();
  if (r.runs > 0) {  // only a run of the case suite writes the report (not a filtered run of others)
    nlohmann::json j = {{"losses", r.losses.size()},
                        {"functional", r.functional.size()},  // dropout counts when its property tests pass
                        {"cases", r.cases.size()},
                        {"runs", r.runs},
                        {"failed", r.failures.size()},
                        {"loss_names", r.losses},
                        {"functional_names", r.functional},
                        {"failures", r.failures}};
    for (auto [dt, key] : {std::pair{ember::DType::f64, "worst_f64"}, std::pair{ember::DType::f32, "worst_f32"}}) {
      const auto& w = ember::nn::worst(dt);
      j[key] = {{"error_over_tolerance", w.ratio}, {"case", w.where}};
    }
    std::filesystem::create_directories(reports);
    std::ofstream(reports + "/nn-losses.json") << j.dump(2) << "\n";
  }
  return rc;
}
