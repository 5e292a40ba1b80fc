// sort (stable; DimAttrs.flag = descending) and topk (DimAttrs.k; flag = largest; sorted).
// Every value is mapped to an unsigned key whose integer order is torch's order: NaN above
// +inf, -0.0 equal to 0.0. Descending / largest use the complemented key, and ties are broken
// by the original index, so a plain sort of (key, index) pairs is stable in both directions.
// With 32-bit keys (all dtypes but f64/i64) a pair is packed into one uint64.
#include <algorithm>
#include <bit>
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
    if constexpr (std::is_same_v<T, double>) {
      uint64_t b = v != v ? 0x7ff8000000000000ull : v == 0 ? 0ull : std::bit_cast<uint64_t>(v);
      return (b >> 63) ? ~b : b | (1ull << 63);
    } else if constexpr (is_floating_v<T>) {
      float f = static_cast<float>(v);
      uint32_t b = f != f ? 0x7fc00000u : f == 0 ? 0u : std::bit_cast<uint32_t>(f);
      return (b >> 31) ? ~b : b | 0x80000000u;
    } else if constexpr (std::is_same_v<T, int64_t>) {
      return uint64_t(v) ^ (1ull << 63);
    } else if constexpr (std::is_signed_v<T>) {
      return uint32_t(int32_t(v)) ^ 0x80000000u;
    } else {
      return uint32_t(v);
    }
  }
};

// Sorts (or selects the first k of) one row of every [outer, size, inner] position.
// `flip`: complement the keys (descending / largest first).
template <class T>
void sort_rows(const T* x, T* yv, int64_t* yi, const DimGeom& g, int64_t k, bool flip) {
  using K = typename KeyOf<T>::K;
  const int64_t D = g.size, I = g.inner, rows = g.outer * I;
  const bool partial = k < D;
  auto body = [&](int64_t rb, int64_t re) {
    if constexpr (!KeyOf<T>::kWide) {
      if (D <= int64_t(UINT32_MAX)) {
        std::vector<uint64_t> buf(static_cast<size_t>(D));
        for (int64_t r = rb; r < re; ++r) {
          const int64_t o = r / I, i = r % I;
          const T* xr = x + o * D * I + i;
          for (int64_t j = 0; j < D; ++j) {
            K key = KeyOf<T>::key(xr[j * I]);
            if (flip) key = ~key;
            buf[size_t(j)] = (uint64_t(key) << 32) | uint64_t(j);
          }
          if (partial) {
            std::nth_element(buf.begin(), buf.begin() + k, buf.end());
            std::sort(buf.begin(), buf.begin() + k);
          } else {
            std::sort(buf.begin(), buf.end());
          }
          T* vr = yv + o * k * I + i;
          int64_t* ir = yi + o * k * I + i;
          for (int64_t j = 0; j < k; ++j) {
            int64_t src = int64_t(buf[size_t(j)] & 0xffffffffu);
            vr[j * I] = xr[src * I];
            ir[j * I] = src;
          }
        }
        return;
      }
    }
    std::vector<std::pair<K, int64_t>> buf(static_cast<size_t>(D));
    for (int64_t r = rb; r < re; ++r) {
      const int64_t o = r / I, i = r % I;
      const T* xr = x + o * D * I + i;
      for (int64_t j = 0; j < D; ++j) {
        K key = KeyOf<T>::key(xr[j * I]);
        buf[size_t(j)] = {flip ? K(~key) : key, j};
      }
      if (partial) {
        std::nth_element(buf.begin(), buf.begin() + k, buf.end());
        std::sort(buf.begin(), buf.begin() + k);
      } else {
        std::sort(buf.begin(), buf.end());
      }
      T* vr = yv + o * k * I + i;
      int64_t* ir = yi + o * k * I + i;
      for (int64_t j = 0; j < k; ++j) {
        int64_t src = buf[size_t(j)].second;
        vr[j * I] = xr[src * I];
        ir[j * I] = src;
      }
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
  // k: number of outputs per row (a 0-d input has one)
  int64_t k = topk ? (in_shape.rank() == 0 ? std::min<int64_t>(a.k, 1) : a.k) : g.size;
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
