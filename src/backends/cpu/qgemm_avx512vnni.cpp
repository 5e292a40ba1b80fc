// AVX-512 VNNI kernels (qgemm.hpp): the micro-kernels of qgemm_u8i8 (8 x 32) and of the int8 conv
// (12 x 32) tiles of i32 sums, one vpdpbusd (64 u8 x i8 products summed by fours into 16 lanes) per
// row and 16 columns per group of 4 along K; and the GEMV rows of matmul_wq with x rounded to int8 (quantize_x), where
// one vpdpbusd multiplies 64 weights (as unsigned bytes or nibbles) with 64 values of x.
// Compiled with -mavx512vnni; reached only after cpu::features().avx512vnni.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "qgemm.hpp"

namespace ember::cpu::detail {

namespace {

// acc + a (u8) . b (i8) by fours. GCC 12 gives _mm512_dpbusd_epi32's accumulator only zmm0-15, so
// a tile of more than ~12 accumulators was copied (and spilled) around every vpdpbusd; the asm
// lets it keep them in any of the 32 registers.
inline __m512i dpbusd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

// Where a tile's sums go: c (i32, rows ldc apart, added to its values with `accumulate`), as
// qgemm_kernel_vnni stores them.
struct StoreSums {
  int32_t* c;
  int64_t ldc;
  bool accumulate;
  __mmask16 m0, m1;  // the columns 0-15 and 16-31 stored
  void operator()(int r, __m512i v0, __m512i v1) const {
    int32_t* cr = c + r * ldc;
    if (accumulate) {
      v0 = _mm512_add_epi32(v0, _mm512_maskz_loadu_epi32(m0, cr));
      v1 = _mm512_add_epi32(v1, _mm512_maskz_loadu_epi32(m1, cr + 16));
    }
    _mm512_mask_storeu_epi32(cr, m0, v0);
    _mm512_mask_storeu_epi32(cr + 16, m1, v1);
  }
};

// The bytes of a tile through VnniTileRequant (qgemm.hpp): the arithmetic of qlinear.hpp's
// requant_tile for a per-row u8 / i8 output, on the accumulators.
struct RequantBytes {
  VnniTileRequant e;
  __m512i q0, q1, zp;
  __m512 lo, hi;
  __mmask16 m0, m1;
  RequantBytes(const VnniTileRequant& rq, __mmask16 k0, __mmask16 k1) : e(rq), m0(k0), m1(k1) {
    q0 = _mm512_maskz_loadu_epi32(m0, e.q);
    q1 = _mm512_maskz_loadu_epi32(m1, e.q + 16);
    zp = _mm512_set1_epi32(e.zp);
    const float qlo = e.i8 ? -128.f : 0.f, qhi = e.i8 ? 127.f : 255.f;
    lo = _mm512_set1_ps(qlo - float(e.zp));
    hi = _mm512_set1_ps(qhi - float(e.zp));
  }
  void operator()(int r, __m512i v0, __m512i v1) const {
    const __m512i ri = _mm512_set1_epi32(e.r[r]), pi = _mm512_set1_epi32(e.p ? e.p[r] : 0);
    const __m512 mult = _mm512_set1_ps(e.mult[r]);
    uint8_t* yr = e.y + r * e.ldy;
    auto one = [&](__m512i v, __m512i q, __mmask16 k, uint8_t* at) {
      v = _mm512_sub_epi32(_mm512_add_epi32(v, ri), _mm512_mullo_epi32(pi, q));
      const __m512 s = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(v), mult), lo), hi);
      _mm512_mask_cvtepi32_storeu_epi8(at, k, _mm512_add_epi32(_mm512_cvtps_epi32(s), zp));
    };
    one(v0, q0, m0, yr);
    one(v1, q1, m1, yr + 16);
  }
};

inline __m256i dpbusd(__m256i acc, __m256i a, __m256i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

// the vector of W columns' accumulators (16 a zmm)
template <int W>
struct ColumnVector {
  using type = __m512i;
};
template <>
struct ColumnVector<8> {
  using type = __m256i;
};

// Rows packed rows of A starting Skip rows into the panel at `ap` (rows past the panel's 8 from
// the next panels, `panel` bytes apart) times W columns of a B panel (bp: the first one's group
// of 4 in the panel's first group): Rows x (W / 16) accumulators (W 8: one ymm each), each B vector
// feeding Rows vpdpbusd and each broadcast A quad W / 16; the first m rows' sums to `out` (as two
// vectors of 16 columns, those past W 0).
template <int Skip, int Rows, int W, class Out>
void qgemm_tile(int64_t groups, const uint8_t* ap, int64_t panel, const int8_t* bp, int m, const Out& out) {
  static_assert(kVnniNR == 32 && Rows <= kVnniWideMR && (W == 8 || W == 16 || W == 32));
  constexpr int H = W == 32 ? 2 : 1;
  using V = typename ColumnVector<W>::type;
  V acc[Rows][H];
  for (auto& r : acc)
    for (auto& h : r) h = V{};
  for (int64_t g = 0; g < groups; ++g) {
    V b[H];
    for (int h = 0; h < H; ++h) std::memcpy(&b[h], bp + g * 128 + h * 64, sizeof(V));
    const uint8_t* a = ap + g * 32;
    for (int r = 0; r < Rows; ++r) {
      constexpr int MR = kVnniMR;
      const int at = Skip + r;
      int32_t four;
      std::memcpy(&four, a + (at / MR) * panel + (at % MR) * 4, 4);
      V av;
      if constexpr (W == 8)
        av = _mm256_set1_epi32(four);
      else
        av = _mm512_set1_epi32(four);
      for (int h = 0; h < H; ++h) acc[r][h] = dpbusd(acc[r][h], av, b[h]);
    }
  }
  for (int r = 0; r < Rows && r < m; ++r) {
    if constexpr (W == 8)
      out(r, _mm512_zextsi256_si512(acc[r][0]), _mm512_setzero_si512());
    else
      out(r, acc[r][0], H == 2 ? acc[r][H - 1] : _mm512_setzero_si512());
  }
}

__mmask16 low_columns(int n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }
__mmask16 high_columns(int n) { return n >= 32 ? __mmask16(0xFFFF) : n > 16 ? __mmask16((1u << (n - 16)) - 1) : 0; }

// qgemm_kernel_vnni_wide's tile shapes: rows [i0, i0 + m) of the `rows` packed rows times columns
// [j0, j0 + n) of the panel (j0 0 or 16) through out(j0, n)'s functor: all 32 columns (more than
// 24 of them), else 16 (at most 16 from j0) or 8 (at most 8) at a time, half or a quarter of the
// work.
template <class MakeOut>
void wide_tile(int64_t groups, const uint8_t* ap, int64_t rows, int64_t i0, const int8_t* bp, int m, int n,
               const MakeOut& make_out) {
  constexpr int MR = kVnniMR;
  const int64_t panel = groups * MR * 4, padded = (rows + MR - 1) / MR * MR;
  const uint8_t* a = ap + (i0 / MR) * panel;
  // the rows read: 12, or the packed rows left (4 or 8: i0 is a multiple of 4, padded of 8)
  const int64_t avail = std::min<int64_t>(kVnniWideMR, padded - i0);
  auto run = [&](auto width, int j0, int cols) {
    constexpr int W = decltype(width)::value;
    const auto out = make_out(j0, cols);
    const int8_t* b = bp + j0 * 4;
    if (i0 % MR == 0) {
      if (avail >= 12) return qgemm_tile<0, 12, W>(groups, a, panel, b, m, out);
      return qgemm_tile<0, 8, W>(groups, a, panel, b, m, out);
    }
    if (avail >= 12) return qgemm_tile<4, 12, W>(groups, a, panel, b, m, out);
    if (avail >= 8) return qgemm_tile<4, 8, W>(groups, a, panel, b, m, out);
    return qgemm_tile<4, 4, W>(groups, a, panel, b, m, out);
  };
  using Full = std::integral_constant<int, 32>;
  using Half = std::integral_constant<int, 16>;
  using Quarter = std::integral_constant<int, 8>;
  if (n > 24) return run(Full{}, 0, n);
  if (n > 8) run(Half{}, 0, std::min(n, 16));
  else return run(Quarter{}, 0, n);
  if (n > 16) run(Quarter{}, 16, n - 16);
}

}  // namespace

void qgemm_kernel_vnni(int64_t groups, const uint8_t* ap, const int8_t* bp, int32_t* c, int64_t ldc, int m, int n,
                       bool accumulate) {
  qgemm_tile<0, kVnniMR, 32>(groups, ap, 0, bp, m, StoreSums{c, ldc, accumulate, low_columns(n), high_columns(n)});
}

void qgemm_kernel_vnni_wide(int64_t groups, const uint8_t* ap, int64_t rows, int64_t i0, const int8_t* bp, int32_t* c,
                            int64_t ldc, int m, int n) {
  wide_tile(groups, ap, rows, i0, bp, m, n, [&](int j0, int cols) {
    return StoreSums{c + j0, ldc, false, low_columns(cols), high_columns(cols)};
  });
}

void qgemm_kernel_vnni_wide_requant(int64_t groups, const uint8_t* ap, int64_t rows, int64_t i0, const int8_t* bp,
                                    int m, int n, const VnniTileRequant& e) {
  wide_tile(groups, ap, rows, i0, bp, m, n, [&](int j0, int cols) {
    VnniTileRequant window = e;
    window.q += j0;
    window.y += j0;
    return RequantBytes(window, low_columns(cols), high_columns(cols));
  });
}

namespace {

constexpr int64_t kPrefetchBytes = 4096;  // how far ahead of its reads the weights are prefetched

// M rows of x times R rows of W (R = 1, see vnni_rows). A chunk is 64 bytes of a row: 128 nibbles or 64 bytes. Each i32
// lane of vpdpbusd sums the weights u (nibble or byte, made unsigned: u = q + 8 / q + 128 for
// symmetric weights, the stored value with a zero point) times xq; the lane then takes off
// z * sum(xq) (z = 8 / 128, or the block's zero point) and is scaled by the weight's block scale
// times x's scale of that 32.
// (Four: 4-bit weights; Affine: with zero points. Compile-time, so that the loop has no branch
// and the accumulators stay in registers.)
template <int M, int R, bool Four, bool Affine>
void vnni_tile(const QuantWeight& w, const int8_t* xq, const int32_t* xsum, const float* sx, int64_t n, float* y,
               int64_t ldy) {
  const int64_t K = w.K, nb = K / w.block;
  constexpr bool four = Four;
  const int64_t chunk_w = four ? 128 : 64, chunks = (K + chunk_w - 1) / chunk_w;
  const int64_t row_bytes = four ? K / 2 : K;
  const int shift = __builtin_ctzll(uint64_t(w.block));
  const __m512i lane_first = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                                _mm512_set1_epi32(four ? 8 : 4));  // a lane's first weight
  const __m512i flip = _mm512_set1_epi8(char(Affine ? 0 : four ? 0x88 : 0x80));
  const __m512i low = _mm512_set1_epi8(0x0F);
  const int zshift = four ? 3 : 7;  // z = 8 or 128 without a zero point
  __m512 acc[R][M];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < M; ++j) acc[r][j] = _mm512_setzero_ps();
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t k0 = c * chunk_w;
    const int64_t left = four ? (K - k0) / 2 : K - k0, bytes = left < 64 ? left : 64;
    const __mmask64 bmask = bytes == 64 ? ~__mmask64(0) : (__mmask64(1) << bytes) - 1;
    const int64_t base = k0 / w.block;
    const int count = int(nb - base < 4 ? nb - base : 4);
    const __mmask16 smask = __mmask16((1u << count) - 1);
    // the lane's block, relative to base
    const __m512i idx = _mm512_srli_epi32(_mm512_add_epi32(lane_first, _mm512_set1_epi32(int(k0 % w.block))), shift);
    __m512i xa[M], xb[M], zs[M];
    __m512 xs[M];
    for (int j = 0; j < M; ++j) {
      const int8_t* xj = xq + (j * chunks + c) * (four ? 128 : 64);
      xa[j] = _mm512_loadu_si512(xj);
      xb[j] = four ? _mm512_loadu_si512(xj + 64) : xa[j];
      zs[j] = _mm512_loadu_si512(xsum + (j * chunks + c) * 16);
      xs[j] = _mm512_loadu_ps(sx + (j * chunks + c) * 16);
      if constexpr (!Affine) zs[j] = _mm512_slli_epi32(zs[j], zshift);
    }
    for (int r = 0; r < R; ++r) {
      const uint8_t* row = w.data + (n + r) * row_bytes + (four ? k0 / 2 : k0);
      _mm_prefetch(reinterpret_cast<const char*>(row + kPrefetchBytes), _MM_HINT_T0);
      __m512i v = _mm512_maskz_loadu_epi8(bmask, row);
      if constexpr (!Affine) v = _mm512_xor_si512(v, flip);
      const __m512 sw =
          _mm512_permutexvar_ps(idx, _mm512_maskz_loadu_ps(smask, w.scales + (n + r) * nb + base));
      __m512i zv = _mm512_setzero_si512();
      if constexpr (Affine)
        zv = _mm512_permutexvar_epi32(
            idx, _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(smask, w.zp + (n + r) * nb + base)));
      const __m512i lo = four ? _mm512_and_si512(v, low) : v;
      const __m512i hi = four ? _mm512_and_si512(_mm512_srli_epi16(v, 4), low) : v;
      for (int j = 0; j < M; ++j) {
        __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xa[j]);
        if constexpr (four) d = _mm512_dpbusd_epi32(d, hi, xb[j]);
        d = _mm512_sub_epi32(d, Affine ? _mm512_mullo_epi32(zv, zs[j]) : zs[j]);
        acc[r][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(sw, xs[j]), acc[r][j]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < M; ++j) y[j * ldy + n + r] = _mm512_reduce_add_ps(acc[r][j]);
}

template <int M, bool Four, bool Affine>
void vnni_rows(const QuantWeight& w, const int8_t* xq, const int32_t* xsum, const float* sx, int64_t n0, int64_t n1,
               float* y, int64_t ldy) {
  // one row of W at a time: one sequential stream through the weights (with the prefetch, 16 GB/s
  // on one core against 11 GB/s for two interleaved rows on the machine of docs/benchmarks.md)
  for (int64_t n = n0; n < n1; ++n) vnni_tile<M, 1, Four, Affine>(w, xq, xsum, sx, n, y, ldy);
}

}  // namespace

void wq_gemv_vnni(const QuantWeight& w, int m, const int8_t* xq, const int32_t* xsum, const float* sx, int64_t n0,
                  int64_t n1, float* y, int64_t ldy) {
  gemv_dispatch(w, m, [&](auto M, auto four, auto affine) {
    vnni_rows<decltype(M)::value, decltype(four)::value, decltype(affine)::value>(w, xq, xsum, sx, n0, n1, y, ldy);
  });
}

}  // namespace ember::cpu::detail
