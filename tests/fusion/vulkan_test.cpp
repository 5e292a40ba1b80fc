// The fusion decorator on Vulkan (src/backends/vulkan/fused.cpp): elementwise groups become one
// generated shader, and their results are the unfused Vulkan backend's bits (each node rounds to
// its dtype as the eager kernels' stores do). Skipped without a Vulkan device (lavapipe in CI).
#include "ember/backends/vulkan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "ember/core/trace.hpp"
#include "ember/decorators/fusion.hpp"
#include "ember/ember.hpp"

namespace ember {
namespace {

#define EMBER_NEED_VULKAN() \
  if (!vulkan::available()) GTEST_SKIP() << "no Vulkan device: " << vulkan::describe_devices()

Device eager() { return Device::vulkan(0); }
Device fused() { return Device::vulkan(0).fusion(); }
fusion::Stats stats() { return fusion::stats(fused().backend()); }
void reset() { fusion::reset_stats(fused().backend()); }

bool has(DType dt) {  // the device runs dt's kernels
  return eager().backend().supports(make_op(OpKind::abs, {eager().backend().write(TensorData(Shape{1}, dt))}));
}

DynTensor randn(Shape s, uint64_t seed, const Device& d, DType dt = DType::f32) {
  Device::cpu().seed(seed);
  auto x = DynTensor::normal(std::move(s), 0, 1, DType::f32, Device::cpu()) * 3;
  return DynTensor::from_data(x.cast(dt).into_data(), d);
}

void expect_same(const DynTensor& a, const DynTensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.dtype(), b.dtype());
  auto da = a.into_data(), db = b.into_data();
  ASSERT_EQ(da.bytes().size(), db.bytes().size());
  const size_t es = dtype_size(da.dtype()), n = da.bytes().size() / es;
  size_t bad = 0, first = n;
  for (size_t i = 0; i < n; ++i)
    if (!std::equal(da.bytes().begin() + long(i * es), da.bytes().begin() + long((i + 1) * es),
                    db.bytes().begin() + long(i * es)))
      ++bad, first = std::min(first, i);
  if (bad) {
    auto va = da.to_doubles(), vb = db.to_doubles();
    ADD_FAILURE() << bad << " of " << n << " elements differ; first at " << first << ": fused " << va[first]
                  << ", unfused " << vb[first];
  }
}

// f over inputs of `shapes` on the fused and the unfused Vulkan device: the same bytes.
template <class F>
void check_same(F f, std::vector<Shape> shapes, DType dt = DType::f32) {
  std::vector<DynTensor> e, l;
  for (size_t i = 0; i < shapes.size(); ++i) {
    e.push_back(randn(shapes[i], 100 + i, eager(), dt));
    l.push_back(randn(shapes[i], 100 + i, fused(), dt));
  }
  expect_same(f(l), f(e));
}

// The tanh GELU of an affine map written from primitives (a bias broadcast over rows): one kernel.
TEST(FusionVulkan, GeluOfAnAffineMapIsOneKernel) {
  EMBER_NEED_VULKAN();
  auto f = [](std::vector<DynTensor> v) {
    auto x = v[0] * v[1] + v[2];
    return x * 0.5 * (1 + tanh((x + x * x * x * 0.044715) * 0.7978845608));
  };
  reset();
  check_same(f, {{4, 33, 170}, {170}, {33, 1}});
  auto s = stats();
  EXPECT_EQ(s.groups_fused, 1);
  EXPECT_EQ(s.ops_fused, 11);
}

TEST(FusionVulkan, ComparesWhereClampAndCastsInOneKernel) {
  EMBER_NEED_VULKAN();
  reset();
  check_same(
      [](std::vector<DynTensor> v) {
        auto y = where(lower_equal(v[1], v[0]), clamp(v[0] * 3, -1.5, 2.0), exp(v[1]));
        auto k = (y * 10).cast(DType::i32);  // truncates toward zero
        return k.cast(DType::f32) - v[2] * 0.25;
      },
      {{64, 129}, {129}, {64, 1}});
  EXPECT_EQ(stats().groups_fused, 1);
}

TEST(FusionVulkan, SubAndDivKeepTheirOperandOrder) {
  EMBER_NEED_VULKAN();
  check_same([](std::vector<DynTensor> v) { return (v[0] - v[1]) / (v[1] - 2.5) - v[0] / 4; }, {{300}, {300}});
}

TEST(FusionVulkan, ViewsOfComputedTensorsAreReadThroughStrides) {
  EMBER_NEED_VULKAN();
  check_same(
      [](std::vector<DynTensor> v) {
        auto t = transpose(v[0], 0, 1);          // [40, 30], strided
        auto s = slice(v[1], {{}, {0, 80, 2}});  // step-2 slice: [30, 40]
        return exp(t) * transpose(s, 0, 1) + expand(v[2], {40, 30});
      },
      {{30, 40}, {30, 80}, {1, 30}});
  // rank 4 with a permute and an offset slice
  check_same(
      [](std::vector<DynTensor> v) {
        auto p = permute(v[0], {0, 2, 3, 1});               // [2, 5, 6, 3]
        auto s = slice(v[1], {{1, 3}, {}, {}, {2, 8, 2}});  // offset and step 2: [2, 5, 6, 3]
        return tanh(p) - s * 0.5;
      },
      {{2, 3, 5, 6}, {3, 5, 6, 9}});
}

TEST(FusionVulkan, HalfPrecisionRoundsAfterEveryOp) {
  EMBER_NEED_VULKAN();
  if (has(DType::f16))
    check_same([](std::vector<DynTensor> v) { return sigmoid(v[0] * v[1] - 0.25) + tanh(v[1]); },
               {{3, 5000}, {3, 5000}}, DType::f16);
  if (has(DType::bf16))
    check_same([](std::vector<DynTensor> v) { return relu(v[0]) * v[1] + 1; }, {{7, 999}, {999}}, DType::bf16);
  if (has(DType::f64))
    check_same([](std::vector<DynTensor> v) { return log1p(abs(v[0])) * pow(v[1], 2.0) - atan2(v[0], v[1]); },
               {{50, 70}, {70}}, DType::f64);
}

TEST(FusionVulkan, IntegerAndBoolChainsWrapAsTheEagerKernels) {
  EMBER_NEED_VULKAN();
  for (DType dt : {DType::i32, DType::i64, DType::i16, DType::i8, DType::u8}) {
    if (!has(dt)) continue;
    SCOPED_TRACE(std::string(dtype_name(dt)));
    check_same(
        [](std::vector<DynTensor> v) {
          auto a = v[0] * 37 + v[1] * v[1];  // wraps in the narrow types
          auto m = bool_and(greater(a, v[1]), not_equal(v[0], 0));
          return where(m, clamp(a, -20.0, 100.0), maximum(v[0], v[1]) - 3);
        },
        {{33, 65}, {65}}, dt);
  }
}

TEST(FusionVulkan, PowWithAScalarExponentTakesTheEagerFastPaths) {
  EMBER_NEED_VULKAN();
  for (double e : {2.0, 0.5, 3.0, -1.0, -0.5, -2.0, 1.7})
    check_same([e](std::vector<DynTensor> v) { return pow(abs(v[0]) + 0.1, e) * 2 + v[0]; }, {{1000}});
}

// A group whose values are read by several later ops and kept by the caller: one kernel with
// several outputs of different dtypes.
TEST(FusionVulkan, OneKernelWritesSeveralOutputs) {
  EMBER_NEED_VULKAN();
  std::vector<DynTensor> fused_out, eager_out;
  for (const Device& d : {fused(), eager()}) {
    auto x = randn({17, 300}, 7, d);
    auto a = exp(x * 0.1);
    auto mask = greater(a, 1.0);
    auto h = (a * 20 + x).cast(DType::i32);
    auto y = where(mask, sin(a), cos(x)) * a;
    (d == fused() ? fused_out : eager_out) = {a, mask, h, y};
  }
  reset();
  for (size_t i = 0; i < fused_out.size(); ++i) expect_same(fused_out[i], eager_out[i]);
  EXPECT_EQ(stats().groups_fused, 1);
  EXPECT_EQ(stats().flushes, 1);
}

// 9 operands take a wide pipeline (operand bindings beyond 0-5); 30 exceed every pipeline and
// the group runs op by op. Either way, the unfused results.
TEST(FusionVulkan, GroupsWithManyOperands) {
  EMBER_NEED_VULKAN();
  reset();
  check_same([](std::vector<DynTensor> v) { return v[0] * v[1] + v[2] * v[3] - v[4] * v[5] + v[6] / (abs(v[7]) + 1); },
             {{40}, {40}, {40}, {40}, {40}, {40}, {40}, {40}});
  EXPECT_EQ(stats().groups_fused, 1);
  std::vector<Shape> shapes(30, Shape{3, 7});
  check_same(
      [](std::vector<DynTensor> v) {
        DynTensor s = v[0];
        for (size_t i = 1; i < v.size(); ++i) s = s * 0.5 + v[i];
        return s;
      },
      shapes);
}

TEST(FusionVulkan, OneElementAndEmptyDomains) {
  EMBER_NEED_VULKAN();
  check_same([](std::vector<DynTensor> v) { return exp(v[0]) * v[1] + 1; }, {{1}, {}});
  check_same([](std::vector<DynTensor> v) { return exp(v[0]) * v[1] + 1; }, {{0, 4}, {4}});
}

TEST(FusionVulkan, TraceNamesTheVulkanKernel) {
  EMBER_NEED_VULKAN();
  const std::string path = ::testing::TempDir() + "fusion_vulkan_trace.json";
  {
    trace::Session session(path);
    auto x = randn({256}, 3, fused());
    (void)(sigmoid(x) * x + 1).to_vector<float>();
  }
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("vulkan_fused_"), std::string::npos) << "no fused Vulkan kernel in the trace";
  std::remove(path.c_str());
}

TEST(FusionVulkan, AutodiffBackwardChainsFuse) {
  EMBER_NEED_VULKAN();
  Device d = fused().autodiff(), e = eager().autodiff();
  auto x = randn({64, 48}, 21, d).require_grad(), xe = randn({64, 48}, 21, e).require_grad();
  auto f = [](const DynTensor& x) { return sum(x * 0.5 * (1 + erf(x / std::sqrt(2.0))) * tanh(x)); };
  reset();
  auto g = f(x).backward().get(x).value();
  auto ge = f(xe).backward().get(xe).value();
  expect_same(g, ge);
  EXPECT_GE(stats().groups_fused, 2);
}

}  // namespace
}  // namespace ember
