// Reductions: sum mean prod max min any all var std norm logsumexp argmax argmin max_dim min_dim.
//
// Every reduction runs through one driver (reduce_driver) parameterised by a small "reducer"
// object that knows the accumulator, how to fold a run of input values into it, how to fold a
// whole contiguous row into an array of accumulators, how to merge two partial accumulators
// and how to store the result. The driver works on any strided input:
//   * the input dims are split into kept dims (the output, contiguous, row-major) and reduced
//     dims; size-1 dims are dropped and neighbouring dims merged where the strides allow;
//   * row mode: each output folds runs along the innermost reduced dim (contiguous in the
//     common case, so the SIMD kernels apply); parallel over outputs, or — when there are few
//     outputs and a long reduction — the reduction itself is split into per-thread partials;
//   * column mode: when the innermost kept dim is contiguous in the input and no reduced dim
//     is, whole input rows are folded into a block of accumulators (vectorised across the
//     outputs) instead of walking columns with a stride.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "reduce_kernels.hpp"
#include "thread_pool.hpp"
#include "vec/vec_math.hpp"

namespace ember::cpu {

namespace {

constexpr int kMaxDims = 64;
constexpr int64_t kBlock = 1024;  // conversion block (elements) for the SIMD paths

template <class T>
inline compute_t<T> ld(T v) {
  if constexpr (is_half_v<T>) return static_cast<float>(v);
  else return v;
}
template <class C>
inline bool isnan_(C v) {
  if constexpr (std::is_floating_point_v<C>) return v != v;
  else return false;
}

// ---------------------------------------------------------------------------------------------
// Geometry
// ---------------------------------------------------------------------------------------------
// A fixed-capacity list of (size, stride) dims: no heap allocation for small ops.
struct DimList {
  int64_t size[kMaxDims], stride[kMaxDims];
  size_t n = 0;
  void push(int64_t sz, int64_t st) {
    if (n > 0 && stride[n - 1] == st * sz) {  // merges with the previous dim
      size[n - 1] *= sz;
      stride[n - 1] = st;
    } else {
      size[n] = sz;
      stride[n] = st;
      ++n;
    }
  }
};

struct Geom {
  DimList k;  // kept dims, outermost first (input strides; the output is contiguous over them)
  DimList r;  // reduced dims, outermost first
  int64_t out_n = 1, red_n = 1;
};

// `reorder`: the reduction order may be changed (every op but argmax/argmin/max_dim/min_dim,
// whose indices follow the row-major order of the reduced dims).
void make_geom(Geom& g, const CpuTensor& x, const std::vector<int>& dims, bool reorder) {
  const Shape& s = x.shape();
  const int rank = s.rank();
  EMBER_CHECK(rank <= kMaxDims, "reduce: rank ", rank, " is above the supported ", kMaxDims);
  bool red[kMaxDims];
  for (int d = 0; d < rank; ++d) red[d] = dims.empty();
  for (int d : dims) red[d] = true;
  int64_t rsz[kMaxDims], rst[kMaxDims];
  int nr = 0;
  for (int d = 0; d < rank; ++d) {
    const int64_t n = s[d], st = x.strides[size_t(d)];
    if (red[d]) g.red_n *= n;
    else g.out_n *= n;
    if (n == 1) continue;
    if (!red[d]) {
      g.k.push(n, st);
      continue;
    }
    // reduced dims, sorted by decreasing |stride| when the order is free (insertion sort, stable)
    int pos = nr;
    if (reorder)
      while (pos > 0 && std::abs(rst[pos - 1]) < std::abs(st)) {
        rsz[pos] = rsz[pos - 1];
        rst[pos] = rst[pos - 1];
        --pos;
      }
    rsz[pos] = n;
    rst[pos] = st;
    ++nr;
  }
  for (int i = 0; i < nr; ++i) g.r.push(rsz[i], rst[i]);
}

// Multi-index helpers over the first `nd` dims of a list: offset of flat index i, and the step
// to i + 1.
inline int64_t decompose(int64_t i, const DimList& l, int64_t* idx, size_t nd) {
  int64_t off = 0;
  for (size_t d = nd; d-- > 0;) {
    idx[d] = i % l.size[d];
    i /= l.size[d];
    off += idx[d] * l.stride[d];
  }
  return off;
}
inline int64_t advance(int64_t* idx, const DimList& l, size_t nd, int64_t off) {
  for (size_t d = nd; d-- > 0;) {
    off += l.stride[d];
    if (++idx[d] < l.size[d]) return off;
    off -= l.stride[d] * l.size[d];
    idx[d] = 0;
  }
  return off;
}

// Scratch array: on the stack when small, on the heap otherwise.
template <class T>
class Scratch {
 public:
  explicit Scratch(int64_t n) : p_(n <= kLocal ? local_ : (heap_.reset(new T[size_t(n)]), heap_.get())) {}
  T* get() { return p_; }
  T& operator[](int64_t i) { return p_[i]; }

 private:
  static constexpr int64_t kLocal = std::max<int64_t>(1, 2048 / int64_t(sizeof(T)));
  T local_[kLocal];
  std::unique_ptr<T[]> heap_;
  T* p_;
};

// Folds the flat reduced range [b, e) of one output into `acc`, one run of the innermost
// reduced dim at a time: r.run(acc, ptr, len, stride, flat index of the run's first element).
template <class R>
void row_range(const R& r, typename R::Acc& acc, const typename R::In* p0, const Geom& g, int64_t b, int64_t e) {
  size_t nr = g.r.n;
  if (nr == 0) {
    if (b < e) r.run(acc, p0, 1, 1, 0);
    return;
  }
  const int64_t L = g.r.size[nr - 1], s = g.r.stride[nr - 1];
  int64_t idx[kMaxDims];
  int64_t i0 = b % L;
  int64_t off = decompose(b / L, g.r, idx, nr - 1);
  int64_t pos = b;
  while (pos < e) {
    int64_t len = std::min(L - i0, e - pos);
    r.run(acc, p0 + off + i0 * s, len, s, pos);
    pos += len;
    i0 = 0;
    if (pos < e) off = advance(idx, g.r, nr - 1, off);
  }
}

// The column mode's split of the reduced positions: 1 (each output folds them in one run, on
// one thread) or the pool's size (per-thread partials, merged in order), for `units` column
// blocks of accumulators.
int64_t column_split(int64_t out_n, int64_t red_n, int64_t units) {
  const int nt = ThreadPool::global().size();
  const bool serial = out_n * red_n <= kReduceGrain || nt == 1;
  return serial || units >= 2 * nt || red_n < 4 * nt ? 1 : nt;
}
// The column mode's accumulator block (elements): up to 64 KB, so that whole input rows are
// streamed when possible.
constexpr int64_t column_block(size_t acc_bytes) { return std::max<int64_t>(64, int64_t(65536 / acc_bytes)); }

template <class R>
void reduce_driver(const Geom& g, const typename R::In* base, const R& r) {
  using Acc = typename R::Acc;
  using In = typename R::In;
  if (g.out_n == 0) return;
  if (g.red_n == 0) {
    for (int64_t o = 0; o < g.out_n; ++o) r.store(o, r.init(o));
    return;
  }
  const int nt = ThreadPool::global().size();
  const int64_t total = g.out_n * g.red_n;
  const size_t nk = g.k.n, nr = g.r.n;
  const bool serial = total <= kReduceGrain || nt == 1;
  const bool col = nk > 0 && nr > 0 && g.k.stride[nk - 1] == 1 && g.k.size[nk - 1] >= 4 && g.r.stride[nr - 1] != 1;

  if (!col) {
    auto outputs = [&](int64_t ob, int64_t oe) {
      int64_t kidx[kMaxDims];
      int64_t koff = decompose(ob, g.k, kidx, nk);
      for (int64_t o = ob; o < oe; ++o) {
        Acc a = r.init(o);
        row_range(r, a, base + koff, g, 0, g.red_n);
        r.store(o, a);
        if (o + 1 < oe) koff = advance(kidx, g.k, nk, koff);
      }
    };
    if (serial) {
      outputs(0, g.out_n);
    } else if (g.out_n >= 4 * nt || g.red_n < 4 * kReduceGrain) {
      parallel_for(0, g.out_n, std::max<int64_t>(1, kReduceGrain / g.red_n), outputs);
    } else {
      // few long reductions: split each one into per-thread partials, merged in order
      const int64_t ns = nt;
      Scratch<Acc> part(g.out_n * ns);
      parallel_for(0, g.out_n * ns, 1, [&](int64_t ub, int64_t ue) {
        int64_t kidx[kMaxDims];
        for (int64_t u = ub; u < ue; ++u) {
          int64_t o = u / ns, sp = u % ns;
          int64_t koff = decompose(o, g.k, kidx, nk);
          Acc a = r.init(o);
          row_range(r, a, base + koff, g, g.red_n * sp / ns, g.red_n * (sp + 1) / ns);
          part[size_t(u)] = a;
        }
      });
      for (int64_t o = 0; o < g.out_n; ++o) {
        Acc a = part[size_t(o * ns)];
        for (int64_t sp = 1; sp < ns; ++sp) r.combine(a, part[size_t(o * ns + sp)]);
        r.store(o, a);
      }
    }
    return;
  }

  // column mode
  constexpr int64_t W = column_block(sizeof(Acc));
  const int64_t K = g.k.size[nk - 1], O2 = g.out_n / K;
  const int64_t nch = (K + W - 1) / W, units = O2 * nch;
  // folds reduced positions [rb, re) of the unit (o2, j0, w) into acc[0..w)
  auto fold = [&](int64_t o2, int64_t j0, int64_t w, int64_t rb, int64_t re, Acc* acc) {
    int64_t kidx[kMaxDims], ridx[kMaxDims];
    const In* p = base + decompose(o2, g.k, kidx, nk - 1) + j0;
    int64_t roff = decompose(rb, g.r, ridx, nr);
    for (int64_t pos = rb; pos < re; ++pos) {
      r.row(acc, p + roff, w, pos);
      if (pos + 1 < re) roff = advance(ridx, g.r, nr, roff);
    }
  };
  auto do_units = [&](int64_t ub, int64_t ue) {
    Scratch<Acc> acc(std::min(W, K));
    for (int64_t u = ub; u < ue; ++u) {
      int64_t o2 = u / nch, j0 = (u % nch) * W, w = std::min(W, K - j0), ob = o2 * K + j0;
      for (int64_t j = 0; j < w; ++j) acc[size_t(j)] = r.init(ob + j);
      fold(o2, j0, w, 0, g.red_n, acc.get());
      for (int64_t j = 0; j < w; ++j) r.store(ob + j, acc[size_t(j)]);
    }
  };
  const int64_t ns = column_split(g.out_n, g.red_n, units);
  if (serial) {
    do_units(0, units);
  } else if (ns == 1) {
    parallel_for(0, units, std::max<int64_t>(1, kReduceGrain / (std::min(W, K) * g.red_n)), do_units);
  } else {
    Scratch<Acc> part(g.out_n * ns);
    parallel_for(0, ns, 1, [&](int64_t sb, int64_t se) {
      for (int64_t sp = sb; sp < se; ++sp) {
        int64_t rb = g.red_n * sp / ns, re = g.red_n * (sp + 1) / ns;
        for (int64_t u = 0; u < units; ++u) {
          int64_t o2 = u / nch, j0 = (u % nch) * W, w = std::min(W, K - j0), ob = o2 * K + j0;
          Acc* acc = part.get() + sp * g.out_n + ob;
          for (int64_t j = 0; j < w; ++j) acc[j] = r.init(ob + j);
          fold(o2, j0, w, rb, re, acc);
        }
      }
    });
    for (int64_t o = 0; o < g.out_n; ++o) {
      Acc a = part[size_t(o)];
      for (int64_t sp = 1; sp < ns; ++sp) r.combine(a, part[size_t(sp * g.out_n + o)]);
      r.store(o, a);
    }
  }
}

// Calls f(block, len) over blocks of at most kBlock f32 values of the run p[0], p[s], ...
// (no copy for contiguous f32; converted/gathered otherwise).
template <class T, class F>
inline void f32_blocks(const T* p, int64_t n, int64_t s, F&& f) {
  if constexpr (std::is_same_v<T, float>) {
    if (s == 1) return f(p, n);
  }
  float buf[kBlock];
  for (int64_t i = 0; i < n; i += kBlock) {
    int64_t m = std::min(kBlock, n - i);
    const T* q = p + i * s;
    if (s == 1) {
      to_f32(q, buf, m);
    } else {
      for (int64_t k = 0; k < m; ++k) buf[k] = static_cast<float>(q[k * s]);
    }
    f(static_cast<const float*>(buf), m);
  }
}

// True for the float types that go through the f32 SIMD kernels.
template <class T>
constexpr bool kF32Like = std::is_same_v<T, float> || is_half_v<T>;

// Sum of f(v) over a strided run, in double, with four accumulators.
template <class T, class F>
inline double scalar_fold(const T* p, int64_t n, int64_t s, F f) {
  double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a0 += f(double(ld(p[i * s])));
    a1 += f(double(ld(p[(i + 1) * s])));
    a2 += f(double(ld(p[(i + 2) * s])));
    a3 += f(double(ld(p[(i + 3) * s])));
  }
  for (; i < n; ++i) a0 += f(double(ld(p[i * s])));
  return (a0 + a1) + (a2 + a3);
}

// ---------------------------------------------------------------------------------------------
// Reducers
// ---------------------------------------------------------------------------------------------

// sum / mean of floating inputs (accumulated in double). Out may be double (internal passes).
template <class T, class Out>
struct FSum {
  using In = T;
  using Acc = double;
  Out* out;
  double div;  // 1 for sum, n for mean
  Acc init(int64_t) const { return 0.0; }
  void run(Acc& a, const T* p, int64_t n, int64_t s, int64_t) const {
    if constexpr (kF32Like<T>) {
      if (use_avx512()) return f32_blocks(p, n, s, [&](const float* q, int64_t m) { a += rsimd::sum_f32(q, m); });
      // elsewhere the vector kernels' fold (AVX2: 8 chains of doubles), not a scalar loop
      if (s == 1 || !std::is_same_v<T, float>)
        return f32_blocks(p, n, s, [&](const float* q, int64_t m) { a += double(vec::sum_f32(q, m)); });
    } else {
      if (s == 1 && use_avx512()) {
        a += rsimd::sum_f64(p, n);
        return;
      }
    }
    a += scalar_fold(p, n, s, [](double v) { return v; });
  }
  void row(Acc* a, const T* p, int64_t w, int64_t) const {
    if (use_avx512()) {
      if constexpr (std::is_same_v<T, float>) return rsimd::add_row_f32(a, p, w);
      if constexpr (std::is_same_v<T, double>) return rsimd::add_row_f64(a, p, w);
      if constexpr (is_half_v<T>) {
        f32_blocks(p, w, 1, [&](const float* q, int64_t m) {
          rsimd::add_row_f32(a, q, m);
          a += m;
        });
        return;
      }
    }
    for (int64_t j = 0; j < w; ++j) a[j] += double(ld(p[j]));
  }
  void combine(Acc& a, const Acc& b) const { a += b; }
  void store(int64_t o, const Acc& a) const { out[o] = convert_scalar<Out>(div == 1.0 ? a : a / div); }
};

// sum of integer / bool inputs -> i64 (wrapping).
template <class T>
struct ISum {
  using In = T;
  using Acc = uint64_t;
  int64_t* out;
  Acc init(int64_t) const { return 0; }
  void run(Acc& a, const T* p, int64_t n, int64_t s, int64_t) const {
    uint64_t acc = 0;
    if (s == 1) {
      for (int64_t i = 0; i < n; ++i) acc += uint64_t(int64_t(p[i]));
    } else {
      for (int64_t i = 0; i < n; ++i) acc += uint64_t(int64_t(p[i * s]));
    }
    a += acc;
  }
  void row(Acc* a, const T* p, int64_t w, int64_t) const {
    for (int64_t j = 0; j < w; ++j) a[j] += uint64_t(int64_t(p[j]));
  }
  void combine(Acc& a, const Acc& b) const { a += b; }
  void store(int64_t o, const Acc& a) const { out[o] = int64_t(a); }
};

// prod: floats in double, integers / bool -> i64 (wrapping).
template <class T>
struct Prod {
  using In = T;
  static constexpr bool kFloat = is_floating_v<T>;
  using Acc = std::conditional_t<kFloat, double, uint64_t>;
  using Out = std::conditional_t<kFloat, T, int64_t>;
  Out* out;
  static Acc val(T v) {
    if constexpr (kFloat) return double(ld(v));
    else return uint64_t(int64_t(v));
  }
  Acc init(int64_t) const { return Acc(1); }
  void run(Acc& a, const T* p, int64_t n, int64_t s, int64_t) const {
    Acc a0 = 1, a1 = 1;
    int64_t i = 0;
    for (; i + 2 <= n; i += 2) {
      a0 *= val(p[i * s]);
      a1 *= val(p[(i + 1) * s]);
    }
    if (i < n) a0 *= val(p[i * s]);
    a *= a0 * a1;
  }
  void row(Acc* a, const T* p, int64_t w, int64_t) const {
    for (int64_t j = 0; j < w; ++j) a[j] *= val(p[j]);
  }
  void combine(Acc& a, const Acc& b) const { a *= b; }
  void store(int64_t o, const Acc& a) const {
    if constexpr (kFloat) out[o] = convert_scalar<T>(a);
    else out[o] = int64_t(a);
  }
};

// max / min (values); NaN propagates. Out may be double (logsumexp's first pass).
template <class T, bool IsMax, class Out>
struct Extreme {
  using In = T;
  using C = compute_t<T>;
  using Acc = C;
  Out* out;
  static void step(C& a, C v) {
    if constexpr (std::is_floating_point_v<C>) {
      if (v != v || (IsMax ? v > a : v < a)) a = v;
    } else {
      if (IsMax ? v > a : v < a) a = v;
    }
  }
  Acc init(int64_t) const {
    if constexpr (std::is_floating_point_v<C>)
      return IsMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
    else return IsMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
  }
  void run(Acc& a, const T* p, int64_t n, int64_t s, int64_t) const {
    if constexpr (kF32Like<T>) {
      if (use_avx512() || s == 1 || !std::is_same_v<T, float>) {
        f32_blocks(p, n, s, [&](const float* q, int64_t m) {
          if (use_avx512()) step(a, IsMax ? rsimd::max_f32(q, m) : rsimd::min_f32(q, m));
          else step(a, IsMax ? vec::max_f32(q, m) : vec::min_f32(q, m));
        });
        return;
      }
    }
    if constexpr (std::is_floating_point_v<C>) {
      // branch-free body (vectorisable): track the extreme and whether a NaN was seen
      C m = a;
      bool nan = false;
      for (int64_t i = 0; i < n; ++i) {
        C v = ld(p[i * s]);
        m = (IsMax ? v > m : v < m) ? v : m;
        nan |= v != v;
      }
      if (nan) m = std::numeric_limits<C>::quiet_NaN();
      step(a, m);
    } else {
      C m = a;
      for (int64_t i = 0; i < n; ++i) {
        C v = p[i * s];
        m = (IsMax ? v > m : v < m) ? v : m;
      }
      a = m;
    }
  }
  void row(Acc* a, const T* p, int64_t w, int64_t) const {
    for (int64_t j = 0; j < w; ++j) step(a[j], ld(p[j]));
  }
  void combine(Acc& a, const Acc& b) const { step(a, b); }
  void store(int64_t o, const Acc& a) const { out[o] = convert_scalar<Out>(a); }
};

// any / all -> bool
template <class T, bool IsAll>
struct AnyAll {
  using In = T;
  using Acc = bool;
  bool* out;
  static bool nz(T v) { return ld(v) != compute_t<T>(0); }
  Acc init(int64_t) const { return IsAll; }
  void run(Acc& a, const T* p, int64_t n, int64_t s, int64_t) const {
    if (a != IsAll) return;  // already decided
    for (int64_t i = 0; i < n; ++i)
      if (nz(p[i * s]) != IsAll) {
        a = !IsAll;
        return;
      }
  }
  void row(Acc* a, const T* p, int64_t w, int64_t) const {
    for (int64_t j = 0; j < w; ++j) {
      if constexpr (IsAll) a[j] = a[j] && nz(p[j]);
      else a[j] = a[j] || nz(p[j]);
    }
  }
  void combine(Acc& a, const Acc& b) const { a = IsAll ? (a && b) : (a || b); }
  void store(int64_t o, const Acc& a) const { out[o] = a; }
};

// var / std, second pass: sum of squared deviations from the per-output mean (first pass).
template <class T, bool IsStd>
struct VarPass {
  using In = T;
  struct Acc {
    double mean, m2;
  };
  T* out;
  const double* mean;
  double div;
  Acc init(int64_t o) const { return {mean[o], 0.0}; }
  void run(Acc& a, const T* p, int64_t n, int64_t s, int64_t) const {
    if (use_avx512()) {
      if constexpr (kF32Like<T>) {
        f32_blocks(p, n, s, [&](const float* q, int64_t m) { a.m2 += rsimd::sumsq_dev_f32(q, m, a.mean); });
        return;
      } else {
        if (s == 1) {
          a.m2 += rsimd::sumsq_dev_f64(p, n, a.mean);
          return;
        }
      }
    }
    const double mu = a.mean;
    a.m2 += scalar_fold(p, n, s, [mu](double v) { return (v - mu) * (v - mu); });
  }
  void row(Acc* a, const T* p, int64_t w, int64_t) const {
    for (int64_t j = 0; j < w; ++j) {
      double d = double(ld(p[j])) - a[j].mean;
      a[j].m2 += d * d;
    }
  }
  void combine(Acc& a, const Acc& b) const { a.m2 += b.m2; }
  void store(int64_t o, const Acc& a) const {
    double v = a.m2 / div;
    out[o] = convert_scalar<T>(IsStd ? std::sqrt(v) : v);
  }
};

// p-norms. Kind: 0 count nonzero, 1 sum |x|, 2 sqrt(sum x^2), 3 max |x|, 4 min |x|, 5 general p.
template <class T, int Kind>
struct Norm {
  using In = T;
  using Acc = double;
  T* out;
  double p;
  void step(double& a, double v) const {
    double av = std::abs(v);
    if constexpr (Kind == 0) a += v != 0 ? 1.0 : 0.0;
    if constexpr (Kind == 1) a += av;
    if constexpr (Kind == 2) a += v * v;
    if constexpr (Kind == 3) {
      if (av != av || av > a) a = av;
    }
    if constexpr (Kind == 4) {
      if (av != av || av < a) a = av;
    }
    if constexpr (Kind == 5) a += std::pow(av, p);
  }
  Acc init(int64_t) const { return Kind == 4 ? std::numeric_limits<double>::infinity() : 0.0; }
  void run(Acc& a, const T* q, int64_t n, int64_t s, int64_t) const {
    if constexpr (Kind == 2) {
      if (use_avx512()) {
        if constexpr (kF32Like<T>) {
          f32_blocks(q, n, s, [&](const float* b, int64_t m) { a += rsimd::sumsq_f32(b, m); });
          return;
        } else {
          if (s == 1) {
            a += rsimd::sumsq_dev_f64(q, n, 0.0);
            return;
          }
        }
      }
      a += scalar_fold(q, n, s, [](double v) { return v * v; });
    } else if constexpr (Kind == 1) {
      a += scalar_fold(q, n, s, [](double v) { return std::abs(v); });
    } else {
      for (int64_t i = 0; i < n; ++i) step(a, double(ld(q[i * s])));
    }
  }
  void row(Acc* a, const T* q, int64_t w, int64_t) const {
    for (int64_t j = 0; j < w; ++j) step(a[j], double(ld(q[j])));
  }
  void combine(Acc& a, const Acc& b) const {
    if constexpr (Kind == 3 || Kind == 4) step(a, b);
    else a += b;
  }
  void store(int64_t o, const Acc& a) const {
    double v = a;
    if constexpr (Kind == 2) v = std::sqrt(a);
    if constexpr (Kind == 5) v = std::pow(a, 1.0 / p);
    out[o] = convert_scalar<T>(v);
  }
};

// logsumexp, second pass: sum exp(x - shift) with the per-output shift of the first pass.
template <class T>
struct LsePass {
  using In = T;
  struct Acc {
    double shift, sum;
  };
  T* out;
  const double* shift;
  Acc init(int64_t o) const { return {shift[o], 0.0}; }
  void run(Acc& a, const T* p, int64_t n, int64_t s, int64_t) const {
    if constexpr (kF32Like<T>) {
      if (use_avx512()) {
        float sh = float(a.shift);
        f32_blocks(p, n, s, [&](const float* q, int64_t m) { a.sum += rsimd::sum_exp_f32(q, m, sh); });
        return;
      }
    }
    const double sh = a.shift;
    a.sum += scalar_fold(p, n, s, [sh](double v) { return std::exp(v - sh); });
  }
  void row(Acc* a, const T* p, int64_t w, int64_t) const {
    for (int64_t j = 0; j < w; ++j) a[j].sum += std::exp(double(ld(p[j])) - a[j].shift);
  }
  void combine(Acc& a, const Acc& b) const { a.sum += b.sum; }
  void store(int64_t o, const Acc& a) const { out[o] = convert_scalar<T>(std::log(a.sum) + a.shift); }
};

// argmax / argmin / max_dim / min_dim: first occurrence wins; the first NaN beats everything.
template <class T, bool IsMax>
struct ArgExtreme {
  using In = T;
  using C = compute_t<T>;
  struct Acc {
    C v;
    int64_t i;
  };
  int64_t* idx_out;
  T* val_out;  // null for argmax / argmin
  static bool better(C v, C cur) {
    if constexpr (std::is_floating_point_v<C>) {
      if (cur != cur) return false;
      if (v != v) return true;
    }
    return IsMax ? v > cur : v < cur;
  }
  static void step(Acc& a, C v, int64_t i) {
    if (a.i < 0 || better(v, a.v)) {
      a.v = v;
      a.i = i;
    }
  }
  Acc init(int64_t) const { return {C{}, -1}; }
  void run(Acc& a, const T* p, int64_t n, int64_t s, int64_t pos) const {
    if constexpr (std::is_same_v<T, float>) {
      if (s == 1 && n >= 16 && use_avx512()) {
        // the extreme of the run with SIMD, then its first position
        float m = IsMax ? rsimd::max_f32(p, n) : rsimd::min_f32(p, n);
        int64_t k = 0;
        if (m != m) {
          while (!(p[k] != p[k])) ++k;
        } else {
          while (p[k] != m) ++k;
        }
        step(a, m, pos + k);
        return;
      }
    }
    for (int64_t k = 0; k < n; ++k) step(a, ld(p[k * s]), pos + k);
  }
  void row(Acc* a, const T* p, int64_t w, int64_t pos) const {
    for (int64_t j = 0; j < w; ++j) step(a[j], ld(p[j]), pos);
  }
  void combine(Acc& a, const Acc& b) const {
    if (b.i >= 0 && (a.i < 0 || better(b.v, a.v))) a = b;
  }
  void store(int64_t o, const Acc& a) const {
    idx_out[o] = a.i < 0 ? 0 : a.i;
    if (val_out) val_out[o] = convert_scalar<T>(a.v);
  }
};

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------
const CpuTensor& input(const Op& op) { return as_cpu(op.inputs[0]); }
const ReduceAttrs& rattrs(const Op& op) { return op.attr<ReduceAttrs>(); }

template <class F>
void visit_float(DType dt, const Op& op, F&& f) {
  visit_float_dtype(dt, op.name(), std::forward<F>(f));
}

std::vector<PrimitivePtr> sum_kernel(CpuBackend&, Op& op) {
  const auto& x = input(op);
  auto out = alloc(op.outputs[0]);
  Geom g;
  make_geom(g, x, rattrs(op).dims, true);
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (is_floating_v<T>) reduce_driver(g, x.data<T>(), FSum<T, T>{out->data<T>(), 1.0});
    else reduce_driver(g, x.data<T>(), ISum<T>{out->data<int64_t>()});
  });
  return {out};
}

std::vector<PrimitivePtr> mean_kernel(CpuBackend&, Op& op) {
  const auto& x = input(op);
  auto out = alloc(op.outputs[0]);
  Geom g;
  make_geom(g, x, rattrs(op).dims, true);
  visit_float(x.dtype(), op, [&]<class T>() {
    // div = n (0 for an empty reduction: 0/0 = NaN like torch); never 1 unless n == 1
    reduce_driver(g, x.data<T>(), FSum<T, T>{out->data<T>(), double(g.red_n)});
  });
  return {out};
}

std::vector<PrimitivePtr> prod_kernel(CpuBackend&, Op& op) {
  const auto& x = input(op);
  auto out = alloc(op.outputs[0]);
  Geom g;
  make_geom(g, x, rattrs(op).dims, true);
  visit_dtype(x.dtype(), [&]<class T>() {
    using R = Prod<T>;
    reduce_driver(g, x.data<T>(), R{out->data<typename R::Out>()});
  });
  return {out};
}

template <bool IsMax>
std::vector<PrimitivePtr> extreme_kernel(CpuBackend&, Op& op) {
  const auto& x = input(op);
  auto out = alloc(op.outputs[0]);
  Geom g;
  make_geom(g, x, rattrs(op).dims, true);
  visit_dtype(x.dtype(), [&]<class T>() { reduce_driver(g, x.data<T>(), Extreme<T, IsMax, T>{out->data<T>()}); });
  return {out};
}

template <bool IsAll>
std::vector<PrimitivePtr> anyall_kernel(CpuBackend&, Op& op) {
  const auto& x = input(op);
  auto out = alloc(op.outputs[0]);
  Geom g;
  make_geom(g, x, rattrs(op).dims, true);
  visit_dtype(x.dtype(), [&]<class T>() { reduce_driver(g, x.data<T>(), AnyAll<T, IsAll>{out->data<bool>()}); });
  return {out};
}

template <bool IsStd>
std::vector<PrimitivePtr> var_kernel(CpuBackend&, Op& op) {
  const auto& x = input(op);
  auto out = alloc(op.outputs[0]);
  Geom g;
  make_geom(g, x, rattrs(op).dims, true);
  visit_float(x.dtype(), op, [&]<class T>() {
    Scratch<double> mean(g.out_n);
    reduce_driver(g, x.data<T>(), FSum<T, double>{mean.get(), double(g.red_n)});
    double div = std::max<double>(double(g.red_n) - double(rattrs(op).correction), 0.0);
    reduce_driver(g, x.data<T>(), VarPass<T, IsStd>{out->data<T>(), mean.get(), div});
  });
  return {out};
}

std::vector<PrimitivePtr> norm_kernel(CpuBackend&, Op& op) {
  const auto& x = input(op);
  auto out = alloc(op.outputs[0]);
  Geom g;
  make_geom(g, x, rattrs(op).dims, true);
  const double p = rattrs(op).p;
  EMBER_CHECK(g.red_n > 0 || (p >= 0 && !std::isinf(p)), "norm: cannot compute the ", p,
              "-norm over an empty reduction (input shape ", x.shape(), "): it has no identity");
  visit_float(x.dtype(), op, [&]<class T>() {
    const T* in = x.data<T>();
    T* o = out->data<T>();
    if (p == 0) reduce_driver(g, in, Norm<T, 0>{o, p});
    else if (p == 1) reduce_driver(g, in, Norm<T, 1>{o, p});
    else if (p == 2) reduce_driver(g, in, Norm<T, 2>{o, p});
    else if (std::isinf(p) && p > 0) reduce_driver(g, in, Norm<T, 3>{o, p});
    else if (std::isinf(p)) reduce_driver(g, in, Norm<T, 4>{o, p});
    else reduce_driver(g, in, Norm<T, 5>{o, p});
  });
  return {out};
}

std::vector<PrimitivePtr> logsumexp_kernel(CpuBackend&, Op& op) {
  const auto& x = input(op);
  auto out = alloc(op.outputs[0]);
  Geom g;
  make_geom(g, x, rattrs(op).dims, true);
  visit_float(x.dtype(), op, [&]<class T>() {
    Scratch<double> shift(g.out_n);
    reduce_driver(g, x.data<T>(), Extreme<T, true, double>{shift.get()});
    for (int64_t o = 0; o < g.out_n; ++o)
      if (std::isinf(shift[o])) shift[o] = 0;  // all -inf -> log(0) = -inf; any +inf -> inf
    reduce_driver(g, x.data<T>(), LsePass<T>{out->data<T>(), shift.get()});
  });
  return {out};
}

template <bool IsMax, bool WithValues>
std::vector<PrimitivePtr> arg_kernel(CpuBackend&, Op& op) {
  const auto& x = input(op);
  std::vector<PrimitivePtr> outs;
  CpuTensorPtr vals, idx;
  if constexpr (WithValues) {
    vals = alloc(op.outputs[0]);
    idx = alloc(op.outputs[1]);
    outs = {vals, idx};
  } else {
    idx = alloc(op.outputs[0]);
    outs = {idx};
  }
  Geom g;
  make_geom(g, x, rattrs(op).dims, false);
  visit_dtype(x.dtype(), [&]<class T>() {
    reduce_driver(g, x.data<T>(),
                  ArgExtreme<T, IsMax>{idx->data<int64_t>(), WithValues ? vals->data<T>() : nullptr});
  });
  return outs;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Row folds for the fused row programs (fused.cpp)
// ---------------------------------------------------------------------------------------------

bool row_fold_supported(OpKind kind, DType dt) {
  switch (kind) {
    case OpKind::sum: case OpKind::mean: case OpKind::max: case OpKind::min:
    case OpKind::var: case OpKind::std: case OpKind::logsumexp:
      return is_float(dt);
    default:
      return false;
  }
}

int row_fold_passes(OpKind kind) {
  return kind == OpKind::var || kind == OpKind::std || kind == OpKind::logsumexp ? 2 : 1;
}

void row_fold_begin(OpKind kind, int pass, RowAcc& a) {
  if (pass == 0) {
    a.prev = 0;
    switch (kind) {
      case OpKind::max: case OpKind::logsumexp: a.acc = -std::numeric_limits<double>::infinity(); break;
      case OpKind::min: a.acc = std::numeric_limits<double>::infinity(); break;
      default: a.acc = 0;
    }
  } else {
    a.prev = a.acc;  // var: the mean; logsumexp: the shift
    a.acc = 0;
  }
}

void row_fold(OpKind kind, int pass, DType dt, const void* p, int64_t n, RowAcc& a) {
  visit_float_dtype(dt, "fused row fold", [&]<class T>() {
    const T* x = static_cast<const T*>(p);
    using C = compute_t<T>;
    switch (kind) {
      case OpKind::sum: case OpKind::mean:
        FSum<T, double>{nullptr, 1.0}.run(a.acc, x, n, 1, 0);
        break;
      case OpKind::max: case OpKind::min: {
        C m = C(a.acc);
        if (kind == OpKind::max) Extreme<T, true, T>{nullptr}.run(m, x, n, 1, 0);
        else Extreme<T, false, T>{nullptr}.run(m, x, n, 1, 0);
        a.acc = double(m);
        break;
      }
      case OpKind::var: case OpKind::std:
        if (pass == 0) {
          FSum<T, double>{nullptr, 1.0}.run(a.acc, x, n, 1, 0);
        } else {
          typename VarPass<T, false>::Acc v{a.prev, a.acc};
          VarPass<T, false>{nullptr, nullptr, 1.0}.run(v, x, n, 1, 0);
          a.acc = v.m2;
        }
        break;
      case OpKind::logsumexp:
        if (pass == 0) {
          C m = C(a.acc);
          Extreme<T, true, double>{nullptr}.run(m, x, n, 1, 0);
          a.acc = double(m);
        } else {
          typename LsePass<T>::Acc v{a.prev, a.acc};
          LsePass<T>{nullptr, nullptr}.run(v, x, n, 1, 0);
          a.acc = v.sum;
        }
        break;
      default:
        EMBER_CHECK(false, "fused row fold: ", op_name(kind), " is not a row reduction");
    }
  });
}

void row_fold_end_pass(OpKind kind, int pass, int64_t n, RowAcc& a) {
  if (pass != 0) return;
  if (kind == OpKind::var || kind == OpKind::std) a.acc /= double(n);  // the mean, as FSum's store
  if (kind == OpKind::logsumexp && std::isinf(a.acc)) a.acc = 0;   // as logsumexp_kernel
}

void row_fold_store(OpKind kind, const ReduceAttrs& ra, int64_t n, const RowAcc& a, DType dt, void* out) {
  visit_float_dtype(dt, "fused row fold", [&]<class T>() {
    T* o = static_cast<T*>(out);
    switch (kind) {
      case OpKind::sum: FSum<T, T>{o, 1.0}.store(0, a.acc); break;
      case OpKind::mean: FSum<T, T>{o, double(n)}.store(0, a.acc); break;
      case OpKind::max: case OpKind::min: *o = convert_scalar<T>(compute_t<T>(a.acc)); break;
      case OpKind::var: case OpKind::std: {
        const double div = std::max<double>(double(n) - double(ra.correction), 0.0);
        typename VarPass<T, false>::Acc v{a.prev, a.acc};
        if (kind == OpKind::std) VarPass<T, true>{o, nullptr, div}.store(0, {v.mean, v.m2});
        else VarPass<T, false>{o, nullptr, div}.store(0, v);
        break;
      }
      case OpKind::logsumexp: LsePass<T>{o, nullptr}.store(0, {a.prev, a.acc}); break;
      default: EMBER_CHECK(false, "fused row fold: ", op_name(kind), " is not a row reduction");
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Column folds for the fused column programs (fused.cpp): the column mode's row() arithmetic
// ---------------------------------------------------------------------------------------------

double col_fold_init(OpKind kind, int pass) {
  RowAcc a;
  row_fold_begin(kind, 0, a);
  return pass == 0 ? a.acc : 0.0;
}

void col_fold(OpKind kind, int pass, DType dt, const void* p, int64_t w, double* acc, const double* prev) {
  visit_float_dtype(dt, "fused column fold", [&]<class T>() {
    const T* x = static_cast<const T*>(p);
    using C = compute_t<T>;
    auto extreme = [&]<bool IsMax>() {
      for (int64_t j = 0; j < w; ++j) {
        C a = C(acc[j]);
        Extreme<T, IsMax, T>::step(a, ld(x[j]));
        acc[j] = double(a);
      }
    };
    const bool sum_pass =
        kind == OpKind::sum || kind == OpKind::mean || ((kind == OpKind::var || kind == OpKind::std) && pass == 0);
    if (sum_pass) return FSum<T, double>{nullptr, 1.0}.row(acc, x, w, 0);
    switch (kind) {
      case OpKind::max:
        return extreme.template operator()<true>();
      case OpKind::min:
        return extreme.template operator()<false>();
      case OpKind::var:
      case OpKind::std:  // pass 1: squared deviations from the column's mean
        for (int64_t j = 0; j < w; ++j) {
          const double d = double(ld(x[j])) - prev[j];
          acc[j] += d * d;
        }
        return;
      case OpKind::logsumexp:
        if (pass == 0) return extreme.template operator()<true>();
        for (int64_t j = 0; j < w; ++j) acc[j] += std::exp(double(ld(x[j])) - prev[j]);
        return;
      default:
        EMBER_CHECK(false, "fused column fold: ", op_name(kind), " is not a column reduction");
    }
  });
}

void col_combine(OpKind kind, int pass, double& a, double b) {
  const bool extreme = kind == OpKind::max || kind == OpKind::min || (kind == OpKind::logsumexp && pass == 0);
  if (!extreme) {
    a += b;
    return;
  }
  const bool is_max = kind != OpKind::min;
  if (b != b || (is_max ? b > a : b < a)) a = b;  // (Extreme::step: NaN propagates)
}

int64_t column_partials(OpKind kind, int pass, DType dt, int64_t rows, int64_t cols) {
  // the eager reducer's accumulator: a double (sums), a compute_t (max, min, logsumexp's
  // shift) or two doubles (var's and logsumexp's second pass)
  size_t acc = sizeof(double);
  const bool extreme = kind == OpKind::max || kind == OpKind::min || (kind == OpKind::logsumexp && pass == 0);
  if (extreme)
    acc = dt == DType::f64 ? sizeof(double) : sizeof(float);
  else if (pass == 1)
    acc = 2 * sizeof(double);
  const int64_t W = column_block(acc);
  return column_split(cols, rows, (cols + W - 1) / W);
}

void register_reduce_kernels(KernelTable& t) {
  t[size_t(OpKind::sum)] = sum_kernel;
  t[size_t(OpKind::mean)] = mean_kernel;
  t[size_t(OpKind::prod)] = prod_kernel;
  t[size_t(OpKind::max)] = extreme_kernel<true>;
  t[size_t(OpKind::min)] = extreme_kernel<false>;
  t[size_t(OpKind::any)] = anyall_kernel<false>;
  t[size_t(OpKind::all)] = anyall_kernel<true>;
  t[size_t(OpKind::var)] = var_kernel<false>;
  t[size_t(OpKind::std)] = var_kernel<true>;
  t[size_t(OpKind::norm)] = norm_kernel;
  t[size_t(OpKind::logsumexp)] = logsumexp_kernel;
  t[size_t(OpKind::argmax)] = arg_kernel<true, false>;
  t[size_t(OpKind::argmin)] = arg_kernel<false, false>;
  t[size_t(OpKind::max_dim)] = arg_kernel<true, true>;
  t[size_t(OpKind::min_dim)] = arg_kernel<false, true>;
  register_softmax_kernels(t);
  register_scan_kernels(t);
  register_sort_kernels(t);
}

}  // namespace ember::cpu
