// CPU index kernels (gather, scatter, scatter_add, index_select, index_add, index_copy,
// nonzero, masked_select) against naive references: every dtype, i64 and i32 indices,
// strided views, large sizes (parallel paths), in-place reuse and index errors.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <random>

#include "backends/cpu/cpu_tensor.hpp"

namespace ember {
namespace {

const std::vector<DType> kAllDTypes = {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64,
                                       DType::i32, DType::i16, DType::i8,  DType::u8,   DType::boolean};

DynTensor rand_tensor(const Shape& s, DType dt, std::mt19937& g, int lo = -50, int hi = 50) {
  if (dt == DType::boolean) lo = 0, hi = 1;
  if (dt == DType::u8) lo = std::max(lo, 0);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<double> v(size_t(s.numel()));
  for (auto& x : v) x = u(g);
  return DynTensor::from_data(TensorData::from_doubles(v, s, dt));
}
DynTensor index_tensor(const std::vector<int64_t>& v, const Shape& s, DType dt) {
  return DynTensor::from_vector<int64_t>(v, s).cast(dt);
}

std::vector<DynTensor> views(const DynTensor& t) {
  std::vector<DynTensor> out{t};
  if (t.rank() >= 2) out.push_back(transpose(contiguous(transpose(t, 0, -1)), 0, -1));
  if (t.rank() >= 1) out.push_back(select(stack({t, t}, t.rank()), t.rank(), 1));
  return out;
}

std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(size_t(s.rank()));
  for (int d = s.rank() - 1; d >= 0; --d) {
    idx[size_t(d)] = i % s[d];
    i /= s[d];
  }
  return idx;
}
int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t i = 0;
  for (int d = 0; d < s.rank(); ++d) i = i * s[d] + idx[size_t(d)];
  return i;
}

void expect_values(const DynTensor& y, const Shape& shape, DType dt, const std::vector<double>& want,
                   const std::string& what) {
  ASSERT_EQ(y.shape(), shape) << what;
  ASSERT_EQ(y.dtype(), dt) << what;
  auto got = y.to_vector<double>();
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << what << " at " << i;
}

// A sum of small integers stored in `dt` (no overflow in these tests; bool sums saturate).
double in_dtype(double v, DType dt) { return dt == DType::boolean ? double(v != 0) : v; }

const void* buffer_of(const DynTensor& t) { return cpu::as_cpu(t.primitive()).storage->data; }
DynTensor fresh_copy(const DynTensor& x) { return x.rank() ? flip(flip(x, {0}), {0}) : contiguous(x); }
DynTensor run_owned(OpKind kind, std::vector<DynTensor> ts, OpAttrs attrs) {
  std::vector<PrimitivePtr> ps;
  for (auto& t : ts) ps.push_back(std::move(t).take_primitive());
  ts.clear();
  Op op = make_op(kind, std::move(ps), std::move(attrs));
  return DynTensor(Device::cpu().backend().execute(std::move(op))[0], Device::cpu());
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    for (auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << m << " lacks " << p;
  }
}

struct GCase {
  Shape x, index;
  int dim;
};
const std::vector<GCase> kGatherCases = {
    {{5}, {3}, 0},          {{3, 4}, {3, 4}, 0},      {{3, 4}, {2, 6}, 1},      {{3, 4}, {5, 2}, 0},
    {{2, 3, 4}, {2, 2, 3}, 1}, {{2, 3, 4}, {1, 3, 7}, 2}, {{2, 3, 4}, {4, 2, 2}, 0}, {{}, {}, 0},
    {{3, 4}, {0, 4}, 0},    {{300, 200}, {300, 150}, 1}, {{300, 200}, {400, 200}, 0}};

TEST(CpuIndex, Gather) {
  std::mt19937 g(11);
  for (DType dt : kAllDTypes)
    for (DType it : {DType::i64, DType::i32})
      for (auto& c : kGatherCases) {
        if (c.x.numel() > 1000 && dt != DType::f32 && dt != DType::i8 && dt != DType::f16) continue;
        auto x = rand_tensor(c.x, dt, g);
        int64_t n = c.x.rank() ? c.x[c.dim] : 1;
        std::uniform_int_distribution<int64_t> u(0, n - 1);
        std::vector<int64_t> iv(size_t(c.index.numel()));
        for (auto& v : iv) v = u(g);
        auto ix = index_tensor(iv, c.index, it);
        auto xv = x.to_vector<double>();
        std::vector<double> want(iv.size());
        for (int64_t i = 0; i < c.index.numel(); ++i) {
          auto idx = unravel(i, c.index);
          if (c.x.rank()) idx[size_t(c.dim)] = iv[size_t(i)];
          want[size_t(i)] = xv[size_t(ravel(idx, c.x))];
        }
        auto va = views(x), vb = views(ix);
        for (size_t i = 0; i < 3; ++i)
          expect_values(gather(va[i % va.size()], c.dim, vb[i % vb.size()]), c.index, dt, want, "gather " + c.x.str());
      }
  auto x = DynTensor::zeros({3, 4});
  expect_error([&] { gather(x, 1, DynTensor::from_vector<int64_t>({0, 4}, {1, 2})); },
               {"gather", "index 4", "dim 1", "size 4"});
  expect_error([&] { gather(x, 0, DynTensor::from_vector<int64_t>({-1}, {1, 1})); }, {"gather", "index -1", "dim 0"});
}

// scatter: each target written once (a permutation per position); scatter_add: duplicates.
TEST(CpuIndex, ScatterAndScatterAdd) {
  std::mt19937 g(12);
  const std::vector<GCase> cases = {{{5}, {3}, 0},           {{3, 4}, {3, 4}, 0},      {{3, 4}, {2, 3}, 1},
                                    {{4, 3}, {2, 3}, 0},     {{2, 3, 4}, {2, 2, 3}, 1}, {{2, 3, 4}, {1, 3, 4}, 2},
                                    {{}, {}, 0},             {{3, 4}, {0, 4}, 0},      {{200, 300}, {150, 300}, 0},
                                    {{200, 300}, {200, 250}, 1}, {{70000}, {60000}, 0}};
  for (DType dt : kAllDTypes)
    for (DType it : {DType::i64, DType::i32})
      for (auto& c : cases)
        for (bool add : {false, true}) {
          if (c.x.numel() > 1000 && dt != DType::f32 && dt != DType::i32 && dt != DType::bf16) continue;
          auto x = rand_tensor(c.x, dt, g, -3, 3);
          Shape ss = c.index;  // src may be larger than index
          if (ss.rank()) ss[0] += 1;
          auto src = rand_tensor(ss, dt, g, -3, 3);
          int64_t n = c.x.rank() ? c.x[c.dim] : 1;
          std::vector<int64_t> iv(size_t(c.index.numel()));
          const int64_t m = c.index.rank() ? c.index[c.dim] : 1;
          // for each position outside dim, distinct targets (scatter) or random ones (add)
          for (int64_t i = 0; i < c.index.numel(); ++i) {
            auto idx = unravel(i, c.index);
            int64_t k = c.index.rank() ? idx[size_t(c.dim)] : 0;
            iv[size_t(i)] = add ? int64_t(g() % uint64_t(n)) : (k * 7 + (i / (m ? m : 1)) % 3) % n;
          }
          if (!add && m > 1) {  // make them distinct: targets (k + shift) mod n for k < m <= n
            for (int64_t i = 0; i < c.index.numel(); ++i) {
              auto idx = unravel(i, c.index);
              auto j = idx;
              j[size_t(c.dim)] = 0;
              iv[size_t(i)] = (idx[size_t(c.dim)] + ravel(j, c.index) % n) % n;
            }
          }
          auto ix = index_tensor(iv, c.index, it);
          auto xv = x.to_vector<double>(), sv = src.to_vector<double>();
          std::vector<double> want = xv;
          for (int64_t i = 0; i < c.index.numel(); ++i) {
            auto idx = unravel(i, c.index);
            double s = sv[size_t(ravel(idx, ss))];
            if (c.x.rank()) idx[size_t(c.dim)] = iv[size_t(i)];
            double& w = want[size_t(ravel(idx, c.x))];
            w = add ? in_dtype(w + s, dt) : s;
          }
          auto f = [&](const DynTensor& a, const DynTensor& b, const DynTensor& s) {
            return add ? scatter_add(a, c.dim, b, s) : scatter(a, c.dim, b, s);
          };
          std::string what = std::string(add ? "scatter_add " : "scatter ") + c.x.str() + " " + dtype_name(dt).data();
          auto va = views(x), vb = views(ix), vs = views(src);
          for (size_t i = 0; i < 3; ++i)
            expect_values(f(va[i % va.size()], vb[i % vb.size()], vs[i % vs.size()]), c.x, dt, want, what);
          auto fresh = fresh_copy(x);
          const void* buf = buffer_of(fresh);
          std::vector<DynTensor> in;
          in.push_back(std::move(fresh));
          in.push_back(ix);
          in.push_back(src);
          auto y = run_owned(add ? OpKind::scatter_add : OpKind::scatter, std::move(in), DimAttrs{c.dim});
          expect_values(y, c.x, dt, want, what + " in place");
          if (c.x.rank()) {
            EXPECT_EQ(buffer_of(y), buf);
          }
          expect_values(x, c.x, dt, xv, what + " input unchanged");
        }
  auto x = DynTensor::zeros({3, 4});
  expect_error([&] { scatter(x, 0, DynTensor::from_vector<int64_t>({3}, {1, 1}), DynTensor::ones({1, 1})); },
               {"scatter", "index 3", "dim 0", "size 3"});
  expect_error([&] { scatter_add(x, 1, DynTensor::from_vector<int64_t>({-2}, {1, 1}), DynTensor::ones({1, 1})); },
               {"scatter_add", "index -2", "dim 1", "size 4"});
}

TEST(CpuIndex, IndexSelect) {
  std::mt19937 g(13);
  struct C {
    Shape x;
    int dim;
    int64_t n;
  };
  const std::vector<C> cases = {{{5}, 0, 3},         {{3, 4}, 0, 5},         {{3, 4}, 1, 2},
                                {{2, 3, 4}, 1, 4},   {{2, 3, 4}, 2, 6},      {{2, 3, 4}, 0, 0},
                                {{1000, 64}, 0, 3000}, {{64, 1000}, 1, 700}, {{30, 40, 50}, 1, 100}};
  for (DType dt : kAllDTypes)
    for (DType it : {DType::i64, DType::i32})
      for (auto& c : cases) {
        if (c.x.numel() > 1000 && dt != DType::f32 && dt != DType::i8 && dt != DType::f64) continue;
        auto x = rand_tensor(c.x, dt, g);
        std::vector<int64_t> iv(size_t(c.n));
        for (auto& v : iv) v = int64_t(g() % uint64_t(c.x[c.dim]));
        auto ix = index_tensor(iv, {c.n}, it);
        Shape os = c.x;
        os[c.dim] = c.n;
        auto xv = x.to_vector<double>();
        std::vector<double> want(size_t(os.numel()));
        for (int64_t i = 0; i < os.numel(); ++i) {
          auto idx = unravel(i, os);
          idx[size_t(c.dim)] = iv[size_t(idx[size_t(c.dim)])];
          want[size_t(i)] = xv[size_t(ravel(idx, c.x))];
        }
        auto va = views(x), vb = views(ix);
        for (size_t i = 0; i < 3; ++i)
          expect_values(index_select(va[i % va.size()], c.dim, vb[i % vb.size()]), os, dt, want, "index_select");
      }
  // 0-d input, 0-d index
  auto s = DynTensor::full({}, 7.0, DType::f32);
  expect_values(index_select(s, 0, DynTensor::full({}, 0, DType::i64)), {}, DType::f32, {7.0}, "index_select 0-d");
  expect_error([&] { index_select(DynTensor::zeros({3, 4}), 1, DynTensor::from_vector<int64_t>({1, 9}, {2})); },
               {"index_select", "index 9", "dim 1", "size 4"});
  expect_error([&] { index_select(DynTensor::zeros({3, 4}), 0, DynTensor::from_vector<int32_t>({-1}, {1})); },
               {"index_select", "index -1", "dim 0", "size 3"});
}

TEST(CpuIndex, IndexAddAndCopy) {
  std::mt19937 g(14);
  struct C {
    Shape x;
    int dim;
    int64_t n;
  };
  const std::vector<C> cases = {{{5}, 0, 3},       {{3, 4}, 0, 5},      {{3, 4}, 1, 2},       {{2, 3, 4}, 1, 4},
                                {{2, 3, 4}, 2, 3}, {{2, 3, 4}, 0, 0},   {{500, 300}, 0, 400}, {{300, 500}, 1, 200},
                                {{20, 30, 40}, 1, 25}};
  for (DType dt : kAllDTypes)
    for (DType it : {DType::i64, DType::i32})
      for (auto& c : cases)
        for (bool add : {false, true}) {
          if (c.x.numel() > 1000 && dt != DType::f32 && dt != DType::i16) continue;
          const int64_t nd = c.x[c.dim];
          if (!add && c.n > nd) continue;  // index_copy: unique indices
          auto x = rand_tensor(c.x, dt, g, -3, 3);
          std::vector<int64_t> iv(size_t(c.n));
          if (add) {
            for (auto& v : iv) v = int64_t(g() % uint64_t(nd));
          } else {
            std::vector<int64_t> perm(static_cast<size_t>(nd));
            for (int64_t i = 0; i < nd; ++i) perm[size_t(i)] = i;
            std::shuffle(perm.begin(), perm.end(), g);
            for (int64_t i = 0; i < c.n; ++i) iv[size_t(i)] = perm[size_t(i)];
          }
          auto ix = index_tensor(iv, {c.n}, it);
          Shape ss = c.x;
          ss[c.dim] = c.n;
          auto src = rand_tensor(ss, dt, g, -3, 3);
          auto xv = x.to_vector<double>(), sv = src.to_vector<double>();
          std::vector<double> want = xv;
          for (int64_t i = 0; i < ss.numel(); ++i) {
            auto idx = unravel(i, ss);
            idx[size_t(c.dim)] = iv[size_t(idx[size_t(c.dim)])];
            double& w = want[size_t(ravel(idx, c.x))];
            w = add ? in_dtype(w + sv[size_t(i)], dt) : sv[size_t(i)];
          }
          std::string what = std::string(add ? "index_add " : "index_copy ") + c.x.str();
          auto va = views(x), vb = views(ix), vs = views(src);
          for (size_t i = 0; i < 3; ++i) {
            auto &a = va[i % va.size()], &b = vb[i % vb.size()], &s = vs[i % vs.size()];
            expect_values(add ? select_add(a, c.dim, b, s) : select_assign(a, c.dim, b, s), c.x, dt, want, what);
          }
          auto fresh = fresh_copy(x);
          const void* buf = buffer_of(fresh);
          std::vector<DynTensor> in;
          in.push_back(std::move(fresh));
          in.push_back(ix);
          in.push_back(src);
          auto y = run_owned(add ? OpKind::index_add : OpKind::index_copy, std::move(in), DimAttrs{c.dim});
          expect_values(y, c.x, dt, want, what + " in place");
          EXPECT_EQ(buffer_of(y), buf);
        }
  // 0-d
  auto s = DynTensor::full({}, 5.0, DType::f32);
  expect_values(select_add(s, 0, DynTensor::from_vector<int64_t>({0}, {1}), DynTensor::full({}, 2.0, DType::f32)), {},
                DType::f32, {7.0}, "index_add 0-d");
  expect_error([&] { select_add(DynTensor::zeros({3, 4}), 0, DynTensor::from_vector<int64_t>({3}, {1}),
                                DynTensor::zeros({1, 4})); },
               {"index_add", "index 3", "dim 0", "size 3"});
  expect_error([&] { select_assign(DynTensor::zeros({3, 4}), 1, DynTensor::from_vector<int64_t>({-1}, {1}),
                                   DynTensor::zeros({3, 1})); },
               {"index_copy", "index -1", "dim 1", "size 4"});
}

TEST(CpuIndex, Nonzero) {
  std::mt19937 g(15);
  for (DType dt : kAllDTypes)
    for (Shape s : {Shape{}, Shape{7}, Shape{3, 4}, Shape{2, 3, 4}, Shape{0, 3}, Shape{300, 400}, Shape{7, 50, 300}}) {
      if (s.numel() > 1000 && dt != DType::f32 && dt != DType::boolean && dt != DType::bf16) continue;
      auto x = rand_tensor(s, dt, g, -1, 1);
      auto xv = x.to_vector<double>();
      std::vector<double> want;
      int64_t cnt = 0;
      for (int64_t i = 0; i < s.numel(); ++i)
        if (xv[size_t(i)] != 0) {
          auto idx = unravel(i, s);
          for (auto v : idx) want.push_back(double(v));
          ++cnt;
        }
      for (auto& a : views(x)) expect_values(nonzero(a), Shape{cnt, int64_t(s.rank())}, DType::i64, want, "nonzero");
    }
  // NaN counts as nonzero, -0.0 does not
  auto x = DynTensor::from_vector<float>({0.0f, -0.0f, std::nanf(""), 1.0f}, {4});
  expect_values(nonzero(x), {2, 1}, DType::i64, {2, 3}, "nonzero special");
}

TEST(CpuIndex, MaskedSelect) {
  std::mt19937 g(16);
  std::vector<std::pair<Shape, Shape>> cases = {{{}, {}},           {{5}, {5}},          {{3, 4}, {3, 4}},
                                                {{3, 4}, {4}},      {{3, 1}, {3, 4}},    {{2, 3, 4}, {3, 1}},
                                                {{0, 3}, {3}},      {{300, 400}, {300, 400}}, {{300, 1}, {1, 500}}};
  for (DType dt : kAllDTypes)
    for (auto& [xs, ms] : cases) {
      if (xs.numel() > 1000 && dt != DType::f32 && dt != DType::u8) continue;
      auto x = rand_tensor(xs, dt, g);
      auto m = rand_tensor(ms, DType::boolean, g);
      Shape bs = broadcast_shapes(xs, ms, "test");
      auto xb = expand(x, bs.dims()).to_vector<double>();
      auto mb = expand(m, bs.dims()).to_vector<double>();
      std::vector<double> want;
      for (size_t i = 0; i < xb.size(); ++i)
        if (mb[i] != 0) want.push_back(xb[i]);
      auto va = views(x), vb = views(m);
      for (size_t i = 0; i < 3; ++i)
        expect_values(masked_select(va[i % va.size()], vb[i % vb.size()]), Shape{int64_t(want.size())}, dt, want,
                      "masked_select " + bs.str());
    }
}

}  // namespace
}  // namespace ember
