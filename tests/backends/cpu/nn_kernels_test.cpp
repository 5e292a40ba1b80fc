// Pooling, interpolation, normalisation, prelu and attention kernels of the cpu backend
// against direct double-precision references (PyTorch semantics): every float dtype,
// non-contiguous inputs, 1-d / 2-d / 3-d pools, edge cases (ceil_mode, padding divisors,
// NaN, fully masked attention rows), and serial / parallel schedules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ember/backends/cpu.hpp"
#include "ember/ember.hpp"
#include "tensor/dispatch.hpp"

namespace ember {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> random_values(int64_t n, std::mt19937& rng, double lo = -3, double hi = 3) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

// Values rounded to `dt` (the reference sees exactly what the kernel sees).
std::vector<double> rounded(const std::vector<double>& v, DType dt) {
  return TensorData::from_doubles(v, Shape{int64_t(v.size())}, dt).to_doubles();
}

// A tensor with the given (row-major) values; `strided` builds it as a non-contiguous view:
// the last two dims stored swapped and transposed back (rank >= 2) or every other element of
// a longer buffer (rank 1).
DynTensor make_tensor(const std::vector<double>& v, const Shape& s, DType dt, bool strided = false) {
  if (!strided || s.rank() == 0) return DynTensor::from_data(TensorData::from_doubles(v, s, dt));
  const int r = s.rank();
  if (r == 1) {
    std::vector<double> w(v.size() * 2, 123.0);
    for (size_t i = 0; i < v.size(); ++i) w[2 * i] = v[i];
    auto full = DynTensor::from_data(TensorData::from_doubles(w, Shape{int64_t(w.size())}, dt));
    return slice(full, {Slice{0, int64_t(w.size()), 2}});
  }
  std::vector<int64_t> d = s.dims();
  const int64_t R = d[r - 2], C = d[r - 1], mat = R * C;
  std::swap(d[r - 2], d[r - 1]);
  std::vector<double> w(v.size());
  for (size_t b = 0; mat > 0 && b < v.size() / size_t(mat); ++b)
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) w[b * mat + j * R + i] = v[b * mat + i * C + j];
  return transpose(DynTensor::from_data(TensorData::from_doubles(w, Shape(d), dt)), -1, -2);
}

std::pair<double, double> tol(DType dt) {
  switch (dt) {
    case DType::f64: return {1e-10, 1e-11};
    case DType::f32: return {2e-5, 2e-5};
    case DType::f16: return {4e-3, 4e-3};
    case DType::bf16: return {2e-2, 2e-2};
    default: return {0, 0};
  }
}

void expect_close(const DynTensor& got, const std::vector<double>& want, const Shape& shape, DType dt,
                  const std::string& what, double scale = 1) {
  ASSERT_EQ(got.shape(), shape) << what;
  ASSERT_EQ(got.dtype(), dt) << what;
  auto [rt, at] = tol(dt);
  TensorData expected = TensorData::from_doubles(want, shape, dt);
  auto msg = got.into_data().approx_equal(expected, rt * scale, at * scale);
  EXPECT_FALSE(msg.has_value()) << what << ": " << msg.value_or("");
}

void expect_exact(const DynTensor& got, const std::vector<int64_t>& want, const Shape& shape, const std::string& what) {
  ASSERT_EQ(got.shape(), shape) << what;
  ASSERT_EQ(got.dtype(), DType::i64) << what;
  EXPECT_EQ(got.to_vector<int64_t>(), want) << what;
}

const DType kFloats[] = {DType::f32, DType::f64, DType::f16, DType::bf16};

// Runs the body with 1 thread and with the default pool size.
template <class F>
void with_thread_counts(F&& f) {
  int saved = cpu::num_threads();
  for (int n : {1, std::max(2, saved)}) {
    cpu::set_num_threads(n);
    f(n);
  }
  cpu::set_num_threads(saved);
}

// ------------------------------------------------------------------------------ pools

struct PoolCase {
  std::vector<int64_t> lead, in, k, s, p, d;
  bool ceil = false, include_pad = true;
};

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  return o;
}

// Reference pools over [planes, *in] (1 to 3 spatial dims), PyTorch rules.
struct PoolRef {
  std::vector<int64_t> out;
  std::vector<double> avg, maxv;
  std::vector<int64_t> arg;
};

PoolRef pool_reference(const PoolCase& c, const std::vector<double>& x) {
  const int nd = int(c.in.size());
  std::vector<int64_t> in(3, 1), k(3, 1), s(3, 1), p(3, 0), d(3, 1), out(3, 1);
  for (int i = 0; i < nd; ++i) {
    int j = 3 - nd + i;
    in[j] = c.in[i];
    k[j] = c.k[i];
    s[j] = c.s[i];
    p[j] = c.p[i];
    d[j] = c.d[i];
    out[j] = pool_out(in[j], k[j], s[j], p[j], d[j], c.ceil);
  }
  int64_t planes = 1;
  for (int64_t v : c.lead) planes *= v;
  PoolRef r;
  for (int i = 0; i < nd; ++i) r.out.push_back(out[3 - nd + i]);
  const int64_t in_plane = in[0] * in[1] * in[2];
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o0 = 0; o0 < out[0]; ++o0)
      for (int64_t o1 = 0; o1 < out[1]; ++o1)
        for (int64_t o2 = 0; o2 < out[2]; ++o2) {
          int64_t st[3] = {o0 * s[0] - p[0], o1 * s[1] - p[1], o2 * s[2] - p[2]};
          double sum = 0, best = -kInf;
          int64_t cnt_valid = 0, cnt_pad = 1;
          for (int a = 0; a < 3; ++a) {  // taps inside the padded input, per dim
            int64_t n = 0;
            for (int64_t t = 0; t < k[a]; ++t) n += st[a] + t * d[a] < in[a] + p[a];
            cnt_pad *= n;
          }
          // PyTorch's initial argmax: the first non-negative tap position of each dim
          int64_t first[3];
          for (int a = 0; a < 3; ++a) {
            first[a] = st[a];
            while (first[a] < 0) first[a] += d[a];
          }
          int64_t arg = (first[0] * in[1] + first[1]) * in[2] + first[2];
          for (int64_t t0 = 0; t0 < k[0]; ++t0)
            for (int64_t t1 = 0; t1 < k[1]; ++t1)
              for (int64_t t2 = 0; t2 < k[2]; ++t2) {
                int64_t i0 = st[0] + t0 * d[0], i1 = st[1] + t1 * d[1], i2 = st[2] + t2 * d[2];
                if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                int64_t flat = (i0 * in[1] + i1) * in[2] + i2;
                double v = x[size_t(pl * in_plane + flat)];
                sum += v;
                ++cnt_valid;
                if (v > best || std::isnan(v)) {
                  best = v;
                  arg = flat;
                }
              }
          r.avg.push_back(sum / double(c.include_pad ? cnt_pad : cnt_valid));
          r.maxv.push_back(best);
          r.arg.push_back(arg);
        }
  return r;
}

PoolAttrs attrs_of(const PoolCase& c) { return PoolAttrs{c.k, c.s, c.p, c.d, c.ceil, c.include_pad}; }

std::vector<PoolCase> pool_cases() {
  return {
      {{2, 3}, {9}, {3}, {2}, {1}, {1}},
      {{2, 3}, {10}, {3}, {3}, {1}, {1}, true, true},
      {{2, 3}, {10}, {3}, {3}, {1}, {1}, true, false},
      {{1, 1}, {7}, {4}, {2}, {2}, {1}, true, true},
      {{3}, {20}, {4}, {3}, {2}, {1}, true, false},  // [C, L] input
      {{2, 2}, {7, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
      {{2, 2}, {7, 8}, {3, 2}, {2, 3}, {1, 1}, {1, 1}, true, false},
      {{1, 2}, {9, 11}, {3, 2}, {2, 3}, {1, 1}, {1, 1}, true, true},
      {{2, 3}, {40, 50}, {9, 10}, {3, 4}, {4, 5}, {1, 1}, true, true},   // wide windows
      {{2, 3}, {40, 48}, {8, 12}, {8, 12}, {0, 0}, {1, 1}, false, true},
      {{2, 8}, {56, 56}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true},  // parallel rows
      {{3}, {10, 7}, {3, 3}, {2, 2}, {1, 0}, {1, 1}, false, false},     // [C, H, W] input
      {{2, 2}, {5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 1, 0}, {1, 1, 1}, true, false},
  };
}

TEST(NnKernels, AvgPool) {
  std::mt19937 rng(1);
  for (const auto& c : pool_cases())
    for (DType dt : kFloats)
      for (bool strided : {false, true}) {
        Shape xs(c.lead);
        for (int64_t v : c.in) xs.dims().push_back(v);
        auto x = rounded(random_values(xs.numel(), rng), dt);
        PoolRef ref = pool_reference(c, x);
        Shape os(c.lead);
        for (int64_t v : ref.out) os.dims().push_back(v);
        auto y = detail::run1(OpKind::avg_pool, {make_tensor(x, xs, dt, strided)}, attrs_of(c));
        expect_close(y, ref.avg, os, dt, "avg_pool " + xs.str());
      }
}

TEST(NnKernels, MaxPool) {
  std::mt19937 rng(2);
  for (auto c : pool_cases()) {
    c.include_pad = true;
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32, DType::i8, DType::u8})
      for (bool strided : {false, true}) {
        Shape xs(c.lead);
        for (int64_t v : c.in) xs.dims().push_back(v);
        // distinct values (no ties), exactly representable in every dtype
        std::vector<double> x(size_t(xs.numel()));
        for (size_t i = 0; i < x.size(); ++i) x[i] = double(i % 97) - (dt == DType::u8 ? 0 : 48);
        std::shuffle(x.begin(), x.end(), rng);
        PoolRef ref = pool_reference(c, x);
        Shape os(c.lead);
        for (int64_t v : ref.out) os.dims().push_back(v);
        auto r = detail::run_op(OpKind::max_pool, {make_tensor(x, xs, dt, strided)}, attrs_of(c));
        if (is_float(dt)) expect_close(r[0], ref.maxv, os, dt, "max_pool " + xs.str());
        else EXPECT_EQ(r[0].into_data().to_doubles(), ref.maxv) << "max_pool " << xs.str() << " " << dt;
        // with repeated values (x % 97) ties take the first occurrence, like the reference
        expect_exact(r[1], ref.arg, os, "max_pool indices " + xs.str());
      }
  }
}

TEST(NnKernels, MaxPoolDilationAndNaN) {
  PoolCase c{{1, 2}, {9, 9}, {3, 3}, {1, 2}, {1, 0}, {2, 2}};
  std::mt19937 rng(3);
  auto x = random_values(2 * 81, rng);
  x[5] = kNaN;
  x[7] = kNaN;  // two NaNs in one window: the last one's index wins (PyTorch)
  x[100] = kNaN;
  PoolRef ref = pool_reference(c, x);
  auto r = detail::run_op(OpKind::max_pool, {make_tensor(x, Shape{1, 2, 9, 9}, DType::f32)}, attrs_of(c));
  expect_close(r[0], ref.maxv, Shape{1, 2, ref.out[0], ref.out[1]}, DType::f32, "max_pool nan");
  expect_exact(r[1], ref.arg, Shape{1, 2, ref.out[0], ref.out[1]}, "max_pool nan indices");

  // 1-d through the tensor API
  auto y = max_pool1d_with_indices(make_tensor({kNaN, 1, kNaN, 0.5, 9}, Shape{1, 1, 5}, DType::f32),
                                   PoolOptions{.kernel_size = {3}, .stride = {1}, .padding = {1}});
  auto v = y.first.to_vector<float>();
  EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]) && std::isnan(v[2]) && std::isnan(v[3]));
  EXPECT_EQ(v[4], 9.0f);
  EXPECT_EQ(y.second.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 2, 2, 4}));
}

// Bit-identical values, NaN equal to NaN.
bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

// max_pool without indices (PoolAttrs::indices false): one output, whose values are those of the
// indexed op and of the reference loop, on every kernel path (1-d, 2-d, 3-d, ceil_mode, padding,
// dilation, every dtype, strided inputs, NaN inputs, the AVX-512 2x2 kernel, threads).
TEST(NnKernels, MaxPoolValuesOnly) {
  std::mt19937 rng(6);
  auto cases = pool_cases();
  cases.push_back({{2, 3}, {12, 34}, {2, 2}, {2, 2}, {0, 0}, {1, 1}});                   // the 2x2 kernel
  cases.push_back({{1, 2}, {9, 9}, {3, 3}, {1, 2}, {1, 0}, {2, 2}});                     // dilation
  cases.push_back({{1, 4}, {11, 12}, {3, 3}, {2, 2}, {1, 1}, {2, 2}, true});             // dilation, ceil
  cases.push_back({{2}, {9, 8, 10}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 2, 1}, true});  // 3-d, [C, D, H, W]
  for (const auto& c : cases)
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32, DType::i8, DType::u8})
      for (bool nan : {false, true}) {
        if (nan && !is_float(dt)) continue;
        Shape xs(c.lead);
        for (int64_t v : c.in) xs.dims().push_back(v);
        std::vector<double> x(size_t(xs.numel()));
        for (size_t i = 0; i < x.size(); ++i) x[i] = double(i % 97) - (dt == DType::u8 ? 0 : 48);
        std::shuffle(x.begin(), x.end(), rng);
        if (nan)
          for (size_t i = 0; i < x.size(); i += 1 + rng() % 13) x[i] = kNaN;
        PoolRef ref = pool_reference(c, x);
        Shape os(c.lead);
        for (int64_t v : ref.out) os.dims().push_back(v);
        const std::string what =
            "max_pool values only " + xs.str() + " " + std::string(dtype_name(dt)) + (nan ? " with NaN" : "");
        for (bool strided : {false, true}) {
          DynTensor t = make_tensor(x, xs, dt, strided);
          PoolAttrs a = attrs_of(c);
          auto indexed = detail::run_op(OpKind::max_pool, {t}, a);
          a.indices = false;
          auto values = detail::run_op(OpKind::max_pool, {t}, a);
          ASSERT_EQ(values.size(), 1u) << what;
          ASSERT_EQ(values[0].shape(), os) << what;
          ASSERT_EQ(values[0].dtype(), dt) << what;
          const auto got = values[0].into_data().to_doubles();
          EXPECT_TRUE(same_values(got, indexed[0].into_data().to_doubles())) << what;
          EXPECT_TRUE(same_values(got, TensorData::from_doubles(ref.maxv, os, dt).to_doubles())) << what;
        }
      }
  // ResNet's pool over enough rows to run on several threads
  PoolCase c{{4, 16}, {56, 56}, {3, 3}, {2, 2}, {1, 1}, {1, 1}};
  auto x = rounded(random_values(4 * 16 * 56 * 56, rng), DType::f32);
  PoolRef ref = pool_reference(c, x);
  with_thread_counts([&](int n) {
    PoolAttrs a = attrs_of(c);
    a.indices = false;
    auto values = detail::run_op(OpKind::max_pool, {make_tensor(x, Shape{4, 16, 56, 56}, DType::f32)}, a);
    ASSERT_EQ(values.size(), 1u);
    expect_close(values[0], ref.maxv, Shape{4, 16, ref.out[0], ref.out[1]}, DType::f32,
                 "max values threads " + std::to_string(n), 0);
  });
}

TEST(NnKernels, PoolIndicesFlagIsForMaxPoolOnly) {
  PoolAttrs a{{2}, {2}, {0}, {1}};
  a.indices = false;
  DynTensor x = make_tensor({1, 2, 3, 4}, Shape{1, 1, 4}, DType::f32);
  try {
    detail::run1(OpKind::avg_pool, {x}, a);
    FAIL() << "avg_pool took indices=false";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("avg_pool"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("indices"), std::string::npos) << e.what();
  }
  // the tensor API's max_pool1d/2d are the values-only op
  EXPECT_EQ(max_pool1d(x, {.kernel_size = {2}}).to_vector<float>(), (std::vector<float>{2, 4}));
}

TEST(NnKernels, PoolsThreaded) {
  PoolCase c{{4, 16}, {56, 56}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false};
  std::mt19937 rng(4);
  auto x = rounded(random_values(4 * 16 * 56 * 56, rng), DType::f32);
  PoolRef ref = pool_reference(c, x);
  Shape os{4, 16, ref.out[0], ref.out[1]};
  with_thread_counts([&](int n) {
    auto t = make_tensor(x, Shape{4, 16, 56, 56}, DType::f32);
    expect_close(detail::run1(OpKind::avg_pool, {t}, attrs_of(c)), ref.avg, os, DType::f32,
                 "avg threads " + std::to_string(n));
    auto r = detail::run_op(OpKind::max_pool, {t}, attrs_of(c));
    expect_close(r[0], ref.maxv, os, DType::f32, "max threads " + std::to_string(n));
  });
}

// --------------------------------------------------------------------- adaptive_avg_pool

TEST(NnKernels, AdaptiveAvgPool) {
  struct Case {
    std::vector<int64_t> lead, in, out;
  };
  std::vector<Case> cases = {
      {{2, 3}, {8}, {4}},          {{1, 2}, {7}, {3}},           {{1, 2}, {5}, {7}},
      {{2, 2}, {7, 9}, {3, 4}},    {{1, 1}, {5, 5}, {7, 6}},     {{2, 3}, {6, 6}, {1, 1}},
      {{2, 3}, {64, 48}, {4, 3}},  {{2, 5}, {56, 56}, {7, 7}},   {{3}, {40, 30}, {1, 1}},
      {{64, 40}, {7, 7}, {1, 1}},  {{1, 2}, {4, 5, 6}, {2, 3, 4}},
  };
  std::mt19937 rng(5);
  for (const auto& c : cases)
    for (DType dt : kFloats)
      for (bool strided : {false, true}) {
        Shape xs(c.lead), os(c.lead);
        for (int64_t v : c.in) xs.dims().push_back(v);
        for (int64_t v : c.out) os.dims().push_back(v);
        auto x = rounded(random_values(xs.numel(), rng), dt);
        const int nd = int(c.in.size());
        std::vector<int64_t> in(3, 1), out(3, 1);
        for (int i = 0; i < nd; ++i) {
          in[3 - nd + i] = c.in[i];
          out[3 - nd + i] = c.out[i];
        }
        int64_t planes = xs.numel() / (in[0] * in[1] * in[2]);
        std::vector<double> ref;
        for (int64_t p = 0; p < planes; ++p)
          for (int64_t a = 0; a < out[0]; ++a)
            for (int64_t b = 0; b < out[1]; ++b)
              for (int64_t e = 0; e < out[2]; ++e) {
                int64_t lo[3], hi[3], o[3] = {a, b, e};
                for (int k = 0; k < 3; ++k) {
                  lo[k] = o[k] * in[k] / out[k];
                  hi[k] = ((o[k] + 1) * in[k] + out[k] - 1) / out[k];
                }
                double s = 0;
                for (int64_t i = lo[0]; i < hi[0]; ++i)
                  for (int64_t j = lo[1]; j < hi[1]; ++j)
                    for (int64_t l = lo[2]; l < hi[2]; ++l) s += x[size_t(((p * in[0] + i) * in[1] + j) * in[2] + l)];
                ref.push_back(s / double((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2])));
              }
        auto y = detail::run1(OpKind::adaptive_avg_pool, {make_tensor(x, xs, dt, strided)}, ShapeAttrs{Shape(c.out)});
        expect_close(y, ref, os, dt, "adaptive_avg_pool " + xs.str() + " -> " + Shape(c.out).str());
      }
}

// --------------------------------------------------------------------------- interpolate

double cubic_w(double t, int j) {
  const double A = -0.75;
  auto c1 = [A](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  auto c2 = [A](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  switch (j) {
    case 0: return c2(t + 1);
    case 1: return c1(t);
    case 2: return c1(1 - t);
    default: return c2(2 - t);
  }
}

// Per-dim taps (index, weight) of output o, PyTorch's source-index rules.
std::vector<std::pair<int64_t, double>> taps(int64_t o, int64_t in, int64_t out, InterpMode mode, bool ac) {
  if (mode == InterpMode::nearest) {
    float scale = float(in) / float(out);
    return {{std::min(int64_t(std::floor(float(o) * scale)), in - 1), 1.0}};
  }
  double scale = ac ? (out > 1 ? double(in - 1) / double(out - 1) : 0.0) : double(in) / double(out);
  double src = ac ? scale * double(o) : scale * (double(o) + 0.5) - 0.5;
  if (mode == InterpMode::linear) {
    if (src < 0) src = 0;
    int64_t i0 = std::min(int64_t(std::floor(src)), in - 1);
    double l1 = std::clamp(src - double(i0), 0.0, 1.0);
    return {{i0, 1 - l1}, {std::min(i0 + 1, in - 1), l1}};
  }
  int64_t f = int64_t(std::floor(src));
  double t = src - double(f);
  std::vector<std::pair<int64_t, double>> r;
  for (int j = 0; j < 4; ++j) r.push_back({std::clamp<int64_t>(f - 1 + j, 0, in - 1), cubic_w(t, j)});
  return r;
}

TEST(NnKernels, Interpolate) {
  struct Case {
    std::vector<int64_t> in, out;
    InterpMode mode;
    bool ac;
  };
  std::vector<Case> cases = {
      {{5}, {10}, InterpMode::nearest, false},          {{6}, {4}, InterpMode::nearest, false},
      {{4, 5}, {8, 10}, InterpMode::nearest, false},    {{6, 6}, {4, 3}, InterpMode::nearest, false},
      {{3, 4, 5}, {5, 3, 9}, InterpMode::nearest, false}, {{10}, {23}, InterpMode::linear, false},
      {{10}, {23}, InterpMode::linear, true},           {{7, 9}, {13, 5}, InterpMode::linear, false},
      {{7, 9}, {13, 5}, InterpMode::linear, true},      {{1, 1}, {3, 2}, InterpMode::linear, false},
      {{7, 9}, {13, 5}, InterpMode::cubic, false},      {{7, 9}, {13, 5}, InterpMode::cubic, true},
      {{5, 5}, {5, 5}, InterpMode::cubic, false},       {{1, 1}, {3, 2}, InterpMode::cubic, true},
      {{32, 32}, {64, 48}, InterpMode::linear, false},  {{32, 32}, {50, 64}, InterpMode::cubic, false},
  };
  std::mt19937 rng(6);
  for (const auto& c : cases)
    for (DType dt : kFloats)
      for (bool strided : {false, true}) {
        const int nd = int(c.in.size());
        Shape xs{2, 3}, os{2, 3};
        for (int i = 0; i < nd; ++i) {
          xs.dims().push_back(c.in[i]);
          os.dims().push_back(c.out[i]);
        }
        auto x = rounded(random_values(xs.numel(), rng), dt);
        std::vector<int64_t> in(3, 1), out(3, 1);
        for (int i = 0; i < nd; ++i) {
          in[3 - nd + i] = c.in[i];
          out[3 - nd + i] = c.out[i];
        }
        std::vector<double> ref;
        for (int64_t p = 0; p < 6; ++p)
          for (int64_t a = 0; a < out[0]; ++a)
            for (int64_t b = 0; b < out[1]; ++b)
              for (int64_t e = 0; e < out[2]; ++e) {
                auto ta = taps(a, in[0], out[0], in[0] == 1 && out[0] == 1 ? InterpMode::nearest : c.mode, c.ac);
                auto tb = taps(b, in[1], out[1], in[1] == 1 && out[1] == 1 ? InterpMode::nearest : c.mode, c.ac);
                auto te = taps(e, in[2], out[2], c.mode, c.ac);
                double s = 0;
                for (auto [i, wi] : ta)
                  for (auto [j, wj] : tb)
                    for (auto [l, wl] : te) s += wi * wj * wl * x[size_t(((p * in[0] + i) * in[1] + j) * in[2] + l)];
                ref.push_back(s);
              }
        auto y = detail::run1(OpKind::interpolate, {make_tensor(x, xs, dt, strided)},
                              InterpolateAttrs{c.out, c.mode, c.ac});
        expect_close(y, ref, os, dt, "interpolate " + xs.str() + " -> " + os.str(), 2);
      }
}

// ----------------------------------------------------------------- layer_norm, batch_norm

TEST(NnKernels, LayerNorm) {
  struct Case {
    Shape x;
    int axes;
    int affine;  // 0: none, 1: weight, 2: weight + bias, 3: bias only
  };
  std::vector<Case> cases = {{{2, 3, 4}, 1, 2}, {{2, 3, 4}, 2, 2}, {{2, 3, 4}, 1, 0}, {{4, 100}, 1, 2},
                             {{5, 8}, 1, 1},    {{3, 1}, 1, 2},    {{6}, 1, 2},       {{0, 4}, 1, 2},
                             {{7, 33}, 1, 3},   {{300, 256}, 1, 2}, {{3, 5, 6}, 3, 2}};
  std::mt19937 rng(7);
  for (const auto& c : cases)
    for (DType dt : kFloats)
      for (bool strided : {false, true}) {
        auto x = rounded(random_values(c.x.numel(), rng, -1, 3), dt);
        int64_t D = 1;
        for (int i = c.x.rank() - c.axes; i < c.x.rank(); ++i) D *= c.x[i];
        Shape ns(c.x.end() - c.axes, c.x.end());
        auto w = rounded(random_values(D, rng), dt), b = rounded(random_values(D, rng), dt);
        bool hw = c.affine == 1 || c.affine == 2, hb = c.affine >= 2;
        std::vector<double> ref(x.size());
        const double eps = 1e-5;
        for (int64_t r = 0; D > 0 && r < c.x.numel() / D; ++r) {
          double m = 0, v = 0;
          for (int64_t i = 0; i < D; ++i) m += x[size_t(r * D + i)];
          m /= double(D);
          for (int64_t i = 0; i < D; ++i) v += (x[size_t(r * D + i)] - m) * (x[size_t(r * D + i)] - m);
          v /= double(D);
          for (int64_t i = 0; i < D; ++i)
            ref[size_t(r * D + i)] = (x[size_t(r * D + i)] - m) / std::sqrt(v + eps) * (hw ? w[size_t(i)] : 1.0) +
                                     (hb ? b[size_t(i)] : 0.0);
        }
        std::vector<DynTensor> in{make_tensor(x, c.x, dt, strided),
                                  hw ? make_tensor(w, ns, dt, strided) : DynTensor(nullptr, Device::cpu()),
                                  hb ? make_tensor(b, ns, dt) : DynTensor(nullptr, Device::cpu())};
        auto y = detail::run1(OpKind::layer_norm, in, NormAttrs{c.axes, eps});
        expect_close(y, ref, c.x, dt, "layer_norm " + c.x.str(), 4);
      }
}

TEST(NnKernels, BatchNormAndPrelu) {
  std::vector<Shape> shapes = {{2, 3}, {2, 5, 7}, {2, 3, 4, 4}, {1, 5, 2, 2, 2}, {0, 3, 2}, {8, 16, 40, 40}};
  std::mt19937 rng(8);
  for (const Shape& s : shapes)
    for (DType dt : kFloats)
      for (bool strided : {false, true}) {
        int64_t C = s[1], inner = 1;
        for (int i = 2; i < s.rank(); ++i) inner *= s[i];
        auto x = rounded(random_values(s.numel(), rng), dt);
        auto mean = rounded(random_values(C, rng), dt), var = rounded(random_values(C, rng, 0.5, 2), dt);
        auto w = rounded(random_values(C, rng), dt), b = rounded(random_values(C, rng), dt);
        std::vector<double> ref(x.size()), pref(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          size_t c = size_t(int64_t(i) / inner % C);
          ref[i] = (x[i] - mean[c]) / std::sqrt(var[c] + 1e-5) * w[c] + b[c];
          pref[i] = x[i] > 0 ? x[i] : w[c] * x[i];
        }
        auto y = batch_norm(make_tensor(x, s, dt, strided), make_tensor(mean, Shape{C}, dt),
                            make_tensor(var, Shape{C}, dt, strided), make_tensor(w, Shape{C}, dt),
                            make_tensor(b, Shape{C}, dt));
        expect_close(y, ref, s, dt, "batch_norm " + s.str(), 2);
        auto p = prelu(make_tensor(x, s, dt, strided), make_tensor(w, Shape{C}, dt, strided));
        expect_close(p, pref, s, dt, "prelu " + s.str());
        std::vector<double> pref1(x.size());
        for (size_t i = 0; i < x.size(); ++i) pref1[i] = x[i] > 0 ? x[i] : w[0] * x[i];
        auto p1 = prelu(make_tensor(x, s, dt, strided), make_tensor({w[0]}, Shape{1}, dt));
        expect_close(p1, pref1, s, dt, "prelu (one weight) " + s.str());
      }
  // batch_norm without affine parameters; prelu of a 1-d input with NaN and signed zeros
  auto y = batch_norm(make_tensor({1, 2, 3, 4}, Shape{2, 2}, DType::f32), make_tensor({1, 2}, Shape{2}, DType::f32),
                      make_tensor({4, 1}, Shape{2}, DType::f32));
  expect_close(y, {0, 0, 2 / std::sqrt(4 + 1e-5), 2 / std::sqrt(1 + 1e-5)}, Shape{2, 2}, DType::f32, "batch_norm plain");
  auto p = prelu(make_tensor({kNaN, -0.0, 0.0, -2, kInf, -kInf}, Shape{6}, DType::f32),
                 make_tensor({-0.5}, Shape{1}, DType::f32));
  auto v = p.to_vector<float>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 0.0f);
  EXPECT_FALSE(std::signbit(v[1]));  // -0 * -0.5 = +0
  EXPECT_TRUE(std::signbit(v[2]));   // +0 * -0.5 = -0
  EXPECT_EQ(v[3], 1.0f);
  EXPECT_EQ(v[4], INFINITY);
  EXPECT_EQ(v[5], INFINITY);
}

// ----------------------------------------------------------------------------- attention

struct AttnCase {
  Shape batch;
  int64_t L, S, E, Ev;
  int mask;  // 0 none, 1 bool [L, S], 2 float [L, S], 3 bool [B0, 1, L, S], 4 bool with fully masked rows
  bool causal;
  std::optional<double> scale;
};

void run_attention_case(const AttnCase& c, DType dt, bool strided, std::mt19937& rng) {
  Shape qs = c.batch, ks = c.batch, vs = c.batch;
  for (int64_t v : {c.L, c.E}) qs.dims().push_back(v);
  for (int64_t v : {c.S, c.E}) ks.dims().push_back(v);
  for (int64_t v : {c.S, c.Ev}) vs.dims().push_back(v);
  int64_t B = c.batch.numel();
  auto q = rounded(random_values(qs.numel(), rng, -1.5, 1.5), dt);
  auto k = rounded(random_values(ks.numel(), rng, -1.5, 1.5), dt);
  auto v = rounded(random_values(vs.numel(), rng, -1.5, 1.5), dt);
  Shape ms;
  std::vector<double> m;
  int64_t mb = 1;  // mask batches (broadcast over the rest)
  if (c.mask == 1 || c.mask == 2 || c.mask == 4) ms = Shape{c.L, c.S};
  if (c.mask == 3) {
    mb = c.batch[0];
    ms = Shape{mb, 1, c.L, c.S};
  }
  if (c.mask) {
    std::uniform_real_distribution<double> u(0, 1);
    for (int64_t i = 0; i < ms.numel(); ++i) {
      if (c.mask == 2) m.push_back(u(rng) * 4 - 2);
      else m.push_back(u(rng) > 0.3 || i % c.S == 0 ? 1.0 : 0.0);
    }
    if (c.mask == 2) m = rounded(m, dt);
    if (c.mask == 4)
      for (int64_t j = 0; j < c.S; ++j) m[size_t(1 * c.S + j)] = 0;  // query row 1 sees nothing
  }
  const double scale = c.scale ? *c.scale : 1.0 / std::sqrt(double(c.E));
  std::vector<double> ref(size_t(B * c.L * c.Ev)), ref_lse(size_t(B * c.L));
  int64_t per_mask = B / mb;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < c.L; ++i) {
      std::vector<double> s(size_t(c.S));
      double mx = -kInf;
      for (int64_t j = 0; j < c.S; ++j) {
        double d = 0;
        for (int64_t e = 0; e < c.E; ++e) d += q[size_t((b * c.L + i) * c.E + e)] * k[size_t((b * c.S + j) * c.E + e)];
        d *= scale;
        if (c.mask) {
          double mv = m[size_t(((b / per_mask) % mb * c.L + i) * c.S + j)];
          if (c.mask == 2) d += mv;
          else if (mv == 0) d = -kInf;
        }
        if (c.causal && j > i) d = -kInf;
        s[size_t(j)] = d;
        mx = std::max(mx, d);
      }
      double sum = 0;
      for (auto& x : s) sum += (x = std::exp(x - mx));
      ref_lse[size_t(b * c.L + i)] = mx == -kInf ? -kInf : mx + std::log(sum);  // S == 0 too: log 0
      for (int64_t e = 0; e < c.Ev; ++e) {
        double o = 0;
        for (int64_t j = 0; j < c.S; ++j) o += s[size_t(j)] / sum * v[size_t((b * c.S + j) * c.Ev + e)];
        ref[size_t((b * c.L + i) * c.Ev + e)] = c.S == 0 ? 0.0 : (mx == -kInf ? kNaN : o);  // S == 0: empty sum
      }
    }
  std::optional<DynTensor> mt;
  if (c.mask) mt = make_tensor(m, ms, c.mask == 2 ? dt : DType::boolean, strided);
  auto y = scaled_dot_product_attention(make_tensor(q, qs, dt, strided), make_tensor(k, ks, dt, strided),
                                        make_tensor(v, vs, dt, strided), mt, c.causal, c.scale);
  Shape os = qs;
  os[-1] = c.Ev;
  const std::string what = "attention " + qs.str() + " " + ks.str() + " mask " + std::to_string(c.mask);
  expect_close(y, ref, os, dt, what, 2);
  // the op's second output: each row's log-sum-exp, f32 whatever the input dtype
  std::vector<DynTensor> in{make_tensor(q, qs, dt, strided), make_tensor(k, ks, dt, strided),
                            make_tensor(v, vs, dt, strided)};
  if (mt) in.push_back(*mt);
  auto outs = detail::run_op(OpKind::attention, std::move(in),
                     AttentionAttrs{c.causal, c.scale.value_or(std::numeric_limits<double>::quiet_NaN())});
  ASSERT_EQ(outs.size(), 2u) << what;
  Shape ls(qs.begin(), qs.end() - 1);
  expect_close(outs[1], ref_lse, ls, DType::f32, what + " lse", 4);
}

TEST(NnKernels, Attention) {
  std::vector<AttnCase> cases = {
      {{1, 1}, 4, 4, 8, 8, 0, false, {}},     {{2, 3}, 5, 7, 4, 6, 0, false, {}},
      {{2, 2}, 5, 5, 4, 4, 0, true, {}},      {{1, 2}, 4, 6, 8, 8, 0, true, {}},
      {{2, 2}, 4, 6, 4, 5, 1, false, {}},     {{2, 2}, 4, 6, 4, 4, 3, false, {}},
      {{2, 2}, 4, 6, 4, 4, 2, false, 0.3},    {{1, 1}, 5, 16, 16, 16, 0, false, 1.0},
      {{3}, 9, 9, 8, 8, 4, false, {}},        {{4}, 3, 0, 8, 8, 0, false, {}},
      {{2, 2}, 33, 17, 16, 8, 1, true, {}},   {{1, 2}, 150, 130, 32, 16, 0, true, {}},
      {{2}, 200, 90, 16, 24, 2, false, {}},   {{1, 1}, 1, 300, 32, 32, 0, false, {}},
  };
  std::mt19937 rng(9);
  for (const auto& c : cases)
    for (DType dt : kFloats)
      for (bool strided : {false, true}) run_attention_case(c, dt, strided, rng);
}

TEST(NnKernels, AttentionThreaded) {
  std::mt19937 rng(10);
  with_thread_counts([&](int) {
    run_attention_case({{2, 4}, 128, 96, 32, 32, 0, true, {}}, DType::f32, false, rng);
    run_attention_case({{1, 1}, 256, 200, 16, 16, 1, false, {}}, DType::f32, true, rng);
    run_attention_case({{3, 2}, 64, 64, 16, 16, 2, false, {}}, DType::f64, false, rng);
  });
}

}  // namespace
}  // namespace ember
