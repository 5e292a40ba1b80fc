// The conv_integer op on the cpu backend (conv_integer.hpp): im2col of the bytes of x, then the
// int8 GEMM of qgemm.cpp per image and channel group.
#include "conv_integer.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu_backend.hpp"
#include "cpu_features.hpp"
#include "gemm.hpp"
#include "qgemm.hpp"
#include "qlinear.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {
namespace {

constexpr int64_t kDefaultColBytes = int64_t(16) << 20;  // the largest im2col block

// dst[i] = src[2 i], i < n (stride 2 along the width; GCC vectorizes it, the general loop it does not)
void copy_even(const uint8_t* __restrict src, uint8_t* __restrict dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[2 * i];
}

// Columns [r0 OW, r1 OW) of the im2col matrix of one image's channel group (xg: its first channel)
// into col (rows `width` apart): row (c, kd, kh, kw), column (od, oh, ow) holds
// x[c, od sd - pd + kd dd, oh sh - ph + kh dh, ow sw - pw + kw dw], or zp outside x.
void im2col(const ConvIntegerGeometry& g, int64_t Cg, const uint8_t* xg, uint8_t zp, int64_t r0, int64_t r1,
            uint8_t* col, bool threaded) {
  const auto &in = g.in, &k = g.kernel, &s = g.stride, &p = g.pad, &d = g.dilation;
  const int64_t OH = g.out[1], OW = g.out[2], kvol = k[0] * k[1] * k[2], width = (r1 - r0) * OW;
  auto rows = [&](int64_t k0, int64_t k1) {
    for (int64_t kr = k0; kr < k1; ++kr) {
      const int64_t c = kr / kvol, t = kr % kvol, a = t / (k[1] * k[2]), b = (t / k[2]) % k[1], e = t % k[2];
      const uint8_t* xc = xg + c * in[0] * in[1] * in[2];
      uint8_t* dst = col + kr * width;
      // the outputs ow whose tap iw = ow sw + off lies in [0, in[2]): [ow0, ow1)
      const int64_t off = e * d[2] - p[2];
      const int64_t ow0 = std::min(OW, off >= 0 ? 0 : (-off + s[2] - 1) / s[2]);
      const int64_t ow1 = std::max(ow0, std::min(OW, in[2] - off <= 0 ? 0 : (in[2] - off + s[2] - 1) / s[2]));
      // (the output row r as od, oh, stepped: a division per row cost more than its copy)
      for (int64_t r = r0, od = r0 / OH, oh = r0 % OH; r < r1; ++r, dst += OW, oh = oh + 1 == OH ? (++od, 0) : oh + 1) {
        const int64_t id = od * s[0] - p[0] + a * d[0], ih = oh * s[1] - p[1] + b * d[1];
        if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1]) {
          std::memset(dst, zp, size_t(OW));
          continue;
        }
        const uint8_t* xrow = xc + (id * in[1] + ih) * in[2];
        for (int64_t ow = 0; ow < ow0; ++ow) dst[ow] = zp;  // a pad or two: no call
        if (s[2] == 1) {
          std::memcpy(dst + ow0, xrow + ow0 + off, size_t(ow1 - ow0));
        } else if (s[2] == 2) {
          copy_even(xrow + ow0 * 2 + off, dst + ow0, ow1 - ow0);
        } else {
          for (int64_t ow = ow0; ow < ow1; ++ow) dst[ow] = xrow[ow * s[2] + off];
        }
        for (int64_t ow = ow1; ow < OW; ++ow) dst[ow] = zp;
      }
    }
  };
  const int64_t K = Cg * kvol;
  if (threaded)
    parallel_for(0, K, std::max<int64_t>(1, 16384 / std::max<int64_t>(width, 1)), rows);
  else
    rows(0, K);
}

// ---- the AVX-512 VNNI path: the weights packed once (qlinear.hpp's pack_a_vnni; kept with their
// storage from the second call on), the im2col columns packed a 32-column panel at a time straight
// into the micro-kernel's layout (qgemm.hpp), each 12 x 32 tile finished by the epilogue
// (requant_tile) while it is in cache: the zero points and the +-128 shifts corrected by row and
// column sums as qgemm.cpp does, then the bias, the scale, the rounding and the saturation. Where
// the CPU has AMX-INT8 (Sapphire Rapids on), the same panels of columns feed 32 x 32 tiles of
// tdpbusd instead (amx_product), the weights kept as plain rows.

// Every group's packed weights: per group, the A panels (vnni_a_bytes(Mg, K); on AMX the rows,
// amx_a_bytes(Mg, K)), then all rowsums.
struct PackedWeights {
  const uint8_t* panels = nullptr;
  const uint32_t* rowsum = nullptr;
  int64_t group_bytes = 0;
  std::vector<uint8_t> own;  // when not kept
  std::shared_ptr<const Storage> hold;
};

// tap_kvol > 0: each row's K = Cg x tap_kvol weights reordered (tap, channel) first (the implicit
// GEMM on quads, ImplicitConv).
void pack_weights(const ConvInt8Args& a, int64_t groups, int64_t Mg, int64_t K, int64_t tap_kvol, uint8_t* dst) {
  const int64_t gb = vnni_a_bytes(Mg, K);
  auto* rowsum = reinterpret_cast<uint32_t*>(dst + groups * gb);
  std::vector<uint8_t> reordered(tap_kvol > 0 ? size_t(Mg * K) : 0);
  for (int64_t gi = 0; gi < groups; ++gi) {
    const uint8_t* w = a.w + gi * Mg * K;
    if (tap_kvol > 0) {
      const int64_t Cg = K / tap_kvol;
      for (int64_t m = 0; m < Mg; ++m)
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t t = 0; t < tap_kvol; ++t) reordered[size_t(m * K + t * Cg + c)] = w[m * K + c * tap_kvol + t];
      w = reordered.data();
    }
    pack_a_vnni(w, K, Mg, K, a.w_signed, dst + gi * gb, rowsum + gi * Mg);
  }
}

// The AMX layout (qgemm_tile_amx's A): per group, its rows as u8 (i8 weights + 128), row-major,
// amx_lda(K) bytes apart, zero padded along K and to a multiple of 16 rows.
int64_t amx_lda(int64_t K) { return (K + 63) / 64 * 64; }
int64_t amx_a_bytes(int64_t rows, int64_t K) { return (rows + 15) / 16 * 16 * amx_lda(K); }

void pack_weights_amx(const ConvInt8Args& a, int64_t groups, int64_t Mg, int64_t K, uint8_t* dst) {
  const int64_t gb = amx_a_bytes(Mg, K), lda = amx_lda(K);
  auto* rowsum = reinterpret_cast<uint32_t*>(dst + groups * gb);
  std::memset(dst, 0, size_t(groups * gb));
  const uint8_t flip = a.w_signed ? 0x80 : 0;
  for (int64_t r = 0; r < groups * Mg; ++r) {
    const uint8_t* w = a.w + r * K;
    uint8_t* d = dst + (r / Mg) * gb + (r % Mg) * lda;
    uint32_t sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += d[k] = w[k] ^ flip;
    rowsum[r] = sum;
  }
}

void packed_weights(const ConvInt8Args& a, int64_t groups, int64_t Mg, int64_t K, bool amx, int64_t tap_kvol,
                    PackedWeights& pw) {
  pw.group_bytes = amx ? amx_a_bytes(Mg, K) : vnni_a_bytes(Mg, K);
  const int64_t bytes = groups * pw.group_bytes + groups * Mg * 4;
  auto make = [&](uint8_t* dst) {
    amx ? pack_weights_amx(a, groups, Mg, K, dst) : pack_weights(a, groups, Mg, K, tap_kvol, dst);
  };
  const int64_t kind = amx ? 2 : tap_kvol > 0 ? 3 : 1;
  const uint8_t* base =
      kept_int8_packing(a.w_storage, a.w_offset, {kind, a.w_signed, groups, Mg, K, tap_kvol}, bytes, make, pw.hold);
  if (!base) {
    pw.own.resize(size_t(bytes));
    make(pw.own.data());
    base = pw.own.data();
  }
  pw.panels = base;
  pw.rowsum = reinterpret_cast<const uint32_t*>(base + groups * pw.group_bytes);
}

// Output channels [c0, c0 + rows) (one group's, packed at `panels`) times the columns of b (K x
// width, rows ldb apart) through the epilogue e (its arrays indexed by output channel) into y
// (rows ldy elements apart).
// Columns [at, at + count) of a B panel, and where the output of their first one lies (the
// group's first output channel; rows ldy elements apart). A panel of the implicit GEMM spans images.
struct PanelSpan {
  int at, count;
  uint8_t* y;
};

// Tiles [t0, t1) of kVnniWideMR rows of a group's `rows` packed rows (at `panels`, output channels
// from c0) times one packed B panel of n columns (et.q: its column sums) through the epilogue into
// the spans' outputs.
void vnni_panel_tiles(const uint8_t* panels, int64_t c0, int64_t rows, int64_t KG, const int8_t* bp, int n,
                      const Requant& et, int64_t t0, int64_t t1, const PanelSpan* spans, int nspans, int64_t ldy) {
  constexpr int MR = detail::kVnniWideMR, NR = detail::kVnniNR;
  alignas(64) int32_t tile[MR * NR];
  const int64_t es = et.elem_bytes();
  // a byte output of one span: the epilogue on the accumulators, no tile of sums
  const bool fused = nspans == 1 && (et.out == Requant::U8 || et.out == Requant::I8) && et.per_row && !et.c && et.r;
  for (int64_t qm = t0; qm < t1; ++qm) {
    const int m = int(std::min<int64_t>(MR, rows - qm * MR));
    const int64_t i = c0 + qm * MR;
    if (fused) {
      const detail::VnniTileRequant rq{.r = et.r + i, .p = et.p ? et.p + i : nullptr, .q = et.q, .mult = et.mult + i,
                                       .zp = et.zp, .i8 = et.out == Requant::I8, .y = spans[0].y + qm * MR * ldy,
                                       .ldy = ldy};
      detail::qgemm_kernel_vnni_wide_requant(KG, panels, rows, qm * MR, bp, m, n, rq);
      continue;
    }
    detail::qgemm_kernel_vnni_wide(KG, panels, rows, qm * MR, bp, tile, NR, m, n);
    for (int s = 0; s < nspans; ++s)
      requant_tile(et, tile + spans[s].at, NR, c0 + qm * MR, spans[s].at, m, spans[s].count,
                   spans[s].y + qm * MR * ldy * es, ldy);
  }
}

void vnni_product(const uint8_t* panels, int64_t c0, int64_t rows, int64_t K, const uint8_t* b, int64_t ldb,
                  int64_t width, bool x_signed, const Requant& e, uint8_t* y, int64_t ldy) {
  constexpr int MR = detail::kVnniWideMR, NR = detail::kVnniNR;
  const int64_t KG = (K + 3) / 4, mp = (rows + MR - 1) / MR, np = (width + NR - 1) / NR, es = e.elem_bytes();
  parallel_for(0, np, 1, [&](int64_t q0, int64_t q1) {
    std::vector<int8_t> bp(size_t(KG * NR * 4));
    alignas(64) int32_t colsum[NR];
    Requant et = e;
    et.q = colsum;
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t j0 = q * NR;
      const int n = int(std::min<int64_t>(NR, width - j0));
      detail::conv_integer_pack_columns_vnni(b, ldb, K, j0, n, x_signed, bp.data(), colsum);
      const PanelSpan span{0, n, y + j0 * es};
      vnni_panel_tiles(panels, c0, rows, KG, bp.data(), n, et, 0, mp, &span, 1, ldy);
    }
  });
}

// The implicit GEMM of a 2-d conv on VNNI: no im2col matrix; each task packs
// one 32-column B panel of one group straight from x (conv_int8_pack_implicit_vnni; the columns
// run over the batch's outputs, image after image, so that a 7 x 7 output fills its panels) and
// runs a block of the group's row tiles over it, the epilogue on each tile while it is in cache.
// Tasks (group, panel, row block), claimed as the threads finish the last; row blocks only where
// the panels alone would leave a thread idle.
void implicit_conv_vnni(const ConvIntegerGeometry& g, const ConvInt8Args& a, const PackedWeights& pw,
                        const Requant& e) {
  constexpr int MR = detail::kVnniWideMR, NR = detail::kVnniNR;
  const int64_t Cg = g.C / g.groups, Mg = g.M / g.groups, K = Cg * g.kernel[1] * g.kernel[2], KG = (K + 3) / 4;
  const int64_t P = g.out[1] * g.out[2], es = e.elem_bytes();
  const int64_t np = (g.N * P + NR - 1) / NR, mp = (Mg + MR - 1) / MR;
  const int64_t threads = ThreadPool::global().size(), panels = g.groups * np;
  const int64_t blocks = std::clamp<int64_t>((4 * threads + panels - 1) / panels, 1, mp);
  const int64_t tiles_per_block = (mp + blocks - 1) / blocks, tasks = panels * blocks;
  // about 2^21 multiply-adds a claim
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 21) / std::max<int64_t>(tiles_per_block * MR * NR * K, 1));
  detail::ImplicitConv base;
  base.x_signed = a.x_signed;
  base.zp = uint8_t(a.x_zp);
  base.C = Cg, base.H = g.in[1], base.W = g.in[2], base.KH = g.kernel[1], base.KW = g.kernel[2];
  base.OW = g.out[2], base.OH = g.out[1];
  base.sh = g.stride[1], base.sw = g.stride[2], base.ph = g.pad[1], base.pw = g.pad[2];
  base.dh = g.dilation[1], base.dw = g.dilation[2];
  // x as the packer reads it (ImplicitConv): bytes, rows split by phase for a width stride above 1
  // (a copy), or quads (a copy, Cg a multiple of 4)
  const int64_t sw = g.stride[2], H = g.in[1], W = g.in[2], row_stride = (W + sw - 1) / sw * sw;
  const bool quads = Cg % 4 == 0;
  thread_local std::vector<uint8_t> copy;  // kept (the largest x so far): fresh pages cost more than the copy
  // the input rows some output row reads (a strided 1x1 conv skips the others)
  std::vector<char> read(size_t(H), 0);
  for (int64_t oh = 0; oh < g.out[1]; ++oh)
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
      if (ih >= 0 && ih < H) read[size_t(ih)] = 1;
    }
  const uint8_t* x = a.x;
  if (quads) {
    const int64_t rows = g.N * g.C / 4 * H;  // (image, quad, input row)
    copy.resize(size_t(rows * row_stride * 4));
    uint8_t* const dst = copy.data();  // (the lambda runs on other threads: their copy is not this one)
    parallel_for(0, rows, 64, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        if (!read[size_t(r % H)]) continue;
        const uint8_t* first = a.x + ((r / H) * 4 * H + r % H) * W;  // channel 4 (r / H), row r % H
        const uint8_t* const src[4] = {first, first + H * W, first + 2 * H * W, first + 3 * H * W};
        detail::quad_rows(src, W, sw, dst + r * row_stride * 4);
      }
    });
    x = dst;
  } else if (sw > 1) {
    const int64_t rows = g.N * g.C * H;
    copy.resize(size_t(rows * row_stride));
    uint8_t* const dst = copy.data();
    parallel_for(0, rows, 256, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        if (read[size_t(r % H)]) detail::split_row_phases(a.x + r * W, W, sw, dst + r * row_stride);
    });
    x = dst;
  }
  base.quads = quads;
  base.row_stride = sw > 1 || quads ? row_stride : W;
  base.plane_stride = H * base.row_stride;
  base.image_stride = (quads ? g.C / 4 : g.C) * base.plane_stride;
  const int64_t group_bytes = (quads ? 4 * (Cg / 4) : Cg) * base.plane_stride;
  auto* y = static_cast<uint8_t*>(a.y);
  for_rows_dynamic(tasks, grain, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<int8_t> bp;
    bp.resize(size_t(KG * NR * 4));
    alignas(64) int32_t colsum[NR];
    Requant et = e;
    et.q = colsum;
    PanelSpan spans[NR];
    int nspans = 0;
    int64_t packed = -1;  // the (group, panel) in bp
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t gp = t / blocks, blk = t % blocks, gi = gp / np, j0 = (gp % np) * NR;
      const int n = int(std::min<int64_t>(NR, g.N * P - j0));
      if (packed != gp) {
        detail::ImplicitConv c = base;
        c.x = x + gi * group_bytes;
        detail::conv_int8_pack_implicit_vnni(c, j0, n, bp.data(), colsum);
        packed = gp;
        nspans = 0;
        for (int at = 0; at < n;) {  // the panel's columns per image
          const int64_t j = j0 + at, img = j / P, count = std::min<int64_t>(n - at, P - j % P);
          spans[nspans++] = {at, int(count), y + ((img * g.M + gi * Mg) * P + j % P) * es};
          at += int(count);
        }
      }
      const int64_t b0 = blk * tiles_per_block, b1 = std::min(mp, b0 + tiles_per_block);
      vnni_panel_tiles(pw.panels + gi * pw.group_bytes, gi * Mg, Mg, KG, bp.data(), n, et, b0, b1, spans, nspans, P);
    }
  });
}

// vnni_product on AMX tiles: `arows` the group's rows in the AMX layout; 32 x 32 tiles (16 rows
// for the last 16 or fewer), the B panel padded with zero groups to a multiple of 16.
void amx_product(const uint8_t* arows, int64_t c0, int64_t rows, int64_t K, const uint8_t* b, int64_t ldb,
                 int64_t width, bool x_signed, const Requant& e, uint8_t* y, int64_t ldy) {
  constexpr int MR = 32, NR = detail::kVnniNR;
  const int64_t lda = amx_lda(K), k64 = lda / 64, np = (width + NR - 1) / NR, es = e.elem_bytes();
  parallel_for(0, np, 1, [&](int64_t q0, int64_t q1) {
    std::vector<int8_t> bp(size_t(k64 * 16 * NR * 4), 0);  // the groups past K stay zero
    alignas(64) int32_t colsum[NR], tile[MR * NR];
    Requant et = e;
    et.q = colsum;
    detail::amx_tiles_begin();
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t j0 = q * NR;
      const int n = int(std::min<int64_t>(NR, width - j0));
      detail::conv_integer_pack_columns_vnni(b, ldb, K, j0, n, x_signed, bp.data(), colsum);
      for (int64_t i0 = 0; i0 < rows; i0 += MR) {
        const int m = int(std::min<int64_t>(MR, rows - i0));
        detail::qgemm_tile_amx(arows + i0 * lda, lda, m, bp.data(), k64, tile, NR);
        requant_tile(et, tile, NR, c0 + i0, 0, m, n, y + (i0 * ldy + j0) * es, ldy);
      }
    }
    detail::amx_tiles_end();
  });
}

// ---- depthwise (one input channel per group, one output channel each, 2-d): per channel, x minus
// its zero point as i16 in a zero-padded plane, then every output the sum of its taps (qlinear.hpp's
// depthwise_plane: 16 outputs in a register through all taps); the plane through the epilogue. A
// 3-wide kernel at width stride 1 with weights that fit i8 once their zero point is off (VNNI):
// x's bytes, padding as its zero point, a kernel row's 3 taps per vpdpbusd (depthwise3_vnni).
void depthwise_channel(const ConvIntegerGeometry& g, const uint8_t* xc, bool x_signed, int32_t x_zp,
                       const uint8_t* wc, bool w_signed, int32_t w_zp, std::vector<int16_t>& plane, int32_t* acc) {
  const int64_t H = g.in[1], W = g.in[2], KH = g.kernel[1], KW = g.kernel[2], OH = g.out[1], OW = g.out[2];
  const int64_t sh = g.stride[1], sw = g.stride[2], dh = g.dilation[1], dw = g.dilation[2];
  const int64_t ph = g.pad[1], pw = g.pad[2];
  const int64_t PH = (OH - 1) * sh + (KH - 1) * dh + 1, PW = (OW - 1) * sw + (KW - 1) * dw + 1;
  std::vector<int32_t> wv(size_t(KH * KW));
  for (int64_t t = 0; t < KH * KW; ++t) wv[size_t(t)] = (w_signed ? int32_t(int8_t(wc[t])) : int32_t(wc[t])) - w_zp;
  const bool wv_i8 = std::all_of(wv.begin(), wv.end(), [](int32_t v) { return v >= -128 && v <= 127; });
  if (KW == 3 && sw == 1 && dw == 1 && KH <= 16 && wv_i8 && features().avx512vnni) {
    const int32_t zu = x_zp + (x_signed ? 128 : 0);  // x's zero point as the shifted bytes hold it
    return detail::depthwise3_vnni(xc, H, W, ph, pw, x_signed, OH, OW, KH, sh, dh, wv.data(), zu, acc);
  }
  plane.assign(size_t(PH * PW), 0);
  for (int64_t r = 0; r < PH; ++r) {
    const int64_t ih = r - ph;
    if (ih < 0 || ih >= H) continue;
    const uint8_t* xr = xc + ih * W;
    int16_t* dst = plane.data() + r * PW;
    const int64_t c0 = std::max<int64_t>(0, pw), c1 = std::min(PW, W + pw);
    for (int64_t cidx = c0; cidx < c1; ++cidx)
      dst[cidx] = int16_t((x_signed ? int32_t(int8_t(xr[cidx - pw])) : int32_t(xr[cidx - pw])) - x_zp);
  }
  depthwise_plane(plane.data(), PW, OH, OW, KH, KW, sh, sw, dh, dw, wv.data(), acc);
}

}  // namespace

namespace detail {

void conv_int8(int isa, const ConvIntegerGeometry& g, const ConvInt8Args& a, int64_t col_bytes) {
  const int64_t Cg = g.C / g.groups, Mg = g.M / g.groups;
  const int64_t kvol = g.kernel[0] * g.kernel[1] * g.kernel[2], K = Cg * kvol;
  const int64_t in_vol = g.in[0] * g.in[1] * g.in[2], rows = g.out[0] * g.out[1], OW = g.out[2], P = rows * OW;
  if (g.N == 0 || g.M == 0 || P == 0) return;
  const int64_t es = a.e.elem_bytes();
  auto* y = static_cast<uint8_t*>(a.y);
  const int64_t items = g.N * g.groups, threads = ThreadPool::global().size();
  // the epilogue's row terms: the i32 bias (and, on the VNNI path, the zero point corrections)
  std::vector<int32_t> r(size_t(g.M), 0), p;
  for (int64_t c = 0; c < g.M; ++c) r[size_t(c)] = a.bias ? a.bias[c] : 0;
  Requant e = a.e;
  e.per_row = true;
  e.r = r.data();
  if (Cg == 1 && Mg == 1 && g.kernel[0] == 1 && g.in[0] == 1 && isa >= kIsaAvx2) {
    // depthwise: a few (image, channel) pairs a task, claimed as the threads finish the last
    for_rows_dynamic(items, std::max<int64_t>(1, 8192 / P), [&](int64_t i0, int64_t i1) {
      std::vector<int16_t> plane;
      std::vector<int32_t> acc(static_cast<size_t>(P));
      for (int64_t it = i0; it < i1; ++it) {
        const int64_t c = it % g.groups;
        depthwise_channel(g, a.x + it * in_vol, a.x_signed, a.x_zp, a.w + c * kvol, a.w_signed, a.w_zp[c], plane,
                          acc.data());
        requant_tile(e, acc.data(), P, c, 0, 1, P, y + it * P * es, P);
      }
    });
    return;
  }
  const bool vnni = K > 0 && std::min(isa, qgemm_best_isa()) >= kIsaAvx512 && features().avx512vnni;
  const bool amx = vnni && isa >= kIsaAmx && features().amx_int8;
  // a 1x1 kernel with stride 1 and no padding: x's channels are already the GEMM's B rows
  bool direct = kvol == 1;
  for (int i = 0; i < 3; ++i) direct = direct && g.stride[size_t(i)] == 1 && g.pad[size_t(i)] == 0;
  if (col_bytes < 0) col_bytes = kDefaultColBytes;
  const int64_t block_rows = direct ? rows : std::clamp<int64_t>(col_bytes / std::max<int64_t>(K * OW, 1), 1, rows);
  const std::vector<int32_t> zb(vnni ? 0 : size_t(direct ? P : block_rows * OW), a.x_zp);
  const uint8_t zp_byte = uint8_t(a.x_zp);
  PackedWeights pw;
  // 2-d, on VNNI: the implicit GEMM (on quads of channels where Cg is a multiple of 4)
  const bool implicit = vnni && !amx && g.in[0] == 1 && g.kernel[0] == 1 && g.kernel[2] <= 64 && g.stride[2] <= 64;
  if (vnni) {
    packed_weights(a, g.groups, Mg, K, amx, implicit && Cg % 4 == 0 ? kvol : 0, pw);
    // r_i = K alpha_i beta - beta rowsum_i + bias_i, p_i = alpha_i (qgemm.cpp's correction)
    const uint32_t beta = uint32_t(a.x_zp) + (a.x_signed ? 0u : uint32_t(-128)), kk = uint32_t(K);
    p.resize(size_t(g.M));
    for (int64_t c = 0; c < g.M; ++c) {
      const uint32_t alpha = uint32_t(a.w_zp[c]) + (a.w_signed ? 128u : 0u);
      p[size_t(c)] = int32_t(alpha);
      r[size_t(c)] = int32_t(uint32_t(r[size_t(c)]) + kk * alpha * beta - beta * pw.rowsum[c]);
    }
    e.p = p.data();
  }
  if (implicit) return implicit_conv_vnni(g, a, pw, e);
  // output channels of group gi from B (K x width, rows ldb apart) into y at `out` (rows P apart)
  auto product = [&](int64_t gi, const uint8_t* b, int64_t ldb, int64_t width, uint8_t* out,
                     std::vector<int32_t>& acc) {
    if (amx) return amx_product(pw.panels + gi * pw.group_bytes, gi * Mg, Mg, K, b, ldb, width, a.x_signed, e, out, P);
    if (vnni)
      return vnni_product(pw.panels + gi * pw.group_bytes, gi * Mg, Mg, K, b, ldb, width, a.x_signed, e, out, P);
    int32_t* c = e.out == Requant::I32 ? reinterpret_cast<int32_t*>(out) : nullptr;
    if (!c) acc.resize(size_t(Mg * width)), c = acc.data();
    const int64_t ldc = e.out == Requant::I32 ? P : width;
    qgemm_u8i8_isa(isa, Mg, width, K, a.w + gi * Mg * K, K, a.w_signed, b, ldb, a.x_signed, a.w_zp + gi * Mg,
                   zb.data(), c, ldc);
    requant_tile(e, c, ldc, gi * Mg, 0, Mg, width, out, P);
  };
  // one (image, group): its product(s), threaded inside unless called from a parallel chunk
  auto item = [&](int64_t it, bool threaded, std::vector<uint8_t>& col, std::vector<int32_t>& acc) {
    const int64_t n = it / g.groups, gi = it % g.groups;
    const uint8_t* xg = a.x + (n * g.C + gi * Cg) * in_vol;
    uint8_t* yg = y + (n * g.M + gi * Mg) * P * es;
    if (direct) return product(gi, xg, P, P, yg, acc);
    for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
      const int64_t r1 = std::min(rows, r0 + block_rows), width = (r1 - r0) * OW;
      col.resize(size_t(K * width));
      im2col(g, Cg, xg, zp_byte, r0, r1, col.data(), threaded);
      product(gi, col.data(), width, width, yg + r0 * OW * es, acc);
    }
  };
  // many small products (grouped, a batch of small images): one (image, group) a task; on AMX any
  // batch (its products are so fast that two barriers per image cost more than they share)
  if (threads > 1 && items >= 2 * threads && (amx || Mg * K * P < (int64_t(1) << 24))) {
    parallel_for(0, items, 1, [&](int64_t i0, int64_t i1) {
      std::vector<uint8_t> col;
      std::vector<int32_t> acc;
      for (int64_t it = i0; it < i1; ++it) item(it, false, col, acc);
    });
    return;
  }
  std::vector<uint8_t> col;
  std::vector<int32_t> acc;
  for (int64_t it = 0; it < items; ++it) item(it, true, col, acc);
}

void conv_integer_u8i8_isa(int isa, const ConvIntegerGeometry& g, const uint8_t* x, bool x_signed, const uint8_t* w,
                           bool w_signed, int32_t x_zp, const int32_t* w_zp, int32_t* y, int64_t col_bytes) {
  conv_int8(isa, g,
            {.x = x, .x_signed = x_signed, .w = w, .w_signed = w_signed, .x_zp = x_zp, .w_zp = w_zp, .bias = nullptr,
             .e = Requant{}, .y = y, .w_storage = nullptr, .w_offset = 0},
            col_bytes);
}

}  // namespace detail

void conv_integer_u8i8(const ConvIntegerGeometry& g, const uint8_t* x, bool x_signed, const uint8_t* w,
                       bool w_signed, int32_t x_zp, const int32_t* w_zp, int32_t* y) {
  detail::conv_integer_u8i8_isa(detail::kIsaAmx, g, x, x_signed, w, w_signed, x_zp, w_zp, y);
}

namespace {

// A zero point's value(s) as i32: `count` values (one repeated, or one each); zeros when absent.
std::vector<int32_t> zero_point_values(const Op& op, size_t i, int64_t count) {
  std::vector<int32_t> z(size_t(count), 0);
  if (op.inputs.size() <= i || !op.inputs[i]) return z;
  auto t = contiguous(op.inputs[i]);
  const uint8_t* p = t->data<uint8_t>();
  const bool is_signed = t->dtype() == DType::i8;
  for (int64_t k = 0; k < count; ++k) {
    const uint8_t v = p[t->numel() == 1 ? 0 : k];
    z[size_t(k)] = is_signed ? int32_t(int8_t(v)) : int32_t(v);
  }
  return z;
}

// The geometry of a conv_integer / qlinear_conv op from x, w and the output's shape.
ConvIntegerGeometry geometry_of(const Op& op, const Shape& xs, const Shape& ws) {
  const auto& a = op.attr<ConvAttrs>();
  const Shape& ys = op.outputs[0].shape;
  const int nd = xs.rank() - 2, lead = 3 - nd;  // spatial dim i is geometry dim lead + i
  ConvIntegerGeometry g;
  g.N = xs[0];
  g.C = xs[1];
  g.M = ws[0];
  g.groups = a.groups;
  for (int i = 0; i < nd; ++i) {
    const size_t j = size_t(lead + i);
    g.in[j] = xs[2 + i];
    g.kernel[j] = ws[2 + i];
    g.out[j] = ys[2 + i];
    g.stride[j] = a.stride[size_t(i)];
    g.pad[j] = a.padding[size_t(i)];  // the begin side; the end side only bounds the output size
    g.dilation[j] = a.dilation[size_t(i)];
  }
  return g;
}

// f32 values of a scale input: `count` values (one repeated, or one each).
std::vector<float> scale_values(const Op& op, size_t i, int64_t count) {
  auto t = contiguous(op.inputs[i]);
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) v[size_t(k)] = t->data<float>()[t->numel() == 1 ? 0 : k];
  return v;
}

}  // namespace

// x and the weights of an int8 product, with where the weights live (for their kept packing).
Int8Operands int8_operands(const Op& op, size_t x_in, size_t w_in) {
  Int8Operands o{contiguous(op.inputs[x_in]), contiguous(op.inputs[w_in])};
  if (o.w.get() == op.inputs[w_in].get()) o.w_storage = o.w->storage.get(), o.w_offset = o.w->offset;
  return o;
}


// qlinear_conv / qlinear_matmul's epilogue (ops.def) for `channels` output channels, from inputs
// 1 (x's scale), 4 (w's), 6 (y_scale), 7 (y_zero_point) and 8 (the bias: i32 into i32_bias, f32
// into f32_bias). mult is filled and pointed at.
Requant qlinear_epilogue(const Op& op, int64_t channels, double act_min, double act_max, std::vector<float>& mult,
                         std::vector<float>& f32_bias, std::vector<int32_t>& i32_bias) {
  auto given = [&](size_t i) { return op.inputs.size() > i && op.inputs[i] != nullptr; };
  Requant e;
  const std::vector<float> xs = scale_values(op, 1, 1), ws = scale_values(op, 4, channels);
  mult.resize(size_t(channels));
  if (given(6)) {
    const float ys = scale_values(op, 6, 1)[0];
    for (int64_t c = 0; c < channels; ++c) mult[size_t(c)] = (xs[0] * ws[size_t(c)]) / ys;
    e.out = op.outputs[0].dtype == DType::i8 ? Requant::I8 : Requant::U8;
    if (given(7)) e.zp = zero_point_values(op, 7, 1)[0];
    if (given(8)) {
      auto b = contiguous(op.inputs[8]);
      i32_bias.assign(b->data<int32_t>(), b->data<int32_t>() + channels);
    }
  } else {
    for (int64_t c = 0; c < channels; ++c) mult[size_t(c)] = xs[0] * ws[size_t(c)];
    e.out = Requant::F32;
    e.lo = float(act_min);
    e.hi = float(act_max);
    if (given(8)) {
      auto b = contiguous(op.inputs[8]);
      f32_bias.assign(b->data<float>(), b->data<float>() + channels);
      e.bias = f32_bias.data();
    }
  }
  e.mult = mult.data();
  return e;
}

namespace {

// conv_integer (x 0, w 1, zero points 2, 3) and qlinear_conv (x 0, w 3, zero points 2, 5).
std::vector<PrimitivePtr> int8_conv_kernel(CpuBackend&, Op& op) {
  auto out = alloc(op.outputs[0]);
  if (out->numel() == 0) return {out};
  const bool ql = op.kind == OpKind::qlinear_conv;
  const Int8Operands o = int8_operands(op, 0, ql ? 3 : 1);
  const ConvIntegerGeometry g = geometry_of(op, o.x->shape(), o.w->shape());
  const std::vector<int32_t> x_zp = zero_point_values(op, 2, 1), w_zp = zero_point_values(op, ql ? 5 : 3, g.M);
  std::vector<float> mult, f32_bias;
  std::vector<int32_t> i32_bias;
  ConvInt8Args a;
  if (ql) {
    const auto& ca = op.attr<ConvAttrs>();
    a.e = qlinear_epilogue(op, g.M, ca.act_min, ca.act_max, mult, f32_bias, i32_bias);
    a.bias = i32_bias.empty() ? nullptr : i32_bias.data();
  }
  a.x = o.x->data<uint8_t>();
  a.x_signed = o.x->dtype() == DType::i8;
  a.w = o.w->data<uint8_t>();
  a.w_signed = o.w->dtype() == DType::i8;
  a.x_zp = x_zp[0];
  a.w_zp = w_zp.data();
  a.y = out->raw();
  a.w_storage = o.w_storage;
  a.w_offset = o.w_offset;
  detail::conv_int8(detail::kIsaAmx, g, a);
  return {out};
}

}  // namespace

void register_conv_integer_kernels(KernelTable& t) {
  t[size_t(OpKind::conv_integer)] = int8_conv_kernel;
  t[size_t(OpKind::qlinear_conv)] = int8_conv_kernel;
}

}  // namespace ember::cpu
