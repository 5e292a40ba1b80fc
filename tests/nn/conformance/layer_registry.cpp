// The layer registry: PyTorch module name -> ember layer built from the case's config.
#include "layer_registry.hpp"

#include "ember/nn/embedding.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/rnn.hpp"

namespace ember::nn_conformance {
namespace {

// ---- reading a config (PyTorch argument names and defaults) ----
int64_t get_int(const Json& c, const char* key, int64_t def) { return c.contains(key) ? c[key].get<int64_t>() : def; }
double get_double(const Json& c, const char* key, double def) { return c.contains(key) ? c[key].get<double>() : def; }
bool get_bool(const Json& c, const char* key, bool def) { return c.contains(key) ? c[key].get<bool>() : def; }
std::string get_string(const Json& c, const char* key, std::string def) {
  return c.contains(key) ? c[key].get<std::string>() : def;
}
template <class T>
std::optional<T> get_opt(const Json& c, const char* key) {
  if (!c.contains(key) || c[key].is_null()) return std::nullopt;
  return c[key].get<T>();
}
// An int or a list of `n` ints (PyTorch's _pair/_triple).
Sizes get_sizes(const Json& c, const char* key, int n, int64_t def) {
  if (!c.contains(key)) return Sizes(static_cast<size_t>(n), def);
  if (c[key].is_number()) return Sizes(static_cast<size_t>(n), c[key].get<int64_t>());
  return c[key].get<Sizes>();
}
Sizes get_list(const Json& c, const char* key) {
  if (c[key].is_number()) return Sizes{c[key].get<int64_t>()};
  return c[key].get<Sizes>();
}

// forward of a one-input, one-output layer
template <class M>
BuiltLayer unary(M m) {
  return wrap(std::move(m), [](const M& l, const Tensors& in) { return Tensors{l.forward(in.at(0))}; });
}

// ---- recurrent layers: inputs x [, h0 [, c0]] ----
template <class Cfg>
Cfg recurrent_config(const Json& c) {
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
std::optional<DynTensor> opt_input(const Tensors& in, size_t i) {
  return i < in.size() ? std::optional<DynTensor>(in[i]) : std::nullopt;
}

const std::map<std::string, LayerBuilder>& build_registry() {
  static const std::map<std::string, LayerBuilder> table = {
      // ---- dense ----
      {"Linear",
       [](const Json& c, const Json&, const Device& d) {
         return unary(nn::LinearConfig{.in_features = get_int(c, "in_features", 0),
                                       .out_features = get_int(c, "out_features", 0),
                                       .bias = get_bool(c, "bias", true)}
                          .init(d));
       }},
      {"Bilinear",
       [](const Json& c, const Json&, const Device& d) {
         auto m = nn::BilinearConfig{.in1_features = get_int(c, "in1_features", 0),
                                     .in2_features = get_int(c, "in2_features", 0),
                                     .out_features = get_int(c, "out_features", 0),
                                     .bias = get_bool(c, "bias", true)}
                      .init(d);
         return wrap(m, [](const nn::Bilinear& l, const Tensors& in) { return Tensors{l.forward(in.at(0), in.at(1))}; });
       }},
      {"Identity", [](const Json&, const Json&, const Device& d) { return unary(nn::IdentityConfig{}.init(d)); }},
      {"Flatten",
       [](const Json& c, const Json&, const Device& d) {
         return unary(nn::FlattenConfig{.start_dim = static_cast<int>(get_int(c, "start_dim", 1)),
                                        .end_dim = static_cast<int>(get_int(c, "end_dim", -1))}
                          .init(d));
       }},
      {"Embedding",
       [](const Json& c, const Json&, const Device& d) {
         return unary(nn::EmbeddingConfig{.num_embeddings = get_int(c, "num_embeddings", 0),
                                          .embedding_dim = get_int(c, "embedding_dim", 0),
                                          .padding_idx = get_opt<int64_t>(c, "padding_idx"),
                                          .max_norm = get_opt<double>(c, "max_norm"),
                                          .norm_type = get_double(c, "norm_type", 2.0)}
                          .init(d));
       }},
      // ---- recurrent ----
      {"RNN",
       [](const Json& c, const Json&, const Device& d) {
         auto k = recurrent_config<nn::RnnConfig>(c);
         k.nonlinearity = get_string(c, "nonlinearity", "tanh") == "relu" ? nn::RnnNonlinearity::relu
                                                                            : nn::RnnNonlinearity::tanh;
         return wrap(k.init(d), [](const nn::Rnn& l, const Tensors& in) {
           auto r = l.forward(in.at(0), opt_input(in, 1));
           return Tensors{r.output, r.h_n};
         });
       }},
      {"LSTM",
       [](const Json& c, const Json&, const Device& d) {
         return wrap(recurrent_config<nn::LstmConfig>(c).init(d), [](const nn::Lstm& l, const Tensors& in) {
           auto r = l.forward(in.at(0), opt_input(in, 1), opt_input(in, 2));
           return Tensors{r.output, r.h_n, r.c_n};
         });
       }},
      {"GRU",
       [](const Json& c, const Json&, const Device& d) {
         return wrap(recurrent_config<nn::GruConfig>(c).init(d), [](const nn::Gru& l, const Tensors& in) {
           auto r = l.forward(in.at(0), opt_input(in, 1));
           return Tensors{r.output, r.h_n};
         });
       }},
  };
  return table;
}

}  // namespace

const std::map<std::string, LayerBuilder>& layer_registry() { return build_registry(); }

}  // namespace ember::nn_conformance
