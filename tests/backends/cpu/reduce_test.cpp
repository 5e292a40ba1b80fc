// CPU reductions, softmax, scans and sort/topk against naive double-precision references, for
// every dtype, strided input views, and sizes large enough to take the parallel / SIMD paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ember/ember.hpp>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>

namespace ember {
namespace {

const std::vector<DType> kAllDTypes = {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64,
                                       DType::i32, DType::i16, DType::i8,  DType::u8,   DType::boolean};
const std::vector<DType> kFloatDTypes = {DType::f64, DType::f32, DType::f16, DType::bf16};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Values exactly representable in every dtype of their kind (small integers, or multiples of
// 1/8 for floats), optionally all distinct (no ties) within the tensor.
DynTensor make(const Shape& s, DType dt, std::mt19937& g, bool distinct = false, double lo = -3, double hi = 3) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  if (distinct) {
    std::iota(v.begin(), v.end(), 0.0);
    std::shuffle(v.begin(), v.end(), g);
    for (auto& x : v) {
      if (is_float(dt)) x = (x - double(v.size()) / 2) / 8;
      else if (dt == DType::u8 || dt == DType::boolean) x = std::fmod(x, dt == DType::u8 ? 256 : 2);
      else if (dt == DType::i8) x = std::fmod(x, 256) - 128;
    }
  } else {
    std::uniform_int_distribution<int> u(int(lo * 8), int(hi * 8));
    for (auto& x : v) {
      x = is_float(dt) ? u(g) / 8.0 : std::round(u(g) / 8.0);
      if (dt == DType::u8) x = std::abs(x);
      if (dt == DType::boolean) x = x > 0;
    }
  }
  return DynTensor::from_data(TensorData::from_doubles(v, s, dt));
}

// The same values behind different layouts: contiguous, a transposed copy viewed back, and a
// view with an inner stride of 2.
std::vector<DynTensor> views(const DynTensor& t) {
  std::vector<DynTensor> out{t};
  if (t.rank() >= 2) out.push_back(transpose(contiguous(transpose(t, 0, -1)), 0, -1));
  if (t.rank() >= 1) out.push_back(select(stack({t, t}, t.rank()), t.rank(), 1));
  return out;
}

// Values of x grouped by output position of a reduction over `dims` (empty = all), each group
// in row-major order of the reduced positions.
std::vector<std::vector<double>> groups(const std::vector<double>& xv, const Shape& s, std::vector<int> dims) {
  int r = s.rank();
  if (dims.empty())
    for (int d = 0; d < r; ++d) dims.push_back(d);
  std::vector<bool> red(size_t(r), false);
  for (int d : dims) red[size_t(d)] = true;
  int64_t out_n = 1;
  for (int d = 0; d < r; ++d)
    if (!red[size_t(d)]) out_n *= s[d];
  std::vector<std::vector<double>> gs(static_cast<size_t>(out_n));
  std::vector<int64_t> idx(size_t(r), 0);
  for (size_t i = 0; i < xv.size(); ++i) {
    int64_t o = 0;
    for (int d = 0; d < r; ++d)
      if (!red[size_t(d)]) o = o * s[d] + idx[size_t(d)];
    gs[size_t(o)].push_back(xv[i]);
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < s[d]) break;
      idx[size_t(d)] = 0;
    }
  }
  return gs;
}

double tol(DType dt) {
  switch (dt) {
    case DType::f64: return 1e-10;
    case DType::f32: return 2e-5;
    case DType::f16: return 4e-3;
    case DType::bf16: return 3e-2;
    default: return 0;
  }
}

void expect_near_all(const DynTensor& y, std::vector<double> want, DType dt, double scale, const std::string& what) {
  ASSERT_EQ(y.numel(), int64_t(want.size())) << what;
  // the reference rounded to the dtype (overflow to inf, underflow to 0)
  if (is_float(dt)) want = TensorData::from_doubles(want, Shape{int64_t(want.size())}, dt).to_doubles();
  auto got = y.to_vector<double>();
  const double t = tol(dt);
  for (size_t i = 0; i < want.size(); ++i) {
    double a = got[i], b = want[i];
    if (std::isnan(b)) {
      EXPECT_TRUE(std::isnan(a)) << what << " [" << i << "] got " << a << " want nan";
    } else if (std::isinf(b)) {
      EXPECT_EQ(a, b) << what << " [" << i << "]";
    } else {
      EXPECT_LE(std::abs(a - b), t * (std::abs(b) + scale)) << what << " [" << i << "] got " << a << " want " << b;
    }
    if (::testing::Test::HasFailure()) return;
  }
}

std::string desc(const char* op, DType dt, const Shape& s, const std::vector<int>& dims, size_t view) {
  std::ostringstream os;
  os << op << " " << dt << " " << s << " dims{";
  for (int d : dims) os << d << ",";
  os << "} view " << view;
  return os.str();
}

double ref_reduce(const std::string& op, const std::vector<double>& g, DType dt, double p = 2, int64_t corr = 1) {
  const double n = double(g.size());
  if (op == "sum") {
    if (!is_float(dt)) {
      int64_t s = 0;
      for (double v : g) s += int64_t(v);
      return double(s);
    }
    return std::accumulate(g.begin(), g.end(), 0.0);
  }
  if (op == "mean") return std::accumulate(g.begin(), g.end(), 0.0) / n;
  if (op == "prod") {
    if (!is_float(dt)) {
      uint64_t s = 1;
      for (double v : g) s *= uint64_t(int64_t(v));
      return double(int64_t(s));
    }
    double s = 1;
    for (double v : g) s *= v;
    return s;
  }
  if (op == "max" || op == "min") {
    double m = g[0];
    for (double v : g) {
      if (std::isnan(v) || std::isnan(m)) m = kNaN;
      else m = op == "max" ? std::max(m, v) : std::min(m, v);
    }
    return m;
  }
  if (op == "any") return std::any_of(g.begin(), g.end(), [](double v) { return v != 0; });
  if (op == "all") return std::all_of(g.begin(), g.end(), [](double v) { return v != 0; });
  if (op == "var" || op == "std") {
    double mu = std::accumulate(g.begin(), g.end(), 0.0) / n, m2 = 0;
    for (double v : g) m2 += (v - mu) * (v - mu);
    double var = m2 / std::max(0.0, n - double(corr));
    return op == "var" ? var : std::sqrt(var);
  }
  if (op == "norm") {
    double s = 0;
    if (std::isinf(p)) {
      s = p > 0 ? 0 : kInf;
      for (double v : g) s = p > 0 ? std::max(s, std::abs(v)) : std::min(s, std::abs(v));
      return s;
    }
    for (double v : g) s += p == 0 ? (v != 0) : std::pow(std::abs(v), p);
    return p == 0 ? s : std::pow(s, 1 / p);
  }
  if (op == "logsumexp") {
    double m = -kInf;
    for (double v : g) m = std::max(m, v);
    if (std::isinf(m)) m = 0;
    double s = 0;
    for (double v : g) s += std::exp(v - m);
    return std::log(s) + m;
  }
  ADD_FAILURE() << "no reference for " << op;
  return 0;
}

DynTensor run_reduce(const std::string& op, const DynTensor& x, const std::vector<int>& dims, bool keepdim,
                     double p = 2, int64_t corr = 1) {
  if (op == "sum") return sum(x, dims, keepdim);
  if (op == "mean") return mean(x, dims, keepdim);
  if (op == "prod") return prod(x, dims, keepdim);
  if (op == "max") return max(x, dims, keepdim);
  if (op == "min") return min(x, dims, keepdim);
  if (op == "any") return any(x, dims, keepdim);
  if (op == "all") return all(x, dims, keepdim);
  if (op == "var") return var(x, dims, corr, keepdim);
  if (op == "std") return stddev(x, dims, corr, keepdim);
  if (op == "norm") return norm(x, p, dims, keepdim);
  return logsumexp(x, dims, keepdim);
}

std::vector<std::vector<int>> dim_sets(int rank) {
  std::vector<std::vector<int>> out{{}};
  for (int d = 0; d < rank; ++d) out.push_back({d});
  if (rank >= 2) out.push_back({0, rank - 1});
  if (rank >= 3) out.push_back({1, 2});
  return out;
}

TEST(CpuReduce, AgainstReference) {
  std::mt19937 gen(7);
  const std::vector<Shape> shapes = {Shape{}, Shape{7}, Shape{5, 7}, Shape{3, 4, 6}, Shape{64, 65}, Shape{300, 130},
                                     Shape{2, 3, 20000}, Shape{20000, 3}};
  const std::vector<std::string> any_ops = {"sum", "prod", "max", "min", "any", "all"};
  const std::vector<std::string> float_ops = {"mean", "var", "std", "norm", "logsumexp"};
  for (DType dt : kAllDTypes) {
    for (const Shape& s : shapes) {
      bool big = s.numel() > 10000;
      if (big && dt != DType::f32 && dt != DType::i32 && dt != DType::bf16) continue;
      for (const std::string& op : any_ops) {
        DynTensor x = op == "prod" ? make(s, dt, gen, false, 0.5, 1.5) : make(s, dt, gen);
        if (op == "prod" && is_float(dt)) x = make(s, dt, gen, false, 0.875, 1.125);
        auto xv = x.to_vector<double>();
        auto vs = views(x);
        for (const auto& dims : dim_sets(s.rank())) {
          if (big && dims.size() > 1) continue;
          auto gs = groups(xv, s, dims);
          std::vector<double> want;
          double scale = 1;
          for (auto& g : gs) want.push_back(ref_reduce(op, g, dt));
          if (op == "sum") scale = 4 * std::sqrt(double(xv.size()));
          if (op == "prod" && is_float(dt)) scale = 0;
          for (size_t v = 0; v < vs.size(); ++v) {
            DynTensor y = run_reduce(op, vs[v], dims, false);
            if (op == "prod" && is_float(dt)) {  // relative tolerance grows with the count
              auto got = y.to_vector<double>();
              // the reference rounded to the dtype (long products underflow in f32/f16/bf16)
              want = TensorData::from_doubles(want, Shape{int64_t(want.size())}, dt).to_doubles();
              for (size_t i = 0; i < want.size(); ++i)
                ASSERT_NEAR(got[i], want[i], tol(dt) * std::abs(want[i]) * (1 + double(gs[i].size()) / 4))
                    << desc(op.c_str(), dt, s, dims, v);
              continue;
            }
            expect_near_all(y, want, dt, scale, desc(op.c_str(), dt, s, dims, v));
            if (HasFailure()) return;
          }
        }
      }
      if (!is_float(dt)) continue;
      for (const std::string& op : float_ops) {
        DynTensor x = make(s, dt, gen);
        auto xv = x.to_vector<double>();
        auto vs = views(x);
        std::vector<double> ps = {2};
        if (op == "norm") ps = {0, 1, 2, 3, kInf, -kInf, 0.5};
        std::vector<int64_t> corrs = {1};
        if (op == "var" || op == "std") corrs = {0, 1, 2};
        for (const auto& dims : dim_sets(s.rank())) {
          if (big && dims.size() > 1) continue;
          auto gs = groups(xv, s, dims);
          for (double p : ps)
            for (int64_t c : corrs) {
              std::vector<double> want;
              for (auto& g : gs) want.push_back(ref_reduce(op, g, dt, p, c));
              for (size_t v = 0; v < vs.size(); ++v) {
                DynTensor y = run_reduce(op, vs[v], dims, true, p, c);
                expect_near_all(y, want, dt, 1, desc(op.c_str(), dt, s, dims, v) + " p=" + std::to_string(p));
                if (HasFailure()) return;
              }
            }
        }
      }
    }
  }
}

TEST(CpuReduce, ArgExtremes) {
  std::mt19937 gen(3);
  const std::vector<Shape> shapes = {Shape{}, Shape{7}, Shape{5, 7}, Shape{3, 4, 6}, Shape{64, 65}, Shape{300, 300}};
  for (DType dt : kAllDTypes) {
    for (const Shape& s : shapes) {
      if (s.numel() > 10000 && dt != DType::f32 && dt != DType::i32) continue;
      DynTensor x = make(s, dt, gen, /*distinct=*/dt != DType::boolean);
      auto xv = x.to_vector<double>();
      auto vs = views(x);
      std::vector<std::vector<int>> dsets{{}};
      for (int d = 0; d < s.rank(); ++d) dsets.push_back({d});
      for (const auto& dims : dsets) {
        auto gs = groups(xv, s, dims);
        for (bool is_max : {true, false}) {
          std::vector<double> wi, wv;
          for (auto& g : gs) {
            size_t best = 0;
            for (size_t i = 1; i < g.size(); ++i)
              if (is_max ? g[i] > g[best] : g[i] < g[best]) best = i;
            wi.push_back(double(best));
            wv.push_back(g[best]);
          }
          for (size_t v = 0; v < vs.size(); ++v) {
            std::optional<int> dim;
            if (!dims.empty()) dim = dims[0];
            DynTensor yi = is_max ? argmax(vs[v], dim) : argmin(vs[v], dim);
            expect_near_all(yi, wi, DType::i64, 0, desc(is_max ? "argmax" : "argmin", dt, s, dims, v));
            if (!dims.empty()) {
              auto [val, idx] = is_max ? max_dim(vs[v], dims[0], true) : min_dim(vs[v], dims[0], true);
              expect_near_all(val, wv, dt, 0, desc("max_dim/min_dim values", dt, s, dims, v));
              expect_near_all(idx, wi, DType::i64, 0, desc("max_dim/min_dim indices", dt, s, dims, v));
            }
            if (HasFailure()) return;
          }
        }
      }
    }
  }
}

TEST(CpuReduce, EdgeCases) {
  auto f32 = [](std::vector<double> v, Shape s) {
    return DynTensor::from_data(TensorData::from_doubles(v, std::move(s), DType::f32));
  };
  // NaN propagates through max/min; arg ops return the first NaN; ties give the first index
  DynTensor x = f32({1, kNaN, 3, kNaN, kInf, 2, -kInf, 0}, {2, 4});
  EXPECT_TRUE(std::isnan(max(x).item()));
  EXPECT_EQ(max(x, {1}).to_vector<double>()[1], kInf);
  EXPECT_EQ(argmax(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(argmin(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  DynTensor ties = f32({1, 3, 3, 0, 2, 2, 2, 2, -1, 5, -1, 5}, {3, 4});
  EXPECT_EQ(argmax(ties, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(argmax(ties, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0, 2}));
  EXPECT_EQ(argmax(ties).item(), 9);
  // a NaN deep inside a long contiguous run (SIMD path)
  std::vector<double> longv(5000, 1.0);
  longv[3000] = kNaN;
  longv[4000] = 7;
  EXPECT_EQ(argmax(f32(longv, {5000})).item(), 3000);
  EXPECT_EQ(argmin(f32(longv, {5000})).item(), 3000);
  longv[3000] = 7;
  EXPECT_EQ(argmax(f32(longv, {5000})).item(), 3000);
  // empty reductions
  DynTensor e = f32({}, {0, 3});
  EXPECT_EQ(sum(e, {0}).to_vector<double>(), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(prod(e, {0}).to_vector<double>(), (std::vector<double>{1, 1, 1}));
  EXPECT_TRUE(std::isnan(mean(e).item()));
  EXPECT_TRUE(std::isnan(var(e, {0}).to_vector<double>()[0]));
  EXPECT_EQ(logsumexp(e, {0}).to_vector<double>()[0], -kInf);
  EXPECT_EQ(any(e).item(), 0);
  EXPECT_EQ(all(e).item(), 1);
  EXPECT_EQ(norm(e, 2).item(), 0);
  EXPECT_THROW(norm(e, kInf), Error);
  EXPECT_THROW(max(e), Error);
  // var / std corrections
  EXPECT_TRUE(std::isnan(var(f32({1}, {1})).item()));
  EXPECT_EQ(var(f32({1, 2}, {2}), {0}, 2).item(), kInf);
  EXPECT_TRUE(std::isnan(var(f32({1, 1}, {2}), {0}, 3).item()));
  // logsumexp stability and infinities
  DynTensor l = f32({1000, 999, 0, -kInf, -kInf, -kInf, kInf, 1, 0}, {3, 3});
  auto lv = logsumexp(l, {1}).to_vector<double>();
  EXPECT_NEAR(lv[0], 1000.3132617, 1e-3);
  EXPECT_EQ(lv[1], -kInf);
  EXPECT_EQ(lv[2], kInf);
  // integer sums and products widen to i64
  DynTensor b = DynTensor::from_data(TensorData::from_doubles({1, 1, 0, 1}, {4}, DType::boolean));
  EXPECT_EQ(sum(b).dtype(), DType::i64);
  EXPECT_EQ(sum(b).item(), 3);
  DynTensor i8 = DynTensor::from_data(TensorData::from_doubles({100, 100, 100}, {3}, DType::i8));
  EXPECT_EQ(sum(i8).item(), 300);
  EXPECT_EQ(prod(i8).item(), 1000000);
  // norm variants incl. NaN (counted as nonzero by the 0-norm)
  DynTensor nv = f32({0, -2, 3, 0}, {4});
  EXPECT_EQ(norm(nv, 0).item(), 2);
  EXPECT_EQ(norm(nv, 1).item(), 5);
  EXPECT_NEAR(norm(nv, 2).item(), std::sqrt(13.0), 1e-6);
  EXPECT_EQ(norm(nv, kInf).item(), 3);
  EXPECT_EQ(norm(nv, -kInf).item(), 0);
  EXPECT_EQ(norm(f32({1, kNaN, -5}, {3}), 0).item(), 3);
  EXPECT_TRUE(std::isnan(norm(f32({1, kNaN, -5}, {3}), kInf).item()));
}

TEST(CpuSoftmax, AgainstReference) {
  std::mt19937 gen(11);
  const std::vector<Shape> shapes = {Shape{}, Shape{5}, Shape{3, 5}, Shape{2, 3, 4}, Shape{4, 1000}, Shape{300, 130},
                                     Shape{2, 70, 300}};
  for (DType dt : kFloatDTypes) {
    for (const Shape& s : shapes) {
      DynTensor x = make(s, dt, gen, false, -6, 6);
      auto xv = x.to_vector<double>();
      auto vs = views(x);
      for (int dim = 0; dim < std::max(1, s.rank()); ++dim) {
        // reference: per slice along dim
        std::vector<double> sm(xv.size()), lsm(xv.size());
        int64_t inner = 1, size = s.rank() ? s[dim] : 1;
        for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
        for (size_t o = 0; o < xv.size() / size_t(size * inner); ++o)
          for (int64_t i = 0; i < inner; ++i) {
            double m = -kInf, t = 0;
            auto at = [&](int64_t j) { return size_t((int64_t(o) * size + j) * inner + i); };
            for (int64_t j = 0; j < size; ++j) m = std::max(m, xv[at(j)]);
            for (int64_t j = 0; j < size; ++j) t += std::exp(xv[at(j)] - m);
            for (int64_t j = 0; j < size; ++j) {
              sm[at(j)] = std::exp(xv[at(j)] - m) / t;
              lsm[at(j)] = xv[at(j)] - m - std::log(t);
            }
          }
        for (size_t v = 0; v < vs.size(); ++v) {
          expect_near_all(softmax(vs[v], dim), sm, dt, 1e-3, desc("softmax", dt, s, {dim}, v));
          expect_near_all(log_softmax(vs[v], dim), lsm, dt, 1, desc("log_softmax", dt, s, {dim}, v));
          if (HasFailure()) return;
        }
      }
    }
  }
  // non-finite inputs: torch's results
  DynTensor x = DynTensor::from_data(
      TensorData::from_doubles({-kInf, -kInf, kInf, 1, -kInf, 0, kNaN, 1}, {4, 2}, DType::f32));
  auto y = softmax(x, 1).to_vector<double>();
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]) && std::isnan(y[2]) && std::isnan(y[3]));
  EXPECT_EQ(y[4], 0);
  EXPECT_EQ(y[5], 1);
  EXPECT_TRUE(std::isnan(y[6]) && std::isnan(y[7]));
  auto ly = log_softmax(x, 1).to_vector<double>();
  EXPECT_EQ(ly[4], -kInf);
  EXPECT_EQ(ly[5], 0);
}

TEST(CpuScan, AgainstReference) {
  std::mt19937 gen(5);
  const std::vector<Shape> shapes = {Shape{}, Shape{9}, Shape{3, 5}, Shape{2, 3, 4}, Shape{300, 130}};
  for (DType dt : kAllDTypes) {
    for (const Shape& s : shapes) {
      for (int dim = 0; dim < std::max(1, s.rank()); ++dim) {
        int64_t inner = 1, size = s.rank() ? s[dim] : 1;
        for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
        for (const char* op : {"cumsum", "cumprod", "cummax", "cummin"}) {
          const bool ext = std::string(op) == "cummax" || std::string(op) == "cummin";
          if (ext && dt == DType::boolean) continue;
          DynTensor x = std::string(op) == "cumprod" ? make(s, dt, gen, false, 0.875, 1.125)
                        : ext                        ? make(s, dt, gen, true)
                                                     : make(s, dt, gen);
          if (std::string(op) == "cumprod" && !is_float(dt)) x = make(s, dt, gen, false, 0, 1.5);
          auto xv = x.to_vector<double>();
          std::vector<double> want(xv.size()), wi(xv.size());
          for (size_t o = 0; o < xv.size() / size_t(std::max<int64_t>(1, size * inner)); ++o)
            for (int64_t i = 0; i < inner; ++i) {
              double acc = 0;
              int64_t ai = 0;
              uint64_t iacc = std::string(op) == "cumprod" ? 1 : 0;
              for (int64_t j = 0; j < size; ++j) {
                size_t at = size_t((int64_t(o) * size + j) * inner + i);
                double v = xv[at];
                if (std::string(op) == "cumsum") {
                  acc = j ? acc + v : v;
                  iacc += uint64_t(int64_t(v));
                } else if (std::string(op) == "cumprod") {
                  acc = j ? acc * v : v;
                  iacc *= uint64_t(int64_t(v));
                } else if (j == 0 || (std::string(op) == "cummax" ? v >= acc : v <= acc)) {
                  acc = v;
                  ai = j;
                }
                want[at] = ext || is_float(dt) ? acc : double(int64_t(iacc));
                wi[at] = double(ai);
              }
            }
          auto vs = views(x);
          for (size_t v = 0; v < vs.size(); ++v) {
            std::string what = desc(op, dt, s, {dim}, v);
            if (std::string(op) == "cumsum") {
              expect_near_all(cumsum(vs[v], dim), want, dt, 8, what);
            } else if (std::string(op) == "cumprod") {
              expect_near_all(cumprod(vs[v], dim), want, dt, 1, what);
            } else {
              auto [val, idx] = std::string(op) == "cummax" ? cummax(vs[v], dim) : cummin(vs[v], dim);
              expect_near_all(val, want, dt, 0, what);
              expect_near_all(idx, wi, DType::i64, 0, what);
            }
            if (HasFailure()) return;
          }
        }
      }
    }
  }
  // torch's NaN rule: a NaN becomes the running extreme and every new NaN takes the index
  DynTensor x = DynTensor::from_data(
      TensorData::from_doubles({1, 3, 3, 2, 3, kNaN, 1, kNaN, 5}, {9}, DType::f32));
  auto [v, i] = cummax(x, 0);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 2, 4, 5, 5, 7, 7}));
  EXPECT_TRUE(std::isnan(v.to_vector<double>()[8]));
}

TEST(CpuSort, AgainstReference) {
  std::mt19937 gen(9);
  const std::vector<Shape> shapes = {Shape{}, Shape{1}, Shape{9}, Shape{3, 5}, Shape{2, 3, 4}, Shape{300, 130},
                                     Shape{4, 1000}};
  for (DType dt : kAllDTypes) {
    for (const Shape& s : shapes) {
      DynTensor x = make(s, dt, gen);  // many ties: checks stability
      auto xv = x.to_vector<double>();
      auto vs = views(x);
      for (int dim = 0; dim < std::max(1, s.rank()); ++dim) {
        int64_t inner = 1, size = s.rank() ? s[dim] : 1;
        for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
        for (bool desc_order : {false, true}) {
          std::vector<double> want(xv.size()), wi(xv.size());
          for (size_t o = 0; o < xv.size() / size_t(size * inner); ++o)
            for (int64_t i = 0; i < inner; ++i) {
              std::vector<int64_t> perm(static_cast<size_t>(size));
              std::iota(perm.begin(), perm.end(), 0);
              auto at = [&](int64_t j) { return size_t((int64_t(o) * size + j) * inner + i); };
              std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
                return desc_order ? xv[at(a)] > xv[at(b)] : xv[at(a)] < xv[at(b)];
              });
              for (int64_t j = 0; j < size; ++j) {
                want[at(j)] = xv[at(perm[size_t(j)])];
                wi[at(j)] = double(perm[size_t(j)]);
              }
            }
          for (size_t v = 0; v < vs.size(); ++v) {
            auto [val, idx] = sort(vs[v], dim, desc_order);
            std::string what = desc("sort", dt, s, {dim}, v);
            expect_near_all(val, want, dt, 0, what);
            expect_near_all(idx, wi, DType::i64, 0, what);
            if (HasFailure()) return;
          }
        }
      }
      // topk on tie-free data
      if (s.rank() == 0 || dt == DType::boolean) continue;
      DynTensor xd = make(s, dt, gen, true);
      auto xdv = xd.to_vector<double>();
      int dim = s.rank() - 1;
      int64_t size = s[dim];
      for (int64_t k : {int64_t(0), std::min<int64_t>(1, size), std::min<int64_t>(3, size), size}) {
        for (bool largest : {true, false}) {
          std::vector<double> want, wi;
          for (size_t o = 0; o < xdv.size() / size_t(size); ++o) {
            std::vector<int64_t> perm(static_cast<size_t>(size));
            std::iota(perm.begin(), perm.end(), 0);
            std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
              double va = xdv[o * size_t(size) + size_t(a)], vb = xdv[o * size_t(size) + size_t(b)];
              return largest ? va > vb : va < vb;
            });
            for (int64_t j = 0; j < k; ++j) {
              want.push_back(xdv[o * size_t(size) + size_t(perm[size_t(j)])]);
              wi.push_back(double(perm[size_t(j)]));
            }
          }
          for (const auto& xvw : views(xd)) {
            auto [val, idx] = topk(xvw, k, dim, largest);
            std::string what = desc("topk", dt, s, {dim}, 0) + " k=" + std::to_string(k);
            expect_near_all(val, want, dt, 0, what);
            expect_near_all(idx, wi, DType::i64, 0, what);
            if (HasFailure()) return;
          }
        }
      }
    }
  }
  // NaN sorts above +inf; -0.0 and 0.0 are equal (stable)
  for (DType dt : kFloatDTypes) {
    DynTensor x = DynTensor::from_data(
        TensorData::from_doubles({3, kNaN, -kInf, 1, kNaN, kInf, -0.0, 0.0, 1, -2}, {10}, dt));
    EXPECT_EQ(sort(x, 0, false).second.to_vector<int64_t>(),
              (std::vector<int64_t>{2, 9, 6, 7, 3, 8, 0, 5, 1, 4}))
        << dt;
    EXPECT_EQ(sort(x, 0, true).second.to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 5, 0, 3, 8, 6, 7, 9, 2}))
        << dt;
    EXPECT_EQ(topk(x, 3, 0, true).second.to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 5})) << dt;
    EXPECT_EQ(topk(x, 3, 0, false).second.to_vector<int64_t>(), (std::vector<int64_t>{2, 9, 6})) << dt;
  }
}

}  // namespace
}  // namespace ember
