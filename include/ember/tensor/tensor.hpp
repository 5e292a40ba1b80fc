// Tensor<D, K>: the typed user API — rank D checked at compile time, kind K (Float, Int, Bool).
// A thin wrapper over DynTensor; every method forwards to the free functions of ops.hpp.
//
//   auto x = Tensor<2>::zeros({2, 3});
//   Tensor<2> y = (x + 1.0).exp();
//   Tensor<1> row = y.select<1>(0, 0);
#pragma once

#include <array>

#include "ember/tensor/ops.hpp"

namespace ember {

struct Float {
  static constexpr Kind kind = Kind::Float;
  static constexpr DType default_dtype = DType::f32;
};
struct Int {
  static constexpr Kind kind = Kind::Int;
  static constexpr DType default_dtype = DType::i64;
};
struct Bool {
  static constexpr Kind kind = Kind::Bool;
  static constexpr DType default_dtype = DType::boolean;
};

template <int D, class K = Float>
class Tensor {
  static_assert(D >= 0, "rank must be non-negative");

 public:
  using Dims = std::array<int64_t, D>;

  Tensor() = default;
  explicit Tensor(DynTensor t) : t_(std::move(t)) {
    EMBER_CHECK(t_.rank() == D, "Tensor<", D, ">: got a tensor of rank ", t_.rank(), " (shape ", t_.shape(), ")");
    EMBER_CHECK(kind_of(t_.dtype()) == K::kind, "Tensor<", D, ">: dtype ", t_.dtype(), " does not match its kind");
  }

  static Tensor zeros(Dims s, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::zeros(shape_of(s), K::default_dtype, d));
  }
  static Tensor ones(Dims s, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::ones(shape_of(s), K::default_dtype, d));
  }
  static Tensor full(Dims s, Scalar v, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::full(shape_of(s), v, K::default_dtype, d));
  }
  static Tensor from_data(const TensorData& data, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::from_data(data, d));
  }
  template <class T>
  static Tensor from_vector(const std::vector<T>& v, Dims s, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::from_vector(v, shape_of(s), d));
  }
  static Tensor uniform(Dims s, double lo = 0, double hi = 1, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::uniform(shape_of(s), lo, hi, K::default_dtype, d));
  }
  static Tensor normal(Dims s, double mean = 0, double std = 1, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::normal(shape_of(s), mean, std, K::default_dtype, d));
  }

  const DynTensor& dyn() const& { return t_; }
  DynTensor dyn() && { return std::move(t_); }
  const Shape& shape() const { return t_.shape(); }
  DType dtype() const { return t_.dtype(); }
  const Device& device() const { return t_.device(); }
  int64_t numel() const { return t_.numel(); }
  TensorData into_data() const { return t_.into_data(); }
  template <class T>
  std::vector<T> to_vector() const { return t_.to_vector<T>(); }
  double item() const { return t_.item(); }
  Tensor to(const Device& d) const { return Tensor(t_.to(d)); }
  template <class K2>
  Tensor<D, K2> cast(DType dt) const { return Tensor<D, K2>(ember::cast(t_, dt)); }
  Tensor cast(DType dt) const { return Tensor(ember::cast(t_, dt)); }

  // elementwise
  Tensor exp() const { return Tensor(ember::exp(t_)); }
  Tensor log() const { return Tensor(ember::log(t_)); }
  Tensor sqrt() const { return Tensor(ember::sqrt(t_)); }
  Tensor abs() const { return Tensor(ember::abs(t_)); }
  Tensor neg() const { return Tensor(ember::neg(t_)); }
  Tensor tanh() const { return Tensor(ember::tanh(t_)); }
  Tensor sigmoid() const { return Tensor(ember::sigmoid(t_)); }
  Tensor relu() const { return Tensor(ember::relu(t_)); }
  Tensor pow(Scalar p) const { return Tensor(ember::pow(t_, p)); }
  Tensor clamp(Scalar lo, Scalar hi) const { return Tensor(ember::clamp(t_, lo, hi)); }
  Tensor<D, Bool> equal(const Tensor& o) const { return Tensor<D, Bool>(ember::equal(t_, o.t_)); }
  Tensor<D, Bool> greater(Scalar s) const { return Tensor<D, Bool>(ember::greater(t_, s)); }
  Tensor<D, Bool> lower(Scalar s) const { return Tensor<D, Bool>(ember::lower(t_, s)); }

  // reductions: sum()/mean() give a 0-d tensor; *_dim keeps the reduced dim (size 1)
  Tensor<0, K> sum() const { return Tensor<0, K>(ember::sum(t_)); }
  Tensor<0, K> mean() const { return Tensor<0, K>(ember::mean(t_)); }
  Tensor<0, K> max() const { return Tensor<0, K>(ember::max(t_)); }
  Tensor<0, K> min() const { return Tensor<0, K>(ember::min(t_)); }
  Tensor sum_dim(int dim) const { return Tensor(ember::sum(t_, {dim}, true)); }
  Tensor mean_dim(int dim) const { return Tensor(ember::mean(t_, {dim}, true)); }
  Tensor max_dim(int dim) const { return Tensor(ember::max(t_, {dim}, true)); }
  Tensor<D, Int> argmax(int dim) const { return Tensor<D, Int>(ember::argmax(t_, dim, true)); }
  Tensor softmax(int dim) const { return Tensor(ember::softmax(t_, dim)); }
  Tensor log_softmax(int dim) const { return Tensor(ember::log_softmax(t_, dim)); }

  // linear algebra and shape
  Tensor matmul(const Tensor& o) const requires(D >= 2) { return Tensor(ember::matmul(t_, o.t_)); }
  Tensor transpose() const requires(D >= 2) { return Tensor(ember::transpose(t_, -2, -1)); }
  Tensor swap_dims(int a, int b) const { return Tensor(ember::swap_dims(t_, a, b)); }
  Tensor permute(std::array<int, D> p) const { return Tensor(ember::permute(t_, ember::Dims(p.begin(), p.end()))); }
  template <int D2>
  Tensor<D2, K> reshape(std::array<int64_t, D2> s) const { return Tensor<D2, K>(ember::reshape(t_, Sizes(s.begin(), s.end()))); }
  template <int D2>
  Tensor<D2, K> flatten(int start, int end) const { return Tensor<D2, K>(ember::flatten(t_, start, end)); }
  template <int D2 = D + 1>
  Tensor<D2, K> unsqueeze(int dim) const { return Tensor<D2, K>(ember::unsqueeze(t_, dim)); }
  template <int D2 = D - 1>
  Tensor<D2, K> squeeze(int dim) const { return Tensor<D2, K>(ember::squeeze(t_, dim)); }
  Tensor slice(std::vector<Slice> r) const { return Tensor(ember::slice(t_, std::move(r))); }
  Tensor narrow(int dim, int64_t start, int64_t len) const { return Tensor(ember::narrow(t_, dim, start, len)); }
  Tensor expand(Dims s) const { return Tensor(ember::expand(t_, Sizes(s.begin(), s.end()))); }
  static Tensor cat(const std::vector<Tensor>& xs, int dim) {
    std::vector<DynTensor> v;
    for (auto& x : xs) v.push_back(x.t_);
    return Tensor(ember::cat(std::move(v), dim));
  }

  friend Tensor operator+(Tensor a, Tensor b) { return Tensor(std::move(a.t_) + std::move(b.t_)); }
  friend Tensor operator-(Tensor a, Tensor b) { return Tensor(std::move(a.t_) - std::move(b.t_)); }
  friend Tensor operator*(Tensor a, Tensor b) { return Tensor(std::move(a.t_) * std::move(b.t_)); }
  friend Tensor operator/(Tensor a, Tensor b) { return Tensor(std::move(a.t_) / std::move(b.t_)); }
  friend Tensor operator+(Tensor a, Scalar b) { return Tensor(std::move(a.t_) + b); }
  friend Tensor operator-(Tensor a, Scalar b) { return Tensor(std::move(a.t_) - b); }
  friend Tensor operator*(Tensor a, Scalar b) { return Tensor(std::move(a.t_) * b); }
  friend Tensor operator/(Tensor a, Scalar b) { return Tensor(std::move(a.t_) / b); }
  friend Tensor operator-(Tensor a) { return Tensor(-std::move(a.t_)); }

 private:
  static Shape shape_of(const Dims& s) { return Shape(s.begin(), s.end()); }
  DynTensor t_;
};

// Free-function forms for the typed API.
template <int D> Tensor<D> gelu(const Tensor<D>& x) { return Tensor<D>(ember::gelu(x.dyn())); }
template <int D> Tensor<D> silu(const Tensor<D>& x) { return Tensor<D>(ember::silu(x.dyn())); }

}  // namespace ember
