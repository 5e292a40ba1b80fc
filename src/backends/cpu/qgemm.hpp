// Quantized matrix products for the cpu backend: the matmul_integer and matmul_wq ops.
//
//   // C [M, N] (i32) = sum_k (A[i, k] - za[i]) (B[k, j] - zb[j]), A and B row-major bytes
//   cpu::qgemm_u8i8(M, N, K, a, /*a_signed=*/false, b, /*b_signed=*/true, za, zb, c);
//
// matmul_integer: a packed, blocked GEMM. AVX-512 VNNI (vpdpbusd, u8 x i8 -> i32 in groups of 4
// along K) on operands shifted into u8 / i8 by 128 where needed, with the shifts and the zero
// points corrected afterwards by row and column sums; AVX2 on operands widened to i16 minus
// their zero points (vpmaddwd: no saturation, no correction); a portable loop. Every path
// wraps modulo 2^32 and so gives the same bits.
//
// matmul_wq: y = x W^T with W quantized per block along K. Few rows of x (decoding): a GEMV
// that streams each weight once, threads over N, nibbles or bytes widened to f32 and FMA'd with
// x (x's even and odd elements of each 32 held apart so that low and high nibbles line up);
// more rows: a panel of W dequantized to f32 at a time, multiplied on the f32 GEMM.
#pragma once

#include <cstdint>
#include <type_traits>

namespace ember::cpu {

// One integer product (see the top of the file). a: M x K bytes, rows lda apart; b: K x N bytes,
// rows ldb apart; *_signed: the bytes are i8 (else u8); za: M values (per row of a), zb: N values
// (per column of b); c: M x N, rows ldc apart. Threads over the global pool.
void qgemm_u8i8(int64_t M, int64_t N, int64_t K, const uint8_t* a, int64_t lda, bool a_signed, const uint8_t* b,
                int64_t ldb, bool b_signed, const int32_t* za, const int32_t* zb, int32_t* c, int64_t ldc);

// The weight of matmul_wq, contiguous: N rows of K weights.
struct QuantWeight {
  int64_t N = 0, K = 0;
  int bits = 4;                  // 4 or 8
  int64_t block = 32;            // weights per scale along K (a multiple of 32)
  const uint8_t* data = nullptr;  // bits 8: N x K bytes (i8, or u8 with zp); 4: N x K/2 bytes
  const float* scales = nullptr;  // N x K/block
  const uint8_t* zp = nullptr;    // N x K/block, or null (symmetric)
  bool quantize_x = false;        // x rounded to int8 per 32 first (WeightQuantAttrs::quantize_x)
};

// y [M, N] = x [M, K] W^T (x rows K apart, y rows N apart). Threads over the global pool.
void matmul_wq_f32(const QuantWeight& w, int64_t M, const float* x, float* y);

namespace detail {

// ISA levels of the quantized kernels (as gemm.hpp's GemmIsa): 2 is AVX-512 (with VNNI for
// qgemm_u8i8; without it, qgemm_u8i8 takes the AVX2 kernel).
int qgemm_best_isa();
// qgemm_u8i8 / matmul_wq_f32 at an explicit level (clamped to qgemm_best_isa()), for the tests.
void qgemm_u8i8_isa(int isa, int64_t M, int64_t N, int64_t K, const uint8_t* a, int64_t lda, bool a_signed,
                    const uint8_t* b, int64_t ldb, bool b_signed, const int32_t* za, const int32_t* zb, int32_t* c,
                    int64_t ldc);
// gemv_rows: up to this many rows of x take the GEMV path, more the GEMM path (-1: the default, 4).
void matmul_wq_f32_isa(int isa, const QuantWeight& w, int64_t M, const float* x, float* y, int64_t gemv_rows = -1);

// ---- the scaffolding the ISA files share ----
// The GEMV kernels are templates over the x rows they take at once (M, 1 to 4, so the
// accumulators stay in registers) and, for some, the weight format (Four: 4-bit; Affine: with
// zero points). gemv_dispatch calls f(M, Four, Affine) with each as a std::integral_constant:
// M = min(m, 4), the format from w.
template <class F>
void gemv_dispatch(const QuantWeight& w, int m, F&& f) {
  auto format = [&](auto rows) {
    if (w.bits == 4)
      return w.zp ? f(rows, std::true_type{}, std::true_type{}) : f(rows, std::true_type{}, std::false_type{});
    return w.zp ? f(rows, std::false_type{}, std::true_type{}) : f(rows, std::false_type{}, std::false_type{});
  };
  switch (m) {
    case 1: return format(std::integral_constant<int, 1>{});
    case 2: return format(std::integral_constant<int, 2>{});
    case 3: return format(std::integral_constant<int, 3>{});
    default: return format(std::integral_constant<int, 4>{});
  }
}

// ---- micro-kernels of the ISA files ----
// VNNI (qgemm_avx512vnni.cpp). Packed A: per panel of kVnniMR rows, per group of 4 along K, the
// rows' 4 bytes (u8) one after the other. Packed B: per panel of kVnniNR columns, per group of 4,
// the columns' 4 bytes (i8). Zero padded. C tile [m, n] (m <= MR, n <= NR) = (accumulate ? C : 0)
// + the product of `groups` groups.
constexpr int kVnniMR = 8, kVnniNR = 32;
void qgemm_kernel_vnni(int64_t groups, const uint8_t* ap, const int8_t* bp, int32_t* c, int64_t ldc, int m, int n,
                       bool accumulate);
// The same with a 12-row tile (24 accumulators) over the same packings: rows [i0, i0 + m) (i0 a
// multiple of 4, m <= kVnniWideMR) of the `rows` packed rows of A (ap: all its panels) times one B
// panel, stored (no accumulate). A tile that starts half-way into a panel reads on into the next.
constexpr int kVnniWideMR = 12;
void qgemm_kernel_vnni_wide(int64_t groups, const uint8_t* ap, int64_t rows, int64_t i0, const int8_t* bp, int32_t* c,
                            int64_t ldc, int m, int n);
// The same tile turned into u8 / i8 bytes on the accumulators (qlinear.hpp's requant_tile for a
// per-row byte output, the same arithmetic): row r's sums v -> saturate(round_half_even(f32(v +
// r[r] - p[r] q[j]) mult[r]) + zp) at y + r ldy + j (r, p, mult: the tile's rows from its first;
// p null: zeros; q: the panel's 32 columns).
struct VnniTileRequant {
  const int32_t *r = nullptr, *p = nullptr, *q = nullptr;
  const float* mult = nullptr;
  int32_t zp = 0;
  bool i8 = false;
  uint8_t* y = nullptr;
  int64_t ldy = 0;
};
void qgemm_kernel_vnni_wide_requant(int64_t groups, const uint8_t* ap, int64_t rows, int64_t i0, const int8_t* bp,
                                    int m, int n, const VnniTileRequant& e);
// AMX-INT8 (qgemm_amx.cpp; only after features().amx_int8). kIsaAmx: the int8 level above
// kIsaAvx512 (conv_int8's `isa`; the f32 GEMM has no such level). A thread brackets its tiles with
// amx_tiles_begin() (loads the tile configuration) and amx_tiles_end(). qgemm_tile_amx: c (rows x
// 32, ldc apart; rows <= 32) = rows of A, u8, row-major, lda bytes apart, 64 k64 bytes each (zero
// padded, readable up to a multiple of 16 rows) times one B panel of qgemm_kernel_vnni (128 bytes
// a group of 4 along K) of 16 k64 groups (zero padded).
constexpr int kIsaAmx = 3;
void amx_tiles_begin();
void amx_tiles_end();
void qgemm_tile_amx(const uint8_t* a, int64_t lda, int rows, const int8_t* bp, int64_t k64, int32_t* c, int64_t ldc);
// AVX2 (qgemm_avx2.cpp). Packed A: per panel of kAvx2MR rows, per pair along K, the rows' two i16
// (a - za) one after the other. Packed B: per panel of kAvx2NR columns, per pair, the columns' two
// i16 (b - zb). Zero padded.
constexpr int kAvx2MR = 6, kAvx2NR = 16;
void qgemm_kernel_avx2(int64_t pairs, const int16_t* ap, const int16_t* bp, int32_t* c, int64_t ldc, int m, int n,
                       bool accumulate);

// GEMV rows of matmul_wq (qgemm_avx512.cpp, qgemm_avx2.cpp): y[r * ldy + n] for rows r < m
// (m <= 4) and weight rows n in [n0, n1). xp: each x row with every 32 elements reordered as
// their 16 even then their 16 odd ones (4-bit weights; x as it is for 8-bit), rows K apart;
// xsum: per x row, the sum of x over each block (K/block values).
void wq_gemv_avx512(const QuantWeight& w, int m, const float* xp, const float* xsum, int64_t n0, int64_t n1, float* y,
                    int64_t ldy);
// The same with x rounded to int8 (quantize_x), on VNNI (qgemm_avx512vnni.cpp). Per x row, per
// chunk of 128 (4-bit) / 64 (8-bit) weights: xq, 64 bytes (4-bit: the chunk's 64 even elements,
// then its 64 odd ones; zero past K); xsum, 16 lanes, the sum of xq over the weights that each
// i32 lane of vpdpbusd covers (8 / 4); sx, 16 lanes, the x scale of the lane's 32. Row j of each
// starts at j * chunks * (64 bytes or 16 values).
void wq_gemv_vnni(const QuantWeight& w, int m, const int8_t* xq, const int32_t* xsum, const float* sx, int64_t n0,
                  int64_t n1, float* y, int64_t ldy);
// The same on AVX2 (qgemm_avx2.cpp): xq, K values a row (4-bit: each 32 as its 16 even values,
// then its 16 odd ones); xqsum and sx, one value per 32 (the sum of xq, x's scale).
void wq_gemv_q8_avx2(const QuantWeight& w, int m, const int8_t* xq, const int32_t* xqsum, const float* sx, int64_t n0,
                     int64_t n1, float* y, int64_t ldy);
void wq_gemv_avx2(const QuantWeight& w, int m, const float* xp, const float* xsum, int64_t n0, int64_t n1, float* y,
                  int64_t ldy);

}  // namespace detail
}  // namespace ember::cpu
