// Tensor<D, K>: compile-time ranks and kinds over the same ops. Expected values are worked
// out by hand from the definitions (sums of small integer tables).
#include <gtest/gtest.h>

#include <ember/ember.hpp>

using namespace ember;

TEST(TypedTensor, RankAndKindFollowOps) {
  auto a = Tensor<2>::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor<0> total = a.sum();
  EXPECT_EQ(total.item(), 21);
  Tensor<2> rows = a.sum_dim(1);
  EXPECT_EQ(rows.shape(), (Shape{2, 1}));
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{6, 15}));
  Tensor<2, Bool> big = a.greater(3.0);
  EXPECT_EQ(big.to_vector<bool>(), (std::vector<bool>{false, false, false, true, true, true}));
  Tensor<2, Int> idx = a.argmax(1);
  EXPECT_EQ(idx.to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
  Tensor<3> u = a.unsqueeze(0);
  EXPECT_EQ(u.shape(), (Shape{1, 2, 3}));
  Tensor<1> r = a.select(0, 1);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{4, 5, 6}));
  Tensor<1> flat = a.reshape<1>({6});
  EXPECT_EQ(flat.numel(), 6);
  Tensor<2> m = a.matmul(a.transpose());  // [2,3] x [3,2]
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{14, 32, 32, 77}));
  Tensor<3> s = Tensor<2>::stack({a, a}, 0);
  EXPECT_EQ(s.shape(), (Shape{2, 2, 3}));
  EXPECT_THROW(Tensor<3>(a.dyn()), Error);
}
