// Sinusoidal and rotary position encodings. The tables are computed on the host in double
// precision and stored as f32.
#include "ember/nn/positional.hpp"

#include <cmath>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/nn/functional.hpp"

namespace ember::nn {

PositionalEncoding PositionalEncodingConfig::init(const Device& device) const {
  EMBER_CHECK(d_model > 0 && max_len > 0, "PositionalEncoding: d_model and max_len must be positive, got ", d_model,
              " and ", max_len);
  EMBER_CHECK(dropout >= 0 && dropout <= 1, "PositionalEncoding: dropout must be in [0, 1], got ", dropout);
  std::vector<float> pe(size_t(max_len * d_model));
  const double log_base = -std::log(10000.0) / double(d_model);
  for (int64_t pos = 0; pos < max_len; ++pos)
    for (int64_t i = 0; i < d_model; ++i) {
      const double angle = double(pos) * std::exp(double(i - i % 2) * log_base);
      pe[size_t(pos * d_model + i)] = float(i % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  PositionalEncoding m;
  m.pe.value = DynTensor::from_vector(pe, {max_len, 1, d_model}, device);
  m.dropout = dropout;
  m.batch_first = batch_first;
  return m;
}

DynTensor PositionalEncoding::forward(const DynTensor& x) const {
  return detail::in_module(ember_module_, "PositionalEncoding", [&] {
    const int64_t max_len = pe.value.size(0), d = pe.value.size(2);
    EMBER_CHECK((x.rank() == 2 || x.rank() == 3) && x.size(-1) == d, "PositionalEncoding: input must be [L, N, ", d,
                "] (or [N, L, ", d, "] with batch_first, or [L, ", d, "]), got ", x.shape());
    const int seq_dim = x.rank() == 3 && batch_first ? 1 : 0;
    const int64_t len = x.size(seq_dim);
    EMBER_CHECK(len <= max_len, "PositionalEncoding: sequence length ", len, " exceeds max_len ", max_len);
    DynTensor table = narrow(pe.value, 0, 0, len);  // [L, 1, d]
    if (x.rank() == 2)
      table = squeeze(table, 1);
    else if (batch_first)
      table = transpose(table, 0, 1);  // [1, L, d]
    if (table.dtype() != x.dtype()) table = table.cast(x.dtype());
    return nn::dropout(x + table, dropout, mode.training);
  });
}

RotaryEncoding RotaryEncodingConfig::init(const Device& device) const {
  EMBER_CHECK(d_model > 0 && d_model % 2 == 0, "RotaryEncoding: d_model must be positive and even, got ", d_model);
  EMBER_CHECK(max_len > 0, "RotaryEncoding: max_len must be positive, got ", max_len);
  EMBER_CHECK(theta > 0, "RotaryEncoding: theta must be positive, got ", theta);
  const int64_t half = d_model / 2;
  std::vector<float> c(size_t(max_len * half)), s(c.size());
  for (int64_t pos = 0; pos < max_len; ++pos)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = double(pos) * std::pow(theta, -2.0 * double(i) / double(d_model));
      c[size_t(pos * half + i)] = float(std::cos(angle));
      s[size_t(pos * half + i)] = float(std::sin(angle));
    }
  RotaryEncoding m;
  m.cos = DynTensor::from_vector(c, {max_len, half}, device);
  m.sin = DynTensor::from_vector(s, {max_len, half}, device);
  m.interleaved = interleaved;
  return m;
}

DynTensor RotaryEncoding::forward(const DynTensor& x, int64_t start) const {
  return detail::in_module(ember_module_, "RotaryEncoding", [&] {
    const int64_t max_len = cos.size(0), half = cos.size(1), d = 2 * half;
    EMBER_CHECK(x.rank() >= 2 && x.size(-1) == d, "RotaryEncoding: input must be [..., L, ", d, "], got ", x.shape());
    const int64_t len = x.size(-2);
    EMBER_CHECK(start >= 0 && start + len <= max_len, "RotaryEncoding: positions [", start, ", ", start + len,
                ") exceed max_len ", max_len);
    auto table = [&](const DynTensor& t) {
      DynTensor r = narrow(t, 0, start, len);  // [L, d/2]
      if (!(r.device() == x.device())) r = r.to(x.device());
      if (r.dtype() != x.dtype()) r = r.cast(x.dtype());
      return r;
    };
    const DynTensor c = table(cos), s = table(sin);
    if (interleaved) {
      Sizes pairs(x.shape().begin(), x.shape().end());
      pairs.back() = half;
      pairs.push_back(2);
      const DynTensor xp = reshape(x, pairs);  // [..., L, d/2, 2]
      const DynTensor a = select(xp, -1, 0), b = select(xp, -1, 1);
      return reshape(stack({a * c - b * s, a * s + b * c}, -1), Sizes(x.shape().begin(), x.shape().end()));
    }
    const DynTensor a = narrow(x, -1, 0, half), b = narrow(x, -1, half, half);
    return cat({a * c - b * s, a * s + b * c}, -1);
  });
}

}  // namespace ember::nn
