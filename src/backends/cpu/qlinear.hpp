// What the int8 products of the cpu backend share (conv_integer, qlinear_conv, qlinear_matmul):
// the epilogue that turns a tile of raw i32 sums into the op's output while the tile is in cache,
// the SIMD packers of the VNNI micro-kernel's operands, and weights kept packed with their storage.
//
//   // tile t (m x n raw sums of qgemm_kernel_vnni) -> y: corrected, scaled, rounded, saturated
//   cpu::Requant e;  e.out = cpu::Requant::U8;  e.mult = m_per_channel;  e.per_row = true;  ...
//   cpu::requant_tile(e, t, kVnniNR, i0, 0, m, n, y + i0 * ldy + j0, ldy);
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>

namespace ember::cpu {

struct Storage;

// The epilogue of a tile: v = raw + r[i] + c[j] - p[i] q[j] (i32, wrapping; a null array counts
// as zeros), then by `out`:
//   I32: y = v;
//   F32: y = clamp(mult[ch] * f32(v) + bias[ch], lo, hi)  (bias null: 0);
//   U8 / I8: y = saturate(round_half_even(f32(v) * mult[ch]) + zp) (f32 arithmetic, as ONNX Runtime).
// ch is the output channel: the row i (per_row, a conv's output channels) or the column j.
struct Requant {
  enum Out { I32, F32, U8, I8 } out = I32;
  const int32_t *r = nullptr, *c = nullptr, *p = nullptr, *q = nullptr;
  const float* mult = nullptr;
  const float* bias = nullptr;
  bool per_row = true;
  int32_t zp = 0;
  float lo = -__builtin_inff(), hi = __builtin_inff();
  int64_t elem_bytes() const { return out == I32 || out == F32 ? 4 : 1; }
};

// Rows [i0, i0 + m) and columns [j0, j0 + n) of the epilogue's arrays (indices into r, p and the
// per-row channel; c, q and the per-column channel): tile t (rows ldt apart) into y (rows ldy
// elements apart, y's element (0, 0) the tile's first). AVX-512 when the CPU has it.
void requant_tile(const Requant& e, const int32_t* t, int64_t ldt, int64_t i0, int64_t j0, int64_t m, int64_t n,
                  void* y, int64_t ldy);

// fn(n0, n1) over [0, N) in tasks of `grain` that the pool's threads claim as they finish the
// last: a thread slowed down (by another process on its core) takes fewer, where equal static
// shares would leave the others waiting for it.
void for_rows_dynamic(int64_t N, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// The bytes of a VNNI A operand: `rows` rows of K bytes (ld apart) as qgemm_kernel_vnni's A panels
// (qgemm.hpp: per panel of kVnniMR rows, per group of 4 along K, each row's 4 bytes; i8 shifted
// to u8 by +128; zero padded), and each row's sum of the packed bytes.
int64_t vnni_a_bytes(int64_t rows, int64_t K);
void pack_a_vnni(const uint8_t* a, int64_t ld, int64_t rows, int64_t K, bool a_signed, uint8_t* dst, uint32_t* rowsum);

// A depthwise conv's channel: acc [OH, OW] = sum over the KH x KW taps of wv[tap] times the
// zero-padded plane (x minus its zero point, rows PW apart) at (oh sh + kh dh, ow sw + kw dw).
void depthwise_plane(const int16_t* plane, int64_t PW, int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh,
                     int64_t sw, int64_t dh, int64_t dw, const int32_t* wv, int32_t* acc);

// A packing kept with the storage of the weights it was made from (Storage::derived; null when
// `storage` is null or on the first use, then the caller packs into its own buffer): `make` fills
// `bytes` bytes; key: the packing's kind and shape. hold keeps it alive for the call.
const uint8_t* kept_int8_packing(Storage* storage, int64_t offset, std::initializer_list<int64_t> key, int64_t bytes,
                                 const std::function<void(uint8_t*)>& make, std::shared_ptr<const Storage>& hold);

namespace detail {
// requant_tile without SIMD (the reference of the AVX-512 form; f32 without a fused multiply-add)
void requant_tile_portable(const Requant& e, const int32_t* t, int64_t ldt, int64_t i0, int64_t j0, int64_t m,
                           int64_t n, void* y, int64_t ldy);
void requant_tile_avx512(const Requant& e, const int32_t* t, int64_t ldt, int64_t i0, int64_t j0, int64_t m,
                         int64_t n, void* y, int64_t ldy);
// depthwise_plane with 16 outputs of a row in a register through all the taps (strides 1 and 2)
void depthwise_plane_avx512(const int16_t* plane, int64_t PW, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                            int64_t sh, int64_t sw, int64_t dh, int64_t dw, const int32_t* wv, int32_t* acc);
void pack_a_vnni_avx512(const uint8_t* a, int64_t ld, int64_t rows, int64_t K, bool a_signed, uint8_t* dst,
                        uint32_t* rowsum);
}  // namespace detail

}  // namespace ember::cpu
