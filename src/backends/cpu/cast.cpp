// The cast kernel: every dtype to every dtype, with PyTorch 1.13's (x86) conversion rules.
//
//   floating -> int64: truncate toward zero; NaN / out of range give INT64_MIN (cvttsd2si)
//   floating -> i32/i16/i8/u8: truncate to int32 first (NaN / out of range: INT32_MIN), then
//                              wrap to the target width (torch: -1.7 -> u8 255, 300.5 -> i8 44)
//   int -> narrower int: wraps modulo 2^bits;  anything -> bool: x != 0 (NaN -> true)
//   -> f16/bf16: round to nearest even (f64 goes through f32, as torch does)
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
    using C = compute_t<From>;  // float or double: exact widening of the half types
    C d = convert_scalar<C>(v);
    if constexpr (sizeof(To) == 8) {
      if (!(d >= C(-9223372036854775808.0) && d < C(9223372036854775808.0)))
        return std::numeric_limits<int64_t>::min();
      return To(int64_t(d));
    } else {
      int32_t i;
      if (!(d > C(-2147483649.0) && d < C(2147483648.0))) i = std::numeric_limits<int32_t>::min();
      else i = int32_t(d);
      return To(uint32_t(i));
    }
  } else if constexpr (std::is_integral_v<From> && !std::is_same_v<From, bool> && std::is_integral_v<To> &&
                       !std::is_same_v<To, bool>) {
    return To(std::make_unsigned_t<To>(v));
  } else {
    return convert_scalar<To>(v);
  }
}

std::vector<PrimitivePtr> cast_kernel(CpuBackend&, Op& op) {
  const CpuTensor& x = as_cpu(op.inputs[0]);
  DType to = op.outputs[0].dtype;
  CpuTensorPtr out = output_reusing(op, 0, op.outputs[0]);
  int64_t n = out->numel();
  if (n == 0) return {out};
  bool dense = ew::dense_as(x, out->shape());
  if (x.dtype() == to) {
    if (out->storage == x.storage) return {out};  // reused in place: nothing to convert
    if (dense) {
      std::memcpy(out->raw(), x.raw(), size_t(n) * dtype_size(to));
      return {out};
    }
  }
  if (dense && simd::cast(x.dtype(), to, x.raw(), out->raw(), n)) return {out};
  visit_dtype(x.dtype(), [&]<class From>() {
    visit_dtype(to, [&]<class To>() {
      ew::unary_map<From, To>(x, *out, ew::kGrainCheap, [](From v) { return cast_value<To>(v); });
    });
  });
  return {out};
}

}  // namespace

void register_cast_kernels(KernelTable& t) { t[size_t(OpKind::cast)] = cast_kernel; }

}  // namespace ember::cpu
