// Rng: the data layer's small, portable random generator (xoshiro256** seeded by splitmix64).
// Its sequence depends only on the seed, never on the standard library, the platform or the
// number of threads, so seeded shuffles, samples and augmentations reproduce across runs and
// machines (std::uniform_int_distribution and std::shuffle do not promise that).
//
//   data::Rng rng(42);
//   uint64_t i = rng.below(10);      // uniform in [0, 10)
//   double u = rng.uniform();        // uniform in [0, 1)
//   bool heads = rng.bernoulli(0.5);
//   std::vector<size_t> p = data::permutation(100, 42);  // a seeded Fisher-Yates shuffle of 0..99
//   # run
//
// Rng also meets UniformRandomBitGenerator, so std distributions accept it.
//
// The epoch context: while a DataLoader builds a batch of epoch e, current_epoch() returns e
// on the thread doing the work (0 elsewhere). Random views (views.hpp: augmented) seed each
// item's Rng from (their seed, current_epoch(), item index), so augmentations differ from one
// epoch to the next yet do not depend on which worker thread built the batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace ember::data {

// Portable pseudo-random generator (xoshiro256** seeded by splitmix64) whose sequence depends only on its
// seed. Not thread-safe: give each thread its own Rng.
class Rng {
 public:
  using result_type = uint64_t;     // the type of next() (for UniformRandomBitGenerator)
  explicit Rng(uint64_t seed = 0);  // One stream per seed; equal seeds give equal sequences.
  // Several seeds mixed into one stream (e.g. a view's seed, the epoch and an item index).
  Rng(uint64_t seed, uint64_t stream_a, uint64_t stream_b = 0);

  uint64_t next();                               // The next 64 random bits; advances the state.
  uint64_t operator()() { return next(); }       // Same as next() (for std distributions).
  static constexpr uint64_t min() { return 0; }  // Smallest value next() returns.
  static constexpr uint64_t max() { return std::numeric_limits<uint64_t>::max(); }  // Largest value next() returns.

  uint64_t below(uint64_t n);             // uniform in [0, n) without modulo bias; n > 0, else ember::Error
  double uniform();                       // uniform in [0, 1) with 53 random bits
  bool bernoulli(double p);               // true with probability p
  int64_t range(int64_t lo, int64_t hi);  // uniform in [lo, hi] (inclusive); lo > hi throws ember::Error

 private:
  uint64_t s_[4];
};

// The epoch of the batch being built on this thread (0 outside a DataLoader).
uint64_t current_epoch();

// Sets current_epoch() on this thread for its lifetime (the DataLoader uses it; tests and
// custom loaders may too).
class EpochScope {
 public:
  // Sets current_epoch() to `epoch` on this thread; the destructor restores the previous value.
  explicit EpochScope(uint64_t epoch);
  ~EpochScope();
  EpochScope(const EpochScope&) = delete;
  EpochScope& operator=(const EpochScope&) = delete;

 private:
  uint64_t previous_;
};

// 0..n-1 shuffled by Fisher-Yates driven by Rng(seed).
std::vector<size_t> permutation(size_t n, uint64_t seed);

}  // namespace ember::data
