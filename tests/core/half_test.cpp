#include <gtest/gtest.h>

#include <cmath>
#include <ember/core/half.hpp>

using namespace ember;

// Expected bit patterns from IEEE 754 binary16 / bfloat16 definitions.
TEST(Half, F16KnownValues) {
  EXPECT_EQ(f16(1.0f).bits, 0x3c00);
  EXPECT_EQ(f16(-2.0f).bits, 0xc000);
  EXPECT_EQ(f16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(f16(65520.0f).bits, 0x7c00);  // rounds to inf
  EXPECT_EQ(f16(0x1p-24f).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(f16(0x1p-25f).bits, 0x0000);  // tie -> even (0)
  EXPECT_EQ(f16(0x1.8p-25f).bits, 0x0001);
  EXPECT_EQ(f16(1.0f + 0x1p-11f).bits, 0x3c00);  // tie -> even
  EXPECT_EQ(f16(1.0f + 0x1.8p-10f).bits, 0x3c02);
  EXPECT_TRUE(std::isnan(float(f16(NAN))));
  EXPECT_EQ(float(f16::from_bits(0x7c00)), INFINITY);
}

TEST(Half, F16RoundTripAllBits) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    f16 h = f16::from_bits(uint16_t(b));
    float f = float(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(f16(f).bits, b) << b;
  }
}

TEST(Half, Bf16KnownValues) {
  EXPECT_EQ(bf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(bf16(1.0f + 0x1p-8f).bits, 0x3f80);     // tie -> even
  EXPECT_EQ(bf16(1.0f + 0x1.8p-7f).bits, 0x3f82);
  EXPECT_TRUE(std::isnan(float(bf16(NAN))));
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = float(bf16::from_bits(uint16_t(b)));
    if (!std::isnan(f)) {
      EXPECT_EQ(bf16(f).bits, b);
    }
  }
}
