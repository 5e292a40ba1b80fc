// Integer convolution for the cpu backend: the conv_integer op (ONNX ConvInteger).
//
//   // y [N, M, *out] (i32) = sum over each window of (x - x_zp)(w - w_zp[m]), x and w bytes
//   cpu::ConvIntegerGeometry g = ...;  // from the op's shapes and ConvAttrs
//   cpu::conv_integer_u8i8(g, x, /*x_signed=*/false, w, /*w_signed=*/true, x_zp, w_zp, y);
//
// Per image and channel group, an im2col of x into a byte matrix [C/groups * kernel volume, out
// volume] (taps in the padding hold x_zp, so they add 0 once the zero point is subtracted), then
// qgemm_u8i8 with the group's weights as A (rows: output channels, zero points per row) and the
// columns as B (zero point x_zp for every column): C comes out as the NCHW rows of y. A 1x1,
// stride-1, unpadded kernel reads x in place. Few large groups: the GEMM and the im2col thread;
// many small ones (depthwise): the (image, group) pairs are spread over the threads.
#pragma once

#include <array>
#include <cstdint>

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

namespace detail {
// conv_integer_u8i8 with its products at an explicit ISA level of qgemm_u8i8 (qgemm.hpp), for the
// tests; col_bytes: the most bytes an im2col block may take (-1: the default), to test blocking.
void conv_integer_u8i8_isa(int isa, const ConvIntegerGeometry& g, const uint8_t* x, bool x_signed, const uint8_t* w,
                           bool w_signed, int32_t x_zp, const int32_t* w_zp, int32_t* y, int64_t col_bytes = -1);
// Columns [j0, j0 + n) (n <= 32) of the K x ? byte matrix b (rows ldb apart) as one B panel of
// qgemm_kernel_vnni (qgemm.hpp; u8 b shifted to i8 by -128), zero padded to 32 columns and to a
// multiple of 4 rows; colsum: the 32 columns' sums of the packed values (conv_integer_avx512vnni.cpp).
void conv_integer_pack_columns_vnni(const uint8_t* b, int64_t ldb, int64_t K, int64_t j0, int n, bool b_signed,
                                    int8_t* dst, int32_t* colsum);
}  // namespace detail

}  // namespace ember::cpu
