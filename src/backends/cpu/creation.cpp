// Creation kernels: full, arange, linspace, eye (random ops: random.cpp).
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu_backend.hpp"
#include "random.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

namespace {

constexpr int64_t kFillGrain = 1 << 16;

// fn(b, e) over [0, n): inline for small n, split across the pool otherwise.
template <class F>
void chunked(int64_t n, int64_t grain, F&& fn) {
  if (n <= grain)
    fn(int64_t(0), n);
  else
    parallel_for(0, n, grain, fn);
}

// double -> int64 without undefined behaviour (truncates; out of range saturates, NaN -> 0).
int64_t to_i64(double v) {
  if (!(v == v)) return 0;
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

// Integer dtypes take a double attribute like torch's Scalar.to<T>(): truncate, then wrap.
template <class T>
T int_from_double(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else return static_cast<T>(uint64_t(to_i64(v)));
}

template <class T>
void fill_value(T* p, int64_t n, T value) {
  if (n <= 0) return;
  bool zero_bits = true;
  const unsigned char* vb = reinterpret_cast<const unsigned char*>(&value);
  for (size_t i = 0; i < sizeof(T); ++i) zero_bits &= vb[i] == 0;
  chunked(n, kFillGrain, [&](int64_t b, int64_t e) {
    if (zero_bits) {
      std::memset(static_cast<void*>(p + b), 0, size_t(e - b) * sizeof(T));
    } else {
      for (int64_t i = b; i < e; ++i) p[i] = value;
    }
  });
}

std::vector<PrimitivePtr> full_kernel(CpuBackend&, Op& op);

// Scalar operands (the one-value `full`s that `x * 0.5` creates, CreateAttrs::shared) are made
// once per (dtype, value) and thread, and shared: no user holds them, and a shared buffer is
// never reused in place (its use count is above one). The table is small and cleared when full.
PrimitivePtr shared_constant(CpuBackend& be, Op& op) {
  struct Entry {
    DType dtype;
    uint64_t bits;
    CpuTensorPtr t;
  };
  thread_local std::vector<Entry> table;
  const TensorMeta& meta = op.outputs[0];
  uint64_t bits;
  const double v = op.attr<CreateAttrs>().a;
  std::memcpy(&bits, &v, sizeof bits);
  for (const Entry& e : table)
    if (e.dtype == meta.dtype && e.bits == bits)
      return std::make_shared<CpuTensor>(meta, e.t->storage, contiguous_strides(meta.shape), 0);
  if (table.size() >= 64) table.clear();
  Op one = op;
  std::get<CreateAttrs>(one.attrs).shared = false;
  CpuTensorPtr t = std::static_pointer_cast<CpuTensor>(full_kernel(be, one)[0]);
  table.push_back({meta.dtype, bits, t});
  return std::make_shared<CpuTensor>(meta, t->storage, contiguous_strides(meta.shape), 0);
}

std::vector<PrimitivePtr> full_kernel(CpuBackend& be, Op& op) {
  if (op.attr<CreateAttrs>().shared && op.outputs[0].shape.numel() == 1) return {shared_constant(be, op)};
  auto out = alloc(op.outputs[0]);
  double v = op.attr<CreateAttrs>().a;
  int64_t n = out->numel();
  visit_dtype(out->dtype(), [&]<class T>() {
    T value;
    if constexpr (is_floating_v<T>) value = convert_scalar<T>(v);
    else value = int_from_double<T>(v);
    if (n == 1) {
      *out->data<T>() = value;
      return;
    }
    fill_value(out->data<T>(), n, value);
  });
  return {out};
}

// value_i = start + i * step: in int64 for integer dtypes (start and step truncated, as torch),
// in double for f32/f64 and in float for f16/bf16 (torch's accumulate types on cpu).
std::vector<PrimitivePtr> arange_kernel(CpuBackend&, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = alloc(op.outputs[0]);
  int64_t n = out->numel();
  visit_dtype(out->dtype(), [&]<class T>() {
    T* p = out->data<T>();
    if constexpr (is_half_v<T>) {
      float start = float(a.a), step = float(a.c);
      chunked(n, kFillGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) p[i] = T(start + step * float(i));
      });
    } else if constexpr (std::is_floating_point_v<T>) {
      double start = a.a, step = a.c;
      chunked(n, kFillGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) p[i] = T(start + step * double(i));
      });
    } else {
      uint64_t start = uint64_t(to_i64(a.a)), step = uint64_t(to_i64(a.c));
      chunked(n, kFillGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) p[i] = convert_scalar<T>(int64_t(start + step * uint64_t(i)));
      });
    }
  });
  return {out};
}

// torch's formula: step = (end - start) / (steps - 1); the first half counts up from start,
// the second half counts down from end (so both ends are exact).
std::vector<PrimitivePtr> linspace_kernel(CpuBackend&, Op& op) {
  const auto& a = op.attr<CreateAttrs>();
  auto out = alloc(op.outputs[0]);
  int64_t n = out->numel();
  if (n == 0) return {out};
  int64_t half = n / 2;
  visit_dtype(out->dtype(), [&]<class T>() {
    T* p = out->data<T>();
    if constexpr (is_floating_v<T>) {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      C start = C(a.a), end = C(a.b);
      if (n == 1) {
        p[0] = convert_scalar<T>(start);
        return;
      }
      C step = (end - start) / C(n - 1);
      chunked(n, kFillGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          p[i] = convert_scalar<T>(i < half ? start + step * C(i) : end - step * C(n - 1 - i));
      });
    } else {
      T start = int_from_double<T>(a.a), end = int_from_double<T>(a.b);
      if (n == 1) {
        p[0] = start;
        return;
      }
      double ds = double(start), de = double(end);
      double step = (de - ds) / double(n - 1);
      chunked(n, kFillGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          double v = i < half ? ds + step * double(i) : de - step * double(n - 1 - i);
          p[i] = int_from_double<T>(v);
        }
      });
    }
  });
  return {out};
}

std::vector<PrimitivePtr> eye_kernel(CpuBackend&, Op& op) {
  auto out = alloc(op.outputs[0]);
  const Shape& s = out->shape();
  int64_t rows = s[0], cols = s[1];
  visit_dtype(out->dtype(), [&]<class T>() {
    T* p = out->data<T>();
    fill_value(p, rows * cols, convert_scalar<T>(0));
    T one = convert_scalar<T>(1);
    int64_t d = std::min(rows, cols);
    for (int64_t i = 0; i < d; ++i) p[i * cols + i] = one;
  });
  return {out};
}

}  // namespace

void register_creation_kernels(KernelTable& t) {
  t[size_t(OpKind::full)] = full_kernel;
  t[size_t(OpKind::arange)] = arange_kernel;
  t[size_t(OpKind::linspace)] = linspace_kernel;
  t[size_t(OpKind::eye)] = eye_kernel;
  register_random_kernels(t);
}

}  // namespace ember::cpu
