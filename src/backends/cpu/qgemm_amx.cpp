// AMX-INT8 tiles (qgemm.hpp): tdpbusd multiplies a 16 x 64 tile of u8 (16 rows of A, 64 along K)
// by a 16 x 64 tile of i8 (16 groups of 4 along K, 16 columns, 4 bytes each: the B panels of
// qgemm_kernel_vnni, whose 128-byte groups hold columns 0-15 then 16-31) into a 16 x 16 tile of
// i32 sums: 16,384 products per instruction. Compiled with -mamx-tile -mamx-int8; reached only
// after cpu::features().amx_int8 (which also asked the kernel for the tile state).
#include <immintrin.h>

#include <cstdint>

#include "qgemm.hpp"

namespace ember::cpu::detail {

namespace {

// The tile configuration (palette 1): every tile used is 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles: 0-3 the sums (rows 0-15 / 16-31 times columns 0-15 / 16-31), 4-5 A, 6-7 B.
template <bool kTwoRowBlocks>
void tile_product(const uint8_t* a, int64_t lda, const int8_t* bp, int64_t k64, int32_t* c, int64_t ldc) {
  _tile_zero(0);
  _tile_zero(1);
  if constexpr (kTwoRowBlocks) {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t k = 0; k < k64; ++k) {
    _tile_loadd(6, bp + k * 16 * 128, 128);
    _tile_loadd(7, bp + k * 16 * 128 + 64, 128);
    _tile_loadd(4, a + k * 64, lda);
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    if constexpr (kTwoRowBlocks) {
      _tile_loadd(5, a + 16 * lda + k * 64, lda);
      _tile_dpbusd(2, 5, 6);
      _tile_dpbusd(3, 5, 7);
    }
  }
  const int64_t stride = ldc * int64_t(sizeof(int32_t));
  _tile_stored(0, c, stride);
  _tile_stored(1, c + 16, stride);
  if constexpr (kTwoRowBlocks) {
    _tile_stored(2, c + 16 * ldc, stride);
    _tile_stored(3, c + 16 * ldc + 16, stride);
  }
}

}  // namespace

void amx_tiles_begin() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  // GCC 12 does not see _tile_loadconfig read cfg and drops the stores above without this
  __asm__ volatile("" : : "m"(cfg) : "memory");
  _tile_loadconfig(&cfg);
}

void amx_tiles_end() { _tile_release(); }

void qgemm_tile_amx(const uint8_t* a, int64_t lda, int rows, const int8_t* bp, int64_t k64, int32_t* c, int64_t ldc) {
  if (rows > 16) return tile_product<true>(a, lda, bp, k64, c, ldc);
  tile_product<false>(a, lda, bp, k64, c, ldc);
}

}  // namespace ember::cpu::detail
