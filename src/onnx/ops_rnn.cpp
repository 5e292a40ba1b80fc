// Recurrent ONNX ops: RNN, GRU, LSTM (forward, reverse, bidirectional; layout 0 and 1;
// sequence_lens for forward directions), one matmul per gate group and time step.
#include <algorithm>

#include "ops.hpp"

namespace ember::onnx::detail {
namespace {

enum class Cell { rnn, gru, lstm };

using Act = std::function<DynTensor(DynTensor)>;

Act activation(const OpContext& c, const std::string& name, std::optional<double> clip) {
  Act f;
  if (name == "Tanh") f = [](DynTensor x) { return tanh(x); };
  else if (name == "Sigmoid") f = [](DynTensor x) { return sigmoid(x); };
  else if (name == "Relu") f = [](DynTensor x) { return relu(x); };
  else c.unsupported("activation '" + name + "'");
  if (!clip) return f;
  double v = *clip;
  return [f, v](DynTensor x) { return f(clamp(x, Scalar(-v), Scalar(v))); };
}

OpResult recurrent(OpContext& c, Cell cell) {
  const DynTensor& X0 = c.in(0);
  if (!is_float(X0.dtype())) c.unsupported("dtype " + std::string(dtype_name(X0.dtype())));
  int64_t layout = c.attr_i("layout", 0);
  std::string direction = c.attr_s("direction", "forward");
  int dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.fail("direction '" + direction + "'");
  if (c.attr("activation_alpha") || c.attr("activation_beta")) c.unsupported("activation_alpha/beta");
  if (cell == Cell::lstm && c.attr_i("input_forget", 0) != 0) c.unsupported("input_forget=1");
  std::optional<double> clip;
  if (c.attr("clip")) clip = c.attr_f("clip", 0);
  size_t gates = cell == Cell::rnn ? 1 : cell == Cell::gru ? 3 : 4;
  std::vector<std::string> defaults = cell == Cell::rnn   ? std::vector<std::string>{"Tanh"}
                                      : cell == Cell::gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  std::vector<std::string> acts;
  if (const AttributeProto* a = c.attr("activations")) acts = a->strings;
  if (acts.empty())
    for (int d = 0; d < dirs; ++d) acts.insert(acts.end(), defaults.begin(), defaults.end());
  if (acts.size() != defaults.size() * size_t(dirs)) c.fail("activations needs one entry per function and direction");

  DynTensor X = layout ? transpose(X0, 0, 1) : X0;  // [seq, batch, input]
  int64_t seq = X.shape()[0], batch = X.shape()[1];
  const DynTensor &W = c.in(1), &R = c.in(2);
  int64_t h = R.shape()[-1];
  std::optional<std::vector<int64_t>> lens = c.ints_input(4);
  bool masked = lens && std::any_of(lens->begin(), lens->end(), [&](int64_t l) { return l != seq; });
  if (masked && direction != "forward") c.unsupported("sequence_lens with a reverse direction");
  auto state = [&](size_t input, int d) -> DynTensor {
    if (!c.has(input)) return DynTensor::zeros(Shape{batch, h}, X.dtype(), c.device);
    return select(c.in(input), layout ? 1 : 0, d);
  };
  std::vector<DynTensor> ys, hs, cs;
  for (int d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    size_t k = defaults.size() * size_t(d);
    Act f = activation(c, acts[k], clip);
    Act g = gates > 1 ? activation(c, acts[k + 1], clip) : f;
    Act hact = gates > 3 ? activation(c, acts[k + 2], clip) : f;
    DynTensor Wt = transpose(select(W, 0, d), 0, 1), Rt = transpose(select(R, 0, d), 0, 1);  // [in, G*h], [h, G*h]
    int64_t gh = int64_t(gates) * h;
    DynTensor wb = DynTensor::zeros(Shape{gh}, X.dtype(), c.device), rb = wb;
    if (c.has(3)) {
      DynTensor b = select(c.in(3), 0, d);
      wb = narrow(b, 0, 0, gh);
      rb = narrow(b, 0, gh, gh);
    }
    DynTensor H = state(5, d), C = state(6, d);
    std::optional<DynTensor> P;
    if (cell == Cell::lstm && c.has(7)) P = select(c.in(7), 0, d);
    std::vector<DynTensor> out(static_cast<size_t>(seq));
    for (int64_t step = 0; step < seq; ++step) {
      int64_t t = reverse ? seq - 1 - step : step;
      DynTensor xt = select(X, 0, t);
      DynTensor xw = add(matmul(xt, Wt), wb);
      DynTensor Hn, Cn;
      if (cell == Cell::rnn) {
        Hn = f(add(xw, add(matmul(H, Rt), rb)));
      } else if (cell == Cell::gru) {
        bool lbr = c.attr_i("linear_before_reset", 0) != 0;
        DynTensor hr = add(matmul(H, narrow(Rt, 1, 0, 2 * h)), narrow(rb, 0, 0, 2 * h));
        DynTensor zr = add(narrow(xw, 1, 0, 2 * h), hr);
        DynTensor z = f(narrow(zr, 1, 0, h)), r = f(narrow(zr, 1, h, h));
        DynTensor rh = narrow(Rt, 1, 2 * h, h), rbh = narrow(rb, 0, 2 * h, h);
        DynTensor hh = lbr ? mul(r, add(matmul(H, rh), rbh)) : add(matmul(mul(r, H), rh), rbh);
        DynTensor cand = g(add(narrow(xw, 1, 2 * h, h), hh));
        Hn = add(mul(sub(1.0, z), cand), mul(z, H));
      } else {
        DynTensor a = add(xw, add(matmul(H, Rt), rb));
        DynTensor i = narrow(a, 1, 0, h), o = narrow(a, 1, h, h), fg = narrow(a, 1, 2 * h, h), cc = narrow(a, 1, 3 * h, h);
        if (P) {
          i = add(i, mul(narrow(*P, 0, 0, h), C));
          fg = add(fg, mul(narrow(*P, 0, 2 * h, h), C));
        }
        i = f(i);
        fg = f(fg);
        Cn = add(mul(fg, C), mul(i, g(cc)));
        if (P) o = add(o, mul(narrow(*P, 0, h, h), Cn));
        Hn = mul(f(o), hact(Cn));
      }
      if (masked) {
        std::vector<bool> live;
        for (int64_t l : *lens) live.push_back(t < l);
        DynTensor m = DynTensor::from_vector<bool>(live, Shape{batch, 1}, c.device);
        DynTensor zero = DynTensor::zeros(Shape{batch, h}, X.dtype(), c.device);
        out[size_t(t)] = where(m, Hn, zero);
        H = where(m, Hn, H);
        if (cell == Cell::lstm) C = where(m, Cn, C);
      } else {
        out[size_t(t)] = Hn;
        H = Hn;
        if (cell == Cell::lstm) C = Cn;
      }
    }
    ys.push_back(seq ? stack(out, 0) : DynTensor::zeros(Shape{0, batch, h}, X.dtype(), c.device));
    hs.push_back(H);
    cs.push_back(C);
  }
  DynTensor Y = stack(ys, 1), Yh = stack(hs, 0), Yc = stack(cs, 0);  // [seq, dirs, batch, h], [dirs, batch, h]
  if (layout) {
    Y = permute(Y, {2, 0, 1, 3});
    Yh = transpose(Yh, 0, 1);
    Yc = transpose(Yc, 0, 1);
  }
  OpResult r{Y, Yh};
  if (cell == Cell::lstm) r.push_back(Yc);
  return r;
}

}  // namespace

void register_rnn_ops(OpTable& t) {
  t["RNN"] = [](OpContext& c) { return recurrent(c, Cell::rnn); };
  t["GRU"] = [](OpContext& c) { return recurrent(c, Cell::gru); };
  t["LSTM"] = [](OpContext& c) { return recurrent(c, Cell::lstm); };
}

}  // namespace ember::onnx::detail
