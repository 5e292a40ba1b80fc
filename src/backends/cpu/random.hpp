// Counter-based random numbers for the cpu backend's random_* creation ops.
//
//   auto words = philox4x32_10(key, counter);   // 4 independent 32-bit words per counter
//
// Every random op asks CpuBackend::next_random(blocks) for a (key, counter) range and fills
// element i from the block(s) that depend only on (key, counter, i): results are reproducible
// for a seed and independent of the thread count.
#pragma once

#include <array>
#include <cstdint>

#include "cpu_backend.hpp"

namespace ember::cpu {

// Philox-4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11). The 128-bit counter is (c_lo, c_hi) as two 64-bit halves; the key is 64 bits.
inline std::array<uint32_t, 4> philox4x32_10(uint64_t key, uint64_t c_lo, uint64_t c_hi = 0) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t x0 = uint32_t(c_lo), x1 = uint32_t(c_lo >> 32), x2 = uint32_t(c_hi), x3 = uint32_t(c_hi >> 32);
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(kMul0) * x0;
    uint64_t p1 = uint64_t(kMul1) * x2;
    uint32_t y0 = uint32_t(p1 >> 32) ^ x1 ^ k0;
    uint32_t y1 = uint32_t(p1);
    uint32_t y2 = uint32_t(p0 >> 32) ^ x3 ^ k1;
    uint32_t y3 = uint32_t(p0);
    x0 = y0; x1 = y1; x2 = y2; x3 = y3;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {x0, x1, x2, x3};
}

// Philox blocks counter0 + b for b < nb (counter high half 0), written as 4 consecutive
// words per block: words[4b + j] = philox4x32_10(key, counter0 + b)[j]. Vectorised with
// AVX-512 when available (random_avx512.cpp); same values on every path.
void philox_blocks(uint64_t key, uint64_t counter0, int64_t nb, uint32_t* words);
namespace detail {
void philox_blocks_avx512(uint64_t key, uint64_t counter0, int64_t nb, uint32_t* words);
}

// Registers random_uniform, random_normal, random_bernoulli and random_randint (random.cpp).
void register_random_kernels(KernelTable& t);

}  // namespace ember::cpu
