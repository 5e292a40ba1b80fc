// The CUDA runtime layer: JIT compilation (runs without a GPU), device selection, transfers,
// the caching allocator, and the errors of bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "cuda_backend.hpp"
#include "ember/backends/cuda.hpp"
#include "ember/tensor/ops.hpp"
#include "jit.hpp"
#include "profile.hpp"

namespace ember {
namespace {

bool same_bytes(const DynTensor& a, const DynTensor& b) {
  TensorData x = a.into_data(), y = b.into_data();
  return x.bytes().size() == y.bytes().size() && std::equal(x.bytes().begin(), x.bytes().end(), y.bytes().begin());
}

// `gpu`, computed on the GPU, has the shape and the bytes of `cpu`, computed on the CPU.
void check(const DynTensor& cpu, const DynTensor& gpu) {
  EXPECT_EQ(cpu.shape(), gpu.shape());
  EXPECT_TRUE(same_bytes(cpu, gpu.to(Device::cpu())));
}

#define REQUIRE_GPU() \
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices()

// The disk cache never trusts a damaged file: truncated, flipped, foreign, empty or missing
// files read as absent (the kernel is then compiled again and the file rewritten).
TEST(CudaJit, DiskCacheFilesAreCheckedAndWrittenAtomically) {
  const std::string dir = testing::TempDir() + "ember_jit_cache_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/k.cubin";
  std::vector<char> payload(3000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = char(i * 7 + 3);
  cuda::write_cache_file(path, payload);
  std::vector<char> got;
  ASSERT_TRUE(cuda::read_cache_file(path, got));
  EXPECT_EQ(got, payload);
  auto rewrite = [&](const std::function<void(std::vector<char>&)>& damage) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    damage(all);
    std::ofstream out(dir + "/bad.cubin", std::ios::binary | std::ios::trunc);
    out.write(all.data(), std::streamsize(all.size()));
  };
  rewrite([](std::vector<char>& b) { b.resize(b.size() - 100); });  // truncated
  EXPECT_FALSE(cuda::read_cache_file(dir + "/bad.cubin", got));
  EXPECT_TRUE(got.empty());
  rewrite([](std::vector<char>& b) { b[b.size() / 2] ^= 1; });  // one bit flipped
  EXPECT_FALSE(cuda::read_cache_file(dir + "/bad.cubin", got));
  rewrite([](std::vector<char>& b) { b.assign(b.begin() + 20, b.end()); });  // a bare cubin (old format)
  EXPECT_FALSE(cuda::read_cache_file(dir + "/bad.cubin", got));
  rewrite([](std::vector<char>& b) { b.clear(); });  // empty
  EXPECT_FALSE(cuda::read_cache_file(dir + "/bad.cubin", got));
  EXPECT_FALSE(cuda::read_cache_file(dir + "/missing.cubin", got));
  // rewriting over a damaged file repairs it, and leaves no temporary file behind
  cuda::write_cache_file(dir + "/bad.cubin", payload);
  EXPECT_TRUE(cuda::read_cache_file(dir + "/bad.cubin", got));
  EXPECT_EQ(got, payload);
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
  std::filesystem::remove_all(dir);
}

TEST(CudaJit, CompilesGeneratedSourceWithThePrelude) {
  std::string src = R"(
extern "C" __global__ void k(half_t* out, const bf16_t* in, Shape sh, Strides s, int64_t n) {
  int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = half_t(float(in[offset_of(i, sh, s)]) * 2.f) ;
  (void)cast_value<int8_t>(1.5f);
}
)";
  auto cubin = cuda::compile_cubin("test/ok", src, 90);
  EXPECT_GT(cubin.size(), 100u);
}

TEST(CudaJit, CompileErrorNamesTheOpAndTheLine) {
  std::string src = "extern \"C\" __global__ void k(float* out) {\n  out[0] = undefined_name;\n}\n";
  try {
    cuda::compile_cubin("exp/f32/contig", src, 90);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("exp/f32/contig"), std::string::npos) << m;
    EXPECT_NE(m.find("undefined_name"), std::string::npos) << m;
    EXPECT_NE(m.find("generated source line"), std::string::npos) << m;
  }
}

TEST(CudaAllocator, SizeClassesRoundUpByAtMostAQuarter) {
  EXPECT_EQ(cuda::CachingAllocator::size_class(1), 512u);
  EXPECT_EQ(cuda::CachingAllocator::size_class(512), 512u);
  EXPECT_EQ(cuda::CachingAllocator::size_class(513), 1024u);
  for (size_t b : {size_t(3) << 20, size_t(5) << 20, (size_t(1) << 30) + 1, size_t(123456789)}) {
    size_t c = cuda::CachingAllocator::size_class(b);
    EXPECT_GE(c, b);
    EXPECT_LE(double(c), double(b) * 1.25 + 1);
  }
}

TEST(CudaDevice, UnknownIndexListsTheDevices) {
  try {
    Device::cuda(97);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("97"), std::string::npos) << m;
    EXPECT_TRUE(m.find("devices") != std::string::npos || m.find("no CUDA backend") != std::string::npos) << m;
  }
}

TEST(CudaDevice, RoundTripsEveryDType) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::i16, DType::i8,
                   DType::u8, DType::boolean}) {
    auto x = reshape(DynTensor::arange(0, 40, 1, DType::f64, Device::cpu()), {5, 8}).cast(dt);
    auto y = x.to(gpu);
    EXPECT_EQ(y.device(), gpu);
    auto back = y.to(Device::cpu());
    EXPECT_TRUE(same_bytes(back, x)) << dt;
  }
}

TEST(CudaDevice, LargeTransfersGoThroughTheStagingBuffersIntact) {
  REQUIRE_GPU();
  auto x = DynTensor::uniform({3, 1000, 1001}, -1, 1, DType::f32, Device::cpu());
  auto y = x.to(Device::cuda(0)).to(Device::cpu());
  EXPECT_TRUE(same_bytes(y, x));
}

TEST(CudaDevice, ViewsAndCastsMatchTheCpu) {
  REQUIRE_GPU();
  auto x = DynTensor::normal({4, 6, 5}, 0, 3, DType::f32, Device::cpu());
  auto g = x.to(Device::cuda(0));
  check(contiguous(permute(x, {2, 0, 1})), contiguous(permute(g, {2, 0, 1})));
  check(reshape(slice(x, {{}, Slice{1, 5, 2}}), {-1}), reshape(slice(g, {{}, Slice{1, 5, 2}}), {-1}));
  for (DType dt : {DType::f16, DType::bf16, DType::i32, DType::u8, DType::i8, DType::boolean, DType::f64})
    check(permute(x, {1, 0, 2}).cast(dt), permute(g, {1, 0, 2}).cast(dt));
}

// Copies that transpose (the source contiguous along a dim other than the innermost) go through
// 64 x 64 shared-memory tiles: edges that are not multiples of 64, batch dims, casts, and
// 1- to 8-byte elements.
TEST(CudaDevice, TransposingCopiesMatchTheCpu) {
  REQUIRE_GPU();
  auto x = DynTensor::normal({333, 1001}, 0, 3, DType::f32, Device::cpu());
  auto g = x.to(Device::cuda(0));
  check(contiguous(transpose(x, 0, 1)), contiguous(transpose(g, 0, 1)));
  auto y = DynTensor::normal({3, 70, 45, 2}, 0, 3, DType::f32, Device::cpu());
  auto h = y.to(Device::cuda(0));
  for (std::vector<int> p : {std::vector<int>{0, 2, 1, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}, {2, 0, 3, 1}})
    check(contiguous(permute(y, p)), contiguous(permute(h, p)));
  for (DType dt : {DType::f16, DType::bf16, DType::i32, DType::u8, DType::boolean, DType::f64}) {
    check(transpose(x, 0, 1).cast(dt), transpose(g, 0, 1).cast(dt));
    check(contiguous(transpose(x.cast(dt), 0, 1)), contiguous(transpose(g.cast(dt), 0, 1)));
  }
}

// Copies of rows at two pitches (cat along an inner dim, column slices): in 16-byte packs where
// every row and pitch is a whole number of them, element by element where not.
TEST(CudaDevice, PitchedRowCopiesMatchTheCpu) {
  REQUIRE_GPU();
  auto a = DynTensor::normal({37, 129}, 0, 1, DType::f32, Device::cpu());
  auto b = DynTensor::normal({37, 3}, 0, 1, DType::f32, Device::cpu());
  auto ga = a.to(Device::cuda(0)), gb = b.to(Device::cuda(0));
  check(cat({a, b, a}, 1), cat({ga, gb, ga}, 1));
  check(contiguous(slice(a, {{}, Slice{5, 70}})), contiguous(slice(ga, {{}, Slice{5, 70}})));
  auto x = DynTensor::normal({2, 3, 5, 7}, 0, 1, DType::bf16, Device::cpu());
  auto y = DynTensor::normal({2, 4, 5, 7}, 0, 1, DType::bf16, Device::cpu());
  check(cat({x, y}, 1), cat({x.to(Device::cuda(0)), y.to(Device::cuda(0))}, 1));
  auto a2 = DynTensor::normal({37, 128}, 0, 1, DType::f32, Device::cpu());
  auto b2 = DynTensor::normal({37, 4}, 0, 1, DType::f32, Device::cpu());
  auto ga2 = a2.to(Device::cuda(0)), gb2 = b2.to(Device::cuda(0));
  check(cat({b2, a2, b2}, 1), cat({gb2, ga2, gb2}, 1));
  check(contiguous(slice(a2, {{}, Slice{4, 68}})), contiguous(slice(ga2, {{}, Slice{4, 68}})));
  auto i = DynTensor::randint({6, 10}, 0, 100, DType::i64, Device::cpu());
  check(cat({i, i}, 1), cat({i.to(Device::cuda(0)), i.to(Device::cuda(0))}, 1));
  // all inputs in packed rows: one launch per 8 inputs (11 inputs of widths 4..44 f32, 3 x 7 rows;
  // an empty input among them; and a cat along dim 0 of [2, 3, 8] blocks)
  std::vector<DynTensor> parts, gparts;
  for (int64_t k = 0; k < 11; ++k) {
    parts.push_back(DynTensor::normal({3, 7, k == 5 ? 0 : 4 * (k + 1)}, 0, 1, DType::f32, Device::cpu()));
    gparts.push_back(parts.back().to(Device::cuda(0)));
  }
  check(cat(parts, 2), cat(gparts, 2));
  auto h = DynTensor::normal({2, 3, 8}, 0, 1, DType::f16, Device::cpu());
  check(cat({h, h, h}, 0), cat({h.to(Device::cuda(0)), h.to(Device::cuda(0)), h.to(Device::cuda(0))}, 0));
  check(cat({h, h}, 1), cat({h.to(Device::cuda(0)), h.to(Device::cuda(0))}, 1));
}

// a + b with a on `da` and b on `db`: an Error naming both devices, which both stay usable.
void expect_mixing_fails(const Device& da, const Device& db) {
  auto a = DynTensor::ones({3}, DType::f32, da);
  auto b = DynTensor::ones({3}, DType::f32, db);
  try {
    (void)(a + b);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(da.name()), std::string::npos) << m;
    EXPECT_NE(m.find(db.name()), std::string::npos) << m;
  }
  EXPECT_DOUBLE_EQ(sum(a + a).item(), 6.0);
  EXPECT_DOUBLE_EQ(sum(b + b).item(), 6.0);
}

TEST(CudaDevice, OpsOnTwoDevicesFailClearly) {
  REQUIRE_GPU();
  EXPECT_EQ(Device::cuda(0).name(), "cuda:0");
  expect_mixing_fails(Device::cpu(), Device::cuda(0));
}

// (the other tests of several GPUs: multi_device_test.cpp)
TEST(CudaMultiDevice, OpsOnTwoGpusFailClearly) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices: " << cuda::describe_devices();
  expect_mixing_fails(Device::cuda(0), Device::cuda(1));
}

// The op profiler (EMBER_CUDA_PROFILE=1) groups ops by name, dtype, input shapes (strided inputs
// marked) and output shapes.
TEST(CudaProfile, KeyNamesTheOpAndItsShapes) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  auto a = DynTensor::ones({2, 3}, DType::f32, gpu), b = DynTensor::ones({3, 2}, DType::f32, gpu);
  Op plain = make_op(OpKind::add, {a.primitive(), a.primitive()});
  EXPECT_EQ(cuda::profile_key(plain), "add f32 [2, 3], [2, 3] -> [2, 3]");
  Op strided = make_op(OpKind::matmul, {transpose(b, 0, 1).primitive(), b.primitive()});
  EXPECT_EQ(cuda::profile_key(strided), "matmul f32 [2, 3](strided), [3, 2] -> [2, 2]");
}

TEST(CudaMemory, OutOfMemoryIsAnErrorAndTheDeviceStaysUsable) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  try {
    auto huge = DynTensor::zeros({int64_t(1) << 40}, DType::f32, gpu);  // 4 TiB
    gpu.sync();
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("out of device memory"), std::string::npos) << m;
    EXPECT_NE(m.find("requested 4398046511104 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("free"), std::string::npos) << m;
  }
  auto x = DynTensor::ones({1000}, DType::f32, gpu);
  EXPECT_DOUBLE_EQ(sum(x).item(), 1000.0);
}

TEST(CudaMemory, StatsTrackTensorsAndCleanupReturnsTheCache) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  gpu.memory_cleanup();
  MemoryStats before = gpu.memory_stats();
  {
    auto x = DynTensor::zeros({1 << 20}, DType::f32, gpu);
    MemoryStats during = gpu.memory_stats();
    EXPECT_GE(during.in_use - before.in_use, int64_t(4) << 20);
    EXPECT_GE(during.peak, during.in_use);
  }
  MemoryStats after = gpu.memory_stats();
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_GE(after.reserved, before.reserved + (int64_t(4) << 20));  // cached, not freed
  auto again = DynTensor::zeros({1 << 20}, DType::f32, gpu);        // served from the cache
  EXPECT_EQ(gpu.memory_stats().reserved, after.reserved);
  again = DynTensor();
  gpu.memory_cleanup();
  EXPECT_EQ(gpu.memory_stats().reserved, gpu.memory_stats().in_use);
}

}  // namespace
}  // namespace ember
