// The elementwise, creation and layout kernel families of the CUDA backend: every generated
// source variant compiles with NVRTC (runs without a GPU), and on a GPU the results match the
// CPU backend (elementwise ops with broadcasting and permuted inputs, random ops with the same
// seed, creation and layout ops).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <tuple>

#include "compile_all.hpp"
#include "cuda_backend.hpp"
#include "elementwise_sources.hpp"
#include "ember/backends/cuda.hpp"
#include "ember/tensor/ops.hpp"

namespace ember {
namespace {

#define REQUIRE_GPU() \
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices()

using cuda_test::compile_all;

void expect_unique_keys(const std::vector<cuda::KernelSource>& sources) {
  std::vector<std::string> keys;
  for (const auto& s : sources) keys.push_back(s.key);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end()) << "duplicate kernel key";
}

TEST(CudaElementwiseCompile, DTypeRulesFollowTheFamilies) {
  using cuda::elementwise_supports;
  EXPECT_TRUE(elementwise_supports(OpKind::add, DType::boolean));
  EXPECT_FALSE(elementwise_supports(OpKind::sub, DType::boolean));
  EXPECT_FALSE(elementwise_supports(OpKind::div, DType::i32));
  EXPECT_TRUE(elementwise_supports(OpKind::div, DType::bf16));
  EXPECT_FALSE(elementwise_supports(OpKind::exp, DType::i64));
  EXPECT_TRUE(elementwise_supports(OpKind::is_nan, DType::boolean));
  EXPECT_TRUE(elementwise_supports(OpKind::bitwise_and, DType::boolean));
  EXPECT_FALSE(elementwise_supports(OpKind::shift_left, DType::boolean));
  EXPECT_FALSE(elementwise_supports(OpKind::bitwise_not, DType::f32));
  EXPECT_TRUE(elementwise_supports(OpKind::where, DType::boolean));
  EXPECT_FALSE(elementwise_supports(OpKind::lerp, DType::i32));
  EXPECT_TRUE(elementwise_supports(OpKind::clamp, DType::u8));
  EXPECT_FALSE(elementwise_supports(OpKind::clamp, DType::boolean));
  EXPECT_TRUE(elementwise_supports(OpKind::prelu, DType::f16));
  // every elementwise family has a kernel
  auto ops = cuda::elementwise_ops();
  for (OpKind k : {OpKind::neg, OpKind::gelu, OpKind::is_inf, OpKind::bitwise_not, OpKind::pow, OpKind::hypot,
                   OpKind::bool_xor, OpKind::shift_right, OpKind::where, OpKind::lerp, OpKind::prelu,
                   OpKind::clamp, OpKind::softplus, OpKind::leaky_relu})
    EXPECT_NE(std::find(ops.begin(), ops.end(), k), ops.end()) << op_name(k);
  EXPECT_EQ(std::find(ops.begin(), ops.end(), OpKind::cast), ops.end());
  try {
    cuda::elementwise_source(OpKind::div, DType::i32);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("div"), std::string::npos) << e.what();
  }
}

TEST(CudaElementwiseCompile, EveryElementwiseSourceCompiles) {
  auto sources = cuda::elementwise_kernel_sources();
  EXPECT_GT(sources.size(), 400u);
  expect_unique_keys(sources);
  for (const auto& s : sources) (void)op_kind_from_name(s.key.substr(0, s.key.find('/')));  // keys start with the op
  auto errors = compile_all(sources);
  for (const auto& e : errors) ADD_FAILURE() << e;
}

TEST(CudaElementwiseCompile, EveryCreationSourceCompiles) {
  auto sources = cuda::creation_kernel_sources();
  expect_unique_keys(sources);
  for (const auto& s : sources) (void)op_kind_from_name(s.key.substr(0, s.key.find('/')));  // keys start with the op
  auto errors = compile_all(sources);
  for (const auto& e : errors) ADD_FAILURE() << e;
}

TEST(CudaElementwiseCompile, EveryLayoutSourceCompiles) {
  auto sources = cuda::layout_kernel_sources();
  expect_unique_keys(sources);
  for (const auto& s : sources) (void)op_kind_from_name(s.key.substr(0, s.key.find('/')));
  auto errors = compile_all(sources);
  for (const auto& e : errors) ADD_FAILURE() << e;
}

TEST(CudaElementwiseCompile, EveryCopySourceCompiles) {
  auto sources = cuda::copy_kernel_sources();
  EXPECT_EQ(sources.size(), size_t(kNumDTypes * kNumDTypes + 2));
  expect_unique_keys(sources);
  auto errors = compile_all(sources);
  for (const auto& e : errors) ADD_FAILURE() << e;
}

// ------------------------------------------------------------------------------ GPU tests

// Values of a tensor as doubles, on the host.
std::vector<double> values(const DynTensor& t) { return t.to(Device::cpu()).cast(DType::f64).to_vector<double>(); }

// a (cuda) and b (cpu) agree: same shape and dtype, |a - b| <= atol + rtol |b|, NaN == NaN,
// infinities of the same sign.
void expect_close(const DynTensor& gpu, const DynTensor& cpu, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  auto a = values(gpu), b = values(cpu);
  int shown = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bool ok;
    if (std::isnan(b[i])) ok = std::isnan(a[i]);
    else if (std::isinf(b[i])) ok = a[i] == b[i];
    else ok = std::abs(a[i] - b[i]) <= atol + rtol * std::abs(b[i]);
    if (!ok && shown++ < 5) ADD_FAILURE() << what << ": element " << i << ": cuda " << a[i] << " vs cpu " << b[i];
  }
}
void expect_same(const DynTensor& gpu, const DynTensor& cpu, const std::string& what) {
  expect_close(gpu, cpu, 0, 0, what);
}

double rtol_of(DType dt) {
  switch (dt) {
    case DType::f64: return 1e-12;
    case DType::f32: return 2e-6;
    case DType::f16: return 2e-3;
    case DType::bf16: return 1.6e-2;
    default: return 0;
  }
}

// Interesting inputs: zeros of both signs, NaN, infinities, large and tiny values, halves.
DynTensor special_values(DType dt, const Device& d) {
  std::vector<double> v = {0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, 3.0, -3.0, 10.0, -10.0, 20.5, -20.5,
                           88.0, -88.0, 1e-3, -1e-3, 0.1, 0.7, -0.7, 1e30, -1e30, NAN, INFINITY, -INFINITY};
  auto x = DynTensor::from_vector(v, Shape{int64_t(v.size())}, Device::cpu()).cast(dt);
  return x.to(d);
}

TEST(CudaElementwise, AddWithBroadcastingOnPermutedInputsMatchesCpu) {
  REQUIRE_GPU();
  Device cpu = Device::cpu(), gpu = Device::cuda(0);
  auto a = DynTensor::normal({4, 5, 6}, 0, 1, DType::f32, cpu);
  auto b = DynTensor::normal({4, 5}, 0, 1, DType::f32, cpu);
  auto c = DynTensor::normal({6, 1, 1}, 0, 1, DType::f32, cpu);
  auto e = DynTensor::normal({4, 5, 6}, 0, 1, DType::f32, cpu);
  auto ag = a.to(gpu), bg = b.to(gpu), cg = c.to(gpu), eg = e.to(gpu);
  auto ap = permute(a, {2, 0, 1}), apg = permute(ag, {2, 0, 1});  // [6, 4, 5], strided
  expect_same(add(apg, bg), add(ap, b), "permuted + broadcast row");
  expect_same(add(apg, cg), add(ap, c), "permuted + broadcast column");
  expect_same(add(apg, permute(eg, {2, 0, 1})), add(ap, permute(e, {2, 0, 1})), "two permuted (kept layout)");
  expect_same(mul(apg, 2.5), mul(ap, 2.5), "0-d operand");
  expect_same(sub(1.5, apg), sub(1.5, ap), "0-d first operand");
  expect_same(greater(apg, bg), greater(ap, b), "compare -> bool");
  expect_same(flip(add(apg, bg), {1}), flip(add(ap, b), {1}), "negative strides");
  // broadcasting over a contiguous innermost dim (packs along it), in every width
  for (DType dt : {DType::f32, DType::f16, DType::f64, DType::u8}) {
    auto x = DynTensor::uniform({8, 64}, 0, 100, DType::f32, cpu).cast(dt);
    auto bias = DynTensor::uniform({64}, 0, 100, DType::f32, cpu).cast(dt);
    auto col = DynTensor::uniform({8, 1}, 0, 100, DType::f32, cpu).cast(dt);
    auto xg = x.to(gpu), biasg = bias.to(gpu), colg = col.to(gpu);
    std::string n = std::string(dtype_name(dt));
    expect_same(add(xg, biasg), add(x, bias), "bias add/" + n);
    expect_same(sub(colg, xg), sub(col, x), "column broadcast/" + n);
    expect_same(where(greater(xg, colg), biasg, xg), where(greater(x, col), bias, x), "where broadcast/" + n);
    auto x4 = DynTensor::uniform({2, 3, 4, 8}, 0, 100, DType::f32, cpu).cast(dt);
    auto ch = DynTensor::uniform({3, 1, 1}, 0, 100, DType::f32, cpu).cast(dt);
    expect_same(mul(x4.to(gpu), ch.to(gpu)), mul(x4, ch), "per-channel/" + n);
  }
  // large enough for the vectorised path, with a tail, and in-place reuse of a temporary
  auto big = DynTensor::uniform({100003}, -4, 4, DType::f32, cpu);
  auto bigg = big.to(gpu);
  expect_same(add(mul(bigg, 3.0), bigg), add(mul(big, 3.0), big), "vectorised with tail");
  auto bh = big.cast(DType::f16), bhg = bigg.cast(DType::f16);
  expect_same(add(bhg, bhg), add(bh, bh), "f16 add");
  auto bi = big.cast(DType::i32), big_i = bigg.cast(DType::i32);
  expect_same(mul(add(big_i, 7), big_i), mul(add(bi, 7), bi), "i32");
  // past 4M elements a transposed operand is copied through tiles first: x + y.T, y.T - x, a
  // transposed condition of where, and a batched transpose with a broadcast operand
  auto x = DynTensor::normal({2048, 3000}, 0, 1, DType::f32, cpu);
  auto y = DynTensor::normal({3000, 2048}, 0, 1, DType::f32, cpu);
  auto xg = x.to(gpu), yg = y.to(gpu);
  expect_same(add(xg, transpose(yg, 0, 1)), add(x, transpose(y, 0, 1)), "x + y.T");
  expect_same(sub(transpose(yg, 0, 1), xg), sub(transpose(y, 0, 1), x), "y.T - x");
  expect_same(where(greater(transpose(yg, 0, 1), 0.0), xg, mul(xg, 0.5)),
              where(greater(transpose(y, 0, 1), 0.0), x, mul(x, 0.5)), "where on y.T > 0");
  auto z = DynTensor::normal({3, 1200, 1300}, 0, 1, DType::f16, cpu);
  auto w = DynTensor::normal({1300}, 0, 1, DType::f16, cpu);
  expect_same(add(transpose(contiguous(transpose(z.to(gpu), 1, 2)), 1, 2), w.to(gpu)), add(z, w),
              "batched transpose + bias");
}

TEST(CudaElementwise, UnaryOpsMatchCpuOnSpecialValues) {
  REQUIRE_GPU();
  Device cpu = Device::cpu(), gpu = Device::cuda(0);
  using Fn = std::function<DynTensor(DynTensor)>;
  std::vector<std::pair<std::string, Fn>> ops = {
      {"neg", [](DynTensor x) { return neg(x); }},           {"abs", [](DynTensor x) { return abs(x); }},
      {"sign", [](DynTensor x) { return sign(x); }},         {"square", [](DynTensor x) { return square(x); }},
      {"exp", [](DynTensor x) { return exp(x); }},           {"expm1", [](DynTensor x) { return expm1(x); }},
      {"log", [](DynTensor x) { return log(x); }},           {"log1p", [](DynTensor x) { return log1p(x); }},
      {"sqrt", [](DynTensor x) { return sqrt(x); }},         {"rsqrt", [](DynTensor x) { return rsqrt(x); }},
      {"reciprocal", [](DynTensor x) { return reciprocal(x); }},
      {"sin", [](DynTensor x) { return sin(x); }},           {"tanh", [](DynTensor x) { return tanh(x); }},
      {"atan", [](DynTensor x) { return atan(x); }},         {"erf", [](DynTensor x) { return erf(x); }},
      {"sigmoid", [](DynTensor x) { return sigmoid(x); }},   {"log_sigmoid", [](DynTensor x) { return log_sigmoid(x); }},
      {"hard_sigmoid", [](DynTensor x) { return hard_sigmoid(x); }},
      {"relu", [](DynTensor x) { return relu(x); }},         {"gelu", [](DynTensor x) { return gelu(x); }},
      {"gelu_tanh", [](DynTensor x) { return gelu_tanh(x); }},
      {"silu", [](DynTensor x) { return silu(x); }},         {"floor", [](DynTensor x) { return floor(x); }},
      {"ceil", [](DynTensor x) { return ceil(x); }},         {"round", [](DynTensor x) { return round(x); }},
      {"trunc", [](DynTensor x) { return trunc(x); }},       {"is_nan", [](DynTensor x) { return is_nan(x); }},
      {"is_inf", [](DynTensor x) { return is_inf(x); }},     {"is_finite", [](DynTensor x) { return is_finite(x); }},
      {"bool_not", [](DynTensor x) { return bool_not(x); }},
      {"softplus", [](DynTensor x) { return softplus(x); }},
      {"softplus2", [](DynTensor x) { return softplus(x, 2.0, 5.0); }},
      {"leaky_relu", [](DynTensor x) { return leaky_relu(x, 0.2); }},
      {"clamp", [](DynTensor x) { return clamp(x, Scalar(-2.0), Scalar(3.0)); }},
  };
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    auto xc = special_values(dt, cpu), xg = special_values(dt, gpu);
    double rtol = rtol_of(dt) * (dt == DType::f32 ? 2 : 1), atol = dt == DType::f64 ? 1e-300 : 1e-37;
    for (auto& [name, f] : ops) expect_close(f(xg), f(xc), rtol, atol, name + "/" + std::string(dtype_name(dt)));
  }
}

TEST(CudaElementwise, GeluF16MatchesCpu) {
  REQUIRE_GPU();
  auto x = DynTensor::uniform({4099}, -12, 12, DType::f32, Device::cpu()).cast(DType::f16);
  auto g = gelu(x.to(Device::cuda(0)));
  EXPECT_EQ(g.dtype(), DType::f16);
  expect_close(g, gelu(x), 2e-3, 1e-5, "gelu f16");
  expect_close(gelu_tanh(x.to(Device::cuda(0))), gelu_tanh(x), 2e-3, 1e-5, "gelu_tanh f16");
}

TEST(CudaElementwise, IntegerAndBoolOpsMatchCpuExactly) {
  REQUIRE_GPU();
  Device cpu = Device::cpu(), gpu = Device::cuda(0);
  for (DType dt : {DType::i64, DType::i32, DType::i16, DType::i8, DType::u8}) {
    auto a = DynTensor::randint({7, 9}, -120, 120, DType::i64, cpu).cast(dt);
    auto b = DynTensor::randint({9}, 1, 9, DType::i64, cpu).cast(dt);  // positive divisors / small exponents
    auto ag = a.to(gpu), bg = b.to(gpu);
    std::string n = std::string(dtype_name(dt));
    expect_same(add(ag, bg), add(a, b), "add/" + n);
    expect_same(sub(ag, bg), sub(a, b), "sub/" + n);
    expect_same(mul(ag, ag), mul(a, a), "mul (wraps)/" + n);
    expect_same(fmod(ag, bg), fmod(a, b), "fmod/" + n);
    expect_same(remainder(ag, bg), remainder(a, b), "remainder/" + n);
    expect_same(remainder(ag, neg(bg)), remainder(a, neg(b)), "remainder neg/" + n);
    expect_same(pow(ag, bg), pow(a, b), "pow/" + n);
    expect_same(minimum(ag, bg), minimum(a, b), "minimum/" + n);
    expect_same(maximum(ag, bg), maximum(a, b), "maximum/" + n);
    expect_same(shift_left(ag, bg), shift_left(a, b), "shift_left/" + n);
    expect_same(shift_right(ag, bg), shift_right(a, b), "shift_right/" + n);
    expect_same(bitwise_xor(ag, bg), bitwise_xor(a, b), "bitwise_xor/" + n);
    expect_same(bitwise_not(ag), bitwise_not(a), "bitwise_not/" + n);
    expect_same(lower_equal(ag, bg), lower_equal(a, b), "lower_equal/" + n);
    expect_same(abs(ag), abs(a), "abs/" + n);
    expect_same(sign(ag), sign(a), "sign/" + n);
    expect_same(clamp(ag, Scalar(-5), Scalar(50)), clamp(a, Scalar(-5), Scalar(50)), "clamp/" + n);
  }
  auto p = DynTensor::bernoulli({5, 6}, 0.5, DType::boolean, cpu), q = DynTensor::bernoulli({6}, 0.5, DType::boolean, cpu);
  auto pg = p.to(gpu), qg = q.to(gpu);
  expect_same(bool_xor(pg, qg), bool_xor(p, q), "bool_xor");
  expect_same(add(pg, qg), add(p, q), "bool add");
  expect_same(mul(pg, qg), mul(p, q), "bool mul");
  expect_same(bitwise_or(pg, qg), bitwise_or(p, q), "bool bitwise_or");
  expect_same(maximum(pg, qg), maximum(p, q), "bool maximum");
}

TEST(CudaElementwise, FloatBinaryWhereLerpPreluMatchCpu) {
  REQUIRE_GPU();
  Device cpu = Device::cpu(), gpu = Device::cuda(0);
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    std::string n = std::string(dtype_name(dt));
    double rtol = rtol_of(dt) * (dt == DType::f32 ? 2 : 1);
    auto a = DynTensor::uniform({3, 4, 5}, -3, 3, DType::f32, cpu).cast(dt);
    auto b = DynTensor::uniform({4, 1}, -3, 3, DType::f32, cpu).cast(dt);
    auto ag = a.to(gpu), bg = b.to(gpu);
    expect_close(div(ag, bg), div(a, b), rtol, 0, "div/" + n);
    expect_close(fmod(ag, bg), fmod(a, b), rtol, 1e-6, "fmod/" + n);
    expect_close(remainder(ag, bg), remainder(a, b), rtol, 1e-6, "remainder/" + n);
    expect_close(pow(abs(ag), bg), pow(abs(a), b), rtol, 0, "pow/" + n);
    for (double e : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.7})
      expect_close(pow(ag, e), pow(a, e), rtol, 0, "pow scalar " + std::to_string(e) + "/" + n);
    expect_close(atan2(ag, bg), atan2(a, b), rtol, 1e-6, "atan2/" + n);
    expect_close(hypot(ag, bg), hypot(a, b), rtol, 0, "hypot/" + n);
    auto sv = special_values(dt, cpu), svg = special_values(dt, gpu);
    auto sr = flip(sv, {0}), srg = flip(svg, {0});
    expect_close(maximum(svg, srg), maximum(sv, sr), 0, 0, "maximum specials/" + n);
    expect_close(minimum(svg, srg), minimum(sv, sr), 0, 0, "minimum specials/" + n);
    auto cond = greater(a, 0.0), condg = greater(ag, 0.0);
    expect_same(where(condg, ag, bg), where(cond, a, b), "where/" + n);
    auto w = DynTensor::uniform({5}, -1, 2, DType::f32, cpu).cast(dt);
    expect_close(lerp(ag, bg, w.to(gpu)), lerp(a, b, w), rtol, 1e-6, "lerp/" + n);
    auto x = DynTensor::normal({2, 3, 4, 5}, 0, 1, DType::f32, cpu).cast(dt);
    auto pw = DynTensor::uniform({3}, 0, 1, DType::f32, cpu).cast(dt);
    expect_close(prelu(x.to(gpu), pw.to(gpu)), prelu(x, pw), rtol, 0, "prelu/" + n);
    auto p1 = DynTensor::full({1}, 0.25, dt, cpu);
    expect_close(prelu(x.to(gpu), p1.to(gpu)), prelu(x, p1), rtol, 0, "prelu one weight/" + n);
  }
}

// Copies of views whose innermost dim stays contiguous (attention's heads merged back, a flip of
// an outer dim, a broadcast outer dim) go through the 16-byte-pack kernel where sizes and
// alignment allow, element by element otherwise (odd inner sizes, an offset view): both give
// the CPU's values exactly.
TEST(CudaLayout, CopiesOfInnerContiguousViewsMatchCpu) {
  REQUIRE_GPU();
  const Device gpu = Device::cuda(0), cpu = Device::cpu();
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::u8}) {
    for (int64_t e : {64, 8, 6, 3}) {
      const std::string n = std::string(dtype_name(dt)) + " inner " + std::to_string(e);
      auto x = reshape(DynTensor::arange(0, 2 * 3 * 5 * e, 1, DType::f64, cpu).cast(dt), {2, 3, 5, e});
      auto xg = x.to(gpu);
      expect_same(contiguous(permute(xg, {0, 2, 1, 3})), contiguous(permute(x, {0, 2, 1, 3})), "heads " + n);
      expect_same(contiguous(flip(xg, {1})), contiguous(flip(x, {1})), "flip " + n);
      auto b = reshape(DynTensor::arange(0, 5 * e, 1, DType::f64, cpu).cast(dt), {1, 5, e});
      expect_same(contiguous(expand(b.to(gpu), {4, 5, e})), contiguous(expand(b, {4, 5, e})), "broadcast " + n);
      // an offset view: column 1 onwards of the last dim breaks the 16-byte alignment
      auto s = narrow(xg, 3, 1, e - 1), sc = narrow(x, 3, 1, e - 1);
      expect_same(contiguous(permute(s, {0, 2, 1, 3})), contiguous(permute(sc, {0, 2, 1, 3})), "offset " + n);
    }
  }
}

TEST(CudaCreation, SameSeedGivesTheCpuRandomNumbers) {
  REQUIRE_GPU();
  Device cpu = Device::cpu(), gpu = Device::cuda(0);
  auto both = [&](uint64_t seed, const std::function<DynTensor(const Device&)>& f) {
    cpu.seed(seed);
    gpu.seed(seed);
    auto c = f(cpu);
    auto g = f(gpu);
    return std::make_pair(g, c);
  };
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    std::string n = std::string(dtype_name(dt));
    auto [ug, uc] = both(11, [&](const Device& d) { return DynTensor::uniform({1001}, -2, 3, dt, d); });
    expect_same(ug, uc, "uniform/" + n);
    // the stream advances identically: a second draw matches too
    auto [ng, nc] = both(12, [&](const Device& d) {
      (void)DynTensor::uniform({13}, 0, 1, dt, d);
      return DynTensor::normal({2003}, 1.5, 2, dt, d);
    });
    expect_close(ng, nc, dt == DType::f64 ? 1e-14 : rtol_of(dt) / 2, 1e-6, "normal/" + n);
  }
  auto [bg, bc] = both(13, [](const Device& d) { return DynTensor::bernoulli({777}, 0.3, DType::f32, d); });
  expect_same(bg, bc, "bernoulli");
  auto [rg, rc] = both(14, [](const Device& d) { return DynTensor::randint({999}, -50, 77, DType::i64, d); });
  expect_same(rg, rc, "randint");
  auto [wg, wc] = both(15, [](const Device& d) {
    return DynTensor::randint({555}, -(int64_t(1) << 40), int64_t(1) << 41, DType::i64, d);
  });
  expect_same(wg, wc, "randint wide");
  auto [hg, hc] = both(16, [](const Device& d) { return DynTensor::randint({100}, 0, 100, DType::f16, d); });
  expect_same(hg, hc, "randint f16");
}

TEST(CudaCreation, FullArangeLinspaceEyeMatchCpu) {
  REQUIRE_GPU();
  Device cpu = Device::cpu(), gpu = Device::cuda(0);
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::i16, DType::i8,
                   DType::u8, DType::boolean}) {
    std::string n = std::string(dtype_name(dt));
    for (int64_t len : {1, 5, 37, 1000}) {
      expect_same(DynTensor::full({len}, 2.75, dt, gpu), DynTensor::full({len}, 2.75, dt, cpu), "full/" + n);
      expect_same(DynTensor::zeros({len}, dt, gpu), DynTensor::zeros({len}, dt, cpu), "zeros/" + n);
    }
    expect_same(DynTensor::eye(5, 7, dt, gpu), DynTensor::eye(5, 7, dt, cpu), "eye/" + n);
    if (dt != DType::boolean) {
      expect_same(DynTensor::arange(-3, 40, 2, dt, gpu), DynTensor::arange(-3, 40, 2, dt, cpu), "arange/" + n);
      expect_same(DynTensor::linspace(-3, 7.5, 17, dt, gpu), DynTensor::linspace(-3, 7.5, 17, dt, cpu),
                  "linspace/" + n);
      expect_same(DynTensor::linspace(2, 2, 1, dt, gpu), DynTensor::linspace(2, 2, 1, dt, cpu), "linspace 1/" + n);
    }
  }
  expect_same(DynTensor::arange(0.1, 3.3, 0.1, DType::f32, gpu), DynTensor::arange(0.1, 3.3, 0.1, DType::f32, cpu),
              "arange fractional");
}

TEST(CudaLayout, CatPadFlipRollTriSliceAssignMatchCpu) {
  REQUIRE_GPU();
  Device cpu = Device::cpu(), gpu = Device::cuda(0);
  for (DType dt : {DType::f32, DType::f16, DType::i64, DType::boolean, DType::u8, DType::f64}) {
    std::string n = std::string(dtype_name(dt));
    auto a = DynTensor::uniform({3, 4, 5}, -5, 5, DType::f32, cpu).cast(dt);
    auto b = DynTensor::uniform({3, 2, 5}, -5, 5, DType::f32, cpu).cast(dt);
    auto c = permute(DynTensor::uniform({5, 3, 1}, -5, 5, DType::f32, cpu).cast(dt), {1, 2, 0});  // [3, 1, 5] strided
    auto ag = a.to(gpu), bg = b.to(gpu), cg = c.to(gpu);
    expect_same(cat({ag, bg, cg}, 1), cat({a, b, c}, 1), "cat dim 1/" + n);
    expect_same(cat({ag, ag}, 0), cat({a, a}, 0), "cat dim 0/" + n);
    expect_same(cat({ag, flip(ag, {2})}, 2), cat({a, flip(a, {2})}, 2), "cat dim 2/" + n);
    expect_same(flip(ag, {0, 2}), flip(a, {0, 2}), "flip/" + n);
    expect_same(roll(ag, {2, -1}, {1, 2}), roll(a, {2, -1}, {1, 2}), "roll/" + n);
    expect_same(roll(ag, {7}), roll(a, {7}), "roll flat/" + n);
    expect_same(pad(ag, {1, 2, 0, 3, 2, 1}, PadMode::constant, 1.5), pad(a, {1, 2, 0, 3, 2, 1}, PadMode::constant, 1.5),
                "pad constant/" + n);
    expect_same(pad(ag, {0, 0, -1, 2, 1, -2}), pad(a, {0, 0, -1, 2, 1, -2}), "pad negative/" + n);
    expect_same(pad(ag, {1, 4, 2, 3, 0, 0}, PadMode::reflect), pad(a, {1, 4, 2, 3, 0, 0}, PadMode::reflect),
                "pad reflect/" + n);
    expect_same(pad(permute(ag, {0, 2, 1}), {1, 1, 3, 3, 2, 2}, PadMode::replicate),
                pad(permute(a, {0, 2, 1}), {1, 1, 3, 3, 2, 2}, PadMode::replicate), "pad replicate/" + n);
    for (int64_t k : {-2, 0, 1, 6}) {
      expect_same(tril(ag, k), tril(a, k), "tril/" + n);
      expect_same(triu(permute(ag, {0, 2, 1}), k), triu(permute(a, {0, 2, 1}), k), "triu strided/" + n);
      expect_same(triu(contiguous(ag), k), triu(contiguous(a), k), "triu in place/" + n);
    }
    auto v = DynTensor::uniform({3, 2, 1}, -5, 5, DType::f32, cpu).cast(dt);
    std::vector<Slice> r = {Slice{}, Slice{0, 4, 2}, Slice{1, 4, 3}};
    expect_same(slice_assign(ag, r, v.to(gpu)), slice_assign(a, r, v), "slice_assign/" + n);
    expect_same(slice_assign(contiguous(flip(ag, {1})), r, v.to(gpu)), slice_assign(contiguous(flip(a, {1})), r, v),
                "slice_assign in place/" + n);
  }
}

// Not a correctness test: prints the bandwidth of add on f32 against a device-to-device copy
// (the target is >= 90% of the copy). Run with --gtest_also_run_disabled_tests.
TEST(CudaElementwise, DISABLED_AddF32Bandwidth) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  const int64_t n = int64_t(1) << 28;  // 256M elements, 1 GiB per operand
  auto a = DynTensor::uniform({n}, -1, 1, DType::f32, gpu);
  auto b = DynTensor::uniform({n}, -1, 1, DType::f32, gpu);
  auto time = [&](const std::function<void()>& f) {
    f();
    gpu.sync();
    (void)cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    const int reps = 10;
    for (int i = 0; i < reps; ++i) f();
    gpu.sync();
    (void)cudaDeviceSynchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
  };
  void *src = nullptr, *dst = nullptr;
  size_t bytes = size_t(n) * 4;
  ASSERT_EQ(cudaMalloc(&src, bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, bytes), cudaSuccess);
  double tc = time([&] { (void)cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice); });
  (void)cudaFree(src);
  (void)cudaFree(dst);
  double ta = time([&] { auto c = add(a, b); });
  double copy_bw = 2.0 * double(bytes) / tc, add_bw = 3.0 * double(bytes) / ta;
  std::printf("copy %.0f GB/s, add f32 %.0f GB/s (%.1f%% of copy)\n", copy_bw / 1e9, add_bw / 1e9,
              100 * add_bw / copy_bw);
  double tg = time([&] { auto c = gelu(a); });
  std::printf("gelu f32 %.0f GB/s\n", 2.0 * double(bytes) / tg / 1e9);
  auto ah = a.cast(DType::f16), bh = b.cast(DType::f16);
  double th = time([&] { auto c = add(ah, bh); });
  std::printf("add f16 %.0f GB/s\n", 3.0 * double(bytes) / 2 / th / 1e9);
  auto row = DynTensor::uniform({4096}, -1, 1, DType::f32, gpu);
  auto a2 = reshape(a, {n / 4096, 4096});
  double tb = time([&] { auto c = add(a2, row); });
  std::printf("add f32 broadcast row %.0f GB/s\n", 2.0 * double(bytes) / tb / 1e9);
  double tz = time([&] { auto c = DynTensor::full({n}, 1.0, DType::f32, gpu); });
  std::printf("full f32 %.0f GB/s\n", double(bytes) / tz / 1e9);
  double tr = time([&] { auto c = DynTensor::normal({n}, 0, 1, DType::f32, gpu); });
  std::printf("normal f32 %.0f GB/s\n", double(bytes) / tr / 1e9);
  EXPECT_GT(add_bw, 0.0);
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

// Fused groups of the fusion decorator (fused.cpp): chains over every family shape, each with
// dense, broadcast and strided inputs, compile for sm_90.
TEST(CudaElementwiseCompile, FusedGroupsCompile) {
  using N = FusedProgram::Node;
  std::vector<cuda::KernelSource> sources;
  auto add = [&](const std::string& name, const FusedProgram& p) {
    for (std::string modes : {std::string(p.inputs.size(), 'd'), std::string(p.inputs.size(), 'g'),
                              std::string(p.inputs.size(), 's')})
      sources.push_back({"fused_test/" + name + "/" + modes, cuda::fused_kernel_source(p, modes)});
  };
  FusedProgram gelu;  // x * 0.5 * (1 + erf(x / sqrt 2))
  gelu.shape = Shape{32, 512, 2048};
  gelu.inputs = {{gelu.shape, DType::f32}, {Shape{}, DType::f32}, {Shape{}, DType::f32}, {Shape{}, DType::f32}};
  gelu.nodes = {N{OpKind::div, NoAttrs{}, {0, ~1}, DType::f32}, N{OpKind::erf, NoAttrs{}, {0}, DType::f32},
                N{OpKind::add, NoAttrs{}, {1, ~2}, DType::f32}, N{OpKind::mul, NoAttrs{}, {~0, ~3}, DType::f32},
                N{OpKind::mul, NoAttrs{}, {3, 2}, DType::f32}};
  gelu.nodes[0].args = {~0, ~1};
  gelu.outputs = {4};
  add("gelu", gelu);
  FusedProgram mixed;  // where(a > b, exp(a), clamp(b, -1.5, 2)) cast to bf16 and back, two outputs
  mixed.shape = Shape{64, 129};
  mixed.inputs = {{Shape{64, 129}, DType::f32}, {Shape{129}, DType::f32}};
  mixed.nodes = {N{OpKind::greater, NoAttrs{}, {~0, ~1}, DType::boolean}, N{OpKind::exp, NoAttrs{}, {~0}, DType::f32},
                 N{OpKind::clamp, ScalarAttrs{-1.5, 2.0}, {~1}, DType::f32},
                 N{OpKind::where, NoAttrs{}, {0, 1, 2}, DType::f32}, N{OpKind::cast, CastAttrs{DType::bf16}, {3}, DType::bf16},
                 N{OpKind::cast, CastAttrs{DType::f32}, {4}, DType::f32}};
  mixed.nodes[2].args = {~1};
  mixed.outputs = {0, 5};
  add("mixed", mixed);
  FusedProgram half;  // f16 and integer chains, pow with a scalar exponent
  half.shape = Shape{3, 5000};
  half.inputs = {{half.shape, DType::f16}, {Shape{1}, DType::f16}, {half.shape, DType::i32}};
  half.nodes = {N{OpKind::pow, NoAttrs{}, {~0, ~1}, DType::f16}, N{OpKind::sigmoid, NoAttrs{}, {0}, DType::f16},
                N{OpKind::bitwise_and, NoAttrs{}, {~2, ~2}, DType::i32}, N{OpKind::cast, CastAttrs{DType::f16}, {2}, DType::f16},
                N{OpKind::mul, NoAttrs{}, {1, 3}, DType::f16}};
  half.outputs = {4};
  add("half", half);

  // row programs (reductions over trailing dims with a prologue and an epilogue), with the
  // per-element values in registers (items > 0), in vectors (vec > 1) or not, and recomputed per
  // pass (items 0)
  auto add_rows = [&](const std::string& name, const FusedProgram& p, const std::vector<std::string>& modes) {
    for (const auto& m : modes)
      for (auto [threads, items, vec, exact] :
           {std::tuple{256, 16, 1, false}, std::tuple{32, 3, 1, true}, std::tuple{1024, 0, 1, false},
            std::tuple{256, 16, 4, false}, std::tuple{256, 16, 4, true}, std::tuple{64, 8, 8, false},
            std::tuple{32, 4, 2, true}})
        sources.push_back({"fused_test/rows/" + name + "/" + m + "/" + std::to_string(threads) + "x" +
                               std::to_string(items) + "v" + std::to_string(vec) + (exact ? "x" : ""),
                           cuda::fused_rows_source(p, m, threads, items, vec, exact)});
  };
  FusedProgram softmax;  // m = max(x); e = exp(x - m); y = e / sum(e)
  softmax.shape = Shape{8192, 4096};
  softmax.reduce_from = 1;
  softmax.reduced_shape = Shape{8192, 1};
  softmax.inputs = {{softmax.shape, DType::f32}};
  const ReduceAttrs last{{1}, true, 2, 1};
  softmax.nodes = {N{OpKind::max, last, {~0}, DType::f32, true}, N{OpKind::sub, NoAttrs{}, {~0, 0}, DType::f32},
                   N{OpKind::exp, NoAttrs{}, {1}, DType::f32}, N{OpKind::sum, last, {2}, DType::f32, true},
                   N{OpKind::div, NoAttrs{}, {2, 3}, DType::f32}};
  softmax.outputs = {4};
  add_rows("softmax", softmax, {"d-", "g-"});
  FusedProgram norm;  // layer norm in bf16: (x - mean) / sqrt(var + eps) * w + b, mean and rstd out
  norm.shape = Shape{4, 8, 512};
  norm.reduce_from = 2;
  norm.reduced_shape = Shape{4, 8, 1};
  norm.inputs = {{norm.shape, DType::bf16}, {Shape{}, DType::bf16}, {Shape{512}, DType::bf16}, {Shape{512}, DType::bf16}};
  const ReduceAttrs last0{{2}, true, 2, 0};
  norm.nodes = {N{OpKind::mean, last0, {~0}, DType::bf16, true}, N{OpKind::var, last0, {~0}, DType::bf16, true},
                N{OpKind::add, NoAttrs{}, {1, ~1}, DType::bf16, true}, N{OpKind::rsqrt, NoAttrs{}, {2}, DType::bf16, true},
                N{OpKind::sub, NoAttrs{}, {~0, 0}, DType::bf16}, N{OpKind::mul, NoAttrs{}, {4, 3}, DType::bf16},
                N{OpKind::mul, NoAttrs{}, {5, ~2}, DType::bf16}, N{OpKind::add, NoAttrs{}, {6, ~3}, DType::bf16}};
  norm.outputs = {7, 0, 3};
  add_rows("layer_norm_bf16", norm, {"d--sc-c-", "g--sg-g-"});
  FusedProgram lse;  // f16 and f64 rows: logsumexp, std, min of a prologue, reduced over two dims, not kept
  lse.shape = Shape{6, 10, 33};
  lse.reduce_from = 1;
  lse.reduced_shape = Shape{6};
  lse.inputs = {{lse.shape, DType::f16}, {Shape{6}, DType::f16}, {lse.shape, DType::f64}};
  const ReduceAttrs two{{1, 2}, false, 2, 1};
  lse.nodes = {N{OpKind::tanh, NoAttrs{}, {~0}, DType::f16}, N{OpKind::logsumexp, two, {0}, DType::f16, true},
               N{OpKind::std, two, {0}, DType::f16, true}, N{OpKind::mul, NoAttrs{}, {1, 2}, DType::f16, true},
               N{OpKind::add, NoAttrs{}, {3, ~1}, DType::f16, true}, N{OpKind::min, two, {~2}, DType::f64, true}};
  lse.outputs = {4, 5};
  add_rows("lse_std_min", lse, {"d--rd-", "g--gg-"});

  // column programs (reductions over leading dims): every entry of the bias gradient, the
  // batch statistics (a reduction reading a finished column in a later sweep) and var / lse
  auto add_cols = [&](const std::string& name, const FusedProgram& p, const std::vector<std::string>& modes) {
    for (const auto& m : modes) sources.push_back({"fused_test/cols/" + name + "/" + m, cuda::fused_cols_source(p, m)});
  };
  FusedProgram bias;  // db = sum(dy * gelu'(x), 0), dy the gradient also stored (a full output)
  bias.shape = Shape{8192, 1024};
  bias.reduce_to = 1;
  bias.reduced_shape = Shape{1024};
  bias.inputs = {{bias.shape, DType::f32}, {bias.shape, DType::f32}, {Shape{}, DType::f32}};
  const ReduceAttrs lead{{0}, false, 2, 1};
  bias.nodes = {N{OpKind::erf, NoAttrs{}, {~1}, DType::f32}, N{OpKind::add, NoAttrs{}, {0, ~2}, DType::f32},
                N{OpKind::mul, NoAttrs{}, {~0, 1}, DType::f32}, N{OpKind::sum, lead, {2}, DType::f32, true},
                N{OpKind::mul, NoAttrs{}, {3, ~2}, DType::f32, true}};
  bias.outputs = {4, 2};
  add_cols("bias_grad", bias, {"d-d-ss", "g-c-ss"});
  FusedProgram bn;  // d = x - mean(x, {0, 2}), v = mean(d * d), y = d * rsqrt(v + eps) * w: bf16, keepdim
  bn.shape = Shape{16, 8, 64};
  bn.reduce_to = 2;
  bn.reduced_shape = Shape{1, 1, 64};
  bn.inputs = {{bn.shape, DType::bf16}, {Shape{}, DType::bf16}, {Shape{64}, DType::bf16}};
  const ReduceAttrs lead2{{0, 1}, true, 2, 1};
  bn.nodes = {
      N{OpKind::mean, lead2, {~0}, DType::bf16, true},       N{OpKind::sub, NoAttrs{}, {~0, 0}, DType::bf16},
      N{OpKind::mul, NoAttrs{}, {1, 1}, DType::bf16},        N{OpKind::mean, lead2, {2}, DType::bf16, true},
      N{OpKind::add, NoAttrs{}, {3, ~1}, DType::bf16, true}, N{OpKind::rsqrt, NoAttrs{}, {4}, DType::bf16, true},
      N{OpKind::mul, NoAttrs{}, {1, 5}, DType::bf16},        N{OpKind::mul, NoAttrs{}, {6, ~2}, DType::bf16}};
  bn.outputs = {7, 3};
  add_cols("batch_norm_bf16", bn, {"d--sc-", "g--sg-", "d--sg-"});
  FusedProgram stats;  // f16 and f64: var, std, logsumexp, max, min over leading dims, epilogue
  stats.shape = Shape{100, 3, 33};
  stats.reduce_to = 1;
  stats.reduced_shape = Shape{3, 33};
  stats.inputs = {{stats.shape, DType::f16}, {Shape{3, 33}, DType::f16}, {stats.shape, DType::f64}};
  stats.nodes = {
      N{OpKind::tanh, NoAttrs{}, {~0}, DType::f16},         N{OpKind::logsumexp, lead, {0}, DType::f16, true},
      N{OpKind::std, lead, {0}, DType::f16, true},          N{OpKind::var, lead, {0}, DType::f16, true},
      N{OpKind::max, lead, {0}, DType::f16, true},          N{OpKind::mul, NoAttrs{}, {1, 2}, DType::f16, true},
      N{OpKind::add, NoAttrs{}, {5, ~1}, DType::f16, true}, N{OpKind::min, lead, {~2}, DType::f64, true}};
  stats.outputs = {6, 3, 4, 7};
  add_cols("var_std_lse_min", stats, {"d--rd-", "g--gg-", "d--sr-"});

  auto errors = compile_all(sources);
  for (const auto& e : errors) ADD_FAILURE() << e;
}

}  // namespace
}  // namespace ember
