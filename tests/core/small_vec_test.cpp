// SmallVec against std::vector: the same random edit sequence applied to both must leave the
// same contents, across the inline / heap boundary.
#include "ember/core/small_vec.hpp"

#include <gtest/gtest.h>

#include <random>

#include "ember/core/shape.hpp"

namespace ember {
namespace {

using V = SmallVec<int64_t, 4>;

void expect_same(const V& a, const std::vector<int64_t>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(a[i], b[i]) << "at " << i;
  EXPECT_TRUE(a == b);
}

TEST(SmallVec, RandomEditsMatchStdVector) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    V a;
    std::vector<int64_t> b;
    for (int step = 0; step < 40; ++step) {
      const int64_t v = int64_t(rng() % 100);
      const size_t at = b.empty() ? 0 : rng() % (b.size() + 1);
      switch (rng() % 9) {
        case 0: a.push_back(v), b.push_back(v); break;
        case 1: if (!b.empty()) a.push_back(a[0]), b.push_back(b[0]); break;  // an element of itself
        case 2: a.insert(a.begin() + at, v), b.insert(b.begin() + long(at), v); break;
        case 3: a.insert(a.begin() + at, 3, v), b.insert(b.begin() + long(at), 3, v); break;
        case 4: {  // a range of itself
          std::vector<int64_t> copy = b;
          a.insert(a.begin() + at, a.begin(), a.end());
          b.insert(b.begin() + long(at), copy.begin(), copy.end());
          break;
        }
        case 5: if (at < b.size()) a.erase(a.begin() + at), b.erase(b.begin() + long(at)); break;
        case 6: a.resize(at, v), b.resize(at, v); break;
        case 7: { V c = a; a = std::move(c); } break;
        case 8: if (!b.empty()) a.pop_back(), b.pop_back(); break;
      }
      expect_same(a, b);
      if (b.size() > 64) a.clear(), b.clear();
    }
  }
}

TEST(SmallVec, CopiesMovesAndConversions) {
  V big{1, 2, 3, 4, 5, 6};  // on the heap
  V small{7, 8};            // inline
  V moved = std::move(big);
  EXPECT_TRUE(big.empty());
  expect_same(moved, {1, 2, 3, 4, 5, 6});
  V moved_small = std::move(small);
  expect_same(moved_small, {7, 8});
  big = moved;
  expect_same(big, {1, 2, 3, 4, 5, 6});
  big = moved_small;
  expect_same(big, {7, 8});
  std::vector<int64_t> v = moved;
  EXPECT_EQ(v, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  V from_vec(v);
  EXPECT_TRUE(from_vec == moved);
  EXPECT_TRUE(V({1, 2}) < V({1, 3}));
  EXPECT_FALSE(V({1, 2}) == V({1, 2, 3}));
}

TEST(SmallVec, ShapeDimsStayInlineUpToRankSix) {
  Shape s{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(s.dims().capacity(), 6u);
  s.dims().push_back(7);
  EXPECT_EQ(s.rank(), 7);
  EXPECT_EQ(s.numel(), 5040);
  EXPECT_EQ(Shape(std::vector<int64_t>{2, 3}), (Shape{2, 3}));
}

}  // namespace
}  // namespace ember
