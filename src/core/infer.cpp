// Validation and shape/dtype inference for every op of ops.def. Runs once per op, in core,
// before any backend or decorator sees it.
#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <span>
#include <unordered_map>
#include <vector>

#include "ember/core/adam_inputs.hpp"
#include "ember/core/custom_op.hpp"
#include "ember/core/error.hpp"
#include "ember/core/op.hpp"

namespace ember {

OpKind op_kind_from_name(std::string_view name) {
  static const auto* table = [] {
    auto* m = new std::unordered_map<std::string_view, OpKind>();
    for (int i = 0; i < kNumOps; ++i) (*m)[kOpInfo[i].name] = static_cast<OpKind>(i);
    return m;
  }();
  auto it = table->find(name);
  EMBER_CHECK(it != table->end(), "unknown op '", name, "'");
  return it->second;
}

namespace {

using Metas = std::span<const TensorMeta* const>;

// A single output, moved into place (a braced list would copy its shape once more: this is on
// the path of every elementwise op).
std::vector<TensorMeta> one(TensorMeta m) {
  std::vector<TensorMeta> v;
  v.push_back(std::move(m));
  return v;
}

void expect_inputs(std::string_view op, const Metas& in, size_t lo, size_t hi) {
  EMBER_CHECK(in.size() >= lo && in.size() <= hi, op, ": expected ", lo == hi ? "" : "between ", lo,
              lo == hi ? "" : " and ", lo == hi ? "" : std::to_string(hi), " inputs, got ", in.size());
  for (size_t i = 0; i < lo; ++i) EMBER_CHECK(in[i] != nullptr, op, ": input ", i, " is missing");
}

void expect_same_dtype(std::string_view op, const TensorMeta& a, const TensorMeta& b, const char* what) {
  EMBER_CHECK(a.dtype == b.dtype, op, ": ", what, " dtypes differ: ", a.dtype, " ", a.shape, " vs ", b.dtype, " ",
              b.shape);
}

void expect_float(std::string_view op, const TensorMeta& m, const char* arg) {
  EMBER_CHECK(is_float(m.dtype), op, ": argument '", arg, "' must be a floating tensor, got ", m.dtype, " ",
              m.shape);
}

void expect_rank(std::string_view op, const TensorMeta& m, int lo, int hi, const char* arg) {
  EMBER_CHECK(m.shape.rank() >= lo && m.shape.rank() <= hi, op, ": argument '", arg, "' has rank ", m.shape.rank(),
              " (shape ", m.shape, "), expected ", lo == hi ? "" : "between ", lo, lo == hi ? "" : " and ",
              lo == hi ? "" : std::to_string(hi));
}

void expect_index(std::string_view op, const TensorMeta& m) {
  EMBER_CHECK(m.dtype == DType::i64 || m.dtype == DType::i32, op, ": index must be an i64 or i32 tensor, got ",
              m.dtype, " ", m.shape);
}

int64_t pool_out(std::string_view op, int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t span = in + 2 * p - d * (k - 1) - 1;
  EMBER_CHECK(span >= 0, op, ": kernel ", k, " (dilation ", d, ") is larger than the padded input ", in + 2 * p);
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;  // the last window must start inside the input
  return out;
}

std::vector<TensorMeta> infer_reduce(OpKind kind, const TensorMeta& x, const ReduceAttrs& a) {
  auto op = op_name(kind);
  std::vector<int64_t> out;
  for (int d = 0; d < x.shape.rank(); ++d) {
    bool reduced = a.dims.empty() || std::find(a.dims.begin(), a.dims.end(), d) != a.dims.end();
    if (!reduced) out.push_back(x.shape[d]);
    else if (a.keepdim) out.push_back(1);
    if (reduced && x.shape[d] == 0)
      EMBER_CHECK(kind != OpKind::max && kind != OpKind::min && kind != OpKind::argmax && kind != OpKind::argmin &&
                      kind != OpKind::max_dim && kind != OpKind::min_dim,
                  op, ": cannot reduce over an empty dimension (shape ", x.shape, ", dim ", d, ")");
  }
  Shape shape(std::move(out));
  switch (kind) {
    case OpKind::sum:
    case OpKind::prod:
      return {{shape, is_float(x.dtype) ? x.dtype : DType::i64}};
    case OpKind::mean:
    case OpKind::var:
    case OpKind::std:
    case OpKind::norm:
    case OpKind::logsumexp:
      expect_float(op, x, "input");
      return {{shape, x.dtype}};
    case OpKind::max:
    case OpKind::min:
      return {{shape, x.dtype}};
    case OpKind::any:
    case OpKind::all:
      return {{shape, DType::boolean}};
    case OpKind::argmax:
    case OpKind::argmin:
      EMBER_CHECK(a.dims.size() <= 1, op, ": reduces one dim or all, got ", a.dims.size(), " dims");
      return {{shape, DType::i64}};
    case OpKind::max_dim:
    case OpKind::min_dim:
      EMBER_CHECK(a.dims.size() == 1, op, ": needs exactly one dim, got ", a.dims.size());
      return {{shape, x.dtype}, {shape, DType::i64}};
    default:
      EMBER_FAIL(op, ": not a reduction");
  }
}

// The requantization inputs of qlinear_conv / qlinear_matmul (ops.def): 1 the input's scale, 4 the
// weight's scale (one value or one per output channel), 6 y_scale, 7 y_zero_point, 8 bias; the
// output's dtype (y_zero_point's, u8 without one, f32 without y_scale). clamp: act_min / act_max set.
DType infer_qlinear_output(std::string_view op, const Metas& in, int64_t channels, const char* x, const char* w,
                           bool clamp) {
  auto given = [&](size_t i) { return in.size() > i && in[i] != nullptr; };
  EMBER_CHECK(given(1) && given(3) && given(4), op, ": arguments '", x, "', '", x, "_scale', '", w, "' and '", w,
              "_scale' are required");
  auto scale = [&](size_t i, const char* arg, bool per_channel) {
    const TensorMeta& s = *in[i];
    EMBER_CHECK(s.dtype == DType::f32 && (s.shape.numel() == 1 || (per_channel && s.shape.rank() == 1 &&
                                                                    s.shape[0] == channels)),
                op, ": argument '", arg, "' must be an f32 tensor of one value",
                per_channel ? " or [" + std::to_string(channels) + "] (one per output channel)" : std::string(),
                ", got ", s.dtype, " ", s.shape);
  };
  scale(1, (std::string(x) + "_scale").c_str(), false);
  scale(4, (std::string(w) + "_scale").c_str(), true);
  const bool requantize = given(6);
  if (requantize) scale(6, "y_scale", false);
  EMBER_CHECK(requantize || !given(7), op, ": argument 'y_zero_point' needs 'y_scale' (without both, y is f32)");
  DType out = requantize ? DType::u8 : DType::f32;
  if (given(7)) {
    const TensorMeta& z = *in[7];
    EMBER_CHECK((z.dtype == DType::u8 || z.dtype == DType::i8) && z.shape.numel() == 1, op,
                ": argument 'y_zero_point' must hold one u8 or i8 value (y's dtype), got ", z.dtype, " ", z.shape);
    out = z.dtype;
  }
  if (given(8)) {
    const TensorMeta& b = *in[8];
    const DType want = requantize ? DType::i32 : DType::f32;
    EMBER_CHECK(b.dtype == want && b.shape.rank() == 1 && b.shape[0] == channels, op, ": argument 'bias' must be ",
                want, " [", channels, "] (", requantize ? "i32, quantized with scale x_scale w_scale" : "f32",
                "), got ", b.dtype, " ", b.shape);
  }
  EMBER_CHECK(!clamp || !requantize, op,
              ": act_min / act_max clamp the f32 output only (a requantized output clamps through y_zero_point)");
  return out;
}

std::vector<TensorMeta> infer_opaque(OpKind kind, const Metas& in, const OpAttrs& attrs) {
  auto op = op_name(kind);
  switch (kind) {
    case OpKind::prelu: {
      expect_inputs(op, in, 2, 2);
      expect_float(op, *in[0], "input");
      expect_same_dtype(op, *in[0], *in[1], "input and weight");
      int64_t c = in[0]->shape.rank() >= 2 ? in[0]->shape[1] : 1;
      int64_t w = in[1]->shape.numel();
      EMBER_CHECK(in[1]->shape.rank() <= 1 && (w == 1 || w == c), op, ": weight ", in[1]->shape,
                  " must have 1 or ", c, " (channel) elements for input ", in[0]->shape);
      return {*in[0]};
    }
    case OpKind::softmax:
    case OpKind::log_softmax:
      expect_inputs(op, in, 1, 1);
      expect_float(op, *in[0], "input");
      return {*in[0]};
    case OpKind::cross_entropy:
    case OpKind::cross_entropy_backward: {
      const bool bwd = kind == OpKind::cross_entropy_backward;
      expect_inputs(op, in, bwd ? 4 : 2, bwd ? 4 : 2);
      const auto& x = *in[0];
      expect_float(op, x, "logits");
      EMBER_CHECK(x.shape.rank() == 2 && std::get<DimAttrs>(attrs).dim == 1, op,
                  ": logits must be [N, C] with classes along dim 1, got ", x.shape);
      const Shape rows{x.shape[0]};
      EMBER_CHECK(in[1] && in[1]->dtype == DType::i64 && in[1]->shape == rows, op, ": target must be i64 ", rows,
                  " for logits ", x.shape, ", got ", in[1] ? in[1]->dtype : DType::i64,
                  in[1] ? in[1]->shape : Shape{});
      // per-row values in the compute type (f32 for f16/bf16 logits, which are read as they are:
      // no f32 copy of the logits is ever made), the logits' gradient in their own dtype
      const TensorMeta lse{rows, x.dtype == DType::f64 ? DType::f64 : DType::f32};
      if (!bwd) return {lse, lse, lse};
      EMBER_CHECK(in[2] && *in[2] == lse, op, ": lse must be ", lse.dtype, rows);
      EMBER_CHECK(in[3] && in[3]->shape == rows && in[3]->dtype == lse.dtype, op, ": the loss's grad must be ",
                  lse.dtype, rows);
      return {x};
    }
    case OpKind::cumsum:
    case OpKind::cumprod:
      expect_inputs(op, in, 1, 1);
      return {{in[0]->shape, is_float(in[0]->dtype) ? in[0]->dtype : DType::i64}};
    case OpKind::cummax:
    case OpKind::cummin:
    case OpKind::sort:
      expect_inputs(op, in, 1, 1);
      return {*in[0], {in[0]->shape, DType::i64}};
    case OpKind::topk: {
      expect_inputs(op, in, 1, 1);
      const auto& a = std::get<DimAttrs>(attrs);
      Shape s = in[0]->shape;
      int64_t n = s.rank() ? s[a.dim] : 1;
      EMBER_CHECK(a.k >= 0 && a.k <= n, op, ": k = ", a.k, " is out of range for dim ", a.dim, " of size ", n);
      if (s.rank()) s[a.dim] = a.k;
      return {{s, in[0]->dtype}, {s, DType::i64}};
    }
    case OpKind::matmul: {
      expect_inputs(op, in, 2, 3);
      const auto &a = *in[0], &b = *in[1];
      if (in.size() > 2 && in[2]) {
        expect_same_dtype(op, a, *in[2], "lhs and bias");
        EMBER_CHECK(is_float(a.dtype), op, ": a bias needs floating operands, got ", a.dtype);
        EMBER_CHECK(in[2]->shape == Shape{b.shape[-1]}, op, ": bias has shape ", in[2]->shape, ", expected [",
                    b.shape[-1], "]");
      }
      expect_same_dtype(op, a, b, "lhs and rhs");
      EMBER_CHECK(!is_bool(a.dtype), op, ": bool tensors are not supported");
      expect_rank(op, a, 2, 64, "lhs");
      expect_rank(op, b, 2, 64, "rhs");
      EMBER_CHECK(a.shape[-1] == b.shape[-2], op, ": inner dimensions differ: lhs ", a.shape, " rhs ", b.shape);
      Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
      Shape out = broadcast_shapes(ba, bb, op);
      out.dims().push_back(a.shape[-2]);
      out.dims().push_back(b.shape[-1]);
      return {{out, a.dtype}};
    }
    case OpKind::contiguous:
    case OpKind::flip:
      expect_inputs(op, in, 1, 1);
      return {*in[0]};
    case OpKind::roll: {
      expect_inputs(op, in, 1, 1);
      const auto& a = std::get<RollAttrs>(attrs);
      EMBER_CHECK(a.shifts.size() == a.dims.size() || (a.dims.empty() && a.shifts.size() == 1), op,
                  ": shifts and dims must have the same length (", a.shifts.size(), " vs ", a.dims.size(), ")");
      return {*in[0]};
    }
    case OpKind::cat: {
      EMBER_CHECK(!in.empty(), op, ": needs at least one tensor");
      const auto& a = std::get<DimAttrs>(attrs);
      Shape out = in[0]->shape;
      EMBER_CHECK(out.rank() > 0, op, ": zero-dimensional tensors cannot be concatenated");
      for (size_t i = 1; i < in.size(); ++i) {
        EMBER_CHECK(in[i] != nullptr, op, ": input ", i, " is missing");
        expect_same_dtype(op, *in[0], *in[i], "input");
        EMBER_CHECK(in[i]->shape.rank() == out.rank(), op, ": tensor ", i, " has shape ", in[i]->shape,
                    ", expected rank ", out.rank(), " like ", in[0]->shape);
        for (int d = 0; d < out.rank(); ++d)
          EMBER_CHECK(d == a.dim || in[i]->shape[d] == out[d], op, ": tensor ", i, " has shape ", in[i]->shape,
                      ", which differs from ", in[0]->shape, " outside dim ", a.dim);
        out[a.dim] += in[i]->shape[a.dim];
      }
      return {{out, in[0]->dtype}};
    }
    case OpKind::pad: {
      expect_inputs(op, in, 1, 1);
      const auto& a = std::get<PadAttrs>(attrs);
      Shape out = in[0]->shape;
      EMBER_CHECK(a.pads.size() == 2 * static_cast<size_t>(out.rank()), op, ": expected ", 2 * out.rank(),
                  " pad values for shape ", out, ", got ", a.pads.size());
      for (int d = 0; d < out.rank(); ++d) {
        int64_t lo = a.pads[2 * d], hi = a.pads[2 * d + 1];
        if (a.mode == PadMode::reflect)
          EMBER_CHECK(lo < out[d] && hi < out[d] && lo >= 0 && hi >= 0, op, ": reflect padding (", lo, ", ", hi,
                      ") must be smaller than the input size ", out[d], " of dim ", d);
        if (a.mode == PadMode::replicate)
          EMBER_CHECK((out[d] > 0 || (lo == 0 && hi == 0)) && lo >= 0 && hi >= 0, op,
                      ": replicate padding of an empty dim ", d);
        out[d] += lo + hi;
        EMBER_CHECK(out[d] >= 0, op, ": padding makes dim ", d, " negative");
      }
      return {{out, in[0]->dtype}};
    }
    case OpKind::tril:
    case OpKind::triu:
      expect_inputs(op, in, 1, 1);
      expect_rank(op, *in[0], 2, 64, "input");
      return {*in[0]};
    case OpKind::slice_assign: {
      expect_inputs(op, in, 2, 2);
      const auto& a = std::get<SliceAttrs>(attrs);
      expect_same_dtype(op, *in[0], *in[1], "tensor and value");
      EMBER_CHECK(a.ranges.size() == static_cast<size_t>(in[0]->shape.rank()), op, ": ", a.ranges.size(),
                  " ranges for a tensor of rank ", in[0]->shape.rank());
      std::vector<int64_t> s;
      for (const auto& r : a.ranges) s.push_back(r.length());
      EMBER_CHECK(Shape(s) == in[1]->shape, op, ": value has shape ", in[1]->shape, ", the slice has shape ",
                  Shape(s));
      return {*in[0]};
    }
    case OpKind::gather: {
      expect_inputs(op, in, 2, 2);
      const auto& a = std::get<DimAttrs>(attrs);
      expect_index(op, *in[1]);
      EMBER_CHECK(in[1]->shape.rank() == in[0]->shape.rank(), op, ": index ", in[1]->shape,
                  " must have the rank of the input ", in[0]->shape);
      for (int d = 0; d < in[0]->shape.rank(); ++d)
        EMBER_CHECK(d == a.dim || in[1]->shape[d] <= in[0]->shape[d], op, ": index ", in[1]->shape,
                    " is larger than the input ", in[0]->shape, " at dim ", d);
      return {{in[1]->shape, in[0]->dtype}};
    }
    case OpKind::scatter:
    case OpKind::scatter_add: {
      expect_inputs(op, in, 3, 3);
      const auto& a = std::get<DimAttrs>(attrs);
      expect_index(op, *in[1]);
      expect_same_dtype(op, *in[0], *in[2], "input and src");
      int r = in[0]->shape.rank();
      EMBER_CHECK(in[1]->shape.rank() == r && in[2]->shape.rank() == r, op, ": input ", in[0]->shape, ", index ",
                  in[1]->shape, " and src ", in[2]->shape, " must have the same rank");
      for (int d = 0; d < r; ++d) {
        EMBER_CHECK(in[1]->shape[d] <= in[2]->shape[d], op, ": index ", in[1]->shape, " is larger than src ",
                    in[2]->shape, " at dim ", d);
        EMBER_CHECK(d == a.dim || in[1]->shape[d] <= in[0]->shape[d], op, ": index ", in[1]->shape,
                    " is larger than the input ", in[0]->shape, " at dim ", d);
      }
      return {*in[0]};
    }
    case OpKind::index_select: {
      expect_inputs(op, in, 2, 2);
      const auto& a = std::get<DimAttrs>(attrs);
      expect_index(op, *in[1]);
      expect_rank(op, *in[1], 0, 1, "index");
      Shape s = in[0]->shape;
      if (s.rank()) s[a.dim] = in[1]->shape.numel();
      return {{s, in[0]->dtype}};
    }
    case OpKind::index_add:
    case OpKind::index_copy: {
      expect_inputs(op, in, 3, 3);
      const auto& a = std::get<DimAttrs>(attrs);
      expect_index(op, *in[1]);
      expect_rank(op, *in[1], 0, 1, "index");
      expect_same_dtype(op, *in[0], *in[2], "input and source");
      Shape s = in[0]->shape;
      if (s.rank()) s[a.dim] = in[1]->shape.numel();
      EMBER_CHECK(in[2]->shape == s || (s.rank() == 0 && in[2]->shape.numel() == 1), op, ": source has shape ",
                  in[2]->shape, ", expected ", s, " (input ", in[0]->shape, " with dim ", a.dim, " of size ",
                  in[1]->shape.numel(), ")");
      return {*in[0]};
    }
    case OpKind::conv:
    case OpKind::conv_transpose: {
      expect_inputs(op, in, 2, kind == OpKind::conv ? 4 : 3);
      const auto& a = std::get<ConvAttrs>(attrs);
      const auto &x = *in[0], &w = *in[1];
      int nd = static_cast<int>(a.stride.size());
      const std::string named = std::string(op_name(kind)) + std::to_string(nd) + "d";  // "conv2d", ...
      const std::string_view op = named;
      EMBER_CHECK(nd >= 1 && nd <= 3 && a.padding.size() == size_t(nd) && a.dilation.size() == size_t(nd) &&
                      a.output_padding.size() == size_t(nd),
                  op, ": stride/padding/dilation/output_padding must each have one entry per spatial dim");
      expect_float(op, x, "input");
      expect_same_dtype(op, x, w, "input and weight");
      EMBER_CHECK(x.shape.rank() == nd + 2, op, ": input ", x.shape, " must have rank ", nd + 2, " [N, C, ...]");
      EMBER_CHECK(w.shape.rank() == nd + 2, op, ": weight ", w.shape, " must have rank ", nd + 2);
      EMBER_CHECK(a.groups >= 1, op, ": groups must be positive, got ", a.groups);
      int64_t c = x.shape[1], g = a.groups;
      bool tr = kind == OpKind::conv_transpose;
      int64_t out_c = tr ? w.shape[1] * g : w.shape[0];
      if (tr)
        EMBER_CHECK(w.shape[0] == c && c % g == 0, op, ": weight ", w.shape, " expects ", w.shape[0],
                    " input channels, input ", x.shape, " has ", c, " (groups ", g, ")");
      else
        EMBER_CHECK(c % g == 0 && w.shape[1] * g == c && out_c % g == 0, op, ": weight ", w.shape, " expects ",
                    w.shape[1] * g, " input channels, input ", x.shape, " has ", c, " (groups ", g, ")");
      EMBER_CHECK(!std::isnan(a.act_min) && !std::isnan(a.act_max), op, ": the epilogue's clamp bounds must not be NaN");
      EMBER_CHECK(kind == OpKind::conv || !a.has_activation(), op, ": has no epilogue (a clamp)");
      if (in.size() >= 3 && in[2]) {
        expect_same_dtype(op, x, *in[2], "input and bias");
        EMBER_CHECK(in[2]->shape == Shape({out_c}), op, ": bias ", in[2]->shape, " must have shape [", out_c, "]");
      }
      std::vector<int64_t> out = {x.shape[0], out_c};
      for (int i = 0; i < nd; ++i) {
        int64_t s = a.stride[i], p = a.padding[i], d = a.dilation[i], op_ = a.output_padding[i];
        int64_t k = w.shape[2 + i], n = x.shape[2 + i];
        EMBER_CHECK(s >= 1 && d >= 1 && p >= 0, op, ": stride and dilation must be >= 1 and padding >= 0");
        int64_t o = tr ? (n - 1) * s - 2 * p + d * (k - 1) + op_ + 1 : (n + 2 * p - d * (k - 1) - 1) / s + 1;
        if (tr)
          EMBER_CHECK(op_ < s || op_ < d, op, ": output_padding ", op_, " must be smaller than stride or dilation");
        EMBER_CHECK(o > 0 && (tr || n + 2 * p >= d * (k - 1) + 1), op, ": input ", x.shape, " is too small for kernel ",
                    w.shape, " (spatial dim ", i, ")");
        out.push_back(o);
      }
      if (in.size() == 4 && in[3]) {
        expect_same_dtype(op, x, *in[3], "input and residual");
        EMBER_CHECK(in[3]->shape == Shape(out), op, ": residual ", in[3]->shape, " must have the output's shape ",
                    Shape(out));
      }
      return {{Shape(out), x.dtype}};
    }
    case OpKind::avg_pool:
    case OpKind::max_pool: {
      expect_inputs(op, in, 1, 1);
      const auto& a = std::get<PoolAttrs>(attrs);
      const auto& x = *in[0];
      int nd = static_cast<int>(a.kernel.size());
      EMBER_CHECK(nd >= 1 && a.stride.size() == size_t(nd) && a.padding.size() == size_t(nd) &&
                      a.dilation.size() == size_t(nd),
                  op, ": kernel/stride/padding/dilation need one entry per spatial dim");
      EMBER_CHECK(x.shape.rank() == nd + 1 || x.shape.rank() == nd + 2, op, ": input ", x.shape, " must have rank ",
                  nd + 1, " or ", nd + 2);
      if (kind == OpKind::avg_pool) expect_float(op, x, "input");
      EMBER_CHECK(kind == OpKind::max_pool || a.indices, op, ": indices=false applies to max_pool only");
      // (as torch: no kernel of any backend takes bool, so make_op says it, not the kernel)
      EMBER_CHECK(!is_bool(x.dtype), op, ": not defined for bool tensors, got input ", x.shape);
      std::vector<int64_t> out(x.shape.begin(), x.shape.end() - nd);
      int off = x.shape.rank() - nd;
      for (int i = 0; i < nd; ++i) {
        EMBER_CHECK(a.kernel[i] >= 1 && a.stride[i] >= 1 && a.dilation[i] >= 1, op,
                    ": kernel, stride and dilation must be >= 1");
        EMBER_CHECK(a.padding[i] >= 0 && a.padding[i] * 2 <= a.kernel[i], op, ": padding ", a.padding[i],
                    " must be at most half the kernel size ", a.kernel[i]);
        out.push_back(pool_out(op, x.shape[off + i], a.kernel[i], a.stride[i], a.padding[i], a.dilation[i],
                               a.ceil_mode));
      }
      if (kind == OpKind::max_pool && a.indices) return {{Shape(out), x.dtype}, {Shape(out), DType::i64}};
      return {{Shape(out), x.dtype}};
    }
    case OpKind::adaptive_avg_pool:
    case OpKind::interpolate: {
      expect_inputs(op, in, 1, 1);
      const std::vector<int64_t> size = kind == OpKind::interpolate ? std::get<InterpolateAttrs>(attrs).size
                                                                    : std::get<ShapeAttrs>(attrs).shape.dims().vec();
      const auto& x = *in[0];
      int nd = static_cast<int>(size.size());
      expect_float(op, x, "input");
      EMBER_CHECK(nd >= 1 && (x.shape.rank() == nd + 2 || (kind == OpKind::adaptive_avg_pool && x.shape.rank() == nd + 1)),
                  op, ": input ", x.shape, " does not match an output size of ", nd, " spatial dims");
      std::vector<int64_t> out(x.shape.begin(), x.shape.end() - nd);
      for (int64_t s : size) {
        EMBER_CHECK(s > 0, op, ": output size must be positive, got ", s);
        out.push_back(s);
      }
      if (kind == OpKind::interpolate && std::get<InterpolateAttrs>(attrs).mode != InterpMode::nearest)
        EMBER_CHECK(nd <= 2, op, ": linear/cubic modes support 1 or 2 spatial dims");
      return {{Shape(out), x.dtype}};
    }
    case OpKind::layer_norm:
    case OpKind::layer_norm_backward: {
      // layer_norm: x, weight or null, bias or null; its backward: x, weight or null, grad of out
      const bool bwd = kind == OpKind::layer_norm_backward;
      if (bwd)
        EMBER_CHECK(in.size() == 3 && in[0] && in[2], op,
                    ": takes the input, the weight or null, and the output's gradient");
      else
        expect_inputs(op, in, 1, 3);
      const auto& a = std::get<NormAttrs>(attrs);
      const auto& x = *in[0];
      expect_float(op, x, "input");
      EMBER_CHECK(a.axes >= 1 && a.axes <= x.shape.rank(), op, ": cannot normalise ", a.axes,
                  " trailing dims of shape ", x.shape);
      Shape ns(x.shape.end() - a.axes, x.shape.end());
      for (size_t i = 1; i < (bwd ? 2 : in.size()); ++i)
        if (in[i]) {
          expect_same_dtype(op, x, *in[i], i == 1 ? "input and weight" : "input and bias");
          EMBER_CHECK(in[i]->shape == ns, op, ": ", i == 1 ? "weight" : "bias", " has shape ", in[i]->shape,
                      ", expected ", ns);
        }
      if (!bwd) return {x};
      EMBER_CHECK(*in[2] == x, op, ": the gradient must be ", x.dtype, x.shape, ", got ", in[2]->dtype, in[2]->shape);
      return {x, {ns, x.dtype}, {ns, x.dtype}};
    }
    case OpKind::batch_norm: {
      expect_inputs(op, in, 3, 5);
      const auto& x = *in[0];
      expect_float(op, x, "input");
      expect_rank(op, x, 2, 64, "input");
      const char* names[] = {"input", "running_mean", "running_var", "weight", "bias"};
      for (size_t i = 1; i < in.size(); ++i)
        if (in[i]) {
          expect_same_dtype(op, x, *in[i], names[i]);
          EMBER_CHECK(in[i]->shape == Shape({x.shape[1]}), op, ": ", names[i], " has shape ", in[i]->shape,
                      ", expected [", x.shape[1], "] for input ", x.shape);
        }
      return {x};
    }
    case OpKind::attention: {
      expect_inputs(op, in, 3, 4);
      const auto &q = *in[0], &k = *in[1], &v = *in[2];
      expect_float(op, q, "query");
      expect_same_dtype(op, q, k, "query and key");
      expect_same_dtype(op, q, v, "query and value");
      expect_rank(op, q, 2, 64, "query");
      EMBER_CHECK(k.shape.rank() == q.shape.rank() && v.shape.rank() == q.shape.rank(), op, ": query ", q.shape,
                  ", key ", k.shape, " and value ", v.shape, " must have the same rank");
      int r = q.shape.rank();
      for (int d = 0; d < r - 2; ++d)
        EMBER_CHECK(q.shape[d] == k.shape[d] && q.shape[d] == v.shape[d], op, ": batch dims differ: query ",
                    q.shape, ", key ", k.shape, ", value ", v.shape);
      EMBER_CHECK(q.shape[-1] == k.shape[-1], op, ": query ", q.shape, " and key ", k.shape,
                  " have different embedding sizes");
      EMBER_CHECK(k.shape[-2] == v.shape[-2], op, ": key ", k.shape, " and value ", v.shape,
                  " have different sequence lengths");
      Shape out = q.shape;
      out[-1] = v.shape[-1];
      if (in.size() == 4 && in[3]) {
        const auto& m = *in[3];
        EMBER_CHECK(m.dtype == DType::boolean || m.dtype == q.dtype, op, ": mask must be bool or ", q.dtype,
                    ", got ", m.dtype);
        Shape scores = q.shape;
        scores[-1] = k.shape[-2];
        EMBER_CHECK(broadcast_shapes(m.shape, scores, op) == scores, op, ": mask ", m.shape,
                    " does not broadcast to the score shape ", scores);
      }
      std::vector<int64_t> rows(q.shape.begin(), q.shape.end() - 1);  // lse: one per query row
      return {{out, q.dtype}, {Shape(rows), DType::f32}};
    }
    case OpKind::attention_backward: {
      // q, k, v, out, grad of out, mask, lse: the forward's checks, then out, its grad and lse.
      expect_inputs(op, in, 5, 7);
      const std::array<const TensorMeta*, 4> fwd_in{in[0], in[1], in[2], in.size() >= 6 ? in[5] : nullptr};
      const Metas fwd(fwd_in.data(), in.size() >= 6 ? 4 : 3);
      const std::vector<TensorMeta> metas = infer_opaque(OpKind::attention, fwd, attrs);
      const TensorMeta& out = metas[0];
      for (int i : {3, 4}) {
        EMBER_CHECK(in[i], op, ": input ", i, " is missing");
        EMBER_CHECK(in[i]->shape == out.shape && in[i]->dtype == out.dtype, op, ": ", i == 3 ? "output" : "its grad",
                    " is ", in[i]->dtype, in[i]->shape, ", expected ", out.dtype, out.shape);
      }
      if (in.size() == 7 && in[6])
        EMBER_CHECK(in[6]->shape == metas[1].shape && in[6]->dtype == DType::f32, op, ": lse is ", in[6]->dtype,
                    in[6]->shape, ", expected f32", metas[1].shape);
      return {*in[0], *in[1], *in[2]};
    }
    case OpKind::adam_step: {
      // param, grad, exp_avg, exp_avg_sq for each of k parameters (one dtype), then in the
      // device-scalar form lr and k step counts (AdamInputs, core/op.hpp)
      const auto& a = std::get<AdamAttrs>(attrs);
      const AdamInputs form = adam_inputs(in.size(), a);
      if (form.device_scalars)
        EMBER_CHECK(in.size() >= 6 && (in.size() - 1) % 5 == 0, op,
                    ": the device-scalar form (step 0) expects 4 inputs per parameter, then lr, then one step "
                    "per parameter (5k + 1 inputs), got ",
                    in.size());
      else
        EMBER_CHECK(in.size() >= 4 && in.size() % 4 == 0, op, ": expected 4 inputs per parameter",
                    " (or 6: one parameter with lr and step), got ", in.size());
      const char* names[] = {"param", "grad", "exp_avg", "exp_avg_sq"};
      const size_t k = form.params;
      std::vector<TensorMeta> outs;
      for (size_t q = 0; q < k; ++q) {
        const TensorMeta* pm = in[4 * q];
        EMBER_CHECK(pm, op, ": param ", q, " is missing");
        expect_float(op, *pm, "param");
        EMBER_CHECK(pm->dtype == in[0]->dtype, op, ": every parameter of one update has one dtype: param ", q, " is ",
                    pm->dtype, ", param 0 ", in[0]->dtype);
        for (size_t i = 1; i < 4; ++i) {
          const TensorMeta* t = in[4 * q + i];
          EMBER_CHECK(t, op, ": ", names[i], " of param ", q, " is missing");
          EMBER_CHECK(t->shape == pm->shape && t->dtype == pm->dtype, op, ": ", names[i], " of param ", q, " is ",
                      t->dtype, t->shape, ", expected ", pm->dtype, pm->shape, " like param");
        }
        outs.insert(outs.end(), {*pm, *pm, *pm});
      }
      if (form.device_scalars) {  // the learning rate and the step counts on the device
        for (size_t i = form.lr(); i < in.size(); ++i) {
          const bool lr = i == form.lr();
          EMBER_CHECK(in[i], op, ": ", lr ? "lr" : "step", " is missing");
          EMBER_CHECK(in[i]->shape.rank() == 0 && in[i]->dtype == DType::f32, op, ": ", lr ? "lr" : "step",
                      lr ? "" : " of param ", lr ? "" : std::to_string(i - form.step(0)),
                      " must be an f32 0-d tensor, got ", in[i]->dtype, in[i]->shape);
          if (!lr) outs.push_back(*in[i]);
        }
        return outs;
      }
      EMBER_CHECK(a.step >= 1, op, ": step must be >= 1, got ", a.step);
      return outs;
    }
    case OpKind::norm_multi:
    case OpKind::mul_multi: {
      // k tensors of one floating dtype (mul_multi: then the 0-d scalar of that dtype)
      const bool mul = kind == OpKind::mul_multi;
      const size_t k = in.size() - (mul ? 1 : 0);
      EMBER_CHECK(in.size() >= (mul ? 2u : 1u), op, ": expected at least one tensor", mul ? " and the scalar" : "",
                  ", got ", in.size(), " inputs");
      std::vector<TensorMeta> outs;
      for (size_t i = 0; i < k; ++i) {
        EMBER_CHECK(in[i], op, ": tensor ", i, " is missing");
        expect_float(op, *in[i], "tensor");
        EMBER_CHECK(in[i]->dtype == in[0]->dtype, op, ": every tensor has one dtype: tensor ", i, " is ",
                    in[i]->dtype, ", tensor 0 ", in[0]->dtype);
        if (mul) outs.push_back(*in[i]);
      }
      if (!mul) {
        const double p = std::get<ScalarAttrs>(attrs).a;
        EMBER_CHECK(p > 0, op, ": the norm's order p must be > 0, got ", p);
        return {TensorMeta{Shape{int64_t(k)}, in[0]->dtype}};
      }
      const TensorMeta* s = in[k];
      EMBER_CHECK(s && s->shape.rank() == 0 && s->dtype == in[0]->dtype, op, ": the scalar must be a 0-d ",
                  in[0]->dtype, " tensor, got ", s ? s->dtype : in[0]->dtype, s ? s->shape : Shape{});
      return outs;
    }
    case OpKind::matmul_integer: {
      expect_inputs(op, in, 2, 4);
      const auto &a = *in[0], &b = *in[1];
      for (auto [m, arg] : {std::pair{&a, "a"}, std::pair{&b, "b"}})
        EMBER_CHECK(m->dtype == DType::u8 || m->dtype == DType::i8, op, ": argument '", arg,
                    "' must be a u8 or i8 tensor, got ", m->dtype, " ", m->shape);
      expect_rank(op, a, 2, 64, "a");
      expect_rank(op, b, 2, 64, "b");
      EMBER_CHECK(a.shape[-1] == b.shape[-2], op, ": inner dimensions differ: a ", a.shape, " b ", b.shape);
      // a zero point: one value (any shape of one element), or one per row of a / column of b
      auto check_zp = [&](size_t i, const TensorMeta& x, int64_t per, const char* arg, const char* what) {
        if (in.size() <= i || !in[i]) return;
        const TensorMeta& z = *in[i];
        EMBER_CHECK(z.dtype == x.dtype, op, ": argument '", arg, "' must have the dtype of its operand (", x.dtype,
                    "), got ", z.dtype, " ", z.shape);
        EMBER_CHECK(z.shape.numel() == 1 || (z.shape.rank() == 1 && z.shape[0] == per), op, ": argument '", arg,
                    "' must hold one value or [", per, "] (one per ", what, "), got ", z.shape);
      };
      check_zp(2, a, a.shape[-2], "a_zero_point", "row of a");
      check_zp(3, b, b.shape[-1], "b_zero_point", "column of b");
      Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
      Shape out = broadcast_shapes(ba, bb, op);
      out.dims().push_back(a.shape[-2]);
      out.dims().push_back(b.shape[-1]);
      return {{out, DType::i32}};
    }
    case OpKind::conv_integer:
    case OpKind::qlinear_conv: {
      // qlinear_conv: x 0, x_zero_point 2, w 3, w_zero_point 5 (the scales checked below)
      const bool ql = kind == OpKind::qlinear_conv;
      expect_inputs(op, in, ql ? 1 : 2, ql ? 9 : 4);
      auto input = [&](size_t i) { return in.size() > i ? in[i] : nullptr; };
      const std::array<const TensorMeta*, 4> ci{in[0], input(ql ? 3 : 1), input(2), input(ql ? 5 : 3)};
      EMBER_CHECK(ci[1], op, ": argument 'w' is missing");
      const Metas cin(ci);
      const auto& a = std::get<ConvAttrs>(attrs);
      const auto &x = *cin[0], &w = *cin[1];
      for (auto [m, arg] : {std::pair{&x, "x"}, std::pair{&w, "w"}})
        EMBER_CHECK(m->dtype == DType::u8 || m->dtype == DType::i8, op, ": argument '", arg,
                    "' must be a u8 or i8 tensor, got ", m->dtype, " ", m->shape);
      const int nd = int(a.stride.size());
      EMBER_CHECK(nd >= 1 && nd <= 3, op, ": 1 to 3 spatial dims, got ", nd, " strides");
      EMBER_CHECK(x.shape.rank() == nd + 2, op, ": argument 'x' ", x.shape, " must have rank ", nd + 2,
                  " [N, C, ", nd, " spatial dims]");
      EMBER_CHECK(w.shape.rank() == nd + 2, op, ": argument 'w' ", w.shape, " must have rank ", nd + 2,
                  " [M, C/groups, ", nd, " kernel dims]");
      EMBER_CHECK(a.dilation.size() == size_t(nd) && (a.padding.size() == size_t(nd) || a.padding.size() == 2 * size_t(nd)),
                  op, ": dilation needs ", nd, " values and padding ", nd, " or ", 2 * nd, " (begins, then ends), got ",
                  a.dilation.size(), " and ", a.padding.size());
      EMBER_CHECK(std::all_of(a.output_padding.begin(), a.output_padding.end(), [](int64_t v) { return v == 0; }) &&
                      (ql || !a.has_activation()),
                  op, ": has no output_padding", ql ? "" : " and no epilogue");
      const int64_t g = a.groups, c = x.shape[1], m = w.shape[0];
      EMBER_CHECK(g >= 1, op, ": groups must be positive, got ", g);
      EMBER_CHECK(c % g == 0 && w.shape[1] * g == c && m % g == 0, op, ": argument 'w' ", w.shape, " expects ",
                  w.shape[1] * g, " input channels and a multiple of ", g, " output channels; 'x' ", x.shape,
                  " has ", c, " (groups ", g, ")");
      if (cin[2]) {
        const TensorMeta& z = *cin[2];
        EMBER_CHECK(z.dtype == x.dtype && z.shape.numel() == 1, op,
                    ": argument 'x_zero_point' must hold one value of x's dtype (", x.dtype, "), got ", z.dtype, " ",
                    z.shape);
      }
      if (cin[3]) {
        const TensorMeta& z = *cin[3];
        EMBER_CHECK(z.dtype == w.dtype, op, ": argument 'w_zero_point' must have w's dtype (", w.dtype, "), got ",
                    z.dtype, " ", z.shape);
        EMBER_CHECK(z.shape.numel() == 1 || (z.shape.rank() == 1 && z.shape[0] == m), op,
                    ": argument 'w_zero_point' must hold one value or [", m, "] (one per output channel), got ",
                    z.shape);
      }
      std::vector<int64_t> out = {x.shape[0], m};
      for (int i = 0; i < nd; ++i) {
        const int64_t s = a.stride[size_t(i)], d = a.dilation[size_t(i)], k = w.shape[2 + i], n = x.shape[2 + i];
        const int64_t p0 = a.padding[size_t(i)], p1 = a.padding[a.padding.size() == size_t(nd) ? size_t(i) : size_t(nd + i)];
        EMBER_CHECK(s >= 1 && d >= 1 && p0 >= 0 && p1 >= 0, op,
                    ": stride and dilation must be >= 1 and padding >= 0 (spatial dim ", i, ")");
        const int64_t span = d * (k - 1) + 1;
        EMBER_CHECK(k >= 1 && n + p0 + p1 >= span, op, ": argument 'x' ", x.shape, " (padded ", p0, " + ", p1,
                    ") is too small for the kernel of 'w' ", w.shape, " (spatial dim ", i, ")");
        out.push_back((n + p0 + p1 - span) / s + 1);
      }
      if (!ql) return {{Shape(out), DType::i32}};
      return {{Shape(out), infer_qlinear_output(op, in, m, "x", "w", a.has_activation())}};
    }
    case OpKind::qlinear_matmul: {
      expect_inputs(op, in, 1, 9);
      EMBER_CHECK(in.size() > 4 && in[3], op, ": argument 'b' is missing");
      const auto &a = *in[0], &b = *in[3];
      for (auto [m, arg] : {std::pair{&a, "a"}, std::pair{&b, "b"}}) {
        EMBER_CHECK(m->dtype == DType::u8 || m->dtype == DType::i8, op, ": argument '", arg,
                    "' must be a u8 or i8 tensor, got ", m->dtype, " ", m->shape);
        expect_rank(op, *m, 2, 2, arg);
      }
      EMBER_CHECK(a.shape[1] == b.shape[0], op, ": inner dimensions differ: a ", a.shape, " b ", b.shape);
      const int64_t n = b.shape[1];
      if (in[2])
        EMBER_CHECK(in[2]->dtype == a.dtype && in[2]->shape.numel() == 1, op,
                    ": argument 'a_zero_point' must hold one value of a's dtype (", a.dtype, "), got ", in[2]->dtype,
                    " ", in[2]->shape);
      if (in.size() > 5 && in[5])
        EMBER_CHECK(in[5]->dtype == b.dtype && (in[5]->shape.numel() == 1 || (in[5]->shape.rank() == 1 &&
                                                                               in[5]->shape[0] == n)),
                    op, ": argument 'b_zero_point' must hold one value or [", n, "] (one per column) of b's dtype (",
                    b.dtype, "), got ", in[5]->dtype, " ", in[5]->shape);
      const auto& c = std::get<ScalarAttrs>(attrs);
      const bool clamp = c.a > -std::numeric_limits<double>::infinity() || c.b < std::numeric_limits<double>::infinity();
      return {{Shape{a.shape[0], n}, infer_qlinear_output(op, in, n, "a", "b", clamp)}};
    }
    case OpKind::qlinear_add: {
      expect_inputs(op, in, 1, 8);
      auto given = [&](size_t i) { return in.size() > i && in[i] != nullptr; };
      EMBER_CHECK(given(1) && given(3) && given(4) && given(6), op,
                  ": arguments 'a', 'a_scale', 'b', 'b_scale' and 'c_scale' are required");
      const auto &a = *in[0], &b = *in[3];
      EMBER_CHECK(a.dtype == DType::u8 || a.dtype == DType::i8, op, ": argument 'a' must be a u8 or i8 tensor, got ",
                  a.dtype, " ", a.shape);
      EMBER_CHECK(b.dtype == a.dtype && b.shape == a.shape, op, ": argument 'b' must have a's dtype and shape (", a.dtype,
                  " ", a.shape, "), got ", b.dtype, " ", b.shape);
      for (auto [i, arg] : {std::pair{size_t(1), "a_scale"}, std::pair{size_t(4), "b_scale"}, std::pair{size_t(6), "c_scale"}})
        EMBER_CHECK(in[i]->dtype == DType::f32 && in[i]->shape.numel() == 1, op, ": argument '", arg,
                    "' must be an f32 tensor of one value, got ", in[i]->dtype, " ", in[i]->shape);
      for (auto [i, arg] : {std::pair{size_t(2), "a_zero_point"}, std::pair{size_t(5), "b_zero_point"},
                            std::pair{size_t(7), "c_zero_point"}})
        if (given(i))
          EMBER_CHECK(in[i]->dtype == a.dtype && in[i]->shape.numel() == 1, op, ": argument '", arg,
                      "' must hold one value of a's dtype (", a.dtype, "), got ", in[i]->dtype, " ", in[i]->shape);
      return {{a.shape, a.dtype}};
    }
    case OpKind::matmul_wq: {
      expect_inputs(op, in, 3, 4);
      const auto& q = std::get<WeightQuantAttrs>(attrs);
      const auto &x = *in[0], &data = *in[1], &scales = *in[2];
      EMBER_CHECK(q.bits == 4 || q.bits == 8, op, ": bits must be 4 or 8, got ", q.bits);
      EMBER_CHECK(q.block == 32 || q.block == 64 || q.block == 128, op, ": block must be 32, 64 or 128, got ",
                  q.block);
      EMBER_CHECK(x.dtype == DType::f32, op, ": argument 'x' must be an f32 tensor, got ", x.dtype, " ", x.shape);
      expect_rank(op, x, 1, 64, "x");
      const int64_t K = x.shape[-1];
      EMBER_CHECK(K % q.block == 0, op, ": K = ", K, " (the last dim of x ", x.shape,
                  ") is not a multiple of the block size ", q.block);
      const bool affine = in.size() > 3 && in[3];
      expect_rank(op, data, 2, 2, "data");
      const int64_t N = data.shape[0];
      if (q.bits == 8) {
        EMBER_CHECK(data.dtype == (affine ? DType::u8 : DType::i8), op, ": argument 'data' of 8-bit weights must be ",
                    affine ? "u8 (with a zero point)" : "i8 (without a zero point)", ", got ", data.dtype);
        EMBER_CHECK(data.shape[1] == K, op, ": argument 'data' has shape ", data.shape, ", expected [", N, ", ", K,
                    "] for x ", x.shape);
      } else {
        EMBER_CHECK(data.dtype == DType::u8, op, ": argument 'data' of 4-bit weights must be u8 (two per byte), got ",
                    data.dtype);
        EMBER_CHECK(data.shape[1] * 2 == K, op, ": argument 'data' has shape ", data.shape, ", expected [", N, ", ",
                    K / 2, "] (two 4-bit weights a byte) for x ", x.shape);
      }
      const Shape per_block{N, K / q.block};
      EMBER_CHECK(scales.dtype == DType::f32 && scales.shape == per_block, op, ": argument 'scales' must be f32 ",
                  per_block, " (one per block of ", q.block, " weights), got ", scales.dtype, " ", scales.shape);
      if (affine)
        EMBER_CHECK(in[3]->dtype == DType::u8 && in[3]->shape == per_block, op,
                    ": argument 'zero_point' must be u8 ", per_block, ", got ", in[3]->dtype, " ", in[3]->shape);
      Shape out = x.shape;
      out[-1] = N;
      return {{out, DType::f32}};
    }
    case OpKind::custom: {
      const auto& impl = std::get<CustomAttrs>(attrs).impl;
      EMBER_CHECK(impl != nullptr, op, ": no definition");
      std::vector<TensorMeta> metas;
      for (size_t i = 0; i < in.size(); ++i) {
        EMBER_CHECK(in[i], impl->name, ": input ", i, " is missing");
        metas.push_back(*in[i]);
      }
      std::vector<TensorMeta> outs = impl->infer(metas);
      EMBER_CHECK(!outs.empty(), impl->name, ": the definition's infer gave no outputs");
      return outs;
    }
    default:
      EMBER_FAIL(op, ": no inference rule");
  }
}

}  // namespace

std::vector<TensorMeta> infer_outputs(OpKind kind, Metas in, const OpAttrs& attrs) {
  const OpInfo& info = op_info(kind);
  auto op = info.name;
  EMBER_CHECK(attrs.index() == info.attrs_index, op, ": wrong attribute type (internal error)");
  switch (info.family) {
    case OpFamily::Creation: {
      expect_inputs(op, in, 0, 0);
      const auto& a = std::get<CreateAttrs>(attrs);
      for (int64_t d : a.shape) EMBER_CHECK(d >= 0, op, ": negative dimension in shape ", a.shape);
      if (kind == OpKind::random_normal || kind == OpKind::random_uniform)
        EMBER_CHECK(is_float(a.dtype), op, ": needs a floating dtype, got ", a.dtype);
      return {{a.shape, a.dtype}};
    }
    case OpFamily::Unary:
      expect_inputs(op, in, 1, 1);
      EMBER_CHECK(!is_bool(in[0]->dtype), op, ": not defined for bool tensors");
      return one(*in[0]);
    case OpFamily::FloatUnary:
      expect_inputs(op, in, 1, 1);
      expect_float(op, *in[0], "input");
      return one(*in[0]);
    case OpFamily::Predicate:
      expect_inputs(op, in, 1, 1);
      return one({in[0]->shape, DType::boolean});
    case OpFamily::BitwiseUnary:
      expect_inputs(op, in, 1, 1);
      EMBER_CHECK(!is_float(in[0]->dtype), op, ": needs an integer or bool tensor, got ", in[0]->dtype);
      return one(*in[0]);
    case OpFamily::Binary:
    case OpFamily::FloatBinary:
    case OpFamily::Compare:
    case OpFamily::Bitwise: {
      expect_inputs(op, in, 2, 2);
      expect_same_dtype(op, *in[0], *in[1], "operand");
      Shape s = broadcast_shapes(in[0]->shape, in[1]->shape, op);
      if (info.family == OpFamily::FloatBinary) expect_float(op, *in[0], "input");
      if (info.family == OpFamily::Bitwise)
        EMBER_CHECK(!is_float(in[0]->dtype), op, ": needs integer or bool tensors, got ", in[0]->dtype);
      if (info.family == OpFamily::Binary && kind != OpKind::add && kind != OpKind::mul &&
          kind != OpKind::maximum && kind != OpKind::minimum)
        EMBER_CHECK(!is_bool(in[0]->dtype), op, ": not defined for bool tensors");
      return one({std::move(s), info.family == OpFamily::Compare ? DType::boolean : in[0]->dtype});
    }
    case OpFamily::Where: {
      expect_inputs(op, in, 3, 3);
      EMBER_CHECK(in[0]->dtype == DType::boolean, op, ": condition must be bool, got ", in[0]->dtype);
      expect_same_dtype(op, *in[1], *in[2], "value");
      Shape s = broadcast_shapes(broadcast_shapes(in[0]->shape, in[1]->shape, op), in[2]->shape, op);
      return one({std::move(s), in[1]->dtype});
    }
    case OpFamily::Ternary: {
      expect_inputs(op, in, 3, 3);
      expect_float(op, *in[0], "start");
      expect_same_dtype(op, *in[0], *in[1], "start and end");
      expect_same_dtype(op, *in[0], *in[2], "start and weight");
      Shape s = broadcast_shapes(broadcast_shapes(in[0]->shape, in[1]->shape, op), in[2]->shape, op);
      return one({std::move(s), in[0]->dtype});
    }
    case OpFamily::Reduce:
      expect_inputs(op, in, 1, 1);
      return infer_reduce(kind, *in[0], std::get<ReduceAttrs>(attrs));
    case OpFamily::View: {
      expect_inputs(op, in, 1, 1);
      const auto& x = *in[0];
      switch (kind) {
        case OpKind::reshape: {
          const auto& s = std::get<ShapeAttrs>(attrs).shape;
          for (int64_t d : s) EMBER_CHECK(d >= 0, op, ": target shape ", s, " has a negative dim");
          EMBER_CHECK(s.numel() == x.shape.numel(), op, ": cannot reshape ", x.shape, " (", x.shape.numel(),
                      " elements) into ", s, " (", s.numel(), " elements)");
          return {{s, x.dtype}};
        }
        case OpKind::permute: {
          const auto& p = std::get<DimsAttrs>(attrs).dims;
          EMBER_CHECK(p.size() == size_t(x.shape.rank()), op, ": permutation has ", p.size(),
                      " dims, tensor ", x.shape, " has ", x.shape.rank());
          std::vector<int64_t> s(p.size());
          std::vector<bool> seen(p.size());
          for (size_t i = 0; i < p.size(); ++i) {
            EMBER_CHECK(!seen[p[i]], op, ": dim ", p[i], " appears twice in the permutation");
            seen[p[i]] = true;
            s[i] = x.shape[p[i]];
          }
          return {{Shape(s), x.dtype}};
        }
        case OpKind::expand: {
          const auto& s = std::get<ShapeAttrs>(attrs).shape;
          EMBER_CHECK(s.rank() >= x.shape.rank(), op, ": cannot expand ", x.shape, " to fewer dims ", s);
          int off = s.rank() - x.shape.rank();
          for (int d = 0; d < x.shape.rank(); ++d)
            EMBER_CHECK(x.shape[d] == s[off + d] || x.shape[d] == 1, op, ": cannot expand ", x.shape, " to ", s,
                        " (dim ", d, ")");
          return {{s, x.dtype}};
        }
        case OpKind::slice: {
          const auto& r = std::get<SliceAttrs>(attrs).ranges;
          EMBER_CHECK(r.size() == size_t(x.shape.rank()), op, ": ", r.size(), " ranges for shape ", x.shape);
          std::vector<int64_t> s;
          for (size_t d = 0; d < r.size(); ++d) {
            EMBER_CHECK(r[d].step >= 1 && r[d].start >= 0 && r[d].end <= x.shape[int(d)], op, ": range [",
                        r[d].start, ":", r[d].end, ":", r[d].step, "] is invalid for dim ", d, " of ", x.shape);
            s.push_back(r[d].length());
          }
          return {{Shape(s), x.dtype}};
        }
        default:
          break;
      }
      EMBER_FAIL(op, ": no inference rule");
    }
    case OpFamily::Cast:
      expect_inputs(op, in, 1, 1);
      return one({in[0]->shape, std::get<CastAttrs>(attrs).dtype});
    case OpFamily::DataDependent:
      if (kind == OpKind::nonzero) {
        expect_inputs(op, in, 1, 1);
        return {{Shape{-1, in[0]->shape.rank()}, DType::i64}};
      }
      expect_inputs(op, in, 2, 2);
      EMBER_CHECK(in[1]->dtype == DType::boolean, op, ": mask must be bool, got ", in[1]->dtype);
      broadcast_shapes(in[0]->shape, in[1]->shape, op);
      return {{Shape{-1}, in[0]->dtype}};
    case OpFamily::Opaque:
      return infer_opaque(kind, in, attrs);
  }
  EMBER_FAIL(op, ": no inference rule");
}

namespace {
// Normalises dims given by the caller (negative = from the end) in place.
void normalize_attrs(OpKind kind, const Metas& in, OpAttrs& attrs) {
  auto op = op_name(kind);
  int rank = in.empty() || !in[0] ? 0 : in[0]->shape.rank();
  std::visit(
      [&](auto& a) {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, ReduceAttrs>) {
          for (int& d : a.dims) d = normalize_dim(d, rank, op);
          std::sort(a.dims.begin(), a.dims.end());
          EMBER_CHECK(std::adjacent_find(a.dims.begin(), a.dims.end()) == a.dims.end(), op,
                      ": a dim appears twice in the reduction dims");
          if (rank == 0) a.dims.clear();
        } else if constexpr (std::is_same_v<A, DimAttrs>) {
          if (kind != OpKind::tril && kind != OpKind::triu) a.dim = normalize_dim(a.dim, rank, op);
        } else if constexpr (std::is_same_v<A, DimsAttrs>) {
          for (int& d : a.dims) d = normalize_dim(d, rank, op);
        } else if constexpr (std::is_same_v<A, RollAttrs>) {
          for (int& d : a.dims) d = normalize_dim(d, rank, op);
        }
      },
      attrs);
}
}  // namespace

Op make_op(OpKind kind, std::vector<PrimitivePtr> inputs, OpAttrs attrs) {
  // the inputs' metadata, on the stack for the usual few inputs
  std::array<const TensorMeta*, 8> small{};
  std::vector<const TensorMeta*> large;
  const TensorMeta** m = small.data();
  if (inputs.size() > small.size()) {
    large.resize(inputs.size());
    m = large.data();
  }
  for (size_t i = 0; i < inputs.size(); ++i) m[i] = inputs[i] ? &inputs[i]->meta() : nullptr;
  const Metas metas(m, inputs.size());
  normalize_attrs(kind, metas, attrs);
  auto outputs = infer_outputs(kind, metas, attrs);
  return Op{kind, std::move(inputs), std::move(attrs), std::move(outputs)};
}

}  // namespace ember
