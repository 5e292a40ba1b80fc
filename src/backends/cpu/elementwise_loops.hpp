// Internal loop drivers shared by the cpu elementwise kernels (elementwise.cpp, cast.cpp).
//
//   unary_map<float, bool>(x, *out, grain, [](float v) { return v != v; });
//   binary_map<float, float>(a, b, *out, grain, [](float x, float y) { return x + y; });
//
// The functor maps storage values (already in the element types of the tensors). Contiguous
// operands run through a flat loop the compiler can vectorise, split across the pool only when
// the tensor is larger than `grain`; anything else (strided, broadcast) goes through
// strided_loop with the innermost run specialised for unit and zero strides.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cpu_backend.hpp"
#include "cpu_tensor.hpp"
#include "thread_pool.hpp"

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
        if (st[1] == ea && st[2] == eb && st[3] == eb) {
          const TA* x = reinterpret_cast<const TA*>(pa);
          const TB* y = reinterpret_cast<const TB*>(pb);
          const TB* z = reinterpret_cast<const TB*>(pc);
          for (int64_t i = 0; i < m; ++i) po[i] = f(x[i], y[i], z[i]);
        } else {
          for (int64_t i = 0; i < m; ++i)
            po[i] = f(*reinterpret_cast<const TA*>(pa + i * st[1]), *reinterpret_cast<const TB*>(pb + i * st[2]),
                      *reinterpret_cast<const TB*>(pc + i * st[3]));
        }
      },
      grain);
}

}  // namespace ember::cpu::ew
