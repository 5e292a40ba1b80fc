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

// Four rows of 32 bytes interleaved by bytes: c0 holds columns 0-15 and c1 columns 16-31, each
// column's 4 bytes side by side (qgemm_kernel_vnni's B layout; also NC4HW4 from 4 channel rows).
inline void interleave4(const __m256i (&r)[4], __m512i& c0, __m512i& c1) {
  // per 128-bit lane: bytes of rows 0/1 and 2/3 paired, then the pairs paired: quads of columns
  // [0-3 | 16-19], [4-7 | 20-23], [8-11 | 24-27], [12-15 | 28-31]
  const __m256i lo01 = _mm256_unpacklo_epi8(r[0], r[1]), hi01 = _mm256_unpackhi_epi8(r[0], r[1]);
  const __m256i lo23 = _mm256_unpacklo_epi8(r[2], r[3]), hi23 = _mm256_unpackhi_epi8(r[2], r[3]);
  const __m256i x0 = _mm256_unpacklo_epi16(lo01, lo23), x1 = _mm256_unpackhi_epi16(lo01, lo23);
  const __m256i x2 = _mm256_unpacklo_epi16(hi01, hi23), x3 = _mm256_unpackhi_epi16(hi01, hi23);
  c0 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(x0, x1, 0x20)),
                          _mm256_permute2x128_si256(x2, x3, 0x20), 1);
  c1 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(x0, x1, 0x31)),
                          _mm256_permute2x128_si256(x2, x3, 0x31), 1);
}

// Four rows of a B panel (32 columns each, already shifted to i8) into qgemm_kernel_vnni's layout
// at dst (128 bytes), their column sums added to s0 (columns 0-15) and s1 (16-31) by vpdpbusd
// against ones.
inline void store_group(const __m256i (&r)[4], int8_t* dst, __m512i& s0, __m512i& s1) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i c0, c1;
  interleave4(r, c0, c1);
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

namespace {

// Where one run of a panel's columns reads a kernel tap's row of x: lane 0's offset (in elements:
// bytes, or 4-byte quads) from a channel's (quad's) first element (lane L reads offset + L) and
// the lanes inside x.
struct RunLoad {
  int64_t offset;
  uint64_t lanes;
};

// The panel's columns [j0, j0 + n) split into runs that share an output row (a 56-wide output: at
// most 2; a 7-wide one: 5 or 6). A run's taps in one input row are consecutive elements of one
// phase of that row (ImplicitConv), so per kernel tap (kh, kw) and run: where the run's taps start
// and which lanes fall inside x. table: R entries a tap (those past the tap's runs have no lanes,
// a load that reads nothing); returns R, the runs.
int64_t run_table(const ImplicitConv& c, int64_t j0, int n, std::vector<RunLoad>& table) {
  const int64_t kvol = c.KH * c.KW, sw = c.sw, phase_width = (c.W + sw - 1) / sw, P = c.OH * c.OW;
  // the runs: columns [at, at + cnt) of the panel are outputs (oh, ow .. ow + cnt - 1) of an image
  // whose x starts `base` elements on
  int64_t run_oh[32], run_ow[32], run_at[32], run_cnt[32], run_base[32], runs = 0;
  for (int64_t j = j0, at = 0; at < n; ++runs) {
    const int64_t img = j / P, oh = j % P / c.OW, ow = j % c.OW, cnt = std::min<int64_t>(c.OW - ow, n - at);
    run_oh[runs] = oh, run_ow[runs] = ow, run_at[runs] = at, run_cnt[runs] = cnt, run_base[runs] = img * c.image_stride;
    at += cnt, j += cnt;
  }
  table.assign(size_t(kvol * runs), RunLoad{0, 0});
  // per kernel column: lane i of a run from output column ow reads x column ow sw + kw dw - pw + i sw,
  // element ow + shift + i of phase p (no division in the loop over taps and runs below)
  int64_t column_phase[64], column_shift[64], phase_elems[64];
  for (int64_t kw = 0; kw < c.KW; ++kw) {
    const int64_t d = kw * c.dw - c.pw, p = (d % sw + sw) % sw;
    column_phase[kw] = p, column_shift[kw] = (d - p) / sw;
  }
  for (int64_t p = 0; p < sw; ++p) phase_elems[p] = (c.W - p + sw - 1) / sw;
  RunLoad* l = table.data();
  for (int64_t kh = 0; kh < c.KH; ++kh)
    for (int64_t kw = 0; kw < c.KW; ++kw) {
      RunLoad* const first = l;
      const int64_t p = column_phase[kw], width = phase_elems[p];
      for (int64_t r = 0; r < runs; ++r) {
        const int64_t ih = run_oh[r] * c.sh - c.ph + kh * c.dh;
        if (ih < 0 || ih >= c.H) continue;
        const int64_t w0 = run_ow[r] + column_shift[kw];  // lane 0's element in the phase
        const int64_t lo = std::clamp<int64_t>(-w0, 0, run_cnt[r]);
        const int64_t hi = std::clamp<int64_t>(width - w0, lo, run_cnt[r]);
        if (hi == lo) continue;
        *l++ = {run_base[r] + ih * c.row_stride + p * phase_width + w0 - run_at[r],
                bit_range(run_at[r] + lo, run_at[r] + hi)};
      }
      l = first + runs;
    }
  return runs;
}

// The panel's rows (channel, tap) as bytes of x (the zero point where a tap falls outside x), 32
// a row, into rows: per tap, R loads, R fixed at compile time where it is small (0: `runs`), so
// that the loop has no branch that varies with the tap.
template <int R>
void gather_rows(const ImplicitConv& c, const RunLoad* loads, int64_t runs, uint8_t* rows) {
  const int64_t kvol = c.KH * c.KW, nr = R ? R : runs;
  const __m256i zp = _mm256_set1_epi8(char(c.zp));
  for (int64_t ch = 0; ch < c.C; ++ch) {
    const uint8_t* xc = c.x + ch * c.plane_stride;
    for (int64_t t = 0; t < kvol; ++t) {
      const RunLoad* l = loads + t * nr;
      __m256i v = zp;
      for (int64_t e = 0; e < nr; ++e) v = _mm256_mask_loadu_epi8(v, __mmask32(l[e].lanes), xc + l[e].offset);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows), v);
      rows += 32;
    }
  }
}

// The panel straight from x in quads (rows (tap, channel)): a group of 4 rows is 4 channels of
// one tap, which x holds side by side, so a run's 4 x n bytes are one or two masked loads, already
// in the panel's layout.
template <int R>
void gather_quads(const ImplicitConv& c, const RunLoad* loads, int64_t runs, int n, int8_t* dst, int32_t* colsum) {
  const int64_t kvol = c.KH * c.KW, nr = R ? R : runs, quads = c.C / 4;
  const __m512i zp = _mm512_set1_epi8(char(c.zp)), ones = _mm512_set1_epi8(1);
  const uint64_t used = bit_range(0, n);
  const __mmask16 n0 = __mmask16(used), n1 = __mmask16(used >> 16);
  const __m512i flip = _mm512_set1_epi8(c.x_signed ? 0 : char(0x80));
  __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
  for (int64_t t = 0; t < kvol; ++t) {
    const RunLoad* l = loads + t * nr;
    const uint8_t* xq = c.x;
    for (int64_t q = 0; q < quads; ++q, xq += 4 * c.plane_stride, dst += 128) {
      __m512i v0 = zp, v1 = zp;
      for (int64_t e = 0; e < nr; ++e) {
        const uint8_t* at = xq + 4 * l[e].offset;
        v0 = _mm512_mask_loadu_epi32(v0, __mmask16(l[e].lanes), at);
        v1 = _mm512_mask_loadu_epi32(v1, __mmask16(l[e].lanes >> 16), at + 64);
      }
      v0 = _mm512_maskz_mov_epi32(n0, _mm512_xor_si512(v0, flip));
      v1 = _mm512_maskz_mov_epi32(n1, _mm512_xor_si512(v1, flip));
      _mm512_storeu_si512(dst, v0);
      _mm512_storeu_si512(dst + 64, v1);
      s0 = _mm512_dpbusd_epi32(s0, ones, v0);
      s1 = _mm512_dpbusd_epi32(s1, ones, v1);
    }
  }
  _mm512_storeu_si512(colsum, s0);
  _mm512_storeu_si512(colsum + 16, s1);
}

// fn<R>() for the runs R of a table: 1 to 6 fixed at compile time, more at run time (0)
template <class F>
void with_runs(int64_t runs, F&& fn) {
  switch (runs) {
    case 1: return fn(std::integral_constant<int, 1>{});
    case 2: return fn(std::integral_constant<int, 2>{});
    case 3: return fn(std::integral_constant<int, 3>{});
    case 4: return fn(std::integral_constant<int, 4>{});
    case 5: return fn(std::integral_constant<int, 5>{});
    case 6: return fn(std::integral_constant<int, 6>{});
    default: return fn(std::integral_constant<int, 0>{});
  }
}

}  // namespace

// conv_integer.hpp's conv_int8_pack_implicit_vnni. Bytes: a row of the panel is a zero point
// vector with one masked load per run merged in, into a scratch matrix (K x 32, in cache) that
// conv_integer_pack_columns_vnni then interleaves; quads: gather_quads.
void conv_int8_pack_implicit_vnni(const ImplicitConv& c, int64_t j0, int n, int8_t* dst, int32_t* colsum) {
  static_assert(kVnniNR == 32);
  thread_local std::vector<RunLoad> table;
  const int64_t runs = run_table(c, j0, n, table);
  if (c.quads)
    return with_runs(runs, [&](auto R) { gather_quads<decltype(R)::value>(c, table.data(), runs, n, dst, colsum); });
  thread_local std::vector<uint8_t> rows;
  const int64_t K = c.C * c.KH * c.KW;
  rows.resize(size_t(K * 32));
  with_runs(runs, [&](auto R) { gather_rows<decltype(R)::value>(c, table.data(), runs, rows.data()); });
  conv_integer_pack_columns_vnni(rows.data(), 32, K, 0, n, c.x_signed, dst, colsum);
}

void quad_rows(const uint8_t* const (&src)[4], int64_t W, int64_t sw, uint8_t* dst) {
  const int64_t len = (W + sw - 1) / sw * sw;  // the row's elements, phases padded
  thread_local std::vector<uint8_t> split;
  const uint8_t* rows[4] = {src[0], src[1], src[2], src[3]};
  if (sw > 1) {
    split.resize(size_t(4 * len));
    for (int k = 0; k < 4; ++k) {
      split_row_phases(src[k], W, sw, split.data() + k * len);
      rows[k] = split.data() + k * len;
    }
  }
  for (int64_t i = 0; i < len; i += 32) {
    const int64_t cnt = std::min<int64_t>(32, len - i);
    const __mmask32 m = __mmask32(bit_range(0, cnt));
    const __m256i r[4] = {_mm256_maskz_loadu_epi8(m, rows[0] + i), _mm256_maskz_loadu_epi8(m, rows[1] + i),
                          _mm256_maskz_loadu_epi8(m, rows[2] + i), _mm256_maskz_loadu_epi8(m, rows[3] + i)};
    __m512i c0, c1;
    interleave4(r, c0, c1);
    _mm512_mask_storeu_epi8(dst + 4 * i, bit_range(0, 4 * std::min<int64_t>(16, cnt)), c0);
    if (cnt > 16) _mm512_mask_storeu_epi8(dst + 4 * i + 64, bit_range(0, 4 * (cnt - 16)), c1);
  }
}

void split_row_phases(const uint8_t* src, int64_t W, int64_t sw, uint8_t* dst) {
  const int64_t phase_width = (W + sw - 1) / sw;
  if (sw != 2) {
    for (int64_t p = 0; p < sw; ++p)
      for (int64_t i = 0; p + i * sw < W; ++i) dst[p * phase_width + i] = src[p + i * sw];
    return;
  }
  // 64 bytes a step: the even ones by vpmovwb, the odd ones by vpmovwb of the words shifted by 8
  for (int64_t i = 0; i < W; i += 64) {
    const int64_t left = std::min<int64_t>(64, W - i);
    const __m512i v = _mm512_maskz_loadu_epi8(bit_range(0, left), src + i);
    _mm256_mask_storeu_epi8(dst + i / 2, __mmask32(bit_range(0, (left + 1) / 2)), _mm512_cvtepi16_epi8(v));
    _mm256_mask_storeu_epi8(dst + phase_width + i / 2, __mmask32(bit_range(0, left / 2)),
                            _mm512_cvtepi16_epi8(_mm512_srli_epi16(v, 8)));
  }
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
