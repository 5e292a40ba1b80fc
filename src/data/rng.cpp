// xoshiro256** (Blackman & Vigna), seeded through splitmix64.
#include "ember/data/rng.hpp"

#include <utility>

#include "ember/core/error.hpp"

namespace ember::data {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

thread_local uint64_t t_epoch = 0;

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t& s : s_) s = splitmix64(x);
}

Rng::Rng(uint64_t seed, uint64_t stream_a, uint64_t stream_b) {
  // Hash the three words together so nearby (seed, a, b) give unrelated streams.
  uint64_t x = seed;
  uint64_t h = splitmix64(x);
  x = h ^ stream_a;
  h = splitmix64(x);
  x = h ^ stream_b;
  for (uint64_t& s : s_) s = splitmix64(x);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

uint64_t Rng::below(uint64_t n) {
  EMBER_CHECK(n > 0, "Rng::below: n must be positive");
  // Rejection: accept values under the largest multiple of n.
  const uint64_t limit = max() - max() % n;
  uint64_t v;
  do v = next();
  while (v >= limit);
  return v % n;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

bool Rng::bernoulli(double p) { return uniform() < p; }

int64_t Rng::range(int64_t lo, int64_t hi) {
  EMBER_CHECK(lo <= hi, "Rng::range: empty range [", lo, ", ", hi, "]");
  uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (span == max()) return static_cast<int64_t>(next());
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + below(span + 1));
}

std::vector<size_t> permutation(size_t n, uint64_t seed) {
  std::vector<size_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = i;
  Rng rng(seed);
  for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[rng.below(i)]);
  return p;
}

uint64_t current_epoch() { return t_epoch; }

EpochScope::EpochScope(uint64_t epoch) : previous_(t_epoch) { t_epoch = epoch; }
EpochScope::~EpochScope() { t_epoch = previous_; }

}  // namespace ember::data
