// The cast kernel: every dtype to every dtype, with PyTorch 1.13's (x86) conversion rules.
//
//   floating -> int64: truncate toward zero; NaN / out of range give INT64_MIN (cvttsd2si)
//   floating -> i32/i16/i8/u8: truncate to int32 first (NaN / out of range: INT32_MIN), then
//                              wrap to the target width (torch: -1.7 -> u8 255, 300.5 -> i8 44)
//   int -> narrower int: wraps modulo 2^bits;  anything -> bool: x != 0 (NaN -> true)
//   -> f16/bf16: round to nearest even (f64 goes through f32, as torch does)
#include <algorithm>
#include <cstring>
#include <limits>

#include "cpu_backend.hpp"
#include "elementwise_loops.hpp"
#include "elementwise_simd.hpp"

namespace ember::cpu {

namespace {

template <class To, class From>
inline To cast_value(From v) {
  if constexpr (is_floating_v<From> && std::is_integral_v<To> && !std::is_same_v<To, bool>) {
    // Written as selects (no branch, no out-of-range conversion) so that loops vectorise.
    using C = compute_t<From>;  // float or double: exact widening of the half types
    C d = convert_scalar<C>(v);
    if constexpr (sizeof(To) == 8) {
      bool ok = d >= C(-9223372036854775808.0) && d < C(9223372036854775808.0);
      int64_t i = int64_t(ok ? d : C(0));
      return To(ok ? i : std::numeric_limits<int64_t>::min());
    } else {
      bool ok = d > C(-2147483649.0) && d < C(2147483648.0);
      int32_t i = int32_t(ok ? d : C(0));
      return To(uint32_t(ok ? i : std::numeric_limits<int32_t>::min()));
    }
  } else if constexpr (std::is_integral_v<From> && !std::is_same_v<From, bool> && std::is_integral_v<To> &&
                       !std::is_same_v<To, bool>) {
    return To(std::make_unsigned_t<To>(v));
  } else {
    return convert_scalar<To>(v);
  }
}

// Any dtype -> f16/bf16: through float blocks and the vectorised float -> half rounding
// (From -> float first, as torch converts every type to the 16-bit floats).
template <class From, class To>
void to_half(const CpuTensor& x, CpuTensor& out) {
  auto run = [](To* y, const char* px, int64_t sx, int64_t m) {
    alignas(64) float buf[ew::kBlock];
    for (int64_t i = 0; i < m; i += ew::kBlock) {
      int64_t k = std::min(ew::kBlock, m - i);
      for (int64_t j = 0; j < k; ++j) buf[j] = cast_value<float>(*reinterpret_cast<const From*>(px + (i + j) * sx));
      ew::store_floats<To>(buf, y + i, k);
    }
  };
  To* o = out.data<To>();
  int64_t n = out.numel();
  if (ew::dense_as(x, out.shape())) {
    const char* px = static_cast<const char*>(x.raw());
    ew::chunked(n, ew::kGrainCheap, [&run, o, px](int64_t b, int64_t e) {
      run(o + b, px + b * int64_t(sizeof(From)), sizeof(From), e - b);
    });
    return;
  }
  strided_loop(
      out.shape(), {{reinterpret_cast<char*>(o), int64_t(sizeof(To)), out.strides}, ew::operand<From>(x, out.shape())},
      [&run](char** p, const int64_t* s, int64_t m) { run(reinterpret_cast<To*>(p[0]), p[1], s[1], m); },
      ew::kGrainCheap);
}

void cast_compute(const CpuTensor& x, CpuTensor* out);

std::vector<PrimitivePtr> cast_kernel(CpuBackend&, Op& op) {
  if (auto st = ew::permuted_dense(as_cpu(op.inputs[0]))) {  // keep the input's layout
    CpuTensor xf = ew::flat_view(as_cpu(op.inputs[0]));
    CpuTensorPtr out = ew::permuted_output(op, 0, op.outputs[0], *st);
    CpuTensor of = ew::flat_view(*out);
    cast_compute(xf, &of);
    return {out};
  }
  CpuTensorPtr out = output_reusing(op, 0, op.outputs[0]);
  CpuTensorPtr hold;
  const CpuTensor& x = ew::input(op, 0, hold);
  cast_compute(x, out.get());
  return {out};
}

void cast_compute(const CpuTensor& x, CpuTensor* out) {
  DType to = out->dtype();
  int64_t n = out->numel();
  if (n == 0) return;
  bool dense = ew::dense_as(x, out->shape());
  if (x.dtype() == to) {
    if (out->storage == x.storage && out->offset == x.offset) return;  // reused in place
    if (dense) {
      std::memcpy(out->raw(), x.raw(), size_t(n) * dtype_size(to));
      return;
    }
  }
  if (dense && simd::cast(x.dtype(), to, x.raw(), out->raw(), n)) return;
  visit_dtype(x.dtype(), [&]<class From>() {
    visit_dtype(to, [&]<class To>() {
      if constexpr (is_half_v<To> && !std::is_same_v<From, To>) {
        to_half<From, To>(x, *out);
      } else if constexpr (is_half_v<From> && !std::is_same_v<From, To>) {
        ew::half_unary<From, To>(x, *out, ew::kGrainCheap, [](const float* a, To* y, int64_t m) {
          for (int64_t j = 0; j < m; ++j) y[j] = cast_value<To>(a[j]);
        });
      } else {
        ew::unary_map<From, To>(x, *out, ew::kGrainCheap, [](From v) { return cast_value<To>(v); });
      }
    });
  });
}

}  // namespace

void register_cast_kernels(KernelTable& t) { t[size_t(OpKind::cast)] = cast_kernel; }

}  // namespace ember::cpu
