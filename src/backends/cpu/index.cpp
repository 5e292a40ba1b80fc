// Index kernels: gather, scatter, scatter_add, index_select, index_add, index_copy, nonzero,
// masked_select. Index tensors are i64 or i32; every index is checked (0 <= i < size, like
// PyTorch's gather/scatter/index_select, which reject negative indices). Pure data movement
// is done on raw element bits (dispatch on the element size); the adding ops use the real type.
#include <cstring>
#include <type_traits>

#include "cpu_backend.hpp"
#include "layout_walk.hpp"

namespace ember::cpu {

namespace {

using namespace walk_detail;

template <class F>
decltype(auto) visit_index(DType dt, F&& f) {
  if (dt == DType::i32) return f.template operator()<int32_t>();
  return f.template operator()<int64_t>();
}

[[noreturn, gnu::noinline, gnu::cold]] void index_error(std::string_view op, int64_t i, int dim, int64_t size) {
  EMBER_FAIL(op, ": index ", i, " is out of bounds for dim ", dim, " with size ", size);
}

inline void check_index(std::string_view op, int64_t i, int dim, int64_t size) {
  if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(size)) [[unlikely]]
    index_error(op, i, dim, size);
}

// Checks n indices p[0], p[st], ...: a branch-free scan (0 <= i < size iff the top bit of
// ~i & (i - size) is set), the per-index check only to report the bad one.
template <class I>
inline void check_run(std::string_view op, const I* p, int64_t st, int64_t n, int dim, int64_t size) {
  uint64_t acc = ~uint64_t(0);
  const uint64_t usize = static_cast<uint64_t>(size);
  if (st == 1) {
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t i = static_cast<uint64_t>(int64_t(p[j]));
      acc &= ~i & (i - usize);
    }
  } else {
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t i = static_cast<uint64_t>(int64_t(p[j * st]));
      acc &= ~i & (i - usize);
    }
  }
  if (!(acc >> 63)) [[unlikely]]
    for (int64_t j = 0; j < n; ++j) check_index(op, int64_t(p[j * st]), dim, size);
}

template <class T>
inline void add_into(T& a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    a = a || b;
  } else if constexpr (std::is_integral_v<T>) {
    using UT = std::make_unsigned_t<T>;
    a = static_cast<T>(static_cast<UT>(a) + static_cast<UT>(b));
  } else if constexpr (is_half_v<T>) {
    a = T(static_cast<float>(a) + static_cast<float>(b));
  } else {
    a += b;
  }
}

// Size and stride of `dim` (a 0-d tensor acts as a 1-element 1-d tensor).
inline int64_t dim_size(const CpuTensor& t, int dim) { return t.shape().rank() ? t.shape()[dim] : 1; }
inline int64_t dim_stride(const CpuTensor& t, int dim) { return t.shape().rank() ? t.strides[dim] : 0; }

// A copy of `x` to write into (x's own buffer when the op holds the only reference).
CpuTensorPtr writable_copy(Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  auto out = output_reusing(op, 0, op.outputs[0]);
  if (out->storage != x.storage) copy_tensor(*out, x);
  return out;
}

// Splits the loop over `shape` at `dim` into pre dims (before), the dim itself and post dims
// (after). Work units are (pre position, post position) pairs: each unit's elements along
// `dim` are visited in increasing order by one thread, so repeated targets are updated in
// order and different units never write the same element. Calls
//   seg(pre_offsets, p0, p1)   for a range [p0, p1) of post positions of one pre position.
template <size_t K, class Seg>
void split_at_dim(const Shape& shape, int dim, const std::array<const int64_t*, K>& strides, Layout<K>& post,
                  Seg&& seg) {
  const int r = shape.rank();
  Layout<K> pre;
  if (r == 0) {
    pre.rank = 0;
    post.rank = 0;
  } else {
    make_layout<K>(pre, shape.dims().data(), 0, dim, strides);
    make_layout<K>(post, shape.dims().data(), dim + 1, r, strides);
  }
  const int64_t P = pre.numel(), Q = post.numel(), n = r ? shape[dim] : 1;
  if (P == 0 || Q == 0 || n == 0) return;
  par(P * Q, std::max<int64_t>(1, kGrain / n), [&](int64_t b, int64_t e) {
    int64_t pos = b;
    while (pos < e) {
      int64_t o = pos / Q, p0 = pos % Q, p1 = std::min(Q, p0 + (e - pos));
      seg(offsets_at(pre, o), p0, p1);
      pos += p1 - p0;
    }
  });
}

// ---- gather: out[i] = x[i with i[dim] = index[i]] ----

std::vector<PrimitivePtr> gather_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  auto& ix = as_cpu(op.inputs[1]);
  const int dim = op.attr<DimAttrs>().dim;
  auto out = alloc(op.outputs[0]);
  const int64_t n = out->numel();
  if (n == 0) return {out};
  const int r = ix.shape().rank();
  const int64_t nd = dim_size(x, dim), xsd = dim_stride(x, dim);
  EMBER_CHECK(r <= kMaxRank, "gather: rank ", r, " is not supported");
  int64_t xs[kMaxRank];
  for (int d = 0; d < r; ++d) xs[d] = d == dim ? 0 : x.strides[d];
  Layout<3> L;
  make_layout<3>(L, ix.shape().dims().data(), 0, r, {out->strides.data(), ix.strides.data(), xs});
  visit_size(dtype_size(x.dtype()), [&]<class U>() {
    visit_index(ix.dtype(), [&]<class I>() {
      U* o = static_cast<U*>(out->raw());
      const I* ip = static_cast<const I*>(ix.raw());
      const U* xp = static_cast<const U*>(x.raw());
      const int64_t s0 = L.inner(0), s1 = L.inner(1), s2 = L.inner(2);
      par(n, kGrain, [&](int64_t b, int64_t e) {
        walk(L, b, e, {0, 0, 0}, [&](const int64_t* off, int64_t len) {
          U* od = o + off[0];
          const I* id = ip + off[1];
          const U* xd = xp + off[2];
          // (the checks are well predicted: cheaper inline than as a separate pass)
          if (s0 == 1 && s1 == 1 && s2 == 0) {  // gather along the innermost dim
            for (int64_t j = 0; j < len; ++j) {
              const int64_t i = id[j];
              check_index("gather", i, dim, nd);
              od[j] = xd[i * xsd];
            }
          } else if (s0 == 1 && s1 == 1 && s2 == 1) {
            for (int64_t j = 0; j < len; ++j) {
              const int64_t i = id[j];
              check_index("gather", i, dim, nd);
              od[j] = xd[j + i * xsd];
            }
          } else {
            for (int64_t j = 0; j < len; ++j) {
              const int64_t i = id[j * s1];
              check_index("gather", i, dim, nd);
              od[j * s0] = xd[j * s2 + i * xsd];
            }
          }
        });
      });
    });
  });
  return {out};
}

// ---- scatter / scatter_add: out[i with i[dim] = index[i]] (+)= src[i] ----

template <class T, class I, bool Add>
void scatter_loop(CpuTensor& out, const CpuTensor& ix, const CpuTensor& src, int dim, std::string_view name) {
  const Shape& s = ix.shape();
  const int64_t nd = dim_size(out, dim), osd = dim_stride(out, dim);
  const int64_t isd = dim_stride(ix, dim), ssd = dim_stride(src, dim);
  const int64_t n = s.rank() ? s[dim] : 1;
  T* o = static_cast<T*>(out.raw());
  const I* ip = static_cast<const I*>(ix.raw());
  const T* sp = static_cast<const T*>(src.raw());
  Layout<3> post;
  split_at_dim<3>(s, dim, {out.strides.data(), ix.strides.data(), src.strides.data()}, post,
                  [&](std::array<int64_t, 3> base, int64_t p0, int64_t p1) {
                    const int64_t s0 = post.inner(0), s1 = post.inner(1), s2 = post.inner(2);
                    if (post.rank == 0) {  // dim is the innermost dim of the loop
                      T* od = o + base[0];
                      const I* id = ip + base[1];
                      const T* sd = sp + base[2];
                      if (isd == 1 && osd == 1 && ssd == 1) {
                        for (int64_t k = 0; k < n; ++k) {
                          const int64_t i = id[k];
                          check_index(name, i, dim, nd);
                          if constexpr (Add) add_into(od[i], sd[k]);
                          else od[i] = sd[k];
                        }
                        return;
                      }
                      for (int64_t k = 0; k < n; ++k) {
                        const int64_t i = id[k * isd];
                        check_index(name, i, dim, nd);
                        if constexpr (Add) add_into(od[i * osd], sd[k * ssd]);
                        else od[i * osd] = sd[k * ssd];
                      }
                      return;
                    }
                    for (int64_t k = 0; k < n; ++k) {
                      walk(post, p0, p1, {base[0], base[1] + k * isd, base[2] + k * ssd},
                           [&](const int64_t* off, int64_t len) {
                             T* od = o + off[0];
                             const I* id = ip + off[1];
                             const T* sd = sp + off[2];
                             for (int64_t j = 0; j < len; ++j) {
                               const int64_t i = id[j * s1];
                               check_index(name, i, dim, nd);
                               if constexpr (Add) add_into(od[j * s0 + i * osd], sd[j * s2]);
                               else od[j * s0 + i * osd] = sd[j * s2];
                             }
                           });
                    }
                  });
}

template <bool Add>
std::vector<PrimitivePtr> scatter_kernel(CpuBackend&, Op& op) {
  const int dim = op.attr<DimAttrs>().dim;
  auto out = writable_copy(op);
  auto& ix = as_cpu(op.inputs[1]);
  auto& src = as_cpu(op.inputs[2]);
  if (ix.numel() == 0) return {out};
  EMBER_CHECK(ix.shape().rank() <= kMaxRank, op.name(), ": rank is not supported");
  const std::string_view name = op.name();
  visit_index(ix.dtype(), [&]<class I>() {
    if constexpr (Add) {
      visit_dtype(out->dtype(), [&]<class T>() { scatter_loop<T, I, true>(*out, ix, src, dim, name); });
    } else {
      visit_size(dtype_size(out->dtype()), [&]<class U>() { scatter_loop<U, I, false>(*out, ix, src, dim, name); });
    }
  });
  return {out};
}

// ---- index_select: out[.., k, ..] = x[.., index[k], ..] along dim ----

template <class I>
void check_indices_1d(std::string_view name, const CpuTensor& ix, int dim, int64_t size) {
  const I* ip = static_cast<const I*>(ix.raw());
  const int64_t n = ix.numel(), st = ix.shape().rank() ? ix.strides[0] : 0;
  check_run(name, ip, st, n, dim, size);
}

std::vector<PrimitivePtr> index_select_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  auto& ix = as_cpu(op.inputs[1]);
  const int dim = op.attr<DimAttrs>().dim;
  auto out = alloc(op.outputs[0]);
  const size_t es = dtype_size(x.dtype());
  const int64_t nd = dim_size(x, dim);
  visit_index(ix.dtype(), [&]<class I>() { check_indices_1d<I>("index_select", ix, dim, nd); });
  const int64_t n = ix.numel();
  const int r = x.shape().rank();
  if (out->numel() == 0) return {out};
  if (r == 0) {  // 0-d: every index is 0
    if (n > 0) std::memcpy(out->raw(), x.raw(), es);
    else std::memset(out->raw(), 0, es);
    return {out};
  }
  EMBER_CHECK(r <= kMaxRank, "index_select: rank ", r, " is not supported");
  Layout<2> pre, post;
  make_layout<2>(pre, x.shape().dims().data(), 0, dim, {out->strides.data(), x.strides.data()});
  make_layout<2>(post, x.shape().dims().data(), dim + 1, r, {out->strides.data(), x.strides.data()});
  const int64_t P = pre.numel(), Q = post.numel();
  const int64_t osd = out->strides[dim], xsd = x.strides[dim];
  const int64_t ist = ix.shape().rank() ? ix.strides[0] : 0;
  visit_size(es, [&]<class U>() {
    visit_index(ix.dtype(), [&]<class I>() {
      U* o = static_cast<U*>(out->raw());
      const U* xp = static_cast<const U*>(x.raw());
      const I* ip = static_cast<const I*>(ix.raw());
      const int64_t s0 = post.inner(0), s1 = post.inner(1);
      par(P * n, std::max<int64_t>(1, kGrain / Q), [&](int64_t b, int64_t e) {
        int64_t pos = b;
        while (pos < e) {
          const int64_t p = pos / n, k0 = pos % n, k1 = std::min(n, k0 + (e - pos));
          auto base = offsets_at(pre, p);
          if (post.rank == 0) {
            U* od = o + base[0];
            const U* xd = xp + base[1];
            for (int64_t k = k0; k < k1; ++k) od[k * osd] = xd[int64_t(ip[k * ist]) * xsd];
          } else {
            for (int64_t k = k0; k < k1; ++k)
              walk(post, 0, Q, {base[0] + k * osd, base[1] + int64_t(ip[k * ist]) * xsd},
                   [&](const int64_t* off, int64_t len) { copy_run(o + off[0], s0, xp + off[1], s1, len); });
          }
          pos += k1 - k0;
        }
      });
    });
  });
  return {out};
}

// ---- index_add / index_copy: out[.., index[k], ..] (+)= src[.., k, ..] along dim ----

template <class T, class I, bool Add>
void index_update_loop(CpuTensor& out, const CpuTensor& ix, const CpuTensor& src, int dim) {
  const int r = out.shape().rank();
  const int64_t osd = dim_stride(out, dim), ssd = r ? src.strides[dim] : 0;
  const int64_t ist = ix.shape().rank() ? ix.strides[0] : 0;
  T* o = static_cast<T*>(out.raw());
  const I* ip = static_cast<const I*>(ix.raw());
  const T* sp = static_cast<const T*>(src.raw());
  const Shape& s = r ? src.shape() : out.shape();  // a 0-d input may come with a [1] source
  Layout<2> post;
  std::array<const int64_t*, 2> st = {out.strides.data(), r ? src.strides.data() : out.strides.data()};
  split_at_dim<2>(s, dim, st, post, [&](std::array<int64_t, 2> base, int64_t p0, int64_t p1) {
    const int64_t s0 = post.inner(0), s1 = post.inner(1);
    const int64_t n = r ? s[dim] : 1;
    if (post.rank == 0) {  // dim is the innermost dim of the loop
      T* od = o + base[0];
      const T* sd = sp + base[1];
      for (int64_t k = 0; k < n; ++k) {
        if constexpr (Add) add_into(od[int64_t(ip[k * ist]) * osd], sd[k * ssd]);
        else od[int64_t(ip[k * ist]) * osd] = sd[k * ssd];
      }
      return;
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = ip[k * ist];
      walk(post, p0, p1, {base[0] + i * osd, base[1] + k * ssd}, [&](const int64_t* off, int64_t len) {
        T* od = o + off[0];
        const T* sd = sp + off[1];
        if constexpr (Add) {
          if (s0 == 1 && s1 == 1) {
            for (int64_t j = 0; j < len; ++j) add_into(od[j], sd[j]);
          } else {
            for (int64_t j = 0; j < len; ++j) add_into(od[j * s0], sd[j * s1]);
          }
        } else {
          copy_run(od, s0, sd, s1, len);
        }
      });
    }
  });
}

template <bool Add>
std::vector<PrimitivePtr> index_update_kernel(CpuBackend&, Op& op) {
  const int dim = op.attr<DimAttrs>().dim;
  auto& ix = as_cpu(op.inputs[1]);
  auto& src = as_cpu(op.inputs[2]);
  const std::string_view name = op.name();
  const int64_t nd = dim_size(as_cpu(op.inputs[0]), dim);
  visit_index(ix.dtype(), [&]<class I>() { check_indices_1d<I>(name, ix, dim, nd); });
  auto out = writable_copy(op);
  if (ix.numel() == 0 || out->numel() == 0) return {out};
  EMBER_CHECK(out->shape().rank() <= kMaxRank, name, ": rank is not supported");
  visit_index(ix.dtype(), [&]<class I>() {
    if constexpr (Add) {
      visit_dtype(out->dtype(), [&]<class T>() { index_update_loop<T, I, true>(*out, ix, src, dim); });
    } else {
      visit_size(dtype_size(out->dtype()), [&]<class U>() { index_update_loop<U, I, false>(*out, ix, src, dim); });
    }
  });
  return {out};
}

// ---- nonzero / masked_select: count per chunk, then write at the chunk's prefix offset ----

template <class T>
inline bool nonzero_value(T v) {
  if constexpr (is_half_v<T>) return static_cast<float>(v) != 0.0f;
  else return v != T(0);
}

// Chunks of [0, n) for the two passes: one when small, else a few per thread.
constexpr int64_t kMaxChunks = 64;
inline int64_t num_chunks(int64_t n) {
  if (n <= kGrain) return 1;
  int64_t threads = ThreadPool::global().size();
  return std::clamp<int64_t>(n / kGrain, 1, std::min<int64_t>(threads * 4, kMaxChunks));
}
inline int64_t chunk_begin(int64_t n, int64_t nc, int64_t c) { return n / nc * c + std::min(c, n % nc); }

std::vector<PrimitivePtr> nonzero_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  const Shape& s = x.shape();
  const int r = s.rank();
  const int64_t N = s.numel();
  EMBER_CHECK(r <= kMaxRank, "nonzero: rank ", r, " is not supported");
  Layout<1> L;
  make_layout<1>(L, s.dims().data(), 0, r, {x.strides.data()});
  const int64_t nc = num_chunks(N);
  std::array<int64_t, kMaxChunks + 1> counts{};
  CpuTensorPtr out;
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* xp = static_cast<const T*>(x.raw());
    const int64_t s0 = L.inner(0);
    par(nc, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        int64_t cnt = 0;
        walk(L, chunk_begin(N, nc, c), chunk_begin(N, nc, c + 1), {0}, [&](const int64_t* off, int64_t len) {
          const T* p = xp + off[0];
          for (int64_t j = 0; j < len; ++j) cnt += nonzero_value(p[j * s0]);
        });
        counts[size_t(c) + 1] = cnt;
      }
    });
    for (int64_t c = 0; c < nc; ++c) counts[size_t(c) + 1] += counts[size_t(c)];
    const int64_t total = counts[size_t(nc)];
    out = std::make_shared<CpuTensor>(TensorMeta{Shape{total, int64_t(r)}, DType::i64});
    if (total == 0 || r == 0) return;
    int64_t* o = out->data<int64_t>();
    const int64_t last = s[r - 1], ls = x.strides[r - 1];
    par(nc, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t b = chunk_begin(N, nc, c), e = chunk_begin(N, nc, c + 1);
        // rows are written unconditionally (to a sink past the chunk's end) and kept by
        // advancing the write pointer: no unpredictable branch
        int64_t* w = o + counts[size_t(c)] * r;
        int64_t* const wend = o + counts[size_t(c) + 1] * r;
        int64_t sink[kMaxRank];
        int64_t idx[kMaxRank];
        int64_t q = b, row = 0;
        for (int d = r - 1; d >= 0; --d) {
          idx[d] = q % s[d];
          q /= s[d];
          if (d < r - 1) row += idx[d] * x.strides[d];
        }
        int64_t pos = b;
        while (pos < e) {
          const int64_t j0 = idx[r - 1], j1 = std::min(last, j0 + (e - pos));
          const T* p = xp + row;
          for (int64_t j = j0; j < j1; ++j) {
            const bool nz = nonzero_value(p[j * ls]);
            int64_t* t = w < wend ? w : sink;
            for (int d = 0; d < r - 1; ++d) t[d] = idx[d];
            t[r - 1] = j;
            w += nz ? r : 0;
          }
          pos += j1 - j0;
          idx[r - 1] = 0;
          for (int d = r - 2; d >= 0; --d) {
            row += x.strides[d];
            if (++idx[d] < s[d]) break;
            row -= s[d] * x.strides[d];
            idx[d] = 0;
          }
        }
      }
    });
  });
  return {out};
}

std::vector<PrimitivePtr> masked_select_kernel(CpuBackend&, Op& op) {
  auto& x = as_cpu(op.inputs[0]);
  auto& m = as_cpu(op.inputs[1]);
  const Shape bs = broadcast_shapes(x.shape(), m.shape(), "masked_select");
  const int r = bs.rank();
  EMBER_CHECK(r <= kMaxRank, "masked_select: rank ", r, " is not supported");
  const auto xst = broadcast_strides(x, bs), mst = broadcast_strides(m, bs);
  Layout<2> L;
  make_layout<2>(L, bs.dims().data(), 0, r, {xst.data(), mst.data()});
  const int64_t N = bs.numel(), nc = num_chunks(N);
  std::array<int64_t, kMaxChunks + 1> counts{};
  const bool* mp = static_cast<const bool*>(m.raw());
  const int64_t xs = L.inner(0), ms = L.inner(1);
  par(nc, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int64_t cnt = 0;
      walk(L, chunk_begin(N, nc, c), chunk_begin(N, nc, c + 1), {0, 0}, [&](const int64_t* off, int64_t len) {
        const bool* p = mp + off[1];
        for (int64_t j = 0; j < len; ++j) cnt += p[j * ms] ? 1 : 0;
      });
      counts[size_t(c) + 1] = cnt;
    }
  });
  for (int64_t c = 0; c < nc; ++c) counts[size_t(c) + 1] += counts[size_t(c)];
  auto out = std::make_shared<CpuTensor>(TensorMeta{Shape{counts[size_t(nc)]}, x.dtype()});
  if (out->numel() == 0) return {out};
  visit_size(dtype_size(x.dtype()), [&]<class U>() {
    const U* xp = static_cast<const U*>(x.raw());
    U* o = static_cast<U*>(out->raw());
    par(nc, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        U* w = o + counts[size_t(c)];
        U* const wend = o + counts[size_t(c) + 1];
        U sink;
        walk(L, chunk_begin(N, nc, c), chunk_begin(N, nc, c + 1), {0, 0}, [&](const int64_t* off, int64_t len) {
          const U* xd = xp + off[0];
          const bool* p = mp + off[1];
          for (int64_t j = 0; j < len; ++j) {  // branch-free: write always, keep if selected
            U* t = w < wend ? w : &sink;
            *t = xd[j * xs];
            w += p[j * ms] ? 1 : 0;
          }
        });
      }
    });
  });
  return {out};
}

}  // namespace

void register_index_kernels(KernelTable& t) {
  t[size_t(OpKind::gather)] = gather_kernel;
  t[size_t(OpKind::scatter)] = scatter_kernel<false>;
  t[size_t(OpKind::scatter_add)] = scatter_kernel<true>;
  t[size_t(OpKind::index_select)] = index_select_kernel;
  t[size_t(OpKind::index_add)] = index_update_kernel<true>;
  t[size_t(OpKind::index_copy)] = index_update_kernel<false>;
  t[size_t(OpKind::nonzero)] = nonzero_kernel;
  t[size_t(OpKind::masked_select)] = masked_select_kernel;
}

}  // namespace ember::cpu
