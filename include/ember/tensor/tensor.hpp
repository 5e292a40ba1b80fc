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

// Kind tag of floating tensors (f64, f32, f16, bf16); factories make f32.
struct Float {
  static constexpr Kind kind = Kind::Float;  // the Kind of the tensors' dtype
  static constexpr DType default_dtype = DType::f32;  // the dtype factories make
};
// Kind tag of integer tensors (i64, i32, i16, i8, u8); factories make i64.
struct Int {
  static constexpr Kind kind = Kind::Int;  // the Kind of the tensors' dtype
  static constexpr DType default_dtype = DType::i64;  // the dtype factories make
};
// Kind tag of bool tensors.
struct Bool {
  static constexpr Kind kind = Kind::Bool;  // the Kind of the tensors' dtype
  static constexpr DType default_dtype = DType::boolean;  // the dtype factories make
};

// A tensor of rank D, checked at compile time, and kind K (Float, Int or Bool), checked when it is built: a
// thin typed wrapper over a DynTensor, with its value semantics. A result whose dtype leaves the kind throws
// ember::Error (exp of an Int tensor is f32, the sum of a Bool tensor i64): cast first.
template <int D, class K = Float>
class Tensor {
  static_assert(D >= 0, "rank must be non-negative");

 public:
  using Dims = std::array<int64_t, D>;  // one size per dim

  Tensor() = default;
  // Wraps `t`; throws ember::Error unless its rank is D and its dtype of kind K.
  explicit Tensor(DynTensor t) : t_(std::move(t)) {
    EMBER_CHECK(t_.rank() == D, "Tensor<", D, ">: got a tensor of rank ", t_.rank(), " (shape ", t_.shape(), ")");
    EMBER_CHECK(kind_of(t_.dtype()) == K::kind, "Tensor<", D, ">: dtype ", t_.dtype(), " does not match its kind");
  }

  // Zeros of K's default dtype (f32, i64 or bool) on `d` (torch.zeros).
  static Tensor zeros(Dims s, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::zeros(shape_of(s), K::default_dtype, d));
  }
  // Ones of K's default dtype (torch.ones).
  static Tensor ones(Dims s, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::ones(shape_of(s), K::default_dtype, d));
  }
  // Filled with `v` in K's default dtype (torch.full).
  static Tensor full(Dims s, Scalar v, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::full(shape_of(s), v, K::default_dtype, d));
  }
  // A copy of `data` on `d`; its rank and dtype must fit D and K.
  static Tensor from_data(const TensorData& data, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::from_data(data, d));
  }
  // Row-major values of shape `s`; T's dtype (float: f32, int64_t: i64, ...) must be of kind K.
  template <class T>
  static Tensor from_vector(const std::vector<T>& v, Dims s, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::from_vector(v, shape_of(s), d));
  }
  template <class T>  // Tensor<1>::from_vector({1.f, 2.f}, {2})
  static Tensor from_vector(std::initializer_list<T> v, Dims s, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::from_vector(std::vector<T>(v), shape_of(s), d));
  }
  // Values uniform over [0, 1) (torch.rand); Float kind.
  static Tensor rand(Dims s, const Device& d = Device::default_device()) { return uniform(s, 0, 1, d); }
  // Standard normal values (torch.randn); Float kind.
  static Tensor randn(Dims s, const Device& d = Device::default_device()) { return normal(s, 0, 1, d); }
  // Values uniform over [lo, hi); Float kind.
  static Tensor uniform(Dims s, double lo = 0, double hi = 1, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::uniform(shape_of(s), lo, hi, K::default_dtype, d));
  }
  // Normal values with `mean` and standard deviation `std` (torch.normal); Float kind.
  static Tensor normal(Dims s, double mean = 0, double std = 1, const Device& d = Device::default_device()) {
    return Tensor(DynTensor::normal(shape_of(s), mean, std, K::default_dtype, d));
  }

  const DynTensor& dyn() const& { return t_; }  // the untyped tensor
  DynTensor dyn() && { return std::move(t_); }  // the untyped tensor, moved out
  const Shape& shape() const { return t_.shape(); }  // sizes per dim (D of them)
  DType dtype() const { return t_.dtype(); }  // element type, of kind K
  const Device& device() const { return t_.device(); }  // where the value lives
  int64_t numel() const { return t_.numel(); }  // number of elements
  TensorData into_data() const { return t_.into_data(); }  // a host copy, once computed
  // The values in row-major order, converted to T.
  template <class T>
  std::vector<T> to_vector() const { return t_.to_vector<T>(); }
  double item() const { return t_.item(); }  // a one-element tensor's value
  template <class T>
  T item() const { return t_.item<T>(); }  // item() converted to T
  // The value on `d`; gradients do not flow through a move to another device (DynTensor::to).
  Tensor to(const Device& d) const { return Tensor(t_.to(d)); }
  Tensor to(DType dt) const { return cast(dt); }  // PyTorch's x.to(torch.float64)
  // The values converted to `dt`, as a tensor of kind K2 (x.cast<Int>(DType::i32)).
  template <class K2>
  Tensor<D, K2> cast(DType dt) const { return Tensor<D, K2>(ember::cast(t_, dt)); }
  Tensor cast(DType dt) const { return Tensor(ember::cast(t_, dt)); }  // the values converted to `dt`, of kind K

  // autodiff (see ember/tensor/autodiff.hpp)
  // A handle whose gradient backward() computes (torch.Tensor.requires_grad_); Float kind, autodiff() device.
  Tensor require_grad() const { return Tensor(t_.require_grad()); }
  bool is_require_grad() const { return t_.is_require_grad(); }  // tracked: a leaf requiring grad, or computed from one
  Tensor detach() const { return Tensor(t_.detach()); }  // the same value, outside any graph
  // Gradients of this one-element tensor with respect to every tracked leaf (torch.Tensor.backward).
  Gradients backward(BackwardOptions o = {}) const { return t_.backward(o); }
  // The same for any shape, `upstream` (of this shape) being the gradient flowing into this tensor.
  Gradients backward(const Tensor& upstream, BackwardOptions o = {}) const { return t_.backward(upstream.t_, o); }
  // This tensor's gradient in `g`; empty when the backward did not reach it.
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
  // x where x >= 0, else slope * x (torch.nn.functional.leaky_relu).
  Tensor leaky_relu(double slope = 0.01) const { return Tensor(ember::leaky_relu(t_, slope)); }
  // log(1 + exp(beta * x)) / beta, and x where beta * x > threshold (torch.nn.functional.softplus).
  Tensor softplus(double beta = 1, double threshold = 20) const { return Tensor(ember::softplus(t_, beta, threshold)); }
  Tensor pow(Scalar p) const { return Tensor(ember::pow(t_, p)); }  // each element raised to `p`
  Tensor pow(const Tensor& p) const { return Tensor(ember::pow(t_, p.t_)); }  // element-wise power, broadcasting
  Tensor fmod(Scalar v) const { return Tensor(ember::fmod(t_, v)); }  // remainder with x's sign (torch.fmod)
  Tensor remainder(Scalar v) const { return Tensor(ember::remainder(t_, v)); }  // remainder with v's sign
  Tensor minimum(const Tensor& o) const { return Tensor(ember::minimum(t_, o.t_)); }  // element-wise, broadcasting
  Tensor maximum(const Tensor& o) const { return Tensor(ember::maximum(t_, o.t_)); }  // element-wise, broadcasting
  Tensor atan2(const Tensor& o) const { return Tensor(ember::atan2(t_, o.t_)); }  // element-wise atan2(x, o)
  Tensor hypot(const Tensor& o) const { return Tensor(ember::hypot(t_, o.t_)); }  // element-wise sqrt(x * x + o * o)
  // x + w * (end - x) (torch.lerp); Float kind.
  Tensor lerp(const Tensor& end, Scalar w) const { return Tensor(ember::lerp(t_, end.t_, w)); }
  Tensor clamp(Scalar lo, Scalar hi) const { return Tensor(ember::clamp(t_, lo, hi)); }  // limited to [lo, hi]
  Tensor clamp_min(Scalar lo) const { return Tensor(ember::clamp_min(t_, lo)); }  // elements below lo raised to lo
  Tensor clamp_max(Scalar hi) const { return Tensor(ember::clamp_max(t_, hi)); }  // elements above hi lowered to hi
  // `v` where `mask` is true, x elsewhere (torch.Tensor.masked_fill).
  Tensor mask_fill(const Tensor<D, Bool>& mask, Scalar v) const { return Tensor(ember::mask_fill(t_, mask.dyn(), v)); }
  // v's elements where `mask` is true, x's elsewhere.
  Tensor mask_where(const Tensor<D, Bool>& mask, const Tensor& v) const {
    return Tensor(ember::mask_where(t_, mask.dyn(), v.t_));
  }
  Tensor<D, Bool> is_nan() const { return Tensor<D, Bool>(ember::is_nan(t_)); }  // true where NaN
  Tensor<D, Bool> is_inf() const { return Tensor<D, Bool>(ember::is_inf(t_)); }  // true where infinite
  Tensor<D, Bool> is_finite() const { return Tensor<D, Bool>(ember::is_finite(t_)); }  // true where not NaN or inf
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
  // Logical not of a Bool tensor (torch.logical_not).
  Tensor bool_not() const { return Tensor(ember::bool_not(t_)); }
  Tensor bitwise_not() const { return Tensor(ember::bitwise_not(t_)); }  // ~x for Int and Bool tensors

  // reductions: whole-tensor forms give a 0-d tensor; *_dim forms keep the reduced dim (size 1)
  // Sum of all elements; i64 for integers, so a Bool tensor must be cast first.
  Tensor<0, K> sum() const { return Tensor<0, K>(ember::sum(t_)); }
  Tensor<0, K> mean() const { return Tensor<0, K>(ember::mean(t_)); }  // mean of all elements; Float kind
  Tensor<0, K> prod() const { return Tensor<0, K>(ember::prod(t_)); }  // product of all elements; i64 for integers
  Tensor<0, K> max() const { return Tensor<0, K>(ember::max(t_)); }  // largest element; Error when empty
  Tensor<0, K> min() const { return Tensor<0, K>(ember::min(t_)); }  // smallest element; Error when empty
  Tensor<0, Bool> any() const { return Tensor<0, Bool>(ember::any(t_)); }  // true when some element is nonzero
  Tensor<0, Bool> all() const { return Tensor<0, Bool>(ember::all(t_)); }  // true when every element is nonzero
  // Variance of all elements with Bessel's `correction` (torch.var); Float kind.
  Tensor<0, K> var(int64_t correction = 1) const { return Tensor<0, K>(ember::var(t_, {}, correction)); }
  // Standard deviation of all elements with `correction` (torch.std); Float kind.
  Tensor<0, K> stddev(int64_t correction = 1) const { return Tensor<0, K>(ember::stddev(t_, {}, correction)); }
  Tensor<0, K> norm(double p = 2) const { return Tensor<0, K>(ember::norm(t_, p)); }  // p-norm; Float kind
  Tensor sum_dim(int dim) const { return Tensor(ember::sum(t_, {dim}, true)); }  // sums over `dim`
  Tensor mean_dim(int dim) const { return Tensor(ember::mean(t_, {dim}, true)); }  // means over `dim`
  Tensor prod_dim(int dim) const { return Tensor(ember::prod(t_, {dim}, true)); }  // products over `dim`
  // values and indices: auto [values, indices] = x.max_dim(1);
  std::pair<Tensor, Tensor<D, Int>> max_dim(int dim) const { return max_dim_with_indices(dim); }
  std::pair<Tensor, Tensor<D, Int>> min_dim(int dim) const { return min_dim_with_indices(dim); }  // as max_dim
  // Variance over `dim`, kept with size 1.
  Tensor var_dim(int dim, int64_t correction = 1) const { return Tensor(ember::var(t_, {dim}, correction, true)); }
  // Standard deviation over `dim`, kept with size 1.
  Tensor stddev_dim(int dim, int64_t correction = 1) const { return Tensor(ember::stddev(t_, {dim}, correction, true)); }
  Tensor logsumexp_dim(int dim) const { return Tensor(ember::logsumexp(t_, {dim}, true)); }  // log(sum(exp(x)))
  // Same as max_dim.
  std::pair<Tensor, Tensor<D, Int>> max_dim_with_indices(int dim) const {
    auto [v, i] = ember::max_dim(t_, dim, true);
    return {Tensor(std::move(v)), Tensor<D, Int>(std::move(i))};
  }
  // Same as min_dim.
  std::pair<Tensor, Tensor<D, Int>> min_dim_with_indices(int dim) const {
    auto [v, i] = ember::min_dim(t_, dim, true);
    return {Tensor(std::move(v)), Tensor<D, Int>(std::move(i))};
  }
  // i64 index of the maximum along `dim`, kept with size 1; the first on ties.
  Tensor<D, Int> argmax(int dim) const { return Tensor<D, Int>(ember::argmax(t_, dim, true)); }
  // i64 index of the minimum along `dim`, kept with size 1; the first on ties.
  Tensor<D, Int> argmin(int dim) const { return Tensor<D, Int>(ember::argmin(t_, dim, true)); }
  Tensor softmax(int dim) const { return Tensor(ember::softmax(t_, dim)); }  // along `dim`; Float kind
  Tensor log_softmax(int dim) const { return Tensor(ember::log_softmax(t_, dim)); }  // computed stably
  Tensor cumsum(int dim) const { return Tensor(ember::cumsum(t_, dim)); }  // running sums along `dim`
  Tensor cumprod(int dim) const { return Tensor(ember::cumprod(t_, dim)); }  // running products along `dim`
  // Values sorted along `dim` and their i64 indices; stable (torch.sort).
  std::pair<Tensor, Tensor<D, Int>> sort(int dim = -1, bool descending = false) const {
    auto [v, i] = ember::sort(t_, dim, descending);
    return {Tensor(std::move(v)), Tensor<D, Int>(std::move(i))};
  }
  // The indices of sort(dim, descending) (torch.argsort).
  Tensor<D, Int> argsort(int dim = -1, bool descending = false) const {
    return Tensor<D, Int>(ember::argsort(t_, dim, descending));
  }
  // The k largest (smallest when !largest) values along `dim`, in order, with their indices (torch.topk).
  std::pair<Tensor, Tensor<D, Int>> topk(int64_t k, int dim = -1, bool largest = true) const {
    auto [v, i] = ember::topk(t_, k, dim, largest);
    return {Tensor(std::move(v)), Tensor<D, Int>(std::move(i))};
  }

  // linear algebra, shape and indexing
  // Matrix product of the last two dims, broadcasting the others (torch.matmul).
  Tensor matmul(const Tensor& o) const requires(D >= 2) { return Tensor(ember::matmul(t_, o.t_)); }
  Tensor transpose() const requires(D >= 2) { return Tensor(ember::transpose(t_, -2, -1)); }  // last two dims swapped
  Tensor swap_dims(int a, int b) const { return Tensor(ember::swap_dims(t_, a, b)); }  // dims a and b swapped; a view
  Tensor movedim(int src, int dst) const { return Tensor(ember::movedim(t_, src, dst)); }  // dim src moved to dst
  // Dim i of the result is dim p[i] of this tensor; a view (torch.permute).
  Tensor permute(std::array<int, D> p) const { return Tensor(ember::permute(t_, ember::Dims(p.begin(), p.end()))); }
  Tensor flip(ember::Dims dims) const { return Tensor(ember::flip(t_, std::move(dims))); }  // reversed along `dims`
  // Shifted by shifts[i] along dims[i], wrapping around (torch.roll).
  Tensor roll(Sizes shifts, ember::Dims dims) const { return Tensor(ember::roll(t_, std::move(shifts), std::move(dims))); }
  // The elements in shape `s` of rank D2, one size of which may be -1 (torch.reshape).
  template <int D2>
  Tensor<D2, K> reshape(std::array<int64_t, D2> s) const { return Tensor<D2, K>(ember::reshape(t_, Sizes(s.begin(), s.end()))); }
  // Dims start..end merged into one; D2 must be the resulting rank (torch.flatten).
  template <int D2>
  Tensor<D2, K> flatten(int start, int end) const { return Tensor<D2, K>(ember::flatten(t_, start, end)); }
  // A new dim of size 1 at `dim`.
  template <int D2 = D + 1>
  Tensor<D2, K> unsqueeze(int dim) const { return Tensor<D2, K>(ember::unsqueeze(t_, dim)); }
  // `dim` removed; Error when its size is not 1 (the rank would not change).
  template <int D2 = D - 1>
  Tensor<D2, K> squeeze(int dim) const { return Tensor<D2, K>(ember::squeeze(t_, dim)); }
  // The slice at `index` (negative: from the end) of `dim`, which is removed (torch.select).
  template <int D2 = D - 1>
  Tensor<D2, K> select(int dim, int64_t index) const { return Tensor<D2, K>(ember::select(t_, dim, index)); }
  // Python-style ranges of the leading dims, the others whole.
  Tensor slice(std::vector<Slice> r) const { return Tensor(ember::slice(t_, std::move(r))); }
  // A copy with `v` (broadcast) written into the ranges.
  Tensor slice_assign(std::vector<Slice> r, const Tensor& v) const { return Tensor(ember::slice_assign(t_, std::move(r), v.t_)); }
  // `len` elements of `dim` from `start` (torch.narrow).
  Tensor narrow(int dim, int64_t start, int64_t len) const { return Tensor(ember::narrow(t_, dim, start, len)); }
  // Size-1 dims broadcast to `s` (-1 keeps a dim) without copying (torch.Tensor.expand).
  Tensor expand(Dims s) const { return Tensor(ember::expand(t_, Sizes(s.begin(), s.end()))); }
  // Tiled r[i] times along dim i (torch.Tensor.repeat).
  Tensor repeat(Dims r) const { return Tensor(ember::repeat(t_, Sizes(r.begin(), r.end()))); }
  // Padded as ember::pad: pads last dim first, as torch.nn.functional.pad.
  Tensor pad(Sizes pads, PadMode mode = PadMode::constant, double value = 0) const {
    return Tensor(ember::pad(t_, std::move(pads), mode, value));
  }
  Tensor tril(int64_t k = 0) const requires(D >= 2) { return Tensor(ember::tril(t_, k)); }  // zeros above diagonal k
  Tensor triu(int64_t k = 0) const requires(D >= 2) { return Tensor(ember::triu(t_, k)); }  // zeros below diagonal k
  // At most n views along `dim`, the last one smaller (torch.chunk).
  std::vector<Tensor> chunk(int64_t n, int dim = 0) const { return wrap(ember::chunk(t_, n, dim)); }
  // Views of `size` elements along `dim`, the last one smaller (torch.split).
  std::vector<Tensor> split(int64_t size, int dim = 0) const { return wrap(ember::split(t_, size, dim)); }
  // The entries along `dim` named by `index`, whose shape the result has (torch.gather).
  Tensor gather(int dim, const Tensor<D, Int>& index) const { return Tensor(ember::gather(t_, dim, index.dyn())); }
  // A copy with src's elements written along `dim` at the positions `index` names (torch.scatter).
  Tensor scatter(int dim, const Tensor<D, Int>& index, const Tensor& src) const {
    return Tensor(ember::scatter(t_, dim, index.dyn(), src.t_));
  }
  // A copy with src's elements added along `dim` at the positions `index` names (torch.scatter_add).
  Tensor scatter_add(int dim, const Tensor<D, Int>& index, const Tensor& src) const {
    return Tensor(ember::scatter_add(t_, dim, index.dyn(), src.t_));
  }
  // Entries `index` of `dim` (torch.index_select).
  Tensor index_select(int dim, const Tensor<1, Int>& index) const { return Tensor(ember::index_select(t_, dim, index.dyn())); }
  // A copy with src's slices written at entries `index` of `dim` (torch.index_copy).
  Tensor select_assign(int dim, const Tensor<1, Int>& index, const Tensor& src) const {
    return Tensor(ember::select_assign(t_, dim, index.dyn(), src.t_));
  }
  // A copy with src's slices added at entries `index` of `dim` (torch.index_add).
  Tensor select_add(int dim, const Tensor<1, Int>& index, const Tensor& src) const {
    return Tensor(ember::select_add(t_, dim, index.dyn(), src.t_));
  }
  // The elements where `mask` is true, in row-major order (torch.masked_select).
  Tensor<1, K> masked_select(const Tensor<D, Bool>& mask) const { return Tensor<1, K>(ember::masked_select(t_, mask.dyn())); }
  Tensor<2, Int> nonzero() const { return Tensor<2, Int>(ember::nonzero(t_)); }  // [n, D] indices
  // Concatenation along `dim` (torch.cat).
  static Tensor cat(const std::vector<Tensor>& xs, int dim) { return Tensor(ember::cat(unwrap(xs), dim)); }
  // The tensors, of one shape, stacked along a new dim `dim` (torch.stack).
  static Tensor<D + 1, K> stack(const std::vector<Tensor>& xs, int dim) { return Tensor<D + 1, K>(ember::stack(unwrap(xs), dim)); }

  // Element-wise, broadcasting; the kind stays, so `/` of Int tensors (f32) throws: cast first.
  friend Tensor operator+(Tensor a, Tensor b) { return Tensor(std::move(a.t_) + std::move(b.t_)); }
  friend Tensor operator-(Tensor a, Tensor b) { return Tensor(std::move(a.t_) - std::move(b.t_)); }  // a - b
  friend Tensor operator*(Tensor a, Tensor b) { return Tensor(std::move(a.t_) * std::move(b.t_)); }  // a * b
  friend Tensor operator/(Tensor a, Tensor b) { return Tensor(std::move(a.t_) / std::move(b.t_)); }  // a / b
  friend Tensor operator+(Tensor a, Scalar b) { return Tensor(std::move(a.t_) + b); }  // b added to each element
  friend Tensor operator-(Tensor a, Scalar b) { return Tensor(std::move(a.t_) - b); }  // b subtracted from each
  friend Tensor operator*(Tensor a, Scalar b) { return Tensor(std::move(a.t_) * b); }  // each element times b
  friend Tensor operator/(Tensor a, Scalar b) { return Tensor(std::move(a.t_) / b); }  // each element over b
  friend Tensor operator-(Tensor a) { return Tensor(-std::move(a.t_)); }  // negation
  friend Tensor operator+(Scalar a, Tensor b) { return Tensor(a + std::move(b.t_)); }  // a added to each element
  friend Tensor operator-(Scalar a, Tensor b) { return Tensor(a - std::move(b.t_)); }  // a minus each element
  friend Tensor operator*(Scalar a, Tensor b) { return Tensor(a * std::move(b.t_)); }  // a times each element
  friend Tensor operator/(Scalar a, Tensor b) { return Tensor(a / std::move(b.t_)); }  // a over each element
  // y += 1.0 computes a new value and rebinds y
  Tensor& operator+=(const Tensor& o) { return *this = *this + o; }
  Tensor& operator-=(const Tensor& o) { return *this = *this - o; }  // rebinds to *this - o
  Tensor& operator*=(const Tensor& o) { return *this = *this * o; }  // rebinds to *this * o
  Tensor& operator/=(const Tensor& o) { return *this = *this / o; }  // rebinds to *this / o
  Tensor& operator+=(Scalar o) { return *this = std::move(*this) + o; }  // rebinds to *this + o
  Tensor& operator-=(Scalar o) { return *this = std::move(*this) - o; }  // rebinds to *this - o
  Tensor& operator*=(Scalar o) { return *this = std::move(*this) * o; }  // rebinds to *this * o
  Tensor& operator/=(Scalar o) { return *this = std::move(*this) / o; }  // rebinds to *this / o
#define EMBER_TENSOR_COMPARE_OP(op)                                                                    \
  friend Tensor<D, Bool> operator op(Tensor a, Tensor b) { return Tensor<D, Bool>(std::move(a.t_) op std::move(b.t_)); } \
  friend Tensor<D, Bool> operator op(Tensor a, Scalar b) { return Tensor<D, Bool>(std::move(a.t_) op b); } \
  friend Tensor<D, Bool> operator op(Scalar a, Tensor b) { return Tensor<D, Bool>(a op std::move(b.t_)); }
  EMBER_TENSOR_COMPARE_OP(==) EMBER_TENSOR_COMPARE_OP(!=) EMBER_TENSOR_COMPARE_OP(<)
  EMBER_TENSOR_COMPARE_OP(<=) EMBER_TENSOR_COMPARE_OP(>) EMBER_TENSOR_COMPARE_OP(>=)
#undef EMBER_TENSOR_COMPARE_OP
  // Logical not of a Bool tensor (torch.logical_not).
  friend Tensor operator!(Tensor a) requires(K::kind == Kind::Bool) { return Tensor(!std::move(a.t_)); }
  // Elementwise and: logical for Bool tensors, bitwise for Int ones.
  friend Tensor operator&(Tensor a, Tensor b) { return Tensor(std::move(a.t_) & std::move(b.t_)); }
  // Elementwise or: logical for Bool tensors, bitwise for Int ones.
  friend Tensor operator|(Tensor a, Tensor b) { return Tensor(std::move(a.t_) | std::move(b.t_)); }
  // Elementwise exclusive or: logical for Bool tensors, bitwise for Int ones.
  friend Tensor operator^(Tensor a, Tensor b) { return Tensor(std::move(a.t_) ^ std::move(b.t_)); }
  // The slice at `index` of dim 0, as select(0, index).
  template <int D2 = D - 1>  // y[0]
  Tensor<D2, K> operator[](int64_t index) const requires(D >= 1) { return select<D2>(0, index); }  // select(0, index)

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
template <int D, class K> Tensor<D, K> silu(const Tensor<D, K>& x) { return x.silu(); }  // x * sigmoid(x)
template <int D, class K> Tensor<D, K> relu(const Tensor<D, K>& x) { return x.relu(); }  // max(x, 0)
// Softmax along `dim`.
template <int D, class K> Tensor<D, K> softmax(const Tensor<D, K>& x, int dim) { return x.softmax(dim); }
// Matrix product, as a.matmul(b).
template <int D, class K> Tensor<D, K> matmul(const Tensor<D, K>& a, const Tensor<D, K>& b) { return a.matmul(b); }
// a where `c` is true, else b (torch.where).
template <int D, class K>
Tensor<D, K> where(const Tensor<D, Bool>& c, const Tensor<D, K>& a, const Tensor<D, K>& b) {
  return Tensor<D, K>(ember::where(c.dyn(), a.dyn(), b.dyn()));
}
// Zeros of x's shape, dtype and device.
template <int D, class K> Tensor<D, K> zeros_like(const Tensor<D, K>& x) { return Tensor<D, K>(zeros_like(x.dyn())); }
// Ones of x's shape, dtype and device.
template <int D, class K> Tensor<D, K> ones_like(const Tensor<D, K>& x) { return Tensor<D, K>(ones_like(x.dyn())); }
// Filled with `v`, in x's shape, dtype and device.
template <int D, class K>
Tensor<D, K> full_like(const Tensor<D, K>& x, Scalar v) { return Tensor<D, K>(full_like(x.dyn(), v)); }
// Values uniform over [0, 1) in x's shape, dtype and device; Float kind.
template <int D, class K> Tensor<D, K> rand_like(const Tensor<D, K>& x) { return Tensor<D, K>(rand_like(x.dyn())); }
// Standard normal values in x's shape, dtype and device; Float kind.
template <int D, class K> Tensor<D, K> randn_like(const Tensor<D, K>& x) { return Tensor<D, K>(randn_like(x.dyn())); }
// Prints the values as PyTorch does.
template <int D, class K>
std::ostream& operator<<(std::ostream& os, const Tensor<D, K>& x) { return os << x.dyn(); }

// [..., num_classes] with a 1 at each index (torch.nn.functional.one_hot).
template <int D>
Tensor<D + 1, Int> one_hot(const Tensor<D, Int>& x, int64_t num_classes) {
  return Tensor<D + 1, Int>(ember::one_hot(x.dyn(), num_classes));
}

}  // namespace ember
