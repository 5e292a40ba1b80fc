// Initializers: the formulas of torch.nn.init, drawing from the device's seeded generator.
#include "ember/nn/init.hpp"

#include <cmath>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::nn {

double calculate_gain(const std::string& n, double param) {
  if (n == "linear" || n == "identity" || n == "sigmoid" || n.rfind("conv", 0) == 0) return 1.0;
  if (n == "tanh") return 5.0 / 3.0;
  if (n == "relu") return std::sqrt(2.0);
  if (n == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  if (n == "selu") return 0.75;
  EMBER_FAIL("calculate_gain: unknown nonlinearity '", n, "'");
}

std::pair<int64_t, int64_t> fans(const Shape& s) {
  EMBER_CHECK(s.rank() >= 1, "init: fans need a tensor of rank >= 1, got ", s);
  if (s.rank() == 1) return {s[0], s[0]};
  int64_t receptive = 1;
  for (int i = 2; i < s.rank(); ++i) receptive *= s[i];
  return {s[1] * receptive, s[0] * receptive};
}

namespace {
// Q of the QR decomposition of a rows x cols matrix (rows >= cols), signs fixed by diag(R) as in
// torch.nn.init.orthogonal_ (modified Gram-Schmidt in double precision).
std::vector<double> orthonormal_columns(std::vector<double> a, int64_t rows, int64_t cols) {
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i) dot += a[i * cols + k] * a[i * cols + j];
      for (int64_t i = 0; i < rows; ++i) a[i * cols + j] -= dot * a[i * cols + k];
    }
    double norm = 0;
    for (int64_t i = 0; i < rows; ++i) norm += a[i * cols + j] * a[i * cols + j];
    norm = std::sqrt(norm);
    EMBER_CHECK(norm > 0, "orthogonal init: degenerate random matrix");
    for (int64_t i = 0; i < rows; ++i) a[i * cols + j] /= norm;
  }
  return a;
}
}  // namespace

DynTensor Initializer::init(const Shape& shape, const Device& d, DType dt) const {
  auto fan = [&](FanMode m) {
    auto [fi, fo] = fans(shape);
    int64_t f = m == FanMode::fan_in ? fan_in.value_or(fi) : fan_out.value_or(fo);
    EMBER_CHECK(f > 0, "init: zero fan for shape ", shape);
    return double(f);
  };
  switch (kind) {
    case Kind::constant: return DynTensor::full(shape, a, dt, d);
    case Kind::uniform: return DynTensor::uniform(shape, a, b, dt, d);
    case Kind::normal: return DynTensor::normal(shape, a, b, dt, d);
    case Kind::xavier_uniform:
    case Kind::xavier_normal: {
      double std = gain * std::sqrt(2.0 / (fan(FanMode::fan_in) + fan(FanMode::fan_out)));
      if (kind == Kind::xavier_normal) return DynTensor::normal(shape, 0, std, dt, d);
      double bound = std::sqrt(3.0) * std;
      return DynTensor::uniform(shape, -bound, bound, dt, d);
    }
    case Kind::kaiming_uniform:
    case Kind::kaiming_normal: {
      double std = gain / std::sqrt(fan(mode));
      if (kind == Kind::kaiming_normal) return DynTensor::normal(shape, 0, std, dt, d);
      double bound = std::sqrt(3.0) * std;
      return DynTensor::uniform(shape, -bound, bound, dt, d);
    }
    case Kind::orthogonal: {
      EMBER_CHECK(shape.rank() >= 2, "orthogonal init: needs rank >= 2, got ", shape);
      const int64_t rows = shape[0], cols = shape.numel() / rows;
      const bool tall = rows >= cols;
      const int64_t r = tall ? rows : cols, c = tall ? cols : rows;
      std::vector<double> m = DynTensor::normal({r, c}, 0, 1, DType::f64, d).to_vector<double>();
      std::vector<double> q = orthonormal_columns(std::move(m), r, c);
      std::vector<double> out(rows * cols);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) out[i * cols + j] = gain * (tall ? q[i * c + j] : q[j * c + i]);
      return DynTensor::from_data(TensorData::from_doubles(out, shape, dt), d);
    }
  }
  EMBER_FAIL("init: unknown initializer");
}

}  // namespace ember::nn
