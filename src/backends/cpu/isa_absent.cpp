// Builds without the x86 kernel files (the wasm build: src/CMakeLists.txt leaves out every
// *_avx2 / *_avx512* / *_amx file when the target is not x86-64). cpu::features() is then a
// constant with every ISA off, and most calls into those files fold away behind it. These are the
// entry points still named by code that picks its kernel from an ISA level passed as a value; no
// path reaches them, and one that did would stop here with a message instead of running
// something else. The wasm link fails on any entry point missing from this list.
#if !defined(__x86_64__)

#include <cstdlib>

#include "conv_integer.hpp"
#include "conv_kernels.hpp"
#include "gemm.hpp"
#include "qgemm.hpp"
#include "qlinear_add.hpp"

namespace ember::cpu::detail {
namespace {
[[noreturn]] void absent(const char* kernel) {
  __builtin_printf("ember: the x86 kernel %s was called in a build without x86 kernels\n", kernel);
  std::abort();
}
}  // namespace

const GemmKernelSet<float>* gemm_kernels_avx512_f32() { absent(__func__); }
const GemmKernelSet<double>* gemm_kernels_avx512_f64() { absent(__func__); }
const GemmKernelSet<float>* gemm_kernels_avx2_f32() { absent(__func__); }
const GemmKernelSet<double>* gemm_kernels_avx2_f64() { absent(__func__); }
void qgemm_kernel_avx2(int64_t, const int16_t*, const int16_t*, int32_t*, int64_t, int, int, bool) { absent(__func__); }
void qgemm_kernel_vnni_wide(int64_t, const uint8_t*, int64_t, int64_t, const int8_t*, int32_t*, int64_t, int, int) {
  absent(__func__);
}
void qgemm_tile_amx(const uint8_t*, int64_t, int, const int8_t*, int64_t, int32_t*, int64_t) { absent(__func__); }
void amx_tiles_begin() { absent(__func__); }
void amx_tiles_end() { absent(__func__); }
void wq_gemv_avx512(const QuantWeight&, int, const float*, const float*, int64_t, int64_t, float*, int64_t) {
  absent(__func__);
}
void wq_gemv_avx2(const QuantWeight&, int, const float*, const float*, int64_t, int64_t, float*, int64_t) {
  absent(__func__);
}
void wq_gemv_q8_avx2(const QuantWeight&, int, const int8_t*, const int32_t*, const float*, int64_t, int64_t, float*,
                     int64_t) {
  absent(__func__);
}
void qlinear_add_avx512(bool, const void*, const void*, void*, int64_t, const QAddParams&) { absent(__func__); }
void conv_integer_pack_columns_vnni(const uint8_t*, int64_t, int64_t, int64_t, int, bool, int8_t*, int32_t*) {
  absent(__func__);
}
void qgemm_kernel_vnni_wide_requant(int64_t, const uint8_t*, int64_t, int64_t, const int8_t*, int, int,
                                    const VnniTileRequant&) {
  absent(__func__);
}
void conv_int8_pack_implicit_vnni(const ImplicitConv&, int64_t, int, int8_t*, int32_t*) { absent(__func__); }
void split_row_phases(const uint8_t*, int64_t, int64_t, uint8_t*) { absent(__func__); }
void quad_rows(const uint8_t* const (&)[4], int64_t, int64_t, uint8_t*) { absent(__func__); }
void depthwise_row_f32_avx512(float*, int64_t, int64_t, const DwTap*, int, float) { absent(__func__); }
void depthwise3x3_plane_f32_avx512(const float*, int64_t, int64_t, const float*, float, float*) { absent(__func__); }
void depthwise3x3s2_f32_avx512(const float*, int64_t, int64_t, int64_t, int64_t, int64_t, const float*, const float*,
                               float, float, float*) {
  absent(__func__);
}
void depthwise3x3_small_f32_avx512(const float*, int64_t, int64_t, int64_t, const float*, const float*, float, float,
                                   float*) {
  absent(__func__);
}
void depthwise_grid_f32_avx512(float*, int64_t, int64_t, int64_t, const DwGridTap*, int, float, float, float) {
  absent(__func__);
}
void depthwise_phases_f32_avx512(const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                                 float*) {
  absent(__func__);
}
void im2col_panels_f32_avx512(const Im2colGeom&, int64_t, int64_t, int64_t, int64_t, int, float*) { absent(__func__); }
void transpose_bias_f32_avx512(const float*, int64_t, int64_t, int64_t, const float*, float*, int64_t, const float*, float,
                               float) {
  absent(__func__);
}
void conv_implicit_tile_f32_avx512(int, int, bool, int64_t, int64_t, const float*, const int64_t*, const float*, float*,
                                   int64_t, bool, int) {
  absent(__func__);
}

WinogradTransforms winograd_transforms_f32_avx512(int) { absent(__func__); }

}  // namespace ember::cpu::detail

#endif  // !__x86_64__
