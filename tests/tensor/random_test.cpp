// Random creation ops: reproducible per seed, and the right distribution (statistics checked
// against the distributions' formulas).
#include <gtest/gtest.h>

#include <cmath>
#include <ember/ember.hpp>

using namespace ember;

TEST(Random, SeedReproducible) {
  Device d = Device::cpu();
  d.seed(7);
  auto a = DynTensor::normal({1000}).to_vector<float>();
  d.seed(7);
  auto b = DynTensor::normal({1000}).to_vector<float>();
  EXPECT_EQ(a, b);
  auto c = DynTensor::normal({1000}).to_vector<float>();
  EXPECT_NE(a, c);
}

TEST(Random, Moments) {
  Device::cpu().seed(1);
  const int64_t n = 200000;
  auto u = DynTensor::uniform({n}, -1, 3);
  EXPECT_NEAR(mean(u).item(), 1.0, 0.02);                  // (a+b)/2
  EXPECT_NEAR(var(u).item(), 16.0 / 12.0, 0.03);           // (b-a)^2/12
  EXPECT_GE(min(u).item(), -1.0);
  EXPECT_LT(max(u).item(), 3.0);
  auto g = DynTensor::normal({n}, 2, 0.5, DType::f64);
  EXPECT_NEAR(mean(g).item(), 2.0, 0.01);
  EXPECT_NEAR(stddev(g).item(), 0.5, 0.01);
  auto b = DynTensor::bernoulli({n}, 0.3);
  EXPECT_NEAR(mean(b).item(), 0.3, 0.01);
  auto r = DynTensor::randint({n}, -3, 5);
  EXPECT_EQ(r.dtype(), DType::i64);
  EXPECT_EQ(min(r).item(), -3);
  EXPECT_EQ(max(r).item(), 4);
  EXPECT_NEAR(mean(cast(r, DType::f64)).item(), 0.5, 0.03);
}

TEST(Random, HalfTypes) {
  auto h = DynTensor::normal({10000}, 0, 1, DType::bf16);
  EXPECT_EQ(h.dtype(), DType::bf16);
  EXPECT_NEAR(mean(cast(h, DType::f32)).item(), 0.0, 0.05);
}
