// The fusion decorator on the CPU: what is queued, what flushes, how groups are cut, and that
// fused results equal the unfused backend's (the fused CPU kernels run the eager kernels' code
// on tiles, so equality is exact).
#include "ember/decorators/fusion.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <tuple>

#include "ember/core/trace.hpp"
#include "ember/ember.hpp"
#include "ember/nn.hpp"

namespace ember {
namespace {

Device fused() { return Device::cpu().fusion(); }
fusion::Stats stats() { return fusion::stats(fused().backend()); }
void reset() { fusion::reset_stats(fused().backend()); }

DynTensor randn(Shape s, uint64_t seed, const Device& d, DType dt = DType::f32) {
  Device::cpu().seed(seed);
  auto x = DynTensor::normal(std::move(s), 0, 1, DType::f32, Device::cpu());
  return DynTensor::from_data(x.cast(dt).into_data(), d);
}

void expect_same(const DynTensor& a, const DynTensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.dtype(), b.dtype());
  auto da = a.into_data(), db = b.into_data();
  EXPECT_EQ(da.bytes().size(), db.bytes().size());
  EXPECT_TRUE(std::equal(da.bytes().begin(), da.bytes().end(), db.bytes().begin())) << "results differ";
}

template <class F>
void check_same(F f, std::vector<Shape> shapes, DType dt = DType::f32) {
  std::vector<DynTensor> eager, lazy;
  for (size_t i = 0; i < shapes.size(); ++i) {
    eager.push_back(randn(shapes[i], 100 + i, Device::cpu(), dt));
    lazy.push_back(randn(shapes[i], 100 + i, fused(), dt));
  }
  expect_same(f(eager), f(lazy));
}

TEST(Fusion, DeviceFactory) {
  EXPECT_EQ(Device::cpu().fusion(), Device::cpu().fusion());
  EXPECT_TRUE(Device::cpu().fusion().is_fusion());
  EXPECT_TRUE(Device::cpu().fusion().autodiff().is_fusion());
  EXPECT_FALSE(Device::cpu().is_fusion());
  EXPECT_EQ(Device::cpu().fusion().name(), "cpu+fusion");
  EXPECT_THROW(Device::cpu().autodiff().fusion(), Error);
}

TEST(Fusion, GeluChainIsOneGroup) {
  auto gelu = [](std::vector<DynTensor> v) {
    auto& x = v[0];
    return x * 0.5 * (1 + erf(x / std::sqrt(2.0)));
  };
  reset();
  check_same(gelu, {{4, 333, 17}});
  auto s = stats();
  EXPECT_EQ(s.groups_fused, 1);
  EXPECT_EQ(s.ops_fused, 5);  // mul, div, erf, add, mul
  EXPECT_EQ(s.ops_dropped, 0);
}

// a domain of many tiles, spread over the pool, its size not a multiple of the tile; the output
// written into the input nobody else holds, and a new one
TEST(Fusion, LargeDomainsOfManyTiles) {
  check_same([](std::vector<DynTensor> v) { return v[0] * 0.5 * (1 + erf(v[0] / std::sqrt(2.0))); }, {{301, 1003}});
  check_same([](std::vector<DynTensor> v) { return sigmoid(v[0] * 3) + v[1]; }, {{7, 70001}, {70001}});
  auto x = randn({1000, 333}, 9, fused()), xe = randn({1000, 333}, 9, Device::cpu());
  expect_same(exp(std::move(x) * 2) - 1, exp(std::move(xe) * 2) - 1);
}

TEST(Fusion, BroadcastScalarsCastsComparesWhereClamp) {
  check_same([](std::vector<DynTensor> v) {
    auto y = where(greater(v[0], v[1]), exp(v[0]), clamp(v[1] * 3, -1.5, 2.0));
    return (y.cast(DType::bf16) * 2).cast(DType::f32) + v[2];
  }, {{64, 129}, {129}, {64, 1}});
}

TEST(Fusion, HalfPrecisionChainsMatchEagerRounding) {
  check_same([](std::vector<DynTensor> v) { return sigmoid(v[0] * v[1] - 0.25) + tanh(v[1]); }, {{3, 5000}, {3, 5000}},
             DType::f16);
  check_same([](std::vector<DynTensor> v) { return relu(v[0]) * v[1] + 1; }, {{7, 999}, {999}}, DType::bf16);
}

TEST(Fusion, ViewsOfMaterialisedTensorsAreReadThroughStrides) {
  check_same([](std::vector<DynTensor> v) {
    auto t = transpose(v[0], 0, 1);                       // [40, 30], strided
    auto s = slice(v[1], {{}, {0, 80, 2}});                // step-2 slice: [30, 40]
    return exp(t) * transpose(s, 0, 1) + expand(v[2], {40, 30});
  }, {{30, 40}, {30, 80}, {1, 30}});
}

TEST(Fusion, FanOutAndIntermediateReads) {
  reset();
  auto x = randn({1000}, 7, fused()), xe = randn({1000}, 7, Device::cpu());
  auto a = exp(x), ae = exp(xe);
  auto b = a * 2, be = ae * 2;
  auto c = a + b, ce = ae + be;
  expect_same(b, be);  // a read in the middle of the chain flushes it
  auto d = sin(c) * a, de = sin(ce) * ae;
  expect_same(d, de);
  expect_same(a, ae);
  EXPECT_EQ(stats().flushes, 2);
}

TEST(Fusion, DeadResultsAreNeverComputed) {
  reset();
  auto x = randn({256}, 3, fused());
  {
    auto unused = exp(x) * 3;  // dropped before anything reads it
  }
  auto y = x + 1;
  y.to_vector<float>();
  auto s = stats();
  EXPECT_EQ(s.ops_dropped, 2);
  EXPECT_EQ(s.groups_single, 1);
}

// Results of a row program against eager ones: equal up to `rtol` relative to max(1, |eager|)
// (a row folded in one run gives the eager bits; longer rows are folded tile by tile).
void expect_close(const DynTensor& got, const DynTensor& want, double rtol) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  auto g = got.cast(DType::f64).to_vector<double>();
  auto w = want.cast(DType::f64).to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    bool ok = std::isnan(w[i]) ? std::isnan(g[i])
              : std::isinf(w[i]) ? g[i] == w[i]
                                 : std::abs(g[i] - w[i]) <= rtol * std::max(1.0, std::abs(w[i]));
    if (!ok && ++bad <= 5) ADD_FAILURE() << "element " << i << ": fused " << g[i] << ", eager " << w[i];
  }
  EXPECT_EQ(bad, 0);
}

template <class F>
void check_close(F f, std::vector<Shape> shapes, DType dt = DType::f32, double rtol = 1e-6) {
  std::vector<DynTensor> eager, lazy;
  for (size_t i = 0; i < shapes.size(); ++i) {
    eager.push_back(randn(shapes[i], 300 + i, Device::cpu(), dt));
    lazy.push_back(randn(shapes[i], 300 + i, fused(), dt));
  }
  expect_close(f(lazy), f(eager), rtol);
}

DynTensor softmax_of(const DynTensor& x) {
  auto e = exp(x - max(x, {-1}, true));
  return e / sum(e, {-1}, true);
}

TEST(FusionRows, SoftmaxFromPrimitivesIsOneKernel) {
  for (Shape s : {Shape{33, 1000}, Shape{64, 4096}, Shape{2, 3, 257}}) {
    reset();
    check_same([](std::vector<DynTensor> v) { return softmax_of(v[0]); }, {s});
    auto st = stats();
    EXPECT_EQ(st.groups_fused, 1) << s;
    EXPECT_EQ(st.ops_fused, 5) << s;  // max, sub, exp, sum, div
    EXPECT_EQ(st.ops_eager, 0) << s;
  }
}

TEST(FusionRows, LayerNormAndRmsNormFromPrimitives) {
  auto layer_norm = [](std::vector<DynTensor> v) {
    auto& x = v[0];
    auto mu = mean(x, {-1}, true);
    auto var_ = var(x, {-1}, 0, true);
    return (x - mu) / sqrt(var_ + 1e-5) * v[1] + v[2];
  };
  auto rms_norm = [](std::vector<DynTensor> v) {
    auto& x = v[0];
    return x * rsqrt(mean(x * x, {-1}, true) + 1e-6) * v[1];
  };
  reset();
  check_same(layer_norm, {{96, 768}, {768}, {768}});
  EXPECT_EQ(stats().groups_fused, 1);
  reset();
  check_same(rms_norm, {{128, 1000}, {1000}});
  EXPECT_EQ(stats().groups_fused, 1);
  // weights that differ per row, read in place at each row's offset: [6, 100] over [4, 6, 100]
  // (row r reads row r % 6) and [4, 1, 100] (row r reads row r / 6)
  check_same(rms_norm, {{4, 6, 100}, {6, 100}});
  check_same(rms_norm, {{4, 6, 100}, {4, 1, 100}});
  check_close(layer_norm, {{4, 8, 512}, {512}, {512}}, DType::bf16, 1e-2);
  check_close(rms_norm, {{16, 300}, {300}}, DType::f16, 2e-3);
}

TEST(FusionRows, CrossEntropyFromPrimitives) {
  auto ce = [](std::vector<DynTensor> v) {
    auto& logits = v[0];
    auto onehot = greater(v[1], 1.5).cast(DType::f32);  // a few ones per row
    auto lse = logsumexp(logits, {-1}, true);
    auto picked = sum(logits * onehot, {-1}, true);
    return mean(lse - picked);
  };
  reset();
  check_close(ce, {{512, 1000}, {512, 1000}}, DType::f32, 1e-6);
  EXPECT_LE(stats().groups_fused + stats().groups_single, 3);
}

TEST(FusionRows, EveryReductionWithPrologueAndEpilogue) {
  for (int keep : {1, 0}) {
    check_close([&](std::vector<DynTensor> v) {
      auto y = tanh(v[0]) * 2 + v[1];
      auto r = sum(y, {-1}, keep) + mean(y, {-1}, keep) * max(y, {-1}, keep) - min(y, {-1}, keep);
      auto q = var(y, {-1}, 1, keep) + stddev(y, {-1}, 0, keep) + logsumexp(y, {-1}, keep);
      return exp(r * 0.01) + q;
    }, {{70, 333}, {333}});
  }
  // reductions that drop their dim: a full op reading them broadcasts along the last dim (not
  // per row), so it is not fused with them
  check_close([](std::vector<DynTensor> v) { return v[0] - sum(v[0] * 2, {-1}) + max(v[0], {1}); }, {{64, 64}});
  // dims over the last two, keepdim: the epilogue reads per-row values
  check_close([](std::vector<DynTensor> v) { return v[0] - mean(v[0] * 3, {1, 2}, true); }, {{12, 17, 19}});
}

TEST(FusionRows, LongRowsFoldTileByTile) {
  check_close([](std::vector<DynTensor> v) { return softmax_of(v[0] * 0.5); }, {{8, 20000}}, DType::f32, 1e-6);
  check_close([](std::vector<DynTensor> v) { return var(v[0] + 1, {-1}, 1, false); }, {{8, 30001}}, DType::f32, 1e-6);
}

TEST(FusionRows, StridedInputsAndSpecialValues) {
  check_close([](std::vector<DynTensor> v) {
    auto t = transpose(v[0], 0, 1);  // [40, 30], read through strides
    return softmax_of(t + v[1]);
  }, {{30, 40}, {40, 1}});
  // a row of -inf, one with +inf, one with NaN
  std::vector<float> x(3 * 5, 1.0f);
  for (int j = 0; j < 5; ++j) x[size_t(j)] = -INFINITY;
  x[7] = INFINITY;
  x[12] = NAN;
  auto f = [](const DynTensor& t) {
    return logsumexp(t * 1, {-1}, true) + max(t + 0, {-1}, true) + sum(t * 2, {-1}, true);
  };
  expect_close(f(DynTensor::from_vector<float>(x, {3, 5}, fused())),
               f(DynTensor::from_vector<float>(x, {3, 5}, Device::cpu())), 0);
}

TEST(FusionRows, ReductionsOfTheWholeTensorAndOfFewRowsStayCorrect) {
  check_close([](std::vector<DynTensor> v) { return sum(exp(v[0] * 0.1)) * 2; }, {{100, 50}});
  check_close([](std::vector<DynTensor> v) { return mean(v[0] * v[0], {0, 1}, true) + 1; }, {{3, 70000}});
}

// ---- narrow rows: a row program whose rows are at most half a tile runs several rows to a
// tile (each node once per tile, not once per row); each row still folds in one run, so the
// results are the eager bits. The row counts below are not multiples of the rows per tile.

// Each result of `f` (several outputs of one group: all are alive when the first read flushes)
// equals eager's bit for bit.
template <class F>
void check_same_all(F f, std::vector<Shape> shapes, DType dt = DType::f32) {
  std::vector<DynTensor> eager, lazy;
  for (size_t i = 0; i < shapes.size(); ++i) {
    eager.push_back(randn(shapes[i], 500 + i, Device::cpu(), dt));
    lazy.push_back(randn(shapes[i], 500 + i, fused(), dt));
  }
  std::vector<DynTensor> want = f(eager), got = f(lazy);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    SCOPED_TRACE("result " + std::to_string(k));
    expect_same(got[k], want[k]);
  }
}

TEST(FusionRows, NarrowRowsRunSeveralToATile) {
  // softmax and RMS norm: 67 rows of 100 (40 to a tile), 1100 rows of 2 (512 to a tile), 5 rows of
  // 33 (all in one tile), [3, 7, 50] (rows over two dims)
  for (Shape s : {Shape{67, 100}, Shape{1100, 2}, Shape{5, 33}, Shape{3, 7, 50}}) {
    reset();
    check_same([](std::vector<DynTensor> v) { return softmax_of(v[0]); }, {s});
    EXPECT_EQ(stats().groups_fused, 1) << s;
    const Shape w{s[s.rank() - 1]};
    check_same([](std::vector<DynTensor> v) { return v[0] * rsqrt(mean(v[0] * v[0], {-1}, true) + 1e-6) * v[1]; },
               {s, w});
  }
  // every reduction, keepdim and not; the per-row values feed per-row nodes, then full ones
  for (int keep : {1, 0}) {
    check_same([&](std::vector<DynTensor> v) {
      auto y = tanh(v[0]) * 2 + v[1];
      auto r = sum(y, {-1}, keep) + mean(y, {-1}, keep) * max(y, {-1}, keep) - min(y, {-1}, keep);
      auto q = var(y, {-1}, 1, keep) + stddev(y, {-1}, 0, keep) + logsumexp(y, {-1}, keep);
      return exp(r * 0.01) + q;
    }, {{131, 45}, {45}});
  }
}

TEST(FusionRows, NarrowRowsWithSeveralOutputsAndLongChains) {
  // several outputs of one group: a full intermediate, a per-row value (kept and dropped dims)
  // and the result; a value computed early is read again after two reductions (its tile must
  // stay live while later nodes take tiles)
  for (Shape s : {Shape{77, 60}, Shape{9, 11, 20}}) {
    check_same_all([](std::vector<DynTensor> v) {
      auto a = v[0] * 1.5 + v[1];
      auto m = mean(a, {-1}, true);
      auto b = exp(a - m);
      auto t = sum(b, {-1}, false);
      auto c = b / sum(b, {-1}, true) + a * 0.25;
      auto mx = max(c * a, {-1}, true);
      return std::vector<DynTensor>{c - mx + a, a, m, t, mx * 2};
    }, {s, Shape{s[s.rank() - 1]}});
  }
  // a chain of 100 small ops with a mean every 20 (the narrow-row benchmark's)
  check_same([](std::vector<DynTensor> v) {
    auto y = v[0];
    for (int i = 0; i < 100; ++i) y = i % 20 == 19 ? y - mean(y, {-1}, true) : i % 2 ? y + 0.01 : y * 1.01;
    return y;
  }, {{70, 128}});
}

TEST(FusionRows, NarrowRowsReadPerRowInputsViewsAndGenericOps) {
  // an input read per row ([rows, 1], at the reduced level), a per-row weight that differs per
  // row ([7, 50] over [3, 7, 50]), a transposed input, comparisons and where on per-row values
  check_same([](std::vector<DynTensor> v) {
    auto m = mean(v[0], {-1}, true) * v[1];
    auto y = where(greater(v[0], m), v[0] - m, clamp(v[0], -0.5, 0.5) * m);
    return y + sum(y * v[2], {-1}, true);
  }, {{3, 7, 50}, {3, 7, 1}, {7, 50}});
  check_same([](std::vector<DynTensor> v) {
    auto t = transpose(v[0], 0, 1);  // [90, 40] read through strides
    return softmax_of(t * 2) + max(t, {-1}, true);
  }, {{40, 90}});
  // f16 and bf16: per-row values filled along the rows (half nodes read no one-value operand)
  check_close([](std::vector<DynTensor> v) { return softmax_of(v[0] * 0.5) + 1; }, {{45, 70}}, DType::f16, 2e-3);
  check_close([](std::vector<DynTensor> v) { return v[0] - mean(v[0], {-1}, true) * 2; }, {{45, 70}}, DType::bf16, 1e-2);
}

// ---- column programs: reductions over leading dims (the bias gradient, batch statistics) with
// their prologue computed in-tile and their epilogue per column. A column folds its rows in the
// eager kernel's order (and its per-thread partials), so f32 and f64 results are the eager bits;
// f16 and bf16 are also checked against a double reference. ----

// gelu'(x) written from primitives, as a user's backward would be
DynTensor gelu_grad_of(const DynTensor& x) {
  const double k = 1.0 / std::sqrt(2.0 * M_PI);
  return 0.5 * (1 + erf(x / std::sqrt(2.0))) + x * exp(x * x * -0.5) * k;
}

TEST(FusionColumns, BiasGradientIsOneKernel) {
  for (Shape s : {Shape{257, 130}, Shape{3000, 300}, Shape{4, 4}}) {  // serial, per-thread partials, tiny
    reset();
    check_same([](std::vector<DynTensor> v) { return sum(v[0] * gelu_grad_of(v[1]), {0}); }, {s, s});
    auto st = stats();  // (the eager ops are the scalar constants' creation)
    EXPECT_EQ(st.groups_fused, 1) << s;
    EXPECT_EQ(st.groups_single, 0) << s;
  }
}

TEST(FusionColumns, EveryReductionWithPrologueAndEpilogue) {
  for (int keep : {1, 0}) {
    reset();
    check_same(
        [&](std::vector<DynTensor> v) {
          auto y = tanh(v[0]) * 2 + v[1];
          auto r = sum(y, {0}, keep) + mean(y, {0}, keep) * max(y, {0}, keep) - min(y, {0}, keep);
          auto q = var(y, {0}, 1, keep) + stddev(y, {0}, 0, keep) + logsumexp(y, {0}, keep);
          return exp(r * 0.01) + q;
        },
        {{70, 333}, {333}});
    EXPECT_EQ(stats().groups_fused, 1) << keep;
    EXPECT_EQ(stats().groups_single, 0) << keep;
  }
}

TEST(FusionColumns, RanksSizeOneDimsEmptyReductionsAndParallelPartials) {
  auto f = [](std::vector<int> dims, bool keep) {
    return [=](std::vector<DynTensor> v) {
      auto y = v[0] * v[0] - 0.5;
      return sum(y, dims, keep) * 3 + mean(y, dims, keep) + max(y, dims, keep);
    };
  };
  check_same(f({0, 1}, false), {{6, 33, 40}});  // [B, T, C] summed over B and T
  check_same(f({0, 1}, true), {{6, 33, 40}});
  check_same(f({0}, false), {{5, 1, 7, 9}});
  check_same(f({0, 1, 2}, true), {{5, 1, 7, 9}});
  check_same(f({0}, false), {{1, 40}});     // one row
  check_same(f({0}, false), {{1001, 37}});  // odd sizes
  check_same(f({0}, true), {{200, 700}});   // split into per-thread partials (eager does too)
  check_same(f({0}, false), {{20000, 5}});
  // no rows: sum 0, mean NaN (0 / 0), as eager
  check_same([](std::vector<DynTensor> v) { return sum(v[0] * 2, {0}) + mean(v[0] + 1, {0}); }, {{0, 16}});
}

// A sum and a max over [16, 30000]: the eager kernel splits the sum's rows in one range and the
// max's in one per thread (its accumulators are narrower), so the program sweeps the rows twice;
// the gradient stored beside them must not take the buffer of the input the second sweep reads.
TEST(FusionColumns, ReductionsThatSplitTheRowsDifferentlyAndAnInputNobodyHolds) {
  auto run = [](const Device& d) {
    auto x = randn({16, 30000}, 9, d);
    auto g = std::move(x) * 2;  // x's buffer belongs to the queue alone
    auto s = sum(g, {0}), m = max(g, {0});
    return std::vector<DynTensor>{s, m, g};
  };
  auto got = run(fused()), want = run(Device::cpu());
  for (size_t k = 0; k < got.size(); ++k) expect_same(got[k], want[k]);
}

TEST(FusionColumns, DtypesAgainstEagerAndADoubleReference) {
  auto f = [](std::vector<DynTensor> v) {
    auto y = v[0] * sigmoid(v[1]);
    return sum(y, {0}) + mean(y * y, {0}) * 0.5;
  };
  check_same(f, {{300, 96}, {300, 96}}, DType::f64);
  for (auto [dt, eps] : {std::pair{DType::f16, 1.0 / 1024}, std::pair{DType::bf16, 1.0 / 128}}) {
    check_close(f, {{300, 96}, {300, 96}}, dt, 2 * eps);
    // against the same composition in f64 over the same (rounded) inputs: the fused result is
    // no further from it than the eager one, give or take the output's rounding
    std::vector<DynTensor> lazy, eager, ref;
    for (size_t i = 0; i < 2; ++i) {
      lazy.push_back(randn({300, 96}, 300 + i, fused(), dt));
      eager.push_back(randn({300, 96}, 300 + i, Device::cpu(), dt));
      ref.push_back(eager.back().cast(DType::f64));
    }
    auto g = f(lazy).cast(DType::f64).to_vector<double>();
    auto e = f(eager).cast(DType::f64).to_vector<double>();
    auto r = f(ref).to_vector<double>();
    ASSERT_EQ(g.size(), r.size());
    for (size_t i = 0; i < g.size(); ++i)
      EXPECT_LE(std::abs(g[i] - r[i]), std::abs(e[i] - r[i]) + eps * std::max(1.0, std::abs(r[i])))
          << dt << " column " << i << ": fused " << g[i] << ", eager " << e[i] << ", f64 " << r[i];
  }
}

TEST(FusionColumns, BroadcastInputsViewsAndEpilogueInputs) {
  reset();
  check_same(
      [](std::vector<DynTensor> v) {
        auto t = transpose(v[0], 0, 1);                           // [60, 50] through strides
        auto y = t * v[1] + v[2] * 0.5 - expand(v[3], {60, 50});  // [50], [60, 1], [1, 50]
        return sum(y, {0}) * v[4] + v[1].reshape({50}) * 0 + 1;   // epilogue reads a [50] input
      },
      {{50, 60}, {50}, {60, 1}, {1, 50}, {50}});
  check_same(
      [](std::vector<DynTensor> v) {
        auto s = slice(v[0], {{0, 80, 2}, {}});  // step-2 rows: [40, 33]
        return max(exp(s) - v[1], {0}, true) / 2;
      },
      {{80, 33}, {33}});
}

TEST(FusionColumns, BatchStatisticsReadFinishedColumnsInALaterSweep) {
  // x - mean(x, 0) and the sum of its square: two sweeps over the rows, one kernel
  auto bn = [](std::vector<DynTensor> v) {
    auto& x = v[0];
    auto m = mean(x, {0}, true);
    auto d = x - m;
    auto var_ = mean(d * d, {0}, true);
    return (d * rsqrt(var_ + 1e-5)) * v[1] + v[2];  // a full output after both
  };
  reset();
  check_same(bn, {{256, 48}, {48}, {48}});
  EXPECT_EQ(stats().groups_fused, 1);
  // without keepdim a per-column value still broadcasts along the rows
  reset();
  check_same([](std::vector<DynTensor> v) { return sum((v[0] - mean(v[0], {0})) * (v[0] - mean(v[0], {0})), {0}); },
             {{129, 40}});
  EXPECT_EQ(stats().groups_fused, 1);
}

TEST(FusionColumns, ValuesReadInTheMiddleAndFullOutputsBesideTheSum) {
  auto x = randn({90, 70}, 5, fused()), xe = randn({90, 70}, 5, Device::cpu());
  auto g = x * tanh(x), ge = xe * tanh(xe);
  auto s = sum(g, {0}), se = sum(ge, {0});
  expect_same(s, se);  // read mid-graph: the group runs, g is an output beside s
  auto t = s * 2 + max(g, {0}), te = se * 2 + max(ge, {0});
  expect_same(t, te);
  expect_same(g, ge);
  // the gradient itself and its column sum, from one group (a linear layer's backward)
  reset();
  auto dy = randn({128, 64}, 6, fused()), dye = randn({128, 64}, 6, Device::cpu());
  auto h = randn({128, 64}, 7, fused()), he = randn({128, 64}, 7, Device::cpu());
  auto gy = dy * gelu_grad_of(h), gye = dye * gelu_grad_of(he);
  auto db = sum(gy, {0}), dbe = sum(gye, {0});
  expect_same(db, dbe);
  expect_same(gy, gye);
}

TEST(FusionColumns, AutodiffOfALinearLayersBiasFuses) {
  Device d = fused().autodiff(), e = Device::cpu().autodiff();
  auto x = randn({64, 32}, 21, d), w = randn({16, 32}, 22, d).require_grad(), b = randn({16}, 23, d).require_grad();
  auto xe = randn({64, 32}, 21, e), we = randn({16, 32}, 22, e).require_grad(), be = randn({16}, 23, e).require_grad();
  auto loss = [](const DynTensor& x, const DynTensor& w, const DynTensor& b) {
    auto h = nn::linear(x, w, b);
    return sum(h * 0.5 * (1 + erf(h / std::sqrt(2.0))) * h);
  };
  // the trace names each fused group's kernel: the bias gradient sum(g, 0) must be in a column
  // program (with the chain that computes g), not an eager reduction
  const std::string path = ::testing::TempDir() + "fusion_columns_trace.json";
  DynTensor gb, gw;
  {
    trace::Session session(path);
    auto grads = loss(x, w, b).backward();
    gb = grads.get(b).value();
    gw = grads.get(w).value();
    (void)gb.to_vector<float>();
    (void)gw.to_vector<float>();
  }
  auto ge = loss(xe, we, be).backward();
  expect_close(gb, ge.get(be).value(), 1e-6);
  expect_close(gw, ge.get(we).value(), 1e-5);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // (here g is the epilogue of the forward matmul, recomputed: a matmul program with a column
  // reduction, cpu_gemm_cols)
  EXPECT_TRUE(text.find("cpu_fused_cols") != std::string::npos || text.find("cpu_gemm_cols") != std::string::npos)
      << "no column program ran in the backward";
  std::remove(path.c_str());
}

// Reductions over leading and trailing dims that keep a middle block (BatchNorm's {0, 2, 3}):
// row programs whose rows are the kept indices, each folding its runs (a, k, :) in the eager
// order, so the results are the eager bits while a run fits a tile.
TEST(FusionRows, BatchNormStatisticsKeepAMiddleDim) {
  auto bn = [](std::vector<DynTensor> v) {
    auto& x = v[0];
    auto m = mean(x, {0, 2, 3}, true);
    auto d = x - m;
    auto var_ = mean(d * d, {0, 2, 3}, true);
    return d * rsqrt(var_ + 1e-5) * v[1] + v[2];
  };
  reset();
  check_same(bn, {{8, 6, 5, 7}, {1, 6, 1, 1}, {1, 6, 1, 1}});
  EXPECT_EQ(stats().groups_fused, 1);
  EXPECT_EQ(stats().groups_single, 0);
  for (int keep : {1, 0}) {
    reset();
    check_same(
        [&](std::vector<DynTensor> v) {
          auto y = tanh(v[0]) * 2 + v[1];
          auto r = sum(y, {0, 2}, keep) + mean(y, {0, 2}, keep) * max(y, {0, 2}, keep) - min(y, {0, 2}, keep);
          auto q = var(y, {0, 2}, 1, keep) + stddev(y, {0, 2}, 0, keep) + logsumexp(y, {0, 2}, keep);
          return exp(r * 0.01) + q;
        },
        {{5, 9, 33}, {9, 1}});
    EXPECT_EQ(stats().groups_fused, 1) << keep;
  }
  check_same([](std::vector<DynTensor> v) { return sum(v[0] * v[0], {0, 1, 3}) * 2; }, {{2, 3, 16, 50}});
  // runs longer than a tile fold tile by tile: equal to rounding
  check_close([](std::vector<DynTensor> v) { return var(v[0] * 3, {0, 2}, 1, true) + 1; }, {{3, 5, 9000}});
  check_close(bn, {{4, 8, 6, 10}, {1, 8, 1, 1}, {1, 8, 1, 1}}, DType::bf16, 2e-2);
}

TEST(Fusion, GroupsOfDifferentShapesRunInDependencyOrder) {
  check_same([](std::vector<DynTensor> v) {
    auto a = v[0] * 2;          // [8, 16]
    auto r = v[1] + 1;          // [16]
    auto b = a + r;             // [8, 16] reads the [16] group
    auto r2 = r * 3;            // [16] again
    return b * r2 - exp(a);     // [8, 16]
  }, {{8, 16}, {16}});
}

TEST(Fusion, ViewsOfQueuedValuesDoNotFlush) {
  auto f = [](std::vector<DynTensor> v) {
    auto y = exp(v[0]) * 2;                          // [6, 8, 10], queued
    auto p = permute(y, {2, 0, 1}) + 1;              // a view of a queued value, then more ops
    auto r = reshape(p, {10, 48}) * v[1];            // [10, 48] x [48]
    auto s = slice(r, {{}, {1, 48, 3}});             // step slice of a queued value
    auto m = expand(sum(v[0] * 1.5, {-1}, true), {6, 8, 10});  // expand of a queued reduction
    return sigmoid(s) + sum(m * 0.25);
  };
  reset();
  check_same(f, {{6, 8, 10}, {48}});
  EXPECT_EQ(stats().flushes, 1);  // the final read only
  // the permute folds into the expression under it; the reshape does not (the inputs under it
  // are permuted views), so neither does the slice (under it a view left alone), nor the expand
  // (of a reduction)
  EXPECT_EQ(stats().views_folded, 1);
}

// A view of a queued chain is computed where it is read: permute(exp(x) * 2) + y is one group,
// and exp(x) * 2 itself, held by nothing, is never written.
TEST(Fusion, ViewsOfQueuedChainsFoldIntoTheReader) {
  auto f = [](std::vector<DynTensor> v) {
    auto t = transpose(exp(v[0]) * 2 + v[1], 0, 1);   // [40, 30] view of a queued [30, 40]
    auto s = slice(sigmoid(v[0]), {{1, 30, 2}, {}});  // [15, 40]
    auto r = reshape(tanh(v[0]), {40, 30});           // inputs of the shape: a reshape folds too
    auto e = expand(v[1] * 3, {5, 30, 40});           // broadcast input [40] expands, then views
    return std::make_tuple(t * 3 + r, s + 1, e - 1);
  };
  std::vector<DynTensor> eager{randn({30, 40}, 1, Device::cpu()), randn({40}, 2, Device::cpu())};
  std::vector<DynTensor> lazy{randn({30, 40}, 1, fused()), randn({40}, 2, fused())};
  auto [a, b, c] = f(eager);
  reset();
  auto [la, lb, lc] = f(lazy);
  expect_same(la, a);
  expect_same(lb, b);
  expect_same(lc, c);
  auto st = stats();
  EXPECT_EQ(st.views_folded, 4);
  EXPECT_EQ(st.ops_dropped, 6);  // exp, mul, add, sigmoid, tanh, mul: never materialised
  EXPECT_EQ(st.groups_single, 0);
}

// A transposed view of a queued chain read by a matmul is not computed transposed: the matmul
// takes a plain view of the chain's value (read through its strides), and the expression the
// fold made for the view, read by nothing else, is dropped.
TEST(Fusion, MatmulReadsTheTransposeOfAQueuedChainAsAView) {
  auto f = [](std::vector<DynTensor> v) {
    auto g = exp(v[0]) * 2;  // [64, 48], queued; read by the matmul and by an add
    // [48, 64] x [64, 32]: the weight-gradient form
    return std::make_tuple(matmul(transpose(g, 0, 1), v[1]), g + 1);
  };
  std::vector<DynTensor> eager{randn({64, 48}, 1, Device::cpu()), randn({64, 32}, 2, Device::cpu())};
  std::vector<DynTensor> lazy{randn({64, 48}, 1, fused()), randn({64, 32}, 2, fused())};
  const auto [want, want2] = f(eager);
  reset();
  const auto [got, got2] = f(lazy);
  expect_same(got, want);
  expect_same(got2, want2);
  const auto st = stats();
  EXPECT_EQ(st.views_folded, 1);
  EXPECT_EQ(st.ops_dropped, 2);  // the folded copies of exp and mul, never computed
}

// Not folded: a view of a reduction's result, a view whose expression mixes shapes, and a
// reshape of a broadcast input; each still gives eager's values.
TEST(Fusion, ViewsThatDoNotFoldStillMatchEager) {
  auto f = [](std::vector<DynTensor> v) {
    auto a = transpose(sum(v[0], {1}, true) * 2, 0, 1);         // [1, 30]: under it a reduction
    auto b = permute((v[1] * 2) + v[0], {1, 0});                 // v[1] * 2 is [40], the sum [30, 40]
    auto c = reshape(v[0] + v[1], {1200});                       // v[1] broadcasts: not a view
    return std::make_tuple(a + 1, b * 1, c - 1);
  };
  std::vector<DynTensor> eager{randn({30, 40}, 3, Device::cpu()), randn({40}, 4, Device::cpu())};
  std::vector<DynTensor> lazy{randn({30, 40}, 3, fused()), randn({40}, 4, fused())};
  auto [a, b, c] = f(eager);
  reset();
  auto [la, lb, lc] = f(lazy);
  expect_same(la, a);
  expect_same(lb, b);
  expect_same(lc, c);
  EXPECT_EQ(stats().views_folded, 0);
}

TEST(Fusion, IntegerDivisionStaysEager) {
  auto a = DynTensor::from_vector<int32_t>({7, 8, 9}, {3}, fused());
  auto z = DynTensor::from_vector<int32_t>({1, 0, 2}, {3}, fused());
  reset();
  auto y = (a + 1) * 2;
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{16, 18, 20}));
  EXPECT_EQ(stats().groups_fused, 1);
  (void)z;
}

TEST(Fusion, InPlaceReuseOfAnInputNobodyHolds) {
  auto x = randn({1 << 16}, 9, fused());
  auto before = Device::cpu().fusion().memory_stats().in_use;
  auto y = exp(std::move(x) * 2) + 1;  // x dies into the chain: its buffer becomes y's
  auto after = Device::cpu().fusion().memory_stats().in_use;
  EXPECT_LE(after, before) << "a new buffer was allocated for the output";
  EXPECT_EQ(y.shape(), Shape({1 << 16}));
}

TEST(Fusion, QueueBoundFlushes) {
  reset();
  auto x = randn({64}, 1, fused());
  for (int i = 0; i < 2000; ++i) x = x * 1.0001 + 0.0001;
  EXPECT_GE(stats().flushes, 2000 * 2 / 512);
  auto xe = randn({64}, 1, Device::cpu());
  for (int i = 0; i < 2000; ++i) xe = xe * 1.0001 + 0.0001;
  expect_same(x, xe);
}

TEST(Fusion, PendingTensorReadFromAnotherThread) {
  auto x = randn({4096}, 5, fused());
  auto y = exp(x) * 2;  // queued on this thread
  std::vector<float> got;
  std::thread t([&] { got = (y + 1).to_vector<float>(); });
  t.join();
  auto xe = randn({4096}, 5, Device::cpu());
  EXPECT_EQ(got, (exp(xe) * 2 + 1).to_vector<float>());
}

TEST(Fusion, ErrorsStayEager) {
  auto a = randn({3, 4}, 1, fused()), b = randn({5}, 2, fused());
  EXPECT_THROW(a + b, Error);  // shape error at the call, not at the flush
}

TEST(Fusion, AutodiffOnTopFusesTheBackward) {
  Device d = fused().autodiff();
  auto x = randn({50, 70}, 11, d).require_grad();
  auto xe = randn({50, 70}, 11, Device::cpu().autodiff()).require_grad();
  auto f = [](const DynTensor& x) { return sum(x * 0.5 * (1 + erf(x / std::sqrt(2.0))) * tanh(x)); };
  reset();
  auto g = f(x).backward().get(x).value();
  auto ge = f(xe).backward().get(xe).value();
  auto gv = g.to_vector<float>(), gev = ge.to_vector<float>();
  ASSERT_EQ(gv.size(), gev.size());
  for (size_t i = 0; i < gv.size(); ++i) ASSERT_NEAR(gv[i], gev[i], 1e-6f * (1 + std::abs(gev[i]))) << i;
  // the loss is never read: the forward chain and its sum are dead, and the backward group
  // recomputes what it needs of the forward from x (one group)
  EXPECT_GE(stats().groups_fused, 1);
}


// ---- matmul epilogues: the elementwise ops over a product join the matmul's group; the CPU
// runs them as one pass over the product, or (EMBER_FUSION_GEMM_EPILOGUE=1) on each block of it
// inside the GEMM. Results equal eager bit for bit (same GEMM, same kernels) either way: every
// FusionMatmul test runs in both modes. ----

class FusionMatmul : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) setenv("EMBER_FUSION_GEMM_EPILOGUE", "1", 1);
    else unsetenv("EMBER_FUSION_GEMM_EPILOGUE");
  }
  void TearDown() override { unsetenv("EMBER_FUSION_GEMM_EPILOGUE"); }
};
INSTANTIATE_TEST_SUITE_P(Modes, FusionMatmul, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? std::string("InGemm") : std::string("AfterGemm"); });

DynTensor gelu_of(const DynTensor& x) { return x * 0.5 * (1 + erf(x / std::sqrt(2.0))); }

TEST_P(FusionMatmul, BiasActivationResidualAndScaleAreOneKernel) {
  // odd sizes: edge micro-tiles, several row strips, a K longer than one packed slice
  for (auto [m, k, n] : {std::tuple{300, 600, 130}, std::tuple{97, 33, 1031}, std::tuple{8, 512, 64}}) {
    auto f = [](std::vector<DynTensor> v) { return gelu_of(matmul(v[0], v[1]) + v[2]) * 0.5 + v[3]; };
    reset();
    check_same(f, {{m, k}, {k, n}, {n}, {m, n}});
    auto s = stats();
    EXPECT_EQ(s.groups_fused, 1) << m << "x" << k << "x" << n;
    EXPECT_EQ(s.groups_single, 0);
    EXPECT_EQ(s.ops_fused, 9);  // matmul, add, mul, div, erf, add, mul, mul, add
  }
}

TEST_P(FusionMatmul, BiasInputTransposedOperandsAndF64) {
  auto f = [](std::vector<DynTensor> v) { return relu(matmul(v[0], transpose(v[1], 0, 1), v[2])) - 0.25; };
  reset();
  check_same(f, {{70, 90}, {150, 90}, {150}});
  EXPECT_EQ(stats().groups_fused, 1);
  check_same(f, {{70, 90}, {150, 90}, {150}}, DType::f64);
}

TEST_P(FusionMatmul, BatchedBroadcastGemvAndTinyProducts) {
  auto f = [](std::vector<DynTensor> v) { return tanh(matmul(v[0], v[1])) * 3 + 1; };
  check_same(f, {{4, 50, 60}, {60, 70}});        // batch rows continue: one tall GEMM
  check_same(f, {{3, 2, 40, 30}, {2, 30, 20}});  // broadcast batch dims
  check_same(f, {{1, 300}, {300, 500}});         // one row: the GEMV path
  check_same(f, {{300, 200}, {200, 1}});         // one column
  check_same(f, {{3, 4}, {4, 5}});               // a tiny product (no packed GEMM)
  check_same(f, {{40, 0}, {0, 30}});             // K == 0: zeros through the epilogue
  check_same(f, {{20, 30}, {30, 40}}, DType::bf16);  // not taken: eager matmul, fused rest
}

TEST_P(FusionMatmul, ProductReadOutsideTheGroupIsMaterialised) {
  auto x = randn({64, 80}, 1, fused()), w = randn({80, 96}, 2, fused());
  auto xe = randn({64, 80}, 1, Device::cpu()), we = randn({80, 96}, 2, Device::cpu());
  reset();
  auto p = matmul(x, w);
  auto y = sigmoid(p) * p;  // p is held: an output of the group next to y
  auto s = sum(p, {-1});    // a row reduction of the product: its own group
  auto pe = matmul(xe, we);
  expect_same(y, sigmoid(pe) * pe);
  expect_same(p, pe);
  expect_same(s, sum(pe, {-1}));
}

TEST_P(FusionMatmul, OperandBuffersAreNotReusedWhileTheProductReadsThem) {
  // x is square like the product, the epilogue reads it too (a residual) and nothing else holds
  // it: it must not become y's buffer while the GEMM still reads it
  for (int n : {64, 300}) {
    auto w = randn({n, n}, 4, fused());
    auto we = randn({n, n}, 4, Device::cpu());
    auto want = [&] {
      auto x = randn({n, n}, 3, Device::cpu());
      auto h = exp(matmul(x, we) * 0.01);
      return h + std::move(x);
    }();
    auto y = [&] {
      auto x = randn({n, n}, 3, fused());
      auto h = exp(matmul(x, w) * 0.01);
      return std::move(h) + std::move(x);
    }();
    expect_same(y, want);
  }
}

TEST_P(FusionMatmul, AutodiffOnTopMatchesEager) {
  // a two-layer MLP: forward epilogues (bias, GELU) and backward ones (the GELU gradient times
  // the product of the output gradient and the weight)
  auto run = [](const Device& d) {
    auto x = randn({64, 48}, 21, d);
    auto w1 = randn({48, 96}, 22, d).require_grad(), b1 = randn({96}, 23, d).require_grad();
    auto w2 = randn({96, 10}, 24, d).require_grad();
    auto h = gelu_of(matmul(x, w1) + b1);
    auto loss = sum(matmul(h, w2) * matmul(h, w2)) * 0.5;
    auto g = loss.backward();
    return std::vector<DynTensor>{loss, g.get(w1).value(), g.get(b1).value(), g.get(w2).value()};
  };
  auto got = run(fused().autodiff()), want = run(Device::cpu().autodiff());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-5);
}

}  // namespace
}  // namespace ember

#include "ember/backends/cuda.hpp"

namespace ember {
namespace {

// On a GPU: the same chains on Device::cuda(0).fusion() against eager CUDA. The fused kernel
// runs the eager kernels' device functions, but NVRTC may contract a multiply of one op and an
// add of the next into one fused multiply-add, so results agree to a few ulp, not bit for bit.
class FusionCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::available()) GTEST_SKIP() << "no CUDA device";
  }
  static void expect_close(const DynTensor& got, const DynTensor& want, double rtol) {
    ASSERT_EQ(got.shape(), want.shape());
    ASSERT_EQ(got.dtype(), want.dtype());
    auto g = got.to(Device::cpu()).cast(DType::f64).to_vector<double>();
    auto w = want.to(Device::cpu()).cast(DType::f64).to_vector<double>();
    int bad = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      // relative to max(1, |w|): a sum that cancels keeps the error of its O(1) terms
      bool ok = std::isnan(w[i])   ? std::isnan(g[i])
                : std::isinf(w[i]) ? g[i] == w[i]  // inf - inf is NaN: infinities compare exactly
                                   : std::abs(g[i] - w[i]) <= rtol * std::max(1.0, std::abs(w[i]));
      if (!ok && ++bad <= 5) ADD_FAILURE() << "element " << i << ": fused " << g[i] << ", eager " << w[i];
    }
    EXPECT_EQ(bad, 0);
  }
  template <class F>
  void check(F f, std::vector<Shape> shapes, DType dt = DType::f32, double rtol = 1e-5) {
    Device gpu = Device::cuda(0), fgpu = gpu.fusion();
    std::vector<DynTensor> eager, lazy;
    for (size_t i = 0; i < shapes.size(); ++i) {
      eager.push_back(randn(shapes[i], 200 + i, gpu, dt));
      lazy.push_back(randn(shapes[i], 200 + i, fgpu, dt));
    }
    fusion::reset_stats(fgpu.backend());
    auto got = f(lazy);
    auto want = f(eager);
    expect_close(got, want, rtol);
    EXPECT_GE(fusion::stats(fgpu.backend()).groups_fused, 1);
  }
};

TEST_F(FusionCuda, GeluChain) {
  check([](std::vector<DynTensor> v) { return v[0] * 0.5 * (1 + erf(v[0] / std::sqrt(2.0))); }, {{4, 333, 17}});
  check([](std::vector<DynTensor> v) { return v[0] * 0.5 * (1 + erf(v[0] / std::sqrt(2.0))); }, {{8, 1024}});
}

TEST_F(FusionCuda, BroadcastCastsComparesWhereClampTwoOutputs) {
  check([](std::vector<DynTensor> v) {
    auto y = where(greater(v[0], v[1]), exp(v[0]), clamp(v[1] * 3, -1.5, 2.0));
    return (y.cast(DType::bf16) * 2).cast(DType::f32) + v[2];
  }, {{64, 129}, {129}, {64, 1}}, DType::f32, 1e-2);
}

TEST_F(FusionCuda, HalfAndStridedInputs) {
  check([](std::vector<DynTensor> v) { return sigmoid(v[0] * v[1] - 0.25) + tanh(v[1]); }, {{3, 5000}, {3, 5000}},
        DType::f16, 2e-3);
  check([](std::vector<DynTensor> v) {
    auto t = transpose(v[0], 0, 1);
    auto s = slice(v[1], {{}, {0, 80, 2}});
    return exp(t) * transpose(s, 0, 1) + expand(v[2], {40, 30});
  }, {{30, 40}, {30, 80}, {1, 30}});
}

// Row programs (reductions with a prologue and an epilogue): one block per row, values in
// registers (rows up to 16K elements) or recomputed per pass (longer rows).
TEST_F(FusionCuda, RowProgramsSoftmaxNormsCrossEntropy) {
  check([](std::vector<DynTensor> v) { return softmax_of(v[0]); }, {{256, 4096}});
  check([](std::vector<DynTensor> v) { return softmax_of(v[0] * 0.5); }, {{3, 40000}});  // recomputing passes
  check([](std::vector<DynTensor> v) {
    auto& x = v[0];
    return (x - mean(x, {-1}, true)) / sqrt(var(x, {-1}, 0, true) + 1e-5) * v[1] + v[2];
  }, {{4, 8, 768}, {768}, {768}}, DType::bf16, 2e-2);
  check([](std::vector<DynTensor> v) { return v[0] * rsqrt(mean(v[0] * v[0], {-1}, true) + 1e-6) * v[1]; },
        {{128, 1000}, {1000}}, DType::f16, 4e-3);
  check([](std::vector<DynTensor> v) {
    auto onehot = greater(v[1], 1.5).cast(DType::f32);
    return mean(logsumexp(v[0], {-1}, true) - sum(v[0] * onehot, {-1}, true));
  }, {{512, 1000}, {512, 1000}});
}

TEST_F(FusionCuda, RowProgramsEveryReductionStridedAndSpecialValues) {
  for (bool keep : {true, false})
    check([&](std::vector<DynTensor> v) {
      auto y = tanh(v[0]) * 2 + v[1];
      auto r = sum(y, {-1}, keep) + mean(y, {-1}, keep) * max(y, {-1}, keep) - min(y, {-1}, keep);
      auto q = var(y, {-1}, 1, keep) + stddev(y, {-1}, 0, keep) + logsumexp(y, {-1}, keep);
      return exp(r * 0.01) + q;
    }, {{70, 333}, {333}}, DType::f32, 1e-4);
  check([](std::vector<DynTensor> v) { return v[0] - mean(v[0] * 3, {1, 2}, true); }, {{12, 17, 19}});
  check([](std::vector<DynTensor> v) { return softmax_of(transpose(v[0], 0, 1) + v[1]); }, {{30, 40}, {40, 1}});
  check([](std::vector<DynTensor> v) { return sum(v[0] * v[0], {-1}) + 1; }, {{1000, 7}}, DType::f64, 1e-12);
  std::vector<float> x(3 * 5, 1.0f);
  for (int j = 0; j < 5; ++j) x[size_t(j)] = -INFINITY;
  x[7] = INFINITY;
  x[12] = NAN;
  auto f = [](const DynTensor& t) { return logsumexp(t * 1, {-1}, true) + max(t + 0, {-1}, true); };
  expect_close(f(DynTensor::from_vector<float>(x, {3, 5}, Device::cuda(0).fusion())),
               f(DynTensor::from_vector<float>(x, {3, 5}, Device::cuda(0))), 1e-6);
}

// Column programs (reductions over leading dims): 32 x 8 thread blocks over column strips and
// chunks of rows, the chunks' partials merged in order by a second kernel (no atomics).
TEST_F(FusionCuda, ColumnProgramsBiasGradientAndEveryReduction) {
  check([](std::vector<DynTensor> v) { return sum(v[0] * gelu_grad_of(v[1]), {0}); }, {{8192, 1024}, {8192, 1024}},
        DType::f32, 1e-4);
  check([](std::vector<DynTensor> v) { return sum(v[0] * 2 - 1, {0, 1}); }, {{6, 33, 40}}, DType::f32, 1e-4);
  for (bool keep : {true, false})
    check(
        [&](std::vector<DynTensor> v) {
          auto y = tanh(v[0]) * 2 + v[1];
          auto r = sum(y, {0}, keep) + mean(y, {0}, keep) * max(y, {0}, keep) - min(y, {0}, keep);
          auto q = var(y, {0}, 1, keep) + stddev(y, {0}, 0, keep) + logsumexp(y, {0}, keep);
          return exp(r * 0.01) + q;
        },
        {{700, 333}, {333}}, DType::f32, 1e-4);
  check([](std::vector<DynTensor> v) { return sum(v[0] * v[0], {0}) + 1; }, {{1000, 7}}, DType::f64, 1e-12);
  check([](std::vector<DynTensor> v) { return mean(v[0] * sigmoid(v[1]), {0}); }, {{300, 96}, {300, 96}}, DType::f16,
        4e-3);
  check([](std::vector<DynTensor> v) { return sum(v[0] * sigmoid(v[1]), {0}); }, {{300, 96}, {300, 96}}, DType::bf16,
        2e-2);
}

TEST_F(FusionCuda, ColumnProgramsViewsBatchStatisticsAndFullOutputs) {
  check(
      [](std::vector<DynTensor> v) {
        auto t = transpose(v[0], 0, 1);
        return sum(t * v[1] + v[2] * 0.5, {0}) * v[3];
      },
      {{50, 60}, {50}, {60, 1}, {50}}, DType::f32, 1e-4);
  check(
      [](std::vector<DynTensor> v) {
        auto& x = v[0];
        auto d = x - mean(x, {0}, true);
        return d * rsqrt(mean(d * d, {0}, true) + 1e-5) * v[1] + v[2];
      },
      {{256, 48}, {48}, {48}}, DType::f32, 1e-4);
  check([](std::vector<DynTensor> v) { return sum(v[0] * 2, {0}) + mean(v[0] + 1, {0}); }, {{0, 16}});
  Device gpu = Device::cuda(0), fgpu = gpu.fusion();
  auto x = randn({90, 70}, 5, fgpu), xe = randn({90, 70}, 5, gpu);
  auto g = x * tanh(x), ge = xe * tanh(xe);
  auto s = sum(g, {0}), se = sum(ge, {0});
  expect_close(s, se, 1e-5);
  expect_close(g, ge, 1e-6);
}

TEST_F(FusionCuda, MatmulEpilogues) {
  // the bias add folds into cuBLASLt's bias epilogue; the rest is one kernel reading the product
  check([](std::vector<DynTensor> v) { return gelu_of(matmul(v[0], v[1]) + v[2]) * 0.5 + v[3]; },
        {{300, 600}, {600, 130}, {130}, {300, 130}}, DType::f32, 1e-4);
  check([](std::vector<DynTensor> v) { return relu(matmul(v[0], transpose(v[1], 0, 1), v[2])) - 0.25; },
        {{70, 90}, {150, 90}, {150}}, DType::f32, 1e-4);
  check([](std::vector<DynTensor> v) { return tanh(matmul(v[0], v[1])) * 3 + 1; }, {{3, 2, 40, 30}, {2, 30, 20}},
        DType::f32, 1e-4);
  check([](std::vector<DynTensor> v) { return sigmoid(matmul(v[0], v[1]) + v[2]); }, {{64, 96}, {96, 48}, {48}},
        DType::bf16, 2e-2);
}

TEST_F(FusionCuda, ResidualAddsRideOnTheProduct) {
  // a residual add as the only epilogue is cuBLASLt's beta * C (no kernel reads the product back)
  check([](std::vector<DynTensor> v) { return matmul(v[0], v[1], v[2]) + v[3]; },
        {{300, 600}, {600, 130}, {130}, {300, 130}}, DType::f32, 1e-4);
  check([](std::vector<DynTensor> v) { return v[2] + matmul(v[0], transpose(v[1], 0, 1)); },
        {{70, 90}, {150, 90}, {70, 150}}, DType::f32, 1e-4);
  check([](std::vector<DynTensor> v) { return matmul(v[0], v[1]) + v[2]; }, {{3, 2, 40, 30}, {2, 30, 20}, {3, 2, 40, 20}},
        DType::f32, 1e-4);
  check([](std::vector<DynTensor> v) { return matmul(v[0], v[1], v[2]) + v[3]; },
        {{64, 96}, {96, 48}, {48}, {64, 48}}, DType::bf16, 2e-2);
  // not taken, and still right: a broadcast addend, a strided one, the product read again
  check([](std::vector<DynTensor> v) { return matmul(v[0], v[1]) + v[2]; }, {{64, 96}, {96, 48}, {1, 48}},
        DType::f32, 1e-4);
  check([](std::vector<DynTensor> v) { return matmul(v[0], v[1]) + transpose(v[2], 0, 1); },
        {{64, 96}, {96, 48}, {48, 64}}, DType::f32, 1e-4);
  check([](std::vector<DynTensor> v) {
          auto p = matmul(v[0], v[1]);
          return (p + v[2]) * p;
        },
        {{64, 96}, {96, 48}, {64, 48}}, DType::f32, 1e-4);
}

TEST_F(FusionCuda, AutodiffOnTop) {
  Device d = Device::cuda(0).fusion().autodiff();
  auto x = randn({50, 70}, 11, d).require_grad();
  auto xe = randn({50, 70}, 11, Device::cuda(0).autodiff()).require_grad();
  auto f = [](const DynTensor& x) { return sum(x * 0.5 * (1 + erf(x / std::sqrt(2.0))) * tanh(x)); };
  auto g = f(x).backward().get(x).value();
  auto ge = f(xe).backward().get(xe).value();
  expect_close(g, ge, 1e-4);
}

}  // namespace
}  // namespace ember
