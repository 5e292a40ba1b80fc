// qlinear_add's element loop (qlinear_add.cpp), per instruction set, for the kernel and its tests.
#pragma once

#include <cstdint>

namespace ember::cpu::detail {

// The op's values in f32: scales, zero points (0 when absent) and the output dtype's range.
struct QAddParams {
  float sa = 1, za = 0, sb = 1, zb = 0, sc = 1, zc = 0, lo = 0, hi = 255;
};

// c[i] for i < n from a[i] and b[i] (u8, or i8 when is_signed); avx512 only after features().avx512.
void qlinear_add_isa(bool avx512, bool is_signed, const void* a, const void* b, void* c, int64_t n,
                     const QAddParams& p);
void qlinear_add_avx512(bool is_signed, const void* a, const void* b, void* c, int64_t n, const QAddParams& p);

}  // namespace ember::cpu::detail
