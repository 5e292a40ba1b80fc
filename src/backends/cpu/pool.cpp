// Pooling and resampling kernels: avg_pool, max_pool, adaptive_avg_pool, interpolate.
//
// Every kernel works on "planes": the input is viewed as [P, *spatial] where P is the
// product of the leading (batch/channel) dims, and 1-d / 2-d problems are lifted to 3-d by
// prepending spatial dims of size 1 (with kernel 1, stride 1, no padding), so one loop nest
// serves every rank. Per spatial dim, the windows (or source taps) of every output index are
// precomputed once into small tables; the work is split over (plane, output row) units. The
// usual downsampling max pool (2x2 windows, stride 2, f32) has its own AVX-512 kernel
// (pool_avx512.cpp). max_pool without indices (PoolAttrs::indices false) runs the same loops
// without the argmax: the compare-and-select then keeps only the running maximum.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "cpu_backend.hpp"
#include "cpu_features.hpp"
#include "ember/core/error.hpp"
#include "thread_pool.hpp"
#include "vec/vec_math.hpp"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace ember::cpu {

namespace detail {
// pool_avx512.cpp (call only when features().avx512); idx null: the values alone.
void max_pool_2x2_f32_avx512(const float* x, float* y, int64_t* idx, int64_t IH, int64_t IW, int64_t OH, int64_t OW,
                             int64_t r0, int64_t r1);
}  // namespace detail

namespace {

constexpr int64_t kGrainWork = 16384;  // elements of work per parallel chunk (approx.)

// Planes and 3-d spatial sizes of a [*lead, *spatial(nd)] tensor.
struct Geom3 {
  int64_t planes = 1;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1};
};

Geom3 geom3(const Shape& in, const Shape& out, int nd, std::string_view op) {
  EMBER_CHECK(nd >= 1 && nd <= 3, op, ": supports 1 to 3 spatial dims, got ", nd);
  Geom3 g;
  int lead = in.rank() - nd;
  for (int d = 0; d < lead; ++d) g.planes *= in[d];
  for (int i = 0; i < nd; ++i) {
    g.in[3 - nd + i] = in[lead + i];
    g.out[3 - nd + i] = out[lead + i];
  }
  return g;
}

// Runs fn(plane, o0, o1) for every output row (plane, o0, o1) of a [planes, out0, out1, *]
// output, in parallel when the total work (rows * work_per_row) is large.
template <class F>
void for_each_row(int64_t planes, int64_t out0, int64_t out1, int64_t work_per_row, F&& fn) {
  int64_t rows = planes * out0 * out1;
  if (rows == 0) return;
  auto body = [&](int64_t b, int64_t e) {
    int64_t o1 = b % out1, o0 = (b / out1) % out0, p = b / (out1 * out0);
    for (int64_t r = b; r < e; ++r) {
      fn(p, o0, o1);
      if (++o1 == out1) {
        o1 = 0;
        if (++o0 == out0) {
          o0 = 0;
          ++p;
        }
      }
    }
  };
  int64_t work = rows * std::max<int64_t>(1, work_per_row);
  if (work <= 2 * kGrainWork) {
    body(0, rows);
    return;
  }
  int64_t grain = std::max<int64_t>(1, kGrainWork / std::max<int64_t>(1, work_per_row));
  parallel_for(0, rows, grain, body);
}

// ---------------------------------------------------------------------------------------
// avg_pool / max_pool

// The window of one output index along one dim.
struct Window {
  int64_t lo;   // first tap position >= 0 (like PyTorch's start adjustment; may be >= size)
  int64_t n;    // taps inside [0, size)
  int64_t cnt;  // taps inside the padded range [-pad, size + pad) (avg_pool divisor)
};

struct PoolDim {
  int64_t in = 1, out = 1, k = 1, s = 1, p = 0, d = 1;
};

void pool_windows(const PoolDim& g, Window* w) {
  for (int64_t o = 0; o < g.out; ++o) {
    int64_t start = o * g.s - g.p;
    int64_t t0 = start < 0 ? (-start + g.d - 1) / g.d : 0;  // first tap at position >= 0
    int64_t lo = start + t0 * g.d;
    int64_t n = 0, cnt = 0;
    if (g.in - 1 - start >= 0) {
      int64_t t1 = std::min(g.k - 1, (g.in - 1 - start) / g.d);  // last tap < in
      n = std::max<int64_t>(0, t1 - t0 + 1);
    }
    if (g.in + g.p - 1 - start >= 0) cnt = std::min(g.k - 1, (g.in + g.p - 1 - start) / g.d) + 1;
    w[o] = {lo, n, cnt};
  }
}

struct PoolPlan {
  Geom3 g;
  std::array<PoolDim, 3> dims;
  std::vector<Window> win;  // dims[0].out + dims[1].out + dims[2].out entries
  const Window* w[3];
  int64_t taps = 1;  // kernel volume
};

// Finishes a plan whose geometry and per-dim parameters are set: taps and window tables.
void plan_windows(PoolPlan& pl) {
  pl.taps = 1;
  for (int i = 0; i < 3; ++i) pl.taps *= pl.dims[i].k;
  pl.win.resize(size_t(pl.dims[0].out + pl.dims[1].out + pl.dims[2].out));
  Window* p = pl.win.data();
  for (int i = 0; i < 3; ++i) {
    pool_windows(pl.dims[i], p);
    pl.w[i] = p;
    p += pl.dims[i].out;
  }
}

PoolPlan pool_plan(const Op& op) {
  const auto& a = op.attr<PoolAttrs>();
  int nd = int(a.kernel.size());
  PoolPlan pl;
  pl.g = geom3(op.in(0).shape, op.outputs[0].shape, nd, op.name());
  for (int i = 0; i < 3; ++i) {
    PoolDim& d = pl.dims[i];
    d.in = pl.g.in[i];
    d.out = pl.g.out[i];
    int j = i - (3 - nd);
    if (j >= 0) {
      d.k = a.kernel[j];
      d.s = a.stride[j];
      d.p = a.padding[j];
      d.d = a.dilation[j];
    }
  }
  plan_windows(pl);
  return pl;
}

// Outputs [a, b) of a dim whose taps all lie inside the input (no clipping, no padding).
void interior_range(const PoolDim& d, int64_t& a, int64_t& b) {
  a = (d.p + d.s - 1) / d.s;
  int64_t last = d.in - 1 - (d.k - 1) * d.d + d.p;  // largest valid window start + p
  b = last >= 0 ? std::min(d.out, last / d.s + 1) : 0;
  a = std::min(a, b);
}

struct PoolCtx {
  const PoolPlan* pl;
  const void* x;
  void* y;
  int64_t* idx;  // max_pool's indices; null when it has none
  bool include_pad;
  int64_t ia, ib;  // interior outputs of the last dim
};

constexpr int64_t kRowChunk = 256;  // interior outputs processed at once (stack accumulators)

// acc[j] += x[j * s], j < n
template <class T, class A>
[[gnu::always_inline]] inline void sum_taps(const T* x, int64_t s, int64_t n, A* acc) {
  if (s == 1) {
    for (int64_t j = 0; j < n; ++j) acc[j] += A(x[j]);
  } else if (s == 2) {
    for (int64_t j = 0; j < n; ++j) acc[j] += A(x[2 * j]);
  } else {
    for (int64_t j = 0; j < n; ++j) acc[j] += A(x[j * s]);
  }
}

// Running max / argmax over taps at flat positions pos0 + j * s of the plane x (without Idx:
// the max alone, bi unused).
template <class T, class A, class I, bool Idx = true>
[[gnu::always_inline]] inline void max_taps(const T* x, I pos0, I s, int64_t n, A* best, I* bi) {
  auto step = [&](int64_t j, I pos) {
    A v = A(x[pos]);
    bool take;
    if constexpr (std::is_floating_point_v<A>) take = v > best[j] || v != v;
    else take = v > best[j];
    best[j] = take ? v : best[j];
    if constexpr (Idx) bi[j] = take ? pos : bi[j];
  };
  if (s == 1) {
    for (int64_t j = 0; j < n; ++j) step(j, I(pos0 + I(j)));
  } else if (s == 2) {
    for (int64_t j = 0; j < n; ++j) step(j, I(pos0 + 2 * I(j)));
  } else {
    for (int64_t j = 0; j < n; ++j) step(j, I(pos0 + I(j) * s));
  }
}

// Decodes row r of a [planes, out0, out1] row space.
struct RowIndex {
  int64_t p, o0, o1;
};
inline RowIndex row_index(const Geom3& g, int64_t r) {
  return {r / (g.out[0] * g.out[1]), (r / g.out[1]) % g.out[0], r % g.out[1]};
}

template <int Isa, class T>
[[gnu::always_inline]] inline void avg_rows_body(const PoolCtx& c, int64_t r0, int64_t r1) {
  using A = compute_t<T>;
  const PoolPlan& pl = *c.pl;
  const Geom3& g = pl.g;
  const T* x = static_cast<const T*>(c.x);
  T* y = static_cast<T*>(c.y);
  int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  int64_t d0 = pl.dims[0].d, d1 = pl.dims[1].d, d2 = pl.dims[2].d, s2 = pl.dims[2].s, p2 = pl.dims[2].p,
          k2 = pl.dims[2].k;
  int64_t in1 = g.in[1], in2 = g.in[2], out2 = g.out[2];
  A acc[kRowChunk];
  for (int64_t r = r0; r < r1; ++r) {
    RowIndex ri = row_index(g, r);
    const T* xp = x + ri.p * in_plane;
    T* yp = y + r * out2;
    const Window& w0 = pl.w[0][ri.o0];
    const Window& w1 = pl.w[1][ri.o1];
    auto one = [&](int64_t o2) {
      const Window& w2 = pl.w[2][o2];
      A sum = 0;
      for (int64_t t0 = 0; t0 < w0.n; ++t0)
        for (int64_t t1 = 0; t1 < w1.n; ++t1) {
          const T* row = xp + ((w0.lo + t0 * d0) * in1 + (w1.lo + t1 * d1)) * in2 + w2.lo;
          for (int64_t t2 = 0; t2 < w2.n; ++t2) sum += A(row[t2 * d2]);
        }
      int64_t div = c.include_pad ? w0.cnt * w1.cnt * w2.cnt : w0.n * w1.n * w2.n;
      yp[o2] = convert_scalar<T>(sum / A(div));
    };
    for (int64_t o2 = 0; o2 < c.ia; ++o2) one(o2);
    A div = A(c.include_pad ? w0.cnt * w1.cnt * k2 : w0.n * w1.n * k2);
    for (int64_t a = c.ia; a < c.ib; a += kRowChunk) {
      int64_t n = std::min(kRowChunk, c.ib - a);
      if (d2 == 1 && k2 >= 8) {
        // Wide contiguous windows: per output, 8 partial sums along the window row.
        for (int64_t j = 0; j < n; ++j) {
          A lane[8] = {};
          A tail = 0;
          for (int64_t t0 = 0; t0 < w0.n; ++t0)
            for (int64_t t1 = 0; t1 < w1.n; ++t1) {
              const T* row = xp + ((w0.lo + t0 * d0) * in1 + (w1.lo + t1 * d1)) * in2 + (a + j) * s2 - p2;
              int64_t t = 0;
              for (; t + 8 <= k2; t += 8)
                for (int l = 0; l < 8; ++l) lane[l] += A(row[t + l]);
              for (; t < k2; ++t) tail += A(row[t]);
            }
          acc[j] = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7])) + tail;
        }
      } else {
        for (int64_t j = 0; j < n; ++j) acc[j] = A(0);
        for (int64_t t0 = 0; t0 < w0.n; ++t0)
          for (int64_t t1 = 0; t1 < w1.n; ++t1) {
            int64_t rb = ((w0.lo + t0 * d0) * in1 + (w1.lo + t1 * d1)) * in2 + a * s2 - p2;
            for (int64_t t2 = 0; t2 < k2; ++t2) sum_taps(xp + rb + t2 * d2, s2, n, acc);
          }
      }
      for (int64_t j = 0; j < n; ++j) yp[a + j] = convert_scalar<T>(acc[j] / div);
    }
    for (int64_t o2 = c.ib; o2 < out2; ++o2) one(o2);
  }
}

#if defined(__wasm_simd128__)
// The wasm build's interior max pool (f32, stride 1 or 2 along the last dim, argmax positions
// below 2^31): outputs [a, a + n) of one output row, 4 per vector, every tap inside the row. The
// taps are visited in the order of max_taps (row by row) and a later tap wins where it is greater
// or NaN, so values and indices equal the portable loop's; the positions are kept in 32 bits and
// widened when stored. A stride-2 vector reads one element past its last tap (load_even), so the
// last outputs fall back to the scalar loop when that element would lie past the row. Without Idx
// the positions are neither kept nor stored (ip is unused).
template <bool Idx>
void max_interior_f32_simd128(const float* xp, float* yp, int64_t* ip, int64_t a, int64_t n, int64_t s2, int64_t p2,
                              int64_t k2, int64_t d2, const Window& w0, const Window& w1, int64_t d0, int64_t d1,
                              int64_t in1, int64_t in2, int64_t first) {
  const v128_t lane_off = s2 == 1 ? wasm_i32x4_make(0, 1, 2, 3) : wasm_i32x4_make(0, 2, 4, 6);
  const v128_t ninf = wasm_f32x4_splat(-std::numeric_limits<float>::infinity());
  // Outputs whose vectors stay inside the row: the last tap of output j reads
  // column (a + j) * s2 - p2 + (k2 - 1) * d2, a stride-2 vector one more.
  const int64_t col_end = in2 - (s2 == 2 ? 1 : 0);  // columns a vector may touch: [0, col_end)
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const int64_t c0 = (a + j) * s2 - p2;  // first tap column of output a + j
    if (c0 + 3 * s2 + (k2 - 1) * d2 >= col_end) break;
    v128_t best = ninf;
    [[maybe_unused]] v128_t bi =
        Idx ? wasm_i32x4_add(wasm_i32x4_splat(int32_t(first + c0)), lane_off) : wasm_i32x4_splat(0);
    for (int64_t t0 = 0; t0 < w0.n; ++t0)
      for (int64_t t1 = 0; t1 < w1.n; ++t1) {
        const int64_t rb = ((w0.lo + t0 * d0) * in1 + (w1.lo + t1 * d1)) * in2 + c0;
        for (int64_t t2 = 0; t2 < k2; ++t2) {
          const int64_t pos = rb + t2 * d2;
          const float* src = xp + pos;
          const v128_t v = s2 == 1 ? wasm_v128_load(src)
                                   : wasm_i32x4_shuffle(wasm_v128_load(src), wasm_v128_load(src + 4), 0, 2, 4, 6);
          const v128_t take = wasm_v128_or(wasm_f32x4_gt(v, best), wasm_f32x4_ne(v, v));
          best = wasm_v128_bitselect(v, best, take);
          if constexpr (Idx)
            bi = wasm_v128_bitselect(wasm_i32x4_add(wasm_i32x4_splat(int32_t(pos)), lane_off), bi, take);
        }
      }
    wasm_v128_store(yp + a + j, best);
    if constexpr (Idx) {
      wasm_v128_store(ip + a + j, wasm_i64x2_extend_low_i32x4(bi));
      wasm_v128_store(ip + a + j + 2, wasm_i64x2_extend_high_i32x4(bi));
    }
  }
  // The rest, one output at a time.
  for (; j < n; ++j) {
    const int64_t c0 = (a + j) * s2 - p2;
    float best = -std::numeric_limits<float>::infinity();
    int64_t bi = first + c0;
    for (int64_t t0 = 0; t0 < w0.n; ++t0)
      for (int64_t t1 = 0; t1 < w1.n; ++t1) {
        const int64_t rb = ((w0.lo + t0 * d0) * in1 + (w1.lo + t1 * d1)) * in2 + c0;
        for (int64_t t2 = 0; t2 < k2; ++t2) max_taps<float, float, int64_t, Idx>(xp, rb + t2 * d2, 1, 1, &best, &bi);
      }
    yp[a + j] = best;
    if constexpr (Idx) ip[a + j] = bi;
  }
}
#endif

// Idx: also the argmax positions (c.idx); without it c.idx is null and no position is tracked.
template <int Isa, class T, bool Idx>
[[gnu::always_inline]] inline void max_rows_body(const PoolCtx& c, int64_t r0, int64_t r1) {
  using A = std::conditional_t<is_floating_v<T>, compute_t<T>, T>;
  const PoolPlan& pl = *c.pl;
  const Geom3& g = pl.g;
  const T* x = static_cast<const T*>(c.x);
  T* y = static_cast<T*>(c.y);
  int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  int64_t d0 = pl.dims[0].d, d1 = pl.dims[1].d, d2 = pl.dims[2].d, s2 = pl.dims[2].s, p2 = pl.dims[2].p,
          k2 = pl.dims[2].k;
  int64_t in1 = g.in[1], in2 = g.in[2], out2 = g.out[2];
  A lowest;
  if constexpr (is_floating_v<T>) lowest = -std::numeric_limits<A>::infinity();
  else lowest = std::numeric_limits<A>::lowest();
  // Interior argmax positions in 32 bits when the plane allows (same width as f32: the
  // compare-and-select loop vectorises without widening).
  using I = std::conditional_t<sizeof(A) <= 4, int32_t, int64_t>;
  bool narrow = in_plane <= int64_t(std::numeric_limits<int32_t>::max());
  A best[kRowChunk];
  I bi[kRowChunk];
  int64_t bi64[kRowChunk];
  for (int64_t r = r0; r < r1; ++r) {
    RowIndex ri = row_index(g, r);
    const T* xp = x + ri.p * in_plane;
    T* yp = y + r * out2;
    int64_t* ip = Idx ? c.idx + r * out2 : nullptr;
    const Window& w0 = pl.w[0][ri.o0];
    const Window& w1 = pl.w[1][ri.o1];
    int64_t first = (w0.lo * in1 + w1.lo) * in2;  // PyTorch's initial index (plus the column)
    auto one = [&](int64_t o2) {
      const Window& w2 = pl.w[2][o2];
      A b = lowest;
      int64_t i = first + w2.lo;
      for (int64_t t0 = 0; t0 < w0.n; ++t0)
        for (int64_t t1 = 0; t1 < w1.n; ++t1) {
          int64_t rb = ((w0.lo + t0 * d0) * in1 + (w1.lo + t1 * d1)) * in2 + w2.lo;
          for (int64_t t2 = 0; t2 < w2.n; ++t2) max_taps<T, A, int64_t, Idx>(xp, rb + t2 * d2, 1, 1, &b, &i);
        }
      yp[o2] = convert_scalar<T>(b);
      if constexpr (Idx) ip[o2] = i;
    };
    for (int64_t o2 = 0; o2 < c.ia; ++o2) one(o2);
    for (int64_t a = c.ia; a < c.ib; a += kRowChunk) {
      int64_t n = std::min(kRowChunk, c.ib - a);
#if defined(__wasm_simd128__)
      if constexpr (std::is_same_v<T, float>) {
        if (narrow && (s2 == 1 || s2 == 2)) {
          max_interior_f32_simd128<Idx>(xp, yp, ip, a, n, s2, p2, k2, d2, w0, w1, d0, d1, in1, in2, first);
          continue;
        }
      }
#endif
      for (int64_t j = 0; j < n; ++j) best[j] = lowest;
      if (Idx && narrow) {
        for (int64_t j = 0; j < n; ++j) bi[j] = I(first + (a + j) * s2 - p2);
        for (int64_t t0 = 0; t0 < w0.n; ++t0)
          for (int64_t t1 = 0; t1 < w1.n; ++t1) {
            int64_t rb = ((w0.lo + t0 * d0) * in1 + (w1.lo + t1 * d1)) * in2 + a * s2 - p2;
            for (int64_t t2 = 0; t2 < k2; ++t2) max_taps<T, A, I>(xp, I(rb + t2 * d2), I(s2), n, best, bi);
          }
        for (int64_t j = 0; j < n; ++j) ip[a + j] = bi[j];
      } else {  // 64-bit positions, or none (values only)
        if constexpr (Idx)
          for (int64_t j = 0; j < n; ++j) bi64[j] = first + (a + j) * s2 - p2;
        for (int64_t t0 = 0; t0 < w0.n; ++t0)
          for (int64_t t1 = 0; t1 < w1.n; ++t1) {
            int64_t rb = ((w0.lo + t0 * d0) * in1 + (w1.lo + t1 * d1)) * in2 + a * s2 - p2;
            for (int64_t t2 = 0; t2 < k2; ++t2) max_taps<T, A, int64_t, Idx>(xp, rb + t2 * d2, s2, n, best, bi64);
          }
        if constexpr (Idx)
          for (int64_t j = 0; j < n; ++j) ip[a + j] = bi64[j];
      }
      for (int64_t j = 0; j < n; ++j) yp[a + j] = convert_scalar<T>(best[j]);
    }
    for (int64_t o2 = c.ib; o2 < out2; ++o2) one(o2);
  }
}

using RowsFn = void (*)(const PoolCtx&, int64_t, int64_t);

#if defined(__x86_64__) || defined(__i386__)
#define EMBER_POOL_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))
#define EMBER_POOL_AVX2 __attribute__((target("avx2,fma")))
template <class T>
EMBER_POOL_AVX512 void avg_rows_avx512(const PoolCtx& c, int64_t a, int64_t b) { avg_rows_body<2, T>(c, a, b); }
template <class T>
EMBER_POOL_AVX2 void avg_rows_avx2(const PoolCtx& c, int64_t a, int64_t b) { avg_rows_body<1, T>(c, a, b); }
template <class T, bool Idx>
EMBER_POOL_AVX512 void max_rows_avx512(const PoolCtx& c, int64_t a, int64_t b) {
  max_rows_body<2, T, Idx>(c, a, b);
}
template <class T, bool Idx>
EMBER_POOL_AVX2 void max_rows_avx2(const PoolCtx& c, int64_t a, int64_t b) {
  max_rows_body<1, T, Idx>(c, a, b);
}
#undef EMBER_POOL_AVX512
#undef EMBER_POOL_AVX2
#endif
template <class T>
void avg_rows_base(const PoolCtx& c, int64_t a, int64_t b) { avg_rows_body<0, T>(c, a, b); }
template <class T, bool Idx>
void max_rows_base(const PoolCtx& c, int64_t a, int64_t b) {
  max_rows_body<0, T, Idx>(c, a, b);
}

// SIMD builds for f32 / f64 (the types whose inner loops vectorise cleanly).
template <class T>
RowsFn pick_rows(RowsFn base, [[maybe_unused]] RowsFn avx2, [[maybe_unused]] RowsFn avx512) {
#if defined(__x86_64__) || defined(__i386__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (features().avx512) return avx512;
    if (features().avx2) return avx2;
  }
#endif
  return base;
}

void run_rows(const PoolCtx& c, RowsFn fn) {
  const Geom3& g = c.pl->g;
  int64_t rows = g.planes * g.out[0] * g.out[1];
  if (rows == 0 || g.out[2] == 0) return;
  int64_t work_per_row = std::max<int64_t>(1, g.out[2] * c.pl->taps);
  if (rows * work_per_row <= 2 * kGrainWork) {
    fn(c, 0, rows);
    return;
  }
  parallel_for(0, rows, std::max<int64_t>(1, kGrainWork / work_per_row), [&](int64_t a, int64_t b) { fn(c, a, b); });
}

PoolCtx pool_ctx(const PoolPlan& pl, const CpuTensor& x, CpuTensor& y, int64_t* idx, bool include_pad) {
  PoolCtx c{&pl, x.raw(), y.raw(), idx, include_pad, 0, 0};
  interior_range(pl.dims[2], c.ia, c.ib);
  return c;
}

template <class T>
RowsFn avg_rows_fn() {
#if defined(__x86_64__) || defined(__i386__)
  return pick_rows<T>(avg_rows_base<T>, avg_rows_avx2<T>, avg_rows_avx512<T>);
#else
  return avg_rows_base<T>;
#endif
}

std::vector<PrimitivePtr> avg_pool_kernel(CpuBackend&, Op& op) {
  PoolPlan pl = pool_plan(op);
  auto x = contiguous(op.inputs[0]);
  auto y = alloc(op.outputs[0]);
  PoolCtx c = pool_ctx(pl, *x, *y, nullptr, op.attr<PoolAttrs>().count_include_pad);
  visit_float_dtype(x->dtype(), op.name(), [&]<class T>() { run_rows(c, avg_rows_fn<T>()); });
  return {y};
}

// The common downsampling pool: 2x2 windows, stride 2, no padding or dilation, every window
// inside the input (1 along the leading spatial dim of a 3-d pool), f32 on AVX-512. Runs it
// (idx null: values only) and returns true, or returns false for the generic kernel.
bool max_pool_2x2(const PoolPlan& pl, const CpuTensor& x, CpuTensor& y, int64_t* idx) {
  const PoolDim &d0 = pl.dims[0], &d1 = pl.dims[1], &d2 = pl.dims[2];
  if (x.dtype() != DType::f32 || !features().avx512) return false;
  if (d0.k != 1 || d0.s != 1 || d0.p != 0 || d0.out != d0.in) return false;
  for (const PoolDim* d : {&d1, &d2})
    if (d->k != 2 || d->s != 2 || d->p != 0 || d->d != 1 || 2 * d->out > d->in) return false;
  if (d1.in * d2.in > int64_t(std::numeric_limits<int32_t>::max())) return false;
  const int64_t rows = pl.g.planes * d0.in * d1.out;
  if (rows == 0 || d2.out == 0) return true;
  auto run = [&](int64_t r0, int64_t r1) {
    detail::max_pool_2x2_f32_avx512(x.data<float>(), y.data<float>(), idx, d1.in, d2.in, d1.out, d2.out, r0, r1);
  };
  const int64_t work_per_row = 4 * d2.out;
  if (rows * work_per_row <= 2 * kGrainWork)
    run(0, rows);
  else
    parallel_for(0, rows, std::max<int64_t>(1, kGrainWork / work_per_row), run);
  return true;
}

template <class T, bool Idx>
RowsFn max_rows_fn() {
#if defined(__x86_64__) || defined(__i386__)
  return pick_rows<T>(max_rows_base<T, Idx>, max_rows_avx2<T, Idx>, max_rows_avx512<T, Idx>);
#else
  return max_rows_base<T, Idx>;
#endif
}

std::vector<PrimitivePtr> max_pool_kernel(CpuBackend&, Op& op) {
  PoolPlan pl = pool_plan(op);
  auto x = contiguous(op.inputs[0]);
  std::vector<PrimitivePtr> outs;
  auto y = alloc(op.outputs[0]);
  outs.push_back(y);
  int64_t* idx = nullptr;
  if (op.attr<PoolAttrs>().indices) {
    auto i = alloc(op.outputs[1]);
    idx = i->data<int64_t>();
    outs.push_back(std::move(i));
  }
  if (max_pool_2x2(pl, *x, *y, idx)) return outs;
  PoolCtx c = pool_ctx(pl, *x, *y, idx, false);
  visit_dtype(x->dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      EMBER_FAIL(op.name(), ": not supported for bool input ", x->shape());
    } else {
      run_rows(c, idx ? max_rows_fn<T, true>() : max_rows_fn<T, false>());
    }
  });
  return outs;
}

// ---------------------------------------------------------------------------------------
// adaptive_avg_pool

template <class T>
void adaptive_avg_impl(const Geom3& g, const int64_t* lo, const int64_t* hi, const T* x, T* y) {
  using A = compute_t<T>;
  int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  int64_t in1 = g.in[1], in2 = g.in[2], out2 = g.out[2];
  const int64_t *lo0 = lo, *lo1 = lo + g.out[0], *lo2 = lo1 + g.out[1];
  const int64_t *hi0 = hi, *hi1 = hi + g.out[0], *hi2 = hi1 + g.out[1];
  int64_t work = out2 * ((g.in[0] + g.out[0] - 1) / g.out[0] + 1) * ((g.in[1] + g.out[1] - 1) / g.out[1] + 1) *
                 ((in2 + out2 - 1) / out2 + 1);
  for_each_row(g.planes, g.out[0], g.out[1], work, [&](int64_t p, int64_t o0, int64_t o1) {
    const T* xp = x + p * in_plane;
    T* yp = y + p * out_plane + (o0 * g.out[1] + o1) * out2;
    int64_t a0 = lo0[o0], b0 = hi0[o0], a1 = lo1[o1], b1 = hi1[o1];
    for (int64_t o2 = 0; o2 < out2; ++o2) {
      int64_t a2 = lo2[o2], b2 = hi2[o2];
      A sum = 0;
      for (int64_t i0 = a0; i0 < b0; ++i0)
        for (int64_t i1 = a1; i1 < b1; ++i1) {
          const T* row = xp + (i0 * in1 + i1) * in2;
          for (int64_t i2 = a2; i2 < b2; ++i2) sum += A(row[i2]);
        }
      // PyTorch divides by each window extent in turn.
      A v = sum / A(b0 - a0) / A(b1 - a1) / A(b2 - a2);
      yp[o2] = convert_scalar<T>(v);
    }
  });
}

template <class T>
void global_avg_impl(int64_t planes, int64_t n, const T* x, T* y) {
  auto body = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T* xp = x + p * n;
      if (std::is_same_v<T, float> && n > 256) {
        y[p] = convert_scalar<T>(double(vec::sum_f32(reinterpret_cast<const float*>(xp), n)) / double(n));
      } else if (std::is_same_v<T, double> && n > 256) {
        y[p] = convert_scalar<T>(vec::sum_f64(reinterpret_cast<const double*>(xp), n) / double(n));
      } else {
        using A = compute_t<T>;
        A acc[8] = {};
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
          for (int l = 0; l < 8; ++l) acc[l] += A(xp[i + l]);
        A s = 0;
        for (; i < n; ++i) s += A(xp[i]);
        for (int l = 0; l < 8; ++l) s += acc[l];
        y[p] = convert_scalar<T>(s / A(n));
      }
    }
  };
  if (planes * n <= 2 * kGrainWork || planes == 1) body(0, planes);
  else parallel_for(0, planes, std::max<int64_t>(1, kGrainWork / n), body);
}

std::vector<PrimitivePtr> adaptive_avg_pool_kernel(CpuBackend&, Op& op) {
  const Shape& os = op.attr<ShapeAttrs>().shape;
  int nd = os.rank();
  Geom3 g = geom3(op.in(0).shape, op.outputs[0].shape, nd, op.name());
  auto x = contiguous(op.inputs[0]);
  auto y = alloc(op.outputs[0]);
  if (y->numel() == 0) return {y};
  EMBER_CHECK(x->numel() > 0, op.name(), ": input ", x->shape(), " has an empty spatial dim");
  if (g.out[0] == 1 && g.out[1] == 1 && g.out[2] == 1) {  // global average: one sum per plane
    visit_float_dtype(x->dtype(), op.name(), [&]<class T>() {
      global_avg_impl<T>(g.planes, g.in[0] * g.in[1] * g.in[2], x->data<T>(), y->data<T>());
    });
    return {y};
  }
  if (g.in[0] % g.out[0] == 0 && g.in[1] % g.out[1] == 0 && g.in[2] % g.out[2] == 0) {
    // Uniform windows: an average pool with kernel = stride = in / out.
    PoolPlan pl;
    pl.g = g;
    for (int i = 0; i < 3; ++i) pl.dims[i] = {g.in[i], g.out[i], g.in[i] / g.out[i], g.in[i] / g.out[i], 0, 1};
    plan_windows(pl);
    PoolCtx c = pool_ctx(pl, *x, *y, nullptr, true);
    visit_float_dtype(x->dtype(), op.name(), [&]<class T>() { run_rows(c, avg_rows_fn<T>()); });
    return {y};
  }
  std::vector<int64_t> lo(size_t(g.out[0] + g.out[1] + g.out[2])), hi(lo.size());
  size_t k = 0;
  for (int i = 0; i < 3; ++i)
    for (int64_t o = 0; o < g.out[i]; ++o, ++k) {
      lo[k] = (o * g.in[i]) / g.out[i];
      hi[k] = ((o + 1) * g.in[i] + g.out[i] - 1) / g.out[i];
    }
  visit_float_dtype(x->dtype(), op.name(), [&]<class T>() {
    adaptive_avg_impl<T>(g, lo.data(), hi.data(), x->data<T>(), y->data<T>());
  });
  return {y};
}

// ---------------------------------------------------------------------------------------
// interpolate

// PyTorch's legacy 'nearest': src = min(floor(dst * (float)in / out), in - 1), in float.
int64_t nearest_src(int64_t dst, int64_t in, int64_t out) {
  if (in == out) return dst;
  if (out == 2 * in) return dst >> 1;
  float scale = float(in) / float(out);
  return std::min(int64_t(std::floor(float(dst) * scale)), in - 1);
}

template <class T>
void nearest_impl(const Geom3& g, const int64_t* src, const T* x, T* y) {
  int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  int64_t in1 = g.in[1], in2 = g.in[2], out2 = g.out[2];
  const int64_t *s0 = src, *s1 = src + g.out[0], *s2 = s1 + g.out[1];
  for_each_row(g.planes, g.out[0], g.out[1], out2, [&](int64_t p, int64_t o0, int64_t o1) {
    const T* row = x + p * in_plane + (s0[o0] * in1 + s1[o1]) * in2;
    T* yp = y + p * out_plane + (o0 * g.out[1] + o1) * out2;
    for (int64_t o2 = 0; o2 < out2; ++o2) yp[o2] = row[s2[o2]];
  });
}

// Separable taps of one output index along one dim: K source indices and weights.
template <class A>
struct TapTable {
  int K = 1;
  std::vector<int64_t> idx;  // out * K
  std::vector<A> w;          // out * K
};

// area_pixel_compute_scale / area_pixel_compute_source_index of PyTorch.
template <class A>
A interp_scale(int64_t in, int64_t out, bool align_corners) {
  if (align_corners) return out > 1 ? A(in - 1) / A(out - 1) : A(0);
  return A(in) / A(out);
}
template <class A>
A interp_source(A scale, int64_t dst, bool align_corners, bool cubic) {
  if (align_corners) return scale * A(dst);
  A src = scale * (A(dst) + A(0.5)) - A(0.5);
  return (!cubic && src < A(0)) ? A(0) : src;
}

template <class A>
TapTable<A> interp_taps(int64_t in, int64_t out, InterpMode mode, bool align_corners) {
  TapTable<A> t;
  if (in == 1 && out == 1) {  // identity (also the dummy dims of the 3-d lifting)
    t.idx = {0};
    t.w = {A(1)};
    return t;
  }
  A scale = interp_scale<A>(in, out, align_corners);
  if (mode == InterpMode::linear) {
    t.K = 2;
    t.idx.resize(size_t(out) * 2);
    t.w.resize(size_t(out) * 2);
    for (int64_t o = 0; o < out; ++o) {
      A real = interp_source<A>(scale, o, align_corners, false);
      int64_t i0 = std::min(int64_t(std::floor(real)), in - 1);
      A l1 = std::min(std::max(real - A(i0), A(0)), A(1));
      t.idx[2 * o] = i0;
      t.idx[2 * o + 1] = i0 + (i0 < in - 1 ? 1 : 0);
      t.w[2 * o] = A(1) - l1;
      t.w[2 * o + 1] = l1;
    }
  } else {  // cubic, A = -0.75, taps clamped at the border
    const A a = A(-0.75);
    auto cc1 = [a](A x) { return ((a + A(2)) * x - (a + A(3))) * x * x + A(1); };
    auto cc2 = [a](A x) { return ((a * x - A(5) * a) * x + A(8) * a) * x - A(4) * a; };
    t.K = 4;
    t.idx.resize(size_t(out) * 4);
    t.w.resize(size_t(out) * 4);
    for (int64_t o = 0; o < out; ++o) {
      A real = interp_source<A>(scale, o, align_corners, true);
      A fl = std::floor(real);
      int64_t i0 = int64_t(fl);
      A tt = real - fl;
      A* w = &t.w[4 * o];
      w[0] = cc2(tt + A(1));
      w[1] = cc1(tt);
      w[2] = cc1(A(1) - tt);
      w[3] = cc2(A(2) - tt);
      for (int j = 0; j < 4; ++j) t.idx[4 * o + j] = std::clamp<int64_t>(i0 - 1 + j, 0, in - 1);
    }
  }
  return t;
}

// Separable resampling of [planes, in1, in2] -> [planes, out1, out2] (nd <= 2):
//   out[o1, o2] = sum_a w1[a] * h(i1[a])[o2],   h(r)[o2] = sum_b w2[b] * x[r, i2[b]]
// in PyTorch's evaluation order. The horizontal pass h of an input row is computed once and
// cached (consecutive output rows mostly share their source rows), the vertical pass runs
// over contiguous rows.
template <class A>
struct ResampleCtx {
  const Geom3* g;
  const TapTable<A>* t1;
  const TapTable<A>* t2;
  const void* x;
  void* y;
};

template <int Isa, class T, int K2>
[[gnu::always_inline]] inline void resample_rows_body(const ResampleCtx<compute_t<T>>& c, int64_t r0, int64_t r1) {
  using A = compute_t<T>;
  const Geom3& g = *c.g;
  const int64_t in1 = g.in[1], in2 = g.in[2], out1 = g.out[1], out2 = g.out[2];
  const int K1 = c.t1->K;
  const T* x = static_cast<const T*>(c.x);
  T* y = static_cast<T*>(c.y);
  const int64_t* c2 = c.t2->idx.data();
  const A* w2 = c.t2->w.data();
  constexpr int kSlots = 6;  // > K1: the taps of the current row are never evicted
  std::vector<A> buf(size_t(kSlots * out2));
  int64_t key[kSlots], stamp[kSlots];
  for (int s = 0; s < kSlots; ++s) key[s] = stamp[s] = -1;
  int64_t clock = 0;
  if (K1 == 1 && in1 == 1 && out1 == 1) {  // 1 spatial dim: the horizontal pass is the output
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * in2;
      T* yr = y + r * out2;
      for (int64_t o2 = 0; o2 < out2; ++o2) {
        const int64_t* ci = c2 + o2 * K2;
        const A* wi = w2 + o2 * K2;
        A v = A(xr[ci[0]]) * wi[0];
        for (int b = 1; b < K2; ++b) v += A(xr[ci[b]]) * wi[b];
        yr[o2] = convert_scalar<T>(v);
      }
    }
    return;
  }
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t p = r / out1, o1 = r % out1;
    const int64_t* rows = &c.t1->idx[size_t(o1 * K1)];
    const A* wv = &c.t1->w[size_t(o1 * K1)];
    const A* src[4] = {nullptr, nullptr, nullptr, nullptr};
    for (int a = 0; a < K1; ++a) {
      const int64_t k = p * in1 + rows[a];
      int slot = -1, oldest = 0;
      for (int s = 0; s < kSlots; ++s) {
        if (key[s] == k) slot = s;
        if (stamp[s] < stamp[oldest]) oldest = s;
      }
      if (slot < 0) {
        slot = oldest;
        key[slot] = k;
        const T* xr = x + k * in2;
        A* h = buf.data() + slot * out2;
        for (int64_t o2 = 0; o2 < out2; ++o2) {
          const int64_t* ci = c2 + o2 * K2;
          const A* wi = w2 + o2 * K2;
          A v = A(xr[ci[0]]) * wi[0];
          for (int b = 1; b < K2; ++b) v += A(xr[ci[b]]) * wi[b];
          h[o2] = v;
        }
      }
      stamp[slot] = ++clock;
      src[a] = buf.data() + slot * out2;
    }
    T* yr = y + r * out2;
    const A* s0 = src[0];
    const A v0 = wv[0];
    if (K1 == 1) {
      for (int64_t o2 = 0; o2 < out2; ++o2) yr[o2] = convert_scalar<T>(s0[o2] * v0);
    } else if (K1 == 2) {
      const A* s1 = src[1];
      const A v1 = wv[1];
      for (int64_t o2 = 0; o2 < out2; ++o2) yr[o2] = convert_scalar<T>(s0[o2] * v0 + s1[o2] * v1);
    } else {
      const A *s1 = src[1], *s2 = src[2], *s3 = src[3];
      const A v1 = wv[1], v2 = wv[2], v3 = wv[3];
      for (int64_t o2 = 0; o2 < out2; ++o2)
        yr[o2] = convert_scalar<T>(s0[o2] * v0 + s1[o2] * v1 + s2[o2] * v2 + s3[o2] * v3);
    }
  }
}

template <class T, int K2>
using ResampleFn = void (*)(const ResampleCtx<compute_t<T>>&, int64_t, int64_t);

#if defined(__x86_64__) || defined(__i386__)
template <class T, int K2>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void resample_rows_avx512(
    const ResampleCtx<compute_t<T>>& c, int64_t a, int64_t b) {
  resample_rows_body<2, T, K2>(c, a, b);
}
template <class T, int K2>
__attribute__((target("avx2,fma"))) void resample_rows_avx2(const ResampleCtx<compute_t<T>>& c, int64_t a,
                                                             int64_t b) {
  resample_rows_body<1, T, K2>(c, a, b);
}
#endif
template <class T, int K2>
void resample_rows_base(const ResampleCtx<compute_t<T>>& c, int64_t a, int64_t b) {
  resample_rows_body<0, T, K2>(c, a, b);
}

template <class T, int K2>
void resample_impl(const Geom3& g, const TapTable<compute_t<T>>& t1, const TapTable<compute_t<T>>& t2, const T* x,
                   T* y) {
  ResampleCtx<compute_t<T>> c{&g, &t1, &t2, x, y};
  ResampleFn<T, K2> fn = resample_rows_base<T, K2>;
#if defined(__x86_64__) || defined(__i386__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (features().avx512) fn = resample_rows_avx512<T, K2>;
    else if (features().avx2) fn = resample_rows_avx2<T, K2>;
  }
#endif
  const int64_t rows = g.planes * g.out[1];
  const int64_t work_per_row = g.out[2] * (t1.K + K2);
  if (rows * work_per_row <= 2 * kGrainWork) {
    fn(c, 0, rows);
    return;
  }
  parallel_for(0, rows, std::max<int64_t>(8, kGrainWork / work_per_row), [&](int64_t a, int64_t b) { fn(c, a, b); });
}

std::vector<PrimitivePtr> interpolate_kernel(CpuBackend&, Op& op) {
  const auto& a = op.attr<InterpolateAttrs>();
  int nd = int(a.size.size());
  Geom3 g = geom3(op.in(0).shape, op.outputs[0].shape, nd, op.name());
  auto x = contiguous(op.inputs[0]);
  auto y = alloc(op.outputs[0]);
  if (y->numel() == 0) return {y};
  EMBER_CHECK(x->numel() > 0, op.name(), ": input ", x->shape(), " is empty but the output ", y->shape(),
              " is not");
  if (a.mode == InterpMode::nearest) {
    std::vector<int64_t> src(size_t(g.out[0] + g.out[1] + g.out[2]));
    size_t k = 0;
    for (int i = 0; i < 3; ++i)
      for (int64_t o = 0; o < g.out[i]; ++o) src[k++] = nearest_src(o, g.in[i], g.out[i]);
    // Pure gather: dispatch on the element size only.
    switch (dtype_size(x->dtype())) {
      case 8: nearest_impl<uint64_t>(g, src.data(), x->data<uint64_t>(), y->data<uint64_t>()); break;
      case 4: nearest_impl<uint32_t>(g, src.data(), x->data<uint32_t>(), y->data<uint32_t>()); break;
      case 2: nearest_impl<uint16_t>(g, src.data(), x->data<uint16_t>(), y->data<uint16_t>()); break;
      default: nearest_impl<uint8_t>(g, src.data(), x->data<uint8_t>(), y->data<uint8_t>()); break;
    }
    return {y};
  }
  EMBER_CHECK(nd <= 2, op.name(), ": linear/cubic modes support 1 or 2 spatial dims, got ", nd);
  visit_float_dtype(x->dtype(), op.name(), [&]<class T>() {
    using A = compute_t<T>;
    auto t1 = interp_taps<A>(g.in[1], g.out[1], a.mode, a.align_corners);
    auto t2 = interp_taps<A>(g.in[2], g.out[2], a.mode, a.align_corners);
    switch (t2.K) {
      case 1: resample_impl<T, 1>(g, t1, t2, x->data<T>(), y->data<T>()); break;
      case 2: resample_impl<T, 2>(g, t1, t2, x->data<T>(), y->data<T>()); break;
      default: resample_impl<T, 4>(g, t1, t2, x->data<T>(), y->data<T>()); break;
    }
  });
  return {y};
}

}  // namespace

void register_pool_kernels(KernelTable& t) {
  t[size_t(OpKind::avg_pool)] = avg_pool_kernel;
  t[size_t(OpKind::max_pool)] = max_pool_kernel;
  t[size_t(OpKind::adaptive_avg_pool)] = adaptive_avg_pool_kernel;
  t[size_t(OpKind::interpolate)] = interpolate_kernel;
}

}  // namespace ember::cpu
