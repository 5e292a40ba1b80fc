// Backward rules of the views, the layout ops (contiguous, flip, roll, cat, pad, tril/triu,
// slice_assign) and the indexing ops. Index and mask inputs never get a gradient.
//
// Every rule moves the upstream gradient back with the adjoint data movement, made of IR ops
// that have rules of their own (gather <-> scatter_add, index_select <-> index_add, slice <->
// slice_assign, pad <-> pad), so the rules can be differentiated again.
#include <algorithm>

#include "rules.hpp"

namespace ember::autodiff {

namespace {

Val zeros(BackwardCtx& c, const Shape& s, DType dt) { return full(c.backend(), s, 0.0, dt); }
Val zeros_of_input(BackwardCtx& c, size_t i) { return zeros(c, c.in(i).shape, c.in(i).dtype); }

DimAttrs dim_attrs(int dim) {
  DimAttrs a;
  a.dim = dim;
  return a;
}

// The gradient of a src input of which only the leading `index`-shaped block was read
// (scatter, scatter_add): the gathered values, zero-padded after the block up to src's shape.
Val pad_to(const Val& v, const Shape& to) {
  if (v.shape() == to) return v;
  PadAttrs a;
  for (int d = 0; d < to.rank(); ++d) {
    a.pads.push_back(0);
    a.pads.push_back(to[d] - v.shape()[d]);
  }
  return run(OpKind::pad, {v}, std::move(a));
}

// Output index o along a padded dim -> the input index it reads (reflect / replicate).
int64_t pad_source(PadMode mode, int64_t lo, int64_t n, int64_t o) {
  int64_t j = o - lo;
  if (mode == PadMode::reflect) return j < 0 ? -j : (j >= n ? 2 * (n - 1) - j : j);
  return j < 0 ? 0 : (j >= n ? n - 1 : j);
}

}  // namespace

void register_layout_rules(RuleTable& t) {
  // ---- views ----

  // reshape: dx = reshape(g, x.shape)
  t[size_t(OpKind::reshape)].fn = [](BackwardCtx& c) -> Grads { return {reshape(c.grad(0), c.in(0).shape)}; };

  // permute(p): dx = permute(g, p^-1)
  t[size_t(OpKind::permute)].fn = [](BackwardCtx& c) -> Grads {
    const auto& p = c.attr<DimsAttrs>().dims;
    std::vector<int> inv(p.size());
    for (size_t i = 0; i < p.size(); ++i) inv[size_t(p[i])] = int(i);
    return {permute(c.grad(0), std::move(inv))};
  };

  // expand: dx = sum of g over the expanded dims
  t[size_t(OpKind::expand)].fn = [](BackwardCtx& c) -> Grads { return {sum_to(c.grad(0), c.in(0).shape)}; };

  // slice(ranges): dx = zeros(x) with g written into the ranges
  t[size_t(OpKind::slice)].fn = [](BackwardCtx& c) -> Grads {
    Val g = c.grad(0);
    if (g.shape() == c.in(0).shape) return {g};  // every range covers its whole dim
    return {slice_assign(zeros_of_input(c, 0), c.attr<SliceAttrs>(), g)};
  };

  // ---- layout ops ----

  // contiguous: dx = g
  t[size_t(OpKind::contiguous)].fn = [](BackwardCtx& c) -> Grads { return {c.grad(0)}; };

  // flip(dims) is its own inverse: dx = flip(g, dims)
  t[size_t(OpKind::flip)].fn = [](BackwardCtx& c) -> Grads {
    return {flip(c.grad(0), c.attr<DimsAttrs>().dims)};
  };

  // roll(shifts, dims): dx = roll(g, -shifts, dims) (empty dims: the flattened roll, undone the same way)
  t[size_t(OpKind::roll)].fn = [](BackwardCtx& c) -> Grads {
    RollAttrs a = c.attr<RollAttrs>();
    for (int64_t& s : a.shifts) s = -s;
    return {run(OpKind::roll, {c.grad(0)}, std::move(a))};
  };

  // cat(x_0.., dim): dx_i = narrow(g, dim, offset_i, x_i.shape[dim])
  t[size_t(OpKind::cat)].fn = [](BackwardCtx& c) -> Grads {
    const int dim = c.attr<DimAttrs>().dim;
    Val g = c.grad(0);
    Grads out(c.num_inputs());
    int64_t off = 0;
    for (size_t i = 0; i < c.num_inputs(); ++i) {
      const int64_t len = c.in(i).shape[dim];
      if (c.needs_grad(i)) out[i] = narrow(g, dim, off, len);
      off += len;
    }
    return out;
  };

  // pad, constant mode: dx = the interior of g = pad(g, -pads) (negative pads crop, so this also
  // covers cropping pads). reflect / replicate: out[o_0, ..] = x[m_0(o_0), ..] reads x through a
  // per-dim index map m_d, so dx applies the adjoint per padded dim:
  //   g <- index_add(zeros with dim d of size n_d, d, m_d, g)
  // which adds every border element onto the input element it copies.
  t[size_t(OpKind::pad)].fn = [](BackwardCtx& c) -> Grads {
    const auto& a = c.attr<PadAttrs>();
    Val g = c.grad(0);
    if (std::all_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p == 0; })) return {g};
    const Shape& in = c.in(0).shape;
    if (a.mode == PadMode::constant) {
      PadAttrs back;
      for (int64_t p : a.pads) back.pads.push_back(-p);
      return {run(OpKind::pad, {g}, std::move(back))};
    }
    for (int d = 0; d < in.rank(); ++d) {
      const int64_t lo = a.pads[2 * size_t(d)], hi = a.pads[2 * size_t(d) + 1], n = in[d];
      if (lo == 0 && hi == 0) continue;
      std::vector<int64_t> src(size_t(n + lo + hi));
      for (size_t o = 0; o < src.size(); ++o) src[o] = pad_source(a.mode, lo, n, int64_t(o));
      Val index = from_host(c.backend(), TensorData::from_vector(src, Shape{int64_t(src.size())}));
      Shape s = g.shape();
      s[d] = n;
      g = index_add(zeros(c, s, g.dtype()), d, index, g);
    }
    return {g};
  };

  // tril / triu(k): dx = tril / triu(g, k)
  for (OpKind k : {OpKind::tril, OpKind::triu})
    t[size_t(k)].fn = [k](BackwardCtx& c) -> Grads { return {run(k, {c.grad(0)}, c.attrs())}; };

  // slice_assign(x, v, ranges): dx = g with the ranges zeroed; dv = slice(g, ranges)
  t[size_t(OpKind::slice_assign)].fn = [](BackwardCtx& c) -> Grads {
    const auto& a = c.attr<SliceAttrs>();
    Val g = c.grad(0);
    Grads out(2);
    if (c.needs_grad(0)) out[0] = slice_assign(g, a, zeros_of_input(c, 1));
    if (c.needs_grad(1)) out[1] = sum_to(slice(g, a), c.in(1).shape);
    return out;
  };

  // ---- indexing ----

  // gather(x, dim, index): dx = scatter_add(zeros(x), dim, index, g)
  t[size_t(OpKind::gather)].save_inputs = 0b10;
  t[size_t(OpKind::gather)].fn = [](BackwardCtx& c) -> Grads {
    const int dim = c.attr<DimAttrs>().dim;
    return {scatter_add(zeros_of_input(c, 0), dim, c.input(1), c.grad(0)), Val{}};
  };

  // scatter(x, dim, index, src): dx = g with the written positions zeroed (a position written
  // several times is zeroed once); dsrc = gather(g, dim, index) (each duplicate gets the value,
  // as in PyTorch), zero outside the index-shaped block of src that scatter reads.
  t[size_t(OpKind::scatter)].save_inputs = 0b010;
  t[size_t(OpKind::scatter)].fn = [](BackwardCtx& c) -> Grads {
    const int dim = c.attr<DimAttrs>().dim;
    Val g = c.grad(0), index = c.input(1);
    Grads out(3);
    if (c.needs_grad(0)) out[0] = scatter(g, dim, index, zeros(c, index.shape(), g.dtype()));
    if (c.needs_grad(2)) out[2] = pad_to(gather(g, dim, index), c.in(2).shape);
    return out;
  };

  // scatter_add(x, dim, index, src): dx = g; dsrc = gather(g, dim, index) (zero-padded like scatter)
  t[size_t(OpKind::scatter_add)].save_inputs = 0b010;
  t[size_t(OpKind::scatter_add)].fn = [](BackwardCtx& c) -> Grads {
    const int dim = c.attr<DimAttrs>().dim;
    Val g = c.grad(0);
    Grads out(3);
    if (c.needs_grad(0)) out[0] = g;
    if (c.needs_grad(2)) out[2] = pad_to(gather(g, dim, c.input(1)), c.in(2).shape);
    return out;
  };

  // index_select(x, dim, index): dx = index_add(zeros(x), dim, index, g)
  t[size_t(OpKind::index_select)].save_inputs = 0b10;
  t[size_t(OpKind::index_select)].fn = [](BackwardCtx& c) -> Grads {
    const int dim = c.attr<DimAttrs>().dim;
    return {index_add(zeros_of_input(c, 0), dim, c.input(1), c.grad(0)), Val{}};
  };

  // index_add(x, dim, index, src): dx = g; dsrc = index_select(g, dim, index)
  t[size_t(OpKind::index_add)].save_inputs = 0b010;
  t[size_t(OpKind::index_add)].fn = [](BackwardCtx& c) -> Grads {
    const int dim = c.attr<DimAttrs>().dim;
    Val g = c.grad(0);
    Grads out(3);
    if (c.needs_grad(0)) out[0] = g;
    // (a 0-d x takes a [1] src: reshape restores it)
    if (c.needs_grad(2)) out[2] = reshape(index_select(g, dim, c.input(1)), c.in(2).shape);
    return out;
  };

  // index_copy(x, dim, index, src): dx = g with the indexed slices zeroed;
  // dsrc = index_select(g, dim, index)
  t[size_t(OpKind::index_copy)].save_inputs = 0b010;
  t[size_t(OpKind::index_copy)].fn = [](BackwardCtx& c) -> Grads {
    const int dim = c.attr<DimAttrs>().dim;
    Val g = c.grad(0), index = c.input(1);
    Grads out(3);
    if (c.needs_grad(0)) out[0] = run(OpKind::index_copy, {g, index, zeros_of_input(c, 2)}, dim_attrs(dim));
    if (c.needs_grad(2)) out[2] = reshape(index_select(g, dim, index), c.in(2).shape);
    return out;
  };

  // masked_select(x, mask) -> 1-d g: with m = mask broadcast to the common shape B and
  // flattened, and p = nonzero(m) (the flat positions read, in order),
  //   dx = sum_to(reshape(index_add(zeros[numel B], 0, p, g), B), x.shape)
  t[size_t(OpKind::masked_select)].save_inputs = 0b10;
  t[size_t(OpKind::masked_select)].fn = [](BackwardCtx& c) -> Grads {
    Val g = c.grad(0), mask = c.input(1);
    const Shape b = broadcast_shapes(c.in(0).shape, c.in(1).shape, "masked_select");
    Val flat_mask = reshape(expand(mask, b), Shape{b.numel()});
    Val positions = reshape(run(OpKind::nonzero, {flat_mask}), Shape{g.numel()});
    Val flat = index_add(zeros(c, Shape{b.numel()}, g.dtype()), 0, positions, g);
    return {sum_to(reshape(flat, b), c.in(0).shape), Val{}};
  };
}

}  // namespace ember::autodiff
