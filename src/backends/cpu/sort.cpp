// sort (stable; DimAttrs.flag = descending) and topk (DimAttrs.k; flag = largest; sorted).
// Every value is mapped to an unsigned key whose integer order is torch's order: NaN above
// +inf, -0.0 equal to 0.0. Descending / largest use the complemented key, and ties are broken
// by the original index, so a plain sort of (key, index) pairs is stable in both directions.
// With 32-bit keys (all dtypes but f64/i64) a pair is packed into one uint64.
#include <algorithm>
#include "ember/core/bit.hpp"
#include <cstring>
#include <utility>
#include <vector>

#include "reduce_kernels.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

namespace {

template <class T>
struct KeyOf {
  static constexpr bool kWide = std::is_same_v<T, double> || std::is_same_v<T, int64_t>;
  using K = std::conditional_t<kWide, uint64_t, uint32_t>;
  static K key(T v) {
    // floats (branch-free, vectorisable): NaN -> the canonical positive NaN, -0.0 -> 0.0, then
    // negative values are complemented and positive ones get the sign bit set
    if constexpr (std::is_same_v<T, double>) {
      uint64_t b = ember::bit_cast<uint64_t>(v);
      b = v != v ? 0x7ff8000000000000ull : b;
      b = v == 0 ? 0ull : b;
      return b ^ (uint64_t(int64_t(b) >> 63) | (1ull << 63));
    } else if constexpr (is_floating_v<T>) {
      float f = static_cast<float>(v);
      uint32_t b = ember::bit_cast<uint32_t>(f);
      b = f != f ? 0x7fc00000u : b;
      b = f == 0 ? 0u : b;
      return b ^ (uint32_t(int32_t(b) >> 31) | 0x80000000u);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      return uint64_t(v) ^ (1ull << 63);
    } else if constexpr (std::is_signed_v<T>) {
      return uint32_t(int32_t(v)) ^ 0x80000000u;
    } else {
      return uint32_t(v);
    }
  }
};

// Stable LSD radix sort of packed (key << 32 | index) values by their upper 32 bits, in three
// 11/11/10-bit passes (a pass whose digit is the same for every value is skipped). The values
// start in index order, so equal keys stay in index order.
void radix_sort_hi32(uint64_t* a, uint64_t* tmp, int64_t n) {
  constexpr int kBits[3] = {11, 11, 10};
  int shift = 32;
  uint64_t* src = a;
  uint64_t* dst = tmp;
  for (int pass = 0; pass < 3; ++pass) {
    const int bits = kBits[pass];
    const uint64_t mask = (uint64_t(1) << bits) - 1;
    int64_t count[2048] = {};
    for (int64_t i = 0; i < n; ++i) ++count[(src[i] >> shift) & mask];
    bool trivial = false;
    for (int64_t b = 0; b <= int64_t(mask); ++b) {
      if (count[b] == n) trivial = true;
      if (count[b] != 0) break;
    }
    if (!trivial) {
      int64_t sum = 0;
      for (int64_t b = 0; b <= int64_t(mask); ++b) {
        int64_t c = count[b];
        count[b] = sum;
        sum += c;
      }
      for (int64_t i = 0; i < n; ++i) dst[count[(src[i] >> shift) & mask]++] = src[i];
      std::swap(src, dst);
    }
    shift += bits;
  }
  if (src != a) std::copy(src, src + n, a);
}

// The k smallest values of buf[0..n) into buf[0..k), sorted (values are unique: they include
// the index). Small k: one pass keeping a sorted list of the best k; else nth_element + sort.
template <class E>
void select_k(E* buf, int64_t n, int64_t k) {
  if (k <= 32) {
    E best[32];
    int64_t cnt = 0;
    for (int64_t j = 0; j < n; ++j) {
      if constexpr (std::is_same_v<E, uint64_t>) {
        if (cnt == k && use_avx512()) {  // skip the run that cannot enter the top k
          j += rsimd::count_ge_u64(buf + j, n - j, best[k - 1]);
          if (j >= n) break;
        }
      }
      E v = buf[j];
      if (cnt == k && !(v < best[k - 1])) continue;
      int64_t p = cnt < k ? cnt++ : k - 1;
      while (p > 0 && v < best[p - 1]) {
        best[p] = best[p - 1];
        --p;
      }
      best[p] = v;
    }
    std::copy(best, best + k, buf);
    return;
  }
  std::nth_element(buf, buf + k, buf + n);
  std::sort(buf, buf + k);
}

// out[j] = (key(x[j * I]) ^ flip) << 32 | j
template <class T>
void pack_keys(const T* x, int64_t n, int64_t I, uint32_t flip, uint64_t* out) {
  if constexpr (std::is_same_v<T, float>) {
    if (I == 1 && use_avx512()) return rsimd::pack_keys_f32(x, n, flip, out);
  }
  if (I == 1) {
    for (int64_t j = 0; j < n; ++j) out[j] = (uint64_t(KeyOf<T>::key(x[j]) ^ flip) << 32) | uint64_t(j);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = (uint64_t(KeyOf<T>::key(x[j * I]) ^ flip) << 32) | uint64_t(j);
  }
}

// Sorts (or selects the first k of) one row of every [outer, size, inner] position.
// `flip`: complement the keys (descending / largest first).
constexpr int64_t kLocalRow = 128;

template <class T>
void sort_rows(const T* x, T* yv, int64_t* yi, const DimGeom& g, int64_t k, bool flip) {
  using K = typename KeyOf<T>::K;
  const int64_t D = g.size, I = g.inner, rows = g.outer * I;
  const bool partial = k < D;
  auto emit = [&](int64_t o, int64_t i, const T* xr, auto index_of, const auto* buf) {
    T* vr = yv + o * k * I + i;
    int64_t* ir = yi + o * k * I + i;
    for (int64_t j = 0; j < k; ++j) {
      int64_t src = index_of(buf[j]);
      vr[j * I] = xr[src * I];
      ir[j * I] = src;
    }
  };
  auto body = [&](int64_t rb, int64_t re) {
    if constexpr (!KeyOf<T>::kWide) {
      if (D <= int64_t(UINT32_MAX)) {
        uint64_t local[kLocalRow];  // short rows: no heap allocation
        std::vector<uint64_t> heap, tmp;
        uint64_t* buf = local;
        if (D > kLocalRow) {
          heap.resize(size_t(D));
          buf = heap.data();
        }
        for (int64_t r = rb; r < re; ++r) {
          const int64_t o = r / I, i = r % I;
          const T* xr = x + o * D * I + i;
          const K fl = flip ? ~K(0) : K(0);
          pack_keys(xr, D, I, fl, buf);
          if (partial) {
            select_k(buf, D, k);
          } else if (D >= 256) {
            tmp.resize(size_t(D));
            radix_sort_hi32(buf, tmp.data(), D);
          } else {
            std::sort(buf, buf + D);
          }
          emit(o, i, xr, [](uint64_t v) { return int64_t(v & 0xffffffffu); }, buf);
        }
        return;
      }
    }
    using E = std::pair<K, int64_t>;
    E local[kLocalRow / 2];
    std::vector<E> heap;
    E* buf = local;
    if (D > kLocalRow / 2) {
      heap.resize(size_t(D));
      buf = heap.data();
    }
    for (int64_t r = rb; r < re; ++r) {
      const int64_t o = r / I, i = r % I;
      const T* xr = x + o * D * I + i;
      for (int64_t j = 0; j < D; ++j) {
        K key = KeyOf<T>::key(xr[j * I]);
        buf[j] = {flip ? K(~key) : key, j};
      }
      if (partial) select_k(buf, D, k);
      else std::sort(buf, buf + D);
      emit(o, i, xr, [](const E& v) { return v.second; }, buf);
    }
  };
  // sorting costs ~ D log D per row: count ~16 units of work per element
  if (rows * D * 16 <= kReduceGrain || rows == 1) body(0, rows);
  else parallel_for(0, rows, std::max<int64_t>(1, kReduceGrain / (16 * D)), body);
}

std::vector<PrimitivePtr> sort_common(Op& op, bool topk) {
  const auto& a = op.attr<DimAttrs>();
  auto vals = alloc(op.outputs[0]);
  auto idx = alloc(op.outputs[1]);
  const Shape& in_shape = op.in(0).shape;
  const DimGeom g = dim_geom(in_shape, a.dim);
  // k: number of outputs per row (a 0-d input always has its one element, like torch)
  int64_t k = topk && in_shape.rank() > 0 ? a.k : g.size;
  if (in_shape.numel() == 0 || k == 0 || op.outputs[0].shape.numel() == 0) return {vals, idx};
  auto xc = contiguous(op.inputs[0]);
  visit_dtype(xc->dtype(), [&]<class T>() {
    sort_rows<T>(xc->data<T>(), vals->data<T>(), idx->data<int64_t>(), g, k, a.flag);
  });
  return {vals, idx};
}

std::vector<PrimitivePtr> sort_kernel(CpuBackend&, Op& op) { return sort_common(op, false); }
std::vector<PrimitivePtr> topk_kernel(CpuBackend&, Op& op) { return sort_common(op, true); }

}  // namespace

void register_sort_kernels(KernelTable& t) {
  t[size_t(OpKind::sort)] = sort_kernel;
  t[size_t(OpKind::topk)] = topk_kernel;
}

}  // namespace ember::cpu
