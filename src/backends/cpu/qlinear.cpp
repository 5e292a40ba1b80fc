// The shared pieces of the int8 products (qlinear.hpp): the portable epilogue and packer (the
// references of their AVX-512 forms in conv_integer_avx512vnni.cpp), and kept packings.
#include "qlinear.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "cpu_features.hpp"
#include "cpu_tensor.hpp"
#include "qgemm.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

void requant_tile(const Requant& e, const int32_t* t, int64_t ldt, int64_t i0, int64_t j0, int64_t m, int64_t n,
                  void* y, int64_t ldy) {
  if (m <= 0 || n <= 0) return;
  if (features().avx512) return detail::requant_tile_avx512(e, t, ldt, i0, j0, m, n, y, ldy);
  detail::requant_tile_portable(e, t, ldt, i0, j0, m, n, y, ldy);
}

void detail::requant_tile_portable(const Requant& e, const int32_t* t, int64_t ldt, int64_t i0, int64_t j0, int64_t m,
                                   int64_t n, void* y, int64_t ldy) {
  const float qlo = e.out == Requant::U8 ? 0.f : -128.f, qhi = e.out == Requant::U8 ? 255.f : 127.f;
  for (int64_t ii = 0; ii < m; ++ii) {
    const int64_t i = i0 + ii;
    const uint32_t ri = e.r ? uint32_t(e.r[i]) : 0u, pi = e.p ? uint32_t(e.p[i]) : 0u;
    for (int64_t jj = 0; jj < n; ++jj) {
      const int64_t j = j0 + jj, ch = e.per_row ? i : j;
      const uint32_t cj = e.c ? uint32_t(e.c[j]) : 0u, qj = e.q ? uint32_t(e.q[j]) : 0u;
      const int32_t v = int32_t(uint32_t(t[ii * ldt + jj]) + ri + cj - pi * qj);
      const int64_t at = ii * ldy + jj;
      switch (e.out) {
        case Requant::I32: static_cast<int32_t*>(y)[at] = v; break;
        case Requant::F32: {
          const float f = e.mult[ch] * float(v) + (e.bias ? e.bias[ch] : 0.f);
          static_cast<float*>(y)[at] = std::min(std::max(f, e.lo), e.hi);
          break;
        }
        default: {
          // clamped before the rounding (exact: the bounds are integers), then rounded half to even
          const float f = std::clamp(float(v) * e.mult[ch], qlo - float(e.zp), qhi - float(e.zp));
          const int32_t q = int32_t(std::nearbyint(f)) + e.zp;
          static_cast<uint8_t*>(y)[at] = uint8_t(q);
        }
      }
    }
  }
}

void depthwise_plane(const int16_t* plane, int64_t PW, int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh,
                     int64_t sw, int64_t dh, int64_t dw, const int32_t* wv, int32_t* acc) {
  if (sw <= 2 && features().avx512) return detail::depthwise_plane_avx512(plane, PW, OH, OW, KH, KW, sh, sw, dh, dw, wv, acc);
  for (int64_t oh = 0; oh < OH; ++oh) {
    int32_t* a = acc + oh * OW;
    std::fill(a, a + OW, 0);
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        const int16_t* src = plane + (oh * sh + kh * dh) * PW + kw * dw;
        const int32_t w = wv[kh * KW + kw];
        for (int64_t ow = 0; ow < OW; ++ow) a[ow] += w * int32_t(src[ow * sw]);
      }
  }
}

void for_rows_dynamic(int64_t N, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t tasks = (N + grain - 1) / grain;
  std::atomic<int64_t> next{0};
  parallel_for(0, std::min<int64_t>(tasks, ThreadPool::global().size()), 1, [&](int64_t, int64_t) {
    for (int64_t t; (t = next.fetch_add(1, std::memory_order_relaxed)) < tasks;)
      fn(t * grain, std::min(N, (t + 1) * grain));
  });
}

int64_t vnni_a_bytes(int64_t rows, int64_t K) {
  return (rows + detail::kVnniMR - 1) / detail::kVnniMR * detail::kVnniMR * ((K + 3) / 4) * 4;
}

void pack_a_vnni(const uint8_t* a, int64_t ld, int64_t rows, int64_t K, bool a_signed, uint8_t* dst, uint32_t* rowsum) {
  if (features().avx512vnni) return detail::pack_a_vnni_avx512(a, ld, rows, K, a_signed, dst, rowsum);
  constexpr int MR = detail::kVnniMR;
  const int64_t KG = (K + 3) / 4;
  std::memset(dst, 0, size_t(vnni_a_bytes(rows, K)));
  const uint8_t flip = a_signed ? 0x80 : 0;
  for (int64_t i = 0; i < rows; ++i) {
    uint8_t* d = dst + (i / MR) * KG * MR * 4 + (i % MR) * 4;
    uint32_t sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      const uint8_t v = a[i * ld + k] ^ flip;
      d[(k / 4) * MR * 4 + k % 4] = v;
      sum += v;
    }
    rowsum[i] = sum;
  }
}

const uint8_t* kept_int8_packing(Storage* storage, int64_t offset, std::initializer_list<int64_t> key, int64_t bytes,
                                 const std::function<void(uint8_t*)>& make, std::shared_ptr<const Storage>& hold) {
  if (!storage) return nullptr;
  uint64_t h = 0x51ed270b27a1c3d5ull ^ uint64_t(offset);
  for (int64_t k : key) h = (h ^ uint64_t(k)) * 0x100000001b3ull + (h >> 29);
  hold = storage->derived(h, size_t(bytes), [&](void* dst) { make(static_cast<uint8_t*>(dst)); });
  return hold ? static_cast<const uint8_t*>(hold->data) : nullptr;
}

}  // namespace ember::cpu
