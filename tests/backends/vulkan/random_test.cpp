// The Vulkan backend's random ops draw the CPU backend's Philox streams bit for bit: the same
// seed and the same sequence of ops give the same bytes on both backends.
#include <gtest/gtest.h>

#include <cstring>

#include "ember/backends/cpu.hpp"
#include "ember/backends/vulkan.hpp"
#include "ember/ember.hpp"

namespace ember {
namespace {

TEST(VulkanRandom, SameStreamsAsTheCpuBackend) {
  if (!vulkan::available()) GTEST_SKIP() << "no Vulkan device: " << vulkan::describe_devices();
  auto vk = vulkan::make_backend(0);
  auto cpu = cpu::make_backend();
  struct Draw {
    OpKind kind;
    DType dt;
    double a, b;
    int64_t n;
  };
  const Draw draws[] = {
      {OpKind::random_uniform, DType::f32, -2.0, 3.0, 1001},
      {OpKind::random_uniform, DType::f64, 0.0, 1.0, 333},
      {OpKind::random_uniform, DType::f16, -1.0, 1.0, 257},
      {OpKind::random_uniform, DType::bf16, 0.5, 8.0, 129},
      {OpKind::random_uniform, DType::f32, 0.0, 0.1, 4097},
      {OpKind::random_bernoulli, DType::u8, 0.3, 0.0, 999},
      {OpKind::random_bernoulli, DType::f32, 1.0, 0.0, 64},
      {OpKind::random_randint, DType::i64, 0.0, 10.0, 1000},
      {OpKind::random_randint, DType::i32, -50.0, 50.0, 77},
      {OpKind::random_randint, DType::i64, -1099511627776.0, 1099511627776.0, 65},
      {OpKind::random_randint, DType::f32, 0.0, 4294967296.0, 33},
  };
  for (uint64_t seed : {uint64_t(1234), uint64_t(7)}) {
    vk->seed(seed);
    cpu->seed(seed);
    for (const Draw& d : draws) {
      auto op = [&] { return make_op(d.kind, {}, CreateAttrs{Shape{d.n}, d.dt, d.a, d.b}); };
      TensorData got = vk->read(vk->execute(op())[0]);
      TensorData want = cpu->read(cpu->execute(op())[0]);
      ASSERT_EQ(got.bytes().size(), want.bytes().size());
      EXPECT_EQ(std::memcmp(got.bytes().data(), want.bytes().data(), got.bytes().size()), 0)
          << op_name(d.kind) << " " << d.dt << " [" << d.n << "] (seed " << seed << ")";
    }
  }
  // random_normal is not supported (not bit-exact): supports() says so
  EXPECT_FALSE(vk->supports(Op{OpKind::random_normal, {}, NoAttrs{}, {}}));
}

}  // namespace
}  // namespace ember
