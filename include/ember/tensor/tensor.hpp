// Tensor<D, K>: the typed user API — rank D checked at compile time, kind K (Float, Int, Bool).
// A thin wrapper over DynTensor; every method forwards to the free functions of ops.hpp.
//
//   auto x = Tensor<2>::zeros({2, 3});
//   Tensor<2> y = (x + 1.0).exp();
//   Tensor<1> row = y.select<1>(0, 0);
//   # run
#pragma once

#include <array>
#include <initializer_list>
#include <ostream>
#include <utility>

#include "ember/tensor/autodiff.hpp"
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
  template <class T>  // Tensor<1>::from_vector({1.f, 2.f}, {2})
  static Tensor from_vector(std::initializer_list<T> v, Dims s, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::from_vector(std::vector<T>(v), shape_of(s), d));
  }
  static Tensor rand(Dims s, const Device& d = Device::default_device()) { return uniform(s, 0, 1, d); }
  static Tensor randn(Dims s, const Device& d = Device::default_device()) { return normal(s, 0, 1, d); }
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
  template <class T>
  T item() const { return t_.item<T>(); }
  Tensor to(const Device& d) const { return Tensor(t_.to(d)); }
  Tensor to(DType dt) const { return cast(dt); }  // PyTorch's x.to(torch.float64)
  template <class K2>
  Tensor<D, K2> cast(DType dt) const { return Tensor<D, K2>(ember::cast(t_, dt)); }
  Tensor cast(DType dt) const { return Tensor(ember::cast(t_, dt)); }

  // autodiff (see ember/tensor/autodiff.hpp)
  Tensor require_grad() const { return Tensor(t_.require_grad()); }
  bool is_require_grad() const { return t_.is_require_grad(); }
  Tensor detach() const { return Tensor(t_.detach()); }
  Gradients backward(BackwardOptions o = {}) const { return t_.backward(o); }
  Gradients backward(const Tensor& upstream, BackwardOptions o = {}) const { return t_.backward(upstream.t_, o); }
  std::optional<Tensor> grad(const Gradients& g) const {
    auto r = t_.grad(g);
    if (!r) return std::nullopt;
    return Tensor(std::move(*r));
  }

  // elementwise (kind-preserving)
#define EMBER_TENSOR_UNARY(name) \
  Tensor name() const { return Tensor(ember::name(t_)); }
  EMBER_TENSOR_UNARY(neg) EMBER_TENSOR_UNARY(abs) EMBER_TENSOR_UNARY(sign) EMBER_TENSOR_UNARY(square)
  EMBER_TENSOR_UNARY(exp) EMBER_TENSOR_UNARY(exp2) EMBER_TENSOR_UNARY(expm1) EMBER_TENSOR_UNARY(log)
  EMBER_TENSOR_UNARY(log2) EMBER_TENSOR_UNARY(log10) EMBER_TENSOR_UNARY(log1p) EMBER_TENSOR_UNARY(sqrt)
  EMBER_TENSOR_UNARY(rsqrt) EMBER_TENSOR_UNARY(reciprocal) EMBER_TENSOR_UNARY(sin) EMBER_TENSOR_UNARY(cos)
  EMBER_TENSOR_UNARY(tan) EMBER_TENSOR_UNARY(asin) EMBER_TENSOR_UNARY(acos) EMBER_TENSOR_UNARY(atan)
  EMBER_TENSOR_UNARY(sinh) EMBER_TENSOR_UNARY(cosh) EMBER_TENSOR_UNARY(tanh) EMBER_TENSOR_UNARY(asinh)
  EMBER_TENSOR_UNARY(acosh) EMBER_TENSOR_UNARY(atanh) EMBER_TENSOR_UNARY(erf) EMBER_TENSOR_UNARY(sigmoid)
  EMBER_TENSOR_UNARY(floor) EMBER_TENSOR_UNARY(ceil) EMBER_TENSOR_UNARY(round) EMBER_TENSOR_UNARY(trunc)
  EMBER_TENSOR_UNARY(relu) EMBER_TENSOR_UNARY(gelu) EMBER_TENSOR_UNARY(gelu_tanh) EMBER_TENSOR_UNARY(silu)
  EMBER_TENSOR_UNARY(hard_sigmoid) EMBER_TENSOR_UNARY(log_sigmoid) EMBER_TENSOR_UNARY(contiguous)
#undef EMBER_TENSOR_UNARY
  Tensor leaky_relu(double slope = 0.01) const { return Tensor(ember::leaky_relu(t_, slope)); }
  Tensor softplus(double beta = 1, double threshold = 20) const { return Tensor(ember::softplus(t_, beta, threshold)); }
  Tensor pow(Scalar p) const { return Tensor(ember::pow(t_, p)); }
  Tensor pow(const Tensor& p) const { return Tensor(ember::pow(t_, p.t_)); }
  Tensor fmod(Scalar v) const { return Tensor(ember::fmod(t_, v)); }
  Tensor remainder(Scalar v) const { return Tensor(ember::remainder(t_, v)); }
  Tensor minimum(const Tensor& o) const { return Tensor(ember::minimum(t_, o.t_)); }
  Tensor maximum(const Tensor& o) const { return Tensor(ember::maximum(t_, o.t_)); }
  Tensor atan2(const Tensor& o) const { return Tensor(ember::atan2(t_, o.t_)); }
  Tensor hypot(const Tensor& o) const { return Tensor(ember::hypot(t_, o.t_)); }
  Tensor lerp(const Tensor& end, Scalar w) const { return Tensor(ember::lerp(t_, end.t_, w)); }
  Tensor clamp(Scalar lo, Scalar hi) const { return Tensor(ember::clamp(t_, lo, hi)); }
  Tensor clamp_min(Scalar lo) const { return Tensor(ember::clamp_min(t_, lo)); }
  Tensor clamp_max(Scalar hi) const { return Tensor(ember::clamp_max(t_, hi)); }
  Tensor mask_fill(const Tensor<D, Bool>& mask, Scalar v) const { return Tensor(ember::mask_fill(t_, mask.dyn(), v)); }
  Tensor mask_where(const Tensor<D, Bool>& mask, const Tensor& v) const {
    return Tensor(ember::mask_where(t_, mask.dyn(), v.t_));
  }
  Tensor<D, Bool> is_nan() const { return Tensor<D, Bool>(ember::is_nan(t_)); }
  Tensor<D, Bool> is_inf() const { return Tensor<D, Bool>(ember::is_inf(t_)); }
  Tensor<D, Bool> is_finite() const { return Tensor<D, Bool>(ember::is_finite(t_)); }
#define EMBER_TENSOR_COMPARE(name)                                                                  \
  Tensor<D, Bool> name(const Tensor& o) const { return Tensor<D, Bool>(ember::name(t_, o.t_)); } \
  Tensor<D, Bool> name(Scalar o) const { return Tensor<D, Bool>(ember::name(t_, o)); }
  EMBER_TENSOR_COMPARE(equal) EMBER_TENSOR_COMPARE(not_equal) EMBER_TENSOR_COMPARE(greater)
  EMBER_TENSOR_COMPARE(greater_equal) EMBER_TENSOR_COMPARE(lower) EMBER_TENSOR_COMPARE(lower_equal)
#undef EMBER_TENSOR_COMPARE
#define EMBER_TENSOR_LOGIC(name) \
  Tensor name(const Tensor& o) const { return Tensor(ember::name(t_, o.t_)); }
  EMBER_TENSOR_LOGIC(bool_and) EMBER_TENSOR_LOGIC(bool_or) EMBER_TENSOR_LOGIC(bool_xor)
  EMBER_TENSOR_LOGIC(bitwise_and) EMBER_TENSOR_LOGIC(bitwise_or) EMBER_TENSOR_LOGIC(bitwise_xor)
  EMBER_TENSOR_LOGIC(shift_left) EMBER_TENSOR_LOGIC(shift_right)
#undef EMBER_TENSOR_LOGIC
  Tensor bool_not() const { return Tensor(ember::bool_not(t_)); }
  Tensor bitwise_not() const { return Tensor(ember::bitwise_not(t_)); }

  // reductions: whole-tensor forms give a 0-d tensor; *_dim forms keep the reduced dim (size 1)
  Tensor<0, K> sum() const { return Tensor<0, K>(ember::sum(t_)); }
  Tensor<0, K> mean() const { return Tensor<0, K>(ember::mean(t_)); }
  Tensor<0, K> prod() const { return Tensor<0, K>(ember::prod(t_)); }
  Tensor<0, K> max() const { return Tensor<0, K>(ember::max(t_)); }
  Tensor<0, K> min() const { return Tensor<0, K>(ember::min(t_)); }
  Tensor<0, Bool> any() const { return Tensor<0, Bool>(ember::any(t_)); }
  Tensor<0, Bool> all() const { return Tensor<0, Bool>(ember::all(t_)); }
  Tensor<0, K> var(int64_t correction = 1) const { return Tensor<0, K>(ember::var(t_, {}, correction)); }
  Tensor<0, K> stddev(int64_t correction = 1) const { return Tensor<0, K>(ember::stddev(t_, {}, correction)); }
  Tensor<0, K> norm(double p = 2) const { return Tensor<0, K>(ember::norm(t_, p)); }
  Tensor sum_dim(int dim) const { return Tensor(ember::sum(t_, {dim}, true)); }
  Tensor mean_dim(int dim) const { return Tensor(ember::mean(t_, {dim}, true)); }
  Tensor prod_dim(int dim) const { return Tensor(ember::prod(t_, {dim}, true)); }
  // values and indices: auto [values, indices] = x.max_dim(1);
  std::pair<Tensor, Tensor<D, Int>> max_dim(int dim) const { return max_dim_with_indices(dim); }
  std::pair<Tensor, Tensor<D, Int>> min_dim(int dim) const { return min_dim_with_indices(dim); }
  Tensor var_dim(int dim, int64_t correction = 1) const { return Tensor(ember::var(t_, {dim}, correction, true)); }
  Tensor stddev_dim(int dim, int64_t correction = 1) const { return Tensor(ember::stddev(t_, {dim}, correction, true)); }
  Tensor logsumexp_dim(int dim) const { return Tensor(ember::logsumexp(t_, {dim}, true)); }
  std::pair<Tensor, Tensor<D, Int>> max_dim_with_indices(int dim) const {
    auto [v, i] = ember::max_dim(t_, dim, true);
    return {Tensor(std::move(v)), Tensor<D, Int>(std::move(i))};
  }
  std::pair<Tensor, Tensor<D, Int>> min_dim_with_indices(int dim) const {
    auto [v, i] = ember::min_dim(t_, dim, true);
    return {Tensor(std::move(v)), Tensor<D, Int>(std::move(i))};
  }
  Tensor<D, Int> argmax(int dim) const { return Tensor<D, Int>(ember::argmax(t_, dim, true)); }
  Tensor<D, Int> argmin(int dim) const { return Tensor<D, Int>(ember::argmin(t_, dim, true)); }
  Tensor softmax(int dim) const { return Tensor(ember::softmax(t_, dim)); }
  Tensor log_softmax(int dim) const { return Tensor(ember::log_softmax(t_, dim)); }
  Tensor cumsum(int dim) const { return Tensor(ember::cumsum(t_, dim)); }
  Tensor cumprod(int dim) const { return Tensor(ember::cumprod(t_, dim)); }
  std::pair<Tensor, Tensor<D, Int>> sort(int dim = -1, bool descending = false) const {
    auto [v, i] = ember::sort(t_, dim, descending);
    return {Tensor(std::move(v)), Tensor<D, Int>(std::move(i))};
  }
  Tensor<D, Int> argsort(int dim = -1, bool descending = false) const {
    return Tensor<D, Int>(ember::argsort(t_, dim, descending));
  }
  std::pair<Tensor, Tensor<D, Int>> topk(int64_t k, int dim = -1, bool largest = true) const {
    auto [v, i] = ember::topk(t_, k, dim, largest);
    return {Tensor(std::move(v)), Tensor<D, Int>(std::move(i))};
  }

  // linear algebra, shape and indexing
  Tensor matmul(const Tensor& o) const requires(D >= 2) { return Tensor(ember::matmul(t_, o.t_)); }
  Tensor transpose() const requires(D >= 2) { return Tensor(ember::transpose(t_, -2, -1)); }
  Tensor swap_dims(int a, int b) const { return Tensor(ember::swap_dims(t_, a, b)); }
  Tensor movedim(int src, int dst) const { return Tensor(ember::movedim(t_, src, dst)); }
  Tensor permute(std::array<int, D> p) const { return Tensor(ember::permute(t_, ember::Dims(p.begin(), p.end()))); }
  Tensor flip(ember::Dims dims) const { return Tensor(ember::flip(t_, std::move(dims))); }
  Tensor roll(Sizes shifts, ember::Dims dims) const { return Tensor(ember::roll(t_, std::move(shifts), std::move(dims))); }
  template <int D2>
  Tensor<D2, K> reshape(std::array<int64_t, D2> s) const { return Tensor<D2, K>(ember::reshape(t_, Sizes(s.begin(), s.end()))); }
  template <int D2>
  Tensor<D2, K> flatten(int start, int end) const { return Tensor<D2, K>(ember::flatten(t_, start, end)); }
  template <int D2 = D + 1>
  Tensor<D2, K> unsqueeze(int dim) const { return Tensor<D2, K>(ember::unsqueeze(t_, dim)); }
  template <int D2 = D - 1>
  Tensor<D2, K> squeeze(int dim) const { return Tensor<D2, K>(ember::squeeze(t_, dim)); }
  template <int D2 = D - 1>
  Tensor<D2, K> select(int dim, int64_t index) const { return Tensor<D2, K>(ember::select(t_, dim, index)); }
  Tensor slice(std::vector<Slice> r) const { return Tensor(ember::slice(t_, std::move(r))); }
  Tensor slice_assign(std::vector<Slice> r, const Tensor& v) const { return Tensor(ember::slice_assign(t_, std::move(r), v.t_)); }
  Tensor narrow(int dim, int64_t start, int64_t len) const { return Tensor(ember::narrow(t_, dim, start, len)); }
  Tensor expand(Dims s) const { return Tensor(ember::expand(t_, Sizes(s.begin(), s.end()))); }
  Tensor repeat(Dims r) const { return Tensor(ember::repeat(t_, Sizes(r.begin(), r.end()))); }
  Tensor pad(Sizes pads, PadMode mode = PadMode::constant, double value = 0) const {
    return Tensor(ember::pad(t_, std::move(pads), mode, value));
  }
  Tensor tril(int64_t k = 0) const requires(D >= 2) { return Tensor(ember::tril(t_, k)); }
  Tensor triu(int64_t k = 0) const requires(D >= 2) { return Tensor(ember::triu(t_, k)); }
  std::vector<Tensor> chunk(int64_t n, int dim = 0) const { return wrap(ember::chunk(t_, n, dim)); }
  std::vector<Tensor> split(int64_t size, int dim = 0) const { return wrap(ember::split(t_, size, dim)); }
  Tensor gather(int dim, const Tensor<D, Int>& index) const { return Tensor(ember::gather(t_, dim, index.dyn())); }
  Tensor scatter(int dim, const Tensor<D, Int>& index, const Tensor& src) const {
    return Tensor(ember::scatter(t_, dim, index.dyn(), src.t_));
  }
  Tensor scatter_add(int dim, const Tensor<D, Int>& index, const Tensor& src) const {
    return Tensor(ember::scatter_add(t_, dim, index.dyn(), src.t_));
  }
  Tensor index_select(int dim, const Tensor<1, Int>& index) const { return Tensor(ember::index_select(t_, dim, index.dyn())); }
  Tensor select_assign(int dim, const Tensor<1, Int>& index, const Tensor& src) const {
    return Tensor(ember::select_assign(t_, dim, index.dyn(), src.t_));
  }
  Tensor select_add(int dim, const Tensor<1, Int>& index, const Tensor& src) const {
    return Tensor(ember::select_add(t_, dim, index.dyn(), src.t_));
  }
  Tensor<1, K> masked_select(const Tensor<D, Bool>& mask) const { return Tensor<1, K>(ember::masked_select(t_, mask.dyn())); }
  Tensor<2, Int> nonzero() const { return Tensor<2, Int>(ember::nonzero(t_)); }
  static Tensor cat(const std::vector<Tensor>& xs, int dim) { return Tensor(ember::cat(unwrap(xs), dim)); }
  static Tensor<D + 1, K> stack(const std::vector<Tensor>& xs, int dim) { return Tensor<D + 1, K>(ember::stack(unwrap(xs), dim)); }

  friend Tensor operator+(Tensor a, Tensor b) { return Tensor(std::move(a.t_) + std::move(b.t_)); }
  friend Tensor operator-(Tensor a, Tensor b) { return Tensor(std::move(a.t_) - std::move(b.t_)); }
  friend Tensor operator*(Tensor a, Tensor b) { return Tensor(std::move(a.t_) * std::move(b.t_)); }
  friend Tensor operator/(Tensor a, Tensor b) { return Tensor(std::move(a.t_) / std::move(b.t_)); }
  friend Tensor operator+(Tensor a, Scalar b) { return Tensor(std::move(a.t_) + b); }
  friend Tensor operator-(Tensor a, Scalar b) { return Tensor(std::move(a.t_) - b); }
  friend Tensor operator*(Tensor a, Scalar b) { return Tensor(std::move(a.t_) * b); }
  friend Tensor operator/(Tensor a, Scalar b) { return Tensor(std::move(a.t_) / b); }
  friend Tensor operator-(Tensor a) { return Tensor(-std::move(a.t_)); }
  friend Tensor operator+(Scalar a, Tensor b) { return Tensor(a + std::move(b.t_)); }
  friend Tensor operator-(Scalar a, Tensor b) { return Tensor(a - std::move(b.t_)); }
  friend Tensor operator*(Scalar a, Tensor b) { return Tensor(a * std::move(b.t_)); }
  friend Tensor operator/(Scalar a, Tensor b) { return Tensor(a / std::move(b.t_)); }
  // y += 1.0 computes a new value and rebinds y
  Tensor& operator+=(const Tensor& o) { return *this = *this + o; }
  Tensor& operator-=(const Tensor& o) { return *this = *this - o; }
  Tensor& operator*=(const Tensor& o) { return *this = *this * o; }
  Tensor& operator/=(const Tensor& o) { return *this = *this / o; }
  Tensor& operator+=(Scalar o) { return *this = std::move(*this) + o; }
  Tensor& operator-=(Scalar o) { return *this = std::move(*this) - o; }
  Tensor& operator*=(Scalar o) { return *this = std::move(*this) * o; }
  Tensor& operator/=(Scalar o) { return *this = std::move(*this) / o; }
#define EMBER_TENSOR_COMPARE_OP(op)                                                                    \
  friend Tensor<D, Bool> operator op(Tensor a, Tensor b) { return Tensor<D, Bool>(std::move(a.t_) op std::move(b.t_)); } \
  friend Tensor<D, Bool> operator op(Tensor a, Scalar b) { return Tensor<D, Bool>(std::move(a.t_) op b); } \
  friend Tensor<D, Bool> operator op(Scalar a, Tensor b) { return Tensor<D, Bool>(a op std::move(b.t_)); }
  EMBER_TENSOR_COMPARE_OP(==) EMBER_TENSOR_COMPARE_OP(!=) EMBER_TENSOR_COMPARE_OP(<)
  EMBER_TENSOR_COMPARE_OP(<=) EMBER_TENSOR_COMPARE_OP(>) EMBER_TENSOR_COMPARE_OP(>=)
#undef EMBER_TENSOR_COMPARE_OP
  friend Tensor operator!(Tensor a) requires(K::kind == Kind::Bool) { return Tensor(!std::move(a.t_)); }
  friend Tensor operator&(Tensor a, Tensor b) { return Tensor(std::move(a.t_) & std::move(b.t_)); }
  friend Tensor operator|(Tensor a, Tensor b) { return Tensor(std::move(a.t_) | std::move(b.t_)); }
  friend Tensor operator^(Tensor a, Tensor b) { return Tensor(std::move(a.t_) ^ std::move(b.t_)); }
  template <int D2 = D - 1>  // y[0]
  Tensor<D2, K> operator[](int64_t index) const requires(D >= 1) { return select<D2>(0, index); }

  // PyTorch's names (the table is EMBER_PYTORCH_ALIASES in op_list.hpp): x.lt(y), x.std(), ...
#define EMBER_TENSOR_ALIAS(family, alias, name)                                      \
  template <class... A>                                                              \
  auto alias(A&&... a) const -> decltype(this->name(std::forward<A>(a)...)) {        \
    return name(std::forward<A>(a)...);                                              \
  }
  EMBER_PYTORCH_ALIASES(EMBER_TENSOR_ALIAS)
#undef EMBER_TENSOR_ALIAS

 private:
  static Shape shape_of(const Dims& s) { return Shape(s.begin(), s.end()); }
  static std::vector<Tensor> wrap(std::vector<DynTensor> v) {
    std::vector<Tensor> out;
    for (auto& t : v) out.emplace_back(std::move(t));
    return out;
  }
  static std::vector<DynTensor> unwrap(const std::vector<Tensor>& v) {
    std::vector<DynTensor> out;
    for (auto& t : v) out.push_back(t.t_);
    return out;
  }
  DynTensor t_;
};

// Free-function forms for the typed API (the DynTensor versions live in ops.hpp).
template <int D, class K> Tensor<D, K> gelu(const Tensor<D, K>& x) { return x.gelu(); }
template <int D, class K> Tensor<D, K> silu(const Tensor<D, K>& x) { return x.silu(); }
template <int D, class K> Tensor<D, K> relu(const Tensor<D, K>& x) { return x.relu(); }
template <int D, class K> Tensor<D, K> softmax(const Tensor<D, K>& x, int dim) { return x.softmax(dim); }
template <int D, class K> Tensor<D, K> matmul(const Tensor<D, K>& a, const Tensor<D, K>& b) { return a.matmul(b); }
template <int D, class K>
Tensor<D, K> where(const Tensor<D, Bool>& c, const Tensor<D, K>& a, const Tensor<D, K>& b) {
  return Tensor<D, K>(ember::where(c.dyn(), a.dyn(), b.dyn()));
}
template <int D, class K> Tensor<D, K> zeros_like(const Tensor<D, K>& x) { return Tensor<D, K>(zeros_like(x.dyn())); }
template <int D, class K> Tensor<D, K> ones_like(const Tensor<D, K>& x) { return Tensor<D, K>(ones_like(x.dyn())); }
template <int D, class K>
Tensor<D, K> full_like(const Tensor<D, K>& x, Scalar v) { return Tensor<D, K>(full_like(x.dyn(), v)); }
template <int D, class K> Tensor<D, K> rand_like(const Tensor<D, K>& x) { return Tensor<D, K>(rand_like(x.dyn())); }
template <int D, class K> Tensor<D, K> randn_like(const Tensor<D, K>& x) { return Tensor<D, K>(randn_like(x.dyn())); }
template <int D, class K>
std::ostream& operator<<(std::ostream& os, const Tensor<D, K>& x) { return os << x.dyn(); }

template <int D>
Tensor<D + 1, Int> one_hot(const Tensor<D, Int>& x, int64_t num_classes) {
  return Tensor<D + 1, Int>(ember::one_hot(x.dyn(), num_classes));
}

}  // namespace ember
