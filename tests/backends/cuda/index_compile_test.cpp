// The index, pool and interpolate kernel families of the CUDA backend: every generated source
// variant compiles with NVRTC (no GPU needed), and on a GPU the results match the CPU backend.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda_backend.hpp"
#include "ember/backends/cuda.hpp"
#include "ember/tensor/ops.hpp"
#include "index_sources.hpp"

namespace ember {
namespace {

const DType kAll[] = {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64,
                      DType::i32, DType::i16, DType::i8,  DType::u8,   DType::boolean};
const DType kFloats[] = {DType::f64, DType::f32, DType::f16, DType::bf16};
const DType kIndexTypes[] = {DType::i64, DType::i32};
const size_t kSizes[] = {1, 2, 4, 8};

void compiles(const std::string& key, const std::string& source) {
  SCOPED_TRACE(key);
  std::vector<char> cubin;
  EXPECT_NO_THROW(cubin = cuda::compile_cubin(key, source, 90));
  EXPECT_GT(cubin.size(), 100u);
}

TEST(CudaIndexCompile, GatherAndIndexSelect) {
  for (size_t es : {size_t(1), size_t(2), size_t(4), size_t(8), size_t(16)})
    for (DType ix : kIndexTypes)
      compiles("gather/b" + std::to_string(es * 8) + "/" + std::string(dtype_name(ix)), cuda::gather_source(es, ix));
}

TEST(CudaIndexCompile, ScatterFamily) {
  for (DType dt : kAll)
    for (DType ix : kIndexTypes)
      for (bool add : {false, true})
        compiles(std::string(add ? "scatter_add/" : "scatter/") + std::string(dtype_name(dt)) + "/" +
                     std::string(dtype_name(ix)),
                 cuda::scatter_source(dt, ix, add));
}

TEST(CudaIndexCompile, IndexCheck) {
  for (DType ix : kIndexTypes) compiles("index_check/" + std::string(dtype_name(ix)), cuda::index_check_source(ix));
}

TEST(CudaIndexCompile, NonzeroAndMaskedSelect) {
  for (DType dt : kAll) compiles("nonzero/" + std::string(dtype_name(dt)), cuda::nonzero_source(dt));
  for (size_t es : kSizes) compiles("masked_select/b" + std::to_string(es * 8), cuda::masked_select_source(es));
}

TEST(CudaIndexCompile, Pools) {
  for (DType dt : kFloats) {
    compiles("avg_pool/" + std::string(dtype_name(dt)), cuda::pool_source(dt, cuda::PoolKernel::avg));
    compiles("adaptive_avg_pool/" + std::string(dtype_name(dt)), cuda::pool_source(dt, cuda::PoolKernel::adaptive_avg));
  }
  for (DType dt : kAll)
    if (dt != DType::boolean) {
      compiles("max_pool/" + std::string(dtype_name(dt)), cuda::pool_source(dt, cuda::PoolKernel::max));
      compiles("max_pool/values/" + std::string(dtype_name(dt)), cuda::pool_source(dt, cuda::PoolKernel::max_values));
    }
  // a 2-d window with every parameter set (3x3 taps unrolled) and a 3-d one of 125 taps (a loop)
  cuda::PoolWindow w2;
  w2.k[1] = w2.k[2] = 3;
  w2.s[1] = w2.s[2] = 2;
  w2.p[1] = w2.p[2] = 1;
  w2.d[2] = 2;
  cuda::PoolWindow w3;
  w3.k[0] = w3.k[1] = w3.k[2] = 5;
  for (const auto& w : {w2, w3}) {
    compiles("max_pool/f32/" + w.key(), cuda::pool_source(DType::f32, cuda::PoolKernel::max, w));
    compiles("max_pool/values/f16/" + w.key(), cuda::pool_source(DType::f16, cuda::PoolKernel::max_values, w));
    compiles("avg_pool/bf16/" + w.key(), cuda::pool_source(DType::bf16, cuda::PoolKernel::avg, w));
  }
}

TEST(CudaIndexCompile, Interpolate) {
  for (DType dt : kAll) compiles("interpolate/nearest/" + std::string(dtype_name(dt)),
                                 cuda::interpolate_source(dt, InterpMode::nearest));
  for (DType dt : kFloats)
    for (InterpMode m : {InterpMode::linear, InterpMode::cubic})
      compiles("interpolate/" + std::to_string(int(m)) + "/" + std::string(dtype_name(dt)),
               cuda::interpolate_source(dt, m));
}

// ---- on a GPU: the same results as the CPU backend ----

#define REQUIRE_GPU() \
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device"

Device gpu() { return Device::cuda(0); }

// `got` (any device) against the CPU's `want`: |got - want| <= atol + rtol * |want|, NaN == NaN.
void expect_close(const DynTensor& got, const DynTensor& want, double rtol = 0, double atol = 0) {
  TensorData g = got.to(Device::cpu()).into_data(), w = want.into_data();
  ASSERT_EQ(g.shape(), w.shape());
  ASSERT_EQ(g.dtype(), w.dtype());
  auto err = g.approx_equal(w, rtol, atol);
  EXPECT_FALSE(err.has_value()) << *err;
}

DynTensor rand_f(Shape s, DType dt = DType::f32) {
  return DynTensor::normal(std::move(s), 0, 2, DType::f32, Device::cpu()).cast(dt);
}
DynTensor rand_i(Shape s, int64_t hi, DType dt = DType::i64) {
  return DynTensor::randint(std::move(s), 0, hi, dt, Device::cpu());
}

TEST(CudaIndexGpu, GatherOnPermutedInput) {
  REQUIRE_GPU();
  auto x = permute(rand_f({4, 5, 6}), {2, 0, 1});  // [6, 4, 5], not contiguous
  for (int dim : {0, 1, 2}) {
    auto ix = rand_i({6, 3, 5}, x.shape()[dim]);
    if (dim != 1) ix = rand_i({3, 4, 2}, x.shape()[dim]);
    expect_close(gather(x.to(gpu()), dim, ix.to(gpu())), gather(x, dim, ix));
    auto ix32 = ix.cast(DType::i32);
    expect_close(gather(x.to(gpu()), dim, ix32.to(gpu())), gather(x, dim, ix32));
  }
  auto xb = rand_f({7, 9}, DType::bf16);
  auto ix = permute(rand_i({9, 7}, 9), {1, 0});
  expect_close(gather(xb.to(gpu()), 1, ix.to(gpu())), gather(xb, 1, ix));
}

TEST(CudaIndexGpu, ScatterAddOnPermutedInput) {
  REQUIRE_GPU();
  // short dim: the column kernel (exact CPU order)
  auto x = permute(rand_f({4, 3, 5}), {1, 0, 2});  // [3, 4, 5]
  auto ix = rand_i({3, 4, 5}, 3);
  auto src = rand_f({3, 4, 5});
  expect_close(scatter_add(x.to(gpu()), 0, ix.to(gpu()), src.to(gpu())), scatter_add(x, 0, ix, src));
  // long dim with repeats: the atomic kernel, every dtype
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32, DType::i16, DType::i8,
                   DType::u8, DType::boolean}) {
    SCOPED_TRACE(dtype_name(dt));
    auto xd = permute(rand_f({50, 4}, DType::f32), {1, 0}).cast(dt);  // [4, 50]
    auto id = rand_i({4, 3000}, 50);
    auto sd = (dt == DType::boolean ? greater(rand_f({4, 3000}), 1.5) : rand_f({4, 3000}).cast(dt));
    if (dt == DType::f16 || dt == DType::bf16) {
      // each atomic add rounds to the dtype, in an order that varies from run to run: check
      // against the exact sum with the bound of recursive summation, (n + 1) u sum|terms| for
      // a slot of n added terms (u: the unit roundoff, 2^-8 for bf16, 2^-11 for f16)
      auto f64 = [](const DynTensor& t) { return t.cast(DType::f64); };
      auto got = f64(scatter_add(xd.to(gpu()), 1, id.to(gpu()), sd.to(gpu())).to(Device::cpu())).to_vector<double>();
      auto exact = scatter_add(f64(xd), 1, id, f64(sd)).to_vector<double>();
      auto mag = scatter_add(abs(f64(xd)), 1, id, abs(f64(sd))).to_vector<double>();
      auto cnt = scatter_add(DynTensor::zeros({4, 50}, DType::f64, Device::cpu()), 1, id,
                             DynTensor::ones({4, 3000}, DType::f64, Device::cpu()))
                     .to_vector<double>();
      const double u = dt == DType::bf16 ? 1.0 / 256 : 1.0 / 2048;
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_LE(std::abs(got[i] - exact[i]), (cnt[i] + 1) * u * mag[i])
            << "element " << i << " (" << cnt[i] << " terms)";
      continue;
    }
    double tol = dt == DType::f32 ? 1e-4 : 0;
    expect_close(scatter_add(xd.to(gpu()), 1, id.to(gpu()), sd.to(gpu())), scatter_add(xd, 1, id, sd), tol, tol * 10);
  }
}

TEST(CudaIndexGpu, ScatterAndIndexCopyLastWriteWins) {
  REQUIRE_GPU();
  auto x = rand_f({3, 40});
  auto ix = rand_i({3, 5000}, 40);  // many repeats: the claim / place kernels
  auto src = rand_f({3, 5000});
  expect_close(scatter(x.to(gpu()), 1, ix.to(gpu()), src.to(gpu())), scatter(x, 1, ix, src));
  auto ix2 = rand_i({2, 6}, 3);  // short dim: the column kernel
  auto src2 = rand_f({2, 6});
  auto x2 = rand_f({3, 6});
  expect_close(scatter(x2.to(gpu()), 0, ix2.to(gpu()), src2.to(gpu())), scatter(x2, 0, ix2, src2));
  auto i1 = rand_i({300}, 5);
  auto s1 = rand_f({300, 7});
  auto x1 = rand_f({5, 7});
  expect_close(select_assign(x1.to(gpu()), 0, i1.to(gpu()), s1.to(gpu())), select_assign(x1, 0, i1, s1));
  expect_close(select_add(x1.to(gpu()), 0, i1.to(gpu()), s1.to(gpu())), select_add(x1, 0, i1, s1), 1e-5, 1e-5);
  auto xi = rand_f({5, 7}).cast(DType::i32);
  auto si = rand_f({5, 9}).cast(DType::i32);
  auto i2 = rand_i({9}, 7);
  expect_close(select_add(xi.to(gpu()), 1, i2.to(gpu()), si.to(gpu())), select_add(xi, 1, i2, si));
  expect_close(index_select(x1.to(gpu()), 1, i2.to(gpu())), index_select(x1, 1, i2));
  expect_close(index_select(permute(x1, {1, 0}).to(gpu()), 0, i2.to(gpu())), index_select(permute(x1, {1, 0}), 0, i2));
}

TEST(CudaIndexGpu, NonzeroAndMaskedSelectWithBroadcastMask) {
  REQUIRE_GPU();
  auto x = permute(mul(rand_f({30, 20, 17}), greater(rand_f({30, 20, 17}), 0.5)), {2, 0, 1});
  expect_close(nonzero(x.to(gpu())), nonzero(x));
  auto big = greater(rand_f({300, 301}), 1.0);  // several tiles
  expect_close(nonzero(big.to(gpu())), nonzero(big));
  auto none = DynTensor::zeros({5, 4}, DType::f32, Device::cpu());
  expect_close(nonzero(none.to(gpu())), nonzero(none));
  auto v = rand_f({6, 50, 40});
  auto m = greater(rand_f({50, 1}), 0.0);  // broadcast over dims 0 and 2
  expect_close(masked_select(v.to(gpu()), m.to(gpu())), masked_select(v, m));
  auto vh = rand_f({40}, DType::f16);
  auto mh = greater(rand_f({7, 40}), 0.3);  // x broadcast
  expect_close(masked_select(vh.to(gpu()), mh.to(gpu())), masked_select(vh, mh));
}

TEST(CudaIndexGpu, BadIndexIsReported) {
  REQUIRE_GPU();
  auto x = rand_f({4, 5}).to(gpu());
  auto bad = DynTensor::from_vector<int64_t>({0, 7, 1}, {3}, Device::cpu()).to(gpu());
  bool thrown = false;
  try {
    (void)index_select(x, 1, bad);
    gpu().sync();
    (void)index_select(x, 1, bad);  // reported at the latest by the next index op
  } catch (const Error& e) {
    thrown = true;
    EXPECT_NE(std::string(e.what()).find("out of bounds"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(thrown);
  auto good = DynTensor::from_vector<int64_t>({0, 4}, {2}, Device::cpu());
  expect_close(index_select(x, 1, good.to(gpu())), index_select(x.to(Device::cpu()), 1, good));
}

TEST(CudaPoolGpu, MaxPool2dWithPaddingAndCeilMode) {
  REQUIRE_GPU();
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::i32}) {
    SCOPED_TRACE(dtype_name(dt));
    auto x = rand_f({2, 3, 11, 10}).cast(dt);
    PoolOptions o{{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true};
    auto [v, i] = max_pool2d_with_indices(x, o);
    auto [gv, gi] = max_pool2d_with_indices(x.to(gpu()), o);
    expect_close(gv, v);
    expect_close(gi, i);
  }
  auto x = rand_f({2, 2, 9, 13});
  PoolOptions o{{2, 3}, {2, 2}, {1, 0}, {1, 2}, true, true};  // dilation
  auto [v, i] = max_pool2d_with_indices(x, o);
  auto [gv, gi] = max_pool2d_with_indices(x.to(gpu()), o);
  expect_close(gv, v);
  expect_close(gi, i);
  PoolOptions a{{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false};
  expect_close(avg_pool2d(x.to(gpu()), a), avg_pool2d(x, a), 1e-6, 1e-6);
  a.count_include_pad = true;
  expect_close(avg_pool2d(x.to(gpu()), a), avg_pool2d(x, a), 1e-6, 1e-6);
  PoolOptions p1{{4}, {3}, {2}, {1}, true, true};
  auto x1 = rand_f({3, 4, 20});
  expect_close(max_pool1d(x1.to(gpu()), p1), max_pool1d(x1, p1));
}

TEST(CudaPoolGpu, AdaptiveAvgPool2d) {
  REQUIRE_GPU();
  auto x = permute(rand_f({2, 7, 9, 3}), {0, 3, 1, 2});  // [2, 3, 7, 9]
  expect_close(adaptive_avg_pool2d(x.to(gpu()), {3, 4}), adaptive_avg_pool2d(x, {3, 4}), 1e-6, 1e-6);
  expect_close(adaptive_avg_pool2d(x.to(gpu()), {7, 3}), adaptive_avg_pool2d(x, {7, 3}), 1e-6, 1e-6);
  auto xd = rand_f({2, 3, 40, 30}, DType::f64);  // medium windows: a warp per output
  expect_close(adaptive_avg_pool2d(xd.to(gpu()), {3, 2}), adaptive_avg_pool2d(xd, {3, 2}), 1e-12, 1e-12);
  auto xg = rand_f({1, 4, 100, 90});  // global average: a block per output
  expect_close(adaptive_avg_pool2d(xg.to(gpu()), {1, 1}), adaptive_avg_pool2d(xg, {1, 1}), 1e-5, 1e-6);
  auto x1 = rand_f({3, 10}, DType::bf16);
  expect_close(adaptive_avg_pool1d(x1.to(gpu()), 4), adaptive_avg_pool1d(x1, 4), 1e-2, 1e-2);
}

TEST(CudaInterpolateGpu, BilinearBicubicNearest) {
  REQUIRE_GPU();
  auto x = permute(rand_f({2, 6, 7, 3}), {0, 3, 1, 2});  // [2, 3, 6, 7]
  for (bool ac : {false, true}) {
    for (InterpMode m : {InterpMode::linear, InterpMode::cubic}) {
      SCOPED_TRACE(std::to_string(int(m)) + (ac ? " align_corners" : ""));
      for (Sizes s : {Sizes{13, 5}, Sizes{6, 7}, Sizes{3, 16}, Sizes{1, 9}}) {
        expect_close(interpolate(x.to(gpu()), s, m, ac), interpolate(x, s, m, ac), 1e-6, 1e-6);
      }
      auto xd = rand_f({2, 3, 5, 4}, DType::f64);
      expect_close(interpolate(xd.to(gpu()), {9, 11}, m, ac), interpolate(xd, {9, 11}, m, ac), 1e-14, 1e-14);
      auto x1 = rand_f({2, 3, 8});
      expect_close(interpolate(x1.to(gpu()), {21}, m, ac), interpolate(x1, {21}, m, ac), 1e-6, 1e-6);
    }
  }
  for (Sizes s : {Sizes{13, 5}, Sizes{12, 14}, Sizes{4, 3}})
    expect_close(interpolate(x.to(gpu()), s), interpolate(x, s));
  auto x3 = rand_f({1, 2, 3, 4, 5});
  expect_close(interpolate(x3.to(gpu()), {5, 8, 3}), interpolate(x3, {5, 8, 3}));
}

}  // namespace
}  // namespace ember
