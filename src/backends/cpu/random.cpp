// Random creation kernels: random_uniform, random_normal, random_bernoulli, random_randint.
//
// Each op reserves a range of Philox counters from the backend (CpuBackend::next_random) and
// derives element i from counter block (base + i / per_block) only, so the values depend on
// (seed, stream position, i) and not on how the fill is split across threads.
//
// Use of the 4 words of a block (w = the flat word array, element i):
//   uniform f32/f16/bf16, bernoulli, randint with a range <= 2^32: one word, w[i];
//   uniform f64, randint with a larger range: two words, w[2i] (high) and w[2i+1] (low);
//   normal f32/f16/bf16: Box-Muller pair j = i / 2 from w[2j] (radius) and w[2j+1] (angle),
//     element 2j = r cos(theta), 2j+1 = r sin(theta);
//   normal f64: one pair per block, 53-bit uniforms from (w0, w1) and (w2, w3).
#include "random.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "cpu_features.hpp"
#include "thread_pool.hpp"
#include "vec/vec_math.hpp"

namespace ember::cpu {

void philox_blocks(uint64_t key, uint64_t counter0, int64_t nb, uint32_t* words) {
  if (features().avx512) {
    detail::philox_blocks_avx512(key, counter0, nb, words);
    return;
  }
  for (int64_t b = 0; b < nb; ++b) {
    auto w = philox4x32_10(key, counter0 + uint64_t(b));
    for (int j = 0; j < 4; ++j) words[4 * b + j] = w[j];
  }
}

namespace {

constexpr int64_t kBatchBlocks = 256;  // blocks generated per batch (1024 words on the stack)

// Calls gen(words, dst, count) for consecutive batches: words holds the blocks of elements
// dst[0 .. count) (count is a multiple of per_block except at the very end).
template <class T, class Gen>
void fill_blocks(CpuBackend& be, T* out, int64_t n, int per_block, Gen&& gen) {
  if (n <= 0) return;
  int64_t nblocks = (n + per_block - 1) / per_block;
  auto stream = be.next_random(uint64_t(nblocks));
  auto run = [&](int64_t b0, int64_t b1) {
    alignas(64) uint32_t words[4 * kBatchBlocks];
    for (int64_t b = b0; b < b1; b += kBatchBlocks) {
      int64_t nb = std::min(kBatchBlocks, b1 - b);
      philox_blocks(stream.key, stream.counter + uint64_t(b), nb, words);
      int64_t first = b * per_block;
      gen(static_cast<const uint32_t*>(words), out + first, std::min<int64_t>(nb * per_block, n - first));
    }
  };
  constexpr int64_t kGrainElems = 32768;
  int64_t grain = std::max<int64_t>(1, kGrainElems / per_block);
  if (nblocks <= grain)
    run(0, nblocks);
  else
    parallel_for(0, nblocks, grain, run);
}

// Uniforms: [0, 1) with 24 random bits, (0, 1] (for logarithms), and 53-bit versions.
inline float unit_f32(uint32_t w) { return float(w >> 8) * 0x1p-24f; }
inline float unit_f32_open0(uint32_t w) { return float((w >> 8) + 1) * 0x1p-24f; }
inline double unit_f64(uint32_t hi, uint32_t lo) { return double((uint64_t(hi) << 32 | lo) >> 11) * 0x1p-53; }
inline double unit_f64_open0(uint32_t hi, uint32_t lo) {
  return double(((uint64_t(hi) << 32 | lo) >> 11) + 1) * 0x1p-53;
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
    if (double(static_cast<float>(h)) < high) return h;
    // one unit towards -inf in the 16-bit format
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
  bool guard = high > low;  // results rounding up to `high` are moved just below it
  visit_float_dtype(out->dtype(), "random_uniform", [&]<class T>() {
    T* p = out->data<T>();
    if constexpr (std::is_same_v<T, double>) {
      double span = high - low, top = below<double>(high);
      fill_blocks(be, p, n, 2, [=](const uint32_t* w, double* dst, int64_t count) {
        for (int64_t j = 0; j < count; ++j) {
          double v = low + span * unit_f64(w[2 * j], w[2 * j + 1]);
          dst[j] = (guard && v >= high) ? top : v;
        }
      });
    } else if constexpr (std::is_same_v<T, float>) {
      float lo = float(low), span = float(high - low), top = below<float>(high), hi = float(high);
      bool g = guard && double(hi) >= high;  // float(high) rounded down: nothing reaches it
      fill_blocks(be, p, n, 4, [=](const uint32_t* w, float* dst, int64_t count) {
        for (int64_t j = 0; j < count; ++j) {
          float v = lo + span * unit_f32(w[j]);
          dst[j] = (g && v >= hi) ? top : v;
        }
      });
    } else {
      float lo = float(low), span = float(high - low);
      T top = below<T>(high);
      fill_blocks(be, p, n, 4, [=](const uint32_t* w, T* dst, int64_t count) {
        for (int64_t j = 0; j < count; ++j) {
          T v(lo + span * unit_f32(w[j]));
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
      fill_blocks(be, p, n, 2, [=](const uint32_t* w, double* dst, int64_t count) {
        for (int64_t j = 0; 2 * j < count; ++j) {
          const uint32_t* b = w + 4 * j;
          double r = std::sqrt(-2.0 * std::log(unit_f64_open0(b[0], b[1])));
          double theta = 2.0 * std::numbers::pi * unit_f64(b[2], b[3]);
          dst[2 * j] = mean + stddev * (r * std::cos(theta));
          if (2 * j + 1 < count) dst[2 * j + 1] = mean + stddev * (r * std::sin(theta));
        }
      });
    } else {
      // Box-Muller over a batch with the vectorised log / sqrt / sin / cos
      float m = float(mean), s = float(stddev);
      fill_blocks(be, p, n, 4, [=](const uint32_t* w, T* dst, int64_t count) {
        constexpr int64_t kPairs = 2 * kBatchBlocks;
        alignas(64) float r[kPairs], th[kPairs], c[kPairs], sn[kPairs];
        int64_t pairs = (count + 1) / 2;
        for (int64_t j = 0; j < pairs; ++j) {
          r[j] = unit_f32_open0(w[2 * j]);
          th[j] = 2.0f * std::numbers::pi_v<float> * unit_f32(w[2 * j + 1]);
        }
        vec::unary_f32(vec::Unary::log, r, r, pairs);
        for (int64_t j = 0; j < pairs; ++j) r[j] *= -2.0f;
        vec::unary_f32(vec::Unary::sqrt, r, r, pairs);
        vec::unary_f32(vec::Unary::cos, th, c, pairs);
        vec::unary_f32(vec::Unary::sin, th, sn, pairs);
        for (int64_t j = 0; j < pairs; ++j) {
          float z0 = m + s * (r[j] * c[j]), z1 = m + s * (r[j] * sn[j]);
          dst[2 * j] = convert_scalar<T>(z0);
          if (2 * j + 1 < count) dst[2 * j + 1] = convert_scalar<T>(z1);
        }
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
    fill_blocks(be, out->data<T>(), n, 4, [=](const uint32_t* w, T* dst, int64_t count) {
      for (int64_t j = 0; j < count; ++j) dst[j] = uint64_t(w[j]) < threshold ? one : zero;
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
    if constexpr (std::is_integral_v<T>) {  // torch: the bounds must fit the dtype
      using L = std::numeric_limits<T>;
      EMBER_CHECK(low >= int64_t(L::lowest()), "random_randint: from ", low, " is out of bounds for ",
                  dtype_name(out->dtype()));
      constexpr bool kWide = std::is_same_v<T, int64_t>;
      EMBER_CHECK(kWide || high - 1 <= int64_t(L::max()), "random_randint: to - 1 = ",
                  high - 1, " is out of bounds for ", dtype_name(out->dtype()));
    }
    T* p = out->data<T>();
    if (range <= (uint64_t(1) << 32)) {
      // multiply-shift maps a 32-bit word onto [0, range)
      fill_blocks(be, p, n, 4, [=](const uint32_t* w, T* dst, int64_t count) {
        for (int64_t j = 0; j < count; ++j) {
          uint64_t v = (uint64_t(w[j]) * range) >> 32;
          dst[j] = convert_scalar<T>(int64_t(uint64_t(low) + v));
        }
      });
    } else {
      fill_blocks(be, p, n, 2, [=](const uint32_t* w, T* dst, int64_t count) {
        for (int64_t j = 0; j < count; ++j) {
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
