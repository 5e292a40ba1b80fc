// The layer registry: PyTorch module name -> ember layer built from the case's config.
#include "layer_registry.hpp"

#include "ember/core/error.hpp"
#include "ember/nn/attention.hpp"
#include "ember/nn/feedforward.hpp"
#include "ember/nn/layers.hpp"
#include "ember/nn/positional.hpp"
#include "ember/nn/rnn.hpp"
#include "ember/nn/transformer.hpp"

namespace ember::nn_conformance {
namespace {

// ---- reading a config (PyTorch argument names and defaults) ----
int64_t get_int(const Json& c, const char* key, int64_t def) { return c.contains(key) ? c[key].get<int64_t>() : def; }
int get_dim(const Json& c, const char* key, int def) { return static_cast<int>(get_int(c, key, def)); }
double get_double(const Json& c, const char* key, double def) { return c.contains(key) ? c[key].get<double>() : def; }
bool get_bool(const Json& c, const char* key, bool def) { return c.contains(key) ? c[key].get<bool>() : def; }
std::string get_string(const Json& c, const char* key, const std::string& def) {
  return c.contains(key) ? c[key].get<std::string>() : def;
}
template <class T>
std::optional<T> get_opt(const Json& c, const char* key) {
  if (!c.contains(key) || c[key].is_null()) return std::nullopt;
  return c[key].get<T>();
}
// An int or a list of ints (PyTorch's _single/_pair/_triple); `def` when absent. ember's size
// options take one value for every dim or one per dim, so a single int stays one value.
Sizes get_sizes(const Json& c, const char* key, Sizes def) {
  if (!c.contains(key) || c[key].is_null()) return def;
  if (c[key].is_number()) return Sizes{c[key].get<int64_t>()};
  return c[key].get<Sizes>();
}
std::vector<double> get_doubles(const Json& c, const char* key) {
  if (!c.contains(key) || c[key].is_null()) return {};
  if (c[key].is_number()) return {c[key].get<double>()};
  return c[key].get<std::vector<double>>();
}
void reject_unknown(const Json& c, std::initializer_list<const char*> known) {
  for (const auto& [k, v] : c.items()) {
    bool ok = false;
    for (const char* n : known) ok = ok || k == n;
    EMBER_CHECK(ok, "layer conformance: config option '", k, "' has no ember equivalent in this registry entry");
  }
}

std::optional<DynTensor> opt_input(const Tensors& in, size_t i) {
  return i < in.size() ? std::optional<DynTensor>(in[i]) : std::nullopt;
}

// ---- entries: a builder for the test, and the same layer pushed into a Sequential ----
using MakeFn = std::function<BuiltLayer(const Json&, const Json&, const Device&)>;
using PushFn = std::function<void(nn::Sequential&, const Json&, const Device&)>;
struct Entry {
  MakeFn make;
  PushFn push;  // empty: the layer cannot sit in a Sequential (several inputs or outputs)
};

// A layer with one input and one output, made by make(config, device).
template <class F>
Entry unary(F make) {
  return {[make](const Json& c, const Json&, const Device& d) {
            auto m = make(c, d);
            using M = decltype(m);
            return wrap(std::move(m), [](M& l, const Tensors& in) { return Tensors{l.forward(in.at(0))}; });
          },
          [make](nn::Sequential& s, const Json& c, const Device& d) { s.push(make(c, d)); }};
}
// A parameterless layer that is its own config.
template <class M>
Entry plain(std::function<M(const Json&)> make) {
  return unary([make](const Json& c, const Device& d) { return make(c).init(d); });
}
Entry multi(MakeFn make) { return {std::move(make), {}}; }

// ---- per-family config readers ----
template <int N>
nn::ConvConfig<N> conv_config(const Json& c) {
  reject_unknown(c, {"in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias",
                     "padding_mode"});
  nn::ConvConfig<N> k;
  k.in_channels = get_int(c, "in_channels", 0);
  k.out_channels = get_int(c, "out_channels", 0);
  k.kernel_size = get_sizes(c, "kernel_size", {});
  k.stride = get_sizes(c, "stride", {1});
  if (c.contains("padding") && c["padding"].is_string()) {
    std::string p = c["padding"].get<std::string>();
    k.padding_same = p == "same";
    k.padding = {0};
  } else {
    k.padding = get_sizes(c, "padding", {0});
  }
  k.dilation = get_sizes(c, "dilation", {1});
  k.groups = get_int(c, "groups", 1);
  k.bias = get_bool(c, "bias", true);
  std::string mode = get_string(c, "padding_mode", "zeros");
  k.padding_mode = mode == "reflect"     ? nn::ConvPaddingMode::reflect
                   : mode == "replicate" ? nn::ConvPaddingMode::replicate
                   : mode == "circular"  ? nn::ConvPaddingMode::circular
                                         : nn::ConvPaddingMode::zeros;
  return k;
}
template <int N>
Entry conv_transpose_entry() {
  auto make = [](const Json& c, const Device& d) {
    reject_unknown(c, {"in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding", "groups",
                       "bias", "dilation"});
    nn::ConvTransposeConfig<N> k;
    k.in_channels = get_int(c, "in_channels", 0);
    k.out_channels = get_int(c, "out_channels", 0);
    k.kernel_size = get_sizes(c, "kernel_size", {});
    k.stride = get_sizes(c, "stride", {1});
    k.padding = get_sizes(c, "padding", {0});
    k.output_padding = get_sizes(c, "output_padding", {0});
    k.groups = get_int(c, "groups", 1);
    k.bias = get_bool(c, "bias", true);
    k.dilation = get_sizes(c, "dilation", {1});
    return k.init(d);
  };
  Entry e = unary(make);
  e.make = [make](const Json& c, const Json& call, const Device& d) {
    Sizes output_size = get_sizes(call, "output_size", {});
    return wrap(make(c, d), [output_size](nn::ConvTranspose<N>& l, const Tensors& in) {
      return Tensors{output_size.empty() ? l.forward(in.at(0)) : l.forward(in.at(0), output_size)};
    });
  };
  return e;
}
template <int N>
Entry max_pool_entry() {
  auto make = [](const Json& c, const Device& d) {
    reject_unknown(c, {"kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"});
    nn::MaxPool<N> k;
    k.kernel_size = get_sizes(c, "kernel_size", {});
    k.stride = get_sizes(c, "stride", {});
    k.padding = get_sizes(c, "padding", {0});
    k.dilation = get_sizes(c, "dilation", {1});
    k.ceil_mode = get_bool(c, "ceil_mode", false);
    return k.init(d);
  };
  Entry e = unary(make);
  e.make = [make](const Json& c, const Json&, const Device& d) {
    bool indices = get_bool(c, "return_indices", false);
    return wrap(make(c, d), [indices](nn::MaxPool<N>& l, const Tensors& in) {
      if (!indices) return Tensors{l.forward(in.at(0))};
      auto [v, i] = l.forward_with_indices(in.at(0));
      return Tensors{v, i};
    });
  };
  return e;
}
template <int N>
Entry avg_pool_entry() {
  return unary([](const Json& c, const Device& d) {
    reject_unknown(c, {"kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"});
    nn::AvgPool<N> k;
    k.kernel_size = get_sizes(c, "kernel_size", {});
    k.stride = get_sizes(c, "stride", {});
    k.padding = get_sizes(c, "padding", {0});
    k.ceil_mode = get_bool(c, "ceil_mode", false);
    k.count_include_pad = get_bool(c, "count_include_pad", true);
    return k.init(d);
  });
}
template <int N>
Entry batch_norm_entry() {
  return unary([](const Json& c, const Device& d) {
    reject_unknown(c, {"num_features", "eps", "momentum", "affine", "track_running_stats"});
    nn::BatchNormConfig<N> k;
    k.num_features = get_int(c, "num_features", 0);
    k.eps = get_double(c, "eps", 1e-5);
    k.momentum = c.contains("momentum") ? get_opt<double>(c, "momentum") : std::optional<double>(0.1);
    k.affine = get_bool(c, "affine", true);
    k.track_running_stats = get_bool(c, "track_running_stats", true);
    return k.init(d);
  });
}
template <int N>
Entry instance_norm_entry() {
  return unary([](const Json& c, const Device& d) {
    reject_unknown(c, {"num_features", "eps", "momentum", "affine", "track_running_stats"});
    nn::InstanceNormConfig<N> k;
    k.num_features = get_int(c, "num_features", 0);
    k.eps = get_double(c, "eps", 1e-5);
    k.momentum = get_double(c, "momentum", 0.1);
    k.affine = get_bool(c, "affine", false);
    k.track_running_stats = get_bool(c, "track_running_stats", false);
    return k.init(d);
  });
}

template <class Cfg>
Cfg recurrent_config(const Json& c) {
  reject_unknown(c, {"input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional",
                     "nonlinearity"});
  Cfg k;
  k.input_size = get_int(c, "input_size", 0);
  k.hidden_size = get_int(c, "hidden_size", 0);
  k.num_layers = get_int(c, "num_layers", 1);
  k.bias = get_bool(c, "bias", true);
  k.batch_first = get_bool(c, "batch_first", false);
  k.dropout = get_double(c, "dropout", 0);
  k.bidirectional = get_bool(c, "bidirectional", false);
  return k;
}

nn::FeedForwardActivation ff_activation(const Json& c, const char* def) {
  std::string a = get_string(c, "activation", def);
  if (a == "relu") return nn::FeedForwardActivation::relu;
  if (a == "gelu") return nn::FeedForwardActivation::gelu;
  if (a == "gelu_tanh") return nn::FeedForwardActivation::gelu_tanh;
  if (a == "silu") return nn::FeedForwardActivation::silu;
  EMBER_FAIL("layer conformance: unknown activation '", a, "'");
}

template <class Cfg>
Cfg transformer_layer_config(const Json& c) {
  reject_unknown(c, {"d_model", "nhead", "dim_feedforward", "dropout", "activation", "layer_norm_eps", "batch_first",
                     "norm_first", "bias"});
  Cfg k;
  k.d_model = get_int(c, "d_model", 0);
  k.nhead = get_int(c, "nhead", 1);
  k.dim_feedforward = get_int(c, "dim_feedforward", 2048);
  k.dropout = get_double(c, "dropout", 0.1);
  k.activation = ff_activation(c, "relu");
  k.layer_norm_eps = get_double(c, "layer_norm_eps", 1e-5);
  k.batch_first = get_bool(c, "batch_first", false);
  k.norm_first = get_bool(c, "norm_first", false);
  k.bias = get_bool(c, "bias", true);
  return k;
}

// Masks: the inputs after the first `n_data`, named (PyTorch's argument names) by call["masks"].
struct NamedMasks {
  std::map<std::string, DynTensor> by_name;
  std::optional<DynTensor> get(const std::string& n) const {
    auto it = by_name.find(n);
    return it == by_name.end() ? std::nullopt : std::optional<DynTensor>(it->second);
  }
};
NamedMasks masks_of(const Json& call, const Tensors& in, size_t n_data) {
  NamedMasks m;
  if (!call.contains("masks")) return m;
  size_t i = n_data;
  for (const auto& n : call["masks"]) m.by_name[n.get<std::string>()] = in.at(i++);
  return m;
}

std::map<std::string, Entry> make_entries();

const std::map<std::string, Entry>& entries() {
  static const std::map<std::string, Entry> table = make_entries();
  return table;
}

std::map<std::string, Entry> make_entries() {
  std::map<std::string, Entry> t;
  // ---- dense ----
  t["Linear"] = unary([](const Json& c, const Device& d) {
    reject_unknown(c, {"in_features", "out_features", "bias"});
    return nn::LinearConfig{.in_features = get_int(c, "in_features", 0),
                            .out_features = get_int(c, "out_features", 0),
                            .bias = get_bool(c, "bias", true)}
        .init(d);
  });
  t["Bilinear"] = multi([](const Json& c, const Json&, const Device& d) {
    reject_unknown(c, {"in1_features", "in2_features", "out_features", "bias"});
    auto m = nn::BilinearConfig{.in1_features = get_int(c, "in1_features", 0),
                                .in2_features = get_int(c, "in2_features", 0),
                                .out_features = get_int(c, "out_features", 0),
                                .bias = get_bool(c, "bias", true)}
                 .init(d);
    return wrap(m, [](nn::Bilinear& l, const Tensors& in) { return Tensors{l.forward(in.at(0), in.at(1))}; });
  });
  t["Identity"] = plain<nn::Identity>([](const Json&) { return nn::Identity{}; });
  t["Flatten"] = plain<nn::Flatten>([](const Json& c) {
    return nn::Flatten{.start_dim = get_dim(c, "start_dim", 1), .end_dim = get_dim(c, "end_dim", -1)};
  });
  t["Unflatten"] = plain<nn::Unflatten>([](const Json& c) {
    return nn::Unflatten{.dim = get_dim(c, "dim", 0), .unflattened_size = get_sizes(c, "unflattened_size", {})};
  });
  t["Embedding"] = unary([](const Json& c, const Device& d) {
    reject_unknown(c, {"num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type"});
    return nn::EmbeddingConfig{.num_embeddings = get_int(c, "num_embeddings", 0),
                               .embedding_dim = get_int(c, "embedding_dim", 0),
                               .padding_idx = get_opt<int64_t>(c, "padding_idx"),
                               .max_norm = get_opt<double>(c, "max_norm"),
                               .norm_type = get_double(c, "norm_type", 2.0)}
        .init(d);
  });
  t["Dropout"] = plain<nn::Dropout>([](const Json& c) { return nn::Dropout{.p = get_double(c, "p", 0.5)}; });

  // ---- convolution ----
  t["Conv1d"] = unary([](const Json& c, const Device& d) { return conv_config<1>(c).init(d); });
  t["Conv2d"] = unary([](const Json& c, const Device& d) { return conv_config<2>(c).init(d); });
  t["Conv3d"] = unary([](const Json& c, const Device& d) { return conv_config<3>(c).init(d); });
  t["ConvTranspose1d"] = conv_transpose_entry<1>();
  t["ConvTranspose2d"] = conv_transpose_entry<2>();
  t["ConvTranspose3d"] = conv_transpose_entry<3>();

  // ---- pooling and resampling ----
  t["MaxPool1d"] = max_pool_entry<1>();
  t["MaxPool2d"] = max_pool_entry<2>();
  t["AvgPool1d"] = avg_pool_entry<1>();
  t["AvgPool2d"] = avg_pool_entry<2>();
  t["AdaptiveAvgPool1d"] = plain<nn::AdaptiveAvgPool1d>(
      [](const Json& c) { return nn::AdaptiveAvgPool1d{.output_size = get_int(c, "output_size", 1)}; });
  t["AdaptiveAvgPool2d"] = plain<nn::AdaptiveAvgPool2d>([](const Json& c) {
    if (!c.contains("output_size") || c["output_size"].is_number()) {
      return nn::AdaptiveAvgPool2d{.output_size = get_sizes(c, "output_size", {1})};
    }
    Sizes out;  // PyTorch's None (keep that input dim) is ember's -1
    for (const auto& v : c["output_size"]) out.push_back(v.is_null() ? -1 : v.get<int64_t>());
    return nn::AdaptiveAvgPool2d{.output_size = out};
  });
  t["PixelShuffle"] = plain<nn::PixelShuffle>(
      [](const Json& c) { return nn::PixelShuffle{.upscale_factor = get_int(c, "upscale_factor", 1)}; });
  t["PixelUnshuffle"] = plain<nn::PixelUnshuffle>(
      [](const Json& c) { return nn::PixelUnshuffle{.downscale_factor = get_int(c, "downscale_factor", 1)}; });
  t["Upsample"] = plain<nn::Upsample>([](const Json& c) {
    reject_unknown(c, {"size", "scale_factor", "mode", "align_corners", "recompute_scale_factor"});
    // ember maps coordinates by the in/out size ratio: PyTorch's recompute_scale_factor=True
    EMBER_CHECK(get_bool(c, "recompute_scale_factor", true),
                "layer conformance: Upsample recompute_scale_factor=False");
    std::string mode = get_string(c, "mode", "nearest");
    nn::Upsample u;
    u.size = get_sizes(c, "size", {});
    u.scale_factor = get_doubles(c, "scale_factor");
    u.mode = mode == "linear"     ? nn::UpsampleMode::linear
             : mode == "bilinear" ? nn::UpsampleMode::bilinear
             : mode == "bicubic"  ? nn::UpsampleMode::bicubic
                                  : nn::UpsampleMode::nearest;
    EMBER_CHECK(mode == "nearest" || mode == "linear" || mode == "bilinear" || mode == "bicubic",
                "layer conformance: Upsample mode '", mode, "' has no ember equivalent");
    u.align_corners = get_opt<bool>(c, "align_corners");
    return u;
  });

  // ---- normalisation ----
  t["BatchNorm1d"] = batch_norm_entry<1>();
  t["BatchNorm2d"] = batch_norm_entry<2>();
  t["BatchNorm3d"] = batch_norm_entry<3>();
  t["InstanceNorm1d"] = instance_norm_entry<1>();
  t["InstanceNorm2d"] = instance_norm_entry<2>();
  t["InstanceNorm3d"] = instance_norm_entry<3>();
  t["LayerNorm"] = unary([](const Json& c, const Device& d) {
    reject_unknown(c, {"normalized_shape", "eps", "elementwise_affine", "bias"});
    return nn::LayerNormConfig{.normalized_shape = get_sizes(c, "normalized_shape", {}),
                               .eps = get_double(c, "eps", 1e-5),
                               .elementwise_affine = get_bool(c, "elementwise_affine", true),
                               .bias = get_bool(c, "bias", true)}
        .init(d);
  });
  t["GroupNorm"] = unary([](const Json& c, const Device& d) {
    reject_unknown(c, {"num_groups", "num_channels", "eps", "affine"});
    return nn::GroupNormConfig{.num_groups = get_int(c, "num_groups", 0),
                               .num_channels = get_int(c, "num_channels", 0),
                               .eps = get_double(c, "eps", 1e-5),
                               .affine = get_bool(c, "affine", true)}
        .init(d);
  });
  t["RmsNorm"] = unary([](const Json& c, const Device& d) {
    reject_unknown(c, {"normalized_shape", "eps", "elementwise_affine"});
    return nn::RmsNormConfig{.normalized_shape = get_sizes(c, "normalized_shape", {}),
                             .eps = get_opt<double>(c, "eps"),
                             .elementwise_affine = get_bool(c, "elementwise_affine", true)}
        .init(d);
  });

  // ---- activations ----
  t["Relu"] = plain<nn::Relu>([](const Json&) { return nn::Relu{}; });
  t["Relu6"] = plain<nn::Relu6>([](const Json&) { return nn::Relu6{}; });
  t["LeakyRelu"] = plain<nn::LeakyRelu>(
      [](const Json& c) { return nn::LeakyRelu{.negative_slope = get_double(c, "negative_slope", 0.01)}; });
  t["PReLU"] = unary([](const Json& c, const Device& d) {
    return nn::PReluConfig{.num_parameters = get_int(c, "num_parameters", 1), .init_value = get_double(c, "init", 0.25)}
        .init(d);
  });
  t["GELU"] = plain<nn::Gelu>([](const Json& c) {
    std::string a = get_string(c, "approximate", "none");
    EMBER_CHECK(a == "none" || a == "tanh", "layer conformance: GELU approximate '", a, "'");
    return nn::Gelu{.approximate = a == "tanh" ? nn::GeluApproximation::tanh : nn::GeluApproximation::none};
  });
  t["SiLU"] = plain<nn::Silu>([](const Json&) { return nn::Silu{}; });
  t["Mish"] = plain<nn::Mish>([](const Json&) { return nn::Mish{}; });
  t["ELU"] = plain<nn::Elu>([](const Json& c) { return nn::Elu{.alpha = get_double(c, "alpha", 1.0)}; });
  t["SELU"] = plain<nn::Selu>([](const Json&) { return nn::Selu{}; });
  t["CELU"] = plain<nn::Celu>([](const Json& c) { return nn::Celu{.alpha = get_double(c, "alpha", 1.0)}; });
  t["Softplus"] = plain<nn::Softplus>([](const Json& c) {
    return nn::Softplus{.beta = get_double(c, "beta", 1.0), .threshold = get_double(c, "threshold", 20.0)};
  });
  t["Softsign"] = plain<nn::Softsign>([](const Json&) { return nn::Softsign{}; });
  t["Tanh"] = plain<nn::Tanh>([](const Json&) { return nn::Tanh{}; });
  t["Sigmoid"] = plain<nn::Sigmoid>([](const Json&) { return nn::Sigmoid{}; });
  t["LogSigmoid"] = plain<nn::LogSigmoid>([](const Json&) { return nn::LogSigmoid{}; });
  t["Hardsigmoid"] = plain<nn::HardSigmoid>([](const Json&) { return nn::HardSigmoid{}; });
  t["Hardswish"] = plain<nn::HardSwish>([](const Json&) { return nn::HardSwish{}; });
  t["Hardtanh"] = plain<nn::HardTanh>([](const Json& c) {
    return nn::HardTanh{.min_val = get_double(c, "min_val", -1.0), .max_val = get_double(c, "max_val", 1.0)};
  });
  t["Tanhshrink"] = plain<nn::TanhShrink>([](const Json&) { return nn::TanhShrink{}; });
  t["Softshrink"] =
      plain<nn::SoftShrink>([](const Json& c) { return nn::SoftShrink{.lambd = get_double(c, "lambd", 0.5)}; });
  t["Hardshrink"] =
      plain<nn::HardShrink>([](const Json& c) { return nn::HardShrink{.lambd = get_double(c, "lambd", 0.5)}; });
  t["GLU"] = plain<nn::Glu>([](const Json& c) { return nn::Glu{.dim = get_dim(c, "dim", -1)}; });
  t["SwiGlu"] = plain<nn::SwiGlu>([](const Json& c) { return nn::SwiGlu{.dim = get_dim(c, "dim", -1)}; });
  t["Softmax"] = plain<nn::Softmax>([](const Json& c) { return nn::Softmax{.dim = get_dim(c, "dim", -1)}; });
  t["LogSoftmax"] = plain<nn::LogSoftmax>([](const Json& c) { return nn::LogSoftmax{.dim = get_dim(c, "dim", -1)}; });

  // ---- containers ----
  t["Sequential"] = unary([](const Json& c, const Device& d) {
    nn::Sequential s;
    for (const auto& l : c["layers"]) {
      const std::string type = l["layer"].get<std::string>();
      auto it = entries().find(type);
      EMBER_CHECK(it != entries().end() && it->second.push, "layer conformance: '", type,
                  "' cannot be a Sequential element here");
      it->second.push(s, l.value("config", Json::object()), d);
    }
    return s;
  });

  // ---- recurrent: inputs x [, h0 [, c0]] ----
  t["RNN"] = multi([](const Json& c, const Json&, const Device& d) {
    auto k = recurrent_config<nn::RnnConfig>(c);
    k.nonlinearity =
        get_string(c, "nonlinearity", "tanh") == "relu" ? nn::RnnNonlinearity::relu : nn::RnnNonlinearity::tanh;
    return wrap(k.init(d), [](nn::Rnn& l, const Tensors& in) {
      auto r = l.forward(in.at(0), opt_input(in, 1));
      return Tensors{r.output, r.h_n};
    });
  });
  t["LSTM"] = multi([](const Json& c, const Json&, const Device& d) {
    return wrap(recurrent_config<nn::LstmConfig>(c).init(d), [](nn::Lstm& l, const Tensors& in) {
      auto r = l.forward(in.at(0), opt_input(in, 1), opt_input(in, 2));
      return Tensors{r.output, r.h_n, r.c_n};
    });
  });
  t["GRU"] = multi([](const Json& c, const Json&, const Device& d) {
    return wrap(recurrent_config<nn::GruConfig>(c).init(d), [](nn::Gru& l, const Tensors& in) {
      auto r = l.forward(in.at(0), opt_input(in, 1));
      return Tensors{r.output, r.h_n};
    });
  });

  // ---- attention: inputs query, key, value, masks (call["masks"]) ----
  t["MultiheadAttention"] = multi([](const Json& c, const Json& call, const Device& d) {
    reject_unknown(c, {"embed_dim", "num_heads", "dropout", "bias", "batch_first"});
    auto m = nn::MultiHeadAttentionConfig{.embed_dim = get_int(c, "embed_dim", 0),
                                          .num_heads = get_int(c, "num_heads", 1),
                                          .dropout = get_double(c, "dropout", 0),
                                          .bias = get_bool(c, "bias", true),
                                          .batch_first = get_bool(c, "batch_first", false)}
                 .init(d);
    return wrap(m, [call](nn::MultiHeadAttention& l, const Tensors& in) {
      NamedMasks nm = masks_of(call, in, 3);
      nn::AttentionMasks masks{.key_padding_mask = nm.get("key_padding_mask"),
                               .attn_mask = nm.get("attn_mask"),
                               .is_causal = get_bool(call, "is_causal", false)};
      if (!get_bool(call, "need_weights", false)) return Tensors{l.forward(in.at(0), in.at(1), in.at(2), masks)};
      auto r =
          l.forward_with_weights(in.at(0), in.at(1), in.at(2), masks, get_bool(call, "average_attn_weights", true));
      return Tensors{r.output, r.weights};
    });
  });
  t["TransformerEncoderLayer"] = multi([](const Json& c, const Json& call, const Device& d) {
    auto m = transformer_layer_config<nn::TransformerEncoderLayerConfig>(c).init(d);
    return wrap(m, [call](nn::TransformerEncoderLayer& l, const Tensors& in) {
      NamedMasks nm = masks_of(call, in, 1);
      return Tensors{l.forward(in.at(0), {.key_padding_mask = nm.get("src_key_padding_mask"),
                                          .attn_mask = nm.get("src_mask"),
                                          .is_causal = get_bool(call, "is_causal", false)})};
    });
  });
  t["TransformerDecoderLayer"] = multi([](const Json& c, const Json& call, const Device& d) {
    auto m = transformer_layer_config<nn::TransformerDecoderLayerConfig>(c).init(d);
    return wrap(m, [call](nn::TransformerDecoderLayer& l, const Tensors& in) {
      NamedMasks nm = masks_of(call, in, 2);
      return Tensors{
          l.forward(in.at(0), in.at(1),
                    {.key_padding_mask = nm.get("tgt_key_padding_mask"),
                     .attn_mask = nm.get("tgt_mask"),
                     .is_causal = get_bool(call, "tgt_is_causal", false)},
                    {.key_padding_mask = nm.get("memory_key_padding_mask"), .attn_mask = nm.get("memory_mask")})};
    });
  });
  t["TransformerEncoder"] = multi([](const Json& c, const Json& call, const Device& d) {
    reject_unknown(c, {"encoder_layer", "num_layers", "norm"});
    auto m =
        nn::TransformerEncoderConfig{
            .layer = transformer_layer_config<nn::TransformerEncoderLayerConfig>(c["encoder_layer"]),
            .num_layers = get_int(c, "num_layers", 1),
            .final_norm = get_bool(c, "norm", false)}
            .init(d);
    return wrap(m, [call](nn::TransformerEncoder& l, const Tensors& in) {
      NamedMasks nm = masks_of(call, in, 1);
      return Tensors{l.forward(in.at(0), {.key_padding_mask = nm.get("src_key_padding_mask"),
                                          .attn_mask = nm.get("src_mask"),
                                          .is_causal = get_bool(call, "is_causal", false)})};
    });
  });
  t["TransformerDecoder"] = multi([](const Json& c, const Json& call, const Device& d) {
    reject_unknown(c, {"decoder_layer", "num_layers", "norm"});
    auto m =
        nn::TransformerDecoderConfig{
            .layer = transformer_layer_config<nn::TransformerDecoderLayerConfig>(c["decoder_layer"]),
            .num_layers = get_int(c, "num_layers", 1),
            .final_norm = get_bool(c, "norm", false)}
            .init(d);
    return wrap(m, [call](nn::TransformerDecoder& l, const Tensors& in) {
      NamedMasks nm = masks_of(call, in, 2);
      return Tensors{
          l.forward(in.at(0), in.at(1),
                    {.key_padding_mask = nm.get("tgt_key_padding_mask"),
                     .attn_mask = nm.get("tgt_mask"),
                     .is_causal = get_bool(call, "tgt_is_causal", false)},
                    {.key_padding_mask = nm.get("memory_key_padding_mask"), .attn_mask = nm.get("memory_mask")})};
    });
  });

  // ---- position information and the feed-forward block (ember's config names) ----
  t["PositionalEncoding"] = unary([](const Json& c, const Device& d) {
    reject_unknown(c, {"d_model", "dropout", "max_len", "batch_first"});
    return nn::PositionalEncodingConfig{.d_model = get_int(c, "d_model", 0),
                                        .dropout = get_double(c, "dropout", 0.1),
                                        .max_len = get_int(c, "max_len", 5000),
                                        .batch_first = get_bool(c, "batch_first", false)}
        .init(d);
  });
  t["RotaryEncoding"] = multi([](const Json& c, const Json& call, const Device& d) {
    reject_unknown(c, {"d_model", "max_len", "theta", "interleaved"});
    auto m = nn::RotaryEncodingConfig{.d_model = get_int(c, "d_model", 0),
                                      .max_len = get_int(c, "max_len", 4096),
                                      .theta = get_double(c, "theta", 10000.0),
                                      .interleaved = get_bool(c, "interleaved", true)}
                 .init(d);
    int64_t start = get_int(call, "start", 0);
    return wrap(m, [start](nn::RotaryEncoding& l, const Tensors& in) { return Tensors{l.forward(in.at(0), start)}; });
  });
  t["PositionWiseFeedForward"] = unary([](const Json& c, const Device& d) {
    reject_unknown(c, {"d_model", "d_ff", "dropout", "activation", "bias"});
    return nn::PositionWiseFeedForwardConfig{.d_model = get_int(c, "d_model", 0),
                                             .d_ff = get_int(c, "d_ff", 0),
                                             .dropout = get_double(c, "dropout", 0.1),
                                             .activation = ff_activation(c, "gelu"),
                                             .bias = get_bool(c, "bias", true)}
        .init(d);
  });
  return t;
}

}  // namespace

const std::map<std::string, LayerBuilder>& layer_registry() {
  static const std::map<std::string, LayerBuilder> table = [] {
    std::map<std::string, LayerBuilder> out;
    for (const auto& [name, e] : entries()) out[name] = e.make;
    return out;
  }();
  return table;
}

}  // namespace ember::nn_conformance
