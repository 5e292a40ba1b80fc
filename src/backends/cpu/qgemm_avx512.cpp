// AVX-512 GEMV rows of matmul_wq (qgemm.hpp): every weight read once, widened to f32 and FMA'd
// with up to 4 rows of x; a block's sums are scaled once. Compiled with -mavx512f/bw/dq/vl;
// reached only after cpu::features().avx512.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

#include "qgemm.hpp"

namespace ember::cpu::detail {
namespace {

// How far ahead of its reads a weight row is prefetched: the hardware prefetcher alone leaves
// a core that also converts and multiplies with too few misses in flight.
constexpr int64_t kPrefetchBytes = 4096;

// M rows of x times R rows of W at once (templates, so the accumulators stay in registers):
// every accumulator is its own FMA chain, 2 M R of them, enough to hide the FMA latency.
template <int M, int R>
void gemv_tile(const QuantWeight& w, const float* xp, const float* xsum, int64_t n, float* y, int64_t ldy) {
  const int64_t K = w.K, nb = K / w.block;
  const bool sym4 = w.bits == 4 && !w.zp;
  const __m512i low = _mm512_set1_epi32(0xF);
  const __m128i flip = _mm_set1_epi8(sym4 ? char(0x88) : 0);  // two's complement nibble q -> q + 8
  __m512 acc[R][M];
  float corr[R][M];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < M; ++j) acc[r][j] = _mm512_setzero_ps(), corr[r][j] = 0;
  for (int64_t b = 0; b < nb; ++b) {
    __m512 lo_sum[R][M], hi_sum[R][M];  // per block: the low and the high nibbles' (or bytes') sums
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < M; ++j) lo_sum[r][j] = hi_sum[r][j] = _mm512_setzero_ps();
    const int64_t k0 = b * w.block;
    if (w.bits == 4) {
      for (int64_t k = k0; k < k0 + w.block; k += 32) {
        // 16 bytes a row: weights k + 2i (low nibbles) and k + 2i + 1 (high); x reordered per 32
        __m512 xe[M], xo[M];
        for (int j = 0; j < M; ++j) xe[j] = _mm512_loadu_ps(xp + j * K + k), xo[j] = _mm512_loadu_ps(xp + j * K + k + 16);
        for (int r = 0; r < R; ++r) {
          const uint8_t* row = w.data + (n + r) * (K / 2);
          if ((k & 127) == 0) _mm_prefetch(reinterpret_cast<const char*>(row + k / 2 + kPrefetchBytes), _MM_HINT_T0);
          const __m128i bytes = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + k / 2)), flip);
          const __m512i v = _mm512_cvtepu8_epi32(bytes);
          const __m512 lo = _mm512_cvtepi32_ps(_mm512_and_si512(v, low));
          const __m512 hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4));
          for (int j = 0; j < M; ++j) {
            lo_sum[r][j] = _mm512_fmadd_ps(lo, xe[j], lo_sum[r][j]);
            hi_sum[r][j] = _mm512_fmadd_ps(hi, xo[j], hi_sum[r][j]);
          }
        }
      }
    } else {
      for (int64_t k = k0; k < k0 + w.block; k += 32) {
        __m512 xa[M], xb[M];
        for (int j = 0; j < M; ++j) xa[j] = _mm512_loadu_ps(xp + j * K + k), xb[j] = _mm512_loadu_ps(xp + j * K + k + 16);
        for (int r = 0; r < R; ++r) {
          const uint8_t* row = w.data + (n + r) * K + k;
          if ((k & 63) == 0) _mm_prefetch(reinterpret_cast<const char*>(row + kPrefetchBytes), _MM_HINT_T0);
          const __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row));
          const __m128i b1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16));
          const __m512 q0 = _mm512_cvtepi32_ps(w.zp ? _mm512_cvtepu8_epi32(b0) : _mm512_cvtepi8_epi32(b0));
          const __m512 q1 = _mm512_cvtepi32_ps(w.zp ? _mm512_cvtepu8_epi32(b1) : _mm512_cvtepi8_epi32(b1));
          for (int j = 0; j < M; ++j) {
            lo_sum[r][j] = _mm512_fmadd_ps(q0, xa[j], lo_sum[r][j]);
            hi_sum[r][j] = _mm512_fmadd_ps(q1, xb[j], hi_sum[r][j]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const float s = w.scales[(n + r) * nb + b];
      const float z = w.zp ? float(w.zp[(n + r) * nb + b]) : sym4 ? 8.f : 0.f;
      const __m512 sv = _mm512_set1_ps(s);
      for (int j = 0; j < M; ++j) {
        acc[r][j] = _mm512_fmadd_ps(sv, _mm512_add_ps(lo_sum[r][j], hi_sum[r][j]), acc[r][j]);
        corr[r][j] += s * z * xsum[j * nb + b];
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < M; ++j) y[j * ldy + n + r] = _mm512_reduce_add_ps(acc[r][j]) - corr[r][j];
}

template <int M>
void gemv_rows(const QuantWeight& w, const float* xp, const float* xsum, int64_t n0, int64_t n1, float* y,
               int64_t ldy) {
  int64_t n = n0;
  for (; n + 2 <= n1; n += 2) gemv_tile<M, 2>(w, xp, xsum, n, y, ldy);
  if (n < n1) gemv_tile<M, 1>(w, xp, xsum, n, y, ldy);
}

}  // namespace

void wq_gemv_avx512(const QuantWeight& w, int m, const float* xp, const float* xsum, int64_t n0, int64_t n1, float* y,
                    int64_t ldy) {
  gemv_dispatch(w, m, [&](auto M, auto, auto) { gemv_rows<decltype(M)::value>(w, xp, xsum, n0, n1, y, ldy); });
}

}  // namespace ember::cpu::detail
