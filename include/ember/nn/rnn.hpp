// Recurrent layers: Rnn (tanh or relu), Lstm and Gru, with torch.nn.RNN / LSTM / GRU's
// arguments, defaults, state_dict keys and gate layouts, so torch checkpoints load unchanged.
//
//   # Device dev = Device::cpu(); DynTensor x = randn({2, 5, 32});
//   # DynTensor x_seq_first = randn({5, 2, 32}), h0 = DynTensor::zeros({2, 2, 64});
//   auto lstm = nn::LstmConfig{.input_size = 32, .hidden_size = 64, .num_layers = 2, .batch_first = true}.init(dev);
//   auto [out, h_n, c_n] = lstm.forward(x);          // x [N, L, 32] -> out [N, L, 64]
//   auto gru = nn::GruConfig{.input_size = 32, .hidden_size = 64, .bidirectional = true}.init(dev);
//   auto [y, h] = gru.forward(x_seq_first, h0);      // y [L, N, 128], h [2, N, 64]
//   # run
//
// Shapes (D = 2 when bidirectional, else 1; H = hidden_size):
//   input   [L, N, input_size], or [N, L, input_size] with batch_first, or unbatched [L, input_size]
//   h0, c0  [D * num_layers, N, H] (unbatched: [D * num_layers, H]); zeros when not given
//   output  [L, N, D * H] (batch_first: [N, L, D * H]): the last layer's h at every step, the
//           forward direction's features first
//   h_n,c_n [D * num_layers, N, H]: the final state of layer k's direction d at index k * D + d
//           (never batch-first, as in PyTorch)
//
// Parameters of layer k (suffix "_reverse" for the backward direction), G = 1 (Rnn), 4 (Lstm), 3 (Gru):
//   weight_ih_l{k} [G*H, input_size (k = 0) or D*H],  weight_hh_l{k} [G*H, H],
//   bias_ih_l{k} [G*H], bias_hh_l{k} [G*H] (when bias)
// Gate blocks along the first dim: Lstm (i, f, g, o); Gru (r, z, n) with
//   n = tanh(W_in x + b_in + r * (W_hn h + b_hn))        (b_hn inside the reset product, as torch)
//   h' = (1 - z) * n + z * h
// Every parameter starts as U(-1/sqrt(H), 1/sqrt(H)) like PyTorch unless `initializer` is given.
// `dropout` is applied to the outputs of every layer but the last, in training mode only.
// LSTM projections (torch's proj_size) are not supported.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ember/nn/init.hpp"
#include "ember/nn/module.hpp"

namespace ember::nn {

// The weights of one layer in one direction.
struct RnnCellParams {
  // weight_ih: input-to-hidden, [G*H, in]; weight_hh: hidden-to-hidden (gate layout at the top of this file).
  Param weight_ih, weight_hh;  // weight_hh: hidden-to-hidden, [G*H, H]
  // bias_ih: added to x @ weight_ih^T, [G*H]; both biases are present when the layer has bias.
  std::optional<Param> bias_ih, bias_hh;  // bias_hh: added to h @ weight_hh^T, [G*H]
};

// The activation of an Rnn's cell, torch.nn.RNN's nonlinearity ("tanh" or "relu").
enum class RnnNonlinearity : uint8_t { tanh, relu };

struct Rnn;
struct Lstm;
struct Gru;

// torch.nn.RNN's arguments.
struct RnnConfig {
  // input_size: the input's feature count; hidden_size: H, the hidden state's. Both must be positive.
  int64_t input_size = 0, hidden_size = 0;  // H, the hidden state's size
  int64_t num_layers = 1;  // stacked layers, at least 1
  RnnNonlinearity nonlinearity = RnnNonlinearity::tanh;  // the cell's activation
  bool bias = true;  // bias_ih and bias_hh in every layer
  bool batch_first = false;  // input and output [N, L, *] rather than [L, N, *] (not h_n, c_n)
  double dropout = 0;  // dropout probability on every layer's output but the last (training mode), in [0, 1]
  bool bidirectional = false;  // a reverse direction per layer too (D = 2)
  std::optional<Initializer> initializer{};  // default: U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))
  // Builds the layers on `device`; throws ember::Error when a size is not positive, num_layers < 1 or
  // dropout is outside [0, 1].
  Rnn init(const Device& device = Device::default_device()) const;
};

// torch.nn.LSTM's arguments (without proj_size).
struct LstmConfig {
  // input_size: the input's feature count; hidden_size: H, the hidden state's. Both must be positive.
  int64_t input_size = 0, hidden_size = 0;  // H, the hidden state's size
  int64_t num_layers = 1;  // stacked layers, at least 1
  bool bias = true;  // bias_ih and bias_hh in every layer
  bool batch_first = false;  // input and output [N, L, *] rather than [L, N, *] (not h_n, c_n)
  double dropout = 0;  // dropout probability on every layer's output but the last (training mode), in [0, 1]
  bool bidirectional = false;  // a reverse direction per layer too (D = 2)
  std::optional<Initializer> initializer{};  // default: U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))
  // Builds the layers on `device`; throws ember::Error as RnnConfig::init does.
  Lstm init(const Device& device = Device::default_device()) const;
};

// torch.nn.GRU's arguments.
struct GruConfig {
  // input_size: the input's feature count; hidden_size: H, the hidden state's. Both must be positive.
  int64_t input_size = 0, hidden_size = 0;  // H, the hidden state's size
  int64_t num_layers = 1;  // stacked layers, at least 1
  bool bias = true;  // bias_ih and bias_hh in every layer
  bool batch_first = false;  // input and output [N, L, *] rather than [L, N, *] (not h_n, c_n)
  double dropout = 0;  // dropout probability on every layer's output but the last (training mode), in [0, 1]
  bool bidirectional = false;  // a reverse direction per layer too (D = 2)
  std::optional<Initializer> initializer{};  // default: U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))
  // Builds the layers on `device`; throws ember::Error as RnnConfig::init does.
  Gru init(const Device& device = Device::default_device()) const;
};

// What Rnn::forward and Gru::forward return (shapes at the top of this file).
struct RnnOutput {
  // output: the last layer's hidden state at every step, [L, N, D * H] (batch_first: [N, L, D * H]).
  DynTensor output{}, h_n{};  // h_n: the final hidden state of every layer and direction, [D * num_layers, N, H]
};
// What Lstm::forward returns (shapes at the top of this file).
struct LstmOutput {
  // output: the last layer's hidden state at every step, [L, N, D * H] (batch_first: [N, L, D * H]);
  // h_n: the final hidden states, [D * num_layers, N, H].
  DynTensor output{}, h_n{}, c_n{};  // c_n: the final cell states, [D * num_layers, N, H]
};

namespace detail {
// The layout shared by the three layers: cells in state_dict order (l0, l0_reverse, l1, ...).
struct RecurrentLayout {
  int64_t input_size = 0, hidden_size = 0, num_layers = 1;
  bool bias = true, batch_first = false, bidirectional = false;
  double dropout = 0;
};
void visit_recurrent(Visitor& v, const std::string& prefix, std::vector<RnnCellParams>& cells, Mode& mode,
                     const RecurrentLayout& layout);
}  // namespace detail

// torch.nn.RNN: an Elman RNN, h' = nonlinearity(W_ih x + b_ih + W_hh h + b_hh), per layer and direction.
// state_dict keys and parameter shapes as PyTorch's (see the top of this file).
struct Rnn {
  RnnConfig config;  // the configuration it was built with (the layout of `cells`)
  std::vector<RnnCellParams> cells;  // layer-major, forward direction before reverse
  Mode mode;  // training (dropout between layers on) or eval
  mutable detail::ModuleInfo ember_module_{};  // its path, for errors
  // Visits the cells' parameters under PyTorch's keys (weight_ih_l0, ..., bias_hh_l1_reverse), then the mode.
  void visit(Visitor& v, const std::string& prefix = {});
  // input [L, N, input_size] (batch_first [N, L, input_size], unbatched [L, input_size]); h0 defaults to
  // zeros. Throws ember::Error on a wrong input or h0 shape.
  RnnOutput forward(const DynTensor& input, const std::optional<DynTensor>& h0 = std::nullopt) const;
};

// torch.nn.LSTM: a multi-layer LSTM with gates (i, f, g, o).
// state_dict keys and parameter shapes as PyTorch's (see the top of this file).
struct Lstm {
  LstmConfig config;  // the configuration it was built with (the layout of `cells`)
  std::vector<RnnCellParams> cells;  // layer-major, forward direction before reverse
  Mode mode;  // training (dropout between layers on) or eval
  mutable detail::ModuleInfo ember_module_{};  // its path, for errors
  // Visits the cells' parameters under PyTorch's keys (weight_ih_l0, ..., bias_hh_l1_reverse), then the mode.
  void visit(Visitor& v, const std::string& prefix = {});
  // input as Rnn::forward's; h0 and c0 default to zeros. Throws ember::Error on a wrong input, h0 or c0
  // shape.
  LstmOutput forward(const DynTensor& input, const std::optional<DynTensor>& h0 = std::nullopt,
                     const std::optional<DynTensor>& c0 = std::nullopt) const;
};

// torch.nn.GRU: a multi-layer GRU with gates (r, z, n).
// state_dict keys and parameter shapes as PyTorch's (see the top of this file).
struct Gru {
  GruConfig config;  // the configuration it was built with (the layout of `cells`)
  std::vector<RnnCellParams> cells;  // layer-major, forward direction before reverse
  Mode mode;  // training (dropout between layers on) or eval
  mutable detail::ModuleInfo ember_module_{};  // its path, for errors
  // Visits the cells' parameters under PyTorch's keys (weight_ih_l0, ..., bias_hh_l1_reverse), then the mode.
  void visit(Visitor& v, const std::string& prefix = {});
  // input as Rnn::forward's; h0 defaults to zeros. Throws ember::Error on a wrong input or h0 shape.
  RnnOutput forward(const DynTensor& input, const std::optional<DynTensor>& h0 = std::nullopt) const;
};

}  // namespace ember::nn
