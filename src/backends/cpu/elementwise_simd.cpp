#include "elementwise_simd.hpp"

#include <algorithm>
#include <optional>

#include "elementwise_loops.hpp"
#include "vec/vec_math.hpp"

namespace ember::cpu::simd {

namespace {

std::optional<vec::Unary> unary_of(const Op& op) {
  using U = vec::Unary;
  switch (op.kind) {
    case OpKind::exp: return U::exp;
    case OpKind::exp2: return U::exp2;
    case OpKind::expm1: return U::expm1;
    case OpKind::log: return U::log;
    case OpKind::log2: return U::log2;
    case OpKind::log10: return U::log10;
    case OpKind::log1p: return U::log1p;
    case OpKind::sqrt: return U::sqrt;
    case OpKind::rsqrt: return U::rsqrt;
    case OpKind::reciprocal: return U::reciprocal;
    case OpKind::sin: return U::sin;
    case OpKind::cos: return U::cos;
    case OpKind::tan: return U::tan;
    case OpKind::asin: return U::asin;
    case OpKind::acos: return U::acos;
    case OpKind::atan: return U::atan;
    case OpKind::sinh: return U::sinh;
    case OpKind::cosh: return U::cosh;
    case OpKind::tanh: return U::tanh;
    case OpKind::asinh: return U::asinh;
    case OpKind::acosh: return U::acosh;
    case OpKind::atanh: return U::atanh;
    case OpKind::erf: return U::erf;
    case OpKind::sigmoid: return U::sigmoid;
    case OpKind::log_sigmoid: return U::log_sigmoid;
    case OpKind::relu: return U::relu;
    case OpKind::gelu: return U::gelu_erf;
    case OpKind::gelu_tanh: return U::gelu_tanh;
    case OpKind::silu: return U::silu;
    case OpKind::softplus: {
      const auto& a = op.attr<ScalarAttrs>();
      if (a.a == 1.0 && a.b == 20.0) return U::softplus;
      return std::nullopt;
    }
    case OpKind::abs: return U::abs;
    case OpKind::neg: return U::neg;
    case OpKind::square: return U::square;
    case OpKind::floor: return U::floor;
    case OpKind::ceil: return U::ceil;
    case OpKind::round: return U::round;
    case OpKind::trunc: return U::trunc;
    case OpKind::sign: return U::sign;
    default: return std::nullopt;
  }
}

std::optional<vec::Binary> binary_of(OpKind k) {
  using B = vec::Binary;
  switch (k) {
    case OpKind::add: return B::add;
    case OpKind::sub: return B::sub;
    case OpKind::mul: return B::mul;
    case OpKind::div: return B::div;
    case OpKind::maximum: return B::maximum;
    case OpKind::minimum: return B::minimum;
    case OpKind::pow: return B::pow;
    case OpKind::atan2: return B::atan2;
    case OpKind::hypot: return B::hypot;
    case OpKind::fmod: return B::fmod;
    case OpKind::remainder: return B::remainder;
    default: return std::nullopt;
  }
}

// Memory-bound ops get large chunks; the rest (transcendentals) smaller ones.
bool is_cheap(OpKind k) {
  switch (k) {
    case OpKind::add: case OpKind::sub: case OpKind::mul: case OpKind::div: case OpKind::maximum:
    case OpKind::minimum: case OpKind::abs: case OpKind::neg: case OpKind::square: case OpKind::relu:
    case OpKind::floor: case OpKind::ceil: case OpKind::round: case OpKind::trunc: case OpKind::sign:
    case OpKind::sqrt: case OpKind::rsqrt: case OpKind::reciprocal:
      return true;
    default:
      return false;
  }
}

}  // namespace

static void run_unary(vec::Unary fn, int64_t grain, DType dt, const void* x, void* y, int64_t n) {
  if (dt == DType::f32) {
    const float* xs = static_cast<const float*>(x);
    float* ys = static_cast<float*>(y);
    ew::chunked(n, grain, [=](int64_t b, int64_t e) { vec::unary_f32(fn, xs + b, ys + b, e - b); });
  } else {
    const double* xs = static_cast<const double*>(x);
    double* ys = static_cast<double*>(y);
    ew::chunked(n, grain, [=](int64_t b, int64_t e) { vec::unary_f64(fn, xs + b, ys + b, e - b); });
  }
}

bool unary(const Op& op, DType dt, const void* x, void* y, int64_t n) {
  if (dt != DType::f32 && dt != DType::f64) return false;
  auto u = unary_of(op);
  if (!u) return false;
  run_unary(*u, is_cheap(op.kind) ? ew::kGrainCheap : ew::kGrainHeavy, dt, x, y, n);
  return true;
}

namespace {

constexpr int64_t kGather = 256;  // elements gathered per vector call on strided runs

template <class T>
void vec_unary(vec::Unary fn, const T* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) vec::unary_f32(fn, x, y, n);
  else vec::unary_f64(fn, x, y, n);
}
template <class T>
void vec_binary(vec::Binary fn, const T* a, const T* b, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) vec::binary_f32(fn, a, b, y, n);
  else vec::binary_f64(fn, a, b, y, n);
}
template <class T>
void vec_binary_scalar(vec::Binary fn, const T* a, T b, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) vec::binary_scalar_f32(fn, a, b, y, n);
  else vec::binary_scalar_f64(fn, a, b, y, n);
}
template <class T>
void vec_scalar_binary(vec::Binary fn, T a, const T* b, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) vec::scalar_binary_f32(fn, a, b, y, n);
  else vec::scalar_binary_f64(fn, a, b, y, n);
}

// Copies m elements spaced `stride` bytes apart into buf.
template <class T>
inline void gather(const char* p, int64_t stride, T* buf, int64_t m) {
  for (int64_t i = 0; i < m; ++i) buf[i] = *reinterpret_cast<const T*>(p + i * stride);
}

template <class T>
void unary_strided_impl(vec::Unary fn, int64_t grain, const CpuTensor& x, CpuTensor& out) {
  strided_loop(
      out.shape(), {ew::operand<T>(out, out.shape()), ew::operand<T>(x, out.shape())},
      [fn](char** p, const int64_t* s, int64_t m) {
        T* y = reinterpret_cast<T*>(p[0]);  // out is contiguous: unit stride
        if (s[1] == int64_t(sizeof(T))) {
          vec_unary<T>(fn, reinterpret_cast<const T*>(p[1]), y, m);
          return;
        }
        T buf[kGather];
        for (int64_t i = 0; i < m; i += kGather) {
          int64_t k = std::min(kGather, m - i);
          gather<T>(p[1] + i * s[1], s[1], buf, k);
          vec_unary<T>(fn, buf, y + i, k);
        }
      },
      grain);
}

template <class T>
void binary_strided_impl(vec::Binary fn, int64_t grain, const CpuTensor& a, const CpuTensor& b, CpuTensor& out) {
  const Shape& s = out.shape();
  strided_loop(
      s, {ew::operand<T>(out, s), ew::operand<T>(a, s), ew::operand<T>(b, s)},
      [fn](char** p, const int64_t* st, int64_t m) {
        constexpr int64_t es = sizeof(T);
        T* y = reinterpret_cast<T*>(p[0]);
        const T* pa = reinterpret_cast<const T*>(p[1]);
        const T* pb = reinterpret_cast<const T*>(p[2]);
        if (st[1] == es && st[2] == es) return vec_binary<T>(fn, pa, pb, y, m);
        if (st[1] == es && st[2] == 0) return vec_binary_scalar<T>(fn, pa, *pb, y, m);
        if (st[1] == 0 && st[2] == es) return vec_scalar_binary<T>(fn, *pa, pb, y, m);
        T ba[kGather], bb[kGather];
        for (int64_t i = 0; i < m; i += kGather) {
          int64_t k = std::min(kGather, m - i);
          if (st[2] == 0) {
            gather<T>(p[1] + i * st[1], st[1], ba, k);
            vec_binary_scalar<T>(fn, ba, *pb, y + i, k);
          } else if (st[1] == 0) {
            gather<T>(p[2] + i * st[2], st[2], bb, k);
            vec_scalar_binary<T>(fn, *pa, bb, y + i, k);
          } else {
            gather<T>(p[1] + i * st[1], st[1], ba, k);
            gather<T>(p[2] + i * st[2], st[2], bb, k);
            vec_binary<T>(fn, ba, bb, y + i, k);
          }
        }
      },
      grain);
}

}  // namespace

bool unary_strided(const Op& op, const CpuTensor& x, CpuTensor& out) {
  DType dt = out.dtype();
  if (dt != DType::f32 && dt != DType::f64) return false;
  auto u = unary_of(op);
  if (!u) return false;
  int64_t grain = is_cheap(op.kind) ? ew::kGrainCheap : ew::kGrainHeavy;
  if (dt == DType::f32) unary_strided_impl<float>(*u, grain, x, out);
  else unary_strided_impl<double>(*u, grain, x, out);
  return true;
}

bool unary_block_f32(const Op& op, const float* x, float* y, int64_t n) {
  auto u = unary_of(op);
  if (!u) return false;
  vec::unary_f32(*u, x, y, n);
  return true;
}

bool binary_block_f32(const Op& op, const float* a, const float* b, float* y, int64_t n) {
  auto fn = binary_of(op.kind);
  if (!fn) return false;
  vec::binary_f32(*fn, a, b, y, n);
  return true;
}

bool binary_scalar_block_f32(const Op& op, const float* a, float s, float* y, int64_t n) {
  auto fn = binary_of(op.kind);
  if (!fn) return false;
  vec::binary_scalar_f32(*fn, a, s, y, n);
  return true;
}
bool scalar_binary_block_f32(const Op& op, float s, const float* b, float* y, int64_t n) {
  auto fn = binary_of(op.kind);
  if (!fn) return false;
  vec::scalar_binary_f32(*fn, s, b, y, n);
  return true;
}
template <class T>
static void run_binary(vec::Binary fn, const T* a, const T* b, T* y, int64_t n, bool a_one, bool b_one,
                       int64_t grain) {
  if constexpr (std::is_same_v<T, float>) {
    if (b_one) {
      T bv = *b;
      ew::chunked(n, grain, [=](int64_t i, int64_t e) { vec::binary_scalar_f32(fn, a + i, bv, y + i, e - i); });
    } else if (a_one) {
      T av = *a;
      ew::chunked(n, grain, [=](int64_t i, int64_t e) { vec::scalar_binary_f32(fn, av, b + i, y + i, e - i); });
    } else {
      ew::chunked(n, grain, [=](int64_t i, int64_t e) { vec::binary_f32(fn, a + i, b + i, y + i, e - i); });
    }
  } else {
    if (b_one) {
      T bv = *b;
      ew::chunked(n, grain, [=](int64_t i, int64_t e) { vec::binary_scalar_f64(fn, a + i, bv, y + i, e - i); });
    } else if (a_one) {
      T av = *a;
      ew::chunked(n, grain, [=](int64_t i, int64_t e) { vec::scalar_binary_f64(fn, av, b + i, y + i, e - i); });
    } else {
      ew::chunked(n, grain, [=](int64_t i, int64_t e) { vec::binary_f64(fn, a + i, b + i, y + i, e - i); });
    }
  }
}

bool binary(const Op& op, const CpuTensor& a, const CpuTensor& b, CpuTensor& out) {
  DType dt = out.dtype();
  if (dt != DType::f32 && dt != DType::f64) return false;
  auto fn = binary_of(op.kind);
  if (!fn) return false;
  const Shape& s = out.shape();
  bool ad = ew::dense_as(a, s), bd = ew::dense_as(b, s);
  bool a_one = !ad && a.numel() == 1, b_one = !bd && b.numel() == 1;
  int64_t grain = is_cheap(op.kind) ? ew::kGrainCheap : ew::kGrainHeavy;
  if (!(ad || a_one) || !(bd || b_one)) {
    if (dt == DType::f32) binary_strided_impl<float>(*fn, grain, a, b, out);
    else binary_strided_impl<double>(*fn, grain, a, b, out);
    return true;
  }
  int64_t n = out.numel();
  if (dt == DType::f32)
    run_binary<float>(*fn, a.data<float>(), b.data<float>(), out.data<float>(), n, a_one, b_one, grain);
  else
    run_binary<double>(*fn, a.data<double>(), b.data<double>(), out.data<double>(), n, a_one, b_one, grain);
  return true;
}

bool cast(DType from, DType to, const void* x, void* y, int64_t n) {
  constexpr int64_t grain = ew::kGrainCheap;
  if (from == DType::f32 && (to == DType::f16 || to == DType::bf16)) {
    const float* xs = static_cast<const float*>(x);
    uint16_t* ys = static_cast<uint16_t*>(y);
    bool half = to == DType::f16;
    ew::chunked(n, grain, [=](int64_t b, int64_t e) {
      if (half) vec::f32_to_f16(xs + b, ys + b, e - b);
      else vec::f32_to_bf16(xs + b, ys + b, e - b);
    });
    return true;
  }
  if (to == DType::f32 && (from == DType::f16 || from == DType::bf16)) {
    const uint16_t* xs = static_cast<const uint16_t*>(x);
    float* ys = static_cast<float*>(y);
    bool half = from == DType::f16;
    ew::chunked(n, grain, [=](int64_t b, int64_t e) {
      if (half) vec::f16_to_f32(xs + b, ys + b, e - b);
      else vec::bf16_to_f32(xs + b, ys + b, e - b);
    });
    return true;
  }
  return false;
}

}  // namespace ember::cpu::simd
