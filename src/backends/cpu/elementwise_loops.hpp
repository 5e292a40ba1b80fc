// Internal loop drivers shared by the cpu elementwise kernels (elementwise.cpp, cast.cpp).
//
//   unary_map<float, bool>(x, *out, grain, [](float v) { return v != v; });
//   binary_map<float, float>(a, b, *out, grain, [](float x, float y) { return x + y; });
//
// The functor maps storage values (already in the element types of the tensors). Contiguous
// operands run through a flat loop the compiler can vectorise, split across the pool only when
// the tensor is larger than `grain` (small tensors: no std::function, no dispatch); anything
// else (strided, broadcast) goes through strided_loop with the innermost run specialised for
// unit and zero strides. Also here: layout preservation for permuted inputs, the copy of
// cache-hostile (transposed) inputs, and the f16/bf16 drivers that compute in float blocks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <type_traits>
#include <vector>

#include "cpu_backend.hpp"
#include "cpu_tensor.hpp"
#include "layout_walk.hpp"
#include "thread_pool.hpp"
#include "vec/vec_math.hpp"

namespace ember::cpu {
void register_cast_kernels(KernelTable& t);  // cast.cpp
}  // namespace ember::cpu

namespace ember::cpu::ew {

inline constexpr int64_t kGrainCheap = 65536;  // memory-bound ops (add, neg, casts, ...)
inline constexpr int64_t kGrainHeavy = 16384;  // transcendental ops (exp, sin, pow, ...)

// fn(b, e) over [0, n): inline when n <= grain (no std::function, no dispatch).
template <class F>
inline void chunked(int64_t n, int64_t grain, F&& fn) {
  if (n <= grain)
    fn(int64_t(0), n);
  else
    parallel_for(0, n, grain, fn);
}

// True when `t` has exactly the shape `s` and is laid out contiguously.
inline bool dense_as(const CpuTensor& t, const Shape& s) { return t.shape() == s && t.is_contiguous(); }

// ---------------------------------------------------------------- layout-preserving outputs
//
// Like PyTorch, an elementwise op whose (non-scalar) inputs all share one dense but permuted
// layout (e.g. a transposed contiguous tensor) produces its output in that same layout, so the
// work is a flat loop over memory. The kernels run on 1-d views of the buffers.

// The strides of `t` when its elements exactly fill one block of memory in some dim order
// other than row-major; nullopt otherwise (contiguous, overlapping, gaps, negative strides).
inline std::optional<std::vector<int64_t>> permuted_dense(const CpuTensor& t) {
  if (t.is_contiguous()) return std::nullopt;
  const Shape& s = t.shape();
  struct Dim {
    int64_t stride, size;
  };
  Dim dims[64];  // the dims of size > 1
  int k = 0;
  for (int d = 0; d < s.rank(); ++d) {
    if (s[d] == 1) continue;
    if (t.strides[d] <= 0 || k == 64) return std::nullopt;
    dims[k++] = {t.strides[d], s[d]};
  }
  std::sort(dims, dims + k, [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
  int64_t expect = 1;
  for (int i = 0; i < k; ++i) {
    if (dims[i].stride != expect) return std::nullopt;
    expect *= dims[i].size;
  }
  return t.strides;
}
// Same layout for the dims that matter (size > 1).
inline bool same_layout(const CpuTensor& a, const std::vector<int64_t>& strides) {
  const Shape& s = a.shape();
  for (int d = 0; d < s.rank(); ++d)
    if (s[d] > 1 && a.strides[d] != strides[d]) return false;
  return true;
}
// A 1-d view of the memory block of a dense tensor.
inline CpuTensor flat_view(const CpuTensor& t) {
  return CpuTensor(TensorMeta{Shape{t.numel()}, t.dtype()}, t.storage, {1}, t.offset);
}
// An output with `meta` laid out with `strides` (a dense permutation): input i's buffer when the
// op owns it and the sizes match, a new buffer otherwise.
inline CpuTensorPtr permuted_output(Op& op, size_t i, const TensorMeta& meta, const std::vector<int64_t>& strides) {
  size_t bytes = size_t(meta.shape.numel()) * dtype_size(meta.dtype);
  if (i < op.inputs.size() && op.inputs[i] && op.inputs[i].use_count() == 1) {
    const CpuTensor& t = as_cpu(op.inputs[i]);
    if (t.storage.use_count() == 1 && t.storage->begin_write() && t.offset == 0 && t.shape() == meta.shape &&
        dtype_size(t.dtype()) == dtype_size(meta.dtype) && t.storage->bytes == bytes && same_layout(t, strides))
      return std::make_shared<CpuTensor>(meta, t.storage, strides, 0);
  }
  return std::make_shared<CpuTensor>(meta, std::make_shared<Storage>(bytes), strides, 0);
}

// A contiguous copy of `p` when reading it in the output's order would touch a new cache
// line per element (a permuted layout mixed with other layouts, e.g. a transpose plus a
// contiguous tensor: the layout walker copies it in cache-friendly tiles); nullptr when `p`
// is fine as it is.
inline CpuTensorPtr unscatter(const PrimitivePtr& p, const Shape& out_shape) {
  const CpuTensor& t = as_cpu(p);
  if (t.numel() < 1024 || t.is_contiguous()) return nullptr;
  const Shape& s = t.shape();
  int r = s.rank();
  int inner = r - 1;
  while (inner >= 0 && s[inner] == 1) --inner;
  if (inner < 0 || out_shape.rank() == 0 || out_shape[-1] != s[inner] || inner != r - 1) return nullptr;
  int64_t stride_bytes = std::abs(t.strides[inner]) * int64_t(dtype_size(t.dtype()));
  if (stride_bytes <= 64) return nullptr;
  for (int d = 0; d < r; ++d)
    if (s[d] > 1 && (t.strides[d] == 1 || t.strides[d] == -1)) {
      auto c = alloc(t.meta());
      walk_detail::copy_tensor(*c, t);  // tiled transposing copy
      return c;
    }
  return nullptr;
}
// The tensor to read input i from: op.inputs[i] itself or its unscattered copy (kept in `hold`).
inline const CpuTensor& input(Op& op, size_t i, CpuTensorPtr& hold) {
  hold = unscatter(op.inputs[i], op.outputs[0].shape);
  return hold ? *hold : as_cpu(op.inputs[i]);
}

template <class T>
inline LoopOperand operand(const CpuTensor& t, const Shape& out_shape) {
  return {static_cast<char*>(t.raw()), int64_t(sizeof(T)), broadcast_strides(t, out_shape)};
}

template <class TI, class TO, class F>
void unary_map(const CpuTensor& x, CpuTensor& out, int64_t grain, F f) {
  int64_t n = out.numel();
  if (n == 0) return;
  TO* o = out.data<TO>();
  if (dense_as(x, out.shape())) {
    const TI* a = x.data<TI>();
    chunked(n, grain, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = f(a[i]);
    });
    return;
  }
  strided_loop(
      out.shape(), {{reinterpret_cast<char*>(o), int64_t(sizeof(TO)), out.strides}, operand<TI>(x, out.shape())},
      [&f](char** p, const int64_t* s, int64_t m) {
        TO* po = reinterpret_cast<TO*>(p[0]);
        const char* pa = p[1];
        if (s[1] == int64_t(sizeof(TI))) {
          const TI* a = reinterpret_cast<const TI*>(pa);
          for (int64_t i = 0; i < m; ++i) po[i] = f(a[i]);
        } else {
          for (int64_t i = 0; i < m; ++i) po[i] = f(*reinterpret_cast<const TI*>(pa + i * s[1]));
        }
      },
      grain);
}

template <class TI, class TO, class F>
void binary_map(const CpuTensor& a, const CpuTensor& b, CpuTensor& out, int64_t grain, F f) {
  int64_t n = out.numel();
  if (n == 0) return;
  TO* o = out.data<TO>();
  const Shape& s = out.shape();
  if (n == 1) {
    o[0] = f(*a.data<TI>(), *b.data<TI>());
    return;
  }
  bool ad = dense_as(a, s), bd = dense_as(b, s);
  if (ad && (bd || b.numel() == 1)) {
    const TI* pa = a.data<TI>();
    const TI* pb = b.data<TI>();
    if (bd) {
      chunked(n, grain, [=](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) o[i] = f(pa[i], pb[i]);
      });
    } else {
      TI vb = *pb;
      chunked(n, grain, [=](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) o[i] = f(pa[i], vb);
      });
    }
    return;
  }
  if (bd && a.numel() == 1) {
    TI va = *a.data<TI>();
    const TI* pb = b.data<TI>();
    chunked(n, grain, [=](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) o[i] = f(va, pb[i]);
    });
    return;
  }
  constexpr int64_t es = sizeof(TI);
  strided_loop(
      s, {{reinterpret_cast<char*>(o), int64_t(sizeof(TO)), out.strides}, operand<TI>(a, s), operand<TI>(b, s)},
      [&f](char** p, const int64_t* st, int64_t m) {
        TO* po = reinterpret_cast<TO*>(p[0]);
        const char* pa = p[1];
        const char* pb = p[2];
        if (st[1] == es && st[2] == es) {
          const TI* x = reinterpret_cast<const TI*>(pa);
          const TI* y = reinterpret_cast<const TI*>(pb);
          for (int64_t i = 0; i < m; ++i) po[i] = f(x[i], y[i]);
        } else if (st[1] == es && st[2] == 0) {
          const TI* x = reinterpret_cast<const TI*>(pa);
          TI y = *reinterpret_cast<const TI*>(pb);
          for (int64_t i = 0; i < m; ++i) po[i] = f(x[i], y);
        } else if (st[1] == 0 && st[2] == es) {
          TI x = *reinterpret_cast<const TI*>(pa);
          const TI* y = reinterpret_cast<const TI*>(pb);
          for (int64_t i = 0; i < m; ++i) po[i] = f(x, y[i]);
        } else {
          for (int64_t i = 0; i < m; ++i)
            po[i] = f(*reinterpret_cast<const TI*>(pa + i * st[1]), *reinterpret_cast<const TI*>(pb + i * st[2]));
        }
      },
      grain);
}

// out = f(a, b, c) with broadcasting; TA is a's element type, TB the type of b and c.
template <class TA, class TB, class TO, class F>
void ternary_map(const CpuTensor& a, const CpuTensor& b, const CpuTensor& c, CpuTensor& out, int64_t grain, F f) {
  int64_t n = out.numel();
  if (n == 0) return;
  TO* o = out.data<TO>();
  const Shape& s = out.shape();
  if (n == 1) {
    o[0] = f(*a.data<TA>(), *b.data<TB>(), *c.data<TB>());
    return;
  }
  if (dense_as(a, s) && dense_as(b, s) && dense_as(c, s)) {
    const TA* pa = a.data<TA>();
    const TB* pb = b.data<TB>();
    const TB* pc = c.data<TB>();
    chunked(n, grain, [=](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) o[i] = f(pa[i], pb[i], pc[i]);
    });
    return;
  }
  strided_loop(
      s,
      {{reinterpret_cast<char*>(o), int64_t(sizeof(TO)), out.strides}, operand<TA>(a, s), operand<TB>(b, s),
       operand<TB>(c, s)},
      [&f](char** p, const int64_t* st, int64_t m) {
        TO* po = reinterpret_cast<TO*>(p[0]);
        const char* pa = p[1];
        const char* pb = p[2];
        const char* pc = p[3];
        constexpr int64_t ea = sizeof(TA), eb = sizeof(TB);
        if (st[1] == ea && (st[2] == eb || st[2] == 0) && (st[3] == eb || st[3] == 0)) {
          // a unit-stride; b and c unit-stride or one repeated value (where with a scalar)
          const TA* x = reinterpret_cast<const TA*>(pa);
          const TB* y = reinterpret_cast<const TB*>(pb);
          const TB* z = reinterpret_cast<const TB*>(pc);
          if (st[2] == eb && st[3] == eb) {
            for (int64_t i = 0; i < m; ++i) po[i] = f(x[i], y[i], z[i]);
          } else if (st[2] == 0 && st[3] == eb) {
            TB y0 = *y;
            for (int64_t i = 0; i < m; ++i) po[i] = f(x[i], y0, z[i]);
          } else if (st[3] == 0 && st[2] == eb) {
            TB z0 = *z;
            for (int64_t i = 0; i < m; ++i) po[i] = f(x[i], y[i], z0);
          } else {
            TB y0 = *y, z0 = *z;
            for (int64_t i = 0; i < m; ++i) po[i] = f(x[i], y0, z0);
          }
        } else {
          for (int64_t i = 0; i < m; ++i)
            po[i] = f(*reinterpret_cast<const TA*>(pa + i * st[1]), *reinterpret_cast<const TB*>(pb + i * st[2]),
                      *reinterpret_cast<const TB*>(pc + i * st[3]));
        }
      },
      grain);
}

// ---------------------------------------------------------------- f16 / bf16 in float blocks
//
// 16-bit floats are converted to float in blocks of kBlock elements (vectorised conversions),
// computed in float by `kern` and rounded back once. kern(const float* x, Y* y, m) (unary) or
// kern(const float* a, const float* b, Y* y, m) (binary) writes float results (Y = float,
// converted to T afterwards) or, for bool outputs, the outputs themselves.

inline constexpr int64_t kBlock = 256;

template <class T>
inline void load_floats(const T* x, float* y, int64_t n) {
  if constexpr (std::is_same_v<T, f16>) vec::f16_to_f32(reinterpret_cast<const uint16_t*>(x), y, n);
  else vec::bf16_to_f32(reinterpret_cast<const uint16_t*>(x), y, n);
}
template <class T>
inline void store_floats(const float* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, f16>) vec::f32_to_f16(x, reinterpret_cast<uint16_t*>(y), n);
  else vec::f32_to_bf16(x, reinterpret_cast<uint16_t*>(y), n);
}
// m elements spaced `stride` bytes apart (sizeof(T): contiguous, 0: one repeated value).
template <class T>
inline void load_run(const char* p, int64_t stride, float* buf, int64_t m) {
  if (stride == int64_t(sizeof(T))) {
    load_floats(reinterpret_cast<const T*>(p), buf, m);
  } else if (stride == 0) {
    float v = static_cast<float>(*reinterpret_cast<const T*>(p));
    for (int64_t i = 0; i < m; ++i) buf[i] = v;
  } else {
    T tmp[kBlock];
    for (int64_t i = 0; i < m; ++i) tmp[i] = *reinterpret_cast<const T*>(p + i * stride);
    load_floats(tmp, buf, m);
  }
}

template <class T, class TO, class K>
void half_unary(const CpuTensor& x, CpuTensor& out, int64_t grain, K kern) {
  int64_t n = out.numel();
  if (n == 0) return;
  auto run = [&kern](TO* y, const char* px, int64_t sx, int64_t m) {
    alignas(64) float bx[kBlock];
    for (int64_t i = 0; i < m; i += kBlock) {
      int64_t k = std::min(kBlock, m - i);
      load_run<T>(px + i * sx, sx, bx, k);
      if constexpr (std::is_same_v<TO, T>) {
        alignas(64) float by[kBlock];
        kern(static_cast<const float*>(bx), by, k);
        store_floats<T>(by, y + i, k);
      } else {
        kern(static_cast<const float*>(bx), y + i, k);
      }
    }
  };
  TO* o = out.data<TO>();
  if (dense_as(x, out.shape())) {
    const char* px = static_cast<const char*>(x.raw());
    chunked(n, grain, [&run, o, px](int64_t b, int64_t e) { run(o + b, px + b * int64_t(sizeof(T)), sizeof(T), e - b); });
    return;
  }
  strided_loop(
      out.shape(), {{reinterpret_cast<char*>(o), int64_t(sizeof(TO)), out.strides}, operand<T>(x, out.shape())},
      [&run](char** p, const int64_t* s, int64_t m) { run(reinterpret_cast<TO*>(p[0]), p[1], s[1], m); }, grain);
}

template <class T, class TO, class K>
void half_binary(const CpuTensor& a, const CpuTensor& b, CpuTensor& out, int64_t grain, K kern) {
  int64_t n = out.numel();
  if (n == 0) return;
  auto run = [&kern](TO* y, const char* pa, int64_t sa, const char* pb, int64_t sb, int64_t m) {
    alignas(64) float ba[kBlock], bb[kBlock];
    for (int64_t i = 0; i < m; i += kBlock) {
      int64_t k = std::min(kBlock, m - i);
      load_run<T>(pa + i * sa, sa, ba, k);
      load_run<T>(pb + i * sb, sb, bb, k);
      if constexpr (std::is_same_v<TO, T>) {
        alignas(64) float by[kBlock];
        kern(static_cast<const float*>(ba), static_cast<const float*>(bb), by, k);
        store_floats<T>(by, y + i, k);
      } else {
        kern(static_cast<const float*>(ba), static_cast<const float*>(bb), y + i, k);
      }
    }
  };
  TO* o = out.data<TO>();
  const Shape& s = out.shape();
  bool ad = dense_as(a, s), bd = dense_as(b, s);
  if ((ad || a.numel() == 1) && (bd || b.numel() == 1)) {
    const char* pa = static_cast<const char*>(a.raw());
    const char* pb = static_cast<const char*>(b.raw());
    int64_t sa = ad ? int64_t(sizeof(T)) : 0, sb = bd ? int64_t(sizeof(T)) : 0;
    chunked(n, grain, [&run, o, pa, pb, sa, sb](int64_t i0, int64_t i1) {
      run(o + i0, pa + i0 * sa, sa, pb + i0 * sb, sb, i1 - i0);
    });
    return;
  }
  strided_loop(
      s, {{reinterpret_cast<char*>(o), int64_t(sizeof(TO)), out.strides}, operand<T>(a, s), operand<T>(b, s)},
      [&run](char** p, const int64_t* st, int64_t m) { run(reinterpret_cast<TO*>(p[0]), p[1], st[1], p[2], st[2], m); },
      grain);
}

}  // namespace ember::cpu::ew
