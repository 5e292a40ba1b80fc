// Integer convolution for the cpu backend: the conv_integer op (ONNX ConvInteger).
//
//   // y [N, M, *out] (i32) = sum over each window of (x - x_zp)(w - w_zp[m]), x and w bytes
//   cpu::ConvIntegerGeometry g = ...;  // from the op's shapes and ConvAttrs
//   cpu::conv_integer_u8i8(g, x, /*x_signed=*/false, w, /*w_signed=*/true, x_zp, w_zp, y);
//
// 2-d (and 1-d) convolutions on AVX-512 VNNI without AMX: an implicit GEMM. The weights are packed
// once as the micro-kernel's A panels; each 32-column B panel (32 outputs, image after image over
// the batch) is packed straight from x (conv_int8_pack_implicit_vnni: taps in the padding hold
// x_zp), and each 12 x 32 tile is requantized on the accumulators. x is first copied into the
// layout the packer reads: as quads of channels (NC4HW4-like) where a group's channels are a
// multiple of 4, and each row split by phase for a width stride above 1.
// Elsewhere (AMX, AVX2, scalar, 3-d), per image and channel group, an im2col of x into a byte
// matrix [C/groups * kernel volume, out volume], then qgemm_u8i8 with the group's weights as A
// (rows: output channels, zero points per row) and the columns as B (zero point x_zp for every
// column): C comes out as the NCHW rows of y. A 1x1, stride-1, unpadded kernel reads x in place.
// Few large groups: the GEMM and the im2col thread; many small ones (depthwise): the (image,
// group) pairs are spread over the threads.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "cpu_tensor.hpp"
#include "ember/core/op.hpp"
#include "qlinear.hpp"

namespace ember::cpu {

// The shapes of one conv_integer, 1-d and 2-d as 3-d with leading spatial dims of size 1.
struct ConvIntegerGeometry {
  int64_t N = 1, C = 1, M = 1, groups = 1;  // images, input channels, output channels, groups
  // per spatial dim (depth, height, width): input size, kernel size, output size, stride, the
  // padding before the first element, and dilation
  std::array<int64_t, 3> in{1, 1, 1}, kernel{1, 1, 1}, out{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0},
      dilation{1, 1, 1};
};

// y (N x M x out volume, contiguous) from x (N x C x in volume) and w (M x C/groups x kernel
// volume), both contiguous bytes; *_signed: i8 (else u8); x_zp: x's zero point; w_zp: M values.
// Wraps modulo 2^32. Threads over the global pool.
void conv_integer_u8i8(const ConvIntegerGeometry& g, const uint8_t* x, bool x_signed, const uint8_t* w,
                       bool w_signed, int32_t x_zp, const int32_t* w_zp, int32_t* y);

// One int8 convolution with its epilogue (qlinear.hpp): conv_integer (e.out I32, no bias) or
// qlinear_conv. The epilogue's arrays are indexed by output channel (filled in by conv_int8: the
// i32 bias and the zero point corrections go into e.r / e.p).
struct ConvInt8Args {
  const uint8_t* x = nullptr;
  bool x_signed = false;
  const uint8_t* w = nullptr;  // M x C/groups x kernel volume
  bool w_signed = true;
  int32_t x_zp = 0;
  const int32_t* w_zp = nullptr;  // M values
  const int32_t* bias = nullptr;  // M values (i32, added before the scale), or null
  Requant e;                      // out, mult, f32 bias, zp, clamp
  void* y = nullptr;              // N x M x out volume of e.out's type
  Storage* w_storage = nullptr;   // where w lives, for its kept packing (null: pack per call)
  int64_t w_offset = 0;
};

// x (or a) and the weights of an int8 product op, contiguous, with where the weights live (for
// their kept packing: null when contiguous() copied them).
struct Int8Operands {
  CpuTensorPtr x, w;
  Storage* w_storage = nullptr;
  int64_t w_offset = 0;
};
Int8Operands int8_operands(const Op& op, size_t x_in, size_t w_in);

// The epilogue of qlinear_conv / qlinear_matmul (inputs 1, 4, 6, 7, 8 of the op, ops.def) for
// `channels` output channels: scales into mult, the bias into f32_bias or i32_bias (the caller
// adds i32_bias as the i32 bias).
Requant qlinear_epilogue(const Op& op, int64_t channels, double act_min, double act_max, std::vector<float>& mult,
                         std::vector<float>& f32_bias, std::vector<int32_t>& i32_bias);

namespace detail {
// col_bytes: the most bytes an im2col block may take (-1: the default), to test blocking.
void conv_int8(int isa, const ConvIntegerGeometry& g, const ConvInt8Args& a, int64_t col_bytes = -1);
// conv_integer_u8i8 with its products at an explicit ISA level of qgemm_u8i8 (qgemm.hpp), for the
// tests; col_bytes: the most bytes an im2col block may take (-1: the default), to test blocking.
void conv_integer_u8i8_isa(int isa, const ConvIntegerGeometry& g, const uint8_t* x, bool x_signed, const uint8_t* w,
                           bool w_signed, int32_t x_zp, const int32_t* w_zp, int32_t* y, int64_t col_bytes = -1);
// Columns [j0, j0 + n) (n <= 32) of the K x ? byte matrix b (rows ldb apart) as one B panel of
// qgemm_kernel_vnni (qgemm.hpp; u8 b shifted to i8 by -128), zero padded to 32 columns and to a
// multiple of 4 rows; colsum: the 32 columns' sums of the packed values (conv_integer_avx512vnni.cpp).
void conv_integer_pack_columns_vnni(const uint8_t* b, int64_t ldb, int64_t K, int64_t j0, int n, bool b_signed,
                                    int8_t* dst, int32_t* colsum);
// One channel group of a 2-d convolution (1-d: H 1) over a batch, for the implicit-GEMM packer.
// x's rows are split by phase: with a width stride sw above 1, an input row holds its elements at
// columns p, p + sw, p + 2 sw, ... for p = 0, then 1, ..., each phase ceil(W / sw) elements from
// the last (split_row_phases), so that a run of outputs reads consecutive elements. An element is
// a byte (x's planes, one a channel), or with `quads` 4 bytes: the same pixel of 4 channels side by
// side (planes of 4 channels, quad_rows; C a multiple of 4), and the panel's rows are then ordered
// (kh, kw, channel) instead of (channel, kh, kw).
struct ImplicitConv {
  const uint8_t* x = nullptr;  // the group's first channel (quad) in the first image
  int64_t image_stride = 0, plane_stride = 0, row_stride = 0;  // elements from an image, plane, row to the next
  bool quads = false;
  bool x_signed = false;
  uint8_t zp = 0;  // x's zero point as a byte: the padding's value
  int64_t C = 1, H = 1, W = 1, KH = 1, KW = 1, OH = 1, OW = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};
// The panel of conv_integer_pack_columns_vnni that the im2col matrix of c (rows (channel, kh, kw)
// or, quads, (kh, kw, channel); columns (image, oh, ow), image after image) would give for columns
// [j0, j0 + n), read straight from x (conv_integer_avx512vnni.cpp). KW and sw at most 64.
void conv_int8_pack_implicit_vnni(const ImplicitConv& c, int64_t j0, int n, int8_t* dst, int32_t* colsum);
// An input row of W bytes split by phase for width stride sw (ImplicitConv): sw runs of
// ceil(W / sw) bytes at dst.
void split_row_phases(const uint8_t* src, int64_t W, int64_t sw, uint8_t* dst);
// The same row of 4 channels (src) split by phase as quads: ceil(W / sw) sw x 4 bytes at dst.
void quad_rows(const uint8_t* const (&src)[4], int64_t W, int64_t sw, uint8_t* dst);
// A depthwise conv's channel with a 3-wide kernel at width stride and dilation 1 on VNNI: acc [OH,
// OW] = sum over the taps of wv[kh][kw] (KH x 3 values in [-128, 127], w minus its zero point)
// times (x[oh sh - ph + kh dh][ow - pw + kw] - zp), x the channel's H x W bytes (i8: + 128), zu
// x's zero point in the same shift (the padding's value); KH <= 16.
void depthwise3_vnni(const uint8_t* xc, int64_t H, int64_t W, int64_t ph, int64_t pw, bool x_signed, int64_t OH,
                     int64_t OW, int64_t KH, int64_t sh, int64_t dh, const int32_t* wv, int32_t zu, int32_t* acc);
}  // namespace detail

}  // namespace ember::cpu
