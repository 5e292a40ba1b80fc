// Internals shared by the convolution files of the CPU backend (the family's overview is at the
// top of conv.cpp):
//   conv.cpp            dispatch (conv_forward), im2col / col2im + GEMM, the packed micro-kernel
//                       path, small outputs, conv_transpose, dtype handling and registration;
//   conv_depthwise.cpp  one input channel per group (depthwise);
//   conv_image.cpp      one image at a time through the turned-around GEMM (batch 1), with or
//                       without an im2col (conv_forward_image, conv_forward_image_implicit);
//   conv_winograd.cpp   Winograd F(2x2, 3x3) / F(4x4, 3x3) for 3x3 stride-1 convs (transforms:
//                       conv_winograd_tiles.hpp, instantiated in conv_winograd_avx512.cpp and
//                       conv_winograd_simd128.cpp);
//   conv_avx512.cpp     the AVX-512 kernels they call (detail::*_f32_avx512).
// Here: the conv geometry, scratch buffers, kept weight packings and the fused epilogue.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "conv_kernels.hpp"
#include "cpu_backend.hpp"
#include "cpu_features.hpp"
#include "gemm.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

// the AVX-512 kernels: conv_kernels.hpp

namespace conv {

constexpr int64_t kColBudgetBytes = int64_t(1) << 19;  // per-thread column chunk (L2 resident)

struct ConvGeom {
  int64_t N = 0, C = 0, O = 0, G = 1, Cg = 0, Og = 0;
  // Spatial dims as (D, H, W); 1-d and 2-d convs get leading 1s.
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
  int64_t plane_stride = 0;  // im2col: distance between consecutive channels' planes (0: in_px())
  int64_t in_px() const { return in[0] * in[1] * in[2]; }
  int64_t out_px() const { return out[0] * out[1] * out[2]; }
  int64_t kk() const { return k[0] * k[1] * k[2]; }
  // A 1x1 kernel with unit stride and no padding: the conv is a plain GEMM on the layout.
  bool pointwise() const {
    for (int i = 0; i < 3; ++i)
      if (k[i] != 1 || s[i] != 1 || p[i] != 0 || in[i] != out[i]) return false;
    return true;
  }
};

inline ConvGeom make_geom(const Op& op) {
  const auto& a = op.attr<ConvAttrs>();
  const Shape& xs = op.in(0).shape;
  const Shape& ws = op.in(1).shape;
  const Shape& ys = op.outputs[0].shape;
  const int nd = int(a.stride.size());
  ConvGeom g;
  g.N = xs[0];
  g.C = xs[1];
  g.O = ys[1];
  g.G = a.groups;
  g.Cg = g.C / g.G;
  g.Og = g.O / g.G;
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    g.in[j] = xs[2 + i];
    g.out[j] = ys[2 + i];
    g.k[j] = ws[2 + i];
    g.s[j] = a.stride[i];
    g.p[j] = a.padding[i];
    g.d[j] = a.dilation[i];
  }
  return g;
}

// First index o in [0, n) with 0 <= o*s + off (off may be negative).
inline int64_t first_valid(int64_t off, int64_t s) { return off >= 0 ? 0 : (-off + s - 1) / s; }
// One past the last index o with o*s + off < limit (at most n).
inline int64_t end_valid(int64_t off, int64_t s, int64_t limit, int64_t n) {
  const int64_t num = limit - 1 - off;
  if (num < 0) return 0;
  return std::min(n, num / s + 1);
}

// A thread's scratch buffer; Tag tells apart buffers that are live at the same time.
template <class T, int Tag = 0>
T* workspace(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) {
    buf.clear();
    buf.shrink_to_fit();
    buf.resize(n);
  }
  return buf.data();
}

// Where the weights live, for packings kept with them (Storage::derived): their storage (null
// when they were converted or copied for this call) and their offset in it, in elements.
struct WeightStore {
  Storage* storage = nullptr;
  int64_t offset = 0;
};

// The weights packed by `pack` into `floats` values, kept with the weights from their second
// use on (inference packs once, as ONNX Runtime does at load); null when not kept (the caller
// packs into its own buffer). `hold` keeps the block alive for the call.
inline const float* kept_packing(const WeightStore& ws, std::initializer_list<int64_t> key, size_t floats,
                          const std::function<void(float*)>& pack, std::shared_ptr<const Storage>& hold) {
  if (!ws.storage) return nullptr;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ uint64_t(ws.offset);
  for (int64_t k : key) h = (h ^ uint64_t(k)) * 0x100000001b3ull + (h >> 29);
  hold = ws.storage->derived(h, floats * sizeof(float), [&](void* dst) { pack(static_cast<float*>(dst)); });
  return hold ? static_cast<const float*>(hold->data) : nullptr;
}

// conv_fused's epilogue (ConvAttrs::act_min / act_max and the residual input): y = clamp(y +
// residual, lo, hi), applied by each path to the output rows it has just finished, while they are
// in cache.
template <class T>
struct Epilogue {
  const T* residual = nullptr;  // the residual's element 0 (laid out as the output), or null
  const T* y0 = nullptr;        // the output's element 0
  T lo = -std::numeric_limits<T>::infinity(), hi = std::numeric_limits<T>::infinity();
  bool clamp = false;
  bool active() const { return residual || clamp; }
  // rows x cols of the output at y (row stride ld)
  void operator()(T* y, int64_t rows, int64_t cols, int64_t ld) const {
    if (active()) with_bias(y, rows, cols, ld, nullptr);
  }
  // The same with bias[r] added to row r first (bias null: none), for paths that leave the
  // bias to the epilogue instead of starting from it.
  void with_bias(T* y, int64_t rows, int64_t cols, int64_t ld, const T* bias) const {
    if ((!active() && !bias) || rows <= 0 || cols <= 0) return;
    const T* res = residual ? residual + (y - y0) : nullptr;
    if constexpr (std::is_same_v<T, float>) {
#if defined(__wasm_simd128__)
      detail::conv_epilogue_f32_simd128(y, res, bias, rows, cols, ld, lo, hi);
      return;
#endif
      if (features().avx512) {
        detail::conv_epilogue_f32_avx512(y, res, bias, rows, cols, ld, lo, hi);
        return;
      }
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < cols; ++i) {
        T v = y[r * ld + i] + (bias ? bias[r] : T(0)) + (res ? res[r * ld + i] : T(0));
        v = v < lo ? lo : v;  // NaN stays NaN
        y[r * ld + i] = v > hi ? hi : v;
      }
  }
};

// dst[c * ldd + r] = src[r * lds + c] + bias[c] (bias may be null) for r < rows, c < cols, then
// `epi` on those values, in one pass (AVX-512; SIMD128 in the wasm build): a pixel-major result back into
// channel planes.
inline void transpose_epilogue(const Epilogue<float>& epi, const float* src, int64_t rows, int64_t cols, int64_t lds,
                               const float* bias, float* dst, int64_t ldd) {
  constexpr float inf = std::numeric_limits<float>::infinity();
#if defined(__wasm_simd128__)
  constexpr auto transpose = detail::transpose_bias_f32_simd128;
#else
  constexpr auto transpose = detail::transpose_bias_f32_avx512;
#endif
  transpose(src, rows, cols, lds, bias, dst, ldd, epi.residual ? epi.residual + (dst - epi.y0) : nullptr,
            epi.clamp ? epi.lo : -inf, epi.clamp ? epi.hi : inf);
}

// conv_depthwise.cpp (T: float, double)
template <class T>
void conv_depthwise(const ConvGeom& g, const T* x, const T* w, const T* bias, T* y, const Epilogue<T>& epi);

// conv.cpp: the GEMM kernel set the packed and single-image paths drive (AVX-512; SIMD128 in the wasm
// build, which takes only the packed path), or null.
const detail::GemmKernelSet<float>* packed_conv_kernels();

// conv_image.cpp
bool implicit_applies(const ConvGeom& g, const detail::GemmKernelSet<float>& ks);
void conv_forward_image(const ConvGeom& g, const float* x, const float* w, const float* bias, float* y,
                        const detail::GemmKernelSet<float>& ks, int nth, const WeightStore& ws,
                        const Epilogue<float>& epi);
void conv_forward_image_implicit(const ConvGeom& g, const float* x, const float* w, const float* bias, float* y,
                                 const detail::GemmKernelSet<float>& ks, int nth, const WeightStore& ws,
                                 const Epilogue<float>& epi);

// conv_winograd.cpp: Winograd F(2x2, 3x3) (or F(4x4, 3x3)) for f32 3x3 convs of unit stride and
// dilation, one group, padding 0 or 1 (AVX-512; SIMD128 in the wasm build), where measured faster
// (EMBER_CONV_WINOGRAD overrides). tile_block: tiles a thread takes through all steps at once (a multiple of the
// kernel's mr), 0 for none (the GEMMs spread over the threads instead), -1 to choose; tile: the
// output tile's side, 2 or 4 (0: from EMBER_CONV_WINOGRAD). False, with nothing done, where the
// weights are not kept packed and too few tiles would pay for transforming them in the call
// (unless forced: EMBER_CONV_WINOGRAD, or tile_block / tile given).
// winograd_supported: this build and machine have the path's kernels (whatever the shape and setting).
bool winograd_supported();
bool winograd_applies(const ConvGeom& g);
bool conv_forward_winograd(const ConvGeom& g, const float* x, const float* w, const float* bias, float* y,
                           const detail::GemmKernelSet<float>& ks, const WeightStore& ws, const Epilogue<float>& epi,
                           int64_t tile_block = -1, int tile = 0);

}  // namespace conv
}  // namespace ember::cpu
