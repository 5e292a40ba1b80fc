// Layout kernels: ops that move elements into a new buffer (contiguous, flip, roll, cat, pad,
// tril/triu, slice_assign). Elements are moved as raw bytes, dispatched on the element size.
#include <cstring>

#include "cpu_backend.hpp"
#include "layout_walk.hpp"

namespace ember::cpu {

namespace {

using namespace walk_detail;

inline char* bytes(const CpuTensor& t) { return static_cast<char*>(t.raw()); }

// ---- contiguous ----

std::vector<PrimitivePtr> contiguous_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  if (x.is_contiguous()) return {op.inputs[0]};
  auto out = alloc(op.outputs[0]);
  copy_tensor(*out, x);
  return {out};
}

// ---- flip: a copy through negated strides ----

std::vector<PrimitivePtr> flip_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  const Shape& s = x.shape();
  const size_t es = dtype_size(x.dtype());
  const auto& dims = op.attr<DimsAttrs>().dims;
  EMBER_CHECK(s.rank() <= kMaxRank, "flip: rank ", s.rank(), " is not supported");
  int64_t st[kMaxRank];
  bool seen[kMaxRank] = {};
  for (int d = 0; d < s.rank(); ++d) st[d] = x.strides[d];
  char* src = bytes(x);
  for (int d : dims) {
    if (s.rank() == 0) continue;
    EMBER_CHECK(!seen[d], "flip: dim ", d, " appears multiple times in the list of dims");
    seen[d] = true;
    if (s[d] > 0) src += (s[d] - 1) * st[d] * int64_t(es);
    st[d] = -st[d];
  }
  auto out = alloc(op.outputs[0]);
  copy_view(out->raw(), out->strides.data(), src, st, s.dims().data(), s.rank(), es);
  return {out};
}

// ---- roll: up to 2^k block copies (k = number of rolled dims) ----

std::vector<PrimitivePtr> roll_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  const Shape& s = x.shape();
  const size_t es = dtype_size(x.dtype());
  const auto& a = op.attr<RollAttrs>();
  auto out = alloc(op.outputs[0]);
  const int64_t n = s.numel();
  if (n == 0) return {out};
  if (a.dims.empty()) {  // roll of the flattened tensor
    auto c = contiguous(op.inputs[0]);
    int64_t sh = a.shifts.empty() ? 0 : ((a.shifts[0] % n) + n) % n;
    char* o = bytes(*out);
    const char* p = bytes(*c);
    std::memcpy(o + sh * es, p, size_t(n - sh) * es);
    std::memcpy(o, p + (n - sh) * es, size_t(sh) * es);
    return {out};
  }
  const int r = s.rank();
  EMBER_CHECK(r <= kMaxRank, "roll: rank ", r, " is not supported");
  int64_t shift[kMaxRank] = {};
  for (size_t i = 0; i < a.dims.size(); ++i) {
    int d = a.dims[i];
    if (r == 0) continue;
    shift[d] = ((shift[d] + a.shifts[i] % s[d]) % s[d] + s[d]) % s[d];
  }
  int rolled[kMaxRank];
  int k = 0;
  for (int d = 0; d < r; ++d)
    if (shift[d] != 0) rolled[k++] = d;
  EMBER_CHECK(k <= 20, "roll: too many rolled dims (", k, ")");
  int64_t blk[kMaxRank];
  for (uint64_t mask = 0; mask < (uint64_t(1) << k); ++mask) {
    for (int d = 0; d < r; ++d) blk[d] = s[d];
    int64_t doff = 0, soff = 0;
    for (int j = 0; j < k; ++j) {
      int d = rolled[j];
      int64_t sh = shift[d], len = s[d];
      if (mask >> j & 1) {  // out [0, sh) <- x [len - sh, len)
        soff += (len - sh) * x.strides[d];
        blk[d] = sh;
      } else {  // out [sh, len) <- x [0, len - sh)
        doff += sh * out->strides[d];
        blk[d] = len - sh;
      }
    }
    copy_view(bytes(*out) + doff * int64_t(es), out->strides.data(), bytes(x) + soff * int64_t(es), x.strides.data(),
              blk, r, es);
  }
  return {out};
}

// ---- cat ----

std::vector<PrimitivePtr> cat_kernel(CpuBackend&, Op& op) {
  const int dim = op.attr<DimAttrs>().dim;
  auto out = alloc(op.outputs[0]);
  const Shape& os = out->shape();
  const size_t es = dtype_size(out->dtype());
  if (os.numel() == 0) return {out};
  int64_t outer = 1;
  for (int d = 0; d < dim; ++d) outer *= os[d];
  int64_t row = os.numel() / outer;  // elements of one outer row of the output
  bool all_contig = true;
  for (auto& p : op.inputs) all_contig = all_contig && as_cpu(p).is_contiguous();
  if (all_contig && outer > 1) {
    // each outer row of the output is the concatenation of one contiguous block per input
    const size_t ni = op.inputs.size();
    struct Block {
      const char* src;
      size_t bytes;
    };
    Block few[16];
    std::vector<Block> many;
    Block* blocks = few;
    if (ni > 16) {
      many.resize(ni);
      blocks = many.data();
    }
    for (size_t i = 0; i < ni; ++i) {
      auto& t = as_cpu(op.inputs[i]);
      blocks[i] = {bytes(t), size_t(t.numel() / outer) * es};
    }
    char* o = bytes(*out);
    par(outer, std::max<int64_t>(1, kGrain / row), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        char* dst = o + r * row * int64_t(es);
        for (size_t i = 0; i < ni; ++i) {
          const Block& bl = blocks[i];
          if (bl.bytes) std::memcpy(dst, bl.src + r * int64_t(bl.bytes), bl.bytes);
          dst += bl.bytes;
        }
      }
    });
    return {out};
  }
  int64_t off = 0;
  for (auto& p : op.inputs) {
    auto& t = as_cpu(p);
    if (t.numel() > 0)
      copy_view(bytes(*out) + off * out->strides[dim] * int64_t(es), out->strides.data(), t.raw(), t.strides.data(),
                t.shape().dims().data(), t.shape().rank(), es);
    off += t.shape()[dim];
  }
  return {out};
}

// ---- pad ----

// Source index along a dim for output index o (-1: the constant value).
inline int64_t pad_map(PadMode mode, int64_t lo, int64_t n, int64_t o) {
  int64_t j = o - lo;
  switch (mode) {
    case PadMode::constant: return j >= 0 && j < n ? j : -1;
    case PadMode::reflect: return j < 0 ? -j : (j >= n ? 2 * (n - 1) - j : j);
    case PadMode::replicate: return j < 0 ? 0 : (j >= n ? n - 1 : j);
  }
  return -1;
}

std::vector<PrimitivePtr> pad_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  const auto& a = op.attr<PadAttrs>();
  auto out = alloc(op.outputs[0]);
  const Shape& is = x.shape();
  const Shape& os = out->shape();
  const size_t es = dtype_size(x.dtype());
  const int r = os.rank();
  if (os.numel() == 0) return {out};
  if (r == 0) {
    copy_tensor(*out, x);
    return {out};
  }
  EMBER_CHECK(r <= kMaxRank, "pad: rank ", r, " is not supported");
  uint64_t vbits = 0;
  visit_dtype(x.dtype(), [&]<class T>() {
    T v = convert_scalar<T>(a.value);
    std::memcpy(&vbits, &v, sizeof(T));
  });
  const PadMode mode = a.mode;
  const int64_t W = os[r - 1], nin = is[r - 1], lo = a.pads[2 * (r - 1)];
  const int64_t xs = x.strides[r - 1];
  // the interior of a row: output [ia, ib) <- input [ia - lo, ib - lo), stride xs
  const int64_t ia = std::clamp<int64_t>(lo, 0, W), ib = std::clamp<int64_t>(lo + nin, 0, W);
  const int64_t rows = os.numel() / W;
  visit_size(es, [&]<class U>() {
    U val;
    std::memcpy(&val, &vbits, sizeof(U));
    U* o = static_cast<U*>(out->raw());
    const U* xp = static_cast<const U*>(x.raw());
    par(rows, kGrain / W, [&](int64_t b, int64_t e) {
      int64_t idx[kMaxRank];
      int64_t q = b;
      for (int d = r - 2; d >= 0; --d) {
        idx[d] = q % os[d];
        q /= os[d];
      }
      // source offset of the current plane (dims before the last two), recomputed when it changes
      int64_t plane_off = 0;
      bool plane_in = true, plane_dirty = true;
      for (int64_t row = b; row < e; ++row) {
        U* dst = o + row * W;
        if (plane_dirty) {
          plane_off = 0;
          plane_in = true;
          for (int d = 0; d < r - 2 && plane_in; ++d) {
            int64_t m = pad_map(mode, a.pads[2 * d], is[d], idx[d]);
            if (m < 0) plane_in = false;
            else plane_off += m * x.strides[d];
          }
          plane_dirty = false;
        }
        int64_t soff = plane_off;
        bool inside = plane_in;
        if (r >= 2 && inside) {
          int64_t m = pad_map(mode, a.pads[2 * (r - 2)], is[r - 2], idx[r - 2]);
          if (m < 0) inside = false;
          else soff += m * x.strides[r - 2];
        }
        if (!inside) {
          std::fill(dst, dst + W, val);
        } else {
          const U* src = xp + soff;
          for (int64_t j = 0; j < ia; ++j) {
            int64_t m = pad_map(mode, lo, nin, j);
            dst[j] = m < 0 ? val : src[m * xs];
          }
          if (ib > ia) copy_run(dst + ia, 1, src + (ia - lo) * xs, xs, ib - ia);
          for (int64_t j = std::max(ib, ia); j < W; ++j) {
            int64_t m = pad_map(mode, lo, nin, j);
            dst[j] = m < 0 ? val : src[m * xs];
          }
        }
        for (int d = r - 2; d >= 0; --d) {
          if (++idx[d] < os[d]) break;
          idx[d] = 0;
          plane_dirty = true;
        }
      }
    });
  });
  return {out};
}

// ---- tril / triu ----

template <bool Lower>
std::vector<PrimitivePtr> tri_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  const Shape& s = x.shape();
  const int r = s.rank();
  const size_t es = dtype_size(x.dtype());
  auto out = output_reusing(op, 0, op.outputs[0]);
  const bool inplace = out->storage == x.storage;
  const int64_t R = s[r - 2], C = s[r - 1];
  if (s.numel() == 0) return {out};
  const int64_t k = std::clamp<int64_t>(op.attr<DimAttrs>().k, -R - 1, C + 1);
  const int64_t rows = s.numel() / C;
  Layout<1> B;  // batch dims of x
  make_layout<1>(B, s.dims().data(), 0, r - 2, {x.strides.data()});
  const int64_t rs = x.strides[r - 2], cs = x.strides[r - 1];
  visit_size(es, [&]<class U>() {
    U* o = static_cast<U*>(out->raw());
    const U* xp = static_cast<const U*>(x.raw());
    par(rows, kGrain / C, [&](int64_t b, int64_t e) {
      int64_t cur_batch = -1, boff = 0;
      for (int64_t row = b; row < e; ++row) {
        const int64_t bi = row / R, i = row % R;
        int64_t k0 = Lower ? 0 : std::clamp<int64_t>(i + k, 0, C);
        int64_t k1 = Lower ? std::clamp<int64_t>(i + k + 1, 0, C) : C;
        if (k1 < k0) k1 = k0;
        U* dst = o + row * C;
        if (!inplace && k1 > k0) {
          if (bi != cur_batch) {
            boff = offsets_at(B, bi)[0];
            cur_batch = bi;
          }
          copy_run(dst + k0, 1, xp + boff + i * rs + k0 * cs, cs, k1 - k0);
        }
        if (k0 > 0) std::memset(dst, 0, size_t(k0) * sizeof(U));
        if (k1 < C) std::memset(dst + k1, 0, size_t(C - k1) * sizeof(U));
      }
    });
  });
  return {out};
}

// ---- slice_assign ----

std::vector<PrimitivePtr> slice_assign_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  auto& v = as_cpu(op.inputs[1]);
  const auto& ranges = op.attr<SliceAttrs>().ranges;
  const size_t es = dtype_size(x.dtype());
  auto out = output_reusing(op, 0, op.outputs[0]);
  if (out->storage != x.storage) copy_tensor(*out, x);
  if (v.numel() == 0) return {out};
  const int r = x.shape().rank();
  EMBER_CHECK(r <= kMaxRank, "slice_assign: rank ", r, " is not supported");
  int64_t st[kMaxRank];
  int64_t off = 0;
  for (int d = 0; d < r; ++d) {
    off += ranges[d].start * out->strides[d];
    st[d] = out->strides[d] * ranges[d].step;
  }
  copy_view(bytes(*out) + off * int64_t(es), st, v.raw(), v.strides.data(), v.shape().dims().data(), v.shape().rank(),
            es);
  return {out};
}

}  // namespace

void register_layout_kernels(KernelTable& t) {
  t[size_t(OpKind::contiguous)] = contiguous_kernel;
  t[size_t(OpKind::flip)] = flip_kernel;
  t[size_t(OpKind::roll)] = roll_kernel;
  t[size_t(OpKind::cat)] = cat_kernel;
  t[size_t(OpKind::pad)] = pad_kernel;
  t[size_t(OpKind::tril)] = tri_kernel<true>;
  t[size_t(OpKind::triu)] = tri_kernel<false>;
  t[size_t(OpKind::slice_assign)] = slice_assign_kernel;
}

}  // namespace ember::cpu
