// Index arithmetic behind the split and sampled views.
#include "ember/data/views.hpp"

#include <cmath>

namespace ember::data {

std::vector<std::pair<size_t, size_t>> split_ranges(size_t n, const std::vector<double>& fractions) {
  EMBER_CHECK(!fractions.empty(), "split: no fractions given");
  double total = 0;
  for (double f : fractions) {
    EMBER_CHECK(f > 0 && std::isfinite(f), "split: fractions must be positive, got ", f);
    total += f;
  }
  EMBER_CHECK(total <= 1 + 1e-9, "split: fractions sum to ", total, ", more than 1");
  const bool whole = std::abs(total - 1) <= 1e-9;
  std::vector<std::pair<size_t, size_t>> ranges;
  double cumulative = 0;
  size_t begin = 0;
  for (size_t i = 0; i < fractions.size(); ++i) {
    cumulative += fractions[i];
    size_t end =
        (whole && i + 1 == fractions.size()) ? n : std::min(n, static_cast<size_t>(std::llround(cumulative * n)));
    end = std::max(end, begin);
    ranges.emplace_back(begin, end);
    begin = end;
  }
  return ranges;
}

std::vector<size_t> sample_indices(size_t n, size_t count, bool with_replacement, uint64_t seed) {
  EMBER_CHECK(n > 0, "sampled: the dataset is empty (it needs at least one item to sample from)");
  if (!with_replacement) {
    EMBER_CHECK(count <= n, "sampled: ", count, " items without replacement from a dataset of only ", n);
    std::vector<size_t> p = permutation(n, seed);
    p.resize(count);
    return p;
  }
  std::vector<size_t> idx(count);
  Rng rng(seed);
  for (size_t& i : idx) i = rng.below(n);
  return idx;
}

}  // namespace ember::data
