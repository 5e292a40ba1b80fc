// The packers of the int8 products' VNNI path. The B-panel packer (conv_integer.hpp): four im2col
// rows at a time interleaved by bytes into qgemm_kernel_vnni's layout (each column's 4 values
// along K side by side), the column sums by vpdpbusd against ones; the A packer (qlinear.hpp).
// Compiled with -mavx512vnni; reached only after cpu::features().avx512vnni.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "conv_integer.hpp"
#include "qgemm.hpp"
#include "qlinear.hpp"

namespace ember::cpu::detail {

namespace {

// Four rows of a B panel (32 columns each, already shifted to i8) interleaved by bytes into
// qgemm_kernel_vnni's layout at dst (128 bytes: each column's 4 values side by side), their
// column sums added to s0 (columns 0-15) and s1 (16-31) by vpdpbusd against ones.
inline void store_group(const __m256i (&r)[4], int8_t* dst, __m512i& s0, __m512i& s1) {
  const __m512i ones = _mm512_set1_epi8(1);
  // per 128-bit lane: bytes of rows 0/1 and 2/3 paired, then the pairs paired: quads of columns
  // [0-3 | 16-19], [4-7 | 20-23], [8-11 | 24-27], [12-15 | 28-31]
  const __m256i lo01 = _mm256_unpacklo_epi8(r[0], r[1]), hi01 = _mm256_unpackhi_epi8(r[0], r[1]);
  const __m256i lo23 = _mm256_unpacklo_epi8(r[2], r[3]), hi23 = _mm256_unpackhi_epi8(r[2], r[3]);
  const __m256i x0 = _mm256_unpacklo_epi16(lo01, lo23), x1 = _mm256_unpackhi_epi16(lo01, lo23);
  const __m256i x2 = _mm256_unpacklo_epi16(hi01, hi23), x3 = _mm256_unpackhi_epi16(hi01, hi23);
  const __m512i c0 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(x0, x1, 0x20)),
                                        _mm256_permute2x128_si256(x2, x3, 0x20), 1);  // columns 0-15
  const __m512i c1 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(x0, x1, 0x31)),
                                        _mm256_permute2x128_si256(x2, x3, 0x31), 1);  // columns 16-31
  _mm512_storeu_si512(dst, c0);
  _mm512_storeu_si512(dst + 64, c1);
  s0 = _mm512_dpbusd_epi32(s0, ones, c0);
  s1 = _mm512_dpbusd_epi32(s1, ones, c1);
}

// The bits [lo, hi) of a 64-bit mask (0 <= lo <= hi <= 64).
inline uint64_t bit_range(int64_t lo, int64_t hi) {
  const uint64_t below_hi = hi >= 64 ? ~uint64_t(0) : (uint64_t(1) << hi) - 1;
  return below_hi & ~((uint64_t(1) << lo) - 1);
}

}  // namespace

void conv_integer_pack_columns_vnni(const uint8_t* b, int64_t ldb, int64_t K, int64_t j0, int n, bool b_signed,
                                    int8_t* dst, int32_t* colsum) {
  static_assert(kVnniNR == 32);
  const __mmask32 mask = n >= 32 ? ~__mmask32(0) : (__mmask32(1) << n) - 1;
  const __m256i flip = _mm256_maskz_mov_epi8(mask, _mm256_set1_epi8(b_signed ? 0 : char(0x80)));
  __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
  const int64_t KG = (K + 3) / 4;
  for (int64_t g = 0; g < KG; ++g) {
    __m256i r[4];
    for (int t = 0; t < 4; ++t) {
      const int64_t k = g * 4 + t;
      r[t] = k < K ? _mm256_xor_si256(_mm256_maskz_loadu_epi8(mask, b + k * ldb + j0), flip) : _mm256_setzero_si256();
    }
    store_group(r, dst + g * 128, s0, s1);
  }
  _mm512_storeu_si512(colsum, s0);
  _mm512_storeu_si512(colsum + 16, s1);
}

// conv_integer.hpp's conv_int8_pack_implicit_vnni. The panel's columns split into runs that share
// an output row (a 56-wide output: at most 2; a 7-wide one: 5 or 6); per kernel tap and run, where
// the run's taps start in a channel's plane and which lanes fall inside x, so that a row of the
// panel is a zero point vector with one masked load per run merged in (width stride 2: 64 bytes
// loaded and their even bytes kept by vpmovwb).
void conv_int8_pack_implicit_vnni(const ImplicitConv& c, int64_t j0, int n, int8_t* dst, int32_t* colsum) {
  static_assert(kVnniNR == 32);
  const int64_t kvol = c.KH * c.KW, plane = c.H * c.W, K = c.C * kvol;
  // the runs: columns [at, at + cnt) of the panel are outputs (oh, ow .. ow + cnt - 1) of an image
  // whose x starts `base` bytes on
  int64_t run_oh[32], run_ow[32], run_at[32], run_cnt[32], run_base[32], runs = 0;
  const int64_t P = c.OH * c.OW;
  for (int64_t j = j0, at = 0; at < n; ++runs) {
    const int64_t img = j / P, oh = j % P / c.OW, ow = j % c.OW, cnt = std::min<int64_t>(c.OW - ow, n - at);
    run_oh[runs] = oh, run_ow[runs] = ow, run_at[runs] = at, run_cnt[runs] = cnt, run_base[runs] = img * c.image_bytes;
    at += cnt, j += cnt;
  }
  // per tap, its runs that touch x: the offset in a channel's plane of lane 0's tap (lane L reads
  // offset + L sw) and the lanes inside x (width stride 2: their bytes' places in 64)
  struct Load {
    int64_t offset;
    uint64_t lanes, evens;
  };
  thread_local std::vector<Load> table;
  thread_local std::vector<int32_t> counts;
  table.resize(size_t(kvol * runs));
  counts.assign(size_t(kvol), 0);
  Load* const loads = table.data();
  int32_t* const count = counts.data();
  for (int64_t t = 0; t < kvol; ++t) {
    const int64_t kh = t / c.KW, kw = t % c.KW;
    for (int64_t r = 0; r < runs; ++r) {
      const int64_t ih = run_oh[r] * c.sh - c.ph + kh * c.dh;
      if (ih < 0 || ih >= c.H) continue;
      const int64_t iw0 = run_ow[r] * c.sw - c.pw + kw * c.dw;  // the run's first tap
      // the run's lanes i with 0 <= iw0 + i sw < W
      const int64_t lo = std::min(run_cnt[r], iw0 >= 0 ? 0 : (-iw0 + c.sw - 1) / c.sw);
      const int64_t hi = std::clamp<int64_t>(c.W - iw0 <= 0 ? 0 : (c.W - iw0 + c.sw - 1) / c.sw, lo, run_cnt[r]);
      if (hi == lo) continue;
      loads[t * runs + count[t]++] = {run_base[r] + ih * c.W + iw0 - run_at[r] * c.sw, bit_range(run_at[r] + lo, run_at[r] + hi),
                                      bit_range(2 * (run_at[r] + lo), 2 * (run_at[r] + hi)) & 0x5555555555555555ull};
    }
  }
  const __mmask32 mask = n >= 32 ? ~__mmask32(0) : (__mmask32(1) << n) - 1;
  const __m256i flip = _mm256_maskz_mov_epi8(mask, _mm256_set1_epi8(c.x_signed ? 0 : char(0x80)));
  const __m256i zp = _mm256_maskz_mov_epi8(mask, _mm256_set1_epi8(char(c.zp)));
  __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
  const int64_t KG = (K + 3) / 4;
  int64_t t = 0;  // row g * 4 + i's tap, stepped
  const uint8_t* xc = c.x;  // and its channel's plane
  for (int64_t g = 0; g < KG; ++g) {
    __m256i r[4];
    for (int i = 0; i < 4; ++i) {
      if (g * 4 + i >= K) {
        r[i] = _mm256_setzero_si256();
        continue;
      }
      const Load* l = loads + t * runs;
      const Load* end = l + count[t];
      __m256i v = zp;
      if (c.sw == 1) {
        for (; l < end; ++l) v = _mm256_mask_loadu_epi8(v, __mmask32(l->lanes), xc + l->offset);
      } else {
        // lane L's byte at 2 L: the even bytes of 64 (the odd ones masked off), kept by vpmovwb
        for (; l < end; ++l)
          v = _mm256_mask_blend_epi8(__mmask32(l->lanes), v,
                                     _mm512_cvtepi16_epi8(_mm512_maskz_loadu_epi8(l->evens, xc + l->offset)));
      }
      r[i] = _mm256_xor_si256(v, flip);
      if (++t == kvol) t = 0, xc += plane;
    }
    store_group(r, dst + g * 128, s0, s1);
  }
  _mm512_storeu_si512(colsum, s0);
  _mm512_storeu_si512(colsum + 16, s1);
}

// conv_integer.hpp's depthwise3_vnni: quads[r][c] = the bytes P[r][c], P[r][c + 1], P[r][c + 2], 0
// of the padded plane P (read from x by masked loads that put zu where P is padding), so that one
// vpdpbusd (u8 quads x the row's 3 i8 weights) takes a kernel row's 3 taps of 16 outputs; x's zero
// point comes off once per output as zu * sum(w).
void depthwise3_vnni(const uint8_t* xc, int64_t H, int64_t W, int64_t ph, int64_t pw, bool x_signed, int64_t OH,
                     int64_t OW, int64_t KH, int64_t sh, int64_t dh, const int32_t* wv, int32_t zu, int32_t* acc) {
  const int64_t PH = (OH - 1) * sh + (KH - 1) * dh + 1;
  thread_local std::vector<uint32_t> quads;
  quads.resize(size_t(PH * OW + 16));
  const __m128i pad = _mm_set1_epi8(char(zu)), flip = _mm_set1_epi8(x_signed ? char(0x80) : 0);
  const __m512i pad_quad = _mm512_set1_epi32(zu | zu << 8 | zu << 16);
  for (int64_t r = 0; r < PH; ++r) {
    const int64_t ih = r - ph;
    uint32_t* dst = quads.data() + r * OW;
    for (int64_t c = 0; c < OW; c += 16) {
      const __mmask16 k = __mmask16((1u << std::min<int64_t>(16, OW - c)) - 1);
      if (ih < 0 || ih >= H) {
        _mm512_mask_storeu_epi32(dst + c, k, pad_quad);
        continue;
      }
      __m512i q = _mm512_setzero_si512();
      for (int t = 0; t < 3; ++t) {
        // plane column c + t + i is x column c + t + i - pw: inside x for i in [lo, hi)
        const int64_t first = c + t - pw, lo = std::clamp<int64_t>(-first, 0, 16), hi = std::clamp<int64_t>(W - first, 0, 16);
        const __mmask16 in = hi > lo ? __mmask16(((1u << hi) - 1) & ~((1u << lo) - 1)) : __mmask16(0);
        const __m128i b = _mm_mask_blend_epi8(in, pad, _mm_xor_si128(_mm_maskz_loadu_epi8(in, xc + ih * W + first), flip));
        q = _mm512_or_si512(q, _mm512_slli_epi32(_mm512_cvtepu8_epi32(b), 8 * t));
      }
      _mm512_mask_storeu_epi32(dst + c, k, q);
    }
  }
  int32_t wq[16], wsum = 0;
  for (int64_t kh = 0; kh < KH; ++kh) {
    const int32_t* w = wv + kh * 3;
    wq[kh] = int32_t(uint32_t(uint8_t(int8_t(w[0]))) | uint32_t(uint8_t(int8_t(w[1]))) << 8 |
                     uint32_t(uint8_t(int8_t(w[2]))) << 16);
    wsum += w[0] + w[1] + w[2];
  }
  const __m512i corr = _mm512_set1_epi32(-zu * wsum);
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ow += 16) {
      const __mmask16 k = __mmask16((1u << std::min<int64_t>(16, OW - ow)) - 1);
      __m512i a = corr;
      for (int64_t kh = 0; kh < KH; ++kh)
        a = _mm512_dpbusd_epi32(a, _mm512_maskz_loadu_epi32(k, quads.data() + (oh * sh + kh * dh) * OW + ow),
                                _mm512_set1_epi32(wq[kh]));
      _mm512_mask_storeu_epi32(acc + oh * OW + ow, k, a);
    }
}

}  // namespace ember::cpu::detail

namespace ember::cpu::detail {

// qlinear.hpp's pack_a_vnni: each row read 64 bytes at a time (shifted by +128 for i8), its 16
// groups of 4 scattered to their panel slots (kVnniMR * 4 bytes apart), its sum by vpdpbusd
// against ones.
void pack_a_vnni_avx512(const uint8_t* a, int64_t ld, int64_t rows, int64_t K, bool a_signed, uint8_t* dst,
                        uint32_t* rowsum) {
  constexpr int MR = kVnniMR;
  const int64_t KG = (K + 3) / 4, panel = KG * MR * 4;
  std::memset(dst, 0, size_t(vnni_a_bytes(rows, K)));
  const __m512i flip = _mm512_set1_epi8(a_signed ? char(0x80) : 0), ones = _mm512_set1_epi8(1);
  const __m512i slots = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32(MR * 4));
  for (int64_t i = 0; i < rows; ++i) {
    uint8_t* d = dst + (i / MR) * panel + (i % MR) * 4;
    __m512i sum = _mm512_setzero_si512();
    for (int64_t k = 0; k < K; k += 64) {
      const int64_t left = K - k;
      const __mmask64 bm = left >= 64 ? ~__mmask64(0) : (__mmask64(1) << left) - 1;
      const __m512i v = _mm512_xor_si512(_mm512_maskz_loadu_epi8(bm, a + i * ld + k), _mm512_maskz_mov_epi8(bm, flip));
      sum = _mm512_dpbusd_epi32(sum, v, ones);
      const int64_t groups = std::min<int64_t>(16, (left + 3) / 4);
      const __mmask16 gm = groups >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << groups) - 1);
      _mm512_mask_i32scatter_epi32(d + (k / 4) * MR * 4, gm, slots, v, 1);
    }
    rowsum[i] = uint32_t(_mm512_reduce_add_epi32(sum));
  }
}

}  // namespace ember::cpu::detail
