// Random creation: random_uniform, random_bernoulli, random_randint, drawing the CPU backend's
// Philox-4x32-10 streams bit for bit (src/backends/cpu/random.cpp): the backend keeps the same
// (seed, counter) state, each op reserves the same number of counter blocks, and element i uses
// the same words of block i / per_block, so a seed gives the CPU backend's values exactly.
// random_normal is not supported: its Box-Muller transform goes through the CPU backend's
// vectorised log/sin/cos, which the GLSL maths matches only to a few ulp, not bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "glsl.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {

namespace {

struct RandomParams {
  uint32_t n = 0, per_block = 4;
  uint32_t key[2] = {}, counter[2] = {};
  uint32_t guard = 0, wide = 0;  // uniform: move results >= high below it; randint: 64-bit range
  uint32_t lo_d[2] = {}, span_d[2] = {}, high_d[2] = {}, top[2] = {};  // double values; top: bits
  float lo_f = 0, span_f = 0, hi_f = 0;
  uint32_t pad = 0;
  uint32_t threshold[2] = {}, range[2] = {}, low[2] = {};
  uint32_t pad2[2] = {};
};
static_assert(sizeof(RandomParams) == 112);

const char* kRandomPrelude = R"GLSL(
struct RandomParams {
  uint n; uint per_block; uvec2 key; uvec2 counter; uint guard; uint wide;
  uvec2 lo_d; uvec2 span_d; uvec2 high_d; uvec2 top; float lo_f; float span_f; float hi_f; uint pad;
  uvec2 threshold; uvec2 range; uvec2 low; uint pad2; uint pad3;
};
layout(std430, binding = 6) readonly buffer RandomParamsBuf { RandomParams r; };
// Philox-4x32-10 of the 128-bit counter (c, 0) under the 64-bit key
uvec4 ember_philox(uvec2 key, uvec2 c) {
  uint x0 = c.x, x1 = c.y, x2 = 0u, x3 = 0u, k0 = key.x, k1 = key.y;
  for (int i = 0; i < 10; ++i) {
    uint h0, l0, h1, l1;
    umulExtended(0xD2511F53u, x0, h0, l0);
    umulExtended(0xCD9E8D57u, x2, h1, l1);
    uint y0 = h1 ^ x1 ^ k0, y1 = l1, y2 = h0 ^ x3 ^ k1, y3 = l0;
    x0 = y0; x1 = y1; x2 = y2; x3 = y3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return uvec4(x0, x1, x2, x3);
}
// word j (0-3) of block b of the op's range
uvec4 ember_block(uint b) {
  uint lo = r.counter.x + b;
  uint carry = lo < b ? 1u : 0u;
  return ember_philox(r.key, uvec2(lo, r.counter.y + carry));
}
)GLSL";

bool random_dtypes(const VulkanBackend& be, const Op& op) {
  const DType dt = op.outputs.empty() ? DType::f32 : op.outputs[0].dtype;
  if (!op.outputs.empty() && !be.has_dtype(dt)) return false;
  // uniform's bounds and randint's values are compared / made in double and int64
  return be.has_dtype(DType::f64) && be.has_dtype(DType::i64);
}

std::string random_source(OpKind k, DType dt) {
  std::vector<DType> dts = {dt, DType::f64, DType::i64};
  if (dt == DType::f16) dts.push_back(DType::i16);  // (uint16_t for its bits)
  std::string s = glsl::header(dts, false);
  s += kRandomPrelude;
  s += glsl::buffer(0, dt, "o_", false);
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  for (uint i = gl_GlobalInvocationID.x; i < r.n; i += step) {\n"
       "    uvec4 w4 = ember_block(i / r.per_block);\n    uint j = i % r.per_block;\n";
  if (k == OpKind::random_uniform) {
    if (dt == DType::f64) {
      s += "    uint hi = w4[2u * j], lo = w4[2u * j + 1u];\n"
           "    double u = double((uint64_t(hi) << 32 | uint64_t(lo)) >> 11) * (1.0LF / 9007199254740992.0LF);\n"
           "    precise double v = packDouble2x32(r.lo_d) + packDouble2x32(r.span_d) * u;\n"
           "    if (r.guard != 0u && v >= packDouble2x32(r.high_d)) v = packDouble2x32(r.top);\n"
           "    o_[i] = v;\n";
    } else if (dt == DType::f32) {
      s += "    float u = float(w4[j] >> 8) * (1.0 / 16777216.0);\n"
           "    precise float v = r.lo_f + r.span_f * u;\n"
           "    if (r.guard != 0u && v >= r.hi_f) v = uintBitsToFloat(r.top.x);\n"
           "    o_[i] = v;\n";
    } else {  // f16, bf16: rounded from float, then moved below high when it reached it
      const std::string top = dt == DType::f16 ? "uint16BitsToHalf(uint16_t(r.top.x))" : "uint16_t(r.top.x)";
      s += "    float u = float(w4[j] >> 8) * (1.0 / 16777216.0);\n"
           "    precise float v = r.lo_f + r.span_f * u;\n"
           "    " +
           glsl::storage_type(dt) + " h = " + glsl::store(dt, "v") +
           ";\n"
           "    if (r.guard != 0u && double(" +
           glsl::load(dt, "h") + ") >= packDouble2x32(r.high_d)) h = " + top +
           ";\n"
           "    o_[i] = h;\n";
    }
  } else if (k == OpKind::random_bernoulli) {
    const std::string one = glsl::store(dt, glsl::convert(DType::i64, dt, "int64_t(1)"));
    const std::string zero = glsl::store(dt, glsl::convert(DType::i64, dt, "int64_t(0)"));
    s += "    bool on = r.threshold.y != 0u || w4[j] < r.threshold.x;\n"
         "    o_[i] = on ? " +
         one + " : " + zero + ";\n";
  } else {  // randint
    s += "    uint64_t v;\n"
         "    if (r.wide == 0u) {\n"
         "      if (r.range.y != 0u) v = uint64_t(w4[j]);  // a range of 2^32\n"
         "      else { uint hi, lo; umulExtended(w4[j], r.range.x, hi, lo); v = uint64_t(hi); }\n"
         "    } else {\n"
         "      uint64_t range = uint64_t(r.range.x) | (uint64_t(r.range.y) << 32);\n"
         "      v = (uint64_t(w4[2u * j]) << 32 | uint64_t(w4[2u * j + 1u])) % range;\n"
         "    }\n"
         "    int64_t x = int64_t((uint64_t(r.low.x) | (uint64_t(r.low.y) << 32)) + v);\n"
         "    o_[i] = " +
         glsl::store(dt, glsl::convert(DType::i64, dt, "x")) + ";\n";
  }
  s += "  }\n}\n";
  return s;
}

void put(uint32_t* dst, double v) { std::memcpy(dst, &v, 8); }
void put64(uint32_t* dst, uint64_t v) {
  dst[0] = uint32_t(v);
  dst[1] = uint32_t(v >> 32);
}

// The largest value of dt strictly below `high` (the CPU backend's `below`), as bits.
uint64_t below_bits(DType dt, double high) {
  uint64_t bits = 0;
  if (dt == DType::f64) {
    const double h = std::nextafter(high, -std::numeric_limits<double>::infinity());
    std::memcpy(&bits, &h, 8);
  } else if (dt == DType::f32) {
    float h = float(high);
    if (double(h) >= high) h = std::nextafter(h, -std::numeric_limits<float>::infinity());
    uint32_t b;
    std::memcpy(&b, &h, 4);
    bits = b;
  } else {
    visit_dtype(dt, [&]<class T>() {
      if constexpr (is_half_v<T>) {
        T h(static_cast<float>(high));
        if (!(double(static_cast<float>(h)) < high)) {
          uint16_t b = h.bits;
          constexpr uint16_t sign = 0x8000u;
          if ((b & 0x7fffu) == 0)
            h = T::from_bits(uint16_t(sign | 1u));
          else
            h = T::from_bits(b & sign ? uint16_t(b + 1) : uint16_t(b - 1));
        }
        bits = h.bits;
      }
    });
  }
  return bits;
}

std::vector<PrimitivePtr> random_kernel(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = be.alloc(op.outputs[0]);
  const int64_t n = out->numel();
  if (n <= 0) return {out};
  EMBER_CHECK(n <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  const DType dt = out->dtype();
  RandomParams p;
  p.n = uint32_t(n);
  if (op.kind == OpKind::random_uniform) {
    const double low = a.a, high = a.b;
    p.per_block = dt == DType::f64 ? 2 : 4;
    p.guard = high > low ? 1 : 0;
    put(p.lo_d, low);
    put(p.span_d, high - low);
    put(p.high_d, high);
    put64(p.top, below_bits(dt, high));
    p.lo_f = float(low);
    p.span_f = float(high - low);
    p.hi_f = float(high);
    if (dt == DType::f32)
      p.guard = p.guard && double(p.hi_f) >= high ? 1 : 0;  // float(high) rounded down: nothing reaches it
  } else if (op.kind == OpKind::random_bernoulli) {
    const double pc = std::clamp(a.a, 0.0, 1.0);
    put64(p.threshold, uint64_t(std::llround(pc * 4294967296.0)));
  } else {
    const int64_t low = int64_t(a.a), high = int64_t(a.b);
    EMBER_CHECK(low < high, "random_randint: low ", low, " must be smaller than high ", high);
    visit_dtype(dt, [&]<class T>() {
      if constexpr (std::is_integral_v<T>) {  // torch: the bounds must fit the dtype
        using L = std::numeric_limits<T>;
        EMBER_CHECK(low >= int64_t(L::lowest()), "random_randint: from ", low, " is out of bounds for ",
                    dtype_name(dt));
        constexpr bool kWide = std::is_same_v<T, int64_t>;
        EMBER_CHECK(kWide || high - 1 <= int64_t(L::max()), "random_randint: to - 1 = ", high - 1,
                    " is out of bounds for ", dtype_name(dt));
      }
    });
    const uint64_t range = uint64_t(high) - uint64_t(low);
    p.wide = range > (uint64_t(1) << 32) ? 1 : 0;
    p.per_block = p.wide ? 2 : 4;
    put64(p.range, range);
    put64(p.low, uint64_t(low));
  }
  const VulkanBackend::RandomStream rs = be.next_random(uint64_t((n + p.per_block - 1) / p.per_block));
  put64(p.key, rs.key);
  put64(p.counter, rs.counter);
  const std::string key = std::string(op.name()) + "/" + std::string(dtype_name(dt));
  VkPipeline pipe = be.shaders().get(op.name(), key, [&] { return random_source(op.kind, dt); });
  be.dispatch(pipe, {out->buffer, nullptr, nullptr, nullptr, nullptr, nullptr}, &p, sizeof p, be.groups_for(n));
  return {out};
}

bool uniform_dtypes(const VulkanBackend& be, const Op& op) {
  return random_dtypes(be, op) && (op.outputs.empty() || is_float(op.outputs[0].dtype));
}

}  // namespace

void register_random_kernels(KernelTable& t, DTypeTable& d) {
  for (OpKind k : {OpKind::random_uniform, OpKind::random_bernoulli, OpKind::random_randint}) {
    t[size_t(k)] = random_kernel;
    d[size_t(k)] = random_dtypes;
  }
  d[size_t(OpKind::random_uniform)] = uniform_dtypes;
}

}  // namespace ember::vulkan
