// The op-emitting helpers backward rules are written with (rules.hpp).
#include <algorithm>
#include <numeric>

#include "rules.hpp"

namespace ember::autodiff {

std::vector<Val> run_all(OpKind k, std::vector<Val> in, OpAttrs attrs) {
  Backend* be = nullptr;
  std::vector<PrimitivePtr> prims;
  prims.reserve(in.size());
  for (auto& v : in) {
    if (v.defined() && !be) be = v.backend();
    prims.push_back(v.prim());
  }
  EMBER_CHECK(be != nullptr, "autodiff: ", op_name(k), " in a backward rule needs a defined input");
  in.clear();
  std::vector<PrimitivePtr> outs = be->execute(make_op(k, std::move(prims), std::move(attrs)));
  std::vector<Val> r;
  r.reserve(outs.size());
  for (auto& p : outs) r.emplace_back(be, std::move(p));
  return r;
}

Val run(OpKind k, std::vector<Val> in, OpAttrs attrs) { return std::move(run_all(k, std::move(in), std::move(attrs))[0]); }

Val create(Backend* be, OpKind k, CreateAttrs attrs) { return Val(be, be->execute(make_op(k, {}, std::move(attrs)))[0]); }

Val full(Backend* be, const Shape& s, double v, DType dt) {
  CreateAttrs a;
  a.shape = s;
  a.dtype = dt;
  a.a = v;
  return create(be, OpKind::full, std::move(a));
}
Val scalar(Backend* be, double v, DType dt) {  // an operand of the rules' arithmetic only
  CreateAttrs a;
  a.dtype = dt;
  a.a = v;
  a.shared = true;
  return create(be, OpKind::full, std::move(a));
}
Val zeros_like(const Val& x) { return full(x.backend(), x.shape(), 0.0, x.dtype()); }
Val ones_like(const Val& x) { return full(x.backend(), x.shape(), 1.0, x.dtype()); }
Val full_like(const Val& x, double v) { return full(x.backend(), x.shape(), v, x.dtype()); }
Val from_host(Backend* be, const TensorData& data) { return Val(be, be->write(data)); }

namespace {
Val sc(const Val& like, double v) { return scalar(like.backend(), v, like.dtype()); }
}  // namespace

Val operator+(const Val& a, const Val& b) { return run(OpKind::add, {a, b}); }
Val operator-(const Val& a, const Val& b) { return run(OpKind::sub, {a, b}); }
Val operator*(const Val& a, const Val& b) { return run(OpKind::mul, {a, b}); }
Val operator/(const Val& a, const Val& b) { return run(OpKind::div, {a, b}); }
Val operator+(const Val& a, double b) { return a + sc(a, b); }
Val operator-(const Val& a, double b) { return a - sc(a, b); }
Val operator*(const Val& a, double b) { return a * sc(a, b); }
Val operator/(const Val& a, double b) { return a / sc(a, b); }
Val operator+(double a, const Val& b) { return sc(b, a) + b; }
Val operator-(double a, const Val& b) { return sc(b, a) - b; }
Val operator*(double a, const Val& b) { return sc(b, a) * b; }
Val operator/(double a, const Val& b) { return sc(b, a) / b; }
Val operator-(const Val& a) { return un(OpKind::neg, a); }
Val pow(const Val& a, double b) { return run(OpKind::pow, {a, sc(a, b)}); }
Val pow(const Val& a, const Val& b) { return run(OpKind::pow, {a, b}); }
Val cast(const Val& x, DType dt) { return x.dtype() == dt ? x : run(OpKind::cast, {x}, CastAttrs{dt}); }
Val where(const Val& cond, const Val& a, const Val& b) { return run(OpKind::where, {cond, a, b}); }
Val where(const Val& cond, const Val& a, double b) { return where(cond, a, sc(a, b)); }
Val where(const Val& cond, double a, const Val& b) { return where(cond, sc(b, a), b); }
Val cmp(OpKind k, const Val& a, const Val& b) { return run(k, {a, b}); }
Val cmp(OpKind k, const Val& a, double b) { return run(k, {a, sc(a, b)}); }
Val logical_and(const Val& a, const Val& b) { return run(OpKind::bool_and, {a, b}); }
Val logical_not(const Val& a) { return un(OpKind::bool_not, a); }

Val sum(const Val& x, std::vector<int> dims, bool keepdim) {
  ReduceAttrs a;
  a.dims = std::move(dims);
  a.keepdim = keepdim;
  return run(OpKind::sum, {x}, std::move(a));
}
Val mean(const Val& x, std::vector<int> dims, bool keepdim) {
  ReduceAttrs a;
  a.dims = std::move(dims);
  a.keepdim = keepdim;
  return run(OpKind::mean, {x}, std::move(a));
}

Val reshape(const Val& x, const Shape& s) { return x.shape() == s ? x : run(OpKind::reshape, {x}, ShapeAttrs{s}); }
Val expand(const Val& x, const Shape& s) { return x.shape() == s ? x : run(OpKind::expand, {x}, ShapeAttrs{s}); }
Val permute(const Val& x, std::vector<int> dims) { return run(OpKind::permute, {x}, DimsAttrs{std::move(dims)}); }
Val transpose(const Val& x, int d0, int d1) {
  int r = x.rank();
  d0 = normalize_dim(d0, r, "transpose");
  d1 = normalize_dim(d1, r, "transpose");
  if (d0 == d1) return x;
  std::vector<int> p(r);
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[d0], p[d1]);
  return permute(x, std::move(p));
}
Val unsqueeze(const Val& x, int dim) {
  dim = normalize_dim(dim, x.rank() + 1, "unsqueeze");
  std::vector<int64_t> d = x.shape().dims();
  d.insert(d.begin() + dim, 1);
  return reshape(x, Shape(std::move(d)));
}

Val sum_to(const Val& g, const Shape& to) {
  if (g.shape() == to) return g;
  int lead = g.rank() - to.rank();
  EMBER_CHECK(lead >= 0, "autodiff: cannot sum a gradient of shape ", g.shape(), " to ", to);
  std::vector<int> dims;
  for (int i = 0; i < g.rank(); ++i)
    if (i < lead || (to[i - lead] == 1 && g.shape()[i] != 1)) dims.push_back(i);
  Val s = dims.empty() ? g : sum(g, dims, true);
  return reshape(s, to);
}

Val unreduce(const Val& g, const Shape& in, const std::vector<int>& dims, bool keepdim) {
  Val r = g;
  if (!keepdim) {
    std::vector<int64_t> d = in.dims();
    if (dims.empty()) {
      std::fill(d.begin(), d.end(), 1);
    } else {
      for (int x : dims) d[normalize_dim(x, in.rank(), "unreduce")] = 1;
    }
    r = reshape(r, Shape(std::move(d)));
  }
  return expand(r, in);
}

Val matmul(const Val& a, const Val& b) { return run(OpKind::matmul, {a, b}); }
Val contiguous(const Val& x) { return un(OpKind::contiguous, x); }
Val slice(const Val& x, SliceAttrs a) { return run(OpKind::slice, {x}, std::move(a)); }
Val narrow(const Val& x, int dim, int64_t start, int64_t length) {
  dim = normalize_dim(dim, x.rank(), "narrow");
  SliceAttrs a;
  for (int i = 0; i < x.rank(); ++i) a.ranges.push_back({0, x.shape()[i], 1});
  a.ranges[dim] = {start, start + length, 1};
  return slice(x, std::move(a));
}
Val slice_assign(const Val& x, SliceAttrs a, const Val& v) { return run(OpKind::slice_assign, {x, v}, std::move(a)); }
Val cat(std::vector<Val> xs, int dim) {
  if (xs.size() == 1) return xs[0];
  DimAttrs a;
  a.dim = dim;
  return run(OpKind::cat, std::move(xs), a);
}
namespace {
DimAttrs dim_attr(int dim) {
  DimAttrs a;
  a.dim = dim;
  return a;
}
}  // namespace
Val gather(const Val& x, int dim, const Val& index) { return run(OpKind::gather, {x, index}, dim_attr(dim)); }
Val scatter(const Val& x, int dim, const Val& index, const Val& src) {
  return run(OpKind::scatter, {x, index, src}, dim_attr(dim));
}
Val scatter_add(const Val& x, int dim, const Val& index, const Val& src) {
  return run(OpKind::scatter_add, {x, index, src}, dim_attr(dim));
}
Val index_select(const Val& x, int dim, const Val& index) { return run(OpKind::index_select, {x, index}, dim_attr(dim)); }
Val index_add(const Val& x, int dim, const Val& index, const Val& src) {
  return run(OpKind::index_add, {x, index, src}, dim_attr(dim));
}
Val flip(const Val& x, std::vector<int> dims) { return run(OpKind::flip, {x}, DimsAttrs{std::move(dims)}); }
Val cumsum(const Val& x, int dim) { return run(OpKind::cumsum, {x}, dim_attr(dim)); }

}  // namespace ember::autodiff
