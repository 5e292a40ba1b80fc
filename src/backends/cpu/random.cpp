// Random creation kernels: random_uniform, random_normal, random_bernoulli, random_randint.
//
// Each op reserves a range of Philox counters from the backend (CpuBackend::next_random) and
// derives element i from counter block (base + i / per_block) only, so the values depend on
// (seed, stream position, i) and not on how the fill is split across threads.
//
// Layout of the 4 words of a block:
//   uniform/bernoulli/randint (32-bit range), f32/f16/bf16 normal: one word per element
//     (normal: words (0,1) and (2,3) are Box-Muller pairs giving elements 4b..4b+3);
//   f64 uniform, randint (64-bit range): two words per element (2 elements per block);
//   f64 normal: one Box-Muller pair of 53-bit uniforms per block (2 elements).
#include "random.hpp"

#include <cmath>
#include <limits>
#include <numbers>

#include "thread_pool.hpp"

namespace ember::cpu {

namespace {

using Words = std::array<uint32_t, 4>;

// Calls gen(words, block, dst, count) for every block; dst points at element block*per_block.
template <class T, class Gen>
void fill_blocks(CpuBackend& be, T* out, int64_t n, int per_block, Gen&& gen) {
  if (n <= 0) return;
  int64_t nblocks = (n + per_block - 1) / per_block;
  auto stream = be.next_random(uint64_t(nblocks));
  auto run = [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      Words w = philox4x32_10(stream.key, stream.counter + uint64_t(b));
      int64_t first = b * per_block;
      int count = int(std::min<int64_t>(per_block, n - first));
      gen(w, out + first, count);
    }
  };
  constexpr int64_t kGrainElems = 16384;
  int64_t grain = std::max<int64_t>(1, kGrainElems / per_block);
  if (nblocks <= grain)
    run(0, nblocks);
  else
    parallel_for(0, nblocks, grain, run);
}

// A uniform float in [0, 1) with 24 random bits, and in (0, 1] (for logarithms).
inline float unit_f32(uint32_t w) { return float(w >> 8) * 0x1p-24f; }
inline float unit_f32_open0(uint32_t w) { return float((w >> 8) + 1) * 0x1p-24f; }
// 53-bit uniforms from two words.
inline double unit_f64(uint32_t hi, uint32_t lo) {
  uint64_t v = (uint64_t(hi) << 32 | lo) >> 11;
  return double(v) * 0x1p-53;
}
inline double unit_f64_open0(uint32_t hi, uint32_t lo) {
  uint64_t v = (uint64_t(hi) << 32 | lo) >> 11;
  return double(v + 1) * 0x1p-53;
}

// The largest value of T strictly below `high` (T = double, float, f16 or bf16; high finite).
template <class T>
T below(double high) {
  if constexpr (std::is_same_v<T, double>) {
    return std::nextafter(high, -std::numeric_limits<double>::infinity());
  } else if constexpr (std::is_same_v<T, float>) {
    float h = float(high);
    if (double(h) >= high) h = std::nextafter(h, -std::numeric_limits<float>::infinity());
    return h;
  } else {
    T h(static_cast<float>(high));
    float hf = static_cast<float>(h);
    if (double(hf) < high) return h;
    // step one unit towards -inf in the 16-bit format
    uint16_t bits = h.bits;
    constexpr uint16_t sign = 0x8000u;
    if ((bits & 0x7fffu) == 0) return T::from_bits(sign | 1u);
    return T::from_bits(bits & sign ? uint16_t(bits + 1) : uint16_t(bits - 1));
  }
}

std::vector<PrimitivePtr> uniform_kernel(CpuBackend& be, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = alloc(op.outputs[0]);
  int64_t n = out->numel();
  double low = a.a, high = a.b;
  visit_float_dtype(out->dtype(), "random_uniform", [&]<class T>() {
    T* p = out->data<T>();
    if constexpr (std::is_same_v<T, double>) {
      double span = high - low;
      double top = below<double>(high);
      fill_blocks(be, p, n, 2, [=](const Words& w, double* dst, int count) {
        for (int j = 0; j < count; ++j) {
          double v = low + span * unit_f64(w[2 * j], w[2 * j + 1]);
          dst[j] = (v >= high && high > low) ? top : v;
        }
      });
    } else {
      float lo = float(low), span = float(high - low);
      T top = below<T>(high);
      bool guard = high > low;
      fill_blocks(be, p, n, 4, [=](const Words& w, T* dst, int count) {
        for (int j = 0; j < count; ++j) {
          T v = convert_scalar<T>(lo + span * unit_f32(w[j]));
          dst[j] = (guard && double(static_cast<float>(v)) >= high) ? top : v;
        }
      });
    }
  });
  return {out};
}

std::vector<PrimitivePtr> normal_kernel(CpuBackend& be, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = alloc(op.outputs[0]);
  int64_t n = out->numel();
  double mean = a.a, stddev = a.b;
  visit_float_dtype(out->dtype(), "random_normal", [&]<class T>() {
    T* p = out->data<T>();
    if constexpr (std::is_same_v<T, double>) {
      fill_blocks(be, p, n, 2, [=](const Words& w, double* dst, int count) {
        double r = std::sqrt(-2.0 * std::log(unit_f64_open0(w[0], w[1])));
        double theta = 2.0 * std::numbers::pi * unit_f64(w[2], w[3]);
        dst[0] = mean + stddev * (r * std::cos(theta));
        if (count > 1) dst[1] = mean + stddev * (r * std::sin(theta));
      });
    } else {
      float m = float(mean), s = float(stddev);
      fill_blocks(be, p, n, 4, [=](const Words& w, T* dst, int count) {
        float z[4];
        for (int k = 0; k < 2; ++k) {
          float r = std::sqrt(-2.0f * std::log(unit_f32_open0(w[2 * k])));
          float theta = 2.0f * std::numbers::pi_v<float> * unit_f32(w[2 * k + 1]);
          z[2 * k] = r * std::cos(theta);
          z[2 * k + 1] = r * std::sin(theta);
        }
        for (int j = 0; j < count; ++j) dst[j] = convert_scalar<T>(m + s * z[j]);
      });
    }
  });
  return {out};
}

std::vector<PrimitivePtr> bernoulli_kernel(CpuBackend& be, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = alloc(op.outputs[0]);
  int64_t n = out->numel();
  // P(word < threshold) = threshold / 2^32; p = 1 gives 2^32 (always true).
  double pc = std::clamp(a.a, 0.0, 1.0);
  uint64_t threshold = uint64_t(std::llround(pc * 4294967296.0));
  visit_dtype(out->dtype(), [&]<class T>() {
    const T one = convert_scalar<T>(1), zero = convert_scalar<T>(0);
    fill_blocks(be, out->data<T>(), n, 4, [=](const Words& w, T* dst, int count) {
      for (int j = 0; j < count; ++j) dst[j] = uint64_t(w[j]) < threshold ? one : zero;
    });
  });
  return {out};
}

std::vector<PrimitivePtr> randint_kernel(CpuBackend& be, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = alloc(op.outputs[0]);
  int64_t n = out->numel();
  int64_t low = int64_t(a.a), high = int64_t(a.b);
  EMBER_CHECK(low < high, "random_randint: low ", low, " must be smaller than high ", high);
  uint64_t range = uint64_t(high) - uint64_t(low);
  visit_dtype(out->dtype(), [&]<class T>() {
    T* p = out->data<T>();
    if (range <= (uint64_t(1) << 32)) {
      // multiply-shift maps a 32-bit word onto [0, range)
      fill_blocks(be, p, n, 4, [=](const Words& w, T* dst, int count) {
        for (int j = 0; j < count; ++j) {
          uint64_t v = (uint64_t(w[j]) * range) >> 32;
          dst[j] = convert_scalar<T>(int64_t(uint64_t(low) + v));
        }
      });
    } else {
      fill_blocks(be, p, n, 2, [=](const Words& w, T* dst, int count) {
        for (int j = 0; j < count; ++j) {
          uint64_t r = (uint64_t(w[2 * j]) << 32 | w[2 * j + 1]) % range;
          dst[j] = convert_scalar<T>(int64_t(uint64_t(low) + r));
        }
      });
    }
  });
  return {out};
}

}  // namespace

void register_random_kernels(KernelTable& t) {
  t[size_t(OpKind::random_uniform)] = uniform_kernel;
  t[size_t(OpKind::random_normal)] = normal_kernel;
  t[size_t(OpKind::random_bernoulli)] = bernoulli_kernel;
  t[size_t(OpKind::random_randint)] = randint_kernel;
}

}  // namespace ember::cpu
