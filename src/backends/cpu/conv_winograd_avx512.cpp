// AVX-512 tile transforms of the Winograd F(2x2, 3x3) and F(4x4, 3x3) convolutions (conv_winograd.cpp; declared in
// conv_kernels.hpp), 16 channels a vector. Compiled with -mavx512f/bw/dq/vl and called only after
// checking cpu::features().avx512; no standard-library templates here (see conv_avx512.cpp).
#include <immintrin.h>

#include <cstdint>

#include "conv_kernels.hpp"

namespace ember::cpu::detail {

namespace {

inline __mmask16 first_lanes(int64_t n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u); }

// t = B^T x for Lavin and Gray's F(4, 3) input matrix (interpolation points 0, 1, -1, 2, -2, inf).
inline void input_1d(const __m512 x[6], __m512 t[6]) {
  const __m512 four = _mm512_set1_ps(4.0f), mfive = _mm512_set1_ps(-5.0f), two = _mm512_set1_ps(2.0f);
  const __m512 d42 = _mm512_sub_ps(x[4], x[2]);
  t[0] = _mm512_fmadd_ps(four, x[0], _mm512_fmadd_ps(mfive, x[2], x[4]));
  t[1] = _mm512_fnmadd_ps(four, _mm512_add_ps(x[1], x[2]), _mm512_add_ps(x[3], x[4]));
  t[2] = _mm512_fmadd_ps(four, _mm512_sub_ps(x[1], x[2]), _mm512_sub_ps(x[4], x[3]));
  t[3] = _mm512_fmadd_ps(two, _mm512_sub_ps(x[3], x[1]), d42);
  t[4] = _mm512_fmadd_ps(two, _mm512_sub_ps(x[1], x[3]), d42);
  t[5] = _mm512_fmadd_ps(four, x[1], _mm512_fmadd_ps(mfive, x[3], x[5]));
}

// o = A^T m for the F(4, 3) output matrix.
inline void output_1d(const __m512 m[6], __m512 o[4]) {
  const __m512 d12 = _mm512_sub_ps(m[1], m[2]), s12 = _mm512_add_ps(m[1], m[2]);
  const __m512 d34 = _mm512_sub_ps(m[3], m[4]), s34 = _mm512_add_ps(m[3], m[4]);
  o[0] = _mm512_add_ps(_mm512_add_ps(m[0], s12), s34);
  o[1] = _mm512_fmadd_ps(_mm512_set1_ps(2.0f), d34, d12);
  o[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.0f), s34, s12);
  o[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.0f), d34, d12), m[5]);
}

// F(2, 3): t = B^T x, o = A^T m (points 0, 1, -1, inf).
inline void input_1d_f2(const __m512 x[4], __m512 t[4]) {
  t[0] = _mm512_sub_ps(x[0], x[2]);
  t[1] = _mm512_add_ps(x[1], x[2]);
  t[2] = _mm512_sub_ps(x[2], x[1]);
  t[3] = _mm512_sub_ps(x[1], x[3]);
}
inline void output_1d_f2(const __m512 m[4], __m512 o[2]) {
  o[0] = _mm512_add_ps(_mm512_add_ps(m[0], m[1]), m[2]);
  o[1] = _mm512_sub_ps(_mm512_sub_ps(m[1], m[2]), m[3]);
}

// The a x a tile at d through the separable transform `f` (a values in, a out) down its columns
// and then along its rows, 16 channels a vector.
template <int A, void (*F)(const __m512*, __m512*)>
void input_transform(const float* d, int64_t rs, int64_t C, float* v, int64_t vs) {
  for (int64_t c0 = 0; c0 < C; c0 += 16) {
    const __mmask16 k = first_lanes(C - c0);
    __m512 t[A][A];  // t[i][j]: f applied down column j
    for (int j = 0; j < A; ++j) {
      __m512 x[A], r[A];
      for (int i = 0; i < A; ++i) x[i] = _mm512_maskz_loadu_ps(k, d + i * rs + j * C + c0);
      F(x, r);
      for (int i = 0; i < A; ++i) t[i][j] = r[i];
    }
    for (int i = 0; i < A; ++i) {
      __m512 r[A];
      F(t[i], r);
      for (int j = 0; j < A; ++j) _mm512_mask_storeu_ps(v + (i * A + j) * vs + c0, k, r[j]);
    }
  }
}

// The a x a products at m through `f` (a values in, M out) into the M x M tile's first rows x cols.
template <int A, int M, void (*F)(const __m512*, __m512*)>
void output_transform(const float* m, int64_t ms, int64_t O, float* y, int64_t rs, int rows, int cols) {
  for (int64_t o0 = 0; o0 < O; o0 += 16) {
    const __mmask16 k = first_lanes(O - o0);
    __m512 s[M][A];  // s[i][j]: f applied down column j
    for (int j = 0; j < A; ++j) {
      __m512 x[A], r[M];
      for (int i = 0; i < A; ++i) x[i] = _mm512_maskz_loadu_ps(k, m + (i * A + j) * ms + o0);
      F(x, r);
      for (int i = 0; i < M; ++i) s[i][j] = r[i];
    }
    for (int i = 0; i < rows; ++i) {
      __m512 r[M];
      F(s[i], r);
      for (int j = 0; j < cols; ++j) _mm512_mask_storeu_ps(y + i * rs + j * O + o0, k, r[j]);
    }
  }
}

}  // namespace

void winograd2x2_input_f32_avx512(const float* d, int64_t rs, int64_t C, float* v, int64_t vs) {
  input_transform<4, input_1d_f2>(d, rs, C, v, vs);
}
void winograd2x2_output_f32_avx512(const float* m, int64_t ms, int64_t O, float* y, int64_t rs, int rows, int cols) {
  output_transform<4, 2, output_1d_f2>(m, ms, O, y, rs, rows, cols);
}
void winograd4x4_input_f32_avx512(const float* d, int64_t rs, int64_t C, float* v, int64_t vs) {
  input_transform<6, input_1d>(d, rs, C, v, vs);
}
void winograd4x4_output_f32_avx512(const float* m, int64_t ms, int64_t O, float* y, int64_t rs, int rows, int cols) {
  output_transform<6, 4, output_1d>(m, ms, O, y, rs, rows, cols);
}

}  // namespace ember::cpu::detail
