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
  Param weight_ih, weight_hh;
  std::optional<Param> bias_ih, bias_hh;
};

enum class RnnNonlinearity : uint8_t { tanh, relu };

struct Rnn;
struct Lstm;
struct Gru;

struct RnnConfig {
  int64_t input_size = 0, hidden_size = 0;
  int64_t num_layers = 1;
  RnnNonlinearity nonlinearity = RnnNonlinearity::tanh;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0;
  bool bidirectional = false;
  std::optional<Initializer> initializer{};  // default: U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))
  Rnn init(const Device& device = Device::default_device()) const;
};

struct LstmConfig {
  int64_t input_size = 0, hidden_size = 0;
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0;
  bool bidirectional = false;
  std::optional<Initializer> initializer{};
  Lstm init(const Device& device = Device::default_device()) const;
};

struct GruConfig {
  int64_t input_size = 0, hidden_size = 0;
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0;
  bool bidirectional = false;
  std::optional<Initializer> initializer{};
  Gru init(const Device& device = Device::default_device()) const;
};

struct RnnOutput {
  DynTensor output{}, h_n{};
};
struct LstmOutput {
  DynTensor output{}, h_n{}, c_n{};
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

struct Rnn {
  RnnConfig config;
  std::vector<RnnCellParams> cells;  // layer-major, forward direction before reverse
  Mode mode;
  mutable detail::ModuleInfo ember_module_{};  // its path, for errors
  void visit(Visitor& v, const std::string& prefix = {});
  RnnOutput forward(const DynTensor& input, const std::optional<DynTensor>& h0 = std::nullopt) const;
};

struct Lstm {
  LstmConfig config;
  std::vector<RnnCellParams> cells;
  Mode mode;
  mutable detail::ModuleInfo ember_module_{};  // its path, for errors
  void visit(Visitor& v, const std::string& prefix = {});
  LstmOutput forward(const DynTensor& input, const std::optional<DynTensor>& h0 = std::nullopt,
                     const std::optional<DynTensor>& c0 = std::nullopt) const;
};

struct Gru {
  GruConfig config;
  std::vector<RnnCellParams> cells;
  Mode mode;
  mutable detail::ModuleInfo ember_module_{};  // its path, for errors
  void visit(Visitor& v, const std::string& prefix = {});
  RnnOutput forward(const DynTensor& input, const std::optional<DynTensor>& h0 = std::nullopt) const;
};

}  // namespace ember::nn
