// Rnn, Lstm and Gru: one time loop over tensor ops shared by the three. The input projection of
// every time step is one matmul per (layer, direction); each step then adds h @ W_hh^T.
#include "ember/nn/rnn.hpp"

#include <cmath>

#include "ember/core/error.hpp"
#include "ember/nn/functional.hpp"
#include "layer_util.hpp"

namespace ember::nn {

namespace {

enum class CellKind : uint8_t { rnn_tanh, rnn_relu, lstm, gru };

const char* kind_name(CellKind k) {
  switch (k) {
    case CellKind::rnn_tanh:
    case CellKind::rnn_relu:
      return "Rnn";
    case CellKind::lstm:
      return "Lstm";
    case CellKind::gru:
      return "Gru";
  }
  return "?";
}

template <class Config>
detail::RecurrentLayout layout_of(const Config& c) {
  return {c.input_size, c.hidden_size, c.num_layers, c.bias, c.batch_first, c.bidirectional, c.dropout};
}

std::vector<RnnCellParams> make_cells(const detail::RecurrentLayout& l, int64_t gates,
                                      const std::optional<Initializer>& initializer, const Device& device,
                                      const char* name) {
  EMBER_CHECK(l.input_size > 0 && l.hidden_size > 0, name, ": input_size and hidden_size must be positive, got ",
              l.input_size, " and ", l.hidden_size);
  EMBER_CHECK(l.num_layers >= 1, name, ": num_layers must be at least 1, got ", l.num_layers);
  EMBER_CHECK(l.dropout >= 0 && l.dropout <= 1, name, ": dropout must be in [0, 1], got ", l.dropout);
  const double k = 1.0 / std::sqrt(double(l.hidden_size));
  const Initializer init = initializer.value_or(Initializer::uniform(-k, k));
  const int64_t dirs = l.bidirectional ? 2 : 1, rows = gates * l.hidden_size;
  std::vector<RnnCellParams> cells;
  for (int64_t layer = 0; layer < l.num_layers; ++layer) {
    const int64_t in = layer == 0 ? l.input_size : dirs * l.hidden_size;
    for (int64_t d = 0; d < dirs; ++d) {
      RnnCellParams c;
      c.weight_ih = Param(init.init({rows, in}, device));
      c.weight_hh = Param(init.init({rows, l.hidden_size}, device));
      if (l.bias) {
        c.bias_ih = Param(init.init({rows}, device));
        c.bias_hh = Param(init.init({rows}, device));
      }
      cells.push_back(std::move(c));
    }
  }
  return cells;
}

struct RecurrentResult {
  DynTensor output, h_n, c_n;
};

// One direction of one layer over the whole sequence. xw: [L, N, G*H] input projections (with
// b_ih); h, c: [N, H]. Returns the per-step outputs [L, N, H] and leaves the final state in h, c.
DynTensor run_direction(CellKind kind, const RnnCellParams& cell, const DynTensor& xw, DynTensor& h, DynTensor& c,
                        bool reverse) {
  const int64_t steps = xw.size(0);
  const DynTensor w_hh_t = transpose(cell.weight_hh.value(), 0, 1);
  std::vector<DynTensor> outs(static_cast<size_t>(steps));
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = reverse ? steps - 1 - s : s;
    DynTensor x_t = select(xw, 0, t);
    DynTensor h_t = matmul(h, w_hh_t);
    if (cell.bias_hh) h_t = h_t + cell.bias_hh->value();
    switch (kind) {
      case CellKind::rnn_tanh:
        h = tanh(x_t + h_t);
        break;
      case CellKind::rnn_relu:
        h = relu(x_t + h_t);
        break;
      case CellKind::lstm: {
        std::vector<DynTensor> g = chunk(x_t + h_t, 4, -1);  // i, f, g, o
        c = sigmoid(g[1]) * c + sigmoid(g[0]) * tanh(g[2]);
        h = sigmoid(g[3]) * tanh(c);
        break;
      }
      case CellKind::gru: {
        std::vector<DynTensor> xg = chunk(x_t, 3, -1), hg = chunk(h_t, 3, -1);  // r, z, n
        DynTensor r = sigmoid(xg[0] + hg[0]);
        DynTensor z = sigmoid(xg[1] + hg[1]);
        DynTensor n = tanh(xg[2] + r * hg[2]);
        h = n + z * (h - n);  // (1 - z) * n + z * h
        break;
      }
    }
    outs[size_t(t)] = h;
  }
  return stack(std::move(outs), 0);
}

RecurrentResult run_recurrent(CellKind kind, const detail::RecurrentLayout& l, const std::vector<RnnCellParams>& cells,
                              bool training, DynTensor x, std::optional<DynTensor> h0, std::optional<DynTensor> c0) {
  const char* name = kind_name(kind);
  const int64_t dirs = l.bidirectional ? 2 : 1, H = l.hidden_size, states = dirs * l.num_layers;
  EMBER_CHECK(x.rank() == 2 || x.rank() == 3, name, ": input must be [L, N, ", l.input_size,
              "] (or batch-first, or unbatched [L, ", l.input_size, "]), got ", x.shape());
  EMBER_CHECK(x.size(-1) == l.input_size, name, ": input has ", x.size(-1), " features, expected input_size ",
              l.input_size, " (input ", x.shape(), ")");
  if (!cells.empty()) internal::check_dtype(name, x, cells[0].weight_ih, "weight_ih_l0");
  const bool unbatched = x.rank() == 2;
  if (unbatched)
    x = unsqueeze(x, 1);
  else if (l.batch_first)
    x = transpose(x, 0, 1);
  const int64_t N = x.size(1);
  const Shape state_shape = unbatched ? Shape{states, H} : Shape{states, N, H};
  auto initial = [&](std::optional<DynTensor>& s, const char* what) {
    if (!s) return DynTensor::zeros({states, N, H}, x.dtype(), x.device());
    EMBER_CHECK(s->shape() == state_shape, name, ": ", what, " must be ", state_shape, " for input ", x.shape(),
                ", got ", s->shape());
    return unbatched ? unsqueeze(*s, 1) : *s;
  };
  const DynTensor h_init = initial(h0, "h0");
  DynTensor c_init;
  if (kind == CellKind::lstm) c_init = initial(c0, "c0");

  std::vector<DynTensor> h_n, c_n;
  DynTensor layer_in = x;
  for (int64_t layer = 0; layer < l.num_layers; ++layer) {
    std::vector<DynTensor> dir_out;
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t idx = layer * dirs + d;
      const RnnCellParams& cell = cells[size_t(idx)];
      DynTensor xw = matmul(layer_in, transpose(cell.weight_ih.value(), 0, 1));  // [L, N, G*H]
      if (cell.bias_ih) xw = xw + cell.bias_ih->value();
      DynTensor h = select(h_init, 0, idx), c;
      if (kind == CellKind::lstm) c = select(c_init, 0, idx);
      dir_out.push_back(run_direction(kind, cell, xw, h, c, d == 1));
      h_n.push_back(h);
      if (kind == CellKind::lstm) c_n.push_back(c);
    }
    layer_in = dirs == 1 ? dir_out[0] : cat(std::move(dir_out), -1);
    if (training && l.dropout > 0 && layer + 1 < l.num_layers) layer_in = dropout(layer_in, l.dropout, true);
  }
  RecurrentResult r;
  r.output = layer_in;
  r.h_n = stack(std::move(h_n), 0);
  if (kind == CellKind::lstm) r.c_n = stack(std::move(c_n), 0);
  if (unbatched) {
    r.output = squeeze(r.output, 1);
    r.h_n = squeeze(r.h_n, 1);
    if (r.c_n.defined()) r.c_n = squeeze(r.c_n, 1);
  } else if (l.batch_first) {
    r.output = transpose(r.output, 0, 1);
  }
  return r;
}

}  // namespace

namespace detail {
void visit_recurrent(Visitor& v, const std::string& prefix, std::vector<RnnCellParams>& cells, Mode& mode,
                     const RecurrentLayout& layout) {
  const int64_t dirs = layout.bidirectional ? 2 : 1;
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string suffix = "_l" + std::to_string(int64_t(i) / dirs) + (int64_t(i) % dirs == 1 ? "_reverse" : "");
    RnnCellParams& c = cells[i];
    visit_field(v, join(prefix, "weight_ih" + suffix), c.weight_ih);
    visit_field(v, join(prefix, "weight_hh" + suffix), c.weight_hh);
    visit_field(v, join(prefix, "bias_ih" + suffix), c.bias_ih);
    visit_field(v, join(prefix, "bias_hh" + suffix), c.bias_hh);
  }
  v.mode(mode);
}
}  // namespace detail

Rnn RnnConfig::init(const Device& device) const {
  return Rnn{*this, make_cells(layout_of(*this), 1, initializer, device, "Rnn"), {}};
}
Lstm LstmConfig::init(const Device& device) const {
  return Lstm{*this, make_cells(layout_of(*this), 4, initializer, device, "Lstm"), {}};
}
Gru GruConfig::init(const Device& device) const {
  return Gru{*this, make_cells(layout_of(*this), 3, initializer, device, "Gru"), {}};
}

void Rnn::visit(Visitor& v, const std::string& prefix) {
  ember_module_.set_path(prefix);
  detail::visit_recurrent(v, prefix, cells, mode, layout_of(config));
}
void Lstm::visit(Visitor& v, const std::string& prefix) {
  ember_module_.set_path(prefix);
  detail::visit_recurrent(v, prefix, cells, mode, layout_of(config));
}
void Gru::visit(Visitor& v, const std::string& prefix) {
  ember_module_.set_path(prefix);
  detail::visit_recurrent(v, prefix, cells, mode, layout_of(config));
}

RnnOutput Rnn::forward(const DynTensor& input, const std::optional<DynTensor>& h0) const {
  return detail::in_module(ember_module_, "Rnn", [&] {
    const CellKind kind = config.nonlinearity == RnnNonlinearity::relu ? CellKind::rnn_relu : CellKind::rnn_tanh;
    RecurrentResult r = run_recurrent(kind, layout_of(config), cells, mode.training, input, h0, std::nullopt);
    return RnnOutput{std::move(r.output), std::move(r.h_n)};
  });
}

LstmOutput Lstm::forward(const DynTensor& input, const std::optional<DynTensor>& h0,
                         const std::optional<DynTensor>& c0) const {
  return detail::in_module(ember_module_, "Lstm", [&] {
    RecurrentResult r = run_recurrent(CellKind::lstm, layout_of(config), cells, mode.training, input, h0, c0);
    return LstmOutput{std::move(r.output), std::move(r.h_n), std::move(r.c_n)};
  });
}

RnnOutput Gru::forward(const DynTensor& input, const std::optional<DynTensor>& h0) const {
  return detail::in_module(ember_module_, "Gru", [&] {
    RecurrentResult r = run_recurrent(CellKind::gru, layout_of(config), cells, mode.training, input, h0, std::nullopt);
    return RnnOutput{std::move(r.output), std::move(r.h_n)};
  });
}

}  // namespace ember::nn
