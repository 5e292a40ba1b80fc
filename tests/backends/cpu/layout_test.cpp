// CPU layout kernels (contiguous, flip, roll, cat, pad, tril/triu, slice_assign) against naive
// references, for every dtype, strided input views and sizes large enough to run in parallel.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <random>

#include "backends/cpu/cpu_tensor.hpp"

namespace ember {
namespace {

const std::vector<DType> kAllDTypes = {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64,
                                       DType::i32, DType::i16, DType::i8,  DType::u8,   DType::boolean};

DynTensor rand_tensor(const Shape& s, DType dt, std::mt19937& g) {
  std::uniform_int_distribution<int> u(dt == DType::boolean ? 0 : -50, dt == DType::boolean ? 1 : 50);
  std::vector<double> v(size_t(s.numel()));
  for (auto& x : v) x = dt == DType::u8 ? std::abs(u(g)) : u(g);
  return DynTensor::from_data(TensorData::from_doubles(v, s, dt));
}

// A fresh, unshared copy (the op may reuse its buffer), and its buffer address.
DynTensor fresh_copy(const DynTensor& x) { return x.rank() ? flip(flip(x, {0}), {0}) : contiguous(x); }
const void* buffer_of(const DynTensor& t) { return cpu::as_cpu(t.primitive()).storage->data; }
// Runs an op on the cpu backend holding no other reference to the inputs (so that kernels
// may reuse input 0's buffer).
DynTensor run_owned(OpKind kind, std::vector<DynTensor> ts, OpAttrs attrs) {
  std::vector<PrimitivePtr> ps;
  for (auto& t : ts) ps.push_back(std::move(t).take_primitive());
  ts.clear();
  Op op = make_op(kind, std::move(ps), std::move(attrs));
  return DynTensor(Device::cpu().backend().execute(std::move(op))[0], Device::cpu());
}

// The same values behind different layouts: contiguous, a transposed copy viewed back, and a
// view with an inner stride of 2.
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

TEST(CpuLayout, Contiguous) {
  std::mt19937 g(1);
  for (DType dt : kAllDTypes)
    for (Shape s : {Shape{}, Shape{7}, Shape{3, 5}, Shape{2, 3, 4}, Shape{67, 129}, Shape{3, 70, 90}}) {
      auto x = rand_tensor(s, dt, g);
      auto v = x.to_vector<double>();
      for (auto& xv : views(x)) expect_values(contiguous(xv), s, dt, v, "contiguous");
      if (s.rank() >= 2) {  // a real transpose (tiled path for large ones)
        auto t = contiguous(transpose(x, 0, -1));
        auto tv = t.to_vector<double>();
        Shape ts = t.shape();
        std::vector<double> want(v.size());
        for (int64_t i = 0; i < s.numel(); ++i) {
          auto idx = unravel(i, ts);
          std::swap(idx.front(), idx.back());
          want[size_t(i)] = v[size_t(ravel(idx, s))];
        }
        expect_values(t, ts, dt, want, "contiguous(transpose)");
      }
    }
}

TEST(CpuLayout, Flip) {
  std::mt19937 g(2);
  std::vector<std::pair<Shape, Dims>> cases = {{{5}, {0}},          {{3, 4}, {0}},         {{3, 4}, {1}},
                                               {{3, 4}, {0, -1}},   {{2, 3, 4}, {1}},      {{2, 3, 4}, {0, 2}},
                                               {{0, 3}, {0}},       {{}, {}},              {{300, 257}, {1}},
                                               {{64, 33, 40}, {0, 1, 2}}};
  for (DType dt : kAllDTypes)
    for (auto& [s, dims] : cases) {
      auto x = rand_tensor(s, dt, g);
      auto v = x.to_vector<double>();
      std::vector<double> want(v.size());
      for (int64_t i = 0; i < s.numel(); ++i) {
        auto idx = unravel(i, s);
        for (int d : dims) {
          int dd = d < 0 ? d + s.rank() : d;
          idx[size_t(dd)] = s[dd] - 1 - idx[size_t(dd)];
        }
        want[size_t(i)] = v[size_t(ravel(idx, s))];
      }
      for (auto& xv : views(x)) expect_values(flip(xv, dims), s, dt, want, "flip " + s.str());
    }
  EXPECT_THROW(flip(DynTensor::zeros({2, 2}), {0, 0}), Error);
}

TEST(CpuLayout, Roll) {
  std::mt19937 g(3);
  struct C {
    Shape s;
    Sizes shifts;
    Dims dims;
  };
  std::vector<C> cases = {{{5}, {2}, {0}},           {{5}, {-7}, {0}},         {{3, 4}, {1}, {}},
                          {{3, 4}, {1, -1}, {0, 1}}, {{3, 4}, {5}, {1}},       {{2, 3, 4}, {1, 2}, {0, 2}},
                          {{2, 3, 4}, {1, 1}, {1, 1}}, {{0, 3}, {1}, {1}},     {{400, 300}, {123, -45}, {0, 1}},
                          {{2, 3, 4}, {13}, {}}};
  for (DType dt : kAllDTypes)
    for (auto& c : cases) {
      auto x = rand_tensor(c.s, dt, g);
      auto v = x.to_vector<double>();
      std::vector<double> want(v.size());
      const Shape& s = c.s;
      for (int64_t i = 0; i < s.numel(); ++i) {
        if (c.dims.empty()) {
          int64_t n = s.numel();
          want[size_t(i)] = v[size_t((((i - c.shifts[0]) % n) + n) % n)];
          continue;
        }
        auto idx = unravel(i, s);
        for (size_t k = 0; k < c.dims.size(); ++k) {
          int d = c.dims[k];
          idx[size_t(d)] = (((idx[size_t(d)] - c.shifts[k]) % s[d]) + s[d]) % s[d];
        }
        want[size_t(i)] = v[size_t(ravel(idx, s))];
      }
      for (auto& xv : views(x)) expect_values(roll(xv, c.shifts, c.dims), s, dt, want, "roll " + s.str());
    }
}

TEST(CpuLayout, Cat) {
  std::mt19937 g(4);
  struct C {
    std::vector<Shape> shapes;
    int dim;
  };
  std::vector<C> cases = {{{{3}, {4}}, 0},
                          {{{2, 3}, {4, 3}, {1, 3}}, 0},
                          {{{2, 3}, {2, 1}, {2, 0}, {2, 5}}, 1},
                          {{{2, 3, 4}, {2, 2, 4}}, 1},
                          {{{2, 3, 4}, {2, 3, 1}}, -1},
                          {{{500, 70}, {500, 30}, {500, 1}}, 1},
                          {{{300, 200}, {100, 200}}, 0},
                          {{{5}}, 0}};
  for (DType dt : kAllDTypes)
    for (auto& c : cases) {
      std::vector<DynTensor> xs;
      for (auto& s : c.shapes) xs.push_back(rand_tensor(s, dt, g));
      int dim = c.dim < 0 ? c.dim + c.shapes[0].rank() : c.dim;
      Shape os = c.shapes[0];
      os[dim] = 0;
      for (auto& s : c.shapes) os[dim] += s[dim];
      std::vector<double> want(size_t(os.numel()));
      int64_t base = 0;
      for (size_t k = 0; k < xs.size(); ++k) {
        auto v = xs[k].to_vector<double>();
        for (int64_t i = 0; i < c.shapes[k].numel(); ++i) {
          auto idx = unravel(i, c.shapes[k]);
          idx[size_t(dim)] += base;
          want[size_t(ravel(idx, os))] = v[size_t(i)];
        }
        base += c.shapes[k][dim];
      }
      expect_values(cat(xs, c.dim), os, dt, want, "cat");
      for (size_t k = 0; k < xs.size(); ++k) {  // one strided input at a time
        for (auto& xv : views(xs[k])) {
          auto ys = xs;
          ys[k] = xv;
          expect_values(cat(ys, c.dim), os, dt, want, "cat strided");
        }
      }
    }
}

int64_t pad_src(PadMode mode, int64_t lo, int64_t n, int64_t o) {
  int64_t j = o - lo;
  if (mode == PadMode::constant) return j >= 0 && j < n ? j : -1;
  if (mode == PadMode::reflect) return j < 0 ? -j : (j >= n ? 2 * (n - 1) - j : j);
  return std::clamp<int64_t>(j, 0, n - 1);
}

TEST(CpuLayout, Pad) {
  std::mt19937 g(5);
  struct C {
    Shape s;
    Sizes pads;  // torch order
    PadMode mode;
    double value;
  };
  std::vector<C> cases = {{{5}, {2, 3}, PadMode::constant, 1.0},
                          {{3, 4}, {1, 2}, PadMode::constant, 2.0},
                          {{3, 4}, {1, 2, 2, 1}, PadMode::constant, -1.0},
                          {{3, 4}, {-1, 2, 1, -2}, PadMode::constant, 3.0},
                          {{3, 4}, {-2, -2}, PadMode::constant, 0.0},
                          {{2, 3, 4}, {3, 3, 2, 2}, PadMode::reflect, 0.0},
                          {{2, 3, 4}, {1, 0, 0, 2}, PadMode::reflect, 0.0},
                          {{2, 3, 4}, {4, 4, 1, 2}, PadMode::replicate, 0.0},
                          {{1, 2, 3, 3, 3}, {1, 1, 2, 0, 0, 2}, PadMode::replicate, 0.0},
                          {{1, 2, 3, 3, 3}, {1, 1, 2, 0, 0, 2}, PadMode::reflect, 0.0},
                          {{2, 0, 3}, {1, 1}, PadMode::constant, 5.0},
                          {{2, 3}, {0, 0, 1, 1}, PadMode::constant, 5.0},
                          {{4, 130, 130}, {3, 3, 3, 3}, PadMode::reflect, 0.0},
                          {{4, 130, 130}, {1, 2, 3, 4}, PadMode::replicate, 0.0},
                          {{4, 130, 130}, {1, 2, 3, 4, 1, 1}, PadMode::constant, 1.0}};
  for (DType dt : kAllDTypes)
    for (auto& c : cases) {
      auto x = rand_tensor(c.s, dt, g);
      auto v = x.to_vector<double>();
      const int r = c.s.rank();
      Sizes lo(size_t(r), 0), hi(size_t(r), 0);
      for (size_t i = 0; i < c.pads.size() / 2; ++i) {
        lo[size_t(r - 1) - i] = c.pads[2 * i];
        hi[size_t(r - 1) - i] = c.pads[2 * i + 1];
      }
      Shape os = c.s;
      for (int d = 0; d < r; ++d) os[d] += lo[size_t(d)] + hi[size_t(d)];
      double fill = DynTensor::full({}, c.value, dt).item();
      std::vector<double> want(size_t(os.numel()));
      for (int64_t i = 0; i < os.numel(); ++i) {
        auto idx = unravel(i, os);
        bool in = true;
        for (int d = 0; d < r; ++d) {
          int64_t m = pad_src(c.mode, lo[size_t(d)], c.s[d], idx[size_t(d)]);
          if (m < 0) in = false;
          idx[size_t(d)] = m;
        }
        want[size_t(i)] = in ? v[size_t(ravel(idx, c.s))] : fill;
      }
      for (auto& xv : views(x)) expect_values(pad(xv, c.pads, c.mode, c.value), os, dt, want, "pad " + c.s.str());
    }
}

TEST(CpuLayout, TrilTriu) {
  std::mt19937 g(6);
  for (DType dt : kAllDTypes)
    for (Shape s : {Shape{3, 4}, Shape{4, 3}, Shape{2, 3, 5}, Shape{2, 2, 3, 3}, Shape{0, 3}, Shape{3, 200, 300}})
      for (int64_t k : {-100, -2, -1, 0, 1, 3, 100})
        for (bool lower : {true, false}) {
          if (s.numel() > 1000 && (k < -2 || k > 1 || (dt != DType::f32 && dt != DType::i8))) continue;
          auto x = rand_tensor(s, dt, g);
          auto v = x.to_vector<double>();
          std::vector<double> want(v.size());
          for (int64_t i = 0; i < s.numel(); ++i) {
            auto idx = unravel(i, s);
            int64_t d = idx.back() - idx[idx.size() - 2];
            want[size_t(i)] = (lower ? d <= k : d >= k) ? v[size_t(i)] : 0.0;
          }
          for (auto& xv : views(x)) expect_values(lower ? tril(xv, k) : triu(xv, k), s, dt, want, "tri");
          // a freshly computed, unshared input may be updated in place
          auto fresh = fresh_copy(x);
          const void* buf = buffer_of(fresh);
          std::vector<DynTensor> in;
          in.push_back(std::move(fresh));
          auto y = run_owned(lower ? OpKind::tril : OpKind::triu, std::move(in), DimAttrs{0, false, k});
          expect_values(y, s, dt, want, "tri in place");
          if (s.numel() > 0) {
            EXPECT_EQ(buffer_of(y), buf);
          }
          expect_values(x, s, dt, v, "tri input unchanged");
        }
}

TEST(CpuLayout, SliceAssign) {
  std::mt19937 g(7);
  struct C {
    Shape s;
    std::vector<Slice> r;
  };
  std::vector<C> cases = {{{6}, {{1, 4, 1}}},
                          {{6}, {{0, 6, 2}}},
                          {{4, 5}, {{1, 3, 1}, {0, 5, 2}}},
                          {{4, 5}, {{{}, {}, 3}}},
                          {{2, 3, 4}, {{0, 2, 1}, {1, 2, 1}, {1, 4, 2}}},
                          {{4, 5}, {{2, 2, 1}}},
                          {{300, 400}, {{10, 290, 1}, {3, 399, 2}}}};
  for (DType dt : kAllDTypes)
    for (auto& c : cases) {
      auto x = rand_tensor(c.s, dt, g);
      auto sl = slice(x, c.r);
      auto val = rand_tensor(sl.shape(), dt, g);
      auto xv = x.to_vector<double>();
      auto vv = val.to_vector<double>();
      // the slice positions: slice an index tensor the same way
      auto pos = slice(reshape(DynTensor::arange(0, c.s.numel()), c.s.dims()), c.r).to_vector<int64_t>();
      std::vector<double> want = xv;
      for (size_t i = 0; i < pos.size(); ++i) want[size_t(pos[i])] = vv[i];
      auto va = views(x), vb = views(val);
      for (size_t i = 0; i < 3; ++i)
        expect_values(slice_assign(va[i % va.size()], c.r, vb[i % vb.size()]), c.s, dt, want, "slice_assign");
      auto fresh = fresh_copy(x);
      const void* buf = buffer_of(fresh);
      SliceAttrs sa;
      for (int d = 0; d < c.s.rank(); ++d) {
        Slice r = d < int(c.r.size()) ? c.r[size_t(d)] : Slice{};
        int64_t n = c.s[d];
        int64_t st = r.start.value_or(0), en = std::min(r.end.value_or(n), n);
        sa.ranges.push_back({st, std::max(st, en), r.step});
      }
      std::vector<DynTensor> in;
      in.push_back(std::move(fresh));
      in.push_back(val);
      auto y = run_owned(OpKind::slice_assign, std::move(in), sa);
      expect_values(y, c.s, dt, want, "slice_assign in place");
      EXPECT_EQ(buffer_of(y), buf);
      expect_values(x, c.s, dt, xv, "slice_assign input unchanged");
      // value aliasing the target: x[r] = x[r] + 0 shifted source from the same buffer
      auto self = slice_assign(x, c.r, sl);
      expect_values(self, c.s, dt, xv, "slice_assign self");
    }
}

}  // namespace
}  // namespace ember
