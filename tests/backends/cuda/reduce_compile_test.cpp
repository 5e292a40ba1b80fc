// The reduction-like families of the CUDA backend (reduce.cpp, softmax.cpp, norm.cpp, scan.cpp,
// sort.cpp): every generated source compiles (no GPU needed), and on a GPU the results match
// the CPU backend's for shapes that reach every kernel path (rows, columns, splits, copies of
// odd layouts, register-resident and streamed rows, chunked scans, shared-memory and global
// sorts).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <set>

#include "compile_all.hpp"
#include "cuda_backend.hpp"
#include "ember/backends/cuda.hpp"
#include "ember/nn/loss.hpp"
#include "ember/tensor/autodiff.hpp"
#include "ember/tensor/ops.hpp"
#include "reduce_sources.hpp"

namespace ember {
namespace {

void compile_all(const std::vector<cuda::KernelSource>& variants) {
  for (const auto& e : cuda_test::compile_all(variants)) ADD_FAILURE() << e;
}

bool keys_unique(const std::vector<cuda::KernelSource>& v) {
  std::set<std::string> keys;
  for (const auto& s : v)
    if (!keys.insert(s.key).second) return false;
  return true;
}

TEST(CudaReduceCompile, EveryReductionVariant) {
  auto v = cuda::reduce_variants();
  EXPECT_EQ(v.size(), 10u * 10u + 4u * (4u + 6u));
  EXPECT_TRUE(keys_unique(v));
  compile_all(v);
}
TEST(CudaReduceCompile, EverySoftmaxVariant) { compile_all(cuda::softmax_variants()); }
TEST(CudaReduceCompile, EveryNormVariant) { compile_all(cuda::norm_variants()); }
TEST(CudaReduceCompile, EveryScanVariant) {
  auto v = cuda::scan_variants();
  EXPECT_TRUE(keys_unique(v));
  compile_all(v);
}
TEST(CudaReduceCompile, EverySortVariant) { compile_all(cuda::sort_variants()); }

// ---------------------------------------------------------------------------------------------
// GPU against CPU
// ---------------------------------------------------------------------------------------------
#define REQUIRE_GPU() \
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device"

Device cpu() { return Device::cpu(); }
Device gpu() { return Device::cuda(0); }

// Element-wise comparison in f64 (NaN matches NaN, infinities must be equal).
void expect_close(const DynTensor& want, const DynTensor& got, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  auto a = cast(want, DType::f64).to_vector<double>();
  auto b = cast(got.to(cpu()), DType::f64).to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bool ok;
    if (std::isnan(a[i]) || std::isnan(b[i])) ok = std::isnan(a[i]) && std::isnan(b[i]);
    else if (std::isinf(a[i]) || std::isinf(b[i])) ok = a[i] == b[i];
    else ok = std::abs(a[i] - b[i]) <= atol + rtol * std::abs(a[i]);
    if (!ok && ++bad <= 5) ADD_FAILURE() << what << ": element " << i << " want " << a[i] << " got " << b[i];
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << a.size() << " elements differ";
}
void expect_equal(const DynTensor& want, const DynTensor& got, const std::string& what) {
  expect_close(want, got, 0, 0, what);
}

double tol_of(DType dt) {
  switch (dt) {
    case DType::f64: return 1e-10;
    case DType::f32: return 2e-5;
    case DType::f16: return 2e-3;
    case DType::bf16: return 2e-2;
    default: return 0;
  }
}

// x on the CPU in `dt` (normal values; integers in [-20, 20); bool)
DynTensor sample(Shape s, DType dt, uint64_t seed = 1) {
  Device::cpu().seed(seed);
  if (is_float(dt)) return DynTensor::normal(std::move(s), 0, 1, DType::f32, cpu()).cast(dt);
  if (dt == DType::boolean) return DynTensor::bernoulli(std::move(s), 0.7, DType::f32, cpu()).cast(dt);
  if (dt == DType::u8) return DynTensor::randint(std::move(s), 0, 40, DType::i64, cpu()).cast(dt);
  return DynTensor::randint(std::move(s), -20, 20, DType::i64, cpu()).cast(dt);
}

TEST(CudaReduce, SumsOverEveryLayoutMatchTheCpu) {
  REQUIRE_GPU();
  for (DType dt : {DType::f32, DType::f16, DType::f64, DType::i32, DType::u8, DType::boolean}) {
    auto x = sample({6, 7, 300}, dt);
    auto g = x.to(gpu());
    const double tol = dt == DType::f16 ? 5e-3 : tol_of(dt);
    for (Dims dims : {Dims{}, Dims{0}, Dims{1}, Dims{2}, Dims{-1}, Dims{0, 2}, Dims{0, 1}, Dims{1, 2}}) {
      std::string what = std::string("sum ") + std::string(dtype_name(dt)) + " dims " + std::to_string(dims.size());
      expect_close(sum(x, dims), sum(g, dims), tol, tol, what);
      // permuted (strided) inputs: the reduced dims are no longer the innermost ones
      expect_close(sum(permute(x, {2, 0, 1}), dims), sum(permute(g, {2, 0, 1}), dims), tol, tol, what + " permuted");
      expect_close(sum(transpose(x, 0, 2), dims, true), sum(transpose(g, 0, 2), dims, true), tol, tol,
                   what + " transposed keepdim");
    }
  }
}

TEST(CudaReduce, LargeReductionsUseSplitsAndStayDeterministic) {
  REQUIRE_GPU();
  auto x = sample({1 << 22}, DType::f32);
  auto g = x.to(gpu());
  auto s1 = sum(g), s2 = sum(g);
  EXPECT_EQ(s1.item(), s2.item());
  expect_close(sum(x), s1, 1e-4, 1e-2, "full sum");
  expect_close(max(x), max(g), 0, 0, "full max");
  expect_close(var(x), var(g), 1e-4, 1e-6, "full var");
  expect_close(argmax(x), argmax(g), 0, 0, "full argmax");
  auto y = sample({4096, 512}, DType::f32, 2);
  auto gy = y.to(gpu());
  expect_close(sum(y, {0}), sum(gy, {0}), 1e-4, 1e-3, "column sum");
  expect_close(mean(y, {0}), mean(gy, {0}), 1e-4, 1e-5, "column mean");
  expect_close(stddev(y, {0}), stddev(gy, {0}), 1e-4, 1e-5, "column std");
  expect_close(argmin(y, 0), argmin(gy, 0), 0, 0, "column argmin");
  auto z = sample({3, 1 << 20}, DType::f32, 3);
  auto gz = z.to(gpu());
  expect_close(sum(z, {1}), sum(gz, {1}), 1e-4, 1e-2, "long rows");
  expect_close(logsumexp(z, {1}), logsumexp(gz, {1}), 1e-5, 1e-5, "long rows logsumexp");
  expect_close(norm(z, 2, {1}), norm(gz, 2, {1}), 1e-5, 1e-5, "long rows norm");
  // a linear layer's bias gradient: 16-byte vectors of columns (col_vec), with splits
  auto bg = sample({8, 1024, 768}, DType::bf16, 5);
  auto gbg = bg.to(gpu());
  expect_close(sum(bg, {0, 1}), sum(gbg, {0, 1}), 1e-2, 5e-2, "bf16 bias-gradient sum");
  expect_close(max(bg, {0}), max(gbg, {0}), 0, 0, "bf16 column max");
  expect_close(argmax(bg, 1), argmax(gbg, 1), 0, 0, "bf16 column argmax");
  auto w = sample({100000, 3}, DType::f32, 4);  // tiny inner dim: copied into rows
  expect_close(sum(w, {0}), sum(w.to(gpu()), {0}), 1e-4, 1e-3, "narrow columns");
}

TEST(CudaReduce, EveryOpMatchesTheCpu) {
  REQUIRE_GPU();
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    auto x = sample({5, 33, 70}, dt);
    auto g = x.to(gpu());
    const double t = tol_of(dt);
    const std::string n(dtype_name(dt));
    for (Dims dims : {Dims{}, Dims{1}, Dims{2}, Dims{0, 2}}) {
      std::string d = " dims " + std::to_string(dims.size()) + (dims.empty() ? "" : std::to_string(dims[0]));
      expect_close(mean(x, dims), mean(g, dims), t, t, "mean " + n + d);
      expect_close(prod(x, dims), prod(g, dims), 10 * t, t, "prod " + n + d);
      expect_close(max(x, dims), max(g, dims), 0, 0, "max " + n + d);
      expect_close(min(x, dims, true), min(g, dims, true), 0, 0, "min " + n + d);
      expect_close(var(x, dims), var(g, dims), 5 * t, t, "var " + n + d);
      expect_close(stddev(x, dims, 0), stddev(g, dims, 0), 5 * t, t, "std " + n + d);
      expect_close(logsumexp(x, dims), logsumexp(g, dims), t, t, "logsumexp " + n + d);
      for (double p : {0.0, 1.0, 2.0, 3.5, double(INFINITY), -double(INFINITY)})
        expect_close(norm(x, p, dims), norm(g, p, dims), 5 * t, t, "norm " + n + d + " p " + std::to_string(p));
      expect_close(any(x, dims), any(g, dims), 0, 0, "any " + n + d);
      expect_close(all(x, dims), all(g, dims), 0, 0, "all " + n + d);
    }
    expect_close(argmax(x, 1), argmax(g, 1), 0, 0, "argmax " + n);
    expect_close(argmin(x, -1, true), argmin(g, -1, true), 0, 0, "argmin " + n);
    auto [mv, mi] = max_dim(x, 0);
    auto [gv, gi] = max_dim(g, 0);
    expect_close(mv, gv, 0, 0, "max_dim values " + n);
    expect_close(mi, gi, 0, 0, "max_dim indices " + n);
  }
  for (DType dt : {DType::i64, DType::i32, DType::i16, DType::i8, DType::u8, DType::boolean}) {
    auto x = sample({4, 9, 50}, dt);
    auto g = x.to(gpu());
    const std::string n(dtype_name(dt));
    for (Dims dims : {Dims{}, Dims{1}, Dims{2}}) {
      expect_equal(sum(x, dims), sum(g, dims), "sum " + n);
      expect_equal(prod(x, dims), prod(g, dims), "prod " + n);
      expect_equal(max(x, dims), max(g, dims), "max " + n);
      expect_equal(min(x, dims), min(g, dims), "min " + n);
      expect_equal(any(x, dims), any(g, dims), "any " + n);
      expect_equal(all(x, dims), all(g, dims), "all " + n);
    }
    expect_equal(argmax(x), argmax(g), "argmax flat " + n);
    expect_equal(argmin(x, 2), argmin(g, 2), "argmin " + n);
    auto [mv, mi] = min_dim(x, 1);
    auto [gv, gi] = min_dim(g, 1);
    expect_equal(mv, gv, "min_dim values " + n);
    expect_equal(mi, gi, "min_dim indices " + n);
  }
}

TEST(CudaReduce, ArgExtremesTakeTheFirstTieAndTheFirstNan) {
  REQUIRE_GPU();
  // few distinct values: many ties
  auto x = DynTensor::randint({37, 300}, 0, 3, DType::i64, cpu()).cast(DType::f32);
  auto g = x.to(gpu());
  for (int d : {0, 1}) {
    expect_equal(argmax(x, d), argmax(g, d), "argmax ties");
    expect_equal(argmin(x, d), argmin(g, d), "argmin ties");
  }
  expect_equal(argmax(x), argmax(g), "argmax ties flat");
  expect_equal(argmax(transpose(x, 0, 1), 1), argmax(transpose(g, 0, 1), 1), "argmax ties strided");
  std::vector<float> v = {1, NAN, 3, NAN, 3, 2, -1, -1, 5, 5, INFINITY, INFINITY};
  auto n = DynTensor::from_vector(v, {2, 6}, cpu());
  auto gn = n.to(gpu());
  expect_equal(argmax(n, 1), argmax(gn, 1), "argmax nan");
  expect_equal(argmin(n, 1), argmin(gn, 1), "argmin nan");
  expect_equal(argmax(n), argmax(gn), "argmax nan flat");
  expect_close(max(n, {1}), max(gn, {1}), 0, 0, "max nan");
  expect_close(logsumexp(n, {1}), logsumexp(gn, {1}), 1e-6, 1e-6, "logsumexp nan/inf");
  // empty reductions give the identities; var of one element is NaN
  auto e = DynTensor::zeros({0, 3}, DType::f32, cpu());
  expect_close(sum(e, {0}), sum(e.to(gpu()), {0}), 0, 0, "empty sum");
  expect_close(prod(e, {0}), prod(e.to(gpu()), {0}), 0, 0, "empty prod");
  expect_close(mean(e, {0}), mean(e.to(gpu()), {0}), 0, 0, "empty mean");
  auto one = DynTensor::ones({1, 3}, DType::f32, cpu());
  expect_close(var(one, {0}), var(one.to(gpu()), {0}), 0, 0, "var of one");
}

TEST(CudaSoftmax, MatchesTheCpuAlongEveryDim) {
  REQUIRE_GPU();
  struct Case {
    Shape shape;
    int dim;
  };
  // widths that take one, two, four rows per block, a row wider than 16384, enough rows for
  // every block to loop over rows with a ragged end, and rows of whole 1024-thread blocks that
  // the persistent prefetching kernels take (above 48 KB of staging at 20000, and for f64 past
  // the shared memory a block may have, where the plain kernel takes over)
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    const double t = tol_of(dt);
    for (const Case& c : {Case{{64, 4096}, -1}, Case{{300, 37}, 1}, Case{{1000, 8}, -1}, Case{{7, 3}, 1},
                          Case{{3, 40000}, -1}, Case{{2, 70001}, 1}, Case{{300, 64}, 0}, Case{{4, 50, 33}, 1},
                          Case{{5000, 3}, 0}, Case{{3, 1}, 1}, Case{{33, 1024}, -1}, Case{{17, 2048}, -1},
                          Case{{9, 20000}, -1}, Case{{1031, 4096}, -1}, Case{{700, 12292}, -1}}) {
      auto x = sample(c.shape, dt);
      auto g = x.to(gpu());
      std::string what = std::string(dtype_name(dt)) + " dim " + std::to_string(c.dim) + " of " +
                         std::to_string(c.shape.numel());
      expect_close(softmax(x, c.dim), softmax(g, c.dim), t, t, "softmax " + what);
      expect_close(log_softmax(x, c.dim), log_softmax(g, c.dim), t, t, "log_softmax " + what);
    }
    auto x = sample({20, 30}, dt);
    expect_close(softmax(transpose(x, 0, 1), 1), softmax(transpose(x.to(gpu()), 0, 1), 1), t, t, "strided input");
  }
  std::vector<float> v = {1, NAN, 3, 0, -INFINITY, -INFINITY, 2, INFINITY, 1};
  auto n = DynTensor::from_vector(v, {3, 3}, cpu());
  expect_close(softmax(n, 1), softmax(n.to(gpu()), 1), 1e-6, 1e-6, "softmax nan/inf rows");
  expect_close(log_softmax(n, 1), log_softmax(n.to(gpu()), 1), 1e-6, 1e-6, "log_softmax nan/inf rows");
}

// The fused cross_entropy (a warp per row, a block per long row) and its backward, against the
// CPU backend's (which the loss tests hold to torch); ignored rows, an ignore_index inside the
// classes, strided targets and a broadcast upstream grad (the mean's backward).
TEST(CudaCrossEntropy, FusedRowsAndBackwardMatchTheCpu) {
  REQUIRE_GPU();
  const Device cad = cpu().autodiff(), gad = gpu().autodiff();
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const double t = tol_of(dt);
    for (Shape s : {Shape{6000, 10}, Shape{300, 1000}, Shape{7, 5000}, Shape{1, 1}}) {
      const int64_t n = s[0], c = s[1];
      auto x = sample(s, dt);
      auto up = sample({n}, dt, 5);
      auto targets = [&](int64_t ignore) {  // every 7th row ignored
        std::vector<int64_t> tv(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) tv[size_t(i)] = i % 7 == 3 ? ignore : (i * 7919) % c;
        return DynTensor::from_vector(tv, Shape{n}, cpu());
      };
      for (int64_t ignore : {int64_t(-100), int64_t(0)}) {
        auto target = targets(ignore);
        std::string what = std::string(dtype_name(dt)) + " " + std::to_string(n) + "x" + std::to_string(c) +
                           " ignore " + std::to_string(ignore);
        auto xc = x.to(cad).require_grad();
        auto xg = x.to(gad).require_grad();
        auto rc = cross_entropy_rows(xc, target.to(cad), ignore);
        auto rg = cross_entropy_rows(xg, target.to(gad), ignore);
        expect_close(rc.loss.to(cpu()), rg.loss, t, t, "loss " + what);
        expect_equal(rc.valid.to(cpu()), rg.valid, "valid " + what);
        expect_close(xc.grad(rc.loss.backward(up.to(cad)))->to(cpu()), *xg.grad(rg.loss.backward(up.to(gad))), t, t,
                     "grad " + what);
      }
      // nn::cross_entropy's mean: sum(loss) / sum(valid), whose backward broadcasts a scalar
      auto target = targets(-100);
      auto xc = x.to(cad).require_grad();
      auto xg = x.to(gad).require_grad();
      auto lc = nn::cross_entropy(xc, target.to(cad));
      auto lg = nn::cross_entropy(xg, target.to(gad));
      const std::string what = std::string(dtype_name(dt)) + " mean of " + std::to_string(n);
      expect_close(lc.to(cpu()), lg, t, t, what);
      expect_close(xc.grad(lc.backward())->to(cpu()), *xg.grad(lg.backward()), t, t, "grad " + what);
    }
  }
  // strided targets (every other element of a longer tensor)
  auto x = sample({50, 9}, DType::f32);
  auto wide = DynTensor::randint({100}, 0, 9, DType::i64, cpu());
  auto strided = slice(wide, {Slice{0, 100, 2}});
  expect_close(cross_entropy_rows(x, strided).loss, cross_entropy_rows(x.to(gpu()), strided.to(gpu())).loss, 2e-5,
               2e-5, "strided target");
  // a target outside the classes: an Error at the next read, and the device goes on working
  auto bad = DynTensor::from_vector(std::vector<int64_t>{0, 5}, Shape{2}, gpu());
  try {
    (void)cross_entropy_rows(sample({2, 5}, DType::f32).to(gpu()), bad).loss.to(cpu());
    ADD_FAILURE() << "no error for target 5 of 5 classes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cross_entropy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of bounds"), std::string::npos) << e.what();
  }
  expect_close(softmax(x, 1), softmax(x.to(gpu()), 1), 2e-5, 2e-5, "after the error");
}

TEST(CudaNorm, LayerNormAndBatchNormMatchTheCpu) {
  REQUIRE_GPU();
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    const double t = 4 * tol_of(dt);
    // widths that take one, two, four rows per block, a row wider than 16384, and enough rows
    // for every block to loop over rows with a ragged end
    for (Shape s : {Shape{64, 4096}, Shape{5, 37}, Shape{3, 4, 8}, Shape{2, 50000}, Shape{1000, 24}, Shape{33, 1024},
                    Shape{17, 2048}, Shape{9, 20000}, Shape{1031, 4096}, Shape{300, 16384}}) {
      auto x = sample(s, dt);
      auto w = sample({s[-1]}, dt, 7), b = sample({s[-1]}, dt, 8);
      auto g = x.to(gpu());
      std::string what = std::string(dtype_name(dt)) + " " + std::to_string(s.numel());
      expect_close(layer_norm(x, {s[-1]}, w, b), layer_norm(g, {s[-1]}, w.to(gpu()), b.to(gpu())), t, t,
                   "layer_norm " + what);
      expect_close(layer_norm(x, {s[-1]}), layer_norm(g, {s[-1]}), t, t, "layer_norm no affine " + what);
    }
    auto x3 = sample({3, 4, 8}, dt);
    auto w2 = sample({4, 8}, dt, 9);
    expect_close(layer_norm(x3, {4, 8}, w2), layer_norm(x3.to(gpu()), {4, 8}, w2.to(gpu())), t, t, "two axes");
    auto xb = sample({4, 3, 5, 8}, dt);
    auto m = sample({3}, dt, 10), w = sample({3}, dt, 11), b = sample({3}, dt, 12);
    auto v = add(abs(sample({3}, dt, 13)), 0.5);
    auto G = [](const DynTensor& a) { return a.to(gpu()); };
    expect_close(batch_norm(xb, m, v, w, b), batch_norm(G(xb), G(m), G(v), G(w), G(b)), t, t, "batch_norm");
    expect_close(batch_norm(xb, m, v), batch_norm(G(xb), G(m), G(v)), t, t, "batch_norm no affine");
    expect_close(batch_norm(transpose(xb, 0, 3), m, v, w, b), batch_norm(transpose(G(xb), 0, 3), G(m), G(v), G(w), G(b)),
                 t, t, "batch_norm strided");
    auto x2 = sample({7, 3}, dt);
    expect_close(batch_norm(x2, m, v, w, b), batch_norm(G(x2), G(m), G(v), G(w), G(b)), t, t, "batch_norm 2d");
  }
}

// The fused layer_norm_backward (what the autodiff rule emits): dx, dweight and dbias against the
// CPU backend's (itself checked against torch by the gradient conformance suite). Widths for
// each row layout (a thread per row up to whole blocks, and rows past 8192 read in passes),
// row counts that split the column sums into several chunks, no rows, and strided inputs.
TEST(CudaNorm, LayerNormBackwardMatchesTheCpu) {
  REQUIRE_GPU();
  const Device cad = cpu().autodiff(), gad = gpu().autodiff();
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    const double t = 4 * tol_of(dt);
    for (Shape s : {Shape{5, 37}, Shape{1000, 3}, Shape{33, 1024}, Shape{4097, 768}, Shape{64, 4096},
                    Shape{9, 20000}, Shape{2, 1}, Shape{0, 16}, Shape{2, 3, 40}}) {
      for (bool affine : {true, false}) {
        auto x = sample(s, dt), up = sample(s, dt, 3);
        auto w = sample({s[-1]}, dt, 7), b = sample({s[-1]}, dt, 8);
        std::string what = std::string(dtype_name(dt)) + " " + std::to_string(s.numel()) + (affine ? " affine" : "");
        auto run = [&](const Device& d) {
          auto xd = x.to(d).require_grad();
          auto wd = w.to(d).require_grad(), bd = b.to(d).require_grad();
          auto y = affine ? layer_norm(xd, {s[-1]}, wd, bd) : layer_norm(xd, {s[-1]});
          Gradients gr = y.backward(up.to(d));
          std::vector<DynTensor> out{*xd.grad(gr)};
          if (affine) {
            out.push_back(*wd.grad(gr));
            out.push_back(*bd.grad(gr));
          }
          return out;
        };
        auto want = run(cad), got = run(gad);
        ASSERT_EQ(want.size(), got.size());
        expect_close(want[0].to(cpu()), got[0], t, t, "dx " + what);
        // dw and db are sums over the rows, which the CPU adds in order and the GPU in chunks:
        // rounding differences grow with the row count
        const double ts = t * std::sqrt(double(std::max<int64_t>(1, s.numel() / s[-1])));
        for (size_t i = 1; i < want.size(); ++i)
          expect_close(want[i].to(cpu()), got[i], t, ts, std::string(i == 1 ? "dw " : "db ") + what);
      }
    }
  }
  // a transposed input and gradient (strided views, made contiguous by the op) ...
  auto x = sample({40, 12}, DType::f32), up = sample({40, 12}, DType::f32, 4);
  auto w = sample({40}, DType::f32, 5);
  auto run = [&](const Device& d) {
    auto xd = x.to(d).require_grad(), wd = w.to(d).require_grad();
    auto y = layer_norm(transpose(xd, 0, 1), {40}, wd);
    Gradients gr = y.backward(transpose(up.to(d), 0, 1));
    return std::vector<DynTensor>{*xd.grad(gr), *wd.grad(gr)};
  };
  auto want = run(cad), got = run(gad);
  expect_close(want[0].to(cpu()), got[0], 1e-4, 1e-4, "dx strided");
  expect_close(want[1].to(cpu()), got[1], 1e-4, 1e-4, "dw strided");
  // ... and two normalised dims
  auto x3 = sample({3, 4, 10}, DType::f32), up3 = sample({3, 4, 10}, DType::f32, 6);
  auto w2 = sample({4, 10}, DType::f32, 7);
  auto run2 = [&](const Device& d) {
    auto xd = x3.to(d).require_grad(), wd = w2.to(d).require_grad();
    Gradients gr = layer_norm(xd, {4, 10}, wd).backward(up3.to(d));
    return std::vector<DynTensor>{*xd.grad(gr), *wd.grad(gr)};
  };
  auto want2 = run2(cad), got2 = run2(gad);
  expect_close(want2[0].to(cpu()), got2[0], 1e-4, 1e-4, "dx two dims");
  expect_close(want2[1].to(cpu()), got2[1], 1e-4, 1e-4, "dw two dims");
}

TEST(CudaScan, MatchesTheCpu) {
  REQUIRE_GPU();
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::i32, DType::i64, DType::u8, DType::boolean}) {
    const std::string n(dtype_name(dt));
    for (Shape s : {Shape{3, 100000}, Shape{50, 300}, Shape{1000, 4}, Shape{7, 5, 3}, Shape{20000}}) {
      auto x = sample(s, dt);
      auto g = x.to(gpu());
      for (int d = 0; d < s.rank(); ++d) {
        std::string what = n + " dim " + std::to_string(d) + " of " + std::to_string(s.numel());
        const double t = dt == DType::f32 ? 1e-4 : dt == DType::f16 ? 1e-2 : 1e-9;
        expect_close(cumsum(x, d), cumsum(g, d), t, t * 10, "cumsum " + what);
        if (s.numel() <= 2000) {
          auto small = is_float(dt) ? add(mul(x, 0.1), 1.0) : x;
          expect_close(cumprod(small, d), cumprod(small.to(gpu()), d), 1e-3, 1e-3, "cumprod " + what);
        }
        auto [cv, ci] = cummax(x, d);
        auto [gv, gi] = cummax(g, d);
        expect_equal(cv, gv, "cummax values " + what);
        expect_equal(ci, gi, "cummax indices " + what);
        auto [mv, mi] = cummin(x, d);
        auto [hv, hi] = cummin(g, d);
        expect_equal(mv, hv, "cummin values " + what);
        expect_equal(mi, hi, "cummin indices " + what);
      }
    }
  }
  std::vector<float> v = {1, 3, 3, NAN, 2, NAN, 5, 5, -1, 0, -0.0f, 0};
  auto n = DynTensor::from_vector(v, {12}, cpu());
  auto [cv, ci] = cummax(n, 0);
  auto [gv, gi] = cummax(n.to(gpu()), 0);
  expect_equal(cv, gv, "cummax nan");
  expect_equal(ci, gi, "cummax nan indices");
  auto [mv, mi] = cummin(n, 0);
  auto [hv, hi] = cummin(n.to(gpu()), 0);
  expect_equal(mi, hi, "cummin nan indices");
  expect_close(cumsum(transpose(sample({30, 40}, DType::f32), 0, 1), 1),
               cumsum(transpose(sample({30, 40}, DType::f32).to(gpu()), 0, 1), 1), 1e-5, 1e-5, "strided cumsum");
}

TEST(CudaSort, SortAndTopkMatchTheCpu) {
  REQUIRE_GPU();
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32, DType::i16, DType::i8,
                   DType::u8, DType::boolean}) {
    const std::string n(dtype_name(dt));
    // (full tiles of many short rows and of one TILE-long row: the register-resident sort)
    for (Shape s : {Shape{5, 1000}, Shape{40, 7}, Shape{2, 10000}, Shape{1, 5000}, Shape{30, 4, 3}, Shape{1},
                    Shape{3000, 40}, Shape{9, 4096}, Shape{3, 3000}, Shape{2, 4000, 3}}) {
      // few distinct values: many duplicates, so stability matters
      auto x = is_float(dt) ? DynTensor::randint(s, -5, 5, DType::i64, cpu()).cast(dt) : sample(s, dt);
      auto g = x.to(gpu());
      for (int d = 0; d < s.rank(); ++d) {
        for (bool desc : {false, true}) {
          std::string what = n + " dim " + std::to_string(d) + (desc ? " desc" : "") + " of " + std::to_string(s.numel());
          auto [sv, si] = sort(x, d, desc);
          auto [gv, gi] = sort(g, d, desc);
          expect_equal(sv, gv, "sort values " + what);
          expect_equal(si, gi, "sort indices " + what);
          const int64_t k = std::min<int64_t>(5, s[d]);
          auto [tv, ti] = topk(x, k, d, desc);
          auto [uv, ui] = topk(g, k, d, desc);
          expect_equal(tv, uv, "topk values " + what);
          expect_equal(ti, ui, "topk indices " + what);
        }
      }
    }
  }
  // long rows (more than a tile): the global radix sort for 32-bit keys (4 passes through
  // global memory), the global bitonic network by EMBER_CUDA_SORT and for 64-bit keys; ties in
  // every row, tails of partial tiles, a strided dim
  for (const char* alg : {"", "bitonic"}) {
    if (*alg) setenv("EMBER_CUDA_SORT", alg, 1);
    for (DType dt : {DType::f32, DType::bf16, DType::i32, DType::u8, DType::i64}) {
      for (Shape s : {Shape{3, 100003}, Shape{1, 1 << 20}, Shape{4, 20000, 2}}) {
        auto x = DynTensor::randint(s, 0, 200, DType::i64, cpu()).cast(dt);
        auto g = x.to(gpu());
        for (bool desc : {false, true}) {
          std::string what = std::string(alg) + " " + std::string(dtype_name(dt)) + (desc ? " desc" : "") + " of " +
                             std::to_string(s.numel());
          auto [sv, si] = sort(x, 1, desc);
          auto [gv, gi] = sort(g, 1, desc);
          expect_equal(sv, gv, "long sort values " + what);
          expect_equal(si, gi, "long sort indices " + what);
        }
      }
    }
    unsetenv("EMBER_CUDA_SORT");
  }
  std::vector<float> v = {3, NAN, -0.0f, 0, -INFINITY, INFINITY, NAN, 1, 0, -0.0f};
  {  // the same specials in a long row
    std::vector<float> lv(30011);
    for (size_t i = 0; i < lv.size(); ++i) lv[i] = v[(i * 7919) % v.size()];
    auto l = DynTensor::from_vector(lv, {30011}, cpu());
    for (bool desc : {false, true})
      expect_equal(std::get<1>(sort(l, 0, desc)), std::get<1>(sort(l.to(gpu()), 0, desc)), "long sort specials");
  }
  auto n = DynTensor::from_vector(v, {10}, cpu());
  for (bool desc : {false, true}) {
    auto [sv, si] = sort(n, 0, desc);
    auto [gv, gi] = sort(n.to(gpu()), 0, desc);
    expect_equal(si, gi, "sort nan indices");
  }
  // the one-row tiles (radix sort, bitonic by EMBER_CUDA_SORT) with NaN, infinities and signed zeros
  std::vector<float> specials(2 * 4096);
  for (size_t i = 0; i < specials.size(); ++i) specials[i] = v[(i * 7919) % v.size()];
  auto sp = DynTensor::from_vector(specials, {2, 4096}, cpu());
  for (const char* alg : {"", "bitonic"}) {
    if (*alg) setenv("EMBER_CUDA_SORT", alg, 1);
    for (bool desc : {false, true}) {
      auto [sv, si] = sort(sp, 1, desc);
      auto [gv, gi] = sort(sp.to(gpu()), 1, desc);
      expect_equal(si, gi, std::string("sort specials ") + alg);
      auto x = DynTensor::randint({3, 4096}, -20, 20, DType::i64, cpu()).cast(DType::bf16);
      expect_equal(std::get<1>(sort(x, 1, desc)), std::get<1>(sort(x.to(gpu()), 1, desc)), std::string("bf16 ") + alg);
    }
    unsetenv("EMBER_CUDA_SORT");
  }
  auto big = sample({3, 70000}, DType::f32);
  auto [bv, bi] = topk(big, 10, 1);
  auto [hv, hi] = topk(big.to(gpu()), 10, 1);
  expect_equal(bv, hv, "topk long rows");
  expect_equal(bi, hi, "topk long rows indices");
  auto strided = transpose(sample({50, 60}, DType::f32), 0, 1);
  expect_equal(std::get<1>(sort(strided, 1)), std::get<1>(sort(strided.to(gpu()), 1)), "sort strided input");
  // topk along dim 1 against the CPU for every (dtype, shape, k, largest), values drawn from
  // [lo, hi) so that ties must go to the lower index
  auto topk_cases = [&](std::vector<DType> dts, std::vector<Shape> shapes, int64_t lo, int64_t hi,
                        std::vector<int64_t> ks, const std::string& tag) {
    for (DType dt : dts) {
      for (const Shape& s : shapes) {
        auto x = DynTensor::randint(s, lo, hi, DType::i64, cpu()).cast(dt);
        auto g = x.to(gpu());
        for (int64_t k : ks) {
          for (bool largest : {true, false}) {
            std::string what = tag + " " + std::string(dtype_name(dt)) + " k " + std::to_string(k) +
                               (largest ? " largest" : "") + " of " + std::to_string(s.numel());
            auto [tv, ti] = topk(x, k, 1, largest);
            auto [uv, ui] = topk(g, k, 1, largest);
            expect_equal(tv, uv, "topk values " + what);
            expect_equal(ti, ui, "topk indices " + what);
          }
        }
      }
    }
  };
  // the selection (k <= 16) at its edges, a warp per row (many rows) and a block per row (few),
  // against the sort path (k = 17)
  topk_cases({DType::f32, DType::f64, DType::bf16, DType::i64}, {Shape{6000, 300}, Shape{7, 3000}, Shape{3, 40, 20}},
             -50, 50, {1, 16, 17}, "select");
  // few long rows: each row splits over many blocks (topk_part) whose lists topk_merge merges;
  // across parts too the lower index must win; also along a strided dim
  topk_cases({DType::f32, DType::f16, DType::i64, DType::u8},
             {Shape{2, 1 << 20}, Shape{1, 3000001}, Shape{5, 300000, 2}}, 0, 100, {1, 7, 16}, "split");
  auto col = transpose(sample({4000, 64}, DType::f32), 0, 1);  // rows along a strided dim
  expect_equal(std::get<1>(topk(col, 8, 1)), std::get<1>(topk(col.to(gpu()), 8, 1)), "topk strided input");
}

// Timings of the paths with a performance target ([8192, 4096] f32 in <= 70 us on an H200).
TEST(CudaReducePerf, RowKernelsAtLargeSizes) {
  REQUIRE_GPU();
  Device g = gpu();
  auto x = sample({8192, 4096}, DType::f32).to(g);
  auto w = sample({4096}, DType::f32, 2).to(g), b = sample({4096}, DType::f32, 3).to(g);
  // EMBER_PERF_REPS=1 for a run under a profiler
  const char* env = std::getenv("EMBER_PERF_REPS");
  const int reps = env ? std::max(1, std::atoi(env)) : 20;
  auto time_us = [&](auto&& f) {
    for (int i = 0; i < std::min(reps, 3); ++i) (void)f();
    g.sync();
    const int n = reps;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) (void)f();
    g.sync();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  };
  std::printf("[perf] softmax [8192,4096] f32: %.1f us\n", time_us([&] { return softmax(x, -1); }));
  std::printf("[perf] log_softmax [8192,4096] f32: %.1f us\n", time_us([&] { return log_softmax(x, -1); }));
  std::printf("[perf] layer_norm [8192,4096] f32: %.1f us\n", time_us([&] { return layer_norm(x, {4096}, w, b); }));
  std::printf("[perf] softmax dim 0 [8192,4096] f32: %.1f us\n", time_us([&] { return softmax(x, 0); }));
  std::printf("[perf] sum dim -1 [8192,4096] f32: %.1f us\n", time_us([&] { return sum(x, {-1}); }));
  std::printf("[perf] sum dim 0 [8192,4096] f32: %.1f us\n", time_us([&] { return sum(x, {0}); }));
  std::printf("[perf] sum all [8192,4096] f32: %.1f us\n", time_us([&] { return sum(x); }));
  std::printf("[perf] var dim -1 [8192,4096] f32: %.1f us\n", time_us([&] { return var(x, {-1}); }));
  std::printf("[perf] argmax dim -1 [8192,4096] f32: %.1f us\n", time_us([&] { return argmax(x, -1); }));
  std::printf("[perf] cumsum dim -1 [8192,4096] f32: %.1f us\n", time_us([&] { return cumsum(x, -1); }));
  std::printf("[perf] cumsum dim 0 [8192,4096] f32: %.1f us\n", time_us([&] { return cumsum(x, 0); }));
  auto xs = sample({8192, 1024}, DType::f32).to(g);
  std::printf("[perf] sort [8192,1024] f32: %.1f us\n", time_us([&] { return sort(xs, -1); }));
  auto xl = sample({4, 1 << 20}, DType::f32).to(g);
  std::printf("[perf] sort [4,1M] f32: %.1f us\n", time_us([&] { return sort(xl, -1); }));
  std::printf("[perf] topk k=10 [4,1M] f32: %.1f us\n", time_us([&] { return topk(xl, 10, -1); }));
  setenv("EMBER_CUDA_TOPK", "rows", 1);
  std::printf("[perf] topk k=10 [4,1M] f32 a block per row: %.1f us\n", time_us([&] { return topk(xl, 10, -1); }));
  unsetenv("EMBER_CUDA_TOPK");
  std::printf("[perf] sort [8192,4096] f32: %.1f us\n", time_us([&] { return sort(x, -1); }));
  setenv("EMBER_CUDA_SORT", "bitonic", 1);
  std::printf("[perf] sort [8192,4096] f32 bitonic: %.1f us\n", time_us([&] { return sort(x, -1); }));
  unsetenv("EMBER_CUDA_SORT");
  std::printf("[perf] topk k=10 [8192,1024] f32: %.1f us\n", time_us([&] { return topk(xs, 10, -1); }));
  // GPT-2 small's layer norm: the forward alone, then forward + fused backward (autodiff)
  const Device gad = g.autodiff();
  auto xm = sample({8192, 768}, DType::f32).to(gad), up = sample({8192, 768}, DType::f32, 4).to(gad);
  auto wm = sample({768}, DType::f32, 5).to(gad).require_grad(), bm = sample({768}, DType::f32, 6).to(gad).require_grad();
  std::printf("[perf] layer_norm [8192,768] f32: %.1f us\n", time_us([&] { return layer_norm(xm, {768}, wm, bm); }));
  std::printf("[perf] layer_norm forward + backward [8192,768] f32: %.1f us\n", time_us([&] {
                auto xr = xm.require_grad();
                return layer_norm(xr, {768}, wm, bm).backward(up);
              }));
  // a bias's gradient: g [8, 1024, 768] summed to [768]
  auto g3 = sample({8, 1024, 768}, DType::f32).to(g);
  std::printf("[perf] sum dims 0,1 [8,1024,768] f32: %.1f us\n", time_us([&] { return sum(g3, {0, 1}); }));
}

}  // namespace
}  // namespace ember
