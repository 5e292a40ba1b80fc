// The sharded dataset view against its definition (PyTorch's DistributedSampler): the shards of
// one epoch cover the padded permutation exactly once, and a new epoch reshuffles.
#include "ember/distributed/sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "ember/data/views.hpp"

namespace ember::distributed {
namespace {

std::vector<int> items(const data::DatasetPtr<int>& ds) {
  std::vector<int> v;
  for (size_t i = 0; i < ds->size(); ++i) v.push_back(*ds->get(i));
  return v;
}

TEST(Sharded, ShardsPartitionThePaddedPermutation) {
  std::vector<int> base(10);
  for (int i = 0; i < 10; ++i) base[size_t(i)] = 100 + i;
  auto ds = data::in_memory(base);
  const int world = 3;
  std::vector<size_t> perm = data::permutation(10, 5);  // epoch 0, seed 5
  std::vector<int> seen;
  for (int r = 0; r < world; ++r) {
    auto shard = sharded(ds, r, world, {.seed = 5});
    ASSERT_EQ(shard->size(), 4u);  // ceil(10 / 3)
    std::vector<int> got = items(shard);
    for (size_t i = 0; i < got.size(); ++i)  // rank r takes padded[r + i * world]
      EXPECT_EQ(got[i], 100 + int(perm[(size_t(r) + i * world) % 10]));
    seen.insert(seen.end(), got.begin(), got.end());
  }
  std::sort(seen.begin(), seen.end());
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(std::binary_search(seen.begin(), seen.end(), 100 + i));
  EXPECT_EQ(seen.size(), 12u);  // two padding items
  auto dropped = sharded(ds, 0, world, {.drop_last = true});
  EXPECT_EQ(dropped->size(), 3u);
  EXPECT_FALSE(dropped->get(3).has_value());
}

TEST(Sharded, ReshufflesEachEpochAndKeepsOrderWithoutShuffle) {
  std::vector<int> base(64);
  for (int i = 0; i < 64; ++i) base[size_t(i)] = i;
  auto ds = data::in_memory(base);
  auto shard = sharded(ds, 1, 2, {.seed = 3});
  std::vector<int> e0, e1;
  {
    data::EpochScope epoch(0);
    e0 = items(shard);
  }
  {
    data::EpochScope epoch(1);
    e1 = items(shard);
  }
  EXPECT_NE(e0, e1);
  auto plain = sharded(ds, 1, 2, {.shuffle = false});
  std::vector<int> p = items(plain);
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(p[i], int(1 + 2 * i));
  EXPECT_THROW(sharded(ds, 2, 2), Error);
}

}  // namespace
}  // namespace ember::distributed
