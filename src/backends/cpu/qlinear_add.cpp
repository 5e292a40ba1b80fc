// The qlinear_add op on the cpu backend (ops.def): one pass over a and b, each element computed as
// the plain ops it stands for would (cast, sub, mul, add, div, round half to even, add, clamp, cast,
// every step rounded to f32), 16 at a time on AVX-512 (qlinear_add_avx512.cpp).
#include "qlinear_add.hpp"

#include <algorithm>
#include <cmath>

#include "cpu_backend.hpp"
#include "cpu_features.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

namespace detail {

template <class T>
void qlinear_add_portable(const T* a, const T* b, T* c, int64_t n, const QAddParams& p) {
  for (int64_t i = 0; i < n; ++i) {
    const float ra = (float(a[i]) - p.za) * p.sa;
    const float rb = (float(b[i]) - p.zb) * p.sb;
    const float sum = ra + rb;
    const float q = std::nearbyint(sum / p.sc) + p.zc;
    c[i] = T(std::clamp(q, p.lo, p.hi));
  }
}

void qlinear_add_isa(bool avx512, bool is_signed, const void* a, const void* b, void* c, int64_t n,
                     const QAddParams& p) {
  if (avx512) return qlinear_add_avx512(is_signed, a, b, c, n, p);
  if (is_signed)
    return qlinear_add_portable(static_cast<const int8_t*>(a), static_cast<const int8_t*>(b), static_cast<int8_t*>(c),
                                n, p);
  qlinear_add_portable(static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), static_cast<uint8_t*>(c), n, p);
}

}  // namespace detail

namespace {

float one_value(const Op& op, size_t i, float absent) {
  if (op.inputs.size() <= i || !op.inputs[i]) return absent;
  auto t = contiguous(op.inputs[i]);
  switch (t->dtype()) {
    case DType::f32: return t->data<float>()[0];
    case DType::u8: return float(t->data<uint8_t>()[0]);
    case DType::i8: return float(t->data<int8_t>()[0]);
    default: EMBER_FAIL("qlinear_add: unexpected dtype ", t->dtype(), " of input ", i);
  }
}

std::vector<PrimitivePtr> qlinear_add_kernel(CpuBackend&, Op& op) {
  auto a = contiguous(op.inputs[0]);
  auto b = contiguous(op.inputs[3]);
  auto out = alloc(op.outputs[0]);
  const bool is_signed = a->dtype() == DType::i8;
  detail::QAddParams p;
  p.sa = one_value(op, 1, 1.f), p.za = one_value(op, 2, 0.f);
  p.sb = one_value(op, 4, 1.f), p.zb = one_value(op, 5, 0.f);
  p.sc = one_value(op, 6, 1.f), p.zc = one_value(op, 7, 0.f);
  p.lo = is_signed ? -128.f : 0.f, p.hi = is_signed ? 127.f : 255.f;
  const auto* pa = static_cast<const uint8_t*>(a->raw());
  const auto* pb = static_cast<const uint8_t*>(b->raw());
  auto* pc = static_cast<uint8_t*>(out->raw());
  const bool avx512 = features().avx512;
  parallel_for(0, out->numel(), 16384, [&](int64_t i0, int64_t i1) {
    detail::qlinear_add_isa(avx512, is_signed, pa + i0, pb + i0, pc + i0, i1 - i0, p);
  });
  return {out};
}

}  // namespace

void register_qlinear_add_kernel(KernelTable& t) { t[size_t(OpKind::qlinear_add)] = qlinear_add_kernel; }

}  // namespace ember::cpu
