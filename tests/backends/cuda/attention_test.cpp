// attention_backward on the GPU (the flash backward for f16 / bf16 with E == Ev in {32, 64, 128},
// the materialised path otherwise), reached through autodiff of scaled_dot_product_attention:
// dq, dk, dv against the formula evaluated on the CPU in f64,
//   P = softmax(scale q k^T + mask), dv = P^T g, dS = P (g v^T - rowsum(P * g v^T)),
//   dq = scale dS k, dk = scale dS^T q.
// Errors are measured relative to the largest reference magnitude of each gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "attention_internal.hpp"
#include "ember/backends/cuda.hpp"
#include "ember/ember.hpp"
#include "tensor/dispatch.hpp"

namespace ember {
namespace {

#define REQUIRE_GPU() \
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device"

constexpr double kInf = std::numeric_limits<double>::infinity();

DynTensor randn_cast(Shape s, DType dt) { return DynTensor::normal(std::move(s), 0, 1, DType::f32, Device::cpu()).cast(dt); }

struct Grads3 {
  DynTensor dq, dk, dv;
  DynTensor out;  // the forward's output
};

// The reference in f64 on the CPU (q, k, v, g, mask on the CPU, any dtype).
Grads3 reference(DynTensor q, DynTensor k, DynTensor v, DynTensor g, const std::optional<DynTensor>& mask, bool causal,
                 double scale) {
  q = q.cast(DType::f64), k = k.cast(DType::f64), v = v.cast(DType::f64), g = g.cast(DType::f64);
  auto ninf = DynTensor::full({}, -kInf, DType::f64, Device::cpu());
  DynTensor s = matmul(q, transpose(k, -1, -2)) * scale;
  if (mask) s = mask->dtype() == DType::boolean ? where(*mask, s, ninf) : s + mask->cast(DType::f64);
  if (causal) {
    int64_t L = q.shape()[-2], S = k.shape()[-2];
    auto keep = tril(DynTensor::ones({L, S}, DType::f64, Device::cpu())).cast(DType::boolean);
    s = where(keep, s, ninf);
  }
  DynTensor p = softmax(s, -1);
  DynTensor dp = matmul(g, transpose(v, -1, -2));
  DynTensor ds = p * (dp - sum(p * dp, {-1}, true));
  return {matmul(ds, k) * scale, matmul(transpose(ds, -1, -2), q) * scale, matmul(transpose(p, -1, -2), g),
          matmul(p, v)};
}

// max |got - want| / max(1e-3, max |want|); NaN must match NaN. Fails with the case named.
void expect_grad_close(const DynTensor& got, const DynTensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  auto a = got.to(Device::cpu()).cast(DType::f64).to_vector<double>();
  auto b = want.to_vector<double>();
  double mag = 1e-3, err = 0;
  size_t worst = 0, nan_mismatch = 0;
  for (size_t i = 0; i < b.size(); ++i)
    if (!std::isnan(b[i])) mag = std::max(mag, std::abs(b[i]));
  for (size_t i = 0; i < b.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) ++nan_mismatch;
      continue;
    }
    double e = std::abs(a[i] - b[i]);
    if (e > err) err = e, worst = i;
  }
  EXPECT_EQ(nan_mismatch, 0u) << what << ": NaN where the reference has none (or the reverse)";
  EXPECT_LE(err / mag, tol) << what << ": max abs error " << err << " at flat index " << worst << " (got "
                            << (b.empty() ? 0.0 : a[worst]) << ", want " << (b.empty() ? 0.0 : b[worst])
                            << "), reference magnitude " << mag;
}

struct Case {
  int64_t L, S, E, Ev;
};

// The kernel versions the GPU tests run: EMBER_CUDA_ATTN_FWD / EMBER_CUDA_ATTN_BWD are read per
// call, so each pass sets them ("" leaves a variable unset: the default, cuDNN's fused attention
// where it applies (f16 / bf16 without a mask), else ember's default kernel; naming a version
// runs ember's own kernel of that version).
struct Versions {
  const char* fwd;
  const char* bwd;
};
constexpr Versions kVersions[] = {{"", ""}, {"v3", "v2"}, {"v2", "v1"}};

void set_or_unset(const char* name, const char* value) {
  if (*value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}
void use_versions(const Versions& v) {
  set_or_unset("EMBER_CUDA_ATTN_FWD", v.fwd);
  set_or_unset("EMBER_CUDA_ATTN_BWD", v.bwd);
}
std::string versions_name(const Versions& v) {
  return std::string(" [fwd ") + (*v.fwd ? v.fwd : "default") + ", bwd " + (*v.bwd ? v.bwd : "default") + "]";
}

std::string describe(DType dt, Case c, const std::string& variant) {
  return std::string(dtype_name(dt)) + " L" + std::to_string(c.L) + " S" + std::to_string(c.S) + " E" +
         std::to_string(c.E) + " Ev" + std::to_string(c.Ev) + " " + variant;
}

// Runs the forward and backward on `dev` (the GPU unless named) through autodiff and compares
// the output and the three gradients. f32_tol: the tolerance for f32 (TF32 takes f16's).
void check(DType dt, Case c, const DynTensor& q, const DynTensor& k, const DynTensor& v,
           const std::optional<DynTensor>& mask, bool causal, std::optional<double> scale, const std::string& variant,
           bool transposed_q = false, std::optional<Device> dev = {}, double f32_tol = 1e-4) {
  Device gpu = (dev ? *dev : Device::cuda(0)).autodiff();
  const double tol = dt == DType::f64 ? 1e-9 : dt == DType::f32 ? f32_tol : dt == DType::f16 ? 1.5e-2 : 3e-2;
  auto g = randn_cast(Shape{2, 3, c.L, c.Ev}, dt);
  // q may arrive as [2, L, 3, E] (transposed to [2, 3, L, E] on the device: a strided view)
  DynTensor Q = q.to(gpu).require_grad();
  DynTensor Qv = transposed_q ? transpose(Q, 1, 2) : Q;
  DynTensor K = k.to(gpu).require_grad(), V = v.to(gpu).require_grad();
  std::optional<DynTensor> M;
  if (mask) M = mask->to(gpu);
  DynTensor out = scaled_dot_product_attention(Qv, K, V, M, causal, scale);
  Gradients gr = out.backward(g.to(gpu));
  DynTensor qr = transposed_q ? transpose(q, 1, 2) : q;
  double sc = scale ? *scale : 1.0 / std::sqrt(double(c.E));
  Grads3 want = reference(qr, k, v, g, mask, causal, sc);
  std::string what = describe(dt, c, variant);
  expect_grad_close(out, want.out, tol, what + " out");
  DynTensor dq = *Q.grad(gr);
  if (transposed_q) dq = transpose(dq, 1, 2);
  expect_grad_close(dq, want.dq, tol, what + " dq");
  expect_grad_close(*K.grad(gr), want.dk, tol, what + " dk");
  expect_grad_close(*V.grad(gr), want.dv, tol, what + " dv");
}

// A bool keep-mask [L, S] that keeps key min(i, S - 1) of every row (no fully masked rows,
// also under causality) and about 70% of the others.
DynTensor keep_mask(int64_t L, int64_t S) {
  auto r = DynTensor::uniform({L, S}, 0, 1, DType::f32, Device::cpu()).to_vector<float>();
  std::vector<float> m(r.size());
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < S; ++j) m[size_t(i * S + j)] = (j == std::min(i, S - 1) || r[size_t(i * S + j)] < 0.7f);
  return DynTensor::from_vector<float>(m, {L, S}, Device::cpu()).cast(DType::boolean);
}

// keep_mask with row `row` fully masked.
DynTensor masked_row(int64_t L, int64_t S, int64_t row) {
  auto keep = keep_mask(L, S).cast(DType::f32).to_vector<float>();
  for (int64_t j = 0; j < S; ++j) keep[size_t(row * S + j)] = 0;
  return DynTensor::from_vector<float>(keep, {L, S}, Device::cpu()).cast(DType::boolean);
}

// The harness itself (reference formula, masks, comparison) against the CPU backend's gradient.
TEST(CudaAttentionBackward, ReferenceAgreesWithCpuBackend) {
  for (DType dt : {DType::f64, DType::f32}) {
    Case c{17, 23, 8, 8};
    auto q = randn_cast(Shape{2, 3, c.L, c.E}, dt), k = randn_cast(Shape{2, 3, c.S, c.E}, dt),
         v = randn_cast(Shape{2, 3, c.S, c.Ev}, dt);
    Device cpu = Device::cpu();
    check(dt, c, q, k, v, {}, true, {}, "cpu causal", false, cpu);
    check(dt, c, q, k, v, keep_mask(c.L, c.S), false, 0.3, "cpu bool mask", false, cpu);
    check(dt, c, q, k, v, randn_cast(Shape{2, 1, c.L, c.S}, dt), true, {}, "cpu causal + additive mask", false, cpu);
    check(dt, c, randn_cast(Shape{2, c.L, 3, c.E}, dt), k, v, {}, false, {}, "cpu transposed q", true, cpu);
    check(dt, c, q, k, v, masked_row(c.L, c.S, 5), false, {}, "cpu row 5 fully masked", false, cpu);
  }
}

TEST(CudaAttentionBackward, AgainstF64Reference) {
  REQUIRE_GPU();
  cuda::set_allow_tf32(false);
  const Case cases[] = {{1, 1, 64, 64},     {17, 17, 64, 64},     {64, 64, 64, 64},    {130, 257, 64, 64},
                        {257, 130, 64, 64}, {17, 64, 32, 32},     {1, 130, 32, 32},    {130, 17, 32, 32},
                        {64, 64, 128, 128}, {257, 130, 128, 128}, {17, 257, 128, 128}, {33, 40, 80, 48},
                        {300, 300, 64, 64}, {256, 256, 64, 64},   {384, 200, 32, 32},  {200, 384, 128, 128}};
  for (const Versions& ver : kVersions) {
    use_versions(ver);
    const std::string vn = versions_name(ver);
    for (DType dt : {DType::f16, DType::bf16, DType::f32}) {
      for (Case c : cases) {
        auto q = randn_cast(Shape{2, 3, c.L, c.E}, dt), k = randn_cast(Shape{2, 3, c.S, c.E}, dt);
        auto v = randn_cast(Shape{2, 3, c.S, c.Ev}, dt);
        check(dt, c, q, k, v, {}, false, {}, "plain" + vn);
        check(dt, c, q, k, v, {}, true, {}, "causal" + vn);
        check(dt, c, q, k, v, keep_mask(c.L, c.S), false, 0.3, "bool mask, scale 0.3" + vn);
        check(dt, c, q, k, v, keep_mask(c.L, c.S), true, {}, "causal + bool mask" + vn);
        check(dt, c, q, k, v, randn_cast(Shape{2, 1, c.L, c.S}, dt), false, {}, "additive mask [2, 1, L, S]" + vn);
        check(dt, c, q, k, v, randn_cast(Shape{c.L, c.S}, dt), true, {}, "causal + additive mask [L, S]" + vn);
        auto qt = randn_cast(Shape{2, c.L, 3, c.E}, dt);
        check(dt, c, qt, k, v, {}, true, {}, "causal, transposed (strided) q" + vn, true);
      }
    }
  }
  use_versions(kVersions[0]);
}

// TF32 (cuda::set_allow_tf32(true), as GPT-2's TF32 step runs): f32 attention multiplies on
// tensor cores (m16n8k8) in the flash forward and backward, operands rounded to TF32 (a 10-bit
// mantissa, as f16's): the output and gradients against the f64 reference with f16's tolerance,
// for both forward versions and both backward versions, head dims 32 / 64 / 128 and tails.
TEST(CudaAttentionBackward, Tf32AgainstF64Reference) {
  REQUIRE_GPU();
  cuda::set_allow_tf32(true);
  const Case cases[] = {{17, 17, 64, 64},   {130, 257, 64, 64}, {257, 130, 64, 64},   {1, 130, 32, 32},
                        {130, 17, 32, 32},  {64, 64, 128, 128}, {200, 384, 128, 128}, {33, 40, 80, 48},
                        {300, 300, 64, 64}, {256, 256, 64, 64}};
  const DType dt = DType::f32;
  for (const Versions& ver : {kVersions[0], kVersions[2]}) {
    use_versions(ver);
    const std::string vn = versions_name(ver) + " tf32";
    for (Case c : cases) {
      auto q = randn_cast(Shape{2, 3, c.L, c.E}, dt), k = randn_cast(Shape{2, 3, c.S, c.E}, dt);
      auto v = randn_cast(Shape{2, 3, c.S, c.Ev}, dt);
      const double tol = 1.5e-2;
      check(dt, c, q, k, v, {}, false, {}, "plain" + vn, false, {}, tol);
      check(dt, c, q, k, v, {}, true, {}, "causal" + vn, false, {}, tol);
      check(dt, c, q, k, v, keep_mask(c.L, c.S), true, 0.3, "causal + bool mask, scale 0.3" + vn, false, {}, tol);
      check(dt, c, q, k, v, randn_cast(Shape{2, 1, c.L, c.S}, dt), false, {}, "additive mask [2, 1, L, S]" + vn,
            false, {}, tol);
      auto qt = randn_cast(Shape{2, c.L, 3, c.E}, dt);
      check(dt, c, qt, k, v, {}, true, {}, "causal, transposed (strided) q" + vn, true, {}, tol);
    }
  }
  use_versions(kVersions[0]);
  // the products really are TF32: the output moves from the exact one by more than f32 rounding
  Case c{130, 257, 64, 64};
  auto q = randn_cast(Shape{2, 3, c.L, c.E}, dt).to(Device::cuda(0)), k = randn_cast(Shape{2, 3, c.S, c.E}, dt);
  auto v = randn_cast(Shape{2, 3, c.S, c.Ev}, dt).to(Device::cuda(0));
  auto kd = k.to(Device::cuda(0));
  auto tf32 = scaled_dot_product_attention(q, kd, v, std::nullopt, true).to(Device::cpu());
  cuda::set_allow_tf32(false);
  auto exact = scaled_dot_product_attention(q, kd, v, std::nullopt, true).to(Device::cpu());
  const double moved = max(abs(tf32 - exact)).item();
  EXPECT_GT(moved, 1e-5) << "TF32 attention gave the exact f32 result: the FMA kernel ran";
  EXPECT_LT(moved, 1e-2);
}

// attention_backward with the forward's lse (what autodiff passes, and what the tests above
// check against the f64 reference) and without it (the flash path then recomputes lse).
TEST(CudaAttentionBackward, WithAndWithoutForwardLse) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  for (DType dt : {DType::f16, DType::bf16})
    for (Case c : {Case{130, 257, 64, 64}, Case{257, 130, 128, 128}, Case{64, 64, 32, 32}})
      for (bool causal : {false, true})
        for (bool masked : {false, true}) {
          auto q = randn_cast(Shape{2, 3, c.L, c.E}, dt).to(gpu), k = randn_cast(Shape{2, 3, c.S, c.E}, dt).to(gpu);
          auto v = randn_cast(Shape{2, 3, c.S, c.Ev}, dt).to(gpu), g = randn_cast(Shape{2, 3, c.L, c.Ev}, dt).to(gpu);
          DynTensor mask = masked ? keep_mask(c.L, c.S).to(gpu) : DynTensor(nullptr, gpu);
          const AttentionAttrs a{causal, std::numeric_limits<double>::quiet_NaN()};
          auto fwd = detail::run_op(OpKind::attention, {q, k, v, mask}, a);
          auto with = detail::run_op(OpKind::attention_backward, {q, k, v, fwd[0], g, mask, fwd[1]}, a);
          auto without = detail::run_op(OpKind::attention_backward, {q, k, v, fwd[0], g, mask}, a);
          const std::string what =
              describe(dt, c, std::string(causal ? "causal" : "plain") + (masked ? " + mask" : ""));
          const char* names[] = {"dq", "dk", "dv"};
          for (int i = 0; i < 3; ++i)
            expect_grad_close(with[size_t(i)], without[size_t(i)].to(Device::cpu()).cast(DType::f64), 1e-2,
                              what + " " + names[i]);
        }
}

TEST(CudaAttentionBackward, F64AndOddShapes) {
  REQUIRE_GPU();
  for (Case c : {Case{5, 7, 4, 6}, Case{17, 64, 64, 64}, Case{9, 12, 300, 20}}) {
    auto q = randn_cast(Shape{2, 3, c.L, c.E}, DType::f64), k = randn_cast(Shape{2, 3, c.S, c.E}, DType::f64);
    auto v = randn_cast(Shape{2, 3, c.S, c.Ev}, DType::f64);
    check(DType::f64, c, q, k, v, {}, false, {}, "plain");
    check(DType::f64, c, q, k, v, keep_mask(c.L, c.S), true, {}, "causal + bool mask");
  }
  // half types with head dims the flash backward does not take (the materialised path)
  for (DType dt : {DType::f16, DType::bf16}) {
    Case c{20, 30, 16, 16};
    auto q = randn_cast(Shape{2, 3, c.L, c.E}, dt), k = randn_cast(Shape{2, 3, c.S, c.E}, dt),
         v = randn_cast(Shape{2, 3, c.S, c.Ev}, dt);
    check(dt, c, q, k, v, {}, true, {}, "E 16");
  }
}

// A row whose keys are all masked: NaN in the forward, so NaN in dq's row and in every dk, dv
// (the composed formula's P row is NaN).
TEST(CudaAttentionBackward, FullyMaskedRowGivesNaN) {
  REQUIRE_GPU();
  for (const Versions& ver : kVersions) {
    use_versions(ver);
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      for (Case c : {Case{70, 70, 64, 64}, Case{200, 150, 64, 64}}) {
        auto q = randn_cast(Shape{2, 3, c.L, c.E}, dt), k = randn_cast(Shape{2, 3, c.S, c.E}, dt),
             v = randn_cast(Shape{2, 3, c.S, c.Ev}, dt);
        check(dt, c, q, k, v, masked_row(c.L, c.S, 5), false, {}, "row 5 fully masked" + versions_name(ver));
        check(dt, c, q, k, v, masked_row(c.L, c.S, c.L - 7), true, {},
              "causal, row L - 7 fully masked" + versions_name(ver));
      }
    }
  }
  use_versions(kVersions[0]);
}

// Empty sequences: zero gradients (no scores), empty where the shape says so.
TEST(CudaAttentionBackward, EmptySequences) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0).autodiff();
  for (DType dt : {DType::f32, DType::bf16}) {
    for (auto [L, S] : {std::pair<int64_t, int64_t>{0, 5}, {4, 0}}) {
      auto q = randn_cast(Shape{2, L, 8}, dt).to(gpu).require_grad();
      auto k = randn_cast(Shape{2, S, 8}, dt).to(gpu).require_grad();
      auto v = randn_cast(Shape{2, S, 8}, dt).to(gpu).require_grad();
      Gradients gr = scaled_dot_product_attention(q, k, v).backward(randn_cast(Shape{2, L, 8}, dt).to(gpu));
      for (const DynTensor* t : {&q, &k, &v}) {
        DynTensor d = *t->grad(gr);
        EXPECT_EQ(d.shape(), t->shape());
        for (double x : d.to(Device::cpu()).cast(DType::f64).to_vector<double>()) EXPECT_EQ(x, 0.0);
      }
    }
  }
}

// The cuDNN path is taken where it should be (f16 / bf16, no mask, on a GPU where cuDNN has the
// engines: Hopper), and its results agree with ember's own kernels on the same inputs: forward
// output and lse, and the three gradients, for causal and not. (cuDNN before 9.16 runs the
// backward only for key counts in whole 128s: ember's own kernel takes the others.)
TEST(CudaAttentionCudnn, TakenOnHopperAndAgreesWithOwnKernels) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  const bool hopper = prop.major == 9;
  for (DType dt : {DType::bf16, DType::f16})
    for (Case c : {Case{256, 256, 64, 64}, Case{130, 257, 128, 128}, Case{1024, 1024, 64, 64}})
      for (bool causal : {false, true}) {
        auto q = randn_cast(Shape{2, 3, c.L, c.E}, dt).to(gpu), k = randn_cast(Shape{2, 3, c.S, c.E}, dt).to(gpu);
        auto v = randn_cast(Shape{2, 3, c.S, c.Ev}, dt).to(gpu), g = randn_cast(Shape{2, 3, c.L, c.Ev}, dt).to(gpu);
        // (with L = 256, the gradient is broadcast over the batch, as a sum's is: copied dense first)
        if (c.L == 256) g = expand(randn_cast(Shape{1, 1, c.L, c.Ev}, dt).to(gpu), {2, 3, c.L, c.Ev});
        const AttentionAttrs a{causal, std::numeric_limits<double>::quiet_NaN()};
        const int64_t before = cuda::cudnn_attention_runs();
        use_versions({"", ""});
        auto fwd = detail::run_op(OpKind::attention, {q, k, v, DynTensor(nullptr, gpu)}, a);
        auto bwd = detail::run_op(OpKind::attention_backward, {q, k, v, fwd[0], g, DynTensor(nullptr, gpu), fwd[1]}, a);
        const int64_t runs = cuda::cudnn_attention_runs() - before;
        use_versions({"v3", "v2"});
        auto fwd_own = detail::run_op(OpKind::attention, {q, k, v, DynTensor(nullptr, gpu)}, a);
        auto bwd_own = detail::run_op(OpKind::attention_backward,
                                      {q, k, v, fwd_own[0], g, DynTensor(nullptr, gpu), fwd_own[1]}, a);
        use_versions(kVersions[0]);
        const std::string what = describe(dt, c, causal ? "causal" : "plain");
        const int64_t want = 1 + (cudnnGetVersion() >= 91600 || c.S % 128 == 0 ? 1 : 0);
        if (hopper) {
          EXPECT_EQ(runs, want) << what << ": runs on cuDNN (forward, backward)";
        }
        expect_grad_close(fwd[0], fwd_own[0].to(Device::cpu()).cast(DType::f64), 1e-2, what + " out");
        expect_grad_close(fwd[1], fwd_own[1].to(Device::cpu()).cast(DType::f64), 1e-3, what + " lse");
        const char* names[] = {"dq", "dk", "dv"};
        for (int i = 0; i < 3; ++i)
          expect_grad_close(bwd[size_t(i)], bwd_own[size_t(i)].to(Device::cpu()).cast(DType::f64), 2e-2,
                            what + " " + names[i]);
      }
}

// ---- timing (by hand on a GPU: --gtest_also_run_disabled_tests --gtest_filter='*AttentionBackwardPerf*') ----

TEST(CudaAttentionBackwardPerf, DISABLED_Causal) {
  REQUIRE_GPU();
  Device dev = Device::cuda(0);
  struct P {
    int64_t B, H, L, E;
    DType dt;
    bool causal;
  };
  // fwd v2 / v3 x bwd v1 / v2
  const Versions perf_versions[] = {{"", ""}, {"v3", "v2"}, {"v2", "v2"}, {"v3", "v1"}};
  for (const Versions& ver : perf_versions)
    for (P c : {P{8, 12, 1024, 64, DType::bf16, true}, P{8, 12, 1024, 64, DType::bf16, false},
                P{4, 16, 2048, 128, DType::f16, true}}) {
      use_versions(ver);
      auto mk = [&] {
        return DynTensor::normal({c.B, c.H, c.L, c.E}, 0, 1, DType::f32, Device::cpu()).cast(c.dt).to(dev);
      };
      auto q = mk(), k = mk(), v = mk(), g = mk().to(dev.autodiff());
      auto step = [&] {
        auto qq = q.to(dev.autodiff()).require_grad(), kk = k.to(dev.autodiff()).require_grad(),
             vv = v.to(dev.autodiff()).require_grad();
        auto gr = scaled_dot_product_attention(qq, kk, vv, {}, c.causal).backward(g);
        return *qq.grad(gr);
      };
      for (int i = 0; i < 3; ++i) (void)step();
      dev.sync();
      auto t0 = std::chrono::steady_clock::now();
      const int iters = 20;
      for (int i = 0; i < iters; ++i) (void)step();
      dev.sync();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
      std::printf("PERF attention fwd+bwd %s B%lld H%lld L%lld E%lld%s%s %.3f ms\n",
                  std::string(dtype_name(c.dt)).c_str(), (long long)c.B, (long long)c.H, (long long)c.L, (long long)c.E,
                  c.causal ? " causal" : "", versions_name(ver).c_str(), ms);
    }
  use_versions(kVersions[0]);
}

}  // namespace
}  // namespace ember
