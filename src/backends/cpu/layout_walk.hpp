// Small strided-iteration helpers shared by the layout and index kernels (layout.cpp,
// index.cpp): a collapsed N-operand layout on the stack, a row-major walker over a range of
// linear positions that calls a functor once per innermost run, an inline-when-small
// parallel_for, element-size dispatch, and a general strided copy.
//
//   Layout<2> L;
//   make_layout<2>(L, shape.dims().data(), 0, shape.rank(), {dst_strides, src_strides});
//   par(L.numel(), 32768, [&](int64_t b, int64_t e) {
//     walk(L, b, e, {0, 0}, [&](const int64_t* off, int64_t n) { ... });   // off: element offsets
//   });
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu_tensor.hpp"
#include "ember/core/error.hpp"
#include "thread_pool.hpp"

namespace ember::cpu::walk_detail {

inline constexpr int kMaxRank = 64;
inline constexpr int64_t kGrain = 32768;

// Dims of an iteration space with K operands' strides (in elements).
template <size_t K>
struct Layout {
  int rank = 0;
  int64_t size[kMaxRank];
  int64_t st[K][kMaxRank];
  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= size[d];
    return n;
  }
  int64_t inner(size_t i) const { return rank ? st[i][rank - 1] : 0; }
};

// Dims [d0, d1) of `shape`; size-1 dims dropped, neighbours merged where every operand allows
// (row-major order of the positions is preserved).
template <size_t K>
void make_layout(Layout<K>& L, const int64_t* shape, int d0, int d1, const std::array<const int64_t*, K>& strides) {
  L.rank = 0;
  EMBER_CHECK(d1 - d0 <= kMaxRank, "cpu: tensors of rank > ", kMaxRank, " are not supported");
  for (int d = d0; d < d1; ++d) {
    int64_t n = shape[d];
    if (n == 1) continue;
    if (L.rank > 0 && n != 0 && L.size[L.rank - 1] != 0) {
      bool merge = true;
      for (size_t i = 0; i < K; ++i)
        if (L.st[i][L.rank - 1] != strides[i][d] * n) merge = false;
      if (merge) {
        L.size[L.rank - 1] *= n;
        for (size_t i = 0; i < K; ++i) L.st[i][L.rank - 1] = strides[i][d];
        continue;
      }
    }
    L.size[L.rank] = n;
    for (size_t i = 0; i < K; ++i) L.st[i][L.rank] = strides[i][d];
    ++L.rank;
  }
}

// Offsets of every operand at linear position `pos`.
template <size_t K>
std::array<int64_t, K> offsets_at(const Layout<K>& L, int64_t pos, std::array<int64_t, K> base = {}) {
  for (int d = L.rank - 1; d >= 0 && pos; --d) {
    int64_t i = pos % L.size[d];
    pos /= L.size[d];
    for (size_t k = 0; k < K; ++k) base[k] += i * L.st[k][d];
  }
  return base;
}

// Visits linear positions [b, e) in row-major order; calls run(off, n) for every piece of an
// innermost run: off[k] is operand k's element offset of the first element (base included),
// the run's strides are L.inner(k).
template <size_t K, class F>
void walk(const Layout<K>& L, int64_t b, int64_t e, const std::array<int64_t, K>& base, F&& run) {
  if (b >= e) return;
  if (L.rank == 0) {
    run(base.data(), int64_t(1));
    return;
  }
  const int r = L.rank;
  const int64_t inner = L.size[r - 1];
  int64_t idx[kMaxRank];
  std::array<int64_t, K> row = base;
  int64_t q = b / inner, j0 = b % inner;
  for (int d = r - 2; d >= 0; --d) {
    idx[d] = q % L.size[d];
    q /= L.size[d];
    for (size_t k = 0; k < K; ++k) row[k] += idx[d] * L.st[k][d];
  }
  int64_t pos = b;
  std::array<int64_t, K> off;
  while (true) {
    int64_t len = std::min(inner - j0, e - pos);
    for (size_t k = 0; k < K; ++k) off[k] = row[k] + j0 * L.st[k][r - 1];
    run(static_cast<const int64_t*>(off.data()), len);
    pos += len;
    if (pos >= e) return;
    j0 = 0;
    for (int d = r - 2; d >= 0; --d) {
      for (size_t k = 0; k < K; ++k) row[k] += L.st[k][d];
      if (++idx[d] < L.size[d]) break;
      for (size_t k = 0; k < K; ++k) row[k] -= L.size[d] * L.st[k][d];
      idx[d] = 0;
    }
  }
}

// parallel_for that calls f directly (no std::function, no dispatch) for small ranges.
template <class F>
void par(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (n <= grain || ThreadPool::in_parallel_region()) {
    f(int64_t(0), n);
    return;
  }
  parallel_for(0, n, grain, [&f](int64_t b, int64_t e) { f(b, e); });
}

// Calls f.template operator()<U>() with U the unsigned integer type of `es` bytes.
template <class F>
decltype(auto) visit_size(size_t es, F&& f) {
  switch (es) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
  }
  EMBER_FAIL("cpu: unsupported element size ", es);
}

template <class U>
inline void copy_run(U* dst, int64_t ds, const U* src, int64_t ss, int64_t n) {
  if (ds == 1 && ss == 1) {
    std::memcpy(dst, src, size_t(n) * sizeof(U));
  } else if (ds == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i * ss];
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i * ds] = src[i * ss];
  }
}

inline constexpr int64_t kTile = 64;

// d[i * dsb + j] = s[i + j * ssl] for i in [i0, i1), j in [0, nl): kTile x kTile tiles walked
// in 8 x 8 blocks (8 source and 8 destination lines in flight; power-of-two strides would
// otherwise thrash the cache sets).
template <class U>
void transpose_tile(U* d, int64_t dsb, const U* s, int64_t ssl, int64_t i0, int64_t i1, int64_t nl) {
  constexpr int B = 8;
  for (int64_t j0 = 0; j0 < nl; j0 += kTile) {
    const int64_t j1 = std::min(nl, j0 + kTile);
    for (int64_t ib = i0; ib < i1; ib += B) {
      for (int64_t jb = j0; jb < j1; jb += B) {
        if (ib + B <= i1 && jb + B <= j1) {
          U t[B][B];
          for (int a = 0; a < B; ++a)
            for (int c = 0; c < B; ++c) t[a][c] = s[ib + c + (jb + a) * ssl];
          for (int c = 0; c < B; ++c)
            for (int a = 0; a < B; ++a) d[(ib + c) * dsb + jb + a] = t[a][c];
        } else {
          const int64_t ie = std::min(i1, ib + B), je = std::min(j1, jb + B);
          for (int64_t i = ib; i < ie; ++i)
            for (int64_t j = jb; j < je; ++j) d[i * dsb + j] = s[i + j * ssl];
        }
      }
    }
  }
}

// dst[i] = src[i] over `sizes` (rank dims), strides in elements, element size es. Parallel
// for large copies; transposed 2-d patterns are copied in tiles.
inline void copy_view(void* dst, const int64_t* dst_st, const void* src, const int64_t* src_st,
                      const int64_t* sizes, int rank, size_t es) {
  Layout<2> L;
  make_layout<2>(L, sizes, 0, rank, {dst_st, src_st});
  int64_t n = L.numel();
  if (n == 0) return;
  visit_size(es, [&]<class U>() {
    U* d = static_cast<U*>(dst);
    const U* s = static_cast<const U*>(src);
    const int r = L.rank;
    // Tiled path: dst inner stride 1, src inner stride not 1, some other dim has src stride 1.
    if (r >= 2 && n >= 4096 && L.st[0][r - 1] == 1 && L.st[1][r - 1] != 1) {
      int b = -1;  // the dim read contiguously
      for (int q = r - 2; q >= 0; --q)
        if (L.st[1][q] == 1 && L.size[q] >= 8) {
          b = q;
          break;
        }
      if (b >= 0 && L.size[r - 1] >= 8) {
        Layout<2> O;  // the remaining dims
        O.rank = 0;
        for (int q = 0; q < r - 1; ++q) {
          if (q == b) continue;
          O.size[O.rank] = L.size[q];
          O.st[0][O.rank] = L.st[0][q];
          O.st[1][O.rank] = L.st[1][q];
          ++O.rank;
        }
        const int64_t nb = L.size[b], nl = L.size[r - 1];
        const int64_t dsb = L.st[0][b], ssl = L.st[1][r - 1];
        const int64_t tiles = (nb + kTile - 1) / kTile;
        par(O.numel() * tiles, std::max<int64_t>(1, kGrain / (kTile * nl)), [&](int64_t u0, int64_t u1) {
          for (int64_t u = u0; u < u1; ++u) {
            auto off = offsets_at(O, u / tiles);
            int64_t i0 = (u % tiles) * kTile;
            transpose_tile(d + off[0], dsb, s + off[1], ssl, i0, std::min(nb, i0 + kTile), nl);
          }
        });
        return;
      }
    }
    const int64_t ds = L.inner(0), ss = L.inner(1);
    par(n, kGrain, [&](int64_t b, int64_t e) {
      walk(L, b, e, {0, 0}, [&](const int64_t* off, int64_t len) { copy_run(d + off[0], ds, s + off[1], ss, len); });
    });
  });
}

inline void copy_tensor(CpuTensor& dst, const CpuTensor& src) {
  copy_view(dst.raw(), dst.strides.data(), src.raw(), src.strides.data(), src.shape().dims().data(),
            src.shape().rank(), dtype_size(src.dtype()));
}

}  // namespace ember::cpu::walk_detail
