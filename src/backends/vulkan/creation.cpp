// Creation kernels: full fills on the device ("fill/b<N>": the value's bits, converted on the
// host as the CPU backend converts them). arange, linspace and eye compute their values on the
// host with the CPU backend's formulas (so that every rounding matches) and upload them; the
// upload is queued like a kernel. The random ops are not supported yet (their Philox streams
// must match the CPU backend's).
#include <cmath>
#include <cstring>
#include <limits>

#include "copy.hpp"
#include "glsl.hpp"

namespace ember::vulkan {

namespace {

std::string fill_source(size_t bytes) {
  const DType like = bytes == 1 ? DType::u8 : bytes == 2 ? DType::i16 : DType::f32;
  std::string s = glsl::header({like});
  s += glsl::raw_buffer(0, bytes, "o_", false);
  // the bits in da (8-byte values: both words; narrower: the low bits of da.x)
  std::string value = bytes == 8 ? "p.da" : bytes == 4 ? "p.da.x" : glsl::raw_type(bytes) + "(p.da.x)";
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += step) o_[p.off[0] + int(i)] = " +
       value + ";\n}\n";
  return s;
}

// double -> int64 without undefined behaviour (truncates; out of range saturates, NaN -> 0), as
// the CPU backend.
int64_t to_i64(double v) {
  if (!(v == v)) return 0;
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}
template <class T>
T int_from_double(double v) {
  if constexpr (std::is_same_v<T, bool>)
    return v != 0;
  else
    return static_cast<T>(uint64_t(to_i64(v)));
}

// The value `v` of a creation op in dtype `dt`, as its bytes.
uint64_t value_bits(DType dt, double v) {
  uint64_t bits = 0;
  visit_dtype(dt, [&]<class T>() {
    T value;
    if constexpr (is_floating_v<T>)
      value = convert_scalar<T>(v);
    else
      value = int_from_double<T>(v);
    std::memcpy(&bits, &value, sizeof(T));
  });
  return bits;
}

bool out_dtype(const VulkanBackend& be, const Op& op) { return be.has_dtype(op.outputs[0].dtype); }

std::vector<PrimitivePtr> full_kernel(VulkanBackend& be, Op& op) {
  auto out = be.alloc(op.outputs[0]);
  fill_bits(be, *out, value_bits(out->dtype(), op.attr<CreateAttrs>().a));
  return {out};
}

// The values of arange / linspace / eye (the CPU backend's formulas), uploaded.
std::vector<PrimitivePtr> host_values_kernel(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  const TensorMeta& meta = op.outputs[0];
  TensorData d(meta.shape, meta.dtype);
  const int64_t n = meta.shape.numel();
  visit_dtype(meta.dtype, [&]<class T>() {
    T* p = reinterpret_cast<T*>(d.bytes().data());
    if (op.kind == OpKind::arange) {
      if constexpr (is_half_v<T>) {
        float start = float(a.a), step = float(a.c);
        for (int64_t i = 0; i < n; ++i) p[i] = T(start + step * float(i));
      } else if constexpr (std::is_floating_point_v<T>) {
        double start = a.a, step = a.c;
        for (int64_t i = 0; i < n; ++i) p[i] = T(start + step * double(i));
      } else {
        uint64_t start = uint64_t(to_i64(a.a)), step = uint64_t(to_i64(a.c));
        for (int64_t i = 0; i < n; ++i) p[i] = convert_scalar<T>(int64_t(start + step * uint64_t(i)));
      }
    } else if (op.kind == OpKind::linspace) {
      // torch's formula: the first half counts up from start, the second down from end
      const int64_t half = n / 2;
      if constexpr (is_floating_v<T>) {
        using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
        C start = C(a.a), end = C(a.b);
        if (n == 1) p[0] = convert_scalar<T>(start);
        C step = n > 1 ? (end - start) / C(n - 1) : C(0);
        for (int64_t i = 0; i < n && n > 1; ++i)
          p[i] = convert_scalar<T>(i < half ? start + step * C(i) : end - step * C(n - 1 - i));
      } else {
        T start = int_from_double<T>(a.a), end = int_from_double<T>(a.b);
        if (n == 1) p[0] = start;
        double ds = double(start), de = double(end);
        double step = n > 1 ? (de - ds) / double(n - 1) : 0;
        for (int64_t i = 0; i < n && n > 1; ++i)
          p[i] = int_from_double<T>(i < half ? ds + step * double(i) : de - step * double(n - 1 - i));
      }
    } else {  // eye
      const int64_t rows = meta.shape[0], cols = meta.shape[1];
      for (int64_t i = 0; i < rows * cols; ++i) p[i] = convert_scalar<T>(0);
      for (int64_t i = 0; i < std::min(rows, cols); ++i) p[i * cols + i] = convert_scalar<T>(1);
    }
  });
  return {be.write(d)};
}

}  // namespace

void fill_bits(VulkanBackend& be, const VulkanTensor& out, uint64_t bits) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const size_t esz = dtype_size(out.dtype());
  KernelParams p = make_params(be.current_op(), out.shape(), {operand_of(out)});
  p.da[0] = uint32_t(bits);
  p.da[1] = uint32_t(bits >> 32);
  VkPipeline pipe =
      be.shaders().get(be.current_op(), "fill/b" + std::to_string(esz), [esz] { return fill_source(esz); });
  be.dispatch(pipe, {out.buffer, nullptr, nullptr, nullptr}, &p, sizeof p, be.groups_for(n));
}

void register_creation_kernels(KernelTable& t, DTypeTable& d) {
  for (OpKind k : {OpKind::full, OpKind::arange, OpKind::linspace, OpKind::eye}) {
    t[size_t(k)] = k == OpKind::full ? full_kernel : host_values_kernel;
    d[size_t(k)] = out_dtype;
  }
}

}  // namespace ember::vulkan
