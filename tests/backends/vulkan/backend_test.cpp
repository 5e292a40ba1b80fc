// What the conformance suite cannot see of the Vulkan backend: devices and their description,
// the errors of unsupported ops, memory accounting, asynchronous batches, large tensors, and the
// staging path of discrete GPUs. Every test skips without a Vulkan device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "ember/backends/vulkan.hpp"
#include "ember/ember.hpp"
#include "vulkan_backend.hpp"

namespace ember {
namespace {

#define REQUIRE_VULKAN() \
  if (!vulkan::available()) GTEST_SKIP() << "no Vulkan device: " << vulkan::describe_devices()

PrimitivePtr upload(Backend& be, std::vector<float> v, Shape s) {
  return be.write(TensorData::from_vector<float>(v, std::move(s)));
}
std::vector<double> values(Backend& be, const PrimitivePtr& p) { return be.read(p).to_doubles(); }

TEST(VulkanDevices, CountAndDescribe) {
  REQUIRE_VULKAN();
  EXPECT_GE(vulkan::device_count(), 1);
  const std::string d = vulkan::describe_devices();
  // "0: llvmpipe (LLVM 15.0.6, 256 bits) (cpu, Vulkan 1.3)"
  EXPECT_TRUE(std::regex_search(
      d, std::regex(R"(^0: .+ \((cpu|discrete GPU|integrated GPU|virtual GPU|other), Vulkan 1\.[0-9]+\))")))
      << d;
  EXPECT_EQ(Device::vulkan(0).backend().name(), "vulkan:0");
}

TEST(VulkanDevices, NoSuchDeviceListsTheDevices) {
  REQUIRE_VULKAN();
  try {
    (void)vulkan::make_backend(vulkan::device_count());
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no such device"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("0: "), std::string::npos) << e.what();
  }
}

TEST(VulkanErrors, UnsupportedOpNamesTheOpAndTheDevice) {
  REQUIRE_VULKAN();
  Backend& be = Device::vulkan(0).backend();
  // random_normal is not supported (it would not draw the CPU backend's values bit for bit)
  EXPECT_FALSE(be.supports(Op{OpKind::random_normal, {}, NoAttrs{}, {}}));
  EXPECT_TRUE(be.supports(Op{OpKind::add, {}, NoAttrs{}, {}}));
  try {
    (void)be.execute(make_op(OpKind::random_normal, {}, CreateAttrs{Shape{3}, DType::f32, 0.0, 1.0}));
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "random_normal: not supported on vulkan:0");
  }
}

TEST(VulkanErrors, SupportsIsExactPerArguments) {
  REQUIRE_VULKAN();
  Backend& be = Device::vulkan(0).backend();
  // matmul runs on floats, i32 and i64 but not yet on i16: supports() says so before the op
  // runs (the router can fall back), and running it gives the backend's error, not a wrong result
  auto a16 = be.write(TensorData::from_doubles({1, 2, 3, 4}, Shape{2, 2}, DType::i16));
  auto a32 = be.write(TensorData::from_doubles({1, 2, 3, 4}, Shape{2, 2}, DType::i32));
  EXPECT_TRUE(be.supports(Op{OpKind::matmul, {}, NoAttrs{}, {}}));  // by kind
  EXPECT_TRUE(be.supports(make_op(OpKind::matmul, {a32, a32})));
  Op no = make_op(OpKind::matmul, {a16, a16});
  EXPECT_FALSE(be.supports(no));
  try {
    (void)be.execute(std::move(no));
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "matmul: not supported on vulkan:0 for these arguments (i16, i16 tensors)");
  }
}

TEST(VulkanErrors, BadIndexIsRaisedAtTheNextWait) {
  REQUIRE_VULKAN();
  auto be = vulkan::make_backend(0);
  auto x = upload(*be, {10, 20, 30}, Shape{3});
  auto bad = be->write(TensorData::from_vector<int64_t>({0, 7, 1}, Shape{3}));
  // queued without a wait: the kernel records the bad index, the next read raises it
  auto y = be->execute(make_op(OpKind::index_select, {x, bad}, DimAttrs{0, false, 0}))[0];
  try {
    (void)be->read(y);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "index_select: index 7 is out of bounds for dim 0 with size 3");
  }
  // raised once: the backend goes on
  auto good = be->write(TensorData::from_vector<int64_t>({2, 0}, Shape{2}));
  auto z = be->execute(make_op(OpKind::index_select, {x, good}, DimAttrs{0, false, 0}))[0];
  EXPECT_EQ(values(*be, z), (std::vector<double>{30, 10}));
}

TEST(VulkanMemory, StatsFollowTensorsAndCleanupReturnsTheCache) {
  REQUIRE_VULKAN();
  auto be = vulkan::make_backend(0);  // a backend of its own: nothing else allocates from its pool
  const MemoryStats before = be->memory_stats();
  EXPECT_EQ(before.in_use, 0);
  {
    auto a = upload(*be, std::vector<float>(1000, 1.f), Shape{1000});  // 4000 bytes -> a 4096-byte block
    MemoryStats s = be->memory_stats();
    EXPECT_EQ(s.in_use, 4096);
    EXPECT_GE(s.reserved, s.in_use);
    // views are free: no new memory
    auto v = be->execute(make_op(OpKind::reshape, {a}, ShapeAttrs{Shape{10, 100}}))[0];
    auto t = be->execute(make_op(OpKind::permute, {v}, DimsAttrs{{1, 0}}))[0];
    EXPECT_EQ(be->memory_stats().in_use, 4096);
    auto c = be->execute(make_op(OpKind::contiguous, {t}))[0];  // a copy: a second block
    EXPECT_EQ(be->memory_stats().in_use, 8192);
    EXPECT_EQ(values(*be, c)[0], 1.0);
  }
  be->sync();  // the batches that used the blocks have completed: the blocks are back in the pool
  MemoryStats after = be->memory_stats();
  EXPECT_EQ(after.in_use, 0);
  EXPECT_EQ(after.peak, 8192);
  EXPECT_GE(after.reserved, 8192);  // cached
  be->memory_cleanup();
  EXPECT_EQ(be->memory_stats().reserved, 0);
  be->reset_peak_memory();
  EXPECT_EQ(be->memory_stats().peak, 0);
}

TEST(VulkanAsync, ManyOpsOneRead) {
  REQUIRE_VULKAN();
  auto be = vulkan::make_backend(0);
  // 1000 dependent ops span several batches (256 commands each); the host waits only in read()
  auto x = upload(*be, {0, 1, 2, 3}, Shape{4});
  auto one = upload(*be, {1}, Shape{1});
  for (int i = 0; i < 1000; ++i) x = be->execute(make_op(OpKind::add, {x, one}))[0];
  EXPECT_EQ(values(*be, x), (std::vector<double>{1000, 1001, 1002, 1003}));
}

TEST(VulkanAsync, DroppedInputsStayAliveUntilTheirBatchRuns) {
  REQUIRE_VULKAN();
  auto be = vulkan::make_backend(0);
  PrimitivePtr y;
  {
    auto a = upload(*be, std::vector<float>(4096, 2.f), Shape{4096});
    y = be->execute(make_op(OpKind::mul, {a, a}))[0];
  }                              // `a` is gone before its kernel has run
  for (int i = 0; i < 8; ++i) {  // new tensors must not get a's block while the kernel may read it
    auto b = upload(*be, std::vector<float>(4096, 7.f), Shape{4096});
    (void)be->execute(make_op(OpKind::neg, {b}));
  }
  auto v = values(*be, y);
  for (double e : v) ASSERT_EQ(e, 4.0);
}

// A tensor above 64 MiB: written, computed on, read back whole.
void large_round_trip(Backend& be) {
  const int64_t n = int64_t(20) << 20;  // 80 MiB of f32
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(i % 1000);
  auto x = be.write(TensorData::from_vector<float>(v, Shape{n}));
  auto one = upload(be, {1}, Shape{1});
  auto y = be.execute(make_op(OpKind::add, {x, one}))[0];
  TensorData d = be.read(y);
  auto got = d.as<float>();
  ASSERT_EQ(int64_t(got.size()), n);
  for (int64_t i = 0; i < n; i += 4099) ASSERT_EQ(got[size_t(i)], float(i % 1000) + 1) << "at " << i;
  ASSERT_EQ(got[size_t(n - 1)], float((n - 1) % 1000) + 1);
}

TEST(VulkanLarge, RoundTripAbove64MiB) {
  REQUIRE_VULKAN();
  auto be = vulkan::make_backend(0);
  large_round_trip(*be);
}

TEST(VulkanLarge, StagingPathAsOnADiscreteGpu) {
  REQUIRE_VULKAN();
  // EMBER_VULKAN_STAGING=1: uploads and downloads through staging buffers and vkCmdCopyBuffer,
  // as on a GPU whose memory the host cannot map
  setenv("EMBER_VULKAN_STAGING", "1", 1);
  auto be = vulkan::make_backend(0);
  unsetenv("EMBER_VULKAN_STAGING");
  large_round_trip(*be);
  auto a = upload(*be, {1, 2, 3, 4, 5, 6}, Shape{2, 3});
  auto t = be->execute(make_op(OpKind::permute, {a}, DimsAttrs{{1, 0}}))[0];
  EXPECT_EQ(values(*be, t), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

}  // namespace
}  // namespace ember
