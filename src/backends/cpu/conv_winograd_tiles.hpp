// The Winograd tile transforms of conv_winograd.cpp, written once over a small vector type V and
// instantiated per ISA: conv_winograd_avx512.cpp (16 floats a vector) and conv_winograd_simd128.cpp
// (4, the wasm build). V gives:
//   V::R                       a vector of V::kWidth floats
//   V::Lanes, V::lanes(n)      the first min(n, kWidth) lanes
//   V::load(p, k)              the lanes k at p, the others zero (reads nothing past them)
//   V::store(p, k, r)          the lanes k of r to p
//   V::add, V::sub, V::splat   and V::madd(a, b, c) = a * b + c (fused where the ISA has it)
// Define V inside an unnamed namespace: the instantiations then stay inside their file (built with its
// ISA flags), which shares no code with the others through COMDAT folding. <cstdint> only, as
// conv_kernels.hpp.
#pragma once

#include <cstdint>

#include "conv_kernels.hpp"

namespace ember::cpu::detail::winograd {

// F(2, 3), Lavin and Gray's points 0, 1, -1, inf: a = 4 inputs, m = 2 outputs.
template <class V>
struct F2 {
  using R = typename V::R;
  static constexpr int A = 4, M = 2;
  // t = B^T x
  static void input(const R* x, R* t) {
    t[0] = V::sub(x[0], x[2]);
    t[1] = V::add(x[1], x[2]);
    t[2] = V::sub(x[2], x[1]);
    t[3] = V::sub(x[1], x[3]);
  }
  // o = A^T m
  static void output(const R* m, R* o) {
    o[0] = V::add(V::add(m[0], m[1]), m[2]);
    o[1] = V::sub(V::sub(m[1], m[2]), m[3]);
  }
};

// F(4, 3), points 0, 1, -1, 2, -2, inf: a = 6, m = 4.
template <class V>
struct F4 {
  using R = typename V::R;
  static constexpr int A = 6, M = 4;
  static void input(const R* x, R* t) {
    const R four = V::splat(4.0f), mfour = V::splat(-4.0f), mfive = V::splat(-5.0f), two = V::splat(2.0f);
    const R d42 = V::sub(x[4], x[2]);
    t[0] = V::madd(four, x[0], V::madd(mfive, x[2], x[4]));
    t[1] = V::madd(mfour, V::add(x[1], x[2]), V::add(x[3], x[4]));
    t[2] = V::madd(four, V::sub(x[1], x[2]), V::sub(x[4], x[3]));
    t[3] = V::madd(two, V::sub(x[3], x[1]), d42);
    t[4] = V::madd(two, V::sub(x[1], x[3]), d42);
    t[5] = V::madd(four, x[1], V::madd(mfive, x[3], x[5]));
  }
  static void output(const R* m, R* o) {
    const R d12 = V::sub(m[1], m[2]), s12 = V::add(m[1], m[2]);
    const R d34 = V::sub(m[3], m[4]), s34 = V::add(m[3], m[4]);
    o[0] = V::add(V::add(m[0], s12), s34);
    o[1] = V::madd(V::splat(2.0f), d34, d12);
    o[2] = V::madd(V::splat(4.0f), s34, s12);
    o[3] = V::add(V::madd(V::splat(8.0f), d34, d12), m[5]);
  }
};

// The a x a input tile at d (rows rs floats apart, pixels C apart, C channels each) through F::input
// down its columns and then along its rows: position xi = a * i + j at v + xi * vs, channel c at [c].
template <class V, template <class> class F>
void input_transform(const float* d, int64_t rs, int64_t C, float* v, int64_t vs) {
  using R = typename V::R;
  constexpr int A = F<V>::A;
  for (int64_t c0 = 0; c0 < C; c0 += V::kWidth) {
    const auto k = V::lanes(C - c0);
    R t[A][A];  // t[i][j]: F applied down column j
    for (int j = 0; j < A; ++j) {
      R x[A], r[A];
      for (int i = 0; i < A; ++i) x[i] = V::load(d + i * rs + j * C + c0, k);
      F<V>::input(x, r);
      for (int i = 0; i < A; ++i) t[i][j] = r[i];
    }
    for (int i = 0; i < A; ++i) {
      R r[A];
      F<V>::input(t[i], r);
      for (int j = 0; j < A; ++j) V::store(v + (i * A + j) * vs + c0, k, r[j]);
    }
  }
}

// The a^2 products per output channel (position xi at m + xi * ms) through F::output into the m x m
// tile's first rows x cols outputs: pixel (i, j) at y + i * rs + j * O.
template <class V, template <class> class F>
void output_transform(const float* m, int64_t ms, int64_t O, float* y, int64_t rs, int rows, int cols) {
  using R = typename V::R;
  constexpr int A = F<V>::A, M = F<V>::M;
  for (int64_t o0 = 0; o0 < O; o0 += V::kWidth) {
    const auto k = V::lanes(O - o0);
    R s[M][A];  // s[i][j]: F applied down column j
    for (int j = 0; j < A; ++j) {
      R x[A], r[M];
      for (int i = 0; i < A; ++i) x[i] = V::load(m + (i * A + j) * ms + o0, k);
      F<V>::output(x, r);
      for (int i = 0; i < M; ++i) s[i][j] = r[i];
    }
    for (int i = 0; i < rows; ++i) {
      R r[M];
      F<V>::output(s[i], r);
      for (int j = 0; j < cols; ++j) V::store(y + i * rs + j * O + o0, k, r[j]);
    }
  }
}

// The transforms of F(tile x tile, 3x3) over V (tile 2 or 4).
template <class V>
WinogradTransforms transforms(int tile) {
  if (tile == 4) return {input_transform<V, F4>, output_transform<V, F4>};
  return {input_transform<V, F2>, output_transform<V, F2>};
}

}  // namespace ember::cpu::detail::winograd
